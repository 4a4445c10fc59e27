"""Device attribute values: exactly one of the scalar or list forms, string length, semver versions."""

from __future__ import annotations

import re

from dramock.schemas.validation.field import (
    Cause,
    Obj,
    _list,
    _str,
    child,
    index,
    invalid_list,
    invalid_value,
    too_long,
)
from dramock.schemas.validation.names import full_match
from dramock.schemas.validation.resource.limits import DEVICE_ATTRIBUTE_MAX_VALUE_LENGTH

_NUMERIC_ID = r"(0|[1-9]\d*)"
_PRE_RELEASE_ID = r"(0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)"
_BUILD_ID = r"[0-9a-zA-Z-]+"
_SEMVER_RE = re.compile("^" + _NUMERIC_ID + r"\." + _NUMERIC_ID + r"\." + _NUMERIC_ID
                        + "(-" + _PRE_RELEASE_ID + r"(\." + _PRE_RELEASE_ID + ")*)?"
                        + r"(\+" + _BUILD_ID + r"(\." + _BUILD_ID + ")*)?$")


def _validate_attribute_string(value: str, path: str) -> list[Cause]:
    if len(value.encode()) > DEVICE_ATTRIBUTE_MAX_VALUE_LENGTH:
        return [too_long(path, DEVICE_ATTRIBUTE_MAX_VALUE_LENGTH)]
    return []


def _validate_attribute_version(value: str, path: str) -> list[Cause]:
    errs: list[Cause] = []
    if not full_match(_SEMVER_RE, value):
        errs.append(invalid_value(path, value, "must be a string compatible with semver.org spec 2.0.0"))
    errs += _validate_attribute_string(value, path)
    return errs


def _validate_device_attribute(attribute: Obj, path: str) -> list[Cause]:
    if len(attribute) == 1:  # the usual attribute: one scalar (what the checks below find nothing wrong with)
        for field, value in attribute.items():
            if value is None:
                break
            if field == "bool" or field == "int":
                return []
            if field == "string" and not (isinstance(value, str) and len(value) * 4 > DEVICE_ATTRIBUTE_MAX_VALUE_LENGTH
                                          and len(value.encode()) > DEVICE_ATTRIBUTE_MAX_VALUE_LENGTH):
                return []
            if field == "version" and isinstance(value, str) and _SEMVER_RE.fullmatch(value) is not None and \
                    len(value.encode()) <= DEVICE_ATTRIBUTE_MAX_VALUE_LENGTH:
                return []
    errs: list[Cause] = []
    num = 0
    for field in ("bool", "int"):
        if attribute.get(field) is not None:
            num += 1
    if attribute.get("string") is not None:
        num += 1
        errs += _validate_attribute_string(_str(attribute.get("string")), child(path, "string"))
    if attribute.get("version") is not None:
        num += 1
        errs += _validate_attribute_version(_str(attribute.get("version")), child(path, "version"))
    for field, go_type, check in (("bools", "bool", None), ("ints", "int64", None),
                                  ("strings", "string", _validate_attribute_string),
                                  ("versions", "string", _validate_attribute_version)):
        if attribute.get(field) is None:
            continue
        num += 1
        items = _list(attribute.get(field))
        if not items:
            errs.append(invalid_list(child(path, field), go_type, [], "must not be empty if specified"))
        if check is not None:
            for i, item in enumerate(items):
                errs += check(_str(item), index(child(path, field), i))
    if num == 0:
        errs.append(invalid_value(path, "", "exactly one value must be specified"))
    elif num > 1:
        errs.append(invalid_value(path, attribute, "exactly one value must be specified"))
    return errs
