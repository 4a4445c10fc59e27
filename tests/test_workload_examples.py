"""The workload examples (issue 14) against a real `dramock serve` with two nodes and the real kubectl: each is
applied as its README says, reaches upstream's "done" state (Deployment Available and rolled out, Job
Complete, DaemonSet numberReady=2, StatefulSet readyReplicas=2), and frees every device when deleted."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers import Server, node_cluster, wait_for

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[1]
R = "/apis/resource.k8s.io/v1"


@pytest.fixture(scope="module")
def cluster(starts_processes) -> Iterator[Server]:
    with node_cluster("dramock-wl-") as s:
        yield s


def kubectl_json(s: Server, *args: str) -> dict:
    return json.loads(s.kubectl(*args, "-o", "json").stdout)


def claims(s: Server, ns: str) -> list[dict]:
    return s.request("GET", f"{R}/namespaces/{ns}/resourceclaims")[2]["items"]


def pods(s: Server, ns: str) -> list[dict]:
    return s.request("GET", f"/api/v1/namespaces/{ns}/pods")[2]["items"]


def allocated_devices(s: Server) -> list[tuple[str, str]]:
    out = []
    for c in s.request("GET", f"{R}/resourceclaims")[2]["items"]:
        for r in (((c.get("status") or {}).get("allocation") or {}).get("devices") or {}).get("results") or []:
            out.append((r["pool"], r["device"]))
    return out


def apply(s: Server, name: str) -> None:
    # As the README says, from the repository root.
    import subprocess

    from tests.conftest import KUBECTL

    subprocess.run([KUBECTL, "--kubeconfig", s.kubeconfig, "apply", "-f", f"examples/{name}/"], cwd=ROOT,
                   check=True, capture_output=True, text=True, timeout=60)


def delete_and_expect_free(s: Server, name: str, ns: str) -> None:
    # The Namespace goes first and takes its contents with it: the later deletes may find nothing.
    s.kubectl("delete", "-f", str(ROOT / "examples" / name), "--wait=false", "--ignore-not-found")
    wait_for(lambda: not pods(s, ns) and not claims(s, ns), 60, what=f"{name}: pods and claims gone")
    wait_for(lambda: not allocated_devices(s), 30, what="every device free")


def claim_of(s: Server, ns: str, pod: dict) -> dict:
    uid = pod["metadata"]["uid"]
    return next(c for c in claims(s, ns) if any(o["uid"] == uid for o in c["metadata"].get("ownerReferences") or []))


def test_deployment_with_extended_resource(cluster):
    s, ns = cluster, "deployment-extended-resource"
    apply(s, "deployment-extended-resource")
    out = s.kubectl("-n", ns, "rollout", "status", "deployment/gpu-deployment", "--timeout=60s").stdout
    assert 'deployment "gpu-deployment" successfully rolled out' in out
    d = kubectl_json(s, "-n", ns, "get", "deployment", "gpu-deployment")
    conds = {c["type"]: c for c in d["status"]["conditions"]}
    assert (conds["Available"]["status"], conds["Available"]["reason"]) == ("True", "MinimumReplicasAvailable")
    assert conds["Progressing"]["reason"] == "NewReplicaSetAvailable"
    assert (d["status"]["readyReplicas"], d["status"]["updatedReplicas"], d["status"]["availableReplicas"]) == \
        (2, 2, 2)
    [rs] = kubectl_json(s, "-n", ns, "get", "replicasets")["items"]
    assert rs["metadata"]["name"] == f"gpu-deployment-{rs['metadata']['labels']['pod-template-hash']}"
    assert rs["metadata"]["annotations"]["deployment.kubernetes.io/revision"] == "1"
    running = pods(s, ns)
    assert len(running) == 2
    for p in running:
        c = claim_of(s, ns, p)
        assert c["metadata"]["annotations"]["resource.kubernetes.io/extended-resource-claim"] == "true"
        [result] = c["status"]["allocation"]["devices"]["results"]
        assert (result["driver"], result["pool"]) == ("gpu.example.com", p["spec"]["nodeName"])
    printed = s.kubectl("-n", ns, "get", "deployment", "gpu-deployment").stdout.split("\n")[1].split()
    assert printed[:4] == ["gpu-deployment", "2/2", "2", "2"]

    s.kubectl("-n", ns, "scale", "deployment/gpu-deployment", "--replicas=3")
    wait_for(lambda: kubectl_json(s, "-n", ns, "get", "deployment", "gpu-deployment")["status"]
             .get("availableReplicas") == 3, 60, what="three available replicas")
    assert len(set(allocated_devices(s))) == 3

    # A template change rolls out a second ReplicaSet; undo brings the first back as revision 3.
    s.kubectl("-n", ns, "set", "image", "deployment/gpu-deployment", "ctr=ubuntu:25.04")
    s.kubectl("-n", ns, "rollout", "status", "deployment/gpu-deployment", "--timeout=60s")
    history = s.kubectl("-n", ns, "rollout", "history", "deployment/gpu-deployment").stdout
    assert [line.split()[0] for line in history.splitlines()[2:] if line.strip()] == ["1", "2"]
    s.kubectl("-n", ns, "rollout", "undo", "deployment/gpu-deployment")
    s.kubectl("-n", ns, "rollout", "status", "deployment/gpu-deployment", "--timeout=60s")
    images = {p["spec"]["containers"][0]["image"] for p in pods(s, ns) if not p["metadata"].get("deletionTimestamp")}
    assert images == {"ubuntu:24.04"}
    history = s.kubectl("-n", ns, "rollout", "history", "deployment/gpu-deployment").stdout
    assert [line.split()[0] for line in history.splitlines()[2:] if line.strip()] == ["2", "3"]

    delete_and_expect_free(s, "deployment-extended-resource", ns)


def test_job_with_claim_template_completes(cluster):
    s, ns = cluster, "job-claim-template"
    apply(s, "job-claim-template")
    s.kubectl("-n", ns, "wait", "--for=condition=Complete", "job/training", "--timeout=90s")
    job = kubectl_json(s, "-n", ns, "get", "job", "training")
    assert job["status"]["succeeded"] == 3 and not job["status"].get("failed")
    conds = {c["type"]: c for c in job["status"]["conditions"]}
    assert conds["SuccessCriteriaMet"]["reason"] == conds["Complete"]["reason"] == "CompletionsReached"
    assert job["status"]["completionTime"]
    done = pods(s, ns)
    assert len(done) == 3 and {p["status"]["phase"] for p in done} == {"Succeeded"}
    assert all(p["metadata"]["annotations"]["dramock.io/complete-after-seconds"] == "2" for p in done)
    printed = s.kubectl("-n", ns, "get", "job", "training").stdout.split("\n")[1].split()
    assert printed[:3] == ["training", "Complete", "3/3"]
    # Each pod's claim went as the pod succeeded: nothing allocated while the Job still exists.
    wait_for(lambda: not claims(s, ns), 30, what="the generated claims of the succeeded pods deleted")
    delete_and_expect_free(s, "job-claim-template", ns)


def test_daemonset_runs_on_both_nodes(cluster):
    s, ns = cluster, "daemonset"
    apply(s, "daemonset")
    out = s.kubectl("-n", ns, "rollout", "status", "daemonset/gpu-monitor", "--timeout=60s").stdout
    assert 'daemon set "gpu-monitor" successfully rolled out' in out
    ds = kubectl_json(s, "-n", ns, "get", "daemonset", "gpu-monitor")
    assert (ds["status"]["desiredNumberScheduled"], ds["status"]["numberReady"]) == (2, 2)
    running = pods(s, ns)
    assert sorted(p["spec"]["nodeName"] for p in running) == ["node-1", "node-2"]
    for p in running:
        [result] = claim_of(s, ns, p)["status"]["allocation"]["devices"]["results"]
        assert result["pool"] == p["spec"]["nodeName"]

    s.kubectl("taint", "node", "node-2", "dedicated=x:NoExecute")
    try:
        wait_for(lambda: sorted(p["spec"].get("nodeName") for p in pods(s, ns)) == ["node-1"], 30,
                 what="the pod on the tainted node removed")
    finally:
        s.kubectl("taint", "node", "node-2", "dedicated=x:NoExecute-")
    wait_for(lambda: kubectl_json(s, "-n", ns, "get", "daemonset", "gpu-monitor")["status"].get("numberReady") == 2,
             60, what="the pod back on node-2")
    delete_and_expect_free(s, "daemonset", ns)


def test_statefulset_with_per_replica_claims(cluster):
    s, ns = cluster, "statefulset"
    apply(s, "statefulset")
    wait_for(lambda: kubectl_json(s, "-n", ns, "get", "statefulset", "inference")["status"]
             .get("readyReplicas") == 2, 60, what="readyReplicas=2")
    running = sorted(pods(s, ns), key=lambda p: p["metadata"]["name"])
    assert [p["metadata"]["name"] for p in running] == ["inference-0", "inference-1"]
    assert [p["spec"]["hostname"] for p in running] == ["inference-0", "inference-1"]
    assert {p["spec"]["subdomain"] for p in running} == {"inference"}
    claim_names = {p["metadata"]["name"]: claim_of(s, ns, p)["metadata"]["name"] for p in running}
    assert all(c.startswith(f"{p}-gpu-") for p, c in claim_names.items())
    assert len(allocated_devices(s)) == 2

    s.kubectl("-n", ns, "scale", "statefulset/inference", "--replicas=1")
    wait_for(lambda: [p["metadata"]["name"] for p in pods(s, ns)] == ["inference-0"], 30,
             what="inference-1 removed")
    wait_for(lambda: [c["metadata"]["name"] for c in claims(s, ns)] == [claim_names["inference-0"]], 30,
             what="the claim of inference-1 deleted")
    delete_and_expect_free(s, "statefulset", ns)
