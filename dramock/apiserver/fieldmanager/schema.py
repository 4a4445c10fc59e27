"""The typed view of the 1.37 definitions: how SMD sees a schema node (struct, map, list with its
relationship and keys, scalar, untyped/deduced) and how list items are named by path element."""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Any

from dramock.schemas import defs

from .paths import PathElement
from .values import _freeze

MISSING: Any = object()  # "absent", as opposed to an explicit null (None)
_BAD: Any = object()  # a value whose JSON type does not fit the schema

UNTYPED: defs.Schema = {}


# Defaults SMD uses for list-map keys an item omits (from the +default markers of the Go types).
_KEY_DEFAULTS: dict[tuple[str | None, str], Any] = {
    ("io.k8s.api.core.v1.ContainerPort", "protocol"): "TCP",
    ("io.k8s.api.core.v1.ServicePort", "protocol"): "TCP",
}


@dataclass(frozen=True)
class _Type:
    kind: str  # "struct" | "map" | "list" | "scalar" | "untyped"
    atomic: bool = False
    fields: dict[str, defs.Schema] = field(default_factory=dict)  # a struct's properties
    elem: defs.Schema = field(default_factory=dict)  # a list's or map's values ({}: untyped)
    rel: str = "atomic"  # list relationship: "atomic" | "set" | "map"
    keys: tuple[str, ...] = ()
    elem_name: str | None = None


_TYPES: dict[int, tuple[defs.Schema, _Type]] = {}


def _type_of(prop: defs.Schema) -> _Type:
    """How SMD sees a (property) schema, cached per schema dict (the definitions are loaded once)."""
    hit = _TYPES.get(id(prop))
    if hit is None or hit[0] is not prop:  # holding `prop` keeps its id from being reused
        hit = _TYPES[id(prop)] = (prop, _describe(prop))
    return hit[1]


def _describe(prop: defs.Schema) -> _Type:
    r = defs.resolve(prop)
    types = defs.types_of(prop) | defs.types_of(r)
    if "array" in types or "items" in prop or "items" in r:
        items = prop.get("items") or r.get("items") or UNTYPED
        rel = prop.get("x-kubernetes-list-type") or r.get("x-kubernetes-list-type")
        keys = list(prop.get("x-kubernetes-list-map-keys") or r.get("x-kubernetes-list-map-keys") or [])
        if rel is None:
            if keys:
                rel = "map"
            elif "merge" in defs.patch_strategies(prop):
                # Unannotated lists with patch strategy merge are associative, as kube-openapi converts.
                merge_key = defs.patch_merge_key(prop)
                rel, keys = ("map", [merge_key]) if merge_key else ("set", [])
            else:
                rel = "atomic"
        return _Type("list", rel=rel, keys=tuple(keys), elem=items, elem_name=defs.ref_name(items))
    atomic = (prop.get("x-kubernetes-map-type") or r.get("x-kubernetes-map-type")) == "atomic"
    if "properties" in r:
        return _Type("struct", atomic, fields=r["properties"])
    if isinstance(r.get("additionalProperties"), dict):
        return _Type("map", atomic, elem=r["additionalProperties"])
    if "object" in types:
        return _Type("map", atomic, elem=UNTYPED)
    if not types and not any(k in r for k in ("oneOf", "anyOf", "allOf", "enum", "format")):
        return _Type("untyped")
    return _Type("scalar")


_DEDUCED_MAP = _Type("map", elem=UNTYPED)
_DEDUCED_LIST = _Type("list", rel="atomic", elem=UNTYPED)
_SCALAR = _Type("scalar")


def _deduce(prop: defs.Schema, value: Any) -> _Type:
    """The type for `value`; schema-less values are deduced from the value itself."""
    t = _type_of(prop)
    if t.kind != "untyped":
        return t
    if isinstance(value, dict):
        return _DEDUCED_MAP
    if isinstance(value, list):
        return _DEDUCED_LIST
    return _SCALAR


def _child(t: _Type, key: str) -> defs.Schema:
    if t.kind == "struct":
        return t.fields.get(key, UNTYPED)
    return t.elem or UNTYPED


@functools.cache
def _root(definition: str) -> defs.Schema:
    return {"$ref": defs.REF_PREFIX + definition}


def _as_map(v: Any) -> Any:
    if isinstance(v, dict):
        return v
    return {} if v is MISSING or v is None else _BAD


def _as_list(v: Any) -> Any:
    if isinstance(v, list):
        return v
    return [] if v is MISSING or v is None else _BAD


class _ItemError(Exception):
    pass


def _item_pe(t: _Type, item: Any) -> PathElement:
    """The path element naming a list item (keys for list-maps, the value for sets)."""
    if t.rel == "map":
        if item is None:
            raise _ItemError("associative list with keys may not have a null element")
        if not isinstance(item, dict):
            raise _ItemError("associative list with keys may not have non-map elements")
        keys = []
        for k in t.keys:
            if k in item:
                keys.append((k, _freeze(item[k])))
            elif (t.elem_name, k) in _KEY_DEFAULTS:
                keys.append((k, _freeze(_KEY_DEFAULTS[(t.elem_name, k)])))
            # An optional key without a default is simply left out of the item's key.
        return ("k", tuple(sorted(keys)))
    if isinstance(item, dict):
        raise _ItemError("associative list without keys has an element that's a map type")
    if isinstance(item, list):
        raise _ItemError("not supported: associative list with lists as elements")
    if item is None:
        raise _ItemError("associative list without keys has an element that's an explicit null")
    return ("v", _freeze(item))


def _index_items(t: _Type, items: list) -> dict | None:
    """Items by path element (first occurrence wins); None when an item cannot be named."""
    out: dict = {}
    try:
        for item in items:
            out.setdefault(_item_pe(t, item), item)
    except _ItemError:
        return None
    return out


def _granular_list(t: _Type) -> bool:
    return t.kind == "list" and t.rel != "atomic"


def _granular_map(t: _Type) -> bool:
    return t.kind in ("struct", "map") and not t.atomic


def _item_pe_or_none(t: _Type, item: Any) -> PathElement | None:
    try:
        return _item_pe(t, item)
    except _ItemError:
        return None
