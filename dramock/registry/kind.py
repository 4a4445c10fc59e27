"""The `Kind` entry: one served kind in one version (names, scope, subresources, field selectors), and the
strategy and printer its own module gives it. The HTTP layer reads everything it needs from these entries."""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from dramock.registry.printing import Printer
from dramock.registry.strategy import Strategy
from dramock.schemas import defs

Obj = dict[str, Any]

STANDARD_VERBS = ("create", "delete", "deletecollection", "get", "list", "patch", "update", "watch")


def selectable(*path: str, default: str = "") -> Callable[[Obj], str]:
    """A field-selector getter: the string value at `path`, as upstream's GetAttrs renders it."""

    def getter(obj: Obj) -> str:
        cur: Any = obj
        for p in path:
            if not isinstance(cur, dict):
                return default
            cur = cur.get(p)
        if cur is None:
            return default
        if isinstance(cur, bool):
            return "true" if cur else "false"
        return str(cur)

    return getter


@dataclass(frozen=True, eq=False)  # one instance per kind: identity is equality
class Kind:
    """A served kind. What is derived from its fields on every request (its apiVersion, storage bucket, schema
    definition) is computed once per instance."""

    group: str
    version: str
    kind: str
    plural: str
    namespaced: bool
    short_names: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()
    # Subresources beyond the object itself: "status", "finalize", "binding".
    subresources: tuple[str, ...] = ()
    # Field selectors beyond metadata.name / metadata.namespace: field path -> getter.
    selectable_fields: dict[str, Callable[[Obj], str]] = field(default_factory=dict)
    # Upstream's registry.Store.ReturnDeletedObject: DELETE answers the object instead of a Status.
    return_deleted_object: bool = False
    # Whether metadata.generation is maintained (set to 1 on create, bumped on spec changes).
    tracks_generation: bool = False
    verbs: tuple[str, ...] = STANDARD_VERBS
    # A kind that exists in one version only (an alpha kind) is stored in that version, not converted to v1.
    only_version: bool = False
    # Served only while this feature gate is on (and its version is turned on by --runtime-config).
    gate: str = ""
    # The kind's write rules (upstream's strategy.go); the server makes one instance per kind.
    strategy: type[Strategy] = Strategy
    # `kubectl get` columns and rows; None: upstream's default table (name, creation time).
    printer: Printer | None = None
    # Storage key prefix when not `<group>/<plural>` (kinds of two groups stored once share one).
    bucket: str = ""
    # (group, version, kind) of the stored object when the kind is stored as another one.
    stored_as: tuple[str, str, str] | None = None

    @property
    def singular(self) -> str:
        return self.kind.lower()

    @functools.cached_property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @functools.cached_property
    def group_resource(self) -> str:
        """`resourceclaims.resource.k8s.io`, or `pods` for the core group."""
        return f"{self.plural}.{self.group}" if self.group else self.plural

    @functools.cached_property
    def definition(self) -> str:
        name = defs.kind_definition(self.group, self.version, self.kind)
        assert name, f"no 1.37 definition for {self.api_version} {self.kind}"
        return name

    @property
    def stored_group_resource(self) -> str:
        """The group-resource of what is stored (quota counts it): `events` for events.k8s.io Events too."""
        group = self.stored_as[0] if self.stored_as else self.group
        return f"{self.plural}.{group}" if group else self.plural

    @property
    def list_kind(self) -> str:
        return self.kind + "List"

    @functools.cached_property
    def storage_bucket(self) -> str:
        """Storage key prefix: `<group>/<plural>`, `<plural>` for the core group, unless the entry names one."""
        if self.bucket:
            return self.bucket
        return f"{self.group}/{self.plural}" if self.group else self.plural

    def field_value(self, obj: Obj, path: str) -> str | None:
        """The value of a selectable field, or None when `path` is not selectable for this kind."""
        if path == "metadata.name":
            return obj.get("metadata", {}).get("name", "")
        if path == "metadata.namespace" and self.namespaced:
            return obj.get("metadata", {}).get("namespace", "")
        getter = self.selectable_fields.get(path)
        return getter(obj) if getter else None
