"""The non-DRA Filter plugins: NodeUnschedulable, NodeAffinity, TaintToleration and NodeResourcesFit, with
what a pod requests of a node (upstream's resource.PodRequests)."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

from dramock.scheduler import nodeallocatable
from dramock.scheduler.framework import Obj
from dramock.schemas.nodeselector import node_selector_matches
from dramock.schemas.quantity import parse_quantity

MSG_NODE_AFFINITY = "node(s) didn't match Pod's node affinity/selector"
MSG_UNSCHEDULABLE = "node(s) were unschedulable"


def _q(v: Any) -> Fraction:
    try:
        return parse_quantity(str(v))
    except (ValueError, TypeError):
        return Fraction(0)


def _add(total: dict[str, Fraction], res: dict[str, Any] | None) -> None:
    for k, v in (res or {}).items():
        total[k] = total.get(k, Fraction(0)) + _q(v)


def _container_requests(c: Obj) -> dict[str, Fraction]:
    r = c.get("resources") or {}
    out: dict[str, Fraction] = {}
    _add(out, r.get("limits"))  # a limit without a request is the request
    for k, v in (r.get("requests") or {}).items():
        out[k] = _q(v)
    return out


def pod_requests(pod: Obj, node_allocatable_claims: bool = True) -> dict[str, Fraction]:
    """What the pod asks of a node (upstream's resource.PodRequests, without in-place resize); with what its
    claims' devices bring along (status.nodeAllocatableResourceClaimStatuses, DRANodeAllocatableResources)
    unless `node_allocatable_claims` is False."""
    spec = pod.get("spec") or {}
    total: dict[str, Fraction] = {}
    for c in spec.get("containers") or []:
        for k, v in _container_requests(c).items():
            total[k] = total.get(k, Fraction(0)) + v
    sidecars: dict[str, Fraction] = {}
    init_max: dict[str, Fraction] = {}
    for c in spec.get("initContainers") or []:
        req = _container_requests(c)
        if c.get("restartPolicy") == "Always":
            for k, v in req.items():
                sidecars[k] = sidecars.get(k, Fraction(0)) + v
                total[k] = total.get(k, Fraction(0)) + v
        else:
            for k, v in req.items():
                init_max[k] = max(init_max.get(k, Fraction(0)), v + sidecars.get(k, Fraction(0)))
    for k, v in init_max.items():
        total[k] = max(total.get(k, Fraction(0)), v)
    pod_level = (spec.get("resources") or {}).get("requests") or {}
    for k in ("cpu", "memory"):
        if k in pod_level:
            total[k] = _q(pod_level[k])
    _add(total, spec.get("overhead"))
    statuses = (pod.get("status") or {}).get("nodeAllocatableResourceClaimStatuses")
    if statuses and node_allocatable_claims:
        total = nodeallocatable.add_to_requests(total, statuses)
    return total


def matches_node_affinity(pod: Obj, node: Obj) -> bool:
    spec = pod.get("spec") or {}
    labels = node["metadata"].get("labels") or {}
    for k, v in (spec.get("nodeSelector") or {}).items():
        if labels.get(k) != v:
            return False
    required = ((spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution")
    return node_selector_matches(required, node) if required is not None else True


def tolerates(tolerations: list[Obj], taint: Obj) -> bool:
    for t in tolerations:
        if t.get("effect") and t["effect"] != taint.get("effect"):
            continue
        if t.get("key") and t["key"] != taint.get("key"):
            continue
        if not t.get("key") and t.get("operator") != "Exists":
            continue
        if t.get("operator") == "Exists" or (t.get("value") or "") == (taint.get("value") or ""):
            return True
    return False


def untolerated_taint(pod: Obj, node: Obj) -> Obj | None:
    tolerations = (pod.get("spec") or {}).get("tolerations") or []
    for taint in (node.get("spec") or {}).get("taints") or []:
        if taint.get("effect") in ("NoSchedule", "NoExecute") and not tolerates(tolerations, taint):
            return taint
    return None


def node_fit_reason(pod: Obj, node: Obj, requests: dict[str, Fraction], allocatable: dict[str, Fraction],
                    used: dict[str, Fraction], count: int) -> str | None:
    """The non-DRA Filter plugins (NodeUnschedulable, NodeAffinity, TaintToleration, NodeResourcesFit) in
    upstream's words, or None when the node passes them. `used`/`count`: the pods already on the node."""
    spec = node.get("spec") or {}
    pod_spec = pod.get("spec") or {}
    if spec.get("unschedulable") and not tolerates(
            pod_spec.get("tolerations") or [], {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}):
        return MSG_UNSCHEDULABLE
    if (pod_spec.get("nodeSelector") or pod_spec.get("affinity")) and not matches_node_affinity(pod, node):
        return MSG_NODE_AFFINITY
    if spec.get("taints"):
        taint = untolerated_taint(pod, node)
        if taint is not None:
            return f"node(s) had untolerated taint {{{taint.get('key', '')}: {taint.get('value', '')}}}"
    if "pods" in allocatable and count + 1 > allocatable["pods"]:
        return "Too many pods"
    for res, want in sorted(requests.items()):
        if want <= 0:
            continue
        if res not in allocatable:
            if res in ("cpu", "memory", "ephemeral-storage") or res.startswith("hugepages-"):
                # Deviation: upstream counts an unreported native resource as 0 allocatable; here a node
                # that reports none (a bare Node created by hand) is not limited on it.
                continue
            return f"Insufficient {res}"
        if used.get(res, Fraction(0)) + want > allocatable[res]:
            return f"Insufficient {res}"
    return None
