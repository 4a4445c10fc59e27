"""resource.k8s.io DeviceClass (upstream's pkg/registry/resource/deviceclass)."""

from __future__ import annotations

from typing import Any

from dramock.registry.gatedfields import GatedFields
from dramock.registry.kind import Kind
from dramock.registry.printing import Printer, age, name
from dramock.registry.resource.common import DEFS, GROUP, name_and_age_columns
from dramock.registry.strategy import Strategy
from dramock.schemas import validation as semantic
from dramock.schemas.validation.field import Cause

Obj = dict[str, Any]

GATED_FIELDS = (
    GatedFields(("DRAExtendedResource",), "DeviceClass", ("spec.extendedResourceName",),
                upstream="deviceclass dropDisabledDRAExtendedResourceFields", root=DEFS + "DeviceClass"),
)


class DeviceClassStrategy(Strategy):
    gated_fields = GATED_FIELDS

    def validate_semantic(self, obj: Obj) -> list[Cause]:
        return semantic.validate_device_class(obj, gates=self.gates)

    def validate_semantic_update(self, new: Obj, old: Obj) -> list[Cause]:
        return semantic.validate_device_class_update(new, old, gates=self.gates)


PRINTER = Printer(name_and_age_columns, lambda o, now: [name(o), age(o, now)])

KIND = Kind(GROUP, "v1", "DeviceClass", "deviceclasses", False,
            return_deleted_object=True, tracks_generation=True, strategy=DeviceClassStrategy, printer=PRINTER)
