"""KEP-5004: extended resources backed by DRA (feature gate DRAExtendedResource), the scheduler's part.

A container resource request `example.com/gpu: N` where a DeviceClass has `spec.extendedResourceName:
example.com/gpu` (or the implicit name `deviceclass.resource.kubernetes.io/<class>`) is satisfied by DRA on a node
whose `status.allocatable` does not list that resource. The scheduler allocates the devices together with the
pod's other claims through one special ResourceClaim per pod: one request per container and extended resource
(`container-<i>-request-<j>`, ExactCount N of the class), created in PreBind (generateName
`<pod>-extended-resources-`, owned by the pod, annotation `resource.kubernetes.io/extended-resource-claim: "true"`)
and named in `pod.status.extendedResourceClaimStatus`. Pure helpers here; the I/O is in the scheduling and
binding cycles (schedule_one.py, binding.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from dramock.schemas.quantity import parse_quantity

Obj = dict[str, Any]

IMPLICIT_PREFIX = "deviceclass.resource.kubernetes.io/"
EXTENDED_RESOURCE_CLAIM_ANNOTATION = "resource.kubernetes.io/extended-resource-claim"
GENERATE_NAME_SUFFIX = "-extended-resources-"


@dataclass(frozen=True)
class ExtendedRequest:
    container_index: int  # init containers first, then containers (the KEP's "index of the container")
    container_name: str
    resource_name: str
    count: int
    device_class: str
    request_name: str  # container-<i>-request-<j>


def class_for_resource(classes: dict[str, Obj]) -> dict[str, str]:
    """Extended resource name -> DeviceClass name: explicit `spec.extendedResourceName` (the newest class wins
    when several name the same resource, ties by name) and the implicit `deviceclass.resource.kubernetes.io/<c>`."""
    out: dict[str, str] = {}
    explicit: dict[str, tuple[str, str]] = {}
    for name, cls in classes.items():
        if (cls.get("metadata") or {}).get("deletionTimestamp"):
            continue
        out[IMPLICIT_PREFIX + name] = name
        ext = (cls.get("spec") or {}).get("extendedResourceName")
        if ext:
            key = ((cls.get("metadata") or {}).get("creationTimestamp") or "", name)
            if ext not in explicit or key > explicit[ext]:
                explicit[ext] = key
    for ext, (_, name) in explicit.items():
        out[ext] = name
    return out


def _count(v: Any) -> int:
    try:
        q = parse_quantity(str(v))
    except (ValueError, TypeError):
        return 0
    return int(q) if q == int(q) else int(q) + 1 if q > 0 else 0


def extended_requests(pod: Obj, classes: dict[str, Obj]) -> list[ExtendedRequest]:
    """Every container request of an extended resource some DeviceClass backs (whatever the node)."""
    mapping = class_for_resource(classes)
    if not mapping:
        return []
    spec = pod.get("spec") or {}
    containers = list(spec.get("initContainers") or []) + list(spec.get("containers") or [])
    out: list[ExtendedRequest] = []
    for i, c in enumerate(containers):
        res = c.get("resources") or {}
        wanted: dict[str, Any] = dict(res.get("limits") or {})
        wanted.update(res.get("requests") or {})
        j = 0
        for rname in sorted(wanted):
            cls = mapping.get(rname)
            if cls is None:
                continue
            n = _count(wanted[rname])
            if n <= 0:
                continue
            out.append(ExtendedRequest(i, c.get("name", ""), rname, n, cls, f"container-{i}-request-{j}"))
            j += 1
    return out


def dra_backed(requests: list[ExtendedRequest], node: Obj) -> list[ExtendedRequest]:
    """The requests that DRA satisfies on `node`: those whose resource the node does not list in allocatable."""
    allocatable = (node.get("status") or {}).get("allocatable") or {}
    return [r for r in requests if r.resource_name not in allocatable]


def claim_spec(requests: list[ExtendedRequest]) -> Obj:
    return {"devices": {"requests": [
        {"name": r.request_name, "exactly": {"deviceClassName": r.device_class, "allocationMode": "ExactCount",
                                             "count": r.count}} for r in requests]}}


def in_memory_claim(pod: Obj, requests: list[ExtendedRequest]) -> Obj:
    """The special claim as the allocator sees it before it exists (a uid of its own for the in-flight map)."""
    m = pod["metadata"]
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
            "metadata": {"name": f"{m['name']}{GENERATE_NAME_SUFFIX}", "namespace": m.get("namespace", ""),
                         "uid": f"extended-resources/{m.get('uid', '')}",
                         "annotations": {EXTENDED_RESOURCE_CLAIM_ANNOTATION: "true"}},
            "spec": claim_spec(requests)}


def new_claim(pod: Obj, spec: Obj) -> Obj:
    """The object PreBind creates."""
    m = pod["metadata"]
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
            "metadata": {"generateName": f"{m['name']}{GENERATE_NAME_SUFFIX}", "namespace": m.get("namespace", ""),
                         "annotations": {EXTENDED_RESOURCE_CLAIM_ANNOTATION: "true"},
                         "ownerReferences": [{"apiVersion": "v1", "kind": "Pod", "name": m["name"],
                                              "uid": m.get("uid", ""), "controller": True,
                                              "blockOwnerDeletion": True}]},
            "spec": spec}


def claim_status(claim_name: str, spec: Obj, requests: list[ExtendedRequest]) -> Obj:
    """pod.status.extendedResourceClaimStatus for the requests in `spec`."""
    names = {r["name"] for r in (spec.get("devices") or {}).get("requests") or []}
    return {"resourceClaimName": claim_name,
            "requestMappings": [{"containerName": r.container_name, "resourceName": r.resource_name,
                                 "requestName": r.request_name} for r in requests if r.request_name in names]}


def node_requests_without(requests: dict[str, Fraction], backed: list[ExtendedRequest]) -> dict[str, Fraction]:
    """The pod's node requests minus the resources DRA satisfies on the node."""
    skip = {r.resource_name for r in backed}
    return {k: v for k, v in requests.items() if k not in skip}
