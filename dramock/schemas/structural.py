"""Decoding-time checks of a request body against its kind's definition, as Go's strict decoder does.

Unknown fields are reported (and removed, so Warn/Ignore store what a Go struct would keep);
values of the wrong JSON type are decode errors (400), exactly where client-go's decoder would fail.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Any

from dramock.jsonvalue import go_type_name
from dramock.schemas import defs, quantity

_JSON_TYPES = {
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "object": (dict,),
    "array": (list,),
}

_GO_TYPE = {"string": "string", "integer": "int64", "number": "float64", "boolean": "bool",
            "object": "map", "array": "slice"}


class DecodeReport:
    def __init__(self) -> None:
        self.unknown: list[str] = []
        self.type_errors: list[str] = []


def check(obj: dict[str, Any], definition: str) -> DecodeReport:
    """Walk `obj` against `definition`, removing unknown fields in place and reporting them."""
    report = DecodeReport()
    _walk(obj, defs.definition(definition), "", report)
    return report


def _type_ok(value: Any, schema: defs.Schema) -> tuple[bool, str]:
    if value is None:
        return True, ""
    if "oneOf" in schema:  # Quantity, IntOrString
        for alt in schema["oneOf"]:
            if _type_ok(value, alt)[0]:
                return True, ""
        return False, "string"
    types = defs.types_of(schema)
    if not types:
        return True, ""
    for t in types:
        py = _JSON_TYPES.get(t)
        if py is None:
            return True, ""
        if isinstance(value, bool) and t not in ("boolean",):
            continue
        if t == "integer" and isinstance(value, float) and value.is_integer():
            return True, ""
        if isinstance(value, py):
            return True, ""
    return False, next(iter(types))


_TIME = "io.k8s.apimachinery.pkg.apis.meta.v1.Time"
_MICRO_TIME = "io.k8s.apimachinery.pkg.apis.meta.v1.MicroTime"
_RFC3339 = re.compile(r"^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(\.(\d+))?([Zz]|[+-]\d{2}:\d{2})$")


def _timestamp(value: Any, micro: bool, report: DecodeReport) -> Any:
    """Re-render a timestamp the way Go's metav1.Time / MicroTime marshal it (UTC, Z, fixed precision)."""
    if not isinstance(value, str) or value == "":
        return None if value == "" else value
    m = _RFC3339.match(value)
    layout = '"2006-01-02T15:04:05.000000Z07:00"' if micro else '"2006-01-02T15:04:05Z07:00"'
    if m is None or (micro and len(m.group(8) or "") != 6):
        report.type_errors.append(f'parsing time "{value}" as {layout}: cannot parse "{value}" as {layout}')
        return value
    frac = m.group(8) or ""
    try:
        ts = datetime.fromisoformat(f"{value[:19]}{('.' + frac[:6]) if frac else ''}"
                                    f"{'+00:00' if m.group(9) in 'Zz' else m.group(9)}")
    except ValueError:
        report.type_errors.append(f'parsing time "{value}": day out of range')
        return value
    ts = ts.astimezone(UTC)
    if micro:
        return ts.strftime("%Y-%m-%dT%H:%M:%S.") + f"{ts.microsecond:06d}Z"
    return ts.strftime("%Y-%m-%dT%H:%M:%SZ")


_QUANTITY = "io.k8s.apimachinery.pkg.api.resource.Quantity"
_QUANTITY_SYNTAX = "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"


def _quantity(value: Any, report: DecodeReport) -> Any:
    """Re-render a quantity as Go's resource.Quantity marshals it (canonical form, e.g. 1024Mi -> 1Gi)."""
    if value is None:
        return None
    q = quantity.parse_or_none(value)
    if q is None:
        report.type_errors.append(_QUANTITY_SYNTAX)
        return value
    return str(q)


def _walk(value: Any, schema: defs.Schema, path: str, report: DecodeReport) -> Any:
    """Check `value`; returns it, normalized where Go's decoding would (timestamps, quantities)."""
    ref = defs.ref_name(schema)
    if ref in (_TIME, _MICRO_TIME):
        return _timestamp(value, ref == _MICRO_TIME, report)
    if ref == _QUANTITY:
        return _quantity(value, report)
    schema = defs.resolve(schema)
    ok, want = _type_ok(value, schema)
    if not ok:
        report.type_errors.append(
            f"json: cannot unmarshal {go_type_name(value)} into Go struct field {path or '.'} "
            f"of type {_GO_TYPE.get(want, want)}")
        return value
    if value is None:
        return value
    if isinstance(value, dict):
        props = schema.get("properties")
        if props is not None:
            for key in list(value):
                if key in props:
                    value[key] = _walk(value[key], props[key], f"{path}.{key}" if path else key, report)
                elif not schema.get("x-kubernetes-preserve-unknown-fields"):
                    report.unknown.append(f"{path}.{key}" if path else key)
                    del value[key]
        elif isinstance(schema.get("additionalProperties"), dict):
            add = schema["additionalProperties"]
            for key in list(value):
                value[key] = _walk(value[key], add, f"{path}[{key}]", report)
    elif isinstance(value, list) and "items" in schema:
        for i, v in enumerate(value):
            value[i] = _walk(v, schema["items"], f"{path}[{i}]", report)
    return value
