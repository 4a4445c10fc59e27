"""Node lifecycle (kube-controller-manager's `node-lifecycle-controller`, the parts pods depend on): a node whose
kubelet stopped renewing its Lease (kube-node-lease) for longer than `--node-monitor-grace-period` gets its
conditions set to Unknown ("Kubelet stopped posting node status.") and the NoExecute taint
`node.kubernetes.io/unreachable`; a node reporting Ready=False gets `node.kubernetes.io/not-ready`. The taint
goes once the node is Ready again. Pods that do not tolerate the taint long enough are then evicted by the pod
GC (podgc.py), as the taint eviction controller does."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from typing import Any

from dramock import timefmt
from dramock.client.informer import cancel_all, shared_informer
from dramock.client.rest import APIStatusError, Client, resource_path

log = logging.getLogger("dramock.controllers.nodelifecycle")

Obj = dict[str, Any]
UNREACHABLE = "node.kubernetes.io/unreachable"
NOT_READY = "node.kubernetes.io/not-ready"
GRACE_PERIOD = 50.0  # --node-monitor-grace-period (1.32+ default)
MONITOR_PERIOD = 5.0  # --node-monitor-period


def _ts(value: str | None) -> float:
    return timefmt.parse_seconds(value) or 0.0


class NodeLifecycleController:
    def __init__(self, client: Client, grace_period: float = GRACE_PERIOD, monitor_period: float = MONITOR_PERIOD):
        self.client = client
        self.grace_period, self.monitor_period = grace_period, monitor_period
        self.nodes = shared_informer(client, resource_path("", "v1", "nodes"))
        self.leases = shared_informer(client, resource_path("coordination.k8s.io", "v1", "leases", "kube-node-lease"))
        self._seen: dict[str, float] = {}  # node -> monotonic time this controller first saw it (startup grace)

    async def run(self, stop: asyncio.Event) -> None:
        tasks = [asyncio.create_task(i.run(stop)) for i in (self.nodes, self.leases)]
        try:
            await self.nodes.synced.wait()
            await self.leases.synced.wait()
            while not stop.is_set():
                for node in self.nodes.list():
                    try:
                        await self.monitor(node)
                    except APIStatusError as e:
                        log.debug("node %s: %s", node["metadata"]["name"], e)
                with contextlib.suppress(asyncio.TimeoutError):
                    await asyncio.wait_for(stop.wait(), self.monitor_period)
        finally:
            await cancel_all(tasks)

    def _last_heartbeat(self, node: Obj) -> float:
        name = node["metadata"]["name"]
        lease = self.leases.get("kube-node-lease", name)
        renew = _ts(((lease or {}).get("spec") or {}).get("renewTime"))
        conditions = (node.get("status") or {}).get("conditions") or []
        ready: Obj = next((c for c in conditions if c.get("type") == "Ready"), {})
        return max(renew, _ts(ready.get("lastHeartbeatTime")), _ts(node["metadata"].get("creationTimestamp")))

    async def monitor(self, node: Obj) -> None:
        name = node["metadata"]["name"]
        seen = self._seen.setdefault(name, time.monotonic())
        conditions = (node.get("status") or {}).get("conditions") or []
        ready = next((c for c in conditions if c.get("type") == "Ready"), None)
        stale = time.time() - self._last_heartbeat(node) > self.grace_period and \
            time.monotonic() - seen > self.grace_period  # a restarted controller gives kubelets a grace period
        if stale and ready is not None and ready.get("status") != "Unknown":
            now = timefmt.now()
            updated = [dict(c, status="Unknown", reason="NodeStatusUnknown",
                            message="Kubelet stopped posting node status.", lastTransitionTime=now)
                       for c in conditions]
            log.info("node %s: kubelet stopped posting node status", name)
            node = await self.client.request("PATCH", resource_path("", "v1", "nodes", name=name,
                                                                    subresource="status"),
                                             {"status": {"conditions": updated}},
                                             content_type="application/merge-patch+json")
            ready = next((c for c in node["status"]["conditions"] if c.get("type") == "Ready"), None)
        status = (ready or {}).get("status")
        want = {"Unknown": UNREACHABLE, "False": NOT_READY}.get(status or "")
        taints = (node.get("spec") or {}).get("taints") or []
        ours = [t for t in taints if t.get("key") in (UNREACHABLE, NOT_READY) and t.get("effect") == "NoExecute"]
        if [t.get("key") for t in ours] == ([want] if want else []):
            return
        kept = [t for t in taints if t not in ours]
        if want:
            kept.append({"key": want, "effect": "NoExecute", "timeAdded": timefmt.now()})
        await self.client.request("PATCH", resource_path("", "v1", "nodes", name=name),
                                  {"spec": {"taints": kept or None}}, content_type="application/merge-patch+json")
