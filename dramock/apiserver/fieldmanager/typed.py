"""Typed operations on objects (SMD's typed package): validate, field set, compare, merge, remove."""

from __future__ import annotations

import functools
from collections.abc import Iterable
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from typing import Any

from dramock.schemas import defs

from .fieldset import _recursive_difference
from .paths import FieldSet, Path, PathElement, _f, _pe_str, path_string
from .schema import (
    _BAD,
    _DEDUCED_MAP,
    MISSING,
    UNTYPED,
    _as_list,
    _as_map,
    _child,
    _deduce,
    _granular_list,
    _granular_map,
    _index_items,
    _item_pe,
    _item_pe_or_none,
    _ItemError,
    _Type,
    _type_of,
)
from .values import Obj, _same


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

    def excluding(self, ignored: AbstractSet[Path]) -> _Comparison:
        return _Comparison(_recursive_difference(self.added, ignored),
                           _recursive_difference(self.modified, ignored),
                           _recursive_difference(self.removed, ignored))


def _compare(prop: defs.Schema, lhs: Any, rhs: Any, path: Path, c: _Comparison) -> None:
    """typed.Compare: leaves report added/modified/removed; containers report only added/removed."""
    if lhs is not MISSING and rhs is not MISSING and _same(lhs, rhs):
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
        else:
            c.modified.add(path)  # both present and not _same (checked on the way in)
    elif path:
        if lhs is MISSING:
            c.added.add(path)
        elif rhs is MISSING:
            c.removed.add(path)


# Ignored paths (reset fields) as a trie of field names: a name maps to True when everything from there down
# is ignored, else to the trie of what is ignored below it.
Ignored = dict


def _ignored_trie(paths: Iterable[Path]) -> Ignored | None:
    """The trie of a set of ignored paths (all field names, as reset fields are); None for none."""
    trie: Ignored = {}
    for p in sorted(paths, key=len):  # shorter first: an ignored field covers everything below it
        node: Any = trie
        for i, pe in enumerate(p):
            if pe[0] != "f":
                raise ValueError(f"ignored path {path_string(p)} is not made of field names")
            if i == len(p) - 1:
                node[pe[1]] = True
                break
            node = node.setdefault(pe[1], {})
            if node is True:
                break
    return trie or None


@functools.lru_cache(maxsize=64)
def _frozen_ignored_trie(paths: frozenset[Path]) -> Ignored | None:
    """_ignored_trie, remembered (callers only read it)."""
    return _ignored_trie(paths)


def _all_paths(prop: defs.Schema, v: Any, path: Path, out: FieldSet) -> None:
    """What _compare reports for a subtree present on one side only: the path of every node in it.

    A child that is not a non-empty dict or list is a leaf whatever its schema says (a scalar, null, an
    empty or mistyped container): its path is added without a call.
    """
    t = _type_of(prop)
    kind = t.kind
    if kind == "untyped":
        if isinstance(v, dict):
            kind = "map"
            t = _DEDUCED_MAP
        else:
            out.add(path)  # a deduced list is atomic, a deduced scalar a leaf
            return
    if kind == "struct" or kind == "map":
        if v and not t.atomic and isinstance(v, dict):
            fields = t.fields if kind == "struct" else None
            elem = t.elem or UNTYPED
            for k, x in v.items():
                p = path + (("f", k),)
                if x and isinstance(x, (dict, list)):
                    _all_paths(elem if fields is None else fields.get(k, UNTYPED), x, p, out)
                else:
                    out.add(p)
    elif kind == "list" and v and t.rel != "atomic" and isinstance(v, list):
        index = _index_items(t, v)
        if index is not None:
            elem = t.elem
            for pe, item in index.items():
                p = path + (pe,)
                if item and isinstance(item, (dict, list)):
                    _all_paths(elem, item, p, out)
                else:
                    out.add(p)
    out.add(path)


def _one_sided(prop: defs.Schema, v: Any, path: Path, out: FieldSet) -> None:
    if v and isinstance(v, (dict, list)):
        _all_paths(prop, v, path, out)
    else:
        out.add(path)


def _diff(prop: defs.Schema, lhs: Any, rhs: Any, path: Path, c: _Comparison, ign: Ignored | None) -> None:
    """_compare without what lies under the ignored paths (`ign`, below `path`): the same result as
    _compare then _Comparison.excluding, in one walk that skips what would be dropped.

    Children present on one side only, or the same on both, are settled in the parent's loop (_deduce,
    _as_map/_as_list and _child are spelled out inline: this runs for every container of every write)."""
    if lhs is MISSING:
        if ign is None and rhs is not MISSING and path:
            _one_sided(prop, rhs, path, c.added)
            return
    elif rhs is MISSING:
        if ign is None and path:
            _one_sided(prop, lhs, path, c.removed)
            return
    elif _same(lhs, rhs):
        return
    t = _type_of(prop)
    if t.kind == "untyped":
        t = _deduce(prop, rhs if rhs is not MISSING else lhs)
    kind = t.kind
    leaf = True
    if (kind == "struct" or kind == "map") and not t.atomic:
        lm = lhs if isinstance(lhs, dict) else {} if lhs is MISSING or lhs is None else _BAD
        rm = rhs if isinstance(rhs, dict) else {} if rhs is MISSING or rhs is None else _BAD
        if lm is not _BAD and rm is not _BAD and (lm or rm):
            leaf = False
            fields = t.fields if kind == "struct" else None
            elem = t.elem or UNTYPED
            added, removed = c.added, c.removed
            keys = rm if not lm else lm if not rm else list(lm) + [k for k in rm if k not in lm]
            for k in keys:
                sub = None
                if ign is not None and k in ign:
                    sub = ign[k]
                    if sub is True:
                        continue
                x, y, p = lm.get(k, MISSING), rm.get(k, MISSING), path + (("f", k),)
                if sub is None:
                    if x is MISSING:
                        if y and isinstance(y, (dict, list)):
                            _all_paths(elem if fields is None else fields.get(k, UNTYPED), y, p, added)
                        else:
                            added.add(p)
                        continue
                    if y is MISSING:
                        if x and isinstance(x, (dict, list)):
                            _all_paths(elem if fields is None else fields.get(k, UNTYPED), x, p, removed)
                        else:
                            removed.add(p)
                        continue
                    if _same(x, y):
                        continue
                _diff(elem if fields is None else fields.get(k, UNTYPED), x, y, p, c, sub)
    elif kind == "list" and t.rel != "atomic":
        ll = lhs if isinstance(lhs, list) else [] if lhs is MISSING or lhs is None else _BAD
        rl = rhs if isinstance(rhs, list) else [] if rhs is MISSING or rhs is None else _BAD
        if ll is not _BAD and rl is not _BAD and (ll or rl):
            li, ri = _index_items(t, ll), _index_items(t, rl)
            if li is not None and ri is not None:
                leaf = False
                # Items are named by keys or values, never by field names: nothing below is ignored.
                elem = t.elem
                for pe in list(li) + [pe for pe in ri if pe not in li]:
                    x, y, p = li.get(pe, MISSING), ri.get(pe, MISSING), path + (pe,)
                    if x is MISSING:
                        _one_sided(elem, y, p, c.added)
                    elif y is MISSING:
                        _one_sided(elem, x, p, c.removed)
                    elif not _same(x, y):
                        _diff(elem, x, y, p, c, None)
    if leaf:
        if lhs is MISSING:
            c.added.add(path)
        elif rhs is MISSING:
            c.removed.add(path)
        else:
            c.modified.add(path)
    elif path:
        if lhs is MISSING:
            c.added.add(path)
        elif rhs is MISSING:
            c.removed.add(path)


def _changes(root: defs.Schema, lhs: Any, rhs: Any, ignored: Ignored | None) -> _Comparison:
    """_comparison(root, lhs, rhs).excluding(ignored paths), computed in one walk."""
    c = _Comparison()
    _diff(root, lhs, rhs, (), c, ignored)
    return c


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


def _comparison(root: defs.Schema, lhs: Any, rhs: Any) -> _Comparison:
    c = _Comparison()
    _compare(root, lhs, rhs, (), c)
    return c
