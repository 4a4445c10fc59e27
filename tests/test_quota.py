"""ResourceQuota: admission (check + atomic charge) and the quota controller, through a real `serve`.

Every test works in its own namespace of one shared server (started with the controllers, no nodes).
"""

from __future__ import annotations

import itertools
from concurrent.futures import ThreadPoolExecutor

import pytest

from dramock.registry.resource import resourceclaim as q
from tests.helpers import Server, start_server, stop, wait_for

RES = "/apis/resource.k8s.io/v1"
_ids = itertools.count()


@pytest.fixture(scope="module")
def srv(tmp_path_factory, starts_processes):
    s = start_server(str(tmp_path_factory.mktemp("quota")), "--nodes", "0", command="serve")
    yield s
    stop(s)


def _ns(srv: Server, labels: dict | None = None) -> str:
    name = f"quota-{next(_ids)}"
    code, _, body = srv.request("POST", "/api/v1/namespaces",
                                {"metadata": {"name": name, "labels": labels or {}}})
    assert code == 201, body
    return name


def _device_class(srv: Server, name: str, extended: str | None = None) -> None:
    spec = {"extendedResourceName": extended} if extended else {}
    code, _, body = srv.request("POST", f"{RES}/deviceclasses", {"metadata": {"name": name}, "spec": spec})
    assert code in (201, 409), body


def _quota(srv: Server, ns: str, hard: dict, name: str = "q", scopes: list | None = None,
           wait: bool = True) -> None:
    spec: dict = {"hard": hard}
    if scopes:
        spec["scopes"] = scopes
    code, _, body = srv.request("POST", f"/api/v1/namespaces/{ns}/resourcequotas",
                                {"metadata": {"name": name}, "spec": spec})
    assert code == 201, body
    if wait:
        wait_for(lambda: "used" in (_get_quota(srv, ns, name).get("status") or {}), what="quota status")


def _get_quota(srv: Server, ns: str, name: str = "q") -> dict:
    code, _, body = srv.request("GET", f"/api/v1/namespaces/{ns}/resourcequotas/{name}")
    assert code == 200, body
    return body


def _used(srv: Server, ns: str, name: str = "q") -> dict:
    return (_get_quota(srv, ns, name).get("status") or {}).get("used") or {}


def _wait_used(srv: Server, ns: str, expected: dict, name: str = "q") -> None:
    def check():
        used = _used(srv, ns, name)
        return all(q.Quantity.parse(str(used.get(k, "missing")) if k in used else "-1") ==
                   q.Quantity.parse(str(v)) for k, v in expected.items())
    try:
        wait_for(check, what=f"used {expected}")
    except AssertionError:
        raise AssertionError(f"used is {_used(srv, ns, name)}, expected {expected}") from None


def _claim_body(name: str, requests: list, annotations: dict | None = None, owner: dict | None = None) -> dict:
    meta: dict = {"name": name}
    if annotations:
        meta["annotations"] = annotations
    if owner:
        meta["ownerReferences"] = [owner]
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": meta,
            "spec": {"devices": {"requests": requests}}}


def _exact(name: str, cls: str, count: int | None = None, mode: str | None = None, admin: bool = False) -> dict:
    exactly: dict = {"deviceClassName": cls}
    if mode:
        exactly["allocationMode"] = mode
    if count is not None:
        exactly["count"] = count
    if admin:
        exactly["adminAccess"] = True
    return {"name": name, "exactly": exactly}


def _claim(srv: Server, ns: str, name: str, requests: list, **kw) -> tuple[int, dict]:
    code, _, body = srv.request("POST", f"{RES}/namespaces/{ns}/resourceclaims", _claim_body(name, requests, **kw))
    return code, body


def _pod_body(name: str, containers: list[dict], **spec) -> dict:
    cs = [{"name": f"c{i}", "image": "registry.k8s.io/pause:3.10", **c} for i, c in enumerate(containers)]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": {"containers": cs, **spec}}


def _pod(srv: Server, ns: str, name: str, containers: list[dict], **spec) -> tuple[int, dict]:
    code, _, body = srv.request("POST", f"/api/v1/namespaces/{ns}/pods", _pod_body(name, containers, **spec))
    return code, body


def _res(requests: dict | None = None, limits: dict | None = None) -> dict:
    r: dict = {}
    if requests:
        r["requests"] = requests
    if limits:
        r["limits"] = limits
    return {"resources": r}


def _delete(srv: Server, path: str) -> None:
    code, _, body = srv.request("DELETE", path)
    assert code in (200, 202), body


def _assert_forbidden(code: int, body: dict, message: str) -> None:
    assert code == 403, body
    assert body["reason"] == "Forbidden", body
    assert message in body["message"], body["message"]


# ---------------------------------------------------------------- claims


def test_claim_count_accept_reject_release(srv):
    ns = _ns(srv)
    _device_class(srv, "qgpu.example.com")
    _quota(srv, ns, {q.CLAIM_COUNT: "2"})
    assert _used(srv, ns) == {q.CLAIM_COUNT: "0"}
    for i in range(2):
        code, body = _claim(srv, ns, f"c{i}", [_exact("r", "qgpu.example.com")])
        assert code == 201, body
    assert _used(srv, ns)[q.CLAIM_COUNT] == "2"  # charged at admission, before any controller sync
    code, body = _claim(srv, ns, "c2", [_exact("r", "qgpu.example.com")])
    _assert_forbidden(code, body, f'resourceclaims.resource.k8s.io "c2" is forbidden: exceeded quota: q, '
                                  f"requested: {q.CLAIM_COUNT}=1, used: {q.CLAIM_COUNT}=2, "
                                  f"limited: {q.CLAIM_COUNT}=2")
    _delete(srv, f"{RES}/namespaces/{ns}/resourceclaims/c0")
    _wait_used(srv, ns, {q.CLAIM_COUNT: 1})
    code, body = _claim(srv, ns, "c2", [_exact("r", "qgpu.example.com")])
    assert code == 201, body


def test_devices_exact_count_and_all(srv):
    ns = _ns(srv)
    _device_class(srv, "qgpu.example.com")
    key = "qgpu.example.com" + q.DEVICES_SUFFIX
    _quota(srv, ns, {key: "40"})
    code, body = _claim(srv, ns, "three", [_exact("r", "qgpu.example.com", count=3)])
    assert code == 201, body
    assert _used(srv, ns) == {key: "3"}
    code, body = _claim(srv, ns, "all", [_exact("r", "qgpu.example.com", mode="All")])
    assert code == 201, body
    assert _used(srv, ns) == {key: "35"}  # All counts as 32
    code, body = _claim(srv, ns, "six", [_exact("a", "qgpu.example.com", count=3),
                                         _exact("b", "qgpu.example.com", count=3)])
    _assert_forbidden(code, body, f"exceeded quota: q, requested: {key}=6, used: {key}=35, limited: {key}=40")
    code, body = _claim(srv, ns, "five", [_exact("a", "qgpu.example.com", count=2),
                                          _exact("b", "qgpu.example.com", count=3)])
    assert code == 201, body
    assert _used(srv, ns) == {key: "40"}
    # Another class is not limited by this key.
    _device_class(srv, "qother.example.com")
    code, body = _claim(srv, ns, "other", [_exact("r", "qother.example.com", count=7)])
    assert code == 201, body
    _delete(srv, f"{RES}/namespaces/{ns}/resourceclaims/all")
    _wait_used(srv, ns, {key: 8})


def test_devices_prioritized_list_counts_worst_case_per_class(srv):
    ns = _ns(srv)
    _device_class(srv, "qgpu.example.com")
    _device_class(srv, "qother.example.com")
    gpu, other = "qgpu.example.com" + q.DEVICES_SUFFIX, "qother.example.com" + q.DEVICES_SUFFIX
    _quota(srv, ns, {gpu: "4", other: "32"})
    first = {"name": "r", "firstAvailable": [
        {"name": "big", "deviceClassName": "qgpu.example.com", "allocationMode": "ExactCount", "count": 4},
        {"name": "small", "deviceClassName": "qgpu.example.com", "allocationMode": "ExactCount", "count": 1},
        {"name": "any", "deviceClassName": "qother.example.com", "allocationMode": "All"},
    ]}
    code, _, body = srv.request("POST", f"{RES}/namespaces/{ns}/resourceclaims", _claim_body("p", [first]))
    assert code == 201, body
    assert _used(srv, ns) == {gpu: "4", other: "32"}
    code, body = _claim(srv, ns, "one-more", [_exact("r", "qgpu.example.com", count=1)])
    _assert_forbidden(code, body, f"requested: {gpu}=1, used: {gpu}=4, limited: {gpu}=4")


def test_admin_access_counts_and_needs_namespace_label(srv):
    _device_class(srv, "qgpu.example.com")
    key = "qgpu.example.com" + q.DEVICES_SUFFIX
    plain = _ns(srv)
    code, body = _claim(srv, plain, "admin", [_exact("r", "qgpu.example.com", admin=True)])
    assert code == 422, body
    assert "resource.kubernetes.io/admin-access" in body["message"]
    tmpl = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate", "metadata": {"name": "t"},
            "spec": {"spec": {"devices": {"requests": [_exact("r", "qgpu.example.com", admin=True)]}}}}
    code, _, body = srv.request("POST", f"{RES}/namespaces/{plain}/resourceclaimtemplates", tmpl)
    assert code == 422, body
    admin = _ns(srv, {"resource.kubernetes.io/admin-access": "true"})
    code, _, body = srv.request("POST", f"{RES}/namespaces/{admin}/resourceclaimtemplates", tmpl)
    assert code == 201, body
    # Requests asking for adminAccess contribute to the quota (KEP-5018 "ResourceQuota").
    _quota(srv, admin, {key: "1"})
    code, body = _claim(srv, admin, "admin", [_exact("r", "qgpu.example.com", admin=True)])
    assert code == 201, body
    assert _used(srv, admin) == {key: "1"}
    code, body = _claim(srv, admin, "admin2", [_exact("r", "qgpu.example.com", admin=True)])
    _assert_forbidden(code, body, f"exceeded quota: q, requested: {key}=1")


def test_count_of_claim_templates(srv):
    ns = _ns(srv)
    key = "count/resourceclaimtemplates.resource.k8s.io"
    _quota(srv, ns, {key: "1"})
    tmpl = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate", "metadata": {"name": "t1"},
            "spec": {"spec": {"devices": {"requests": [_exact("r", "qgpu.example.com")]}}}}
    code, _, body = srv.request("POST", f"{RES}/namespaces/{ns}/resourceclaimtemplates", tmpl)
    assert code == 201, body
    tmpl["metadata"]["name"] = "t2"
    code, _, body = srv.request("POST", f"{RES}/namespaces/{ns}/resourceclaimtemplates", tmpl)
    _assert_forbidden(code, body, f"exceeded quota: q, requested: {key}=1, used: {key}=1, limited: {key}=1")
    _delete(srv, f"{RES}/namespaces/{ns}/resourceclaimtemplates/t1")
    _wait_used(srv, ns, {key: 0})
    code, _, body = srv.request("POST", f"{RES}/namespaces/{ns}/resourceclaimtemplates", tmpl)
    assert code == 201, body


def test_count_of_core_objects(srv):
    ns = _ns(srv)
    _quota(srv, ns, {"count/configmaps": "1", "secrets": "1"})
    code, _, body = srv.request("POST", f"/api/v1/namespaces/{ns}/configmaps", {"metadata": {"name": "a"}})
    assert code == 201, body
    code, _, body = srv.request("POST", f"/api/v1/namespaces/{ns}/configmaps", {"metadata": {"name": "b"}})
    _assert_forbidden(code, body, "requested: count/configmaps=1, used: count/configmaps=1, "
                                  "limited: count/configmaps=1")
    code, _, body = srv.request("POST", f"/api/v1/namespaces/{ns}/secrets", {"metadata": {"name": "s"}})
    assert code == 201, body
    assert _used(srv, ns) == {"count/configmaps": "1", "secrets": "1"}


def test_dry_run_does_not_charge(srv):
    ns = _ns(srv)
    _quota(srv, ns, {q.CLAIM_COUNT: "1"})
    code, _, body = srv.request("POST", f"{RES}/namespaces/{ns}/resourceclaims?dryRun=All",
                                _claim_body("dry", [_exact("r", "qgpu.example.com")]))
    assert code == 201, body
    assert _used(srv, ns) == {q.CLAIM_COUNT: "0"}


# ---------------------------------------------------------------- pods


def test_pod_cpu_memory_requests_limits_and_pods(srv):
    ns = _ns(srv)
    hard = {"requests.cpu": "1", "requests.memory": "1Gi", "limits.cpu": "2", "limits.memory": "2Gi", "pods": "3",
            "count/pods": "3"}
    _quota(srv, ns, hard)
    code, body = _pod(srv, ns, "a", [_res({"cpu": "500m", "memory": "512Mi"}, {"cpu": "1", "memory": "1Gi"})])
    assert code == 201, body
    assert _used(srv, ns) == {"requests.cpu": "500m", "requests.memory": "512Mi", "limits.cpu": "1",
                              "limits.memory": "1Gi", "pods": "1", "count/pods": "1"}
    code, body = _pod(srv, ns, "b", [_res({"cpu": "600m", "memory": "100Mi"}, {"cpu": "600m", "memory": "100Mi"})])
    _assert_forbidden(code, body, 'pods "b" is forbidden: exceeded quota: q, requested: requests.cpu=600m, '
                                  "used: requests.cpu=500m, limited: requests.cpu=1")
    code, body = _pod(srv, ns, "c", [_res({"cpu": "100m", "memory": "100Mi"}, {"cpu": "1500m", "memory": "1Gi"})])
    _assert_forbidden(code, body, "requested: limits.cpu=1500m, used: limits.cpu=1, limited: limits.cpu=2")
    code, body = _pod(srv, ns, "d", [_res({"cpu": "100m", "memory": "600Mi"}, {"cpu": "100m", "memory": "1Gi"})])
    _assert_forbidden(code, body, "requested: requests.memory=600Mi, used: requests.memory=512Mi, "
                                  "limited: requests.memory=1Gi")
    code, body = _pod(srv, ns, "e", [_res(limits={"cpu": "100m", "memory": "100Mi"})])  # requests from limits
    assert code == 201, body
    code, body = _pod(srv, ns, "f", [_res(limits={"cpu": "100m", "memory": "100Mi"})])
    assert code == 201, body
    code, body = _pod(srv, ns, "g", [_res(limits={"cpu": "100m", "memory": "100Mi"})])
    _assert_forbidden(code, body, "requested: count/pods=1,pods=1, used: count/pods=3,pods=3, "
                                  "limited: count/pods=3,pods=3")
    # A pod without cpu/memory is refused by the constraint, naming its containers.
    code, body = _pod(srv, ns, "h", [{}, _res({"cpu": "1m"})])
    _assert_forbidden(code, body, "failed quota: q: must specify limits.cpu for: c0,c1; limits.memory for: c0,c1; "
                                  "requests.cpu for: c0; requests.memory for: c0,c1")
    _delete(srv, f"/api/v1/namespaces/{ns}/pods/a")
    _wait_used(srv, ns, {"requests.cpu": "200m", "requests.memory": "200Mi", "limits.cpu": "200m", "pods": 2,
                         "count/pods": 2})


def test_pod_init_containers_and_sidecars(srv):
    ns = _ns(srv)
    _quota(srv, ns, {"requests.cpu": "10"})
    # sidecar 1 runs beside the app (1 + 2), the plain init container needs 5 + 1 (the sidecar started before
    # it): the pod needs max(3, 6) = 6.
    pod = _pod_body("p", [_res({"cpu": "2"})], initContainers=[
        {"name": "side", "image": "x", "restartPolicy": "Always", **_res({"cpu": "1"})},
        {"name": "init", "image": "x", **_res({"cpu": "5"})}])
    code, _, body = srv.request("POST", f"/api/v1/namespaces/{ns}/pods", pod)
    assert code == 201, body
    assert _used(srv, ns) == {"requests.cpu": "6"}


def test_pod_extended_resource_requests(srv):
    ns = _ns(srv)
    _quota(srv, ns, {"requests.example.com/foo": "2"})
    code, body = _pod(srv, ns, "a", [_res({"example.com/foo": "2"}, {"example.com/foo": "2"})])
    assert code == 201, body
    code, body = _pod(srv, ns, "b", [_res({"example.com/foo": "1"}, {"example.com/foo": "1"})])
    _assert_forbidden(code, body, "requested: requests.example.com/foo=1, used: requests.example.com/foo=2, "
                                  "limited: requests.example.com/foo=2")
    # Pods without the resource pass (no constraint on extended resources).
    code, body = _pod(srv, ns, "c", [{}])
    assert code == 201, body


def test_terminal_pods_release_compute_but_not_count(srv):
    ns = _ns(srv)
    _quota(srv, ns, {"pods": "1", "count/pods": "5"})
    code, body = _pod(srv, ns, "a", [{}])
    assert code == 201, body
    code, body = _pod(srv, ns, "b", [{}])
    _assert_forbidden(code, body, "exceeded quota: q, requested: pods=1, used: pods=1, limited: pods=1")

    def finish() -> bool:  # read-modify-write: the scheduler may write the pod's conditions meanwhile (409)
        pod = body_of(srv, f"/api/v1/namespaces/{ns}/pods/a")
        pod["status"]["phase"] = "Succeeded"
        code, _, body = srv.request("PUT", f"/api/v1/namespaces/{ns}/pods/a/status", pod)
        assert code in (200, 409), body
        return code == 200

    wait_for(finish, 10, what="the pod's status update")
    _wait_used(srv, ns, {"pods": 0, "count/pods": 1})
    code, body = _pod(srv, ns, "b", [{}])
    assert code == 201, body


def body_of(srv: Server, path: str) -> dict:
    code, _, body = srv.request("GET", path)
    assert code == 200, body
    return body


def test_pod_scopes(srv):
    ns = _ns(srv)
    _quota(srv, ns, {"pods": "1"}, name="best-effort", scopes=["BestEffort"])
    _quota(srv, ns, {"pods": "1"}, name="terminating", scopes=["Terminating"])
    code, body = _pod(srv, ns, "be1", [{}])
    assert code == 201, body
    code, body = _pod(srv, ns, "be2", [{}])
    _assert_forbidden(code, body, "exceeded quota: best-effort, requested: pods=1")
    code, body = _pod(srv, ns, "burst", [_res({"cpu": "1m"})])  # NotBestEffort, NotTerminating: no quota
    assert code == 201, body
    code, body = _pod(srv, ns, "term1", [_res({"cpu": "1m"})], activeDeadlineSeconds=60)
    assert code == 201, body
    code, body = _pod(srv, ns, "term2", [_res({"cpu": "1m"})], activeDeadlineSeconds=60)
    _assert_forbidden(code, body, "exceeded quota: terminating, requested: pods=1")
    assert _used(srv, ns, "best-effort") == {"pods": "1"}
    assert _used(srv, ns, "terminating") == {"pods": "1"}
    # A scoped quota never matches claims.
    _quota(srv, ns, {q.CLAIM_COUNT: "0"}, name="scoped-claims", scopes=["BestEffort"])
    code, body2 = _claim(srv, ns, "c", [_exact("r", "qgpu.example.com")])
    assert code == 201, body2


# ---------------------------------------------------------------- status, controller, concurrency


def test_usage_computed_after_quota_creation(srv):
    ns = _ns(srv)
    _quota(srv, ns, {q.CLAIM_COUNT: "2"}, wait=False)
    # Whether the controller has computed the status yet or not, the claim is admitted (a quota not yet
    # computed limits nothing, as upstream) and ends up counted.
    code, body = _claim(srv, ns, "early", [_exact("r", "qgpu.example.com")])
    assert code == 201, body
    _wait_used(srv, ns, {q.CLAIM_COUNT: 1})
    assert _get_quota(srv, ns)["status"]["hard"] == {q.CLAIM_COUNT: "2"}


@pytest.mark.e2e
def test_quota_status_unknown_refuses(tmp_path):
    """`apiserver` alone (no controller): a quota's status is only what is written to it."""
    s = start_server(str(tmp_path))
    try:
        ns = _ns(s)
        _quota(s, ns, {q.CLAIM_COUNT: "1", "pods": "3"}, wait=False)
        # Not computed: status.hard is empty, so the quota concerns nothing yet (upstream's Matches).
        code, body = _claim(s, ns, "c0", [_exact("r", "qgpu.example.com")])
        assert code == 201, body
        assert "status" not in _get_quota(s, ns) or not _get_quota(s, ns)["status"]
        # Hard known, usage not: refused until it is computed.
        quota = _get_quota(s, ns)
        quota["status"] = {"hard": {q.CLAIM_COUNT: "1", "pods": "3"}, "used": {"pods": "0"}}
        code, _, body = s.request("PUT", f"/api/v1/namespaces/{ns}/resourcequotas/q/status", quota)
        assert code == 200, body
        code, body = _claim(s, ns, "c", [_exact("r", "qgpu.example.com")])
        _assert_forbidden(code, body, f'resourceclaims.resource.k8s.io "c" is forbidden: status unknown for quota: '
                                      f"q, resources: {q.CLAIM_COUNT}")
        # What the quota does not lack usage for is admitted and charged.
        code, body = _pod(s, ns, "p", [{}])
        assert code == 201, body
        assert _used(s, ns) == {"pods": "1"}
        code, _, body = s.request("POST", f"/api/v1/namespaces/{ns}/configmaps", {"metadata": {"name": "cm"}})
        assert code == 201, body
    finally:
        stop(s)


def test_controller_recomputes_on_start_and_on_spec_change(srv):
    ns = _ns(srv)
    _device_class(srv, "qgpu.example.com")
    for i in range(3):
        code, body = _claim(srv, ns, f"pre{i}", [_exact("r", "qgpu.example.com", count=2)])
        assert code == 201, body
    key = "qgpu.example.com" + q.DEVICES_SUFFIX
    _quota(srv, ns, {q.CLAIM_COUNT: "10"})
    _wait_used(srv, ns, {q.CLAIM_COUNT: 3})
    quota = _get_quota(srv, ns)
    quota["spec"]["hard"][key] = "6"
    code, _, body = srv.request("PUT", f"/api/v1/namespaces/{ns}/resourcequotas/q", quota)
    assert code == 200, body
    _wait_used(srv, ns, {q.CLAIM_COUNT: 3, key: 6})
    assert _get_quota(srv, ns)["status"]["hard"] == {q.CLAIM_COUNT: "10", key: "6"}
    code, body = _claim(srv, ns, "more", [_exact("r", "qgpu.example.com")])
    _assert_forbidden(code, body, f"requested: {key}=1, used: {key}=6, limited: {key}=6")


def test_controller_fixes_drift(srv):
    ns = _ns(srv)
    _quota(srv, ns, {q.CLAIM_COUNT: "5"})
    quota = _get_quota(srv, ns)
    quota["status"]["used"] = {q.CLAIM_COUNT: "4"}  # wrong: nothing exists
    code, _, body = srv.request("PUT", f"/api/v1/namespaces/{ns}/resourcequotas/q/status", quota)
    assert code == 200, body
    _wait_used(srv, ns, {q.CLAIM_COUNT: 0})


def test_twenty_concurrent_creates_against_five(srv):
    ns = _ns(srv)
    _quota(srv, ns, {q.CLAIM_COUNT: "5"})

    def create(i: int) -> int:
        code, _, _ = srv.request("POST", f"{RES}/namespaces/{ns}/resourceclaims",
                                 _claim_body(f"c{i}", [_exact("r", "qgpu.example.com")]))
        return code

    with ThreadPoolExecutor(max_workers=20) as pool:
        codes = list(pool.map(create, range(20)))
    assert sorted(codes) == [201] * 5 + [403] * 15, codes
    code, _, listed = srv.request("GET", f"{RES}/namespaces/{ns}/resourceclaims")
    assert len(listed["items"]) == 5
    assert _used(srv, ns) == {q.CLAIM_COUNT: "5"}


def test_twenty_concurrent_pods_against_five(srv):
    ns = _ns(srv)
    _quota(srv, ns, {"pods": "5", "requests.cpu": "100"})

    def create(i: int) -> int:
        code, _, _ = srv.request("POST", f"/api/v1/namespaces/{ns}/pods",
                                 _pod_body(f"p{i}", [_res({"cpu": "1", "memory": "1Mi"})]))
        return code

    with ThreadPoolExecutor(max_workers=20) as pool:
        codes = list(pool.map(create, range(20)))
    assert sorted(codes) == [201] * 5 + [403] * 15, codes
    assert _used(srv, ns) == {"pods": "5", "requests.cpu": "5"}


# ---------------------------------------------------------------- KEP-5004


def test_kep5004_worked_example(srv):
    """KEP-5004 "Resource Quota": used 5 / 4 / 4.

    gpu-0: pod A's example.com/gpu served by a device plugin (no claim);
    gpu-1: pod B's example.com/gpu served by DRA, and gpu-2: pod B's implicit
    deviceclass.resource.kubernetes.io/<class> request, both in the scheduler's special claim for pod B;
    gpu-3: a claim of its own; gpu-4: a claim made from a template for pod C (as the claim controller does).
    """
    ns = _ns(srv)
    cls = "gpu.example.com"
    _device_class(srv, cls, extended="example.com/gpu")
    explicit, implicit, devices = "requests.example.com/gpu", f"requests.deviceclass.resource.kubernetes.io/{cls}", \
        cls + q.DEVICES_SUFFIX
    _quota(srv, ns, {explicit: "10", implicit: "10", devices: "10"})

    code, body = _pod(srv, ns, "pod-a", [_res({"example.com/gpu": "1"}, {"example.com/gpu": "1"})])
    assert code == 201, body
    both = {"example.com/gpu": "1", f"deviceclass.resource.kubernetes.io/{cls}": "1"}
    code, body = _pod(srv, ns, "pod-b", [_res(both, both)])
    assert code == 201, body
    pod_b = body
    assert _used(srv, ns) == {explicit: "3", implicit: "1", devices: "0"}
    # The scheduler's claim for pod B's extended resources (gpu-1 for example.com/gpu, gpu-2 for the class).
    owner = {"apiVersion": "v1", "kind": "Pod", "name": "pod-b", "uid": pod_b["metadata"]["uid"], "controller": True}
    code, body = _claim(srv, ns, "pod-b-extended-resources",
                        [_exact("container-0-request-0", cls), _exact("container-0-request-1", cls)],
                        annotations={q.EXTENDED_RESOURCE_CLAIM_ANNOTATION: "true"}, owner=owner)
    assert code == 201, body
    code, body = _claim(srv, ns, "gpu-3", [_exact("gpu", cls)])
    assert code == 201, body
    code, _, body = srv.request("POST", f"/api/v1/namespaces/{ns}/pods", _pod_body(
        "pod-c", [{"resources": {"claims": [{"name": "gpu"}]}}],
        resourceClaims=[{"name": "gpu", "resourceClaimTemplateName": "gpu-template"}]))
    assert code == 201, body
    owner_c = {"apiVersion": "v1", "kind": "Pod", "name": "pod-c", "uid": body["metadata"]["uid"],
               "controller": True, "blockOwnerDeletion": True}
    code, body = _claim(srv, ns, "pod-c-gpu-x7k2p", [_exact("gpu", cls)],
                        annotations={"resource.kubernetes.io/pod-claim-name": "gpu"}, owner=owner_c)
    assert code == 201, body
    expected = {explicit: "5", implicit: "4", devices: "4"}
    assert _used(srv, ns) == expected  # as charged by admission
    # The controller's recomputation from scratch agrees (force a sync through a spec change).
    quota = _get_quota(srv, ns)
    quota["spec"]["hard"][q.CLAIM_COUNT] = "100"
    code, _, body = srv.request("PUT", f"/api/v1/namespaces/{ns}/resourcequotas/q", quota)
    assert code == 200, body
    _wait_used(srv, ns, {**expected, q.CLAIM_COUNT: 3})
    # A claim for the class beyond the explicit extended-resource limit is refused on that key.
    quota = _get_quota(srv, ns)
    quota["spec"]["hard"][explicit] = "5"
    code, _, body = srv.request("PUT", f"/api/v1/namespaces/{ns}/resourcequotas/q", quota)
    assert code == 200, body
    wait_for(lambda: _get_quota(srv, ns)["status"]["hard"].get(explicit) == "5", what="hard updated")
    code, body = _claim(srv, ns, "gpu-5", [_exact("gpu", cls)])
    _assert_forbidden(code, body, f"requested: {explicit}=1, used: {explicit}=5, limited: {explicit}=5")
    # Releasing: deleting the standalone claim gives back one of each.
    _delete(srv, f"{RES}/namespaces/{ns}/resourceclaims/gpu-3")
    _wait_used(srv, ns, {explicit: 4, implicit: 3, devices: 3, q.CLAIM_COUNT: 2})


def test_kep5004_implicit_request_refused_by_explicit_quota(srv):
    ns = _ns(srv)
    cls = "gpu2.example.com"
    _device_class(srv, cls, extended="example.com/gpu2")
    _quota(srv, ns, {"requests.example.com/gpu2": "1"})
    code, body = _claim(srv, ns, "c", [_exact("r", cls)])
    assert code == 201, body
    name = f"deviceclass.resource.kubernetes.io/{cls}"
    code, body = _pod(srv, ns, "p", [_res({name: "1"}, {name: "1"})])
    _assert_forbidden(code, body, "requested: requests.example.com/gpu2=1, used: requests.example.com/gpu2=1, "
                                  "limited: requests.example.com/gpu2=1")


# ---------------------------------------------------------------- kubectl


def test_kubectl_describe_quota_shows_device_keys(srv):
    ns = _ns(srv)
    _device_class(srv, "qgpu.example.com")
    key = "qgpu.example.com" + q.DEVICES_SUFFIX
    _quota(srv, ns, {key: "8", q.CLAIM_COUNT: "4"})
    code, body = _claim(srv, ns, "c", [_exact("r", "qgpu.example.com", count=3)])
    assert code == 201, body
    out = srv.kubectl("describe", "quota", "q", "-n", ns).stdout
    assert "Resource" in out and "Used" in out and "Hard" in out, out
    lines = {line.split()[0]: line.split()[1:] for line in out.splitlines() if line.strip()}
    assert lines[key] == ["3", "8"], out
    assert lines[q.CLAIM_COUNT] == ["1", "4"], out
    out = srv.kubectl("get", "quota", "-n", ns).stdout
    assert f"{key}: 3/8" in out, out
