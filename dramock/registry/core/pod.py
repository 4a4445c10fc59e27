"""core/v1 Pod: its registry entry, strategy (upstream's pkg/registry/core/pod), gated fields
(pkg/api/pod/util.go), table (printers.go printPod) and quota evaluator (pkg/quota/v1/evaluator/core/pods.go)."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any

from dramock import errors, timefmt
from dramock.jsonvalue import clone
from dramock.registry import quota as q
from dramock.registry.core.podspec import default_container
from dramock.registry.gatedfields import GatedFields
from dramock.registry.kind import Kind, selectable
from dramock.registry.printing import (
    CORE,
    Printer,
    Row,
    age,
    age_col,
    col,
    doc,
    get,
    human_duration,
    later,
    md,
    name,
    name_col,
)
from dramock.registry.strategy import Strategy
from dramock.schemas import validation as semantic
from dramock.schemas.quantity import Quantity
from dramock.schemas.validation.field import Cause
from dramock.schemas.validation.pod import validate_pod_create, validate_pod_spec_basics, validate_pod_spec_update

Obj = dict[str, Any]
_ROOT = "io.k8s.api.core.v1.Pod"

# pkg/api/pod/util.go dropDisabledFields / dropDisabledPodStatusFields
GATED_FIELDS = (
    GatedFields(("DynamicResourceAllocation",), "Pod",
                ("spec.resourceClaims", "spec.containers[*].resources.claims",
                 "spec.initContainers[*].resources.claims", "spec.ephemeralContainers[*].resources.claims",
                 "status.resourceClaimStatuses"),
                in_use=("spec.resourceClaims",),
                upstream="pod dropDisabledDynamicResourceAllocationFields (dynamicResourceAllocationInUse)",
                root=_ROOT),
    GatedFields(("DRAExtendedResource",), "Pod", ("status.extendedResourceClaimStatus",),
                upstream="pod dropDisabledPodStatusFields (draExendedResourceInUse)", root=_ROOT),
    GatedFields(("DRANodeAllocatableResources",), "Pod", ("status.nodeAllocatableResourceClaimStatuses",),
                upstream="pod dropDisabledPodStatusFields (node allocatable claim statuses, KEP-5517)", root=_ROOT),
)

# ---------------------------------------------------------------- defaulting and strategy


def default(obj: Obj) -> None:
    spec = obj.setdefault("spec", {})
    spec.setdefault("restartPolicy", "Always")
    spec.setdefault("terminationGracePeriodSeconds", 30)
    spec.setdefault("dnsPolicy", "ClusterFirst")
    spec.setdefault("securityContext", {})
    spec.setdefault("schedulerName", "default-scheduler")
    spec.setdefault("enableServiceLinks", True)
    spec.setdefault("preemptionPolicy", "PreemptLowerPriority")
    spec.setdefault("priority", 0)
    if spec.get("serviceAccountName") is None:
        spec["serviceAccountName"] = "default"
        spec.setdefault("serviceAccount", "default")
    for c in spec.get("containers") or []:
        if isinstance(c, dict):
            default_container(c)
    for c in spec.get("initContainers") or []:
        if isinstance(c, dict):
            default_container(c, init=True)
    tolerations = spec.setdefault("tolerations", [])
    if isinstance(tolerations, list):
        # The DefaultTolerationSeconds admission plugin adds these to every pod.
        for key in ("node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable"):
            if not any(isinstance(t, dict) and t.get("key") == key for t in tolerations):
                tolerations.append({"key": key, "operator": "Exists", "effect": "NoExecute",
                                    "tolerationSeconds": 300})


def pod_qos_class(pod: Obj) -> str:
    requests_seen = limits_seen = False
    guaranteed = True
    containers = list((pod.get("spec") or {}).get("containers") or []) + \
        list((pod.get("spec") or {}).get("initContainers") or [])
    for c in containers:
        res = (c or {}).get("resources") or {}
        req = {k: v for k, v in (res.get("requests") or {}).items() if k in ("cpu", "memory")}
        lim = {k: v for k, v in (res.get("limits") or {}).items() if k in ("cpu", "memory")}
        requests_seen = requests_seen or bool(req)
        limits_seen = limits_seen or bool(lim)
        if set(lim) != {"cpu", "memory"} or any(req.get(k, lim[k]) != lim[k] for k in lim):
            guaranteed = False
    if not requests_seen and not limits_seen:
        return "BestEffort"
    return "Guaranteed" if guaranteed else "Burstable"


class PodStrategy(Strategy):
    gated_fields = GATED_FIELDS

    def default(self, obj: Obj) -> None:
        default(obj)

    def validate_semantic(self, obj: Obj) -> list[Cause]:
        return validate_pod_spec_basics(obj) + validate_pod_create(obj) + \
            semantic.validate_pod_spec_resource_claims(obj)

    def validate_semantic_update(self, new: Obj, old: Obj) -> list[Cause]:
        return validate_pod_spec_basics(new) + semantic.validate_pod_spec_resource_claims(new) + \
            validate_pod_spec_update(new, old)

    def validate_status_update(self, new: Obj, old: Obj) -> list[Cause]:
        return super().validate_status_update(new, old) + semantic.validate_pod_status_resource_claims(new)

    def prepare_for_create(self, obj: Obj) -> None:
        super().prepare_for_create(obj)
        obj["status"] = {"phase": "Pending", "qosClass": pod_qos_class(obj)}

    def prepare_for_status_update(self, new: Obj, old: Obj) -> None:
        super().prepare_for_status_update(new, old)
        # qosClass is fixed at creation.
        if "qosClass" in (old.get("status") or {}):
            new.setdefault("status", {})["qosClass"] = old["status"]["qosClass"]

    def bind(self, current: Obj, target: str) -> Obj:
        """pods/binding: spec.nodeName of an unbound pod, and its PodScheduled condition."""
        name = current["metadata"].get("name", "")
        if (current.get("spec") or {}).get("nodeName"):
            raise errors.conflict("pods", "", name, f"pod {name} is already assigned to node "
                                  f"\"{current['spec']['nodeName']}\"")
        if current["metadata"].get("deletionTimestamp"):
            raise errors.conflict("pods", "", name, f"pod {name} is being deleted, cannot be assigned to a host")
        pod = clone(current)
        pod["spec"]["nodeName"] = target
        conditions = [c for c in (pod.get("status") or {}).get("conditions") or [] if c.get("type") != "PodScheduled"]
        conditions.append({"type": "PodScheduled", "status": "True", "lastProbeTime": None,
                           "lastTransitionTime": timefmt.now()})
        pod.setdefault("status", {})["conditions"] = conditions
        # The nomination (set while PreBind waited, e.g. for binding conditions) is over once the pod is bound
        # (upstream's ClearingNominatedNodeNameAfterBinding).
        pod["status"].pop("nominatedNodeName", None)
        return pod

    def grace_period(self, old: Obj, options: Obj) -> int:
        """Pods bound to a node are deleted gracefully (the kubelet confirms); others at once (as upstream)."""
        requested = options.get("gracePeriodSeconds")
        spec, status = old.get("spec") or {}, old.get("status") or {}
        if not spec.get("nodeName") or status.get("phase") in ("Succeeded", "Failed"):
            return 0
        if requested is None:
            current = old["metadata"].get("deletionGracePeriodSeconds")
            requested = current if current is not None else spec.get("terminationGracePeriodSeconds", 30)
        return max(int(requested), 0)

    def graceful_deletion_pending(self, obj: Obj) -> bool:
        """Still in its graceful termination: the kubelet has not confirmed yet."""
        return (obj["metadata"].get("deletionGracePeriodSeconds") or 0) > 0


# ---------------------------------------------------------------- printing


def _columns() -> list[Obj]:
    return [
        name_col(),
        col("Ready", "string", "The aggregate readiness state of this pod for accepting traffic."),
        col("Status", "string", "The aggregate status of the containers in this pod."),
        col("Restarts", "string", "The number of times the containers in this pod have been restarted "
            "and when the last container in this pod has restarted."),
        age_col(),
        col("IP", "string", doc(CORE + "PodStatus", "podIP"), priority=1),
        col("Node", "string", doc(CORE + "PodSpec", "nodeName"), priority=1),
        col("Nominated Node", "string", doc(CORE + "PodStatus", "nominatedNodeName"), priority=1),
        col("Readiness Gates", "string", doc(CORE + "PodSpec", "readinessGates"), priority=1),
    ]


def _conditions(obj: Obj) -> list[Obj] | None:
    """A finished pod's row says so."""
    phase = (obj.get("status") or {}).get("phase") or ""
    return _POD_SUCCEEDED if phase == "Succeeded" else _POD_FAILED if phase == "Failed" else None


_POD_SUCCEEDED = [{"type": "Completed", "status": "True", "reason": "Succeeded",
                   "message": "The pod has completed successfully."}]
_POD_FAILED = [{"type": "Completed", "status": "True", "reason": "Failed", "message": "The pod failed."}]


def _row(obj: Obj, now: datetime) -> Row:
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    containers = spec.get("containers") or []
    init_specs = {c.get("name"): c for c in spec.get("initContainers") or []}
    restarts = restartable_restarts = 0
    total = len(containers)
    ready = 0
    last_restart: datetime | None = None
    last_restartable: datetime | None = None

    phase = status.get("phase") or ""
    reason = status.get("reason") or phase
    for cond in status.get("conditions") or []:
        if cond.get("type") == "PodScheduled" and cond.get("reason") == "SchedulingGated":
            reason = "SchedulingGated"

    def restartable(name: Any) -> bool:
        return (init_specs.get(name) or {}).get("restartPolicy") == "Always"

    total += sum(1 for c in init_specs.values() if c.get("restartPolicy") == "Always")

    initializing = False
    init_statuses = status.get("initContainerStatuses") or []
    for i, cs in enumerate(init_statuses):
        restarts += int(cs.get("restartCount") or 0)
        finished = get(cs, "lastState", "terminated", "finishedAt")
        last_restart = later(last_restart, finished)
        if restartable(cs.get("name")):
            restartable_restarts += int(cs.get("restartCount") or 0)
            last_restartable = later(last_restartable, finished)
        state = cs.get("state") or {}
        term, waiting = state.get("terminated"), state.get("waiting")
        if term is not None and int(term.get("exitCode") or 0) == 0:
            continue
        if restartable(cs.get("name")) and cs.get("started"):
            if cs.get("ready"):
                ready += 1
            continue
        if term is not None:
            if not term.get("reason"):
                if term.get("signal"):
                    reason = f"Init:Signal:{term['signal']}"
                else:
                    reason = f"Init:ExitCode:{int(term.get('exitCode') or 0)}"
            else:
                reason = "Init:" + term["reason"]
        elif waiting is not None and waiting.get("reason") and waiting["reason"] != "PodInitializing":
            reason = "Init:" + waiting["reason"]
        else:
            reason = f"Init:{i}/{len(spec.get('initContainers') or [])}"
        initializing = True
        break

    initialized = next((c.get("status") == "True" for c in status.get("conditions") or []
                        if c.get("type") == "Initialized"), False)
    if not initializing or initialized:
        restarts, last_restart = restartable_restarts, last_restartable
        has_running = False
        for cs in reversed(status.get("containerStatuses") or []):
            restarts += int(cs.get("restartCount") or 0)
            last_restart = later(last_restart, get(cs, "lastState", "terminated", "finishedAt"))
            state = cs.get("state") or {}
            term, waiting = state.get("terminated"), state.get("waiting")
            if waiting is not None and waiting.get("reason"):
                reason = waiting["reason"]
            elif term is not None and term.get("reason"):
                reason = term["reason"]
            elif term is not None:
                if term.get("signal"):
                    reason = f"Signal:{term['signal']}"
                else:
                    reason = f"ExitCode:{int(term.get('exitCode') or 0)}"
            elif cs.get("ready") and state.get("running") is not None:
                has_running = True
                ready += 1
        if reason == "Completed" and has_running:
            pod_ready = any(c.get("type") == "Ready" and c.get("status") == "True"
                            for c in status.get("conditions") or [])
            reason = "Running" if pod_ready else "NotReady"

    if md(obj).get("deletionTimestamp") and status.get("reason") == "NodeLost":
        reason = "Unknown"
    elif md(obj).get("deletionTimestamp") and phase not in ("Failed", "Succeeded"):
        reason = "Terminating"

    restarts_str = str(restarts)
    if restarts != 0 and last_restart is not None:
        restarts_str = f"{restarts} ({human_duration((now - last_restart).total_seconds())} ago)"

    pod_ips = status.get("podIPs") or []
    pod_ip = (pod_ips[0].get("ip") if pod_ips else "") or "<none>"
    gates = spec.get("readinessGates") or []
    readiness = "<none>"
    if gates:
        true_count = 0
        for gate in gates:
            for cond in status.get("conditions") or []:
                if cond.get("type") == gate.get("conditionType"):
                    if cond.get("status") == "True":
                        true_count += 1
                    break
        readiness = f"{true_count}/{len(gates)}"
    cells = [name(obj), f"{ready}/{total}", reason, restarts_str, age(obj, now),
             pod_ip, spec.get("nodeName") or "<none>", status.get("nominatedNodeName") or "<none>", readiness]
    return cells


PRINTER = Printer(_columns, _row, _conditions)


# ---------------------------------------------------------------- quota

POD_COUNT = "count/pods"
_COMPUTE = ("cpu", "memory", "ephemeral-storage")
# Pod constraints: quotas on these require every container to state the resource (upstream's validationSet).
_POD_VALIDATION_SET = ("cpu", "memory", "requests.cpu", "requests.memory", "limits.cpu", "limits.memory")


def pod_matching_resources(names: Iterable[str]) -> list[str]:
    out = []
    for n in names:
        if n in ("pods", POD_COUNT) or n in _COMPUTE or \
                n in {p + r for p in (q.REQUESTS_PREFIX, q.LIMITS_PREFIX) for r in _COMPUTE}:
            out.append(n)
        elif n.startswith("hugepages-") or n.startswith(q.REQUESTS_PREFIX + "hugepages-"):
            out.append(n)
        elif n.startswith(q.REQUESTS_PREFIX) and q.quota_extended_resource_name(n[len(q.REQUESTS_PREFIX):]):
            out.append(n)
    return out


def _container_lists(c: Obj) -> tuple[q.ResourceList, q.ResourceList]:
    res = c.get("resources") or {}
    limits = q.parse_list(res.get("limits"))
    requests = q.parse_list(res.get("requests"))
    for k, v in limits.items():  # limits default the requests (defaulting already does this on write)
        requests.setdefault(k, v)
    return requests, limits


def _max_lists(a: q.ResourceList, b: q.ResourceList) -> q.ResourceList:
    out = dict(a)
    for k, v in b.items():
        out[k] = q.max_of(out.get(k), v)
    return out


def _pod_aggregate(pod: Obj, which: int) -> q.ResourceList:
    """resourcehelper.PodRequests / PodLimits: containers summed, sidecars (restartable init containers)
    running beside them, each other init container's need (with the sidecars started before it) maxed in,
    plus the pod overhead. Pod-level resources, when set, win for the resources they name."""
    spec = pod.get("spec") or {}
    total: q.ResourceList = {}
    for c in spec.get("containers") or []:
        if isinstance(c, dict):
            total = q.add(total, _container_lists(c)[which])
    sidecars: q.ResourceList = {}
    init_max: q.ResourceList = {}
    for c in spec.get("initContainers") or []:
        if not isinstance(c, dict):
            continue
        mine = _container_lists(c)[which]
        if c.get("restartPolicy") == "Always":
            total = q.add(total, mine)
            sidecars = q.add(sidecars, mine)
            need = sidecars
        else:
            need = q.add(mine, sidecars)
        init_max = _max_lists(init_max, need)
    total = _max_lists(total, init_max)
    pod_res = spec.get("resources") or {}
    pod_level = q.parse_list(pod_res.get("limits"))
    if which == 0:  # pod-level limits default pod-level requests
        pod_level.update(q.parse_list(pod_res.get("requests")))
    for k, v in pod_level.items():
        if k in _COMPUTE or k.startswith("hugepages-"):
            total[k] = v
    for k, v in q.parse_list(spec.get("overhead")).items():
        if k in total or which == 0:
            q.put_add(total, k, v)
    return total


def pod_requests(pod: Obj) -> q.ResourceList:
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


def pod_usage(pod: Obj, lookup: q.Lookup) -> q.ResourceList:
    """Upstream's PodUsageFunc, plus KEP-5004: a pod's implicit extended-resource request
    (`deviceclass.resource.kubernetes.io/C`) also counts towards `requests.E` when class C maps E."""
    result: q.ResourceList = {POD_COUNT: Quantity.from_int(1)}
    if not pod_is_quota_tracked(pod):
        return result
    requests = _pod_aggregate(pod, 0)
    limits = _pod_aggregate(pod, 1)
    result = q.add(result, compute_usage(requests, limits))
    for res_name, qty in requests.items():
        if res_name.startswith(q.IMPLICIT_EXTENDED_PREFIX):
            ext = lookup.extended_resource_of(res_name[len(q.IMPLICIT_EXTENDED_PREFIX):])
            if ext:
                q.put_add(result, q.REQUESTS_PREFIX + ext, qty)
    return result


def compute_usage(requests: q.ResourceList, limits: q.ResourceList) -> q.ResourceList:
    """podComputeUsageHelper."""
    result: q.ResourceList = {"pods": Quantity.from_int(1)}
    for r in _COMPUTE:
        if r in requests:
            result[r] = requests[r]
            result[q.REQUESTS_PREFIX + r] = requests[r]
        if r in limits:
            result[q.LIMITS_PREFIX + r] = limits[r]
    for res_name, qty in requests.items():
        if res_name.startswith("hugepages-"):
            result[res_name] = qty
            result[q.REQUESTS_PREFIX + res_name] = qty
        elif q.quota_extended_resource_name(res_name):
            result[q.REQUESTS_PREFIX + res_name] = qty
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
        have = set(compute_usage(q.parse_list(res.get("requests")), q.parse_list(res.get("limits"))))
        for r in required_set - have:
            missing.setdefault(r, set()).add(c.get("name") or "")
    if not missing:
        return None
    parts = [f"{r} for: {','.join(sorted(missing[r]))}" for r in sorted(missing)]
    return "must specify " + "; ".join(parts)


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


QUOTA = q.Evaluator("pods", pod_matching_resources, pod_usage, scope=pod_matches_scope,
                    constraints=pod_constraints, handles_update=lambda sub: sub == "resize")

KIND = Kind("", "v1", "Pod", "pods", True, short_names=("po",), categories=("all",),
            subresources=("status", "binding", "log", "exec", "attach", "portforward"),
            selectable_fields={
                "spec.nodeName": selectable("spec", "nodeName"),
                "spec.restartPolicy": selectable("spec", "restartPolicy"),
                "spec.schedulerName": selectable("spec", "schedulerName"),
                "spec.serviceAccountName": selectable("spec", "serviceAccountName"),
                "spec.hostNetwork": selectable("spec", "hostNetwork", default="false"),
                "status.phase": selectable("status", "phase"),
                "status.podIP": selectable("status", "podIP"),
                "status.nominatedNodeName": selectable("status", "nominatedNodeName"),
            },
            return_deleted_object=True, tracks_generation=True, strategy=PodStrategy, printer=PRINTER)
