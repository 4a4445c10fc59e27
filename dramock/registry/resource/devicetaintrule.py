"""resource.k8s.io DeviceTaintRule (upstream's pkg/registry/resource/devicetaintrule). Its strategy drops
no fields."""

from __future__ import annotations

from typing import Any

from dramock import timefmt
from dramock.registry.kind import Kind
from dramock.registry.printing import Printer, age, name
from dramock.registry.resource.common import GROUP, default_taint, name_and_age_columns
from dramock.registry.strategy import Strategy
from dramock.schemas import validation as semantic
from dramock.schemas.validation.field import Cause

Obj = dict[str, Any]


class DeviceTaintRuleStrategy(Strategy):
    def default(self, obj: Obj) -> None:
        default_taint((obj.get("spec") or {}).get("taint"))

    def prepare_for_update(self, new: Obj, old: Obj) -> None:
        taint = (new.get("spec") or {}).get("taint")
        old_taint = (old.get("spec") or {}).get("taint") or {}
        # timeAdded tracks when the *effect* was added: bumped when the effect changes, unless the
        # client changed it itself (seconds resolution, as the wire format keeps).
        if isinstance(taint, dict) and taint.get("effect") != old_taint.get("effect") \
                and taint.get("timeAdded") == old_taint.get("timeAdded"):
            taint["timeAdded"] = timefmt.now()
        super().prepare_for_update(new, old)

    def allow_unconditional_update(self) -> bool:
        # Historic behaviour of the old versions; v1 (and later) require a resourceVersion.
        return self.kind.version in ("v1beta2", "v1alpha3")

    def validate_semantic(self, obj: Obj) -> list[Cause]:
        return semantic.validate_device_taint_rule(obj, gates=self.gates)

    def validate_semantic_update(self, new: Obj, old: Obj) -> list[Cause]:
        return semantic.validate_device_taint_rule_update(new, old, gates=self.gates)

    def validate_status_update(self, new: Obj, old: Obj) -> list[Cause]:
        return super().validate_status_update(new, old) + semantic.validate_device_taint_rule_status_update(
            new, old, gates=self.gates)


PRINTER = Printer(name_and_age_columns, lambda o, now: [name(o), age(o, now)])

# Unlike the other resource.k8s.io kinds, upstream's v1 DeviceTaintRule REST answers DELETE with a Status.
KIND = Kind(GROUP, "v1", "DeviceTaintRule", "devicetaintrules", False, subresources=("status",),
            tracks_generation=True, strategy=DeviceTaintRuleStrategy, printer=PRINTER)
