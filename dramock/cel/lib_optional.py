"""CEL optional types: optional.of, optional.ofNonZeroValue, optional.none and the hasValue, value, orValue
and or methods (optional selection and indexing are operators; optMap/optFlatMap are compiled directly)."""

from __future__ import annotations

from typing import Any

from dramock.cel.errors import CELRuntimeError
from dramock.cel.operators import no_overload
from dramock.cel.values import NUMERIC_TYPES, OPTIONAL_NONE, CelOptional


def fn_opt_of(s: list, x: Any) -> CelOptional:
    return CelOptional(True, x)


def _is_zero(x: Any) -> bool:
    if x is None or x is False:
        return True
    t = type(x)
    if t in NUMERIC_TYPES or t is str or t is bytes or t is list or isinstance(x, dict):
        return not x
    return False


def fn_opt_of_non_zero(s: list, x: Any) -> CelOptional:
    return OPTIONAL_NONE if _is_zero(x) else CelOptional(True, x)


def fn_opt_none(s: list) -> CelOptional:
    return OPTIONAL_NONE


def _opt_arg(fn: str, o: Any, *rest: Any) -> CelOptional:
    if type(o) is not CelOptional:
        raise no_overload(fn, o, *rest)
    return o


def fn_has_value(s: list, o: Any) -> bool:
    return _opt_arg("hasValue", o).present


def fn_value(s: list, o: Any) -> Any:
    o = _opt_arg("value", o)
    if not o.present:
        raise CELRuntimeError("optional.none() dereference")
    return o.value


def fn_or_value(s: list, o: Any, d: Any) -> Any:
    o = _opt_arg("orValue", o, d)
    return o.value if o.present else d


def fn_or(s: list, o: Any, other: Any) -> Any:
    o = _opt_arg("or", o, other)
    if o.present:
        return o
    return _opt_arg("or", other)
