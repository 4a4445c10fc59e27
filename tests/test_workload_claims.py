"""DRAWorkloadResourceClaims (KEP-5729, beta and off in 1.37): claims for a group of pods, end to end through
`dramock serve` (API server, controller manager, scheduler, two kubelet shims with the example driver).

With GenericWorkload, `--runtime-config scheduling.k8s.io/v1beta1=true` and the gate on, a PodGroup's
`spec.resourceClaims` entry made from a template gets one ResourceClaim for the whole group: the controller
manager creates it (owned by the PodGroup, recorded in its `status.resourceClaimStatuses`), the pods of the
group whose claim matches the group's use it (their status names it, none gets its own), the scheduler
allocates it once and reserves it for the PodGroup, and the kubelets run every pod of the group with it. It is
released and deleted with the PodGroup. With the gate off the field is dropped and each pod gets its own claim.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.helpers import R, Server, create, get, make_ns, node_cluster, results, wait_for

S = "/apis/scheduling.k8s.io/v1beta1"
V1BETA1 = ("--runtime-config", "scheduling.k8s.io/v1beta1=true")
GATES_ON = ("--feature-gates", "GenericWorkload=true,DRAWorkloadResourceClaims=true")
GATES_OFF = ("--feature-gates", "GenericWorkload=true")


@pytest.fixture(scope="module")
def cluster_on(starts_processes) -> Iterator[Server]:
    with node_cluster("dramock-wl-", *GATES_ON, *V1BETA1, grace=3) as s:
        yield s


@pytest.fixture(scope="module")
def cluster_off(starts_processes) -> Iterator[Server]:
    with node_cluster("dramock-wl-", *GATES_OFF, *V1BETA1, grace=3) as s:
        yield s


def _template(s: Server, ns: str) -> None:
    create(s, f"{R}/namespaces/{ns}/resourceclaimtemplates", {
        "metadata": {"name": "gpu"},
        "spec": {"spec": {"devices": {"requests": [
            {"name": "gpu", "exactly": {"deviceClassName": "gpu.example.com"}}]}}}})


def _pod_group(s: Server, ns: str, name: str, claims: list[dict]) -> dict:
    return create(s, f"{S}/namespaces/{ns}/podgroups", {
        "apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup", "metadata": {"name": name},
        "spec": {"schedulingPolicy": {"basic": {}}, "resourceClaims": claims}})


def _pod(s: Server, ns: str, name: str, group: str, claim: dict) -> dict:
    return create(s, f"/api/v1/namespaces/{ns}/pods", {
        "metadata": {"name": name},
        "spec": {"schedulingGroup": {"podGroupName": group},
                 "containers": [{"name": "c", "image": "busybox",
                                 "resources": {"claims": [{"name": claim["name"]}]}}],
                 "resourceClaims": [claim]}})


def _running(s: Server, ns: str, name: str) -> dict | None:
    pod = get(s, f"/api/v1/namespaces/{ns}/pods/{name}")
    return pod if pod and pod.get("status", {}).get("phase") == "Running" else None


def _claims(s: Server, ns: str) -> list[dict]:
    return s.request("GET", f"{R}/namespaces/{ns}/resourceclaims")[2]["items"]


GROUP_CLAIM = {"name": "gpu", "resourceClaimTemplateName": "gpu"}


@pytest.mark.e2e
def test_pods_of_a_group_share_the_claim_made_for_the_group(cluster_on):
    s = cluster_on
    ns = make_ns(s, "wl")
    _template(s, ns)
    group = _pod_group(s, ns, "trainers", [GROUP_CLAIM])
    gref = {"apiGroup": "scheduling.k8s.io", "resource": "podgroups", "name": "trainers",
            "uid": group["metadata"]["uid"]}

    # The controller manager makes one claim for the group, from the template, before any pod exists.
    statuses = wait_for(lambda: (get(s, f"{S}/namespaces/{ns}/podgroups/trainers").get("status") or {})
                        .get("resourceClaimStatuses"), 30, what="the PodGroup's claim status")
    assert [st["name"] for st in statuses] == ["gpu"]
    claim_name = statuses[0]["resourceClaimName"]
    assert claim_name.startswith("trainers-gpu-")
    claim = get(s, f"{R}/namespaces/{ns}/resourceclaims/{claim_name}")
    assert claim["metadata"]["ownerReferences"] == [{
        "apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup", "name": "trainers",
        "uid": group["metadata"]["uid"], "controller": True, "blockOwnerDeletion": True}]
    assert claim["metadata"]["annotations"]["resource.kubernetes.io/podgroup-claim-name"] == "gpu"
    assert claim["spec"]["devices"]["requests"][0]["exactly"]["deviceClassName"] == "gpu.example.com"

    for i in range(3):
        _pod(s, ns, f"worker-{i}", "trainers", GROUP_CLAIM)
    pods = [wait_for(lambda i=i: _running(s, ns, f"worker-{i}"), 60, what=f"worker-{i} running") for i in range(3)]

    # Every pod names the group's claim; none got a claim of its own.
    for pod in pods:
        assert pod["status"]["resourceClaimStatuses"] == [{"name": "gpu", "resourceClaimName": claim_name}]
    assert [c["metadata"]["name"] for c in _claims(s, ns)] == [claim_name]
    # One allocation (one GPU), reserved for the PodGroup, not for each pod; the pods share its node.
    claim = get(s, f"{R}/namespaces/{ns}/resourceclaims/{claim_name}")
    assert len(results(claim)) == 1
    assert claim["status"]["reservedFor"] == [gref]
    assert len({p["spec"]["nodeName"] for p in pods}) == 1
    assert "resource.kubernetes.io/delete-protection" in claim["metadata"]["finalizers"]

    # The pods going does not release the group's claim: the PodGroup still holds it.
    for i in range(3):
        assert s.request("DELETE", f"/api/v1/namespaces/{ns}/pods/worker-{i}?gracePeriodSeconds=0")[0] == 200
    wait_for(lambda: not s.request("GET", f"/api/v1/namespaces/{ns}/pods")[2]["items"], 60, what="pods gone")
    claim = get(s, f"{R}/namespaces/{ns}/resourceclaims/{claim_name}")
    assert claim["status"]["reservedFor"] == [gref] and results(claim)

    # The PodGroup going releases it (reservation removed, deallocated) and the garbage collector deletes it.
    assert s.request("DELETE", f"{S}/namespaces/{ns}/podgroups/trainers")[0] == 200
    wait_for(lambda: get(s, f"{R}/namespaces/{ns}/resourceclaims/{claim_name}") is None, 60,
             what="the group's claim deleted")


@pytest.mark.e2e
def test_a_pod_claim_that_differs_from_the_groups_is_the_pods_own(cluster_on):
    s = cluster_on
    ns = make_ns(s, "wl")
    _template(s, ns)
    _pod_group(s, ns, "g", [GROUP_CLAIM])
    group_claim = wait_for(lambda: ((get(s, f"{S}/namespaces/{ns}/podgroups/g").get("status") or {})
                                    .get("resourceClaimStatuses") or [{}])[0].get("resourceClaimName"),
                           30, what="the PodGroup's claim")
    own = {"name": "mine", "resourceClaimTemplateName": "gpu"}  # another name: not the group's claim
    pod = _pod(s, ns, "solo", "g", own)
    pod = wait_for(lambda: _running(s, ns, "solo"), 60, what="solo running")
    name = pod["status"]["resourceClaimStatuses"][0]["resourceClaimName"]
    assert name != group_claim and name.startswith("solo-mine-")
    claim = get(s, f"{R}/namespaces/{ns}/resourceclaims/{name}")
    assert claim["metadata"]["ownerReferences"][0]["kind"] == "Pod"
    assert claim["status"]["reservedFor"] == [{"resource": "pods", "name": "solo", "uid": pod["metadata"]["uid"]}]
    # The group's own claim is never allocated: no pod of the group uses it.
    assert not results(get(s, f"{R}/namespaces/{ns}/resourceclaims/{group_claim}"))


@pytest.mark.e2e
def test_workload_templates_keep_their_claims(cluster_on):
    s = cluster_on
    ns = make_ns(s, "wl")
    wl = create(s, f"{S}/namespaces/{ns}/workloads", {
        "apiVersion": "scheduling.k8s.io/v1beta1", "kind": "Workload", "metadata": {"name": "w"},
        "spec": {"podGroupTemplates": [{"name": "t", "schedulingPolicy": {"gang": {"minCount": 2}},
                                        "resourceClaims": [GROUP_CLAIM]}]}})
    assert wl["spec"]["podGroupTemplates"][0]["resourceClaims"] == [GROUP_CLAIM]
    code, _, body = s.request("POST", f"{S}/namespaces/{ns}/workloads", {
        "apiVersion": "scheduling.k8s.io/v1beta1", "kind": "Workload", "metadata": {"name": "bad"},
        "spec": {"podGroupTemplates": [{"name": "t", "schedulingPolicy": {"basic": {}},
                                        "resourceClaims": [{"name": "a"}] * 5}]}})
    assert code == 422, body
    fields = [c["field"] for c in body["details"]["causes"]]
    assert "spec.podGroupTemplates[0].resourceClaims" in fields  # too many (at most 4)


@pytest.mark.e2e
def test_gate_off_drops_the_group_claims_and_each_pod_gets_its_own(cluster_off):
    s = cluster_off
    ns = make_ns(s, "wl")
    _template(s, ns)
    group = _pod_group(s, ns, "trainers", [GROUP_CLAIM])
    assert "resourceClaims" not in group["spec"]  # dropped: the gate is off
    for i in range(2):
        _pod(s, ns, f"worker-{i}", "trainers", GROUP_CLAIM)
    pods = [wait_for(lambda i=i: _running(s, ns, f"worker-{i}"), 60, what=f"worker-{i} running") for i in range(2)]
    names = sorted(p["status"]["resourceClaimStatuses"][0]["resourceClaimName"] for p in pods)
    assert names[0] != names[1] and all(n.startswith("worker-") for n in names)
    for pod in pods:
        claim = get(s, f"{R}/namespaces/{ns}/resourceclaims/"
                       f"{pod['status']['resourceClaimStatuses'][0]['resourceClaimName']}")
        assert claim["status"]["reservedFor"] == [{"resource": "pods", "name": pod["metadata"]["name"],
                                                   "uid": pod["metadata"]["uid"]}]
    assert "status" not in get(s, f"{S}/namespaces/{ns}/podgroups/trainers") or \
        not get(s, f"{S}/namespaces/{ns}/podgroups/trainers")["status"].get("resourceClaimStatuses")


@pytest.mark.e2e
def test_a_pod_created_before_its_group_waits_for_the_groups_claim(cluster_on):
    s = cluster_on
    ns = make_ns(s, "wl")
    _template(s, ns)
    _pod(s, ns, "early", "late-group", GROUP_CLAIM)
    # No claim of its own while the PodGroup it names is missing: the group may share one. (A pod outside any
    # group, created after it, gets its claim and runs meanwhile.)
    create(s, f"/api/v1/namespaces/{ns}/pods", {
        "metadata": {"name": "witness"},
        "spec": {"containers": [{"name": "c", "image": "busybox", "resources": {"claims": [{"name": "gpu"}]}}],
                 "resourceClaims": [GROUP_CLAIM]}})
    wait_for(lambda: _running(s, ns, "witness"), 60, what="witness running")
    assert [c["metadata"]["ownerReferences"][0]["name"] for c in _claims(s, ns)] == ["witness"]
    assert _running(s, ns, "early") is None
    _pod_group(s, ns, "late-group", [GROUP_CLAIM])
    pod = wait_for(lambda: _running(s, ns, "early"), 60, what="early running")
    [claim] = [c for c in _claims(s, ns) if c["metadata"]["ownerReferences"][0]["kind"] == "PodGroup"]
    assert pod["status"]["resourceClaimStatuses"] == [{"name": "gpu", "resourceClaimName": claim["metadata"]["name"]}]
