"""The secure port end to end: a real server with --secure-port, kubectl 1.32, the official client, and the
kubelet shim and example driver as separate processes under their own identities (issue 15)."""

from __future__ import annotations

import json
import os
import shutil
import ssl
import subprocess
import sys
import tempfile
import urllib.error
import urllib.request

import pytest

from tests.helpers import KUBECTL, Server, free_port, start_server, stop, stop_process, wait_for
from tests.test_kubelet_pods import DRIVER, allocate, make_claim, make_pod, phase, ref

pytestmark = pytest.mark.e2e
RBAC = "/apis/rbac.authorization.k8s.io/v1"
V1 = "/apis/resource.k8s.io/v1"


class Secure:
    """A server with its secure port, and identities for it."""

    def __init__(self, server: Server, secure_port: int, tmp: str):
        self.server, self.port, self.tmp = server, secure_port, tmp
        self.url = f"https://127.0.0.1:{secure_port}"
        self.ca = os.path.join(server.data_dir, "pki", "ca.crt")

    def kubeconfig(self, *args: str) -> str:
        """`dramock kubeconfig ARGS` written to a file (its path)."""
        out = subprocess.run([sys.executable, "-m", "dramock", "kubeconfig", "--data-dir", self.server.data_dir,
                              "--port", str(self.server.port), "--secure-port", str(self.port), *args],
                             capture_output=True, text=True, check=True, timeout=60)
        fd, path = tempfile.mkstemp(dir=self.tmp, suffix=".kubeconfig")
        with os.fdopen(fd, "w") as f:
            f.write(out.stdout)
        return path

    def kubectl(self, kubeconfig: str, *args: str, check: bool = False) -> subprocess.CompletedProcess:
        res = subprocess.run([KUBECTL, "--kubeconfig", kubeconfig, "--cache-dir", kubeconfig + "-cache", *args],
                             capture_output=True, text=True, timeout=60)
        if check:
            assert res.returncode == 0, res.stderr
        return res

    def get(self, path: str, token: str = "") -> tuple[int, dict]:
        ctx = ssl.create_default_context(cafile=self.ca)
        req = urllib.request.Request(self.url + path, headers={"Authorization": f"Bearer {token}"} if token else {})
        try:
            with urllib.request.urlopen(req, context=ctx, timeout=30) as resp:
                raw = resp.read()
                return resp.status, json.loads(raw) if raw.startswith(b"{") else {"text": raw.decode()}
        except urllib.error.HTTPError as e:
            return e.code, json.loads(e.read() or b"{}")


@pytest.fixture
def secure(tmp_path, starts_processes):
    tokens = tmp_path / "tokens.csv"
    tokens.write_text('tok-carol,carol,1001,"team-a,team-b"\n')
    port = free_port()
    server = start_server(str(tmp_path), "--secure-port", str(port), "--token-auth-file", str(tokens))
    try:
        yield Secure(server, port, str(tmp_path))
    finally:
        stop(server)


def test_anonymous_reaches_only_public_info(secure):
    assert secure.get("/version")[0] == 200
    assert secure.get("/healthz")[0] == 200
    code, body = secure.get("/api/v1/namespaces/default/pods")
    assert code == 403
    assert body["message"] == ('pods is forbidden: User "system:anonymous" cannot list resource "pods" in API '
                               'group "" in the namespace "default"')
    assert body["reason"] == "Forbidden" and body["details"] == {"kind": "pods"}
    # Discovery is for authenticated users (system:discovery), as upstream binds it.
    code, body = secure.get("/apis")
    assert code == 403 and body["message"] == 'forbidden: User "system:anonymous" cannot get path "/apis"'
    code, body = secure.get("/api/v1/pods", token="not-a-token")
    assert code == 401 and body == {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                                    "message": "Unauthorized", "reason": "Unauthorized", "code": 401}


def test_users_without_bindings_get_upstreams_403(secure):
    bob = secure.kubeconfig("--user", "bob", "--group", "devs")
    res = secure.kubectl(bob, "get", "resourceclaims", "-n", "default")
    assert res.returncode == 1
    assert ('Error from server (Forbidden): resourceclaims.resource.k8s.io is forbidden: User "bob" cannot list '
            'resource "resourceclaims" in API group "resource.k8s.io" in the namespace "default"') in res.stderr
    who = json.loads(secure.kubectl(bob, "auth", "whoami", "-o", "json", check=True).stdout)
    assert who["status"]["userInfo"] == {"username": "bob", "groups": ["devs", "system:authenticated"]}
    # The static token user through the official client.
    import kubernetes

    cfg = kubernetes.client.Configuration()
    cfg.host = secure.url
    cfg.ssl_ca_cert = secure.ca
    cfg.api_key = {"authorization": "Bearer tok-carol"}
    with kubernetes.client.ApiClient(cfg) as api:
        with pytest.raises(kubernetes.client.ApiException) as e:
            kubernetes.client.CoreV1Api(api).read_node("node-1")
        assert e.value.status == 403
        assert json.loads(e.value.body)["message"] == (
            'nodes "node-1" is forbidden: User "carol" cannot get resource "nodes" in API group "" at the '
            "cluster scope")
        review = kubernetes.client.AuthenticationV1Api(api).create_self_subject_review(
            {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"})
        assert review.status.user_info.username == "carol"
        assert review.status.user_info.groups == ["team-a", "team-b", "system:authenticated"]
    # The plain port is still the zero-config superuser.
    assert secure.server.kubectl("get", "resourceclaims", "-n", "default").returncode == 0


def test_can_i_list_for_a_service_account_matches_its_roles(secure):
    admin = secure.kubeconfig("--user", "root", "--group", "system:masters")
    secure.kubectl(admin, "create", "namespace", "drv", check=True)
    secure.kubectl(admin, "create", "serviceaccount", "plugin", "-n", "drv", check=True)
    secure.kubectl(admin, "create", "role", "claims", "-n", "drv", "--verb=get,list,watch",
                   "--resource=resourceclaims.resource.k8s.io", check=True)
    secure.kubectl(admin, "create", "rolebinding", "claims", "-n", "drv", "--role=claims",
                   "--serviceaccount=drv:plugin", check=True)
    secure.kubectl(admin, "create", "clusterrole", "slices", "--verb=create,delete",
                   "--resource=resourceslices.resource.k8s.io", check=True)
    secure.kubectl(admin, "create", "clusterrolebinding", "slices", "--clusterrole=slices",
                   "--serviceaccount=drv:plugin", check=True)
    listed = secure.kubectl(admin, "auth", "can-i", "--list", "-n", "drv", "--as",
                            "system:serviceaccount:drv:plugin", check=True).stdout
    rows = {line.split()[0]: "[" + line.rsplit("[", 1)[1] for line in listed.splitlines()[1:] if line.strip()}
    assert rows["resourceclaims.resource.k8s.io"] == "[get list watch]"
    assert rows["resourceslices.resource.k8s.io"] == "[create delete]"
    assert rows["selfsubjectreviews.authentication.k8s.io"] == "[create]"  # system:basic-user
    assert "pods" not in rows and "*.*" not in rows
    elsewhere = secure.kubectl(admin, "auth", "can-i", "--list", "-n", "default", "--as",
                               "system:serviceaccount:drv:plugin", check=True).stdout
    assert "resourceclaims.resource.k8s.io" not in elsewhere and "resourceslices.resource.k8s.io" in elsewhere
    # SubjectAccessReview answers the same for anyone asked about.
    for ns, allowed in (("drv", True), ("default", False)):
        code, _, sar = secure.server.request("POST", "/apis/authorization.k8s.io/v1/subjectaccessreviews", {
            "apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
            "spec": {"user": "system:serviceaccount:drv:plugin",
                     "groups": ["system:serviceaccounts", "system:serviceaccounts:drv", "system:authenticated"],
                     "resourceAttributes": {"namespace": ns, "verb": "list", "group": "resource.k8s.io",
                                            "resource": "resourceclaims"}}})
        assert code == 201 and sar["status"]["allowed"] is allowed, sar
    # The ServiceAccount's own token (TokenRequest) is that same user.
    sa = secure.kubeconfig("--service-account", "drv/plugin")
    assert secure.kubectl(sa, "auth", "can-i", "list", "resourceclaims", "-n", "drv").stdout.strip() == "yes"
    res = secure.kubectl(sa, "get", "resourceclaims", "-n", "default")
    assert ('User "system:serviceaccount:drv:plugin" cannot list resource "resourceclaims" in API group '
            '"resource.k8s.io" in the namespace "default"') in res.stderr
    # A user without the impersonate verb cannot use --as.
    bob = secure.kubeconfig("--user", "bob")
    secure.kubectl(bob, "api-resources")  # discovery, cached: every request with --as is refused, discovery too
    res = secure.kubectl(bob, "get", "pods", "--as", "root")
    assert 'users "root" is forbidden: User "bob" cannot impersonate resource "users" in API group ""' in res.stderr


def test_rbac_escalation_is_refused(secure):
    admin = secure.kubeconfig("--user", "root", "--group", "system:masters")
    secure.kubectl(admin, "create", "role", "delegate", "-n", "default", "--verb=create,get",
                   "--resource=roles.rbac.authorization.k8s.io,rolebindings.rbac.authorization.k8s.io,pods",
                   check=True)
    secure.kubectl(admin, "create", "rolebinding", "delegate", "-n", "default", "--role=delegate", "--user=dev",
                   check=True)
    dev = secure.kubeconfig("--user", "dev")
    # Granting what one holds is fine ...
    secure.kubectl(dev, "create", "role", "pod-reader", "-n", "default", "--verb=get", "--resource=pods", check=True)
    # ... more is not.
    res = secure.kubectl(dev, "create", "role", "secret-reader", "-n", "default", "--verb=get", "--resource=secrets")
    assert res.returncode == 1
    assert ('roles.rbac.authorization.k8s.io "secret-reader" is forbidden: user "dev" '
            '(groups=["system:authenticated"]) is attempting to grant RBAC permissions not currently held:\n'
            '{APIGroups:[""], Resources:["secrets"], Verbs:["get"]}') in res.stderr
    res = secure.kubectl(dev, "create", "rolebinding", "take-over", "-n", "default", "--clusterrole=cluster-admin",
                         "--user=dev")
    assert res.returncode == 1 and "is attempting to grant RBAC permissions not currently held" in res.stderr
    # With `bind` on that role, binding it is allowed.
    secure.kubectl(admin, "create", "role", "binder", "-n", "default", "--verb=bind",
                   "--resource=roles.rbac.authorization.k8s.io", "--resource-name=pod-reader", check=True)
    secure.kubectl(admin, "create", "rolebinding", "binder", "-n", "default", "--role=binder", "--user=dev",
                   check=True)
    secure.kubectl(dev, "create", "rolebinding", "readers", "-n", "default", "--role=pod-reader", "--user=eve",
                   check=True)


def test_node_identity_is_restricted_to_its_own_objects(secure):
    node1 = secure.kubeconfig("--user", "system:node:node-1", "--group", "system:nodes")
    for name in ("node-1", "node-2"):
        code, _, body = secure.server.request("POST", "/api/v1/nodes", {"apiVersion": "v1", "kind": "Node",
                                                                       "metadata": {"name": name}})
        assert code == 201, body

    def slice_for(node: str) -> str:
        return json.dumps({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
                           "metadata": {"name": f"{node}-gpu"},
                           "spec": {"driver": DRIVER, "nodeName": node, "pool": {"name": node, "generation": 1,
                                                                              "resourceSliceCount": 1},
                                    "devices": [{"name": "gpu-0"}]}})

    res = subprocess.run([KUBECTL, "--kubeconfig", node1, "create", "-f", "-"], input=slice_for("node-2"),
                         capture_output=True, text=True, timeout=60)
    assert res.returncode == 1
    assert ('resourceslices.resource.k8s.io "node-2-gpu" is forbidden: can only create ResourceSlice with the same '
            'NodeName as the requesting node') in res.stderr
    res = subprocess.run([KUBECTL, "--kubeconfig", node1, "create", "-f", "-"], input=slice_for("node-1"),
                         capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stderr
    res = secure.kubectl(node1, "label", "node", "node-2", "hacked=true")
    assert res.returncode == 1
    assert 'nodes "node-2" is forbidden: node "node-1" is not allowed to modify node "node-2"' in res.stderr
    secure.kubectl(node1, "label", "node", "node-1", "ok=true", check=True)
    # Another node's slice cannot even be read.
    res = secure.kubectl(node1, "get", "resourceslice", "node-1-gpu")
    assert res.returncode == 0
    secure.server.request("POST", f"{V1}/resourceslices", json.loads(slice_for("node-2")))
    res = secure.kubectl(node1, "get", "resourceslice", "node-2-gpu")
    assert res.returncode == 1 and "no relationship found between node 'node-1' and this object" in res.stderr


DRIVER_ROLE = {
    "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": "gpu-driver"},
    "rules": [
        {"apiGroups": ["resource.k8s.io"], "resources": ["resourceslices"],
         "verbs": ["get", "list", "watch", "create", "update", "patch", "delete"]},
        {"apiGroups": ["resource.k8s.io"], "resources": ["resourceclaims"], "verbs": ["get", "list", "watch"]},
        {"apiGroups": ["resource.k8s.io"], "resources": ["resourceclaims/status"], "verbs": ["get", "update", "patch"]},
        {"apiGroups": ["resource.k8s.io"], "resources": ["resourceclaims/driver"],
         "verbs": ["associated-node:update", "associated-node:patch"], "resourceNames": [DRIVER]},
        {"apiGroups": [""], "resources": ["nodes"], "verbs": ["get"]},
    ]}


@pytest.mark.parametrize("with_status_rule", [True, False], ids=["full-role", "no-claim-status-rule"])
def test_example_driver_with_exactly_its_cluster_role(secure, with_status_rule):
    server = secure.server
    role = json.loads(json.dumps(DRIVER_ROLE))
    if not with_status_rule:
        role["rules"] = [r for r in role["rules"] if r["resources"] != ["resourceclaims/driver"]]
    for path, obj in ((f"{RBAC}/clusterroles", role),
                      ("/api/v1/namespaces/kube-system/serviceaccounts",
                       {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "gpu-driver"}}),
                      (f"{RBAC}/clusterrolebindings",
                       {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
                        "metadata": {"name": "gpu-driver"},
                        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                                    "name": "gpu-driver"},
                        "subjects": [{"kind": "ServiceAccount", "name": "gpu-driver", "namespace": "kube-system"}]})):
        code, _, body = server.request("POST", path, obj)
        assert code == 201, body
    root = tempfile.mkdtemp(prefix="dka-", dir="/tmp")
    procs = []
    try:
        kubelet_kc = secure.kubeconfig("--user", "system:node:node-1", "--group", "system:nodes")
        reg, plugins, cdi = (os.path.join(root, d) for d in ("reg", "plugins", "cdi"))
        kubelet_log = open(os.path.join(secure.tmp, "kubelet.log"), "w")  # noqa: SIM115 - closed below
        procs.append(subprocess.Popen([sys.executable, "-m", "dramock.kubelet", "--kubeconfig", kubelet_kc,
                                       "--node-name", "node-1", "--plugins-registry-dir", reg, "--plugins-dir",
                                       plugins], stdout=kubelet_log, stderr=subprocess.STDOUT))
        wait_for(lambda: server.request("GET", "/api/v1/nodes/node-1")[0] == 200, timeout=30, what="node-1")
        driver_kc = secure.kubeconfig("--service-account", "kube-system/gpu-driver", "--bound-node", "node-1")
        driver_log_path = os.path.join(secure.tmp, "driver.log")
        driver_log = open(driver_log_path, "w")  # noqa: SIM115 - closed below
        procs.append(subprocess.Popen([sys.executable, "-m", "dramock.kubelet.exampledriver", "--kubeconfig",
                                       driver_kc, "--node-name", "node-1", "--plugins-registry-dir", reg,
                                       "--plugins-dir", plugins, "--cdi-dir", cdi, "--devices", "2"],
                                      stdout=driver_log, stderr=subprocess.STDOUT))

        def slices():
            return server.request("GET", f"{V1}/resourceslices?fieldSelector=spec.nodeName%3Dnode-1")[2]["items"]
        wait_for(slices, timeout=30, what="the driver's slices, published over TLS")
        claim = make_claim(server, "c1")
        pod = make_pod(server, "p1", "c1")
        allocate(server, "c1", "node-1", ["gpu-0"], [ref(pod)])
        code, _, body = server.request("POST", "/api/v1/namespaces/default/pods/p1/binding", {
            "apiVersion": "v1", "kind": "Binding", "metadata": {"name": "p1"},
            "target": {"apiVersion": "v1", "kind": "Node", "name": "node-1"}})
        assert code == 201, body
        if with_status_rule:
            wait_for(lambda: phase(server, "p1") == "Running", timeout=30, what="pod running")
            _, _, got = server.request("GET", f"{V1}/namespaces/default/resourceclaims/c1")
            assert [d["device"] for d in got["status"]["devices"]] == ["gpu-0"]
            assert got["metadata"]["uid"] == claim["metadata"]["uid"]
        else:
            def refused():
                with open(driver_log_path) as f:
                    text = f.read()
                # A validation error of the status strategy upstream: 422, a Forbidden cause on status.devices.
                return "422" in text and "resourceclaims/driver" in text and text
            text = wait_for(refused, timeout=30, what="the driver's status write refused")
            assert ('User "system:serviceaccount:kube-system:gpu-driver" cannot associated-node:update resource '
                    '"resourceclaims/driver" in API group "resource.k8s.io" in the namespace "default"') in text
            _, _, got = server.request("GET", f"{V1}/namespaces/default/resourceclaims/c1")
            assert not got["status"].get("devices")
    finally:
        for p in procs:
            stop_process(p)
        shutil.rmtree(root, ignore_errors=True)


def test_writing_an_allocation_needs_resourceclaims_binding(secure):
    """DRAResourceClaimGranularStatusAuthorization: resourceclaims/status alone does not let a client write
    status.allocation or status.reservedFor; upstream asks for `update` on resourceclaims/binding at the
    cluster scope, and refuses as its status strategy does (422 with a Forbidden cause on `status`)."""
    admin = secure.kubeconfig("--user", "root", "--group", "system:masters")
    alloc = secure.kubeconfig("--user", "allocator")
    secure.kubectl(admin, "create", "clusterrole", "claim-status", "--verb=get,update",
                   "--resource=resourceclaims.resource.k8s.io,resourceclaims.resource.k8s.io/status", check=True)
    secure.kubectl(admin, "create", "clusterrolebinding", "claim-status", "--clusterrole=claim-status",
                   "--user=allocator", check=True)
    make_claim(secure.server, "c1")
    _, _, claim = secure.server.request("GET", f"{V1}/namespaces/default/resourceclaims/c1")
    claim["status"] = {"allocation": {"devices": {"results": [
        {"request": "r", "driver": DRIVER, "pool": "node-1", "device": "gpu-0"}]}}}
    manifest = os.path.join(secure.tmp, "allocated.json")
    with open(manifest, "w") as f:
        json.dump(claim, f)

    res = secure.kubectl(alloc, "replace", "--subresource=status", "-f", manifest)
    assert res.returncode == 1
    assert ('The ResourceClaim "c1" is invalid: status: Forbidden: User "allocator" cannot update resource '
            '"resourceclaims/binding" in API group "resource.k8s.io" at the cluster scope') in res.stderr
    _, _, stored = secure.server.request("GET", f"{V1}/namespaces/default/resourceclaims/c1")
    assert not (stored.get("status") or {}).get("allocation")

    # A Role in the namespace does not grant it (the check has no namespace); a ClusterRole does.
    secure.kubectl(admin, "create", "role", "binding", "-n", "default", "--verb=update",
                   "--resource=resourceclaims.resource.k8s.io/binding", check=True)
    secure.kubectl(admin, "create", "rolebinding", "binding", "-n", "default", "--role=binding",
                   "--user=allocator", check=True)
    assert secure.kubectl(alloc, "replace", "--subresource=status", "-f", manifest).returncode == 1
    secure.kubectl(admin, "create", "clusterrole", "binding", "--verb=update",
                   "--resource=resourceclaims.resource.k8s.io/binding", check=True)
    secure.kubectl(admin, "create", "clusterrolebinding", "binding", "--clusterrole=binding", "--user=allocator",
                   check=True)
    secure.kubectl(alloc, "replace", "--subresource=status", "-f", manifest, check=True)
    _, _, stored = secure.server.request("GET", f"{V1}/namespaces/default/resourceclaims/c1")
    assert stored["status"]["allocation"]["devices"]["results"][0]["device"] == "gpu-0"


def test_serve_runs_its_components_under_their_own_identities(tmp_path):
    """`serve` with the secure port: the scheduler, kubelet shims and the example driver are clients of the
    secure port as system:kube-scheduler, system:node:<name> and a ServiceAccount with its own ClusterRole, and
    a pod with a claim still runs."""
    port = free_port()
    server = start_server(str(tmp_path), "--secure-port", str(port), "--nodes", "1", command="serve")
    try:
        wait_for(lambda: server.request("GET", f"{V1}/resourceslices")[2].get("items"), timeout=60,
                 what="the example driver's slices")
        code, _, role = server.request("GET", f"{RBAC}/clusterroles/dramock-example-driver")
        assert code == 200 and {"associated-node:update", "associated-node:patch"} in [
            set(r["verbs"]) for r in role["rules"]]
        # The controller manager's clusterrole-aggregation controller fills in the aggregated roles, a user's too.
        server.request("POST", f"{RBAC}/clusterroles", {
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
            "metadata": {"name": "view-gpus", "labels": {"rbac.authorization.k8s.io/aggregate-to-view": "true"}},
            "rules": [{"apiGroups": ["resource.k8s.io"], "resources": ["deviceclasses"], "verbs": ["get"]}]})

        def view_rules():
            rules = server.request("GET", f"{RBAC}/clusterroles/view")[2].get("rules") or []
            return rules if any("deviceclasses" in r["resources"] for r in rules) else None
        rules = wait_for(view_rules, timeout=30, what="the aggregated view role")
        assert any("resourceclaims" in r["resources"] for r in rules)
        components = sorted(os.listdir(os.path.join(server.data_dir, "pki", "components")))
        assert {"kubelet-node-1.crt", "scheduler.crt"} <= set(components)
        server.kubectl("apply", "-f", os.path.join(os.path.dirname(__file__), "..", "examples", "quickstart",
                                                   "quickstart.yaml"))
        wait_for(lambda: (server.request("GET", "/api/v1/namespaces/quickstart/pods/gpu-pod")[2].get("status")
                          or {}).get("phase") == "Running", timeout=60, what="the quickstart pod running")
        _, _, claim = server.request("GET", f"{V1}/namespaces/quickstart/resourceclaims/single-gpu")
        assert [d["driver"] for d in claim["status"]["devices"]] == [DRIVER]
        # The driver's token is a ServiceAccount's, bound to its node.
        sa = Secure(server, port, str(tmp_path)).kubeconfig("--service-account", "kube-system/dramock-example-driver")
        assert json.loads(subprocess.run([KUBECTL, "--kubeconfig", sa, "auth", "whoami", "-o", "json"],
                                         capture_output=True, text=True, check=True, timeout=60).stdout)[
            "status"]["userInfo"]["username"] == "system:serviceaccount:kube-system:dramock-example-driver"
    finally:
        stop(server)


def test_kubeconfig_for_the_example_driver_waits_for_its_node(secure):
    """`dramock kubeconfig --example-driver DRIVER --bound-node NODE` (what the compose stack's driver-token services
    run): the driver's DeviceClass, ServiceAccount, ClusterRole and binding as `serve` makes them, and, once the
    Node is there (--wait), a token bound to it. Without --wait a missing Node fails at once with the server's
    message."""
    server = secure.server
    base = [sys.executable, "-m", "dramock", "kubeconfig", "--data-dir", server.data_dir, "--port", str(server.port),
            "--secure-port", str(secure.port), "--example-driver", DRIVER, "--bound-node", "node-9"]
    res = subprocess.run(base, capture_output=True, text=True, timeout=60)
    assert res.returncode == 1 and 'nodes "node-9" not found' in res.stderr, res.stderr
    # The setup came first, as a chart's would: the class and the role exist already.
    assert server.request("GET", f"{V1}/deviceclasses/{DRIVER}")[0] == 200
    _, _, role = server.request("GET", f"{RBAC}/clusterroles/dramock-example-driver")
    assert {"apiGroups": ["resource.k8s.io"], "resources": ["resourceclaims/driver"], "resourceNames": [DRIVER],
            "verbs": ["associated-node:update", "associated-node:patch"]} in role["rules"]
    # Once it has set up again (the class is back), it is waiting for the Node.
    assert server.request("DELETE", f"{V1}/deviceclasses/{DRIVER}")[0] == 200
    out = os.path.join(secure.tmp, "driver.kubeconfig")
    with open(out, "w") as f:
        waiting = subprocess.Popen([*base, "--wait", "60"], stdout=f, stderr=subprocess.PIPE, text=True)
    try:
        wait_for(lambda: server.request("GET", f"{V1}/deviceclasses/{DRIVER}")[0] == 200, timeout=30,
                 what="the example driver's DeviceClass again")
        assert waiting.poll() is None, waiting.communicate()[1]
        code, _, body = server.request("POST", "/api/v1/nodes", {"apiVersion": "v1", "kind": "Node",
                                                                 "metadata": {"name": "node-9"}})
        assert code == 201, body
        _, err = waiting.communicate(timeout=60)
        assert waiting.returncode == 0, err
    finally:
        if waiting.poll() is None:
            stop_process(waiting)
    info = json.loads(secure.kubectl(out, "auth", "whoami", "-o", "json", check=True).stdout)["status"]["userInfo"]
    assert info["username"] == "system:serviceaccount:kube-system:dramock-example-driver"
    assert info["extra"]["authentication.kubernetes.io/node-name"] == ["node-9"]
    assert secure.kubectl(out, "auth", "can-i", "associated-node:update", f"resourceclaims.resource.k8s.io/{DRIVER}",
                          "--subresource", "driver").stdout.strip() == "yes"
