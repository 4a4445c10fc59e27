"""scheduling.k8s.io/v1beta1 PodGroup (GenericWorkload; upstream's pkg/registry/scheduling/podgroup): the group
pods name in spec.schedulingGroup, and with DRAWorkloadResourceClaims (KEP-5729) the claims made for the group,
recorded in status.resourceClaimStatuses by the ResourceClaim controller."""

from __future__ import annotations

from typing import Any

from dramock.registry.gatedfields import GatedFields
from dramock.registry.kind import Kind
from dramock.registry.scheduling.common import DEFS, GROUP
from dramock.registry.strategy import Strategy
from dramock.schemas.validation import scheduling as v
from dramock.schemas.validation.field import Cause

Obj = dict[str, Any]


class PodGroupStrategy(Strategy):
    gated_fields = (
        GatedFields(("DRAWorkloadResourceClaims",), "PodGroup", ("spec.resourceClaims",),
                    upstream="podgroup dropDisabledDRAWorkloadResourceClaimsFields", root=DEFS + "PodGroup"),
    )

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


# Served only in v1beta1, when --runtime-config turns that version on and the gate is on.
KIND = Kind(GROUP, "v1beta1", "PodGroup", "podgroups", True, subresources=("status",), only_version=True,
            gate="GenericWorkload", strategy=PodGroupStrategy)
