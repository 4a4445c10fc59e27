"""The scheduler loop (kube-scheduler's `default-scheduler` with the DynamicResources plugin, KEP-4381).

An API client like the real one: informers for pods, nodes, ResourceClaims, ResourceSlices, DeviceClasses and
DeviceTaintRules; a scheduling queue (active / backoff 1s→10s / unschedulable, cluster events move
unschedulable pods back); one scheduling cycle at a time, binding cycles concurrently.

Per pod, as upstream's framework runs its plugins:

- PreEnqueue: every ResourceClaim of the pod exists (generated claims are named in
  `pod.status.resourceClaimStatuses`); until then the pod waits without an event.
- PreFilter: claims being deleted, generated claims not owned by the pod, claims whose allocation is still in
  flight for another pod reject the pod on all nodes.
- Filter per node: node unschedulable, node affinity / nodeSelector, taints, cpu / memory / pods / extended
  resources, then DRA: allocated claims must be usable from the node (`status.allocation.nodeSelector`) and
  reservable (reservedFor below 256); unallocated claims must be allocatable on the node (`allocate()`).
- Score: fewest devices allocated on the node, then fewest pods, then name.
- Reserve: the new allocations are kept in memory (in flight) so no other pod gets the same devices.
- PreBind: finalizer `resource.kubernetes.io/delete-protection`, then `status.allocation` and
  `status.reservedFor` through /status; Bind: `POST pods/<name>/binding`. A failure undoes the reservation
  (and removes the pod from reservedFor) and retries the pod with backoff.
- Binding conditions (KEP-5007, see bindingconditions.py): when an allocated device has `bindingConditions`,
  PreBind sets `status.nominatedNodeName`, records a `BindingConditionsPending` event and waits (at most the
  binding timeout, `--dra-binding-timeout`) until the driver reports every condition True. A failure condition
  or the timeout fails PreBind: the pod leaves reservedFor but the claim stays allocated, the pod gets
  `PodScheduled=False/SchedulerError` and a FailedScheduling event, and the next attempt's Filter finds the
  claim unavailable so that PostFilter deallocates it.

Failures give a `FailedScheduling` Warning event (`0/2 nodes are available: 2 cannot allocate all claims.`) and
the `PodScheduled=False` condition with reason `Unschedulable`; success a `Scheduled` Normal event.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import json
import logging
import socket
import time
from collections import Counter, deque
from collections.abc import Callable
from datetime import datetime, timezone
from fractions import Fraction
from typing import Any

import aiohttp

from dramock.client.informer import Informer
from dramock.client.rest import APIStatusError, Client, resource_path
from dramock.scheduler import bindingconditions, extended, filtercache, nodeallocatable
from dramock.scheduler.state import HeldDevices, NodeUsage, TrackedDict
from dramock.scheduler.types import AllocationInput, AllocationOutcome
from dramock.schemas.featuregates import FeatureGates
from dramock.schemas.quantity import parse_quantity

log = logging.getLogger("dramock.scheduler")

Obj = dict[str, Any]
Allocate = Callable[[AllocationInput], AllocationOutcome]

SCHEDULER_NAME = "default-scheduler"
GROUP, VERSION = "resource.k8s.io", "v1"
FINALIZER = "resource.kubernetes.io/delete-protection"
POD_CLAIM_ANNOTATION = "resource.kubernetes.io/pod-claim-name"
RESERVED_FOR_MAX = 256
INITIAL_BACKOFF = 1.0
MAX_BACKOFF = 10.0
# Pods left unschedulable this long are retried even without a cluster event (upstream: 5 minutes).
UNSCHEDULABLE_FLUSH = 60.0
# Identical FailedScheduling events for one pod are not repeated more often than this.
EVENT_REPEAT_INTERVAL = 60.0

MSG_NODE_AFFINITY = "node(s) didn't match Pod's node affinity/selector"
MSG_UNSCHEDULABLE = "node(s) were unschedulable"
MSG_CANNOT_ALLOCATE = "cannot allocate all claims"
MSG_NOT_AVAILABLE = "resourceclaim not available on the node"
MSG_IN_USE = "resourceclaim in use"
MSG_NO_NODES = "no nodes available to schedule pods"
MSG_FILTER_TIMEOUT = "timed out trying to allocate devices"
# DRASchedulerFilterTimeout: the allocation budget per node (upstream's DynamicResourcesArgs.filterTimeout).
FILTER_TIMEOUT = 10.0
PLUGIN = "DynamicResources"


class _Metrics:
    """kube-scheduler's metrics (pkg/scheduler/metrics) on prometheus_client's default registry, which `serve`
    exposes on the API server's /metrics. Created once per process; None without prometheus_client."""

    def __init__(self) -> None:
        from prometheus_client import Counter as PCounter
        from prometheus_client import Gauge, Histogram

        self.pending_pods = Gauge("scheduler_pending_pods", "Number of pending pods, by the queue type. 'active' "
                                  "means number of pods in activeQ; 'backoff' means number of pods in backoffQ; "
                                  "'unschedulable' means number of pods in unschedulablePods that the scheduler "
                                  "attempted to schedule and failed; 'gated' is the number of unschedulable pods "
                                  "that the scheduler never attempted to schedule because they are gated.",
                                  ["queue"])
        self.schedule_attempts = PCounter("scheduler_schedule_attempts", "Number of attempts to schedule pods, by "
                                          "the result. 'unschedulable' means a pod could not be scheduled, while "
                                          "'error' means an internal scheduler problem.", ["result", "profile"])
        self.claim_creates = PCounter("scheduler_resourceclaim_creates", "Number of ResourceClaims creation "
                                      "requests within scheduler", ["status"])
        self.binding_conditions_allocations = PCounter(
            "scheduler_dra_bindingconditions_allocations", "Number of allocations using devices with "
            "BindingConditions, counted per driver per scheduling attempt", ["profile", "driver", "status"])
        self.binding_conditions_wait = Histogram(
            "scheduler_dra_bindingconditions_wait_duration_seconds", "Time in seconds spent waiting for "
            "BindingConditions to be satisfied during PreBind.", ["profile", "driver", "status"],
            buckets=[0.1 * 2 ** i for i in range(14)])
        self.plugin_duration = Histogram(
            "scheduler_plugin_execution_duration_seconds", "Duration for running a plugin at a specific "
            "extension point.", ["plugin", "extension_point", "status"],
            buckets=[0.00001 * 1.5 ** i for i in range(20)])


_metrics: _Metrics | None = None
_metrics_failed = False


def metrics() -> _Metrics | None:
    global _metrics, _metrics_failed
    if _metrics is None and not _metrics_failed:
        try:
            _metrics = _Metrics()
        except (ImportError, ValueError) as e:  # no prometheus_client, or the names are taken
            log.info("scheduler metrics disabled: %s", e)
            _metrics_failed = True
    return _metrics


_plugin_histograms: dict[tuple[str, str], Any] = {}  # labels() costs more than the observation itself


def _observe(extension_point: str, status: str, start: float) -> None:
    m = metrics()
    if m is not None:
        child = _plugin_histograms.get((extension_point, status))
        if child is None:
            child = _plugin_histograms[extension_point, status] = m.plugin_duration.labels(
                PLUGIN, extension_point, status)
        child.observe(time.perf_counter() - start)


def now_time() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


class WaitingForClaims(Exception):
    """PreEnqueue: a claim of the pod does not exist yet. `claim` (ns, name): the claim whose events may let it
    in; None: it waits for its own status (the name of a claim generated from a template)."""

    def __init__(self, message: str, claim: tuple[str, str] | None = None):
        super().__init__(message)
        self.claim = claim


class Unschedulable(Exception):
    """No node fits the pod. `unavailable`: its allocated claims that some node rejected for their allocation
    (PostFilter may deallocate one so that the next attempt can allocate it elsewhere)."""

    def __init__(self, message: str, unavailable: list[Obj] | None = None):
        super().__init__(message)
        self.unavailable = unavailable or []


class BindError(Exception):
    pass


# ---------------------------------------------------------------- node fit helpers (pure)


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


def _match_expression(expr: Obj, value: str | None) -> bool:
    op = expr.get("operator")
    values = expr.get("values") or []
    if op == "In":
        return value is not None and value in values
    if op == "NotIn":
        return value is None or value not in values
    if op == "Exists":
        return value is not None
    if op == "DoesNotExist":
        return value is None
    if op in ("Gt", "Lt"):
        if value is None or len(values) != 1:
            return False
        try:
            a, b = int(value), int(values[0])
        except ValueError:
            return False
        return a > b if op == "Gt" else a < b
    return False


def match_node_selector_term(term: Obj, node: Obj) -> bool:
    exprs = term.get("matchExpressions") or []
    fields = term.get("matchFields") or []
    if not exprs and not fields:
        return False  # an empty term matches no objects
    labels = node["metadata"].get("labels") or {}
    for e in exprs:
        if not _match_expression(e, labels.get(e.get("key", ""))):
            return False
    for f in fields:
        if f.get("key") != "metadata.name" or not _match_expression(f, node["metadata"]["name"]):
            return False
    return True


def match_node_selector(selector: Obj | None, node: Obj) -> bool:
    """A v1 NodeSelector: the terms are ORed (None = everything)."""
    if selector is None:
        return True
    return any(match_node_selector_term(t, node) for t in selector.get("nodeSelectorTerms") or [])


def matches_node_affinity(pod: Obj, node: Obj) -> bool:
    spec = pod.get("spec") or {}
    labels = node["metadata"].get("labels") or {}
    for k, v in (spec.get("nodeSelector") or {}).items():
        if labels.get(k) != v:
            return False
    required = ((spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution")
    return match_node_selector(required, node) if required is not None else True


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


def fit_error_message(num_nodes: int, reasons: Counter[str]) -> str:
    """Upstream's FitError.Error(): `0/N nodes are available: <count reason>, ....`"""
    if num_nodes == 0:
        return MSG_NO_NODES
    parts = sorted(f"{n} {r}" for r, n in reasons.items())
    return f"0/{num_nodes} nodes are available: {', '.join(parts)}."


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


def allocated_claims_reason(node: Obj, allocated: list[Obj], uid: str | None,
                            unavailable: Callable[[Obj], bool] | None = None) -> tuple[str | None, Obj | None]:
    """Why the pod's allocated claims rule the node out (None: they don't), and the claim whose allocation
    is elsewhere, or which `unavailable` says is (binding failed or timed out): a PostFilter candidate."""
    for c in allocated:
        status = c["status"]
        if not match_node_selector(status["allocation"].get("nodeSelector"), node):
            return MSG_NOT_AVAILABLE, c
        if unavailable is not None and unavailable(c):
            return MSG_NOT_AVAILABLE, c
        reserved = status.get("reservedFor") or []
        if not any(r.get("uid") == uid for r in reserved) and len(reserved) >= RESERVED_FOR_MAX:
            return MSG_IN_USE, None
    return None, None


def pod_claim_refs(pod: Obj) -> list[tuple[str, str | None, bool]]:
    """(pod claim name, ResourceClaim name, generated?) per pod claim. Raises WaitingForClaims when a
    generated claim is not recorded in the pod status yet; a name of None means no claim is needed."""
    statuses = {s.get("name"): s for s in (pod.get("status") or {}).get("resourceClaimStatuses") or []}
    out: list[tuple[str, str | None, bool]] = []
    for pc in (pod.get("spec") or {}).get("resourceClaims") or []:
        if pc.get("resourceClaimName"):
            out.append((pc["name"], pc["resourceClaimName"], False))
        elif pc.get("resourceClaimTemplateName"):
            st = statuses.get(pc.get("name"))
            if st is None:
                raise WaitingForClaims(f"waiting for the ResourceClaim of pod claim {pc.get('name')!r} to be created")
            out.append((pc["name"], st.get("resourceClaimName") or None, True))
    return out


def feasible_nodes_to_find(num_nodes: int, percentage: int = 0) -> int:
    """kube-scheduler's numFeasibleNodesToFind with the default adaptive percentageOfNodesToScore: every node
    below 100, else 50% minus 1% per 125 nodes (at least 5%), and never fewer than 100."""
    if num_nodes < 100:
        return num_nodes
    if percentage <= 0:
        percentage = max(50 - num_nodes // 125, 5)
    return max(num_nodes * percentage // 100, 100)


def slices_by_node_name(slices: list[Obj]) -> tuple[dict[str, list[Obj]], list[Obj]]:
    """Node-local slices by spec.nodeName, and the others (nodeSelector, allNodes, per-device selection)."""
    by_node: dict[str, list[Obj]] = {}
    unpinned: list[Obj] = []
    for sl in slices:
        node_name = (sl.get("spec") or {}).get("nodeName")
        if node_name:
            by_node.setdefault(node_name, []).append(sl)
        else:
            unpinned.append(sl)
    return by_node, unpinned


def _rv(obj: Obj) -> int:
    try:
        return int(obj["metadata"].get("resourceVersion") or 0)
    except (ValueError, TypeError):
        return 0


# ---------------------------------------------------------------- the scheduler


class Scheduler:
    def __init__(self, client: Client, allocate: Allocate | None = None, gates: FeatureGates | None = None,
                 scheduler_name: str = SCHEDULER_NAME,
                 binding_timeout: float = bindingconditions.DEFAULT_BINDING_TIMEOUT):
        self.client = client
        self.binding_timeout = binding_timeout  # DynamicResourcesArgs.bindingTimeout, in seconds
        self._claim_waiters: set[asyncio.Event] = set()  # PreBinds waiting for binding conditions
        self._allocate = allocate
        self.gates = gates or FeatureGates()
        self.scheduler_name = scheduler_name
        self.pods = Informer(client, resource_path("", "v1", "pods"))
        self.nodes = Informer(client, resource_path("", "v1", "nodes"))
        self.claims = Informer(client, resource_path(GROUP, VERSION, "resourceclaims"))
        self.slices = Informer(client, resource_path(GROUP, VERSION, "resourceslices"))
        self.classes = Informer(client, resource_path(GROUP, VERSION, "deviceclasses"))
        self.taint_rules = Informer(client, resource_path(GROUP, VERSION, "devicetaintrules"))
        self.informers = (self.pods, self.nodes, self.claims, self.slices, self.classes, self.taint_rules)
        # Queues (pod keys "ns/name").
        self.active: deque[str] = deque()
        self._active_set: set[str] = set()
        self.backoff: dict[str, float] = {}  # key -> monotonic time it may be retried
        self.unschedulable: dict[str, float] = {}  # key -> monotonic time it was parked
        self.attempts: dict[str, int] = {}
        self._backoff_until: dict[str, float] = {}
        self._wake = asyncio.Event()
        self._seq = 0  # cluster events seen; an event during a cycle sends a failed pod to backoff
        self._in_cycle: str | None = None
        self._moved_during_cycle = False
        # Reserve state: allocations reserved but not yet written (claim uid -> claim with status.allocation),
        # claims written but not yet seen by the informer ((ns, name) -> claim), pods bound in memory.
        self.in_flight: dict[str, Obj] = TrackedDict(lambda uid, claim: self.held.in_flight_changed(uid, claim))
        self.filter_cache = filtercache.FilterCache()
        self.cluster_generation = 0  # bumped by every slice, class and taint rule event (a filter cache key)
        self._next_start_node = 0
        self._pod_requests: dict[str, tuple[str, dict[str, Fraction]]] = {}  # uid -> (resourceVersion, requests)
        self._allocatable: dict[str, tuple[str, dict[str, Fraction]]] = {}  # node -> (resourceVersion, parsed)
        self.assumed_claims: dict[tuple[str, str], Obj] = TrackedDict(lambda k, _c: self.held.claim_changed(*k))
        self.assumed_pods: dict[str, tuple[Obj, str]] = TrackedDict(  # pod uid -> (pod, node)
            lambda uid, value: self.node_usage.assumed_changed(uid, value))
        # Incremental views over claims and pods (what each attempt would otherwise recompute from scratch).
        self.held = HeldDevices(self.claims.get, self.assumed_claims, self.in_flight)
        self.node_usage = NodeUsage(self._requests_of, self.assumed_pods)
        self._slices_view: tuple[int, dict[str, list[Obj]], list[Obj], dict[str, list]] | None = None
        self._nodes_view: list[Obj] | None = None  # sorted by name; None after any node event
        self._devices_view: tuple[int, nodeallocatable.DeviceIndex] | None = None
        self._verdicts: dict[tuple, tuple[str | None, list[Obj]]] = {}  # (reason, allocations); see _find_node
        self._dra_cycles = 0  # Filter durations are recorded for every tenth DRA cycle, as upstream samples
        self._binding: set[asyncio.Task] = set()
        self._last_event: dict[str, tuple[str, float]] = {}  # pod uid -> (message, time)
        # Keys waiting in PreEnqueue (counted as "gated", not "unschedulable") -> the claim they wait for.
        self._gated: dict[str, tuple[str, str] | None] = {}
        self.scheduled = 0
        self.pods.add_handler(self._on_pod)
        self.nodes.add_handler(self._on_node)
        self.claims.add_handler(self._on_claim)
        for inf in (self.slices, self.classes, self.taint_rules):
            inf.add_handler(self._on_cluster_object)

    @property
    def allocate(self) -> Allocate:
        if self._allocate is None:
            from dramock.scheduler.allocator import allocate

            self._allocate = allocate
        return self._allocate

    async def run(self, stop: asyncio.Event) -> None:
        _ = self.allocate  # fail early when no allocator is there
        tasks = [asyncio.create_task(i.run(stop)) for i in self.informers]
        try:
            synced = asyncio.gather(*(i.synced.wait() for i in self.informers))
            stopped = asyncio.create_task(stop.wait())
            waiters: list[asyncio.Future[Any]] = [synced, stopped]
            await asyncio.wait(waiters, return_when=asyncio.FIRST_COMPLETED)
            if stop.is_set():
                synced.cancel()
                return
            log.info("scheduler %s: caches synced, scheduling", self.scheduler_name)
            tasks.append(asyncio.create_task(self._flush_loop(stop)))
            loop_task = asyncio.create_task(self._schedule_loop(stop))
            tasks.append(loop_task)
            await stop.wait()
        finally:
            for t in tasks + list(self._binding):
                t.cancel()
            await asyncio.gather(*tasks, *self._binding, return_exceptions=True)

    # ---------------------------------------------------------------- queue

    def _wants(self, pod: Obj | None) -> bool:
        if pod is None:
            return False
        spec = pod.get("spec") or {}
        if spec.get("nodeName") or pod["metadata"].get("deletionTimestamp"):
            return False
        if (spec.get("schedulerName") or SCHEDULER_NAME) != self.scheduler_name:
            return False
        if (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
            return False
        return pod["metadata"].get("uid") not in self.assumed_pods

    def _activate(self, key: str) -> None:
        self.backoff.pop(key, None)
        self.unschedulable.pop(key, None)
        if key not in self._active_set:
            self._active_set.add(key)
            self.active.append(key)
        self._wake.set()

    def _forget(self, key: str) -> None:
        self._gated.pop(key, None)
        self.backoff.pop(key, None)
        self.unschedulable.pop(key, None)
        self.attempts.pop(key, None)
        self._backoff_until.pop(key, None)
        if key in self._active_set:
            self._active_set.discard(key)
            with contextlib.suppress(ValueError):
                self.active.remove(key)

    def _backoff_duration(self, key: str) -> float:
        n = max(self.attempts.get(key, 1), 1)
        return min(INITIAL_BACKOFF * (2 ** (n - 1)), MAX_BACKOFF)

    def _to_backoff(self, key: str) -> None:
        self.unschedulable.pop(key, None)
        self._backoff_until[key] = until = time.monotonic() + self._backoff_duration(key)
        self.backoff[key] = until
        self._wake.set()

    def _to_unschedulable(self, key: str, seq: int) -> None:
        if self._seq != seq:  # something changed while this pod was being tried
            self._to_backoff(key)
        else:
            self._backoff_until[key] = time.monotonic() + self._backoff_duration(key)
            self.unschedulable[key] = time.monotonic()

    def _requeue(self, key: str) -> None:
        """Out of unschedulable: to active, or to backoff while the pod's backoff lasts."""
        self.unschedulable.pop(key, None)
        until = self._backoff_until.get(key, 0.0)
        if until > time.monotonic():
            self.backoff[key] = until
            self._wake.set()
        else:
            self._activate(key)

    def _move_all(self, reason: str, claim: tuple[str, str] | None = None) -> None:
        """A cluster event: unschedulable pods go to active (or backoff while they back off). Gated pods move
        only on an event of the claim they wait for (upstream's queueing hint for claim changes)."""
        self._seq += 1
        if not self.unschedulable:
            return
        log.debug("moving unschedulable pods: %s", reason)
        for key in list(self.unschedulable):
            if key not in self._gated or (claim is not None and self._gated[key] == claim):
                self._requeue(key)

    def _pop_ready(self) -> str | None:
        now = time.monotonic()
        for key, t in list(self.backoff.items()):
            if t <= now:
                del self.backoff[key]
                if key not in self._active_set:
                    self._active_set.add(key)
                    self.active.append(key)
        if self.active:
            key = self.active.popleft()
            self._active_set.discard(key)
            return key
        return None

    def _update_pending_metric(self) -> None:
        m = metrics()
        if m is None:
            return
        gated = sum(1 for k in self._gated if k in self.unschedulable)
        m.pending_pods.labels("active").set(len(self.active))
        m.pending_pods.labels("backoff").set(len(self.backoff))
        m.pending_pods.labels("unschedulable").set(len(self.unschedulable) - gated)
        m.pending_pods.labels("gated").set(gated)

    def _count_attempt(self, result: str) -> None:
        m = metrics()
        if m is not None:
            m.schedule_attempts.labels(result, self.scheduler_name).inc()

    async def _schedule_loop(self, stop: asyncio.Event) -> None:
        while not stop.is_set():
            self._update_pending_metric()
            key = self._pop_ready()
            if key is None:
                self._wake.clear()
                timeout = 1.0
                if self.backoff:
                    timeout = max(0.0, min(min(self.backoff.values()) - time.monotonic(), 1.0))
                with contextlib.suppress(asyncio.TimeoutError):
                    await asyncio.wait_for(self._wake.wait(), timeout)
                continue
            try:
                await self.schedule_one(key)
            except Exception:  # noqa: BLE001 - one pod must not stop the loop
                log.exception("scheduling %s", key)
                self._count_attempt("error")
                self._to_backoff(key)
            await asyncio.sleep(0)

    async def _flush_loop(self, stop: asyncio.Event) -> None:
        while not stop.is_set():
            await asyncio.sleep(5)
            now = time.monotonic()
            for key, t in list(self.unschedulable.items()):
                if now - t > UNSCHEDULABLE_FLUSH:
                    self._requeue(key)

    # ---------------------------------------------------------------- informer events

    def _on_pod(self, type_: str, pod: Obj, old: Obj | None) -> None:
        self.node_usage.pod_changed(pod, type_ == "DELETED")
        m = pod["metadata"]
        key = f"{m.get('namespace', '')}/{m['name']}"
        uid = m.get("uid")
        if type_ == "DELETED":
            self.assumed_pods.pop(uid, None)
            self._last_event.pop(uid, None)
            self._pod_requests.pop(uid, None)
            self._forget(key)
            if (pod.get("spec") or {}).get("nodeName"):
                self._move_all("pod deleted")
            return
        spec = pod.get("spec") or {}
        if spec.get("nodeName"):
            if uid in self.assumed_pods:
                self.assumed_pods.pop(uid, None)
            self._forget(key)
            if (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed") and \
                    (old is None or (old.get("status") or {}).get("phase") != pod["status"]["phase"]):
                self._move_all("pod terminated")
            if old is not None and m.get("deletionTimestamp") and not old["metadata"].get("deletionTimestamp"):
                self._move_all("pod terminating")
            return
        if not self._wants(pod):
            if uid not in self.assumed_pods:
                self._forget(key)
            return
        if old is None or not self._queued(key):
            self._activate(key)
            return
        if key in self.unschedulable and self._relevant_pod_update(old, pod):
            self._requeue(key)

    def _queued(self, key: str) -> bool:
        return key in self._active_set or key in self.backoff or key in self.unschedulable or \
            self._in_cycle == key

    @staticmethod
    def _relevant_pod_update(old: Obj, new: Obj) -> bool:
        """Spec, labels, annotations or the claim statuses changed (not our own condition write)."""
        if old.get("spec") != new.get("spec"):
            return True
        for f in ("labels", "annotations"):
            if old["metadata"].get(f) != new["metadata"].get(f):
                return True
        return (old.get("status") or {}).get("resourceClaimStatuses") != \
            (new.get("status") or {}).get("resourceClaimStatuses")

    def _on_node(self, type_: str, node: Obj, old: Obj | None) -> None:
        self._nodes_view = None
        if type_ == "DELETED":
            return
        if old is not None:
            def shape(n: Obj) -> Any:
                return (n["metadata"].get("labels"), (n.get("spec") or {}).get("taints"),
                        (n.get("spec") or {}).get("unschedulable"), (n.get("status") or {}).get("allocatable"))
            if shape(old) == shape(node):
                return
        self._move_all(f"node {type_.lower()}")

    def _on_claim(self, type_: str, claim: Obj, old: Obj | None) -> None:
        for waiter in self._claim_waiters:
            waiter.set()
        m = claim["metadata"]
        k = (m.get("namespace", ""), m["name"])
        self.held.claim_changed(*k)
        assumed = self.assumed_claims.get(k)
        if assumed is not None and (type_ == "DELETED" or _rv(claim) >= _rv(assumed)
                                    or m.get("uid") != assumed["metadata"].get("uid")):
            del self.assumed_claims[k]
        if old is not None and type_ != "DELETED" and old.get("status") == claim.get("status") and \
                old["metadata"].get("deletionTimestamp") == m.get("deletionTimestamp"):
            return
        self._move_all(f"claim {type_.lower()}", k)

    def _on_cluster_object(self, type_: str, obj: Obj, old: Obj | None) -> None:
        self.cluster_generation += 1
        if old is not None and type_ != "DELETED" and old.get("spec") == obj.get("spec"):
            return
        self._move_all(f"{obj.get('kind', 'object')} {type_.lower()}")

    # ---------------------------------------------------------------- views

    def claim(self, ns: str, name: str) -> Obj | None:
        return self.assumed_claims.get((ns, name)) or self.claims.get(ns, name)

    def _requests_of(self, pod: Obj) -> dict[str, Fraction]:
        """pod_requests, parsed once per pod version (every attempt sums them over all bound pods)."""
        m = pod["metadata"]
        cached = self._pod_requests.get(m.get("uid", ""))
        if cached is not None and cached[0] == m.get("resourceVersion"):
            return cached[1]
        requests = pod_requests(pod)
        self._pod_requests[m.get("uid", "")] = (m.get("resourceVersion"), requests)
        return requests

    def _allocatable_of(self, node: Obj) -> dict[str, Fraction]:
        m = node["metadata"]
        cached = self._allocatable.get(m["name"])
        if cached is not None and cached[0] == m.get("resourceVersion"):
            return cached[1]
        parsed = {k: _q(v) for k, v in ((node.get("status") or {}).get("allocatable") or {}).items()}
        self._allocatable[m["name"]] = (m.get("resourceVersion"), parsed)
        return parsed

    def _node_usage(self) -> dict[str, tuple[dict[str, Fraction], int]]:
        """Per node: summed requests and pod count of the pods bound (or assumed) there."""
        return self.node_usage.refresh()

    def _slices_by_node(self) -> tuple[dict[str, list[Obj]], list[Obj], dict[str, list]]:
        """Node-local slices by node, the other slices, and the pools of each node's local slices."""
        if self._slices_view is None or self._slices_view[0] != self.cluster_generation:
            by_node, unpinned = slices_by_node_name(self.slices.list())
            pools = {name: filtercache.pools_of(slices) for name, slices in by_node.items()}
            self._slices_view = (self.cluster_generation, by_node, unpinned, pools)
        return self._slices_view[1], self._slices_view[2], self._slices_view[3]

    def _sorted_nodes(self) -> list[Obj]:
        if self._nodes_view is None:
            self._nodes_view = sorted(self.nodes.list(), key=lambda n: n["metadata"]["name"])
        return self._nodes_view

    # ---------------------------------------------------------------- one scheduling cycle

    async def schedule_one(self, key: str) -> None:
        ns, _, name = key.partition("/")
        pod = self.pods.get(ns, name)
        if not self._wants(pod):
            self._forget(key)
            return
        assert pod is not None
        seq = self._seq
        self._in_cycle = key
        try:
            try:
                refs = pod_claim_refs(pod)
                claims = self._pre_enqueue(pod, refs)
            except WaitingForClaims as e:
                log.debug("pod %s: %s", key, e)
                self.unschedulable[key] = time.monotonic()  # gated: its claim's or its own events retry it
                self._gated[key] = e.claim
                return
            self._gated.pop(key, None)
            self.attempts[key] = self.attempts.get(key, 0) + 1
            try:
                node, new_allocs, special = self._find_node(pod, claims)
            except Unschedulable as e:
                self._count_attempt("unschedulable")
                await self._failed(pod, str(e))
                self._to_unschedulable(key, seq)
                await self._post_filter(pod, e.unavailable)
                return
            # Reserve.
            start = time.perf_counter()
            uid = pod["metadata"]["uid"]
            for claim, alloc in new_allocs:
                self.in_flight[claim["metadata"]["uid"]] = self._with_allocation(claim, alloc)
            self.assumed_pods[uid] = (pod, node)
            if new_allocs or claims:
                _observe("Reserve", "Success", start)
        finally:
            self._in_cycle = None
        task = asyncio.create_task(self._binding_cycle(key, pod, node, claims, new_allocs, special))
        self._binding.add(task)
        task.add_done_callback(self._binding.discard)

    def _pre_enqueue(self, pod: Obj, refs: list[tuple[str, str | None, bool]]) -> list[Obj]:
        ns = pod["metadata"].get("namespace", "")
        claims = []
        for _pc, cname, generated in refs:
            if cname is None:
                continue
            claim = self.claim(ns, cname)
            if claim is None:
                raise WaitingForClaims(f'resourceclaim "{cname}" not found', (ns, cname))
            if generated and not any(r.get("uid") == pod["metadata"].get("uid") and r.get("controller")
                                     for r in claim["metadata"].get("ownerReferences") or []):
                raise WaitingForClaims(f"ResourceClaim {ns}/{cname} was not created for pod "
                                       f"{ns}/{pod['metadata']['name']} (pod is not owner)", (ns, cname))
            claims.append(claim)
        ext = (pod.get("status") or {}).get("extendedResourceClaimStatus") or {}
        if ext.get("resourceClaimName") and self.gates.enabled("DRAExtendedResource"):
            claim = self.claim(ns, ext["resourceClaimName"])
            # A special claim written by an earlier attempt is reused; a missing one is created anew.
            if claim is not None and not claim["metadata"].get("deletionTimestamp") and any(
                    r.get("uid") == pod["metadata"].get("uid") and r.get("controller")
                    for r in claim["metadata"].get("ownerReferences") or []):
                claims.append(claim)
        return claims

    @staticmethod
    def _with_allocation(claim: Obj, allocation: Obj) -> Obj:
        # A new claim and status around the informer's shared values (nothing here changes them in place).
        return {**claim, "status": {**(claim.get("status") or {}), "allocation": allocation}}

    def _find_node(self, pod: Obj, claims: list[Obj]) -> tuple[str, list[tuple[Obj, Obj]], Obj | None]:
        """PreFilter + Filter + Score: the node to bind to, the new allocations (claim, allocation) and, for
        KEP-5004, the in-memory special claim (also among the new allocations) or None."""
        ns = pod["metadata"].get("namespace", "")
        uid = pod["metadata"].get("uid")
        # PreFilter (DynamicResources).
        t0 = time.perf_counter()
        pending: list[Obj] = []
        allocated: list[Obj] = []
        has_special = False
        node_allocatable = self.gates.enabled("DRANodeAllocatableResources")
        for c in claims:
            cm = c["metadata"]
            if (cm.get("annotations") or {}).get(extended.EXTENDED_RESOURCE_CLAIM_ANNOTATION) == "true":
                has_special = True
            if cm.get("deletionTimestamp"):
                _observe("PreFilter", "UnschedulableAndUnresolvable", t0)
                raise Unschedulable(f'resourceclaim "{cm["name"]}" is being deleted')
            if cm.get("uid") in self.in_flight:
                _observe("PreFilter", "UnschedulableAndUnresolvable", t0)
                raise Unschedulable(f'resource claim {ns}/{cm["name"]} is in the process of being allocated')
            status = c.get("status") or {}
            if status.get("allocation"):
                if node_allocatable and any(r.get("uid") != uid for r in status.get("reservedFor") or []) and \
                        nodeallocatable.has_mapped_device(status["allocation"], self._device_index()):
                    _observe("PreFilter", "UnschedulableAndUnresolvable", t0)
                    raise Unschedulable(nodeallocatable.MSG_SHARED.format(name=cm["name"]))
                allocated.append(c)
            else:
                pending.append(c)
        classes = {c["metadata"]["name"]: c for c in self.classes.list()}
        ext_reqs = extended.extended_requests(pod, classes) if self.gates.enabled("DRAExtendedResource") else []
        dra = bool(claims) or bool(ext_reqs)
        if dra:
            _observe("PreFilter", "Success", t0)
        nodes = self._sorted_nodes()
        if not nodes:
            raise Unschedulable(MSG_NO_NODES)
        usage = self._node_usage()
        requests = pod_requests(pod, node_allocatable_claims=False)  # its own statuses are recomputed per node
        reasons: Counter[str] = Counter()
        fits: list[tuple[tuple, str, list[tuple[Obj, Obj]], Obj | None]] = []
        alloc_input: dict[str, Any] | None = None
        self.held.refresh()
        slices_by_node, unpinned, local_pools = self._slices_by_node()
        unpinned_pools = filtercache.pools_of(unpinned)
        if dra:
            self._dra_cycles += 1
        sample = dra and self._dra_cycles % 10 == 1
        pending_key = ""
        if pending or ext_reqs:
            alloc_input = {"slices": self.slices.list(), "classes": classes, "allocated_devices": self.held.devices,
                           "taint_rules": self.taint_rules.list()}
            pending_key = filtercache.claims_key(pending)
        timeout = self.gates.enabled("DRASchedulerFilterTimeout")
        unavailable: list[Obj] = []
        # As kube-scheduler: stop once enough feasible nodes are found, starting where the last pod stopped.
        wanted = feasible_nodes_to_find(len(nodes))
        start = self._next_start_node % len(nodes)
        examined = 0
        # A pod without allocated claims or extended resources gets the same verdict on a node as the last pod
        # of its shape did, as long as nothing the verdict depends on changed there: remember verdicts by that.
        def score(name: str) -> tuple:  # fewest devices in use, then fewest pods, then name
            return (sum(self.held.pool_results[pid] for pid in local_pools.get(name, ())),
                    usage.get(name, ({}, 0))[1], name)

        shape = self._pod_shape(pod, requests, pending_key) if not allocated and not ext_reqs else None
        if shape is not None:
            unpinned_versions = tuple(self.held.pool_version.get(pid, 0) for pid in unpinned_pools)
        for node in nodes[start:] + nodes[:start]:
            if len(fits) >= wanted:
                break
            examined += 1
            name = node["metadata"]["name"]
            if shape is not None:
                vkey = (shape, name, node["metadata"].get("resourceVersion"), self.node_usage.version.get(name, 0),
                        self.cluster_generation, unpinned_versions,
                        tuple([self.held.pool_version.get(pid, 0) for pid in local_pools.get(name, ())]))
                verdict = self._verdicts.get(vkey)
                if verdict is not None:
                    if verdict[0] is not None:
                        reasons[verdict[0]] += 1
                    else:  # the same allocations, for this pod's claims
                        fits.append((score(name), name, list(zip(pending, verdict[1], strict=True)), None))
                    continue
            remember = shape is not None
            backed = extended.dra_backed(ext_reqs, node) if ext_reqs else []
            node_requests = extended.node_requests_without(requests, backed) if backed else requests
            reason = self._filter_node(pod, node, node_requests, usage)
            t1 = time.perf_counter()
            if reason is None:
                reason, blocking = self._filter_allocated_claims(node, allocated, uid)
                if blocking is not None and blocking not in unavailable:
                    unavailable.append(blocking)
            new_allocs: list[tuple[Obj, Obj]] = []
            special: Obj | None = None
            to_allocate = list(pending)
            if reason is None and backed and not has_special:
                special = extended.in_memory_claim(pod, backed)
                to_allocate.append(special)
            if reason is None and to_allocate:
                assert alloc_input is not None
                deadline = time.monotonic() + FILTER_TIMEOUT if timeout else None
                node_slices = slices_by_node.get(node["metadata"]["name"], []) + unpinned
                ckey = self.filter_cache.key(pending_key if special is None else filtercache.claims_key(to_allocate),
                                             node, self.cluster_generation,
                                             local_pools.get(node["metadata"]["name"], []) + unpinned_pools,
                                             self.held.pool_version)
                outcome = self.filter_cache.get(ckey)
                if outcome is None:
                    outcome = self.allocate(AllocationInput(claims=to_allocate, node=node, gates=self.gates,
                                                            deadline=deadline, node_slices=node_slices,
                                                            **alloc_input))
                    self.filter_cache.put(ckey, outcome)
                remember = remember and filtercache.cacheable(outcome)
                if outcome.timed_out:
                    reason = MSG_FILTER_TIMEOUT
                elif not outcome.fits or len(outcome.allocations or []) != len(to_allocate):
                    reason = outcome.reason or MSG_CANNOT_ALLOCATE
                else:
                    new_allocs = list(zip(to_allocate, outcome.allocations or [], strict=True))
            if reason is None and node_allocatable and (allocated or new_allocs):
                reason = self._node_allocatable_fit(pod, node, node_requests, usage, allocated, new_allocs)
            if sample and (reason is None or to_allocate or allocated):
                _observe("Filter", "Success" if reason is None else "Unschedulable", t1)
            if remember:
                if len(self._verdicts) >= filtercache.MAX_ENTRIES:
                    self._verdicts.clear()
                self._verdicts[vkey] = (reason, [a for _, a in new_allocs])
            if reason is not None:
                reasons[reason] += 1
                continue
            fits.append((score(name), name, new_allocs, special))
        self._next_start_node = (start + examined) % len(nodes)
        if not fits:
            raise Unschedulable(fit_error_message(len(nodes), reasons), unavailable)
        fits.sort(key=lambda f: f[0])
        _, name, new_allocs, special = fits[0]
        new_allocs = [(c, copy.deepcopy(a)) for c, a in new_allocs]  # outcomes may be shared with the cache
        return name, new_allocs, special

    def _device_index(self) -> nodeallocatable.DeviceIndex:
        """(driver, pool, device) -> device of every slice, rebuilt after slice events."""
        if self._devices_view is None or self._devices_view[0] != self.cluster_generation:
            self._devices_view = (self.cluster_generation, nodeallocatable.device_index(self.slices.list()))
        return self._devices_view[1]

    def _node_allocatable_statuses(self, pod: Obj, allocations: list[tuple[str, Obj | None]]) -> list[Obj]:
        """The pod's nodeAllocatableResourceClaimStatuses for (ResourceClaim name, allocation) pairs."""
        pod_claims = {cname: pc for pc, cname, _ in pod_claim_refs(pod) if cname}
        return nodeallocatable.claim_statuses(
            pod, [(pod_claims.get(name, ""), name, a) for name, a in allocations if name in pod_claims],
            self._device_index())

    def _node_allocatable_fit(self, pod: Obj, node: Obj, requests: dict[str, Fraction],
                              usage: dict[str, tuple[dict[str, Fraction], int]], allocated: list[Obj],
                              new_allocs: list[tuple[Obj, Obj]]) -> str | None:
        """DRANodeAllocatableResources: the node must also hold what the claims' devices bring along."""
        statuses = self._node_allocatable_statuses(
            pod, [(c["metadata"]["name"], c["status"]["allocation"]) for c in allocated] +
            [(c["metadata"]["name"], a) for c, a in new_allocs])
        if not statuses:
            return None
        demand = nodeallocatable.add_to_requests(requests, statuses)
        allocatable = self._allocatable_of(node)
        used, _ = usage.get(node["metadata"]["name"], ({}, 0))
        for res in sorted(demand):
            if res in ("cpu", "memory", "ephemeral-storage") or res.startswith("hugepages-"):
                if res in allocatable and demand[res] > 0 and \
                        used.get(res, Fraction(0)) + demand[res] > allocatable[res]:
                    return f"Insufficient {res}"
        return None

    @staticmethod
    def _pod_shape(pod: Obj, requests: dict[str, Fraction], claims_key: str) -> str:
        """Everything about a pod that node fit and allocation read, as a cache key."""
        spec = pod.get("spec") or {}
        return json.dumps([claims_key, sorted((k, str(v)) for k, v in requests.items()), spec.get("nodeSelector"),
                           spec.get("affinity"), spec.get("tolerations")], sort_keys=True, separators=(",", ":"))

    def _filter_node(self, pod: Obj, node: Obj, requests: dict[str, Fraction],
                     usage: dict[str, tuple[dict[str, Fraction], int]]) -> str | None:
        used, count = usage.get(node["metadata"]["name"], ({}, 0))
        return node_fit_reason(pod, node, requests, self._allocatable_of(node), used, count)

    def _filter_allocated_claims(self, node: Obj, allocated: list[Obj],
                                 uid: str | None) -> tuple[str | None, Obj | None]:
        """Why the pod's allocated claims rule the node out (None: they don't), and the claim whose allocation
        is elsewhere, or whose binding failed or timed out (a PostFilter candidate)."""
        unavailable = None
        if bindingconditions.binding_conditions_on(self.gates):
            def unavailable(claim: Obj) -> bool:
                return bindingconditions.unavailable(claim, self.binding_timeout)
        return allocated_claims_reason(node, allocated, uid, unavailable)

    async def _post_filter(self, pod: Obj, unavailable: list[Obj]) -> None:
        """PostFilter (DynamicResources): when an allocated claim kept the pod off some node and nobody else
        uses it, deallocate it (one per attempt) so that the next attempt may allocate it where the pod fits;
        a special claim of an earlier attempt (KEP-5004) is deleted instead."""
        uid = pod["metadata"]["uid"]
        for claim in unavailable:
            cm = claim["metadata"]
            if (cm.get("annotations") or {}).get(extended.EXTENDED_RESOURCE_CLAIM_ANNOTATION) == "true":
                await self._delete_special_claim(claim, True, pod)
                return
            reserved = (claim.get("status") or {}).get("reservedFor") or []
            if cm["uid"] in self.in_flight or any(r.get("uid") != uid for r in reserved):
                continue
            c = copy.deepcopy(claim)
            for field in ("reservedFor", "allocation", "devices"):
                c["status"].pop(field, None)
            try:  # resourceVersion precondition: a claim someone just reserved is left alone
                await self.client.request("PUT", resource_path(GROUP, VERSION, "resourceclaims",
                                                               cm.get("namespace", ""), cm["name"], "status"), c)
            except (APIStatusError, aiohttp.ClientError, asyncio.TimeoutError) as e:
                log.info("PostFilter: deallocating %s/%s: %s", cm.get("namespace"), cm["name"], e)
                return
            log.info("PostFilter: deallocated %s/%s for pod %s/%s", cm.get("namespace"), cm["name"],
                     pod["metadata"].get("namespace"), pod["metadata"]["name"])
            return

    # ---------------------------------------------------------------- binding cycle

    async def _binding_cycle(self, key: str, pod: Obj, node: str, claims: list[Obj],
                             new_allocs: list[tuple[Obj, Obj]], special: Obj | None = None) -> None:
        m = pod["metadata"]
        ns, name, uid = m.get("namespace", ""), m["name"], m["uid"]
        allocations = {c["metadata"]["uid"]: a for c, a in new_allocs}
        written: list[tuple[str, str]] = []
        allocated_here = {c["metadata"]["uid"] for c, _ in new_allocs}
        created: Obj | None = None
        status_written = False
        claim_names: list[str] = []  # every claim PreBind wrote or relies on
        node_statuses_written = False
        t0 = time.perf_counter()
        try:
            if special is not None:
                # KEP-5004 PreBind: create the special claim, write its allocation and reservation, then
                # name it in the pod status.
                created = await self._create_special_claim(pod, special)
                cm = created["metadata"]
                allocated_here.add(cm["uid"])
                self.assumed_claims[(ns, cm["name"])] = created
                updated = await self._prebind_claim(ns, cm["name"], cm["uid"],
                                                    allocations[special["metadata"]["uid"]], pod)
                if updated is not None:
                    self.assumed_claims[(ns, cm["name"])] = updated
                    written.append((ns, cm["name"]))
                self.in_flight.pop(special["metadata"]["uid"], None)
                claim_names.append(cm["name"])
                ext_reqs = extended.extended_requests(pod, {c["metadata"]["name"]: c for c in self.classes.list()})
                await self._patch_pod_status(pod, {"extendedResourceClaimStatus": extended.claim_status(
                    cm["name"], created.get("spec") or {}, ext_reqs)})
                status_written = True
            for claim in claims:
                cm = claim["metadata"]
                updated = await self._prebind_claim(ns, cm["name"], cm["uid"], allocations.get(cm["uid"]), pod)
                if updated is not None:
                    self.assumed_claims[(ns, cm["name"])] = updated
                    written.append((ns, cm["name"]))
                self.in_flight.pop(cm["uid"], None)
                claim_names.append(cm["name"])
            if self.gates.enabled("DRANodeAllocatableResources"):
                statuses = self._node_allocatable_statuses(pod, [
                    (n, ((self.claim(ns, n) or {}).get("status") or {}).get("allocation")) for n in claim_names])
                if statuses:
                    await self._patch_pod_status(pod, {"nodeAllocatableResourceClaimStatuses": statuses})
                    node_statuses_written = True
            if bindingconditions.binding_conditions_on(self.gates):
                await self._wait_for_binding_conditions(pod, node, claim_names)
            await self.client.request("POST", resource_path("", "v1", "pods", ns, name, "binding"),
                                      {"apiVersion": "v1", "kind": "Binding",
                                       "metadata": {"name": name, "namespace": ns, "uid": uid},
                                       "target": {"apiVersion": "v1", "kind": "Node", "name": node}})
        except (APIStatusError, aiohttp.ClientError, asyncio.TimeoutError, BindError,
                bindingconditions.BindingFailed) as e:
            # A failed or timed-out attach leaves the allocation in place, as upstream's Unreserve does: the next
            # attempt's Filter sees why and PostFilter deallocates it.
            conditions_failed = isinstance(e, bindingconditions.BindingFailed)
            if claims or special is not None:
                _observe("PreBind", "Error", t0)
            self._count_attempt("error")
            for c, _ in new_allocs:
                self.in_flight.pop(c["metadata"]["uid"], None)
            log.info("pod %s: binding to %s failed: %s", key, node, e)
            # The pod stays assumed (not queued again by its own status updates) until this is undone.
            try:
                if await self._bound_elsewhere(ns, name, uid, e):
                    # Another scheduler bound it, relying on these claims' reservations: keep them.
                    log.info("pod %s was bound by another scheduler; its reservations stay", key)
                    return
                await self._unreserve(ns, written, uid, set() if conditions_failed else allocated_here)
                if node_statuses_written:  # an explicit empty list, as upstream's Unreserve writes it
                    with contextlib.suppress(APIStatusError, aiohttp.ClientError, asyncio.TimeoutError):
                        await self._patch_pod_status(pod, {"nodeAllocatableResourceClaimStatuses": []})
                if created is not None:
                    await self._delete_special_claim(created, status_written, pod)
            finally:
                self.assumed_pods.pop(uid, None)
            current = self.pods.get(ns, name)
            if current is not None and current["metadata"].get("uid") == uid and self._wants(current):
                self._to_backoff(key)  # first: our own status write must not activate it at once
                if conditions_failed:  # upstream's message for a PreBind error, reason SchedulerError
                    await self._failed(pod, f'running PreBind plugin "{PLUGIN}": {e}', reason="SchedulerError",
                                       clear_nominated=True)
                else:
                    await self._failed(pod, f"Binding rejected: {e}", condition=False)
            return
        except asyncio.CancelledError:
            for c, _ in new_allocs:
                self.in_flight.pop(c["metadata"]["uid"], None)
            raise
        if claims or special is not None:
            _observe("PreBind", "Success", t0)
        self._count_attempt("scheduled")
        self.scheduled += 1
        self.attempts.pop(key, None)
        log.info("pod %s bound to %s", key, node)
        await self._event(pod, "Normal", "Scheduled", f"Successfully assigned {ns}/{name} to {node}")

    async def _wait_for_binding_conditions(self, pod: Obj, node: str, names: list[str]) -> None:
        """PreBind's wait (KEP-5007): return once every binding condition of the pod's claims is True; raise
        BindingFailed on a True failure condition or when the binding timeout passes."""
        m = pod["metadata"]
        ns = m.get("namespace", "")
        if not any(bindingconditions.has_binding_conditions(self.claim(ns, n)) for n in names):
            return
        # NominatedNodeNameForExpectation: tell others where the pod is going while it waits.
        try:
            await self._patch_pod_status(pod, {"nominatedNodeName": node})
        except (APIStatusError, aiohttp.ClientError, asyncio.TimeoutError) as e:
            log.info("pod %s/%s: setting nominatedNodeName: %s", ns, m["name"], e)
        await self._event(pod, "Normal", bindingconditions.EVENT_REASON_PENDING,
                          f"waiting for binding conditions for device on node {node}", action="Scheduling")
        waiter = asyncio.Event()
        self._claim_waiters.add(waiter)
        started = time.monotonic()
        deadline = started + self.binding_timeout
        outcome = "failure"
        try:
            while True:
                waiter.clear()
                if self._ready_for_binding(pod, names):
                    outcome = "success"
                    return
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise bindingconditions.BindingFailed("device binding timeout")
                with contextlib.suppress(asyncio.TimeoutError):
                    await asyncio.wait_for(waiter.wait(), min(remaining, bindingconditions.POLL_INTERVAL))
        except bindingconditions.BindingFailed as e:
            outcome = "timeout" if str(e).endswith("binding timeout") else "failure"
            raise
        finally:
            self._claim_waiters.discard(waiter)
            self._record_binding_conditions(ns, names, outcome, time.monotonic() - started)

    def _record_binding_conditions(self, ns: str, names: list[str], status: str, waited: float) -> None:
        m = metrics()
        if m is None:
            return
        drivers = {r.get("driver", "") for n in names
                   for r in ((((self.claim(ns, n) or {}).get("status") or {}).get("allocation") or {})
                             .get("devices") or {}).get("results") or [] if r.get("bindingConditions")}
        for driver in sorted(drivers):
            m.binding_conditions_allocations.labels(self.scheduler_name, driver, status).inc()
            m.binding_conditions_wait.labels(self.scheduler_name, driver, status).observe(waited)

    def _ready_for_binding(self, pod: Obj, names: list[str]) -> bool:
        """Upstream's isPodReadyForBinding over the informer's (or our own newer) view of the claims."""
        m = pod["metadata"]
        ns = m.get("namespace", "")
        current = self.pods.get(ns, m["name"])
        if current is None or current["metadata"].get("uid") != m.get("uid") or \
                current["metadata"].get("deletionTimestamp"):
            raise BindError(f"pod {ns}/{m['name']} was deleted while waiting for binding conditions")
        for name in names:
            claim = self.claim(ns, name)
            if claim is None:
                raise BindError(f'resourceclaim "{name}" not found')
            if not bindingconditions.claim_ready(claim):
                if bindingconditions.claim_timed_out(claim, self.binding_timeout):
                    raise bindingconditions.BindingFailed(f"claim {name} binding timeout")
                return False
        return True

    async def _bound_elsewhere(self, ns: str, name: str, uid: str, e: BaseException) -> bool:
        """After a 409 from pods/binding: whether the pod (this very pod) already has a node."""
        if not isinstance(e, APIStatusError) or e.code != 409:
            return False
        try:
            current = await self.client.request("GET", resource_path("", "v1", "pods", ns, name))
        except (APIStatusError, aiohttp.ClientError, asyncio.TimeoutError):
            return False
        return current["metadata"].get("uid") == uid and bool((current.get("spec") or {}).get("nodeName"))

    async def _create_special_claim(self, pod: Obj, special: Obj) -> Obj:
        ns = pod["metadata"].get("namespace", "")
        m = metrics()
        try:
            created = await self.client.request("POST", resource_path(GROUP, VERSION, "resourceclaims", ns),
                                                extended.new_claim(pod, special["spec"]))
        except (APIStatusError, aiohttp.ClientError, asyncio.TimeoutError):
            if m is not None:
                m.claim_creates.labels("failure").inc()
            raise
        if m is not None:
            m.claim_creates.labels("success").inc()
        return created

    async def _delete_special_claim(self, claim: Obj, status_written: bool, pod: Obj) -> None:
        """Unreserve: the special claim goes (the claim controller drops the finalizer once it is unreserved)
        and the pod status no longer names it."""
        cm = claim["metadata"]
        ns = cm.get("namespace", "")
        self.assumed_claims.pop((ns, cm["name"]), None)
        try:
            await self.client.request("DELETE", resource_path(GROUP, VERSION, "resourceclaims", ns, cm["name"]),
                                      {"apiVersion": "v1", "kind": "DeleteOptions",
                                       "preconditions": {"uid": cm["uid"]}})
        except (APIStatusError, aiohttp.ClientError, asyncio.TimeoutError) as e:
            log.info("deleting special claim %s/%s: %s", ns, cm["name"], e)
        if status_written:
            with contextlib.suppress(APIStatusError, aiohttp.ClientError, asyncio.TimeoutError):
                await self._patch_pod_status(pod, {"extendedResourceClaimStatus": None})

    async def _patch_pod_status(self, pod: Obj, status: Obj) -> None:
        m = pod["metadata"]
        await self.client.request(
            "PATCH", resource_path("", "v1", "pods", m.get("namespace"), m["name"], "status"),
            {"metadata": {"uid": m.get("uid")}, "status": status}, content_type="application/merge-patch+json")

    async def _prebind_claim(self, ns: str, cname: str, cuid: str, allocation: Obj | None, pod: Obj) -> Obj | None:
        """Write the allocation (finalizer first) and the reservation; None when nothing had to change."""
        path = resource_path(GROUP, VERSION, "resourceclaims", ns, cname)
        uid = pod["metadata"]["uid"]
        claim = self.claim(ns, cname)
        if allocation is not None and bindingconditions.binding_conditions_on(self.gates):
            # The binding timeout counts from the moment the allocation is written (upstream's bindClaim).
            allocation = {**allocation, "allocationTimestamp": now_time()}
        for attempt in range(5):
            if claim is None or claim["metadata"].get("uid") != cuid:
                raise BindError(f"resourceclaim {ns}/{cname} changed (deleted or replaced)")
            if claim["metadata"].get("deletionTimestamp"):
                raise BindError(f'resourceclaim "{cname}" is being deleted')
            # Shallow copies: the values written are new lists and dicts, never the cached claim's own.
            status = dict(claim.get("status") or {})
            reserved = status.get("reservedFor") or []
            try:
                if allocation is not None:
                    if status.get("allocation") and status["allocation"] != allocation:
                        raise BindError(f"resourceclaim {ns}/{cname} was allocated by someone else")
                    if FINALIZER not in (claim["metadata"].get("finalizers") or []):
                        c = {**claim, "metadata": {**claim["metadata"], "finalizers": list(
                            claim["metadata"].get("finalizers") or []) + [FINALIZER]}}
                        claim = await self.client.request("PUT", path, c)
                    status["allocation"] = allocation
                elif not status.get("allocation"):
                    raise BindError(f"resourceclaim {ns}/{cname} is no longer allocated")
                if any(r.get("uid") == uid for r in reserved):
                    if allocation is None or (claim.get("status") or {}).get("allocation") == allocation:
                        return None
                elif len(reserved) >= RESERVED_FOR_MAX:
                    raise BindError(f"resourceclaim {ns}/{cname} is reserved for too many consumers")
                else:
                    status["reservedFor"] = reserved + [{"resource": "pods", "name": pod["metadata"]["name"],
                                                         "uid": uid}]
                return await self.client.request("PUT", path + "/status", {**claim, "status": status})
            except APIStatusError as e:
                if e.code != 409 or attempt == 4:
                    raise
                claim = await self.client.request("GET", path)
        return None

    async def _unreserve(self, ns: str, written: list[tuple[str, str]], uid: str, allocated_here: set[str]) -> None:
        """Remove the pod from the claims it was written into; an allocation made for it alone is cleared too
        (the claim controller then drops the finalizer)."""
        for _, cname in written:
            path = resource_path(GROUP, VERSION, "resourceclaims", ns, cname)
            for _attempt in range(5):
                try:
                    claim = await self.client.request("GET", path)
                    status = claim.get("status") or {}
                    reserved = status.get("reservedFor") or []
                    if not any(r.get("uid") == uid for r in reserved):
                        break
                    status["reservedFor"] = [r for r in reserved if r.get("uid") != uid]
                    if not status["reservedFor"]:
                        del status["reservedFor"]
                        if claim["metadata"].get("uid") in allocated_here:
                            status.pop("allocation", None)
                    claim["status"] = status
                    await self.client.request("PUT", path + "/status", claim)
                    break
                except APIStatusError as e:
                    if e.code != 409:
                        log.info("unreserve %s/%s: %s", ns, cname, e)
                        break
                except (aiohttp.ClientError, asyncio.TimeoutError) as e:
                    log.info("unreserve %s/%s: %s", ns, cname, e)
                    break

    # ---------------------------------------------------------------- reporting

    async def _failed(self, pod: Obj, message: str, condition: bool = True, reason: str = "Unschedulable",
                      clear_nominated: bool = False) -> None:
        m = pod["metadata"]
        log.info("pod %s/%s unschedulable: %s", m.get("namespace"), m["name"], message)
        if condition:
            await self._set_condition(pod, message, reason, clear_nominated)
        uid = m.get("uid", "")
        last = self._last_event.get(uid)
        now = time.monotonic()
        if last is not None and last[0] == message and now - last[1] < EVENT_REPEAT_INTERVAL:
            return
        self._last_event[uid] = (message, now)
        await self._event(pod, "Warning", "FailedScheduling", message)

    async def _set_condition(self, pod: Obj, message: str, reason: str = "Unschedulable",
                             clear_nominated: bool = False) -> None:
        m = pod["metadata"]
        current = self.pods.get(m.get("namespace"), m["name"]) or pod
        conditions = list((current.get("status") or {}).get("conditions") or [])
        old = next((c for c in conditions if c.get("type") == "PodScheduled"), None)
        nominated = (current.get("status") or {}).get("nominatedNodeName")
        if old is not None and old.get("status") == "False" and old.get("reason") == reason and \
                old.get("message") == message and not (clear_nominated and nominated):
            return
        cond = {"type": "PodScheduled", "status": "False", "reason": reason, "message": message,
                "lastProbeTime": None,
                "lastTransitionTime": old["lastTransitionTime"] if old and old.get("status") == "False"
                and old.get("lastTransitionTime") else now_time()}
        conditions = [c for c in conditions if c.get("type") != "PodScheduled"] + [cond]
        status: Obj = {"conditions": conditions}
        if clear_nominated:  # even when our informer has not seen the nomination yet
            status["nominatedNodeName"] = None
        try:
            await self.client.request(
                "PATCH", resource_path("", "v1", "pods", m.get("namespace"), m["name"], "status"),
                {"metadata": {"uid": m.get("uid")}, "status": status},
                content_type="application/strategic-merge-patch+json")
        except (APIStatusError, aiohttp.ClientError, asyncio.TimeoutError) as e:
            log.debug("pod %s/%s: setting PodScheduled: %s", m.get("namespace"), m["name"], e)

    async def _event(self, pod: Obj, type_: str, reason: str, message: str, action: str | None = None) -> None:
        """An events.k8s.io/v1 Event, as kube-scheduler's event recorder writes it: reportingController is the
        scheduler name, reportingInstance `<scheduler name>-<hostname>`, action Scheduling or Binding unless
        given."""
        m = pod["metadata"]
        ns = m.get("namespace") or "default"
        now = datetime.now(timezone.utc)
        event = {"apiVersion": "events.k8s.io/v1", "kind": "Event",
                 "metadata": {"name": f"{m['name']}.{time.time_ns():x}", "namespace": ns},
                 "eventTime": now.strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
                 "reportingController": self.scheduler_name,
                 "reportingInstance": f"{self.scheduler_name}-{socket.gethostname()}",
                 "action": action or ("Scheduling" if reason == "FailedScheduling" else "Binding"),
                 "reason": reason, "note": message, "type": type_,
                 "regarding": {"apiVersion": "v1", "kind": "Pod", "namespace": ns, "name": m["name"],
                               "uid": m.get("uid", ""), "resourceVersion": m.get("resourceVersion", "")}}
        try:
            await self.client.request("POST", resource_path("events.k8s.io", "v1", "events", ns), event)
        except (APIStatusError, aiohttp.ClientError, asyncio.TimeoutError) as e:
            log.debug("event for pod %s/%s: %s", ns, m["name"], e)


def _gates(gates: FeatureGates | dict[str, bool] | str | None) -> FeatureGates:
    if isinstance(gates, FeatureGates):
        return gates
    if isinstance(gates, str):
        from dramock.schemas.featuregates import parse

        return FeatureGates(parse(gates))
    return FeatureGates(gates or {})


async def run_scheduler(server_url: str, stop: asyncio.Event | None = None,
                        gates: FeatureGates | dict[str, bool] | str | None = None,
                        allocate: Allocate | None = None, user_agent: str = "dramock-scheduler",
                        binding_timeout: float = bindingconditions.DEFAULT_BINDING_TIMEOUT) -> None:
    """Run the scheduler against `server_url` until `stop` is set (forever when None)."""
    stop = stop or asyncio.Event()
    client = Client(server_url, user_agent)
    try:
        await Scheduler(client, allocate=allocate, gates=_gates(gates), binding_timeout=binding_timeout).run(stop)
    finally:
        await client.close()
