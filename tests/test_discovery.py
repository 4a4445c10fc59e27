"""Discovery and OpenAPI documents, compared with what a 1.37 kube-apiserver serves."""

from __future__ import annotations

import base64
import hashlib
import json

import pytest

from dramock.apiserver import discovery, openapi
from dramock.registry import Registry

registry = Registry.default()

KUBECTL_DISCOVERY_ACCEPT = (
    "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,"
    "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json"
)


def by_name(entries, key="name"):
    return {e[key]: e for e in entries}


# --- /version -----------------------------------------------------------------------------------------


def test_version_info_fields():
    v = discovery.version_info()
    assert list(v) == ["major", "minor", "emulationMajor", "emulationMinor", "minCompatibilityMajor",
                       "minCompatibilityMinor", "gitVersion", "gitCommit", "gitTreeState", "buildDate",
                       "goVersion", "compiler", "platform"]
    assert (v["major"], v["minor"], v["gitVersion"]) == ("1", "37", "v1.37.0")
    assert (v["emulationMajor"], v["emulationMinor"]) == ("1", "37")
    assert (v["minCompatibilityMajor"], v["minCompatibilityMinor"]) == ("1", "36")
    assert v["gitTreeState"] == "clean" and v["compiler"] == "gc"
    assert v["goVersion"].startswith("go1.") and v["platform"].startswith("linux/")
    assert len(v["gitCommit"]) == 40


# --- legacy discovery ---------------------------------------------------------------------------------


def test_core_versions():
    assert discovery.core_versions("10.0.0.1:6443") == {
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": "10.0.0.1:6443"}],
    }


def test_group_list_in_upstream_priority_order():
    gl = discovery.group_list()
    assert gl["kind"] == "APIGroupList" and gl["apiVersion"] == "v1"
    assert [g["name"] for g in gl["groups"]] == ["apps", "events.k8s.io", "authentication.k8s.io",
                                                 "authorization.k8s.io", "batch", "rbac.authorization.k8s.io",
                                                 "coordination.k8s.io", "resource.k8s.io"]
    assert by_name(gl["groups"])["resource.k8s.io"] == {
        "name": "resource.k8s.io",
        "versions": [{"groupVersion": "resource.k8s.io/v1", "version": "v1"}],
        "preferredVersion": {"groupVersion": "resource.k8s.io/v1", "version": "v1"},
    }


def test_group():
    assert discovery.group("resource.k8s.io") == {
        "kind": "APIGroup",
        "apiVersion": "v1",
        "name": "resource.k8s.io",
        "versions": [{"groupVersion": "resource.k8s.io/v1", "version": "v1"}],
        "preferredVersion": {"groupVersion": "resource.k8s.io/v1", "version": "v1"},
    }
    assert discovery.group("policy") is None
    assert discovery.group("") is None


def _svh(gvk: str) -> str:
    return base64.b64encode(hashlib.sha256(gvk.encode()).digest()[:8]).decode()


def test_resource_list_resource_group():
    rl = discovery.resource_list("resource.k8s.io", "v1")
    assert rl["kind"] == "APIResourceList" and rl["apiVersion"] == "v1"
    assert rl["groupVersion"] == "resource.k8s.io/v1"
    names = [r["name"] for r in rl["resources"]]
    assert names == ["deviceclasses", "devicetaintrules", "devicetaintrules/status", "resourceclaims",
                     "resourceclaims/status", "resourceclaimtemplates", "resourceslices"]
    res = by_name(rl["resources"])
    assert res["resourceclaims"] == {
        "name": "resourceclaims",
        "singularName": "resourceclaim",
        "namespaced": True,
        "kind": "ResourceClaim",
        "verbs": ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"],
        "storageVersionHash": _svh("resource.k8s.io/v1/ResourceClaim"),
    }
    assert res["resourceclaims/status"] == {
        "name": "resourceclaims/status", "singularName": "", "namespaced": True, "kind": "ResourceClaim",
        "verbs": ["get", "patch", "update"],
    }
    assert res["deviceclasses"]["namespaced"] is False
    assert "shortNames" not in res["deviceclasses"]


def test_resource_list_core():
    rl = discovery.resource_list("", "v1")
    assert "apiVersion" not in rl  # /api/v1 is served without one
    assert rl["groupVersion"] == "v1"
    res = by_name(rl["resources"])
    assert res["pods"]["shortNames"] == ["po"] and res["pods"]["categories"] == ["all"]
    # The well-known upstream storage version hashes.
    assert res["pods"]["storageVersionHash"] == "xPOwRZ+Yhw8="
    assert res["configmaps"]["storageVersionHash"] == "qFsyl6wFWjQ="
    assert res["pods/binding"] == {"name": "pods/binding", "singularName": "", "namespaced": True,
                                   "kind": "Binding", "verbs": ["create"]}
    assert res["namespaces/finalize"] == {"name": "namespaces/finalize", "singularName": "",
                                          "namespaced": False, "kind": "Namespace", "verbs": ["update"]}
    assert res["namespaces"]["verbs"] == ["create", "delete", "get", "list", "patch", "update", "watch"]
    assert res["resourcequotas"]["shortNames"] == ["quota"]
    assert [r["name"] for r in rl["resources"]] == sorted(r["name"] for r in rl["resources"])
    assert discovery.resource_list("resource.k8s.io", "v1beta1") is None


def test_events_group_shares_core_storage_hash():
    ev = by_name(discovery.resource_list("events.k8s.io", "v1")["resources"])["events"]
    core = by_name(discovery.resource_list("", "v1")["resources"])["events"]
    assert ev["storageVersionHash"] == core["storageVersionHash"] == _svh("/v1/Event")
    assert ev["shortNames"] == ["ev"]


# --- aggregated discovery -----------------------------------------------------------------------------


def test_negotiate_discovery_form():
    assert discovery.negotiate(KUBECTL_DISCOVERY_ACCEPT) == discovery.Form(aggregated=True)
    assert discovery.negotiate("application/json, */*") == discovery.Form()
    assert discovery.negotiate(None) == discovery.Form()
    assert discovery.negotiate("application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList") == \
        discovery.Form()
    assert discovery.negotiate(
        "application/json,application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList") == discovery.Form()
    # client-go set to protobuf (kube-scheduler, kube-controller-manager) asks for the protobuf form first.
    assert discovery.negotiate(discovery.AGGREGATED_V2_PROTOBUF + "," + discovery.AGGREGATED_V2 + ";q=0.9") == \
        discovery.Form(aggregated=True, protobuf=True)
    assert discovery.negotiate("application/vnd.kubernetes.protobuf, application/json") == \
        discovery.Form(protobuf=True)
    assert discovery.AGGREGATED_V2 == "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"


def test_aggregated_core():
    doc = discovery.aggregated(core=True)
    assert doc["kind"] == "APIGroupDiscoveryList" and doc["apiVersion"] == "apidiscovery.k8s.io/v2"
    assert doc["metadata"] == {}
    (item,) = doc["items"]
    assert item["metadata"] == {}
    (v1,) = item["versions"]
    assert v1["version"] == "v1" and v1["freshness"] == "Current"
    pods = by_name(v1["resources"], "resource")["pods"]
    assert pods == {
        "resource": "pods",
        "responseKind": {"group": "", "version": "v1", "kind": "Pod"},
        "scope": "Namespaced",
        "singularResource": "pod",
        "verbs": ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"],
        "shortNames": ["po"],
        "categories": ["all"],
        "subresources": [
            {"subresource": "attach", "responseKind": {"group": "", "version": "v1", "kind": "PodAttachOptions"},
             "verbs": ["create", "get"]},
            {"subresource": "binding", "responseKind": {"group": "", "version": "v1", "kind": "Binding"},
             "verbs": ["create"]},
            {"subresource": "exec", "responseKind": {"group": "", "version": "v1", "kind": "PodExecOptions"},
             "verbs": ["create", "get"]},
            {"subresource": "log", "responseKind": {"group": "", "version": "v1", "kind": "Pod"},
             "verbs": ["get"]},
            {"subresource": "portforward",
             "responseKind": {"group": "", "version": "v1", "kind": "PodPortForwardOptions"},
             "verbs": ["create", "get"]},
            {"subresource": "status", "responseKind": {"group": "", "version": "v1", "kind": "Pod"},
             "verbs": ["get", "patch", "update"]},
        ],
    }
    ns = by_name(v1["resources"], "resource")["namespaces"]
    assert ns["scope"] == "Cluster"
    assert [s["subresource"] for s in ns["subresources"]] == ["finalize", "status"]


def test_aggregated_groups_match_kubectl_api_resources():
    doc = discovery.aggregated(core=False)
    assert [i["metadata"] for i in doc["items"]] == [
        {"name": "apps"}, {"name": "events.k8s.io"}, {"name": "authentication.k8s.io"},
        {"name": "authorization.k8s.io"}, {"name": "batch"}, {"name": "rbac.authorization.k8s.io"},
        {"name": "coordination.k8s.io"},
        {"name": "resource.k8s.io"}]
    res_group = doc["items"][7]
    (v1,) = res_group["versions"]
    rows = [(r["resource"], r.get("shortNames", []), r["scope"], r["responseKind"]["kind"])
            for r in v1["resources"]]
    assert rows == [
        ("deviceclasses", [], "Cluster", "DeviceClass"),
        ("devicetaintrules", [], "Cluster", "DeviceTaintRule"),
        ("resourceclaims", [], "Namespaced", "ResourceClaim"),
        ("resourceclaimtemplates", [], "Namespaced", "ResourceClaimTemplate"),
        ("resourceslices", [], "Cluster", "ResourceSlice"),
    ]
    claims = v1["resources"][2]
    assert claims["subresources"] == [{
        "subresource": "status",
        "responseKind": {"group": "resource.k8s.io", "version": "v1", "kind": "ResourceClaim"},
        "verbs": ["get", "patch", "update"],
    }]
    assert "subresources" not in v1["resources"][0]


def test_aggregated_bytes_cached_with_etag():
    body, etag = discovery.aggregated_bytes(False)
    assert json.loads(body) == discovery.aggregated(False)
    assert etag.startswith('"') and etag.endswith('"') and len(etag) == 130
    assert discovery.aggregated_bytes(False)[0] is body


# --- OpenAPI ------------------------------------------------------------------------------------------


def test_v3_index():
    idx = openapi.v3_index()
    assert sorted(idx["paths"]) == list(idx["paths"])
    groups = ("resource.k8s.io", "events.k8s.io", "coordination.k8s.io", "apps", "batch", "authentication.k8s.io",
              "authorization.k8s.io", "rbac.authorization.k8s.io")
    assert {"api/v1", "api", "apis", "version", *(f"apis/{g}" for g in groups),
            *(f"apis/{g}/v1" for g in groups)} == set(idx["paths"])
    url = idx["paths"]["apis/resource.k8s.io/v1"]["serverRelativeURL"]
    body, digest = openapi.v3_bytes("apis/resource.k8s.io/v1")
    assert url == f"/openapi/v3/apis/resource.k8s.io/v1?hash={digest}"
    assert digest == hashlib.sha512(body).hexdigest().upper()


def test_v3_resource_document_schemas():
    doc = openapi.v3_document("apis/resource.k8s.io/v1")
    assert doc["openapi"] == "3.0.0" and doc["info"] == {"title": "Kubernetes", "version": "v1.37.0"}
    schemas = doc["components"]["schemas"]
    claim = schemas["io.k8s.api.resource.v1.ResourceClaim"]
    assert claim["type"] == "object"
    assert claim["x-kubernetes-group-version-kind"] == [
        {"group": "resource.k8s.io", "kind": "ResourceClaim", "version": "v1"}]
    assert claim["properties"]["apiVersion"] == {
        "description": claim["properties"]["apiVersion"]["description"], "type": "string"}
    assert claim["properties"]["spec"]["allOf"] == [
        {"$ref": "#/components/schemas/io.k8s.api.resource.v1.ResourceClaimSpec"}]
    req = schemas["io.k8s.api.resource.v1.DeviceRequest"]
    assert req["properties"]["exactly"]["allOf"] == [
        {"$ref": "#/components/schemas/io.k8s.api.resource.v1.ExactDeviceRequest"}]
    assert req["properties"]["firstAvailable"]["type"] == "array"
    assert req["properties"]["firstAvailable"]["items"] == {
        "$ref": "#/components/schemas/io.k8s.api.resource.v1.DeviceSubRequest"}
    assert req["required"] == ["name"]
    assert schemas["io.k8s.apimachinery.pkg.api.resource.Quantity"]["type"] == "string"
    assert "oneOf" not in schemas["io.k8s.apimachinery.pkg.api.resource.Quantity"]
    for name in ("io.k8s.apimachinery.pkg.apis.meta.v1.DeleteOptions", "io.k8s.apimachinery.pkg.apis.meta.v1.Patch",
                 "io.k8s.apimachinery.pkg.apis.meta.v1.Status", "io.k8s.api.resource.v1.ResourceClaimList",
                 "io.k8s.api.core.v1.NodeSelector"):
        assert name in schemas
    # Only what the group-version reaches.
    assert "io.k8s.api.core.v1.Pod" not in schemas
    assert "io.k8s.api.resource.v1beta1.ResourceClaim" not in schemas
    text = json.dumps(doc)
    assert "#/$defs/" not in text and '"null"' not in text


def test_v3_core_document_has_pod_resource_claims():
    schemas = openapi.v3_document("api/v1")["components"]["schemas"]
    prop = schemas["io.k8s.api.core.v1.PodSpec"]["properties"]["resourceClaims"]
    assert prop["items"] == {"$ref": "#/components/schemas/io.k8s.api.core.v1.PodResourceClaim"}
    assert prop["x-kubernetes-list-map-keys"] == ["name"]
    assert prop["x-kubernetes-patch-strategy"] == "merge,retainKeys"
    assert schemas["io.k8s.apimachinery.pkg.util.intstr.IntOrString"] == {
        "description": schemas["io.k8s.apimachinery.pkg.util.intstr.IntOrString"]["description"],
        "format": "int-or-string", "type": "string"}


def test_v3_paths_and_operations():
    paths = openapi.v3_document("apis/resource.k8s.io/v1")["paths"]
    item = paths["/apis/resource.k8s.io/v1/namespaces/{namespace}/resourceclaims/{name}"]
    assert set(item) == {"delete", "get", "parameters", "patch", "put"}
    assert [p["name"] for p in item["parameters"]] == ["name", "namespace", "pretty"]
    patch = item["patch"]
    assert patch["operationId"] == "patchResourceV1NamespacedResourceClaim"
    assert patch["x-kubernetes-action"] == "patch"
    assert patch["x-kubernetes-group-version-kind"] == {
        "group": "resource.k8s.io", "kind": "ResourceClaim", "version": "v1"}
    assert [p["name"] for p in patch["parameters"]] == ["dryRun", "fieldManager", "fieldValidation", "force"]
    assert patch["parameters"][2]["in"] == "query"
    assert set(patch["requestBody"]["content"]) >= {
        "application/json-patch+json", "application/merge-patch+json",
        "application/strategic-merge-patch+json", "application/apply-patch+yaml"}
    assert [p["name"] for p in item["put"]["parameters"]] == ["dryRun", "fieldManager", "fieldValidation"]
    assert item["delete"]["responses"]["200"]["content"]["application/json"]["schema"] == {
        "$ref": "#/components/schemas/io.k8s.api.resource.v1.ResourceClaim"}  # ReturnDeletedObject
    coll = paths["/apis/resource.k8s.io/v1/namespaces/{namespace}/resourceclaims"]
    assert coll["post"]["operationId"] == "createResourceV1NamespacedResourceClaim"
    assert [p["name"] for p in coll["post"]["parameters"]] == ["dryRun", "fieldManager", "fieldValidation"]
    assert coll["get"]["x-kubernetes-action"] == "list"
    assert "/apis/resource.k8s.io/v1/resourceclaims" in paths  # list across namespaces
    status = paths["/apis/resource.k8s.io/v1/namespaces/{namespace}/resourceclaims/{name}/status"]
    assert status["patch"]["operationId"] == "patchResourceV1NamespacedResourceClaimStatus"
    assert "/apis/resource.k8s.io/v1/deviceclasses/{name}" in paths
    assert "/apis/resource.k8s.io/v1/" in paths

    core = openapi.v3_document("api/v1")["paths"]
    binding = core["/api/v1/namespaces/{namespace}/pods/{name}/binding"]["post"]
    assert binding["x-kubernetes-group-version-kind"] == {"group": "", "kind": "Binding", "version": "v1"}
    assert core["/api/v1/namespaces/{name}/finalize"]["put"]["operationId"] == "replaceCoreV1NamespaceFinalize"
    cm_delete = core["/api/v1/namespaces/{namespace}/configmaps/{name}"]["delete"]
    assert cm_delete["responses"]["200"]["content"]["application/json"]["schema"] == {
        "$ref": "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.Status"}


def test_v3_response_hash_semantics():
    body, digest = openapi.v3_bytes("api/v1")
    status, headers, out = openapi.v3_response("api/v1", digest)
    assert status == 200 and out is body
    assert headers["Content-Type"] == "application/json" and headers["ETag"] == f'"{digest}"'
    assert headers["Cache-Control"] == "public, immutable"
    status, headers, _ = openapi.v3_response("api/v1", "STALE")
    assert status == 301 and headers["Location"] == f"/openapi/v3/api/v1?hash={digest}"
    status, headers, _ = openapi.v3_response("api/v1", None)
    assert status == 200 and "Cache-Control" not in headers
    assert openapi.v3_response("apis/policy/v1", None)[0] == 404


def test_v2_document():
    doc = openapi.v2_document()
    assert doc["swagger"] == "2.0"
    defs_ = doc["definitions"]
    assert defs_["io.k8s.apimachinery.pkg.util.intstr.IntOrString"]["format"] == "int-or-string"
    assert defs_["io.k8s.apimachinery.pkg.api.resource.Quantity"]["type"] == "string"
    spec = defs_["io.k8s.api.resource.v1.ResourceClaim"]["properties"]["spec"]
    assert spec["$ref"] == "#/definitions/io.k8s.api.resource.v1.ResourceClaimSpec" and "description" in spec
    patch = doc["paths"]["/api/v1/namespaces/{namespace}/pods/{name}"]["patch"]
    assert patch["x-kubernetes-group-version-kind"] == {"group": "", "kind": "Pod", "version": "v1"}
    names = [p["name"] for p in patch["parameters"]]
    assert names == ["body", "dryRun", "fieldManager", "fieldValidation", "force"]
    assert patch["parameters"][3] == {**patch["parameters"][3], "in": "query", "type": "string"}
    assert "application/strategic-merge-patch+json" in patch["consumes"]
    post = doc["paths"]["/apis/resource.k8s.io/v1/deviceclasses"]["post"]
    assert [p["name"] for p in post["parameters"]] == ["body", "dryRun", "fieldManager", "fieldValidation"]
    body, _etag = openapi.v2_bytes()
    assert json.loads(body)["swagger"] == "2.0"
    assert openapi.v2_bytes()[0] is body


@pytest.mark.parametrize("accept,status", [
    ("application/json", 200), ("application/json, */*", 200), (None, 200),
    ("application/com.github.proto-openapi.spec.v2@v1.0+protobuf", 200), ("text/html", 406),
])
def test_v2_response_negotiation(accept, status):
    assert openapi.v2_response(accept)[0] == status


def test_every_served_kind_has_a_v3_patch_operation():
    for g, v in registry.group_versions:
        paths = openapi.v3_document(openapi.v3_path_of(g, v))["paths"]
        for k in registry.kinds_in(g, v):
            if "patch" not in k.verbs:  # the create-only self reviews
                continue
            gvk = {"group": k.group, "kind": k.kind, "version": k.version}
            patches = [item["patch"] for item in paths.values()
                       if "patch" in item and item["patch"]["x-kubernetes-group-version-kind"] == gvk]
            assert patches, k.kind
            assert "fieldValidation" in [p["name"] for p in patches[0]["parameters"]]
