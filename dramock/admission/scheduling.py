"""Strategies of scheduling.k8s.io/v1beta1 Workload and PodGroup (upstream's pkg/registry/scheduling/workload
and podgroup, 1.37): status reset on create and kept on update, the DRAWorkloadResourceClaims fields dropped
while the gate is off (schemas/gatedfields.py), validation in schemas/validation/scheduling.py."""

from __future__ import annotations

from typing import Any

from dramock.admission.strategy import Cause, Strategy
from dramock.schemas.validation import scheduling as v

Obj = dict[str, Any]


class WorkloadStrategy(Strategy):
    def validate_semantic(self, obj: Obj) -> list[Cause]:
        return v.validate_workload(obj)

    def validate_semantic_update(self, new: Obj, old: Obj) -> list[Cause]:
        return v.validate_workload_update(new, old)


class PodGroupStrategy(Strategy):
    def validate_semantic(self, obj: Obj) -> list[Cause]:
        return v.validate_pod_group(obj)

    def validate_semantic_update(self, new: Obj, old: Obj) -> list[Cause]:
        return v.validate_pod_group_update(new, old)

    def prepare_for_status_update(self, new: Obj, old: Obj) -> None:
        super().prepare_for_status_update(new, old)
        # dropDisabledPodGroupStatusFields: kept while the gate is on or the stored spec uses group claims.
        if not self.gates.enabled("DRAWorkloadResourceClaims") and \
                not (old.get("spec") or {}).get("resourceClaims"):
            (new.get("status") or {}).pop("resourceClaimStatuses", None)

    def validate_status_update(self, new: Obj, old: Obj) -> list[Cause]:
        return super().validate_status_update(new, old) + v.validate_pod_group_status_update(new, old)


STRATEGIES: dict[str, type[Strategy]] = {
    "workloads": WorkloadStrategy,
    "podgroups": PodGroupStrategy,
}
