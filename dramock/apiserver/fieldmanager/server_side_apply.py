"""Server-side apply (application/apply-patch+yaml): checking the config, merging it into the live
object, pruning what the applier no longer applies, conflict detection and the managedFields it leaves."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace
from typing import Any

import yaml

from dramock.errors import APIError, bad_request
from dramock.jsonvalue import clone
from dramock.schemas import defs

from .conflicts import _conflict_error, _Conflicts
from .fieldset import _DecodeError, _iterate, _recursive_difference
from .last_applied import LAST_APPLIED, _allowed_from_last_applied, _build_last_applied
from .managed_fields import STRIPPED, Managed, _decode_managed, _Entry, _store_managed, _without_managed_fields
from .objects import _gvk_string, _ignored, _kind_of, _meta, _with_zero, _zero_object
from .paths import FieldSet, Path
from .schema import _root
from .typed import (
    _changes,
    _drop_nulls,
    _ensure_named_fields,
    _field_set,
    _ignored_trie,
    _merge,
    _remove_items,
    _validate,
)
from .update import _record_changes
from .values import Obj, _same

BEFORE_FIRST_APPLY = "before-first-apply"


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
        managed = _record_changes(root, zero, live_obj, {}, first, now, ignored)

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
    decoded: Any = config
    if isinstance(config, (str, bytes, bytearray)):
        try:
            decoded = yaml.safe_load(config)
        except yaml.YAMLError as e:
            raise bad_request(f"error decoding YAML: {e}") from None
        if decoded is None:
            decoded = {}
    if not isinstance(decoded, dict):
        kind = "array" if isinstance(decoded, list) else "string" if isinstance(decoded, str) else "number"
        raise bad_request("error decoding YAML: error unmarshaling JSON: while decoding JSON: json: "
                          f"cannot unmarshal {kind} into Go value of type map[string]interface {{}}")
    return clone(decoded)


def _apply_once(root: defs.Schema, live: Obj, config: Obj, managed: Managed, me: _Entry, force: bool,
                ignored: FieldSet, now: str) -> tuple[Obj, Managed]:
    """merge.Updater.Apply followed by upstream's strip-meta and timestamp handling."""
    merged = _merge(root, live, config)
    last = managed.get(me.ident)
    managed = {i: replace(e) for i, e in managed.items()}
    applied = _recursive_difference(_field_set(root, config), ignored)
    managed[me.ident] = replace(me, fields=applied, time=last.time if last else None)
    new = _prune(root, merged, managed, last.fields if last else set())

    seen = _changes(root, live, new, _ignored_trie(ignored))
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

    if _same(live, new):
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
