"""core/v1 Namespace (upstream's pkg/registry/core/namespace)."""

from __future__ import annotations

from typing import Any

from dramock.registry.kind import STANDARD_VERBS, Kind, selectable
from dramock.registry.printing import Printer, age, age_col, col, get, name, name_col
from dramock.registry.strategy import Strategy, copy_field
from dramock.schemas.validation.names import validate_dns1123_label

Obj = dict[str, Any]


class NamespaceStrategy(Strategy):
    name_check = staticmethod(validate_dns1123_label)

    def default(self, obj: Obj) -> None:
        # The NamespaceLifecycle controller's label, added by the defaulter upstream.
        labels = obj.setdefault("metadata", {}).setdefault("labels", {})
        if obj["metadata"].get("name"):
            labels["kubernetes.io/metadata.name"] = obj["metadata"]["name"]

    def prepare_for_create(self, obj: Obj) -> None:
        super().prepare_for_create(obj)
        obj["status"] = {"phase": "Active"}
        # Every new namespace carries the finalizer the namespace controller removes on deletion.
        spec = obj.setdefault("spec", {})
        if "kubernetes" not in (spec.get("finalizers") or []):
            spec["finalizers"] = [*(spec.get("finalizers") or []), "kubernetes"]

    def prepare_for_update(self, new: Obj, old: Obj) -> None:
        super().prepare_for_update(new, old)
        # spec.finalizers change only through /finalize.
        copy_field(new, old, "spec")

    def deletion_blocked(self, obj: Obj) -> bool:
        # spec.finalizers ("kubernetes") hold the namespace until its contents are gone.
        return super().deletion_blocked(obj) or bool((obj.get("spec") or {}).get("finalizers"))

    def prepare_for_pending_delete(self, obj: Obj) -> None:
        obj.setdefault("status", {})["phase"] = "Terminating"

    def prepare_for_finalize(self, new: Obj, old: Obj) -> None:
        spec = new.get("spec")
        self.prepare_for_status_update(new, old)
        copy_field(new, old, "status")
        new["spec"] = spec or {}


def _columns() -> list[Obj]:
    return [name_col(), col("Status", "string", "The status of the namespace"), age_col()]


PRINTER = Printer(_columns, lambda o, now: [name(o), get(o, "status", "phase", default=""), age(o, now)])

KIND = Kind("", "v1", "Namespace", "namespaces", False, short_names=("ns",),
            subresources=("status", "finalize"),
            selectable_fields={"status.phase": selectable("status", "phase")},
            return_deleted_object=True,
            # The namespace registry has no DeleteCollection.
            verbs=tuple(v for v in STANDARD_VERBS if v != "deletecollection"),
            strategy=NamespaceStrategy, printer=PRINTER)
