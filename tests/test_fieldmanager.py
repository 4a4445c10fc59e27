"""managedFields and server-side apply, checked against upstream's encoding and ownership rules."""

from __future__ import annotations

import copy
import gc
import json
import uuid

import pytest

from dramock.apiserver import fieldmanager as fm
from dramock.errors import APIError

POD = "io.k8s.api.core.v1.Pod"
CLAIM = "io.k8s.api.resource.v1.ResourceClaim"
CM = "io.k8s.api.core.v1.ConfigMap"
RV1 = "resource.k8s.io/v1"
T0, T1, T2, T3 = (f"2025-01-01T0{h}:00:00Z" for h in range(4))


def js(v: object) -> str:
    """Compact JSON: comparing strings checks key order too (FieldsV1 order is part of the format)."""
    return json.dumps(v, separators=(",", ":"))


def entries(obj: dict) -> list[dict]:
    return obj["metadata"].get("managedFields", [])


def by_manager(obj: dict) -> dict[str, dict]:
    return {e["manager"]: e for e in entries(obj)}


def fields(obj: dict, manager: str) -> str:
    return js(by_manager(obj)[manager]["fieldsV1"])


def pod() -> dict:
    return {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "web", "namespace": "default", "labels": {"app": "web"}},
        "spec": {
            "containers": [{"name": "app", "image": "app:1", "resources": {},
                            "ports": [{"containerPort": 80, "protocol": "TCP"}]}],
            "restartPolicy": "Always",
        },
        "status": {"phase": "Pending"},
    }


def created(obj: dict, manager: str = "kubectl-create", definition: str = POD, api_version: str = "v1",
            now: str = T0) -> dict:
    out = fm.track_update(None, obj, manager=manager, api_version=api_version, definition=definition,
                          now=now, reset_fields=["status"])
    out["metadata"]["uid"] = "uid-1"  # stored objects have one; it marks updates as updates
    return out


def updated(old: dict, change, manager: str, now: str, **kw) -> dict:
    new = copy.deepcopy(old)
    change(new)
    kw.setdefault("definition", POD)
    kw.setdefault("api_version", "v1")
    return fm.track_update(old, new, manager=manager, now=now, **kw)


def applied(live: dict | None, config: dict, manager: str, now: str, force: bool = False, **kw) -> dict:
    kw.setdefault("definition", POD)
    kw.setdefault("api_version", "v1")
    before = copy.deepcopy(live)
    out = fm.apply(live, config, manager=manager, force=force, now=now, **kw)
    assert live == before, "the live object must not be mutated"
    return out


def apply_error(live: dict | None, config: dict, manager: str = "ci", **kw) -> APIError:
    with pytest.raises(APIError) as info:
        applied(live, config, manager, T1, **kw)
    return info.value


def pod_config(**spec_container) -> dict:
    container = {"name": "app", "image": "app:1", **spec_container}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web", "namespace": "default"},
            "spec": {"containers": [container]}}


# ------------------------------------------------------------------------------ encoding on create


def test_create_records_every_field_in_upstreams_fieldsv1_encoding():
    obj = created(pod())
    assert entries(obj) == [{
        "manager": "kubectl-create", "operation": "Update", "apiVersion": "v1", "time": T0,
        "fieldsType": "FieldsV1", "fieldsV1": by_manager(obj)["kubectl-create"]["fieldsV1"],
    }]
    assert list(entries(obj)[0]) == ["manager", "operation", "apiVersion", "time", "fieldsType", "fieldsV1"]
    # Containers added by this write carry ".", fields of structs that already existed (spec) do not;
    # list-map keys are JSON in key-name order; status is reset on the main resource.
    assert fields(obj, "kubectl-create") == (
        '{"f:metadata":{"f:labels":{".":{},"f:app":{}}},'
        '"f:spec":{"f:containers":{"k:{\\"name\\":\\"app\\"}":{".":{},"f:image":{},"f:name":{},'
        '"f:ports":{".":{},"k:{\\"containerPort\\":80,\\"protocol\\":\\"TCP\\"}":{".":{},'
        '"f:containerPort":{},"f:protocol":{}}},"f:resources":{}}},"f:restartPolicy":{}}}'
    )
    assert obj["spec"] == pod()["spec"] and obj["status"] == pod()["status"]


def test_create_without_reset_owns_status_and_skips_server_fields():
    obj = pod()
    obj["metadata"].update(uid="u", resourceVersion="7", generation=1, creationTimestamp=T0)
    obj["status"]["conditions"] = [{"type": "Ready", "status": "False"}]
    out = fm.track_update(None, obj, manager="m", api_version="v1", definition=POD, now=T0)
    assert js(json.loads(fields(out, "m"))["f:status"]) == (
        '{"f:conditions":{".":{},"k:{\\"type\\":\\"Ready\\"}":{".":{},"f:status":{},"f:type":{}}},'
        '"f:phase":{}}'
    )
    assert '"f:uid"' not in fields(out, "m") and '"f:resourceVersion"' not in fields(out, "m")


def test_resource_claim_requests_are_an_atomic_leaf():
    claim = {"apiVersion": RV1, "kind": "ResourceClaim",
             "metadata": {"name": "gpu", "namespace": "default", "labels": {"team": "ml"}},
             "spec": {"devices": {"requests": [{"name": "a", "exactly": {"deviceClassName": "gpu"}},
                                               {"name": "b", "exactly": {"deviceClassName": "gpu"}}]}}}
    out = created(claim, definition=CLAIM, api_version=RV1)
    assert entries(out)[0]["apiVersion"] == RV1
    assert fields(out, "kubectl-create") == (
        '{"f:metadata":{"f:labels":{".":{},"f:team":{}}},"f:spec":{"f:devices":{"f:requests":{}}}}'
    )


def test_status_subresource_update_of_a_resource_claim():
    claim = created({"apiVersion": RV1, "kind": "ResourceClaim",
                     "metadata": {"name": "gpu", "namespace": "default"},
                     "spec": {"devices": {"requests": [{"name": "a", "exactly": {"deviceClassName": "g"}}]}}},
                    definition=CLAIM, api_version=RV1)

    def allocate(c: dict) -> None:
        c["status"] = {
            "reservedFor": [{"resource": "pods", "name": "p", "uid": "pod-uid"}],
            "devices": [
                {"driver": "gpu.example.com", "pool": "node-1", "device": "gpu-1", "shareID": "s1"},
                {"driver": "gpu.example.com", "pool": "node-1", "device": "gpu-0"},
            ],
        }

    out = updated(claim, allocate, "driver", T1, definition=CLAIM, api_version=RV1, subresource="status")
    assert [(e["manager"], e["time"], e.get("subresource")) for e in entries(out)] == [
        ("kubectl-create", T0, None), ("driver", T1, "status")]
    assert list(by_manager(out)["driver"])[-1] == "subresource"
    # An optional list-map key that an item omits (shareID) is left out of the item's key.
    assert fields(out, "driver") == (
        '{"f:status":{"f:devices":{".":{},'
        '"k:{\\"device\\":\\"gpu-0\\",\\"driver\\":\\"gpu.example.com\\",\\"pool\\":\\"node-1\\"}":'
        '{".":{},"f:device":{},"f:driver":{},"f:pool":{}},'
        '"k:{\\"device\\":\\"gpu-1\\",\\"driver\\":\\"gpu.example.com\\",\\"pool\\":\\"node-1\\",'
        '\\"shareID\\":\\"s1\\"}":{".":{},"f:device":{},"f:driver":{},"f:pool":{},"f:shareID":{}}},'
        '"f:reservedFor":{".":{},"k:{\\"uid\\":\\"pod-uid\\"}":{".":{},"f:name":{},"f:resource":{},'
        '"f:uid":{}}}}}'
    )


def test_fieldsv1_round_trips():
    obj = created(pod())
    encoded = by_manager(obj)["kubectl-create"]["fieldsV1"]
    assert fm.set_to_fields(fm.fields_to_set(encoded)) == encoded


@pytest.mark.parametrize("values", [
    [f"k{i}" for i in range(20_000, 0, -1)],  # more than one sorting step
    ["b", "a", "\u00e9", "Z", "a.example.com/x", "\U0001f600", ""],
    [3, 10, 0, 2, 1],
])
def test_field_names_and_indexes_sort_as_path_element_compare_does(values):
    from dramock.apiserver.fieldmanager.paths import _pe_sort_key, sorted_elements

    kind = "i" if isinstance(values[0], int) else "f"
    elements = [(kind, v) for v in values]
    assert sorted_elements(elements) == sorted(elements, key=_pe_sort_key)
    mixed = elements[:3] + [("i", 7), ("k", (("name", "x"),))]  # kinds mixed: by PathElement.Compare itself
    assert sorted_elements(mixed) == sorted(mixed, key=_pe_sort_key)


def test_a_big_field_set_round_trips_without_the_cache():
    labels = {f"k{i}": "v" for i in range(5_000)}
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "big", "labels": labels}}
    obj = fm.track_update(None, cm, manager="m", api_version="v1", definition=CM, now=T0)
    encoded = by_manager(obj)["m"]["fieldsV1"]
    assert list(encoded["f:metadata"]["f:labels"])[:3] == [".", "f:k0", "f:k1"]
    assert len(fm.fields_to_set(encoded)) == 5_000 + 1  # the labels and metadata.labels itself
    assert fm.set_to_fields(fm.fields_to_set(encoded)) == encoded


# ------------------------------------------------------------------------------ updates


def test_update_moves_changed_fields_to_the_writer():
    obj = created(pod())

    def change(p: dict) -> None:
        p["spec"]["containers"][0]["image"] = "app:2"
        p["metadata"]["labels"]["env"] = "prod"

    out = updated(obj, change, "kubectl-edit", T1)
    assert [(e["manager"], e["time"]) for e in entries(out)] == [("kubectl-create", T0), ("kubectl-edit", T1)]
    assert fields(out, "kubectl-edit") == (
        '{"f:metadata":{"f:labels":{"f:env":{}}},'
        '"f:spec":{"f:containers":{"k:{\\"name\\":\\"app\\"}":{"f:image":{}}}}}'
    )
    assert '"f:image"' not in fields(out, "kubectl-create")
    assert '"f:app"' in fields(out, "kubectl-create")


def test_removed_fields_leave_every_manager_and_removal_alone_keeps_times():
    obj = updated(created(pod()), lambda p: p["metadata"]["labels"].update(env="prod"), "labeler", T1)

    def drop(p: dict) -> None:
        del p["metadata"]["labels"]["app"]
        del p["metadata"]["labels"]["env"]

    out = updated(obj, drop, "cleaner", T2)
    assert "labeler" not in by_manager(out)  # its only field is gone, so is its entry
    assert "cleaner" not in by_manager(out)  # it changed nothing that remains
    assert by_manager(out)["kubectl-create"]["time"] == T0
    assert json.loads(fields(out, "kubectl-create"))["f:metadata"] == {"f:labels": {}}


def test_unchanged_update_keeps_entries_and_times():
    obj = created(pod())
    out = updated(obj, lambda p: p["metadata"].update(resourceVersion="99"), "kubectl-create", T3)
    assert entries(out) == entries(obj)


def test_rewriting_a_field_bumps_only_the_writers_time():
    obj = updated(created(pod()), lambda p: p["metadata"]["labels"].update(env="a"), "labeler", T1)
    out = updated(obj, lambda p: p["metadata"]["labels"].update(env="b"), "labeler", T2)
    assert by_manager(out)["labeler"]["time"] == T2  # the write changed a value
    assert by_manager(out)["kubectl-create"]["time"] == T0


def test_update_by_another_version_is_a_separate_entry():
    obj = created(pod())
    out = updated(obj, lambda p: p["metadata"]["labels"].update(v="2"), "kubectl-create", T1,
                  api_version="v2")
    assert [(e["manager"], e["apiVersion"]) for e in entries(out)] == [
        ("kubectl-create", "v1"), ("kubectl-create", "v2")]


def test_untracked_objects_stay_untracked_and_empty_list_resets():
    bare = pod()
    bare["metadata"]["uid"] = "uid-1"
    out = updated(bare, lambda p: p["metadata"]["labels"].update(env="x"), "m", T1)
    assert "managedFields" not in out["metadata"]

    obj = created(pod())
    out = updated(obj, lambda p: p["metadata"].update(managedFields=[]), "m", T1)
    assert "managedFields" not in out["metadata"]


def test_managed_fields_sent_by_the_client_are_used():
    obj = updated(created(pod()), lambda p: p["metadata"]["labels"].update(env="x"), "labeler", T1)
    out = updated(obj, lambda p: p["metadata"].update(
        managedFields=[e for e in p["metadata"]["managedFields"] if e["manager"] == "labeler"]), "m", T2)
    assert [e["manager"] for e in entries(out)] == ["labeler"]


def test_status_writes_keep_the_live_managed_fields():
    obj = created(pod())
    out = updated(obj, lambda p: p["metadata"].update(managedFields=[]) or p["status"].update(phase="Running"),
                  "kubelet", T1, subresource="status")
    assert [e["manager"] for e in entries(out)] == ["kubectl-create", "kubelet"]
    assert fields(out, "kubelet") == '{"f:status":{"f:phase":{}}}'


def test_update_managers_are_capped_at_ten():
    obj = created(pod())
    for i in range(11):
        obj = updated(obj, lambda p, i=i: p["metadata"]["labels"].update({f"l{i}": "x"}), f"m{i:02}",
                      f"2025-01-02T00:00:{i:02}Z")
    managers = [e["manager"] for e in entries(obj)]
    # The 11th entry (after m09) folded the two oldest into the version's "ancient-changes" bucket; the
    # 12th (m10) folded the next oldest, m01, into it. The bucket takes the newest merged time.
    assert managers == ["ancient-changes"] + [f"m{i:02}" for i in range(2, 11)]
    bucket = by_manager(obj)["ancient-changes"]
    assert (bucket["operation"], bucket["apiVersion"], bucket["time"]) == ("Update", "v1", "2025-01-02T00:00:01Z")
    for owned in ('"f:image"', '"f:l0"', '"f:l1"'):
        assert owned in js(bucket["fieldsV1"])


# ------------------------------------------------------------------------------ server-side apply


def test_apply_creates_with_exactly_the_config_field_set():
    out = applied(None, pod_config(ports=[{"containerPort": 80}]), "ci", T1, reset_fields=["status"])
    assert out["spec"]["containers"] == [{"name": "app", "image": "app:1", "ports": [{"containerPort": 80}]}]
    assert entries(out) == [{
        "manager": "ci", "operation": "Apply", "apiVersion": "v1", "time": T1, "fieldsType": "FieldsV1",
        "fieldsV1": by_manager(out)["ci"]["fieldsV1"],
    }]
    # No "." on declared struct fields of an applied config; the port key gets protocol's default.
    assert fields(out, "ci") == (
        '{"f:spec":{"f:containers":{"k:{\\"name\\":\\"app\\"}":{".":{},"f:image":{},"f:name":{},'
        '"f:ports":{"k:{\\"containerPort\\":80,\\"protocol\\":\\"TCP\\"}":{".":{},"f:containerPort":{}}}}}}}'
    )


def test_apply_conflict_names_manager_and_field_then_force_takes_ownership():
    live = created(pod())
    err = apply_error(live, pod_config(image="app:2"))
    assert (err.code, err.reason) == (409, "Conflict")
    assert err.message == ('Apply failed with 1 conflict: conflict with "kubectl-create" using v1: '
                           '.spec.containers[name="app"].image')
    assert err.details == {"causes": [{"reason": "FieldManagerConflict",
                                       "message": 'conflict with "kubectl-create" using v1',
                                       "field": '.spec.containers[name="app"].image'}]}

    out = applied(live, pod_config(image="app:2"), "ci", T1, force=True)
    assert out["spec"]["containers"][0]["image"] == "app:2"
    assert [(e["manager"], e["operation"]) for e in entries(out)] == [("ci", "Apply"),
                                                                     ("kubectl-create", "Update")]
    assert '"f:image"' in fields(out, "ci") and '"f:image"' not in fields(out, "kubectl-create")
    # Fields applied with their current value are shared, not conflicting.
    assert '"f:name"' in fields(out, "ci") and '"f:name"' in fields(out, "kubectl-create")


def test_apply_reports_every_conflict_grouped_by_manager():
    live = applied(created(pod()), {"apiVersion": "v1", "kind": "Pod", "metadata": {
        "name": "web", "labels": {"owner": "a"}}}, "a-applier", T1)
    config = pod_config(image="app:2")
    config["metadata"]["labels"] = {"app": "other", "owner": "b"}
    err = apply_error(live, config)
    assert err.message == (
        'Apply failed with 3 conflicts: conflicts with "a-applier":\n'
        "- .metadata.labels.owner\n"
        'conflicts with "kubectl-create" using v1:\n'
        "- .metadata.labels.app\n"
        '- .spec.containers[name="app"].image'
    )
    assert [(c["field"], c["message"]) for c in err.details["causes"]] == [
        (".metadata.labels.owner", 'conflict with "a-applier"'),
        (".metadata.labels.app", 'conflict with "kubectl-create" using v1'),
        ('.spec.containers[name="app"].image', 'conflict with "kubectl-create" using v1'),
    ]


def test_apply_removes_what_it_no_longer_specifies_unless_someone_else_owns_it():
    config = pod_config()
    config["metadata"]["labels"] = {"app": "web", "tier": "front", "shared": "yes"}
    live = applied(None, config, "a", T1)
    other = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web", "labels": {"shared": "yes"}}}
    live = applied(live, other, "b", T2)  # same value: shared ownership, no conflict
    config["metadata"]["labels"] = {"app": "web"}
    out = applied(live, config, "a", T3)
    assert out["metadata"]["labels"] == {"app": "web", "shared": "yes"}
    assert fields(out, "a").startswith('{"f:metadata":{"f:labels":{"f:app":{}}},')
    assert fields(out, "b") == '{"f:metadata":{"f:labels":{"f:shared":{}}}}'

    config["metadata"].pop("labels")
    out = applied(out, config, "a", "2025-01-01T04:00:00Z")
    assert out["metadata"]["labels"] == {"shared": "yes"}


def test_apply_does_not_remove_fields_another_manager_changed():
    config = pod_config()
    config["metadata"]["labels"] = {"tier": "front"}
    live = applied(None, config, "a", T1)
    live["metadata"]["uid"] = "uid-1"
    live = updated(live, lambda p: p["metadata"]["labels"].update(tier="back"), "kubectl-label", T2)
    config["metadata"].pop("labels")
    out = applied(live, config, "a", T3)
    assert out["metadata"]["labels"] == {"tier": "back"}


def test_apply_merges_sets_and_prunes_its_own_items():
    cfg_a = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web", "finalizers": ["a.io/x"]}}
    cfg_b = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web", "finalizers": ["b.io/y"]}}
    live = applied(applied(None, cfg_a, "a", T1), cfg_b, "b", T2)
    assert live["metadata"]["finalizers"] == ["a.io/x", "b.io/y"]
    assert fields(live, "a") == '{"f:metadata":{"f:finalizers":{"v:\\"a.io/x\\"":{}}}}'
    cfg_a["metadata"]["finalizers"] = []
    out = applied(live, cfg_a, "a", T3)
    assert out["metadata"]["finalizers"] == ["b.io/y"]
    assert "a" not in by_manager(out)


def test_apply_merges_list_maps_by_key_on_the_status_subresource():
    claim = created({"apiVersion": RV1, "kind": "ResourceClaim",
                     "metadata": {"name": "gpu", "namespace": "default"},
                     "spec": {"devices": {"requests": [{"name": "a", "exactly": {"deviceClassName": "g"}}]}}},
                    definition=CLAIM, api_version=RV1)

    def status(device: str, data: dict) -> dict:
        return {"apiVersion": RV1, "kind": "ResourceClaim", "metadata": {"name": "gpu", "namespace": "default"},
                "status": {"devices": [{"driver": "d.io", "pool": "p", "device": device, "data": data}]}}

    kw = {"definition": CLAIM, "api_version": RV1, "subresource": "status", "reset_fields": ["spec"]}
    live = applied(claim, status("g0", {"temp": 40}), "driver-a", T1, **kw)
    live = applied(live, status("g1", {"temp": 50}), "driver-b", T2, **kw)
    assert live["status"]["devices"] == [
        {"driver": "d.io", "pool": "p", "device": "g0", "data": {"temp": 40}},
        {"driver": "d.io", "pool": "p", "device": "g1", "data": {"temp": 50}},
    ]
    assert fields(live, "driver-b") == (
        '{"f:status":{"f:devices":{"k:{\\"device\\":\\"g1\\",\\"driver\\":\\"d.io\\",\\"pool\\":\\"p\\"}":'
        '{".":{},"f:data":{"f:temp":{}},"f:device":{},"f:driver":{},"f:pool":{}}}}}'
    )
    assert by_manager(live)["driver-b"]["subresource"] == "status"
    assert live["spec"] == claim["spec"]


def test_apply_list_merge_order():
    config = pod_config()
    config["spec"]["containers"] = [{"name": "a", "image": "a"}, {"name": "b", "image": "b"}]
    live = applied(None, config, "ci", T1)
    other = pod_config()
    other["spec"]["containers"] = [{"name": "c", "image": "c"}]
    out = applied(live, other, "other", T2)  # items new to the list are appended
    assert [c["name"] for c in out["spec"]["containers"]] == ["a", "b", "c"]
    # Shared items follow the applied order; a live-only item stays after the shared item it followed
    # once that one is placed (SMD's visitListItems walk).
    config["spec"]["containers"].reverse()
    out = applied(out, config, "ci", T3)
    assert [c["name"] for c in out["spec"]["containers"]] == ["b", "c", "a"]


def test_apply_that_changes_nothing_keeps_times():
    live = applied(None, pod_config(), "ci", T1)
    out = applied(live, pod_config(), "ci", T2)
    assert entries(out) == entries(live)


def test_apply_attributes_untracked_fields_to_before_first_apply():
    live = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "d", "uid": "u"},
            "data": {"a": "1", "b": "2"}}
    config = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"a": "1", "c": "3"}}
    out = applied(live, config, "ci", T1, definition=CM)
    assert out["data"] == {"a": "1", "b": "2", "c": "3"}
    assert [(e["manager"], e["operation"], e["time"]) for e in entries(out)] == [
        ("ci", "Apply", T1), ("before-first-apply", "Update", T1)]
    assert fields(out, "before-first-apply") == '{"f:data":{".":{},"f:a":{},"f:b":{}}}'
    assert fields(out, "ci") == '{"f:data":{"f:a":{},"f:c":{}}}'


def test_kubectl_apply_takes_over_from_client_side_apply():
    last = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web", "namespace": "default"},
            "spec": {"containers": [{"image": "app:1", "name": "app"}]}}
    obj = pod_config()
    obj["metadata"]["annotations"] = {fm.LAST_APPLIED: json.dumps(last)}
    live = created(obj, manager="kubectl-client-side-apply")

    err = apply_error(live, pod_config(image="app:2"), manager="someone")
    assert err.message.endswith('conflict with "kubectl-client-side-apply" using v1: '
                                '.spec.containers[name="app"].image')

    out = applied(live, pod_config(image="app:2"), "kubectl", T1)
    assert out["spec"]["containers"][0]["image"] == "app:2"
    assert '"f:image"' not in fields(out, "kubectl-client-side-apply")
    # The annotation follows the applied configuration, encoded as Go does (sorted keys, newline).
    assert out["metadata"]["annotations"][fm.LAST_APPLIED] == (
        '{"apiVersion":"v1","kind":"Pod","metadata":{"name":"web","namespace":"default"},'
        '"spec":{"containers":[{"image":"app:2","name":"app"}]}}\n'
    )


def test_apply_input_errors():
    err = apply_error(None, {"metadata": {"name": "web"}})
    assert (err.code, err.reason, err.message) == (400, "BadRequest", "invalid object type: /, Kind=")
    err = apply_error(None, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "web"}})
    assert err.message == "invalid object type: /v1, Kind=ConfigMap"
    err = apply_error(None, {"apiVersion": RV1, "kind": "ResourceClaim", "metadata": {"name": "x"}})
    assert err.message == "invalid object type: resource.k8s.io/v1, Kind=ResourceClaim"

    config = pod_config()
    config["metadata"]["managedFields"] = []
    err = apply_error(None, config)
    assert (err.code, err.message) == (400, "metadata.managedFields must be nil")

    err = apply_error(None, pod_config(), name="other")
    assert err.code == 400
    assert err.message == "the name of the object (web) does not match the name on the URL (other)"
    nameless = pod_config()
    del nameless["metadata"]["name"]
    err = apply_error(None, nameless, name="web")
    assert (err.code, err.message) == (400, "the name of the object () does not match the name on the URL (web)")

    err = apply_error(None, pod_config(bogus=1))
    assert err.code == 500
    assert err.message == ("failed to create typed patch object (default/web; /v1, Kind=Pod): "
                           '.spec.containers[name="app"].bogus: field not declared in schema')
    config = pod_config()
    config["spec"]["containers"].append({"name": "app", "image": "again"})
    err = apply_error(None, config)
    assert err.message.endswith(': .spec.containers: duplicate entries for key [name="app"]')


def test_apply_accepts_yaml():
    out = applied(None, b"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\ndata:\n  k: v\n", "ci", T1,
                  definition=CM)
    assert out["data"] == {"k": "v"} and fields(out, "ci") == '{"f:data":{"f:k":{}}}'
    err = apply_error(None, b"- a\n", definition=CM)
    assert (err.code, err.reason) == (400, "BadRequest")


def test_tracking_and_applying_leave_no_reference_cycles():
    """What a write's bookkeeping leaves behind is freed by reference counting: a reference cycle per call (a
    closure that calls itself) would pile up for the cyclic collector, whose pauses hold the event loop."""
    gc.collect()
    gc.disable()
    try:
        for i in range(3):  # field sets not seen before: the encoders run, not their caches
            obj = pod()
            obj["metadata"]["labels"][f"unseen-{uuid.uuid4()}"] = str(i)
            live = created(obj)
            later = updated(live, lambda o: o["metadata"]["labels"].update(more="x"), "other", T1)
            applied(later, pod_config(), "ci", T2)
            fm.fields_to_set(entries(later)[0]["fieldsV1"])
        assert gc.collect() == 0
    finally:
        gc.enable()


def test_creates_of_the_same_content_share_a_field_set_and_nothing_else():
    first = created(pod(), manager="one", now=T0)
    again = pod()
    again["metadata"].update(name="web-2", uid="uid-2", creationTimestamp=T1, resourceVersion="7")
    second = created(again, manager="two", now=T1)
    assert fields(second, "two") == fields(first, "one")
    assert (by_manager(second)["two"]["time"], entries(second)[0]["operation"]) == (T1, "Update")
    # Any other difference is a different field set.
    labelled = pod()
    labelled["metadata"]["labels"]["tier"] = "front"
    assert '"f:tier":{}' in fields(created(labelled, manager="three"), "three")
    generated = pod()
    generated["metadata"]["generateName"] = "web-"
    assert '"f:generateName":{}' in fields(created(generated, manager="four"), "four")
    assert fields(created(pod(), manager="five", definition=POD), "five") == fields(first, "one")
