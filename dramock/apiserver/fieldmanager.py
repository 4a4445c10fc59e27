"""metadata.managedFields kept the way kube-apiserver keeps them, and server-side apply.

Behavioural reference: sigs.k8s.io/structured-merge-diff (typed compare/merge/remove, field sets and
their FieldsV1 encoding, merge.Updater) wrapped the way k8s.io/apimachinery's managedfields package
wraps it (stripped meta fields, "current-operation" updates, skip-non-applied, before-first-apply,
capped update managers, client-side-apply upgrade for the "kubectl" manager, conflict errors).

Field sets are Python sets of paths; a path is a tuple of path elements:
  ("f", name)            a struct field or map key               -> "f:<name>"
  ("k", ((key, v), ...)) a list-map item by its keys, name-sorted -> 'k:{"name":"x"}'
  ("v", v)               a set item by value                      -> 'v:"x"'
Values inside path elements are "frozen" (hashable, type-tagged) JSON values.

The schema comes from the 1.37 definitions: lists are atomic unless x-kubernetes-list-type says
set/map (or, unannotated, patch strategy merge does), structs and maps are granular unless
x-kubernetes-map-type is atomic, and schema-less values are "deduced" (maps granular, lists atomic).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any

import yaml

from dramock.errors import APIError, bad_request
from dramock.jsonvalue import clone
from dramock.schemas import defs

Obj = dict[str, Any]
PathElement = tuple
Path = tuple
FieldSet = set

MISSING: Any = object()  # "absent", as opposed to an explicit null (None)
_BAD: Any = object()  # a value whose JSON type does not fit the schema

LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"
MAX_UPDATE_MANAGERS = 10  # managedfields DefaultMaxUpdateManagers
OLD_UPDATES_MANAGER = "ancient-changes"
BEFORE_FIRST_APPLY = "before-first-apply"

UNTYPED: defs.Schema = {}


def _f(name: str) -> PathElement:
    return ("f", name)


def _path(dotted: str) -> Path:
    return tuple(_f(p) for p in dotted.split("."))


# Paths never attributed to a manager. The first twelve are upstream's stripMetaManager set; the
# deletion fields are set outside field management upstream, so they never end up owned either.
STRIPPED: frozenset[Path] = frozenset(
    [(_f("apiVersion"),), (_f("kind"),), (_f("metadata"),)]
    + [_path("metadata." + f) for f in (
        "name", "namespace", "creationTimestamp", "selfLink", "uid", "clusterName", "generation",
        "managedFields", "resourceVersion", "deletionTimestamp", "deletionGracePeriodSeconds")]
)

# Defaults SMD uses for list-map keys an item omits (from the +default markers of the Go types).
_KEY_DEFAULTS: dict[tuple[str, str], Any] = {
    ("io.k8s.api.core.v1.ContainerPort", "protocol"): "TCP",
    ("io.k8s.api.core.v1.ServicePort", "protocol"): "TCP",
}

# What `runtime.Scheme.New(kind)` serialises to: the "old" object of a create. It matters because
# only fields absent from it count as added containers (the `.` entries of FieldsV1). Non-pointer
# structs are present, non-omitempty scalars carry their zero value, non-omitempty slices are null.
_NODE_INFO = ("machineID", "systemUUID", "bootID", "kernelVersion", "osImage", "containerRuntimeVersion",
              "kubeletVersion", "kubeProxyVersion", "operatingSystem", "architecture")
_ZERO_OBJECTS: dict[str, Obj] = {
    "io.k8s.api.core.v1.Pod": {"spec": {"containers": None}, "status": {}},
    "io.k8s.api.core.v1.Node": {"spec": {}, "status": {
        "daemonEndpoints": {"kubeletEndpoint": {"Port": 0}}, "nodeInfo": {k: "" for k in _NODE_INFO}}},
    "io.k8s.api.core.v1.Namespace": {"spec": {}, "status": {}},
    "io.k8s.api.core.v1.ResourceQuota": {"spec": {}, "status": {}},
    "io.k8s.api.core.v1.Event": {"involvedObject": {}, "source": {}, "firstTimestamp": None,
                                 "lastTimestamp": None, "eventTime": None, "reportingComponent": "",
                                 "reportingInstance": ""},
    "io.k8s.api.events.v1.Event": {"eventTime": None, "regarding": {}, "deprecatedSource": {},
                                   "deprecatedFirstTimestamp": None, "deprecatedLastTimestamp": None},
    "io.k8s.api.core.v1.ConfigMap": {},
    "io.k8s.api.core.v1.Secret": {},
    "io.k8s.api.core.v1.ServiceAccount": {},
    "io.k8s.api.coordination.v1.Lease": {"spec": {}},
    "io.k8s.api.resource.v1.DeviceClass": {"spec": {}},
    "io.k8s.api.resource.v1.ResourceSlice": {"spec": {
        "driver": "", "pool": {"name": "", "generation": 0, "resourceSliceCount": 0}}},
    "io.k8s.api.resource.v1.ResourceClaim": {"spec": {"devices": {"requests": None}}, "status": {}},
    "io.k8s.api.resource.v1.ResourceClaimTemplate": {"spec": {"metadata": {},
                                                              "spec": {"devices": {"requests": None}}}},
    "io.k8s.api.resource.v1.DeviceTaintRule": {"spec": {"taint": {"key": "", "effect": ""}}, "status": {}},
}


# ---------------------------------------------------------------------------------------------------
# Values: freezing, equality, ordering, rendering
# ---------------------------------------------------------------------------------------------------


def _freeze(v: Any) -> tuple:
    """A hashable, type-tagged copy of a JSON value (so True, 1 and "1" never collide)."""
    if v is None:
        return ("z",)
    if isinstance(v, bool):
        return ("b", v)
    if isinstance(v, (int, float)):
        return ("n", v)
    if isinstance(v, str):
        return ("s", v)
    if isinstance(v, list):
        return ("l", tuple(_freeze(x) for x in v))
    if isinstance(v, dict):
        return ("m", tuple(sorted((k, _freeze(x)) for k, x in v.items())))
    raise TypeError(f"not a JSON value: {v!r}")


def _thaw(f: tuple) -> Any:
    tag = f[0]
    if tag == "z":
        return None
    if tag == "l":
        return [_thaw(x) for x in f[1]]
    if tag == "m":
        return {k: _thaw(x) for k, x in f[1]}
    return f[1]


def _equal(a: Any, b: Any) -> bool:
    """Deep JSON equality where booleans never equal numbers (value.Equals)."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_equal(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_equal(x, y) for x, y in zip(a, b, strict=True))
    return type(a) is type(b) and a == b


_VALUE_RANK = {"n": 0, "s": 1, "b": 2, "l": 3, "m": 4, "z": 5}


def _sign(a: Any, b: Any) -> int:
    return (a > b) - (a < b)


def _cmp_value(a: tuple, b: tuple) -> int:
    """value.Compare: numbers < strings < booleans < lists < maps < null, then by content."""
    if a[0] != b[0]:
        return _sign(_VALUE_RANK[a[0]], _VALUE_RANK[b[0]])
    if a[0] == "z":
        return 0
    if a[0] in ("l", "m"):
        for x, y in zip(a[1], b[1], strict=False):
            c = _sign(x[0], y[0]) if a[0] == "m" else 0
            c = c or (_cmp_value(x[1], y[1]) if a[0] == "m" else _cmp_value(x, y))
            if c:
                return c
        return _sign(len(a[1]), len(b[1]))
    return _sign(a[1], b[1])


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


def _go_json(v: Any, sort_keys: bool = False) -> str:
    """encoding/json output: compact, HTML-escaped, integral floats without a fraction."""
    def norm(x: Any) -> Any:
        if isinstance(x, float) and x.is_integer() and abs(x) < 1e21:
            return int(x)
        if isinstance(x, dict):
            return {k: norm(y) for k, y in x.items()}
        if isinstance(x, list):
            return [norm(y) for y in x]
        return x

    s = json.dumps(norm(v), separators=(",", ":"), ensure_ascii=False, sort_keys=sort_keys)
    for ch, esc in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026"),
                    ("\u2028", "\\u2028"), ("\u2029", "\\u2029")):
        s = s.replace(ch, esc)
    return s


def _to_string(f: tuple) -> str:
    """value.ToString, used in path strings: strings quoted, lists and maps spelled out."""
    tag = f[0]
    if tag == "z":
        return "null"
    if tag == "s":
        return json.dumps(f[1], ensure_ascii=False)
    if tag == "b":
        return "true" if f[1] else "false"
    if tag == "n":
        v = f[1]
        return repr(int(v)) if isinstance(v, float) and v.is_integer() else repr(v)
    if tag == "l":
        return "[" + ", ".join(_to_string(x) for x in f[1]) + "]"
    return "{" + ", ".join(f"{k}={_to_string(x)}" for k, x in f[1]) + "}"


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


# ---------------------------------------------------------------------------------------------------
# FieldsV1 encoding
# ---------------------------------------------------------------------------------------------------


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


@dataclass
class _Node:
    members: set = field(default_factory=set)
    children: dict = field(default_factory=dict)


def _tree(paths: Iterable[Path]) -> _Node:
    root = _Node()
    for p in paths:
        node = root
        for pe in p[:-1]:
            node = node.children.setdefault(pe, _Node())
        node.members.add(p[-1])
    return root


def set_to_fields(paths: Iterable[Path]) -> dict:
    """A field set in upstream's FieldsV1 shape, keys in upstream's order (`.` first)."""
    def emit(node: _Node, include_self: bool) -> dict:
        out: dict = {}
        if include_self and (node.members or node.children):
            out["."] = {}
        for pe in sorted(node.members | node.children.keys(), key=_pe_sort_key):
            child = node.children.get(pe)
            out[_pe_key(pe)] = emit(child, pe in node.members) if child else {}
        return out

    return emit(_tree(paths), False)


def fields_to_set(fields: Any) -> FieldSet:
    """The field set a FieldsV1 document describes."""
    def read(d: Any, prefix: Path, out: FieldSet) -> bool:
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
            if read(val, p, out):
                out.add(p)
        return "." in d or not has_child

    out: FieldSet = set()
    read(fields or {}, (), out)
    return out


def _iterate(paths: Iterable[Path]) -> Iterator[Path]:
    """fieldpath.Set.Iterate order: a node's members, then its children depth-first, all sorted."""
    def walk(node: _Node, prefix: Path) -> Iterator[Path]:
        for pe in sorted(node.members, key=_pe_sort_key):
            yield prefix + (pe,)
        for pe in sorted(node.children, key=_pe_sort_key):
            yield from walk(node.children[pe], prefix + (pe,))

    return walk(_tree(paths), ())


def _recursive_difference(s: FieldSet, excluded: FieldSet) -> FieldSet:
    """Drop every path equal to or under one of `excluded`."""
    if not excluded:
        return set(s)
    return {p for p in s if not any(p[:i] in excluded for i in range(1, len(p) + 1))}


# ---------------------------------------------------------------------------------------------------
# Schema view
# ---------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Type:
    kind: str  # "struct" | "map" | "list" | "scalar" | "untyped"
    atomic: bool = False
    fields: dict | None = None
    elem: defs.Schema | None = None
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


# ---------------------------------------------------------------------------------------------------
# Typed operations: validate, field set, compare, merge, remove
# ---------------------------------------------------------------------------------------------------


def _validate(prop: defs.Schema, v: Any, path: Path, errors: list[str]) -> None:
    """The structural errors SMD reports when an apply configuration becomes a typed value.

    Like SMD's validating walker it looks inside atomic values too (their items by index).
    """
    t = _deduce(prop, v)
    if t.kind in ("struct", "map") and isinstance(v, dict):
        for k, x in v.items():
            if t.kind == "struct" and k not in t.fields:
                errors.append(f"{path_string(path + (_f(k),))}: field not declared in schema")
                continue
            _validate(_child(t, k), x, path + (_f(k),), errors)
    elif t.kind == "list" and isinstance(v, list):
        seen: set = set()
        for i, item in enumerate(v):
            pe: PathElement = ("i", i)
            if t.rel != "atomic":
                try:
                    pe = _item_pe(t, item)
                except _ItemError as e:
                    errors.append(f"{path_string(path)}: element {i}: {e}")
                    continue
                if pe in seen:
                    errors.append(f"{path_string(path)}: duplicate entries for key {_pe_str(pe)}")
                    continue
                seen.add(pe)
            _validate(t.elem or UNTYPED, item, path + (pe,), errors)


def _to_set(prop: defs.Schema, v: Any, path: Path, out: FieldSet) -> None:
    """typed.ToFieldSet: leaves, list items and map entries; declared struct fields only via children."""
    t = _deduce(prop, v)
    if t.kind == "scalar" or t.atomic or (t.kind == "list" and t.rel == "atomic"):
        if path:
            out.add(path)
        return
    if t.kind == "list":
        items = _as_list(v)
        index = _index_items(t, items) if items is not _BAD else None
        if index is None:
            if path:
                out.add(path)  # not a usable list: own it whole
            return
        for pe, item in index.items():
            _to_set(t.elem, item, path + (pe,), out)
            out.add(path + (pe,))
        return
    m = _as_map(v)
    if m is _BAD:
        if path:
            out.add(path)
        return
    for k, x in m.items():
        p = path + (_f(k),)
        _to_set(_child(t, k), x, p, out)
        if not (t.kind == "struct" and k in t.fields):
            out.add(p)


@dataclass
class _Comparison:
    added: FieldSet = field(default_factory=set)
    modified: FieldSet = field(default_factory=set)
    removed: FieldSet = field(default_factory=set)

    def excluding(self, ignored: FieldSet) -> _Comparison:
        return _Comparison(_recursive_difference(self.added, ignored),
                           _recursive_difference(self.modified, ignored),
                           _recursive_difference(self.removed, ignored))


def _compare(prop: defs.Schema, lhs: Any, rhs: Any, path: Path, c: _Comparison) -> None:
    """typed.Compare: leaves report added/modified/removed; containers report only added/removed."""
    if lhs is not MISSING and rhs is not MISSING and (lhs is rhs or _equal(lhs, rhs)):
        return  # an unchanged subtree reports nothing (most of an object on an update)
    t = _deduce(prop, rhs if rhs is not MISSING else lhs)
    leaf = True
    if _granular_map(t):
        lm, rm = _as_map(lhs), _as_map(rhs)
        if lm is not _BAD and rm is not _BAD and (lm or rm):
            leaf = False
            for k in list(lm) + [k for k in rm if k not in lm]:
                _compare(_child(t, k), lm.get(k, MISSING), rm.get(k, MISSING), path + (_f(k),), c)
    elif _granular_list(t):
        ll, rl = _as_list(lhs), _as_list(rhs)
        if ll is not _BAD and rl is not _BAD and (ll or rl):
            li, ri = _index_items(t, ll), _index_items(t, rl)
            if li is not None and ri is not None:
                leaf = False
                for pe in list(li) + [pe for pe in ri if pe not in li]:
                    _compare(t.elem, li.get(pe, MISSING), ri.get(pe, MISSING), path + (pe,), c)
    if leaf:
        if lhs is MISSING:
            c.added.add(path)
        elif rhs is MISSING:
            c.removed.add(path)
        elif not _equal(lhs, rhs):
            c.modified.add(path)
    elif path:
        if lhs is MISSING:
            c.added.add(path)
        elif rhs is MISSING:
            c.removed.add(path)


def _merge(prop: defs.Schema, lhs: Any, rhs: Any) -> Any:
    """typed.Merge with rhs winning: granular maps and lists merge, everything else is replaced."""
    if rhs is MISSING:
        return lhs
    if lhs is MISSING:
        return rhs
    t = _deduce(prop, rhs)
    if _granular_map(t):
        lm, rm = _as_map(lhs), _as_map(rhs)
        if lm is _BAD or rm is _BAD or not (lm or rm):
            return rhs
        out = {k: _merge(_child(t, k), x, rm.get(k, MISSING)) for k, x in lm.items()}
        out.update((k, x) for k, x in rm.items() if k not in lm)
        return out
    if _granular_list(t):
        ll, rl = _as_list(lhs), _as_list(rhs)
        if ll is _BAD or rl is _BAD or not (ll or rl):
            return rhs
        return _merge_list(t, ll, rl)
    return rhs


def _merge_list(t: _Type, lhs: list, rhs: list) -> Any:
    """SMD's list merge order: live-only items keep their place, shared items follow the config's order."""
    lidx, ridx = _index_items(t, lhs), _index_items(t, rhs)
    if lidx is None or ridx is None:
        return rhs
    lpes, rpes = [_item_pe(t, x) for x in lhs], [_item_pe(t, x) for x in rhs]
    shared = [pe for pe in rpes if pe in lidx]
    next_shared = shared.pop(0) if shared else None
    merged_rhs: set = set()
    out = []
    li = ri = 0
    while li < len(lpes) or ri < len(rpes):
        if li < len(lpes) and ri < len(rpes):
            pe = lpes[li]
            if pe == rpes[ri]:
                merged_rhs.add(pe)
                out.append(_merge(t.elem, lidx[pe], ridx[pe]))
                li += 1
                ri += 1
                next_shared = shared.pop(0) if shared else None
                continue
            if pe in ridx and next_shared is not None and next_shared != pe:
                li += 1  # a shared item, but not the one due now: it comes with the config's order
                continue
        if li < len(lpes):
            pe = lpes[li]
            if pe not in ridx:
                out.append(lhs[li])
                li += 1
                continue
            if pe in merged_rhs:
                li += 1  # already merged; upstream then goes straight on to the next config item
        if ri < len(rpes):
            pe = rpes[ri]
            merged_rhs.add(pe)
            out.append(_merge(t.elem, lidx.get(pe, MISSING), ridx[pe]))
            ri += 1
            if next_shared is not None and next_shared == pe:
                next_shared = shared.pop(0) if shared else None
    return out


def _remove(prop: defs.Schema, v: Any, members: FieldSet, prefixes: FieldSet, path: Path) -> Any:
    """typed.RemoveItems. A container the removal descends into that ends up empty becomes null."""
    t = _deduce(prop, v)
    if _granular_list(t) and isinstance(v, list):
        if not v:
            return None
        index = [(_item_pe_or_none(t, x), x) for x in v]
        if any(pe is None for pe, _ in index):
            return v  # items that cannot be named cannot be removed by name
        out = []
        for pe, item in index:
            p = path + (pe,)
            if p in members:
                continue
            out.append(_remove(t.elem, item, members, prefixes, p) if p in prefixes else item)
        return out or None
    if _granular_map(t) and isinstance(v, dict):
        out_map = {}
        for k, x in v.items():
            p = path + (_f(k),)
            if p in members:
                continue
            out_map[k] = _remove(_child(t, k), x, members, prefixes, p) if p in prefixes else x
        return out_map or None
    if t.kind in ("list", "struct", "map") and isinstance(v, (list, dict)):
        return None  # descending into an atomic value removes it
    return v


def _item_pe_or_none(t: _Type, item: Any) -> PathElement | None:
    try:
        return _item_pe(t, item)
    except _ItemError:
        return None


def _remove_items(root: defs.Schema, obj: Obj, paths: FieldSet) -> Obj:
    if not paths:
        return obj
    prefixes = {p[:i] for p in paths for i in range(1, len(p))}
    out = _remove(root, obj, paths, prefixes, ())
    return out if isinstance(out, dict) else {}


def _ensure_named_fields(root: defs.Schema, paths: FieldSet) -> FieldSet:
    """Set.EnsureNamedFieldsAreMembers: struct fields that hold owned children count as owned too."""
    out = set(paths)
    for p in paths:
        prop = root
        for i, pe in enumerate(p[:-1]):
            t = _type_of(prop)
            if pe[0] == "f" and t.kind == "struct" and pe[1] in t.fields:
                out.add(p[:i + 1])
                prop = t.fields[pe[1]]
            elif t.kind in ("map", "list"):
                prop = t.elem or UNTYPED
            else:
                prop = UNTYPED
    return out


def _field_set(root: defs.Schema, obj: Any) -> FieldSet:
    """The field set of an object: what an applier of exactly this configuration owns."""
    out: FieldSet = set()
    _to_set(root, obj, (), out)
    return out


def _drop_nulls(v: Any) -> Any:
    """Null members vanish when upstream turns the typed result back into the Go object."""
    if isinstance(v, dict):
        for k in [k for k, x in v.items() if x is None]:
            del v[k]
        for x in v.values():
            _drop_nulls(x)
    elif isinstance(v, list):
        for x in v:
            _drop_nulls(x)
    return v


# ---------------------------------------------------------------------------------------------------
# managedFields entries
# ---------------------------------------------------------------------------------------------------


@dataclass
class _Entry:
    manager: str
    operation: str  # "Apply" | "Update"
    api_version: str
    subresource: str
    fields: FieldSet
    time: str | None = None

    @property
    def ident(self) -> str:
        """BuildManagerIdentifier: the entry minus time and fields (and apiVersion for appliers)."""
        d = {"manager": self.manager, "operation": self.operation,
             "apiVersion": self.api_version if self.operation == "Update" else "",
             "subresource": self.subresource}
        return _go_json({k: v for k, v in d.items() if v})

    def describe(self) -> str:
        """printManager, as conflict messages name a manager."""
        s = json.dumps(self.manager, ensure_ascii=False)
        if self.subresource:
            s += f" with subresource {json.dumps(self.subresource, ensure_ascii=False)}"
        if self.operation == "Update":
            s += f" using {self.api_version}"
        return s


Managed = dict[str, _Entry]


def _decode_managed(entries: Any) -> Managed:
    if entries is None:
        return {}
    if not isinstance(entries, list):
        raise _DecodeError("managedFields must be a list")
    out: Managed = {}
    for i, e in enumerate(entries):
        if not isinstance(e, dict):
            raise _DecodeError(f"invalid managed fields entry {i}")
        op = e.get("operation") or ""
        if op not in ("Apply", "Update"):
            raise _DecodeError("operation must be `Apply` or `Update`")
        if not e.get("apiVersion"):
            raise _DecodeError("apiVersion must not be empty")
        fields_type = e.get("fieldsType") or ""
        if not fields_type:
            raise _DecodeError(f"missing fieldsType in managed fields entry {i}")
        if fields_type != "FieldsV1":
            raise _DecodeError(f"invalid fieldsType {json.dumps(fields_type)} in managed fields entry {i}")
        entry = _Entry(e.get("manager") or "", op, e["apiVersion"], e.get("subresource") or "",
                       fields_to_set(e.get("fieldsV1")), e.get("time"))
        out[entry.ident] = entry
    return out


def _decode_or_empty(entries: Any) -> Managed:
    try:
        return _decode_managed(entries)
    except _DecodeError:
        return {}


def _unix(t: str | None) -> int:
    if not t:
        return 0
    try:
        dt = datetime.fromisoformat(t)
    except ValueError:
        return 0
    return int((dt if dt.tzinfo else dt.replace(tzinfo=UTC)).timestamp())


def _encode_managed(managed: Managed) -> list[Obj]:
    entries = []
    for e in managed.values():
        d: Obj = {}
        if e.manager:
            d["manager"] = e.manager
        d["operation"] = e.operation
        d["apiVersion"] = e.api_version
        if e.time:
            d["time"] = e.time
        d["fieldsType"] = "FieldsV1"
        d["fieldsV1"] = set_to_fields(e.fields)
        if e.subresource:
            d["subresource"] = e.subresource
        entries.append(d)
    # sortEncodedManagedFields: Apply before Update, then oldest first, then by name.
    entries.sort(key=lambda d: (d["operation"], _unix(d.get("time")), d.get("manager", ""), d["apiVersion"],
                                d.get("subresource", "")))
    return entries


def _store_managed(obj: Obj, managed: Managed) -> None:
    meta = obj.setdefault("metadata", {})
    meta.pop("managedFields", None)
    if managed:
        meta["managedFields"] = _encode_managed(managed)


def _without_managed_fields(obj: Obj, copy: bool = True) -> Obj:
    """`obj` without metadata.managedFields: a deep copy, or (copy=False, for read-only use) a view that shares
    everything but the top level and metadata."""
    out = clone(obj) if copy else dict(obj)
    if isinstance(out.get("metadata"), dict):
        if not copy:
            out["metadata"] = dict(out["metadata"])
        out["metadata"].pop("managedFields", None)
    return out


def _is_reset(entries: Any) -> bool:
    """`managedFields: []` or `[{}]` in a request clears the tracking."""
    if not isinstance(entries, list):
        return False
    return not entries or (len(entries) == 1 and isinstance(entries[0], dict)
                           and not any(entries[0].values()))


def _managed_for_update(old: Obj | None, new: Obj, subresource: str) -> Managed:
    """decodeLiveOrNew: the request's managedFields when it carries usable ones, else the live ones."""
    old_entries = ((old or {}).get("metadata") or {}).get("managedFields")
    if subresource:
        return _decode_or_empty(old_entries)
    new_entries = (new.get("metadata") or {}).get("managedFields")
    if _is_reset(new_entries):
        return {}
    try:
        managed = _decode_managed(new_entries)
    except _DecodeError:
        managed = {}
    return managed or _decode_or_empty(old_entries)


def _cap_update_managers(managed: Managed) -> Managed:
    """Merge the oldest Update entries into per-version "ancient-changes" entries beyond ten."""
    updaters = [i for i, e in managed.items() if e.operation == "Update"]
    if len(updaters) <= MAX_UPDATE_MANAGERS:
        return managed
    updaters.sort(key=lambda i: (_unix(managed[i].time), i))
    first_by_version: dict[str, str] = {}
    length = len(updaters)
    for ident in updaters:
        if length <= MAX_UPDATE_MANAGERS:
            break
        e = managed[ident]
        bucket = _Entry(OLD_UPDATES_MANAGER, "Update", e.api_version, "", set())
        first = first_by_version.get(e.api_version)
        if first is None:
            first_by_version[e.api_version] = ident
            continue
        if bucket.ident not in managed:
            bucket.fields = managed.pop(first).fields
            managed[bucket.ident] = bucket
        b = managed[bucket.ident]
        b.fields = e.fields | b.fields
        b.time = e.time  # the merged update is the more recent one
        del managed[ident]
        length -= 1
    return managed


def _record_update(root: defs.Schema, live: Obj, new: Obj, managed: Managed, me: _Entry, now: str,
                   ignored: FieldSet) -> Managed:
    """An Update by `me`: it gains what changed; others lose what changed and everyone loses removals.

    As upstream, the change set is computed for a temporary "current-operation" manager and merged
    into `me`'s entry, whose time moves only when this write changed something.
    """
    c = _comparison(root, live, new)
    seen = c.excluding(ignored)
    changed = seen.modified | seen.added
    out: Managed = {}
    for ident, e in managed.items():
        rest = e.fields - changed - seen.removed
        if rest:
            out[ident] = replace(e, fields=rest)
    current = _recursive_difference((c.modified | c.added) - c.removed, ignored) - STRIPPED
    if current:
        prev = out.get(me.ident)
        out[me.ident] = replace(me, fields=current | (prev.fields if prev else set()), time=now)
    return out


def _comparison(root: defs.Schema, lhs: Any, rhs: Any) -> _Comparison:
    c = _Comparison()
    _compare(root, lhs, rhs, (), c)
    return c


# ---------------------------------------------------------------------------------------------------
# Objects, kinds and versions
# ---------------------------------------------------------------------------------------------------


def _split_api_version(api_version: Any) -> tuple[str, str] | None:
    """schema.ParseGroupVersion; None when it does not parse."""
    if not isinstance(api_version, str) or api_version in ("", "/"):
        return ("", "")
    parts = api_version.split("/")
    if len(parts) == 1:
        return ("", parts[0])
    if len(parts) == 2:
        return (parts[0], parts[1])
    return None


def _gvk_string(api_version: Any, kind: Any) -> str:
    """schema.GroupVersionKind.String() of an object's apiVersion and kind."""
    kind = kind if isinstance(kind, str) else ""
    gv = _split_api_version(api_version) or ("", "")
    return f"{gv[0]}/{gv[1]}, Kind={kind}"


def _kind_of(definition: str, api_version: str) -> str:
    gv = _split_api_version(api_version) or ("", "")
    gvks = defs.definition(definition).get("x-kubernetes-group-version-kind") or []
    for g in gvks:
        if (g.get("group", ""), g.get("version")) == gv:
            return g["kind"]
    return gvks[0]["kind"] if gvks else definition.rsplit(".", 1)[-1]


def _zero_object(definition: str, api_version: str) -> Obj:
    """The "live" object of a create: what a fresh Go object of the kind serialises to."""
    zero = _ZERO_OBJECTS.get(definition)
    if zero is None:
        props = defs.definition(definition).get("properties") or {}
        zero = {k: {} for k in ("spec", "status") if k in props and _type_of(props[k]).kind == "struct"}
    out: Obj = {"apiVersion": api_version, "kind": _kind_of(definition, api_version), "metadata": {}}
    out.update(clone(zero))
    return out


def _with_zero(obj: Obj, zero: Obj) -> Obj:
    """`obj` shaped like the Go object it stands for: fields the Go type always has are filled in.

    Stored objects may omit empty non-pointer structs (`status: {}`) that upstream's typed values
    always carry; comparing with them missing would report them as newly added containers.
    """
    out = dict(obj)  # the callers only read the result: copy just the dicts on the way to what is filled in
    for k, z in zero.items():
        if k not in out:
            out[k] = clone(z)
        elif isinstance(z, dict) and isinstance(out[k], dict):
            out[k] = _with_zero(out[k], z)
    return out


def _ignored(reset_fields: Iterable[str]) -> FieldSet:
    return {_path(p) for p in reset_fields}


def _meta(obj: Any) -> dict:
    m = obj.get("metadata") if isinstance(obj, dict) else None
    return m if isinstance(m, dict) else {}


# ---------------------------------------------------------------------------------------------------
# Public API
# ---------------------------------------------------------------------------------------------------


def track_update(old: Obj | None, new: Obj, *, manager: str, api_version: str, definition: str,
                 subresource: str = "", now: str, reset_fields: Iterable[str] = ()) -> Obj:
    """`new` with metadata.managedFields updated for a create (old None), update or patch by `manager`.

    `api_version` is the request's group/version, `now` an RFC 3339 timestamp, `reset_fields` the
    dotted top-level paths the strategy resets for this endpoint ("status" on the main resource,
    "spec"/"metadata" on status), which nobody gains by writing them.
    """
    result = clone(new)
    if not isinstance(result.get("metadata"), dict):
        return result
    managed = _managed_for_update(old, new, subresource)
    result["metadata"].pop("managedFields", None)
    if not managed and old is not None and _meta(old).get("uid"):
        # skipNonAppliedManager: an existing object that is not tracked stays untracked on update.
        return result
    root = _root(definition)
    zero = _zero_object(definition, api_version)
    live = _with_zero(_without_managed_fields(old, copy=False), zero) if old is not None else zero
    me = _Entry(manager or "unknown", "Update", api_version, subresource, set())
    managed = _record_update(root, live, _with_zero(result, zero), managed, me, now, _ignored(reset_fields))
    _store_managed(result, _cap_update_managers(managed))
    return result


class _Conflicts(Exception):
    def __init__(self, conflicts: list[tuple[_Entry, Path]]):
        super().__init__("conflicts")
        self.conflicts = conflicts


def apply(live: Obj | None, config: Obj | str | bytes, *, manager: str, force: bool, api_version: str,
          definition: str, subresource: str = "", now: str, reset_fields: Iterable[str] = (),
          name: str | None = None) -> Obj:
    """Server-side apply of `config` (application/apply-patch+yaml) onto `live` (None to create).

    Returns the merged object with its managedFields (defaulting and status/spec resets are the
    caller's). Raises, as upstream does:
      400 for a config of another kind or version (missing apiVersion/kind included) or carrying
          managedFields, and, when `name` (the URL's name) is given, for a result named otherwise
          (a create whose config has no name);
      409 Conflict listing every field another manager owns with a different value, unless `force`;
      500 for a config that does not fit the schema (unknown fields, duplicate list-map keys).
    """
    config = _decode_config(config)
    manager = manager or "unknown"
    kind = _kind_of(definition, api_version)
    cfg_gvk = _gvk_string(config.get("apiVersion"), config.get("kind"))
    if cfg_gvk != _gvk_string(api_version, kind):
        raise bad_request(f"invalid object type: {cfg_gvk}")
    cfg_meta = _meta(config)
    if cfg_meta.get("managedFields") is not None:
        raise bad_request("metadata.managedFields must be nil")
    root = _root(definition)
    errors: list[str] = []
    _validate(root, config, (), errors)
    if errors:
        detail = errors[0] if len(errors) == 1 else "errors:\n" + "\n".join("  " + e for e in errors)
        ns, nm = cfg_meta.get("namespace") or "", cfg_meta.get("name") or ""
        raise APIError(500, "", f"failed to create typed patch object ({ns}/{nm}; {cfg_gvk}): {detail}")

    zero = _zero_object(definition, api_version)
    live_obj = _with_zero(_without_managed_fields(live), zero) if live is not None else zero
    try:
        managed = _decode_managed(_meta(live).get("managedFields") if live is not None else None)
    except _DecodeError as e:
        raise APIError(500, "", f"failed to decode managed fields: {e}") from None
    ignored = _ignored(reset_fields)
    if not managed:
        # skipNonAppliedManager: fields that predate the first apply go to "before-first-apply".
        first = _Entry(BEFORE_FIRST_APPLY, "Update", api_version, subresource, set())
        managed = _record_update(root, zero, live_obj, {}, first, now, ignored)

    me = _Entry(manager, "Apply", api_version, subresource, set())
    try:
        obj, managed = _apply_once(root, live_obj, config, managed, me, force, ignored, now)
    except _Conflicts as c:
        conflicts = c.conflicts
        if manager == "kubectl":
            # lastAppliedManager: fields client-side apply last set to their live value may move over.
            allowed = _allowed_from_last_applied(root, live_obj, api_version)
            if allowed is not None:
                conflicts = [(e, p) for e, p in conflicts if p not in allowed]
                if not conflicts:
                    obj, managed = _apply_once(root, live_obj, config, managed, me, True, ignored, now)
        if conflicts:
            raise _conflict_error(conflicts) from None

    if manager == "kubectl":
        annotations = _meta(obj).get("annotations")
        if isinstance(annotations, dict) and annotations.get(LAST_APPLIED):
            annotations[LAST_APPLIED] = _build_last_applied(config)

    obj = _drop_nulls(clone(obj))
    obj_name = _meta(obj).get("name") or ""
    if name is not None and obj_name != name:
        # checkName runs once the patch is applied, so conflicts are reported first.
        raise bad_request(f"the name of the object ({obj_name}) does not match the name on the URL ({name})")
    _store_managed(obj, managed)
    return obj


def _decode_config(config: Obj | str | bytes) -> Obj:
    if isinstance(config, (str, bytes, bytearray)):
        try:
            config = yaml.safe_load(config)
        except yaml.YAMLError as e:
            raise bad_request(f"error decoding YAML: {e}") from None
        if config is None:
            config = {}
    if not isinstance(config, dict):
        kind = "array" if isinstance(config, list) else "string" if isinstance(config, str) else "number"
        raise bad_request("error decoding YAML: error unmarshaling JSON: while decoding JSON: json: "
                          f"cannot unmarshal {kind} into Go value of type map[string]interface {{}}")
    return clone(config)


def _apply_once(root: defs.Schema, live: Obj, config: Obj, managed: Managed, me: _Entry, force: bool,
                ignored: FieldSet, now: str) -> tuple[Obj, Managed]:
    """merge.Updater.Apply followed by upstream's strip-meta and timestamp handling."""
    merged = _merge(root, live, config)
    last = managed.get(me.ident)
    managed = {i: replace(e) for i, e in managed.items()}
    applied = _recursive_difference(_field_set(root, config), ignored)
    managed[me.ident] = replace(me, fields=applied, time=last.time if last else None)
    new = _prune(root, merged, managed, last.fields if last else set())

    seen = _comparison(root, live, new).excluding(ignored)
    changed = seen.modified | seen.added
    conflicts: list[tuple[_Entry, Path]] = []
    for ident in sorted(managed):
        e = managed[ident]
        if ident == me.ident:
            continue
        clash = e.fields & changed
        conflicts.extend((e, p) for p in _iterate(clash))
        if force:
            e.fields = e.fields - clash
        e.fields = e.fields - seen.removed
    if conflicts and not force:
        raise _Conflicts(conflicts)
    mine = managed[me.ident]
    mine.fields = mine.fields - STRIPPED
    managed = {i: e for i, e in managed.items() if e.fields}

    if _equal(live, new):
        return live, managed  # a no-op apply keeps the object and the applier's time
    if me.ident in managed:
        managed[me.ident].time = now
    return new, managed


def _prune(root: defs.Schema, merged: Obj, managed: Managed, last: FieldSet) -> Obj:
    """Remove what the applier applied last time but no longer does, unless someone else owns it."""
    if not last:
        return merged
    last_named = _ensure_named_fields(root, last)
    pruned = _remove_items(root, merged, last_named)
    # addBackOwnedItems: keep whatever any manager (this applier's new set included) owns.
    merged_set = _ensure_named_fields(root, _field_set(root, merged))
    pruned_set = _ensure_named_fields(root, _field_set(root, pruned))
    owned = _ensure_named_fields(root, set().union(*(e.fields for e in managed.values())))
    pruned = _remove_items(root, merged, merged_set - (pruned_set | owned))
    # addBackDanglingItems: only what the applier owned last time may go.
    pruned_set = _ensure_named_fields(root, _field_set(root, pruned))
    return _remove_items(root, merged, (merged_set - pruned_set) & last_named)


def _conflict_error(conflicts: list[tuple[_Entry, Path]]) -> APIError:
    """internal.NewConflictError: 409 Conflict with one FieldManagerConflict cause per field."""
    causes = [{"reason": "FieldManagerConflict", "message": f"conflict with {e.describe()}",
               "field": path_string(p)} for e, p in conflicts]
    if len(conflicts) == 1:
        e, p = conflicts[0]
        message = f"Apply failed with 1 conflict: conflict with {e.describe()}: {path_string(p)}"
    else:
        lines = []
        for ident in sorted({e.ident for e, _ in conflicts}):
            entry = next(e for e, _ in conflicts if e.ident == ident)
            lines.append(f"conflicts with {entry.describe()}:")
            lines.extend(f"- {path_string(p)}" for e, p in conflicts if e.ident == ident)
        message = f"Apply failed with {len(conflicts)} conflicts: " + "\n".join(lines)
    return APIError(409, "Conflict", message, {"causes": causes})


def _allowed_from_last_applied(root: defs.Schema, live: Obj, api_version: str) -> FieldSet | None:
    """Fields the client-side-apply annotation sets to exactly their live value; None without one."""
    text = (_meta(live).get("annotations") or {}).get(LAST_APPLIED)
    if not isinstance(text, str) or not text:
        return None
    try:
        last = json.loads(text)
    except ValueError:
        return None
    if not isinstance(last, dict) or last.get("apiVersion") != api_version:
        return None
    errors: list[str] = []
    _validate(root, last, (), errors)
    if errors:
        return None
    c = _comparison(root, last, live)
    return _field_set(root, last) - c.modified - c.added - c.removed


def _build_last_applied(config: Obj) -> str:
    """The annotation kubectl server-side apply keeps in sync: the config minus itself, as Go encodes it."""
    c = clone(config)
    annotations = _meta(c).get("annotations")
    if isinstance(annotations, dict):
        annotations.pop(LAST_APPLIED, None)
    return _go_json(c, sort_keys=True) + "\n"
