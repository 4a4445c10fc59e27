"""Opaque device configuration (DeviceClass, ResourceClaim spec and allocation) and the RawExtension
size and shape checks it shares with device status data."""

from __future__ import annotations

import json
from typing import Any

from dramock.schemas.validation.field import Cause, Obj, _dict, _str, child, invalid_value, required, too_long
from dramock.schemas.validation.resource.limits import OPAQUE_PARAMETERS_MAX_LENGTH
from dramock.schemas.validation.resource.names import validate_driver_name


def _validate_device_configuration(config: Obj, path: str, stored: bool) -> list[Cause]:
    if config.get("opaque") is None:
        return [required(child(path, "opaque"))]
    opaque = _dict(config.get("opaque"))
    p = child(path, "opaque")
    errs = validate_driver_name(_str(opaque.get("driver")), child(p, "driver"))
    return errs + _validate_raw_extension(opaque.get("parameters"), "parameters" in opaque, child(p, "parameters"),
                                          stored, OPAQUE_PARAMETERS_MAX_LENGTH)


def _validate_raw_extension(value: Any, present: bool, path: str, stored: bool, max_length: int) -> list[Cause]:
    """A runtime.RawExtension in JSON form: the raw bytes are the compact JSON encoding of the value."""
    if not present or value is None:  # absent or null: empty Raw
        return [required(path)]
    raw = json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    if not stored and len(raw.encode()) > max_length:
        return [too_long(path, max_length)]
    if not isinstance(value, dict):
        return [invalid_value(path, "<value omitted>", "must be a valid JSON object")]
    return []
