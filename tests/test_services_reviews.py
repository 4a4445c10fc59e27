"""core/v1 Services with ClusterIPs from --service-cluster-ip-range and the `kubernetes` Service, and the
self-review APIs (issue 14), with the real kubectl against a real server."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from tests.helpers import Server, start_server, stop

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def api(tmp_path_factory, starts_processes) -> Iterator[Server]:
    s = start_server(str(tmp_path_factory.mktemp("svc")), "--service-cluster-ip-range", "10.100.0.0/24")
    yield s
    stop(s)


def _svc(name: str, **spec) -> dict:
    return {"apiVersion": "v1", "kind": "Service", "metadata": {"name": name},
            "spec": {"ports": [{"port": 80}], **spec}}


def test_kubernetes_service_and_cluster_info(api):
    kube = api.request("GET", "/api/v1/namespaces/default/services/kubernetes")[2]
    assert kube["spec"]["clusterIP"] == "10.100.0.1" and kube["spec"]["clusterIPs"] == ["10.100.0.1"]
    assert kube["spec"]["ports"][0]["port"] == 443
    out = api.kubectl("cluster-info")
    assert out.returncode == 0 and f"Kubernetes control plane is running at {api.url}" in out.stdout


def test_cluster_ips_are_allocated_from_the_range_and_freed(api):
    code, _, web = api.request("POST", "/api/v1/namespaces/default/services", _svc("web", selector={"app": "w"}))
    assert code == 201, web
    ip = web["spec"]["clusterIP"]
    assert ip.startswith("10.100.0.") and ip != "10.100.0.1"
    assert web["spec"]["ports"][0]["targetPort"] == 80 and web["spec"]["type"] == "ClusterIP"
    code, _, err = api.request("POST", "/api/v1/namespaces/default/services", _svc("dup", clusterIP=ip))
    assert code == 422 and err["details"]["causes"][0]["message"] == \
        f'Invalid value: []string{{"{ip}"}}: failed to allocate IP {ip}: provided IP is already allocated'
    code, _, err = api.request("POST", "/api/v1/namespaces/default/services", _svc("out", clusterIP="10.1.2.3"))
    assert code == 422 and "not in the valid range" in err["message"]
    code, _, np = api.request("POST", "/api/v1/namespaces/default/services", _svc("np", type="NodePort"))
    assert code == 201 and 30000 <= np["spec"]["ports"][0]["nodePort"] <= 32767
    # An update leaving the address out keeps it; changing it is refused.
    web["spec"].pop("clusterIP")
    web["spec"].pop("clusterIPs")
    code, _, updated = api.request("PUT", "/api/v1/namespaces/default/services/web", web)
    assert code == 200 and updated["spec"]["clusterIP"] == ip
    rows = api.kubectl("get", "svc", "web", "np").stdout.splitlines()
    assert rows[0].split() == ["NAME", "TYPE", "CLUSTER-IP", "EXTERNAL-IP", "PORT(S)", "AGE"]
    assert rows[1].split()[:5] == ["web", "ClusterIP", ip, "<none>", "80/TCP"]
    assert rows[2].split()[4] == f"80:{np['spec']['ports'][0]['nodePort']}/TCP"
    assert api.request("DELETE", "/api/v1/namespaces/default/services/web")[0] == 200
    code, _, again = api.request("POST", "/api/v1/namespaces/default/services", _svc("again", clusterIP=ip))
    assert code == 201 and again["spec"]["clusterIP"] == ip


def test_bad_service_is_a_status_error(api):
    code, _, err = api.request("POST", "/api/v1/namespaces/default/services", _svc("bad", type="Weird"))
    assert code == 422 and err["kind"] == "Status"
    assert err["details"]["causes"][0]["field"] == "spec.type"


def test_auth_can_i_and_whoami(api):
    assert api.kubectl("auth", "can-i", "create", "resourceclaims").stdout.strip() == "yes"
    assert api.kubectl("auth", "can-i", "delete", "nodes").stdout.strip() == "yes"
    listed = api.kubectl("auth", "can-i", "--list").stdout
    assert "*.*" in listed
    who = api.kubectl("auth", "whoami", "-o", "json").stdout
    assert json.loads(who)["status"]["userInfo"]["username"] == "system:unsecured"
    code, _, body = api.request("POST", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", {
        "apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview",
        "spec": {"resourceAttributes": {"verb": "get", "resource": "pods"}}})
    assert code == 201 and body["status"]["allowed"] is True and body["spec"]["resourceAttributes"]["verb"] == "get"
    code, _, err = api.request("POST", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", {
        "apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview", "spec": {}})
    assert code == 422 and err["reason"] == "Invalid"
    # Create-only: nothing is stored, nothing to list.
    assert api.request("GET", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews")[0] == 405


def test_kubectl_typed_commands_speak_protobuf(api):
    """kubectl's typed clients send and accept protobuf: `create service`, `create deployment`, `create job`,
    `scale` (autoscaling/v1 Scale) all work against the server's protobuf encodings (-v=8 shows the type)."""
    out = api.kubectl("-v=8", "create", "service", "clusterip", "pbsvc", "--tcp=80:8080")
    assert out.returncode == 0, out.stderr
    assert "application/vnd.kubernetes.protobuf" in out.stderr
    svc = api.request("GET", "/api/v1/namespaces/default/services/pbsvc")[2]
    assert svc["spec"]["ports"][0]["port"] == 80 and svc["spec"]["ports"][0]["targetPort"] == 8080
    assert svc["spec"]["selector"] == {"app": "pbsvc"} and svc["spec"]["clusterIP"].startswith("10.100.0.")
    out = api.kubectl("create", "deployment", "pbdep", "--image=busybox", "--replicas=1")
    assert out.returncode == 0, out.stderr
    out = api.kubectl("scale", "deployment/pbdep", "--replicas=3")
    assert out.returncode == 0, out.stderr
    assert api.request("GET", "/apis/apps/v1/namespaces/default/deployments/pbdep")[2]["spec"]["replicas"] == 3
    out = api.kubectl("create", "job", "pbjob", "--image=busybox")
    assert out.returncode == 0, out.stderr
    job = api.request("GET", "/apis/batch/v1/namespaces/default/jobs/pbjob")[2]
    assert job["spec"]["template"]["spec"]["restartPolicy"] == "Never"
    out = api.kubectl("auth", "can-i", "list", "deployments.apps", "-v=8")
    assert out.stdout.strip() == "yes" and "application/vnd.kubernetes.protobuf" in out.stderr
