"""Small API behaviours a client can see, each matched to a 1.37 kube-apiserver (issue 11)."""

from __future__ import annotations

import pytest

from tests.conftest import Server

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
