"""Field paths: tuples of path elements, their order (PathElement.Compare) and their string form.

A path element is ("f", name) for a struct field or map key, ("k", ((key, v), ...)) for a list-map
item by its name-sorted keys, ("v", v) for a set item by value, ("i", n) for an index; values are frozen.
"""

from __future__ import annotations

import functools

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
