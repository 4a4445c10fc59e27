"""The cel-go sets extension: sets.contains, sets.equivalent and sets.intersects over lists."""

from __future__ import annotations

from typing import Any

from dramock.cel.activation import charge
from dramock.cel.operators import no_overload
from dramock.cel.values import cel_equals


def _lists(fn: str, a: Any, b: Any) -> None:
    if type(a) is not list or type(b) is not list:
        raise no_overload(fn, a, b)


def fn_sets_contains(s: list, a: Any, b: Any) -> bool:
    _lists("sets.contains", a, b)
    charge(s, len(a) * len(b) // 10)
    return all(any(cel_equals(x, y) for y in a) for x in b)


def fn_sets_equivalent(s: list, a: Any, b: Any) -> bool:
    return fn_sets_contains(s, a, b) and fn_sets_contains(s, b, a)


def fn_sets_intersects(s: list, a: Any, b: Any) -> bool:
    _lists("sets.intersects", a, b)
    charge(s, len(a) * len(b) // 10)
    return any(cel_equals(x, y) for x in a for y in b)
