"""Server-side Table printing, compared with upstream's printers for 1.37."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from dramock.registry import Registry
from dramock.registry import printing as printers

registry = Registry.default()

NOW = datetime(2026, 3, 1, 12, 0, 0, tzinfo=UTC)


def ts(seconds_ago: float) -> str:
    return (NOW - timedelta(seconds=seconds_ago)).strftime("%Y-%m-%dT%H:%M:%SZ")


def kind(plural: str, group: str = "", version: str = "v1"):
    k = registry.lookup(group, version, plural)
    assert k is not None
    return k


def headers(plural: str, group: str = "") -> list[tuple[str, int]]:
    return [(c["name"], c["priority"]) for c in printers.column_definitions(kind(plural, group))]


def cells(plural: str, obj: dict, group: str = "") -> list:
    return printers.table(kind(plural, group), [obj], now=NOW)["rows"][0]["cells"]


@pytest.mark.parametrize("seconds,expected", [
    (-3, "<invalid>"), (-1.5, "0s"), (0, "0s"), (5, "5s"), (119, "119s"), (120, "2m"), (182, "3m2s"),
    (600, "10m"), (179 * 60, "179m"), (3 * 3600, "3h"), (3 * 3600 + 60 * 25, "3h25m"), (8 * 3600, "8h"),
    (47 * 3600, "47h"), (48 * 3600, "2d"), (3 * 86400 + 5 * 3600, "3d5h"), (10 * 86400, "10d"),
    (729 * 86400, "729d"), (2 * 365 * 86400 + 30 * 86400, "2y30d"), (3 * 365 * 86400, "3y"),
    (9 * 365 * 86400, "9y"),
])
def test_human_duration(seconds, expected):
    assert printers.human_duration(seconds) == expected


def test_column_sets():
    assert headers("resourceslices", "resource.k8s.io") == [
        ("Name", 0), ("Node", 0), ("Driver", 0), ("Pool", 0), ("Age", 0)]
    assert headers("resourceclaims", "resource.k8s.io") == [("Name", 0), ("State", 0), ("Age", 0)]
    assert headers("deviceclasses", "resource.k8s.io") == [("Name", 0), ("Age", 0)]
    assert headers("resourceclaimtemplates", "resource.k8s.io") == [("Name", 0), ("Age", 0)]
    assert headers("devicetaintrules", "resource.k8s.io") == [("Name", 0), ("Age", 0)]
    assert headers("pods") == [("Name", 0), ("Ready", 0), ("Status", 0), ("Restarts", 0), ("Age", 0),
                               ("IP", 1), ("Node", 1), ("Nominated Node", 1), ("Readiness Gates", 1)]
    assert headers("nodes") == [("Name", 0), ("Status", 0), ("Roles", 0), ("Age", 0), ("Version", 0),
                                ("Internal-IP", 1), ("External-IP", 1), ("OS-Image", 1), ("Kernel-Version", 1),
                                ("Container-Runtime", 1)]
    assert headers("namespaces") == [("Name", 0), ("Status", 0), ("Age", 0)]
    assert headers("events") == [("Last Seen", 0), ("Type", 0), ("Reason", 0), ("Object", 0), ("Subobject", 1),
                                 ("Source", 1), ("Message", 0), ("First Seen", 1), ("Count", 1), ("Name", 1)]
    assert headers("configmaps") == [("Name", 0), ("Data", 0), ("Age", 0)]
    assert headers("secrets") == [("Name", 0), ("Type", 0), ("Data", 0), ("Age", 0)]
    assert headers("serviceaccounts") == [("Name", 0), ("Secrets", 0), ("Age", 0)]
    assert headers("resourcequotas") == [("Name", 0), ("Request", 0), ("Limit", 0), ("Age", 0)]
    assert headers("leases", "coordination.k8s.io") == [("Name", 0), ("Holder", 0), ("Age", 0)]


def test_column_definition_shape():
    name, state, age = printers.column_definitions(kind("resourceclaims", "resource.k8s.io"))
    assert name["type"] == "string" and name["format"] == "name"
    assert name["description"].startswith("Name must be unique within a namespace.")
    assert state == {"name": "State", "type": "string", "format": "",
                     "description": "A summary of the current state (allocated, pending, reserved, etc.).",
                     "priority": 0}
    assert age["description"].startswith("CreationTimestamp is a timestamp representing the server time")


def test_resource_claim_states():
    k = "resourceclaims"
    base = {"metadata": {"name": "c", "creationTimestamp": ts(5)}}
    assert cells(k, base, "resource.k8s.io") == ["c", "pending", "5s"]
    allocated = {**base, "status": {"allocation": {"devices": {}}}}
    assert cells(k, allocated, "resource.k8s.io")[1] == "allocated"
    reserved = {**base, "status": {"allocation": {}, "reservedFor": [{"resource": "pods", "name": "p"}]}}
    assert cells(k, reserved, "resource.k8s.io")[1] == "allocated,reserved"
    deleted = {"metadata": {**base["metadata"], "deletionTimestamp": ts(1)}}
    assert cells(k, deleted, "resource.k8s.io")[1] == "deleted"
    deleted_alloc = {**deleted, "status": {"allocation": {}, "reservedFor": [{}]}}
    assert cells(k, deleted_alloc, "resource.k8s.io")[1] == "deleted,allocated,reserved"


def test_resource_slice_and_dra_kinds():
    rs = {"metadata": {"name": "n1-gpu", "creationTimestamp": ts(182)},
          "spec": {"nodeName": "n1", "driver": "gpu.example.com", "pool": {"name": "n1", "generation": 1}}}
    assert cells("resourceslices", rs, "resource.k8s.io") == ["n1-gpu", "n1", "gpu.example.com", "n1", "3m2s"]
    shared = {"metadata": {"name": "s", "creationTimestamp": ts(10 * 86400)},
              "spec": {"allNodes": True, "driver": "d", "pool": {"name": "p"}}}
    assert cells("resourceslices", shared, "resource.k8s.io") == ["s", "", "d", "p", "10d"]
    dc = {"metadata": {"name": "gpu.example.com", "creationTimestamp": ts(3600)}}
    assert cells("deviceclasses", dc, "resource.k8s.io") == ["gpu.example.com", "60m"]
    assert cells("resourceclaimtemplates", dc, "resource.k8s.io") == ["gpu.example.com", "60m"]
    assert cells("devicetaintrules", {"metadata": {"name": "t"}}, "resource.k8s.io") == ["t", "<unknown>"]


def test_pod_running_with_restarts():
    pod = {
        "metadata": {"name": "web", "creationTimestamp": ts(3700)},
        "spec": {"nodeName": "n1", "containers": [{"name": "a"}, {"name": "b"}]},
        "status": {
            "phase": "Running", "podIPs": [{"ip": "10.0.0.5"}],
            "conditions": [{"type": "Ready", "status": "True"}],
            "containerStatuses": [
                {"name": "a", "ready": True, "restartCount": 2, "state": {"running": {}},
                 "lastState": {"terminated": {"finishedAt": ts(65), "exitCode": 1}}},
                {"name": "b", "ready": True, "restartCount": 0, "state": {"running": {}}},
            ],
        },
    }
    assert cells("pods", pod) == ["web", "2/2", "Running", "2 (65s ago)", "61m", "10.0.0.5", "n1", "<none>",
                                  "<none>"]


def test_pod_waiting_pending_and_terminating():
    pending = {"metadata": {"name": "p", "creationTimestamp": ts(3)},
               "spec": {"containers": [{"name": "a"}]}, "status": {"phase": "Pending"}}
    assert cells("pods", pending) == ["p", "0/1", "Pending", "0", "3s", "<none>", "<none>", "<none>", "<none>"]
    crash = {"metadata": {"name": "p", "creationTimestamp": ts(3)}, "spec": {"containers": [{"name": "a"}]},
             "status": {"phase": "Running", "containerStatuses": [
                 {"name": "a", "restartCount": 4, "state": {"waiting": {"reason": "CrashLoopBackOff"}}}]}}
    assert cells("pods", crash)[1:4] == ["0/1", "CrashLoopBackOff", "4"]
    gated = {"metadata": {"name": "p", "creationTimestamp": ts(3)}, "spec": {"containers": [{"name": "a"}]},
             "status": {"phase": "Pending", "conditions": [
                 {"type": "PodScheduled", "status": "False", "reason": "SchedulingGated"}]}}
    assert cells("pods", gated)[2] == "SchedulingGated"
    terminating = {"metadata": {"name": "p", "creationTimestamp": ts(3), "deletionTimestamp": ts(0)},
                   "spec": {"containers": [{"name": "a"}]}, "status": {"phase": "Running"}}
    assert cells("pods", terminating)[2] == "Terminating"
    init = {"metadata": {"name": "p", "creationTimestamp": ts(3)},
            "spec": {"initContainers": [{"name": "i"}], "containers": [{"name": "a"}]},
            "status": {"phase": "Pending", "initContainerStatuses": [
                {"name": "i", "state": {"running": {}}}]}}
    assert cells("pods", init)[2] == "Init:0/1"


def test_pod_succeeded_row_condition_and_wide():
    pod = {"metadata": {"name": "job", "creationTimestamp": ts(30)},
           "spec": {"containers": [{"name": "a"}], "readinessGates": [{"conditionType": "x/ready"}]},
           "status": {"phase": "Succeeded", "nominatedNodeName": "n2",
                      "conditions": [{"type": "x/ready", "status": "True"}],
                      "containerStatuses": [{"name": "a", "state": {"terminated": {"exitCode": 0,
                                                                                   "reason": "Completed"}}}]}}
    row = printers.table(kind("pods"), [pod], now=NOW)["rows"][0]
    assert row["cells"] == ["job", "0/1", "Completed", "0", "30s", "<none>", "<none>", "n2", "1/1"]
    assert row["conditions"] == [{"type": "Completed", "status": "True", "reason": "Succeeded",
                                  "message": "The pod has completed successfully."}]


def test_node():
    node = {"metadata": {"name": "n1", "creationTimestamp": ts(90000),
                         "labels": {"node-role.kubernetes.io/control-plane": "", "kubernetes.io/role": "infra"}},
            "spec": {"unschedulable": True},
            "status": {"conditions": [{"type": "Ready", "status": "True"}],
                       "addresses": [{"type": "InternalIP", "address": "172.18.0.2"}],
                       "nodeInfo": {"kubeletVersion": "v1.37.0", "osImage": "Debian"}}}
    assert cells("nodes", node) == ["n1", "Ready,SchedulingDisabled", "control-plane,infra", "25h", "v1.37.0",
                                    "172.18.0.2", "<none>", "Debian", "<unknown>", "<unknown>"]
    bare = {"metadata": {"name": "n2", "creationTimestamp": ts(5)}}
    assert cells("nodes", bare)[1:3] == ["Unknown", "<none>"]
    not_ready = {"metadata": {"name": "n3"}, "status": {"conditions": [{"type": "Ready", "status": "Unknown"}]}}
    assert cells("nodes", not_ready)[1] == "NotReady"


def test_event_core_and_events_api_shapes():
    ev = {"metadata": {"name": "p.123", "creationTimestamp": ts(70)},
          "involvedObject": {"kind": "Pod", "name": "p", "fieldPath": "spec.containers{a}"},
          "reason": "Scheduled", "message": "Successfully assigned default/p to n1 \n", "type": "Normal",
          "source": {"component": "default-scheduler"}, "firstTimestamp": ts(70), "lastTimestamp": ts(10),
          "count": 3}
    assert cells("events", ev) == ["10s", "Normal", "Scheduled", "pod/p", "spec.containers{a}",
                                   "default-scheduler", "Successfully assigned default/p to n1", "70s", 3,
                                   "p.123"]
    new_api = {"apiVersion": "events.k8s.io/v1", "kind": "Event",
               "metadata": {"name": "e", "creationTimestamp": ts(5)},
               "eventTime": "2026-03-01T11:59:55.000000Z", "reportingController": "dra-controller",
               "reportingInstance": "dra-1", "regarding": {"kind": "ResourceClaim", "name": "c"},
               "reason": "Allocated", "note": "done", "type": "Normal"}
    assert cells("events", new_api, "events.k8s.io") == ["5s", "Normal", "Allocated", "resourceclaim/c", "",
                                                          "dra-controller, dra-1", "done", "5s", 1, "e"]
    series = {**ev, "series": {"count": 7, "lastObservedTime": "2026-03-01T11:59:58.000000Z"}}
    assert cells("events", series)[0] == "2s" and cells("events", series)[8] == 7


def test_small_core_kinds():
    md = {"name": "x", "creationTimestamp": ts(5)}
    assert cells("namespaces", {"metadata": md, "status": {"phase": "Active"}}) == ["x", "Active", "5s"]
    assert cells("configmaps", {"metadata": md, "data": {"a": "1"}, "binaryData": {"b": "AA=="}}) == ["x", 2, "5s"]
    assert cells("configmaps", {"metadata": md}) == ["x", 0, "5s"]
    assert cells("secrets", {"metadata": md, "type": "Opaque", "data": {"a": "MQ=="}}) == ["x", "Opaque", 1, "5s"]
    assert cells("serviceaccounts", {"metadata": md}) == ["x", 0, "5s"]
    assert cells("leases", {"metadata": md, "spec": {"holderIdentity": "kcm-1"}},
                 "coordination.k8s.io") == ["x", "kcm-1", "5s"]
    assert cells("leases", {"metadata": md, "spec": {}}, "coordination.k8s.io") == ["x", "", "5s"]


def test_resource_quota():
    q = {"metadata": {"name": "q", "creationTimestamp": ts(5)},
         "status": {"hard": {"pods": "10", "requests.cpu": "1", "limits.memory": "2Gi",
                             "count/resourceclaims.resource.k8s.io": "4"},
                    "used": {"pods": "2", "requests.cpu": "500m"}}}
    assert cells("resourcequotas", q) == [
        "q", "count/resourceclaims.resource.k8s.io: 0/4, pods: 2/10, requests.cpu: 500m/1",
        "limits.memory: 0/2Gi", "5s"]


def test_table_envelope_and_include_object():
    k = kind("resourceclaims", "resource.k8s.io")
    obj = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
           "metadata": {"name": "c", "namespace": "default", "resourceVersion": "12", "creationTimestamp": ts(5)},
           "spec": {"devices": {}}}
    t = printers.table(k, [obj], now=NOW, list_meta={"resourceVersion": "42"})
    assert t["kind"] == "Table" and t["apiVersion"] == "meta.k8s.io/v1"
    assert t["metadata"] == {"resourceVersion": "42"}
    assert t["rows"][0] == {"cells": ["c", "pending", "5s"], "object": {
        "kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": obj["metadata"]}}
    assert printers.table(k, [obj], include_object="Object", now=NOW)["rows"][0]["object"] == obj
    assert printers.table(k, [obj], include_object="None", now=NOW)["rows"][0]["object"] is None
    assert printers.table(k, [obj], include_object="", now=NOW)["rows"][0]["object"]["kind"] == \
        "PartialObjectMetadata"
    assert printers.table(k, [], now=NOW)["rows"] == []
    assert printers.table(k, [obj], no_headers=True, now=NOW)["columnDefinitions"] is None
    v1beta1 = printers.table(k, [obj], now=NOW, api_version="meta.k8s.io/v1beta1")
    assert v1beta1["apiVersion"] == "meta.k8s.io/v1beta1"
    assert v1beta1["rows"][0]["object"]["apiVersion"] == "meta.k8s.io/v1beta1"
    with pytest.raises(ValueError):
        printers.table(k, [obj], include_object="Bogus")


def test_negotiate_table():
    kubectl = ("application/json;as=Table;v=v1;g=meta.k8s.io,"
               "application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json")
    assert printers.negotiate_table(kubectl) == "meta.k8s.io/v1"
    assert printers.negotiate_table("application/json;as=Table;v=v1beta1;g=meta.k8s.io") == "meta.k8s.io/v1beta1"
    assert printers.negotiate_table("application/json") is None
    assert printers.negotiate_table(None) is None
