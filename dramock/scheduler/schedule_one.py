"""One scheduling cycle (upstream's schedule_one.go schedulingCycle): PreEnqueue, PreFilter, Filter over the
nodes (node fit, then DynamicResources with the allocator, extended resources), Score, Reserve; then the
binding cycle runs on its own. Verdicts and allocation outcomes are cached per pod shape and node state."""

from __future__ import annotations

import asyncio
import copy
import json
import logging
import time
from collections import Counter
from fractions import Fraction
from typing import Any

from dramock.scheduler import filtercache, nodeallocatable
from dramock.scheduler.binding import BindingCycle
from dramock.scheduler.framework import MSG_NO_NODES, Obj, Unschedulable, feasible_nodes_to_find, fit_error_message
from dramock.scheduler.plugins import extendedresources as extended
from dramock.scheduler.plugins.dynamicresources import (
    FILTER_TIMEOUT,
    MSG_CANNOT_ALLOCATE,
    MSG_FILTER_TIMEOUT,
    WaitingForClaims,
    pod_claim_refs,
)
from dramock.scheduler.plugins.nodefit import node_fit_reason, pod_requests
from dramock.scheduler.types import AllocationInput

log = logging.getLogger("dramock.scheduler")


class SchedulingCycle(BindingCycle):
    """One scheduling cycle at a time: the filters, the score and Reserve; then a binding cycle is started."""

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
                self._observe("Reserve", "Success", start)
        finally:
            self._in_cycle = None
        task = asyncio.create_task(self._binding_cycle(key, pod, node, claims, new_allocs, special))
        self._binding.add(task)
        task.add_done_callback(self._binding.discard)

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
                self._observe("PreFilter", "UnschedulableAndUnresolvable", t0)
                raise Unschedulable(f'resourceclaim "{cm["name"]}" is being deleted')
            if cm.get("uid") in self.in_flight:
                self._observe("PreFilter", "UnschedulableAndUnresolvable", t0)
                raise Unschedulable(f'resource claim {ns}/{cm["name"]} is in the process of being allocated')
            status = c.get("status") or {}
            if status.get("allocation"):
                if node_allocatable and any(r.get("uid") != uid for r in status.get("reservedFor") or []) and \
                        nodeallocatable.has_mapped_device(status["allocation"], self._device_index()):
                    self._observe("PreFilter", "UnschedulableAndUnresolvable", t0)
                    raise Unschedulable(nodeallocatable.MSG_SHARED.format(name=cm["name"]))
                allocated.append(c)
            else:
                pending.append(c)
        classes = {c["metadata"]["name"]: c for c in self.classes.list()}
        ext_reqs = extended.extended_requests(pod, classes) if self.gates.enabled("DRAExtendedResource") else []
        dra = bool(claims) or bool(ext_reqs)
        if dra:
            self._observe("PreFilter", "Success", t0)
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
        # What claims hold in the pools of the slices without nodeName, as one number: bumped when any of them
        # moved (the slices view, and so the set of those pools, is part of every key through cluster_generation).
        changed, self.held.changed_pools = self.held.changed_pools, set()
        if changed and not changed.isdisjoint(self._unpinned_pools()):
            self._shared_held += 1
        unpinned_held = self._shared_held
        if dra:
            self._dra_cycles += 1
        sample = dra and self._dra_cycles % 10 == 1
        pending_key = ""
        if pending or ext_reqs:
            # The same slice lists while the slices do not change: the allocator shares its view of the shared
            # ones across nodes and pods (AllocationInput.shared_slices).
            alloc_input = {"slices": self._all_slices(), "shared_slices": unpinned, "classes": classes,
                           "allocated_devices": self.held.devices, "taint_rules": self.taint_rules.list()}
            pending_key = filtercache.claims_key(pending)
        timeout = self.gates.enabled("DRASchedulerFilterTimeout")
        binding_on = self.gates.enabled("DRADeviceBindingConditions")
        from dramock.scheduler.allocator.pools import shared_view_key  # as the allocator: imported on first use
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
        for node in nodes[start:] + nodes[:start]:
            if len(fits) >= wanted:
                break
            examined += 1
            name = node["metadata"]["name"]
            if shape is not None:
                vkey = (shape, name, node["metadata"].get("resourceVersion"), self.node_usage.version.get(name, 0),
                        self.cluster_generation, unpinned_held,
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
                node_slices = slices_by_node.get(name, [])
                ckeyed = pending_key if special is None else filtercache.claims_key(to_allocate)
                # A node without slices of its own gets the outcome of any node whose labels the shared slices'
                # selectors answer alike (same claims and held devices): the outcome cannot name the node then.
                view = shared_view_key(unpinned, node, binding_on) if not node_slices else None
                ckey = (self.filter_cache.shared_key(ckeyed, view, self.cluster_generation, unpinned_held)
                        if view is not None else
                        self.filter_cache.key(ckeyed, node, self.cluster_generation, local_pools.get(name, []),
                                              self.held.pool_version, unpinned_held))
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
                self._observe("Filter", "Success" if reason is None else "Unschedulable", t1)
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
