"""isGreaterThan, isLessThan and compareTo: the comparison methods of the Kubernetes quantity and semver
libraries (one implementation per name, choosing by the receiver's type)."""

from __future__ import annotations

from typing import Any

from dramock.cel.operators import no_overload
from dramock.cel.semver import Semver
from dramock.schemas.quantity import Quantity


def _compare(fn: str, a: Any, b: Any) -> int:
    ta = type(a)
    if ta is type(b):
        if ta is Quantity:
            return a.cmp(b)
        if ta is Semver:
            return a.compare(b)
    raise no_overload(fn, a, b)


def fn_is_greater_than(s: list, a: Any, b: Any) -> bool:
    return _compare("isGreaterThan", a, b) == 1


def fn_is_less_than(s: list, a: Any, b: Any) -> bool:
    return _compare("isLessThan", a, b) == -1


def fn_compare_to(s: list, a: Any, b: Any) -> int:
    return _compare("compareTo", a, b)
