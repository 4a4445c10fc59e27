"""The kubelet shim and the DRA kubelet-plugin gRPC: wire specs, registration, node, lease, slices, pods.

The driver is `tests/fixtures/thirdparty_driver.py`, a separate process that compiles its own stubs from
`protos/*.proto` and imports nothing from dramock; the kubelet is `python -m dramock.kubelet`, another
process; the API server is a real dramock server.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path

import grpc
import pytest

from dramock.kubelet.proto import (
    dra_v1_pb2,
    dra_v1_pb2_grpc,
    dra_v1beta1_pb2,
    dra_v1beta1_pb2_grpc,
    pluginregistration_v1_pb2,
    pluginregistration_v1_pb2_grpc,
)
from tests.helpers import Server, start_server, stop, stop_process, strip_json_names, wait_for

DRIVER_SCRIPT = str(Path(__file__).parent / "fixtures" / "thirdparty_driver.py")
V1 = "/apis/resource.k8s.io/v1"


# --- helpers -----------------------------------------------------------------------------------------------


class Driver:
    def __init__(self, name: str, registry_dir: str, plugins_dir: str, log: str, *extra: str):
        self.name, self.registry_dir, self.plugins_dir, self.log = name, registry_dir, plugins_dir, log
        self.reg_sock = os.path.join(registry_dir, f"{name}-reg.sock")
        self.dra_sock = os.path.join(plugins_dir, name, "dra.sock")
        self.proc = subprocess.Popen([sys.executable, DRIVER_SCRIPT, "--driver", name, "--registry-dir",
                                      registry_dir, "--plugins-dir", plugins_dir, "--log", log, *extra],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        wait_for(lambda: self.proc.poll() is not None or any(e.get("event") == "ready" for e in self.entries()),
                 timeout=60, what=f"driver {name} to listen")
        if self.proc.poll() is not None:
            raise AssertionError(f"driver exited: {self.proc.stderr.read()}")

    def entries(self) -> list[dict]:
        if not os.path.exists(self.log):
            return []
        with open(self.log, encoding="utf-8") as f:
            return [json.loads(line) for line in f if line.strip()]

    def calls(self, suffix: str = "") -> list[dict]:
        return [e for e in self.entries() if e.get("method", "").endswith(suffix) and "method" in e]

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()


@pytest.fixture
def sockdir():
    # Unix socket paths are limited to 107 bytes: keep them short, away from pytest's deep tmp paths.
    d = tempfile.mkdtemp(prefix="dk-", dir="/tmp")
    yield d
    shutil.rmtree(d, ignore_errors=True)


def start_kubelet(server: Server, node: str, registry_dir: str, plugins_dir: str, *extra: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "dramock.kubelet", "--server", server.url, "--node-name", node,
                             "--plugins-registry-dir", registry_dir, "--plugins-dir", plugins_dir,
                             "--node-lease-duration-seconds", "4", *extra],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)




def make_slice(server: Server, name: str, node: str, driver: str) -> None:
    code, _, body = server.request("POST", f"{V1}/resourceslices", {
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": name},
        "spec": {"driver": driver, "nodeName": node, "pool": {"name": node, "generation": 1,
                                                              "resourceSliceCount": 1},
                 "devices": [{"name": "dev-0"}]}})
    assert code == 201, body


def slice_exists(server: Server, name: str) -> bool:
    code, _, _ = server.request("GET", f"{V1}/resourceslices/{name}")
    return code == 200


# --- stage 1: the wire specs ---------------------------------------------------------------------------------

# Field numbers as upstream's k8s.io/kubelet/pkg/apis/{dra/v1,dra/v1beta1,pluginregistration/v1}/api.proto.
UPSTREAM_DRA_FIELDS = {
    "NodePrepareResourcesRequest": {"claims": 1},
    "NodePrepareResourcesResponse": {"claims": 1},
    "NodePrepareResourceResponse": {"devices": 1, "error": 2},
    "Device": {"request_names": 1, "pool_name": 2, "device_name": 3, "cdi_device_ids": 4},
    "NodeUnprepareResourcesRequest": {"claims": 1},
    "NodeUnprepareResourcesResponse": {"claims": 1},
    "NodeUnprepareResourceResponse": {"error": 1},
    "Claim": {"namespace": 1, "uid": 2, "name": 3},
}
UPSTREAM_REGISTRATION_FIELDS = {
    "PluginInfo": {"type": 1, "name": 2, "endpoint": 3, "supported_versions": 4},
    "RegistrationStatus": {"plugin_registered": 1, "error": 2},
    "RegistrationStatusResponse": {},
    "InfoRequest": {},
}


@pytest.mark.parametrize("pb2,package", [(dra_v1_pb2, "k8s.io.kubelet.pkg.apis.dra.v1"),
                                         (dra_v1beta1_pb2, "k8s.io.kubelet.pkg.apis.dra.v1beta1")])
def test_dra_proto_matches_upstream_wire(pb2, package):
    d = pb2.DESCRIPTOR
    assert d.package == package
    svc = d.services_by_name["DRAPlugin"]
    assert svc.full_name == f"{package}.DRAPlugin"
    assert {m.name: (m.input_type.name, m.output_type.name) for m in svc.methods} == {
        "NodePrepareResources": ("NodePrepareResourcesRequest", "NodePrepareResourcesResponse"),
        "NodeUnprepareResources": ("NodeUnprepareResourcesRequest", "NodeUnprepareResourcesResponse")}
    for msg, fields in UPSTREAM_DRA_FIELDS.items():
        got = {f.name: f.number for f in d.message_types_by_name[msg].fields}
        assert {k: got.get(k) for k in fields} == fields, msg
    # The claim maps are keyed by claim UID (map<string, ...>).
    entry = d.message_types_by_name["NodePrepareResourcesResponse"].fields_by_name["claims"].message_type
    assert entry.GetOptions().map_entry and entry.fields_by_name["key"].type == entry.fields_by_name["key"].TYPE_STRING


def test_registration_proto_matches_upstream_wire():
    d = pluginregistration_v1_pb2.DESCRIPTOR
    assert d.package == "pluginregistration"
    svc = d.services_by_name["Registration"]
    assert [m.name for m in svc.methods] == ["GetInfo", "NotifyRegistrationStatus"]
    for msg, fields in UPSTREAM_REGISTRATION_FIELDS.items():
        assert {f.name: f.number for f in d.message_types_by_name[msg].fields} == fields, msg


def test_generated_stubs_are_current(tmp_path):
    """The committed stubs are what protos/generate.py makes from protos/*.proto today."""
    pytest.importorskip("grpc_tools")
    from grpc_tools import protoc

    root = Path(__file__).resolve().parents[1]
    protos = sorted(p.name for p in (root / "protos").glob("*.proto"))
    assert protoc.main(["protoc", f"-I{root / 'protos'}", f"--descriptor_set_out={tmp_path / 'set.pb'}",
                        *protos]) == 0
    from google.protobuf import descriptor_pb2

    fds = descriptor_pb2.FileDescriptorSet.FromString((tmp_path / "set.pb").read_bytes())
    for fd in fds.file:
        module = {"dra_v1.proto": dra_v1_pb2, "dra_v1beta1.proto": dra_v1beta1_pb2,
                  "pluginregistration_v1.proto": pluginregistration_v1_pb2}[fd.name]
        strip_json_names(fd.message_type)  # protoc's Python generator leaves the defaults out
        committed = descriptor_pb2.FileDescriptorProto.FromString(module.DESCRIPTOR.serialized_pb)
        assert committed == fd, f"{fd.name}: regenerate with python protos/generate.py"


@pytest.mark.e2e
def test_thirdparty_driver_serves_upstream_services(sockdir):
    """dramock's stubs and a driver built from the .proto files alone understand each other."""
    drv = Driver("gpu.example.com", os.path.join(sockdir, "reg"), os.path.join(sockdir, "plugins"),
                 os.path.join(sockdir, "calls.jsonl"), "--supported-versions", "v1.DRAPlugin,v1beta1.DRAPlugin")
    try:
        with grpc.insecure_channel(f"unix:{drv.reg_sock}") as ch:
            reg = pluginregistration_v1_pb2_grpc.RegistrationStub(ch)
            info = reg.GetInfo(pluginregistration_v1_pb2.InfoRequest(), timeout=10)
            assert (info.type, info.name, info.endpoint, list(info.supported_versions)) == (
                "DRAPlugin", "gpu.example.com", drv.dra_sock, ["v1.DRAPlugin", "v1beta1.DRAPlugin"])
            reg.NotifyRegistrationStatus(pluginregistration_v1_pb2.RegistrationStatus(plugin_registered=True),
                                         timeout=10)
        uid = str(uuid.uuid4())
        with grpc.insecure_channel(f"unix:{info.endpoint}") as ch:
            for pb2, pb2_grpc in ((dra_v1_pb2, dra_v1_pb2_grpc), (dra_v1beta1_pb2, dra_v1beta1_pb2_grpc)):
                stub = pb2_grpc.DRAPluginStub(ch)
                claim = pb2.Claim(namespace="default", uid=uid, name="c1")
                resp = stub.NodePrepareResources(pb2.NodePrepareResourcesRequest(claims=[claim]), timeout=10)
                assert list(resp.claims) == [uid]
                dev = resp.claims[uid].devices[0]
                assert (dev.pool_name, dev.device_name, list(dev.cdi_device_ids)) == (
                    "gpu.example.com", f"dev-{uid[:8]}", [f"gpu.example.com/claim={uid}"])
                resp = stub.NodeUnprepareResources(pb2.NodeUnprepareResourcesRequest(claims=[claim]), timeout=10)
                assert list(resp.claims) == [uid] and resp.claims[uid].error == ""
        methods = [e["method"] for e in drv.calls()]
        assert methods == ["/pluginregistration.Registration/GetInfo",
                           "/pluginregistration.Registration/NotifyRegistrationStatus",
                           "/k8s.io.kubelet.pkg.apis.dra.v1.DRAPlugin/NodePrepareResources",
                           "/k8s.io.kubelet.pkg.apis.dra.v1.DRAPlugin/NodeUnprepareResources",
                           "/k8s.io.kubelet.pkg.apis.dra.v1beta1.DRAPlugin/NodePrepareResources",
                           "/k8s.io.kubelet.pkg.apis.dra.v1beta1.DRAPlugin/NodeUnprepareResources"]
        assert drv.calls("NotifyRegistrationStatus")[0]["request"] == {"plugin_registered": True}
        assert drv.calls("v1.DRAPlugin/NodePrepareResources")[0]["request"] == {
            "claims": [{"namespace": "default", "uid": uid, "name": "c1"}]}
    finally:
        drv.stop()
    assert not os.path.exists(drv.reg_sock)


# --- stage 2: the kubelet side ----------------------------------------------------------------------------------


@pytest.fixture
def cluster(tmp_path, sockdir, starts_processes):
    server = start_server(str(tmp_path))
    procs: list = []
    yield server, sockdir, procs
    for p in procs:
        if isinstance(p, Driver):
            p.stop()
        else:
            stop_process(p)
    stop(server)


def test_kubelet_registers_node_lease_and_driver(cluster):
    server, sockdir, procs = cluster
    reg_dir, plugins_dir = os.path.join(sockdir, "plugins_registry"), os.path.join(sockdir, "plugins")
    node = "node-a"
    # Stale slices of this node (from before a reboot) go at start; other nodes' slices stay.
    make_slice(server, "stale-a", node, "gpu.example.com")
    make_slice(server, "other-node", "node-b", "gpu.example.com")

    kubelet = start_kubelet(server, node, reg_dir, plugins_dir, "--manage-pods", "false",
                            "--capacity", "cpu=4,memory=8Gi,pods=20", "--node-labels", "zone=z1")
    procs.append(kubelet)

    def ready():
        code, _, n = server.request("GET", f"/api/v1/nodes/{node}")
        conds = {c["type"]: c["status"] for c in n.get("status", {}).get("conditions", [])} if code == 200 else {}
        return n if conds.get("Ready") == "True" else None

    n = wait_for(ready, timeout=30, what="node Ready")
    assert n["metadata"]["labels"]["kubernetes.io/hostname"] == node
    assert n["metadata"]["labels"]["zone"] == "z1"
    assert n["status"]["capacity"] == {"cpu": "4", "memory": "8Gi", "pods": "20"}
    assert n["status"]["allocatable"] == n["status"]["capacity"]
    wait_for(lambda: not slice_exists(server, "stale-a"), what="stale slice deleted at kubelet start")
    assert slice_exists(server, "other-node")

    # The lease exists, is owned by the node and renews (every 1s with a 4s lease duration).
    def lease():
        code, _, body = server.request("GET", f"/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/{node}")
        return body if code == 200 else None

    first = wait_for(lease, what="node lease")
    assert first["spec"]["holderIdentity"] == node and first["spec"]["leaseDurationSeconds"] == 4
    assert first["metadata"]["ownerReferences"][0]["uid"] == n["metadata"]["uid"]
    wait_for(lambda: (lease() or {}).get("spec", {}).get("renewTime") != first["spec"]["renewTime"],
             timeout=10, what="lease renewal")

    # A driver appears: GetInfo, then NotifyRegistrationStatus(registered=true).
    drv = Driver("gpu.example.com", reg_dir, plugins_dir, os.path.join(sockdir, "gpu.jsonl"))
    procs.append(drv)
    wait_for(lambda: drv.calls("NotifyRegistrationStatus"), what="registration status")
    assert [e["method"] for e in drv.calls()] == ["/pluginregistration.Registration/GetInfo",
                                                  "/pluginregistration.Registration/NotifyRegistrationStatus"]
    assert drv.calls("NotifyRegistrationStatus")[0]["request"] == {"plugin_registered": True}

    # The driver publishes (here: the test publishes for it); its socket goes: its slices on this node go.
    make_slice(server, "gpu-a", node, "gpu.example.com")
    make_slice(server, "net-a", node, "net.example.com")
    os.unlink(drv.reg_sock)
    wait_for(lambda: not slice_exists(server, "gpu-a"), what="driver slices deleted after unregistration")
    assert slice_exists(server, "net-a") and slice_exists(server, "other-node")
    assert kubelet.poll() is None


def test_kubelet_refuses_unknown_versions(cluster):
    server, sockdir, procs = cluster
    reg_dir, plugins_dir = os.path.join(sockdir, "plugins_registry"), os.path.join(sockdir, "plugins")
    procs.append(start_kubelet(server, "node-v", reg_dir, plugins_dir, "--manage-pods", "false"))
    old = Driver("old.example.com", reg_dir, plugins_dir, os.path.join(sockdir, "old.jsonl"),
                 "--supported-versions", "v1alpha4.DRAPlugin")
    procs.append(old)
    beta = Driver("beta.example.com", reg_dir, plugins_dir, os.path.join(sockdir, "beta.jsonl"),
                  "--supported-versions", "v1beta1.DRAPlugin")
    procs.append(beta)
    status = wait_for(lambda: old.calls("NotifyRegistrationStatus"), what="refusal")[0]["request"]
    assert status.get("plugin_registered", False) is False and "v1alpha4.DRAPlugin" in status["error"]
    assert wait_for(lambda: beta.calls("NotifyRegistrationStatus"))[0]["request"] == {"plugin_registered": True}


# --- stage 3: pods ----------------------------------------------------------------------------------------------


def _claim(server: Server, name: str, driver: str, node: str) -> dict:
    code, _, body = server.request("POST", f"{V1}/namespaces/default/resourceclaims", {
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": {"name": name},
        "spec": {"devices": {"requests": [{"name": "r", "exactly": {"deviceClassName": driver}}]}}})
    assert code == 201, body
    return body


def _allocate(server: Server, name: str, driver: str, node: str, reserved_for: list[dict]) -> None:
    """Write the allocation the scheduler would (no scheduler here)."""
    code, _, claim = server.request("GET", f"{V1}/namespaces/default/resourceclaims/{name}")
    claim["status"] = {
        "allocation": {"devices": {"results": [{"request": "r", "driver": driver, "pool": node, "device": "dev-0"}]},
                       "nodeSelector": {"nodeSelectorTerms": [{"matchFields": [
                           {"key": "metadata.name", "operator": "In", "values": [node]}]}]}},
        "reservedFor": reserved_for}
    code, _, body = server.request("PUT", f"{V1}/namespaces/default/resourceclaims/{name}/status", claim)
    assert code == 200, body


def _pod(server: Server, name: str, node: str, claim: str) -> dict:
    code, _, body = server.request("POST", "/api/v1/namespaces/default/pods", {
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
        "spec": {"nodeName": node, "resourceClaims": [{"name": "gpu", "resourceClaimName": claim}],
                 "containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10",
                                 "resources": {"claims": [{"name": "gpu"}]}}]}})
    assert code == 201, body
    return body


def _get_pod(server: Server, name: str) -> dict | None:
    code, _, body = server.request("GET", f"/api/v1/namespaces/default/pods/{name}")
    return body if code == 200 else None


def _events(server: Server, pod: str) -> list[dict]:
    _, _, body = server.request("GET", "/api/v1/namespaces/default/events?fieldSelector=involvedObject.name%3D" + pod)
    return body.get("items", [])


def test_pod_lifecycle_prepares_and_unprepares_claims(cluster):
    server, sockdir, procs = cluster
    reg_dir, plugins_dir = os.path.join(sockdir, "plugins_registry"), os.path.join(sockdir, "plugins")
    node, driver = "node-p", "gpu.example.com"
    procs.append(start_kubelet(server, node, reg_dir, plugins_dir))
    drv = Driver(driver, reg_dir, plugins_dir, os.path.join(sockdir, "gpu.jsonl"))
    procs.append(drv)
    wait_for(lambda: drv.calls("NotifyRegistrationStatus"), what="driver registered")

    claim = _claim(server, "shared", driver, node)
    a = _pod(server, "a", node, "shared")
    # Not allocated: the pod stays Pending with an event, and the driver is not called.
    ev = wait_for(lambda: [e for e in _events(server, "a") if e["reason"] == "FailedPrepareDynamicResources"],
                  what="FailedPrepareDynamicResources event")
    assert "not allocated" in ev[0]["message"] and ev[0]["type"] == "Warning"
    assert ev[0]["source"] == {"component": "kubelet", "host": node}
    # Allocated but reserved for someone else: still refused.
    _allocate(server, "shared", driver, node, [{"resource": "pods", "name": "x", "uid": str(uuid.uuid4())}])
    wait_for(lambda: any("not reserved" in e["message"] for e in _events(server, "a")), what="unreserved event")
    assert _get_pod(server, "a")["status"].get("phase", "Pending") == "Pending"
    assert not drv.calls("NodePrepareResources")

    b = _pod(server, "b", node, "shared")
    _allocate(server, "shared", driver, node, [{"resource": "pods", "name": "a", "uid": a["metadata"]["uid"]},
                                               {"resource": "pods", "name": "b", "uid": b["metadata"]["uid"]}])

    def running(name):
        p = _get_pod(server, name)
        conds = {c["type"]: c["status"] for c in (p or {}).get("status", {}).get("conditions", [])}
        return p if p and p["status"].get("phase") == "Running" and conds.get("Ready") == "True" else None

    wait_for(lambda: running("a"), what="pod a running")
    wait_for(lambda: running("b"), what="pod b running")
    # Prepared once for the node, though two pods use the claim.
    prepares = drv.calls("v1.DRAPlugin/NodePrepareResources")
    assert [p["request"] for p in prepares] == [{"claims": [{"namespace": "default", "uid": claim["metadata"]["uid"],
                                                             "name": "shared"}]}]

    # Deleting one user keeps the claim prepared; the kubelet finishes the deletion.
    assert server.request("DELETE", "/api/v1/namespaces/default/pods/a")[0] in (200, 202)
    wait_for(lambda: _get_pod(server, "a") is None, what="pod a gone")
    assert not drv.calls("NodeUnprepareResources")
    # The last user goes: NodeUnprepareResources before the pod is gone.
    assert server.request("DELETE", "/api/v1/namespaces/default/pods/b")[0] in (200, 202)
    wait_for(lambda: _get_pod(server, "b") is None, what="pod b gone")
    assert [p["request"] for p in drv.calls("v1.DRAPlugin/NodeUnprepareResources")] == [
        {"claims": [{"namespace": "default", "uid": claim["metadata"]["uid"], "name": "shared"}]}]


def test_pod_without_claims_runs(cluster):
    server, sockdir, procs = cluster
    procs.append(start_kubelet(server, "node-q", os.path.join(sockdir, "r"), os.path.join(sockdir, "p")))
    code, _, body = server.request("POST", "/api/v1/namespaces/default/pods", {
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "plain"},
        "spec": {"nodeName": "node-q", "containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10"}]}})
    assert code == 201, body
    wait_for(lambda: (_get_pod(server, "plain") or {}).get("status", {}).get("phase") == "Running",
             what="pod running")


def test_example_driver_with_kubelet(cluster):
    server, sockdir, procs = cluster
    reg_dir, plugins_dir = os.path.join(sockdir, "plugins_registry"), os.path.join(sockdir, "plugins")
    node, driver = "node-e", "gpu.example.com"
    procs.append(start_kubelet(server, node, reg_dir, plugins_dir))
    drv = subprocess.Popen([sys.executable, "-m", "dramock.kubelet.exampledriver", "--server", server.url,
                            "--node-name", node, "--devices", "2", "--plugins-registry-dir", reg_dir,
                            "--plugins-dir", plugins_dir], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                           text=True)
    procs.append(drv)

    def slices():
        _, _, body = server.request("GET", f"{V1}/resourceslices?fieldSelector=spec.nodeName%3D{node}")
        return body.get("items", [])

    published = wait_for(slices, timeout=30, what="example driver slices")
    assert [d["name"] for d in published[0]["spec"]["devices"]] == ["gpu-0", "gpu-1"]
    _claim(server, "ex", driver, node)
    pod = _pod(server, "ex", node, "ex")
    _allocate(server, "ex", driver, node, [{"resource": "pods", "name": "ex", "uid": pod["metadata"]["uid"]}])
    wait_for(lambda: (_get_pod(server, "ex") or {}).get("status", {}).get("phase") == "Running",
             what="pod running with the example driver")
    # The driver goes away: its registration socket goes, the kubelet deletes its slices.
    stop_process(drv)
    wait_for(lambda: not slices(), what="slices deleted after the driver stopped")
