"""The example DRA driver: publishes one ResourceSlice for its node and implements the kubelet-plugin gRPC.

    python -m dramock.kubelet.exampledriver --server URL --node-name NODE [--driver gpu.example.com] [--devices 4]

Like a real driver it registers through `<registry-dir>/<driver>-reg.sock`, serves DRAPlugin v1 and v1beta1
on `<plugins-dir>/<driver>/dra.sock`, and reads each claim itself (GET, its own API client) to learn which of
its devices were allocated; NodePrepareResources answers with CDI IDs `<driver>/gpu=<device>`.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import os
import signal
import sys
from typing import Any

import grpc

from dramock.client.rest import APIStatusError, Client, resource_path
from dramock.kubelet.kubelet import DEFAULT_ROOT_DIR
from dramock.kubelet.proto import (
    dra_v1_pb2,
    dra_v1_pb2_grpc,
    dra_v1beta1_pb2,
    dra_v1beta1_pb2_grpc,
    pluginregistration_v1_pb2,
    pluginregistration_v1_pb2_grpc,
)

log = logging.getLogger("dramock.kubelet.exampledriver")
Obj = dict[str, Any]


def resource_slice(driver: str, node: str, devices: int) -> Obj:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
            "metadata": {"name": f"{node}-{driver.replace('.', '-')}"[:253]},
            "spec": {"driver": driver, "nodeName": node,
                     "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
                     "devices": [{"name": f"gpu-{i}",
                                  "attributes": {"index": {"int": i}, "model": {"string": "dramock-gpu"}},
                                  "capacity": {"memory": {"value": "16Gi"}}} for i in range(devices)]}}


class _Registration(pluginregistration_v1_pb2_grpc.RegistrationServicer):
    def __init__(self, driver: str, endpoint: str):
        self.driver, self.endpoint = driver, endpoint
        self.registered = asyncio.Event()

    async def GetInfo(self, request, context):
        return pluginregistration_v1_pb2.PluginInfo(type="DRAPlugin", name=self.driver, endpoint=self.endpoint,
                                                    supported_versions=["v1.DRAPlugin", "v1beta1.DRAPlugin"])

    async def NotifyRegistrationStatus(self, request, context):
        if request.plugin_registered:
            self.registered.set()
        else:
            log.error("kubelet refused the registration of %s: %s", self.driver, request.error)
        return pluginregistration_v1_pb2.RegistrationStatusResponse()


def _dra_servicer(pb2: Any, base: type, client: Client, driver: str) -> Any:
    class DRAPlugin(base):
        async def NodePrepareResources(self, request, context):
            resp = pb2.NodePrepareResourcesResponse()
            for c in request.claims:
                try:
                    claim = await client.request("GET", resource_path("resource.k8s.io", "v1", "resourceclaims",
                                                                      c.namespace, c.name))
                except APIStatusError as e:
                    resp.claims[c.uid].error = f"get claim {c.namespace}/{c.name}: {e}"
                    continue
                if claim["metadata"]["uid"] != c.uid:
                    resp.claims[c.uid].error = f"claim {c.namespace}/{c.name} has UID {claim['metadata']['uid']}"
                    continue
                results = ((((claim.get("status") or {}).get("allocation") or {}).get("devices") or {})
                           .get("results") or [])
                out = resp.claims[c.uid]
                out.SetInParent()
                for r in results:
                    if r.get("driver") == driver:
                        out.devices.append(pb2.Device(request_names=[r["request"]], pool_name=r["pool"],
                                                      device_name=r["device"], share_id=r.get("shareID", ""),
                                                      cdi_device_ids=[f"{driver}/gpu={r['device']}"]))
            return resp

        async def NodeUnprepareResources(self, request, context):
            resp = pb2.NodeUnprepareResourcesResponse()
            for c in request.claims:
                resp.claims[c.uid].SetInParent()
            return resp

    return DRAPlugin()


async def run_driver(server: str, node_name: str, driver: str = "gpu.example.com", devices: int = 4,
                     root_dir: str = DEFAULT_ROOT_DIR, registry_dir: str = "", plugins_dir: str = "",
                     stop: asyncio.Event | None = None) -> None:
    """Run the example driver for one node until `stop` is set (or SIGINT/SIGTERM when None)."""
    if stop is None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
    registry_dir = registry_dir or os.path.join(root_dir, "plugins_registry")
    plugins_dir = plugins_dir or os.path.join(root_dir, "plugins")
    reg_sock = os.path.join(registry_dir, f"{driver}-reg.sock")
    dra_sock = os.path.join(plugins_dir, driver, "dra.sock")
    os.makedirs(registry_dir, exist_ok=True)
    os.makedirs(os.path.dirname(dra_sock), exist_ok=True)
    for p in (reg_sock, dra_sock):
        with contextlib.suppress(FileNotFoundError):
            os.unlink(p)
    client = Client(server, f"dramock-exampledriver/{node_name}")
    dra_server = grpc.aio.server()
    dra_v1_pb2_grpc.add_DRAPluginServicer_to_server(
        _dra_servicer(dra_v1_pb2, dra_v1_pb2_grpc.DRAPluginServicer, client, driver), dra_server)
    dra_v1beta1_pb2_grpc.add_DRAPluginServicer_to_server(
        _dra_servicer(dra_v1beta1_pb2, dra_v1beta1_pb2_grpc.DRAPluginServicer, client, driver), dra_server)
    dra_server.add_insecure_port(f"unix:{dra_sock}")
    registration = _Registration(driver, dra_sock)
    reg_server = grpc.aio.server()
    pluginregistration_v1_pb2_grpc.add_RegistrationServicer_to_server(registration, reg_server)
    reg_server.add_insecure_port(f"unix:{reg_sock}")
    try:
        await dra_server.start()
        await reg_server.start()
        # Publish once the kubelet took the registration: the kubelet wipes this node's slices when it starts.
        while not stop.is_set():
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(registration.registered.wait(), 0.5)
            if registration.registered.is_set():
                break
        if not stop.is_set():
            await _publish(client, resource_slice(driver, node_name, devices))
            log.info("driver %s on %s: registered, %d devices published", driver, node_name, devices)
        await stop.wait()
    finally:
        await reg_server.stop(1)
        await dra_server.stop(1)
        for p in (reg_sock, dra_sock):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(p)
        await client.close()


def device_class(driver: str) -> Obj:
    """The DeviceClass a driver's Helm chart would install: every device of this driver."""
    return {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": driver},
            "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{driver}"'}}]}}


async def install_device_class(server: str, driver: str = "gpu.example.com") -> None:
    """Create the driver's DeviceClass unless it exists (an admin's own class of that name wins)."""
    client = Client(server, "dramock-exampledriver/install")
    try:
        await client.request("POST", resource_path("resource.k8s.io", "v1", "deviceclasses"), device_class(driver))
    except APIStatusError as e:
        if e.code != 409:
            raise
    finally:
        await client.close()


async def _publish(client: Client, body: Obj) -> None:
    path = resource_path("resource.k8s.io", "v1", "resourceslices")
    try:
        await client.request("POST", path, body)
    except APIStatusError as e:
        if e.code != 409:
            raise
        current = await client.request("GET", f"{path}/{body['metadata']['name']}")
        body["metadata"]["resourceVersion"] = current["metadata"]["resourceVersion"]
        await client.request("PUT", f"{path}/{body['metadata']['name']}", body)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m dramock.kubelet.exampledriver", description=__doc__.splitlines()[0])
    p.add_argument("--server", required=True)
    p.add_argument("--node-name", required=True)
    p.add_argument("--driver", default="gpu.example.com")
    p.add_argument("--devices", type=int, default=4)
    p.add_argument("--root-dir", default=DEFAULT_ROOT_DIR)
    p.add_argument("--plugins-registry-dir", default="")
    p.add_argument("--plugins-dir", default="")
    args = p.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    asyncio.run(run_driver(args.server, args.node_name, args.driver, args.devices, args.root_dir,
                           args.plugins_registry_dir, args.plugins_dir))
    return 0


if __name__ == "__main__":
    sys.exit(main())
