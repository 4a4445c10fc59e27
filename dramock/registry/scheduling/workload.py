"""scheduling.k8s.io/v1beta1 Workload (GenericWorkload, KEP-4671; upstream's pkg/registry/scheduling/workload):
the pod groups of a workload, with the DRAWorkloadResourceClaims claims of their templates (KEP-5729)."""

from __future__ import annotations

from typing import Any

from dramock.registry.gatedfields import GatedFields
from dramock.registry.kind import Kind
from dramock.registry.scheduling.common import DEFS, GROUP
from dramock.registry.strategy import Strategy
from dramock.schemas.validation import scheduling as v
from dramock.schemas.validation.field import Cause

Obj = dict[str, Any]


class WorkloadStrategy(Strategy):
    gated_fields = (
        GatedFields(("DRAWorkloadResourceClaims",), "Workload", ("spec.podGroupTemplates[*].resourceClaims",),
                    upstream="workload dropDisabledDRAWorkloadResourceClaimsFields", root=DEFS + "Workload"),
    )

    def validate_semantic(self, obj: Obj) -> list[Cause]:
        return v.validate_workload(obj)

    def validate_semantic_update(self, new: Obj, old: Obj) -> list[Cause]:
        return v.validate_workload_update(new, old)


# Served only in v1beta1, when --runtime-config turns that version on and the gate is on.
KIND = Kind(GROUP, "v1beta1", "Workload", "workloads", True, only_version=True, gate="GenericWorkload",
            strategy=WorkloadStrategy)
