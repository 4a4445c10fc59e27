"""Decoding-time checks of a request body against its kind's definition, as Go's strict decoder does.

Unknown fields are reported (and removed, so Warn/Ignore store what a Go struct would keep);
values of the wrong JSON type are decode errors (400), exactly where client-go's decoder would fail.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import orjson

from dramock.jsonvalue import go_type_name
from dramock.memo import CONTENT_BYTES, CONTENT_ENTRIES, remember
from dramock.schemas import defs, quantity

_INT_RANGE = {"int32": (-(2 ** 31), 2 ** 31 - 1), "int64": (-(2 ** 63), 2 ** 63 - 1)}
_RAW_EXTENSION = "io.k8s.apimachinery.pkg.runtime.RawExtension"


class DecodeReport:
    def __init__(self) -> None:
        self.unknown: list[str] = []
        self.type_errors: list[str] = []


# Specs a walk left as they were and reported nothing about, by their JSON: creates of the same content (a
# template's claims, a workload's pods) walk only the rest of the object.
_CLEAN_SPECS: dict[tuple[str, bytes], None] = {}


def check(obj: dict[str, Any], definition: str) -> DecodeReport:
    """Walk `obj` against `definition`, removing unknown fields in place and reporting them."""
    report = DecodeReport()
    root = _ROOTS.get(definition)
    if root is None:
        root = _ROOTS[definition] = (_walker(defs.definition(definition)), definition.rsplit(".", 1)[-1])
    spec = obj.get("spec")
    key = None
    if type(spec) is dict and spec:
        try:
            key = (definition, orjson.dumps(spec))
        except (TypeError, orjson.JSONEncodeError):
            pass
    if key is not None and key in _CLEAN_SPECS:
        obj["spec"] = {}  # walked as empty (nothing to report), in its place
        root[0](obj, "", report, root[1])
        obj["spec"] = spec
        return report
    root[0](obj, "", report, root[1])
    if key is not None and len(key[1]) <= CONTENT_BYTES and not report.unknown and not report.type_errors \
            and obj.get("spec") is spec and orjson.dumps(spec) == key[1]:
        remember(_CLEAN_SPECS, key, None, CONTENT_ENTRIES)
    return report


def _go_name(definition: str | None) -> str:
    """`io.k8s.api.resource.v1.ResourceClaimSpec` -> `v1.ResourceClaimSpec`, as Go's reflect prints it."""
    if not definition:
        return ""
    parts = definition.split(".")
    return ".".join(parts[-2:])


def _go_type(schema: defs.Schema) -> str:
    """The Go type a schema stands for, as encoding/json names it in UnmarshalTypeError."""
    ref = defs.ref_name(schema)
    if ref:
        resolved = defs.resolve(schema)
        if "properties" in resolved:
            return _go_name(ref)
        schema = resolved
    types = defs.types_of(schema)
    if "array" in types:
        return "[]" + _go_type(schema.get("items") or {})
    if "object" in types:
        add = schema.get("additionalProperties")
        return "map[string]" + (_go_type(add) if isinstance(add, dict) else "interface {}")
    if "integer" in types:
        return schema.get("format") or "int64"
    if "number" in types:
        return "float64"
    if "boolean" in types:
        return "bool"
    return "string"


def _type_error(value: Any, schema: defs.Schema, path: str, owner: str) -> str:
    """Go's `json: cannot unmarshal X into Go struct field Owner.path.without.indices of type T`."""
    what = go_type_name(value)
    target = _go_type(schema)
    if what == "number" and (target.startswith(("int", "uint", "float"))):
        # Only a number that does not fit a numeric field is quoted (encoding/json's literalStore).
        what = f"number {value!r}" if isinstance(value, float) else f"number {value}"
    field = re.sub(r"\[[^\]]*\]", "", path)
    return f"json: cannot unmarshal {what} into Go struct field {owner}.{field} of type {target}"


_TIME = "io.k8s.apimachinery.pkg.apis.meta.v1.Time"
_MICRO_TIME = "io.k8s.apimachinery.pkg.apis.meta.v1.MicroTime"
_RFC3339 = re.compile(r"^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(\.(\d+))?([Zz]|[+-]\d{2}:\d{2})$")


def _timestamp(value: Any, micro: bool, report: DecodeReport) -> Any:
    """Re-render a timestamp the way Go's metav1.Time / MicroTime marshal it (UTC, Z, fixed precision)."""
    if not isinstance(value, str) or value == "":
        return None if value == "" else value
    m = _RFC3339.match(value)
    layout = '"2006-01-02T15:04:05.000000Z07:00"' if micro else '"2006-01-02T15:04:05Z07:00"'
    if m is None or (micro and len(m.group(8) or "") != 6):
        report.type_errors.append(f'parsing time "{value}" as {layout}: cannot parse "{value}" as {layout}')
        return value
    frac = m.group(8) or ""
    try:
        ts = datetime.fromisoformat(f"{value[:19]}{('.' + frac[:6]) if frac else ''}"
                                    f"{'+00:00' if m.group(9) in 'Zz' else m.group(9)}")
    except ValueError:
        report.type_errors.append(f'parsing time "{value}": day out of range')
        return value
    ts = ts.astimezone(UTC)
    if micro:
        return ts.strftime("%Y-%m-%dT%H:%M:%S.") + f"{ts.microsecond:06d}Z"
    return ts.strftime("%Y-%m-%dT%H:%M:%SZ")


_QUANTITY = "io.k8s.apimachinery.pkg.api.resource.Quantity"
_QUANTITY_SYNTAX = "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"


# Canonical forms of quantity strings already seen (bodies repeat the same few); emptied when full.
_CANONICAL: dict[str, str] = {}
_CANONICAL_MAX = 4096


def _quantity(value: Any, report: DecodeReport) -> Any:
    """Re-render a quantity as Go's resource.Quantity marshals it (canonical form, e.g. 1024Mi -> 1Gi)."""
    if value is None:
        return None
    if type(value) is str:
        hit = _CANONICAL.get(value)
        if hit is not None:
            return hit
    q = quantity.parse_or_none(value)
    if q is None:
        report.type_errors.append(_QUANTITY_SYNTAX)
        return value
    text = str(q)
    if type(value) is str:
        if len(_CANONICAL) >= _CANONICAL_MAX:
            _CANONICAL.clear()
        _CANONICAL[value] = text
    return text


@dataclass(frozen=True, slots=True)
class _Node:
    """What _walk needs of one schema node, worked out once per schema dict (the definitions are loaded once)."""
    special: str  # "time" | "micro" | "quantity" | "raw" | ""
    schema: defs.Schema
    resolved: defs.Schema
    one_of: list | None
    types: frozenset[str]
    int_range: tuple[int, int]
    props: dict[str, defs.Schema] | None
    required: frozenset[str]
    preserve: bool
    add: defs.Schema | None
    items: defs.Schema | None
    owner: str | None  # the Go struct a nested struct names its fields after
    keeps_null: bool


_NODES: dict[int, tuple[defs.Schema, _Node]] = {}


def _node(schema: defs.Schema) -> _Node:
    hit = _NODES.get(id(schema))
    if hit is None or hit[0] is not schema:  # holding `schema` keeps its id from being reused
        hit = _NODES[id(schema)] = (schema, _compile(schema))
    return hit[1]


def _compile(schema: defs.Schema) -> _Node:
    ref = defs.ref_name(schema)
    special = {_TIME: "time", _MICRO_TIME: "micro", _QUANTITY: "quantity", _RAW_EXTENSION: "raw"}.get(ref or "", "")
    resolved = defs.resolve(schema)
    props = resolved.get("properties")
    add = resolved.get("additionalProperties")
    return _Node(
        special=special, schema=schema, resolved=resolved,
        one_of=resolved["oneOf"] if "oneOf" in resolved else None,
        types=frozenset(defs.types_of(resolved)),
        int_range=_INT_RANGE.get(resolved.get("format") or "int64", _INT_RANGE["int64"]),
        props=props, required=frozenset(resolved.get("required", ())) if props is not None else frozenset(),
        preserve=bool(resolved.get("x-kubernetes-preserve-unknown-fields")),
        add=add if isinstance(add, dict) else None,
        items=resolved["items"] if "items" in resolved else None,
        owner=_go_name(ref).split(".", 1)[1] if ref and props is not None else None,
        keeps_null=_keeps_null(schema))


def _node_type_ok(value: Any, n: _Node) -> bool:
    """Whether the JSON value has a type the node's schema allows (null always does)."""
    if value is None:
        return True
    if n.one_of is not None:  # Quantity, IntOrString
        return any(_node_type_ok(value, _node(alt)) for alt in n.one_of)
    types = n.types
    if not types:
        return True
    t = type(value)
    if t is str:
        return "string" in types
    if t is dict:
        return "object" in types
    if isinstance(value, bool):
        return "boolean" in types
    if isinstance(value, int):
        if "integer" in types:
            lo, hi = n.int_range
            return lo <= value <= hi
        return "number" in types
    if isinstance(value, float):
        return "number" in types
    if isinstance(value, str):
        return "string" in types
    if isinstance(value, list):
        return "array" in types
    return "object" in types


def _walk(value: Any, schema: defs.Schema, path: str, report: DecodeReport, owner: str) -> Any:
    """Check `value`; returns it, normalized where Go's decoding would (timestamps, quantities).

    `owner` is the Go struct the current path started in (it names the field in type errors).
    """
    n = _node(schema)
    special = n.special
    if special:
        if special == "time" or special == "micro":
            return _timestamp(value, special == "micro", report)
        if special == "quantity":
            return _quantity(value, report)
        return value  # RawExtension, any JSON: semantic validation decides what it may hold
    if not _node_type_ok(value, n):
        report.type_errors.append(_type_error(value, schema, path, owner))
        return value
    if value is None:
        return value
    if isinstance(value, dict):
        props = n.props
        if props is not None:
            if n.owner is not None:  # a nested struct: Go names fields below it after this struct
                owner = n.owner
            for key in list(value):
                child_path = f"{path}.{key}" if path else key
                child = props.get(key)
                if child is not None:
                    if value[key] is None and not _node(child).keeps_null:
                        # Go leaves the field at its zero value: one that is always encoded (no omitempty, which
                        # the schema lists as required) comes back as that zero, the others as if absent.
                        if key in n.required:
                            value[key] = _zero(child)
                        else:
                            del value[key]
                            continue
                    value[key] = _walk(value[key], child, child_path, report, owner)
                elif not n.preserve:
                    report.unknown.append(child_path)
                    del value[key]
        elif n.add is not None:
            add = n.add
            add_keeps_null = _node(add).keeps_null
            for key in list(value):
                if value[key] is None and not add_keeps_null:
                    value[key] = _zero(add)
                value[key] = _walk(value[key], add, f"{path}[{key}]", report, owner)
    elif isinstance(value, list) and n.items is not None:
        items = n.items
        items_keeps_null = _node(items).keeps_null
        for i, v in enumerate(value):
            if v is None and not items_keeps_null:
                v = _zero(items)  # Go decodes a null element to the element type's zero value
            value[i] = _walk(v, items, f"{path}[{i}]", report, owner)
    return value


# ---- compiled walkers: _walk's result, with each schema node's dispatch worked out once ----
#
# A walker is `(value, path, report, owner) -> value` for one schema node. Struct, map and list walkers
# handle the shapes orjson produces (exact dicts, lists, strs, ints, ...) themselves: a leaf field whose
# value has a type the field admits is left as it is without a call, and child paths are only formatted
# for children that are walked. Anything else (null, a wrong type, timestamps, quantities, oneOf) goes
# to _walk for that value, so every report and normalization is _walk's own.

Walker = Callable[[Any, str, DecodeReport, str], Any]

_WALKERS: dict[int, tuple[defs.Schema, Walker]] = {}
_ROOTS: dict[str, tuple[Walker, str]] = {}

_PY_TYPES = {"string": (str,), "boolean": (bool,), "number": (int, float), "integer": (int,),
             "object": (dict,), "array": (list,)}


@dataclass(frozen=True, slots=True)
class _Child:
    """A field's (or a map value's, or a list element's) schema as the parent's walker needs it."""
    schema: defs.Schema
    leaf: frozenset[type]  # value types returned as they are, with no report (ints: within int_range)
    int_range: tuple[int, int] | None  # the range an int leaf must be in (integer fields)
    walk: Walker
    keeps_null: bool
    required: bool


def _walker(schema: defs.Schema) -> Walker:
    hit = _WALKERS.get(id(schema))
    if hit is None or hit[0] is not schema:
        hit = _WALKERS[id(schema)] = (schema, _compile_walker(schema))
    return hit[1]


def _leaf_types(n: _Node) -> tuple[frozenset[type], tuple[int, int] | None]:
    """The value types a node returns unchanged and unreported without walking into them."""
    if n.special or n.one_of is not None:
        return frozenset(), None
    walks_into = n.props is not None or n.add is not None or n.items is not None
    if not n.types:
        return (frozenset() if walks_into else frozenset({str, bool, int, float, dict, list})), None
    leaf = {t for name in n.types for t in _PY_TYPES.get(name, ())}
    if walks_into:
        leaf -= {dict, list}
    return frozenset(leaf), (n.int_range if "integer" in n.types else None)


def _child(schema: defs.Schema, required: bool) -> _Child:
    n = _node(schema)
    leaf, int_range = _leaf_types(n)
    return _Child(schema, leaf, int_range, _walker(schema), n.keeps_null, required)


def _compile_walker(schema: defs.Schema) -> Walker:
    n = _node(schema)

    def generic(value: Any, path: str, report: DecodeReport, owner: str) -> Any:
        return _walk(value, schema, path, report, owner)

    if n.special == "quantity":
        return lambda value, path, report, owner: _quantity(value, report)
    if n.special == "time" or n.special == "micro":
        micro = n.special == "micro"
        return lambda value, path, report, owner: _timestamp(value, micro, report)
    if n.special == "raw":
        return lambda value, path, report, owner: value
    if n.one_of is not None:
        return generic
    if n.props is not None:
        return _struct_walker(schema, n, generic)
    if n.add is not None:
        return _elements_walker(n.add, not n.types or "object" in n.types, dict, dict.items, generic)
    if n.items is not None:
        return _elements_walker(n.items, not n.types or "array" in n.types, list, enumerate, generic)
    return generic


def _struct_walker(schema: defs.Schema, n: _Node, generic: Walker) -> Walker:
    props = n.props or {}
    fields: dict[str, _Child] | None = None  # made on first use (the definitions refer to themselves), whole
    dict_ok = not n.types or "object" in n.types
    preserve, struct_owner, required = n.preserve, n.owner, n.required

    def walk(value: Any, path: str, report: DecodeReport, owner: str) -> Any:
        nonlocal fields
        if type(value) is not dict or not dict_ok:
            return generic(value, path, report, owner)
        if fields is None:
            fields = {k: _child(v, k in required) for k, v in props.items()}
        if struct_owner is not None:  # a nested struct: Go names fields below it after this struct
            owner = struct_owner
        gone: list[str] | None = None  # keys to delete once the iteration is over
        for key, v in value.items():
            c = fields.get(key)
            if c is None:
                if not preserve:
                    report.unknown.append(f"{path}.{key}" if path else key)
                    if gone is None:
                        gone = [key]
                    else:
                        gone.append(key)
                continue
            t = type(v)
            if t in c.leaf:
                if t is not int or c.int_range is None or c.int_range[0] <= v <= c.int_range[1]:
                    continue
            elif v is None and not c.keeps_null:
                # Go leaves the field at its zero value: one that is always encoded (no omitempty, which
                # the schema lists as required) comes back as that zero, the others as if absent.
                if not c.required:
                    if gone is None:
                        gone = [key]
                    else:
                        gone.append(key)
                    continue
                v = _zero(c.schema)
            value[key] = c.walk(v, f"{path}.{key}" if path else key, report, owner)  # (no key is added)
        if gone is not None:
            for key in gone:
                del value[key]
        return value

    return walk


def _elements_walker(element: defs.Schema, ok: bool, container: type, pairs: Callable[[Any], Any],
                     generic: Walker) -> Walker:
    """A map's values or a list's items: each against `element`, leaves of an allowed type checked in the loop.
    `pairs` gives (key or index, value): dict.items or enumerate."""
    cell: list[_Child] = []

    def walk(value: Any, path: str, report: DecodeReport, owner: str) -> Any:
        if type(value) is not container or not ok:
            return generic(value, path, report, owner)
        elements: Any = value  # a dict or a list: both are assigned by key or index
        if not cell:
            cell.append(_child(element, False))
        c = cell[0]
        leaf, rng, cwalk = c.leaf, c.int_range, c.walk
        for key, v in pairs(value):  # values are replaced, no key or item is added or removed
            t = type(v)
            if t in leaf:
                if t is not int or rng is None or rng[0] <= v <= rng[1]:
                    continue
            elif v is None and not c.keeps_null:
                v = _zero(element)  # Go decodes a null to the type's zero value
            elements[key] = cwalk(v, f"{path}[{key}]", report, owner)
        return value

    return walk


def _keeps_null(schema: defs.Schema) -> bool:
    """Types whose null survives decoding: raw JSON, and timestamps (their zero value encodes as null)."""
    return defs.ref_name(schema) in (_RAW_EXTENSION, _TIME, _MICRO_TIME) or bool(
        defs.resolve(schema).get("x-kubernetes-preserve-unknown-fields"))


def _zero(schema: defs.Schema) -> Any:
    """The JSON of a Go zero value of the schema's type (what a null array element or map value becomes)."""
    if defs.ref_name(schema) == _QUANTITY:
        return "0"
    resolved = defs.resolve(schema)
    if "oneOf" in resolved:  # IntOrString
        return 0
    types = defs.types_of(resolved)
    if "object" in types or "properties" in resolved:
        return {}
    if "array" in types:
        return []
    if "string" in types:
        return ""
    if "boolean" in types:
        return False
    if "integer" in types or "number" in types:
        return 0
    return None
