"""The scheduler's configuration, informers, queue and cache (assumed pods and claims, in-flight allocations,
incremental views), on which the framework's parts (events, plugins, binding and scheduling cycles) build."""

from __future__ import annotations

import asyncio
from fractions import Fraction

from dramock.client.informer import Informer, newer
from dramock.client.rest import Client, resource_path
from dramock.scheduler import bindingconditions, filtercache, nodeallocatable
from dramock.scheduler.framework import GROUP, SCHEDULER_NAME, VERSION, Allocate, Obj
from dramock.scheduler.metrics import SchedulerMetrics
from dramock.scheduler.plugins.nodefit import _q, pod_requests
from dramock.scheduler.queue import SchedulingQueue
from dramock.scheduler.state import HeldDevices, NodeUsage, TrackedDict
from dramock.schemas.featuregates import FeatureGates


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


class SchedulerBase(SchedulingQueue):
    """Configuration (passed in), informers, the queue and the cache that the framework's parts share."""

    def __init__(self, client: Client, allocate: Allocate | None = None, gates: FeatureGates | None = None,
                 scheduler_name: str = SCHEDULER_NAME,
                 binding_timeout: float = bindingconditions.DEFAULT_BINDING_TIMEOUT,
                 metrics: SchedulerMetrics | None = None):
        super().__init__()
        self.metrics = metrics  # None: no metrics
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
        self.informers: tuple[Informer, ...] = (self.pods, self.nodes, self.claims, self.slices, self.classes,
                                                self.taint_rules)
        self.podgroups: Informer | None = None  # DRAWorkloadResourceClaims with PodGroups served (scheduler.run)
        # Reserve state: allocations reserved but not yet written (claim uid -> claim with status.allocation),
        # claims written but not yet seen by the informer ((ns, name) -> claim), pods bound in memory.
        self.in_flight: dict[str, Obj] = TrackedDict(self._in_flight_changed)
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
        self._slices_view: tuple[int, dict[str, list[Obj]], list[Obj], dict[str, list], list[Obj],
                                 set[tuple[str, str]]] | None = None
        self._shared_held = 0  # see _find_node
        self._nodes_view: list[Obj] | None = None  # sorted by name; None after any node event
        self._devices_view: tuple[int, nodeallocatable.DeviceIndex] | None = None
        self._verdicts: dict[tuple, tuple[str | None, list[Obj]]] = {}  # (reason, allocations); see _find_node
        self._dra_cycles = 0  # Filter durations are recorded for every tenth DRA cycle, as upstream samples
        self._binding: set[asyncio.Task] = set()
        self._last_event: dict[str, tuple[str, float]] = {}  # pod uid -> (message, time)
        self.scheduled = 0

    def _in_flight_changed(self, uid: str, claim: Obj) -> None:
        self.held.in_flight_changed(uid, claim)
        m = claim["metadata"]
        key = (m.get("namespace", ""), m["name"])
        if uid not in self.in_flight and key not in self.assumed_claims:
            # The allocation was written (or given up), and no watch event of the claim is still to come for it:
            # its event came before the write's answer (or there was no write). That event found the claim still
            # in flight, so this is the cluster event for the pods parked on it. (A claim still assumed moves
            # them when its event arrives.)
            self._move_all("claim allocation no longer in flight", key)

    def _assume_claim(self, ns: str, name: str, claim: Obj) -> None:
        """Remember a claim a write returned until the informer has it, unless the informer already has it or a
        later version (its watch event can come before the write's answer)."""
        if newer(claim, self.claims.get(ns, name)):
            self.assumed_claims[(ns, name)] = claim
        else:
            self.assumed_claims.pop((ns, name), None)

    @property
    def allocate(self) -> Allocate:
        if self._allocate is None:
            from dramock.scheduler.allocator import allocate

            self._allocate = allocate
        return self._allocate

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

    def _count_attempt(self, result: str) -> None:
        m = self.metrics
        if m is not None:
            m.schedule_attempts.labels(result, self.scheduler_name).inc()

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
        view = self._slices_view_now()
        return view[1], view[2], view[3]

    def _unpinned_pools(self) -> set[tuple[str, str]]:
        """The pools of the slices without nodeName."""
        return self._slices_view_now()[5]

    def _all_slices(self) -> list[Obj]:
        """Every slice: one list object while the slices do not change (the allocator keys its caches on it)."""
        return self._slices_view_now()[4]

    def _slices_view_now(self) -> tuple[int, dict[str, list[Obj]], list[Obj], dict[str, list], list[Obj],
                                        set[tuple[str, str]]]:
        if self._slices_view is None or self._slices_view[0] != self.cluster_generation:
            everything = self.slices.list()
            by_node, unpinned = slices_by_node_name(everything)
            pools = {name: filtercache.pools_of(slices) for name, slices in by_node.items()}
            self._slices_view = (self.cluster_generation, by_node, unpinned, pools, everything,
                                 set(filtercache.pools_of(unpinned)))
        return self._slices_view

    def _sorted_nodes(self) -> list[Obj]:
        if self._nodes_view is None:
            self._nodes_view = sorted(self.nodes.list(), key=lambda n: n["metadata"]["name"])
        return self._nodes_view
