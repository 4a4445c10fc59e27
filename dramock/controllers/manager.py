"""The controller manager: every bundled controller in one process, each an API client over HTTP."""

from __future__ import annotations

import asyncio
import logging
import signal

from dramock.client.informer import cancel_all
from dramock.client.leaderelection import LeaderElectionConfig, run_leading
from dramock.client.rest import Client, server_from_kubeconfig
from dramock.controllers.clusterroleaggregation import ClusterRoleAggregationController
from dramock.controllers.garbagecollector import GarbageCollector
from dramock.controllers.namespace import NamespaceController
from dramock.controllers.nodelifecycle import GRACE_PERIOD, NodeLifecycleController
from dramock.controllers.podgc import GC_INTERVAL, QUARANTINE, PodGC
from dramock.controllers.quota import QuotaController
from dramock.controllers.resourceclaim import (
    CONCURRENT_RESOURCECLAIM_SYNCS,
    ResourceClaimController,
    register_metrics,
)
from dramock.controllers.resourcepoolstatus import ResourcePoolStatusController
from dramock.controllers.workloads.controllers import WorkloadControllers
from dramock.registry.kinds import QUOTA_EVALUATORS, STORED_KINDS
from dramock.schemas.featuregates import FeatureGates

log = logging.getLogger("dramock.controllers.manager")


class ControllerManager:
    def __init__(self, client: Client, pod_gc_interval: float = GC_INTERVAL, pod_gc_quarantine: float = QUARANTINE,
                 node_monitor_grace_period: float = GRACE_PERIOD,
                 resourceclaim_syncs: int = CONCURRENT_RESOURCECLAIM_SYNCS, gates: FeatureGates | None = None):
        self.client = client
        # One informer per collection for all the controllers (pods, nodes and claims are watched by several).
        if client.shared_informers is None:
            client.shared_informers = {}
        self.nodelifecycle = NodeLifecycleController(client, node_monitor_grace_period,
                                                     min(5.0, node_monitor_grace_period))
        self.podgc = PodGC(client, pod_gc_interval, pod_gc_quarantine)
        self.workloads = WorkloadControllers(client)
        self.namespace = NamespaceController(client)
        self.quota = QuotaController(client, STORED_KINDS, QUOTA_EVALUATORS)
        self.resourceclaim = ResourceClaimController(client, resourceclaim_syncs, gates)
        self.garbagecollector = GarbageCollector(client)
        self.resourcepoolstatus = ResourcePoolStatusController(client)  # idle unless its API is served
        self.clusterroleaggregation = ClusterRoleAggregationController(client)
        register_metrics(self.resourceclaim)

    async def run(self, stop: asyncio.Event) -> None:
        tasks = [asyncio.create_task(c.run(stop), name=type(c).__name__)
                 for c in (self.namespace, self.quota, self.resourceclaim, self.garbagecollector,
                           self.podgc, self.workloads, self.nodelifecycle, self.resourcepoolstatus,
                           self.clusterroleaggregation)]
        try:
            await stop.wait()
        finally:
            await cancel_all(tasks)


def run_controller_manager(kubeconfig: str, user_agent: str, election: LeaderElectionConfig | None = None,
                           pod_gc_interval: float = GC_INTERVAL, pod_gc_quarantine: float = QUARANTINE,
                           node_monitor_grace_period: float = GRACE_PERIOD,
                           resourceclaim_syncs: int = CONCURRENT_RESOURCECLAIM_SYNCS,
                           gates: FeatureGates | None = None) -> int:
    """`dramock controller-manager --kubeconfig FILE`: run until SIGINT/SIGTERM (1 when leadership is lost)."""
    server = server_from_kubeconfig(kubeconfig)

    async def work(stop: asyncio.Event) -> None:
        client = Client(server, user_agent)
        try:
            log.info("controller manager talking to %s", client.server)
            await ControllerManager(client, pod_gc_interval, pod_gc_quarantine,
                                    node_monitor_grace_period, resourceclaim_syncs, gates).run(stop)
        finally:
            await client.close()

    async def main() -> bool:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        return await run_leading(server, election or LeaderElectionConfig(enabled=False), user_agent, work, stop)

    return 0 if asyncio.run(main()) else 1
