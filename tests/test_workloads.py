"""Workload API and controllers beyond the examples (issue 14): upstream's validation messages, the scale
subresource, Indexed Jobs, backoffLimit, Recreate Deployments and foreground cascades, against real processes."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from tests.helpers import Server, make_ns, node_cluster, wait_for

pytestmark = pytest.mark.e2e

APPS = "/apis/apps/v1/namespaces"
BATCH = "/apis/batch/v1/namespaces"


@pytest.fixture(scope="module")
def cluster(starts_processes) -> Iterator[Server]:
    with node_cluster("dramock-wk-") as s:
        yield s


@pytest.fixture
def ns(cluster: Server) -> str:
    return make_ns(cluster, "wk")


def deployment(name: str, replicas: int = 2, image: str = "nginx:1.27", **spec) -> dict:
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name}},
                                  "spec": {"containers": [{"name": "c", "image": image}]}}, **spec}}


def job(name: str, annotations: dict, **spec) -> dict:
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name, "annotations": annotations},
            "spec": {"template": {"spec": {"restartPolicy": "Never",
                                           "containers": [{"name": "c", "image": "busybox"}]}}, **spec}}


def get(s: Server, path: str) -> dict:
    code, _, body = s.request("GET", path)
    assert code == 200, body
    return body


def pods(s: Server, ns: str) -> list[dict]:
    return get(s, f"/api/v1/namespaces/{ns}/pods")["items"]


def conditions(obj: dict) -> dict:
    return {c["type"]: c for c in (obj.get("status") or {}).get("conditions") or []}


def test_validation_messages_as_upstream(cluster: Server, ns: str):
    bad = deployment("bad", replicas=-1)
    bad["spec"]["template"]["metadata"]["labels"] = {"app": "other"}
    code, _, err = cluster.request("POST", f"{APPS}/{ns}/deployments", bad)
    assert code == 422 and err["reason"] == "Invalid"
    assert {c["field"]: c["message"] for c in err["details"]["causes"]} == {
        "spec.replicas": "Invalid value: -1: must be greater than or equal to 0",
        "spec.template.metadata.labels":
            'Invalid value: map[string]string{"app":"other"}: `selector` does not match template `labels`'}
    code, _, err = cluster.request("POST", f"{BATCH}/{ns}/jobs", {
        "apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "always"},
        "spec": {"template": {"spec": {"containers": [{"name": "c", "image": "busybox"}]}}}})
    assert code == 422
    assert err["details"]["causes"] == [{"reason": "FieldValueNotSupported",
                                         "field": "spec.template.spec.restartPolicy",
                                         "message": 'Unsupported value: "Always": supported values: "OnFailure", '
                                                    '"Never"'}]
    code, _, err = cluster.request("POST", f"{BATCH}/{ns}/jobs", job("idx", {}, completionMode="Indexed",
                                                                      parallelism=2))
    assert code == 422 and err["details"]["causes"][0]["message"] == \
        "Required value: when completion mode is Indexed"


def test_scale_subresource(cluster: Server, ns: str):
    assert cluster.request("POST", f"{APPS}/{ns}/deployments", deployment("web", replicas=1))[0] == 201
    scale = get(cluster, f"{APPS}/{ns}/deployments/web/scale")
    assert (scale["kind"], scale["apiVersion"], scale["spec"]["replicas"]) == ("Scale", "autoscaling/v1", 1)
    wait_for(lambda: get(cluster, f"{APPS}/{ns}/deployments/web/scale")["status"].get("replicas") == 1, 30,
             what="status.replicas in the Scale")
    scale = get(cluster, f"{APPS}/{ns}/deployments/web/scale")
    assert scale["status"]["selector"] == "app=web"
    stale = dict(scale, metadata=dict(scale["metadata"], resourceVersion="1"))
    assert cluster.request("PUT", f"{APPS}/{ns}/deployments/web/scale", stale)[0] == 409
    scale["spec"]["replicas"] = 3
    del scale["metadata"]["resourceVersion"]  # unconditional, as the controllers write status meanwhile
    code, _, put = cluster.request("PUT", f"{APPS}/{ns}/deployments/web/scale", scale)
    assert code == 200 and put["spec"]["replicas"] == 3
    assert get(cluster, f"{APPS}/{ns}/deployments/web")["spec"]["replicas"] == 3
    code, _, patched = cluster.request("PATCH", f"{APPS}/{ns}/deployments/web/scale", {"spec": {"replicas": 2}},
                                       content_type="application/merge-patch+json")
    assert code == 200 and patched["spec"]["replicas"] == 2
    code, _, err = cluster.request("PATCH", f"{APPS}/{ns}/deployments/web/scale", {"spec": {"replicas": -2}},
                                   content_type="application/merge-patch+json")
    assert code == 422 and err["details"]["causes"][0]["field"] == "spec.replicas"
    wait_for(lambda: get(cluster, f"{APPS}/{ns}/deployments/web")["status"].get("availableReplicas") == 2, 30,
             what="two available replicas")
    rs = get(cluster, f"{APPS}/{ns}/replicasets")["items"]
    assert len(rs) == 1 and rs[0]["spec"]["replicas"] == 2
    assert rs[0]["metadata"]["ownerReferences"][0]["kind"] == "Deployment"
    # Foreground deletion waits for the ReplicaSet and its pods (blockOwnerDeletion), then completes.
    cluster.kubectl("-n", ns, "delete", "deployment", "web", "--cascade=foreground", "--timeout=60s")
    assert not get(cluster, f"{APPS}/{ns}/replicasets")["items"]
    assert not [p for p in pods(cluster, ns) if not p["metadata"].get("deletionTimestamp")]


def test_recreate_deployment_replaces_all_pods(cluster: Server, ns: str):
    d = deployment("rc", replicas=2, strategy={"type": "Recreate"})
    assert cluster.request("POST", f"{APPS}/{ns}/deployments", d)[0] == 201
    cluster.kubectl("-n", ns, "rollout", "status", "deployment/rc", "--timeout=60s")
    cluster.kubectl("-n", ns, "set", "image", "deployment/rc", "c=nginx:1.28")
    cluster.kubectl("-n", ns, "rollout", "status", "deployment/rc", "--timeout=60s")
    by_image = {}
    for rs in get(cluster, f"{APPS}/{ns}/replicasets")["items"]:
        by_image[rs["spec"]["template"]["spec"]["containers"][0]["image"]] = rs["spec"]["replicas"]
    assert by_image == {"nginx:1.27": 0, "nginx:1.28": 2}
    d = get(cluster, f"{APPS}/{ns}/deployments/rc")
    assert d["metadata"]["annotations"]["deployment.kubernetes.io/revision"] == "2"
    assert conditions(d)["Available"]["status"] == "True"


def test_indexed_job(cluster: Server, ns: str):
    body = job("indexed", {"dramock.io/complete-after-seconds": "0.5"}, completions=3, parallelism=3,
               completionMode="Indexed")
    assert cluster.request("POST", f"{BATCH}/{ns}/jobs", body)[0] == 201
    cluster.kubectl("-n", ns, "wait", "--for=condition=Complete", "job/indexed", "--timeout=60s")
    j = get(cluster, f"{BATCH}/{ns}/jobs/indexed")
    assert j["status"]["completedIndexes"] == "0-2" and j["status"]["succeeded"] == 3
    done = sorted(pods(cluster, ns), key=lambda p: int(p["metadata"]["labels"]["batch.kubernetes.io/"
                                                                                "job-completion-index"]))
    assert [p["spec"]["hostname"] for p in done] == ["indexed-0", "indexed-1", "indexed-2"]
    assert [p["metadata"]["annotations"]["batch.kubernetes.io/job-completion-index"] for p in done] == \
        ["0", "1", "2"]
    env = done[0]["spec"]["containers"][0]["env"]
    assert env[0]["name"] == "JOB_COMPLETION_INDEX"
    assert all(p["metadata"]["labels"]["batch.kubernetes.io/job-name"] == "indexed" for p in done)


def test_job_backoff_limit_fails_the_job(cluster: Server, ns: str):
    body = job("flaky", {"dramock.io/complete-after-seconds": "0.3", "dramock.io/exit-code": "2"}, backoffLimit=1)
    assert cluster.request("POST", f"{BATCH}/{ns}/jobs", body)[0] == 201
    cluster.kubectl("-n", ns, "wait", "--for=condition=Failed", "job/flaky", "--timeout=60s")
    j = get(cluster, f"{BATCH}/{ns}/jobs/flaky")
    conds = conditions(j)
    assert conds["Failed"]["reason"] == "BackoffLimitExceeded"
    assert conds["Failed"]["message"] == "Job has reached the specified backoff limit"
    assert conds["FailureTarget"]["status"] == "True"
    assert j["status"]["failed"] == 2 and not j["status"].get("succeeded")
    printed = cluster.kubectl("-n", ns, "get", "job", "flaky").stdout.splitlines()[1].split()
    assert printed[:3] == ["flaky", "Failed", "0/1"]
    # ownerReferences: deleting the Job (background) removes its pods.
    cluster.kubectl("-n", ns, "delete", "job", "flaky")
    wait_for(lambda: not pods(cluster, ns), 30, what="the Job's pods collected")


def test_kubectl_get_all_lists_workloads(cluster: Server, ns: str):
    assert cluster.request("POST", f"{APPS}/{ns}/deployments", deployment("all", replicas=1))[0] == 201
    cluster.kubectl("-n", ns, "rollout", "status", "deployment/all", "--timeout=60s")
    out = json.loads(cluster.kubectl("-n", ns, "get", "all", "-o", "json").stdout)
    kinds = sorted({i["kind"] for i in out["items"]})
    assert kinds == ["Deployment", "Pod", "ReplicaSet"]


def test_deployment_progress_deadline(cluster: Server, ns: str):
    d = deployment("stuck", replicas=1, progressDeadlineSeconds=1)
    d["spec"]["template"]["spec"]["nodeSelector"] = {"zone": "nowhere"}  # never schedulable
    assert cluster.request("POST", f"{APPS}/{ns}/deployments", d)[0] == 201
    out = cluster.kubectl("-n", ns, "rollout", "status", "deployment/stuck", "--timeout=60s", check=False)
    assert out.returncode != 0 and 'deployment "stuck" exceeded its progress deadline' in out.stderr
    cond = conditions(get(cluster, f"{APPS}/{ns}/deployments/stuck"))["Progressing"]
    assert (cond["status"], cond["reason"]) == ("False", "ProgressDeadlineExceeded")


def test_job_suspend_and_ttl_after_finished(cluster: Server, ns: str):
    body = job("later", {"dramock.io/complete-after-seconds": "0.2"}, suspend=True, ttlSecondsAfterFinished=1)
    assert cluster.request("POST", f"{BATCH}/{ns}/jobs", body)[0] == 201
    cond = wait_for(lambda: conditions(get(cluster, f"{BATCH}/{ns}/jobs/later")).get("Suspended"), 30,
                    what="Suspended condition")
    assert (cond["status"], cond["reason"]) == ("True", "JobSuspended") and not pods(cluster, ns)
    cluster.request("PATCH", f"{BATCH}/{ns}/jobs/later", {"spec": {"suspend": False}},
                    content_type="application/merge-patch+json")
    cluster.kubectl("-n", ns, "wait", "--for=condition=Complete", "job/later", "--timeout=60s")
    # ttlSecondsAfterFinished: the Job and its pods go a second later.
    wait_for(lambda: cluster.request("GET", f"{BATCH}/{ns}/jobs/later")[0] == 404, 30, what="the Job expired")
    wait_for(lambda: not pods(cluster, ns), 30, what="its pods collected")
