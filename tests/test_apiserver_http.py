"""REST semantics over real HTTP against a real server process: Status errors, lists, watches, durability."""

from __future__ import annotations

import json
import threading
import time
import urllib.request

import pytest

from tests.helpers import wait_for, watch_lines

pytestmark = pytest.mark.e2e

CLAIMS = "/apis/resource.k8s.io/v1/namespaces/default/resourceclaims"
CLASSES = "/apis/resource.k8s.io/v1/deviceclasses"


def claim(name: str, labels: dict | None = None) -> dict:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
            "metadata": {"name": name, "labels": labels or {}},
            "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu.example.com"}}]}}}


# ---------------------------------------------------------------- errors as Status

def test_not_found_status(server):
    code, _, body = server.request("GET", CLAIMS + "/nope")
    assert code == 404
    assert body == {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                    "message": 'resourceclaims.resource.k8s.io "nope" not found', "reason": "NotFound",
                    "details": {"name": "nope", "group": "resource.k8s.io", "kind": "resourceclaims"},
                    "code": 404}


def test_already_exists_and_conflict(server):
    code, _, created = server.request("POST", CLAIMS, claim("dup"))
    assert code == 201
    code, _, body = server.request("POST", CLAIMS, claim("dup"))
    assert (code, body["reason"]) == (409, "AlreadyExists")
    assert body["message"] == 'resourceclaims.resource.k8s.io "dup" already exists'
    stale = dict(created)
    stale["metadata"] = dict(created["metadata"], resourceVersion="1", labels={"a": "b"})
    code, _, body = server.request("PUT", CLAIMS + "/dup", stale)
    assert (code, body["reason"]) == (409, "Conflict")
    assert body["message"] == ('Operation cannot be fulfilled on resourceclaims.resource.k8s.io "dup": the object '
                               'has been modified; please apply your changes to the latest version and try again')
    assert body["details"] == {"name": "dup", "group": "resource.k8s.io", "kind": "resourceclaims"}


def test_unknown_field_strict_warn_ignore(server):
    obj = claim("strict")
    obj["spec"]["devices"]["bogus"] = 1
    code, _, body = server.request("POST", CLAIMS + "?fieldValidation=Strict", obj)
    assert (code, body["reason"]) == (400, "BadRequest")
    assert body["message"] == ('ResourceClaim in version "v1" cannot be handled as a ResourceClaim: '
                               'strict decoding error: unknown field "spec.devices.bogus"')
    code, headers, body = server.request("POST", CLAIMS + "?fieldValidation=Warn", obj)
    assert code == 201 and "bogus" not in body["spec"]["devices"]
    assert headers["Warning"] == '299 - "unknown field \\"spec.devices.bogus\\""'
    obj["metadata"]["name"] = "ignore"
    code, headers, _ = server.request("POST", CLAIMS + "?fieldValidation=Ignore", obj)
    assert code == 201 and "Warning" not in headers


def test_duplicate_field_strict(server):
    raw = (b'{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"d","name":"d2"},"data":{}}')
    code, _, body = server.request("POST", "/api/v1/namespaces/default/configmaps?fieldValidation=Strict", raw)
    assert code == 400
    assert 'strict decoding error: duplicate field "metadata.name"' in body["message"]


def test_malformed_body_and_too_large(server):
    code, _, body = server.request("POST", CLAIMS, b"{not json")
    assert (code, body["reason"]) == (400, "BadRequest")
    big = claim("big")
    big["metadata"]["annotations"] = {"x": "y" * (3 * 1024 * 1024 + 10)}
    code, _, body = server.request("POST", CLAIMS, big)
    assert (code, body["reason"]) == (413, "RequestEntityTooLarge")
    code, _, _ = server.request("GET", CLAIMS + "/big")
    assert code == 404  # nothing half-written


def test_unserved_version_is_a_status_404(server):
    for path in ("/apis/resource.k8s.io/v1alpha1/resourceclaims", "/apis/nothing.example.com/v1",
                 "/api/v1/widgets"):
        code, _, body = server.request("GET", path)
        assert code == 404 and body["kind"] == "Status" and body["reason"] == "NotFound", path


# ---------------------------------------------------------------- lists

def test_pagination_over_500_objects(fresh_server):
    ns = "/api/v1/namespaces/default/configmaps"
    for i in range(520):
        code, _, _ = fresh_server.request("POST", ns, {"metadata": {"name": f"cm-{i:04d}"}, "data": {"i": str(i)}})
        assert code == 201
    names, token, pages = [], "", 0
    first_rv = None
    while True:
        code, _, body = fresh_server.request("GET", ns + "?limit=100" + (f"&continue={token}" if token else ""))
        assert code == 200
        pages += 1
        first_rv = first_rv or body["metadata"]["resourceVersion"]
        assert body["metadata"]["resourceVersion"] == first_rv  # every page is the same snapshot
        names += [i["metadata"]["name"] for i in body["items"]]
        if pages == 1:
            assert body["metadata"]["remainingItemCount"] == 420
            # a write between pages does not show up in the paged snapshot
            fresh_server.request("POST", ns, {"metadata": {"name": "cm-0000a"}})
        token = body["metadata"].get("continue", "")
        if not token:
            break
    assert pages == 6
    assert names == [f"cm-{i:04d}" for i in range(520)]



def _pages(server, path: str) -> list[dict]:
    pages, token = [], ""
    while True:
        code, _, body = server.request("GET", path + (f"&continue={token}" if token else ""))
        assert code == 200, body
        pages.append(body)
        token = body["metadata"].get("continue", "")
        if not token:
            return pages


def test_pages_of_a_namespace_and_of_a_selection(fresh_server):
    # Namespaces whose names sort right before and after "pg" ("pg-x/..." < "pg/..." < "pg0/..." in storage).
    for ns in ("pg", "pg-x", "pg0"):
        assert fresh_server.request("POST", "/api/v1/namespaces", {"metadata": {"name": ns}})[0] == 201
        for i in range(7):
            code, _, _ = fresh_server.request("POST", f"/api/v1/namespaces/{ns}/configmaps", {
                "metadata": {"name": f"cm-{i}", "labels": {"odd": str(i % 2)}}})
            assert code == 201
    pages = _pages(fresh_server, "/api/v1/namespaces/pg/configmaps?limit=3")
    assert [[i["metadata"]["name"] for i in p["items"]] for p in pages] == [
        ["cm-0", "cm-1", "cm-2"], ["cm-3", "cm-4", "cm-5"], ["cm-6"]]
    assert [p["metadata"].get("remainingItemCount") for p in pages] == [4, 1, None]
    # A selection's pages: no remainingItemCount, and a token only while another match follows.
    pages = _pages(fresh_server, "/api/v1/namespaces/pg/configmaps?limit=2&labelSelector=odd%3D1")
    assert [[i["metadata"]["name"] for i in p["items"]] for p in pages] == [["cm-1", "cm-3"], ["cm-5"]]
    assert all("remainingItemCount" not in p["metadata"] for p in pages)
    pages = _pages(fresh_server, "/api/v1/namespaces/pg/configmaps?limit=2&labelSelector=odd%3D0")
    assert [[i["metadata"]["name"] for i in p["items"]] for p in pages] == [["cm-0", "cm-2"], ["cm-4", "cm-6"]]
    all_ns = _pages(fresh_server, "/api/v1/configmaps?limit=5&labelSelector=odd%3D0")
    names = [(i["metadata"]["namespace"], i["metadata"]["name"]) for p in all_ns for i in p["items"]]
    assert [n for n in names if n[0].startswith("pg")] == [
        (ns, f"cm-{i}") for ns in ("pg-x", "pg", "pg0") for i in (0, 2, 4, 6)]  # in key order

def test_label_and_field_selectors(server):
    for name, labels in (("sel-a", {"app": "x", "tier": "1"}), ("sel-b", {"app": "y"}), ("sel-c", {})):
        server.request("POST", CLAIMS, claim(name, labels))

    def names(q):
        code, _, body = server.request("GET", CLAIMS + "?" + q)
        assert code == 200, body
        return sorted(i["metadata"]["name"] for i in body["items"] if i["metadata"]["name"].startswith("sel-"))

    assert names("labelSelector=app%3Dx") == ["sel-a"]
    assert names("labelSelector=app%20in%20(x,y)") == ["sel-a", "sel-b"]
    assert names("labelSelector=app%20notin%20(x)") == ["sel-b", "sel-c"]
    assert names("labelSelector=!app") == ["sel-c"]
    assert names("labelSelector=app,tier!%3D1") == ["sel-b"]  # != also matches a missing label
    assert names("labelSelector=app,tier") == ["sel-a"]
    assert names("fieldSelector=metadata.name%3Dsel-b") == ["sel-b"]
    assert names("fieldSelector=metadata.name!%3Dsel-b") == ["sel-a", "sel-c"]
    code, _, body = server.request("GET", CLAIMS + "?fieldSelector=spec.bogus%3D1")
    assert (code, body["reason"]) == (400, "BadRequest")
    assert "field label not supported: spec.bogus" in body["message"]


def test_resourceslice_field_selectors(server):
    for i, (node, driver) in enumerate((("n1", "a.example.com"), ("n2", "a.example.com"), ("n1", "b.example.com"))):
        server.request("POST", "/apis/resource.k8s.io/v1/resourceslices", {
            "metadata": {"name": f"fs-slice-{i}"},
            "spec": {"driver": driver, "nodeName": node, "pool": {"name": f"pool{i}", "generation": 1,
                                                                  "resourceSliceCount": 1}}})

    def names(q):
        code, _, body = server.request("GET", "/apis/resource.k8s.io/v1/resourceslices?fieldSelector=" + q)
        assert code == 200, body
        return sorted(i["metadata"]["name"] for i in body["items"] if i["metadata"]["name"].startswith("fs-"))

    assert names("spec.nodeName%3Dn1") == ["fs-slice-0", "fs-slice-2"]
    assert names("spec.driver%3Da.example.com,spec.nodeName%3Dn2") == ["fs-slice-1"]
    assert names("spec.pool.name%3Dpool2") == ["fs-slice-2"]


# ---------------------------------------------------------------- watch

def test_watch_from_revision_replays_exactly_later_writes(fresh_server):
    s = fresh_server
    path = "/api/v1/namespaces/default/configmaps"
    code, _, first = s.request("POST", path, {"metadata": {"name": "w-0"}})
    r = int(first["metadata"]["resourceVersion"])
    expected = []
    for i in range(1, 1001):
        name = f"w-{i % 50}"
        code, _, body = s.request("PUT" if i >= 50 else "POST", path + (f"/{name}" if i >= 50 else ""),
                                  {"metadata": {"name": name}, "data": {"i": str(i)}})
        assert code in (200, 201), body
        expected.append((body["metadata"]["resourceVersion"], name))
    events = watch_lines(f"{s.url}{path}?watch=1&resourceVersion={r}", 1000)
    got = [(e["object"]["metadata"]["resourceVersion"], e["object"]["metadata"]["name"]) for e in events]
    assert got == expected
    assert [e["type"] for e in events[:49]] == ["ADDED"] * 49
    assert all(e["type"] == "MODIFIED" for e in events[49:])


def test_watch_selector_transitions_and_deleted(server):
    name = "watch-sel"
    server.request("POST", CLAIMS, claim(name, {"w": "no"}))
    url = f"{server.url}{CLAIMS}?watch=1&labelSelector=w%3Dyes&resourceVersion="
    _, _, cur = server.request("GET", CLAIMS + "/" + name)
    url += cur["metadata"]["resourceVersion"]
    result: list = []
    t = threading.Thread(target=lambda: result.extend(watch_lines(url, 3)))
    t.start()
    time.sleep(0.3)  # the watch is resumable from its resourceVersion, so ordering does not depend on this
    cur["metadata"]["labels"] = {"w": "yes"}
    _, _, cur = server.request("PUT", CLAIMS + "/" + name, cur)
    cur["metadata"]["labels"] = {"w": "no"}
    _, _, cur = server.request("PUT", CLAIMS + "/" + name, cur)
    cur["metadata"]["labels"] = {"w": "yes"}
    server.request("PUT", CLAIMS + "/" + name, cur)
    t.join(20)
    assert [e["type"] for e in result] == ["ADDED", "DELETED", "ADDED"]


def test_watch_list_ends_initial_events_with_bookmark(server):
    server.request("POST", CLAIMS, claim("wl-1"))
    url = (f"{server.url}{CLAIMS}?watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan"
           f"&allowWatchBookmarks=true&fieldSelector=metadata.name%3Dwl-1")
    events = watch_lines(url, 2)
    assert events[0]["type"] == "ADDED" and events[0]["object"]["metadata"]["name"] == "wl-1"
    assert events[1]["type"] == "BOOKMARK"
    assert events[1]["object"]["metadata"]["annotations"] == {"k8s.io/initial-events-end": "true"}
    assert int(events[1]["object"]["metadata"]["resourceVersion"]) >= int(
        events[0]["object"]["metadata"]["resourceVersion"])


def test_periodic_bookmarks(tmp_path):
    from tests.conftest import start_server, stop

    s = start_server(str(tmp_path), "--watch-bookmark-interval", "0.2")
    try:
        _, _, lst = s.request("GET", "/api/v1/namespaces")
        rv = lst["metadata"]["resourceVersion"]
        # A write to another kind moves the revision: the bookmark tells the namespace watcher it may resume
        # from there. (Upstream sends no bookmark that would not move the watcher past its start.)
        code, _, cm = s.request("POST", "/api/v1/namespaces/default/configmaps", {"metadata": {"name": "bump"}})
        assert code == 201
        events = watch_lines(f"{s.url}/api/v1/namespaces?watch=1&allowWatchBookmarks=true&resourceVersion={rv}", 1)
        assert events[0]["type"] == "BOOKMARK"
        assert events[0]["object"]["kind"] == "Namespace"
        assert events[0]["object"]["metadata"]["resourceVersion"] == cm["metadata"]["resourceVersion"]
    finally:
        stop(s)


def test_watch_timeout_ends_stream(server):
    start = time.monotonic()
    with urllib.request.urlopen(f"{server.url}{CLASSES}?watch=1&timeoutSeconds=1&resourceVersion=1",
                                timeout=20) as resp:
        resp.read()
    assert time.monotonic() - start < 15


def test_gone_for_compacted_revisions(tmp_path):
    from tests.conftest import start_server, stop

    s = start_server(str(tmp_path), "--etcd-compaction-interval", "0.3")
    try:
        path = "/api/v1/namespaces/default/configmaps"
        _, _, first = s.request("POST", path, {"metadata": {"name": "g0"}})
        old_rv = first["metadata"]["resourceVersion"]
        for i in range(1, 5):
            s.request("POST", path, {"metadata": {"name": f"g{i}"}})
        _, _, page = s.request("GET", path + "?limit=2")
        token = page["metadata"]["continue"]

        def compacted():
            # Both the first write and the page's snapshot (a few revisions later) must be compacted away.
            s.request("POST", path, {"metadata": {"name": f"tick-{time.monotonic_ns()}"}})
            code, _, body = s.request("GET", f"{path}?resourceVersion={old_rv}&resourceVersionMatch=Exact")
            page_code = s.request("GET", f"{path}?limit=2&continue={token}")[0]
            return (code, body) if code == 410 and page_code == 410 else None

        code, body = wait_for(compacted, what="compaction")
        assert body["reason"] == "Expired"
        assert body["message"].startswith("too old resource version: ")
        code, _, body = s.request("GET", f"{path}?limit=2&continue={token}")
        assert (code, body["reason"]) == (410, "Expired")
        assert body["message"].startswith("The provided continue parameter is too old")
        events = watch_lines(f"{s.url}{path}?watch=1&resourceVersion={old_rv}", 1)
        assert events[0]["type"] == "ERROR"
        assert events[0]["object"]["code"] == 410 and events[0]["object"]["reason"] == "Expired"
    finally:
        stop(s)


# ---------------------------------------------------------------- durability

def test_kill9_keeps_every_acknowledged_write(fresh_server):
    s = fresh_server
    path = "/api/v1/namespaces/default/configmaps"
    acked: dict[str, str] = {}
    stop = threading.Event()

    def writer():
        i = 0
        while not stop.is_set():
            try:
                code, _, body = s.request("POST", path, {"metadata": {"name": f"k9-{i}"}})
            except OSError:
                return
            if code == 201:
                acked[body["metadata"]["name"]] = body["metadata"]["resourceVersion"]
            i += 1

    t = threading.Thread(target=writer)
    t.start()
    wait_for(lambda: len(acked) >= 200, what="200 acknowledged writes")
    s.kill9()
    stop.set()
    t.join(10)
    highest = max(int(v) for v in acked.values())
    s.restart()
    code, _, body = s.request("GET", path)
    stored = {i["metadata"]["name"]: i["metadata"]["resourceVersion"] for i in body["items"]}
    for name, rv in acked.items():
        assert stored.get(name) == rv, name
    code, _, created = s.request("POST", path, {"metadata": {"name": "after-restart"}})
    assert code == 201 and int(created["metadata"]["resourceVersion"]) > highest


# ---------------------------------------------------------------- metadata

def test_generate_name_uid_generation_and_noop_update(server):
    code, _, body = server.request("POST", CLASSES, {"metadata": {"generateName": "gen-"}, "spec": {}})
    assert code == 201
    m = body["metadata"]
    assert m["name"].startswith("gen-") and len(m["name"]) == 9
    assert m["uid"] and m["creationTimestamp"] and m["generation"] == 1
    code, _, same = server.request("PUT", CLASSES + "/" + m["name"], body)
    assert code == 200 and same["metadata"]["resourceVersion"] == m["resourceVersion"]
    assert same["metadata"]["managedFields"] == m["managedFields"]
    body["metadata"]["labels"] = {"x": "y"}
    _, _, relabeled = server.request("PUT", CLASSES + "/" + m["name"], body)
    assert relabeled["metadata"]["generation"] == 1  # metadata changes do not bump generation
    assert int(relabeled["metadata"]["resourceVersion"]) > int(m["resourceVersion"])
    relabeled["spec"] = {"selectors": [{"cel": {"expression": "true"}}]}
    _, _, respec = server.request("PUT", CLASSES + "/" + m["name"], relabeled)
    assert respec["metadata"]["generation"] == 2


def test_status_subresource_split(server):
    _, _, c = server.request("POST", CLAIMS, claim("split"))
    status = {"allocation": {"devices": {"results": []}}}
    c["status"] = status
    _, _, main = server.request("PUT", CLAIMS + "/split", c)
    assert "status" not in main  # the main resource ignores status
    main["status"] = {"allocation": {"devices": {"results": [
        {"request": "gpu", "driver": "gpu.example.com", "pool": "p", "device": "d0"}]}},
        "reservedFor": [{"resource": "pods", "name": "p", "uid": "u1"}]}
    main["metadata"]["labels"] = {"ignored": "yes"}
    code, _, st = server.request("PUT", CLAIMS + "/split/status", main)
    assert code == 200, st
    assert st["status"]["reservedFor"][0]["uid"] == "u1"
    assert "ignored" not in (st["metadata"].get("labels") or {})  # /status ignores everything else


def test_finalizers_hold_deletion(server):
    obj = claim("fin")
    obj["metadata"]["finalizers"] = ["example.com/hold"]
    server.request("POST", CLAIMS, obj)
    code, _, body = server.request("DELETE", CLAIMS + "/fin")
    # Upstream's delete handler: 200 with the object (now carrying deletionTimestamp) when it is not gone yet.
    assert code == 200 and body["metadata"]["deletionTimestamp"]
    code, _, body = server.request("GET", CLAIMS + "/fin")
    assert code == 200
    code, _, body = server.request("PATCH", CLAIMS + "/fin", {"metadata": {"finalizers": None}},
                                   content_type="application/merge-patch+json")
    assert code == 200
    code, _, _ = server.request("GET", CLAIMS + "/fin")
    assert code == 404


def test_bound_pod_is_deleted_gracefully(server):
    pods = "/api/v1/namespaces/default/pods"
    server.request("POST", pods, {"metadata": {"name": "grace"},
                                  "spec": {"containers": [{"name": "c", "image": "busybox"}]}})
    code, _, _ = server.request("POST", pods + "/grace/binding",
                                {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": "grace"},
                                 "target": {"apiVersion": "v1", "kind": "Node", "name": "node-1"}})
    assert code == 201
    code, _, body = server.request("DELETE", pods + "/grace")
    assert code == 200 and body["metadata"]["deletionGracePeriodSeconds"] == 30
    assert server.request("GET", pods + "/grace")[0] == 200
    code, _, _ = server.request("DELETE", pods + "/grace?gracePeriodSeconds=0")
    assert code == 200
    assert server.request("GET", pods + "/grace")[0] == 404


def test_namespace_lifecycle(server):
    code, _, body = server.request("POST", "/api/v1/namespaces/missing-ns/configmaps", {"metadata": {"name": "x"}})
    assert (code, body["message"]) == (404, 'namespaces "missing-ns" not found')
    code, _, body = server.request("DELETE", "/api/v1/namespaces/default")
    assert (code, body["reason"]) == (403, "Forbidden")


@pytest.mark.parametrize("path", ["/healthz", "/livez", "/readyz"])
def test_health(server, path):
    with urllib.request.urlopen(server.url + path) as r:
        assert r.status == 200 and r.read() == b"ok"


def test_metrics(server):
    server.request("GET", CLAIMS)
    _, _, namespaces = server.request("GET", "/api/v1/namespaces")
    with urllib.request.urlopen(server.url + "/metrics") as r:
        text = r.read().decode()
    assert 'apiserver_request_total{code="200",component="apiserver",group="resource.k8s.io"' in text
    assert "apiserver_request_duration_seconds_bucket" in text
    count = len(namespaces["items"])
    assert f'apiserver_storage_objects{{resource="namespaces"}} {count}.0' in text


def test_serve_deletes_namespaces_with_their_contents(tmp_path):
    from tests.conftest import start_server, stop

    s = start_server(str(tmp_path), "--nodes", "0", command="serve")
    try:
        s.kubectl("create", "namespace", "doomed")
        s.kubectl("-n", "doomed", "create", "configmap", "c", "--from-literal=a=b")
        s.request("POST", "/apis/resource.k8s.io/v1/namespaces/doomed/resourceclaims", claim("in-doomed"))
        s.kubectl("delete", "namespace", "doomed", "--wait=false")
        code, _, body = s.request("POST", "/api/v1/namespaces/doomed/configmaps", {"metadata": {"name": "late"}})
        assert code in (403, 404)
        if code == 403:
            assert body["details"]["causes"][0]["reason"] == "NamespaceTerminating"
        s.kubectl("wait", "--for=delete", "namespace/doomed", "--timeout=30s")
        assert s.request("GET", "/apis/resource.k8s.io/v1/namespaces/doomed/resourceclaims/in-doomed")[0] == 404
    finally:
        stop(s)


def test_dry_run_stores_nothing(server):
    code, _, body = server.request("POST", CLAIMS + "?dryRun=All", claim("dry"))
    assert code == 201 and body["metadata"]["name"] == "dry" and body["metadata"]["uid"]
    assert server.request("GET", CLAIMS + "/dry")[0] == 404
    code, _, body = server.request("POST", CLAIMS + "?dryRun=Bogus", claim("dry"))
    assert (code, body["reason"]) == (422, "Invalid")  # upstream validates CreateOptions: 422


def test_partial_object_metadata_and_table(server):
    server.request("POST", CLAIMS, claim("pom", {"pom": "yes"}))
    accept = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"
    code, _, body = server.request("GET", CLAIMS + "?labelSelector=pom", headers={"Accept": accept})
    assert code == 200 and body["kind"] == "PartialObjectMetadataList"
    assert body["items"][0]["kind"] == "PartialObjectMetadata" and "spec" not in body["items"][0]
    assert body["items"][0]["metadata"]["labels"] == {"pom": "yes"}
    accept = "application/json;as=Table;g=meta.k8s.io;v=v1"
    code, _, table = server.request("GET", CLAIMS + "/pom", headers={"Accept": accept})
    assert code == 200 and table["kind"] == "Table"
    assert [c["name"] for c in table["columnDefinitions"]] == ["Name", "State", "Age"]
    assert table["rows"][0]["cells"][:2] == ["pom", "pending"]
    code, _, body = server.request("GET", CLAIMS, headers={"Accept": "application/json;as=Widget;g=x;v=v1"})
    assert (code, body["reason"]) == (406, "NotAcceptable")


def test_yaml_body_and_unsupported_media_type(server):
    body = b"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: from-yaml\ndata:\n  k: v\n"
    code, _, created = server.request("POST", "/api/v1/namespaces/default/configmaps", body,
                                      content_type="application/yaml")
    assert code == 201 and created["data"] == {"k": "v"}
    code, _, err = server.request("POST", "/api/v1/namespaces/default/configmaps", b"x", content_type="text/csv")
    assert (code, err["reason"]) == (415, "UnsupportedMediaType")
    code, _, err = server.request("POST", "/api/v1/namespaces/default/configmaps", b"a: [",
                                  content_type="application/yaml")
    assert (code, err["reason"]) == (400, "BadRequest")


def test_delete_collection_with_selector(server):
    ns = "/api/v1/namespaces/default/configmaps"
    for i in range(3):
        server.request("POST", ns, {"metadata": {"name": f"dc-{i}", "labels": {"dc": "yes" if i < 2 else "no"}}})
    code, _, body = server.request("DELETE", ns + "?labelSelector=dc%3Dyes")
    assert code == 200 and body["kind"] == "ConfigMapList"
    assert sorted(i["metadata"]["name"] for i in body["items"]) == ["dc-0", "dc-1"]
    assert [server.request("GET", f"{ns}/dc-{i}")[0] for i in range(3)] == [404, 404, 200]


def test_method_not_allowed(server):
    code, _, body = server.request("DELETE", "/api/v1/namespaces")
    assert (code, body["reason"]) == (405, "MethodNotAllowed")
    code, _, body = server.request("POST", CLAIMS + "/x")
    assert (code, body["reason"]) == (405, "MethodNotAllowed")


def test_device_taint_rule_time_added_and_conditional_put(server):
    rules = "/apis/resource.k8s.io/v1/devicetaintrules"
    code, _, rule = server.request("POST", rules, {
        "metadata": {"name": "taint-time"},
        "spec": {"taint": {"key": "example.com/broken", "effect": "NoSchedule",
                           "timeAdded": "2020-01-01T00:00:00Z"}}})
    assert code == 201, rule
    unconditional = json.loads(json.dumps(rule))
    del unconditional["metadata"]["resourceVersion"]
    code, _, body = server.request("PUT", rules + "/taint-time", unconditional)
    assert (code, body["details"]["causes"][0]["field"]) == (422, "metadata.resourceVersion")
    rule["spec"]["taint"]["effect"] = "NoExecute"
    code, _, updated = server.request("PUT", rules + "/taint-time", rule)
    assert code == 200 and updated["spec"]["taint"]["timeAdded"] > "2020-01-01T00:00:00Z"
    assert updated["metadata"]["generation"] == 2


def test_status_devices_of_deallocated_devices_are_dropped(server):
    _, _, c = server.request("POST", CLAIMS, claim("dealloc"))
    result = {"request": "gpu", "driver": "gpu.example.com", "pool": "p", "device": "d0"}
    c["status"] = {"allocation": {"devices": {"results": [result]}},
                   "devices": [{"driver": "gpu.example.com", "pool": "p", "device": "d0",
                                "conditions": [{"type": "Ready", "status": "True", "reason": "Up", "message": "",
                                                "lastTransitionTime": "2026-01-01T00:00:00Z"}]}]}
    code, _, st = server.request("PUT", CLAIMS + "/dealloc/status", c)
    assert code == 200 and st["status"]["devices"][0]["device"] == "d0"
    st["status"] = {"devices": st["status"]["devices"]}  # deallocate, keep the device status
    code, _, st = server.request("PUT", CLAIMS + "/dealloc/status", st)
    assert code == 200 and "devices" not in st.get("status", {})


def test_taints_get_time_added_by_default(server):
    code, _, rule = server.request("POST", "/apis/resource.k8s.io/v1/devicetaintrules", {
        "metadata": {"name": "taint-default"}, "spec": {"taint": {"key": "example.com/k", "effect": "NoSchedule"}}})
    assert code == 201 and rule["spec"]["taint"]["timeAdded"].endswith("Z")
    code, _, sl = server.request("POST", "/apis/resource.k8s.io/v1/resourceslices", {
        "metadata": {"name": "tainted-slice"},
        "spec": {"driver": "gpu.example.com", "nodeName": "n1",
                 "pool": {"name": "p", "generation": 1, "resourceSliceCount": 1},
                 "devices": [{"name": "d0", "taints": [{"key": "example.com/k", "effect": "NoSchedule"}]}]}})
    assert code == 201, sl
    assert sl["spec"]["devices"][0]["taints"][0]["timeAdded"].endswith("Z")


def test_serve_starts_two_ready_nodes_with_example_gpus(tmp_path):
    """A newcomer's `dramock serve` (default --nodes 2): Ready nodes, 8 example GPUs each, the class installed."""
    from tests.conftest import start_server, stop

    s = start_server(str(tmp_path), command="serve")
    try:
        def ready_nodes():
            _, _, nodes = s.request("GET", "/api/v1/nodes")
            ready = [n["metadata"]["name"] for n in nodes["items"]
                     if any(c["type"] == "Ready" and c["status"] == "True"
                            for c in (n.get("status") or {}).get("conditions") or [])]
            return sorted(ready) == ["node-1", "node-2"]

        wait_for(ready_nodes, what="two Ready nodes")

        def slices():
            _, _, body = s.request("GET", "/apis/resource.k8s.io/v1/resourceslices")
            return {i["spec"]["nodeName"]: len(i["spec"]["devices"]) for i in body["items"]} == \
                {"node-1": 8, "node-2": 8}

        wait_for(slices, what="the example driver's slices")
        assert s.request("GET", "/apis/resource.k8s.io/v1/deviceclasses/gpu.example.com")[0] == 200
    finally:
        stop(s)


# ---------------------------------------------------------------- Expect: 100-continue

def test_a_client_that_expects_100_continue_is_told_to_send_its_body(server):
    """curl and other clients send `Expect: 100-continue` before a big body and wait for the interim answer
    (curl gives up waiting only after a second); an expectation the server does not know is a 417 Status."""
    import socket

    body = json.dumps(claim("expecting")).encode()
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as sock:
        sock.sendall(f"POST {CLAIMS} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                     f"Content-Length: {len(body)}\r\nExpect: 100-continue\r\n\r\n".encode())
        assert sock.recv(1024) == b"HTTP/1.1 100 Continue\r\n\r\n"  # before any of the body was sent
        sock.sendall(body)
        answer = b""
        while b"\r\n\r\n" not in answer:
            answer += sock.recv(65536)
        assert answer.startswith(b"HTTP/1.1 201 ")
    code, _, stored = server.request("GET", CLAIMS + "/expecting")
    assert code == 200 and stored["metadata"]["name"] == "expecting"
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as sock:
        sock.sendall(f"POST {CLAIMS} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                     f"Content-Length: {len(body)}\r\nExpect: something-else\r\nConnection: close\r\n\r\n".encode()
                     + body)
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
    head, _, payload = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 417 ")
    status = json.loads(payload)
    assert (status["kind"], status["code"], status["message"]) == ("Status", 417, "Unknown Expect: something-else")
