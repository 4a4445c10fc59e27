"""Every served kind, entirely in protobuf, as a third-party client speaks it.

The client compiles the repository's copies of upstream's generated.proto (protos/k8s/) with grpcio-tools
into its own descriptor pool, as any non-Go client would; it never imports dramock's generated modules.
For each stored kind (every group's v1, and resource.k8s.io/v1beta2) it creates, gets, lists, updates,
watches and deletes (with a protobuf DeleteOptions body), decodes every answer and compares it field by field
with the JSON view of the same object; the scale subresource and the create-only reviews are spoken in
protobuf too. The kind list is checked against the registry, so a new stored kind must join it.
"""

from __future__ import annotations

import base64
import http.client
import json
import urllib.parse
from datetime import UTC, datetime
from importlib import resources
from pathlib import Path

import pytest
from google.protobuf import descriptor_pb2, descriptor_pool, json_format, message_factory
from grpc_tools import protoc

from tests.helpers import start_server, stop

PROTOS = Path(__file__).resolve().parent.parent / "protos" / "k8s"
PB = "application/vnd.kubernetes.protobuf"
MAGIC = b"k8s\x00"
META = "k8s.io.apimachinery.pkg.apis.meta.v1"
PACKAGES = {"v1": "k8s.io.api.core.v1", "resource.k8s.io/v1": "k8s.io.api.resource.v1",
            "resource.k8s.io/v1beta2": "k8s.io.api.resource.v1beta2",
            "coordination.k8s.io/v1": "k8s.io.api.coordination.v1", "events.k8s.io/v1": "k8s.io.api.events.v1",
            "apidiscovery.k8s.io/v2": "k8s.io.api.apidiscovery.v2", "apps/v1": "k8s.io.api.apps.v1",
            "batch/v1": "k8s.io.api.batch.v1", "autoscaling/v1": "k8s.io.api.autoscaling.v1",
            "authentication.k8s.io/v1": "k8s.io.api.authentication.v1",
            "authorization.k8s.io/v1": "k8s.io.api.authorization.v1",
            "rbac.authorization.k8s.io/v1": "k8s.io.api.rbac.v1"}


class Messages:
    """Message classes from a fresh descriptor pool built by protoc from the .proto files."""

    def __init__(self, tmp: Path):
        out = tmp / "k8s.pb"
        files = sorted(str(p.relative_to(PROTOS)) for p in PROTOS.rglob("generated.proto"))
        assert protoc.main(["protoc", f"-I{PROTOS}", f"-I{resources.files('grpc_tools') / '_proto'}",
                            "--include_imports", f"--descriptor_set_out={out}", *files]) == 0
        fds = descriptor_pb2.FileDescriptorSet.FromString(out.read_bytes())
        self.pool = descriptor_pool.DescriptorPool()
        for f in fds.file:
            self.pool.Add(f)

    def __call__(self, full_name: str):
        return message_factory.GetMessageClass(self.pool.FindMessageTypeByName(full_name))

    def kind(self, api_version: str, kind: str):
        return self(f"{PACKAGES[api_version]}.{kind}")


@pytest.fixture(scope="module")
def pb(tmp_path_factory) -> Messages:
    return Messages(tmp_path_factory.mktemp("protoc"))


@pytest.fixture(scope="module")
def srv(tmp_path_factory, starts_processes):
    s = start_server(str(tmp_path_factory.mktemp("pb")), "--runtime-config", "resource.k8s.io/v1beta2=true")
    yield s
    stop(s)


# ---- a minimal client -----------------------------------------------------------------------------------

class Client:
    def __init__(self, server, pb: Messages):
        self.port = server.port
        self.pb = pb

    def envelope(self, msg, api_version: str, kind: str) -> bytes:
        unknown = self.pb("k8s.io.apimachinery.pkg.runtime.Unknown")()
        unknown.typeMeta.apiVersion, unknown.typeMeta.kind = api_version, kind
        unknown.raw = msg.SerializeToString()
        return MAGIC + unknown.SerializeToString()

    def open(self, api_version: str, kind: str, data: bytes):
        """(typeMeta, message) of an enveloped body."""
        assert data[:4] == MAGIC, data[:40]
        unknown = self.pb("k8s.io.apimachinery.pkg.runtime.Unknown").FromString(data[4:])
        tm = unknown.typeMeta
        cls = self.pb(f"{META}.Status") if tm.kind == "Status" else self.pb.kind(api_version, kind)
        return (tm.apiVersion, tm.kind), cls.FromString(unknown.raw)

    def call(self, method: str, path: str, body: bytes | None = None, accept: str = PB,
             content_type: str = PB) -> tuple[int, str, bytes]:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        headers = {"Accept": accept}
        if body is not None:
            headers["Content-Type"] = content_type
        conn.request(method, path, body=body, headers=headers)
        resp = conn.getresponse()
        data = resp.read()
        conn.close()
        return resp.status, resp.getheader("Content-Type", ""), data

    def json(self, path: str) -> dict:
        code, ctype, data = self.call("GET", path, accept="application/json")
        assert code == 200 and ctype.startswith("application/json"), (code, data[:300])
        return json.loads(data)

    def watch(self, path: str, count: int, until=None) -> list[tuple[str, object]]:
        """Read protobuf watch frames until `count` events (or `until(events)`), then hang up."""
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        conn.request("GET", path, headers={"Accept": PB + ";stream=watch"})
        resp = conn.getresponse()
        assert resp.status == 200 and resp.getheader("Content-Type") == PB + ";stream=watch"
        events = []
        try:
            while len(events) < count and not (until and until(events)):
                size = int.from_bytes(resp.read(4), "big")
                event = self.pb(f"{META}.WatchEvent").FromString(resp.read(size))
                events.append((event.type, event.object.raw))
        finally:
            conn.close()
        return events


def path_of(api_version: str, plural: str, namespace: str | None, name: str | None = None) -> str:
    base = "/api/v1" if api_version == "v1" else f"/apis/{api_version}"
    ns = f"/namespaces/{namespace}" if namespace else ""
    return f"{base}{ns}/{plural}" + (f"/{name}" if name else "")


# ---- comparing a decoded message with the JSON view -----------------------------------------------------

def _rfc3339(seconds: int, nanos: int, micro: bool) -> str:
    t = datetime.fromtimestamp(seconds, UTC)
    return t.strftime("%Y-%m-%dT%H:%M:%S") + (f".{nanos // 1000:06d}Z" if micro else "Z")


def assert_same(msg, view, path: str = "") -> None:
    """Every JSON field is in the message with the same value, and every set message field is in the JSON."""
    name = msg.DESCRIPTOR.full_name
    if name.endswith("resource.Quantity"):
        assert msg.string == view, path
        return
    if name.endswith("meta.v1.Time") or name.endswith("meta.v1.MicroTime"):
        assert _rfc3339(msg.seconds, msg.nanos, name.endswith("MicroTime")) == view, path
        return
    if name.endswith("intstr.IntOrString"):
        assert (msg.strVal if msg.type == 1 else msg.intVal) == view, path
        return
    if name.endswith("runtime.RawExtension") or name.endswith("meta.v1.FieldsV1"):
        assert json.loads(msg.raw if hasattr(msg, "raw") else msg.Raw) == view, path
        return
    assert isinstance(view, dict), (path, view)
    fields = msg.DESCRIPTOR.fields_by_name
    seen = set()
    for key, value in view.items():
        where = f"{path}.{key}"
        f = fields.get(key)
        if f is None:  # an inlined embedded struct (Probe.handler, Volume.volumeSource, ...)
            f = next(g for g in msg.DESCRIPTOR.fields if g.message_type is not None and key in
                     g.message_type.fields_by_name and g.name not in view)
            assert_same(getattr(msg, f.name), {key: value}, path)
            seen.add(f.name)
            continue
        seen.add(key)
        actual = getattr(msg, key)
        if f.message_type is not None and f.message_type.GetOptions().map_entry:
            assert set(actual.keys()) == set(value), where
            for k, v in value.items():
                item = actual[k]
                if f.message_type.fields_by_name["value"].message_type is not None:
                    assert_same(item, v, f"{where}[{k}]")
                elif isinstance(item, bytes):
                    assert base64.b64encode(item).decode() == v, where
                else:
                    assert item == v, where
        elif f.is_repeated:
            assert len(actual) == len(value), where
            for i, (a, v) in enumerate(zip(actual, value, strict=True)):
                if f.message_type is not None:
                    assert_same(a, v, f"{where}[{i}]")
                else:
                    assert a == v, f"{where}[{i}]"
        elif f.message_type is not None:
            assert_same(actual, value, where)
        elif isinstance(actual, bytes):
            assert base64.b64encode(actual).decode() == value, where
        else:
            assert actual == value, where
    for f, value in msg.ListFields():
        if f.name not in seen and not (f.message_type is None and not value):
            if f.message_type is not None and not f.is_repeated and not value.ListFields():
                continue  # an empty value struct: JSON leaves it out
            raise AssertionError(f"{path}.{f.name} is set in protobuf but missing from JSON: {value}")


# ---- the objects --------------------------------------------------------------------------------------

def q(s: str) -> dict:
    return {"string": s}


def resource_kinds(v: str) -> list[tuple[str, str, str, bool, dict, tuple[str, object]]]:
    """(apiVersion, kind, plural, namespaced, proto-JSON object, (field to update, value))."""
    av = f"resource.k8s.io/{v}"
    exactly = ({"exactly": {"deviceClassName": "pb-class"}} if v == "v1"
               else {"exactly": {"deviceClassName": "pb-class", "allocationMode": "ExactCount", "count": 1}})
    device = {"name": "d0", "attributes": {"model": {"string": "m1"}, "index": {"int": 3}},
              "capacity": {"mem": {"value": q("8Gi")}}}
    return [
        (av, "DeviceClass", "deviceclasses", False,
         {"spec": {"selectors": [{"cel": {"expression": 'device.driver == "pb.example.com"'}}],
                   "config": [{"deviceConfiguration": {  # inline in JSON
                       "opaque": {"driver": "pb.example.com", "parameters": {"raw": b'{"a":1}'}}}}]}},
         ("spec.selectors", [{"cel": {"expression": "true"}}])),
        (av, "ResourceSlice", "resourceslices", False,
         {"spec": {"driver": "pb.example.com", "pool": {"name": "p", "generation": 1, "resourceSliceCount": 1},
                   "nodeName": "pb-node", "devices": [device]}},
         ("spec.pool.generation", 2)),
        (av, "ResourceClaim", "resourceclaims", True,
         {"spec": {"devices": {"requests": [{"name": "r0", **exactly}]}}},
         ("metadata.annotations", {"a": "b"})),
        (av, "ResourceClaimTemplate", "resourceclaimtemplates", True,
         {"spec": {"spec": {"devices": {"requests": [{"name": "r0", **exactly}]}}}},
         ("metadata.annotations", {"a": "b"})),
        (av, "DeviceTaintRule", "devicetaintrules", False,
         {"spec": {"deviceSelector": {"driver": "pb.example.com"},
                   "taint": {"key": "example.com/broken", "value": "yes", "effect": "NoSchedule"}}},
         ("spec.taint.value", "no")),
    ]


def pod_template(app: str) -> dict:
    return {"metadata": {"labels": {"app": app}},
            "spec": {"containers": [{"name": "c", "image": "busybox", "resources": {"requests": {"cpu": q("10m")}}}],
                     "restartPolicy": "Always"}}


def workload_kinds() -> list[tuple[str, str, str, bool, dict, tuple[str, object]]]:
    """apps/v1 and batch/v1 (the bare apiserver runs no controllers, so nothing else touches them)."""
    selector = {"matchLabels": {"app": "pb"}}
    job_template = pod_template("pb")
    job_template["spec"]["restartPolicy"] = "Never"
    return [
        ("apps/v1", "Deployment", "deployments", True,
         {"spec": {"replicas": 2, "selector": selector, "template": pod_template("pb"),
                   "strategy": {"type": "RollingUpdate",
                                "rollingUpdate": {"maxSurge": {"type": 1, "strVal": "50%"}}}}},
         ("spec.replicas", 3)),
        ("apps/v1", "ReplicaSet", "replicasets", True,
         {"spec": {"replicas": 0, "selector": selector, "template": pod_template("pb")}},
         ("spec.replicas", 1)),
        ("apps/v1", "DaemonSet", "daemonsets", True,
         {"spec": {"selector": selector, "template": pod_template("pb")}},
         ("spec.minReadySeconds", 5)),
        ("apps/v1", "StatefulSet", "statefulsets", True,
         {"spec": {"replicas": 1, "serviceName": "pb", "selector": selector, "template": pod_template("pb"),
                   "volumeClaimTemplates": [{"metadata": {"name": "data"}, "spec": {
                       "accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": q("1Gi")}}}}]}},
         ("spec.replicas", 2)),
        ("apps/v1", "ControllerRevision", "controllerrevisions", True,
         {"data": {"raw": b'{"spec":{"template":{"metadata":{"labels":{"app":"pb"}}}}}'}, "revision": 1},
         ("metadata.labels", {"rev": "1"})),
        ("batch/v1", "Job", "jobs", True,
         {"spec": {"backoffLimit": 0, "completions": 1, "suspend": True, "template": job_template}},
         ("metadata.annotations", {"a": "b"})),
    ]


def rbac_kinds() -> list[tuple]:
    rbac = "rbac.authorization.k8s.io"
    rules = {"rules": [{"verbs": ["get", "list"], "apiGroups": [""], "resources": ["pods"]}]}
    binding = {"roleRef": {"apiGroup": rbac, "kind": "ClusterRole", "name": "view"},
               "subjects": [{"kind": "User", "apiGroup": rbac, "name": "pb-user"}]}
    relabel = ("metadata.labels", {"v": "2"})
    return [(f"{rbac}/v1", "ClusterRole", "clusterroles", False, rules, relabel),
            (f"{rbac}/v1", "Role", "roles", True, rules, relabel),
            (f"{rbac}/v1", "ClusterRoleBinding", "clusterrolebindings", False, binding, relabel),
            (f"{rbac}/v1", "RoleBinding", "rolebindings", True, binding, relabel)]


V1_KINDS = [
    ("v1", "Namespace", "namespaces", False, {}, ("metadata.annotations", {"team": "pb"})),
    ("v1", "Node", "nodes", False,
     {"spec": {"taints": [{"key": "k", "value": "v", "effect": "NoSchedule"}]},
      "status": {"capacity": {"cpu": q("4"), "memory": q("8Gi")}}},
     ("spec.unschedulable", True)),
    ("v1", "Pod", "pods", True,
     {"spec": {"containers": [{"name": "c", "image": "busybox",
                               "ports": [{"containerPort": 80, "protocol": "TCP"}],
                               "resources": {"requests": {"cpu": q("100m")}},
                               "livenessProbe": {"handler": {  # inline in JSON
                                   "httpGet": {"path": "/", "port": {"type": 1, "strVal": "http"}}}}}],
               "terminationGracePeriodSeconds": 0, "enableServiceLinks": False}},
     ("metadata.labels", {"v": "2"})),
    ("v1", "ResourceQuota", "resourcequotas", True, {"spec": {"hard": {"pods": q("10")}}},
     ("spec.hard", {"pods": q("20")})),
    ("v1", "Event", "events", True,
     {"involvedObject": {"kind": "Pod", "name": "x", "namespace": "pbtest"}, "reason": "Tested",
      "message": "m", "type": "Normal", "count": 1, "firstTimestamp": {"seconds": 1700000000},
      "source": {"component": "pb"}},
     ("count", 2)),
    ("v1", "ConfigMap", "configmaps", True, {"data": {"a": "b", "empty": ""}, "binaryData": {"bin": b"\x00\xff"}},
     ("data", {"a": "c"})),
    ("v1", "Secret", "secrets", True, {"data": {"token": b"s3cr3t"}, "type": "Opaque"},
     ("immutable", False)),
    ("v1", "ServiceAccount", "serviceaccounts", True, {"automountServiceAccountToken": False},
     ("secrets", [{"name": "s"}])),
    ("events.k8s.io/v1", "Event", "events", True,
     {"eventTime": {"seconds": 1700000000, "nanos": 123456000}, "reportingController": "pb.example.com/c",
      "reportingInstance": "i", "action": "Test", "reason": "Tested", "type": "Normal",
      "regarding": {"kind": "Pod", "name": "x", "namespace": "pbtest"}, "note": "hello"},
     ("note", "again")),
    ("coordination.k8s.io/v1", "Lease", "leases", True,
     {"spec": {"holderIdentity": "me", "leaseDurationSeconds": 15, "renewTime": {"seconds": 1700000000,
                                                                                 "nanos": 5000}}},
     ("spec.leaseTransitions", 1)),
    ("v1", "Service", "services", True,
     {"spec": {"selector": {"app": "pb"}, "ports": [{"name": "http", "port": 80, "protocol": "TCP",
                                                     "targetPort": {"type": 1, "strVal": "http"}}]}},
     ("spec.selector", {"app": "pb2"})),
    *workload_kinds(),
    *rbac_kinds(),
    *resource_kinds("v1"),
]
BETA_KINDS = resource_kinds("v1beta2")


def build(pb: Messages, api_version: str, kind: str, name: str, namespace: str | None, body: dict):
    msg = pb.kind(api_version, kind)()
    json_format.ParseDict(_b64(body), msg)
    msg.metadata.name = name
    if namespace:
        msg.metadata.namespace = namespace
    return msg


def _b64(value):
    """ParseDict wants bytes fields as base64 strings."""
    if isinstance(value, bytes):
        return base64.b64encode(value).decode()
    if isinstance(value, dict):
        return {k: _b64(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_b64(v) for v in value]
    return value


def set_path(pb: Messages, msg, dotted: str, value) -> None:
    *parents, leaf = dotted.split(".")
    for p in parents:
        msg = getattr(msg, p)
    msg.ClearField(leaf)
    json_format.ParseDict({leaf: _b64(value)}, msg)  # merges into the cleared field


# ---- the test ----------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def client(srv, pb) -> Client:
    c = Client(srv, pb)
    ns = pb.kind("v1", "Namespace")()
    ns.metadata.name = "pbtest"
    code, _, data = c.call("POST", "/api/v1/namespaces", c.envelope(ns, "v1", "Namespace"))
    assert code == 201, data
    return c


@pytest.mark.parametrize("api_version,kind,plural,namespaced,body,update",
                         V1_KINDS + BETA_KINDS, ids=[f"{k[0]}/{k[1]}" for k in V1_KINDS + BETA_KINDS])
def test_every_verb_in_protobuf(client: Client, pb: Messages, api_version, kind, plural, namespaced, body,
                                update):
    c = client
    name = f"pb-{kind.lower()}-{api_version.replace('/', '-').replace('.', '-')}"
    namespace = "pbtest" if namespaced else None
    coll, item = path_of(api_version, plural, namespace), path_of(api_version, plural, namespace, name)

    # create
    obj = build(pb, api_version, kind, name, namespace, body)
    code, ctype, data = c.call("POST", coll, c.envelope(obj, api_version, kind))
    assert (code, ctype) == (201, PB), data[:500]
    type_meta, created = c.open(api_version, kind, data)
    assert type_meta == (api_version, kind)
    assert created.metadata.name == name and created.metadata.uid and created.metadata.resourceVersion
    assert created.metadata.creationTimestamp.seconds > 0
    view = c.json(item)
    assert_same(created, {k: v for k, v in view.items() if k not in ("apiVersion", "kind")})
    created_rv = created.metadata.resourceVersion

    # get
    code, ctype, data = c.call("GET", item)
    assert (code, ctype) == (200, PB)
    _, got = c.open(api_version, kind, data)
    assert_same(got, {k: v for k, v in view.items() if k not in ("apiVersion", "kind")})
    assert got.SerializeToString(deterministic=True) == created.SerializeToString(deterministic=True)

    # list
    code, ctype, data = c.call("GET", coll)
    assert (code, ctype) == (200, PB)
    type_meta, listed = c.open(api_version, kind + "List", data)
    assert type_meta == (api_version, kind + "List")
    assert listed.metadata.resourceVersion
    mine = [i for i in listed.items if i.metadata.name == name]
    assert len(mine) == 1
    json_list = c.json(coll)
    json_item = next(i for i in json_list["items"] if i["metadata"]["name"] == name)
    assert_same(mine[0], {k: v for k, v in json_item.items() if k not in ("apiVersion", "kind")})

    # update
    set_path(pb, got, *update)
    code, ctype, data = c.call("PUT", item, c.envelope(got, api_version, kind))
    assert (code, ctype) == (200, PB), data[:500]
    _, updated = c.open(api_version, kind, data)
    assert updated.metadata.resourceVersion != created_rv
    view = c.json(item)
    assert_same(updated, {k: v for k, v in view.items() if k not in ("apiVersion", "kind")})
    field, value = update
    assert _lookup(view, field) == _json_value(value)

    # delete with a protobuf DeleteOptions body
    options = pb(f"{META}.DeleteOptions")(propagationPolicy="Background")
    options.preconditions.uid = updated.metadata.uid
    code, ctype, data = c.call("DELETE", item, c.envelope(options, "v1", "DeleteOptions"))
    assert code in (200, 202) and ctype == PB, data[:500]
    type_meta, answer = c.open(api_version, kind, data)
    assert type_meta[1] in (kind, "Status")

    # watch from the creation: the update and the deletion arrive as protobuf frames
    def done(events):
        return any(t == "DELETED" for t, _ in events) or (kind == "Namespace" and len(events) >= 2)

    events = c.watch(f"{coll}?watch=1&resourceVersion={created_rv}&fieldSelector=metadata.name%3D{name}",
                     count=3, until=done)
    assert events[0][0] == "MODIFIED"
    _, watched = c.open(api_version, kind, events[0][1])
    assert watched.SerializeToString(deterministic=True) == updated.SerializeToString(deterministic=True)
    if kind != "Namespace":  # a namespace lingers in Terminating while its content goes
        assert events[-1][0] == "DELETED"
        code, _, data = c.call("GET", item)
        assert code == 404
        (_, status_kind), status = c.open(api_version, kind, data)
        assert status_kind == "Status" and status.reason == "NotFound" and status.code == 404


def _lookup(view: dict, dotted: str):
    for p in dotted.split("."):
        view = view.get(p)
    return view


def _json_value(value):
    """The JSON form of a proto-JSON value used in an update."""
    if isinstance(value, dict) and set(value) == {"string"}:
        return value["string"]
    if isinstance(value, dict):
        return {k: _json_value(v) for k, v in value.items()}
    return value


def test_watch_list_bookmarks_in_protobuf(client: Client, pb: Messages):
    c = client
    for i in range(2):
        cm = build(pb, "v1", "ConfigMap", f"wl-{i}", "pbtest", {"data": {"i": str(i)}})
        code, _, _ = c.call("POST", "/api/v1/namespaces/pbtest/configmaps", c.envelope(cm, "v1", "ConfigMap"))
        assert code == 201
    query = urllib.parse.urlencode({"watch": "1", "sendInitialEvents": "true", "allowWatchBookmarks": "true",
                                    "resourceVersionMatch": "NotOlderThan", "labelSelector": "",
                                    "fieldSelector": "metadata.name!=nothing"})
    events = c.watch(f"/api/v1/namespaces/pbtest/configmaps?{query}", count=100,
                     until=lambda ev: bool(ev) and ev[-1][0] == "BOOKMARK")
    names = sorted(c.open("v1", "ConfigMap", raw)[1].metadata.name for t, raw in events if t == "ADDED")
    assert {"wl-0", "wl-1"} <= set(names)
    _, bookmark = c.open("v1", "ConfigMap", events[-1][1])
    assert bookmark.metadata.annotations["k8s.io/initial-events-end"] == "true"
    assert int(bookmark.metadata.resourceVersion) > 0


def test_deletecollection_takes_protobuf_delete_options(client: Client, pb: Messages):
    c = client
    for i in range(3):
        cm = build(pb, "v1", "ConfigMap", f"dc-{i}", "pbtest", {"data": {"i": str(i)}})
        cm.metadata.labels["batch"] = "dc"
        assert c.call("POST", "/api/v1/namespaces/pbtest/configmaps", c.envelope(cm, "v1", "ConfigMap"))[0] == 201
    options = pb(f"{META}.DeleteOptions")(propagationPolicy="Background", dryRun=["All"])
    path = "/api/v1/namespaces/pbtest/configmaps?labelSelector=batch%3Ddc"
    code, _, data = c.call("DELETE", path, c.envelope(options, "meta.k8s.io/v1", "DeleteOptions"))
    assert code == 200
    _, listed = c.open("v1", "ConfigMapList", data)
    assert sorted(i.metadata.name for i in listed.items) == ["dc-0", "dc-1", "dc-2"]
    assert len(c.json(path)["items"]) == 3  # dry run: still there
    options = pb(f"{META}.DeleteOptions")(propagationPolicy="Background")
    assert c.call("DELETE", path, c.envelope(options, "v1", "DeleteOptions"))[0] == 200
    assert c.json(path)["items"] == []


def test_errors_and_forms_upstream_cannot_encode(client: Client, pb: Messages):
    c = client
    # A Status error is protobuf when the client asked for protobuf.
    code, ctype, data = c.call("GET", "/api/v1/namespaces/pbtest/configmaps/nope")
    assert (code, ctype) == (404, PB)
    (_, kind), status = c.open("v1", "ConfigMap", data)
    assert kind == "Status" and status.status == "Failure" and status.details.name == "nope"
    # Table has no protobuf form upstream: a protobuf-only Table request is 406 ...
    table = PB + ";as=Table;v=v1;g=meta.k8s.io"
    assert c.call("GET", "/api/v1/namespaces/pbtest/configmaps", accept=table)[0] == 406
    # ... and with a JSON fallback the client gets the Table as JSON.
    code, ctype, data = c.call("GET", "/api/v1/namespaces/pbtest/configmaps",
                               accept=table + ",application/json;as=Table;v=v1;g=meta.k8s.io")
    assert code == 200 and ctype.startswith("application/json") and json.loads(data)["kind"] == "Table"
    # PartialObjectMetadata is a meta/v1 message, so protobuf serves it.
    code, ctype, data = c.call("GET", "/api/v1/namespaces", accept=PB + ";as=PartialObjectMetadataList;v=v1;"
                               "g=meta.k8s.io")
    assert (code, ctype) == (200, PB)
    unknown = pb("k8s.io.apimachinery.pkg.runtime.Unknown").FromString(data[4:])
    assert (unknown.typeMeta.apiVersion, unknown.typeMeta.kind) == ("meta.k8s.io/v1", "PartialObjectMetadataList")
    listed = pb(f"{META}.PartialObjectMetadataList").FromString(unknown.raw)
    assert "pbtest" in [i.metadata.name for i in listed.items]


def test_openapi_v2_protobuf_is_the_full_document(srv, tmp_path):
    """/openapi/v2 in gnostic protobuf carries what the JSON document does; kubectl reads it."""
    out = tmp_path / "gnostic.pb"
    assert protoc.main(["protoc", f"-I{PROTOS}", f"-I{resources.files('grpc_tools') / '_proto'}",
                        "--include_imports", f"--descriptor_set_out={out}", "openapiv2/OpenAPIv2.proto"]) == 0
    pool = descriptor_pool.DescriptorPool()
    for f in descriptor_pb2.FileDescriptorSet.FromString(out.read_bytes()).file:
        pool.Add(f)
    document = message_factory.GetMessageClass(pool.FindMessageTypeByName("openapi.v2.Document"))

    conn = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=30)
    conn.request("GET", "/openapi/v2", headers={"Accept": "application/com.github.proto-openapi.spec.v2@v1.0+protobuf"})
    resp = conn.getresponse()
    assert resp.status == 200
    assert resp.getheader("Content-Type") == "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"
    doc = document.FromString(resp.read())
    conn.close()
    json_doc = Client(srv, None).json("/openapi/v2")

    assert doc.swagger == "2.0" and doc.info.title == json_doc["info"]["title"]
    assert {d.name for d in doc.definitions.additional_properties} == set(json_doc["definitions"])
    assert {p.name for p in doc.paths.path} == set(json_doc["paths"])
    claim = next(d.value for d in doc.definitions.additional_properties
                 if d.name == "io.k8s.api.resource.v1.ResourceClaim")
    gvk = next(v for v in claim.vendor_extension if v.name == "x-kubernetes-group-version-kind")
    assert json.loads(gvk.value.yaml) == [{"group": "resource.k8s.io", "kind": "ResourceClaim", "version": "v1"}]
    assert {p.name for p in claim.properties.additional_properties} == {"apiVersion", "kind", "metadata", "spec",
                                                                         "status"}
    spec = next(p.value for p in claim.properties.additional_properties if p.name == "spec")
    assert spec._ref == "#/definitions/io.k8s.api.resource.v1.ResourceClaimSpec"
    pods = next(p.value for p in doc.paths.path if p.name == "/api/v1/namespaces/{namespace}/pods/{name}")
    query = [i.parameter.non_body_parameter.query_parameter_sub_schema.name for i in pods.patch.parameters
             if i.parameter.WhichOneof("oneof") == "non_body_parameter"]
    assert query == ["dryRun", "fieldManager", "fieldValidation", "force"]
    assert [i.parameter.body_parameter.name for i in pods.patch.parameters][0] == "body"

    # client-go's OpenAPISchema() parses exactly this: kubectl explain's plaintext-openapiv2 output uses it.
    res = srv.kubectl("explain", "resourceclaims.spec.devices.requests", "--output", "plaintext-openapiv2")
    assert "KIND:     ResourceClaim" in res.stdout and "VERSION:  resource.k8s.io/v1" in res.stdout
    assert "exactly" in res.stdout


def test_discovery_in_protobuf(client: Client, pb: Messages):
    """Aggregated and legacy discovery answer in protobuf when a protobuf client asks first (client-go's order)."""
    c = client
    aggregated = "application/vnd.kubernetes.protobuf;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
    json_aggregated = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
    code, ctype, data = c.call("GET", "/apis", accept=f"{aggregated},{json_aggregated};q=0.9,application/json;q=0.8")
    assert (code, ctype) == (200, aggregated)
    (api_version, kind), listed = c.open("apidiscovery.k8s.io/v2", "APIGroupDiscoveryList", data)
    assert (api_version, kind) == ("apidiscovery.k8s.io/v2", "APIGroupDiscoveryList")
    view = json.loads(c.call("GET", "/apis", accept=json_aggregated)[2])
    assert [g.metadata.name for g in listed.items] == [g["metadata"]["name"] for g in view["items"]]
    resource = next(g for g in listed.items if g.metadata.name == "resource.k8s.io").versions[0].resources
    claims = next(r for r in resource if r.resource == "resourceclaims")
    assert claims.responseKind.kind == "ResourceClaim" and "watch" in claims.verbs
    assert [s.subresource for s in claims.subresources] == ["status"]

    code, ctype, data = c.call("GET", "/api/v1", accept=f"{PB}, application/json")
    assert (code, ctype) == (200, PB)
    unknown = pb("k8s.io.apimachinery.pkg.runtime.Unknown").FromString(data[4:])
    assert unknown.typeMeta.kind == "APIResourceList"
    resources = pb(f"{META}.APIResourceList").FromString(unknown.raw)
    pods = next(r for r in resources.resources if r.name == "pods")
    assert pods.kind == "Pod" and pods.namespaced and "deletecollection" in pods.verbs.items
    assert c.json("/api/v1")["groupVersion"] == resources.groupVersion == "v1"


def test_binding_in_protobuf(client: Client, pb: Messages):
    """kube-scheduler binds pods with a protobuf Binding."""
    c = client
    pod = build(pb, "v1", "Pod", "pb-bound", "pbtest", {"spec": {"containers": [{"name": "c", "image": "i"}]}})
    assert c.call("POST", "/api/v1/namespaces/pbtest/pods", c.envelope(pod, "v1", "Pod"))[0] == 201
    binding = pb.kind("v1", "Binding")()
    binding.metadata.name = "pb-bound"
    binding.target.kind, binding.target.name = "Node", "pb-node"
    code, ctype, data = c.call("POST", "/api/v1/namespaces/pbtest/pods/pb-bound/binding",
                               c.envelope(binding, "v1", "Binding"))
    assert (code, ctype) == (201, PB), data
    (_, kind), status = c.open("v1", "Pod", data)
    assert kind == "Status" and status.status == "Success"
    assert c.json("/api/v1/namespaces/pbtest/pods/pb-bound")["spec"]["nodeName"] == "pb-node"


def test_patch_answers_in_protobuf(client: Client, pb: Messages):
    """Patch bodies are JSON by definition; the answer follows Accept."""
    c = client
    cm = build(pb, "v1", "ConfigMap", "pb-patched", "pbtest", {"data": {"a": "1"}})
    assert c.call("POST", "/api/v1/namespaces/pbtest/configmaps", c.envelope(cm, "v1", "ConfigMap"))[0] == 201
    code, ctype, data = c.call("PATCH", "/api/v1/namespaces/pbtest/configmaps/pb-patched",
                               b'{"data":{"b":"2"}}', content_type="application/merge-patch+json")
    assert (code, ctype) == (200, PB)
    _, patched = c.open("v1", "ConfigMap", data)
    assert dict(patched.data) == {"a": "1", "b": "2"}
    view = c.json("/api/v1/namespaces/pbtest/configmaps/pb-patched")
    assert_same(patched, {k: v for k, v in view.items() if k not in ("apiVersion", "kind")})


def test_dry_run_answers_are_not_mistaken_for_the_stored_object(client: Client, pb: Messages):
    """A dry-run update shares uid and resourceVersion with the stored object but not its content."""
    c = client
    path = "/api/v1/namespaces/pbtest/configmaps"
    cm = build(pb, "v1", "ConfigMap", "pb-dry", "pbtest", {"data": {"a": "stored"}})
    code, _, data = c.call("POST", path, c.envelope(cm, "v1", "ConfigMap"))
    assert code == 201
    _, stored = c.open("v1", "ConfigMap", data)
    assert c.call("GET", f"{path}/pb-dry")[0] == 200  # the stored object's bytes are now known
    stored.data["a"] = "dry"
    code, _, data = c.call("PUT", f"{path}/pb-dry?dryRun=All", c.envelope(stored, "v1", "ConfigMap"))
    assert code == 200
    assert c.open("v1", "ConfigMap", data)[1].data["a"] == "dry"
    assert c.open("v1", "ConfigMap", c.call("GET", f"{path}/pb-dry")[2])[1].data["a"] == "stored"


def test_the_kind_list_covers_every_stored_kind():
    """A kind added to the registry joins the list above (its protobuf is then tested end to end)."""
    from dramock.registry import kinds as registry

    tested = {(k[0], k[1]) for k in V1_KINDS + BETA_KINDS}
    stored = {(k.api_version, k.kind) for k in registry.STORED_KINDS if "list" in k.verbs}
    assert stored <= tested, f"add to V1_KINDS: {sorted(stored - tested)}"


def test_scale_subresource_in_protobuf(client: Client, pb: Messages):
    """`kubectl scale` reads and writes autoscaling/v1 Scale in protobuf."""
    c = client
    deploy = build(pb, "apps/v1", "Deployment", "pb-scaled", "pbtest",
                   {"spec": {"replicas": 1, "selector": {"matchLabels": {"app": "s"}}, "template": pod_template("s")}})
    assert c.call("POST", "/apis/apps/v1/namespaces/pbtest/deployments",
                  c.envelope(deploy, "apps/v1", "Deployment"))[0] == 201
    path = "/apis/apps/v1/namespaces/pbtest/deployments/pb-scaled/scale"
    code, ctype, data = c.call("GET", path)
    assert (code, ctype) == (200, PB), data[:300]
    type_meta, scale = c.open("autoscaling/v1", "Scale", data)
    assert type_meta == ("autoscaling/v1", "Scale")
    assert scale.spec.replicas == 1 and scale.status.selector == "app=s"
    scale.spec.replicas = 4
    code, ctype, data = c.call("PUT", path, c.envelope(scale, "autoscaling/v1", "Scale"))
    assert (code, ctype) == (200, PB), data[:300]
    assert c.open("autoscaling/v1", "Scale", data)[1].spec.replicas == 4
    assert c.json("/apis/apps/v1/namespaces/pbtest/deployments/pb-scaled")["spec"]["replicas"] == 4


@pytest.mark.parametrize("api_version,kind,plural,body", [
    ("authorization.k8s.io/v1", "SelfSubjectAccessReview", "selfsubjectaccessreviews",
     {"spec": {"resourceAttributes": {"verb": "delete", "resource": "nodes"}}}),
    ("authorization.k8s.io/v1", "SelfSubjectRulesReview", "selfsubjectrulesreviews", {"spec": {"namespace": "pbtest"}}),
    ("authentication.k8s.io/v1", "SelfSubjectReview", "selfsubjectreviews", {}),
])
def test_self_reviews_in_protobuf(client: Client, pb: Messages, api_version, kind, plural, body):
    """`kubectl auth can-i` and `kubectl auth whoami` post their reviews in protobuf and read the answer so."""
    c = client
    review = pb.kind(api_version, kind)()
    json_format.ParseDict(body, review)
    code, ctype, data = c.call("POST", f"/apis/{api_version}/{plural}", c.envelope(review, api_version, kind))
    assert (code, ctype) == (201, PB), data[:300]
    type_meta, answer = c.open(api_version, kind, data)
    assert type_meta == (api_version, kind)
    if kind == "SelfSubjectAccessReview":
        assert answer.status.allowed and answer.spec.resourceAttributes.verb == "delete"
    elif kind == "SelfSubjectRulesReview":
        assert any("*" in r.verbs for r in answer.status.resourceRules)
    else:
        assert answer.status.userInfo.username == "system:unsecured"
