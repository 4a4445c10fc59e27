"""Field sets (Python sets of paths): their FieldsV1 encoding both ways, iteration order and the
recursive difference."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from collections.abc import Set as AbstractSet
from typing import Any

import orjson

from dramock.memo import remember

from .paths import FieldSet, Path, PathElement, sorted_elements, sorted_values
from .values import _freeze, _go_json, _thaw


def _pe_key(pe: PathElement) -> str:
    if pe[0] == "f":
        return "f:" + pe[1]
    if pe[0] == "k":
        return "k:" + _go_json({k: _thaw(v) for k, v in pe[1]})
    if pe[0] == "v":
        return "v:" + _go_json(_thaw(pe[1]))
    return f"i:{pe[1]}"


class _DecodeError(Exception):
    pass


def _parse_pe_key(key: str) -> PathElement | None:
    """A FieldsV1 key as a path element; None for prefixes a future version may know."""
    prefix, _, rest = key.partition(":")
    try:
        if prefix == "f":
            return ("f", rest)
        if prefix == "k":
            keys = json.loads(rest)
            if not isinstance(keys, dict):
                raise _DecodeError(f"expected a map in key path element {key!r}")
            return ("k", tuple(sorted((k, _freeze(v)) for k, v in keys.items())))
        if prefix == "v":
            return ("v", _freeze(json.loads(rest)))
        if prefix == "i":
            return ("i", int(rest))
    except (ValueError, TypeError) as e:
        raise _DecodeError(f"parsing key as path element: {e}") from None
    return None


class _Node:
    __slots__ = ("members", "children")

    def __init__(self) -> None:
        self.members: set = set()
        self.children: dict = {}


def _tree(paths: Iterable[Path]) -> _Node:
    root = _Node()
    for p in paths:
        node = root
        for pe in p[:-1]:
            child = node.children.get(pe)
            if child is None:  # (setdefault would build a node for every path only to drop it)
                child = node.children[pe] = _Node()
            node = child
        node.members.add(p[-1])
    return root


# Most writes store field sets seen before (every pod of a workload has the same ones): both directions of
# the FieldsV1 encoding are remembered, bounded, as JSON text so that every caller gets its own objects.
_CACHE_SIZE = 4096
# Bigger sets are encoded and decoded each time: such a set is rarely written twice, and copying it in and
# out of the cache takes calls that hold the interpreter lock throughout (150,000 labels: 60 ms).
_CACHED_PATHS = 2048
_CACHED_BYTES = 64 * 1024  # the same for FieldsV1 documents, by the size of their JSON
_ENCODED: dict[frozenset, bytes] = {}
_DECODED: dict[bytes, frozenset] = {}


def set_to_fields(paths: AbstractSet[Path]) -> dict:
    """A field set in upstream's FieldsV1 shape, keys in upstream's order (`.` first)."""
    if len(paths) > _CACHED_PATHS:
        return _set_to_fields(paths)  # built fresh for the caller; remembering it would only cost
    key = frozenset(paths)
    hit = _ENCODED.get(key)
    if hit is None:
        hit = orjson.dumps(_set_to_fields(key))
        remember(_ENCODED, key, hit, _CACHE_SIZE)
        remember(_DECODED, hit, key, _CACHE_SIZE)  # the object's next write reads this entry back
    return orjson.loads(hit)


# The recursive walks below are module functions, not closures: a closure that calls itself is a reference
# cycle, left for the cyclic garbage collector on every call (most of what the API server's collections found).

def _set_to_fields(paths: Iterable[Path]) -> dict:
    return _emit(_tree(paths), False)


def _emit(node: _Node, include_self: bool) -> dict:
    out: dict = {}
    if include_self and (node.members or node.children):
        out["."] = {}
    if not node.children and all(pe[0] == "f" for pe in node.members):  # field names only, all leaves
        for name in sorted_values([pe[1] for pe in node.members]):
            out["f:" + name] = {}
        return out
    for pe in sorted_elements(node.members | node.children.keys()):
        child = node.children.get(pe)
        out[_pe_key(pe)] = _emit(child, pe in node.members) if child else {}
    return out


def fields_to_set(fields: Any) -> FieldSet:
    """The field set a FieldsV1 document describes."""
    try:
        key = orjson.dumps(fields)
    except (TypeError, orjson.JSONEncodeError):
        return _fields_to_set(fields)
    if len(key) > _CACHED_BYTES:
        return _fields_to_set(fields)
    hit = _DECODED.get(key)
    if hit is None:
        hit = frozenset(_fields_to_set(fields))
        remember(_DECODED, key, hit, _CACHE_SIZE)
    return set(hit)


def _fields_to_set(fields: Any) -> FieldSet:
    out: FieldSet = set()
    _read(fields or {}, (), out)
    return out


def _read(d: Any, prefix: Path, out: FieldSet) -> bool:
    """Adds d's paths under prefix; True when d marks `prefix` itself as a member."""
    if not isinstance(d, dict):
        raise _DecodeError("expected an object in FieldsV1")
    has_child = False
    for key, val in d.items():
        if key == ".":
            continue
        pe = _parse_pe_key(key)
        if pe is None:
            continue
        has_child = True
        p = prefix + (pe,)
        if _read(val, p, out):
            out.add(p)
    return "." in d or not has_child


def _iterate(paths: Iterable[Path]) -> Iterator[Path]:
    """fieldpath.Set.Iterate order: a node's members, then its children depth-first, all sorted."""
    return _walk(_tree(paths), ())


def _walk(node: _Node, prefix: Path) -> Iterator[Path]:
    for pe in sorted_elements(node.members):
        yield prefix + (pe,)
    for pe in sorted_elements(node.children):
        yield from _walk(node.children[pe], prefix + (pe,))


def _recursive_difference(s: FieldSet, excluded: AbstractSet[Path]) -> FieldSet:
    """Drop every path equal to or under one of `excluded`."""
    if not excluded:
        return set(s)
    return {p for p in s if not any(p[:i] in excluded for i in range(1, len(p) + 1))}
