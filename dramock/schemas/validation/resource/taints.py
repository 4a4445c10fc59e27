"""Device taints and device tolerations (ResourceSlice devices, DeviceTaintRule, claim requests and
allocation results)."""

from __future__ import annotations

from dramock.schemas.validation.field import Cause, Obj, _str, child, invalid_value, not_supported, required
from dramock.schemas.validation.names import validate_label_name, validate_label_value
from dramock.schemas.validation.resource.limits import DEVICE_TAINT_EFFECTS, DEVICE_TOLERATION_OPERATORS


def _validate_device_toleration(toleration: Obj, path: str) -> list[Cause]:
    errs: list[Cause] = []
    k = _str(toleration.get("key"))
    if k:
        errs += validate_label_name(k, child(path, "key"))
    op = _str(toleration.get("operator"))
    value = _str(toleration.get("value"))
    if op == "Exists":
        if value:
            errs.append(invalid_value(child(path, "value"), value, "must be empty for operator `Exists`"))
    elif op == "Equal":
        errs += validate_label_value(value, child(path, "value"))
    elif op == "":
        errs.append(required(child(path, "operator")))
    else:
        errs.append(not_supported(child(path, "operator"), op, DEVICE_TOLERATION_OPERATORS))
    effect = _str(toleration.get("effect"))
    if effect and effect not in DEVICE_TAINT_EFFECTS:
        errs.append(not_supported(child(path, "effect"), effect, DEVICE_TAINT_EFFECTS))
    return errs


def _validate_device_taint(taint: Obj, old_taint: Obj | None, path: str) -> list[Cause]:
    errs = validate_label_name(_str(taint.get("key")), child(path, "key"))
    value = _str(taint.get("value"))
    if value:
        errs += validate_label_value(value, child(path, "value"))
    effect = _str(taint.get("effect"))
    if old_taint is None or _str(old_taint.get("effect")) != effect:
        if not effect:
            errs.append(required(child(path, "effect")))
        elif effect not in DEVICE_TAINT_EFFECTS:
            errs.append(not_supported(child(path, "effect"), effect, DEVICE_TAINT_EFFECTS))
    return errs
