"""resource.k8s.io ResourceClaim (upstream's pkg/registry/resource/resourceclaim), and its quota
evaluator (upstream's pkg/quota/v1/evaluator/core/resource_claims.go)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from dramock.registry import quota as q
from dramock.registry.core.pod import pod_requests
from dramock.registry.gatedfields import GatedFields
from dramock.registry.kind import Kind
from dramock.registry.printing import Printer, age, age_col, col, md, name, name_col
from dramock.registry.resource.common import (
    BINDING_GATES,
    DEFS,
    GROUP,
    admin_access,
    admin_namespace_check,
    claim_spec_gated_fields,
    default_claim_requests,
)
from dramock.registry.strategy import Strategy
from dramock.schemas import validation as semantic
from dramock.schemas.quantity import Quantity
from dramock.schemas.validation.field import Cause

Obj = dict[str, Any]
_ROOT = DEFS + "ResourceClaim"
_RESULTS = "status.allocation.devices.results[*]"

_SPEC = claim_spec_gated_fields("spec", "ResourceClaim", "resourceclaimspec")


def _spec_paths(gate: str) -> tuple[str, ...]:
    return next(row.paths for row in _SPEC if row.gates == (gate,))


GATED_FIELDS: tuple[GatedFields, ...] = (
    *_SPEC,
    # pkg/registry/resource/resourceclaim/strategy.go: a status field counts as in use when the old claim
    # used the feature in its status or its spec.
    GatedFields(("DRAAdminAccess",), "ResourceClaim", (f"{_RESULTS}.adminAccess",),
                in_use=(f"{_RESULTS}.adminAccess", *_spec_paths("DRAAdminAccess")),
                upstream="resourceclaim dropDisabledDRAAdminAccessFields (status)", root=_ROOT),
    GatedFields(("DRADeviceTaints",), "ResourceClaim", (f"{_RESULTS}.tolerations",),
                in_use=(f"{_RESULTS}.tolerations", *_spec_paths("DRADeviceTaints")),
                upstream="resourceclaim dropDisabledDRADeviceTaintsFields (status)", root=_ROOT),
    GatedFields(("DRAConsumableCapacity",), "ResourceClaim",
                (f"{_RESULTS}.shareID", f"{_RESULTS}.consumedCapacity", "status.devices[*].shareID"),
                in_use=(f"{_RESULTS}.shareID", f"{_RESULTS}.consumedCapacity", "status.devices[*].shareID",
                        *_spec_paths("DRAConsumableCapacity")),
                upstream="resourceclaim dropDisabledDRAConsumableCapacityFields (status)", root=_ROOT),
    GatedFields(("DRAResourceClaimDeviceStatus",), "ResourceClaim", ("status.devices",),
                upstream="resourceclaim dropDisabledDRAResourceClaimDeviceStatusFields", root=_ROOT),
    GatedFields(BINDING_GATES, "ResourceClaim",
                (f"{_RESULTS}.bindingConditions", f"{_RESULTS}.bindingFailureConditions",
                 "status.allocation.allocationTimestamp"),
                upstream="resourceclaim dropDisabledDRADeviceBindingConditionsFields", root=_ROOT),
    GatedFields(("DRAOptionalNodeOperations",), "ResourceClaim", (f"{_RESULTS}.skipNodeOperations",),
                upstream="resourceclaim (status skipNodeOperations, KEP-5945)", root=_ROOT),
)


class ResourceClaimStrategy(Strategy):
    gated_fields = GATED_FIELDS

    def default(self, obj: Obj) -> None:
        default_claim_requests((obj.get("spec") or {}).get("devices"))

    def validate_semantic(self, obj: Obj) -> list[Cause]:
        requests = ((obj.get("spec") or {}).get("devices") or {}).get("requests")
        return admin_access(self, obj, requests) + self.known_valid.check(
            obj.get("spec"), lambda: semantic.validate_resource_claim(obj, gates=self.gates))

    def validate_semantic_update(self, new: Obj, old: Obj) -> list[Cause]:
        # The spec is immutable, so the admin-access check of create need not run again (as upstream).
        return semantic.validate_resource_claim_update(new, old, gates=self.gates)

    def prepare_for_status_update(self, new: Obj, old: Obj) -> None:
        super().prepare_for_status_update(new, old)
        _drop_deallocated_status_devices(new, old)

    def validate_status_update(self, new: Obj, old: Obj) -> list[Cause]:
        return (super().validate_status_update(new, old) + self._admin_access_status(new, old)
                + semantic.validate_resource_claim_status_update(new, old, gates=self.gates))

    def _admin_access_status(self, new: Obj, old: Obj) -> list[Cause]:
        """A newly written allocation granting adminAccess needs the namespace label too."""
        def granted(claim: Obj) -> int | None:
            results = (((claim.get("status") or {}).get("allocation") or {}).get("devices") or {}).get("results")
            return next((i for i, r in enumerate(results or []) if isinstance(r, dict) and r.get("adminAccess")),
                        None)
        if granted(old) is not None or (i := granted(new)) is None:
            return []
        return admin_namespace_check(self, new, f"status.allocation.devices.results[{i}].adminAccess")


def _drop_deallocated_status_devices(new: Obj, old: Obj) -> None:
    """status.devices entries of devices that were allocated before and are not any more go away."""
    def allocated(claim: Obj) -> set[tuple[Any, Any, Any]]:
        results = (((claim.get("status") or {}).get("allocation") or {}).get("devices") or {}).get("results") or []
        return {(r.get("driver"), r.get("pool"), r.get("device")) for r in results if isinstance(r, dict)}

    status = new.get("status")
    if not isinstance(status, dict) or not status.get("devices"):
        return
    gone = allocated(old) - allocated(new)
    kept = [d for d in status["devices"]
            if not isinstance(d, dict) or (d.get("driver"), d.get("pool"), d.get("device")) not in gone]
    if kept:
        status["devices"] = kept
    else:
        del status["devices"]


# ---------------------------------------------------------------- printing


def _columns() -> list[Obj]:
    return [
        name_col(),
        col("State", "string", "A summary of the current state (allocated, pending, reserved, etc.)."),
        age_col(),
    ]


def _claim_state(obj: Obj) -> str:
    states = []
    deleted = bool(md(obj).get("deletionTimestamp"))
    if deleted:
        states.append("deleted")
    status = obj.get("status") or {}
    if status.get("allocation") is None:
        if not deleted:
            states.append("pending")
    else:
        states.append("allocated")
        if status.get("reservedFor"):
            states.append("reserved")
    return ",".join(states)


PRINTER = Printer(_columns, lambda o, now: [name(o), _claim_state(o), age(o, now)])

# ---------------------------------------------------------------- quota

# Upstream's names (k8s.io/api core/v1 and resource/v1 constants).
CLAIM_COUNT = "count/resourceclaims.resource.k8s.io"
DEVICES_SUFFIX = ".deviceclass.resource.k8s.io/devices"  # ResourceClaimsPerClass
EXTENDED_RESOURCE_CLAIM_ANNOTATION = "resource.kubernetes.io/extended-resource-claim"
ALLOCATION_RESULTS_MAX_SIZE = 32


def claim_devices_by_class(claim: Obj) -> dict[str, Quantity]:
    """Devices a claim may get, per device class: ExactCount counts `count`, All counts 32; a prioritized
    list (firstAvailable) counts, per class, the largest of its subrequests (upstream's worst case)."""
    result: dict[str, Quantity] = {}
    requests = (((claim.get("spec") or {}).get("devices") or {}).get("requests")) or []
    for req in requests:
        if not isinstance(req, dict):
            continue
        subs = req.get("firstAvailable")
        if subs:
            worst: dict[str, Quantity] = {}
            for sub in subs:
                if isinstance(sub, dict) and sub.get("deviceClassName"):
                    cls = sub["deviceClassName"]
                    worst[cls] = q.max_of(worst.get(cls), Quantity.from_int(_device_count(sub)))
            for cls, n in worst.items():
                q.put_add(result, cls, n)
            continue
        exactly = req.get("exactly")
        if isinstance(exactly, dict) and exactly.get("deviceClassName"):
            q.put_add(result, exactly["deviceClassName"], Quantity.from_int(_device_count(exactly)))
    return result


def _device_count(req: Obj) -> int:
    mode = req.get("allocationMode") or "ExactCount"
    if mode == "ExactCount":
        count = req.get("count", 1)
        return count if isinstance(count, int) and not isinstance(count, bool) else 0
    if mode == "All":
        return ALLOCATION_RESULTS_MAX_SIZE
    return 0  # unknown modes (after a downgrade) count nothing, as upstream


def is_extended_resource_claim(claim: Obj) -> bool:
    annotations = (claim.get("metadata") or {}).get("annotations") or {}
    return annotations.get(EXTENDED_RESOURCE_CLAIM_ANNOTATION) == "true"


def _owner_pod(claim: Obj, lookup: q.Lookup) -> Obj | None:
    m = claim.get("metadata") or {}
    for ref in m.get("ownerReferences") or []:
        if isinstance(ref, dict) and ref.get("kind") == "Pod" and ref.get("apiVersion") == "v1":
            pod = lookup.pod(m.get("namespace") or "", ref.get("name") or "")
            if pod is not None and (pod.get("metadata") or {}).get("uid") in (None, ref.get("uid")):
                return pod
    return None


def claim_usage(claim: Obj, lookup: q.Lookup) -> q.ResourceList:
    """Usage of one ResourceClaim: the object count, devices per class, and KEP-5004's extended resources.

    Cross-accounting (KEP-5004 "Resource Quota"): devices a claim requests of class C count towards
    `requests.deviceclass.resource.kubernetes.io/C` and, when C maps an extended resource E, towards
    `requests.E`. The scheduler's special claim for a pod's extended-resource requests is already counted
    by the pod under `requests.E` (explicit requests) and under both names (implicit requests), so of that
    claim only the devices it holds for explicit requests of E count towards the implicit name.
    """
    result: q.ResourceList = {CLAIM_COUNT: Quantity.from_int(1)}
    by_class = claim_devices_by_class(claim)
    special = is_extended_resource_claim(claim)
    implicit_from_pod: q.ResourceList = {}
    if special and by_class:
        pod = _owner_pod(claim, lookup)
        if pod is not None:
            implicit_from_pod = pod_requests(pod)
    for cls, n in by_class.items():
        q.put_add(result, cls + DEVICES_SUFFIX, n)
        implicit = q.IMPLICIT_EXTENDED_PREFIX + cls
        if special:
            counted = implicit_from_pod.get(implicit, q.ZERO)
            extra = n.sub(counted)
            if extra.sign() > 0:
                q.put_add(result, q.REQUESTS_PREFIX + implicit, extra)
            continue
        q.put_add(result, q.REQUESTS_PREFIX + implicit, n)
        ext = lookup.extended_resource_of(cls)
        if ext:
            q.put_add(result, q.REQUESTS_PREFIX + ext, n)
    return result


def claim_matching_resources(names: Iterable[str]) -> list[str]:
    return [n for n in names if n == CLAIM_COUNT or n.endswith(DEVICES_SUFFIX) or
            (n.startswith(q.REQUESTS_PREFIX) and q.quota_extended_resource_name(n[len(q.REQUESTS_PREFIX):]))]


QUOTA = q.Evaluator("resourceclaims.resource.k8s.io", claim_matching_resources, claim_usage,
                    handles_update=lambda sub: sub == "")

KIND = Kind(GROUP, "v1", "ResourceClaim", "resourceclaims", True, subresources=("status",),
            return_deleted_object=True, strategy=ResourceClaimStrategy, printer=PRINTER)
