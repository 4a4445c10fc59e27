"""The base strategy: the hooks every kind has, shaped like upstream's pkg/registry/<group>/<resource>/
strategy.go (defaulting, PrepareForCreate, PrepareForUpdate for the main resource and /status, Validate,
ValidateUpdate, warnings, deletion). A kind's module subclasses it where upstream's strategy differs; the
HTTP layer asks the `Registry` for a kind's strategy and never special-cases a kind itself."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import orjson

from dramock.memo import CONTENT_BYTES, CONTENT_ENTRIES, remember
from dramock.registry.gatedfields import GatedFields, drop_disabled_fields
from dramock.schemas.featuregates import FeatureGates
from dramock.schemas.validation.field import Cause, semantic_equal
from dramock.schemas.validation.meta import validate_object_meta, validate_object_meta_update
from dramock.schemas.validation.names import validate_dns1123_subdomain

if TYPE_CHECKING:
    from dramock.registry.kind import Kind

Obj = dict[str, Any]
NamespaceLabels = Callable[[str], "dict[str, str] | None"]


def no_namespaces(_name: str) -> dict[str, str] | None:
    """A namespace-label lookup that finds no namespace (for a registry without a store)."""
    return None


class KnownValid:
    """Content a pure validation already accepted, by its JSON: creates of the same content (a template's
    claims, a workload's objects) are validated once. Only acceptance is remembered, so every error is still
    computed (with the path and value of the request it answers)."""

    def __init__(self) -> None:
        self._seen: dict[bytes, None] = {}

    def check(self, content: Any, validate: Callable[[], list[Cause]]) -> list[Cause]:
        """validate()'s causes, where `validate` depends on nothing but `content` (and fixed settings)."""
        try:
            key = orjson.dumps(content)
        except (TypeError, orjson.JSONEncodeError):
            return validate()
        if key in self._seen:
            return []
        causes = validate()
        if not causes and len(key) <= CONTENT_BYTES:
            remember(self._seen, key, None, CONTENT_ENTRIES)
        return causes


class Strategy:
    """Defaults shared by every kind; subclasses override the hooks upstream overrides."""

    name_check: Callable[[str, str], list[Cause]] = staticmethod(validate_dns1123_subdomain)
    # Fields dropped while their feature gate is off (the kind's dropDisabledFields rules).
    gated_fields: tuple[GatedFields, ...] = ()

    def __init__(self, kind: Kind, gates: FeatureGates, namespace_labels: NamespaceLabels = no_namespaces):
        self.kind = kind
        self.gates = gates
        # Upstream's strategies that need it hold a namespace client (the DRA admin-access rule).
        self.namespace_labels = namespace_labels
        self.known_valid = KnownValid()  # for a kind whose validation of a create is worth remembering

    @property
    def has_status(self) -> bool:
        return "status" in self.kind.subresources

    def drop_disabled_fields(self, new: Obj, old: Obj | None) -> None:
        drop_disabled_fields(self.gated_fields, new, old, self.gates)

    # -- defaulting (runs on every decoded body, like the scheme's defaulters) --
    def default(self, obj: Obj) -> None:
        pass

    # -- create --
    def prepare_for_create(self, obj: Obj) -> None:
        if self.has_status:
            obj.pop("status", None)
        if self.kind.tracks_generation:
            obj["metadata"]["generation"] = 1
        self.drop_disabled_fields(obj, None)

    def validate(self, obj: Obj) -> list[Cause]:
        return self._meta(obj) + self.validate_semantic(obj)

    def _meta(self, obj: Obj) -> list[Cause]:
        return validate_object_meta(obj, self.kind.namespaced, type(self).name_check)

    def validate_semantic(self, obj: Obj) -> list[Cause]:
        """The kind's own rules for a new object (upstream's Validate<Kind> without ObjectMeta)."""
        return []

    def validate_semantic_update(self, new: Obj, old: Obj) -> list[Cause]:
        """The kind's own rules for an update (upstream's Validate<Kind>Update without ObjectMeta)."""
        return self.validate_semantic(new)

    # -- warnings for a valid object (upstream's WarningsOnCreate / WarningsOnUpdate) --
    def warnings_on_create(self, obj: Obj) -> list[str]:
        return []

    def warnings_on_update(self, new: Obj, old: Obj) -> list[str]:
        return self.warnings_on_create(new)

    # -- update of the main resource --
    def prepare_for_update(self, new: Obj, old: Obj) -> None:
        if self.has_status:
            copy_field(new, old, "status")
        if self.kind.tracks_generation:
            old_gen = old.get("metadata", {}).get("generation", 0)
            changed = not semantic_equal(
                {k: v for k, v in new.items() if k not in ("metadata", "status", "apiVersion", "kind")},
                {k: v for k, v in old.items() if k not in ("metadata", "status", "apiVersion", "kind")})
            new["metadata"]["generation"] = old_gen + 1 if changed else old_gen
        self.drop_disabled_fields(new, old)

    def validate_update(self, new: Obj, old: Obj) -> list[Cause]:
        return self._meta(new) + validate_object_meta_update(new, old) + self.validate_semantic_update(new, old)

    def allow_unconditional_update(self) -> bool:
        """Whether a PUT may omit metadata.resourceVersion (upstream's AllowUnconditionalUpdate)."""
        return True

    # -- update through /status: only status (and managedFields) may change --
    def prepare_for_status_update(self, new: Obj, old: Obj) -> None:
        for key in set(new) | set(old):
            if key not in ("status", "metadata", "apiVersion", "kind"):
                copy_field(new, old, key)
        nm, om = new.setdefault("metadata", {}), old.get("metadata", {})
        for f in ("deletionTimestamp", "generation", "selfLink", "labels", "annotations", "finalizers",
                  "ownerReferences"):
            copy_field(nm, om, f)
        self.drop_disabled_fields(new, old)

    def validate_status_update(self, new: Obj, old: Obj) -> list[Cause]:
        return validate_object_meta_update(new, old)

    # -- update through /finalize: only kinds that serve it (namespaces) override this --
    def prepare_for_finalize(self, new: Obj, old: Obj) -> None:
        raise NotImplementedError(f"{self.kind.kind} has no finalize subresource")

    # -- the binding subresource: only kinds that serve it (pods) override this --
    def bind(self, current: Obj, target: str) -> Obj:
        """The object bound to `target` (upstream's BindingREST)."""
        raise NotImplementedError(f"{self.kind.kind} has no binding subresource")

    # -- deletion --
    def deletion_blocked(self, obj: Obj) -> bool:
        """Whether a delete must wait (deletionTimestamp set) instead of removing the object now."""
        return bool((obj.get("metadata") or {}).get("finalizers"))

    def grace_period(self, old: Obj, options: Obj) -> int:
        """Seconds a delete waits for (upstream's CheckGracefulDelete); 0: at once."""
        return 0

    def graceful_deletion_pending(self, obj: Obj) -> bool:
        """Whether the object is still in its graceful deletion (whoever runs it has not confirmed yet)."""
        return False

    def prepare_for_pending_delete(self, obj: Obj) -> None:
        """What a delete that has to wait (finalizers, grace period) changes besides deletionTimestamp."""


def copy_field(dst: Obj, src: Obj, key: str) -> None:
    """dst[key] = src[key], or no key in dst when src has none."""
    if key in src:
        dst[key] = src[key]
    else:
        dst.pop(key, None)
