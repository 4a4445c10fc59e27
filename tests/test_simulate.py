"""`dramock simulate`: offline placement over a snapshot that kubectl exported from a running `dramock serve`.

The live check: the snapshot is exported before the examples are applied; `simulate --add` every example file
predicts each pod's node, each claim's devices and each Pending verdict; then the examples are applied one by
one and the live scheduler must have done exactly that. The what-if check adds pods until the cluster is full.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers import Server, kubectl, node_cluster, results, wait_for

ROOT = Path(__file__).resolve().parents[1]
GATES = "DRADeviceCompatibilityGroups=true"
EXPORT = "deviceclasses,resourceslices,resourceclaims,nodes,pods"
# Applied in this order, each one's pods placed before the next is applied (the live queue's order is then the
# order simulate uses: oldest first, --add files in order).
EXAMPLES = ["quickstart/quickstart.yaml", "shared-claim/shared-claim.yaml", "prioritized-list/prioritized-list.yaml",
            "pod-with-cats/pod-with-cats.yaml", "consumable-bandwidth/consumable-bandwidth.yaml",
            "partitionable-mig/gpu-0-slices.yaml", "partitionable-mig/mig-pods.yaml",
            "partitionable-mig/vgpu/vgpu-pod.yaml", "extended-resource/extended-resource.yaml"]


@pytest.fixture(scope="module")
def cluster(starts_processes) -> Iterator[Server]:
    with node_cluster("dramock-ex-", "--feature-gates", GATES, grace=3) as s:
        yield s


def _simulate(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "dramock", "simulate", *args], capture_output=True, text=True,
                          timeout=120, cwd=ROOT)


def _pods_of(path: Path) -> list[tuple[str, str]]:
    import yaml

    return [((d["metadata"].get("namespace") or "default"), d["metadata"]["name"])
            for d in yaml.safe_load_all(path.read_text()) if d and d.get("kind") == "Pod"]


def _outcome(s: Server, ns: str, name: str, want: dict) -> dict | None:
    """The live pod once it is on the predicted node, or Pending with the predicted FailedScheduling text
    (upstream's, unchanged)."""
    p = _placed(s, ns, name)
    if p is None:
        return None
    if want["node"] is not None:
        return p if p["spec"].get("nodeName") == want["node"] else None
    cond = [c for c in p["status"].get("conditions") or [] if c["type"] == "PodScheduled"]
    return p if not p["spec"].get("nodeName") and cond[0].get("message") == want["reason"] else None


def _placed(s: Server, ns: str, name: str) -> dict | None:
    """The live pod once the scheduler decided: bound, or PodScheduled=False with a message."""
    code, _, p = s.request("GET", f"/api/v1/namespaces/{ns}/pods/{name}")
    assert code == 200, p
    if p["spec"].get("nodeName"):
        return p
    cond = [c for c in p.get("status", {}).get("conditions") or [] if c["type"] == "PodScheduled"]
    return p if cond and cond[0]["status"] == "False" and cond[0].get("message") else None


def _devices(results_: list[dict]) -> list[tuple]:
    return sorted((r["request"], r["driver"], r["pool"], r["device"], json.dumps(r.get("consumedCapacity") or {}))
                  for r in results_)


def test_simulate_predicts_what_the_live_scheduler_does(cluster, tmp_path):
    snapshot = tmp_path / "snapshot.yaml"
    snapshot.write_text(kubectl(cluster, "get", EXPORT, "-A", "-o", "yaml").stdout)
    adds = [a for e in EXAMPLES for a in ("--add", f"examples/{e}")]
    sim = _simulate("-f", str(snapshot), *adds, "-o", "json", "--feature-gates", GATES)
    assert sim.returncode == 0, sim.stderr
    predicted = {(p["namespace"], p["name"]): p for p in json.loads(sim.stdout)["pods"]}
    expected_pods = [p for e in EXAMPLES for p in _pods_of(ROOT / "examples" / e)]
    assert sorted(predicted) == sorted(expected_pods)

    for example in EXAMPLES:
        kubectl(cluster, "apply", "-f", f"examples/{example}")
        for ns, name in _pods_of(ROOT / "examples" / example):
            want = predicted[(ns, name)]
            # A pod may be turned away for a moment (e.g. while a shared claim is in flight for another pod):
            # wait for the predicted outcome; the deadline fails the test when it does not come.
            live = wait_for(lambda ns=ns, name=name, want=want: _outcome(cluster, ns, name, want), 60,
                            what=f"pod {ns}/{name}: {want.get('node') or want.get('reason')}")
            if want["node"] is None:
                continue
            # Each claim of the pod holds exactly the devices simulate chose (shareIDs are random UUIDs).
            by_pod_claim = {st["name"]: st["resourceClaimName"]
                            for st in live["status"].get("resourceClaimStatuses") or []}
            for pc in live["spec"].get("resourceClaims") or []:
                by_pod_claim.setdefault(pc["name"], pc.get("resourceClaimName"))
            special = (live["status"].get("extendedResourceClaimStatus") or {}).get("resourceClaimName")
            assert bool(special) == any(c["extendedResources"] for c in want["claims"])
            for c in want["claims"]:
                live_name = special if c["extendedResources"] else by_pod_claim[c["podClaimName"]]
                code, _, claim = cluster.request(
                    "GET", f"/apis/resource.k8s.io/v1/namespaces/{ns}/resourceclaims/{live_name}")
                assert code == 200, claim
                assert _devices(results(claim)) == _devices(c["allocation"]["devices"]["results"]), (ns, name)


def test_what_if_fill_the_cluster_until_a_pod_does_not_fit(cluster, tmp_path):
    snapshot = tmp_path / "snapshot.yaml"
    snapshot.write_text(kubectl(cluster, "get", EXPORT, "-A", "-o", "yaml").stdout)
    free = sum(1 for sl in json.loads(kubectl(cluster, "get", "resourceslices", "-o", "json").stdout)["items"]
               if sl["spec"]["driver"] == "gpu.example.com" for _ in sl["spec"]["devices"])
    used = sum(1 for c in json.loads(kubectl(cluster, "get", "resourceclaims", "-A", "-o", "json").stdout)["items"]
               for r in results(c) if r["driver"] == "gpu.example.com")
    free -= used
    docs = ["apiVersion: resource.k8s.io/v1\nkind: ResourceClaimTemplate\nmetadata: {name: one-gpu, namespace: "
            "default}\nspec:\n  spec:\n    devices:\n      requests:\n      - name: gpu\n        exactly: "
            "{deviceClassName: gpu.example.com}\n"]
    for i in range(free + 3):
        docs.append(f"apiVersion: v1\nkind: Pod\nmetadata: {{name: fill-{i:02d}, namespace: default}}\nspec:\n"
                    "  containers: [{name: c, image: busybox}]\n"
                    "  resourceClaims: [{name: gpu, resourceClaimTemplateName: one-gpu}]\n")
    what_if = tmp_path / "fill.yaml"
    what_if.write_text("---\n".join(docs))
    sim = _simulate("-f", str(snapshot), "--add", str(what_if), "-o", "json", "--feature-gates", GATES)
    assert sim.returncode == 0, sim.stderr
    fills = [p for p in json.loads(sim.stdout)["pods"] if p["name"].startswith("fill-")]
    fitting = [p for p in fills if p["node"]]
    assert [p["name"] for p in fitting] == [f"fill-{i:02d}" for i in range(free)]
    first = fills[free]
    assert first["name"] == f"fill-{free:02d}" and first["node"] is None
    assert first["reason"] == "0/2 nodes are available: 2 cannot allocate all claims."
    # Its explanation names every GPU and who took it: the earlier simulated pods' in-memory claims.
    reasons = {d["device"]: d for n in first["explanation"]["nodes"] for c in n["claims"] for r in c["requests"]
               for d in r["devices"] if d["device"].startswith("gpu.example.com/")}
    assert len(reasons) == free + used
    flying = [d for d in reasons.values() if d["reason"] == "ReservedInFlight"]
    assert len(flying) == free
    assert all(d["message"].startswith("reserved in flight for claim default/fill-") for d in flying)

    # The text output says the same; and with a node removed, the cluster is full sooner.
    text = _simulate("-f", str(snapshot), "--add", str(what_if), "--feature-gates", GATES)
    assert f"default/fill-{free:02d}: does not fit: 0/2 nodes are available: 2 cannot allocate all claims." \
        in text.stdout
    fewer = _simulate("-f", str(snapshot), "--add", str(what_if), "--remove", "node/node-2", "-o", "json",
                      "--feature-gates", GATES)
    assert fewer.returncode == 0, fewer.stderr
    placed = [p for p in json.loads(fewer.stdout)["pods"] if p["name"].startswith("fill-") and p["node"]]
    assert placed and all(p["node"] == "node-1" for p in placed) and len(placed) < free
    bad = _simulate("-f", str(snapshot), "--remove", "pod/nowhere/none")
    assert bad.returncode == 2 and "no such Pod" in bad.stderr


def test_explain_on_the_examples_why_this_device_and_why_pending(cluster, tmp_path):
    """`dramock explain --kubeconfig`: a scheduled pod names the device its claim holds; the vGPU pod of the
    partitionable example is Pending because of the MIG partitions' compatibility groups."""
    for example in ("quickstart/quickstart.yaml", "partitionable-mig/gpu-0-slices.yaml",
                    "partitionable-mig/mig-pods.yaml", "partitionable-mig/vgpu/vgpu-pod.yaml"):
        kubectl(cluster, "apply", "-f", f"examples/{example}")
    for ns, name in (("quickstart", "gpu-pod"), ("partitionable-mig", "pod-vgpu")):
        wait_for(lambda ns=ns, name=name: _placed(cluster, ns, name), 60, what=f"pod {ns}/{name} placed")

    def explain(ns: str, name: str) -> str:
        res = subprocess.run([sys.executable, "-m", "dramock", "explain", "--kubeconfig", cluster.kubeconfig,
                              "-n", ns, name], capture_output=True, text=True, timeout=60, cwd=ROOT)
        assert res.returncode == 0, res.stderr
        return res.stdout

    code, _, pod = cluster.request("GET", "/api/v1/namespaces/quickstart/pods/gpu-pod")
    code, _, claim = cluster.request("GET", "/apis/resource.k8s.io/v1/namespaces/quickstart/resourceclaims/single-gpu")
    [held] = results(claim)
    device = f"{held['driver']}/{held['pool']}/{held['device']}"
    out = explain("quickstart", "gpu-pod")
    assert out.splitlines()[0] == f"Pod quickstart/gpu-pod: scheduled on {pod['spec']['nodeName']}"
    assert f"    {device}: Chosen: allocated to this claim" in out.splitlines()

    out = explain("partitionable-mig", "pod-vgpu")
    assert out.splitlines()[0] == ("Pod partitionable-mig/pod-vgpu: Pending: 0/2 nodes are available: 2 cannot "
                                   "allocate all claims.")
    mig = {f"mig.example.com/node-1-pool/{r['device']}" for n in ("mig-a", "mig-b") for r in results(
        cluster.request("GET", f"/apis/resource.k8s.io/v1/namespaces/partitionable-mig/resourceclaims/{n}")[2])}
    conflict = [ln for ln in out.splitlines() if "gpu-0-vgpu-0: CompatibilityGroupConflict" in ln]
    assert conflict and all(f"{m} (allocated)" in conflict[0] for m in mig), out
