"""metadata.managedFields entries: the entry model and its identifier, decoding and encoding (upstream's
order) and storing them on an object."""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from dramock.jsonvalue import clone

from .fieldset import _DecodeError, fields_to_set, set_to_fields
from .paths import FieldSet, Path, _f, _path
from .values import Obj, _go_json

# Paths never attributed to a manager. The first twelve are upstream's stripMetaManager set; the
# deletion fields are set outside field management upstream, so they never end up owned either.
STRIPPED: frozenset[Path] = frozenset(
    [(_f("apiVersion"),), (_f("kind"),), (_f("metadata"),)]
    + [_path("metadata." + f) for f in (
        "name", "namespace", "creationTimestamp", "selfLink", "uid", "clusterName", "generation",
        "managedFields", "resourceVersion", "deletionTimestamp", "deletionGracePeriodSeconds")]
)


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
        try:
            return _ident(self.manager, self.operation, self.api_version, self.subresource)
        except TypeError:  # a request's entry may carry unhashable values (a list as manager)
            return _ident.__wrapped__(self.manager, self.operation, self.api_version, self.subresource)

    def describe(self) -> str:
        """printManager, as conflict messages name a manager."""
        s = json.dumps(self.manager, ensure_ascii=False)
        if self.subresource:
            s += f" with subresource {json.dumps(self.subresource, ensure_ascii=False)}"
        if self.operation == "Update":
            s += f" using {self.api_version}"
        return s


@functools.lru_cache(maxsize=1024)
def _ident(manager: str, operation: str, api_version: str, subresource: str) -> str:
    """_Entry.ident, remembered: every write asks it of every entry, and there are few managers."""
    d = {"manager": manager, "operation": operation, "apiVersion": api_version if operation == "Update" else "",
         "subresource": subresource}
    return _go_json({k: v for k, v in d.items() if v})


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
    if len(entries) > 1:
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
