"""Pieces the resource.k8s.io kinds share: device-request and taint defaulting, the claim spec's gated
fields (upstream's resourceclaimspec.DropDisabledFields, used by claims and templates), and the DRA
admin-access rule (upstream's AuthorizedForAdmin: only in namespaces labelled for it)."""

from __future__ import annotations

from typing import Any

from dramock import timefmt
from dramock.registry.gatedfields import GatedFields
from dramock.registry.printing import age_col, name_col
from dramock.registry.strategy import Strategy
from dramock.schemas.validation.field import Cause, forbidden

Obj = dict[str, Any]
GROUP = "resource.k8s.io"
DEFS = "io.k8s.api.resource.v1."
ADMIN_ACCESS_LABEL = "resource.kubernetes.io/admin-access"
# Binding conditions need both gates (DRAResourceClaimDeviceStatus is locked on in 1.37).
BINDING_GATES = ("DRADeviceBindingConditions", "DRAResourceClaimDeviceStatus")

# ---------------------------------------------------------------- defaulting


def default_claim_requests(devices: Obj | None) -> None:
    for req in (devices or {}).get("requests") or []:
        exact = req.get("exactly")
        if isinstance(exact, dict):
            _device_request(exact)
        for sub in req.get("firstAvailable") or []:
            if isinstance(sub, dict):
                _device_request(sub)


def _device_request(req: Obj) -> None:
    mode = req.setdefault("allocationMode", "ExactCount")
    if mode == "ExactCount":
        req.setdefault("count", 1)
    for tol in req.get("tolerations") or []:
        if isinstance(tol, dict):
            tol.setdefault("operator", "Equal")


def default_taint(taint: Any) -> None:
    # "Added automatically during create or update if not set", at the wire's one-second resolution.
    if isinstance(taint, dict) and not taint.get("timeAdded"):
        taint["timeAdded"] = timefmt.now()


# ---------------------------------------------------------------- gated fields of a claim spec


def claim_spec_gated_fields(prefix: str, kind: str, source: str) -> list[GatedFields]:
    """resourceclaimspec.DropDisabledFields, shared by ResourceClaim (spec) and ResourceClaimTemplate
    (spec.spec). Whether a feature is in use is judged on the old spec alone."""
    req = f"{prefix}.devices.requests[*]"
    root = DEFS + kind
    return [
        GatedFields(("DRAPrioritizedList",), kind, (f"{req}.firstAvailable",),
                    upstream=f"{source} dropDisabledDRAPrioritizedListFields", root=root),
        GatedFields(("DRADeviceTaints",), kind,
                    (f"{req}.exactly.tolerations", f"{req}.firstAvailable[*].tolerations"),
                    upstream=f"{source} dropDisabledDRADeviceTaintsFields", root=root),
        GatedFields(("DRAAdminAccess",), kind, (f"{req}.exactly.adminAccess",),
                    upstream=f"{source} dropDisabledDRAAdminAccessFields", root=root),
        GatedFields(("DRAConsumableCapacity",), kind,
                    (f"{prefix}.devices.constraints[*].distinctAttribute", f"{req}.exactly.capacity",
                     f"{req}.firstAvailable[*].capacity"),
                    upstream=f"{source} dropDisabledDRAResourceClaimConsumableCapacityFields", root=root),
        GatedFields(("DRADerivedAttributes",), kind,
                    (f"{req}.exactly.derivedAttributes", f"{req}.firstAvailable[*].derivedAttributes"),
                    upstream=f"{source} dropDisabledDRADerivedAttributesFields", root=root),
    ]


# ---------------------------------------------------------------- admin access


def admin_access(strategy: Strategy, obj: Obj, requests: Any) -> list[Cause]:
    """A request asking for adminAccess needs the namespace label."""
    for i, req in enumerate(requests or []):
        if isinstance(req, dict) and ((req.get("exactly") or {}).get("adminAccess") is True):
            # Upstream reports the request's path without `exactly`.
            return admin_namespace_check(strategy, obj, f"spec.devices.requests[{i}].adminAccess")
    return []


def admin_namespace_check(strategy: Strategy, obj: Obj, path: str) -> list[Cause]:
    labels = strategy.namespace_labels((obj.get("metadata") or {}).get("namespace") or "") or {}
    if labels.get(ADMIN_ACCESS_LABEL) != "true":
        return [forbidden(path, f"admin access to devices requires the `{ADMIN_ACCESS_LABEL}: true` label on "
                                "the containing namespace")]
    return []


# ---------------------------------------------------------------- printing


def name_and_age_columns() -> list[Obj]:
    return [name_col(), age_col()]
