"""The informers' event handlers (upstream's eventhandlers.go): pods into and out of the queue, cluster events
(nodes, claims, slices, classes, taint rules) moving unschedulable pods, and the cache kept up to date."""

from __future__ import annotations

from typing import Any

from dramock.client.informer import resource_version
from dramock.scheduler.base import SchedulerBase
from dramock.scheduler.framework import Obj


class EventHandlers(SchedulerBase):
    """What each informer event does to the queue and the cache."""

    def _on_pod(self, type_: str, pod: Obj, old: Obj | None) -> None:
        self.node_usage.pod_changed(pod, type_ == "DELETED")
        m = pod["metadata"]
        key = f"{m.get('namespace', '')}/{m['name']}"
        uid = m.get("uid")
        if type_ == "DELETED":
            self.assumed_pods.pop(uid, None)
            self._last_event.pop(uid, None)
            self._pod_requests.pop(uid, None)
            self._forget(key)
            if (pod.get("spec") or {}).get("nodeName"):
                self._move_all("pod deleted")
            return
        spec = pod.get("spec") or {}
        if spec.get("nodeName"):
            if uid in self.assumed_pods:
                self.assumed_pods.pop(uid, None)
            self._forget(key)
            if (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed") and \
                    (old is None or (old.get("status") or {}).get("phase") != pod["status"]["phase"]):
                self._move_all("pod terminated")
            if old is not None and m.get("deletionTimestamp") and not old["metadata"].get("deletionTimestamp"):
                self._move_all("pod terminating")
            return
        if not self._wants(pod):
            if uid not in self.assumed_pods:
                self._forget(key)
            return
        if old is None or not self._queued(key):
            self._activate(key)
            return
        if key in self.unschedulable and self._relevant_pod_update(old, pod):
            self._requeue(key)

    @staticmethod
    def _relevant_pod_update(old: Obj, new: Obj) -> bool:
        """Spec, labels, annotations or the claim statuses changed (not our own condition write)."""
        if old.get("spec") != new.get("spec"):
            return True
        for f in ("labels", "annotations"):
            if old["metadata"].get(f) != new["metadata"].get(f):
                return True
        return (old.get("status") or {}).get("resourceClaimStatuses") != \
            (new.get("status") or {}).get("resourceClaimStatuses")

    def _on_node(self, type_: str, node: Obj, old: Obj | None) -> None:
        self._nodes_view = None
        if type_ == "DELETED":
            return
        if old is not None:
            def shape(n: Obj) -> Any:
                return (n["metadata"].get("labels"), (n.get("spec") or {}).get("taints"),
                        (n.get("spec") or {}).get("unschedulable"), (n.get("status") or {}).get("allocatable"))
            if shape(old) == shape(node):
                return
        self._move_all(f"node {type_.lower()}")

    def _on_claim(self, type_: str, claim: Obj, old: Obj | None) -> None:
        for waiter in self._claim_waiters:
            waiter.set()
        m = claim["metadata"]
        k = (m.get("namespace", ""), m["name"])
        self.held.claim_changed(*k)
        assumed = self.assumed_claims.get(k)
        if assumed is not None and (type_ == "DELETED" or resource_version(claim) >= resource_version(assumed)
                                    or m.get("uid") != assumed["metadata"].get("uid")):
            del self.assumed_claims[k]
        if old is not None and type_ != "DELETED" and old.get("status") == claim.get("status") and \
                old["metadata"].get("deletionTimestamp") == m.get("deletionTimestamp"):
            return
        self._move_all(f"claim {type_.lower()}", k)

    def _on_cluster_object(self, type_: str, obj: Obj, old: Obj | None) -> None:
        self.cluster_generation += 1
        if old is not None and type_ != "DELETED" and old.get("spec") == obj.get("spec"):
            return
        self._move_all(f"{obj.get('kind', 'object')} {type_.lower()}")
