"""The worked examples of the seed KEPs, end to end through the API.

Each test runs a real `apiserver` process and a separate scheduler process (`python -m dramock.scheduler
--server URL`), creates its Nodes and publishes the KEP's ResourceSlices itself over HTTP (as written in the
seed text, adapted to resource.k8s.io/v1 shapes), creates the DeviceClasses, claims and pods from the text and
asserts what the text says happens: which pods bind (spec.nodeName; no kubelet runs), which stay Unschedulable
with a FailedScheduling event, and the allocation results read back from the claims.

Covered: KEP-5963 (device compatibility groups) examples 1-4, KEP-5075 (consumable capacity) the 10Gi
bandwidth NIC with 5Gi requests, KEP-4381 (structured parameters) the 2Gi partial-GPU user story.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field

import pytest

from dramock.schemas.quantity import Quantity
from tests.helpers import Server, create, get, spawn, start_server, stop, stop_process, wait_for

pytestmark = pytest.mark.e2e

COMPAT_GATES = "DRADeviceCompatibilityGroups=true"
R = "/apis/resource.k8s.io/v1"
NS = "default"


# ---------------------------------------------------------------- the cluster: apiserver + scheduler (+ controllers)


@dataclass
class Cluster:
    server: Server
    procs: list[subprocess.Popen] = field(default_factory=list)

    def request(self, method: str, path: str, body=None, **kw):
        return self.server.request(method, path, body, **kw)


def start_scheduler(url: str, tmp: str, gates: str = "", tag: str = "scheduler") -> subprocess.Popen:
    args = [sys.executable, "-m", "dramock.scheduler", "--server", url]
    if gates:
        args += ["--feature-gates", gates]
    return spawn(args, os.path.join(tmp, f"{tag}.log"))


def start_cluster(tmp: str, gates: str = "", controllers: bool = False) -> Cluster:
    extra = ["--feature-gates", gates] if gates else []
    s = start_server(tmp, *extra)
    c = Cluster(s)
    try:
        c.procs.append(start_scheduler(s.url, tmp, gates))
        if controllers:  # the ResourceClaimTemplate controller
            c.procs.append(spawn([sys.executable, "-m", "dramock", "controller-manager",
                                             "--kubeconfig", s.kubeconfig],
                                            os.path.join(tmp, "controller-manager.log")))
    except BaseException:
        stop_cluster(c)
        raise
    return c


def stop_cluster(c: Cluster) -> None:
    for p in c.procs:
        stop_process(p)
    stop(c.server)


@pytest.fixture
def compat(tmp_path, starts_processes) -> Iterator[Cluster]:
    """Server and scheduler with the alpha DRADeviceCompatibilityGroups gate on."""
    c = start_cluster(str(tmp_path), COMPAT_GATES)
    yield c
    stop_cluster(c)


@pytest.fixture
def plain(tmp_path, starts_processes) -> Iterator[Cluster]:
    """Server and scheduler with default 1.37 gates (DRAConsumableCapacity, DRAPartitionableDevices are beta)."""
    c = start_cluster(str(tmp_path))
    yield c
    stop_cluster(c)


# ---------------------------------------------------------------- API helpers


def add_node(c: Cluster, name: str = "node-1") -> dict:
    return create(c, "/api/v1/nodes", {
        "apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
        "status": {"conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady",
                                   "message": "kubelet is posting ready status"}],
                   "capacity": {"cpu": "8", "memory": "32Gi", "pods": "110"},
                   "allocatable": {"cpu": "8", "memory": "32Gi", "pods": "110"}}})


def device_class(c: Cluster, name: str, expression: str) -> dict:
    return create(c, f"{R}/deviceclasses", {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass",
                                            "metadata": {"name": name},
                                            "spec": {"selectors": [{"cel": {"expression": expression}}]}})


def publish(c: Cluster, *slices: dict) -> None:
    for s in slices:
        body = create(c, f"{R}/resourceslices", s)
        # The server must keep what the driver published (gated fields are not dropped with the gate on).
        assert body["spec"] == {**s["spec"], **{k: v for k, v in body["spec"].items() if k not in s["spec"]}}, body


def claim(name: str, class_name: str, expression: str | None = None, capacity: dict | None = None) -> dict:
    exactly: dict = {"deviceClassName": class_name}
    if expression:
        exactly["selectors"] = [{"cel": {"expression": expression}}]
    if capacity:
        exactly["capacity"] = {"requests": capacity}
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
            "metadata": {"name": name, "namespace": NS},
            "spec": {"devices": {"requests": [{"name": "gpu" if capacity is None else "nic", "exactly": exactly}]}}}


def pod_with_claim(name: str, claim_name: str) -> dict:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": NS},
            "spec": {"containers": [{"name": "c", "image": "busybox", "resources": {"claims": [{"name": "dev"}]}}],
                     "resourceClaims": [{"name": "dev", "resourceClaimName": claim_name}]}}


def get_pod(c: Cluster, name: str) -> dict:
    p = get(c, f"/api/v1/namespaces/{NS}/pods/{name}")
    assert p is not None, name
    return p


def node_of(c: Cluster, name: str) -> str | None:
    return get_pod(c, name)["spec"].get("nodeName")


def get_claim(c: Cluster, name: str) -> dict:
    cl = get(c, f"{R}/namespaces/{NS}/resourceclaims/{name}")
    assert cl is not None, name
    return cl


def events(c: Cluster, pod_name: str, reason: str) -> list[dict]:
    items = get(c, f"/api/v1/namespaces/{NS}/events")["items"]
    return [e for e in items if e["involvedObject"].get("name") == pod_name and e["reason"] == reason]


def run_pod(c: Cluster, pod_name: str, claim_obj: dict) -> None:
    create(c, f"{R}/namespaces/{NS}/resourceclaims", claim_obj)
    create(c, f"/api/v1/namespaces/{NS}/pods", pod_with_claim(pod_name, claim_obj["metadata"]["name"]))


def expect_bound(c: Cluster, pod_name: str, claim_name: str, node: str = "node-1") -> list[dict]:
    """The pod binds to `node`; its claim is allocated there and reserved for it. Returns the results."""
    assert wait_for(lambda: node_of(c, pod_name), 30, what=f"pod {pod_name} bound") == node
    cl = get_claim(c, claim_name)
    alloc = cl["status"]["allocation"]
    uid = get_pod(c, pod_name)["metadata"]["uid"]
    assert cl["status"]["reservedFor"] == [{"resource": "pods", "name": pod_name, "uid": uid}]
    terms = alloc["nodeSelector"]["nodeSelectorTerms"]
    assert terms == [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node]}]}], alloc
    conds = {x["type"]: x for x in get_pod(c, pod_name)["status"]["conditions"]}
    assert conds["PodScheduled"]["status"] == "True"
    return alloc["devices"]["results"]


def expect_unschedulable(c: Cluster, pod_name: str, claim_name: str, nodes: int = 1) -> dict:
    """The pod stays Pending/Unschedulable with upstream's FailedScheduling message; its claim stays unallocated."""
    ev = wait_for(lambda: events(c, pod_name, "FailedScheduling"), 30, what=f"FailedScheduling for {pod_name}")
    assert ev[-1]["type"] == "Warning"
    assert ev[-1]["message"] == f"0/{nodes} nodes are available: {nodes} cannot allocate all claims.", ev[-1]

    def cond():
        conds = {x["type"]: x for x in get_pod(c, pod_name)["status"].get("conditions") or []}
        return conds.get("PodScheduled")

    pc = wait_for(cond, 10, what="PodScheduled condition")
    assert pc["status"] == "False" and pc["reason"] == "Unschedulable", pc
    p = get_pod(c, pod_name)
    assert not p["spec"].get("nodeName") and p["status"].get("phase", "Pending") == "Pending"
    cl = get_claim(c, claim_name)
    assert not (cl.get("status") or {}).get("allocation"), cl["status"]
    assert not (cl.get("status") or {}).get("reservedFor"), cl["status"]
    return ev[-1]


def results_key(results: list[dict]) -> list[tuple]:
    return [(r["request"], r["driver"], r["pool"], r["device"]) for r in results]


# ---------------------------------------------------------------- KEP-5963: device compatibility groups

GPU_CLASS_EXPR = "device.driver == 'gpu.example.com'"


def counters_slice(driver: str, name: str, counter_set: str, counter: str, value: str) -> dict:
    # v1 requires exactly one of nodeName / nodeSelector / allNodes / perDeviceNodeSelection on every slice (the
    # KEP's counters slice omits it): node-1, as the devices slice of the same pool.
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": name},
            "spec": {"driver": driver, "pool": {"name": "node-1-pool", "generation": 1, "resourceSliceCount": 2},
                     "nodeName": "node-1",
                     "sharedCounters": [{"name": counter_set, "counters": {counter: {"value": value}}}]}}


def devices_slice(driver: str, name: str, devices: list[dict]) -> dict:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": name},
            "spec": {"driver": driver, "pool": {"name": "node-1-pool", "generation": 1, "resourceSliceCount": 2},
                     "nodeName": "node-1", "devices": devices}}


def partition(name: str, type_: str, counter_set: str, counter: str, value: str,
              groups: list[str] | None = None) -> dict:
    consumption: dict = {"counterSet": counter_set}
    if groups is not None:
        consumption["compatibilityGroups"] = groups
    consumption["counters"] = {counter: {"value": value}}
    return {"name": name, "attributes": {"type": {"string": type_}}, "consumesCounters": [consumption]}


def gpu_slices(with_vgpu: bool, groups: bool) -> list[dict]:
    """node-1-gpu-0-counters + node-1-gpu-0-devices of examples 1 (MIG only), 2 (MIG + vGPU) and 3 (with groups)."""
    mig = ["mig"] if groups else None
    vgpu = ["vgpu"] if groups else None
    devs = [partition(f"gpu-0-mig-1g-{i}", "mig-1g", "gpu-0-counters", "multiprocessors", "20", mig)
            for i in range(2 if with_vgpu else 3)]
    if with_vgpu:
        devs += [partition(f"gpu-0-vgpu-{i}", "vgpu", "gpu-0-counters", "multiprocessors", "50", vgpu)
                 for i in range(2)]
    return [counters_slice("gpu.example.com", "node-1-gpu-0-counters", "gpu-0-counters", "multiprocessors", "100"),
            devices_slice("gpu.example.com", "node-1-gpu-0-devices", devs)]


# The KEP writes `device.attributes['type'].string == 'mig-1g'`; in resource.k8s.io/v1 CEL, device.attributes is
# keyed by the attribute domain (the driver name for unqualified names) and yields the typed value itself, so that
# expression is a runtime error ("no such key") upstream too. The same selection in working CEL:
MIG_EXPR = "device.attributes['gpu.example.com'].type == 'mig-1g'"
VGPU_EXPR = "device.attributes['gpu.example.com'].type == 'vgpu'"


def _gpu_setup(c: Cluster, slices: list[dict]) -> None:
    add_node(c)
    device_class(c, "gpu.example.com", GPU_CLASS_EXPR)
    publish(c, *slices)


def test_kep5963_example1_two_mig_partitions_share_the_counter_set(compat: Cluster):
    """Example 1: three MIG 1g partitions (20 of 100 multiprocessors each); pod-a and pod-b each get one and both
    bind to node-1 (20 + 20 = 40 <= 100)."""
    _gpu_setup(compat, gpu_slices(with_vgpu=False, groups=False))
    run_pod(compat, "pod-a", claim("pod-a-gpu", "gpu.example.com", MIG_EXPR))
    ra = expect_bound(compat, "pod-a", "pod-a-gpu")
    run_pod(compat, "pod-b", claim("pod-b-gpu", "gpu.example.com", MIG_EXPR))
    rb = expect_bound(compat, "pod-b", "pod-b-gpu")
    # First fit in slice order, as the text: gpu-0-mig-1g-0 to pod-a, gpu-0-mig-1g-1 to pod-b.
    assert results_key(ra) == [("gpu", "gpu.example.com", "node-1-pool", "gpu-0-mig-1g-0")]
    assert results_key(rb) == [("gpu", "gpu.example.com", "node-1-pool", "gpu-0-mig-1g-1")]
    for r in ra + rb:  # exclusive devices: no share, no consumed capacity
        assert "shareID" not in r and "consumedCapacity" not in r


def test_kep5963_example1_counter_set_is_exhausted(compat: Cluster):
    """Example 1's counter set (100 multiprocessors) bounds the sum: with five 30-SM partitions only three fit."""
    devs = [partition(f"gpu-0-mig-3g-{i}", "mig-1g", "gpu-0-counters", "multiprocessors", "30") for i in range(5)]
    _gpu_setup(compat, [counters_slice("gpu.example.com", "node-1-gpu-0-counters", "gpu-0-counters",
                                       "multiprocessors", "100"),
                        devices_slice("gpu.example.com", "node-1-gpu-0-devices", devs)])
    used = set()
    for i in range(3):
        run_pod(compat, f"pod-{i}", claim(f"pod-{i}-gpu", "gpu.example.com", MIG_EXPR))
        used |= {r[3] for r in results_key(expect_bound(compat, f"pod-{i}", f"pod-{i}-gpu"))}
    assert len(used) == 3
    run_pod(compat, "pod-3", claim("pod-3-gpu", "gpu.example.com", MIG_EXPR))
    expect_unschedulable(compat, "pod-3", "pod-3-gpu")


def test_kep5963_example2_without_groups_both_schemes_are_allocated(compat: Cluster):
    """Example 2: MIG and vGPU devices on one counter set without compatibilityGroups: the counter check alone
    passes (20 + 50 = 70 <= 100) and the scheduler allocates both (the problem the KEP solves)."""
    _gpu_setup(compat, gpu_slices(with_vgpu=True, groups=False))
    run_pod(compat, "pod-a", claim("pod-a-gpu", "gpu.example.com", MIG_EXPR))
    ra = expect_bound(compat, "pod-a", "pod-a-gpu")
    run_pod(compat, "pod-b", claim("pod-b-gpu", "gpu.example.com", VGPU_EXPR))
    rb = expect_bound(compat, "pod-b", "pod-b-gpu")
    assert results_key(ra) == [("gpu", "gpu.example.com", "node-1-pool", "gpu-0-mig-1g-0")]
    assert results_key(rb) == [("gpu", "gpu.example.com", "node-1-pool", "gpu-0-vgpu-0")]


def test_kep5963_example3_incompatible_groups_leave_pod_b_unschedulable(compat: Cluster):
    """Example 3: with groups mig / vgpu, pod-a gets gpu-0-mig-1g-0; pod-b (vgpu) shares no group with it on
    gpu-0-counters, so it becomes Unschedulable with the generic "cannot allocate all claims" event."""
    slices = gpu_slices(with_vgpu=True, groups=True)
    _gpu_setup(compat, slices)
    # The gate is on in the apiserver: the groups are persisted on the slice.
    stored = get(compat, f"{R}/resourceslices/node-1-gpu-0-devices")
    assert [d["consumesCounters"][0].get("compatibilityGroups") for d in stored["spec"]["devices"]] == \
        [["mig"], ["mig"], ["vgpu"], ["vgpu"]]
    run_pod(compat, "pod-a", claim("pod-a-gpu", "gpu.example.com", MIG_EXPR))
    ra = expect_bound(compat, "pod-a", "pod-a-gpu")
    assert results_key(ra) == [("gpu", "gpu.example.com", "node-1-pool", "gpu-0-mig-1g-0")]
    run_pod(compat, "pod-b", claim("pod-b-gpu", "gpu.example.com", VGPU_EXPR))
    expect_unschedulable(compat, "pod-b", "pod-b-gpu")
    # "Two MIG devices (both group: mig) ... can still be allocated at the same time".
    run_pod(compat, "pod-c", claim("pod-c-gpu", "gpu.example.com", MIG_EXPR))
    rc = expect_bound(compat, "pod-c", "pod-c-gpu")
    assert results_key(rc) == [("gpu", "gpu.example.com", "node-1-pool", "gpu-0-mig-1g-1")]
    # pod-b is still pending: the MIG claims hold the counter set.
    assert not node_of(compat, "pod-b")
    assert not (get_claim(compat, "pod-b-gpu").get("status") or {}).get("allocation")


def test_kep5963_example3_reverse_order_and_release(compat: Cluster):
    """Example 3 the other way round (the KEP's e2e plan: "reversing the order reproduces the behavior
    symmetrically"): vGPU first, then MIG is Unschedulable; two vGPUs fit together; once the vGPU pods and their
    claims are gone, the MIG pod schedules."""
    _gpu_setup(compat, gpu_slices(with_vgpu=True, groups=True))
    run_pod(compat, "pod-b", claim("pod-b-gpu", "gpu.example.com", VGPU_EXPR))
    assert results_key(expect_bound(compat, "pod-b", "pod-b-gpu")) == \
        [("gpu", "gpu.example.com", "node-1-pool", "gpu-0-vgpu-0")]
    run_pod(compat, "pod-a", claim("pod-a-gpu", "gpu.example.com", MIG_EXPR))
    expect_unschedulable(compat, "pod-a", "pod-a-gpu")
    run_pod(compat, "pod-d", claim("pod-d-gpu", "gpu.example.com", VGPU_EXPR))
    assert results_key(expect_bound(compat, "pod-d", "pod-d-gpu")) == \
        [("gpu", "gpu.example.com", "node-1-pool", "gpu-0-vgpu-1")]
    # Free the counter set: delete the vGPU pods (no kubelet: force) and their claims.
    for p, cl in (("pod-b", "pod-b-gpu"), ("pod-d", "pod-d-gpu")):
        code, _, body = compat.request("DELETE", f"/api/v1/namespaces/{NS}/pods/{p}",
                                       {"kind": "DeleteOptions", "apiVersion": "v1", "gracePeriodSeconds": 0})
        assert code in (200, 202), body
        wait_for(lambda p=p: compat.request("GET", f"/api/v1/namespaces/{NS}/pods/{p}")[0] == 404, 20,
                 what=f"{p} gone")
        # No controller-manager runs: drop the reservation, then delete the claim (the scheduler's finalizer
        # stays until the allocation is gone, so clear status first).
        cur = get_claim(compat, cl)
        cur["status"] = {}
        code, _, body = compat.request("PUT", f"{R}/namespaces/{NS}/resourceclaims/{cl}/status", cur)
        assert code == 200, body
        code, _, body = compat.request("DELETE", f"{R}/namespaces/{NS}/resourceclaims/{cl}")
        assert code in (200, 202), body
        cur = get(compat, f"{R}/namespaces/{NS}/resourceclaims/{cl}")
        if cur is not None and cur["metadata"].get("finalizers"):
            cur["metadata"]["finalizers"] = []
            code, _, body = compat.request("PUT", f"{R}/namespaces/{NS}/resourceclaims/{cl}", cur)
            assert code == 200, body
        wait_for(lambda cl=cl: compat.request("GET", f"{R}/namespaces/{NS}/resourceclaims/{cl}")[0] == 404, 20,
                 what=f"{cl} gone")
    assert results_key(expect_bound(compat, "pod-a", "pod-a-gpu")) == \
        [("gpu", "gpu.example.com", "node-1-pool", "gpu-0-mig-1g-0")]


def test_kep5963_gate_off_scheduler_skips_devices_with_groups(tmp_path):
    """Version skew "new apiserver gate on, new scheduler gate off = Devices skipped": the scheduler excludes every
    device that declares compatibilityGroups, so the Example 3 MIG pod cannot be scheduled."""
    tmp = str(tmp_path)
    s = start_server(tmp, "--feature-gates", COMPAT_GATES)
    c = Cluster(s)
    try:
        c.procs.append(start_scheduler(s.url, tmp))  # default gates: DRADeviceCompatibilityGroups off
        _gpu_setup(c, gpu_slices(with_vgpu=True, groups=True))
        run_pod(c, "pod-a", claim("pod-a-gpu", "gpu.example.com", MIG_EXPR))
        expect_unschedulable(c, "pod-a", "pod-a-gpu")
    finally:
        stop_cluster(c)


def test_kep5963_example4_foobar_shared_baz_incompatible(compat: Cluster):
    """Example 4: foo (foo, foobar) and bar (bar, foobar) share foobar and are allocated together; baz (baz) shares
    no group with them and is rejected."""
    add_node(compat)
    device_class(compat, "device.example.com", "device.driver == 'device.example.com'")
    devs = [partition("device-0-foo-0", "foo", "device-0-counters", "units", "25", ["foo", "foobar"]),
            partition("device-0-bar-0", "bar", "device-0-counters", "units", "25", ["bar", "foobar"]),
            partition("device-0-baz-0", "baz", "device-0-counters", "units", "50", ["baz"])]
    publish(compat, counters_slice("device.example.com", "node-1-device-0-counters", "device-0-counters", "units",
                                   "100"),
            devices_slice("device.example.com", "node-1-device-0-devices", devs))

    def typed(t: str) -> str:
        return f"device.attributes['device.example.com'].type == '{t}'"

    run_pod(compat, "pod-a", claim("pod-a-dev", "device.example.com", typed("foo")))
    assert results_key(expect_bound(compat, "pod-a", "pod-a-dev")) == \
        [("gpu", "device.example.com", "node-1-pool", "device-0-foo-0")]
    run_pod(compat, "pod-b", claim("pod-b-dev", "device.example.com", typed("bar")))
    assert results_key(expect_bound(compat, "pod-b", "pod-b-dev")) == \
        [("gpu", "device.example.com", "node-1-pool", "device-0-bar-0")]
    # 25 + 25 + 50 = 100 would fit the counters: only the groups reject baz.
    run_pod(compat, "pod-c", claim("pod-c-dev", "device.example.com", typed("baz")))
    expect_unschedulable(compat, "pod-c", "pod-c-dev")


def test_kep5963_example4_rolling_intersection_within_one_claim(compat: Cluster):
    """Example 4 within one claim (the KEP's "Multiple requests within one claim"): foo + bar in one claim fit;
    foo + baz in one claim does not; baz alone (nothing else allocated on the counter set) fits."""
    add_node(compat)
    device_class(compat, "device.example.com", "device.driver == 'device.example.com'")
    devs = [partition("device-0-foo-0", "foo", "device-0-counters", "units", "25", ["foo", "foobar"]),
            partition("device-0-bar-0", "bar", "device-0-counters", "units", "25", ["bar", "foobar"]),
            partition("device-0-baz-0", "baz", "device-0-counters", "units", "50", ["baz"])]
    publish(compat, counters_slice("device.example.com", "node-1-device-0-counters", "device-0-counters", "units",
                                   "100"),
            devices_slice("device.example.com", "node-1-device-0-devices", devs))

    def two(name: str, a: str, b: str) -> dict:
        return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
                "metadata": {"name": name, "namespace": NS},
                "spec": {"devices": {"requests": [
                    {"name": t, "exactly": {"deviceClassName": "device.example.com", "selectors": [{"cel": {
                        "expression": f"device.attributes['device.example.com'].type == '{t}'"}}]}}
                    for t in (a, b)]}}}

    run_pod(compat, "pod-fb", two("foo-bar", "foo", "bar"))
    assert results_key(expect_bound(compat, "pod-fb", "foo-bar")) == \
        [("foo", "device.example.com", "node-1-pool", "device-0-foo-0"),
         ("bar", "device.example.com", "node-1-pool", "device-0-bar-0")]
    # foo and bar are taken now; a fresh pair with baz can never fit next to them.
    run_pod(compat, "pod-fz", two("foo-baz", "foo", "baz"))
    expect_unschedulable(compat, "pod-fz", "foo-baz")


# ---------------------------------------------------------------- KEP-5075: consumable capacity


QOS_CLASS = "qos-aware-shared.device.x-k8s.io"
NIC_DRIVER = "guaranteed-cni.dra.networking.x-k8s.io"


def nic_slice() -> dict:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": "node-1-nics"},
            "spec": {"driver": NIC_DRIVER, "pool": {"name": "node-1", "generation": 1, "resourceSliceCount": 1},
                     "nodeName": "node-1",
                     "devices": [{"name": "eth1", "allowMultipleAllocations": True,
                                  "attributes": {"name": {"string": "eth1"}},
                                  "capacity": {"bandwidth": {
                                      "requestPolicy": {"default": "1Mi",
                                                        "validRange": {"min": "1Mi", "step": "8"}},
                                      "value": "10Gi"}}}]}}


def test_kep5075_bandwidth_two_5gi_shares_fit_a_third_does_not(plain: Cluster):
    """eth1 advertises 10Gi of bandwidth and allows multiple allocations; claims request 5Gi each: two are
    allocated on eth1 with consumedCapacity bandwidth 5Gi and distinct shareIDs, the third does not fit."""
    add_node(plain)
    device_class(plain, QOS_CLASS, "device.allowMultipleAllocations == true")
    publish(plain, nic_slice())
    share_ids = set()
    for i in (1, 2):
        run_pod(plain, f"pod-{i}", claim(f"nic-{i}", QOS_CLASS, capacity={"bandwidth": "5Gi"}))
        results = expect_bound(plain, f"pod-{i}", f"nic-{i}")
        assert len(results) == 1, results
        r = results[0]
        assert (r["request"], r["driver"], r["pool"], r["device"]) == ("nic", NIC_DRIVER, "node-1", "eth1")
        assert set(r["consumedCapacity"]) == {"bandwidth"}, r
        assert Quantity.parse(r["consumedCapacity"]["bandwidth"]) == Quantity.parse("5Gi"), r
        assert r.get("shareID"), r
        share_ids.add(r["shareID"])
    assert len(share_ids) == 2, share_ids
    run_pod(plain, "pod-3", claim("nic-3", QOS_CLASS, capacity={"bandwidth": "5Gi"}))
    expect_unschedulable(plain, "pod-3", "nic-3")
    # Both shares are still the only ones on eth1.
    total = [r for n in ("nic-1", "nic-2", "nic-3")
             for r in ((get_claim(plain, n).get("status") or {}).get("allocation") or {})
             .get("devices", {}).get("results", [])]
    assert [Quantity.parse(r["consumedCapacity"]["bandwidth"]) for r in total] == [Quantity.parse("5Gi")] * 2


def test_kep5075_default_request_policy_and_small_share(plain: Cluster):
    """A request without capacity consumes the requestPolicy default (1Mi, the text's status example): it shares
    eth1 with a 5Gi share."""
    add_node(plain)
    device_class(plain, QOS_CLASS, "device.allowMultipleAllocations == true")
    publish(plain, nic_slice())
    run_pod(plain, "big", claim("nic-big", QOS_CLASS, capacity={"bandwidth": "5Gi"}))
    expect_bound(plain, "big", "nic-big")
    run_pod(plain, "small", claim("nic-small", QOS_CLASS))
    r = expect_bound(plain, "small", "nic-small")[0]
    assert r["device"] == "eth1" and r["consumedCapacity"] == {"bandwidth": "1Mi"}, r
    assert r.get("shareID")


# ---------------------------------------------------------------- KEP-4381: partial GPU allocation


def test_kep4381_partial_gpu_2gi(tmp_path):
    """The "Partial GPU allocation" story: the acme-gpu class, GPU slices with a gpu.acme.example.com/memory
    attribute, a claim template selecting memory > 2Gi and a two-container pod: the pod lands on the node whose
    partition has more than 2Gi, the generated claim is allocated that partition and reserved for the pod."""
    tmp = str(tmp_path)
    c = start_cluster(tmp, controllers=True)
    try:
        add_node(c, "node-1")
        add_node(c, "node-2")
        device_class(c, "acme-gpu", "device.driver == 'gpu.acme.example.com'")

        # v1 has no quantity-valued attributes: the partition's memory is a capacity, read by the text's
        # selector adapted from device.attributes[...] to device.capacity[...].
        def acme(node: str, sizes: dict[str, str]) -> dict:
            return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
                    "metadata": {"name": f"{node}-acme"},
                    "spec": {"driver": "gpu.acme.example.com",
                             "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
                             "nodeName": node,
                             "devices": [{"name": n, "capacity": {"memory": {"value": m}}}
                                         for n, m in sizes.items()]}}

        publish(c, acme("node-1", {"gpu-0-1gi": "1Gi", "gpu-0-2gi": "2Gi"}),
                acme("node-2", {"gpu-0-1gi": "1Gi", "gpu-0-4gi": "4Gi"}))
        create(c, f"{R}/namespaces/{NS}/resourceclaimtemplates", {
            "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
            "metadata": {"name": "device-consumer-gpu-template", "namespace": NS},
            "spec": {"spec": {"devices": {"requests": [{
                "name": "gpu-request", "exactly": {
                    "deviceClassName": "acme-gpu",
                    "selectors": [{"cel": {"expression": 'device.capacity["gpu.acme.example.com"].memory'
                                                         '.isGreaterThan(quantity("2Gi"))'}}]}}]}}}})
        create(c, f"/api/v1/namespaces/{NS}/pods", {
            "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "device-consumer", "namespace": NS},
            "spec": {"resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "device-consumer-gpu-template"}],
                     "containers": [
                         {"name": "workload", "image": "my-app", "command": ["/bin/program"],
                          "resources": {"requests": {"memory": "64Mi", "cpu": "250m"},
                                        "limits": {"memory": "128Mi", "cpu": "500m"}, "claims": [{"name": "gpu"}]}},
                         {"name": "monitor", "image": "my-app", "command": ["/bin/other-program"],
                          "resources": {"requests": {"memory": "32Mi", "cpu": "25m"},
                                        "limits": {"memory": "64Mi", "cpu": "50m"}, "claims": [{"name": "gpu"}]}}]}})
        assert wait_for(lambda: node_of(c, "device-consumer"), 30, what="device-consumer bound") == "node-2"
        p = get_pod(c, "device-consumer")
        statuses = p["status"]["resourceClaimStatuses"]
        assert [s["name"] for s in statuses] == ["gpu"]
        cname = statuses[0]["resourceClaimName"]
        assert cname.startswith("device-consumer-gpu-")
        cl = get_claim(c, cname)
        assert cl["metadata"]["ownerReferences"][0]["name"] == "device-consumer"
        assert cl["metadata"]["annotations"]["resource.kubernetes.io/pod-claim-name"] == "gpu"
        results = cl["status"]["allocation"]["devices"]["results"]
        assert results_key(results) == [("gpu-request", "gpu.acme.example.com", "node-2", "gpu-0-4gi")]
        assert cl["status"]["reservedFor"] == [{"resource": "pods", "name": "device-consumer",
                                                "uid": p["metadata"]["uid"]}]
        # A second consumer: node-2's 4Gi partition is taken, and 2Gi is not *greater than* 2Gi.
        second = dict(p, metadata={"name": "device-consumer-2", "namespace": NS})
        second["spec"] = {k: v for k, v in p["spec"].items() if k != "nodeName"}
        second.pop("status", None)
        create(c, f"/api/v1/namespaces/{NS}/pods", second)
        ev = wait_for(lambda: events(c, "device-consumer-2", "FailedScheduling"), 30, what="FailedScheduling")
        assert ev[-1]["message"] == "0/2 nodes are available: 2 cannot allocate all claims.", ev[-1]
        assert not node_of(c, "device-consumer-2")
    finally:
        stop_cluster(c)


# ---------------------------------------------------------------- KEP-5004: extended resources backed by DRA


def test_kep5004_demo_pod_on_dra_node_and_device_plugin_node(plain: Cluster):
    """The motivating example: DeviceClass gpu.example.com with extendedResourceName example.com/gpu, a node
    whose driver publishes gpu-0..gpu-7 and a node whose device plugin advertises `example.com/gpu: 2`. The
    Deployment's pod (`example.com/gpu: 1`, created here as the pods its ReplicaSet would create) runs unmodified
    on either: on the DRA node the scheduler allocates 1 of the 8 GPUs through a claim it creates, leaving 7 for
    extended-resource pods and ResourceClaims alike; on the device-plugin node it is fitted the classic way."""
    c = plain
    dra_node, dp_node = "gke-drabeta-n1-standard-4-2xt4-346fe653-zrw2", "gke-drabeta-n1-standard-4-2xt4-346fe653-xyz8"
    for name, extra in ((dra_node, {}), (dp_node, {"example.com/gpu": "2"})):
        capacity = {"cpu": "4", "ephemeral-storage": "101430960Ki", "hugepages-1Gi": "0", "hugepages-2Mi": "0",
                    "memory": "15335536Ki", "pods": "110", **extra}
        create(c, "/api/v1/nodes", {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name},
                                    "status": {"capacity": capacity, "allocatable": capacity,
                                               "conditions": [{"type": "Ready", "status": "True"}]}})
    # The KEP's class selects on a `type` attribute its slice does not show: the devices carry it here.
    create(c, f"{R}/deviceclasses", {
        "apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": "gpu.example.com"},
        "spec": {"selectors": [{"cel": {"expression": "device.driver == 'gpu.example.com' && "
                                                      "device.attributes['gpu.example.com'].type == 'gpu'"}}],
                 "extendedResourceName": "example.com/gpu"}})
    publish(c, {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
                "metadata": {"name": f"{dra_node}-gpu.coqj92d"},
                "spec": {"driver": "gpu.example.com", "nodeName": dra_node,
                         "pool": {"name": dra_node, "generation": 1, "resourceSliceCount": 1},
                         "devices": [{"name": f"gpu-{i}", "attributes": {"type": {"string": "gpu"}}}
                                     for i in range(8)]}})

    def demo(name: str) -> dict:
        return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": NS,
                                                                 "labels": {"app": "demo"}},
                "spec": {"containers": [{"name": "demo", "image": "nvidia/cuda:8.0-runtime",
                                         "command": ["/bin/sh", "-c"], "args": ["nvidia-smi && tail -f /dev/null"],
                                         "resources": {"limits": {"example.com/gpu": "1"}}}]}}

    def special_claims() -> dict[str, dict]:
        out = {}
        for cl in get(c, f"{R}/namespaces/{NS}/resourceclaims")["items"]:
            if (cl["metadata"].get("annotations") or {}).get("resource.kubernetes.io/extended-resource-claim"):
                out[cl["metadata"]["ownerReferences"][0]["name"]] = cl
        return out

    # Nine demo pods and one ResourceClaim for a GPU of the same class: 8 DRA GPUs + 2 device-plugin GPUs.
    names = [f"demo-{i}" for i in range(9)]
    for n in names:
        create(c, f"/api/v1/namespaces/{NS}/pods", demo(n))
    run_pod(c, "claim-user", claim("one-gpu", "gpu.example.com"))
    nodes = {n: wait_for(lambda n=n: node_of(c, n), 30, what=f"{n} bound") for n in names}
    wait_for(lambda: node_of(c, "claim-user"), 30, what="claim-user bound")
    on_dp = sorted(n for n, node in nodes.items() if node == dp_node)
    on_dra = sorted(n for n, node in nodes.items() if node == dra_node)
    assert len(on_dp) == 2 and len(on_dra) == 7, nodes

    specials = special_claims()
    assert sorted(specials) == on_dra  # device-plugin pods get no claim
    taken = []
    for n in on_dra:
        cl, p = specials[n], get_pod(c, n)
        [r] = cl["status"]["allocation"]["devices"]["results"]
        assert (r["request"], r["driver"], r["pool"]) == ("container-0-request-0", "gpu.example.com", dra_node)
        taken.append(r["device"])
        assert cl["status"]["reservedFor"] == [{"resource": "pods", "name": n, "uid": p["metadata"]["uid"]}]
        assert p["status"]["extendedResourceClaimStatus"] == {
            "resourceClaimName": cl["metadata"]["name"],
            "requestMappings": [{"containerName": "demo", "resourceName": "example.com/gpu",
                                 "requestName": "container-0-request-0"}]}
    for n in on_dp:
        assert "extendedResourceClaimStatus" not in get_pod(c, n)["status"]
    [r] = get_claim(c, "one-gpu")["status"]["allocation"]["devices"]["results"]
    taken.append(r["device"])
    assert sorted(taken) == [f"gpu-{i}" for i in range(8)]  # every GPU once: claims and extended resources share

    # All ten GPUs are in use: one more demo pod fits nowhere.
    create(c, f"/api/v1/namespaces/{NS}/pods", demo("demo-extra"))
    ev = wait_for(lambda: events(c, "demo-extra", "FailedScheduling"), 30, what="FailedScheduling for demo-extra")
    assert ev[-1]["message"] == ("0/2 nodes are available: 1 Insufficient example.com/gpu, "
                                 "1 cannot allocate all claims."), ev[-1]
    assert "demo-extra" not in special_claims()
