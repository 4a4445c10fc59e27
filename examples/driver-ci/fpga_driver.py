"""fpga.example.com: a small DRA kubelet plugin, the driver under test in this CI example.

    python fpga_driver.py --server URL --node-name node-1 --registry-dir DIR --plugins-dir DIR [--devices 4]

On every successful registration it publishes one ResourceSlice (pool = the node, devices fpga-0 ...); on
NodePrepareResources it reads each claim's allocation, writes a CDI spec and answers CDI IDs
`fpga.example.com/fpga=<device>`; NodeUnprepareResources removes the spec (and succeeds for claims it does not
know). API errors that a real client retries (429, 5xx) are retried with backoff, as client-go does.

Your driver has its own gRPC stubs generated from the upstream protos; to stay short this example borrows the
copies that ship with dramock.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import threading
import time
import urllib.error
import urllib.request
from concurrent import futures

import grpc

from dramock.kubelet.proto import (
    dra_v1_pb2,
    dra_v1_pb2_grpc,
    pluginregistration_v1_pb2,
    pluginregistration_v1_pb2_grpc,
)

DRIVER = "fpga.example.com"
SLICES = "/apis/resource.k8s.io/v1/resourceslices"


class APIError(Exception):
    def __init__(self, code: int, body: dict):
        super().__init__(f"{code} {body.get('reason', '')}: {body.get('message', '')}")
        self.code = code


class API:
    def __init__(self, server: str):
        self.server = server.rstrip("/")

    def call(self, method: str, path: str, body: dict | None = None, attempts: int = 8) -> dict:
        """One request; 429 and 5xx answers are retried with backoff (0.1 s doubling), others raised."""
        delay = 0.1
        for attempt in range(attempts):
            req = urllib.request.Request(self.server + path, method=method,
                                         data=json.dumps(body).encode() if body is not None else None,
                                         headers={"Content-Type": "application/json",
                                                  "User-Agent": f"fpga-driver/{DRIVER}"})
            try:
                with urllib.request.urlopen(req, timeout=30) as r:
                    return json.loads(r.read() or b"{}")
            except urllib.error.HTTPError as e:
                err = APIError(e.code, json.loads(e.read() or b"{}"))
                retry_after = e.headers.get("Retry-After")
            if (err.code != 429 and err.code < 500) or attempt == attempts - 1:
                raise err
            time.sleep(float(retry_after) if retry_after and retry_after.isdigit() else delay)
            delay = min(delay * 2, 5.0)
        raise AssertionError("unreachable")


class Driver:
    def __init__(self, api: API, node: str, devices: int, cdi_dir: str):
        self.api, self.node, self.devices, self.cdi_dir = api, node, devices, cdi_dir
        self.generation = 0
        self.lock = threading.Lock()

    def publish(self) -> None:
        """Write this node's slice with a new pool generation (a kubelet start deleted the old one)."""
        name = f"{self.node}-fpga"
        with self.lock:
            for _ in range(20):
                try:
                    current = self.api.call("GET", f"{SLICES}/{name}")
                except APIError as e:
                    if e.code != 404:
                        raise
                    current = None
                self.generation = max(self.generation, current["spec"]["pool"]["generation"] if current else 0) + 1
                body = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": name},
                        "spec": {"driver": DRIVER, "nodeName": self.node,
                                 "pool": {"name": self.node, "generation": self.generation, "resourceSliceCount": 1},
                                 "devices": [{"name": f"fpga-{i}", "attributes": {"index": {"int": i}}}
                                             for i in range(self.devices)]}}
                try:
                    if current is None:
                        self.api.call("POST", SLICES, body)
                    else:
                        body["metadata"]["resourceVersion"] = current["metadata"]["resourceVersion"]
                        self.api.call("PUT", f"{SLICES}/{name}", body)
                    return
                except APIError as e:
                    if e.code not in (404, 409):  # 409/404: someone changed or deleted it meanwhile; again
                        raise

    def cdi_path(self, claim_uid: str) -> str:
        return os.path.join(self.cdi_dir, f"{DRIVER}-{claim_uid}.json")

    def prepare(self, claim) -> dra_v1_pb2.NodePrepareResourceResponse:
        out = dra_v1_pb2.NodePrepareResourceResponse()
        try:
            obj = self.api.call("GET", f"/apis/resource.k8s.io/v1/namespaces/{claim.namespace}/resourceclaims/"
                                       f"{claim.name}")
        except APIError as e:
            out.error = f"reading claim {claim.namespace}/{claim.name}: {e}"
            return out
        if obj["metadata"]["uid"] != claim.uid:
            out.error = f"claim {claim.namespace}/{claim.name} has UID {obj['metadata']['uid']}, not {claim.uid}"
            return out
        allocation = (obj.get("status") or {}).get("allocation") or {}
        results = [r for r in (allocation.get("devices") or {}).get("results") or [] if r["driver"] == DRIVER]
        os.makedirs(self.cdi_dir, exist_ok=True)
        spec = {"cdiVersion": "0.6.0", "kind": f"{DRIVER}/fpga",
                "devices": [{"name": r["device"], "containerEdits": {"env": [f"FPGA={r['device']}"]}}
                            for r in results]}
        with open(self.cdi_path(claim.uid), "w", encoding="utf-8") as f:  # rewritten: preparing twice is fine
            json.dump(spec, f)
        for r in results:
            out.devices.append(dra_v1_pb2.Device(request_names=[r["request"]], pool_name=r["pool"],
                                                 device_name=r["device"],
                                                 cdi_device_ids=[f"{DRIVER}/fpga={r['device']}"]))
        return out

    def unprepare(self, claim) -> dra_v1_pb2.NodeUnprepareResourceResponse:
        try:
            os.unlink(self.cdi_path(claim.uid))
        except FileNotFoundError:
            pass  # unknown or unprepared already: nothing to undo
        return dra_v1_pb2.NodeUnprepareResourceResponse()


class Registration(pluginregistration_v1_pb2_grpc.RegistrationServicer):
    def __init__(self, driver: Driver, endpoint: str):
        self.driver, self.endpoint = driver, endpoint

    def GetInfo(self, request, context):
        return pluginregistration_v1_pb2.PluginInfo(type="DRAPlugin", name=DRIVER, endpoint=self.endpoint,
                                                    supported_versions=["v1.DRAPlugin"])

    def NotifyRegistrationStatus(self, request, context):
        if request.plugin_registered:
            threading.Thread(target=self.driver.publish, daemon=True).start()
        return pluginregistration_v1_pb2.RegistrationStatusResponse()


class DRAPlugin(dra_v1_pb2_grpc.DRAPluginServicer):
    def __init__(self, driver: Driver):
        self.driver = driver

    def NodePrepareResources(self, request, context):
        resp = dra_v1_pb2.NodePrepareResourcesResponse()
        for c in request.claims:
            resp.claims[c.uid].CopyFrom(self.driver.prepare(c))
        return resp

    def NodeUnprepareResources(self, request, context):
        resp = dra_v1_pb2.NodeUnprepareResourcesResponse()
        for c in request.claims:
            resp.claims[c.uid].CopyFrom(self.driver.unprepare(c))
        return resp


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--server", required=True)
    p.add_argument("--node-name", required=True)
    p.add_argument("--registry-dir", required=True, help="the kubelet's plugins_registry directory")
    p.add_argument("--plugins-dir", required=True, help="the kubelet's plugins directory")
    p.add_argument("--cdi-dir", default="", help="where CDI specs go (default <plugins-dir>/fpga.example.com/cdi)")
    p.add_argument("--devices", type=int, default=4)
    args = p.parse_args(argv)
    endpoint_dir = os.path.join(args.plugins_dir, DRIVER)
    endpoint, reg_sock = os.path.join(endpoint_dir, "dra.sock"), os.path.join(args.registry_dir, f"{DRIVER}-reg.sock")
    os.makedirs(endpoint_dir, exist_ok=True)
    os.makedirs(args.registry_dir, exist_ok=True)
    driver = Driver(API(args.server), args.node_name, args.devices, args.cdi_dir or os.path.join(endpoint_dir, "cdi"))
    servers = []
    for path, add in ((endpoint, lambda s: dra_v1_pb2_grpc.add_DRAPluginServicer_to_server(DRAPlugin(driver), s)),
                      (reg_sock, lambda s: pluginregistration_v1_pb2_grpc.add_RegistrationServicer_to_server(
                          Registration(driver, endpoint), s))):
        if os.path.exists(path):
            os.unlink(path)
        server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
        add(server)
        server.add_insecure_port(f"unix:{path}")
        server.start()  # the endpoint first: the kubelet connects as soon as the registration socket appears
        servers.append(server)
    done = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: done.set())
    done.wait()
    for server in reversed(servers):
        server.stop(grace=1).wait()
    for path in (reg_sock, endpoint):
        if os.path.exists(path):
            os.unlink(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
