"""Node registration and the node lease heartbeat, as the kubelet does them (over HTTP only)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import platform
from dataclasses import dataclass, field
from typing import Any

from dramock import KUBERNETES_VERSION, timefmt
from dramock.client.rest import APIStatusError, Client, resource_path

log = logging.getLogger("dramock.kubelet.node")

Obj = dict[str, Any]
NODE_LEASE_NAMESPACE = "kube-node-lease"




@dataclass
class NodeConfig:
    name: str
    capacity: dict[str, str] = field(default_factory=lambda: {"cpu": "8", "memory": "32Gi", "pods": "110",
                                                               "ephemeral-storage": "100Gi"})
    allocatable: dict[str, str] | None = None  # default: same as capacity
    labels: dict[str, str] = field(default_factory=dict)
    annotations: dict[str, str] = field(default_factory=dict)
    address: str = "127.0.0.1"
    lease_duration_seconds: int = 40  # --node-lease-duration-seconds; renewed every quarter of it (10 s)
    kubelet_port: int = 10250  # status.daemonEndpoints: where the kubelet's HTTP endpoint (container logs) is

    @property
    def lease_renew_interval(self) -> float:
        return self.lease_duration_seconds * 0.25


def node_labels(cfg: NodeConfig) -> dict[str, str]:
    arch = {"x86_64": "amd64", "aarch64": "arm64"}.get(platform.machine(), platform.machine() or "amd64")
    return {"kubernetes.io/hostname": cfg.name, "kubernetes.io/os": "linux", "kubernetes.io/arch": arch,
            "beta.kubernetes.io/os": "linux", "beta.kubernetes.io/arch": arch, **cfg.labels}


def node_status(cfg: NodeConfig, previous: Obj | None = None, not_ready: str = "") -> Obj:
    """The status the kubelet posts; Ready=False with `not_ready` as its message when that is set."""
    now = timefmt.now()
    ready = "False" if not_ready else "True"
    prev_ready = next((c for c in (previous or {}).get("conditions", []) if c.get("type") == "Ready"), None)
    transition = prev_ready["lastTransitionTime"] if prev_ready and prev_ready.get("status") == ready else now
    conditions = [
        {"type": t, "status": "False", "reason": reason, "message": msg, "lastHeartbeatTime": now,
         "lastTransitionTime": now}
        for t, reason, msg in (("MemoryPressure", "KubeletHasSufficientMemory", "kubelet has sufficient memory "
                                "available"),
                               ("DiskPressure", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
                               ("PIDPressure", "KubeletHasSufficientPID", "kubelet has sufficient PID available"))
    ]
    conditions.append({"type": "Ready", "status": ready, "reason": "KubeletNotReady" if not_ready else "KubeletReady",
                       "message": not_ready or "kubelet is posting ready status", "lastHeartbeatTime": now,
                       "lastTransitionTime": transition})
    return {
        "capacity": dict(cfg.capacity),
        "allocatable": dict(cfg.allocatable if cfg.allocatable is not None else cfg.capacity),
        "conditions": conditions,
        "addresses": [{"type": "InternalIP", "address": cfg.address}, {"type": "Hostname", "address": cfg.name}],
        "daemonEndpoints": {"kubeletEndpoint": {"Port": cfg.kubelet_port}},
        "nodeInfo": {"machineID": "", "systemUUID": "", "bootID": "", "kernelVersion": platform.release(),
                     "osImage": "dramock", "containerRuntimeVersion": "dramock://0",
                     "kubeletVersion": KUBERNETES_VERSION, "kubeProxyVersion": "",
                     "operatingSystem": "linux", "architecture": node_labels(cfg)["kubernetes.io/arch"]},
    }


async def register_node(client: Client, cfg: NodeConfig) -> Obj:
    """Create the Node (or adopt an existing one: merge our labels), then post a Ready status."""
    path = resource_path("", "v1", "nodes")
    labels = node_labels(cfg)
    try:
        node = await client.request("POST", path, {"apiVersion": "v1", "kind": "Node",
                                                   "metadata": {"name": cfg.name, "labels": labels,
                                                                "annotations": dict(cfg.annotations)},
                                                   "spec": {}})
        log.info("registered node %s", cfg.name)
    except APIStatusError as e:
        if e.code != 409:
            raise
        node = await client.request("PATCH", resource_path("", "v1", "nodes", name=cfg.name),
                                    {"metadata": {"labels": labels, "annotations": dict(cfg.annotations)}},
                                    content_type="application/merge-patch+json")
    return await update_node_status(client, cfg, node)


async def update_node_status(client: Client, cfg: NodeConfig, node: Obj | None = None, not_ready: str = "") -> Obj:
    if node is None:
        node = await client.request("GET", resource_path("", "v1", "nodes", name=cfg.name))
    status = node_status(cfg, node.get("status"), not_ready)
    return await client.request("PATCH", resource_path("", "v1", "nodes", name=cfg.name, subresource="status"),
                                {"status": status}, content_type="application/merge-patch+json")


class NodeLease:
    """Creates and renews the node's Lease in kube-node-lease (owned by the Node, as upstream's)."""

    def __init__(self, client: Client, cfg: NodeConfig):
        self.client = client
        self.cfg = cfg
        self.renewals = 0

    def _path(self, name: str | None = None) -> str:
        return resource_path("coordination.k8s.io", "v1", "leases", NODE_LEASE_NAMESPACE, name)

    async def renew(self) -> Obj:
        try:
            lease = await self.client.request("GET", self._path(self.cfg.name))
        except APIStatusError as e:
            if e.code != 404:
                raise
            return await self._create()
        lease.setdefault("spec", {}).update({"holderIdentity": self.cfg.name,
                                             "leaseDurationSeconds": self.cfg.lease_duration_seconds,
                                             "renewTime": timefmt.now_micro()})
        out = await self.client.request("PUT", self._path(self.cfg.name), lease)
        self.renewals += 1
        return out

    async def _create(self) -> Obj:
        owner: list[Obj] = []
        with contextlib.suppress(APIStatusError):
            node = await self.client.request("GET", resource_path("", "v1", "nodes", name=self.cfg.name))
            owner = [{"apiVersion": "v1", "kind": "Node", "name": self.cfg.name, "uid": node["metadata"]["uid"]}]
        body = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                "metadata": {"name": self.cfg.name, "namespace": NODE_LEASE_NAMESPACE, "ownerReferences": owner},
                "spec": {"holderIdentity": self.cfg.name, "leaseDurationSeconds": self.cfg.lease_duration_seconds,
                         "renewTime": timefmt.now_micro()}}
        try:
            out = await self.client.request("POST", self._path(), body)
        except APIStatusError as e:
            if e.code != 404:  # 404: the namespace is missing; create it and try again
                raise
            with contextlib.suppress(APIStatusError):
                await self.client.request("POST", resource_path("", "v1", "namespaces"),
                                          {"apiVersion": "v1", "kind": "Namespace",
                                           "metadata": {"name": NODE_LEASE_NAMESPACE}})
            out = await self.client.request("POST", self._path(), body)
        self.renewals += 1
        return out

    async def run(self, stop: asyncio.Event) -> None:
        while not stop.is_set():
            try:
                await self.renew()
            except Exception as e:  # noqa: BLE001 - keep heartbeating through API hiccups
                log.warning("node lease %s: %s", self.cfg.name, e)
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(stop.wait(), self.cfg.lease_renew_interval)


async def node_event(client: Client, node: str, reason: str, message: str, type_: str = "Normal") -> None:
    """Post an Event about the Node (what `kubectl describe node` lists); best effort."""
    now = timefmt.now()
    event = {"apiVersion": "v1", "kind": "Event", "metadata": {"generateName": f"{node}.", "namespace": "default"},
             "involvedObject": {"apiVersion": "v1", "kind": "Node", "name": node, "uid": node},
             "reason": reason, "message": message, "type": type_, "source": {"component": "kubelet", "host": node},
             "firstTimestamp": now, "lastTimestamp": now, "count": 1, "reportingComponent": "kubelet",
             "reportingInstance": node}
    try:
        await client.request("POST", resource_path("", "v1", "events", "default"), event)
    except APIStatusError as e:
        log.debug("event for node %s: %s", node, e)
