"""Decoding-time checks of a request body against its kind's definition, as Go's strict decoder does.

Unknown fields are reported (and removed, so Warn/Ignore store what a Go struct would keep);
values of the wrong JSON type are decode errors (400), exactly where client-go's decoder would fail.
"""

from __future__ import annotations

from typing import Any

from dramock.schemas import defs

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


def _json_type(v: Any) -> str:
    if isinstance(v, bool):
        return "bool"
    if isinstance(v, (int, float)):
        return "number"
    if isinstance(v, str):
        return "string"
    if isinstance(v, list):
        return "array"
    return "object"


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


def _walk(value: Any, schema: defs.Schema, path: str, report: DecodeReport) -> None:
    schema = defs.resolve(schema)
    ok, want = _type_ok(value, schema)
    if not ok:
        report.type_errors.append(
            f"json: cannot unmarshal {_json_type(value)} into Go struct field {path or '.'} "
            f"of type {_GO_TYPE.get(want, want)}")
        return
    if value is None:
        return
    if isinstance(value, dict):
        props = schema.get("properties")
        if props is not None:
            for key in list(value):
                if key in props:
                    _walk(value[key], props[key], f"{path}.{key}" if path else key, report)
                elif not schema.get("x-kubernetes-preserve-unknown-fields"):
                    report.unknown.append(f"{path}.{key}" if path else key)
                    del value[key]
        elif isinstance(schema.get("additionalProperties"), dict):
            add = schema["additionalProperties"]
            for key, v in value.items():
                _walk(v, add, f"{path}[{key}]", report)
    elif isinstance(value, list) and "items" in schema:
        for i, v in enumerate(value):
            _walk(v, schema["items"], f"{path}[{i}]", report)
