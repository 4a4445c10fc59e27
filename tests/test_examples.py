"""Every example under examples/ does what its README says, against a real `dramock serve` and the real kubectl.

Each example is applied as its README says (`kubectl apply -f examples/<name>/`, run from the repository root,
plus the README's later steps), and the outcome the README describes is checked by polling with deadlines:
which pods run (and on which node), the claims' allocation results (requests, drivers, pools, device names,
consumed capacity, shareIDs), what stays Pending and why (PodScheduled=False/Unschedulable plus a
FailedScheduling event, or the kubelet's FailedPrepareDynamicResources event), and the quota's 403.

The examples that need only the 1.37 default gates share one server (each uses a namespace of its own); the
partitionable-mig example, which needs the alpha gate DRADeviceCompatibilityGroups, gets a second server with it.
"""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from dramock.schemas import featuregates
from tests.helpers import Server, get, kubectl, node_cluster, results, stop_process, wait_for

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"
ALL_EXAMPLES = ["quickstart", "pod-with-cats", "shared-claim", "prioritized-list", "partitionable-mig",
                "consumable-bandwidth", "extended-resource", "quota", "binding-conditions",
                # Workloads; tested in tests/test_workload_examples.py.
                "deployment-extended-resource", "job-claim-template", "daemonset", "statefulset"]
# Not a scenario but a driver's CI set-up, checked by tests/test_driver_ci_example.py.
NOT_SCENARIOS = {"driver-ci"}
# example -> the --feature-gates its README tells `dramock serve` to take ("" = the 1.37 defaults).
GATES = {name: "" for name in ALL_EXAMPLES} | {"partitionable-mig": "DRADeviceCompatibilityGroups=true"}
R = "/apis/resource.k8s.io/v1"
GPUS = {f"gpu-{i}" for i in range(8)}  # what the example driver publishes per node
NODES = ("node-1", "node-2")
UNSCHEDULABLE = "0/2 nodes are available: 2 cannot allocate all claims."
FINALIZER = "resource.kubernetes.io/delete-protection"


# ---------------------------------------------------------------- servers


@pytest.fixture(scope="module")
def cluster(starts_processes) -> Iterator[Server]:
    """`dramock serve` with the 1.37 default gates: every example but partitionable-mig."""
    with node_cluster("dramock-ex-", grace=3) as s:
        yield s


@pytest.fixture(scope="module")
def binding_cluster(starts_processes) -> Iterator[Server]:
    """`dramock serve --dra-binding-timeout 15s`: binding-conditions (its fabric pool is cluster-wide, and its
    README shortens the scheduler's binding timeout)."""
    assert "python3 -m dramock serve --dra-binding-timeout 15s" in readme("binding-conditions")
    with node_cluster("dramock-ex-", "--dra-binding-timeout", "15s", grace=3) as s:
        yield s


@pytest.fixture(scope="module")
def compat_cluster(starts_processes) -> Iterator[Server]:
    """`dramock serve --feature-gates DRADeviceCompatibilityGroups=true`: partitionable-mig."""
    with node_cluster("dramock-ex-", "--feature-gates", GATES["partitionable-mig"], grace=3) as s:
        yield s


# ---------------------------------------------------------------- kubectl and API helpers


def apply(s: Server, directory: str, check: bool = True) -> subprocess.CompletedProcess:
    return kubectl(s, "apply", "-f", f"examples/{directory}/", check=check)


def pod(s: Server, ns: str, name: str) -> dict:
    p = get(s, f"/api/v1/namespaces/{ns}/pods/{name}")
    assert p is not None, f"pod {ns}/{name} does not exist"
    return p


def claim(s: Server, ns: str, name: str) -> dict:
    c = get(s, f"{R}/namespaces/{ns}/resourceclaims/{name}")
    assert c is not None, f"claim {ns}/{name} does not exist"
    return c


def claims(s: Server, ns: str) -> list[dict]:
    return get(s, f"{R}/namespaces/{ns}/resourceclaims")["items"]


def events(s: Server, ns: str, name: str, reason: str) -> list[dict]:
    items = get(s, f"/api/v1/namespaces/{ns}/events")["items"]
    return [e for e in items if e["involvedObject"].get("name") == name and e["reason"] == reason]


def wait_running(s: Server, ns: str, *pods: str) -> None:
    kubectl(s, "-n", ns, "wait", "--for=jsonpath={.status.phase}=Running", *(f"pod/{p}" for p in pods),
            "--timeout=60s")


def wait_node(s: Server, ns: str, name: str, timeout: float = 30) -> str:
    return wait_for(lambda: pod(s, ns, name)["spec"].get("nodeName"), timeout, what=f"pod {ns}/{name} bound")


def claim_states(s: Server, ns: str) -> dict[str, str]:
    """NAME -> STATE of `kubectl get resourceclaims` (the server-side table the READMEs quote)."""
    lines = kubectl(s, "-n", ns, "get", "resourceclaims").stdout.splitlines()
    assert lines and lines[0].split()[:2] == ["NAME", "STATE"], lines
    return {line.split()[0]: line.split()[1] for line in lines[1:]}


def expect_allocated_for(s: Server, ns: str, claim_name: str, pod_names: list[str], node: str) -> dict:
    """The claim is allocated on `node`, reserved for exactly these pods and protected by the finalizer."""
    c = claim(s, ns, claim_name)
    alloc = c["status"]["allocation"]
    assert alloc["nodeSelector"] == {"nodeSelectorTerms": [{"matchFields": [
        {"key": "metadata.name", "operator": "In", "values": [node]}]}]}, alloc
    uids = {pod(s, ns, p)["metadata"]["uid"]: p for p in pod_names}
    reserved = c["status"].get("reservedFor") or []
    assert sorted((r["resource"], r["name"], r["uid"]) for r in reserved) == \
        sorted(("pods", name, uid) for uid, name in uids.items()), reserved
    assert FINALIZER in c["metadata"].get("finalizers", []), c["metadata"]
    return c


def expect_unschedulable(s: Server, ns: str, name: str, claim_name: str) -> None:
    """Pending and not bound: PodScheduled=False/Unschedulable, a FailedScheduling warning, claim unallocated."""
    ev = wait_for(lambda: events(s, ns, name, "FailedScheduling"), 30, what=f"FailedScheduling for {ns}/{name}")
    assert ev[-1]["type"] == "Warning" and ev[-1]["message"] == UNSCHEDULABLE, ev[-1]

    def scheduled_condition():
        conds = {c["type"]: c for c in pod(s, ns, name)["status"].get("conditions") or []}
        return conds.get("PodScheduled")

    cond = wait_for(scheduled_condition, 10, what=f"PodScheduled condition of {ns}/{name}")
    assert (cond["status"], cond["reason"]) == ("False", "Unschedulable"), cond
    p = pod(s, ns, name)
    assert not p["spec"].get("nodeName") and p["status"].get("phase", "Pending") == "Pending", p["status"]
    c = claim(s, ns, claim_name)
    assert not results(c) and not (c.get("status") or {}).get("reservedFor"), c.get("status")


def prepared_message(s: Server, ns: str, name: str) -> list[str]:
    return sorted(e["message"] for e in events(s, ns, name, "PreparedDynamicResources"))


def cdi_file(s: Server, node: str, claim_uid: str, driver: str = "gpu.example.com") -> Path:
    return Path(s.data_dir) / "nodes" / node / "cdi" / f"{driver}-{claim_uid}.json"


def readme(name: str) -> str:
    return (EXAMPLES / name / "README.md").read_text()


class HelperDriver:
    """The README's `python3 -m dramock example-driver ... --driver D --devices 0 --root-dir <node-1 root>`:
    registers D with node-1's kubelet so the pods of an example with its own ResourceSlices can run."""

    def __init__(self, s: Server, example: str, driver: str):
        text = readme(example)
        assert "python3 -m dramock example-driver --server http://127.0.0.1:8080 --node-name node-1" in text
        assert f"--driver {driver} --devices 0 --root-dir ./dramock-data/nodes/node-1" in text
        root = Path(s.data_dir) / "nodes" / "node-1"
        assert (root / "plugins_registry").is_dir(), "serve did not put node-1's root under <data-dir>/nodes"
        self.log = open(Path(s.data_dir).parent / f"{driver}.log", "w")  # noqa: SIM115 - closed in stop()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "dramock", "example-driver", "--server", s.url, "--node-name", "node-1",
             "--driver", driver, "--devices", "0", "--root-dir", str(root)],
            stdout=self.log, stderr=subprocess.STDOUT)

    def stop(self) -> None:
        stop_process(self.proc)
        self.log.close()


# ---------------------------------------------------------------- the READMEs


def test_every_example_has_manifests_and_a_readme_naming_its_gates():
    assert sorted(p.name for p in EXAMPLES.iterdir() if p.is_dir() and p.name not in NOT_SCENARIOS) == \
        sorted(ALL_EXAMPLES)
    # The 1.37 defaults the READMEs rely on.
    defaults = {name: g.default for name, g in featuregates.GATES.items()}
    for gate in ("DynamicResourceAllocation", "DRAPrioritizedList", "DRAExtendedResource",
                 "DRAPartitionableDevices", "DRAConsumableCapacity"):
        assert defaults[gate] is True, gate
    assert defaults["DRADeviceCompatibilityGroups"] is False
    for name in ALL_EXAMPLES:
        text = readme(name)
        assert text.startswith(f"# {name}\n"), name
        assert f"kubectl apply -f examples/{name}/\n" in text, name
        assert list((EXAMPLES / name).glob("*.yaml")), name
        serve = re.findall(r"^python3 -m dramock serve.*$", text, re.M)
        assert serve, name
        if GATES[name]:
            assert all(f"--feature-gates {GATES[name]}" in line for line in serve), (name, serve)
        else:
            assert not any("--feature-gates" in line for line in serve), (name, serve)
            assert "Feature gates: none to set" in text, name


# ---------------------------------------------------------------- examples on the default gates


def test_quickstart(cluster):
    s, ns = cluster, "quickstart"
    apply(s, "quickstart")
    wait_running(s, ns, "gpu-pod")
    p = pod(s, ns, "gpu-pod")
    node = p["spec"]["nodeName"]
    assert node in NODES
    c = expect_allocated_for(s, ns, "single-gpu", ["gpu-pod"], node)
    [r] = results(c)
    device = r["device"]
    assert r == {"request": "gpu", "driver": "gpu.example.com", "pool": node, "device": device}
    assert device in GPUS
    [status] = c["status"]["devices"]
    assert (status["driver"], status["pool"], status["device"]) == ("gpu.example.com", node, device)
    assert status["data"]["cdiDeviceIDs"] == [f"gpu.example.com/gpu={device}"]
    assert [(x["type"], x["status"]) for x in status["conditions"]] == [("Ready", "True")]
    assert cdi_file(s, node, c["metadata"]["uid"]).is_file()
    assert claim_states(s, ns) == {"single-gpu": "allocated,reserved"}
    assert events(s, ns, "gpu-pod", "Scheduled")
    assert prepared_message(s, ns, "gpu-pod") == [f'container "ctr": CDI devices gpu.example.com/gpu={device}']


def test_pod_with_cats(cluster):
    s, ns = cluster, "default"
    apply(s, "pod-with-cats")
    wait_running(s, ns, "pod-with-cats")
    p = pod(s, ns, "pod-with-cats")
    node = p["spec"]["nodeName"]
    assert node in NODES
    cs = claims(s, ns)
    by_pod_claim = {c["metadata"]["annotations"]["resource.kubernetes.io/pod-claim-name"]: c for c in cs}
    assert sorted(by_pod_claim) == ["cat-0", "cat-1"]
    devices = []
    for pod_claim, c in sorted(by_pod_claim.items()):
        assert re.fullmatch(rf"pod-with-cats-{pod_claim}-[a-z0-9]{{5}}", c["metadata"]["name"]), c["metadata"]
        owner = c["metadata"]["ownerReferences"][0]
        assert (owner["kind"], owner["uid"], owner.get("controller")) == ("Pod", p["metadata"]["uid"], True)
        expect_allocated_for(s, ns, c["metadata"]["name"], ["pod-with-cats"], node)
        [r] = results(c)
        assert (r["request"], r["driver"], r["pool"]) == ("req-0", "gpu.example.com", node)
        devices.append(r["device"])
    assert len(set(devices)) == 2 and set(devices) <= GPUS, devices
    assert set(claim_states(s, ns).values()) == {"allocated,reserved"}
    assert prepared_message(s, ns, "pod-with-cats") == [
        f'container "container{i}": CDI devices gpu.example.com/gpu={d}' for i, d in enumerate(devices)]

    kubectl(s, "delete", "pod", "pod-with-cats", "--timeout=60s")
    wait_for(lambda: not claims(s, ns), 30, what="the generated claims to be deleted")
    wait_for(lambda: not any(cdi_file(s, node, c["metadata"]["uid"]).exists() for c in cs), 30,
             what="the devices to be unprepared")


def test_shared_claim(cluster):
    s, ns = cluster, "shared-claim"
    apply(s, "shared-claim")
    wait_running(s, ns, "pod-a", "pod-b")
    node = pod(s, ns, "pod-a")["spec"]["nodeName"]
    assert node in NODES and pod(s, ns, "pod-b")["spec"]["nodeName"] == node
    c = expect_allocated_for(s, ns, "shared-gpu", ["pod-a", "pod-b"], node)
    [r] = results(c)
    assert (r["request"], r["driver"], r["pool"]) == ("gpu", "gpu.example.com", node) and r["device"] in GPUS
    assert claim_states(s, ns) == {"shared-gpu": "allocated,reserved"}
    for name in ("pod-a", "pod-b"):
        assert prepared_message(s, ns, name) == [f'container "ctr": CDI devices gpu.example.com/gpu={r["device"]}']


def test_prioritized_list(cluster):
    s, ns = cluster, "prioritized-list"
    apply(s, "prioritized-list")
    wait_running(s, ns, "gpu-pod")
    node = pod(s, ns, "gpu-pod")["spec"]["nodeName"]
    assert node in NODES
    c = expect_allocated_for(s, ns, "gpu-with-fallback", ["gpu-pod"], node)
    [r] = results(c)
    assert r == {"request": "gpu/one-gpu", "driver": "gpu.example.com", "pool": node, "device": r["device"]}
    assert r["device"] in GPUS
    assert [sr["name"] for sr in c["spec"]["devices"]["requests"][0]["firstAvailable"]] == \
        ["h100", "nine-gpus", "one-gpu"]


def test_consumable_bandwidth(cluster):
    s, ns = cluster, "consumable-bandwidth"
    apply(s, "consumable-bandwidth")
    pods = {f"net-pod-{i}": f"bandwidth-{i}" for i in (1, 2, 3)}

    def settled():
        bound = [n for n in pods if pod(s, ns, n)["spec"].get("nodeName")]
        waiting = [n for n in pods if n not in bound and events(s, ns, n, "FailedScheduling")]
        return (bound, waiting) if len(bound) == 2 and len(waiting) == 1 else None

    bound, [third] = wait_for(settled, 30, what="two pods bound and one FailedScheduling")
    expect_unschedulable(s, ns, third, pods[third])
    share_ids = set()
    for name in bound:
        assert pod(s, ns, name)["spec"]["nodeName"] == "node-1"
        c = expect_allocated_for(s, ns, pods[name], [name], "node-1")
        [r] = results(c)
        assert r == {"request": "nic", "driver": "nic.example.com", "pool": "node-1-nics", "device": "eth1",
                     "consumedCapacity": {"bandwidth": "5Gi"}, "shareID": r["shareID"]}, r
        share_ids.add(r["shareID"])
        # Bound, but nothing on node-1 prepares nic.example.com devices yet.
        ev = wait_for(lambda n=name: events(s, ns, n, "FailedPrepareDynamicResources"), 30,
                      what=f"FailedPrepareDynamicResources for {name}")
        assert ev[-1]["message"] == "DRA driver nic.example.com is not registered on node node-1", ev[-1]
        assert pod(s, ns, name)["status"].get("phase") == "Pending"
    assert len(share_ids) == 2 and all(share_ids), share_ids
    states = claim_states(s, ns)
    assert states == {**{pods[n]: "allocated,reserved" for n in bound}, pods[third]: "pending"}, states

    driver = HelperDriver(s, "consumable-bandwidth", "nic.example.com")
    try:
        wait_running(s, ns, *bound)
        for name in bound:
            c = claim(s, ns, pods[name])
            [r] = results(c)
            [st] = c["status"]["devices"]
            assert (st["driver"], st["pool"], st["device"], st["shareID"]) == \
                ("nic.example.com", "node-1-nics", "eth1", r["shareID"]), st
            assert cdi_file(s, "node-1", c["metadata"]["uid"], "nic.example.com").is_file()
        # The helper's own (empty) pool changed nothing for the third pod.
        expect_unschedulable(s, ns, third, pods[third])
    finally:
        driver.stop()


def test_extended_resource(cluster):
    s, ns = cluster, "extended-resource"
    apply(s, "extended-resource")
    wait_running(s, ns, "gpu-pod")
    p = pod(s, ns, "gpu-pod")
    node = p["spec"]["nodeName"]
    assert node in NODES
    assert not p["spec"].get("resourceClaims")
    [c] = claims(s, ns)
    m = c["metadata"]
    assert m["name"].startswith("gpu-pod-extended-resources-") and m["generateName"] == "gpu-pod-extended-resources-"
    assert m["annotations"]["resource.kubernetes.io/extended-resource-claim"] == "true"
    [owner] = m["ownerReferences"]
    assert (owner["kind"], owner["name"], owner["uid"], owner["controller"]) == \
        ("Pod", "gpu-pod", p["metadata"]["uid"], True)
    assert c["spec"]["devices"]["requests"] == [{"name": "container-0-request-0", "exactly": {
        "deviceClassName": "extended-gpu.example.com", "allocationMode": "ExactCount", "count": 1}}]
    expect_allocated_for(s, ns, m["name"], ["gpu-pod"], node)
    [r] = results(c)
    assert r == {"request": "container-0-request-0", "driver": "gpu.example.com", "pool": node,
                 "device": r["device"]} and r["device"] in GPUS
    assert p["status"]["extendedResourceClaimStatus"] == {
        "resourceClaimName": m["name"],
        "requestMappings": [{"containerName": "ctr", "resourceName": "example.com/gpu",
                             "requestName": "container-0-request-0"}]}
    assert claim_states(s, ns) == {m["name"]: "allocated,reserved"}
    # The kubelet prepares the special claim like any other and gives the device to the mapped container.
    cdi = cdi_file(s, node, m["uid"])
    assert cdi.is_file()
    assert wait_for(lambda: prepared_message(s, ns, "gpu-pod"), 30, what="PreparedDynamicResources") == [
        f'container "ctr": CDI devices gpu.example.com/gpu={r["device"]}']
    # Owned by the pod: deleted with it, after the device is unprepared.
    kubectl(s, "-n", ns, "delete", "pod", "gpu-pod", "--timeout=60s")
    wait_for(lambda: not claims(s, ns), 30, what="the extended-resource claim to be deleted with its pod")
    assert not cdi.exists()


def test_quota(cluster):
    s, ns = cluster, "quota"
    key = "gpu.example.com.deviceclass.resource.k8s.io/devices"
    apply(s, "quota")
    kubectl(s, "-n", ns, "wait", "--for=jsonpath={.status.used}", "resourcequota/gpu-quota", "--timeout=30s")
    res = apply(s, "quota/claims", check=False)
    assert res.returncode == 1, (res.stdout, res.stderr)
    assert res.stdout.splitlines() == [f"resourceclaim.resource.k8s.io/gpu-claim-{i} created" for i in (1, 2)]
    # The exact message the README quotes: 403 Forbidden, exceeded quota.
    [quoted] = [line.strip() for line in readme("quota").splitlines()
                if line.strip().startswith("Error from server (Forbidden)")]
    assert res.stderr.strip() == quoted, res.stderr
    assert sorted(c["metadata"]["name"] for c in claims(s, ns)) == ["gpu-claim-1", "gpu-claim-2"]
    q = get(s, f"/api/v1/namespaces/{ns}/resourcequotas/gpu-quota")
    assert q["status"]["hard"] == {key: "2"} and q["status"]["used"] == {key: "2"}, q["status"]
    assert f"{key}: 2/2" in kubectl(s, "-n", ns, "get", "resourcequota").stdout
    assert claim_states(s, ns) == {"gpu-claim-1": "pending", "gpu-claim-2": "pending"}
    # Deleting a claim gives its device back to the quota.
    kubectl(s, "-n", ns, "delete", "resourceclaim", "gpu-claim-1")
    wait_for(lambda: get(s, f"/api/v1/namespaces/{ns}/resourcequotas/gpu-quota")["status"]["used"] == {key: "1"},
             30, what="quota usage back to 1")


def test_partitionable_mig_without_the_gate_ignores_groups(cluster):
    """The README's warning: with DRADeviceCompatibilityGroups off the groups are dropped from the slices and
    the vGPU pod is scheduled on the GPU next to the MIG partitions (KEP-5963's Example 2)."""
    s, ns = cluster, "partitionable-mig"
    apply(s, "partitionable-mig")
    devices = get(s, f"{R}/resourceslices/node-1-gpu-0-devices")["spec"]["devices"]
    assert len(devices) == 5 and not any(cc.get("compatibilityGroups") for d in devices
                                         for cc in d["consumesCounters"]), devices
    for name in ("pod-mig-a", "pod-mig-b"):
        assert wait_node(s, ns, name) == "node-1"
    apply(s, "partitionable-mig/vgpu")
    assert wait_node(s, ns, "pod-vgpu") == "node-1"
    [r] = results(claim(s, ns, "vgpu"))
    assert (r["driver"], r["pool"]) == ("mig.example.com", "node-1-pool") and r["device"].startswith("gpu-0-vgpu-")


# ---------------------------------------------------------------- partitionable-mig with its gate


def test_partitionable_mig(compat_cluster):
    s, ns = compat_cluster, "partitionable-mig"
    apply(s, "partitionable-mig")
    # The gate is on: the server keeps the groups the example publishes.
    devices = {d["name"]: d for d in get(s, f"{R}/resourceslices/node-1-gpu-0-devices")["spec"]["devices"]}
    assert {n: d["consumesCounters"][0]["compatibilityGroups"] for n, d in devices.items()} == {
        **{f"gpu-0-mig-1g-{i}": ["mig"] for i in range(3)}, **{f"gpu-0-vgpu-{i}": ["vgpu"] for i in range(2)}}
    # The README's wait.
    kubectl(s, "-n", ns, "wait", "--for=jsonpath={.spec.nodeName}=node-1", "pod/pod-mig-a", "pod/pod-mig-b",
            "--timeout=60s")
    mig_devices = set()
    for name, claim_name in (("pod-mig-a", "mig-a"), ("pod-mig-b", "mig-b")):
        c = expect_allocated_for(s, ns, claim_name, [name], "node-1")
        [r] = results(c)
        assert r == {"request": "gpu", "driver": "mig.example.com", "pool": "node-1-pool", "device": r["device"]}
        mig_devices.add(r["device"])
        ev = wait_for(lambda n=name: events(s, ns, n, "FailedPrepareDynamicResources"), 30,
                      what=f"FailedPrepareDynamicResources for {name}")
        assert ev[-1]["message"] == "DRA driver mig.example.com is not registered on node node-1", ev[-1]
        assert pod(s, ns, name)["status"].get("phase") == "Pending"
    assert len(mig_devices) == 2 and mig_devices <= {f"gpu-0-mig-1g-{i}" for i in range(3)}, mig_devices

    apply(s, "partitionable-mig/vgpu")
    expect_unschedulable(s, ns, "pod-vgpu", "vgpu")
    assert claim_states(s, ns) == {"mig-a": "allocated,reserved", "mig-b": "allocated,reserved", "vgpu": "pending"}

    driver = HelperDriver(s, "partitionable-mig", "mig.example.com")
    try:
        wait_running(s, ns, "pod-mig-a", "pod-mig-b")
        for name, claim_name in (("pod-mig-a", "mig-a"), ("pod-mig-b", "mig-b")):
            [r] = results(claim(s, ns, claim_name))
            assert prepared_message(s, ns, name) == [f'container "ctr": CDI devices mig.example.com/gpu={r["device"]}']
        expect_unschedulable(s, ns, "pod-vgpu", "vgpu")

        # Both MIG pods gone: their claims are deallocated and the vGPU pod gets gpu-0.
        kubectl(s, "-n", ns, "delete", "pod", "pod-mig-a", "pod-mig-b", "--timeout=60s")
        wait_running(s, ns, "pod-vgpu")
        assert pod(s, ns, "pod-vgpu")["spec"]["nodeName"] == "node-1"
        c = expect_allocated_for(s, ns, "vgpu", ["pod-vgpu"], "node-1")
        [r] = results(c)
        assert r == {"request": "gpu", "driver": "mig.example.com", "pool": "node-1-pool", "device": r["device"]}
        assert r["device"] in {"gpu-0-vgpu-0", "gpu-0-vgpu-1"}
        for claim_name in ("mig-a", "mig-b"):
            assert not results(claim(s, ns, claim_name))
    finally:
        driver.stop()


def test_binding_conditions(binding_cluster):
    s, ns = binding_cluster, "binding-conditions"
    apply(s, "binding-conditions")
    prebind = 'running PreBind plugin "DynamicResources": '

    # attached-pod: allocated, reserved and nominated but unbound while the 5 s attach runs.
    c = wait_for(lambda: (x := claim(s, ns, "attached-gpu")).get("status", {}).get("reservedFor") and x, 20,
                 what="attached-gpu allocated and reserved")
    alloc = c["status"]["allocation"]
    [r] = results(c)
    assert (r["driver"], r["pool"], r["bindingConditions"], r["bindingFailureConditions"]) == \
        ("gpu.example.com", "fabric", ["Attached"], ["AttachFailed"])
    node = alloc["nodeSelector"]["nodeSelectorTerms"][0]["matchFields"][0]["values"][0]  # bindsToNode
    assert node in NODES and alloc["allocationTimestamp"]
    assert not pod(s, ns, "attached-pod")["spec"].get("nodeName")
    wait_for(lambda: pod(s, ns, "attached-pod")["status"].get("nominatedNodeName") == node, 10,
             what="attached-pod nominated")
    [pending] = wait_for(lambda: events(s, ns, "attached-pod", "BindingConditionsPending"), 10, what="the event")
    assert pending["message"] == f"waiting for binding conditions for device on node {node}"
    wait_running(s, ns, "attached-pod")
    assert pod(s, ns, "attached-pod")["spec"]["nodeName"] == node
    statuses = {d["device"]: {x["type"]: x["status"] for x in d["conditions"]}
                for d in claim(s, ns, "attached-gpu")["status"]["devices"]}
    assert statuses[r["device"]]["Attached"] == "True"

    # flaky-pod: the failed attach is reported, the claim released and allocated again, then the pod runs.
    wait_running(s, ns, "flaky-pod")
    failed = sorted(e["message"] for e in events(s, ns, "flaky-pod", "FailedScheduling"))
    flaky_node = pod(s, ns, "flaky-pod")["spec"]["nodeName"]
    assert failed == ["0/2 nodes are available: 2 resourceclaim not available on the node.",
                      f'{prebind}claim flaky-gpu binding failed: reason=AttachFailed, message="simulated attach '
                      f'failure 1 of 1 on node {flaky_node}"'], failed

    # stuck-pod: the binding timeout, PodScheduled=False/SchedulerError, until the driver is made quick.
    wait_for(lambda: any(e["message"] == f"{prebind}claim stuck-gpu binding timeout" or
                         e["message"] == f"{prebind}device binding timeout"
                         for e in events(s, ns, "stuck-pod", "FailedScheduling")), 40, what="the binding timeout")
    cond = {x["type"]: x for x in pod(s, ns, "stuck-pod")["status"]["conditions"]}["PodScheduled"]
    assert (cond["status"], cond["reason"]) == ("False", "SchedulerError") and cond["message"].startswith(prebind)
    assert not pod(s, ns, "stuck-pod")["spec"].get("nodeName")
    kubectl(s, "-n", ns, "annotate", "resourceclaim", "stuck-gpu", "gpu.example.com/attach-delay=0s", "--overwrite")
    wait_for(lambda: pod(s, ns, "stuck-pod")["spec"].get("nodeName"), 60, what="stuck-pod bound at last")
    wait_running(s, ns, "stuck-pod")
    # The scheduler's metrics count the three outcomes.
    metrics = kubectl(s, "get", "--raw", "/metrics").stdout
    counted = {m.group(1) for m in re.finditer(
        r'^scheduler_dra_bindingconditions_allocations_total\{driver="gpu.example.com",'
        r'profile="default-scheduler",status="(\w+)"\} [1-9]', metrics, re.M)}
    assert counted == {"success", "failure", "timeout"}, counted
    assert "scheduler_dra_bindingconditions_wait_duration_seconds_bucket" in metrics
    kubectl(s, "delete", "-f", "examples/binding-conditions/", "--timeout=60s")
