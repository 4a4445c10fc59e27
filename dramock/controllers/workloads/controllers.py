"""The workload controllers together, sharing the pod, node and ReplicaSet informers."""

from __future__ import annotations

import asyncio

from dramock.client.informer import cancel_all, shared_informer
from dramock.client.rest import Client, resource_path
from dramock.controllers.workloads.daemonset import DaemonSetController
from dramock.controllers.workloads.deployment import DeploymentController
from dramock.controllers.workloads.job import JobController
from dramock.controllers.workloads.replicaset import ReplicaSetController
from dramock.controllers.workloads.statefulset import StatefulSetController


class WorkloadControllers:
    def __init__(self, client: Client):
        self.pods = shared_informer(client, resource_path("", "v1", "pods"))
        self.nodes = shared_informer(client, resource_path("", "v1", "nodes"))
        self.replicasets = ReplicaSetController(client, self.pods)
        self.controllers = [self.replicasets,
                            DeploymentController(client, self.pods, self.replicasets.objects),
                            DaemonSetController(client, self.pods, self.nodes),
                            StatefulSetController(client, self.pods),
                            JobController(client, self.pods)]

    async def run(self, stop: asyncio.Event) -> None:
        tasks = [asyncio.create_task(i.run(stop)) for i in (self.pods, self.nodes)]
        tasks += [asyncio.create_task(c.run(stop)) for c in self.controllers]
        try:
            await stop.wait()
        finally:
            await cancel_all(tasks)
