"""Protobuf request-body decoding.

Fixtures under fixtures/protobuf/ are real bodies kubectl v1.32 POSTed (captured with -v=8 confirming
`Content-Type: application/vnd.kubernetes.protobuf`):

  namespace.pb                 kubectl create namespace x
  configmap.pb                 kubectl create configmap c --from-literal=a=b --from-literal=k=v
  configmap-binary.pb          kubectl create configmap cbin -n team-a --from-literal=empty=
                                   --from-file=blob=<a file holding b'bin\\x00\\xff\\x01'>
  secret-generic.pb            kubectl create secret generic s --from-literal=p=q
                                   --from-literal=token='s3cr3t!'
  secret-dockerconfigjson.pb   kubectl create secret docker-registry regcred --docker-server=reg.example.com
                                   --docker-username=u --docker-password=pw
  quota.pb                     kubectl create quota q --hard=pods=3,count/resourceclaims.resource.k8s.io=2
  quota-scopes.pb              kubectl create quota q2 --hard=requests.cpu=500m,requests.memory=1Gi
                                   --scopes=BestEffort,NotTerminating
  serviceaccount.pb            kubectl create serviceaccount sa1
  pod-debug-node.pb            kubectl debug node/n1 --image=busybox
  pod-debug-copy.pb            kubectl debug src --copy-to=p-copy --container=debugger --image=busybox:1.36
                                   --attach=false, where GET src answered pod-debug-copy.source.json

(`kubectl run` v1.32 POSTs its Pod as JSON, so Pods were captured through `kubectl debug`, which uses
the typed, protobuf-speaking client.)
"""

from __future__ import annotations

import base64
import copy
import dataclasses
import json
import random
from pathlib import Path

import pytest

from dramock.apiserver import protobuf
from dramock.apiserver.protobuf import decode
from dramock.errors import APIError
from dramock.registry import kinds as registry
from tests.helpers import strip_json_names

FIXTURES = Path(__file__).parent / "fixtures" / "protobuf"


def fixture(name: str) -> bytes:
    return (FIXTURES / name).read_bytes()


# -- a minimal encoder, for hand-built bodies -------------------------------------------------------------

def varint(n: int) -> bytes:
    n &= (1 << 64) - 1
    out = bytearray()
    while True:
        b, n = n & 0x7F, n >> 7
        out.append(b | (0x80 if n else 0))
        if not n:
            return bytes(out)


def fld(num: int, value: int | bytes | str) -> bytes:
    if isinstance(value, int):
        return varint(num << 3) + varint(value)
    data = value.encode() if isinstance(value, str) else value
    return varint(num << 3 | 2) + varint(len(data)) + data


def envelope(kind: str, raw: bytes, api_version: str = "v1", encoding: str = "",
             content_type: str = "") -> bytes:
    type_meta = fld(1, api_version) + fld(2, kind)
    return b"k8s\x00" + fld(1, type_meta) + fld(2, raw) + fld(3, encoding) + fld(4, content_type)


def meta(name: str, *extra: bytes) -> bytes:
    # gogo writes every non-pointer scalar, so a real ObjectMeta carries empty strings and zeros too.
    return fld(1, fld(1, name) + fld(2, "") + fld(3, "") + fld(7, 0) + fld(8, b"") + b"".join(extra))


# -- real kubectl bodies ------------------------------------------------------------------------------------

def test_namespace():
    assert decode(fixture("namespace.pb")) == {
        "apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "x"},
    }


def test_configmap():
    assert decode(fixture("configmap.pb")) == {
        "apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"a": "b", "k": "v"},
    }


def test_configmap_binary_data_is_base64_and_empty_values_survive():
    obj = decode(fixture("configmap-binary.pb"))
    assert obj == {
        "apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cbin", "namespace": "team-a"},
        "data": {"empty": ""}, "binaryData": {"blob": "YmluAP8B"},
    }
    assert base64.b64decode(obj["binaryData"]["blob"]) == b"bin\x00\xff\x01"


def test_secret_generic_data_is_base64():
    assert decode(fixture("secret-generic.pb")) == {
        "apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"},
        "data": {"p": base64.b64encode(b"q").decode(), "token": base64.b64encode(b"s3cr3t!").decode()},
    }


def test_secret_docker_registry():
    obj = decode(fixture("secret-dockerconfigjson.pb"))
    assert obj["type"] == "kubernetes.io/dockerconfigjson"
    assert obj["metadata"] == {"name": "regcred"}
    config = json.loads(base64.b64decode(obj["data"][".dockerconfigjson"]))
    assert config == {"auths": {"reg.example.com": {"username": "u", "password": "pw", "auth": "dTpwdw=="}}}


def test_quota_hard_values_are_strings():
    assert decode(fixture("quota.pb")) == {
        "apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": "q"},
        "spec": {"hard": {"pods": "3", "count/resourceclaims.resource.k8s.io": "2"}},
    }


def test_quota_with_scopes():
    assert decode(fixture("quota-scopes.pb")) == {
        "apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": "q2"},
        "spec": {"hard": {"requests.cpu": "500m", "requests.memory": "1Gi"},
                 "scopes": ["BestEffort", "NotTerminating"]},
    }


def test_serviceaccount():
    assert decode(fixture("serviceaccount.pb")) == {
        "apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "sa1"},
    }


def test_pod_debug_node():
    assert decode(fixture("pod-debug-node.pb")) == {
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "node-debugger-n1-nf4vl"},
        "spec": {
            "volumes": [{"name": "host-root", "hostPath": {"path": "/"}}],
            "containers": [{"name": "debugger", "image": "busybox",
                            "volumeMounts": [{"name": "host-root", "mountPath": "/host"}],
                            "terminationMessagePolicy": "File"}],
            "restartPolicy": "Never", "nodeName": "n1", "hostNetwork": True, "hostPID": True, "hostIPC": True,
            "tolerations": [{"operator": "Exists"}],
        },
    }


def test_pod_debug_copy_matches_the_json_kubectl_started_from():
    """kubectl re-encoded a rich JSON pod as protobuf; decoding must give that JSON back, save for
    kubectl debug's own edits and the zero values JSON's omitempty drops as well."""
    obj = decode(fixture("pod-debug-copy.pb"))
    source = json.loads((FIXTURES / "pod-debug-copy.source.json").read_text())

    expected_spec = copy.deepcopy(source["spec"])
    del expected_spec["nodeName"]  # --copy-to without --same-node clears it
    del expected_spec["hostNetwork"]  # false, omitempty
    expected_spec["containers"][0]["env"][1] = {"name": "EMPTY"}  # value "", omitempty
    expected_spec["containers"].append(
        {"name": "debugger", "image": "busybox:1.36", "terminationMessagePolicy": "File"})
    assert obj == {
        "apiVersion": "v1", "kind": "Pod",
        # debug drops labels, owner references, finalizers, uid, status...
        "metadata": {"name": "p-copy", "namespace": "default", "annotations": {"note": "hi"}},
        "spec": expected_spec,
    }

    # Spot checks of what matters most, spelled out.
    app = obj["spec"]["containers"][0]
    assert app["image"] == "nginx:1.27" and app["args"] == ["-g", "daemon off;"]
    assert app["ports"] == [{"name": "http", "containerPort": 80, "protocol": "TCP"},
                            {"hostPort": 19090, "containerPort": 9090, "protocol": "UDP"}]
    assert app["env"][0] == {"name": "A", "value": "B"}
    assert app["resources"] == {"limits": {"memory": "128Mi", "example.com/gpu": "1"},
                                "requests": {"cpu": "100m", "memory": "64Mi"},
                                "claims": [{"name": "gpu", "request": "r0"}]}
    assert app["livenessProbe"]["httpGet"]["port"] == 80
    assert app["readinessProbe"]["tcpSocket"]["port"] == "http"
    # Go pointers set to zero are kept, as JSON keeps them.
    assert obj["spec"]["terminationGracePeriodSeconds"] == 0 and obj["spec"]["priority"] == 0
    assert obj["spec"]["enableServiceLinks"] is False
    assert app["securityContext"]["privileged"] is False
    assert obj["spec"]["resourceClaims"] == [{"name": "gpu", "resourceClaimTemplateName": "gpu-template"},
                                             {"name": "shared", "resourceClaimName": "shared-claim"}]


# -- hand-built bodies --------------------------------------------------------------------------------------

def test_unknown_fields_of_every_wire_type_are_skipped():
    unknown = (fld(999, 7) + varint(998 << 3 | 1) + b"\x01" * 8 + varint(997 << 3 | 5) + b"\x02" * 4
               + fld(996, b"\x0a\x03abc"))
    raw = meta("x", unknown) + unknown + fld(2, fld(1, "kubernetes") + unknown)
    assert decode(envelope("Namespace", raw)) == {
        "apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "x"},
        "spec": {"finalizers": ["kubernetes"]},
    }


def test_metadata_fields():
    managed = (fld(1, "kubectl-create") + fld(2, "Update") + fld(3, "v1") + fld(4, fld(1, 1700000000))
               + fld(6, "FieldsV1") + fld(7, fld(1, b'{"f:data":{".":{},"f:a":{}}}')))
    owner = fld(5, "apps/v1") + fld(1, "ReplicaSet") + fld(3, "rs") + fld(4, "u-1") + fld(6, 1) + fld(7, 0)
    raw = meta("c", fld(11, fld(1, "app") + fld(2, "web")), fld(11, fld(1, "tier") + fld(2, "")),
               fld(12, fld(1, "note") + fld(2, "hi")), fld(13, owner), fld(14, "example.com/f"),
               fld(17, managed), fld(10, 0), fld(9, fld(1, 1700000000) + fld(2, 5)))
    assert decode(envelope("ConfigMap", raw))["metadata"] == {
        "name": "c",
        "labels": {"app": "web", "tier": ""},
        "annotations": {"note": "hi"},
        "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs", "uid": "u-1",
                             "controller": True, "blockOwnerDeletion": False}],
        "finalizers": ["example.com/f"],
        "managedFields": [{"manager": "kubectl-create", "operation": "Update", "apiVersion": "v1",
                           "time": "2023-11-14T22:13:20Z", "fieldsType": "FieldsV1",
                           "fieldsV1": {"f:data": {".": {}, "f:a": {}}}}],
        "deletionGracePeriodSeconds": 0,
        "deletionTimestamp": "2023-11-14T22:13:20Z",
    }


def test_pointer_fields_keep_zero_only_when_sent():
    assert decode(envelope("ConfigMap", meta("c") + fld(4, 0)))["immutable"] is False
    assert "immutable" not in decode(envelope("ConfigMap", meta("c")))
    assert decode(envelope("Secret", meta("s") + fld(5, 1)))["immutable"] is True
    assert decode(envelope("ServiceAccount", meta("sa") + fld(4, 0)))["automountServiceAccountToken"] is False


def test_integers_packed_and_negative():
    container = fld(1, "c") + fld(2, "img")
    security = fld(4, b"".join(varint(g) for g in (4000, 5000))) + fld(4, 6000) + fld(2, -1)
    spec = fld(2, container) + fld(14, security) + fld(25, -5) + fld(4, 30)
    obj = decode(envelope("Pod", meta("p") + fld(2, spec)))
    assert obj["spec"]["securityContext"] == {"supplementalGroups": [4000, 5000, 6000], "runAsUser": -1}
    assert obj["spec"]["priority"] == -5 and obj["spec"]["terminationGracePeriodSeconds"] == 30


def test_empty_pointer_structs_survive_but_empty_value_structs_do_not():
    volume = fld(1, "scratch") + fld(2, fld(2, b""))  # emptyDir: {}
    container = fld(1, "c") + fld(2, "img") + fld(8, b"")  # resources: {} (a value struct)
    spec = fld(1, volume) + fld(2, container) + fld(14, b"")  # securityContext: {} (a pointer)
    obj = decode(envelope("Pod", meta("p") + fld(2, spec) + fld(3, fld(1, ""))))
    assert obj["spec"] == {"volumes": [{"name": "scratch", "emptyDir": {}}],
                           "containers": [{"name": "c", "image": "img"}], "securityContext": {}}
    assert "status" not in obj


def test_env_value_from_and_int_or_string():
    env = fld(1, "K") + fld(3, fld(4, fld(1, fld(1, "sec")) + fld(2, "key") + fld(3, 1)))
    probe = fld(1, fld(2, fld(1, "/h") + fld(2, fld(1, 1) + fld(2, 0) + fld(3, "http"))))
    container = fld(1, "c") + fld(7, env) + fld(10, probe)
    obj = decode(envelope("Pod", meta("p") + fld(2, fld(2, container))))
    c = obj["spec"]["containers"][0]
    assert c["env"] == [
        {"name": "K", "valueFrom": {"secretKeyRef": {"name": "sec", "key": "key", "optional": True}}},
    ]
    assert c["livenessProbe"] == {"httpGet": {"path": "/h", "port": "http"}}


def test_pod_status_with_resource_claim_statuses():
    status = (fld(1, "Running") + fld(15, fld(1, "gpu") + fld(2, "p-gpu-x7k"))
              + fld(8, fld(1, "c") + fld(4, 0) + fld(5, 0) + fld(2, fld(2, fld(1, fld(1, 1700000000))))))
    obj = decode(envelope("Pod", meta("p") + fld(3, status)))
    assert obj["status"] == {
        "phase": "Running",
        "resourceClaimStatuses": [{"name": "gpu", "resourceClaimName": "p-gpu-x7k"}],
        "containerStatuses": [{"name": "c", "ready": False, "restartCount": 0,
                               "state": {"running": {"startedAt": "2023-11-14T22:13:20Z"}}}],
    }


def test_envelope_content_type_may_be_explicit():
    body = envelope("Namespace", meta("x"), content_type="application/vnd.kubernetes.protobuf")
    assert decode(body)["metadata"] == {"name": "x"}


# -- errors -------------------------------------------------------------------------------------------------

def bad(body: bytes) -> APIError:
    with pytest.raises(APIError) as e:
        decode(body)
    return e.value


@pytest.mark.parametrize("body", [b"", b"k8s", b'{"kind":"Namespace"}', fixture("namespace.pb")[4:]])
def test_missing_magic_is_400(body):
    e = bad(body)
    assert (e.code, e.reason) == (400, "BadRequest") and "k8s\\x00" in e.message


def test_truncated_body_is_400():
    e = bad(fixture("configmap.pb")[:30])
    assert (e.code, e.reason) == (400, "BadRequest") and "malformed" in e.message


@pytest.mark.parametrize("name", sorted(p.name for p in FIXTURES.glob("*.pb")))
def test_every_truncation_is_400_or_a_full_decode(name):
    body = fixture(name)
    full = decode(body)
    for cut in range(len(body)):
        try:
            assert decode(body[:cut]) == full  # only cuts inside the trailing envelope fields may parse
        except APIError as e:
            assert e.code == 400


@pytest.mark.parametrize("kind,api_version", [("Ingress", "networking.k8s.io/v1"), ("Endpoints", "v1"),
                                              ("ResourceClaim", "resource.k8s.io/v9"), ("Pod", "v2")])
def test_unsupported_kind_is_415(kind, api_version):
    e = bad(envelope(kind, meta("x"), api_version=api_version))
    assert (e.code, e.reason) == (415, "UnsupportedMediaType")
    assert kind in e.message and "application/json" in e.message


def test_no_kind_or_no_payload_is_400():
    assert bad(envelope("", meta("x"))).code == 400
    assert bad(b"k8s\x00" + fld(1, fld(1, "v1") + fld(2, "Namespace"))).code == 400


def test_compressed_or_foreign_payload_is_415():
    assert bad(envelope("Namespace", meta("x"), encoding="gzip")).code == 415
    assert bad(envelope("Namespace", b"{}", content_type="application/json")).code == 415


@pytest.mark.parametrize("raw", [
    fld(1, 5),  # metadata as a varint
    fld(1, fld(7, b"\x01")),  # generation as bytes
    varint(1 << 3 | 3) + b"\x00",  # a proto2 group
    varint(1 << 3 | 0) + b"\xff" * 11,  # an over-long varint
    b"\x00\x00",  # field number 0
    fld(1, fld(17, fld(7, fld(1, b"{not json")))),  # managedFields[].fieldsV1 that is not JSON
    fld(1, fld(9, fld(1, 1 << 62))),  # a timestamp past year 9999
])
def test_malformed_payload_is_400(raw):
    e = bad(envelope("Namespace", raw))
    assert (e.code, e.reason) == (400, "BadRequest")


def test_random_corruption_never_raises_anything_but_api_error():
    rng = random.Random(1337)
    bodies = [fixture(p.name) for p in FIXTURES.glob("*.pb")]
    for _ in range(3000):
        body = bytearray(rng.choice(bodies))
        for _ in range(rng.randint(1, 4)):
            body[rng.randrange(4, len(body))] = rng.randrange(256)
        try:
            decode(bytes(body))
        except APIError as e:
            assert e.code in (400, 415)


def test_generated_k8s_modules_are_current(tmp_path):
    """The committed dramock/apiserver/pb modules are what protos/generate_k8s.py makes from protos/k8s today."""
    from importlib import import_module, resources

    from google.protobuf import descriptor_pb2
    from grpc_tools import protoc

    root = Path(__file__).resolve().parents[1] / "protos" / "k8s"
    files = sorted(str(p.relative_to(root)) for p in root.rglob("*.proto"))
    assert protoc.main(["protoc", f"-I{root}", f"-I{resources.files('grpc_tools') / '_proto'}",
                        f"--descriptor_set_out={tmp_path / 'set.pb'}", *files]) == 0
    fds = descriptor_pb2.FileDescriptorSet.FromString((tmp_path / "set.pb").read_bytes())
    assert len(fds.file) == len(files)
    for fd in fds.file:
        module = import_module("dramock.apiserver.pb." + fd.name.removesuffix(".proto").replace("/", ".") + "_pb2")
        strip_json_names(fd.message_type)  # protoc's Python generator leaves the defaults out
        committed = descriptor_pb2.FileDescriptorProto.FromString(module.DESCRIPTOR.serialized_pb)
        assert committed == fd, f"{fd.name}: regenerate with python protos/generate_k8s.py"


# -- every served kind has a contract -----------------------------------------------------------------------

# Subresources whose bodies are objects of another kind; status and finalize carry the parent kind, and the
# streaming ones (log, exec, attach, portforward) have no object body.
_SUBRESOURCE_KINDS = {"binding": ("v1", "Binding"), "scale": ("autoscaling/v1", "Scale"),
                      "token": ("authentication.k8s.io/v1", "TokenRequest")}
_SAME_KIND, _STREAMS = {"status", "finalize"}, {"log", "exec", "attach", "portforward"}
# Kinds that need an encoding beside the registered ones (bodies of reviews and tokens served by the auth code).
_UPCOMING = [("rbac.authorization.k8s.io/v1", k) for k in (
    "Role", "RoleList", "ClusterRole", "ClusterRoleList", "RoleBinding", "RoleBindingList", "ClusterRoleBinding",
    "ClusterRoleBindingList")] + [("authentication.k8s.io/v1", "TokenReview"),
                                  ("authentication.k8s.io/v1", "TokenRequest"),
                                  ("authorization.k8s.io/v1", "SubjectAccessReview"),
                                  ("authorization.k8s.io/v1", "LocalSubjectAccessReview")]


def _every_registered_kind() -> list[registry.Kind]:
    """Every kind any server configuration can serve: defaults, optional versions, gated alpha kinds."""
    kinds = [*registry.STORED_KINDS, *registry.ALPHA_KINDS]
    kinds += [dataclasses.replace(k, version=v) for (g, v), names in registry.OPTIONAL_VERSIONS.items()
              for k in registry.STORED_KINDS if k.group == g and k.kind in names]
    return kinds


def _encodings_needed() -> list[tuple[str, str]]:
    out = []
    for k in _every_registered_kind():
        out.append((k.api_version, k.kind))
        if "list" in k.verbs:
            out.append((k.api_version, k.list_kind))
        for sub in k.subresources:
            assert sub in _SUBRESOURCE_KINDS or sub in _SAME_KIND | _STREAMS, f"{k.kind}/{sub}: which body kind?"
            if sub in _SUBRESOURCE_KINDS:
                out.append(_SUBRESOURCE_KINDS[sub])
    return sorted(set(out))


@pytest.mark.parametrize("api_version,kind", _encodings_needed() + _UPCOMING,
                         ids=[f"{a}/{k}" for a, k in _encodings_needed() + _UPCOMING])
def test_every_registered_kind_has_a_protobuf_encoding(api_version, kind):
    """A kind added to the registry without a contract fails here, not in a client's 406."""
    assert protobuf.message_class(api_version, kind) is not None, (
        f"{api_version}/{kind}: add its group to protos/k8s/import_upstream.py and regenerate")
    obj = {"apiVersion": api_version, "kind": kind, "metadata": {"name": "x", "labels": {"a": "b"}}}
    if kind.endswith("List"):
        obj = {"apiVersion": api_version, "kind": kind, "metadata": {"resourceVersion": "7"},
               "items": [{"metadata": {"name": "x", "labels": {"a": "b"}}}]}
    assert decode(protobuf.encode(obj)) == obj


def test_slice_wrappers_are_bare_lists_in_json():
    """authentication/v1 UserInfo.extra is map[string]ExtraValue, ExtraValue a []string: a list in JSON."""
    review = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "metadata": {},
              "status": {"authenticated": True, "user": {"username": "u", "groups": ["g"],
                                                         "extra": {"scopes": ["a", "b"], "none": []}}}}
    back = decode(protobuf.encode(review))
    assert back["status"]["user"]["extra"] == {"scopes": ["a", "b"], "none": []}
    cls = protobuf.message_class("authentication.k8s.io/v1", "TokenReview")
    msg = cls.FromString(protobuf.runtime_pb.Unknown.FromString(protobuf.encode(review)[4:]).raw)
    assert list(msg.status.user.extra["scopes"].items) == ["a", "b"]  # the wire form is {items: [...]}


def test_zero_values_go_keeps_survive_in_reviews():
    """`allowed` has no omitempty: a denied SelfSubjectAccessReview still says allowed: false."""
    review = {"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview", "metadata": {},
              "spec": {"resourceAttributes": {"verb": "get", "resource": "pods"}},
              "status": {"allowed": False}}
    assert decode(protobuf.encode(review))["status"] == {"allowed": False}
