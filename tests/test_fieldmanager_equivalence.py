"""track_update's one-walk change tracking gives byte-identical managedFields to the plain statement of it
(compare old and new, then drop the reset fields), for creates and chains of updates of many objects."""

from __future__ import annotations

import copy
import glob
import os
import random

import orjson
import pytest
import yaml

from dramock.apiserver.fieldmanager import track_update, update
from dramock.apiserver.fieldmanager.objects import _ignored, _with_zero, _zero_object
from dramock.apiserver.fieldmanager.schema import _root
from dramock.apiserver.fieldmanager.typed import _changes, _comparison, _ignored_trie
from dramock.schemas import defs

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
T = [f"2026-01-01T00:00:{s:02d}Z" for s in range(60)]
# (subresource, reset fields): the main resource and status endpoints as the API server passes them, none,
# and deeper paths (a field under spec, one under a list, which names nothing) that only the trie handles.
ENDPOINTS = [("", ["status"]), ("", []), ("status", ["spec"]), ("status", ["spec", "metadata"]),
             ("", ["spec.devices", "metadata.labels"]), ("", ["spec.containers.name", "status"]),
             ("", ["spec", "spec.devices"])]


def definition_of(obj: dict) -> tuple[str, str] | None:
    api_version, kind = obj.get("apiVersion"), obj.get("kind")
    if not isinstance(api_version, str) or not isinstance(kind, str):
        return None
    group, _, version = api_version.rpartition("/")
    d = defs.kind_definition(group, version, kind)
    return (d, api_version) if d else None


def handmade() -> list[dict]:
    pod = {"apiVersion": "v1", "kind": "Pod",
           "metadata": {"name": "p", "namespace": "default", "labels": {"a": "1", "b": ""}, "annotations": {},
                        "uid": "u", "creationTimestamp": T[0], "ownerReferences": [
                            {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs", "uid": "rs-uid"}],
                        "finalizers": ["a/b", "c/d"]},
           "spec": {"containers": [
               {"name": "app", "image": "app:1", "resources": {}, "ports": [
                   {"containerPort": 80, "protocol": "TCP"}, {"containerPort": 80, "protocol": "UDP"},
                   {"containerPort": 443}, {"containerPort": 8080, "name": "alt", "protocol": "SCTP"}],
                "env": [{"name": "A", "value": "1"}, {"name": "B", "valueFrom": {"fieldRef": {"fieldPath": "x"}}}],
                "volumeMounts": [{"name": "v", "mountPath": "/v"}], "args": [], "command": None},
               {"name": "side", "image": "side:1", "securityContext": {"capabilities": {"add": ["NET_ADMIN"]}}}],
               "initContainers": [], "volumes": [{"name": "v", "emptyDir": {}}],
               "resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "t"}],
               "tolerations": [{"key": "k", "operator": "Exists"}], "nodeSelector": {"zone": "a"},
               "affinity": None, "restartPolicy": "Always", "priority": 0, "enableServiceLinks": False},
           "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}],
                      "containerStatuses": [{"name": "app", "ready": True, "restartCount": 0, "image": "app:1",
                                             "imageID": "", "state": {"running": {"startedAt": T[0]}}}]}}
    claim = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
             "metadata": {"name": "c", "namespace": "default", "labels": {"team": "ml"}},
             "spec": {"devices": {
                 "requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu", "count": 2,
                                                          "selectors": [{"cel": {"expression": "true"}}]}},
                              {"name": "alt", "firstAvailable": [{"name": "a", "deviceClassName": "x"}]}],
                 "constraints": [{"requests": ["gpu"], "matchAttribute": "gpu.example.com/numa"}],
                 "config": [{"requests": ["gpu"], "opaque": {"driver": "gpu.example.com",
                                                             "parameters": {"a": [1, 2.5, None, True], "b": {}}}}]}},
             "status": {
                 "allocation": {"devices": {"results": [
                     {"request": "gpu", "driver": "gpu.example.com", "pool": "n1", "device": "d0"}]},
                     "nodeSelector": {"nodeSelectorTerms": [{"matchFields": [
                         {"key": "metadata.name", "operator": "In", "values": ["n1"]}]}]}},
                 "reservedFor": [{"resource": "pods", "name": "p", "uid": "p1"},
                                 {"resource": "pods", "name": "q", "uid": "p2"}],
                 "devices": [{"driver": "gpu.example.com", "pool": "n1", "device": "d0",
                              "conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": T[0],
                                              "reason": "R", "message": ""}],
                              "data": {"x": [{"y": None}]}, "networkData": {"ips": ["10.0.0.1/24"]}},
                             {"driver": "gpu.example.com", "pool": "n1", "device": "d1", "shareID": "s"}]}}
    slice_ = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": "s"},
              "spec": {"driver": "gpu.example.com", "nodeName": "n1",
                       "pool": {"name": "n1", "generation": 1, "resourceSliceCount": 1},
                       "devices": [{"name": f"gpu-{i}", "attributes": {
                           "model": {"string": "A100"}, "index": {"int": i}, "ok": {"bool": True},
                           "gpu.example.com/ver": {"version": "1.0.0"}},
                           "capacity": {"memory": {"value": "40Gi"}}} for i in range(3)]
                       + [{"name": "bare"}, {"name": "empty", "attributes": {}, "capacity": None}]}}
    dc = {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": "gpu"},
          "spec": {"selectors": [{"cel": {"expression": 'device.driver == "gpu.example.com"'}}],
                   "config": [{"opaque": {"driver": "gpu.example.com", "parameters": {}}}],
                   "extendedResourceName": "example.com/gpu"}}
    odd = [
        # Nulls, empties and values of the wrong JSON type where the schema wants maps or lists.
        {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "x", "labels": None}, "spec": None},
        {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "x", "labels": {}}, "spec": {}, "status": None},
        {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "x"}, "spec": "nope", "status": []},
        {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "x"}, "spec": {"containers": []}},
        {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "x"}, "spec": {"containers": [None, 3]}},
        {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "x"},
         "spec": {"containers": [{"name": "a"}, {"name": "a", "image": "dup"}, {"image": "nameless"}]}},
        {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "x", "finalizers": ["a", "a", None]},
         "spec": {"containers": {"name": "a"}, "unknownField": {"deep": [{"x": 1}]}}},
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm", "annotations": {"é<&>": "ü"}},
         "data": {"a": "1", "": "empty key"}, "binaryData": {}},
        {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": {"name": "c"},
         "spec": {"devices": {"requests": None}}, "status": {}},
        {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": {"name": "c"},
         "spec": {"devices": None}},
        {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": {"name": "c"}},
        {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": "s"},
         "spec": {"driver": None, "pool": None, "devices": [{"name": "a"}, {"name": 1}, {"name": True}]}},
        {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": {"name": "c"},
         "status": {"devices": [{"driver": "d", "pool": "p"}, {"driver": "d", "pool": "p", "device": 1.5}],
                    "reservedFor": [{"uid": True}, {"uid": 1}, {"uid": 1.0}]}},
        {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n"},
         "status": {"nodeInfo": {"kubeletVersion": "v1.37.0"}, "capacity": {"cpu": "4"},
                    "addresses": [{"type": "InternalIP", "address": "10.0.0.1"}]}},
        {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n"}, "status": {"nodeInfo": None}},
        {"apiVersion": "v1", "kind": "Event", "metadata": {"name": "e"},
         "involvedObject": {"kind": "Pod", "name": "p"}, "reason": "R", "count": 1},
    ]
    return [pod, claim, slice_, dc, *odd]


def fixtures() -> list[dict]:
    out = []
    for pattern in ("examples/**/*.yaml", "tests/spec_scenarios/*.yaml"):
        for path in sorted(glob.glob(os.path.join(ROOT, pattern), recursive=True)):
            with open(path) as f:
                for doc in yaml.safe_load_all(f):
                    if isinstance(doc, dict) and doc.get("kind") == "List":
                        out.extend(x for x in doc.get("items") or [] if isinstance(x, dict))
                    elif isinstance(doc, dict):
                        out.append(doc)
    out.extend(handmade())
    return [o for o in out if definition_of(o)]


OBJECTS = fixtures()


def test_the_fixtures_cover_the_kinds_that_matter():
    kinds = {o["kind"] for o in OBJECTS}
    assert {"Pod", "ResourceClaim", "ResourceSlice", "DeviceClass", "ResourceClaimTemplate", "Deployment",
            "ConfigMap", "Node"} <= kinds
    assert len(OBJECTS) > 60


def fast(old, new, **kw) -> bytes:
    got = orjson.dumps(track_update(old, new, **kw))
    if old is None:  # a create of the same content again: from the field set remembered for it
        assert orjson.dumps(track_update(old, new, **kw)) == got
    return got


def general(old, new, **kw) -> bytes:
    update._CREATED_FIELDS.clear()  # computed here, not remembered from `fast`
    return orjson.dumps(update._track(old, new, kw["manager"], kw["api_version"], kw["definition"],
                                      kw.get("subresource", ""), kw["now"], kw.get("reset_fields", ()),
                                      update._record_update))


# ------------------------------------------------------------------------------ random changes


def _nodes(v, out: list) -> list:
    """Every container in `v` (dicts and lists), for picking a place to change."""
    if isinstance(v, (dict, list)):
        out.append(v)
        for x in (v.values() if isinstance(v, dict) else v):
            _nodes(x, out)
    return out


def _value(rnd: random.Random, depth: int = 0):
    choice = rnd.randrange(9 if depth < 2 else 5)
    if choice == 0:
        return None
    if choice == 1:
        return rnd.choice(["x", "", "TCP", "gpu", "é"])
    if choice == 2:
        return rnd.choice([0, 1, 1.0, 2.5, -3])
    if choice == 3:
        return rnd.choice([True, False])
    if choice == 4:
        return rnd.choice([{}, []])
    if choice in (5, 6):
        return {rnd.choice(["name", "image", "a", "b", "protocol", "containerPort", "driver", "pool", "device",
                            "uid", "type"]): _value(rnd, depth + 1) for _ in range(rnd.randrange(1, 4))}
    return [_value(rnd, depth + 1) for _ in range(rnd.randrange(0, 3))]


def mutate(obj: dict, rnd: random.Random) -> dict:
    new = copy.deepcopy(obj)
    for _ in range(rnd.randrange(1, 4)):
        # Not inside managedFields: those of a request are decoded (and checked) before tracking.
        entries = (new.get("metadata") or {}).get("managedFields") if isinstance(new.get("metadata"), dict) else None
        skip = {id(x) for x in _nodes(entries, [])}
        nodes = [x for x in _nodes({k: v for k, v in new.items() if k not in ("apiVersion", "kind")}, [])[1:]
                 if id(x) not in skip] or [new]
        node = rnd.choice(nodes)
        op = rnd.randrange(6)
        if isinstance(node, dict):
            keys = list(node)
            if op == 0 and keys:
                del node[rnd.choice(keys)]
            elif op == 1 and keys:
                node[rnd.choice(keys)] = _value(rnd)
            elif op == 2 and keys:
                k = rnd.choice(keys)
                if isinstance(node[k], str):
                    node[k] += "-changed"
            else:
                node[rnd.choice(["name", "labels", "extra", "containers", "devices", "reservedFor", "image",
                                 "protocol"])] = _value(rnd)
        else:
            if op == 0 and node:
                node.pop(rnd.randrange(len(node)))
            elif op == 1 and node:
                node.append(copy.deepcopy(rnd.choice(node)))
            elif op == 2:
                node.reverse()
            elif op == 3 and node:
                node[rnd.randrange(len(node))] = _value(rnd)
            else:
                node.append(_value(rnd))
    return new


# ------------------------------------------------------------------------------ the checks


@pytest.mark.parametrize("index", range(len(OBJECTS)), ids=[f"{o['kind']}-{i}" for i, o in enumerate(OBJECTS)])
def test_creates_and_updates_match_the_plain_statement(index):
    obj = OBJECTS[index]
    definition, api_version = definition_of(obj)
    rnd = random.Random(index)
    for subresource, reset in ENDPOINTS:
        kw = {"api_version": api_version, "definition": definition, "subresource": subresource,
              "reset_fields": reset}
        created = fast(None, obj, manager="creator", now=T[0], **kw)
        assert created == general(None, obj, manager="creator", now=T[0], **kw)
        # A chain of updates by several managers (more than ten: the cap merges the oldest), each from the
        # result before it, sometimes carrying managedFields of its own (kept, replaced or reset).
        live = orjson.loads(created)
        live["metadata"]["uid"] = "uid-1"
        for step in range(14):
            new = mutate(live, rnd)
            if step % 5 == 4 and isinstance(new.get("metadata"), dict):
                entries = live["metadata"].get("managedFields") or []
                new["metadata"]["managedFields"] = rnd.choice([[], [{}], entries[:1], entries[::-1]])
            if not isinstance(new.get("metadata"), dict):
                new["metadata"] = {}
            manager = f"m{rnd.randrange(12)}"
            got = fast(live, new, manager=manager, now=T[step + 1], **kw)
            assert got == general(live, new, manager=manager, now=T[step + 1], **kw), (subresource, reset, step)
            live = orjson.loads(got)
        # Creates carrying managedFields of their own (a create from a copied object).
        entries = live["metadata"].get("managedFields")
        if entries:
            sent = {**obj, "metadata": {**(obj.get("metadata") or {}), "managedFields": entries}}
            assert fast(None, sent, manager="c2", now=T[59], **kw) == general(None, sent, manager="c2", now=T[59],
                                                                                **kw)


@pytest.mark.parametrize("index", range(0, len(OBJECTS), 3))
def test_the_one_walk_comparison_equals_compare_then_exclude(index):
    """At the level of field sets: added, modified and removed, for object pairs with and without a side."""
    obj = OBJECTS[index]
    definition, api_version = definition_of(obj)
    root = _root(definition)
    zero = _zero_object(definition, api_version)
    rnd = random.Random(1000 + index)
    pairs = [(zero, _with_zero(obj, zero)), (_with_zero(obj, zero), zero)]
    for _ in range(20):
        a = mutate(obj, rnd)
        pairs.append((a, mutate(a, rnd)))
    for reset in ([], ["status"], ["spec"], ["spec", "metadata"], ["spec.devices", "status.devices"],
                  ["metadata.labels", "spec.containers"], ["spec", "spec.x"]):
        ignored = _ignored(reset)
        for lhs, rhs in pairs:
            want = _comparison(root, lhs, rhs).excluding(ignored)
            got = _changes(root, lhs, rhs, _ignored_trie(ignored))
            assert (got.added, got.modified, got.removed) == (want.added, want.modified, want.removed), reset

