"""Field paths: tuples of path elements, their order (PathElement.Compare) and their string form.

A path element is ("f", name) for a struct field or map key, ("k", ((key, v), ...)) for a list-map
item by its name-sorted keys, ("v", v) for a set item by value, ("i", n) for an index; values are frozen.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable

from .values import _cmp_value, _sign, _to_string

PathElement = tuple
Path = tuple
FieldSet = set


def _f(name: str) -> PathElement:
    return ("f", name)


def _path(dotted: str) -> Path:
    return tuple(_f(p) for p in dotted.split("."))


_PE_RANK = {"f": 0, "k": 1, "v": 2, "i": 3}


def _cmp_pe(a: PathElement, b: PathElement) -> int:
    """PathElement.Compare: field names < keys < values < indexes, then by content."""
    if a[0] != b[0]:
        return _sign(_PE_RANK[a[0]], _PE_RANK[b[0]])
    if a[0] == "k":
        for (an, av), (bn, bv) in zip(a[1], b[1], strict=False):
            c = _sign(an, bn) or _cmp_value(av, bv)
            if c:
                return c
        return _sign(len(a[1]), len(b[1]))
    if a[0] == "v":
        return _cmp_value(a[1], b[1])
    return _sign(a[1], b[1])


_pe_sort_key = functools.cmp_to_key(_cmp_pe)


def sorted_elements(elements: Iterable[PathElement]) -> list[PathElement]:
    """The elements in PathElement.Compare order. Field names alone, or indexes alone, are in the order of their
    names or numbers, which list.sort compares in C without a Python call (150,000 labels took 450 ms through
    _cmp_pe, holding the interpreter lock throughout)."""
    elements = list(elements)
    if len(elements) < 2:
        return elements
    kinds = {pe[0] for pe in elements}
    if len(kinds) == 1 and kinds <= {"f", "i"}:
        kind = next(iter(kinds))
        return [(kind, v) for v in sorted_values([pe[1] for pe in elements])]
    return sorted(elements, key=_pe_sort_key)


_SORT_STEP = 32768


def sorted_values(values: list) -> list:
    """sorted(values) (names, or numbers), in calls that each sort or merge part of them: one sort of 150,000
    names holds the interpreter lock 60-80 ms, which the event loop thread would wait for while a big request is
    prepared in the worker thread. Merging two sorted runs is what sorted() does to their concatenation."""
    if len(values) <= _SORT_STEP:
        return sorted(values)
    runs = [sorted(values[i:i + _SORT_STEP]) for i in range(0, len(values), _SORT_STEP)]
    while len(runs) > 1:
        runs = [sorted(runs[i] + runs[i + 1]) if i + 1 < len(runs) else runs[i] for i in range(0, len(runs), 2)]
    return runs[0]


def _pe_str(pe: PathElement) -> str:
    if pe[0] == "f":
        return "." + pe[1]
    if pe[0] == "k":
        return "[" + ",".join(f"{k}={_to_string(v)}" for k, v in pe[1]) + "]"
    if pe[0] == "v":
        return "[=" + _to_string(pe[1]) + "]"
    return f"[{pe[1]}]"


def path_string(path: Path) -> str:
    """fieldpath.Path.String(): `.spec.containers[name="app"].image`."""
    return "".join(_pe_str(pe) for pe in path)
