"""The scheduler (kube-scheduler's `default-scheduler` with the DynamicResources plugin, KEP-4381).

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
import logging
import time
from typing import Any

from dramock.client.rest import Client
from dramock.scheduler import bindingconditions
from dramock.scheduler.eventhandlers import EventHandlers
from dramock.scheduler.framework import SCHEDULER_NAME, Allocate
from dramock.scheduler.metrics import SchedulerMetrics
from dramock.scheduler.schedule_one import SchedulingCycle
from dramock.schemas.featuregates import FeatureGates

log = logging.getLogger("dramock.scheduler")


class Scheduler(SchedulingCycle, EventHandlers):
    """kube-scheduler's default profile as an API client; see the module docstring. `metrics`: where its
    metrics go (None: none; run_scheduler creates them on prometheus_client's default registry)."""

    def __init__(self, client: Client, allocate: Allocate | None = None, gates: FeatureGates | None = None,
                 scheduler_name: str = SCHEDULER_NAME,
                 binding_timeout: float = bindingconditions.DEFAULT_BINDING_TIMEOUT,
                 metrics: SchedulerMetrics | None = None):
        super().__init__(client, allocate, gates, scheduler_name, binding_timeout, metrics)
        self.pods.add_handler(self._on_pod)
        self.nodes.add_handler(self._on_node)
        self.claims.add_handler(self._on_claim)
        for inf in (self.slices, self.classes, self.taint_rules):
            inf.add_handler(self._on_cluster_object)

    async def run(self, stop: asyncio.Event) -> None:
        _ = self.allocate  # fail early when no allocator is there
        await self._watch_pod_groups(stop)
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

    def _update_pending_metric(self) -> None:
        m = self.metrics
        if m is None:
            return
        gated = sum(1 for k in self._gated if k in self.unschedulable)
        m.pending_pods.labels("active").set(len(self.active))
        m.pending_pods.labels("backoff").set(len(self.backoff))
        m.pending_pods.labels("unschedulable").set(len(self.unschedulable) - gated)
        m.pending_pods.labels("gated").set(gated)

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
                        binding_timeout: float = bindingconditions.DEFAULT_BINDING_TIMEOUT,
                        metrics_registry: Any = None) -> None:
    """Run the scheduler against `server_url` until `stop` is set (forever when None); its metrics go to
    `metrics_registry` (prometheus_client's default registry when None)."""
    stop = stop or asyncio.Event()
    client = Client(server_url, user_agent)
    try:
        await Scheduler(client, allocate=allocate, gates=_gates(gates), binding_timeout=binding_timeout,
                        metrics=SchedulerMetrics.create(metrics_registry)).run(stop)
    finally:
        await client.close()
