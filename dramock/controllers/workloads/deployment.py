"""Deployment controller (upstream's pkg/controller/deployment): one ReplicaSet per pod template, named
`<deployment>-<pod-template-hash>`; RollingUpdate (maxSurge/maxUnavailable) or Recreate between them; revision
annotations for `kubectl rollout history|undo`; old ReplicaSets pruned to revisionHistoryLimit; status and the
Available/Progressing conditions that `kubectl rollout status` reads."""

from __future__ import annotations

import contextlib
import math
import time

from dramock import timefmt
from dramock.client.informer import Informer
from dramock.client.rest import APIStatusError, Client, resource_path
from dramock.controllers.workloads.common import (
    Obj,
    WorkloadController,
    controller_ref,
    owner_reference,
    set_condition,
    template_hash,
)
from dramock.jsonvalue import clone
from dramock.schemas.validation.field import semantic_equal

HASH_LABEL = "pod-template-hash"
REVISION = "deployment.kubernetes.io/revision"
DESIRED = "deployment.kubernetes.io/desired-replicas"
MAX_REPLICAS = "deployment.kubernetes.io/max-replicas"
NOT_COPIED = {"kubectl.kubernetes.io/last-applied-configuration", REVISION, "deployment.kubernetes.io/revision-history",
              DESIRED, MAX_REPLICAS, "deprecated.deployment.rollback.to"}


def resolve(value, total: int, round_up: bool) -> int:
    if isinstance(value, str) and value.endswith("%"):
        frac = int(value[:-1]) * total / 100
        return math.ceil(frac) if round_up else math.floor(frac)
    return int(value or 0)


def surge_and_unavailable(d: Obj) -> tuple[int, int]:
    spec = d.get("spec") or {}
    replicas = int(spec.get("replicas", 1))
    strategy = spec.get("strategy") or {}
    if strategy.get("type") == "Recreate":
        return 0, replicas
    ru = strategy.get("rollingUpdate") or {}
    surge = resolve(ru.get("maxSurge", "25%"), replicas, True)
    unavailable = resolve(ru.get("maxUnavailable", "25%"), replicas, False)
    if surge == 0 and unavailable == 0:
        unavailable = 1
    return surge, min(unavailable, replicas)


def revision(rs: Obj) -> int:
    try:
        return int((rs["metadata"].get("annotations") or {}).get(REVISION) or 0)
    except ValueError:
        return 0


def _replicas(rs: Obj) -> int:
    return int((rs.get("spec") or {}).get("replicas") or 0)


def _st(rs: Obj | None, key: str) -> int:
    return int(((rs or {}).get("status") or {}).get(key) or 0)


def template_without_hash(rs: Obj) -> Obj:
    t = clone((rs.get("spec") or {}).get("template") or {})
    labels = (t.get("metadata") or {}).get("labels")
    if isinstance(labels, dict):
        labels.pop(HASH_LABEL, None)
    return t


class DeploymentController(WorkloadController):
    kind, plural = "Deployment", "deployments"

    def __init__(self, client: Client, pods: Informer, replicasets: Informer, workers: int = 2):
        super().__init__(client, pods, workers)
        self.replicasets = replicasets
        replicasets.add_handler(self._on_rs)

    def _on_rs(self, _type: str, rs: Obj, _old: Obj | None) -> None:
        ref = controller_ref(rs)
        if ref and ref.get("kind") == "Deployment":
            self.queue.add((rs["metadata"]["namespace"], ref["name"]))

    async def _owned_rs(self, d: Obj) -> list[Obj]:
        m = d["metadata"]
        listed = await self.client.request("GET", resource_path("apps", "v1", "replicasets", m["namespace"]))
        return [r for r in listed.get("items") or [] if (controller_ref(r) or {}).get("uid") == m["uid"]]

    async def _patch_rs(self, rs: Obj, body: Obj) -> Obj:
        m = rs["metadata"]
        return await self.client.request("PATCH", resource_path("apps", "v1", "replicasets", m["namespace"],
                                                                m["name"]), body,
                                         content_type="application/merge-patch+json")

    async def _scale(self, d: Obj, rs: Obj, replicas: int, max_replicas: int) -> Obj:
        old = _replicas(rs)
        ann = rs["metadata"].get("annotations") or {}
        want = {DESIRED: str(d["spec"].get("replicas", 1)), MAX_REPLICAS: str(max_replicas)}
        if old == replicas and all(ann.get(k) == v for k, v in want.items()):
            return rs
        updated = await self._patch_rs(rs, {"spec": {"replicas": replicas}, "metadata": {"annotations": want}})
        if old != replicas:
            verb = "up" if replicas > old else "down"
            await self.event(d, "ScalingReplicaSet",
                             f"Scaled {verb} replica set {rs['metadata']['name']} from {old} to {replicas}",
                             component="deployment-controller")
        return updated

    async def sync(self, d: Obj) -> None:
        if d["metadata"].get("deletionTimestamp"):
            return
        spec = d.get("spec") or {}
        replicas = int(spec.get("replicas", 1))
        surge, unavailable = surge_and_unavailable(d)
        all_rs = await self._owned_rs(d)
        template = spec.get("template") or {}
        new = next((r for r in all_rs if semantic_equal(template_without_hash(r), template)), None)
        olds = [r for r in all_rs if r is not new]
        max_rev = max((revision(r) for r in olds), default=0)
        created = False
        if new is None and not spec.get("paused"):
            new = await self._create_rs(d, template, max_rev + 1, replicas, surge, all_rs)
            created = new is not None
            all_rs = all_rs + ([new] if new else [])
        elif new is not None and revision(new) <= max_rev:
            # Rolled back to an older template: that ReplicaSet becomes the newest revision (rollout undo).
            new = await self._patch_rs(new, {"metadata": {"annotations": {REVISION: str(max_rev + 1)}}})
        if new is not None and not spec.get("paused"):
            await self._rollout(d, new, olds, replicas, surge, unavailable)
        elif new is not None:
            await self._scale(d, new, replicas, replicas + surge)
        if new is not None and (d["metadata"].get("annotations") or {}).get(REVISION) != \
                (new["metadata"].get("annotations") or {}).get(REVISION):
            with contextlib.suppress(APIStatusError):
                d = await self.client.request("PATCH", self.path(d["metadata"]["namespace"], d["metadata"]["name"]),
                                              {"metadata": {"annotations": {
                                                  REVISION: new["metadata"]["annotations"][REVISION]}}},
                                              content_type="application/merge-patch+json")
        await self._cleanup(d, [r for r in olds if r is not new])
        await self._status(d, new, await self._owned_rs(d), created)

    async def _create_rs(self, d: Obj, template: Obj, rev: int, replicas: int, surge: int,
                         all_rs: list[Obj]) -> Obj | None:
        m = d["metadata"]
        collision = int((d.get("status") or {}).get("collisionCount") or 0)
        h = template_hash(template, collision)
        t = clone(template)
        t.setdefault("metadata", {}).setdefault("labels", {})[HASH_LABEL] = h
        selector = clone((d.get("spec") or {}).get("selector") or {})
        selector.setdefault("matchLabels", {})[HASH_LABEL] = h
        strategy = ((d.get("spec") or {}).get("strategy") or {}).get("type")
        total = sum(_replicas(r) for r in all_rs)
        start = 0 if strategy == "Recreate" and total else min(max(replicas + surge - total, 0), replicas)
        annotations = {k: v for k, v in (m.get("annotations") or {}).items() if k not in NOT_COPIED}
        annotations.update({REVISION: str(rev), DESIRED: str(replicas), MAX_REPLICAS: str(replicas + surge)})
        rs = {"apiVersion": "apps/v1", "kind": "ReplicaSet",
              "metadata": {"name": f"{m['name']}-{h}", "namespace": m["namespace"],
                           "labels": dict(t["metadata"]["labels"]), "annotations": annotations,
                           "ownerReferences": [owner_reference(d, "apps/v1", "Deployment")]},
              "spec": {"replicas": start, "minReadySeconds": int(d["spec"].get("minReadySeconds") or 0),
                       "selector": selector, "template": t}}
        try:
            created = await self.client.request("POST", resource_path("apps", "v1", "replicasets", m["namespace"]),
                                                rs)
        except APIStatusError as e:
            if e.code == 409:  # a ReplicaSet of that name with another template: count a collision
                await self.client.request("PATCH", self.path(m["namespace"], m["name"], "status"),
                                          {"status": {"collisionCount": collision + 1}},
                                          content_type="application/merge-patch+json")
            raise
        await self.event(d, "ScalingReplicaSet", f"Scaled up replica set {created['metadata']['name']} from 0 "
                         f"to {start}", component="deployment-controller")
        return created

    async def _rollout(self, d: Obj, new: Obj, olds: list[Obj], replicas: int, surge: int,
                       unavailable: int) -> None:
        active_olds = sorted([r for r in olds if _replicas(r) > 0],
                             key=lambda r: (revision(r),
                                            timefmt.parse_seconds(r["metadata"].get("creationTimestamp")) or 0))
        max_total = replicas + surge
        if (d["spec"].get("strategy") or {}).get("type") == "Recreate":
            for r in active_olds:
                await self._scale(d, r, 0, max_total)
            if all(_st(r, "replicas") == 0 for r in olds):
                await self._scale(d, new, replicas, max_total)
            return
        if not active_olds:
            await self._scale(d, new, replicas, max_total)
            return
        # Scale the new ReplicaSet up within maxSurge.
        total = _replicas(new) + sum(_replicas(r) for r in active_olds)
        target = _replicas(new)
        if target < replicas:
            target = min(target + max(max_total - total, 0), replicas)
        elif target > replicas:
            target = replicas
        if target != _replicas(new):
            new = await self._scale(d, new, target, max_total)
        # Scale old ReplicaSets down, keeping replicas - maxUnavailable available (unhealthy pods go first).
        min_available = replicas - unavailable
        all_pods = _st(new, "replicas") + sum(_st(r, "replicas") for r in active_olds)
        new_unavailable = _replicas(new) - _st(new, "availableReplicas")
        budget = all_pods - min_available - new_unavailable
        available = _st(new, "availableReplicas") + sum(_st(r, "availableReplicas") for r in active_olds)
        healthy_budget = available - min_available
        for r in active_olds:
            if budget <= 0:
                break
            unhealthy = max(_replicas(r) - _st(r, "availableReplicas"), 0)
            cut = min(unhealthy, budget)
            cut += max(min(_replicas(r) - cut, healthy_budget, budget - cut), 0)
            if cut > 0:
                healthy_budget -= max(cut - unhealthy, 0)
                budget -= cut
                await self._scale(d, r, _replicas(r) - cut, max_total)

    async def _cleanup(self, d: Obj, olds: list[Obj]) -> None:
        limit = (d.get("spec") or {}).get("revisionHistoryLimit", 10)
        idle = sorted([r for r in olds if _replicas(r) == 0 and _st(r, "replicas") == 0
                       and not r["metadata"].get("deletionTimestamp")], key=revision)
        for r in idle[:max(len(idle) - int(limit), 0)]:
            rm = r["metadata"]
            with contextlib.suppress(APIStatusError):
                await self.client.request("DELETE", resource_path("apps", "v1", "replicasets", rm["namespace"],
                                                                  rm["name"]))

    @staticmethod
    def _past_deadline(d: Obj, conds: list[Obj]) -> bool:
        """progressDeadlineSeconds passed since the rollout last made progress (upstream's
        DeploymentTimedOut); a paused Deployment never times out."""
        spec = d.get("spec") or {}
        deadline = spec.get("progressDeadlineSeconds")
        if deadline is None or spec.get("paused"):
            return False
        progressing = next((c for c in conds if c.get("type") == "Progressing"), None)
        if progressing is None or progressing.get("reason") in ("NewReplicaSetAvailable",
                                                                   "ProgressDeadlineExceeded"):
            return False
        since = timefmt.parse_seconds(progressing.get("lastUpdateTime"))
        return since is not None and time.time() - since > int(deadline)

    async def _status(self, d: Obj, new: Obj | None, all_rs: list[Obj], created: bool) -> None:
        spec = d.get("spec") or {}
        replicas = int(spec.get("replicas", 1))
        _, unavailable = surge_and_unavailable(d)
        new = next((r for r in all_rs if new is not None and r["metadata"]["uid"] == new["metadata"]["uid"]), new)
        status = clone(d.get("status") or {})
        total = sum(_st(r, "replicas") for r in all_rs)
        available = sum(_st(r, "availableReplicas") for r in all_rs)
        status.update({"observedGeneration": d["metadata"].get("generation", 1), "replicas": total,
                       "updatedReplicas": _st(new, "replicas"),
                       "readyReplicas": sum(_st(r, "readyReplicas") for r in all_rs),
                       "availableReplicas": available,
                       "unavailableReplicas": max(sum(_replicas(r) for r in all_rs) - available, 0)})
        for k in ("replicas", "updatedReplicas", "readyReplicas", "availableReplicas", "unavailableReplicas"):
            if not status[k]:
                status.pop(k)
        conds = list(status.get("conditions") or [])
        before = d.get("status") or {}
        progressed = any(before.get(k) != status.get(k) for k in ("replicas", "updatedReplicas", "readyReplicas",
                                                                   "availableReplicas"))
        if available >= replicas - unavailable:
            conds = set_condition(conds, "Available", "True", "MinimumReplicasAvailable",
                                  "Deployment has minimum availability.", with_update_time=True)
        else:
            conds = set_condition(conds, "Available", "False", "MinimumReplicasUnavailable",
                                  "Deployment does not have minimum availability.", with_update_time=True)
        if new is not None:
            name = new["metadata"]["name"]
            complete = _st(new, "replicas") == replicas and _st(new, "availableReplicas") == replicas and \
                total == replicas and _replicas(new) == replicas
            if complete:
                conds = set_condition(conds, "Progressing", "True", "NewReplicaSetAvailable",
                                      f'ReplicaSet "{name}" has successfully progressed.', with_update_time=True)
            elif created:
                conds = set_condition(conds, "Progressing", "True", "NewReplicaSetCreated",
                                      f'Created new replica set "{name}"', with_update_time=True)
            elif progressed or not any(c.get("type") == "Progressing" for c in conds):
                conds = set_condition(conds, "Progressing", "True", "ReplicaSetUpdated",
                                      f'ReplicaSet "{name}" is progressing.', with_update_time=True, touch=True)
            elif self._past_deadline(d, conds):
                conds = set_condition(conds, "Progressing", "False", "ProgressDeadlineExceeded",
                                      f'ReplicaSet "{name}" has timed out progressing.', with_update_time=True)
        # Upstream lists Available before Progressing once both exist.
        order = {"Available": 0, "Progressing": 1}
        status["conditions"] = sorted(conds, key=lambda c: order.get(c.get("type") or "", 2))
        await self.write_status(d, status)
