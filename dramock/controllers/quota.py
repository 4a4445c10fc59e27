"""ResourceQuota controller: keeps every quota's status.hard and status.used current, over HTTP.

Like upstream's (pkg/controller/resourcequota), it recomputes usage from scratch — list what the quota's
hard names concern in its namespace, add up each object's usage with the same evaluators admission uses —
and writes status when it differs. It syncs a namespace on start, whenever a quota, pod or claim there
changes (deletions release their usage here), whenever a device class changes (KEP-5004's mapping), and
every resync period to fix drift (for example a charge whose object write then failed).

The quota is read before the objects are listed, and the status is written with the quota's
resourceVersion: a charge made by admission in between changes that resourceVersion, so the write
conflicts and the namespace is synced again instead of losing the charge.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable, Mapping
from typing import Any

from dramock.client.informer import list_and_watch
from dramock.client.rest import APIStatusError, Client, resource_path
from dramock.registry import quota as q
from dramock.registry.kind import Kind

log = logging.getLogger("dramock.controllers.quota")

Obj = dict[str, Any]
RESYNC_SECONDS = 300.0


CLAIMS = "resourceclaims.resource.k8s.io"


class QuotaController:
    """`kinds`: the namespaced kinds whose objects a quota may count (where to list them); `evaluators`: the
    kinds with their own usage rules, by group-resource (every other kind counts objects)."""

    def __init__(self, client: Client, kinds: Iterable[Kind], evaluators: Mapping[str, q.Evaluator],
                 resync: float = RESYNC_SECONDS):
        self.client = client
        self.resync = resync
        self.evaluators = evaluators
        self.kinds: dict[str, Kind] = {}
        for k in kinds:
            if k.namespaced:
                self.kinds.setdefault(k.group_resource, k)
        self.queue: asyncio.Queue[str] = asyncio.Queue()
        self.queued: set[str] = set()
        self.quota_namespaces: dict[str, set[str]] = {}  # namespace -> quota names (from the informer)
        self.watched: set[str] = set()
        self._tasks: list[asyncio.Task] = []
        self._stop = asyncio.Event()

    async def run(self, stop: asyncio.Event) -> None:
        self._stop = stop
        self._tasks = [
            asyncio.create_task(self._worker(stop)),
            asyncio.create_task(list_and_watch(self.client, "/api/v1/resourcequotas", self._on_quota, stop)),
            asyncio.create_task(list_and_watch(self.client, "/apis/resource.k8s.io/v1/deviceclasses",
                                               self._on_class, stop)),
            asyncio.create_task(self._resync_loop(stop)),
        ]
        # Pods and claims always (their evaluators look at each other); other kinds once a quota counts them.
        self._watch("pods")
        self._watch(CLAIMS)
        try:
            await stop.wait()
        finally:
            for t in self._tasks:
                t.cancel()

    def _watch(self, group_resource: str) -> None:
        if group_resource in self.watched:
            return
        kind = self.kinds.get(group_resource)
        if kind is None:
            return
        self.watched.add(group_resource)
        path = resource_path(kind.group, kind.version, kind.plural)
        self._tasks.append(asyncio.create_task(list_and_watch(self.client, path, self._on_object, self._stop)))

    # ---- event handlers: all they do is enqueue a namespace

    def enqueue(self, namespace: str) -> None:
        if namespace and namespace not in self.queued:
            self.queued.add(namespace)
            self.queue.put_nowait(namespace)

    async def _on_quota(self, type_: str, obj: Obj) -> None:
        m = obj["metadata"]
        names = self.quota_namespaces.setdefault(m["namespace"], set())
        if type_ == "DELETED":
            names.discard(m["name"])
        else:
            names.add(m["name"])
            for gr in q.group_resources_in((obj.get("spec") or {}).get("hard") or {}, self.evaluators):
                self._watch(gr)
        self.enqueue(m["namespace"])

    async def _on_object(self, _type: str, obj: Obj) -> None:
        ns = obj["metadata"].get("namespace") or ""
        if self.quota_namespaces.get(ns):
            self.enqueue(ns)

    async def _on_class(self, _type: str, _obj: Obj) -> None:
        for ns, names in self.quota_namespaces.items():
            if names:
                self.enqueue(ns)

    async def _resync_loop(self, stop: asyncio.Event) -> None:
        while not stop.is_set():
            await asyncio.sleep(self.resync)
            await self._on_class("RESYNC", {})

    async def _worker(self, stop: asyncio.Event) -> None:
        while not stop.is_set():
            ns = await self.queue.get()
            self.queued.discard(ns)
            try:
                done = await self.sync(ns)
            except Exception as e:  # a controller keeps going; it retries the namespace
                log.warning("quota sync of namespace %s: %s", ns, e)
                done = False
            if not done:
                asyncio.get_running_loop().call_later(0.2, self.enqueue, ns)

    # ---- the sync

    async def sync(self, namespace: str) -> bool:
        """Recompute every quota of `namespace`; True when all statuses were written (or already right)."""
        quotas = (await self.client.request("GET", resource_path("", "v1", "resourcequotas",
                                                                 namespace=namespace))).get("items", [])
        if not quotas:
            return True
        needed: set[str] = set()
        for quota in quotas:
            needed |= q.group_resources_in((quota.get("spec") or {}).get("hard") or {}, self.evaluators)
        objects: dict[str, list[Obj]] = {}
        for gr in sorted(needed):
            kind = self.kinds.get(gr)
            if kind is None:
                objects[gr] = []
                continue
            path = resource_path(kind.group, kind.version, kind.plural, namespace=namespace)
            objects[gr] = (await self.client.request("GET", path)).get("items", [])
        classes: dict[str, Obj] = {}
        if CLAIMS in needed or "pods" in needed:
            listed = await self.client.request("GET", resource_path("resource.k8s.io", "v1", "deviceclasses"))
            classes = {c["metadata"]["name"]: c for c in listed.get("items", [])}
        pods = {p["metadata"]["name"]: p for p in objects.get("pods", [])}
        if CLAIMS in needed and "pods" not in objects:
            listed = await self.client.request("GET", resource_path("", "v1", "pods", namespace=namespace))
            pods = {p["metadata"]["name"]: p for p in listed.get("items", [])}
        lookup = q.Lookup(device_class=classes.get, pod=lambda _ns, name: pods.get(name))
        ok = True
        for quota in quotas:
            ok = await self._sync_quota(quota, objects, lookup) and ok
        return ok

    async def _sync_quota(self, quota: Obj, objects: dict[str, list[Obj]], lookup: q.Lookup) -> bool:
        spec_hard = q.parse_list((quota.get("spec") or {}).get("hard"))
        status = quota.get("status") or {}
        used = q.calculate_usage(quota, lambda gr: objects.get(gr, []), lookup, self.evaluators)
        old_hard = q.parse_list(status.get("hard"))
        old_used = q.parse_list(status.get("used"))
        if "hard" in status and "used" in status and q.equal_lists(old_hard, spec_hard) \
                and q.equal_lists(old_used, used):
            return True
        body = dict(quota)
        body["status"] = {"hard": q.format_list(spec_hard), "used": q.format_list(used)}
        m = quota["metadata"]
        try:
            await self.client.request("PUT", resource_path("", "v1", "resourcequotas", namespace=m["namespace"],
                                                           name=m["name"], subresource="status"), body)
        except APIStatusError as e:
            if e.code == 404:
                return True
            if e.code == 409:  # admission charged it meanwhile: recompute
                return False
            raise
        return True
