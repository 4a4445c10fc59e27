"""JSON patch, merge patch and strategic merge patch, checked against upstream's semantics and codes."""

from __future__ import annotations

import copy

import pytest

from dramock.apiserver.patch import (
    GENERIC_422_MESSAGE,
    apply_json_patch,
    apply_merge_patch,
    apply_strategic_merge_patch,
)
from dramock.errors import APIError

POD = "io.k8s.api.core.v1.Pod"
CLAIM = "io.k8s.api.resource.v1.ResourceClaim"


def pod() -> dict:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "web", "namespace": "default", "labels": {"app": "web", "tier": "front"},
                     "finalizers": ["a.example.com/x", "b.example.com/y"]},
        "spec": {
            "containers": [
                {"name": "app", "image": "app:1", "env": [{"name": "A", "value": "1"}]},
                {"name": "sidecar", "image": "side:1"},
            ],
            "volumes": [{"name": "data", "emptyDir": {}}],
        },
    }


def claim() -> dict:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": "gpu", "namespace": "default"},
        "spec": {"devices": {"requests": [
            {"name": "a", "exactly": {"deviceClassName": "gpu.example.com"}},
            {"name": "b", "exactly": {"deviceClassName": "gpu.example.com", "count": 2}},
        ]}},
        "status": {"reservedFor": [{"resource": "pods", "name": "p1", "uid": "u1"}]},
    }


def smp(obj: dict, patch: object, definition: str = POD) -> dict:
    before = copy.deepcopy(obj)
    out = apply_strategic_merge_patch(obj, patch, definition)
    assert obj == before, "the input object must not be mutated"
    return out


def error_of(fn, *args) -> APIError:
    with pytest.raises(APIError) as info:
        fn(*args)
    return info.value


# ------------------------------------------------------------------------------ strategic merge patch


def test_smp_merges_containers_by_name_and_puts_new_ones_first():
    # Without $setElementOrder upstream orders patch items first among items new to the live list.
    out = smp(pod(), {"spec": {"containers": [{"name": "app", "image": "app:2"},
                                              {"name": "debug", "image": "busybox"}]}})
    assert out["spec"]["containers"] == [
        {"name": "app", "image": "app:2", "env": [{"name": "A", "value": "1"}]},
        {"name": "debug", "image": "busybox"},
        {"name": "sidecar", "image": "side:1"},
    ]


def test_smp_merges_env_inside_a_container():
    out = smp(pod(), {"spec": {"containers": [{"name": "app", "env": [{"name": "A", "value": "9"},
                                                                      {"name": "B", "value": "2"}]}]}})
    assert out["spec"]["containers"][0] == {
        "name": "app", "image": "app:1",
        "env": [{"name": "A", "value": "9"}, {"name": "B", "value": "2"}],
    }
    assert out["spec"]["containers"][1] == {"name": "sidecar", "image": "side:1"}


def test_smp_labels_merge_and_null_deletes():
    out = smp(pod(), {"metadata": {"labels": {"tier": None, "env": "prod", "missing": None}}})
    assert out["metadata"]["labels"] == {"app": "web", "env": "prod"}


def test_smp_list_element_delete_directive():
    out = smp(pod(), {"spec": {"containers": [{"name": "sidecar", "$patch": "delete"}]}})
    assert out["spec"]["containers"] == [
        {"name": "app", "image": "app:1", "env": [{"name": "A", "value": "1"}]},
    ]


def test_smp_map_replace_and_delete_directives():
    out = smp(pod(), {"metadata": {"labels": {"$patch": "replace", "only": "this"}}})
    assert out["metadata"]["labels"] == {"only": "this"}
    out = smp(pod(), {"metadata": {"labels": {"$patch": "delete"}}})
    assert out["metadata"]["labels"] == {}
    # A directive for a field the object does not have adds nothing.
    out = smp(pod(), {"spec": {"affinity": {"$patch": "delete"}}})
    assert "affinity" not in out["spec"]


def test_smp_list_replace_directive():
    out = smp(pod(), {"spec": {"containers": [{"$patch": "replace"}, {"name": "only", "image": "x"}]}})
    assert out["spec"]["containers"] == [{"name": "only", "image": "x"}]


def test_smp_retain_keys_clears_other_volume_sources():
    # kubectl apply sends $retainKeys for volumes (patch strategy merge,retainKeys).
    out = smp(pod(), {"spec": {"volumes": [{"name": "data", "$retainKeys": ["hostPath", "name"],
                                            "hostPath": {"path": "/srv"}}]}})
    assert out["spec"]["volumes"] == [{"name": "data", "hostPath": {"path": "/srv"}}]


def test_smp_retain_keys_must_list_every_patched_key():
    err = error_of(smp, pod(), {"spec": {"volumes": [{"name": "data", "$retainKeys": ["name"],
                                                      "hostPath": {"path": "/srv"}}]}})
    assert (err.code, err.reason, err.message) == (400, "BadRequest", "invalid patch format of retainKeys")


def test_smp_set_element_order_orders_the_merged_list():
    patch = {"spec": {
        "$setElementOrder/containers": [{"name": "sidecar"}, {"name": "debug"}, {"name": "app"}],
        "containers": [{"name": "debug", "image": "busybox"}],
    }}
    out = smp(pod(), patch)
    assert [c["name"] for c in out["spec"]["containers"]] == ["sidecar", "debug", "app"]
    assert out["spec"]["containers"][1] == {"name": "debug", "image": "busybox"}


def test_smp_set_element_order_alone_reorders():
    out = smp(pod(), {"spec": {"$setElementOrder/containers": [{"name": "sidecar"}, {"name": "app"}]}})
    assert [c["name"] for c in out["spec"]["containers"]] == ["sidecar", "app"]


def test_smp_primitive_list_union_and_delete_from_primitive_list():
    out = smp(pod(), {"metadata": {"finalizers": ["c.example.com/z", "a.example.com/x"],
                                   "$deleteFromPrimitiveList/finalizers": ["b.example.com/y"]}})
    assert out["metadata"]["finalizers"] == ["c.example.com/z", "a.example.com/x"]


def test_smp_set_element_order_for_primitives():
    out = smp(pod(), {"metadata": {"$setElementOrder/finalizers": ["b.example.com/y", "a.example.com/x"]}})
    assert out["metadata"]["finalizers"] == ["b.example.com/y", "a.example.com/x"]


def test_smp_replaces_lists_without_merge_strategy():
    # spec.devices.requests is x-kubernetes-list-type atomic without a patch strategy: replaced.
    out = smp(claim(), {"spec": {"devices": {"requests": [{"name": "c", "exactly": {"deviceClassName": "x"}}]}}},
              CLAIM)
    assert out["spec"]["devices"]["requests"] == [{"name": "c", "exactly": {"deviceClassName": "x"}}]


def test_smp_merges_resource_claim_reserved_for_by_uid():
    out = smp(claim(), {"status": {"reservedFor": [{"resource": "pods", "name": "p2", "uid": "u2"}]}}, CLAIM)
    assert out["status"]["reservedFor"] == [
        {"resource": "pods", "name": "p2", "uid": "u2"},
        {"resource": "pods", "name": "p1", "uid": "u1"},
    ]
    out = smp(claim(), {"status": {"reservedFor": [{"uid": "u1", "$patch": "delete"}]}}, CLAIM)
    assert out["status"]["reservedFor"] == []


def test_smp_unknown_fields_merge_like_json_merge_patch():
    obj = pod()
    obj["spec"]["x-extra"] = {"a": {"b": 1, "c": 2}, "list": [1, 2]}
    out = smp(obj, {"spec": {"x-extra": {"a": {"c": None, "d": 3}, "list": [3]}}})
    assert out["spec"]["x-extra"] == {"a": {"b": 1, "d": 3}, "list": [3]}


def test_smp_new_content_drops_nulls():
    out = smp(pod(), {"spec": {"nodeSelector": {"disk": "ssd", "zone": None}}})
    assert out["spec"]["nodeSelector"] == {"disk": "ssd"}


def test_smp_error_codes():
    err = error_of(smp, pod(), {"spec": {"containers": [{"image": "no-name"}]}})
    assert (err.code, err.message) == (500, "map: map[image:no-name] does not contain declared merge key: name")
    err = error_of(smp, pod(), {"spec": {"containers": [{"name": "app", "$patch": "merge"}]}})
    assert (err.code, err.message) == (500, "merging lists cannot yet be specified in the patch")
    err = error_of(smp, pod(), {"metadata": {"$deleteFromPrimitiveListfinalizers": ["x"]}})
    assert (err.code, err.reason, err.message) == (400, "BadRequest", "invalid patch format of primitive list")
    obj = pod()
    obj["metadata"]["finalizers"] = []
    err = error_of(smp, obj, {"metadata": {"finalizers": [["nested"]]}})
    assert (err.code, err.reason, err.message, err.details) == (422, "Invalid", GENERIC_422_MESSAGE, {})
    err = error_of(smp, pod(), [{"op": "add"}])
    assert (err.code, err.message) == (
        400, "json: cannot unmarshal array into Go value of type map[string]interface {}")
    err = error_of(smp, pod(), b"{not json")
    assert err.code == 400


def test_smp_accepts_the_raw_body():
    out = apply_strategic_merge_patch(pod(), b'{"metadata":{"labels":{"app":null}}}', POD)
    assert out["metadata"]["labels"] == {"tier": "front"}


# ------------------------------------------------------------------------------ JSON patch


def test_json_patch_add_remove_replace():
    out = apply_json_patch(pod(), [
        {"op": "add", "path": "/metadata/labels/env", "value": "prod"},
        {"op": "remove", "path": "/metadata/finalizers/0"},
        {"op": "replace", "path": "/spec/containers/1/image", "value": "side:2"},
        {"op": "test", "path": "/metadata/name", "value": "web"},
    ])
    assert out["metadata"]["labels"] == {"app": "web", "tier": "front", "env": "prod"}
    assert out["metadata"]["finalizers"] == ["b.example.com/y"]
    assert out["spec"]["containers"][1] == {"name": "sidecar", "image": "side:2"}


def test_json_patch_failures_are_422_with_upstreams_generic_message():
    for ops in (
        [{"op": "test", "path": "/metadata/name", "value": "other"}],
        [{"op": "remove", "path": "/metadata/annotations"}],
        [{"op": "add", "path": "/no/such/parent", "value": 1}],
        [{"op": "frobnicate", "path": "/metadata"}],
        [{"path": "/metadata"}],
        [{"op": "add", "path": "", "value": {}}],
    ):
        err = error_of(apply_json_patch, pod(), ops)
        assert (err.code, err.reason, err.message, err.details) == (422, "Invalid", GENERIC_422_MESSAGE, {})


def test_json_patch_is_atomic():
    obj = pod()
    with pytest.raises(APIError):
        apply_json_patch(obj, [{"op": "add", "path": "/metadata/labels/x", "value": "1"},
                               {"op": "test", "path": "/metadata/name", "value": "nope"}])
    assert obj == pod()


def test_json_patch_malformed_is_400_and_too_large_is_413():
    err = error_of(apply_json_patch, pod(), {"op": "add"})
    assert (err.code, err.reason, err.message) == (
        400, "BadRequest", "json: cannot unmarshal object into Go value of type jsonpatch.Patch")
    err = error_of(apply_json_patch, pod(), ["add"])
    assert (err.code, err.message) == (400, "json: cannot unmarshal string into Go value of type jsonpatch.Operation")
    err = error_of(apply_json_patch, pod(), b"[{")
    assert (err.code, err.reason) == (400, "BadRequest")
    err = error_of(apply_json_patch, pod(), [{"op": "test", "path": "/kind", "value": "Pod"}] * 10001)
    assert (err.code, err.reason) == (413, "RequestEntityTooLarge")
    assert err.message.endswith("The allowed maximum operations in a JSON patch is 10000, got 10001")


def test_json_patch_add_without_value_adds_null():
    out = apply_json_patch(pod(), [{"op": "add", "path": "/metadata/labels/x"}])
    assert out["metadata"]["labels"]["x"] is None


def test_json_patch_copy_adds_an_independent_copy_where_add_would():
    out = apply_json_patch(pod(), [
        {"op": "copy", "from": "/spec/containers/1", "path": "/spec/containers/0"},
        {"op": "copy", "from": "/metadata/labels", "path": "/metadata/annotations"},
        {"op": "copy", "from": "/metadata/name", "path": "/spec/containers/-"},
        {"op": "add", "path": "/metadata/annotations/only", "value": "here"},
    ])
    assert [c if isinstance(c, str) else c["name"] for c in out["spec"]["containers"]] == \
        ["sidecar", "app", "sidecar", "web"]
    assert out["metadata"]["annotations"] == {"app": "web", "tier": "front", "only": "here"}
    assert out["metadata"]["labels"] == pod()["metadata"]["labels"]  # the copy is not shared
    for ops in ([{"op": "copy", "from": "/no/such", "path": "/metadata/x"}],
                [{"op": "copy", "from": "/metadata/name", "path": "/spec/containers/3"}],  # past the end
                [{"op": "copy", "from": "/metadata/name", "path": "/spec/containers/01"}],
                [{"op": "copy", "from": "/metadata/name", "path": "/metadata/name/x"}],
                [{"op": "copy", "from": "/metadata/name", "path": "/no/parent"}],
                [{"op": "copy", "path": "/metadata/x"}]):
        err = error_of(apply_json_patch, pod(), ops)
        assert (err.code, err.message) == (422, GENERIC_422_MESSAGE), ops


def test_json_patch_copies_are_capped_at_the_accumulated_copy_bytes():
    obj = pod()
    obj["metadata"]["annotations"] = {"a": "x" * 1000}
    doubling = [{"op": "copy", "from": "/metadata/annotations", "path": f"/metadata/annotations/k{i}"}
                for i in range(10)]  # about 1 MB copied in all: allowed
    assert len(apply_json_patch(obj, doubling)["metadata"]["annotations"]) == 11
    err = error_of(apply_json_patch, obj, doubling + [  # the next doublings pass 3 MiB
        {"op": "copy", "from": "/metadata/annotations", "path": f"/metadata/annotations/m{i}"} for i in range(2)])
    assert (err.code, err.message) == (422, GENERIC_422_MESSAGE)


# ------------------------------------------------------------------------------ merge patch


def test_merge_patch_null_deletes_and_lists_replace():
    out = apply_merge_patch(pod(), {"metadata": {"labels": {"tier": None, "env": "prod"}},
                                    "spec": {"containers": [{"name": "only", "image": "x", "args": None}]}})
    assert out["metadata"]["labels"] == {"app": "web", "env": "prod"}
    # Nulls inside new objects are pruned, as evanphx/json-patch does.
    assert out["spec"]["containers"] == [{"name": "only", "image": "x"}]
    assert out["spec"]["volumes"] == [{"name": "data", "emptyDir": {}}]


def test_merge_patch_new_object_values_are_pruned():
    out = apply_merge_patch(pod(), {"spec": {"affinity": {"nodeAffinity": None, "podAffinity": {}}}})
    assert out["spec"]["affinity"] == {"podAffinity": {}}


def test_merge_patch_errors():
    for bad in (None, "text", 5, b"{oops"):
        err = error_of(apply_merge_patch, pod(), bad)
        assert (err.code, err.reason, err.message) == (400, "BadRequest", "Invalid JSON Patch")
    err = error_of(apply_merge_patch, pod(), [1])
    assert (err.code, err.reason) == (422, "Invalid")
    assert err.message.startswith(' "" is invalid: patch: Invalid value: "[1]": couldn\'t get version/kind; '
                                  "json parse error: json: cannot unmarshal array")
    assert err.details["causes"][0]["field"] == "patch"
