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


def uses(root: str, obj: dict | None, path: str) -> bool:
    """Whether `obj` (of definition `root`) sets the field at `path` (upstream's *FeatureInUse test for it)."""
    if obj is None:
        return False
    p = compile_path(root, path)
    name = p.steps[-1][0]
    for parent in _parents(obj, p.steps):
        value = parent.get(name)
        if value is None:
            continue
        if p.collection and isinstance(value, (list, dict)) and not value:
            continue
        return True
    return False


def remove(root: str, obj: dict, path: str) -> None:
    p = compile_path(root, path)
    name = p.steps[-1][0]
    for parent in _parents(obj, p.steps):
        parent.pop(name, None)


def drop_disabled_fields(rows: Iterable[GatedFields], new: dict, old: dict | None, gates: FeatureGates) -> None:
    """Remove from `new` (in place) the fields of every disabled gate of `rows` (one kind's rules) that `old`
    (None on create) does not already use."""
    for row in rows:
        if all(gates.enabled(g) for g in row.gates):
            continue
        if old is not None and any(uses(row.root, old, p) for p in row.in_use_paths):
            continue
        for path in row.paths:
            remove(row.root, new, path)
