"""Field errors (upstream's k8s.io/apimachinery/pkg/util/validation/field) and semantic equality.

A cause is `{"reason", "message", "field"}` as it appears in a Status's details.causes.
"""

from __future__ import annotations

import json
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
