"""Garbage collector (ownerReferences), as kube-controller-manager's pkg/controller/garbagecollector.

It finds the kinds to watch through discovery, as upstream's does: every resource the server serves that
supports list, watch and delete, less the ignored ones (events). It discovers again every `resync_period`
(30 s, as upstream) and starts or stops watching what was added or removed. It keeps a graph of owners and
dependents, and acts only through the API:

- an object whose owners are all gone (no object with that uid) is deleted, with the propagation policy its
  own `orphan` / `foregroundDeletion` finalizer asks for, else Background; owners that are gone are verified
  with a live GET before anything is deleted;
- an owner being deleted in the foreground (`foregroundDeletion` finalizer) has its dependents deleted and
  keeps the finalizer until no dependent with `blockOwnerDeletion` is left; then the finalizer is removed;
- an owner being deleted with `orphan` has the ownerReferences to it removed from its dependents, then the
  `orphan` finalizer is removed.

An ownerReference is resolved to a resource through the same discovery (group and kind; an owner of a kind
the server does not serve is never taken for gone).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from dataclasses import dataclass, field
from typing import Any

import aiohttp

from dramock.client.discovery import APIResource, server_preferred_resources
from dramock.client.informer import Informer, WorkQueue, run_worker, shared_informer
from dramock.client.rest import APIStatusError, Client
from dramock.client.retry import retry_on_conflict

log = logging.getLogger("dramock.controllers.garbagecollector")

Obj = dict[str, Any]
ORPHAN = "orphan"
FOREGROUND = "foregroundDeletion"
RESYNC_PERIOD = 30.0  # upstream's garbage collector re-reads discovery every 30 s
# upstream's garbagecollector.DefaultIgnoredResources: events of both groups
IGNORED_RESOURCES: frozenset[tuple[str, str]] = frozenset({("", "events"), ("events.k8s.io", "events")})


@dataclass
class Node:
    uid: str
    kind: APIResource
    namespace: str | None
    name: str
    owners: list[Obj] = field(default_factory=list)
    deleting: bool = False
    finalizers: list[str] = field(default_factory=list)

    @property
    def deleting_dependents(self) -> bool:
        return self.deleting and FOREGROUND in self.finalizers


def gc_resources(resources: list[APIResource],
                 ignored: frozenset[tuple[str, str]] = IGNORED_RESOURCES) -> list[APIResource]:
    """The discovered resources the collector watches: those that support list, watch and delete."""
    return [r for r in resources if r.supports("list", "watch", "delete") and r.group_resource not in ignored]


def object_path(kind: APIResource, namespace: str | None, name: str, subresource: str = "") -> str:
    return kind.path(namespace, name, subresource)


@dataclass
class Monitor:
    """The informer of one watched resource and the task running it."""

    resource: APIResource
    informer: Informer
    task: asyncio.Task | None = None


class GarbageCollector:
    def __init__(self, client: Client, workers: int = 4, resync_period: float = RESYNC_PERIOD,
                 ignored: frozenset[tuple[str, str]] = IGNORED_RESOURCES):
        self.client = client
        self.workers = workers
        self.resync_period = resync_period
        self.ignored = ignored
        self.monitors: dict[tuple[str, str, str], Monitor] = {}  # (group, version, resource) -> its monitor
        self.kinds_by_name: dict[tuple[str, str], APIResource] = {}  # (group, kind) -> resource: a REST mapper
        self._handled: set[Informer] = set()  # the informers this collector has added its handler to
        self.nodes: dict[str, Node] = {}
        self.dependents: dict[str, set[str]] = {}
        self.attempt_to_delete = WorkQueue()
        self.attempt_to_orphan = WorkQueue()

    @property
    def kinds(self) -> list[APIResource]:
        return [m.resource for m in self.monitors.values()]

    async def sync_monitors(self, stop: asyncio.Event) -> bool:
        """Discover the served resources; watch the new ones, stop watching the gone ones. True when the set
        changed."""
        resources = await server_preferred_resources(self.client)
        self.kinds_by_name = {(r.group, r.kind): r for r in resources}
        wanted = {(r.group, r.version, r.resource): r for r in gc_resources(resources, self.ignored)}
        changed = False
        for key in [k for k in self.monitors if k not in wanted]:
            m = self.monitors.pop(key)
            if m.task is not None:
                m.task.cancel()
            changed = True
            log.info("garbage collector: no longer watching %s", m.resource.api_version + "/" + m.resource.resource)
        for key, r in wanted.items():
            if key in self.monitors:
                continue
            inf = shared_informer(self.client, r.path())
            if inf not in self._handled:
                handler = self._handler(r)
                inf.add_handler(handler)
                self._handled.add(inf)
                # A shared informer another controller already runs has objects this handler has not seen.
                for obj in list(inf.cache.values()):
                    handler("ADDED", obj, None)
            m = Monitor(r, inf)
            m.task = asyncio.create_task(inf.run(stop))
            self.monitors[key] = m
            changed = True
        return changed

    async def run(self, stop: asyncio.Event) -> None:
        tasks: list[asyncio.Task] = []
        try:
            while not stop.is_set():
                try:
                    await self.sync_monitors(stop)
                    break
                except (APIStatusError, aiohttp.ClientError, asyncio.TimeoutError, OSError) as e:
                    log.info("garbage collector: discovery failed (%s); retrying", e)
                    with contextlib.suppress(asyncio.TimeoutError):
                        await asyncio.wait_for(stop.wait(), 1.0)
            # As upstream, act only on a complete graph.
            await asyncio.gather(*(m.informer.synced.wait() for m in list(self.monitors.values())))
            log.debug("garbage collector synced %d kinds", len(self.monitors))
            tasks += [asyncio.create_task(run_worker(self.attempt_to_delete, self._attempt_to_delete, stop,
                                                     "garbagecollector"))
                      for _ in range(self.workers)]
            tasks.append(asyncio.create_task(run_worker(self.attempt_to_orphan, self._attempt_to_orphan, stop,
                                                        "garbagecollector-orphan")))
            while not stop.is_set():
                with contextlib.suppress(asyncio.TimeoutError):
                    await asyncio.wait_for(stop.wait(), self.resync_period)
                if stop.is_set():
                    break
                try:
                    await self.sync_monitors(stop)
                except (APIStatusError, aiohttp.ClientError, asyncio.TimeoutError, OSError) as e:
                    log.info("garbage collector: rediscovery failed (%s)", e)
        finally:
            tasks += [m.task for m in self.monitors.values() if m.task is not None]
            for t in tasks:
                t.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

    # ---------------------------------------------------------------- graph

    def _handler(self, kind: APIResource):
        def handle(type_: str, obj: Obj, _old: Obj | None) -> None:
            self._process(kind, type_, obj)
        return handle

    def _process(self, kind: APIResource, type_: str, obj: Obj) -> None:
        m = obj["metadata"]
        uid = m.get("uid", "")
        old = self.nodes.get(uid)
        if type_ == "DELETED":
            if old is None:
                return
            self._unlink(old)
            del self.nodes[uid]
            for dep in self.dependents.get(uid, ()):
                self.attempt_to_delete.add(dep)
            for ref in old.owners:
                owner = self.nodes.get(ref.get("uid", ""))
                if owner is not None and owner.deleting_dependents:
                    self.attempt_to_delete.add(owner.uid)
            if not self.dependents.get(uid):
                self.dependents.pop(uid, None)
            return
        node = Node(uid, kind, m.get("namespace"), m["name"], list(m.get("ownerReferences") or []),
                    bool(m.get("deletionTimestamp")), list(m.get("finalizers") or []))
        if old is not None:
            self._unlink(old)
            # Owners this object no longer points at may have been waiting for it.
            kept = {r.get("uid") for r in node.owners}
            for ref in old.owners:
                owner = self.nodes.get(ref.get("uid", ""))
                if ref.get("uid") not in kept and owner is not None and owner.deleting_dependents:
                    self.attempt_to_delete.add(owner.uid)
        self.nodes[uid] = node
        for ref in node.owners:
            self.dependents.setdefault(ref.get("uid", ""), set()).add(uid)
        if node.deleting and ORPHAN in node.finalizers:
            self.attempt_to_orphan.add(uid)
        if node.deleting_dependents:
            self.attempt_to_delete.add(uid)
            if old is None or not old.deleting_dependents:
                for dep in self.dependents.get(uid, ()):
                    self.attempt_to_delete.add(dep)
        if not node.deleting and any(self._suspicious(ref) for ref in node.owners):
            self.attempt_to_delete.add(uid)

    def _suspicious(self, ref: Obj) -> bool:
        owner = self.nodes.get(ref.get("uid", ""))
        return owner is None or owner.deleting_dependents

    def _unlink(self, node: Node) -> None:
        for ref in node.owners:
            deps = self.dependents.get(ref.get("uid", ""))
            if deps is not None:
                deps.discard(node.uid)
                if not deps and ref.get("uid") not in self.nodes:
                    self.dependents.pop(ref.get("uid", ""), None)

    # ---------------------------------------------------------------- attempt to delete

    async def _get(self, kind: APIResource, namespace: str | None, name: str) -> Obj | None:
        try:
            return await self.client.request("GET", object_path(kind, namespace, name))
        except APIStatusError as e:
            if e.code == 404:
                return None
            raise

    async def _classify(self, namespace: str | None, ref: Obj) -> str:
        """"solid", "dangling" or "waiting" (the owner is deleting its dependents in the foreground)."""
        kind = self.kinds_by_name.get((ref.get("apiVersion", "").rpartition("/")[0], ref.get("kind", "")))
        if kind is None:
            return "solid"  # cannot be resolved: never delete on a guess
        if kind.namespaced and not namespace:
            return "dangling"  # a cluster-scoped object cannot have a namespaced owner
        owner = await self._get(kind, namespace, ref.get("name", ""))
        if owner is None or owner["metadata"].get("uid") != ref.get("uid"):
            return "dangling"
        om = owner["metadata"]
        if om.get("deletionTimestamp") and FOREGROUND in (om.get("finalizers") or []):
            return "waiting"
        return "solid"

    async def _attempt_to_delete(self, uid: str) -> None:
        node = self.nodes.get(uid)
        if node is None:
            return
        latest = await self._get(node.kind, node.namespace, node.name)
        if latest is None or latest["metadata"].get("uid") != uid:
            return
        m = latest["metadata"]
        if m.get("deletionTimestamp"):
            if FOREGROUND in (m.get("finalizers") or []):
                await self._process_deleting_dependents(node, latest)
            return
        owners = m.get("ownerReferences") or []
        if not owners:
            return
        classes = {}
        for ref in owners:
            classes[ref.get("uid")] = await self._classify(node.namespace, ref)
        solid = [r for r in owners if classes[r.get("uid")] == "solid"]
        if solid:
            if len(solid) < len(owners):
                # Keep the object; just drop the references that are gone or that block a foreground deletion.
                latest["metadata"]["ownerReferences"] = solid
                await self.client.request("PUT", object_path(node.kind, node.namespace, node.name), latest)
                log.info("%s %s/%s: removed dangling ownerReferences", node.kind.kind, node.namespace, node.name)
            return
        waiting = any(c == "waiting" for c in classes.values())
        finalizers = m.get("finalizers") or []
        if waiting and self.dependents.get(uid):
            policy = "Foreground"
        elif ORPHAN in finalizers:
            policy = "Orphan"
        elif FOREGROUND in finalizers:
            policy = "Foreground"
        else:
            policy = "Background"
        await self._delete(node, latest, policy)

    async def _delete(self, node: Node, latest: Obj, policy: str) -> None:
        m = latest["metadata"]
        options: Obj = {"apiVersion": "v1", "kind": "DeleteOptions", "propagationPolicy": policy,
                        "preconditions": {"uid": m["uid"], "resourceVersion": m.get("resourceVersion")}}
        path = object_path(node.kind, node.namespace, node.name)
        try:
            await self.client.request("DELETE", path, options)
        except APIStatusError as e:
            if e.code == 404:
                return
            if e.code != 409:
                raise
            live = await self._get(node.kind, node.namespace, node.name)
            if live is None or live["metadata"].get("uid") != m["uid"] or \
                    live["metadata"].get("ownerReferences") != m.get("ownerReferences"):
                return  # the change will come through the informer
            options["preconditions"].pop("resourceVersion")
            await self.client.request("DELETE", path, options)
        log.info("garbage collected %s %s/%s (propagationPolicy=%s)", node.kind.kind, node.namespace or "",
                 node.name, policy)

    def _blocking_dependents(self, uid: str) -> list[Node]:
        out = []
        for dep_uid in self.dependents.get(uid, ()):
            dep = self.nodes.get(dep_uid)
            if dep is None:
                continue
            if any(r.get("uid") == uid and r.get("blockOwnerDeletion") for r in dep.owners):
                out.append(dep)
        return out

    async def _process_deleting_dependents(self, node: Node, latest: Obj) -> None:
        blocking = self._blocking_dependents(node.uid)
        if not blocking:
            await self._remove_finalizer(node, FOREGROUND)
            return
        for dep in blocking:
            if not dep.deleting:
                self.attempt_to_delete.add(dep.uid)

    async def _remove_finalizer(self, node: Node, finalizer: str) -> None:
        path = object_path(node.kind, node.namespace, node.name)

        async def attempt() -> None:
            obj = await self._get(node.kind, node.namespace, node.name)
            if obj is None or obj["metadata"].get("uid") != node.uid:
                return
            fins = obj["metadata"].get("finalizers") or []
            if finalizer not in fins:
                return
            obj["metadata"]["finalizers"] = [f for f in fins if f != finalizer]
            try:
                await self.client.request("PUT", path, obj)
            except APIStatusError as e:
                if e.code == 404:
                    return
                raise
            log.info("%s %s/%s: removed finalizer %s", node.kind.kind, node.namespace or "", node.name, finalizer)

        await retry_on_conflict(attempt)

    # ---------------------------------------------------------------- orphan

    async def _attempt_to_orphan(self, uid: str) -> None:
        owner = self.nodes.get(uid)
        if owner is None:
            return
        for dep_uid in list(self.dependents.get(uid, ())):
            dep = self.nodes.get(dep_uid)
            if dep is None:
                continue
            await self._drop_owner_reference(dep, uid)
        await self._remove_finalizer(owner, ORPHAN)

    async def _drop_owner_reference(self, dep: Node, owner_uid: str) -> None:
        path = object_path(dep.kind, dep.namespace, dep.name)

        async def attempt() -> None:
            obj = await self._get(dep.kind, dep.namespace, dep.name)
            if obj is None or obj["metadata"].get("uid") != dep.uid:
                return
            refs = obj["metadata"].get("ownerReferences") or []
            kept = [r for r in refs if r.get("uid") != owner_uid]
            if len(kept) == len(refs):
                return
            if kept:
                obj["metadata"]["ownerReferences"] = kept
            else:
                obj["metadata"].pop("ownerReferences", None)
            try:
                await self.client.request("PUT", path, obj)
            except APIStatusError as e:
                if e.code != 404:
                    raise

        await retry_on_conflict(attempt)
