"""The Kubernetes CEL quantity library: quantity(), isQuantity() and the kubernetes.Quantity methods sign,
asApproximateFloat, asInteger, isInteger, add, sub, mul, div and divInt. The value type is
dramock.schemas.quantity.Quantity; the comparisons it shares with semver are in lib_comparable."""

from __future__ import annotations

from typing import Any

from dramock.cel.errors import CELRuntimeError
from dramock.cel.operators import no_overload
from dramock.schemas.quantity import DECIMAL_EXPONENT, Quantity


def fn_quantity(s: list, x: Any) -> Quantity:
    if type(x) is not str:
        raise no_overload("quantity", x)
    try:
        return Quantity.parse(x)
    except ValueError as e:
        raise CELRuntimeError(str(e)) from None


def fn_is_quantity(s: list, x: Any) -> bool:
    if type(x) is not str:
        raise no_overload("isQuantity", x)
    try:
        Quantity.parse(x)
    except ValueError:
        return False
    return True


def _qargs(fn: str, *args: Any) -> None:
    for a in args:
        if type(a) is not Quantity:
            raise no_overload(fn, *args)


def fn_sign(s: list, q: Any) -> int:
    _qargs("sign", q)
    return q.sign()


def fn_as_approximate_float(s: list, q: Any) -> float:
    _qargs("asApproximateFloat", q)
    return q.as_approximate_float()


def fn_as_integer(s: list, q: Any) -> int:
    _qargs("asInteger", q)
    v = q.as_int64()
    if v is None:
        raise CELRuntimeError("cannot convert value to integer")
    return v


def fn_is_integer(s: list, q: Any) -> bool:
    _qargs("isInteger", q)
    return q.as_int64() is not None


def _qty_or_int(fn: str, q: Any, x: Any) -> Quantity:
    if type(q) is not Quantity:
        raise no_overload(fn, q, x)
    if type(x) is Quantity:
        return x
    if type(x) is int:
        return Quantity.from_int(x, DECIMAL_EXPONENT)
    raise no_overload(fn, q, x)


def fn_add(s: list, q: Any, x: Any) -> Quantity:
    try:
        return q.add(_qty_or_int("add", q, x))
    except ValueError as e:
        raise CELRuntimeError(str(e)) from None


def fn_sub(s: list, q: Any, x: Any) -> Quantity:
    try:
        return q.sub(_qty_or_int("sub", q, x))
    except ValueError as e:
        raise CELRuntimeError(str(e)) from None


def fn_mul(s: list, q: Any, m: Any) -> Quantity:
    if type(q) is not Quantity or type(m) is not int:
        raise no_overload("mul", q, m)
    try:
        return q.mul(m)
    except ValueError as e:
        raise CELRuntimeError(str(e)) from None


def fn_div(s: list, q: Any, d: Any, places: Any = 4) -> Quantity:
    if type(q) is not Quantity or type(d) is not int or type(places) is not int:
        raise no_overload("div", q, d, places)
    if d == 0:
        raise CELRuntimeError("division by zero error")
    if not 0 <= places <= 10:
        raise CELRuntimeError(f"the valid range for roundVal is 0 to 10 but {places} was passed")
    try:
        return q.div(d, places)
    except ValueError as e:
        raise CELRuntimeError(str(e)) from None


def fn_div_int(s: list, q: Any, d: Any) -> Quantity:
    if type(q) is not Quantity or type(d) is not int:
        raise no_overload("divInt", q, d)
    if d == 0:
        raise CELRuntimeError("division by zero error")
    try:
        return q.div_int(d)
    except ValueError as e:
        raise CELRuntimeError(str(e)) from None
