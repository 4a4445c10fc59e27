"""Pods end as 1.37 kubelets and controllers end them (issue 14): graceful deletion reaches a terminal phase,
so the claim controller releases, deallocates and deletes claims even while finalizers hold the pod; the pod
garbage collector handles pods of deleted and long NotReady nodes; a shorter grace period moves
deletionTimestamp back."""

from __future__ import annotations

import sys
import time
import uuid
from datetime import datetime, timezone

import pytest

from tests.helpers import Server, node_cluster, spawn, start_server, stop, stop_process, wait_for

pytestmark = pytest.mark.e2e

CLAIMS = "/apis/resource.k8s.io/v1/namespaces/default/resourceclaims"
HOLD = "example.com/hold"


@pytest.fixture(scope="module")
def cluster(starts_processes):
    with node_cluster("dramock-term-") as s:
        yield s


def _template(name: str) -> dict:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"spec": {"devices": {"requests": [{"name": "gpu", "exactly": {
                "deviceClassName": "gpu.example.com"}}]}}}}


def _pod(name: str, template: str, finalizers: list[str] = ()) -> dict:
    md: dict = {"name": name, "namespace": "default"}
    if finalizers:
        md["finalizers"] = list(finalizers)
    return {"apiVersion": "v1", "kind": "Pod", "metadata": md,
            "spec": {"containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10",
                                     "resources": {"claims": [{"name": "gpu"}]}}],
                     "resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": template}]}}


def _get(s: Server, path: str) -> dict | None:
    code, _, body = s.request("GET", path)
    return body if code == 200 else None


def _claims_of(s: Server, pod: str) -> list[dict]:
    return [c for c in s.request("GET", CLAIMS)[2]["items"]
            if any(o.get("name") == pod for o in c["metadata"].get("ownerReferences") or [])]


def _allocated_devices(s: Server) -> set[tuple[str, str]]:
    out = set()
    for c in s.request("GET", CLAIMS)[2]["items"]:
        for r in (((c.get("status") or {}).get("allocation") or {}).get("devices") or {}).get("results") or []:
            out.add((r["pool"], r["device"]))
    return out


def _running(s: Server, name: str) -> dict:
    s.kubectl("wait", "--for=jsonpath={.status.phase}=Running", f"pod/{name}", "--timeout=60s")
    return _get(s, f"/api/v1/namespaces/default/pods/{name}")


def test_pod_with_finalizer_frees_its_devices_within_5s(cluster):
    s = cluster
    s.request("POST", "/apis/resource.k8s.io/v1/namespaces/default/resourceclaimtemplates", _template("hold-t"))
    assert s.request("POST", "/api/v1/namespaces/default/pods", _pod("held", "hold-t", [HOLD]))[0] == 201
    pod = _running(s, "held")
    [claim] = wait_for(lambda: _claims_of(s, "held"), what="the generated claim")
    claim = wait_for(lambda: (c := _get(s, f"{CLAIMS}/{claim['metadata']['name']}"))
                     and c["status"].get("reservedFor") and c, what="the claim reserved")
    assert claim["status"]["reservedFor"][0]["uid"] == pod["metadata"]["uid"]
    device = (pod["spec"]["nodeName"], claim["status"]["allocation"]["devices"]["results"][0]["device"])
    assert device in _allocated_devices(s)

    assert s.request("DELETE", "/api/v1/namespaces/default/pods/held")[0] == 200
    started = time.monotonic()
    # Unprepared, terminal, unreserved, deallocated and deleted while the finalizer still holds the pod.
    wait_for(lambda: not _claims_of(s, "held") and device not in _allocated_devices(s), 5,
             what="the claim released, deallocated and deleted")
    assert time.monotonic() - started <= 5
    held = _get(s, "/api/v1/namespaces/default/pods/held")
    assert held is not None and held["metadata"]["deletionGracePeriodSeconds"] == 0  # kubelet confirmed
    assert held["status"]["phase"] == "Succeeded"
    conds = {c["type"]: c for c in held["status"]["conditions"]}
    assert conds["Ready"]["status"] == "False" and conds["Ready"]["reason"] == "PodCompleted"
    term = held["status"]["containerStatuses"][0]["state"]["terminated"]
    assert term["exitCode"] == 0 and term["reason"] == "Completed"

    # Removing the finalizer lets it go.
    s.request("PATCH", "/api/v1/namespaces/default/pods/held", {"metadata": {"finalizers": None}},
              content_type="application/merge-patch+json")
    wait_for(lambda: _get(s, "/api/v1/namespaces/default/pods/held") is None, what="the pod gone")


def test_foreground_delete_of_pod_with_template_claims_completes(cluster):
    s = cluster
    s.request("POST", "/apis/resource.k8s.io/v1/namespaces/default/resourceclaimtemplates", _template("fg-t"))
    assert s.request("POST", "/api/v1/namespaces/default/pods", _pod("fg", "fg-t"))[0] == 201
    _running(s, "fg")
    wait_for(lambda: _claims_of(s, "fg"), what="the generated claim")
    s.kubectl("delete", "pod", "fg", "--cascade=foreground", "--timeout=30s")
    assert _get(s, "/api/v1/namespaces/default/pods/fg") is None
    wait_for(lambda: not _claims_of(s, "fg"), 10, what="the generated claim gone")


def test_pod_deleted_while_pending_fails_with_unknown_container_status(cluster):
    s = cluster
    pod = _pod("pending", "no-such-template", [HOLD])
    pod["spec"]["nodeName"] = "node-1"  # bound, but its claim can never be created
    assert s.request("POST", "/api/v1/namespaces/default/pods", pod)[0] == 201
    assert s.request("DELETE", "/api/v1/namespaces/default/pods/pending")[0] == 200
    gone = wait_for(lambda: (p := _get(s, "/api/v1/namespaces/default/pods/pending"))
                    and p["status"].get("phase") == "Failed" and p, 10, what="the pod Failed")
    term = gone["status"]["containerStatuses"][0]["state"]["terminated"]
    assert (term["exitCode"], term["reason"]) == (137, "ContainerStatusUnknown")
    s.request("PATCH", "/api/v1/namespaces/default/pods/pending", {"metadata": {"finalizers": None}},
              content_type="application/merge-patch+json")
    wait_for(lambda: _get(s, "/api/v1/namespaces/default/pods/pending") is None, what="the pod gone")


def _ts(value: str) -> float:
    return datetime.strptime(value, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=timezone.utc).timestamp()


def test_shorter_grace_period_moves_deletion_timestamp_back(server):
    name = "grace-" + uuid.uuid4().hex[:6]
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
           "spec": {"nodeName": "nowhere", "terminationGracePeriodSeconds": 60,
                    "containers": [{"name": "c", "image": "pause"}]}}
    assert server.request("POST", "/api/v1/namespaces/default/pods", pod)[0] == 201
    code, _, first = server.request("DELETE", f"/api/v1/namespaces/default/pods/{name}")
    assert code == 200 and first["metadata"]["deletionGracePeriodSeconds"] == 60
    # A longer or equal grace period changes nothing.
    _, _, same = server.request("DELETE", f"/api/v1/namespaces/default/pods/{name}?gracePeriodSeconds=90")
    assert same["metadata"]["deletionTimestamp"] == first["metadata"]["deletionTimestamp"]
    _, _, shorter = server.request("DELETE", f"/api/v1/namespaces/default/pods/{name}?gracePeriodSeconds=15")
    assert shorter["metadata"]["deletionGracePeriodSeconds"] == 15
    assert _ts(first["metadata"]["deletionTimestamp"]) - _ts(shorter["metadata"]["deletionTimestamp"]) == 45
    assert server.request("DELETE", f"/api/v1/namespaces/default/pods/{name}?gracePeriodSeconds=0")[0] == 200
    assert server.request("GET", f"/api/v1/namespaces/default/pods/{name}")[0] == 404


@pytest.fixture
def podgc(tmp_path, starts_processes):
    """An API server and a controller manager whose pod GC runs every 0.3 s with a 1 s quarantine and whose
    node lifecycle controller calls a kubelet gone after 2 s without a Lease renewal."""
    s = start_server(str(tmp_path))
    cm = spawn([sys.executable, "-m", "dramock", "controller-manager", "--kubeconfig", s.kubeconfig,
                "--pod-gc-interval", "0.3", "--pod-gc-quarantine", "1", "--node-monitor-grace-period", "2"],
               str(tmp_path / "cm.log"))
    try:
        yield s
    finally:
        stop_process(cm)
        stop(s)


def _node(s: Server, name: str, ready: str, since: str, taints: list[dict] = ()) -> None:
    assert s.request("POST", "/api/v1/nodes", {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name},
                                               "spec": {"taints": list(taints)}})[0] == 201
    node = _get(s, f"/api/v1/nodes/{name}")
    node["status"] = {"conditions": [{"type": "Ready", "status": ready, "reason": "KubeletNotReady",
                                      "lastHeartbeatTime": since, "lastTransitionTime": since}]}
    code, _, body = s.request("PUT", f"/api/v1/nodes/{name}/status", node)
    assert code == 200, body


def _bound_pod(s: Server, name: str, node: str, tolerate: int | None = None,
               key: str = "node.kubernetes.io/not-ready") -> None:
    spec: dict = {"nodeName": node, "containers": [{"name": "c", "image": "pause"}]}
    if tolerate is not None:
        spec["tolerations"] = [{"key": key, "operator": "Exists", "effect": "NoExecute",
                                "tolerationSeconds": tolerate}]
    code, _, body = s.request("POST", "/api/v1/namespaces/default/pods", {
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "finalizers": [HOLD]}, "spec": spec})
    assert code == 201, body
    s.request("PATCH", f"/api/v1/namespaces/default/pods/{name}/status", {"status": {"phase": "Running"}},
              content_type="application/merge-patch+json")


def test_pod_gc_fails_and_deletes_pods_of_a_deleted_node(podgc):
    s = podgc
    _node(s, "doomed", "True", datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"))
    _bound_pod(s, "orphan", "doomed")
    assert s.request("DELETE", "/api/v1/nodes/doomed")[0] == 200
    pod = wait_for(lambda: (p := _get(s, "/api/v1/namespaces/default/pods/orphan"))
                   and p["metadata"].get("deletionTimestamp") and p, 10, what="the orphaned pod deleted")
    assert pod["metadata"]["deletionGracePeriodSeconds"] == 0
    assert pod["status"]["phase"] == "Failed"
    cond = {c["type"]: c for c in pod["status"]["conditions"]}["DisruptionTarget"]
    assert (cond["status"], cond["reason"], cond["message"]) == ("True", "DeletionByPodGC",
                                                                  "PodGC: node no longer exists")


def test_pods_on_a_long_notready_node_are_evicted(podgc):
    s = podgc
    _node(s, "sick", "False", "2020-01-01T00:00:00Z", taints=[{
        "key": "node.kubernetes.io/not-ready", "effect": "NoExecute", "timeAdded": "2020-01-01T00:00:00Z"}])
    _bound_pod(s, "default-toleration", "sick")  # DefaultTolerationSeconds: 300 s, long over
    _bound_pod(s, "patient", "sick", tolerate=10 ** 9)
    pod = wait_for(lambda: (p := _get(s, "/api/v1/namespaces/default/pods/default-toleration"))
                   and p["metadata"].get("deletionTimestamp") and p, 10, what="the pod evicted")
    cond = {c["type"]: c for c in pod["status"]["conditions"]}["DisruptionTarget"]
    assert cond["reason"] == "DeletionByTaintManager"
    assert pod["metadata"]["deletionGracePeriodSeconds"] == 30  # graceful: a dead kubelet never confirms
    assert not _get(s, "/api/v1/namespaces/default/pods/patient")["metadata"].get("deletionTimestamp")

    # Tainted out-of-service, the node's terminating pods are failed and force-deleted.
    node = _get(s, "/api/v1/nodes/sick")
    node["spec"]["taints"].append({"key": "node.kubernetes.io/out-of-service", "value": "nodeshutdown",
                                   "effect": "NoExecute"})
    assert s.request("PUT", "/api/v1/nodes/sick", node)[0] == 200
    pod = wait_for(lambda: (p := _get(s, "/api/v1/namespaces/default/pods/default-toleration"))
                   and p["metadata"].get("deletionGracePeriodSeconds") == 0 and p, 10, what="force-deleted")
    assert pod["status"]["phase"] == "Failed"


def test_kubectl_logs_show_devices_and_phase_changes(cluster):
    import subprocess

    from tests.conftest import KUBECTL

    s = cluster
    s.request("POST", "/apis/resource.k8s.io/v1/namespaces/default/resourceclaimtemplates", _template("log-t"))
    pod = _pod("logged", "log-t")
    pod["spec"]["containers"][0]["env"] = [{"name": "MODE", "value": "train"}]
    assert s.request("POST", "/api/v1/namespaces/default/pods", pod)[0] == 201
    _running(s, "logged")
    [claim] = wait_for(lambda: _claims_of(s, "logged"), what="the generated claim")
    device = claim["status"]["allocation"]["devices"]["results"][0]["device"]
    out = s.kubectl("logs", "logged").stdout.splitlines()
    assert "dramock: phase Running" in out
    assert f"dramock: CDI devices: gpu.example.com/gpu={device}" in out
    assert f"dramock: env GPU_DEVICE_{device.split('-')[1]}={device}" in out  # from the driver's CDI spec
    assert "dramock: env MODE=train" in out
    assert s.kubectl("logs", "logged", "--tail=1").stdout.splitlines() == [out[-1]]
    # Upstream's messages for a wrong container and for the subresources that need a process.
    bad = s.kubectl("logs", "logged", "-c", "nope", check=False)
    assert bad.returncode != 0 and "container nope is not valid for pod logged" in bad.stderr
    ex = s.kubectl("exec", "logged", "--", "nvidia-smi", check=False)
    assert ex.returncode != 0 and "dramock runs no containers" in ex.stderr

    follow = subprocess.Popen([KUBECTL, "--kubeconfig", s.kubeconfig, "logs", "-f", "logged"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        first = follow.stdout.readline()  # following: what was there is sent at once
        assert first.startswith("dramock: container c of pod default/logged started")
        assert s.request("DELETE", "/api/v1/namespaces/default/pods/logged")[0] == 200
        stdout, _ = follow.communicate(timeout=30)  # ends when the container does
    finally:
        if follow.poll() is None:
            follow.kill()
            follow.wait()
    assert stdout.splitlines()[-1] == "dramock: terminated on deletion (SIGTERM): exit code 0, phase Succeeded"


def test_node_without_lease_renewals_becomes_unknown_and_tainted(podgc):
    s = podgc
    _node(s, "silent", "True", "2020-01-01T00:00:00Z")
    code, _, body = s.request("POST", "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases", {
        "apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": {"name": "silent"},
        "spec": {"holderIdentity": "silent", "leaseDurationSeconds": 40, "renewTime": "2020-01-01T00:00:00.000000Z"}})
    assert code == 201, body
    _bound_pod(s, "short", "silent", tolerate=1, key="node.kubernetes.io/unreachable")
    _bound_pod(s, "long", "silent")  # DefaultTolerationSeconds: 300 s
    node = wait_for(lambda: (n := _get(s, "/api/v1/nodes/silent")) and (n.get("spec") or {}).get("taints") and n,
                    20, what="the unreachable taint")
    ready = {c["type"]: c for c in node["status"]["conditions"]}["Ready"]
    assert (ready["status"], ready["reason"], ready["message"]) == ("Unknown", "NodeStatusUnknown",
                                                                    "Kubelet stopped posting node status.")
    [taint] = node["spec"]["taints"]
    assert (taint["key"], taint["effect"]) == ("node.kubernetes.io/unreachable", "NoExecute") and taint["timeAdded"]
    pod = wait_for(lambda: (p := _get(s, "/api/v1/namespaces/default/pods/short"))
                   and p["metadata"].get("deletionTimestamp") and p, 20, what="the short-tolerating pod evicted")
    assert {c["type"]: c for c in pod["status"]["conditions"]}["DisruptionTarget"]["reason"] == \
        "DeletionByTaintManager"
    assert not _get(s, "/api/v1/namespaces/default/pods/long")["metadata"].get("deletionTimestamp")
    # The kubelet is back (Lease renewed, Ready posted): the taint goes.
    lease = _get(s, "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/silent")
    lease["spec"]["renewTime"] = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    assert s.request("PUT", "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/silent", lease)[0] == 200
    stamp = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    node = _get(s, "/api/v1/nodes/silent")
    node["status"]["conditions"] = [{"type": "Ready", "status": "True", "reason": "KubeletReady",
                                     "message": "kubelet is posting ready status",
                                     "lastHeartbeatTime": stamp, "lastTransitionTime": stamp}]
    assert s.request("PUT", "/api/v1/nodes/silent/status", node)[0] == 200
    wait_for(lambda: not (_get(s, "/api/v1/nodes/silent").get("spec") or {}).get("taints"), 20,
             what="the taint removed")
