"""Small API behaviours a client can see, each matched to a 1.37 kube-apiserver (issue 11)."""

from __future__ import annotations

import json
import urllib.error
import urllib.request

import pytest

from tests.helpers import Server

pytestmark = pytest.mark.e2e

R = "/apis/resource.k8s.io/v1"


def _causes(body: dict) -> list[tuple[str, str]]:
    return [(c.get("field", ""), c.get("message", "")) for c in body.get("details", {}).get("causes", [])]


@pytest.mark.parametrize("path,obj,field", [
    ("/api/v1/namespaces", {"metadata": {"name": "bad\n"}}, "metadata.name"),
    (f"{R}/deviceclasses", {"metadata": {"name": "gpu\n"}, "spec": {}}, "metadata.name"),
    ("/api/v1/namespaces/default/configmaps", {"metadata": {"name": "cm-newline-label", "labels": {"a": "b\n"}}},
     "metadata.labels"),
    ("/api/v1/namespaces/default/configmaps", {"metadata": {"name": "cm-newline-key", "labels": {"a\n": "b"}}},
     "metadata.labels"),
    ("/api/v1/namespaces/default/configmaps",
     {"metadata": {"name": "cm-newline-annotation", "annotations": {"x.example.com/a\n": "b"}}},
     "metadata.annotations"),
])
def test_a_trailing_newline_is_not_a_valid_name(server: Server, path: str, obj: dict, field: str) -> None:
    """Go's regexp anchors the whole value; Python's `$` would also match before a trailing newline."""
    code, _, body = server.request("POST", path, obj)
    assert code == 422, body
    assert body["reason"] == "Invalid"
    assert any(f == field and "regex used for validation" in m for f, m in _causes(body)), body
    name = obj["metadata"]["name"]
    assert server.request("GET", f"{path}/{name}")[0] == 404  # nothing stored


def test_annotations_over_256KiB_in_total_are_too_long(server: Server) -> None:
    annotations = {"a.example.com/one": "x" * (130 * 1024), "a.example.com/two": "y" * (130 * 1024)}
    code, _, body = server.request("POST", "/api/v1/namespaces/default/configmaps",
                                   {"metadata": {"name": "cm-big-annotations", "annotations": annotations}})
    assert code == 422, body
    assert ("metadata.annotations", "Too long: may not be more than 262144 bytes") in _causes(body)
    small = {"metadata": {"name": "cm-ok-annotations", "annotations": {"a.example.com/one": "x" * 1024}}}
    assert server.request("POST", "/api/v1/namespaces/default/configmaps", small)[0] == 201


# ---------------------------------------------------------------- watch bookmarks before the timeout


def test_a_bookmark_arrives_before_the_watch_times_out(fresh_server: Server) -> None:
    """Upstream's cacher sends the last bookmark 2 s before the deadline (the default bookmark interval is a
    minute, so with timeoutSeconds=4 that is the only one), carrying the newest resourceVersion."""
    s = fresh_server
    _, _, lst = s.request("GET", "/api/v1/namespaces")
    rv = lst["metadata"]["resourceVersion"]
    code, _, cm = s.request("POST", "/api/v1/namespaces/default/configmaps", {"metadata": {"name": "moves-rv"}})
    assert code == 201
    url = f"{s.url}/api/v1/namespaces?watch=1&allowWatchBookmarks=true&timeoutSeconds=4&resourceVersion={rv}"
    with urllib.request.urlopen(url, timeout=20) as resp:
        events = [json.loads(line) for line in resp]  # until the server ends the stream
    assert [e["type"] for e in events] == ["BOOKMARK"], events
    assert events[0]["object"]["metadata"]["resourceVersion"] == cm["metadata"]["resourceVersion"]


def test_no_bookmark_without_allow_watch_bookmarks(fresh_server: Server) -> None:
    s = fresh_server
    s.request("POST", "/api/v1/namespaces/default/configmaps", {"metadata": {"name": "moves-rv"}})
    url = f"{s.url}/api/v1/namespaces?watch=1&timeoutSeconds=3&resourceVersion=1"
    with urllib.request.urlopen(url, timeout=20) as resp:
        events = [json.loads(line) for line in resp]
    assert all(e["type"] != "BOOKMARK" for e in events), events


# ---------------------------------------------------------------- DELETE answers


def test_delete_of_an_object_held_by_a_finalizer_is_200_with_the_object(server: Server) -> None:
    path = "/api/v1/namespaces/default/configmaps"
    for name in ("held-200", "held-202"):
        server.request("POST", path, {"metadata": {"name": name, "finalizers": ["example.com/hold"]}})
    code, _, body = server.request("DELETE", f"{path}/held-200")
    assert code == 200 and body["kind"] == "ConfigMap" and body["metadata"]["deletionTimestamp"], body
    # Only the deprecated orphanDependents=false still gets 202 Accepted (kept for old clients).
    code, _, body = server.request("DELETE", f"{path}/held-202", {"orphanDependents": False})
    assert code == 202 and body["metadata"]["deletionTimestamp"], body
    for name in ("held-200", "held-202"):
        server.request("PATCH", f"{path}/{name}", {"metadata": {"finalizers": None}},
                       content_type="application/merge-patch+json")


def test_namespace_delete_is_200_terminating(server: Server) -> None:
    server.request("POST", "/api/v1/namespaces", {"metadata": {"name": "ns-delete-200"}})
    code, _, body = server.request("DELETE", "/api/v1/namespaces/ns-delete-200")
    assert code == 200 and body["status"]["phase"] == "Terminating", body


# ---------------------------------------------------------------- health checks


def _get_text(url: str) -> tuple[int, dict, str]:
    try:
        with urllib.request.urlopen(url, timeout=10) as r:
            return r.status, dict(r.headers), r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers), e.read().decode()


@pytest.mark.parametrize("endpoint,only,absent", [
    ("readyz", ["etcd-readiness", "informer-sync", "shutdown"], []),
    ("livez", [], ["etcd-readiness", "informer-sync", "shutdown"]),
    ("healthz", [], ["shutdown"]),
])
def test_verbose_health_lists_the_checks(server: Server, endpoint: str, only: list[str], absent: list[str]) -> None:
    code, headers, text = _get_text(f"{server.url}/{endpoint}?verbose")
    assert code == 200 and headers["Content-Type"].startswith("text/plain"), (code, headers)
    lines = text.splitlines()
    assert lines[:3] == ["[+]ping ok", "[+]log ok", "[+]etcd ok"], text
    assert lines[-1] == f"{endpoint} check passed"
    for name in only:
        assert f"[+]{name} ok" in lines
    for name in absent:
        assert f"[+]{name} ok" not in lines
    assert any(line.startswith("[+]poststarthook/") for line in lines)
    assert _get_text(f"{server.url}/{endpoint}")[2] == "ok"


def test_health_exclude_and_single_check(server: Server) -> None:
    _, _, text = _get_text(f"{server.url}/readyz?verbose&exclude=etcd&exclude=nope")
    assert "[+]etcd excluded: ok" in text.splitlines()
    assert 'warn: some health checks cannot be excluded: no matches for "nope"' in text
    assert _get_text(f"{server.url}/readyz/etcd")[:3:2] == (200, "ok")
    assert _get_text(f"{server.url}/livez/ping")[:3:2] == (200, "ok")


# ---------------------------------------------------------------- query options: 400 to decode, 422 to validate


@pytest.mark.parametrize("query,code,message", [
    ("limit=abc", 400, 'strconv.ParseInt: parsing "abc": invalid syntax'),
    ("limit=1%202", 400, 'strconv.ParseInt: parsing "1 2": invalid syntax'),
    ("resourceVersionMatch=Exact", 422, 'ListOptions.meta.k8s.io "" is invalid: resourceVersionMatch: Forbidden: '
                                        "resourceVersionMatch is forbidden unless resourceVersion is provided"),
    ("resourceVersion=1&resourceVersionMatch=bogus", 422,
     'ListOptions.meta.k8s.io "" is invalid: resourceVersionMatch: Unsupported value: "bogus": supported values: '
     '"Exact", "NotOlderThan", ""'),
    ("resourceVersion=0&resourceVersionMatch=Exact", 422,
     'ListOptions.meta.k8s.io "" is invalid: resourceVersionMatch: Forbidden: resourceVersionMatch "exact" is '
     'forbidden for resourceVersion "0"'),
    ("sendInitialEvents=true", 422,
     'ListOptions.meta.k8s.io "" is invalid: sendInitialEvents: Forbidden: sendInitialEvents is forbidden for list'),
    ("watch=1&timeoutSeconds=x", 400, 'strconv.ParseInt: parsing "x": invalid syntax'),
])
def test_list_options(server: Server, query: str, code: int, message: str) -> None:
    got, _, body = server.request("GET", f"{R}/resourceclaims?{query}")
    assert (got, body.get("message")) == (code, message), body
    assert body["reason"] == ("BadRequest" if code == 400 else "Invalid")


def test_watch_is_any_value_but_false(server: Server) -> None:
    """Upstream reads a present boolean parameter as true unless it is "0" or "false"."""
    with urllib.request.urlopen(f"{server.url}{R}/deviceclasses?watch=maybe&timeoutSeconds=1", timeout=20) as r:
        assert r.headers["Transfer-Encoding"] == "chunked"
    code, _, body = server.request("GET", f"{R}/deviceclasses?watch=False")
    assert code == 200 and body["kind"] == "DeviceClassList"


@pytest.mark.parametrize("method,path,query,message", [
    ("POST", "/api/v1/namespaces/default/configmaps", "fieldValidation=Bogus",
     'CreateOptions.meta.k8s.io "" is invalid: fieldValidation: Unsupported value: "Bogus": supported values: "", '
     '"Ignore", "Strict", "Warn"'),
    ("POST", "/api/v1/namespaces/default/configmaps", "dryRun=Bad",
     'CreateOptions.meta.k8s.io "" is invalid: dryRun: Unsupported value: ["Bad"]: supported values: "All"'),
    ("PUT", "/api/v1/namespaces/default/configmaps/opts", "fieldValidation=Bogus",
     'UpdateOptions.meta.k8s.io "" is invalid: fieldValidation: Unsupported value: "Bogus": supported values: "", '
     '"Ignore", "Strict", "Warn"'),
    ("DELETE", "/api/v1/namespaces/default/configmaps/opts", "propagationPolicy=x",
     'DeleteOptions.meta.k8s.io "" is invalid: propagationPolicy: Unsupported value: "x": supported values: '
     '"Foreground", "Background", "Orphan", "nil"'),
])
def test_write_options_are_422(server: Server, method: str, path: str, query: str, message: str) -> None:
    server.request("POST", "/api/v1/namespaces/default/configmaps", {"metadata": {"name": "opts"}})
    body = {"metadata": {"name": "opts"}} if method in ("POST", "PUT") else None
    code, _, got = server.request(method, f"{path}?{query}", body)
    assert (code, got.get("message"), got.get("reason")) == (422, message, "Invalid"), got
    assert server.request("GET", "/api/v1/namespaces/default/configmaps/opts")[0] == 200  # not deleted


# ---------------------------------------------------------------- warnings


def _warnings(headers: dict) -> list[str]:
    raw = headers.get("Warning", "")
    return [w.strip() for w in raw.split("299 - ") if w.strip()]


def test_resource_slice_with_an_uppercase_driver_warns(server: Server) -> None:
    slice_ = {"metadata": {"name": "upper-driver"},
              "spec": {"driver": "GPU.example.com", "pool": {"name": "p", "resourceSliceCount": 1},
                       "nodeName": "n1"}}
    code, headers, body = server.request("POST", f"{R}/resourceslices", slice_)
    assert code == 201, body
    want = '"spec.driver: driver names should be lowercase; \\"GPU.example.com\\" contains uppercase characters"'
    assert _warnings(headers) == [want]
    body["spec"]["nodeName"] = "n1"
    code, headers, _ = server.request("PUT", f"{R}/resourceslices/upper-driver", body)
    assert code == 200 and _warnings(headers) == [want]
    lower = {**slice_, "metadata": {"name": "lower-driver"}, "spec": {**slice_["spec"], "driver": "gpu.example.com"}}
    code, headers, _ = server.request("POST", f"{R}/resourceslices", lower)
    assert code == 201 and not _warnings(headers)


def test_deprecated_versions_warn_on_every_request(tmp_path) -> None:
    from tests.conftest import start_server, stop

    s = start_server(str(tmp_path), "--runtime-config",
                     "resource.k8s.io/v1beta1=true,resource.k8s.io/v1beta2=true,resource.k8s.io/v1alpha3=true")
    try:
        for path, want in [
            ("/apis/resource.k8s.io/v1beta1/deviceclasses",
             '"resource.k8s.io/v1beta1 DeviceClass is deprecated in v1.35+, unavailable in v1.38+"'),
            ("/apis/resource.k8s.io/v1beta2/resourceclaims",
             '"resource.k8s.io/v1beta2 ResourceClaim is deprecated in v1.36+, unavailable in v1.39+"'),
            ("/apis/resource.k8s.io/v1alpha3/devicetaintrules",
             '"resource.k8s.io/v1alpha3 DeviceTaintRule is deprecated in v1.36+, unavailable in v1.39+"'),
        ]:
            code, headers, _ = s.request("GET", path)
            assert code == 200 and _warnings(headers) == [want], (path, headers)
        # Not deprecated (yet): v1 and 1.37's v1beta2 DeviceTaintRule.
        for path in ("/apis/resource.k8s.io/v1/deviceclasses", "/apis/resource.k8s.io/v1beta2/devicetaintrules"):
            code, headers, _ = s.request("GET", path)
            assert code == 200 and not _warnings(headers), (path, headers)
        # Discovery lists the versions by priority: v1 first and preferred, then the betas, then the alpha.
        code, _, group = s.request("GET", "/apis/resource.k8s.io")
        assert [v["version"] for v in group["versions"]] == ["v1", "v1beta2", "v1beta1", "v1alpha3"]
        assert group["preferredVersion"]["version"] == "v1"
    finally:
        stop(s)
