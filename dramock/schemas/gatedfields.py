"""Fields that exist only while a feature gate is on: the 1.37 dropDisabledFields rules, as one table.

Upstream each registry strategy (pkg/registry/resource/*/strategy.go, pkg/registry/resource/
resourceclaimspec/strategy.go, pkg/api/pod/util.go) has one dropDisabled<Gate>Fields function per gate:
when the gate is off and the old object (nil on create) does not use the feature, the gate's fields are
cleared from the new object. This module states those rules as data and applies them generically; the
strategies call `drop_disabled_fields` from PrepareForCreate, PrepareForUpdate and the status
PrepareForUpdate.

Paths are dotted JSON field names; `name[*]` steps into every element of a list and `name{*}` into every
value of a map. The last segment names the field that is removed. A field counts as "used" in the old
object as upstream's *FeatureInUse helpers test it: a list or map when non-empty, anything else (a
pointer in Go: struct, string, bool, ...) when present and not null.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from dramock.schemas import defs
from dramock.schemas.featuregates import FeatureGates


@dataclass(frozen=True)
class GatedFields:
    """Fields of one kind that need all of `gates`; dropped together unless the old object used any of
    `in_use` (by default the fields themselves)."""

    gates: tuple[str, ...]
    kind: str
    paths: tuple[str, ...]
    in_use: tuple[str, ...] | None = None
    upstream: str = ""  # the upstream function this row mirrors

    @property
    def in_use_paths(self) -> tuple[str, ...]:
        return self.paths if self.in_use is None else self.in_use


def _claim_spec(prefix: str, kind: str, source: str) -> list[GatedFields]:
    """resourceclaimspec.DropDisabledFields, shared by ResourceClaim (spec) and ResourceClaimTemplate
    (spec.spec). Whether a feature is in use is judged on the old spec alone."""
    req = f"{prefix}.devices.requests[*]"
    return [
        GatedFields(("DRAPrioritizedList",), kind, (f"{req}.firstAvailable",),
                    upstream=f"{source} dropDisabledDRAPrioritizedListFields"),
        GatedFields(("DRADeviceTaints",), kind,
                    (f"{req}.exactly.tolerations", f"{req}.firstAvailable[*].tolerations"),
                    upstream=f"{source} dropDisabledDRADeviceTaintsFields"),
        GatedFields(("DRAAdminAccess",), kind, (f"{req}.exactly.adminAccess",),
                    upstream=f"{source} dropDisabledDRAAdminAccessFields"),
        GatedFields(("DRAConsumableCapacity",), kind,
                    (f"{prefix}.devices.constraints[*].distinctAttribute", f"{req}.exactly.capacity",
                     f"{req}.firstAvailable[*].capacity"),
                    upstream=f"{source} dropDisabledDRAResourceClaimConsumableCapacityFields"),
        GatedFields(("DRADerivedAttributes",), kind,
                    (f"{req}.exactly.derivedAttributes", f"{req}.firstAvailable[*].derivedAttributes"),
                    upstream=f"{source} dropDisabledDRADerivedAttributesFields"),
    ]


_CLAIM_SPEC = _claim_spec("spec", "ResourceClaim", "resourceclaimspec")
_RESULTS = "status.allocation.devices.results[*]"
_SLICE_DEV = "spec.devices[*]"
_BINDING = ("DRADeviceBindingConditions", "DRAResourceClaimDeviceStatus")


def _spec_paths(gate: str) -> tuple[str, ...]:
    return next(row.paths for row in _CLAIM_SPEC if row.gates == (gate,))


TABLE: tuple[GatedFields, ...] = (
    # --- ResourceSlice: pkg/registry/resource/resourceslice/strategy.go dropDisabledFields ---
    GatedFields(("DRADeviceTaints",), "ResourceSlice", (f"{_SLICE_DEV}.taints",),
                upstream="resourceslice dropDisabledDRADeviceTaintsFields"),
    GatedFields(("DRAPartitionableDevices",), "ResourceSlice",
                ("spec.sharedCounters", "spec.perDeviceNodeSelection", f"{_SLICE_DEV}.consumesCounters",
                 f"{_SLICE_DEV}.nodeName", f"{_SLICE_DEV}.nodeSelector", f"{_SLICE_DEV}.allNodes"),
                upstream="resourceslice dropDisabledDRAPartitionableDevicesFields"),
    # Binding conditions need both gates (DRAResourceClaimDeviceStatus is locked on in 1.37).
    GatedFields(_BINDING, "ResourceSlice",
                (f"{_SLICE_DEV}.bindingConditions", f"{_SLICE_DEV}.bindingFailureConditions",
                 f"{_SLICE_DEV}.bindsToNode"),
                upstream="resourceslice dropDisabledDRADeviceBindingConditionsFields"),
    GatedFields(("DRAConsumableCapacity",), "ResourceSlice",
                (f"{_SLICE_DEV}.allowMultipleAllocations", f"{_SLICE_DEV}.capacity{{*}}.requestPolicy"),
                upstream="resourceslice dropDisabledDRAConsumableCapacityFields"),
    GatedFields(("DRANodeAllocatableResources",), "ResourceSlice", (f"{_SLICE_DEV}.nodeAllocatableResources",),
                upstream="resourceslice dropDisabledDRANodeAllocatableResourcesFields"),
    GatedFields(("DRAListTypeAttributes",), "ResourceSlice",
                tuple(f"{_SLICE_DEV}.attributes{{*}}.{f}" for f in ("bools", "ints", "strings", "versions")),
                upstream="resourceslice dropDisableDRAListTypeAttributesFields"),
    GatedFields(("DRAResourcePoolStatus",), "ResourceSlice", ("spec.partitionTypeAttribute",),
                upstream="resourceslice dropDisabledDRAResourcePoolStatusFields"),
    GatedFields(("DRAOptionalNodeOperations",), "ResourceSlice", ("spec.skipNodeOperations",),
                upstream="resourceslice (skipNodeOperations, KEP-5945)"),
    GatedFields(("DRADeviceCompatibilityGroups",), "ResourceSlice",
                (f"{_SLICE_DEV}.consumesCounters[*].compatibilityGroups",),
                upstream="resourceslice (compatibilityGroups, KEP-5963)"),

    # --- ResourceClaim spec: resourceclaimspec.DropDisabledFields ---
    *_CLAIM_SPEC,
    # --- ResourceClaim status: pkg/registry/resource/resourceclaim/strategy.go; a status field counts as in
    # use when the old claim used the feature in its status or its spec. ---
    GatedFields(("DRAAdminAccess",), "ResourceClaim", (f"{_RESULTS}.adminAccess",),
                in_use=(f"{_RESULTS}.adminAccess", *_spec_paths("DRAAdminAccess")),
                upstream="resourceclaim dropDisabledDRAAdminAccessFields (status)"),
    GatedFields(("DRADeviceTaints",), "ResourceClaim", (f"{_RESULTS}.tolerations",),
                in_use=(f"{_RESULTS}.tolerations", *_spec_paths("DRADeviceTaints")),
                upstream="resourceclaim dropDisabledDRADeviceTaintsFields (status)"),
    GatedFields(("DRAConsumableCapacity",), "ResourceClaim",
                (f"{_RESULTS}.shareID", f"{_RESULTS}.consumedCapacity", "status.devices[*].shareID"),
                in_use=(f"{_RESULTS}.shareID", f"{_RESULTS}.consumedCapacity", "status.devices[*].shareID",
                        *_spec_paths("DRAConsumableCapacity")),
                upstream="resourceclaim dropDisabledDRAConsumableCapacityFields (status)"),
    GatedFields(("DRAResourceClaimDeviceStatus",), "ResourceClaim", ("status.devices",),
                upstream="resourceclaim dropDisabledDRAResourceClaimDeviceStatusFields"),
    GatedFields(_BINDING, "ResourceClaim",
                (f"{_RESULTS}.bindingConditions", f"{_RESULTS}.bindingFailureConditions",
                 "status.allocation.allocationTimestamp"),
                upstream="resourceclaim dropDisabledDRADeviceBindingConditionsFields"),
    GatedFields(("DRAOptionalNodeOperations",), "ResourceClaim", (f"{_RESULTS}.skipNodeOperations",),
                upstream="resourceclaim (status skipNodeOperations, KEP-5945)"),

    # --- ResourceClaimTemplate: resourceclaimtemplate strategy -> resourceclaimspec.DropDisabledFields ---
    *_claim_spec("spec.spec", "ResourceClaimTemplate", "resourceclaimspec (template)"),

    # --- DeviceClass: pkg/registry/resource/deviceclass/strategy.go ---
    GatedFields(("DRAExtendedResource",), "DeviceClass", ("spec.extendedResourceName",),
                upstream="deviceclass dropDisabledDRAExtendedResourceFields"),

    # DeviceTaintRule: its strategy drops no fields.

    # --- Pod: pkg/api/pod/util.go dropDisabledFields / dropDisabledPodStatusFields ---
    GatedFields(("DynamicResourceAllocation",), "Pod",
                ("spec.resourceClaims", "spec.containers[*].resources.claims",
                 "spec.initContainers[*].resources.claims", "spec.ephemeralContainers[*].resources.claims",
                 "status.resourceClaimStatuses"),
                in_use=("spec.resourceClaims",),
                upstream="pod dropDisabledDynamicResourceAllocationFields (dynamicResourceAllocationInUse)"),
    GatedFields(("DRAExtendedResource",), "Pod", ("status.extendedResourceClaimStatus",),
                upstream="pod dropDisabledPodStatusFields (draExendedResourceInUse)"),
    GatedFields(("DRANodeAllocatableResources",), "Pod", ("status.nodeAllocatableResourceClaimStatuses",),
                upstream="pod dropDisabledPodStatusFields (node allocatable claim statuses, KEP-5517)"),

    # --- scheduling.k8s.io (KEP-5729): pkg/registry/scheduling/{podgroup,workload}/strategy.go ---
    GatedFields(("DRAWorkloadResourceClaims",), "PodGroup", ("spec.resourceClaims",),
                upstream="podgroup dropDisabledDRAWorkloadResourceClaimsFields"),
    # (status.resourceClaimStatuses: admission/scheduling.py, as it depends on the old object's spec)
    GatedFields(("DRAWorkloadResourceClaims",), "Workload", ("spec.podGroupTemplates[*].resourceClaims",),
                upstream="workload dropDisabledDRAWorkloadResourceClaimsFields"),
)

# The stored kinds' 1.37 definitions, for resolving the table's paths.
ROOTS: dict[str, str] = {
    "ResourceSlice": "io.k8s.api.resource.v1.ResourceSlice",
    "ResourceClaim": "io.k8s.api.resource.v1.ResourceClaim",
    "ResourceClaimTemplate": "io.k8s.api.resource.v1.ResourceClaimTemplate",
    "DeviceClass": "io.k8s.api.resource.v1.DeviceClass",
    "DeviceTaintRule": "io.k8s.api.resource.v1.DeviceTaintRule",
    "Pod": "io.k8s.api.core.v1.Pod",
    "PodGroup": "io.k8s.api.scheduling.v1beta1.PodGroup",
    "Workload": "io.k8s.api.scheduling.v1beta1.Workload",
}

_BY_KIND: dict[str, tuple[GatedFields, ...]] = {}
for _row in TABLE:
    _BY_KIND[_row.kind] = (*_BY_KIND.get(_row.kind, ()), _row)

_SEGMENT = re.compile(r"^([A-Za-z][A-Za-z0-9]*)(\[\*\]|\{\*\})?$")


@dataclass(frozen=True)
class _Path:
    steps: tuple[tuple[str, bool], ...]  # (field, iterate the elements/values)
    collection: bool  # the last field is a list or map (used when non-empty) rather than a pointer


@functools.cache
def compile_path(kind: str, path: str) -> _Path:
    """Parse `path` and resolve it against the kind's 1.37 schema (ValueError if it does not exist)."""
    schema = defs.resolve({"$ref": defs.REF_PREFIX + ROOTS[kind]})
    steps: list[tuple[str, bool]] = []
    segments = path.split(".")
    field_schema: dict = {}
    for i, segment in enumerate(segments):
        m = _SEGMENT.match(segment)
        if not m:
            raise ValueError(f"{kind} {path}: bad segment {segment!r}")
        name, star = m.group(1), m.group(2)
        found = (schema.get("properties") or {}).get(name)
        if found is None:
            raise ValueError(f"{kind} {path}: no field {name!r} in the 1.37 schema")
        field_schema = found
        if star and i == len(segments) - 1:
            raise ValueError(f"{kind} {path}: the dropped field itself cannot be iterated")
        if star == "[*]":
            if "array" not in defs.types_of(field_schema):
                raise ValueError(f"{kind} {path}: {name} is not a list")
            schema = defs.resolve(field_schema.get("items"))
        elif star == "{*}":
            if not isinstance(field_schema.get("additionalProperties"), dict):
                raise ValueError(f"{kind} {path}: {name} is not a map")
            schema = defs.resolve(field_schema["additionalProperties"])
        else:
            schema = defs.resolve(field_schema)
        steps.append((name, bool(star)))
    last = defs.resolve(field_schema)
    collection = "array" in defs.types_of(last) or (
        isinstance(last.get("additionalProperties"), dict) and not last.get("properties"))
    return _Path(tuple(steps), collection)


def _parents(obj: Any, steps: tuple[tuple[str, bool], ...]) -> Iterator[dict]:
    """Every dict holding the path's last field."""
    nodes = [obj]
    for name, star in steps[:-1]:
        nxt: list = []
        for node in nodes:
            value = node.get(name) if isinstance(node, dict) else None
            if value is None:
                continue
            if star:
                nxt.extend(value if isinstance(value, list) else
                           value.values() if isinstance(value, dict) else ())
            else:
                nxt.append(value)
        nodes = nxt
    return (n for n in nodes if isinstance(n, dict))


def uses(kind: str, obj: dict | None, path: str) -> bool:
    """Whether `obj` sets the field at `path` (upstream's *FeatureInUse test for it)."""
    if obj is None:
        return False
    p = compile_path(kind, path)
    name = p.steps[-1][0]
    for parent in _parents(obj, p.steps):
        value = parent.get(name)
        if value is None:
            continue
        if p.collection and isinstance(value, (list, dict)) and not value:
            continue
        return True
    return False


def remove(kind: str, obj: dict, path: str) -> None:
    p = compile_path(kind, path)
    name = p.steps[-1][0]
    for parent in _parents(obj, p.steps):
        parent.pop(name, None)


def rows(kind: str) -> tuple[GatedFields, ...]:
    return _BY_KIND.get(kind, ())


def drop_disabled_fields(kind: str, new: dict, old: dict | None, gates: FeatureGates) -> None:
    """Remove from `new` (in place) the fields of every disabled gate that `old` (None on create) does
    not already use."""
    for row in _BY_KIND.get(kind, ()):
        if all(gates.enabled(g) for g in row.gates):
            continue
        if old is not None and any(uses(kind, old, p) for p in row.in_use_paths):
            continue
        for path in row.paths:
            remove(kind, new, path)
