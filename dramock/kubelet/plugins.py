"""DRA kubelet plugins: the registration-socket watcher and the gRPC client of each registered driver.

Mirrors upstream's pluginmanager (pkg/kubelet/pluginmanager) as far as DRA needs it: a plugin drops a
socket serving `pluginregistration.Registration` into the registry directory (`<driver>-reg.sock` by
convention); the watcher calls GetInfo, checks the type ("DRAPlugin"), picks the first service version it
knows (v1.DRAPlugin preferred over v1beta1.DRAPlugin), connects to the advertised endpoint and answers with
NotifyRegistrationStatus. When the socket goes away the registration goes with it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import stat
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import grpc

from dramock.kubelet.proto import (
    dra_v1_pb2,
    dra_v1_pb2_grpc,
    dra_v1beta1_pb2,
    dra_v1beta1_pb2_grpc,
    pluginregistration_v1_pb2,
    pluginregistration_v1_pb2_grpc,
)

log = logging.getLogger("dramock.kubelet.plugins")

DRA_PLUGIN_TYPE = "DRAPlugin"
# Service versions this kubelet speaks, most preferred first (upstream: drapbv1.DRAPluginService, then v1beta1).
SUPPORTED_VERSIONS: dict[str, tuple[Any, Any]] = {
    "v1.DRAPlugin": (dra_v1_pb2, dra_v1_pb2_grpc),
    "v1beta1.DRAPlugin": (dra_v1beta1_pb2, dra_v1beta1_pb2_grpc),
}
GRPC_TIMEOUT = 45.0  # upstream's default plugin client timeout for NodePrepare/Unprepare

Obj = dict[str, Any]


class PluginError(Exception):
    """A failed gRPC call to a driver (the whole call, not one claim's error string)."""


def _unix_target(path: str) -> str:
    return "unix:" + os.path.abspath(path)


@dataclass
class DRAPluginClient:
    """One registered driver endpoint, talking the negotiated DRAPlugin version."""

    driver: str
    endpoint: str
    version: str
    registration_socket: str
    registered_at: float = field(default_factory=time.monotonic)
    _channel: grpc.aio.Channel | None = None

    def __post_init__(self) -> None:
        self._pb2, pb2_grpc = SUPPORTED_VERSIONS[self.version]
        self._channel = grpc.aio.insecure_channel(_unix_target(self.endpoint))
        self._stub = pb2_grpc.DRAPluginStub(self._channel)

    async def close(self) -> None:
        if self._channel is not None:
            await self._channel.close()
            self._channel = None

    def _claims(self, claims: list[Obj]) -> list[Any]:
        return [self._pb2.Claim(namespace=c.get("namespace", ""), uid=c["uid"], name=c.get("name", ""))
                for c in claims]

    async def node_prepare_resources(self, claims: list[Obj], timeout: float = GRPC_TIMEOUT) -> dict[str, Obj]:
        """Prepare claims ({namespace, uid, name}); returns {claim uid: {"devices": [...], "error": str}}.

        Claims missing from the answer are missing from the result too (the caller retries them).
        """
        req = self._pb2.NodePrepareResourcesRequest(claims=self._claims(claims))
        try:
            resp = await self._stub.NodePrepareResources(req, timeout=timeout)
        except grpc.aio.AioRpcError as e:
            raise PluginError(f"NodePrepareResources on {self.driver}: {e.code().name}: {e.details()}") from e
        return {uid: {"devices": [{"requestNames": list(d.request_names), "poolName": d.pool_name,
                                   "deviceName": d.device_name, "cdiDeviceIDs": list(d.cdi_device_ids),
                                   "shareID": d.share_id} for d in r.devices],
                      "error": r.error}
                for uid, r in resp.claims.items()}

    async def node_unprepare_resources(self, claims: list[Obj], timeout: float = GRPC_TIMEOUT) -> dict[str, Obj]:
        """Unprepare claims; returns {claim uid: {"error": str}} for the claims the driver answered."""
        req = self._pb2.NodeUnprepareResourcesRequest(claims=self._claims(claims))
        try:
            resp = await self._stub.NodeUnprepareResources(req, timeout=timeout)
        except grpc.aio.AioRpcError as e:
            raise PluginError(f"NodeUnprepareResources on {self.driver}: {e.code().name}: {e.details()}") from e
        return {uid: {"error": r.error} for uid, r in resp.claims.items()}


def pick_version(offered: list[str]) -> str | None:
    """The most preferred service version this kubelet knows among those a plugin offers."""
    for v in SUPPORTED_VERSIONS:
        if v in offered:
            return v
    return None


async def get_info(socket_path: str, timeout: float = 10.0) -> Any:
    async with grpc.aio.insecure_channel(_unix_target(socket_path)) as ch:
        stub = pluginregistration_v1_pb2_grpc.RegistrationStub(ch)
        return await stub.GetInfo(pluginregistration_v1_pb2.InfoRequest(), timeout=timeout)


async def notify_registration_status(socket_path: str, registered: bool, error: str = "",
                                     timeout: float = 10.0) -> None:
    async with grpc.aio.insecure_channel(_unix_target(socket_path)) as ch:
        stub = pluginregistration_v1_pb2_grpc.RegistrationStub(ch)
        await stub.NotifyRegistrationStatus(
            pluginregistration_v1_pb2.RegistrationStatus(plugin_registered=registered, error=error),
            timeout=timeout)


class PluginRegistry:
    """Registered DRA drivers of this node. Several sockets may serve one driver (seamless upgrade): the
    newest registration is used, and the driver is gone only when its last socket is."""

    def __init__(self) -> None:
        self._by_driver: dict[str, list[DRAPluginClient]] = {}

    def get(self, driver: str) -> DRAPluginClient | None:
        regs = self._by_driver.get(driver)
        return max(regs, key=lambda r: r.registered_at) if regs else None

    def drivers(self) -> list[str]:
        return sorted(self._by_driver)

    def add(self, client: DRAPluginClient) -> None:
        self._by_driver.setdefault(client.driver, []).append(client)

    def remove_socket(self, socket_path: str) -> tuple[DRAPluginClient | None, bool]:
        """Drop the registration of a socket; returns (its client, whether its driver has no socket left)."""
        for driver, regs in list(self._by_driver.items()):
            for r in regs:
                if r.registration_socket == socket_path:
                    regs.remove(r)
                    if not regs:
                        del self._by_driver[driver]
                    return r, not regs
        return None, False


class PluginWatcher:
    """Polls the registry directory for plugin sockets (upstream uses fsnotify; polling keeps this portable).

    `on_registered(client)` runs after a successful registration, `on_unregistered(driver)` when the last
    socket of a driver disappeared.
    """

    def __init__(self, registry_dir: str, plugins_dir: str, registry: PluginRegistry,
                 on_registered: Callable[[DRAPluginClient], Awaitable[None]] | None = None,
                 on_unregistered: Callable[[str], Awaitable[None]] | None = None,
                 poll_interval: float = 0.2):
        self.registry_dir = registry_dir
        self.plugins_dir = plugins_dir
        self.registry = registry
        self.on_registered = on_registered
        self.on_unregistered = on_unregistered
        self.poll_interval = poll_interval
        self._known: dict[str, tuple[int, int]] = {}  # socket path -> (inode, mtime_ns) of registered sockets
        self._failed: dict[str, tuple[tuple[int, int], float]] = {}  # path -> (identity, retry-after)

    def _sockets(self) -> dict[str, tuple[int, int]]:
        found: dict[str, tuple[int, int]] = {}
        try:
            names = os.listdir(self.registry_dir)
        except FileNotFoundError:
            return found
        for name in names:
            if name.startswith("."):
                continue
            path = os.path.join(self.registry_dir, name)
            try:
                st = os.stat(path)
            except FileNotFoundError:
                continue
            if stat.S_ISSOCK(st.st_mode):
                found[path] = (st.st_ino, st.st_mtime_ns)
        return found

    async def run(self, stop: asyncio.Event) -> None:
        os.makedirs(self.registry_dir, exist_ok=True)
        try:
            while not stop.is_set():
                await self.sync()
                with contextlib.suppress(asyncio.TimeoutError):
                    await asyncio.wait_for(stop.wait(), self.poll_interval)
        finally:
            for path in list(self._known):
                client, _ = self.registry.remove_socket(path)
                if client is not None:
                    await client.close()
            self._known.clear()

    async def sync(self) -> None:
        current = self._sockets()
        for path, ident in list(self._known.items()):
            if current.get(path) != ident:  # removed, or replaced by a new socket under the same name
                await self._unregister(path)
        now = time.monotonic()
        for path, ident in current.items():
            if path in self._known:
                continue
            failed = self._failed.get(path)
            if failed and failed[0] == ident and failed[1] > now:
                continue
            if await self._register(path):
                self._known[path] = ident
                self._failed.pop(path, None)
            else:
                self._failed[path] = (ident, now + 1.0)

    async def _register(self, path: str) -> bool:
        try:
            info = await get_info(path)
        except grpc.aio.AioRpcError as e:
            log.info("plugin socket %s: GetInfo failed: %s", path, e.details())
            return False
        error = ""
        version = pick_version(list(info.supported_versions))
        if info.type != DRA_PLUGIN_TYPE:
            error = f"plugin type {info.type!r} is not handled by this kubelet (want {DRA_PLUGIN_TYPE!r})"
        elif not info.name:
            error = "plugin name is empty"
        elif version is None:
            error = (f"none of the versions {list(info.supported_versions)} is supported "
                     f"(this kubelet speaks {list(SUPPORTED_VERSIONS)})")
        client = None
        if not error:
            assert version is not None
            endpoint = info.endpoint or path
            if not os.path.isabs(endpoint):
                endpoint = os.path.join(self.plugins_dir, endpoint)
            client = DRAPluginClient(info.name, endpoint, version, path)
        try:
            await notify_registration_status(path, not error, error)
        except grpc.aio.AioRpcError as e:
            log.info("plugin socket %s: NotifyRegistrationStatus failed: %s", path, e.details())
            if client is not None:
                await client.close()
            return False
        if error:
            log.warning("plugin socket %s: registration refused: %s", path, error)
            return True  # answered; do not retry the same socket
        assert client is not None
        self.registry.add(client)
        log.info("registered DRA driver %s (%s) at %s", client.driver, client.version, client.endpoint)
        if self.on_registered is not None:
            await self.on_registered(client)
        return True

    async def _unregister(self, path: str) -> None:
        self._known.pop(path, None)
        client, last = self.registry.remove_socket(path)
        if client is None:
            return
        await client.close()
        log.info("DRA driver %s: registration socket %s is gone", client.driver, path)
        if last and self.on_unregistered is not None:
            await self.on_unregistered(client.driver)
