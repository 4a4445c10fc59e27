"""resource.k8s.io ResourceSlice (upstream's pkg/registry/resource/resourceslice)."""

from __future__ import annotations

from typing import Any

from dramock.registry.gatedfields import GatedFields
from dramock.registry.kind import Kind, selectable
from dramock.registry.printing import RES, Printer, age, age_col, col, doc, get, name, name_col
from dramock.registry.resource.common import BINDING_GATES, DEFS, GROUP, default_taint
from dramock.registry.strategy import Strategy
from dramock.schemas import validation as semantic
from dramock.schemas.validation.field import Cause

Obj = dict[str, Any]
_ROOT = DEFS + "ResourceSlice"
_DEV = "spec.devices[*]"

# pkg/registry/resource/resourceslice/strategy.go dropDisabledFields
GATED_FIELDS = tuple(GatedFields(gates, "ResourceSlice", paths, upstream=upstream, root=_ROOT)
                     for gates, paths, upstream in (
    (("DRADeviceTaints",), (f"{_DEV}.taints",), "resourceslice dropDisabledDRADeviceTaintsFields"),
    (("DRAPartitionableDevices",),
     ("spec.sharedCounters", "spec.perDeviceNodeSelection", f"{_DEV}.consumesCounters", f"{_DEV}.nodeName",
      f"{_DEV}.nodeSelector", f"{_DEV}.allNodes"),
     "resourceslice dropDisabledDRAPartitionableDevicesFields"),
    (BINDING_GATES, (f"{_DEV}.bindingConditions", f"{_DEV}.bindingFailureConditions", f"{_DEV}.bindsToNode"),
     "resourceslice dropDisabledDRADeviceBindingConditionsFields"),
    (("DRAConsumableCapacity",), (f"{_DEV}.allowMultipleAllocations", f"{_DEV}.capacity{{*}}.requestPolicy"),
     "resourceslice dropDisabledDRAConsumableCapacityFields"),
    (("DRANodeAllocatableResources",), (f"{_DEV}.nodeAllocatableResources",),
     "resourceslice dropDisabledDRANodeAllocatableResourcesFields"),
    (("DRAListTypeAttributes",),
     tuple(f"{_DEV}.attributes{{*}}.{f}" for f in ("bools", "ints", "strings", "versions")),
     "resourceslice dropDisableDRAListTypeAttributesFields"),
    (("DRAResourcePoolStatus",), ("spec.partitionTypeAttribute",),
     "resourceslice dropDisabledDRAResourcePoolStatusFields"),
    (("DRAOptionalNodeOperations",), ("spec.skipNodeOperations",), "resourceslice (skipNodeOperations, KEP-5945)"),
    (("DRADeviceCompatibilityGroups",), (f"{_DEV}.consumesCounters[*].compatibilityGroups",),
     "resourceslice (compatibilityGroups, KEP-5963)"),
))


def default(obj: Obj) -> None:
    for device in (obj.get("spec") or {}).get("devices") or []:
        if isinstance(device, dict):
            for taint in device.get("taints") or []:
                default_taint(taint)


class ResourceSliceStrategy(Strategy):
    gated_fields = GATED_FIELDS

    def default(self, obj: Obj) -> None:
        default(obj)

    def validate_semantic(self, obj: Obj) -> list[Cause]:
        return semantic.validate_resource_slice(obj, gates=self.gates)

    def validate_semantic_update(self, new: Obj, old: Obj) -> list[Cause]:
        return semantic.validate_resource_slice_update(new, old, gates=self.gates)

    def warnings_on_create(self, obj: Obj) -> list[str]:
        driver = (obj.get("spec") or {}).get("driver")
        if isinstance(driver, str) and driver != driver.lower():
            return [f'spec.driver: driver names should be lowercase; "{driver}" contains uppercase characters']
        return []


def _columns() -> list[Obj]:
    return [
        name_col(),
        col("Node", "string", doc(RES + "ResourceSliceSpec", "nodeName")),
        col("Driver", "string", doc(RES + "ResourceSliceSpec", "driver")),
        col("Pool", "string", doc(RES + "ResourcePool", "name")),
        age_col(),
    ]


PRINTER = Printer(_columns, lambda o, now: [name(o), get(o, "spec", "nodeName", default=""),
                                            get(o, "spec", "driver", default=""),
                                            get(o, "spec", "pool", "name", default=""), age(o, now)])

KIND = Kind(GROUP, "v1", "ResourceSlice", "resourceslices", False,
            selectable_fields={
                "spec.nodeName": selectable("spec", "nodeName"),
                "spec.driver": selectable("spec", "driver"),
                "spec.pool.name": selectable("spec", "pool", "name"),
            },
            return_deleted_object=True, tracks_generation=True, strategy=ResourceSliceStrategy, printer=PRINTER)
