"""KEP-5004 in the scheduler (extended resources backed by DRA), its metrics, and the FilterTimeout: a real
`serve --nodes 2` (8 example GPUs per node, its own scheduler) plus pure helper tests."""

from __future__ import annotations

import re
import time
import urllib.request
from collections.abc import Iterator

import pytest

from dramock.scheduler import framework, scheduler
from dramock.scheduler.plugins import extendedresources as extended
from dramock.scheduler.types import AllocationInput, AllocationOutcome
from tests.helpers import Server, create, get, make_ns, node_cluster, wait_for
from tests.test_scheduler import (
    FINALIZER,
    SchedulerThread,
    events,
    flaky_scheduler,
    get_pod,
    node_of,
)

ANNOTATION = "resource.kubernetes.io/extended-resource-claim"
GPU_EXT = {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": "gpu-ext"},
           "spec": {"extendedResourceName": "example.com/gpu",
                    "selectors": [{"cel": {"expression": 'device.driver == "gpu.example.com"'}}]}}


@pytest.fixture(scope="module")
def cluster(starts_processes) -> Iterator[Server]:
    with node_cluster("dramock-sch-ext-") as s:
        create(s, "/apis/resource.k8s.io/v1/deviceclasses", GPU_EXT)
        yield s


def gpu_pod(ns: str, name: str, n: int, resource: str = "example.com/gpu", **spec_extra) -> dict:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": ns},
            "spec": {"containers": [{"name": "c", "image": "busybox",
                                     "resources": {"requests": {resource: str(n)}, "limits": {resource: str(n)}}}],
                     **spec_extra}}


def special_claim(s: Server, ns: str, pod_name: str) -> dict | None:
    st = ((get_pod(s, ns, pod_name) or {}).get("status") or {}).get("extendedResourceClaimStatus")
    if not st:
        return None
    return get(s, f"/apis/resource.k8s.io/v1/namespaces/{ns}/resourceclaims/{st['resourceClaimName']}")


def claims_in(s: Server, ns: str) -> list[dict]:
    return get(s, f"/apis/resource.k8s.io/v1/namespaces/{ns}/resourceclaims")["items"]


def metric(s: Server, name: str, **labels: str) -> float | None:
    with urllib.request.urlopen(s.url + "/metrics") as r:
        text = r.read().decode()
    total = None
    for line in text.splitlines():
        if not line.startswith(name + "{") and not line.startswith(name + " "):
            continue
        got = dict(re.findall(r'(\w+)="([^"]*)"', line.split("}")[0])) if "{" in line else {}
        if all(got.get(k) == v for k, v in labels.items()):
            total = (total or 0.0) + float(line.rsplit(" ", 1)[1])
    return total


# ---------------------------------------------------------------- pure helpers


def test_requests_names_and_classes():
    classes = {"gpu-ext": GPU_EXT, "other": {"metadata": {"name": "other"}, "spec": {}}}
    p = {"metadata": {"name": "p"}, "spec": {
        "initContainers": [{"name": "init",
                            "resources": {"requests": {"deviceclass.resource.kubernetes.io/other": "1"}}}],
        "containers": [{"name": "a", "resources": {"requests": {"cpu": "1", "example.com/gpu": "2",
                                                                "deviceclass.resource.kubernetes.io/other": "1"}}},
                       {"name": "b", "resources": {"limits": {"example.com/gpu": "3"}}},
                       {"name": "c", "resources": {"requests": {"example.com/unknown": "1"}}}]}}
    reqs = extended.extended_requests(p, classes)
    assert [(r.container_name, r.resource_name, r.count, r.device_class, r.request_name) for r in reqs] == [
        ("init", "deviceclass.resource.kubernetes.io/other", 1, "other", "container-0-request-0"),
        ("a", "deviceclass.resource.kubernetes.io/other", 1, "other", "container-1-request-0"),
        ("a", "example.com/gpu", 2, "gpu-ext", "container-1-request-1"),
        ("b", "example.com/gpu", 3, "gpu-ext", "container-2-request-0")]
    node_with = {"metadata": {"name": "n"}, "status": {"allocatable": {"example.com/gpu": "8"}}}
    assert [r.resource_name for r in extended.dra_backed(reqs, node_with)] == [
        "deviceclass.resource.kubernetes.io/other"] * 2
    spec = extended.claim_spec(reqs[2:])
    assert spec["devices"]["requests"][0] == {"name": "container-1-request-1", "exactly": {
        "deviceClassName": "gpu-ext", "allocationMode": "ExactCount", "count": 2}}
    st = extended.claim_status("p-extended-resources-abcde", spec, reqs)
    assert st["requestMappings"] == [
        {"containerName": "a", "resourceName": "example.com/gpu", "requestName": "container-1-request-1"},
        {"containerName": "b", "resourceName": "example.com/gpu", "requestName": "container-2-request-0"}]


def _sched_with(allocate, classes: list[dict], nodes: list[dict]) -> scheduler.Scheduler:
    s = scheduler.Scheduler(client=None, allocate=allocate)  # type: ignore[arg-type]
    for inf, objs in ((s.classes, classes), (s.nodes, nodes)):
        for o in objs:
            m = o["metadata"]
            inf.cache[f"{m['namespace']}/{m['name']}" if m.get("namespace") else m["name"]] = o
    return s


def test_classic_fit_on_nodes_listing_the_resource_and_filter_timeout():
    """A node with example.com/gpu in allocatable is fitted the classic way (no DRA); a timed-out allocation
    makes the node unschedulable with upstream's message."""
    calls: list[AllocationInput] = []

    def timing_out(inp: AllocationInput) -> AllocationOutcome:
        calls.append(inp)
        assert inp.deadline is not None and inp.deadline > time.monotonic()
        return AllocationOutcome(timed_out=True, reason="timeout")

    nodes = [{"metadata": {"name": "dp"}, "status": {"allocatable": {"example.com/gpu": "4", "pods": "10"}}},
             {"metadata": {"name": "dra"}, "status": {"allocatable": {"pods": "10"}}}]
    s = _sched_with(timing_out, [GPU_EXT], nodes)
    p = {"metadata": {"name": "p", "namespace": "d", "uid": "u1"}, "spec": {"containers": [
        {"name": "c", "resources": {"requests": {"example.com/gpu": "2"}}}]}}
    node, allocs, special = s._find_node(p, [])  # noqa: SLF001
    assert (node, allocs, special) == ("dp", [], None)
    assert [i.node["metadata"]["name"] for i in calls] == ["dra"]  # only the DRA node allocates
    p["spec"]["containers"][0]["resources"]["requests"]["example.com/gpu"] = "5"
    with pytest.raises(framework.Unschedulable) as e:
        s._find_node(p, [])  # noqa: SLF001
    assert str(e.value) == "0/2 nodes are available: 1 Insufficient example.com/gpu, " \
                           "1 timed out trying to allocate devices."


def test_nodes_seeing_the_same_shared_slices_share_one_allocation():
    """Nodes without slices of their own whose labels the shared slices' selectors answer alike get one allocator
    run per cycle between them; a node with other labels, or with a slice of its own, gets its own."""
    from dramock.scheduler.allocator import allocate

    calls: list[str] = []

    def counting(inp: AllocationInput) -> AllocationOutcome:
        calls.append(inp.node["metadata"]["name"])
        return allocate(inp)

    def node(name: str, dra: str) -> dict:
        return {"metadata": {"name": name, "labels": {"dra": dra}}, "status": {"allocatable": {"pods": "10"}}}

    selector = {"nodeSelectorTerms": [{"matchExpressions": [{"key": "dra", "operator": "In", "values": ["yes"]}]}]}
    slices = [
        {"metadata": {"name": "shared", "uid": "s1", "resourceVersion": "1"},
         "spec": {"driver": "d", "pool": {"name": "shared", "generation": 1, "resourceSliceCount": 1},
                  "nodeSelector": selector, "devices": [{"name": "dev-0"}]}},
        {"metadata": {"name": "own", "uid": "s2", "resourceVersion": "1"},
         "spec": {"driver": "d", "pool": {"name": "n-4", "generation": 1, "resourceSliceCount": 1},
                  "nodeName": "n-4", "devices": [{"name": "local-0"}]}}]
    klass = {"metadata": {"name": "c"}, "spec": {"selectors": [{"cel": {"expression": 'device.driver == "d"'}}]}}
    s = _sched_with(counting, [klass], [node("n-1", "yes"), node("n-2", "yes"), node("n-3", "no"),
                                        node("n-4", "yes")])
    for sl in slices:
        s.slices.cache[sl["metadata"]["name"]] = sl
    claim = {"metadata": {"name": "c1", "namespace": "d", "uid": "cu1"},
             "spec": {"devices": {"requests": [{"name": "r", "exactly": {"deviceClassName": "c"}}]}}}
    p = {"metadata": {"name": "p", "namespace": "d", "uid": "u1"}, "spec": {"containers": [{"name": "c"}]}}
    name, allocs, _ = s._find_node(p, [claim])  # noqa: SLF001
    assert sorted(calls) == ["n-1", "n-3", "n-4"]  # n-2 shares n-1's outcome
    allocation = allocs[0][1]
    assert name in ("n-1", "n-2", "n-4") and len(allocation["devices"]["results"]) == 1
    if allocation["devices"]["results"][0]["pool"] == "shared":
        assert allocation["nodeSelector"] == selector
    else:
        assert name == "n-4"


# ---------------------------------------------------------------- end to end


def test_eight_gpus_via_extended_resource(cluster: Server):
    ns = make_ns(cluster, "sch")
    create(cluster, f"/api/v1/namespaces/{ns}/pods", gpu_pod(ns, "eight", 8))
    node = wait_for(lambda: node_of(cluster, ns, "eight"), 30, what="8-GPU pod bound")
    p = get_pod(cluster, ns, "eight")
    st = p["status"]["extendedResourceClaimStatus"]
    assert st["requestMappings"] == [{"containerName": "c", "resourceName": "example.com/gpu",
                                      "requestName": "container-0-request-0"}]
    c = special_claim(cluster, ns, "eight")
    assert c is not None
    assert c["metadata"]["name"].startswith("eight-extended-resources-")
    assert c["metadata"]["annotations"][ANNOTATION] == "true"
    assert c["metadata"]["ownerReferences"] == [{"apiVersion": "v1", "kind": "Pod", "name": "eight",
                                                 "uid": p["metadata"]["uid"], "controller": True,
                                                 "blockOwnerDeletion": True}]
    req = c["spec"]["devices"]["requests"][0]
    assert req["name"] == "container-0-request-0"
    assert req["exactly"]["deviceClassName"] == "gpu-ext" and req["exactly"]["count"] == 8
    results = c["status"]["allocation"]["devices"]["results"]
    assert len(results) == 8 and {r["pool"] for r in results} == {node}
    assert len({r["device"] for r in results}) == 8
    assert c["status"]["reservedFor"] == [{"resource": "pods", "name": "eight", "uid": p["metadata"]["uid"]}]
    assert FINALIZER in c["metadata"]["finalizers"]
    wait_for(lambda: get_pod(cluster, ns, "eight")["status"].get("phase") == "Running", 30, what="pod running")

    create(cluster, f"/api/v1/namespaces/{ns}/pods", gpu_pod(ns, "nine", 9))
    ev = wait_for(lambda: events(cluster, ns, "nine", "FailedScheduling"), 20, what="FailedScheduling")
    assert ev[0]["message"] == "0/2 nodes are available: 2 cannot allocate all claims."
    conds = {c["type"]: c for c in get_pod(cluster, ns, "nine")["status"].get("conditions") or []}
    assert conds["PodScheduled"]["reason"] == "Unschedulable"
    assert node_of(cluster, ns, "nine") is None
    assert [c["metadata"]["name"] for c in claims_in(cluster, ns)] == [c["metadata"]["name"]]

    # Metrics of the scheduler that `serve` runs, on the API server's /metrics.
    assert metric(cluster, "scheduler_schedule_attempts_total", result="scheduled", profile="default-scheduler") >= 1
    assert metric(cluster, "scheduler_schedule_attempts_total", result="unschedulable",
                  profile="default-scheduler") >= 1
    assert metric(cluster, "scheduler_resourceclaim_creates_total", status="success") >= 1
    for point in ("PreFilter", "Filter", "Reserve", "PreBind"):
        assert metric(cluster, "scheduler_plugin_execution_duration_seconds_count", plugin="DynamicResources",
                      extension_point=point) >= 1, point
    wait_for(lambda: metric(cluster, "scheduler_pending_pods", queue="unschedulable") == 1.0, 10,
             what="one unschedulable pod in scheduler_pending_pods")
    for q in ("active", "backoff", "gated"):
        assert metric(cluster, "scheduler_pending_pods", queue=q) is not None


def test_implicit_name_and_failed_binding_deletes_the_claim(cluster: Server):
    """`deviceclass.resource.kubernetes.io/gpu.example.com`, scheduled by a second scheduler whose first binding
    fails: the special claim is deleted and the pod status cleared, then a new claim is made on the retry."""
    ns = make_ns(cluster, "sch")
    failures: list[str] = []
    seen_claims: list[str] = []
    sched = SchedulerThread(cluster.url, flaky_scheduler("flaky-ext-scheduler", failures, seen_claims)).start()
    try:
        create(cluster, f"/api/v1/namespaces/{ns}/pods",
               gpu_pod(ns, "two", 2, "deviceclass.resource.kubernetes.io/gpu.example.com",
                       schedulerName="flaky-ext-scheduler"))
        ev = wait_for(lambda: events(cluster, ns, "two", "FailedScheduling"), 20, what="binding failure event")
        assert "injected" in ev[0]["message"]
        node = wait_for(lambda: node_of(cluster, ns, "two"), 30, what="pod bound on retry")
        assert len(seen_claims) == 2
        c = special_claim(cluster, ns, "two")
        assert c["metadata"]["name"] == seen_claims[1]
        assert c["spec"]["devices"]["requests"][0]["exactly"]["deviceClassName"] == "gpu.example.com"
        assert {r["pool"] for r in c["status"]["allocation"]["devices"]["results"]} == {node}
        wait_for(lambda: [x["metadata"]["name"] for x in claims_in(cluster, ns)] == [seen_claims[1]], 20,
                 what="the first special claim deleted")
    finally:
        sched.close()
    assert sched.error is None
