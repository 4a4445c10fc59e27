"""Fields that exist only while a feature gate is on: upstream's dropDisabledFields rules, as data.

Upstream each registry strategy (pkg/registry/resource/*/strategy.go, pkg/registry/resource/
resourceclaimspec/strategy.go, pkg/api/pod/util.go) has one dropDisabled<Gate>Fields function per gate:
when the gate is off and the old object (nil on create) does not use the feature, the gate's fields are
cleared from the new object. A kind's module states its rules as `GatedFields` rows (its strategy's
`gated_fields`); this module applies them generically, from PrepareForCreate, PrepareForUpdate and the
status PrepareForUpdate.

Paths are dotted JSON field names; `name[*]` steps into every element of a list and `name{*}` into every
value of a map. The last segment names the field that is removed. A field counts as "used" in the old
object as upstream's *FeatureInUse helpers test it: a list or map when non-empty, anything else (a
pointer in Go: struct, string, bool, ...) when present and not null.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from dramock.schemas import defs
from dramock.schemas.featuregates import FeatureGates


@dataclass(frozen=True)
class GatedFields:
    """Fields of one kind that need all of `gates`; dropped together unless the old object used any of
    `in_use` (by default the fields themselves)."""

    gates: tuple[str, ...]
    kind: str
    paths: tuple[str, ...]
    in_use: tuple[str, ...] | None = None
    upstream: str = ""  # the upstream function this row mirrors
    root: str = ""  # the kind's 1.37 definition, against which the paths resolve

    @property
    def in_use_paths(self) -> tuple[str, ...]:
        return self.paths if self.in_use is None else self.in_use


_SEGMENT = re.compile(r"^([A-Za-z][A-Za-z0-9]*)(\[\*\]|\{\*\})?$")


@dataclass(frozen=True)
class _Path:
    steps: tuple[tuple[str, bool], ...]  # (field, iterate the elements/values)
    collection: bool  # the last field is a list or map (used when non-empty) rather than a pointer


@functools.cache
def compile_path(root: str, path: str) -> _Path:
    """Parse `path` and resolve it against the 1.37 definition `root` (ValueError if it does not exist)."""
    kind = root.rpartition(".")[2]
    schema = defs.resolve({"$ref": defs.REF_PREFIX + root})
    steps: list[tuple[str, bool]] = []
    segments = path.split(".")
    field_schema: dict = {}
    for i, segment in enumerate(segments):
        m = _SEGMENT.match(segment)
        if not m:
            raise ValueError(f"{kind} {path}: bad segment {segment!r}")
        name, star = m.group(1), m.group(2)
        found = (schema.get("properties") or {}).get(name)
        if found is None:
            raise ValueError(f"{kind} {path}: no field {name!r} in the 1.37 schema")
        field_schema = found
        if star and i == len(segments) - 1:
            raise ValueError(f"{kind} {path}: the dropped field itself cannot be iterated")
        if star == "[*]":
            if "array" not in defs.types_of(field_schema):
                raise ValueError(f"{kind} {path}: {name} is not a list")
            schema = defs.resolve(field_schema.get("items"))
        elif star == "{*}":
            if not isinstance(field_schema.get("additionalProperties"), dict):
                raise ValueError(f"{kind} {path}: {name} is not a map")
            schema = defs.resolve(field_schema["additionalProperties"])
        else:
            schema = defs.resolve(field_schema)
        steps.append((name, bool(star)))
    last = defs.resolve(field_schema)
    collection = "array" in defs.types_of(last) or (
        isinstance(last.get("additionalProperties"), dict) and not last.get("properties"))
    return _Path(tuple(steps), collection)


def _parents(obj: Any, steps: tuple[tuple[str, bool], ...]) -> Iterator[dict]:
    """Every dict holding the path's last field."""
    nodes = [obj]
    for name, star in steps[:-1]:
        nxt: list = []
        for node in nodes:
            value = node.get(name) if isinstance(node, dict) else None
            if value is None:
                continue
            if star:
                nxt.extend(value if isinstance(value, list) else
                           value.values() if isinstance(value, dict) else ())
            else:
                nxt.append(value)
        nodes = nxt
    return (n for n in nodes if isinstance(n, dict))


def _uses(obj: dict, p: _Path) -> bool:
    name = p.steps[-1][0]
    for parent in _parents(obj, p.steps):
        value = parent.get(name)
        if value is None:
            continue
        if p.collection and isinstance(value, (list, dict)) and not value:
            continue
        return True
    return False


def _remove(node: Any, steps: tuple[tuple[str, bool], ...], i: int) -> None:
    """Remove the path's last field below `node` (the value reached after steps[:i]), in _parents' order."""
    last = len(steps) - 1
    while i < last:
        if not isinstance(node, dict):
            return
        name, star = steps[i]
        node = node.get(name)
        if node is None:
            return
        i += 1
        if star:
            if isinstance(node, dict):
                node = list(node.values())
            elif not isinstance(node, list):
                return
            for element in node:
                _remove(element, steps, i)
            return
    if isinstance(node, dict):
        node.pop(steps[last][0], None)


def uses(root: str, obj: dict | None, path: str) -> bool:
    """Whether `obj` (of definition `root`) sets the field at `path` (upstream's *FeatureInUse test for it)."""
    if obj is None:
        return False
    return _uses(obj, compile_path(root, path))


def remove(root: str, obj: dict, path: str) -> None:
    _remove(obj, compile_path(root, path).steps, 0)


@dataclass(frozen=True)
class _Row:
    gates: tuple[str, ...]
    paths: tuple[_Path, ...]
    in_use: tuple[_Path, ...]


class _Plan:
    """One kind's rows with their paths resolved, and which rows the gates last seen disable."""

    def __init__(self, rows: tuple[GatedFields, ...]):
        self.rows = rows
        self.compiled = tuple(_Row(row.gates, tuple(compile_path(row.root, p) for p in row.paths),
                                   tuple(compile_path(row.root, p) for p in row.in_use_paths)) for row in rows)
        self.seen: tuple[FeatureGates, dict[str, bool], tuple[_Row, ...], _Trie] | None = None

    def disabled(self, gates: FeatureGates) -> tuple[tuple[_Row, ...], _Trie]:
        """The rows the gates disable, and all their paths merged into one trie (for a create)."""
        seen = self.seen
        if seen is None or seen[0] is not gates or seen[1] != gates.overrides:
            off = tuple(row for row in self.compiled if not all(gates.enabled(g) for g in row.gates))
            seen = self.seen = (gates, dict(gates.overrides), off, _trie([p for row in off for p in row.paths]))
        return seen[2], seen[3]


# The paths of several rows as one tree of steps: (fields removed here, (field, iterate, subtree) to descend).
_Trie = tuple[tuple[str, ...], tuple[tuple[str, bool, "_Trie"], ...]]


def _trie(paths: list[_Path]) -> _Trie:
    drops: dict[str, None] = {}
    below: dict[tuple[str, bool], list[_Path]] = {}
    for p in paths:
        if len(p.steps) == 1:
            drops[p.steps[0][0]] = None
        else:
            below.setdefault(p.steps[0], []).append(_Path(p.steps[1:], p.collection))
    return tuple(drops), tuple((name, star, _trie(sub)) for (name, star), sub in below.items())


def _remove_all(node: Any, trie: _Trie) -> None:
    """Remove every path of `trie` below `node`: on a tree, what removing them one after another leaves."""
    if not isinstance(node, dict):
        return
    drops, children = trie
    for name, star, sub in children:
        value = node.get(name)
        if value is None:
            continue
        if not star:
            _remove_all(value, sub)
        elif isinstance(value, list):
            for element in value:
                _remove_all(element, sub)
        elif isinstance(value, dict):
            for element in value.values():
                _remove_all(element, sub)
    for name in drops:
        node.pop(name, None)


_PLANS: dict[int, _Plan] = {}


def _plan(rows: Iterable[GatedFields]) -> _Plan:
    if not isinstance(rows, tuple):
        return _Plan(tuple(rows))
    plan = _PLANS.get(id(rows))
    if plan is None or plan.rows is not rows:  # the plan holds `rows`, so its id is not reused meanwhile
        if len(_PLANS) >= 256:
            _PLANS.clear()
        plan = _PLANS[id(rows)] = _Plan(rows)
    return plan


def drop_disabled_fields(rows: Iterable[GatedFields], new: dict, old: dict | None, gates: FeatureGates) -> None:
    """Remove from `new` (in place) the fields of every disabled gate of `rows` (one kind's rules) that `old`
    (None on create) does not already use."""
    off, trie = _plan(rows).disabled(gates)
    if old is None:  # a new object is a tree: the order of removal makes no difference
        _remove_all(new, trie)
        return
    for row in off:  # on an update `new` may share values with `old`: in order, as each row is decided
        if any(_uses(old, p) for p in row.in_use):
            continue
        for p in row.paths:
            _remove(new, p.steps, 0)
