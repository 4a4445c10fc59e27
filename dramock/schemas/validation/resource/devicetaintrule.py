"""DeviceTaintRule: device selector, taint and status conditions."""

from __future__ import annotations

from dramock.schemas.featuregates import FeatureGates
from dramock.schemas.validation.field import Cause, Obj, _dict, _list, _str, child, too_many
from dramock.schemas.validation.meta import validate_conditions
from dramock.schemas.validation.names import validate_dns1123_label
from dramock.schemas.validation.resource.limits import DEVICE_TAINT_RULE_STATUS_MAX_CONDITIONS
from dramock.schemas.validation.resource.names import validate_driver_name, validate_pool_name
from dramock.schemas.validation.resource.taints import _validate_device_taint


def validate_device_taint_rule(obj: Obj, *, gates: FeatureGates | None = None) -> list[Cause]:
    return _validate_device_taint_rule_spec(_dict(obj.get("spec")), None, "spec")


def validate_device_taint_rule_update(new: Obj, old: Obj, *, gates: FeatureGates | None = None) -> list[Cause]:
    return _validate_device_taint_rule_spec(_dict(new.get("spec")), _dict(old.get("spec")), "spec")


def validate_device_taint_rule_status_update(new: Obj, old: Obj, *, gates: FeatureGates | None = None
                                             ) -> list[Cause]:
    conditions = _list(_dict(new.get("status")).get("conditions"))
    errs = validate_conditions(conditions, "status.conditions")
    if len(conditions) > DEVICE_TAINT_RULE_STATUS_MAX_CONDITIONS:
        errs.append(too_many("status.conditions", len(conditions), DEVICE_TAINT_RULE_STATUS_MAX_CONDITIONS))
    return errs


def _validate_device_taint_rule_spec(spec: Obj, old_spec: Obj | None, path: str) -> list[Cause]:
    errs: list[Cause] = []
    selector = spec.get("deviceSelector")
    if selector is not None:
        selector = _dict(selector)
        sp = child(path, "deviceSelector")
        if selector.get("driver") is not None:
            errs += validate_driver_name(_str(selector.get("driver")), child(sp, "driver"))
        if selector.get("pool") is not None:
            errs += validate_pool_name(_str(selector.get("pool")), child(sp, "pool"))
        if selector.get("device") is not None:
            errs += validate_dns1123_label(_str(selector.get("device")), child(sp, "device"))
    old_taint = _dict(old_spec.get("taint")) if old_spec is not None else None
    errs += _validate_device_taint(_dict(spec.get("taint")), old_taint, child(path, "taint"))
    return errs
