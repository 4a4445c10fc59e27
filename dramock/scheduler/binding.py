"""The binding cycle (upstream's schedule_one.go bindingCycle): PreBind (DynamicResources), Bind through
pods/binding; a failure unreserves, and the pod is retried with backoff."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time

import aiohttp

from dramock.client.rest import APIStatusError, resource_path
from dramock.scheduler import bindingconditions
from dramock.scheduler.framework import BindError, Obj
from dramock.scheduler.plugins import extendedresources as extended
from dramock.scheduler.plugins.dynamicresources import PLUGIN, DynamicResources

log = logging.getLogger("dramock.scheduler")


class BindingCycle(DynamicResources):
    """One binding cycle per reserved pod, run as its own task."""

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
                self._assume_claim(ns, cm["name"], created)
                updated = await self._prebind_claim(ns, cm["name"], cm["uid"],
                                                    allocations[special["metadata"]["uid"]], pod)
                if updated is not None:
                    self._assume_claim(ns, cm["name"], updated)
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
                    self._assume_claim(ns, cm["name"], updated)
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
                self._observe("PreBind", "Error", t0)
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
            self._observe("PreBind", "Success", t0)
        self._count_attempt("scheduled")
        self.scheduled += 1
        self.attempts.pop(key, None)
        log.info("pod %s bound to %s", key, node)
        await self._event(pod, "Normal", "Scheduled", f"Successfully assigned {ns}/{name} to {node}")

    async def _bound_elsewhere(self, ns: str, name: str, uid: str, e: BaseException) -> bool:
        """After a 409 from pods/binding: whether the pod (this very pod) already has a node."""
        if not isinstance(e, APIStatusError) or e.code != 409:
            return False
        try:
            current = await self.client.request("GET", resource_path("", "v1", "pods", ns, name))
        except (APIStatusError, aiohttp.ClientError, asyncio.TimeoutError):
            return False
        return current["metadata"].get("uid") == uid and bool((current.get("spec") or {}).get("nodeName"))
