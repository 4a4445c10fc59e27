"""ReplicaSet controller (upstream's pkg/controller/replicaset): keeps spec.replicas active pods, deleting the
least useful ones first (unscheduled, pending, not ready, newest), and reports replicas, fullyLabeledReplicas,
readyReplicas, availableReplicas and observedGeneration."""

from __future__ import annotations

from dramock import timefmt
from dramock.controllers.workloads.common import (
    Obj,
    WorkloadController,
    is_active,
    is_available,
    is_ready,
)
from dramock.schemas import labelselector

PHASE_RANK = {"Pending": 0, "Unknown": 1, "Running": 2}


def deletion_rank(pod: Obj) -> tuple:
    """Upstream's ActivePods ordering: unassigned < assigned, Pending < Running, not ready < ready, newer first."""
    return (bool((pod.get("spec") or {}).get("nodeName")),
            PHASE_RANK.get((pod.get("status") or {}).get("phase") or "Pending", 0),
            is_ready(pod),
            -(timefmt.parse_seconds(pod["metadata"].get("creationTimestamp")) or 0.0))


class ReplicaSetController(WorkloadController):
    kind, plural = "ReplicaSet", "replicasets"

    async def sync(self, rs: Obj) -> None:
        spec = rs.get("spec") or {}
        pods = [p for p in await self.owned_pods(rs) if is_active(p)]
        if not rs["metadata"].get("deletionTimestamp"):
            diff = int(spec.get("replicas", 1)) - len(pods)
            template = spec.get("template") or {}
            for _ in range(max(diff, 0)):
                created = await self.create_pod(self.pod_from_template(rs, template))
                if created:
                    pods.append(created)
                    await self.event(rs, "SuccessfulCreate", f"Created pod: {created['metadata']['name']}",
                                     component="replicaset-controller")
            if diff < 0:
                for pod in sorted(pods, key=deletion_rank)[:-diff]:
                    await self.delete_pod(pod)
                    pods.remove(pod)
                    await self.event(rs, "SuccessfulDelete", f"Deleted pod: {pod['metadata']['name']}",
                                     component="replicaset-controller")
        min_ready = int(spec.get("minReadySeconds") or 0)
        labels = ((spec.get("template") or {}).get("metadata") or {}).get("labels") or {}
        status = {k: v for k, v in (rs.get("status") or {}).items() if k == "conditions"}
        status.update({
            "replicas": len(pods),
            "fullyLabeledReplicas": sum(1 for p in pods if labelselector.matches({"matchLabels": labels},
                                                                              p["metadata"].get("labels") or {})),
            "readyReplicas": sum(1 for p in pods if is_ready(p)),
            "availableReplicas": sum(1 for p in pods if is_available(p, min_ready)),
            "observedGeneration": rs["metadata"].get("generation", 1),
        })
        await self.write_status(rs, {k: v for k, v in status.items() if v or k in ("replicas", "observedGeneration")})
