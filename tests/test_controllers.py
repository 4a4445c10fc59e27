"""Controllers end to end: a real `serve` process (no nodes), real HTTP and kubectl.

ResourceClaim controller (claims from templates, pod status, reservedFor cleanup, deallocation, deleting
claims of finished pods) and the garbage collector (background, foreground, orphan).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

from tests.helpers import Server, create, get, make_ns, start_server, stop, wait_for

POD_CLAIM_ANNOTATION = "resource.kubernetes.io/pod-claim-name"
FINALIZER = "resource.kubernetes.io/delete-protection"


@pytest.fixture(scope="module")
def serve(tmp_path_factory, starts_processes) -> Iterator[Server]:
    s = start_server(str(tmp_path_factory.mktemp("controllers")), "--nodes", "0", command="serve")
    yield s
    stop(s)


@pytest.fixture
def ns(serve: Server) -> str:
    return make_ns(serve, "ctl")


def template(ns: str, name: str = "gpu-template") -> dict:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
            "metadata": {"name": name, "namespace": ns},
            "spec": {"metadata": {"labels": {"app": "inference"}, "annotations": {"team": "ml"}},
                     "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {
                         "deviceClassName": "gpu.example.com"}}]}}}}


def pod(ns: str, name: str, claims: list[dict], node: str = "") -> dict:
    spec: dict = {"containers": [{"name": "c", "image": "busybox",
                                  "resources": {"claims": [{"name": c["name"]} for c in claims]}}],
                  "resourceClaims": claims}
    if node:
        spec["nodeName"] = node
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": ns}, "spec": spec}


def claims_path(ns: str, name: str = "") -> str:
    return f"/apis/resource.k8s.io/v1/namespaces/{ns}/resourceclaims" + (f"/{name}" if name else "")


def configmap(ns: str, name: str, owners: list[dict] = (), finalizers: list[str] = ()) -> dict:
    md: dict = {"name": name, "namespace": ns}
    if owners:
        md["ownerReferences"] = [{"apiVersion": "v1", "kind": "ConfigMap", "name": o["metadata"]["name"],
                                  "uid": o["metadata"]["uid"], "blockOwnerDeletion": True} for o in owners]
    if finalizers:
        md["finalizers"] = list(finalizers)
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": md, "data": {"k": "v"}}


def cm_path(ns: str, name: str = "") -> str:
    return f"/api/v1/namespaces/{ns}/configmaps" + (f"/{name}" if name else "")


def pod_claim_status(serve: Server, ns: str, name: str) -> list[dict]:
    p = get(serve, f"/api/v1/namespaces/{ns}/pods/{name}") or {}
    return (p.get("status") or {}).get("resourceClaimStatuses") or []


# ---------------------------------------------------------------- resource claims


def test_claim_created_from_template_and_recorded_in_pod_status(serve: Server, ns: str):
    create(serve, f"/apis/resource.k8s.io/v1/namespaces/{ns}/resourceclaimtemplates", template(ns))
    p = create(serve, f"/api/v1/namespaces/{ns}/pods",
               pod(ns, "trainer", [{"name": "gpu", "resourceClaimTemplateName": "gpu-template"}]))
    statuses = wait_for(lambda: pod_claim_status(serve, ns, "trainer"), what="pod resourceClaimStatuses")
    assert len(statuses) == 1 and statuses[0]["name"] == "gpu"
    claim_name = statuses[0]["resourceClaimName"]
    assert claim_name.startswith("trainer-gpu-") and len(claim_name) == len("trainer-gpu-") + 5
    claim = get(serve, claims_path(ns, claim_name))
    m = claim["metadata"]
    assert m["annotations"] == {"team": "ml", POD_CLAIM_ANNOTATION: "gpu"}
    assert m["labels"] == {"app": "inference"}
    assert m["ownerReferences"] == [{"apiVersion": "v1", "kind": "Pod", "name": "trainer",
                                     "uid": p["metadata"]["uid"], "controller": True, "blockOwnerDeletion": True}]
    assert claim["spec"]["devices"]["requests"][0]["exactly"]["deviceClassName"] == "gpu.example.com"
    # Exactly one claim, even though the controller saw the pod several times.
    items = get(serve, claims_path(ns))["items"]
    assert [c["metadata"]["name"] for c in items] == [claim_name]
    # The pod status is written by server-side apply of the controller.
    managers = {f["manager"] for f in get(serve, f"/api/v1/namespaces/{ns}/pods/trainer")["metadata"]["managedFields"]}
    assert "ResourceClaimController" in managers
    # kubectl sees the same.
    out = serve.kubectl("get", "pod", "trainer", "-n", ns, "-o", "jsonpath={.status.resourceClaimStatuses[0]."
                        "resourceClaimName}").stdout
    assert out == claim_name


def test_deleted_generated_claim_is_recreated(serve: Server, ns: str):
    create(serve, f"/apis/resource.k8s.io/v1/namespaces/{ns}/resourceclaimtemplates", template(ns))
    create(serve, f"/api/v1/namespaces/{ns}/pods",
           pod(ns, "p", [{"name": "gpu", "resourceClaimTemplateName": "gpu-template"}]))
    name = wait_for(lambda: pod_claim_status(serve, ns, "p"))[0]["resourceClaimName"]
    serve.kubectl("delete", "resourceclaim", name, "-n", ns, "--wait=false")
    wait_for(lambda: [c for c in get(serve, claims_path(ns))["items"]
                      if c["metadata"]["name"] != name], what="a new claim for the pod")


def test_pod_deleted_generated_claim_garbage_collected(serve: Server, ns: str):
    create(serve, f"/apis/resource.k8s.io/v1/namespaces/{ns}/resourceclaimtemplates", template(ns))
    create(serve, f"/api/v1/namespaces/{ns}/pods",
           pod(ns, "doomed", [{"name": "gpu", "resourceClaimTemplateName": "gpu-template"}]))
    name = wait_for(lambda: pod_claim_status(serve, ns, "doomed"))[0]["resourceClaimName"]
    serve.kubectl("delete", "pod", "doomed", "-n", ns, "--grace-period=0", "--force")
    wait_for(lambda: get(serve, claims_path(ns, name)) is None, what="generated claim garbage collected")


def test_claim_of_finished_pod_is_deleted(serve: Server, ns: str):
    create(serve, f"/apis/resource.k8s.io/v1/namespaces/{ns}/resourceclaimtemplates", template(ns))
    create(serve, f"/api/v1/namespaces/{ns}/pods",
           pod(ns, "job", [{"name": "gpu", "resourceClaimTemplateName": "gpu-template"}]))
    name = wait_for(lambda: pod_claim_status(serve, ns, "job"))[0]["resourceClaimName"]
    p = get(serve, f"/api/v1/namespaces/{ns}/pods/job")
    p["status"]["phase"] = "Succeeded"
    code, _, body = serve.request("PUT", f"/api/v1/namespaces/{ns}/pods/job/status", p)
    assert code == 200, body
    wait_for(lambda: get(serve, claims_path(ns, name)) is None, what="claim of a finished pod deleted")
    assert get(serve, f"/api/v1/namespaces/{ns}/pods/job") is not None


def allocated_claim(serve: Server, ns: str, name: str, reserved_for: list[dict]) -> dict:
    claim = create(serve, claims_path(ns), {
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
        "metadata": {"name": name, "namespace": ns, "finalizers": [FINALIZER]},
        "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu.example.com"}}]}}})
    claim["status"] = {
        "allocation": {"devices": {"results": [{"request": "gpu", "driver": "gpu.example.com", "pool": "node-1",
                                                "device": "gpu-0"}]},
                       "nodeSelector": {"nodeSelectorTerms": [{"matchFields": [
                           {"key": "metadata.name", "operator": "In", "values": ["node-1"]}]}]}},
        "reservedFor": reserved_for}
    code, _, body = serve.request("PUT", claims_path(ns, name) + "/status", claim)
    assert code == 200, body
    return body


def test_reserved_for_cleanup_and_deallocation(serve: Server, ns: str):
    a = create(serve, f"/api/v1/namespaces/{ns}/pods", pod(ns, "a", [{"name": "gpu", "resourceClaimName": "shared"}]))
    b = create(serve, f"/api/v1/namespaces/{ns}/pods", pod(ns, "b", [{"name": "gpu", "resourceClaimName": "shared"}]))
    allocated_claim(serve, ns, "shared", [
        {"resource": "pods", "name": "a", "uid": a["metadata"]["uid"]},
        {"resource": "pods", "name": "b", "uid": b["metadata"]["uid"]},
        {"resource": "pods", "name": "ghost", "uid": str(uuid.uuid4())}])

    def reserved() -> list[str]:
        return [r["name"] for r in (get(serve, claims_path(ns, "shared")).get("status") or {}).get("reservedFor", [])]

    wait_for(lambda: reserved() == ["a", "b"], what="the reservation of a pod that never existed removed")
    serve.kubectl("delete", "pod", "a", "-n", ns, "--grace-period=0", "--force")
    wait_for(lambda: reserved() == ["b"], what="the reservation of a deleted pod removed")
    claim = get(serve, claims_path(ns, "shared"))
    assert claim["status"]["allocation"] and FINALIZER in claim["metadata"]["finalizers"]
    # The last consumer finishing deallocates the claim and drops the finalizer; the claim itself stays.
    b = get(serve, f"/api/v1/namespaces/{ns}/pods/b")
    b["status"]["phase"] = "Failed"
    assert serve.request("PUT", f"/api/v1/namespaces/{ns}/pods/b/status", b)[0] == 200

    def deallocated():
        c = get(serve, claims_path(ns, "shared"))
        return c if not c.get("status", {}).get("allocation") and not c["metadata"].get("finalizers") else None

    c = wait_for(deallocated, what="claim deallocated")
    assert "reservedFor" not in c["status"]


def test_deleted_unused_claim_is_deallocated_and_goes(serve: Server, ns: str):
    allocated_claim(serve, ns, "idle", [])
    serve.kubectl("delete", "resourceclaim", "idle", "-n", ns, "--wait=false")
    wait_for(lambda: get(serve, claims_path(ns, "idle")) is None, what="deleted allocated claim finalized")


def test_bound_pod_gets_its_allocated_claim_reserved(serve: Server, ns: str):
    allocated_claim(serve, ns, "pre", [])
    p = create(serve, f"/api/v1/namespaces/{ns}/pods",
               pod(ns, "bound", [{"name": "gpu", "resourceClaimName": "pre"}], node="node-1"))

    def reserved():
        return (get(serve, claims_path(ns, "pre")).get("status") or {}).get("reservedFor")

    assert wait_for(reserved) == [{"resource": "pods", "name": "bound", "uid": p["metadata"]["uid"]}]


@pytest.mark.e2e
def test_controller_manager_subcommand(tmp_path):
    """`dramock controller-manager --kubeconfig` runs the controllers against an `apiserver` of its own."""
    import subprocess
    import sys

    s = start_server(str(tmp_path))
    cm = subprocess.Popen([sys.executable, "-m", "dramock", "controller-manager", "--kubeconfig", s.kubeconfig],
                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        owner = create(s, cm_path("default"), configmap("default", "owner"))
        create(s, cm_path("default"), configmap("default", "dep", [owner]))
        s.kubectl("delete", "configmap", "owner")
        wait_for(lambda: get(s, cm_path("default", "dep")) is None, what="dependent collected")
    finally:
        cm.terminate()
        cm.wait(timeout=10)
        stop(s)


# ---------------------------------------------------------------- garbage collector


def test_background_deletion_collects_dependents(serve: Server, ns: str):
    owner = create(serve, cm_path(ns), configmap(ns, "owner"))
    child = create(serve, cm_path(ns), configmap(ns, "child", [owner]))
    create(serve, cm_path(ns), configmap(ns, "grandchild", [child]))
    other = create(serve, cm_path(ns), configmap(ns, "other"))
    create(serve, cm_path(ns), configmap(ns, "two-owners", [owner, other]))
    serve.kubectl("delete", "configmap", "owner", "-n", ns, "--cascade=background")
    wait_for(lambda: get(serve, cm_path(ns, "child")) is None, what="child collected")
    wait_for(lambda: get(serve, cm_path(ns, "grandchild")) is None, what="grandchild collected")
    # An object with another owner that still exists stays; the dangling reference is removed.
    wait_for(lambda: [r["name"] for r in get(serve, cm_path(ns, "two-owners"))["metadata"]["ownerReferences"]]
             == ["other"], what="dangling ownerReference removed")


def test_dependent_of_a_discovered_kind_is_collected(serve: Server, ns: str):
    # The collector names no kind; it watches what discovery lists, here an rbac Role owned by a ConfigMap.
    owner = create(serve, cm_path(ns), configmap(ns, "role-owner"))
    roles = f"/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}/roles"
    create(serve, roles, {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
                          "metadata": {"name": "owned", "namespace": ns, "ownerReferences": [
                              {"apiVersion": "v1", "kind": "ConfigMap", "name": "role-owner",
                               "uid": owner["metadata"]["uid"]}]},
                          "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get"]}]})
    create(serve, roles, {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
                          "metadata": {"name": "unowned", "namespace": ns}, "rules": []})
    serve.kubectl("delete", "configmap", "role-owner", "-n", ns)
    wait_for(lambda: get(serve, f"{roles}/owned") is None, what="Role owned by the ConfigMap collected")
    # and a ConfigMap owned by a Role: owners are resolved through discovery too
    role = get(serve, f"{roles}/unowned")
    create(serve, cm_path(ns), {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {
        "name": "of-role", "namespace": ns, "ownerReferences": [
            {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "name": "unowned",
             "uid": role["metadata"]["uid"]}]}})
    serve.kubectl("delete", "role", "unowned", "-n", ns)
    wait_for(lambda: get(serve, cm_path(ns, "of-role")) is None, what="ConfigMap owned by the Role collected")


def test_namespace_deletion_empties_the_kinds_discovery_lists(serve: Server):
    ns = make_ns(serve, "nsdel")
    create(serve, f"/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}/roles",
           {"metadata": {"name": "r", "namespace": ns}, "rules": []})
    create(serve, cm_path(ns), configmap(ns, "cm"))
    create(serve, f"/api/v1/namespaces/{ns}/services",  # no deletecollection: deleted one by one
           {"metadata": {"name": "svc", "namespace": ns}, "spec": {"ports": [{"port": 80}]}})
    serve.kubectl("delete", "namespace", ns, "--wait=false")
    wait_for(lambda: get(serve, f"/api/v1/namespaces/{ns}") is None, 30, what="namespace emptied and finalized")
    assert get(serve, f"/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}/roles/r") is None


def test_dependent_created_for_missing_owner_is_collected(serve: Server, ns: str):
    ghost = {"metadata": {"name": "ghost", "uid": str(uuid.uuid4())}}
    create(serve, cm_path(ns), configmap(ns, "stray", [ghost]))
    wait_for(lambda: get(serve, cm_path(ns, "stray")) is None, what="dependent of a missing owner collected")


def test_owner_with_same_name_but_other_uid_does_not_keep_dependent(serve: Server, ns: str):
    first = create(serve, cm_path(ns), configmap(ns, "reborn"))
    assert serve.request("DELETE", cm_path(ns, "reborn"))[0] == 200
    create(serve, cm_path(ns), configmap(ns, "reborn"))
    create(serve, cm_path(ns), configmap(ns, "child-of-first", [first]))
    wait_for(lambda: get(serve, cm_path(ns, "child-of-first")) is None, what="dependent of the old uid collected")


def test_foreground_deletion_waits_for_blocking_dependents(serve: Server, ns: str):
    owner = create(serve, cm_path(ns), configmap(ns, "fg-owner"))
    create(serve, cm_path(ns), configmap(ns, "fg-held", [owner], finalizers=["example.com/hold"]))
    create(serve, cm_path(ns), configmap(ns, "fg-free", [owner]))
    serve.kubectl("delete", "configmap", "fg-owner", "-n", ns, "--cascade=foreground", "--wait=false")
    o = get(serve, cm_path(ns, "fg-owner"))
    assert o["metadata"]["finalizers"] == ["foregroundDeletion"] and o["metadata"]["deletionTimestamp"]
    wait_for(lambda: get(serve, cm_path(ns, "fg-free")) is None, what="free dependent deleted")
    held = wait_for(lambda: (get(serve, cm_path(ns, "fg-held")) or {}).get("metadata", {}).get("deletionTimestamp"),
                    what="held dependent marked for deletion")
    assert held
    # The owner waits for its blocking dependent.
    assert get(serve, cm_path(ns, "fg-owner"))["metadata"]["finalizers"] == ["foregroundDeletion"]
    code, _, body = serve.request("PATCH", cm_path(ns, "fg-held"), {"metadata": {"finalizers": None}},
                                  content_type="application/merge-patch+json")
    assert code == 200, body
    wait_for(lambda: get(serve, cm_path(ns, "fg-owner")) is None, what="owner gone after its dependents")


def test_foreground_owner_without_dependents_goes_at_once(serve: Server, ns: str):
    create(serve, cm_path(ns), configmap(ns, "lonely"))
    serve.kubectl("delete", "configmap", "lonely", "-n", ns, "--cascade=foreground", timeout=30)
    assert get(serve, cm_path(ns, "lonely")) is None


def test_orphan_deletion_keeps_dependents(serve: Server, ns: str):
    owner = create(serve, cm_path(ns), configmap(ns, "or-owner"))
    other = create(serve, cm_path(ns), configmap(ns, "or-other"))
    create(serve, cm_path(ns), configmap(ns, "or-child", [owner]))
    create(serve, cm_path(ns), configmap(ns, "or-both", [owner, other]))
    serve.kubectl("delete", "configmap", "or-owner", "-n", ns, "--cascade=orphan", timeout=30)
    assert get(serve, cm_path(ns, "or-owner")) is None
    child = get(serve, cm_path(ns, "or-child"))
    assert child is not None and "ownerReferences" not in child["metadata"]
    both = get(serve, cm_path(ns, "or-both"))
    assert [r["name"] for r in both["metadata"]["ownerReferences"]] == ["or-other"]


def test_delete_options_set_gc_finalizers(serve: Server, ns: str):
    """The apiserver side, as upstream's store: the policy becomes a finalizer; a later delete may switch it."""
    create(serve, cm_path(ns), configmap(ns, "held", finalizers=["example.com/hold"]))
    code, _, body = serve.request("DELETE", cm_path(ns, "held"), {"propagationPolicy": "Orphan"})
    assert code == 200, body
    assert body["metadata"]["finalizers"] == ["example.com/hold", "orphan"]
    # The garbage collector orphans the (no) dependents and removes its finalizer.
    wait_for(lambda: get(serve, cm_path(ns, "held"))["metadata"]["finalizers"] == ["example.com/hold"])
    code, _, body = serve.request("DELETE", cm_path(ns, "held") + "?propagationPolicy=Foreground")
    assert code == 200, body
    assert body["metadata"]["finalizers"] == ["example.com/hold", "foregroundDeletion"]
    wait_for(lambda: get(serve, cm_path(ns, "held"))["metadata"]["finalizers"] == ["example.com/hold"])
    code, _, body = serve.request("DELETE", cm_path(ns, "held"),
                                  {"propagationPolicy": "Orphan", "orphanDependents": True})
    assert code == 422 and body["details"]["causes"][0]["field"] == "propagationPolicy", body
    code, _, body = serve.request("DELETE", cm_path(ns, "held") + "?dryRun=All&propagationPolicy=Orphan")
    assert code == 200 and body["metadata"]["finalizers"] == ["example.com/hold", "orphan"], body
    assert get(serve, cm_path(ns, "held"))["metadata"]["finalizers"] == ["example.com/hold"]
    code, _, body = serve.request("PATCH", cm_path(ns, "held"), {"metadata": {"finalizers": None}},
                                  content_type="application/merge-patch+json")
    assert code == 200, body
    wait_for(lambda: get(serve, cm_path(ns, "held")) is None, what="held configmap gone")


def test_dry_run_foreground_leaves_object_alone(serve: Server, ns: str):
    create(serve, cm_path(ns), configmap(ns, "dry"))
    code, _, body = serve.request("DELETE", cm_path(ns, "dry") + "?dryRun=All&propagationPolicy=Foreground")
    assert code == 200 and body["metadata"]["finalizers"] == ["foregroundDeletion"], body
    assert "finalizers" not in get(serve, cm_path(ns, "dry"))["metadata"]


def test_metrics_collector_counts_claims():
    from prometheus_client import CollectorRegistry

    from dramock.client.rest import Client
    from dramock.controllers.resourceclaim import ResourceClaimController, register_metrics

    c = ResourceClaimController(Client("http://127.0.0.1:1", "test"))
    c.claims.cache["ns/a"] = {"metadata": {"name": "a", "namespace": "ns",
                                           "annotations": {POD_CLAIM_ANNOTATION: "gpu"}},
                              "spec": {"devices": {"requests": [{"name": "r", "exactly": {"adminAccess": True}}]}}}
    c.claims.cache["ns/b"] = {"metadata": {"name": "b", "namespace": "ns"}, "status": {"allocation": {}}}
    c.claims.cache["ns/c"] = {"metadata": {"name": "c", "namespace": "ns"}, "status": {"allocation": {"x": 1}}}
    reg = CollectorRegistry()
    assert register_metrics(c, reg)
    value = reg.get_sample_value
    assert value("dynamic_resource_allocation_resource_claims",
                 {"allocated": "false", "admin_access": "true", "source": "resource_claim_template"}) == 1
    assert value("dynamic_resource_allocation_resource_claims",
                 {"allocated": "false", "admin_access": "false", "source": ""}) == 1
    assert value("dynamic_resource_allocation_resource_claims",
                 {"allocated": "true", "admin_access": "false", "source": ""}) == 1
