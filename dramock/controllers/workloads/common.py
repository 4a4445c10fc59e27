"""What every workload controller shares: a work queue fed by its own kind and by its pods' controller
references, fresh reads of the pods it owns, pod creation from a template, readiness and status writes."""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import logging
import time
from typing import Any

from dramock import timefmt
from dramock.client.informer import Informer, WorkQueue, cancel_all, run_worker
from dramock.client.rest import APIStatusError, Client, resource_path
from dramock.jsonvalue import clone
from dramock.schemas import labelselector

Obj = dict[str, Any]
log = logging.getLogger("dramock.controllers.workloads")
TERMINAL = ("Succeeded", "Failed")
RESYNC = 1.0  # periodic resync: readiness and minReadySeconds change without an event on the owner
SAFE_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"  # apimachinery's rand.SafeEncodeString




def template_hash(template: Obj, collision_count: int = 0) -> str:
    """A stable hash of a pod template, rendered in the safe alphabet (like pod-template-hash values)."""
    digest = hashlib.sha256((json.dumps(template, sort_keys=True) + str(collision_count)).encode()).digest()
    return "".join(SAFE_ALPHABET[b % len(SAFE_ALPHABET)] for b in digest[:10])


def is_active(pod: Obj) -> bool:
    return not pod["metadata"].get("deletionTimestamp") and (pod.get("status") or {}).get("phase") not in TERMINAL


def condition(obj: Obj, type_: str) -> Obj | None:
    for c in (obj.get("status") or {}).get("conditions") or []:
        if c.get("type") == type_:
            return c
    return None


def is_ready(pod: Obj) -> bool:
    c = condition(pod, "Ready")
    return c is not None and c.get("status") == "True"


def is_available(pod: Obj, min_ready_seconds: int, now: float | None = None) -> bool:
    c = condition(pod, "Ready")
    if c is None or c.get("status") != "True":
        return False
    if not min_ready_seconds:
        return True
    since = timefmt.parse_seconds(c.get("lastTransitionTime"))
    return since is not None and (now or time.time()) - since >= min_ready_seconds


def controller_ref(obj: Obj) -> Obj | None:
    for r in obj["metadata"].get("ownerReferences") or []:
        if r.get("controller"):
            return r
    return None


def owner_reference(owner: Obj, api_version: str, kind: str) -> Obj:
    m = owner["metadata"]
    return {"apiVersion": api_version, "kind": kind, "name": m["name"], "uid": m["uid"], "controller": True,
            "blockOwnerDeletion": True}


def set_condition(conditions: list[Obj], type_: str, status: str, reason: str, message: str,
                  with_update_time: bool = False, touch: bool = False) -> list[Obj]:
    """Replace or add a condition; lastTransitionTime moves only when the status changes, lastUpdateTime (when
    kept) also when the reason changes or `touch` says something happened."""
    now = timefmt.now()
    out = []
    found = False
    for c in conditions:
        if c.get("type") != type_:
            out.append(c)
            continue
        found = True
        new = dict(c, status=status, reason=reason, message=message)
        if c.get("status") != status:
            new["lastTransitionTime"] = now
        if with_update_time and (touch or c.get("status") != status or c.get("reason") != reason):
            new["lastUpdateTime"] = now
        out.append(new)
    if not found:
        c = {"type": type_, "status": status, "reason": reason, "message": message, "lastTransitionTime": now}
        if with_update_time:
            c["lastUpdateTime"] = now
        out.append(c)
    return out


class WorkloadController:
    """A controller of one kind: `sync(namespace, name)` runs for every change of an object of the kind, of a
    pod it controls, and every RESYNC seconds for each object."""

    group = "apps"
    version = "v1"
    kind = ""
    plural = ""

    def __init__(self, client: Client, pods: Informer, workers: int = 2):
        self.client = client
        self.pods = pods
        self.objects = Informer(client, resource_path(self.group, self.version, self.plural))
        self.queue = WorkQueue()
        self.workers = workers
        self.objects.add_handler(lambda _t, obj, _o: self.enqueue(obj))
        pods.add_handler(self._on_pod)

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}"

    def path(self, namespace: str, name: str = "", sub: str = "") -> str:
        return resource_path(self.group, self.version, self.plural, namespace, name or None, sub)

    def enqueue(self, obj: Obj) -> None:
        self.queue.add((obj["metadata"]["namespace"], obj["metadata"]["name"]))

    def _on_pod(self, _type: str, pod: Obj, _old: Obj | None) -> None:
        ref = controller_ref(pod)
        if ref and ref.get("kind") == self.kind and ref.get("apiVersion") == self.api_version:
            self.queue.add((pod["metadata"]["namespace"], ref["name"]))

    async def run(self, stop: asyncio.Event) -> None:
        tasks = [asyncio.create_task(self.objects.run(stop))]
        try:
            await self.objects.synced.wait()
            tasks += [asyncio.create_task(run_worker(self.queue, self._sync, stop, self.plural))
                      for _ in range(self.workers)]
            while not stop.is_set():
                with contextlib.suppress(asyncio.TimeoutError):
                    await asyncio.wait_for(stop.wait(), RESYNC)
                for obj in self.objects.list():
                    self.enqueue(obj)
        finally:
            await cancel_all(tasks)

    async def _sync(self, key: tuple[str, str]) -> None:
        ns, name = key
        try:
            obj = await self.client.request("GET", self.path(ns, name))
        except APIStatusError as e:
            if e.code == 404:
                return
            raise
        await self.sync(obj)

    async def sync(self, obj: Obj) -> None:
        raise NotImplementedError

    # ------------------------------------------------------------ helpers

    async def owned_pods(self, obj: Obj, selector: Obj | None = None) -> list[Obj]:
        """The pods this object controls, read fresh from the server (no stale cache, no double creates)."""
        m = obj["metadata"]
        sel = selector if selector is not None else (obj.get("spec") or {}).get("selector")
        params = {"labelSelector": labelselector.to_string(sel)} if sel else None
        listed = await self.client.request("GET", resource_path("", "v1", "pods", m["namespace"]), params=params)
        return [p for p in listed.get("items") or [] if (controller_ref(p) or {}).get("uid") == m["uid"]]

    def pod_from_template(self, owner: Obj, template: Obj, *, name: str = "", generate_name: str = "",
                          labels: Obj | None = None, annotations: Obj | None = None) -> Obj:
        tm = template.get("metadata") or {}
        md: Obj = {"namespace": owner["metadata"]["namespace"],
                   "labels": {**(tm.get("labels") or {}), **(labels or {})},
                   "ownerReferences": [owner_reference(owner, self.api_version, self.kind)]}
        if tm.get("annotations") or annotations:
            md["annotations"] = {**(tm.get("annotations") or {}), **(annotations or {})}
        if tm.get("finalizers"):
            md["finalizers"] = list(tm["finalizers"])
        if name:
            md["name"] = name
        else:
            md["generateName"] = generate_name or owner["metadata"]["name"] + "-"
        return {"apiVersion": "v1", "kind": "Pod", "metadata": md, "spec": clone(template.get("spec") or {})}

    async def create_pod(self, pod: Obj) -> Obj | None:
        try:
            return await self.client.request("POST", resource_path("", "v1", "pods", pod["metadata"]["namespace"]),
                                             pod)
        except APIStatusError as e:
            if e.code == 409:
                return None
            raise

    async def delete_pod(self, pod: Obj) -> None:
        m = pod["metadata"]
        with contextlib.suppress(APIStatusError):
            await self.client.request("DELETE", resource_path("", "v1", "pods", m["namespace"], m["name"]),
                                      {"apiVersion": "v1", "kind": "DeleteOptions",
                                       "preconditions": {"uid": m["uid"]}})

    async def write_status(self, obj: Obj, status: Obj) -> None:
        """Replace status through /status when it changed."""
        if status == (obj.get("status") or {}):
            return
        m = obj["metadata"]
        body = dict(obj, status=status)
        try:
            await self.client.request("PUT", self.path(m["namespace"], m["name"], "status"), body)
        except APIStatusError as e:
            if e.code not in (404, 409):
                raise
            self.queue.add_after((m["namespace"], m["name"]), 0.1)

    async def event(self, obj: Obj, reason: str, message: str, type_: str = "Normal",
                    component: str = "") -> None:
        m = obj["metadata"]
        now = timefmt.now()
        with contextlib.suppress(APIStatusError):
            await self.client.request("POST", resource_path("", "v1", "events", m["namespace"]), {
                "apiVersion": "v1", "kind": "Event",
                "metadata": {"generateName": f"{m['name']}.", "namespace": m["namespace"]},
                "involvedObject": {"apiVersion": self.api_version, "kind": self.kind, "namespace": m["namespace"],
                                   "name": m["name"], "uid": m["uid"], "resourceVersion": m.get("resourceVersion")},
                "reason": reason, "message": message, "type": type_,
                "source": {"component": component or f"{self.kind.lower()}-controller"},
                "firstTimestamp": now, "lastTimestamp": now, "count": 1,
                "reportingComponent": component or f"{self.kind.lower()}-controller", "reportingInstance": ""})
