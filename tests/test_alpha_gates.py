"""The alpha DRA features that dramock acts on, each with its gate on, and invisible with its gate off.

DRAOptionalNodeOperations (KEP-5945): a ResourceSlice's `skipNodeOperations` is copied into the allocation
results, and the kubelet skips NodePrepareResources / NodeUnprepareResources for a driver when every device of
that driver in the claim skips it. A driver that needs no node preparation then need not run on the node at all.

DRAResourcePoolStatus (KEP-5677): `resource.k8s.io/v1alpha3` ResourcePoolStatusRequest is served with
`--runtime-config resource.k8s.io/v1alpha3=true` and the gate (and with neither alone); the controller manager
answers each request once with its pools' device counts.

DRADerivedAttributes: a request's derived attributes (CEL per device) align devices of two drivers in a
matchAttribute constraint.

DRANodeAllocatableResources (KEP-5517): what allocated devices bring along (cpu mapping, memory overhead) is
written to the pod status and counted against the node; claims with mapped devices are not shared.

DRAListTypeAttributes: list-valued attributes match by intersection in constraints.

Each "gate off" test shows the same input without the feature: the fields dropped and the behaviour gone.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator

import pytest

from tests.helpers import Server, start_server, stop, wait_for

R = "/apis/resource.k8s.io/v1"
DRIVER = "cpu.example.com"  # no kubelet plugin of this name runs anywhere


def _serve(gates: str) -> tuple[Server, str]:
    tmp = tempfile.mkdtemp(prefix="dramock-alpha-", dir="/tmp")
    extra = ["--feature-gates", gates] if gates else []
    s = start_server(tmp, "--nodes", "1", *extra, command="serve")
    wait_for(lambda: s.request("GET", "/api/v1/nodes/node-1")[0] == 200, 30, what="node-1")
    return s, tmp


@pytest.fixture(scope="module")
def gate_on(starts_processes) -> Iterator[Server]:
    s, tmp = _serve("DRAOptionalNodeOperations=true")
    yield s
    stop(s)
    shutil.rmtree(tmp, ignore_errors=True)


@pytest.fixture(scope="module")
def gate_off(starts_processes) -> Iterator[Server]:
    s, tmp = _serve("")
    yield s
    stop(s)
    shutil.rmtree(tmp, ignore_errors=True)


def _setup(s: Server, ns: str, skip: list[str]) -> None:
    """A namespace, a node-local slice of DRIVER with `skip`, its class, one claim and a pod using it."""
    assert s.request("POST", "/api/v1/namespaces", {"metadata": {"name": ns}})[0] == 201
    code, _, body = s.request("POST", f"{R}/resourceslices", {
        "metadata": {"name": f"{ns}-slice"},
        "spec": {"driver": DRIVER, "nodeName": "node-1", "pool": {"name": ns, "generation": 1,
                                                                  "resourceSliceCount": 1},
                 "skipNodeOperations": skip,
                 "devices": [{"name": "cpus-0", "attributes": {"pool": {"string": ns}}}]}})
    assert code == 201, body
    code, _, body = s.request("POST", f"{R}/deviceclasses", {
        "metadata": {"name": f"{ns}.{DRIVER}"},
        "spec": {"selectors": [{"cel": {"expression":
                                        f'device.driver == "{DRIVER}" && '
                                        f'device.attributes["{DRIVER}"].pool == "{ns}"'}}]}})
    assert code == 201, body
    code, _, body = s.request("POST", f"{R}/namespaces/{ns}/resourceclaims", {
        "metadata": {"name": "cpus"},
        "spec": {"devices": {"requests": [{"name": "r", "exactly": {"deviceClassName": f"{ns}.{DRIVER}"}}]}}})
    assert code == 201, body
    code, _, body = s.request("POST", f"/api/v1/namespaces/{ns}/pods", {
        "metadata": {"name": "p"},
        "spec": {"containers": [{"name": "c", "image": "busybox", "resources": {"claims": [{"name": "cpus"}]}}],
                 "resourceClaims": [{"name": "cpus", "resourceClaimName": "cpus"}]}})
    assert code == 201, body


def _pod(s: Server, ns: str) -> dict:
    return s.request("GET", f"/api/v1/namespaces/{ns}/pods/p")[2]


def _events(s: Server, ns: str, reason: str) -> list[str]:
    items = s.request("GET", f"/api/v1/namespaces/{ns}/events")[2].get("items", [])
    return [e["message"] for e in items if e["reason"] == reason]


def _result(s: Server, ns: str) -> dict:
    c = s.request("GET", f"{R}/namespaces/{ns}/resourceclaims/cpus")[2]
    return c["status"]["allocation"]["devices"]["results"][0]


@pytest.mark.e2e
def test_skipping_every_operation_runs_the_pod_without_the_driver(gate_on):
    s, ns = gate_on, "skip-all"
    _setup(s, ns, ["*"])
    wait_for(lambda: _pod(s, ns)["status"].get("phase") == "Running", 30, what="the pod to run")
    assert _result(s, ns)["skipNodeOperations"] == ["*"]
    assert not _events(s, ns, "FailedPrepareDynamicResources")
    # Unprepare is skipped as well: the pod goes away without the kubelet waiting for the absent driver.
    assert s.request("DELETE", f"/api/v1/namespaces/{ns}/pods/p", {"gracePeriodSeconds": 0})[0] == 200
    wait_for(lambda: s.request("GET", f"/api/v1/namespaces/{ns}/pods/p")[0] == 404, 30, what="the pod to go")


@pytest.mark.e2e
def test_skipping_only_unprepare_still_prepares(gate_on):
    s, ns = gate_on, "skip-unprepare"
    _setup(s, ns, ["NodeUnprepareResources"])
    msgs = wait_for(lambda: _events(s, ns, "FailedPrepareDynamicResources"), 30, what="the prepare failure")
    assert any(f"DRA driver {DRIVER} is not registered on node node-1" in m for m in msgs), msgs
    assert _result(s, ns)["skipNodeOperations"] == ["NodeUnprepareResources"]
    assert _pod(s, ns)["status"].get("phase", "Pending") == "Pending"


@pytest.mark.e2e
def test_gate_off_drops_the_field_and_prepares(gate_off):
    s, ns = gate_off, "skip-off"
    _setup(s, ns, ["*"])
    slice_ = s.request("GET", f"{R}/resourceslices/{ns}-slice")[2]
    assert "skipNodeOperations" not in slice_["spec"]
    msgs = wait_for(lambda: _events(s, ns, "FailedPrepareDynamicResources"), 30, what="the prepare failure")
    assert any(f"DRA driver {DRIVER} is not registered on node node-1" in m for m in msgs), msgs
    assert "skipNodeOperations" not in _result(s, ns)


# ---------------------------------------------------------------- DRAResourcePoolStatus

RPS = "/apis/resource.k8s.io/v1alpha3/resourcepoolstatusrequests"
V1ALPHA3 = ("--runtime-config", "resource.k8s.io/v1alpha3=true")


@pytest.fixture(scope="module")
def pool_status_on(starts_processes) -> Iterator[Server]:
    """serve (controller manager, scheduler, node-1 with the example driver's 8 GPUs) with the kind on."""
    tmp = tempfile.mkdtemp(prefix="dramock-alpha-", dir="/tmp")
    s = start_server(tmp, "--nodes", "1", "--feature-gates", "DRAResourcePoolStatus=true", *V1ALPHA3,
                     command="serve")
    wait_for(lambda: s.request("GET", f"{R}/resourceslices")[2].get("items"), 30, what="node-1's slice")
    yield s
    stop(s)
    shutil.rmtree(tmp, ignore_errors=True)


def _request(s: Server, name: str, spec: dict) -> dict:
    code, _, body = s.request("POST", RPS, {"apiVersion": "resource.k8s.io/v1alpha3",
                                            "kind": "ResourcePoolStatusRequest", "metadata": {"name": name},
                                            "spec": spec})
    assert code == 201, body
    return body


def _answered(s: Server, name: str) -> dict:
    return wait_for(lambda: s.request("GET", f"{RPS}/{name}")[2].get("status"), 20, what=f"the answer to {name}")


@pytest.mark.e2e
def test_pool_status_request_is_answered(pool_status_on):
    s = pool_status_on
    created = _request(s, "all-gpus", {"driver": "gpu.example.com"})
    assert created["spec"]["limit"] == 100  # defaulted
    # One GPU allocated by hand (no pod needed: the controller reads claims' allocations), one tainted.
    code, _, claim = s.request("POST", f"{R}/namespaces/default/resourceclaims", {
        "metadata": {"name": "held"}, "spec": {"devices": {"requests": [{"name": "r", "exactly": {
            "deviceClassName": "gpu.example.com"}}]}}})
    assert code == 201, claim
    claim["status"] = {"allocation": {"devices": {"results": [
        {"request": "r", "driver": "gpu.example.com", "pool": "node-1", "device": "gpu-3"}]}}}
    assert s.request("PUT", f"{R}/namespaces/default/resourceclaims/held/status", claim)[0] == 200
    code, _, body = s.request("POST", f"{R}/devicetaintrules", {
        "metadata": {"name": "gpu-5-broken"},
        "spec": {"deviceSelector": {"driver": "gpu.example.com", "pool": "node-1", "device": "gpu-5"},
                 "taint": {"key": "broken", "effect": "NoSchedule"}}})
    assert code == 201, body
    # The first request may have been answered before; a new one sees the allocation and the taint.
    _answered(s, "all-gpus")
    _request(s, "after", {"driver": "gpu.example.com"})
    status = _answered(s, "after")
    assert status["poolCount"] == 1
    [pool] = status["pools"]
    assert pool == {"driver": "gpu.example.com", "poolName": "node-1", "nodeName": "node-1",
                    "generation": pool["generation"], "resourceSliceCount": 1, "totalDevices": 8,
                    "allocatedDevices": 1, "unavailableDevices": 1, "availableDevices": 6}
    [cond] = status["conditions"]
    assert (cond["type"], cond["status"], cond["reason"], cond["message"]) == \
        ("Complete", "True", "CalculationComplete", "Calculated status for 1 pools")
    # Answered once: the status is final.
    req = s.request("GET", f"{RPS}/after")[2]
    req["status"]["poolCount"] = 7
    code, _, body = s.request("PUT", f"{RPS}/after/status", req)
    assert code == 422 and body["details"]["causes"][0]["field"] == "status", body
    # No pool of another driver.
    _request(s, "none", {"driver": "nothing.example.com"})
    none = _answered(s, "none")
    assert none["poolCount"] == 0 and "pools" not in none
    assert none["conditions"][0]["message"] == "Calculated status for 0 pools"


@pytest.mark.e2e
def test_pool_status_request_incomplete_pool(pool_status_on):
    s = pool_status_on
    code, _, body = s.request("POST", f"{R}/resourceslices", {
        "metadata": {"name": "half-pool"},
        "spec": {"driver": "half.example.com", "allNodes": True,
                 "pool": {"name": "half", "generation": 3, "resourceSliceCount": 2},
                 "devices": [{"name": "d0"}]}})
    assert code == 201, body
    _request(s, "half", {"driver": "half.example.com", "poolName": "half", "limit": 5})
    status = wait_for(lambda: s.request("GET", f"{RPS}/half")[2].get("status"), 40, what="the late answer")
    [pool] = status["pools"]
    assert pool == {"driver": "half.example.com", "poolName": "half", "generation": 3,
                    "validationError": "PoolIncomplete: pool half.example.com/half is incomplete: observed 1/2 "
                                       "slices at generation 3"}
    assert status["conditions"][0]["message"] == "Calculated status for 1 pools (1 incomplete)"


@pytest.mark.e2e
def test_pool_status_request_validation(pool_status_on):
    s = pool_status_on
    code, _, body = s.request("POST", RPS, {"apiVersion": "resource.k8s.io/v1alpha3",
                                            "kind": "ResourcePoolStatusRequest", "metadata": {"name": "bad"},
                                            "spec": {"limit": 1001}})
    assert code == 422, body
    assert sorted((c["field"], c["message"]) for c in body["details"]["causes"]) == [
        ("spec.driver", "Required value"),
        ("spec.limit", "Invalid value: 1001: must be less than or equal to 1000")]
    _request(s, "fixed", {"driver": "gpu.example.com"})
    req = s.request("GET", f"{RPS}/fixed")[2]
    req["spec"]["limit"] = 2
    del req["metadata"]["resourceVersion"]  # the controller may answer it meanwhile
    code, _, body = s.request("PUT", f"{RPS}/fixed", req)
    assert code == 422 and "field is immutable" in body["message"], body


@pytest.mark.e2e
@pytest.mark.parametrize("args", [V1ALPHA3, ("--feature-gates", "DRAResourcePoolStatus=true")])
def test_pool_status_request_needs_both_the_version_and_the_gate(tmp_path, args):
    s = start_server(str(tmp_path), *args)
    try:
        code, _, _ = s.request("GET", RPS)
        assert code == 404
        resources = s.request("GET", "/apis/resource.k8s.io/v1alpha3")[2].get("resources") or []
        assert "resourcepoolstatusrequests" not in {r["name"] for r in resources}
    finally:
        stop(s)


# ---------------------------------------------------------------- DRADerivedAttributes

NUMA_SLICES = [
    {"metadata": {"name": "numa-gpus"},
     "spec": {"driver": "gpu2.example.com", "nodeName": "node-1",
              "pool": {"name": "numa-gpus", "generation": 1, "resourceSliceCount": 1},
              "devices": [{"name": "gpu-a", "attributes": {"numaNode": {"int": 1}}}]}},
    {"metadata": {"name": "numa-nics"},
     "spec": {"driver": "nic.example.com", "nodeName": "node-1",
              "pool": {"name": "numa-nics", "generation": 1, "resourceSliceCount": 1},
              "devices": [{"name": "nic-x", "attributes": {"numa": {"int": 0}}},
                          {"name": "nic-y", "attributes": {"numa": {"int": 1}}}]}},
]
NUMA_CLAIM = {
    "metadata": {"name": "gpu-and-nic"},
    "spec": {"devices": {
        "requests": [
            {"name": "gpu", "exactly": {"deviceClassName": "numa-gpus", "derivedAttributes": [
                {"name": "derived/numa", "expression": 'device.attributes["gpu2.example.com"].numaNode'}]}},
            {"name": "nic", "exactly": {"deviceClassName": "numa-nics", "derivedAttributes": [
                {"name": "derived/numa", "expression": 'device.attributes["nic.example.com"].numa'}]}}],
        "constraints": [{"matchAttribute": "derived/numa"}]}}}


def _numa_setup(s: Server, ns: str) -> None:
    assert s.request("POST", "/api/v1/namespaces", {"metadata": {"name": ns}})[0] == 201
    for sl in NUMA_SLICES:
        code, _, body = s.request("POST", f"{R}/resourceslices", sl)
        assert code in (201, 409), body
    for cls, driver in (("numa-gpus", "gpu2.example.com"), ("numa-nics", "nic.example.com")):
        code, _, body = s.request("POST", f"{R}/deviceclasses", {"metadata": {"name": cls}, "spec": {
            "selectors": [{"cel": {"expression": f'device.driver == "{driver}"'}}]}})
        assert code in (201, 409), body
    code, _, body = s.request("POST", f"{R}/namespaces/{ns}/resourceclaims", NUMA_CLAIM)
    assert code == 201, body
    code, _, body = s.request("POST", f"/api/v1/namespaces/{ns}/pods", {
        "metadata": {"name": "p"},
        "spec": {"containers": [{"name": "c", "image": "busybox", "resources": {"claims": [{"name": "x"}]}}],
                 "resourceClaims": [{"name": "x", "resourceClaimName": "gpu-and-nic"}]}})
    assert code == 201, body


@pytest.fixture(scope="module")
def derived_on(starts_processes) -> Iterator[Server]:
    s, tmp = _serve("DRADerivedAttributes=true")
    yield s
    stop(s)
    shutil.rmtree(tmp, ignore_errors=True)


@pytest.mark.e2e
def test_derived_attributes_align_devices_of_two_drivers(derived_on):
    s, ns = derived_on, "derived-on"
    _numa_setup(s, ns)
    claim = wait_for(lambda: (c := s.request("GET", f"{R}/namespaces/{ns}/resourceclaims/gpu-and-nic")[2])
                     .get("status", {}).get("allocation") and c, 30, what="the claim allocated")
    assert claim["spec"]["devices"]["requests"][1]["exactly"]["derivedAttributes"]  # kept with the gate on
    devices = {r["request"]: r["device"] for r in claim["status"]["allocation"]["devices"]["results"]}
    assert devices == {"gpu": "gpu-a", "nic": "nic-y"}  # the NIC on the GPU's NUMA node, not nic-x


@pytest.mark.e2e
def test_derived_attributes_gate_off(gate_off):
    s, ns = gate_off, "derived-off"
    _numa_setup(s, ns)
    claim = s.request("GET", f"{R}/namespaces/{ns}/resourceclaims/gpu-and-nic")[2]
    assert "derivedAttributes" not in claim["spec"]["devices"]["requests"][0]["exactly"]  # dropped
    msgs = wait_for(lambda: _events(s, ns, "FailedScheduling"), 30, what="FailedScheduling")
    assert msgs[-1] == "0/1 nodes are available: 1 cannot allocate all claims.", msgs


def test_readme_gate_table_says_what_each_gate_does():
    """One row per 1.37 DRA gate: its default and stage as featuregates.GATES has them, and what dramock does."""
    from pathlib import Path

    from dramock.schemas import featuregates

    text = (Path(__file__).resolve().parents[1] / "README.md").read_text()
    header = "| gate | 1.37 default | stage | what dramock does with it on |"
    assert header in text
    rows = {}
    for line in text[text.index(header):].splitlines()[2:]:
        if not line.startswith("|"):
            break
        cells = [c.strip() for c in line.strip("|").split("|")]
        rows[cells[0]] = cells[1:]
    assert sorted(rows) == sorted(featuregates.GATES)
    for name, (default, stage, what) in rows.items():
        gate = featuregates.GATES[name]
        assert default.split()[0] == ("on" if gate.default else "off"), name
        assert ("(locked)" in default) == gate.locked, name
        assert stage == gate.stage.lower() if gate.stage != "GA" else stage == "GA", name
        assert what, name


# ---------------------------------------------------------------- DRANodeAllocatableResources

CPU_SLICE = {
    "metadata": {"name": "cpusets"},
    "spec": {"driver": "cpuset.example.com", "nodeName": "node-1",
             "pool": {"name": "cpusets", "generation": 1, "resourceSliceCount": 1},
             "devices": [{"name": f"cpuset-{i}", "nodeAllocatableResources": {
                 "cpu": {"mapping": {"deviceMultiplier": "6"}},
                 "memory": {"overhead": {"perPod": "1Gi"}}}} for i in range(2)]}}


def _cpu_pod(s: Server, ns: str, pod: str, claim: str, create_claim: bool = True) -> None:
    if create_claim:
        code, _, body = s.request("POST", f"{R}/namespaces/{ns}/resourceclaims", {
            "metadata": {"name": claim},
            "spec": {"devices": {"requests": [{"name": "r", "exactly": {"deviceClassName": "cpusets"}}]}}})
        assert code == 201, body
    code, _, body = s.request("POST", f"/api/v1/namespaces/{ns}/pods", {
        "metadata": {"name": pod},
        "spec": {"containers": [{"name": "main", "image": "busybox",
                                 "resources": {"requests": {"cpu": "1"}, "claims": [{"name": "cpus"}]}}],
                 "resourceClaims": [{"name": "cpus", "resourceClaimName": claim}]}})
    assert code == 201, body


def _cpu_setup(s: Server, ns: str) -> None:
    assert s.request("POST", "/api/v1/namespaces", {"metadata": {"name": ns}})[0] == 201
    assert s.request("POST", f"{R}/resourceslices", CPU_SLICE)[0] in (201, 409)
    assert s.request("POST", f"{R}/deviceclasses", {"metadata": {"name": "cpusets"}, "spec": {
        "selectors": [{"cel": {"expression": 'device.driver == "cpuset.example.com"'}}]}})[0] in (201, 409)


@pytest.fixture(scope="module")
def node_allocatable_on(starts_processes) -> Iterator[Server]:
    s, tmp = _serve("DRANodeAllocatableResources=true")
    yield s
    stop(s)
    shutil.rmtree(tmp, ignore_errors=True)


@pytest.mark.e2e
def test_node_allocatable_resources_count_against_the_node(node_allocatable_on):
    s, ns = node_allocatable_on, "cpus-on"
    _cpu_setup(s, ns)
    _cpu_pod(s, ns, "a", "cpus-a")
    pod = wait_for(lambda: (p := _pod_named(s, ns, "a"))["spec"].get("nodeName") and p, 30, what="pod a bound")
    assert pod["status"]["nodeAllocatableResourceClaimStatuses"] == [
        {"resourceClaimName": "cpus-a", "containers": ["main"], "mapping": [{"name": "cpu", "quantity": "6"}],
         "overhead": [{"name": "memory", "perPod": "1Gi"}]}]
    # node-1 has 8 cpus: pod a holds 1 + 6; another such pod does not fit although a cpuset device is free.
    _cpu_pod(s, ns, "b", "cpus-b")
    msgs = wait_for(lambda: [e["message"] for e in _pod_events(s, ns, "b", "FailedScheduling")], 30,
                    what="pod b unschedulable")
    assert msgs[-1] == "0/1 nodes are available: 1 Insufficient cpu.", msgs
    # A claim with a mapped device is not shared.
    _cpu_pod(s, ns, "c", "cpus-a", create_claim=False)
    msgs = wait_for(lambda: [e["message"] for e in _pod_events(s, ns, "c", "FailedScheduling")], 30,
                    what="pod c unschedulable")
    assert "node allocatable resource claim cpus-a has a mapped device and cannot be shared across pods" in msgs[-1]


@pytest.mark.e2e
def test_node_allocatable_resources_gate_off(gate_off):
    s, ns = gate_off, "cpus-off"
    _cpu_setup(s, ns)
    assert "nodeAllocatableResources" not in s.request("GET", f"{R}/resourceslices/cpusets")[2]["spec"]["devices"][0]
    _cpu_pod(s, ns, "a", "cpus-a")
    _cpu_pod(s, ns, "b", "cpus-b")
    for name in ("a", "b"):  # both fit: only their own 1 cpu counts
        pod = wait_for(lambda n=name: (p := _pod_named(s, ns, n))["spec"].get("nodeName") and p, 30,
                       what=f"pod {name} bound")
        assert "nodeAllocatableResourceClaimStatuses" not in pod["status"]


def _pod_named(s: Server, ns: str, name: str) -> dict:
    return s.request("GET", f"/api/v1/namespaces/{ns}/pods/{name}")[2]


def _pod_events(s: Server, ns: str, pod: str, reason: str) -> list[dict]:
    items = s.request("GET", f"/api/v1/namespaces/{ns}/events")[2].get("items", [])
    return [e for e in items if e["reason"] == reason and e["involvedObject"]["name"] == pod]


# ---------------------------------------------------------------- DRAListTypeAttributes

TOPO_SLICE = {
    "metadata": {"name": "topo"},
    "spec": {"driver": "topo.example.com", "nodeName": "node-1",
             "pool": {"name": "topo", "generation": 1, "resourceSliceCount": 1},
             "devices": [{"name": "gpu-c", "attributes": {"kind": {"string": "gpu"}, "numa": {"int": 2}}},
                         {"name": "gpu-b", "attributes": {"kind": {"string": "gpu"}, "numa": {"int": 1}}},
                         {"name": "nic-a", "attributes": {"kind": {"string": "nic"}, "numa": {"ints": [0, 1]}}}]}}


def _topo_setup(s: Server, ns: str) -> None:
    assert s.request("POST", "/api/v1/namespaces", {"metadata": {"name": ns}})[0] == 201
    assert s.request("POST", f"{R}/resourceslices", TOPO_SLICE)[0] in (201, 409)
    assert s.request("POST", f"{R}/deviceclasses", {"metadata": {"name": "topo"}, "spec": {
        "selectors": [{"cel": {"expression": 'device.driver == "topo.example.com"'}}]}})[0] in (201, 409)

    def req(name: str) -> dict:
        return {"name": name, "exactly": {"deviceClassName": "topo", "selectors": [{"cel": {
            "expression": f'device.attributes["topo.example.com"].kind == "{name}"'}}]}}

    code, _, body = s.request("POST", f"{R}/namespaces/{ns}/resourceclaims", {
        "metadata": {"name": "gpu-nic"},
        "spec": {"devices": {"requests": [req("gpu"), req("nic")],
                             "constraints": [{"matchAttribute": "topo.example.com/numa"}]}}})
    assert code == 201, body
    code, _, body = s.request("POST", f"/api/v1/namespaces/{ns}/pods", {
        "metadata": {"name": "p"},
        "spec": {"containers": [{"name": "c", "image": "busybox", "resources": {"claims": [{"name": "x"}]}}],
                 "resourceClaims": [{"name": "x", "resourceClaimName": "gpu-nic"}]}})
    assert code == 201, body


@pytest.fixture(scope="module")
def list_attrs_on(starts_processes) -> Iterator[Server]:
    s, tmp = _serve("DRAListTypeAttributes=true")
    yield s
    stop(s)
    shutil.rmtree(tmp, ignore_errors=True)


@pytest.mark.e2e
def test_list_attributes_match_by_intersection(list_attrs_on):
    s, ns = list_attrs_on, "lists-on"
    _topo_setup(s, ns)
    claim = wait_for(lambda: (c := s.request("GET", f"{R}/namespaces/{ns}/resourceclaims/gpu-nic")[2])
                     .get("status", {}).get("allocation") and c, 30, what="the claim allocated")
    devices = {r["request"]: r["device"] for r in claim["status"]["allocation"]["devices"]["results"]}
    assert devices == {"gpu": "gpu-b", "nic": "nic-a"}  # numa 1 is in the NIC's [0, 1]; gpu-c's 2 is not


@pytest.mark.e2e
def test_list_attributes_gate_off(gate_off):
    # The list value is dropped with the gate off, which leaves the attribute empty: the slice is refused.
    code, _, body = gate_off.request("POST", f"{R}/resourceslices", TOPO_SLICE)
    assert code == 422, body
    assert [(c["field"], c["message"]) for c in body["details"]["causes"]] == [
        ("spec.devices[2].attributes[numa]", 'Invalid value: "": exactly one value must be specified')]


def test_pool_status_shareable_summary():
    """The controller's calculation for a pool with shareable devices (upstream's computeShareableSummary)."""
    from dramock.controllers.resourcepoolstatus import calculate

    slices = [{"spec": {"driver": "net.example.com", "nodeName": "n1",
                        "pool": {"name": "nics", "generation": 2, "resourceSliceCount": 1},
                        "devices": [{"name": "eth0", "allowMultipleAllocations": True,
                                     "capacity": {"bandwidth": {"value": "10G"}}},
                                    {"name": "eth1", "allowMultipleAllocations": True,
                                     "capacity": {"bandwidth": {"value": "10G"}}},
                                    {"name": "plain"}]}}]
    claims = [{"status": {"allocation": {"devices": {"results": [
        {"request": "r", "driver": "net.example.com", "pool": "nics", "device": "eth0", "shareID": "a",
         "consumedCapacity": {"bandwidth": "2G"}},
        {"request": "s", "driver": "net.example.com", "pool": "nics", "device": "eth0", "shareID": "b",
         "consumedCapacity": {"bandwidth": "1500M"}}]}}}}]
    status = calculate({"spec": {"driver": "net.example.com", "limit": 100}}, slices, claims, [])
    [pool] = status["pools"]
    assert (pool["totalDevices"], pool["allocatedDevices"], pool["availableDevices"]) == (3, 1, 2)
    assert pool["shareableSummary"] == {
        "fullyAvailableDevices": 1, "partiallyAvailableDevices": 1,
        "capacity": [{"name": "bandwidth", "total": "20G", "consumed": "3500M", "available": "16500M"}]}
