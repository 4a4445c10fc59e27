"""The Kubernetes CEL lists library: isSorted, sum, min and max (its indexOf/lastIndexOf list overloads are
implemented with the strings extension's functions of the same names)."""

from __future__ import annotations

from typing import Any

from dramock.cel.errors import CELRuntimeError
from dramock.cel.operators import checked_int64, checked_uint64, no_overload
from dramock.cel.semver import Semver
from dramock.cel.values import NUMERIC_TYPES, ORDERED_TYPES, UInt
from dramock.schemas.quantity import Quantity


def _sortable(fn: str, lst: Any) -> list:
    if type(lst) is not list:
        raise no_overload(fn, lst)
    if lst:
        t0 = type(lst[0])
        if any(type(x) is not t0 for x in lst) and not all(type(x) in NUMERIC_TYPES for x in lst):
            raise no_overload(fn, lst)
        if t0 not in ORDERED_TYPES and t0 is not Quantity and t0 is not Semver:
            raise no_overload(fn, lst)
    return lst


def fn_is_sorted(s: list, lst: Any) -> bool:
    _sortable("isSorted", lst)
    return all(not (lst[i + 1] < lst[i]) for i in range(len(lst) - 1))


def fn_sum(s: list, lst: Any) -> Any:
    if type(lst) is not list:
        raise no_overload("sum", lst)
    if not lst:
        return 0
    t0 = type(lst[0])
    if t0 not in NUMERIC_TYPES or any(type(x) is not t0 for x in lst):
        raise no_overload("sum", lst)
    total = sum(lst)
    return checked_int64(total) if t0 is int else checked_uint64(total) if t0 is UInt else float(total)


def fn_min(s: list, lst: Any) -> Any:
    _sortable("min", lst)
    if not lst:
        raise CELRuntimeError("min called on empty list")
    return min(lst)


def fn_max(s: list, lst: Any) -> Any:
    _sortable("max", lst)
    if not lst:
        raise CELRuntimeError("max called on empty list")
    return max(lst)
