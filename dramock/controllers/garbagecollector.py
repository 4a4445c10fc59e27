"""Garbage collector (ownerReferences), as kube-controller-manager's pkg/controller/garbagecollector.

It watches every kind that can be listed, watched and deleted, keeps a graph of owners and dependents, and
acts only through the API:

- an object whose owners are all gone (no object with that uid) is deleted, with the propagation policy its
  own `orphan` / `foregroundDeletion` finalizer asks for, else Background; owners that are gone are verified
  with a live GET before anything is deleted;
- an owner being deleted in the foreground (`foregroundDeletion` finalizer) has its dependents deleted and
  keeps the finalizer until no dependent with `blockOwnerDeletion` is left; then the finalizer is removed;
- an owner being deleted with `orphan` has the ownerReferences to it removed from its dependents, then the
  `orphan` finalizer is removed.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field
from typing import Any

from dramock.client.informer import WorkQueue, run_worker, shared_informer
from dramock.client.rest import APIStatusError, Client, resource_path
from dramock.schemas import registry
from dramock.schemas.registry import Kind

log = logging.getLogger("dramock.controllers.garbagecollector")

Obj = dict[str, Any]
ORPHAN = "orphan"
FOREGROUND = "foregroundDeletion"


@dataclass
class Node:
    uid: str
    kind: Kind
    namespace: str | None
    name: str
    owners: list[Obj] = field(default_factory=list)
    deleting: bool = False
    finalizers: list[str] = field(default_factory=list)

    @property
    def deleting_dependents(self) -> bool:
        return self.deleting and FOREGROUND in self.finalizers


def gc_kinds() -> list[Kind]:
    """One entry per stored resource that supports list, watch and delete (events are stored once)."""
    seen: set[str] = set()
    out = []
    for k in registry.STORED_KINDS:
        if not {"list", "watch", "delete"} <= set(k.verbs) or k.storage_bucket in seen:
            continue
        seen.add(k.storage_bucket)
        out.append(k)
    return out


def owner_kind(ref: Obj) -> Kind | None:
    """The kind an ownerReference names, in any served version of its group."""
    group = ref.get("apiVersion", "").rpartition("/")[0]
    for k in registry.STORED_KINDS:
        if k.group == group and k.kind == ref.get("kind"):
            return k
    return None


def object_path(kind: Kind, namespace: str | None, name: str, subresource: str = "") -> str:
    return resource_path(kind.group, kind.version, kind.plural, namespace if kind.namespaced else None, name,
                         subresource)


class GarbageCollector:
    def __init__(self, client: Client, workers: int = 4):
        self.client = client
        self.workers = workers
        self.kinds = gc_kinds()
        self.informers = []
        for k in self.kinds:
            inf = shared_informer(client, resource_path(k.group, k.version, k.plural))
            inf.add_handler(self._handler(k))
            self.informers.append(inf)
        self.nodes: dict[str, Node] = {}
        self.dependents: dict[str, set[str]] = {}
        self.attempt_to_delete = WorkQueue()
        self.attempt_to_orphan = WorkQueue()

    async def run(self, stop: asyncio.Event) -> None:
        tasks = [asyncio.create_task(i.run(stop)) for i in self.informers]
        try:
            # As upstream, act only on a complete graph.
            await asyncio.gather(*(i.synced.wait() for i in self.informers))
            log.debug("garbage collector synced %d kinds", len(self.informers))
            tasks += [asyncio.create_task(run_worker(self.attempt_to_delete, self._attempt_to_delete, stop,
                                                     "garbagecollector"))
                      for _ in range(self.workers)]
            tasks.append(asyncio.create_task(run_worker(self.attempt_to_orphan, self._attempt_to_orphan, stop,
                                                        "garbagecollector-orphan")))
            await stop.wait()
        finally:
            for t in tasks:
                t.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

    # ---------------------------------------------------------------- graph

    def _handler(self, kind: Kind):
        def handle(type_: str, obj: Obj, _old: Obj | None) -> None:
            self._process(kind, type_, obj)
        return handle

    def _process(self, kind: Kind, type_: str, obj: Obj) -> None:
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

    async def _get(self, kind: Kind, namespace: str | None, name: str) -> Obj | None:
        try:
            return await self.client.request("GET", object_path(kind, namespace, name))
        except APIStatusError as e:
            if e.code == 404:
                return None
            raise

    async def _classify(self, namespace: str | None, ref: Obj) -> str:
        """"solid", "dangling" or "waiting" (the owner is deleting its dependents in the foreground)."""
        kind = owner_kind(ref)
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
        for _ in range(5):
            obj = await self._get(node.kind, node.namespace, node.name)
            if obj is None or obj["metadata"].get("uid") != node.uid:
                return
            fins = obj["metadata"].get("finalizers") or []
            if finalizer not in fins:
                return
            obj["metadata"]["finalizers"] = [f for f in fins if f != finalizer]
            try:
                await self.client.request("PUT", path, obj)
                log.info("%s %s/%s: removed finalizer %s", node.kind.kind, node.namespace or "", node.name,
                         finalizer)
                return
            except APIStatusError as e:
                if e.code == 404:
                    return
                if e.code != 409:
                    raise
        raise RuntimeError(f"could not remove finalizer {finalizer} from {node.name}: conflicts")

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
        for _ in range(5):
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
                return
            except APIStatusError as e:
                if e.code == 404:
                    return
                if e.code != 409:
                    raise
        raise RuntimeError(f"could not orphan {dep.name}: conflicts")
