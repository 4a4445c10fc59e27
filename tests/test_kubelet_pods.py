"""Pods on a simulated node: a real server, `python -m dramock.kubelet` and the example driver as processes.

No scheduler here: the tests write `status.allocation` + `status.reservedFor` through /status themselves and
bind pods with `spec.nodeName` or the binding subresource.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import uuid

import pytest

from tests.helpers import Server, start_server, stop, stop_process, wait_for

V1 = "/apis/resource.k8s.io/v1"
DRIVER = "gpu.example.com"
COMPLETE_AFTER = "dramock.io/complete-after-seconds"


# --- helpers (also used by test_example_driver.py) ----------------------------------------------------------------




class Node:
    """A kubelet shim and the example driver for one node, each its own process, under a short socket dir."""

    def __init__(self, server: Server, root: str, name: str, *driver_args: str, kubelet: bool = True):
        self.server, self.root, self.name = server, root, name
        self.reg_dir = os.path.join(root, "reg")
        self.plugins_dir = os.path.join(root, "plugins")
        self.cdi_dir = os.path.join(root, "cdi")
        self.kubelet: subprocess.Popen | None = self.start_kubelet() if kubelet else None
        self.driver = subprocess.Popen(
            [sys.executable, "-m", "dramock.kubelet.exampledriver", "--server", server.url, "--node-name", name,
             "--plugins-registry-dir", self.reg_dir, "--plugins-dir", self.plugins_dir, "--cdi-dir", self.cdi_dir,
             *driver_args], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        self.dra_sock = os.path.join(self.plugins_dir, DRIVER, "dra.sock")
        self.reg_sock = os.path.join(self.reg_dir, f"{DRIVER}-reg.sock")

    def start_kubelet(self) -> subprocess.Popen:
        return subprocess.Popen([sys.executable, "-m", "dramock.kubelet", "--server", self.server.url,
                                 "--node-name", self.name, "--plugins-registry-dir", self.reg_dir,
                                 "--plugins-dir", self.plugins_dir, "--node-lease-duration-seconds", "4"],
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)

    def cdi_files(self) -> list[str]:
        return sorted(os.listdir(self.cdi_dir)) if os.path.isdir(self.cdi_dir) else []

    def cdi_spec(self, claim_uid: str) -> dict | None:
        path = os.path.join(self.cdi_dir, f"{DRIVER}-{claim_uid}.json")
        if not os.path.exists(path):
            return None
        with open(path, encoding="utf-8") as f:
            return json.load(f)

    def slices(self) -> list[dict]:
        _, _, body = self.server.request("GET", f"{V1}/resourceslices?fieldSelector=spec.nodeName%3D{self.name}")
        return body.get("items", [])

    def stop(self) -> str:
        out = stop_process(self.driver)
        if self.kubelet is not None:
            out += stop_process(self.kubelet)
        return out


@pytest.fixture
def cluster(tmp_path, starts_processes):
    """(server, make_node): nodes are stopped and their dirs removed afterwards."""
    server = start_server(str(tmp_path))
    nodes: list[Node] = []
    dirs: list[str] = []

    def make_node(name: str, *driver_args: str, kubelet: bool = True) -> Node:
        # Unix socket paths are limited to 107 bytes: keep them away from pytest's deep tmp paths.
        d = tempfile.mkdtemp(prefix="dkp-", dir="/tmp")
        dirs.append(d)
        node = Node(server, d, name, *driver_args, kubelet=kubelet)
        nodes.append(node)
        return node

    yield server, make_node
    for n in nodes:
        n.stop()
    stop(server)
    for d in dirs:
        shutil.rmtree(d, ignore_errors=True)


def make_claim(server: Server, name: str, count: int = 1, annotations: dict | None = None) -> dict:
    code, _, body = server.request("POST", f"{V1}/namespaces/default/resourceclaims", {
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
        "metadata": {"name": name, "annotations": annotations or {}},
        "spec": {"devices": {"requests": [{"name": "r", "exactly": {"deviceClassName": DRIVER, "count": count,
                                                                    "allocationMode": "ExactCount"}}]}}})
    assert code == 201, body
    return body


def allocate(server: Server, name: str, node: str, devices: list[str], reserved_for: list[dict]) -> dict:
    """Write the allocation the scheduler would."""
    _, _, claim = server.request("GET", f"{V1}/namespaces/default/resourceclaims/{name}")
    claim["status"] = {
        "allocation": {"devices": {"results": [{"request": "r", "driver": DRIVER, "pool": node, "device": d}
                                               for d in devices]},
                       "nodeSelector": {"nodeSelectorTerms": [{"matchFields": [
                           {"key": "metadata.name", "operator": "In", "values": [node]}]}]}},
        "reservedFor": reserved_for}
    code, _, body = server.request("PUT", f"{V1}/namespaces/default/resourceclaims/{name}/status", claim)
    assert code == 200, body
    return body


def reserve(server: Server, claim: str, *pods: dict) -> None:
    """Set reservedFor of an allocated claim to these pods."""
    _, _, body = server.request("GET", f"{V1}/namespaces/default/resourceclaims/{claim}")
    body["status"]["reservedFor"] = [{"resource": "pods", "name": p["metadata"]["name"], "uid": p["metadata"]["uid"]}
                                     for p in pods]
    code, _, out = server.request("PUT", f"{V1}/namespaces/default/resourceclaims/{claim}/status", body)
    assert code == 200, out


def annotate_claim(server: Server, claim: str, annotations: dict) -> None:
    code, _, body = server.request("PATCH", f"{V1}/namespaces/default/resourceclaims/{claim}",
                                   {"metadata": {"annotations": annotations}},
                                   content_type="application/merge-patch+json")
    assert code == 200, body


def ref(pod: dict) -> dict:
    return {"resource": "pods", "name": pod["metadata"]["name"], "uid": pod["metadata"]["uid"]}


def make_pod(server: Server, name: str, claim: str, node: str | None = None, annotations: dict | None = None,
             containers: tuple[str, ...] = ("c",)) -> dict:
    spec: dict = {"resourceClaims": [{"name": "gpu", "resourceClaimName": claim}],
                  "containers": [{"name": c, "image": "registry.k8s.io/pause:3.10",
                                  "resources": {"claims": [{"name": "gpu"}]}} for c in containers]}
    if node:
        spec["nodeName"] = node
    code, _, body = server.request("POST", "/api/v1/namespaces/default/pods", {
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "annotations": annotations or {}},
        "spec": spec})
    assert code == 201, body
    return body


def bind(server: Server, pod: str, node: str) -> None:
    code, _, body = server.request("POST", f"/api/v1/namespaces/default/pods/{pod}/binding", {
        "apiVersion": "v1", "kind": "Binding", "metadata": {"name": pod},
        "target": {"apiVersion": "v1", "kind": "Node", "name": node}})
    assert code in (200, 201), body


def get_pod(server: Server, name: str) -> dict | None:
    code, _, body = server.request("GET", f"/api/v1/namespaces/default/pods/{name}")
    return body if code == 200 else None


def get_claim(server: Server, name: str) -> dict:
    code, _, body = server.request("GET", f"{V1}/namespaces/default/resourceclaims/{name}")
    assert code == 200, body
    return body


def phase(server: Server, name: str) -> str | None:
    p = get_pod(server, name)
    return (p.get("status") or {}).get("phase", "Pending") if p else None


def events(server: Server, pod: str, reason: str | None = None) -> list[dict]:
    _, _, body = server.request("GET", "/api/v1/namespaces/default/events?fieldSelector=involvedObject.name%3D" + pod)
    return [e for e in body.get("items", []) if reason is None or e["reason"] == reason]


def wait_registered(node: Node) -> None:
    wait_for(node.slices, timeout=30, what=f"example driver slices of {node.name}")


# --- tests --------------------------------------------------------------------------------------------------------


def test_prebound_pod_with_unreserved_claim_stays_pending(cluster):
    server, make_node = cluster
    node = make_node("node-pb", "--devices", "2")
    wait_registered(node)
    claim = make_claim(server, "pb")
    allocate(server, "pb", node.name, ["gpu-1"], [{"resource": "pods", "name": "other", "uid": str(uuid.uuid4())}])
    pod = make_pod(server, "pb", "pb", node=node.name, containers=("main", "sidecar"))

    ev = wait_for(lambda: events(server, "pb", "FailedPrepareDynamicResources"), what="FailedPrepare event")
    assert "not reserved" in ev[0]["message"] and ev[0]["type"] == "Warning"
    assert ev[0]["source"] == {"component": "kubelet", "host": node.name}
    assert phase(server, "pb") == "Pending"
    assert node.cdi_files() == []  # the driver was not asked to prepare

    reserve(server, "pb", pod)
    wait_for(lambda: phase(server, "pb") == "Running", what="pod running once reserved")
    spec = wait_for(lambda: node.cdi_spec(claim["metadata"]["uid"]), what="CDI spec file")
    assert spec == {"cdiVersion": "0.6.0", "kind": "gpu.example.com/gpu",
                    "devices": [{"name": "gpu-1", "containerEdits": {"env": ["GPU_DEVICE_0=gpu-1"]}}]}
    # Each container's CDI device IDs are on record where `kubectl describe pod` shows them.
    prepared = wait_for(lambda: len(events(server, "pb", "PreparedDynamicResources")) == 2
                        and events(server, "pb", "PreparedDynamicResources"), what="CDI device events")
    assert sorted(e["message"] for e in prepared) == [
        'container "main": CDI devices gpu.example.com/gpu=gpu-1',
        'container "sidecar": CDI devices gpu.example.com/gpu=gpu-1']
    assert all(e["type"] == "Normal" for e in prepared)
    described = server.kubectl("describe", "pod", "pb").stdout
    assert "CDI devices gpu.example.com/gpu=gpu-1" in described


def test_shared_claim_unprepared_only_after_both_pods_are_gone(cluster):
    server, make_node = cluster
    node = make_node("node-sh")
    wait_registered(node)
    claim = make_claim(server, "shared")
    uid = claim["metadata"]["uid"]
    a = make_pod(server, "a", "shared")
    b = make_pod(server, "b", "shared", annotations={COMPLETE_AFTER: "1"})
    allocate(server, "shared", node.name, ["gpu-0"], [ref(a), ref(b)])
    bind(server, "a", node.name)
    bind(server, "b", node.name)
    wait_for(lambda: phase(server, "a") == "Running", what="pod a running")
    wait_for(lambda: node.cdi_spec(uid), what="CDI spec of the shared claim")
    status = get_claim(server, "shared")["status"]["devices"]
    assert [(d["driver"], d["pool"], d["device"]) for d in status] == [(DRIVER, node.name, "gpu-0")]
    assert status[0]["conditions"][0]["type"] == "Ready" and status[0]["conditions"][0]["status"] == "True"

    # b completes (kwok-style) while a still runs: the claim stays prepared.
    done = wait_for(lambda: phase(server, "b") == "Succeeded" and get_pod(server, "b"), what="pod b succeeded")
    term = done["status"]["containerStatuses"][0]["state"]
    assert list(term) == ["terminated"] and term["terminated"]["exitCode"] == 0
    assert term["terminated"]["reason"] == "Completed"
    assert {c["type"]: c["status"] for c in done["status"]["conditions"]}["Ready"] == "False"
    assert phase(server, "a") == "Running"
    assert node.cdi_spec(uid) is not None

    # a goes: the last live user, so the claim is unprepared (CDI file and status.devices gone).
    assert server.request("DELETE", "/api/v1/namespaces/default/pods/a")[0] in (200, 202)
    wait_for(lambda: get_pod(server, "a") is None, what="pod a gone")
    wait_for(lambda: node.cdi_spec(uid) is None, what="CDI spec removed")
    wait_for(lambda: not get_claim(server, "shared")["status"].get("devices"), what="status.devices cleared")
    assert get_pod(server, "b")["status"]["phase"] == "Succeeded"


def test_shared_claim_survives_one_deletion(cluster):
    server, make_node = cluster
    node = make_node("node-sd")
    wait_registered(node)
    uid = make_claim(server, "sd")["metadata"]["uid"]
    a = make_pod(server, "a", "sd", node=node.name)
    b = make_pod(server, "b", "sd", node=node.name)
    allocate(server, "sd", node.name, ["gpu-0"], [ref(a), ref(b)])
    for name in ("a", "b"):
        wait_for(lambda n=name: phase(server, n) == "Running", what=f"pod {name} running")
    assert server.request("DELETE", "/api/v1/namespaces/default/pods/a")[0] in (200, 202)
    wait_for(lambda: get_pod(server, "a") is None, what="pod a gone")
    assert node.cdi_spec(uid) is not None
    assert server.request("DELETE", "/api/v1/namespaces/default/pods/b")[0] in (200, 202)
    wait_for(lambda: get_pod(server, "b") is None, what="pod b gone")
    assert node.cdi_spec(uid) is None


def test_completion_releases_claim_and_exit_code_fails(cluster):
    server, make_node = cluster
    node = make_node("node-done")
    wait_registered(node)
    uid = make_claim(server, "job")["metadata"]["uid"]
    pod = make_pod(server, "job", "job", node=node.name,
                   annotations={COMPLETE_AFTER: "0.5", "dramock.io/exit-code": "3"})
    allocate(server, "job", node.name, ["gpu-2"], [ref(pod)])
    wait_for(lambda: node.cdi_spec(uid), what="prepared")
    done = wait_for(lambda: phase(server, "job") == "Failed" and get_pod(server, "job"), what="pod failed")
    assert done["status"]["containerStatuses"][0]["state"]["terminated"]["exitCode"] == 3
    # The only user finished: unprepared while the pod object is still there.
    wait_for(lambda: node.cdi_spec(uid) is None, what="claim of a finished pod unprepared")
    assert get_pod(server, "job") is not None
    # Deleting the finished pod does not unprepare again; the kubelet just finishes the deletion.
    assert server.request("DELETE", "/api/v1/namespaces/default/pods/job")[0] in (200, 202)
    wait_for(lambda: get_pod(server, "job") is None, what="finished pod deleted")
    assert not events(server, "job", "FailedUnprepareDynamicResources")


def test_prepare_failures_are_retried_with_backoff(cluster):
    server, make_node = cluster
    node = make_node("node-fp")
    wait_registered(node)
    uid = make_claim(server, "fp", annotations={f"{DRIVER}/fail-prepare": "device on fire"})["metadata"]["uid"]
    pod = make_pod(server, "fp", "fp", node=node.name)
    allocate(server, "fp", node.name, ["gpu-0"], [ref(pod)])

    def retried():
        # (A "not allocated" event may come first: the pod exists before the claim is allocated.)
        ev = [e for e in events(server, "fp", "FailedPrepareDynamicResources") if "injected" in e["message"]]
        return ev if ev and ev[0]["count"] >= 2 else None

    ev = wait_for(retried, what="the failed prepare retried")
    assert len(ev) == 1 and "injected failure: device on fire" in ev[0]["message"]
    assert ev[0]["lastTimestamp"] >= ev[0]["firstTimestamp"]
    assert phase(server, "fp") == "Pending" and node.cdi_spec(uid) is None
    annotate_claim(server, "fp", {f"{DRIVER}/fail-prepare": None})
    wait_for(lambda: phase(server, "fp") == "Running", what="pod running after the driver recovered")
    assert node.cdi_spec(uid) is not None


def test_unprepare_failure_keeps_pod_terminating(cluster):
    server, make_node = cluster
    node = make_node("node-fu")
    wait_registered(node)
    uid = make_claim(server, "fu")["metadata"]["uid"]
    pod = make_pod(server, "fu", "fu", node=node.name)
    allocate(server, "fu", node.name, ["gpu-0"], [ref(pod)])
    wait_for(lambda: phase(server, "fu") == "Running", what="pod running")
    annotate_claim(server, "fu", {f"{DRIVER}/fail-unprepare": "stuck"})
    assert server.request("DELETE", "/api/v1/namespaces/default/pods/fu")[0] in (200, 202)

    def retried():
        ev = events(server, "fu", "FailedUnprepareDynamicResources")
        return ev if ev and ev[0]["count"] >= 2 else None

    ev = wait_for(retried, what="the failed unprepare retried")
    assert "injected failure: stuck" in ev[0]["message"]
    stuck = get_pod(server, "fu")
    assert stuck is not None and stuck["metadata"].get("deletionTimestamp")  # Terminating
    assert node.cdi_spec(uid) is not None
    annotate_claim(server, "fu", {f"{DRIVER}/fail-unprepare": None})
    wait_for(lambda: get_pod(server, "fu") is None, what="pod gone once unprepare succeeds")
    assert node.cdi_spec(uid) is None


def test_restarted_kubelet_adopts_running_pods_and_keeps_shared_claims(cluster):
    server, make_node = cluster
    node = make_node("node-ad")
    wait_registered(node)
    uid = make_claim(server, "ad")["metadata"]["uid"]
    a = make_pod(server, "a", "ad", node=node.name)
    b = make_pod(server, "b", "ad", node=node.name)
    allocate(server, "ad", node.name, ["gpu-0"], [ref(a), ref(b)])
    for name in ("a", "b"):
        wait_for(lambda n=name: phase(server, n) == "Running", what=f"pod {name} running")
    assert node.kubelet is not None
    stop_process(node.kubelet)
    node.kubelet = node.start_kubelet()

    def republished() -> bool:  # one read: the new kubelet wipes the slices before the driver republishes them
        slices = node.slices()
        return bool(slices) and slices[0]["spec"]["pool"]["generation"] > 1

    wait_for(republished, timeout=30, what="the new kubelet registered the driver")
    # The new kubelet learns the claims of the pods it adopted: deleting one user keeps the claim prepared.
    assert server.request("DELETE", "/api/v1/namespaces/default/pods/a")[0] in (200, 202)
    wait_for(lambda: get_pod(server, "a") is None, what="pod a gone")
    assert node.cdi_spec(uid) is not None
    assert server.request("DELETE", "/api/v1/namespaces/default/pods/b")[0] in (200, 202)
    wait_for(lambda: get_pod(server, "b") is None, what="pod b gone")
    assert node.cdi_spec(uid) is None
