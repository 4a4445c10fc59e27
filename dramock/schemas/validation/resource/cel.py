"""CEL selectors: the length limit, then compilation and cost through dramock.cel.

`_cel` is looked up at call time, so a test can stand in a fake compiler for it."""

from __future__ import annotations

from dramock import cel as _cel
from dramock.schemas.featuregates import FeatureGates
from dramock.schemas.validation.field import (
    Cause,
    Obj,
    _dict,
    _str,
    child,
    forbidden,
    invalid_value,
    required,
    too_long,
)
from dramock.schemas.validation.resource.common import _gate
from dramock.schemas.validation.resource.limits import (
    CEL_SELECTOR_EXPRESSION_MAX_COST,
    CEL_SELECTOR_EXPRESSION_MAX_LENGTH,
)


def validate_cel_expression(expression: str, path: str, stored: bool = False, gates: FeatureGates | None = None,
                            derived_attribute: bool = False) -> list[Cause]:
    """validateCELExpression: length limit, then compilation through dramock.cel.

    A compile error (CELCompileError) is a FieldValueInvalid with the compiler's message; an estimated cost
    above the limit (CELCostExceeded) is upstream's FieldValueForbidden "too complex, exceeds cost limit".
    """
    if stored:
        # A stored expression was valid when it was stored; it is not compiled again.
        return []
    if len(expression) > CEL_SELECTOR_EXPRESSION_MAX_LENGTH:
        return [too_long(path, CEL_SELECTOR_EXPRESSION_MAX_LENGTH)]
    compile_ = getattr(_cel, "compile", None)
    if compile_ is None or derived_attribute:
        # Derived attributes evaluate to any scalar or list, not to a bool like selectors: the selector
        # compiler would reject them, so only their length is checked here.
        return []
    error_type = getattr(_cel, "CELCompileError", None)
    cost_type = getattr(_cel, "CELCostExceeded", None)
    try:
        try:
            result = compile_(expression, list_type_attributes=_gate(gates, "DRAListTypeAttributes"),
                              consumable_capacity=_gate(gates, "DRAConsumableCapacity"))
        except TypeError as e:
            if "keyword" not in str(e):
                raise
            result = compile_(expression)
    except Exception as e:
        if cost_type is not None and isinstance(e, cost_type):
            return [forbidden(path, "too complex, exceeds cost limit")]
        if error_type is not None and not isinstance(e, error_type):
            raise
        return [invalid_value(path, expression, getattr(e, "message", None) or str(e) or "compilation failed")]
    cost = getattr(result, "max_cost", None)
    if isinstance(cost, (int, float)) and cost > CEL_SELECTOR_EXPRESSION_MAX_COST:
        return [forbidden(path, "too complex, exceeds cost limit")]
    return []


def _validate_selector(selector: Obj, path: str, stored: bool, gates: FeatureGates | None) -> list[Cause]:
    if selector.get("cel") is None:
        return [required(child(path, "cel"))]
    return validate_cel_expression(_str(_dict(selector.get("cel")).get("expression")),
                                   child(path, "cel", "expression"), stored, gates)
