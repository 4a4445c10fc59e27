"""Field errors (upstream's k8s.io/apimachinery/pkg/util/validation/field) and semantic equality.

A cause is `{"reason", "message", "field"}` as it appears in a Status's details.causes.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

Obj = dict[str, Any]
Cause = dict[str, str]

def cause(reason: str, field: str, message: str) -> Cause:
    return {"reason": reason, "message": message, "field": field}


def invalid_value(field: str, value: Any, detail: str) -> Cause:
    rendered = json.dumps(value) if not isinstance(value, str) else f'"{value}"'
    return cause("FieldValueInvalid", field, f"Invalid value: {rendered}: {detail}")


def required(field: str, detail: str = "") -> Cause:
    return cause("FieldValueRequired", field, "Required value" + (f": {detail}" if detail else ""))


def forbidden(field: str, detail: str) -> Cause:
    return cause("FieldValueForbidden", field, f"Forbidden: {detail}")


def too_long(field: str, maximum: int) -> Cause:
    return cause("FieldValueTooLong", field, f"Too long: may not be more than {maximum} bytes")


def render(value: Any) -> str:
    """A bad value the way field.Error prints simple values: strings quoted, the rest as JSON."""
    if isinstance(value, str):
        return f'"{value}"'
    return json.dumps(value)


def invalid_raw(field: str, rendered: str, detail: str) -> Cause:
    """FieldValueInvalid for a value printed through its String() method (not quoted)."""
    return cause("FieldValueInvalid", field, f"Invalid value: {rendered}: {detail}")


def too_many(field: str, actual: int, maximum: int) -> Cause:
    return cause("FieldValueTooMany", field, f"Too many: {actual}: must have at most {maximum} items")


def duplicate(field: str, value: Any) -> Cause:
    return cause("FieldValueDuplicate", field, f"Duplicate value: {render(value)}")


def not_supported(field: str, value: Any, supported: Iterable[str]) -> Cause:
    values = ", ".join(f'"{s}"' for s in supported)
    return cause("FieldValueNotSupported", field,
                 f"Unsupported value: {render(value)}" + (f": supported values: {values}" if values else ""))


def not_found(field: str, value: Any, detail: str = "") -> Cause:
    return cause("FieldValueNotFound", field, f"Not found: {render(value)}" + (f": {detail}" if detail else ""))


def go_list(type_name: str, items: list | None) -> str:
    """Go's %#v of a slice: `[]string{"a", "b"}`, `[]string(nil)`."""
    if items is None:
        return f"[]{type_name}(nil)"
    return f"[]{type_name}{{" + ", ".join(render(i) for i in items) + "}"


def invalid_list(field: str, type_name: str, items: list | None, detail: str) -> Cause:
    return invalid_raw(field, go_list(type_name, items), detail)


# --- paths ---


def child(path: str, *names: str) -> str:
    for name in names:
        path = f"{path}.{name}" if path else name
    return path


def index(path: str, i: int) -> str:
    return f"{path}[{i}]"


def key(path: str, k: str) -> str:
    return f"{path}[{k}]"


# --- wire-shaped values: the value if it has the expected JSON type, else an empty one ---


def _list(value: Any) -> list:
    return value if isinstance(value, list) else []


def _dict(value: Any) -> dict:
    return value if isinstance(value, dict) else {}


def _str(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _pruned(value: Any) -> Any:
    """`value` without null, {} and [] members (Go's decoding makes them indistinguishable from absent)."""
    if isinstance(value, dict):
        out = {k: _pruned(v) for k, v in value.items()}
        return {k: v for k, v in out.items() if v not in (None, {}, [])}
    if isinstance(value, list):
        return [_pruned(v) for v in value]
    return value


def semantic_equal(a: Any, b: Any) -> bool:
    """Upstream's apiequality.Semantic.DeepEqual on wire-shaped values: empty and absent are equal."""
    return a == b or _pruned(a) == _pruned(b)
