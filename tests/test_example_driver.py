"""The example driver (`python -m dramock.kubelet.exampledriver`) as a process against a real server.

Some tests play the kubelet themselves over the driver's sockets (registration, NodePrepare/Unprepare); the
kubelet-restart test runs the real kubelet shim.
"""

from __future__ import annotations

import json
import os

import grpc

from dramock.kubelet.proto import (
    dra_v1_pb2,
    dra_v1_pb2_grpc,
    dra_v1beta1_pb2,
    dra_v1beta1_pb2_grpc,
    pluginregistration_v1_pb2,
    pluginregistration_v1_pb2_grpc,
)
from tests.helpers import stop_process, wait_for
from tests.test_kubelet_pods import DRIVER, V1, allocate, get_claim, make_claim
from tests.test_kubelet_pods import cluster as cluster  # noqa: F401 - the fixture


def register(node) -> None:
    """What a kubelet does with a new registration socket."""
    wait_for(lambda: os.path.exists(node.reg_sock) and os.path.exists(node.dra_sock), timeout=30,
             what="driver sockets")
    with grpc.insecure_channel(f"unix:{node.reg_sock}") as ch:
        stub = pluginregistration_v1_pb2_grpc.RegistrationStub(ch)
        info = stub.GetInfo(pluginregistration_v1_pb2.InfoRequest(), timeout=10)
        assert (info.type, info.name, info.endpoint) == ("DRAPlugin", DRIVER, node.dra_sock)
        assert list(info.supported_versions) == ["v1.DRAPlugin", "v1beta1.DRAPlugin"]
        stub.NotifyRegistrationStatus(pluginregistration_v1_pb2.RegistrationStatus(plugin_registered=True),
                                      timeout=10)


def prepare(node, claims: list[tuple[str, str]], pb2=dra_v1_pb2, pb2_grpc=dra_v1_pb2_grpc) -> dict:
    with grpc.insecure_channel(f"unix:{node.dra_sock}") as ch:
        stub = pb2_grpc.DRAPluginStub(ch)
        req = pb2.NodePrepareResourcesRequest(claims=[pb2.Claim(namespace="default", name=n, uid=u)
                                                      for n, u in claims])
        return dict(stub.NodePrepareResources(req, timeout=10).claims)


def unprepare(node, claims: list[tuple[str, str]]) -> dict:
    with grpc.insecure_channel(f"unix:{node.dra_sock}") as ch:
        stub = dra_v1_pb2_grpc.DRAPluginStub(ch)
        req = dra_v1_pb2.NodeUnprepareResourcesRequest(claims=[dra_v1_pb2.Claim(namespace="default", name=n, uid=u)
                                                               for n, u in claims])
        return dict(stub.NodeUnprepareResources(req, timeout=10).claims)


def test_prepare_checks_claims_writes_cdi_and_device_status(cluster):
    server, make_node = cluster
    node = make_node("node-x", kubelet=False)
    wait_for(lambda: os.path.exists(node.dra_sock), timeout=30, what="DRA socket")

    missing = prepare(node, [("nope", "00000000-0000-0000-0000-000000000000")])
    assert "not found" in missing["00000000-0000-0000-0000-000000000000"].error

    uid = make_claim(server, "x", count=2)["metadata"]["uid"]
    wrong = "11111111-1111-1111-1111-111111111111"
    # Refused like upstream's kubelet-plugin library: another UID (a re-created claim), or no allocation.
    assert "UID mismatch" in prepare(node, [("x", wrong)])[wrong].error
    assert "not allocated" in prepare(node, [("x", uid)])[uid].error
    assert node.cdi_files() == []

    allocate(server, "x", node.name, ["gpu-0", "gpu-3"], [])
    for pb2, pb2_grpc in ((dra_v1_pb2, dra_v1_pb2_grpc), (dra_v1beta1_pb2, dra_v1beta1_pb2_grpc)):
        res = prepare(node, [("x", uid)], pb2, pb2_grpc)[uid]
        assert res.error == ""
        assert [(list(d.request_names), d.pool_name, d.device_name, list(d.cdi_device_ids)) for d in res.devices] == [
            (["r"], node.name, "gpu-0", ["gpu.example.com/gpu=gpu-0"]),
            (["r"], node.name, "gpu-3", ["gpu.example.com/gpu=gpu-3"])]
    assert node.cdi_files() == [f"gpu.example.com-{uid}.json"]
    with open(os.path.join(node.cdi_dir, f"gpu.example.com-{uid}.json"), encoding="utf-8") as f:
        assert json.load(f) == {
            "cdiVersion": "0.6.0", "kind": "gpu.example.com/gpu",
            "devices": [{"name": "gpu-0", "containerEdits": {"env": ["GPU_DEVICE_0=gpu-0"]}},
                        {"name": "gpu-3", "containerEdits": {"env": ["GPU_DEVICE_1=gpu-3"]}}]}
    devices = get_claim(server, "x")["status"]["devices"]
    assert [(d["driver"], d["pool"], d["device"]) for d in devices] == [(DRIVER, node.name, "gpu-0"),
                                                                       (DRIVER, node.name, "gpu-3")]
    assert devices[1]["data"]["cdiDeviceIDs"] == ["gpu.example.com/gpu=gpu-3"]
    cond = devices[0]["conditions"][0]
    assert (cond["type"], cond["status"], cond["reason"]) == ("Ready", "True", "Prepared")

    assert unprepare(node, [("x", uid)])[uid].error == ""
    assert node.cdi_files() == []
    assert "devices" not in get_claim(server, "x")["status"]
    assert unprepare(node, [("x", uid)])[uid].error == ""  # idempotent
    # A claim that is gone can still be unprepared (the kubelet may be late).
    assert server.request("DELETE", f"{V1}/namespaces/default/resourceclaims/x")[0] == 200
    assert unprepare(node, [("x", uid)])[uid].error == ""


def _pool(slices: list[dict]) -> tuple[set, set]:
    pools = [s["spec"]["pool"] for s in slices]
    return {p["generation"] for p in pools}, {p["resourceSliceCount"] for p in pools}


def test_publishes_configured_devices_and_bumps_generation(cluster, tmp_path):
    server, make_node = cluster
    config = tmp_path / "devices.yaml"
    config.write_text("gpus: 2\npartitions: 2\nshared: 1\nmodel: A100\nmemoryGi: 40\n")
    node = make_node("node-cfg", "--config", str(config), "--resync-seconds", "0.2", kubelet=False)
    assert not node.slices()  # nothing is published before a kubelet took the registration
    register(node)
    slices = wait_for(lambda: len(node.slices()) == 2 and node.slices(), what="partitionable slices")
    assert _pool(slices) == ({1}, {2})
    by_name = {s["metadata"]["name"]: s for s in slices}
    counters = by_name["node-cfg-gpu-example-com-counters"]["spec"]
    assert counters["sharedCounters"][0] == {"name": "gpu-0-counters", "counters": {
        "memory": {"value": "40Gi"}, "compute": {"value": "2"}}}
    devices = {d["name"]: d for d in by_name["node-cfg-gpu-example-com"]["spec"]["devices"]}
    assert sorted(devices) == ["gpu-0", "gpu-0-part-0", "gpu-0-part-1", "gpu-1", "gpu-1-part-0", "gpu-1-part-1",
                               "shared-0"]
    gpu = devices["gpu-1"]
    assert gpu["attributes"]["model"] == {"string": "A100"} and gpu["attributes"]["index"] == {"int": 1}
    assert gpu["attributes"]["uuid"]["string"].startswith("GPU-")
    assert gpu["attributes"]["resource.kubernetes.io/pcieRoot"] == {"string": "pci0000:00"}
    assert gpu["capacity"] == {"memory": {"value": "40Gi"}}
    part = devices["gpu-1-part-0"]
    assert part["consumesCounters"][0]["counterSet"] == "gpu-1-counters"
    assert part["consumesCounters"][0]["counters"] == {"memory": {"value": "20Gi"}, "compute": {"value": "1"}}
    shared = devices["shared-0"]
    assert shared["allowMultipleAllocations"] is True
    assert shared["capacity"]["memory"]["requestPolicy"] == {"default": "1Gi",
                                                             "validRange": {"min": "1Gi", "step": "1Gi"}}

    # The configuration changes: the pool gets a new generation, the counters slice goes.
    config.write_text("gpus: 3\n")
    slices = wait_for(lambda: [s for s in node.slices() if s["spec"]["pool"]["generation"] == 2],
                      what="generation 2")
    wait_for(lambda: len(node.slices()) == 1, what="stale counters slice deleted")
    assert [d["name"] for d in slices[0]["spec"]["devices"]] == ["gpu-0", "gpu-1", "gpu-2"]
    assert _pool(slices) == ({2}, {1})

    # Someone deletes the slice: the driver notices at its next resync and publishes generation 3.
    name = slices[0]["metadata"]["name"]
    assert server.request("DELETE", f"{V1}/resourceslices/{name}")[0] == 200
    wait_for(lambda: _pool(node.slices())[0] == {3}, what="republished as generation 3")


def test_kubelet_restart_deletes_and_driver_republishes_slices(cluster):
    server, make_node = cluster
    node = make_node("node-rs", "--devices", "3")
    first = wait_for(node.slices, timeout=30, what="slices published")
    assert len(first) == 1 and first[0]["spec"]["pool"] == {"name": "node-rs", "generation": 1,
                                                            "resourceSliceCount": 1}
    assert [d["name"] for d in first[0]["spec"]["devices"]] == ["gpu-0", "gpu-1", "gpu-2"]

    # The kubelet restarts: it deletes the node's slices at start, then registers the driver again, which
    # republishes them (a new object, a new pool generation).
    assert node.kubelet is not None
    stop_process(node.kubelet)
    assert node.slices()[0]["metadata"]["uid"] == first[0]["metadata"]["uid"]  # a stopped kubelet deletes nothing
    node.kubelet = node.start_kubelet()

    def republished():
        items = node.slices()
        return items if items and items[0]["metadata"]["uid"] != first[0]["metadata"]["uid"] else None

    again = wait_for(republished, timeout=30, what="slices republished after the kubelet restart")
    assert len(again) == 1 and again[0]["spec"]["pool"]["generation"] > 1
    assert again[0]["spec"]["devices"] == first[0]["spec"]["devices"]
