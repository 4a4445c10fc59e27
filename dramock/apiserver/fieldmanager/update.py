"""Updates (create, update, non-apply patch): which managedFields a request starts from, the Update
entry the writer gains, and the cap on the number of update managers."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from collections.abc import Set as AbstractSet
from dataclasses import replace
from typing import Any

import orjson

from dramock.jsonvalue import clone
from dramock.memo import CONTENT_BYTES, CONTENT_ENTRIES, remember
from dramock.schemas import defs

from .fieldset import _DecodeError, _recursive_difference
from .managed_fields import (
    STRIPPED,
    Managed,
    _decode_managed,
    _decode_or_empty,
    _Entry,
    _store_managed,
    _unix,
    _without_managed_fields,
)
from .objects import _frozen_ignored, _meta, _shared_zero_object, _with_zero
from .paths import Path
from .schema import _root
from .typed import _changes, _comparison, _frozen_ignored_trie, _ignored_trie
from .values import Obj

MAX_UPDATE_MANAGERS = 10  # managedfields DefaultMaxUpdateManagers
OLD_UPDATES_MANAGER = "ancient-changes"

# The field set a create records, by what it depends on: the kind, version and reset fields, and the object
# without the metadata every create sets anew (all of them stripped from field sets, so they change nothing
# in it). Creates of the same content (a template's pods or claims, a benchmark's objects) compute it once.
_CREATED_FIELDS: dict[tuple[str, str, tuple[str, ...], bytes], frozenset[Path]] = {}
_PER_CREATE_METADATA = frozenset(("name", "namespace", "uid", "creationTimestamp", "resourceVersion", "generation",
                                  "selfLink"))


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
                   ignored: AbstractSet[Path]) -> Managed:
    """An Update by `me`: it gains what changed; others lose what changed and everyone loses removals.

    As upstream, the change set is computed for a temporary "current-operation" manager and merged
    into `me`'s entry, whose time moves only when this write changed something.

    This is the plain statement (compare, then drop the ignored paths); track_update uses _record_changes,
    which tests hold to the same results.
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


def _record_changes(root: defs.Schema, live: Obj, new: Obj, managed: Managed, me: _Entry, now: str,
                    ignored: AbstractSet[Path]) -> Managed:
    """_record_update in one walk: the comparison skips the ignored subtrees instead of computing then dropping
    them, and reports whole added (a create's) or removed subtrees without comparing them against nothing."""
    trie = _frozen_ignored_trie(ignored) if isinstance(ignored, frozenset) else _ignored_trie(ignored)
    c = _changes(root, live, new, trie)
    changed = c.modified | c.added
    removed = c.removed
    out: Managed = {}
    for ident, e in managed.items():
        rest = e.fields - changed - removed
        if rest:
            out[ident] = _Entry(e.manager, e.operation, e.api_version, e.subresource, rest, e.time)
    current = (changed - removed if removed else changed) - STRIPPED
    if current:
        prev = out.get(me.ident)
        out[me.ident] = _Entry(me.manager, me.operation, me.api_version, me.subresource,
                               current | prev.fields if prev else current, now)
    return out


Recorder = Callable[[defs.Schema, Obj, Obj, Managed, _Entry, str, AbstractSet[Path]], Managed]


def track_update(old: Obj | None, new: Obj, *, manager: str, api_version: str, definition: str,
                 subresource: str = "", now: str, reset_fields: Iterable[str] = ()) -> Obj:
    """`new` with metadata.managedFields updated for a create (old None), update or patch by `manager`.

    `api_version` is the request's group/version, `now` an RFC 3339 timestamp, `reset_fields` the
    dotted top-level paths the strategy resets for this endpoint ("status" on the main resource,
    "spec"/"metadata" on status), which nobody gains by writing them.
    """
    return _track(old, new, manager, api_version, definition, subresource, now, reset_fields, _record_changes)


def _track(old: Obj | None, new: Obj, manager: str, api_version: str, definition: str, subresource: str,
           now: str, reset_fields: Iterable[str], record: Recorder) -> Obj:
    # Only the top level and metadata are written here (managedFields); the rest is shared with `new`.
    result = dict(new)
    if not isinstance(result.get("metadata"), dict):
        return clone(result)
    result["metadata"] = dict(result["metadata"])
    managed = _managed_for_update(old, new, subresource)
    result["metadata"].pop("managedFields", None)
    if not managed and old is not None and _meta(old).get("uid"):
        # skipNonAppliedManager: an existing object that is not tracked stays untracked on update.
        return result
    me = _Entry(manager or "unknown", "Update", api_version, subresource, set())
    reset = tuple(reset_fields)
    # A create that brings no managedFields of its own: its field set may be known already.
    key = _create_key(definition, api_version, reset, result) if old is None and not managed else None
    known = _CREATED_FIELDS.get(key) if key is not None else None
    if known is not None:
        managed = {me.ident: _Entry(me.manager, "Update", api_version, subresource, set(known), now)} if known else {}
    else:
        root = _root(definition)
        # Both sides are only read: they share the zero object's values (and everything else with old and new).
        zero = _shared_zero_object(definition, api_version)
        live = _with_zero(_without_managed_fields(old, copy=False), zero, share=True) if old is not None else zero
        managed = record(root, live, _with_zero(result, zero, share=True), managed, me, now, _frozen_ignored(reset))
        if key is not None:
            mine = managed.get(me.ident)
            remember(_CREATED_FIELDS, key, frozenset(mine.fields) if mine is not None else frozenset(),
                     CONTENT_ENTRIES)
    _store_managed(result, _cap_update_managers(managed))
    return result


def _create_key(definition: str, api_version: str, reset: tuple[str, ...],
                obj: Obj) -> tuple[str, str, tuple[str, ...], bytes] | None:
    """_CREATED_FIELDS's key for a create of `obj`; None when it is not to be remembered (too big, or not
    plain JSON). Only scalar per-create metadata is left out: anything else in those fields has paths below
    them, which are not stripped."""
    meta = obj["metadata"]
    try:
        content = orjson.dumps({**obj, "metadata": {k: v for k, v in meta.items() if k not in _PER_CREATE_METADATA
                                                    or type(v) not in (str, int)}})
    except (TypeError, orjson.JSONEncodeError):
        return None
    return (definition, api_version, reset, content) if len(content) <= CONTENT_BYTES else None
