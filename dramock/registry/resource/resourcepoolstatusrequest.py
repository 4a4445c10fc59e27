"""resource.k8s.io/v1alpha3 ResourcePoolStatusRequest (KEP-5677 DRAResourcePoolStatus): a one-time report
on the pools of a driver, answered by a controller."""

from __future__ import annotations

from typing import Any

from dramock.registry.kind import Kind
from dramock.registry.resource.common import GROUP
from dramock.registry.strategy import Strategy
from dramock.schemas import validation as semantic
from dramock.schemas.validation.field import Cause

Obj = dict[str, Any]
LIMIT_DEFAULT = 100  # ResourcePoolStatusRequestLimitDefault


class ResourcePoolStatusRequestStrategy(Strategy):
    def default(self, obj: Obj) -> None:
        spec = obj.get("spec")
        if isinstance(spec, dict) and spec.get("limit") is None:
            spec["limit"] = LIMIT_DEFAULT

    def validate_semantic(self, obj: Obj) -> list[Cause]:
        return semantic.validate_resource_pool_status_request(obj, gates=self.gates)

    def validate_semantic_update(self, new: Obj, old: Obj) -> list[Cause]:
        return semantic.validate_resource_pool_status_request_update(new, old, gates=self.gates)

    def validate_status_update(self, new: Obj, old: Obj) -> list[Cause]:
        return super().validate_status_update(new, old) + \
            semantic.validate_resource_pool_status_request_status_update(new, old, gates=self.gates)


# Served only in v1alpha3, when --runtime-config turns that version on and the gate is on.
KIND = Kind(GROUP, "v1alpha3", "ResourcePoolStatusRequest", "resourcepoolstatusrequests", False,
            subresources=("status",), return_deleted_object=True, only_version=True, gate="DRAResourcePoolStatus",
            strategy=ResourcePoolStatusRequestStrategy)
