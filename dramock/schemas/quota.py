"""ResourceQuota usage evaluation: what a claim, a pod or any object adds to a quota's resources.

Pure functions over wire-shaped objects, shared by the admission plugin (dramock/admission/quota.py)
and the quota controller (dramock/controllers/quota.py), as upstream's pkg/quota/v1/evaluator is.
"""


from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from dramock.schemas.quantity import Quantity, parse_or_none

Obj = dict[str, Any]
ResourceList = dict[str, Quantity]

# Upstream's names (k8s.io/api core/v1 and resource/v1 constants).
CLAIM_COUNT = "count/resourceclaims.resource.k8s.io"
DEVICES_SUFFIX = ".deviceclass.resource.k8s.io/devices"  # ResourceClaimsPerClass
IMPLICIT_EXTENDED_PREFIX = "deviceclass.resource.kubernetes.io/"  # ResourceDeviceClassPrefix
REQUESTS_PREFIX = "requests."
LIMITS_PREFIX = "limits."
EXTENDED_RESOURCE_CLAIM_ANNOTATION = "resource.kubernetes.io/extended-resource-claim"
ALLOCATION_RESULTS_MAX_SIZE = 32
POD_COUNT = "count/pods"
_COMPUTE = ("cpu", "memory", "ephemeral-storage")
# Legacy object-count names upstream still accepts beside count/<resource>.
_LEGACY_COUNT = {"services": "services", "configmaps": "configmaps", "secrets": "secrets",
                 "persistentvolumeclaims": "persistentvolumeclaims",
                 "replicationcontrollers": "replicationcontrollers", "resourcequotas": "resourcequotas"}
# Pod constraints: quotas on these require every container to state the resource (upstream's validationSet).
_POD_VALIDATION_SET = ("cpu", "memory", "requests.cpu", "requests.memory", "limits.cpu", "limits.memory")

ZERO = Quantity.from_int(0)


@dataclass
class Lookup:
    """What evaluators may need besides the object: a device class by name, a pod by namespace/name."""

    device_class: Callable[[str], Obj | None]
    pod: Callable[[str, str], Obj | None]

    def extended_resource_of(self, class_name: str) -> str | None:
        cls = self.device_class(class_name)
        ext = ((cls or {}).get("spec") or {}).get("extendedResourceName")
        return ext if isinstance(ext, str) and ext else None


# ---------------------------------------------------------------- resource lists


def parse_list(raw: Any) -> ResourceList:
    out: ResourceList = {}
    for k, v in (raw or {}).items() if isinstance(raw, dict) else ():
        q = parse_or_none(v)
        if q is not None:
            out[k] = q
    return out


def format_list(rl: ResourceList) -> dict[str, str]:
    return {k: str(rl[k]) for k in sorted(rl)}


def add(a: ResourceList, b: ResourceList) -> ResourceList:
    out = dict(a)
    for k, v in b.items():
        out[k] = out[k].add(v) if k in out else v
    return out


def _put_add(rl: ResourceList, key: str, q: Quantity) -> None:
    rl[key] = rl[key].add(q) if key in rl else q


def _max(a: Quantity | None, b: Quantity) -> Quantity:
    return b if a is None or b.cmp(a) > 0 else a


def mask(rl: ResourceList, names: Iterable[str]) -> ResourceList:
    keep = set(names)
    return {k: v for k, v in rl.items() if k in keep}


def equal_lists(a: ResourceList, b: ResourceList) -> bool:
    return a.keys() == b.keys() and all(a[k].cmp(b[k]) == 0 for k in a)


def pretty(rl: ResourceList) -> str:
    return ",".join(f"{k}={rl[k]}" for k in sorted(rl))


def is_extended_resource_name(name: str) -> bool:
    """helper.IsExtendedResourceName: domain-qualified, not kubernetes.io, not requests.-prefixed."""
    if "/" not in name or name.startswith(REQUESTS_PREFIX):
        return False
    domain = name.split("/", 1)[0]
    if domain == "kubernetes.io" or domain.endswith(".kubernetes.io"):
        # The implicit DRA names (deviceclass.resource.kubernetes.io/<class>) are extended resources too.
        return name.startswith(IMPLICIT_EXTENDED_PREFIX)
    return True


# ---------------------------------------------------------------- resource claims


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
                    worst[cls] = _max(worst.get(cls), Quantity.from_int(_device_count(sub)))
            for cls, q in worst.items():
                _put_add(result, cls, q)
            continue
        exactly = req.get("exactly")
        if isinstance(exactly, dict) and exactly.get("deviceClassName"):
            _put_add(result, exactly["deviceClassName"], Quantity.from_int(_device_count(exactly)))
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


def _owner_pod(claim: Obj, lookup: Lookup) -> Obj | None:
    m = claim.get("metadata") or {}
    for ref in m.get("ownerReferences") or []:
        if isinstance(ref, dict) and ref.get("kind") == "Pod" and ref.get("apiVersion") == "v1":
            pod = lookup.pod(m.get("namespace") or "", ref.get("name") or "")
            if pod is not None and (pod.get("metadata") or {}).get("uid") in (None, ref.get("uid")):
                return pod
    return None


def claim_usage(claim: Obj, lookup: Lookup) -> ResourceList:
    """Usage of one ResourceClaim: the object count, devices per class, and KEP-5004's extended resources.

    Cross-accounting (KEP-5004 "Resource Quota"): devices a claim requests of class C count towards
    `requests.deviceclass.resource.kubernetes.io/C` and, when C maps an extended resource E, towards
    `requests.E`. The scheduler's special claim for a pod's extended-resource requests is already counted
    by the pod under `requests.E` (explicit requests) and under both names (implicit requests), so of that
    claim only the devices it holds for explicit requests of E count towards the implicit name.
    """
    result: ResourceList = {CLAIM_COUNT: Quantity.from_int(1)}
    by_class = claim_devices_by_class(claim)
    special = is_extended_resource_claim(claim)
    implicit_from_pod: ResourceList = {}
    if special and by_class:
        pod = _owner_pod(claim, lookup)
        if pod is not None:
            implicit_from_pod = _pod_requests(pod)
    for cls, n in by_class.items():
        _put_add(result, cls + DEVICES_SUFFIX, n)
        implicit = IMPLICIT_EXTENDED_PREFIX + cls
        if special:
            counted = implicit_from_pod.get(implicit, ZERO)
            extra = n.sub(counted)
            if extra.sign() > 0:
                _put_add(result, REQUESTS_PREFIX + implicit, extra)
            continue
        _put_add(result, REQUESTS_PREFIX + implicit, n)
        ext = lookup.extended_resource_of(cls)
        if ext:
            _put_add(result, REQUESTS_PREFIX + ext, n)
    return result


def claim_matching_resources(names: Iterable[str]) -> list[str]:
    return [n for n in names if n == CLAIM_COUNT or n.endswith(DEVICES_SUFFIX) or
            (n.startswith(REQUESTS_PREFIX) and is_extended_resource_name(n[len(REQUESTS_PREFIX):]))]


# ---------------------------------------------------------------- pods


def pod_matching_resources(names: Iterable[str]) -> list[str]:
    out = []
    for n in names:
        if n in ("pods", POD_COUNT) or n in _COMPUTE or \
                n in {p + r for p in (REQUESTS_PREFIX, LIMITS_PREFIX) for r in _COMPUTE}:
            out.append(n)
        elif n.startswith("hugepages-") or n.startswith(REQUESTS_PREFIX + "hugepages-"):
            out.append(n)
        elif n.startswith(REQUESTS_PREFIX) and is_extended_resource_name(n[len(REQUESTS_PREFIX):]):
            out.append(n)
    return out


def _container_lists(c: Obj) -> tuple[ResourceList, ResourceList]:
    res = c.get("resources") or {}
    limits = parse_list(res.get("limits"))
    requests = parse_list(res.get("requests"))
    for k, v in limits.items():  # limits default the requests (defaulting already does this on write)
        requests.setdefault(k, v)
    return requests, limits


def _max_lists(a: ResourceList, b: ResourceList) -> ResourceList:
    out = dict(a)
    for k, v in b.items():
        out[k] = _max(out.get(k), v)
    return out


def _pod_aggregate(pod: Obj, which: int) -> ResourceList:
    """resourcehelper.PodRequests / PodLimits: containers summed, sidecars (restartable init containers)
    running beside them, each other init container's need (with the sidecars started before it) maxed in,
    plus the pod overhead. Pod-level resources, when set, win for the resources they name."""
    spec = pod.get("spec") or {}
    total: ResourceList = {}
    for c in spec.get("containers") or []:
        if isinstance(c, dict):
            total = add(total, _container_lists(c)[which])
    sidecars: ResourceList = {}
    init_max: ResourceList = {}
    for c in spec.get("initContainers") or []:
        if not isinstance(c, dict):
            continue
        mine = _container_lists(c)[which]
        if c.get("restartPolicy") == "Always":
            total = add(total, mine)
            sidecars = add(sidecars, mine)
            need = sidecars
        else:
            need = add(mine, sidecars)
        init_max = _max_lists(init_max, need)
    total = _max_lists(total, init_max)
    pod_res = spec.get("resources") or {}
    pod_level = parse_list(pod_res.get("limits"))
    if which == 0:  # pod-level limits default pod-level requests
        pod_level.update(parse_list(pod_res.get("requests")))
    for k, v in pod_level.items():
        if k in _COMPUTE or k.startswith("hugepages-"):
            total[k] = v
    for k, v in parse_list(spec.get("overhead")).items():
        if k in total or which == 0:
            _put_add(total, k, v)
    return total


def _pod_requests(pod: Obj) -> ResourceList:
    return _pod_aggregate(pod, 0)


def pod_is_quota_tracked(pod: Obj, now: datetime | None = None) -> bool:
    """QuotaV1Pod: terminal pods, and pods past their deletion grace period, no longer count."""
    phase = (pod.get("status") or {}).get("phase")
    if phase in ("Succeeded", "Failed"):
        return False
    m = pod.get("metadata") or {}
    if m.get("deletionTimestamp") and m.get("deletionGracePeriodSeconds") is not None:
        try:
            ts = datetime.strptime(m["deletionTimestamp"], "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
        except ValueError:
            return True
        if (now or datetime.now(UTC)) > ts:
            return False
    return True


def pod_usage(pod: Obj, lookup: Lookup) -> ResourceList:
    """Upstream's PodUsageFunc, plus KEP-5004: a pod's implicit extended-resource request
    (`deviceclass.resource.kubernetes.io/C`) also counts towards `requests.E` when class C maps E."""
    result: ResourceList = {POD_COUNT: Quantity.from_int(1)}
    if not pod_is_quota_tracked(pod):
        return result
    requests = _pod_aggregate(pod, 0)
    limits = _pod_aggregate(pod, 1)
    result = add(result, compute_usage(requests, limits))
    for name, q in requests.items():
        if name.startswith(IMPLICIT_EXTENDED_PREFIX):
            ext = lookup.extended_resource_of(name[len(IMPLICIT_EXTENDED_PREFIX):])
            if ext:
                _put_add(result, REQUESTS_PREFIX + ext, q)
    return result


def compute_usage(requests: ResourceList, limits: ResourceList) -> ResourceList:
    """podComputeUsageHelper."""
    result: ResourceList = {"pods": Quantity.from_int(1)}
    for r in _COMPUTE:
        if r in requests:
            result[r] = requests[r]
            result[REQUESTS_PREFIX + r] = requests[r]
        if r in limits:
            result[LIMITS_PREFIX + r] = limits[r]
    for name, q in requests.items():
        if name.startswith("hugepages-"):
            result[name] = q
            result[REQUESTS_PREFIX + name] = q
        elif is_extended_resource_name(name):
            result[REQUESTS_PREFIX + name] = q
    return result


def pod_constraints(required: Iterable[str], pod: Obj) -> str | None:
    """Quotas on cpu/memory require every container to state them (upstream's backward-compatible rule)."""
    required_set = set(required) & set(_POD_VALIDATION_SET)
    if not required_set:
        return None
    spec = pod.get("spec") or {}
    if (spec.get("resources") or {}):
        return None  # pod-level resources satisfy the constraint
    missing: dict[str, set[str]] = {}
    for c in list(spec.get("containers") or []) + list(spec.get("initContainers") or []):
        if not isinstance(c, dict):
            continue
        res = c.get("resources") or {}
        have = set(compute_usage(parse_list(res.get("requests")), parse_list(res.get("limits"))))
        for r in required_set - have:
            missing.setdefault(r, set()).add(c.get("name") or "")
    if not missing:
        return None
    parts = [f"{r} for: {','.join(sorted(missing[r]))}" for r in sorted(missing)]
    return "must specify " + "; ".join(parts)


# ---------------------------------------------------------------- scopes


def _scope_selectors(quota: Obj) -> list[Obj]:
    spec = quota.get("spec") or {}
    out = [{"scopeName": s, "operator": "Exists"} for s in spec.get("scopes") or []]
    out += list(((spec.get("scopeSelector") or {}).get("matchExpressions")) or [])
    return out


def pod_matches_scope(sel: Obj, pod: Obj) -> bool:
    spec = pod.get("spec") or {}
    name = sel.get("scopeName")
    if name == "Terminating":
        return spec.get("activeDeadlineSeconds") is not None and spec.get("activeDeadlineSeconds", -1) >= 0
    if name == "NotTerminating":
        return spec.get("activeDeadlineSeconds") is None
    if name in ("BestEffort", "NotBestEffort"):
        best = _is_best_effort(pod)
        return best if name == "BestEffort" else not best
    if name == "PriorityClass":
        pc = spec.get("priorityClassName") or ""
        op, values = sel.get("operator"), sel.get("values") or []
        if op == "Exists":
            return bool(pc)
        if op == "DoesNotExist":
            return not pc
        if op == "In":
            return pc in values
        if op == "NotIn":
            return pc not in values
        return False
    if name == "CrossNamespacePodAffinity":
        return _uses_cross_namespace_affinity(spec)
    return False


def _is_best_effort(pod: Obj) -> bool:
    spec = pod.get("spec") or {}
    for c in list(spec.get("containers") or []) + list(spec.get("initContainers") or []):
        res = (c or {}).get("resources") or {}
        for part in ("requests", "limits"):
            if any(k in ("cpu", "memory") for k in (res.get(part) or {})):
                return False
    return True


def _uses_cross_namespace_affinity(spec: Obj) -> bool:
    affinity = spec.get("affinity") or {}
    for kind in ("podAffinity", "podAntiAffinity"):
        a = affinity.get(kind) or {}
        terms = list(a.get("requiredDuringSchedulingIgnoredDuringExecution") or [])
        terms += [(t or {}).get("podAffinityTerm") or {} for t in
                  a.get("preferredDuringSchedulingIgnoredDuringExecution") or []]
        for t in terms:
            if (t or {}).get("namespaces") or (t or {}).get("namespaceSelector") is not None:
                return True
    return False


# ---------------------------------------------------------------- evaluators


@dataclass
class Evaluator:
    """One group-resource's quota evaluator (upstream's quota.Evaluator, reduced to what is used here)."""

    group_resource: str  # "pods", "resourceclaims.resource.k8s.io"
    matching: Callable[[Iterable[str]], list[str]]
    usage: Callable[[Obj, Lookup], ResourceList]
    scope: Callable[[Obj, Obj], bool] | None = None  # None: a scoped quota never matches (MatchesNoScopeFunc)
    constraints: Callable[[Iterable[str], Obj], str | None] | None = None
    handles_update: Callable[[str], bool] = staticmethod(lambda subresource: False)

    def matches(self, quota: Obj, obj: Obj, hard: ResourceList) -> bool:
        if not self.matching(hard):
            return False
        for sel in _scope_selectors(quota):
            if self.scope is None or not self.scope(sel, obj):
                return False
        return True


def count_name(group_resource: str) -> str:
    return "count/" + group_resource


def _object_count_evaluator(group_resource: str) -> Evaluator:
    names = [count_name(group_resource)]
    if group_resource in _LEGACY_COUNT:
        names.append(_LEGACY_COUNT[group_resource])

    def usage(_obj: Obj, _lookup: Lookup) -> ResourceList:
        return {n: Quantity.from_int(1) for n in names}

    return Evaluator(group_resource, lambda items: [n for n in items if n in names], usage)


POD_EVALUATOR = Evaluator("pods", pod_matching_resources, pod_usage, scope=pod_matches_scope,
                          constraints=pod_constraints,
                          handles_update=lambda sub: sub == "resize")
CLAIM_EVALUATOR = Evaluator("resourceclaims.resource.k8s.io", claim_matching_resources, claim_usage,
                            handles_update=lambda sub: sub == "")


def evaluator_for(group_resource: str) -> Evaluator:
    if group_resource == "pods":
        return POD_EVALUATOR
    if group_resource == CLAIM_EVALUATOR.group_resource:
        return CLAIM_EVALUATOR
    return _object_count_evaluator(group_resource)


def group_resources_in(names: Iterable[str]) -> set[str]:
    """The group-resources whose usage a quota's hard names need (for the controller's listing)."""
    out: set[str] = set()
    names = list(names)
    if pod_matching_resources(names):
        out.add("pods")
    if claim_matching_resources(names):
        out.add(CLAIM_EVALUATOR.group_resource)
    for n in names:
        if n.startswith("count/") and n not in (POD_COUNT, CLAIM_COUNT):
            out.add(n[len("count/"):])
        elif n in _LEGACY_COUNT:
            out.add(_LEGACY_COUNT[n])
    return out


def calculate_usage(quota: Obj, objects: Callable[[str], list[Obj]], lookup: Lookup) -> ResourceList:
    """Usage of everything in the quota's namespace for the quota's spec.hard (upstream CalculateUsage):
    every matched resource present, zero when nothing uses it."""
    hard = parse_list((quota.get("spec") or {}).get("hard"))
    used: ResourceList = {}
    for gr in sorted(group_resources_in(hard)):
        ev = evaluator_for(gr)
        names = ev.matching(hard)
        if not names:
            continue
        for n in names:
            used.setdefault(n, Quantity.from_int(0))
        selectors = _scope_selectors(quota)
        for obj in objects(gr):
            if selectors and (ev.scope is None or not all(ev.scope(s, obj) for s in selectors)):
                continue
            used = add(used, mask(ev.usage(obj, lookup), names))
    return mask(used, hard)


# ---------------------------------------------------------------- the admission plugin


