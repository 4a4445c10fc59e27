"""The REST verbs for every served kind: get, list, create, update, patch, delete, deletecollection.

One write, end to end: decode → convert to the stored version → strategy (defaults, server-set fields)
→ validate → admit → managedFields → storage (conditional, one transaction) → encode.
Watch lives in `watch.py`; routing and content negotiation in `app.py`.
"""

from __future__ import annotations

import base64
import binascii
import builtins
import json
import random
import re
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from multidict import MultiMapping

from dramock import errors, timefmt
from dramock.admission.chain import Admission
from dramock.apiserver import codec, fieldmanager, params, patch, protobuf, selectors
from dramock.jsonvalue import clone, dumps_in_pieces
from dramock.registry import Registry
from dramock.registry.kind import Kind
from dramock.schemas import convert
from dramock.schemas.validation.field import invalid_value
from dramock.storage.revlog import (
    Compacted,
    FutureRevision,
    KeyExists,
    KeyNotFound,
    RevisionConflict,
    RevisionLog,
    StaleRead,
)
from dramock.uids import new_uid

Obj = dict[str, Any]

_NAME_SUFFIX_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"  # upstream's generateName alphabet
# names.SimpleNameGenerator: 5 random characters after a prefix cut to 63 - 5.
_GENERATED_SUFFIX_LENGTH = 5
_MAX_GENERATED_PREFIX = 63 - _GENERATED_SUFFIX_LENGTH
_GENERATE_NAME_ATTEMPTS = 8


def _generate_name(prefix: str) -> str:
    return prefix[:_MAX_GENERATED_PREFIX] + "".join(random.choices(_NAME_SUFFIX_ALPHABET, k=_GENERATED_SUFFIX_LENGTH))


def meta(obj: Obj) -> Obj:
    m = obj.get("metadata")
    if not isinstance(m, dict):
        m = obj["metadata"] = {}
    return m


def stamp_resource_version(obj: Obj, revision: int) -> None:
    meta(obj)["resourceVersion"] = str(revision)


def storage_name(kind: Kind, namespace: str | None, name: str) -> str:
    return f"{namespace}/{name}" if kind.namespaced else name


@dataclass
class Call:
    """One request against a kind: where it points and its query parameters."""

    kind: Kind
    namespace: str | None
    name: str | None
    subresource: str
    query: MultiMapping[str]
    user_agent: str = ""
    warnings: list[str] = field(default_factory=list)
    verb: str = ""  # the request verb, for option errors (CreateOptions, UpdateOptions, ...)
    user: Any = None  # the request's dramock.auth.user.UserInfo (None: the server itself)

    def param(self, key: str, default: str = "") -> str:
        return self.query.get(key, default)

    @property
    def dry_run(self) -> bool:
        return params.check_dry_run(self.verb, self.query.getall("dryRun", []))

    @property
    def field_manager(self) -> str:
        fm = self.param("fieldManager")
        if fm:
            if len(fm) > 128:
                raise errors.bad_request("fieldManager: Too long: may not be more than 128 bytes")
            return fm
        # Upstream derives the default manager from the user agent's program name.
        return (self.user_agent.split("/")[0] or "unknown")[:128]

    @property
    def field_validation(self) -> str:
        return params.check_field_validation(self.verb, self.param("fieldValidation"))


@dataclass
class Result:
    """What a verb produced: an object (or list) to encode, and the HTTP code."""

    body: Any
    code: int = 200
    # The stored JSON of `body` when it is a stored object in the stored version (saves encoding).
    encoded: str | None = None
    # For deletes: the object as deleted (or marked for deletion), whatever `body` answers.
    deleted: Obj | None = None


@dataclass
class PreparedCreate:
    """A create computed up to admission and storage (Rest.prepare_create)."""

    obj: Obj
    generated: bool  # the name came from generateName (a taken one is generated again)
    encode: Callable[[int], str] | None = None  # the stored JSON once stamped with a revision, if prepared


@dataclass
class PreparedUpdate:
    """An update computed up to admission and storage (Rest.prepare_update)."""

    obj: Obj
    old: Obj  # the stored object it was computed from
    key: str
    expected: int | None  # the client's precondition (metadata.resourceVersion)
    seen: int  # the revision of `old`
    encode: Callable[[int], str] | None = None


def _stored_json(obj: Obj) -> Callable[[int], str]:
    """The stored JSON of `obj` for any revision the store will stamp it with, encoded now: stamped with a
    unique marker that is then swapped for the revision. The object is left as it was, and the stamp puts the
    key in the same place: where it is (an update), or last in metadata (a create's object has none)."""
    m = meta(obj)
    had = "resourceVersion" in m
    previous = m.get("resourceVersion")
    marker = "\x00" + uuid.uuid4().hex
    m["resourceVersion"] = marker
    try:
        text = dumps_in_pieces(obj)  # the store's encoding, in pieces that let the event loop thread run
    finally:
        if had:
            m["resourceVersion"] = previous
        else:
            del m["resourceVersion"]
    head, found, tail = text.partition('"resourceVersion":' + json.dumps(marker))
    assert found
    head += '"resourceVersion":"'
    tail = '"' + tail
    return lambda revision: head + str(revision) + tail


class Rest:
    def __init__(self, store: RevisionLog, admission: Admission, registry: Registry):
        self.store = store
        self.admission = admission
        self.registry = registry

    # ---------------------------------------------------------------- reads

    def _too_large(self, requested: int) -> errors.APIError:
        return errors.APIError(504, "Timeout", f"Too large resource version: {requested}, current resource "
                               f"version: {self.store.revision}",
                               {"causes": [{"reason": "ResourceVersionTooLarge",
                                            "message": "Too large resource version"}],
                                "retryAfterSeconds": 1})

    def get(self, call: Call) -> Result:
        kind = call.kind
        key = storage_name(kind, call.namespace, call.name or "")
        obj = self.store.get(kind.storage_bucket, key)
        if obj is None:
            raise errors.not_found(kind.plural, kind.group, call.name or "")
        if convert.needs_conversion(kind):
            return Result(convert.from_storage(obj, kind))
        return Result(obj, encoded=self.store.encoded(kind.storage_bucket, key))

    def list(self, call: Call) -> Result:
        kind = call.kind
        label_reqs = selectors.parse_label_selector(call.param("labelSelector"))
        field_reqs = selectors.parse_field_selector(call.param("fieldSelector"))
        selectors.check_fields(field_reqs, kind.field_value)
        match = selectors.predicate(label_reqs, field_reqs, kind.field_value)
        limit = max(_int_param(call, "limit", 0), 0)  # a negative limit is no limit, as upstream's storage reads it
        token = call.param("continue")
        rv = call.param("resourceVersion")
        rv_match = call.param("resourceVersionMatch")
        params.check_list_options(rv, rv_match, token, params.query_bool(call.query.get("sendInitialEvents")))
        at: int | None = None
        start_after = ""
        if token:
            if rv:
                raise errors.bad_request("specifying resource version is not allowed when using continue")
            at, start_after = _decode_continue(token)
            try:
                self.store.check_revision(at)
            except Compacted:
                raise errors.gone(_CONTINUE_EXPIRED)
            except FutureRevision:
                raise self._too_large(at)
        elif rv and rv_match == "Exact":
            at = _parse_rv(rv)
        elif rv and rv not in ("0",):
            # NotOlderThan (or legacy semantics): the current state is never older than `rv`.
            requested = _parse_rv(rv)
            if requested > self.store.revision:
                raise self._too_large(requested)
        if at is not None:
            try:
                self.store.check_revision(at)
            except Compacted as e:
                raise errors.too_old_resource_version(e.requested, e.oldest)
            except FutureRevision as e:
                raise errors.APIError(504, "Timeout", f"Too large resource version: {e.requested}, "
                                      f"current resource version: {e.current}",
                                      {"causes": [{"reason": "ResourceVersionTooLarge",
                                                   "message": "Too large resource version"}],
                                       "retryAfterSeconds": 1})
        list_rev = at if at is not None else self.store.revision
        prefix = f"{call.namespace}/" if kind.namespaced and call.namespace else ""
        items: list[tuple[str, Obj]] = []
        more = False
        remaining = 0
        past = at if at is not None and at < self.store.revision else None
        if limit and match is None:
            # Every object is on the page or in remainingItemCount: the rest is counted, never read.
            items, remaining = self.store.page(kind.storage_bucket, prefix, start_after, past, limit)
            more = remaining > 0
        else:
            for name, obj in self.store.list(kind.storage_bucket, prefix, start_after, past):
                if match is not None and not match(obj):
                    continue
                if limit and len(items) >= limit:
                    more = True  # a selector's list has no remainingItemCount: one more match is enough
                    break
                items.append((name, obj))
        list_meta: Obj = {"resourceVersion": str(list_rev)}
        if more:
            list_meta["continue"] = _encode_continue(list_rev, items[-1][0])
            if match is None:
                list_meta["remainingItemCount"] = remaining
        # Items of built-in lists carry no apiVersion/kind (upstream converts them without TypeMeta).
        body = {"kind": kind.list_kind, "apiVersion": kind.api_version, "metadata": list_meta,
                "items": [_without_type_meta(convert.from_storage(o, kind)) for _, o in items]}
        return Result(body, encoded=self._encode_list(kind, body, items, at))

    def _encode_list(self, kind: Kind, body: Obj, items: builtins.list[tuple[str, Obj]], at: int | None) -> str | None:
        if convert.needs_conversion(kind) or at is not None:
            return None
        bucket, encoded, type_meta = kind.storage_bucket, self.store.encoded, _TYPE_META_PREFIX.match
        values = []  # each item's stored JSON after its leading apiVersion and kind
        for name, _ in items:
            v = encoded(bucket, name)
            if v is None or (m := type_meta(v)) is None:  # stored in another key order: encode the slow way
                return None
            values.append(v[m.end():])
        head = codec.dumps({k: v for k, v in body.items() if k != "items"})
        return head[:-1] + ',"items":[' + ("{" + ",{".join(values) if values else "") + "]}"

    # ---------------------------------------------------------------- create

    def create(self, call: Call, body: bytes, content_type: str) -> Result:
        return self.commit_create(call, self.prepare_create(call, body, content_type))

    def prepare_create(self, call: Call, body: bytes, content_type: str, encode: bool = False) -> PreparedCreate:
        """A create up to its commit: decoded, defaulted, validated, managedFields tracked. This reads no
        storage but the namespace's labels and works only on the request's own objects, so a big body may be
        prepared off the event loop; `encode` then also prepares the stored JSON there, and JSON is decoded and
        encoded in pieces that let the event loop thread take turns."""
        decoded = codec.decode_object(body, content_type, call.kind, call.field_validation, in_pieces=encode)
        call.warnings.extend(decoded.warnings)
        prepared = self._prepare_create(call, decoded.obj)
        if encode:
            prepared.encode = _stored_json(prepared.obj)
        return prepared

    def create_object(self, call: Call, obj: Obj, manager_op: str = "Update") -> Result:
        """Create from an already decoded object (also used by server-side apply of a new object)."""
        return self.commit_create(call, self._prepare_create(call, obj, manager_op))

    def _prepare_create(self, call: Call, obj: Obj, manager_op: str = "Update") -> PreparedCreate:
        kind = call.kind
        strategy = self.registry.strategy(kind)
        obj = convert.to_storage(obj, kind)
        m = meta(obj)
        self._check_namespace(call, m)
        generated = not m.get("name") and bool(m.get("generateName"))
        if generated:
            m["name"] = _generate_name(m["generateName"])
        for f in ("resourceVersion", "deletionTimestamp", "deletionGracePeriodSeconds", "selfLink",
                  "generation"):
            m.pop(f, None)
        m["uid"] = new_uid()
        m["creationTimestamp"] = timefmt.now()
        strategy.default(obj)
        strategy.prepare_for_create(obj)
        causes = strategy.validate(obj)
        if causes:
            raise errors.invalid(kind.kind, kind.group, m.get("name") or "", causes)
        call.warnings.extend(strategy.warnings_on_create(obj))
        if manager_op == "Update":
            obj = fieldmanager.track_update(None, obj, manager=call.field_manager, api_version=kind.api_version,
                                            definition=kind.definition, subresource=call.subresource,
                                            now=timefmt.now(), reset_fields=_reset_fields(call))
        return PreparedCreate(obj, generated)

    def commit_create(self, call: Call, prepared: PreparedCreate) -> Result:
        """Admit and store a prepared create (on the event loop: admission and the write are one step)."""
        kind = call.kind
        obj, m = prepared.obj, meta(prepared.obj)
        # Prepared JSON is the object's as prepared: not usable when admission may still change it.
        encode = prepared.encode if not self.admission.changes_object(call) else None
        # A generated name that is taken is generated again, as upstream's store does (RetryGenerateName).
        attempts = _GENERATE_NAME_ATTEMPTS if prepared.generated else 1
        for attempt in range(attempts):
            try:
                # Admission (the quota charge) and the write commit together, also across API server replicas.
                with self.store.atomic():
                    self.admission.admit_create(call, obj)
                    if call.dry_run:
                        return Result(convert.from_storage(obj, kind), 201)
                    key = storage_name(kind, call.namespace, m["name"])
                    stored = self.store.create(kind.storage_bucket, key, obj, encode)
                return self._stored_result(kind, key, stored, 201, encode is not None)
            except KeyExists:
                if attempt == attempts - 1:
                    raise errors.already_exists(kind.plural, kind.group, m["name"]) from None
                m["name"] = _generate_name(m["generateName"])
                encode = None  # the prepared JSON has the name that was taken
        raise AssertionError("unreachable")

    def _check_namespace(self, call: Call, m: Obj) -> None:
        kind = call.kind
        if kind.namespaced:
            ns = m.get("namespace")
            if ns and ns != call.namespace:
                raise errors.bad_request("the namespace of the provided object does not match the namespace "
                                         "sent on the request")
            m["namespace"] = call.namespace
        elif "namespace" in m and not m["namespace"]:
            del m["namespace"]

    # ---------------------------------------------------------------- update / patch

    def update(self, call: Call, body: bytes, content_type: str) -> Result:
        prepared = self.prepare_update(call, body, content_type)
        return prepared if isinstance(prepared, Result) else self.commit_update(call, prepared)

    def prepare_update(self, call: Call, body: bytes, content_type: str,
                       encode: bool = False) -> Result | PreparedUpdate:
        """An update up to its commit (see prepare_create), computed from the stored object as it is now; a
        Result when there is nothing to write. commit_update finds out whether the object changed meanwhile."""
        kind = call.kind
        definition = kind.definition
        decoded = codec.decode_object(body, content_type, kind, call.field_validation, definition, in_pieces=encode)
        call.warnings.extend(decoded.warnings)
        obj = decoded.obj
        name = meta(obj).get("name")
        if name != call.name:
            raise errors.bad_request(f"the name of the object ({name}) does not match the name on the URL "
                                     f"({call.name})" if name else "name is required")
        if not meta(obj).get("resourceVersion") and not self.registry.strategy(kind).allow_unconditional_update():
            raise errors.invalid(kind.kind, kind.group, name or "", [invalid_value(
                "metadata.resourceVersion", "", "must be specified for an update")])
        prepared = self._prepare_update(call, obj)
        if encode:
            if isinstance(prepared, PreparedUpdate):
                prepared.encode = _stored_json(prepared.obj)
            else:
                prepared.encoded = None  # read off the event loop: the object answered is `old`, encode that one
        return prepared

    def update_object(self, call: Call, obj: Obj, apply_manager: str | None = None) -> Result:
        """Replace the stored object with `obj` (in the request's version), as PUT does."""
        prepared = self._prepare_update(call, obj, apply_manager)
        return prepared if isinstance(prepared, Result) else self.commit_update(call, prepared)

    def _prepare_update(self, call: Call, obj: Obj, apply_manager: str | None = None) -> Result | PreparedUpdate:
        kind = call.kind
        strategy = self.registry.strategy(kind)
        key = storage_name(kind, call.namespace, call.name or "")
        seen = self.store.mod_revision(kind.storage_bucket, key)
        old = self.store.get(kind.storage_bucket, key)
        if old is None:
            raise errors.not_found(kind.plural, kind.group, call.name or "")
        if self.store.mod_revision(kind.storage_bucket, key) != seen:  # written meanwhile (off the event loop)
            raise StaleRead(self.store.mod_revision(kind.storage_bucket, key))
        obj = convert.to_storage(obj, kind)
        m, om = meta(obj), old["metadata"]
        self._check_namespace(call, m)
        expected = None
        if m.get("resourceVersion"):
            expected = _parse_rv(m["resourceVersion"], conflict_on_bad=(kind, call.name or ""))
            if expected != self.store.mod_revision(kind.storage_bucket, key):
                raise errors.conflict(kind.plural, kind.group, call.name or "", errors.STALE_OBJECT)
        # Server-owned metadata always comes from the stored object.
        for f in ("uid", "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds",
                  "generation", "selfLink"):
            if f in om:
                m[f] = om[f]
            else:
                m.pop(f, None)
        if "managedFields" not in m and "managedFields" in om:
            m["managedFields"] = om["managedFields"]
        strategy.default(obj)
        if call.subresource == "status":
            strategy.prepare_for_status_update(obj, old)
            causes = strategy.validate_status_update(obj, old)
        elif call.subresource == "finalize":
            strategy.prepare_for_finalize(obj, old)
            causes = strategy.validate_status_update(obj, old)
        else:
            strategy.prepare_for_update(obj, old)
            causes = strategy.validate_update(obj, old)
        if causes:
            raise errors.invalid(kind.kind, kind.group, call.name or "", causes)
        if not call.subresource:
            call.warnings.extend(strategy.warnings_on_update(obj, old))
        m["resourceVersion"] = om.get("resourceVersion", "")
        if _same_object(obj, old):
            # Nothing changed: no new revision, no managedFields timestamp bump (kubectl "unchanged").
            return Result(convert.from_storage(old, kind), encoded=self.store.encoded(kind.storage_bucket, key))
        if apply_manager is None:
            obj = fieldmanager.track_update(old, obj, manager=call.field_manager, api_version=kind.api_version,
                                            definition=kind.definition, subresource=call.subresource,
                                            now=timefmt.now(), reset_fields=_reset_fields(call))
        return PreparedUpdate(obj, old, key, expected, seen)

    def commit_update(self, call: Call, prepared: PreparedUpdate) -> Result:
        """Admit and store a prepared update. One prepared off the event loop may find the stored object changed
        since: StaleRead, and the caller computes it again."""
        kind = call.kind
        strategy = self.registry.strategy(kind)
        obj, old, key, expected = prepared.obj, prepared.old, prepared.key, prepared.expected
        om = old["metadata"]
        if self.store.mod_revision(kind.storage_bucket, key) != prepared.seen:
            raise StaleRead(self.store.mod_revision(kind.storage_bucket, key))
        # Admission (the quota charge) and the write commit together, also across API server replicas.
        with self.store.atomic():
            self.admission.admit_update(call, obj, old)
            if call.dry_run:
                return Result(convert.from_storage(obj, kind))
            if om.get("deletionTimestamp") and not strategy.deletion_blocked(obj) \
                    and not strategy.graceful_deletion_pending(obj):
                # The last finalizer is gone from an object being deleted: it goes now.
                stored = self.store.delete(kind.storage_bucket, key)
                return Result(convert.from_storage(stored, kind))
            encode = prepared.encode if not self.admission.changes_object(call) else None
            try:
                stored = self.store.update(kind.storage_bucket, key, obj, expected, encode)
            except StaleRead:
                raise  # not the client's precondition: the request is computed again (APIServer._dispatch)
            except RevisionConflict:
                raise errors.conflict(kind.plural, kind.group, call.name or "", errors.STALE_OBJECT)
            except KeyNotFound:
                raise errors.not_found(kind.plural, kind.group, call.name or "")
        return self._stored_result(kind, key, stored, 200, encode is not None)

    def _stored_result(self, kind: Kind, key: str, stored: Obj, code: int, prepared_json: bool) -> Result:
        result = Result(convert.from_storage(stored, kind), code)
        if prepared_json and not convert.needs_conversion(kind) and meta(stored).get(
                "resourceVersion") == str(self.store.mod_revision(kind.storage_bucket, key)):
            result.encoded = self.store.encoded(kind.storage_bucket, key)  # the answer is the stored JSON
        return result

    def patch(self, call: Call, body: bytes, content_type: str) -> Result:
        kind = call.kind
        mt = codec.media_type(content_type)
        key = storage_name(kind, call.namespace, call.name or "")
        old = self.store.get(kind.storage_bucket, key)
        if mt == codec.APPLY_PATCH:
            return self._apply(call, body, content_type, old)
        if mt not in (codec.JSON_PATCH, codec.MERGE_PATCH, codec.STRATEGIC_PATCH):
            raise errors.unsupported_media_type(content_type)
        if old is None:
            raise errors.not_found(kind.plural, kind.group, call.name or "")
        doc, _ = codec.parse_document(body, codec.JSON)
        current = clone(convert.from_storage(old, kind))
        if mt == codec.JSON_PATCH:
            if not isinstance(doc, list):
                raise errors.bad_request("json: cannot unmarshal object into Go value of type jsonpatch.Patch")
            patched = patch.apply_json_patch(current, doc)
        elif mt == codec.MERGE_PATCH:
            patched = patch.apply_merge_patch(current, doc)
        else:
            patched = patch.apply_strategic_merge_patch(current, doc, kind.definition)
        decoded = codec.check_object(patched, [], kind, call.field_validation)
        call.warnings.extend(decoded.warnings)
        obj = decoded.obj
        if meta(obj).get("name") != call.name:
            raise errors.bad_request(f"the name of the object ({meta(obj).get('name')}) does not match the "
                                     f"name on the URL ({call.name})")
        # A patch carries a precondition only if it sets resourceVersion itself.
        if meta(obj).get("resourceVersion") == old["metadata"].get("resourceVersion"):
            meta(obj).pop("resourceVersion", None)
        return self.update_object(call, obj)

    def _apply(self, call: Call, body: bytes, content_type: str, old: Obj | None) -> Result:
        kind = call.kind
        if not call.param("fieldManager"):
            raise errors.bad_request("PatchOptions.meta.k8s.io \"\" is invalid: fieldManager: Required value: "
                                     "is required for apply patch")
        force = call.param("force") in ("true", "1")
        config, dups = codec.parse_document(body, codec.APPLY_PATCH)
        # Apply configs must carry their own apiVersion and kind (fieldmanager.apply refuses them otherwise).
        checked = codec.check_object(config, dups, kind, call.field_validation, fill_type_meta=False)
        call.warnings.extend(checked.warnings)
        config = checked.obj
        live = clone(convert.from_storage(old, kind)) if old is not None else None
        merged = fieldmanager.apply(live, config, manager=call.field_manager, force=force,
                                    api_version=kind.api_version, definition=kind.definition,
                                    subresource=call.subresource, now=timefmt.now(),
                                    reset_fields=_reset_fields(call), name=call.name)
        if old is None:
            if meta(merged).get("name") != call.name:
                raise errors.bad_request(f"the name of the object ({meta(merged).get('name')}) does not match "
                                         f"the name on the URL ({call.name})")
            return self.create_object(call, merged, manager_op="Apply")
        meta(merged).pop("resourceVersion", None)
        return self.update_object(call, merged, apply_manager=call.field_manager)

    # ---------------------------------------------------------------- delete

    def delete(self, call: Call, body: bytes, content_type: str) -> Result:
        kind = call.kind
        options = self._delete_options(call, body, content_type)
        key = storage_name(kind, call.namespace, call.name or "")
        old = self.store.get(kind.storage_bucket, key)
        if old is None:
            raise errors.not_found(kind.plural, kind.group, call.name or "")
        return self._delete_one(call, key, old, options)

    def _delete_one(self, call: Call, key: str, old: Obj, options: Obj) -> Result:
        kind = call.kind
        om = old["metadata"]
        pre = options.get("preconditions") or {}
        if pre.get("uid") and pre["uid"] != om.get("uid"):
            raise errors.conflict(kind.plural, kind.group, om["name"],
                                  f"Precondition failed: UID in precondition: {pre['uid']}, UID in object "
                                  f"meta: {om.get('uid')}")
        if pre.get("resourceVersion") and pre["resourceVersion"] != om.get("resourceVersion"):
            raise errors.conflict(kind.plural, kind.group, om["name"],
                                  f"Precondition failed: ResourceVersion in precondition: "
                                  f"{pre['resourceVersion']}, ResourceVersion in object meta: "
                                  f"{om.get('resourceVersion')}")
        self.admission.admit_delete(call, old)
        grace = self.registry.strategy(kind).grace_period(old, options)
        # Upstream's store: while a graceful deletion is pending (and not shortened), DeleteOptions cannot change
        # the finalizers; otherwise the propagation policy sets `orphan` / `foregroundDeletion` for the GC.
        current_grace = om.get("deletionGracePeriodSeconds") or 0
        graceful_pending = bool(om.get("deletionTimestamp")) and current_grace > 0 and grace >= current_grace
        gc_finalizers = None if graceful_pending else _gc_finalizers(om.get("finalizers") or [], options)
        pending = self.registry.strategy(kind).deletion_blocked(old) or grace > 0 or gc_finalizers is not None
        if pending:
            obj = clone(old)
            m = obj["metadata"]
            if gc_finalizers is not None:
                if gc_finalizers:
                    m["finalizers"] = gc_finalizers
                else:
                    m.pop("finalizers", None)
                if not self.registry.strategy(kind).deletion_blocked(obj) and grace == 0:
                    # Only GC finalizers were dropped (e.g. Background after Orphan): nothing holds it any more.
                    if call.dry_run:
                        return self._deleted_result(kind, old)
                    return self._deleted_result(kind, self.store.delete(kind.storage_bucket, key))
            if not m.get("deletionTimestamp"):
                m["deletionTimestamp"] = timefmt.format_time(datetime.now(UTC) + timedelta(seconds=grace))
                m["deletionGracePeriodSeconds"] = grace
            elif grace < (m.get("deletionGracePeriodSeconds") or 0):
                # A shorter grace period moves the deletion time back by the difference (upstream's BeforeDelete).
                when = datetime.strptime(m["deletionTimestamp"], "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
                when += timedelta(seconds=grace - m["deletionGracePeriodSeconds"])
                m["deletionTimestamp"] = timefmt.format_time(when)
                m["deletionGracePeriodSeconds"] = grace
            self.registry.strategy(kind).prepare_for_pending_delete(obj)
            # Upstream answers 200 with the object still present; 202 only for the deprecated
            # orphanDependents=false (kept for old clients).
            status = 202 if options.get("orphanDependents") is False else 200
            if obj != old and not call.dry_run:
                obj = self.store.update(kind.storage_bucket, key, obj)
            body = convert.from_storage(obj, kind)
            return Result(body, status, deleted=body)
        if call.dry_run:
            return self._deleted_result(kind, old)
        stored = self.store.delete(kind.storage_bucket, key)
        return self._deleted_result(kind, stored)

    def _deleted_result(self, kind: Kind, obj: Obj) -> Result:
        deleted = convert.from_storage(obj, kind)
        if kind.return_deleted_object:
            return Result(deleted, deleted=deleted)
        m = obj["metadata"]
        details = {"name": m["name"], "kind": kind.plural, "uid": m.get("uid")}
        if kind.group:
            details = {"name": m["name"], "group": kind.group, "kind": kind.plural, "uid": m.get("uid")}
        return Result({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success",
                       "details": details}, deleted=deleted)

    def _delete_options(self, call: Call, body: bytes, content_type: str) -> Obj:
        options: Obj = {}
        if body and body.strip():
            mt = codec.media_type(content_type)
            if mt == codec.PROTOBUF:
                doc = protobuf.decode(body)
            else:
                doc, _ = codec.parse_document(body, content_type or codec.JSON)
            if doc is not None:
                codec.check_types(doc, DELETE_OPTIONS, "DeleteOptions", "v1")
                options = doc
        if "gracePeriodSeconds" in call.query:
            options["gracePeriodSeconds"] = _int_param(call, "gracePeriodSeconds", 0)
        if "propagationPolicy" in call.query:
            options["propagationPolicy"] = call.param("propagationPolicy")
        params.check_propagation_policy(options)
        if options.get("dryRun"):
            call.query = _with_dry_run(call.query)
        return options

    def delete_collection(self, call: Call, body: bytes, content_type: str) -> Result:
        kind = call.kind
        options = self._delete_options(call, body, content_type)
        listed = self.list(call)
        deleted = []
        for item in listed.body["items"]:
            name = item["metadata"]["name"]
            key = storage_name(kind, item["metadata"].get("namespace"), name)
            old = self.store.get(kind.storage_bucket, key)
            if old is None:
                continue
            try:
                deleted.append(self._delete_one(call, key, old, options).deleted)
            except errors.APIError:
                continue
        return Result({"kind": kind.list_kind, "apiVersion": kind.api_version,
                       "metadata": {"resourceVersion": str(self.store.revision)}, "items": deleted})


# ---------------------------------------------------------------- helpers

ORPHAN_FINALIZER = "orphan"
FOREGROUND_FINALIZER = "foregroundDeletion"


def _gc_finalizers(finalizers: list[str], options: Obj) -> list[str] | None:
    """The finalizers a delete leaves for the garbage collector, or None when they stay as they are.

    As upstream's deletionFinalizersForGarbageCollection: an explicit orphanDependents or propagationPolicy
    decides; otherwise an `orphan` / `foregroundDeletion` finalizer already present stays in force.
    """
    orphan = foreground = False
    policy = options.get("propagationPolicy")
    if options.get("orphanDependents") is not None:
        orphan = bool(options["orphanDependents"])
    elif policy:
        orphan, foreground = policy == "Orphan", policy == "Foreground"
    else:
        for f in finalizers:
            if f == ORPHAN_FINALIZER:
                orphan = True
                break
            if f == FOREGROUND_FINALIZER:
                foreground = True
                break
    new = [f for f in finalizers if f not in (ORPHAN_FINALIZER, FOREGROUND_FINALIZER)]
    if orphan:
        new.append(ORPHAN_FINALIZER)
    if foreground:
        new.append(FOREGROUND_FINALIZER)
    return None if set(new) == set(finalizers) else new


def _reset_fields(call: Call) -> list[str]:
    """Fields the strategy resets for this endpoint (upstream's GetResetFields): not the writer's to own."""
    if "status" not in call.kind.subresources:
        return []
    return ["spec"] if call.subresource == "status" else ["status"]


def _same_object(new: Obj, old: Obj) -> bool:
    """Equal apart from managedFields (whose timestamps only a real change may bump)."""
    if new.keys() != old.keys():
        return False
    for k in new:
        if k == "metadata":
            nm = {a: b for a, b in new[k].items() if a != "managedFields"}
            omd = {a: b for a, b in old[k].items() if a != "managedFields"}
            if nm != omd:
                return False
        elif new[k] != old[k]:
            return False
    return True


_TYPE_META_PREFIX = re.compile(r'^\{"apiVersion":"[^"\\]*","kind":"[^"\\]*",')


def _without_type_meta(obj: Obj) -> Obj:
    out = obj.copy()  # a C-level copy, then two removals: cheaper than filtering every key in Python
    out.pop("apiVersion", None)
    out.pop("kind", None)
    return out


def _with_dry_run(query: MultiMapping[str]) -> MultiMapping[str]:
    from multidict import MultiDict

    q = MultiDict(query)
    q["dryRun"] = "All"
    return q


DELETE_OPTIONS = "io.k8s.apimachinery.pkg.apis.meta.v1.DeleteOptions"


def _int_param(call: Call, key: str, default: int) -> int:
    raw = call.param(key)
    if raw == "":
        return default
    return params.query_int(raw, key)


def _parse_rv(raw: str, conflict_on_bad: tuple[Kind, str] | None = None) -> int:
    try:
        value = int(raw)
        if value < 0:
            raise ValueError
        return value
    except ValueError:
        if conflict_on_bad:
            kind, name = conflict_on_bad
            raise errors.invalid(kind.kind, kind.group, name, [invalid_value(
                "metadata.resourceVersion", raw, "must be specified for an update")])
        raise errors.bad_request(f'invalid resource version "{raw}"') from None


_CONTINUE_EXPIRED = (
    "The provided continue parameter is too old to display a consistent list result. You can start a new "
    "list without the continue parameter, or use the continue token in this response to retrieve the "
    "remainder of the results. Continuing with the provided token results in an inconsistent list - objects "
    "that were created, modified, or deleted between the time the first chunk was returned and now may show "
    "up in the list.")


def _encode_continue(revision: int, last_name: str) -> str:
    raw = json.dumps({"v": "meta.k8s.io/v1", "rv": revision, "start": last_name + "\x00"},
                     separators=(",", ":"))
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


def _decode_continue(token: str) -> tuple[int, str]:
    try:
        raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
        data = json.loads(raw)
        # The token is {"v": "meta.k8s.io/v1", "rv": <int64>, "start": <key>}; anything else is not one of ours.
        if not isinstance(data, dict) or data.get("v") != "meta.k8s.io/v1":
            raise ValueError
        rv, start = data.get("rv"), data.get("start")
        if not isinstance(rv, int) or isinstance(rv, bool) or not 0 < rv < 2**63 or not isinstance(start, str) \
                or not start:
            raise ValueError
        return rv, start[:-1] if start.endswith("\x00") else start
    except (ValueError, KeyError, TypeError, binascii.Error):
        raise errors.bad_request("continue key is not valid: incorrect encoded start resourceVersion "
                                 "(version meta.k8s.io/v1)") from None
