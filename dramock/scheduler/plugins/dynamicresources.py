"""The DynamicResources plugin (KEP-4381): PreEnqueue (the pod's claims exist), PreFilter and Filter parts
(allocated claims usable from the node, DRANodeAllocatableResources), PostFilter (deallocate a claim kept
elsewhere), PreBind (finalizer, allocation, reservation; binding conditions, KEP-5007; special claims of
KEP-5004) and Unreserve. The scheduling cycle (schedule_one.py) runs the allocator for the Filter part."""

from __future__ import annotations

import asyncio
import contextlib
import copy
import logging
import time
from collections.abc import Callable
from fractions import Fraction

import aiohttp

from dramock.client.rest import APIStatusError, resource_path
from dramock.client.retry import DEFAULT_BACKOFF, retry_on_conflict
from dramock.scheduler import bindingconditions, nodeallocatable
from dramock.scheduler.events import Events, now_time
from dramock.scheduler.framework import GROUP, VERSION, BindError, Obj
from dramock.scheduler.plugins import extendedresources as extended
from dramock.scheduler.plugins.podgroups import PodGroupClaims
from dramock.schemas.nodeselector import node_selector_matches

log = logging.getLogger("dramock.scheduler")


FINALIZER = "resource.kubernetes.io/delete-protection"
POD_CLAIM_ANNOTATION = "resource.kubernetes.io/pod-claim-name"
RESERVED_FOR_MAX = 256

MSG_CANNOT_ALLOCATE = "cannot allocate all claims"
MSG_NOT_AVAILABLE = "resourceclaim not available on the node"
MSG_IN_USE = "resourceclaim in use"

MSG_FILTER_TIMEOUT = "timed out trying to allocate devices"
# DRASchedulerFilterTimeout: the allocation budget per node (upstream's DynamicResourcesArgs.filterTimeout).
FILTER_TIMEOUT = 10.0
PLUGIN = "DynamicResources"


class WaitingForClaims(Exception):
    """PreEnqueue: a claim of the pod does not exist yet. `claim` (ns, name): the claim whose events may let it
    in; None: it waits for its own status (the name of a claim generated from a template)."""

    def __init__(self, message: str, claim: tuple[str, str] | None = None):
        super().__init__(message)
        self.claim = claim


def allocated_claims_reason(node: Obj, allocated: list[Obj], uid: str | None,
                            unavailable: Callable[[Obj], bool] | None = None) -> tuple[str | None, Obj | None]:
    """Why the pod's allocated claims rule the node out (None: they don't), and the claim whose allocation
    is elsewhere, or which `unavailable` says is (binding failed or timed out): a PostFilter candidate."""
    for c in allocated:
        status = c["status"]
        selector = status["allocation"].get("nodeSelector")
        if selector is not None and not node_selector_matches(selector, node):
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


class DynamicResources(PodGroupClaims, Events):
    """The DynamicResources plugin's extension points that read or write the scheduler's state."""

    def _observe(self, extension_point: str, status: str, start: float) -> None:
        if self.metrics is not None:
            self.metrics.observe(PLUGIN, extension_point, status, start)

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
                                     for r in claim["metadata"].get("ownerReferences") or []) and \
                    not self._made_for_group(pod, claim):
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
        m = self.metrics
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

    async def _create_special_claim(self, pod: Obj, special: Obj) -> Obj:
        ns = pod["metadata"].get("namespace", "")
        m = self.metrics
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
        consumer = self._consumer(pod, cname)  # the pod, or its PodGroup for a claim of the group
        uid = consumer["uid"]
        claim = self.claim(ns, cname)
        if allocation is not None and bindingconditions.binding_conditions_on(self.gates):
            # The binding timeout counts from the moment the allocation is written (upstream's bindClaim).
            allocation = {**allocation, "allocationTimestamp": now_time()}
        fresh = False

        async def write() -> Obj | None:
            # The first attempt writes over the informer's claim; after a conflict, over a fresh read of it.
            nonlocal claim, fresh
            if fresh:
                claim = await self.client.request("GET", path)
            fresh = True
            if claim is None or claim["metadata"].get("uid") != cuid:
                raise BindError(f"resourceclaim {ns}/{cname} changed (deleted or replaced)")
            if claim["metadata"].get("deletionTimestamp"):
                raise BindError(f'resourceclaim "{cname}" is being deleted')
            # Shallow copies: the values written are new lists and dicts, never the cached claim's own.
            status = dict(claim.get("status") or {})
            reserved = status.get("reservedFor") or []
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
                status["reservedFor"] = reserved + [consumer]
            return await self.client.request("PUT", path + "/status", {**claim, "status": status})

        # Upstream's bindClaim retries conflicts with client-go's DefaultBackoff.
        return await retry_on_conflict(write, DEFAULT_BACKOFF)

    async def _unreserve(self, ns: str, written: list[tuple[str, str]], uid: str, allocated_here: set[str]) -> None:
        """Remove the pod from the claims it was written into; an allocation made for it alone is cleared too
        (the claim controller then drops the finalizer)."""
        for _, cname in written:
            path = resource_path(GROUP, VERSION, "resourceclaims", ns, cname)

            async def remove(path: str = path) -> None:
                claim = await self.client.request("GET", path)
                status = claim.get("status") or {}
                reserved = status.get("reservedFor") or []
                if not any(r.get("uid") == uid for r in reserved):
                    return
                status["reservedFor"] = [r for r in reserved if r.get("uid") != uid]
                if not status["reservedFor"]:
                    del status["reservedFor"]
                    if claim["metadata"].get("uid") in allocated_here:
                        status.pop("allocation", None)
                claim["status"] = status
                await self.client.request("PUT", path + "/status", claim)

            try:
                await retry_on_conflict(remove)
            except (APIStatusError, aiohttp.ClientError, asyncio.TimeoutError) as e:
                log.info("unreserve %s/%s: %s", ns, cname, e)
