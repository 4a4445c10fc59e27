"""CEL operators at run time, shared by the compiled closures and the libraries: arithmetic with int64 and
uint64 overflow checks, ordering, membership, indexing and field selection (plain, has() and optional),
the ranges of comprehensions, and the errors for bad operands ("no such overload", "no such key")."""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

from dramock.cel.activation import charge
from dramock.cel.errors import CELRuntimeError
from dramock.cel.limits import INT64_MAX, INT64_MIN, UINT64_MAX
from dramock.cel.values import (
    GO_TYPE_NAMES,
    NUMERIC_TYPES,
    OPTIONAL_NONE,
    ORDERED_TYPES,
    CelOptional,
    UInt,
    cel_equals,
    type_name,
)


def no_overload(fn: str, *args: Any) -> CELRuntimeError:
    return CELRuntimeError(f"no such overload: {fn}({', '.join(type_name(a) for a in args)})")


def no_such_key(key: Any) -> CELRuntimeError:
    return CELRuntimeError(f"no such key: {key}")


def less(a: Any, b: Any) -> bool:
    ta, tb = type(a), type(b)
    if (ta is tb and ta in ORDERED_TYPES) or (ta in NUMERIC_TYPES and tb in NUMERIC_TYPES):
        return a < b
    raise no_overload("_<_", a, b)


def less_or_equal(a: Any, b: Any) -> bool:
    ta, tb = type(a), type(b)
    if (ta is tb and ta in ORDERED_TYPES) or (ta in NUMERIC_TYPES and tb in NUMERIC_TYPES):
        return a <= b
    raise no_overload("_<=_", a, b)


def greater(a: Any, b: Any) -> bool:
    ta, tb = type(a), type(b)
    if (ta is tb and ta in ORDERED_TYPES) or (ta in NUMERIC_TYPES and tb in NUMERIC_TYPES):
        return a > b
    raise no_overload("_>_", a, b)


def greater_or_equal(a: Any, b: Any) -> bool:
    ta, tb = type(a), type(b)
    if (ta is tb and ta in ORDERED_TYPES) or (ta in NUMERIC_TYPES and tb in NUMERIC_TYPES):
        return a >= b
    raise no_overload("_>=_", a, b)


def checked_int64(r: int) -> int:
    if INT64_MIN <= r <= INT64_MAX:
        return r
    raise CELRuntimeError("integer overflow")


def checked_uint64(r: int) -> UInt:
    if 0 <= r <= UINT64_MAX:
        return UInt(r)
    raise CELRuntimeError("unsigned integer overflow")


def add(s: list, a: Any, b: Any) -> Any:
    ta = type(a)
    if ta is type(b):
        if ta is int:
            return checked_int64(a + b)
        if ta is float:
            return a + b
        if ta is str or ta is list or ta is bytes:
            charge(s, (len(a) + len(b) + 9) // 10)
            return a + b
        if ta is UInt:
            return checked_uint64(a + b)
    raise no_overload("_+_", a, b)


def subtract(s: list, a: Any, b: Any) -> Any:
    ta = type(a)
    if ta is type(b):
        if ta is int:
            return checked_int64(a - b)
        if ta is float:
            return a - b
        if ta is UInt:
            return checked_uint64(a - b)
    raise no_overload("_-_", a, b)


def multiply(s: list, a: Any, b: Any) -> Any:
    ta = type(a)
    if ta is type(b):
        if ta is int:
            return checked_int64(a * b)
        if ta is float:
            return a * b
        if ta is UInt:
            return checked_uint64(a * b)
    raise no_overload("_*_", a, b)


def divide(s: list, a: Any, b: Any) -> Any:
    ta = type(a)
    if ta is type(b):
        if ta is int:
            if b == 0:
                raise CELRuntimeError("division by zero")
            q = abs(a) // abs(b)
            return checked_int64(q if (a < 0) == (b < 0) else -q)
        if ta is float:
            if b == 0.0:
                if a == 0.0 or math.isnan(a):
                    return math.nan
                return math.copysign(math.inf, a) * math.copysign(1.0, b)
            return a / b
        if ta is UInt:
            if b == 0:
                raise CELRuntimeError("division by zero")
            return UInt(a // b)
    raise no_overload("_/_", a, b)


def modulo(s: list, a: Any, b: Any) -> Any:
    ta = type(a)
    if ta is type(b):
        if ta is int:
            if b == 0:
                raise CELRuntimeError("modulus by zero")
            if a == INT64_MIN and b == -1:
                raise CELRuntimeError("integer overflow")
            r = abs(a) % abs(b)
            return r if a >= 0 else -r
        if ta is UInt:
            if b == 0:
                raise CELRuntimeError("modulus by zero")
            return UInt(a % b)
    raise no_overload("_%_", a, b)


def negate(s: list, a: Any) -> Any:
    ta = type(a)
    if ta is int:
        return checked_int64(-a)
    if ta is float:
        return -a
    raise no_overload("-_", a)


def is_in(s: list, a: Any, c: Any) -> bool:
    if type(c) is list:
        if type(a) is str:
            return a in c
        return any(cel_equals(a, x) for x in c)
    if isinstance(c, dict):
        try:
            return dict.__contains__(c, a)
        except TypeError:
            raise no_overload("@in", a, c) from None
    raise no_overload("@in", a, c)


def map_key(k: Any) -> Any:
    tk = type(k)
    if tk is str or tk is int or tk is UInt or tk is bool:
        return k
    if tk is float and k.is_integer():
        return int(k)
    raise CELRuntimeError(f"unsupported key type: {type_name(k)}")


def index_into(o: Any, i: Any) -> Any:
    if isinstance(o, dict):
        key = map_key(i)
        try:
            return o[key]
        except KeyError:
            raise no_such_key(i) from None
    if type(o) is list:
        ti = type(i)
        if ti is int or ti is UInt or ti is float and i.is_integer():
            idx = int(i)
        else:
            raise CELRuntimeError(f"unsupported index type '{type_name(i)}' in list")
        if 0 <= idx < len(o):
            return o[idx]
        raise CELRuntimeError(f"index '{idx}' out of range in list size '{len(o)}'")
    raise no_overload("_[_]", o, i)


def select_field(o: Any, field: str) -> Any:
    if isinstance(o, dict):
        try:
            return o[field]
        except KeyError:
            raise no_such_key(field) from None
    raise CELRuntimeError(f"type '{type_name(o)}' does not support field selection")


def has_field(o: Any, field: str) -> bool:
    if isinstance(o, dict):
        return dict.__contains__(o, field)
    raise CELRuntimeError(f"invalid type for field selection: '{type_name(o)}'")


def optional_select(o: Any, field: str) -> CelOptional:
    if type(o) is CelOptional:
        if not o.present:
            return o
        o = o.value
    if isinstance(o, dict):
        if dict.__contains__(o, field):
            return CelOptional(True, dict.__getitem__(o, field))
        return OPTIONAL_NONE
    raise CELRuntimeError(f"type '{type_name(o)}' does not support field selection")


def optional_index(o: Any, i: Any) -> CelOptional:
    if type(o) is CelOptional:
        if not o.present:
            return o
        o = o.value
    if isinstance(o, dict):
        key = map_key(i)
        if dict.__contains__(o, key):
            return CelOptional(True, dict.__getitem__(o, key))
        return OPTIONAL_NONE
    if type(o) is list:
        if type(i) in (int, UInt) and 0 <= i < len(o):
            return CelOptional(True, o[i])
        if type(i) in (int, UInt):
            return OPTIONAL_NONE
        raise CELRuntimeError(f"unsupported index type '{type_name(i)}' in list")
    raise no_overload("_[?_]", o, i)


def iterable(r: Any) -> Iterable:
    if type(r) is list or isinstance(r, dict):
        return r
    raise CELRuntimeError(f"got '{GO_TYPE_NAMES.get(type(r), type(r).__name__)}', expected iterable type")


def iterable_pairs(r: Any) -> Iterable:
    if type(r) is list:
        return enumerate(r)
    if isinstance(r, dict):
        return r.items()
    raise CELRuntimeError(f"got '{GO_TYPE_NAMES.get(type(r), type(r).__name__)}', expected iterable type")


# Library implementations take the activation first (for cost accounting) and the receiver next; this
# checks their string arguments.


def require_strings(fn: str, *args: Any) -> None:
    for a in args:
        if type(a) is not str:
            raise no_overload(fn, *args)
