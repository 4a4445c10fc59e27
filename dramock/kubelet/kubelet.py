"""The kubelet shim: node registration + lease, DRA plugin registration, ResourceSlice cleanup, pod lifecycle.

Every piece is an API client over HTTP (dramock.client) plus gRPC to the drivers on this node.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
from dataclasses import dataclass, field

import aiohttp

from dramock.client.informer import cancel_all
from dramock.client.rest import APIStatusError, Client, resource_path, server_from_kubeconfig
from dramock.faults import KUBELET_RESTART, NODE_NOT_READY, parse_duration
from dramock.kubelet import sockets
from dramock.kubelet.faults import KubeletFaults
from dramock.kubelet.logs import ContainerLogs, KubeletServer
from dramock.kubelet.node import NodeConfig, NodeLease, node_event, register_node, update_node_status
from dramock.kubelet.plugins import DRAPluginClient, PluginRegistry, PluginWatcher

log = logging.getLogger("dramock.kubelet")

DEFAULT_ROOT_DIR = "/var/lib/kubelet"
SLICES_PATH = resource_path("resource.k8s.io", "v1", "resourceslices")
# Node annotations naming where this shim looks for plugins, so tools (the pytest plugin, check-driver) can find
# a node's directories through the API.
REGISTRY_DIR_ANNOTATION = "dramock.io/plugins-registry-dir"
PLUGINS_DIR_ANNOTATION = "dramock.io/plugins-dir"
EVENT_DRIVER_REGISTERED = "DRADriverRegistered"


@dataclass
class KubeletConfig:
    node: NodeConfig
    root_dir: str = DEFAULT_ROOT_DIR
    # Upstream layout: <root>/plugins_registry/<driver>-reg.sock, endpoints under <root>/plugins/<driver>/.
    registry_dir: str = ""
    plugins_dir: str = ""
    plugin_poll_interval: float = 0.2
    manage_pods: bool = True
    # Retry backoff of failed NodePrepareResources/NodeUnprepareResources calls: initial delay, doubling to max.
    prepare_backoff_initial: float = 0.5
    prepare_backoff_max: float = 30.0
    fault_poll_interval: float = 1.0  # how often kubelet-side fault rules (restart, NotReady) are looked for
    # The kubelet's HTTP endpoint (container logs) on the node address; 0 = any free port (many nodes, one host).
    port: int = 0
    # Where CDI spec files are read to tell a container its edits (default: <root>/cdi, the example driver's).
    cdi_dirs: list[str] = field(default_factory=list)
    extra: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.registry_dir = self.registry_dir or sockets.registry_dir(self.root_dir)
        self.plugins_dir = self.plugins_dir or sockets.plugins_dir(self.root_dir)
        self.node.annotations.setdefault(REGISTRY_DIR_ANNOTATION, os.path.abspath(self.registry_dir))
        self.node.annotations.setdefault(PLUGINS_DIR_ANNOTATION, os.path.abspath(self.plugins_dir))
        self.cdi_dirs = self.cdi_dirs or [os.path.join(self.root_dir, "cdi")]


class Kubelet:
    def __init__(self, client: Client, cfg: KubeletConfig):
        self.client = client
        self.cfg = cfg
        self.node_name = cfg.node.name
        self.plugins = PluginRegistry()
        self.lease = NodeLease(client, cfg.node)
        self.faults = KubeletFaults(client, self.node_name)
        self.watcher = self._new_watcher()
        self.logs = ContainerLogs()
        self.server = KubeletServer(self.logs, cfg.node.address, cfg.port)
        self.pods = None
        if cfg.manage_pods:
            from dramock.kubelet.pods import PodManager

            self.pods = PodManager(client, self.node_name, self.plugins, backoff_initial=cfg.prepare_backoff_initial,
                                   backoff_max=cfg.prepare_backoff_max, faults=self.faults, logs=self.logs,
                                   cdi_dirs=cfg.cdi_dirs)

    def _new_watcher(self) -> PluginWatcher:
        return PluginWatcher(self.cfg.registry_dir, self.cfg.plugins_dir, self.plugins,
                             on_registered=self._on_registered, on_unregistered=self._on_unregistered,
                             poll_interval=self.cfg.plugin_poll_interval)

    async def delete_slices(self, driver: str | None = None) -> None:
        """DeleteCollection of this node's ResourceSlices (all drivers, or one)."""
        selector = f"spec.nodeName={self.node_name}" + (f",spec.driver={driver}" if driver else "")
        await self.client.request("DELETE", SLICES_PATH, params={"fieldSelector": selector})
        log.info("deleted ResourceSlices with %s", selector)

    async def _on_registered(self, plugin: DRAPluginClient) -> None:
        await node_event(self.client, self.node_name, EVENT_DRIVER_REGISTERED,
                         f"DRA driver {plugin.driver} registered ({plugin.version}, endpoint {plugin.endpoint})")
        if self.pods is not None:
            self.pods.kick()

    async def _on_unregistered(self, driver: str) -> None:
        try:
            await self.delete_slices(driver)
        except APIStatusError as e:
            log.warning("deleting ResourceSlices of driver %s: %s", driver, e)

    async def run(self, stop: asyncio.Event) -> None:
        self.cfg.node.kubelet_port = await self.server.start()
        try:
            await self._run(stop)
        finally:
            await self.server.stop()

    async def _run(self, stop: asyncio.Event) -> None:
        # On start, no driver is registered yet: whatever slices this node has are stale (KEP-4381). They go
        # before the node is registered, so that a client that waits for the node (e.g. to publish slices of
        # its own for it) never has them deleted by this.
        await self.delete_slices()
        await register_node(self.client, self.cfg.node)
        watcher_stop = asyncio.Event()
        watcher = asyncio.create_task(self.watcher.run(watcher_stop), name="plugin-watcher")
        tasks = [asyncio.create_task(self.lease.run(stop), name="node-lease")]
        if self.pods is not None:
            tasks.append(asyncio.create_task(self.pods.run(stop), name="pods"))
        try:
            while not stop.is_set():
                with contextlib.suppress(asyncio.TimeoutError):
                    await asyncio.wait_for(stop.wait(), self.cfg.fault_poll_interval)
                if stop.is_set() or not self.faults.supported:
                    continue
                types = await self.faults.types()
                if NODE_NOT_READY in types and (rule := await self.faults.fire(NODE_NOT_READY)):
                    tasks.append(asyncio.create_task(self._not_ready(rule, stop)))
                if KUBELET_RESTART in types and await self.faults.fire(KUBELET_RESTART):
                    watcher_stop.set()
                    await watcher
                    watcher_stop, watcher = await self._restart()
        finally:
            watcher_stop.set()
            await cancel_all([*tasks, watcher])

    async def _restart(self) -> tuple[asyncio.Event, asyncio.Task]:
        """What a kubelet restart looks like to drivers (the registrations were dropped when the watcher
        stopped): the node's slices are deleted as at any kubelet start, then every plugin socket is found and
        registered again. Prepared claims stay known, as upstream's checkpoint keeps them."""
        log.info("kubelet %s: restarting (injected fault)", self.node_name)
        try:
            await self.delete_slices()
        except (APIStatusError, aiohttp.ClientError, OSError) as e:
            log.warning("deleting ResourceSlices of node %s: %s", self.node_name, e)
        self.watcher = self._new_watcher()
        stop = asyncio.Event()
        return stop, asyncio.create_task(self.watcher.run(stop), name="plugin-watcher")

    async def _not_ready(self, rule: dict, stop: asyncio.Event) -> None:
        seconds = parse_duration(rule["params"].get("for", "10s"))
        why = f"dramock injected fault {rule['id']}: {rule['rule']}"
        try:
            await update_node_status(self.client, self.cfg.node, not_ready=why)
            log.info("node %s NotReady for %.1fs (%s)", self.node_name, seconds, why)
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(stop.wait(), seconds)
            await update_node_status(self.client, self.cfg.node)
        except (APIStatusError, aiohttp.ClientError, OSError) as e:
            log.warning("node %s status: %s", self.node_name, e)


async def run_kubelet(server: str, cfg: KubeletConfig, stop: asyncio.Event | None = None,
                      user_agent: str = "dramock-kubelet") -> None:
    """Run one kubelet shim against `server` (an http URL) until `stop` is set (or SIGINT/SIGTERM if None)."""
    if stop is None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
    client = Client(server, f"{user_agent}/{cfg.node.name}")
    try:
        log.info("kubelet %s talking to %s; plugin registry %s", cfg.node.name, server, cfg.registry_dir)
        await Kubelet(client, cfg).run(stop)
    finally:
        await client.close()


def server_url(server: str, kubeconfig: str) -> str:
    return server or server_from_kubeconfig(kubeconfig)
