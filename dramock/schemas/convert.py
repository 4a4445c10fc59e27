"""Conversion between a kind's served versions and its stored version.

Objects are stored in one version per storage bucket (v1 for resource.k8s.io, core v1 for events of both
groups); a request in another version is converted on the way in and out.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from dramock.schemas import versions

if TYPE_CHECKING:
    from dramock.registry.kind import Kind

Obj = dict[str, Any]
RESOURCE = "resource.k8s.io"

# events.k8s.io/v1 field  <->  core v1 Event field
_EVENT_RENAMES = (
    ("regarding", "involvedObject"),
    ("note", "message"),
    ("deprecatedSource", "source"),
    ("deprecatedFirstTimestamp", "firstTimestamp"),
    ("deprecatedLastTimestamp", "lastTimestamp"),
    ("deprecatedCount", "count"),
    ("reportingController", "reportingComponent"),
)


def _rename(obj: Obj, pairs: tuple[tuple[str, str], ...]) -> Obj:
    out = dict(obj)
    for src, dst in pairs:
        if src in out:
            out[dst] = out.pop(src)
    return out


def to_storage(obj: Obj, kind: Kind) -> Obj:
    if kind.group == RESOURCE and kind.version != versions.STORAGE_VERSION and not kind.only_version:
        return versions.to_v1(obj, kind.version)
    if kind.group == "events.k8s.io":
        out = _rename(obj, _EVENT_RENAMES)
        out["apiVersion"], out["kind"] = "v1", "Event"
        return out
    return obj


def from_storage(obj: Obj, kind: Kind) -> Obj:
    """The stored object as `kind`'s version sees it. Returns the same dict when nothing changes."""
    if kind.group == RESOURCE and kind.version != versions.STORAGE_VERSION and not kind.only_version:
        return versions.from_v1(obj, kind.version)
    if kind.group == "events.k8s.io":
        out = _rename(obj, tuple((b, a) for a, b in _EVENT_RENAMES))
        out["apiVersion"], out["kind"] = kind.api_version, kind.kind
        return out
    return obj


def needs_conversion(kind: Kind) -> bool:
    return kind.group == "events.k8s.io" or (kind.group == RESOURCE and kind.version != versions.STORAGE_VERSION
                                             and not kind.only_version)
