"""The scheduler end to end: a real `serve --nodes 2` process (controllers, two kubelet shims with 8 example GPUs
each) and the scheduler loop as an API client in a thread of the test process.

Uses the real structured-parameters allocator (`dramock.scheduler.allocator`) when it is there, otherwise (or with
DRAMOCK_TEST_FAKE_ALLOCATOR=1) a small fake that hands out free devices of the node's slices.
"""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import Iterator
from fractions import Fraction

import pytest

from dramock.client.rest import APIStatusError, Client
from dramock.scheduler import framework, scheduler
from dramock.scheduler.plugins import nodefit
from dramock.scheduler.types import AllocationInput, AllocationOutcome
from tests.helpers import Server, create, get, make_ns, node_cluster, wait_for

FINALIZER = "resource.kubernetes.io/delete-protection"
CLASS = "gpu.example.com"


def fake_allocate(inp: AllocationInput) -> AllocationOutcome:
    """Devices of the node's slices that no allocated or in-flight claim uses, one per request (count)."""
    used = inp.allocated_devices.exclusive if inp.allocated_devices is not None else {
        (r["driver"], r["pool"], r["device"]) for c in inp.allocated + inp.in_flight
        for r in ((c.get("status") or {}).get("allocation") or {}).get("devices", {}).get("results", [])}
    node = inp.node["metadata"]["name"] if inp.node else None
    free = [(s["spec"]["driver"], s["spec"]["pool"]["name"], d["name"])
            for s in inp.slices if s["spec"].get("nodeName") == node for d in s["spec"].get("devices") or []]
    free = [d for d in free if d not in used]
    out = []
    for claim in inp.claims:
        results = []
        for req in claim["spec"]["devices"]["requests"]:
            for _ in range(int((req.get("exactly") or {}).get("count", 1))):
                if not free:
                    return AllocationOutcome(reason="cannot allocate all claims")
                drv, pool, dev = free.pop(0)
                results.append({"request": req["name"], "driver": drv, "pool": pool, "device": dev})
        out.append({"devices": {"results": results},
                    "nodeSelector": {"nodeSelectorTerms": [{"matchFields": [
                        {"key": "metadata.name", "operator": "In", "values": [node]}]}]}})
    return AllocationOutcome(allocations=out)


def _allocator():
    if os.environ.get("DRAMOCK_TEST_FAKE_ALLOCATOR"):
        return fake_allocate
    try:
        from dramock.scheduler.allocator import allocate
    except ImportError:
        return fake_allocate
    return allocate


class SchedulerThread:
    """The scheduler in its own event loop and thread."""

    def __init__(self, url: str, make=None):
        self.url = url
        self.make = make  # (Client) -> Scheduler, instead of run_scheduler's default one
        self.loop = asyncio.new_event_loop()
        self.stop_event: asyncio.Event | None = None
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.error: BaseException | None = None

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)

        async def main() -> None:
            self.stop_event = asyncio.Event()
            if self.make is None:
                await scheduler.run_scheduler(self.url, self.stop_event, allocate=_allocator())
                return
            client = Client(self.url, "test-scheduler")
            try:
                await self.make(client).run(self.stop_event)
            finally:
                await client.close()

        try:
            self.loop.run_until_complete(main())
        except BaseException as e:  # noqa: BLE001 - reported by the test
            self.error = e

    def start(self) -> SchedulerThread:
        self.thread.start()
        return self

    def close(self) -> None:
        if self.stop_event is not None:
            self.loop.call_soon_threadsafe(self.stop_event.set)
        self.thread.join(timeout=15)


@pytest.fixture(scope="module")
def cluster(starts_processes) -> Iterator[Server]:
    with node_cluster("dramock-sch-") as s:
        yield s


@pytest.fixture
def ns(cluster: Server) -> str:
    return make_ns(cluster, "sch")


def template(ns: str, name: str = "gpu") -> dict:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
            "metadata": {"name": name, "namespace": ns},
            "spec": {"spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": CLASS}}]}}}}


def claim(ns: str, name: str) -> dict:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": {"name": name, "namespace": ns},
            "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": CLASS}}]}}}


def pod(ns: str, name: str, claims: list[dict] | None = None, **spec_extra) -> dict:
    claims = claims or []
    spec: dict = {"containers": [{"name": "c", "image": "busybox",
                                  "resources": {"claims": [{"name": c["name"]} for c in claims]}}],
                  **spec_extra}
    if claims:
        spec["resourceClaims"] = claims
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": ns}, "spec": spec}


def get_pod(s: Server, ns: str, name: str) -> dict | None:
    return get(s, f"/api/v1/namespaces/{ns}/pods/{name}")


def node_of(s: Server, ns: str, name: str) -> str | None:
    p = get_pod(s, ns, name)
    return (p or {}).get("spec", {}).get("nodeName")


def events(s: Server, ns: str, pod_name: str, reason: str | None = None) -> list[dict]:
    items = get(s, f"/api/v1/namespaces/{ns}/events")["items"]
    return [e for e in items if e["involvedObject"].get("name") == pod_name and (reason is None or
                                                                                e["reason"] == reason)]


def pod_claim(s: Server, ns: str, pod_name: str, pod_claim_name: str = "gpu") -> dict | None:
    p = get_pod(s, ns, pod_name)
    for st in (p or {}).get("status", {}).get("resourceClaimStatuses") or []:
        if st["name"] == pod_claim_name and st.get("resourceClaimName"):
            return get(s, f"/apis/resource.k8s.io/v1/namespaces/{ns}/resourceclaims/{st['resourceClaimName']}")
    return None


# ---------------------------------------------------------------- pure helpers


def test_fit_error_message_is_upstreams():
    from collections import Counter

    msg = framework.fit_error_message(3, Counter({"cannot allocate all claims": 2, nodefit.MSG_NODE_AFFINITY: 1}))
    assert msg == "0/3 nodes are available: 1 node(s) didn't match Pod's node affinity/selector, " \
                  "2 cannot allocate all claims."
    assert framework.fit_error_message(0, Counter()) == "no nodes available to schedule pods"


def test_node_affinity_and_taints():
    node = {"metadata": {"name": "node-1", "labels": {"zone": "a", "gpus": "8"}},
            "spec": {"taints": [{"key": "dedicated", "value": "ml", "effect": "NoSchedule"}]}}

    def aff(*terms):
        return {"spec": {"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": list(terms)}}}}}

    assert nodefit.matches_node_affinity(aff({"matchExpressions": [{"key": "zone", "operator": "In",
                                                                  "values": ["a"]}]}), node)
    assert not nodefit.matches_node_affinity(aff({"matchExpressions": [{"key": "zone", "operator": "NotIn",
                                                                      "values": ["a"]}]}), node)
    assert nodefit.matches_node_affinity(aff({"matchExpressions": [{"key": "gpus", "operator": "Gt", "values": ["4"]},
                                                                 {"key": "x", "operator": "DoesNotExist"}]}), node)
    assert not nodefit.matches_node_affinity(aff({"matchExpressions": [{"key": "gpus", "operator": "Lt",
                                                                      "values": ["4"]}]}), node)
    # Terms are ORed; matchFields only knows metadata.name.
    assert nodefit.matches_node_affinity(aff({"matchExpressions": [{"key": "zone", "operator": "In", "values": ["b"]}]},
                                          {"matchFields": [{"key": "metadata.name", "operator": "In",
                                                            "values": ["node-1"]}]}), node)
    assert not nodefit.matches_node_affinity(aff({}), node)  # an empty term matches nothing
    assert not nodefit.matches_node_affinity({"spec": {"nodeSelector": {"zone": "b"}}}, node)
    assert nodefit.untolerated_taint({"spec": {}}, node)["key"] == "dedicated"
    assert nodefit.untolerated_taint({"spec": {"tolerations": [{"key": "dedicated", "value": "ml"}]}}, node) is None
    assert nodefit.untolerated_taint({"spec": {"tolerations": [{"operator": "Exists"}]}}, node) is None
    assert nodefit.untolerated_taint({"spec": {"tolerations": [{"key": "dedicated", "value": "x"}]}}, node)


def test_pod_requests():
    p = {"spec": {"containers": [{"resources": {"requests": {"cpu": "500m", "memory": "1Gi"}}},
                                 {"resources": {"limits": {"cpu": "1"}}}],
                  "initContainers": [{"resources": {"requests": {"cpu": "3"}}}],
                  "overhead": {"memory": "100Mi"}}}
    r = nodefit.pod_requests(p)
    assert r["cpu"] == Fraction(3)
    assert r["memory"] == Fraction(1024 ** 3 + 100 * 1024 ** 2)


# ---------------------------------------------------------------- end to end


def test_template_claim_is_allocated_reserved_and_pod_runs(cluster: Server, ns: str):
    create(cluster, f"/apis/resource.k8s.io/v1/namespaces/{ns}/resourceclaimtemplates", template(ns))
    create(cluster, f"/api/v1/namespaces/{ns}/pods",
           pod(ns, "p", [{"name": "gpu", "resourceClaimTemplateName": "gpu"}]))
    node = wait_for(lambda: node_of(cluster, ns, "p"), 30, what="pod bound")
    assert node in ("node-1", "node-2")
    c = pod_claim(cluster, ns, "p")
    assert c is not None
    results = c["status"]["allocation"]["devices"]["results"]
    assert len(results) == 1
    assert results[0]["driver"] == CLASS and results[0]["pool"] == node and results[0]["device"].startswith("gpu-")
    assert results[0]["request"] == "gpu"
    uid = get_pod(cluster, ns, "p")["metadata"]["uid"]
    assert c["status"]["reservedFor"] == [{"resource": "pods", "name": "p", "uid": uid}]
    assert FINALIZER in c["metadata"]["finalizers"]
    wait_for(lambda: get_pod(cluster, ns, "p")["status"].get("phase") == "Running", 30, what="pod running")
    ev = wait_for(lambda: events(cluster, ns, "p", "Scheduled"), 10, what="Scheduled event")
    assert ev[0]["type"] == "Normal"
    assert ev[0]["message"] == f"Successfully assigned {ns}/p to {node}"
    # Written as events.k8s.io/v1, as kube-scheduler does: no deprecated source, reporting fields instead.
    assert not (ev[0].get("source") or {}).get("component")
    assert ev[0]["reportingComponent"] == "default-scheduler"
    assert ev[0]["reportingInstance"].startswith("default-scheduler-") and ev[0]["action"] == "Binding"
    conds = {c["type"]: c for c in get_pod(cluster, ns, "p")["status"]["conditions"]}
    assert conds["PodScheduled"]["status"] == "True"


def test_shared_claim_lands_on_one_node(cluster: Server, ns: str):
    create(cluster, f"/apis/resource.k8s.io/v1/namespaces/{ns}/resourceclaims", claim(ns, "shared"))
    for name in ("a", "b"):
        create(cluster, f"/api/v1/namespaces/{ns}/pods", pod(ns, name, [{"name": "gpu",
                                                                         "resourceClaimName": "shared"}]))
    na = wait_for(lambda: node_of(cluster, ns, "a"), 30, what="pod a bound")
    nb = wait_for(lambda: node_of(cluster, ns, "b"), 30, what="pod b bound")
    assert na == nb
    c = get(cluster, f"/apis/resource.k8s.io/v1/namespaces/{ns}/resourceclaims/shared")
    assert {r["name"] for r in c["status"]["reservedFor"]} == {"a", "b"}
    assert len(c["status"]["allocation"]["devices"]["results"]) == 1
    assert FINALIZER in c["metadata"]["finalizers"]
    for name in ("a", "b"):
        wait_for(lambda n=name: get_pod(cluster, ns, n)["status"].get("phase") == "Running", 30,
                 what=f"pod {name} running")


def test_unmatched_node_selector_stays_pending(cluster: Server, ns: str):
    create(cluster, f"/api/v1/namespaces/{ns}/pods", pod(ns, "nowhere", nodeSelector={"zone": "mars"}))
    ev = wait_for(lambda: events(cluster, ns, "nowhere", "FailedScheduling"), 20, what="FailedScheduling")
    assert ev[0]["type"] == "Warning"
    assert ev[0]["message"] == "0/2 nodes are available: 2 node(s) didn't match Pod's node affinity/selector."
    assert ev[0]["reportingComponent"] == "default-scheduler" and ev[0]["action"] == "Scheduling"

    def condition():
        conds = {c["type"]: c for c in get_pod(cluster, ns, "nowhere")["status"].get("conditions") or []}
        return conds.get("PodScheduled")

    cond = wait_for(condition, 10, what="PodScheduled condition")
    assert cond["status"] == "False" and cond["reason"] == "Unschedulable"
    assert cond["message"] == ev[0]["message"]
    assert not node_of(cluster, ns, "nowhere")
    # Labelling a node is a cluster event: the pod schedules there.
    code, _, body = cluster.request("PATCH", "/api/v1/nodes/node-2", {"metadata": {"labels": {"zone": "mars"}}},
                                    content_type="application/merge-patch+json")
    assert code == 200, body
    assert wait_for(lambda: node_of(cluster, ns, "nowhere"), 20, what="pod bound after label") == "node-2"


def test_cpu_and_taints_filter_nodes(cluster: Server, ns: str):
    create(cluster, f"/api/v1/namespaces/{ns}/pods",
           pod(ns, "huge", containers=[{"name": "c", "image": "x", "resources": {"requests": {"cpu": "100"}}}]))
    ev = wait_for(lambda: events(cluster, ns, "huge", "FailedScheduling"), 20, what="FailedScheduling")
    assert ev[0]["message"] == "0/2 nodes are available: 2 Insufficient cpu."
    create(cluster, f"/api/v1/namespaces/{ns}/pods",
           pod(ns, "aff", affinity={"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
               "nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In",
                                                       "values": ["node-1"]}]}]}}}))
    assert wait_for(lambda: node_of(cluster, ns, "aff"), 20, what="affinity pod bound") == "node-1"


def test_prebound_and_foreign_pods_are_left_alone(cluster: Server, ns: str):
    create(cluster, f"/api/v1/namespaces/{ns}/pods", pod(ns, "prebound", nodeName="node-1"))
    create(cluster, f"/api/v1/namespaces/{ns}/pods", pod(ns, "foreign", schedulerName="other-scheduler"))
    create(cluster, f"/api/v1/namespaces/{ns}/pods", pod(ns, "sentinel"))
    wait_for(lambda: events(cluster, ns, "sentinel", "Scheduled"), 20, what="sentinel scheduled")
    assert not events(cluster, ns, "prebound") or all(e.get("reportingComponent") != "default-scheduler"
                                                      for e in events(cluster, ns, "prebound"))
    assert not events(cluster, ns, "foreign")
    assert node_of(cluster, ns, "foreign") is None
    assert node_of(cluster, ns, "prebound") == "node-1"


@pytest.mark.e2e
def test_seventeen_gpus_on_sixteen():
    with node_cluster("dramock-sch-") as s:
        ns = make_ns(s, "sch")
        create(s, f"/apis/resource.k8s.io/v1/namespaces/{ns}/resourceclaimtemplates", template(ns))
        names = [f"p{i:02d}" for i in range(17)]
        for n in names:
            create(s, f"/api/v1/namespaces/{ns}/pods",
                   pod(ns, n, [{"name": "gpu", "resourceClaimTemplateName": "gpu"}]))

        def bound():
            items = get(s, f"/api/v1/namespaces/{ns}/pods")["items"]
            return [p for p in items if p["spec"].get("nodeName")]

        wait_for(lambda: len(bound()) == 16, 60, what="16 pods bound")
        pending = [n for n in names if not node_of(s, ns, n)]
        assert len(pending) == 1
        last = pending[0]
        ev = wait_for(lambda: events(s, ns, last, "FailedScheduling"), 20, what="FailedScheduling")
        assert ev[-1]["message"] == "0/2 nodes are available: 2 cannot allocate all claims."
        per_node: dict[str, set[str]] = {}
        for p in bound():
            c = pod_claim(s, ns, p["metadata"]["name"])
            for r in c["status"]["allocation"]["devices"]["results"]:
                assert r["pool"] == p["spec"]["nodeName"]
                per_node.setdefault(r["pool"], set()).add(r["device"])
        assert {k: len(v) for k, v in per_node.items()} == {"node-1": 8, "node-2": 8}
        victim = next(n for n in names if n != last)
        code, _, body = s.request("DELETE", f"/api/v1/namespaces/{ns}/pods/{victim}")
        assert code in (200, 202), body  # graceful: the kubelet finishes the deletion
        assert wait_for(lambda: node_of(s, ns, last), 60, what="17th pod bound after a delete")
        wait_for(lambda: get_pod(s, ns, last)["status"].get("phase") == "Running", 30, what="17th pod running")


def flaky_scheduler(name: str, failures: list[str], created: list[str] | None = None):
    """A scheduler factory for SchedulerThread whose client fails the first pods/binding with a 500 (recorded in
    `failures`); the names of the claims it creates go to `created`."""
    def make(client: Client) -> scheduler.Scheduler:
        real = client.request

        async def request(method, path, body=None, params=None, content_type="application/json"):
            if path.endswith("/binding") and not failures:
                failures.append(path)
                raise APIStatusError(500, {"kind": "Status", "reason": "InternalError", "message": "injected"})
            out = await real(method, path, body, params, content_type)
            if created is not None and method == "POST" and path.endswith("/resourceclaims"):
                created.append(out["metadata"]["name"])
            return out

        client.request = request  # type: ignore[method-assign]
        return scheduler.Scheduler(client, allocate=_allocator(), scheduler_name=name)
    return make


def test_binding_failure_is_undone_and_retried(cluster: Server, ns: str):
    """A second scheduler (schedulerName flaky-scheduler) whose first binding fails: the claim is unreserved and
    deallocated, then the pod is retried with backoff and bound."""
    failures: list[str] = []
    sched = SchedulerThread(cluster.url, flaky_scheduler("flaky-scheduler", failures)).start()
    try:
        create(cluster, f"/apis/resource.k8s.io/v1/namespaces/{ns}/resourceclaims", claim(ns, "c"))
        create(cluster, f"/api/v1/namespaces/{ns}/pods",
               pod(ns, "flaky", [{"name": "gpu", "resourceClaimName": "c"}], schedulerName="flaky-scheduler"))
        ev = wait_for(lambda: events(cluster, ns, "flaky", "FailedScheduling"), 20, what="binding failure event")
        assert "injected" in ev[0]["message"]
        assert ev[0]["reportingComponent"] == "flaky-scheduler"
        node = wait_for(lambda: node_of(cluster, ns, "flaky"), 30, what="pod bound on retry")
        c = get(cluster, f"/apis/resource.k8s.io/v1/namespaces/{ns}/resourceclaims/c")
        assert [r["name"] for r in c["status"]["reservedFor"]] == ["flaky"]
        assert c["status"]["allocation"]["devices"]["results"][0]["pool"] == node
        assert failures
    finally:
        sched.close()
    assert sched.error is None


def test_post_filter_deallocates_a_claim_allocated_elsewhere(cluster: Server, ns: str):
    """A claim allocated on node-2 and reserved for nobody, used by a pod that must run on node-1: the first
    attempt finds the claim unavailable on node-1 (and node-2 ruled out by the selector), PostFilter deallocates
    the claim, and the next attempt allocates it on node-1 and binds there."""
    base = f"/apis/resource.k8s.io/v1/namespaces/{ns}/resourceclaims"
    c = create(cluster, base, claim(ns, "moved"))
    c["status"] = {"allocation": {
        "devices": {"results": [{"request": "gpu", "driver": CLASS, "pool": "node-2", "device": "gpu-7"}]},
        "nodeSelector": {"nodeSelectorTerms": [{"matchFields": [
            {"key": "metadata.name", "operator": "In", "values": ["node-2"]}]}]}}}
    code, _, body = cluster.request("PUT", f"{base}/moved/status", c)
    assert code == 200, body
    create(cluster, f"/api/v1/namespaces/{ns}/pods",
           pod(ns, "pinned", [{"name": "gpu", "resourceClaimName": "moved"}],
               nodeSelector={"kubernetes.io/hostname": "node-1"}))
    assert wait_for(lambda: node_of(cluster, ns, "pinned"), 30, what="pinned bound") == "node-1"
    ev = events(cluster, ns, "pinned", "FailedScheduling")
    assert ev and ev[0]["message"] == ("0/2 nodes are available: 1 node(s) didn't match Pod's node "
                                       "affinity/selector, 1 resourceclaim not available on the node."), ev
    got = get(cluster, f"{base}/moved")["status"]
    [r] = got["allocation"]["devices"]["results"]
    assert (r["pool"], r["driver"]) == ("node-1", CLASS)
    assert [x["name"] for x in got["reservedFor"]] == ["pinned"]


def test_post_filter_leaves_a_claim_in_use_alone(cluster: Server, ns: str):
    """The same, but the claim is reserved for a running pod on node-2: nothing is deallocated and the pinned
    pod stays Unschedulable."""
    base = f"/apis/resource.k8s.io/v1/namespaces/{ns}/resourceclaims"
    create(cluster, base, claim(ns, "busy"))
    create(cluster, f"/api/v1/namespaces/{ns}/pods",
           pod(ns, "user", [{"name": "gpu", "resourceClaimName": "busy"}],
               nodeSelector={"kubernetes.io/hostname": "node-2"}))
    assert wait_for(lambda: node_of(cluster, ns, "user"), 30, what="user bound") == "node-2"
    before = get(cluster, f"{base}/busy")["status"]["allocation"]
    create(cluster, f"/api/v1/namespaces/{ns}/pods",
           pod(ns, "pinned", [{"name": "gpu", "resourceClaimName": "busy"}],
               nodeSelector={"kubernetes.io/hostname": "node-1"}))
    ev = wait_for(lambda: events(cluster, ns, "pinned", "FailedScheduling"), 30, what="FailedScheduling")
    assert ev[0]["message"] == ("0/2 nodes are available: 1 node(s) didn't match Pod's node "
                                "affinity/selector, 1 resourceclaim not available on the node."), ev
    got = get(cluster, f"{base}/busy")["status"]
    assert got["allocation"] == before and [x["name"] for x in got["reservedFor"]] == ["user"]
    assert node_of(cluster, ns, "pinned") is None


def test_node_changes_reach_the_next_pod_of_the_same_shape(cluster: Server, ns: str):
    """The scheduler remembers per-node verdicts for pods of one shape; a node change (here a NoSchedule taint,
    then its removal) must reach the very next pod of that shape."""
    create(cluster, f"/apis/resource.k8s.io/v1/namespaces/{ns}/resourceclaimtemplates", template(ns))
    pinned = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["node-1"]}]}]}}}

    def same_shape(name: str) -> dict:
        return pod(ns, name, [{"name": "gpu", "resourceClaimTemplateName": "gpu"}], affinity=pinned)

    def set_taints(taints: list | None) -> None:
        code, _, body = cluster.request("PATCH", "/api/v1/nodes/node-1", {"spec": {"taints": taints}},
                                        content_type="application/merge-patch+json")
        assert code == 200, body

    create(cluster, f"/api/v1/namespaces/{ns}/pods", same_shape("first"))
    assert wait_for(lambda: node_of(cluster, ns, "first"), 30, what="first bound") == "node-1"
    set_taints([{"key": "maintenance", "value": "now", "effect": "NoSchedule"}])
    try:
        create(cluster, f"/api/v1/namespaces/{ns}/pods", same_shape("second"))
        ev = wait_for(lambda: events(cluster, ns, "second", "FailedScheduling"), 30, what="FailedScheduling")
        assert ev[0]["message"] == ("0/2 nodes are available: 1 node(s) didn't match Pod's node affinity/selector, "
                                    "1 node(s) had untolerated taint {maintenance: now}."), ev
        assert node_of(cluster, ns, "second") is None
    finally:
        set_taints(None)
    assert wait_for(lambda: node_of(cluster, ns, "second"), 30, what="second bound once untainted") == "node-1"
