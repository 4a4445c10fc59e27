"""End to end with the official `kubernetes` Python client (v37) against a real dramock process.

Every served kind goes through one lifecycle (`test_lifecycle`): create, read, list (namespaced and across
namespaces, with equality and set-based label selectors and field selectors), replace, patch with the
client's default content type (strategic merge for an object body) and with merge patch, a JSON patch,
the kind's own subresources and field selectors, delete, and finally a watch replaying ADDED, MODIFIED and
DELETED from the resourceVersion listed before the create. Every response goes through the client's typed
models (pydantic, strict types: a wrong shape raises), and the assertions read concrete typed fields.
"""

from __future__ import annotations

import base64
import contextlib
import json
import queue
import threading
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import pytest
from kubernetes import client, config, watch
from kubernetes.client import ApiException

from tests.helpers import wait_for

RUN = uuid.uuid4().hex[:6]
DRIVER = f"gpu.pyc-{RUN}.example.com"
POOL = f"pyc-pool-{RUN}"
SLICE_NODE = f"pyc-slice-node-{RUN}"
BIND_NODE = f"pyc-bind-node-{RUN}"
REGARDING = f"pyc-claim-{RUN}"  # what the events are about
MERGE = "application/merge-patch+json"
# MicroTime fields (eventTime, renewTime) parse with exactly six fractional digits upstream, and the client
# writes a datetime back with isoformat(), which drops a zero fraction: keep the microseconds non-zero.
EVENT_TIME = "2025-01-01T00:00:00.123456Z"
EVENT_DT = datetime(2025, 1, 1, 0, 0, 0, 123456, tzinfo=UTC)
WATCH_SECONDS = 5


def b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def claim_spec() -> dict:
    return {"devices": {"requests": [{"name": "gpu",
                                      "exactly": {"deviceClassName": f"pyc-{RUN}.example.com"}}]}}


def set_annotation(obj: Any) -> None:
    obj.metadata.annotations = {**(obj.metadata.annotations or {}), "pyc-replaced": "yes"}


# ------------------------------------------------------------------------------------------- plumbing

@dataclass
class Clients:
    api: client.ApiClient
    core: client.CoreV1Api
    resource: client.ResourceV1Api
    events: client.EventsV1Api
    coordination: client.CoordinationV1Api

    def status_of(self, exc: ApiException) -> client.V1Status:
        """The error body, deserialized as the client would any response."""
        return self.api.deserialize(exc.body, "V1Status", "application/json")


@pytest.fixture(scope="module")
def k8s(server) -> Clients:
    cfg = client.Configuration()
    config.load_kube_config(config_file=server.kubeconfig, client_configuration=cfg)
    assert cfg.host == server.url
    api = client.ApiClient(cfg)
    return Clients(api, client.CoreV1Api(api), client.ResourceV1Api(api), client.EventsV1Api(api),
                   client.CoordinationV1Api(api))


@pytest.fixture(scope="module")
def ns(k8s: Clients) -> Iterator[str]:
    name = f"pyc-{RUN}"
    k8s.core.create_namespace({"metadata": {"name": name}})
    yield name
    # Best effort, as the namespace controller would: delete, then clear spec.finalizers.
    with contextlib.suppress(ApiException):
        k8s.core.delete_namespace(name)
        namespace = k8s.core.read_namespace(name)
        namespace.spec.finalizers = []
        k8s.core.replace_namespace_finalize(name, namespace)


def expect_error(k8s: Clients, code: int, reason: str, fn: Callable[[], Any]) -> client.V1Status:
    with pytest.raises(ApiException) as info:
        fn()
    assert info.value.status == code, info.value.body
    status = k8s.status_of(info.value)
    assert (status.kind, status.status, status.code, status.reason) == ("Status", "Failure", code, reason)
    return status


@dataclass(frozen=True)
class Case:
    """One served kind: how to call it, a minimal valid object, and the typed fields to check."""

    id: str
    kind: str
    group: str
    plural: str
    api: str                    # attribute of Clients
    resource: str               # snake_case name in the client's method names
    namespaced: bool
    model: type
    body: Callable[[str], dict]  # (namespace) -> object without metadata
    typed: Callable[[Any], Any]  # a concrete typed field
    initial: Any
    update: Callable[[Any], None] | None = None  # mutates the typed object read back, before PUT
    updated: Any = None
    patch: dict | None = None  # sent with the client's default patch content type
    patched: Any = None
    extra: Callable[[Handle, str], None] | None = None  # subresources and kind-specific selectors
    delete: Callable[[Handle, str], Any] | None = None
    delete_kwargs: dict = field(default_factory=dict)
    returns_deleted_object: bool = False

    @property
    def api_version(self) -> str:
        return f"{self.group}/v1" if self.group else "v1"

    def __str__(self) -> str:
        return self.id


class Handle:
    """One kind's client methods with the namespace argument filled in."""

    def __init__(self, k8s: Clients, case: Case, namespace: str):
        self.k8s, self.case, self.namespace = k8s, case, namespace
        self.api = getattr(k8s, case.api)
        self.ns_args = (namespace,) if case.namespaced else ()

    def _fn(self, verb: str, sub: str = "") -> Callable[..., Any]:
        scope = "namespaced_" if self.case.namespaced else ""
        return getattr(self.api, f"{verb}_{scope}{self.case.resource}{sub}")

    @property
    def list_fn(self) -> Callable[..., Any]:
        return self._fn("list")

    def create(self, body: dict) -> Any:
        return self._fn("create")(*self.ns_args, body)

    def read(self, name: str, sub: str = "") -> Any:
        return self._fn("read", sub)(name, *self.ns_args)

    def list(self, **kw: Any) -> Any:
        return self._fn("list")(*self.ns_args, **kw)

    def list_all(self, **kw: Any) -> Any:
        return getattr(self.api, f"list_{self.case.resource}_for_all_namespaces")(**kw)

    def replace(self, name: str, body: Any, sub: str = "") -> Any:
        return self._fn("replace", sub)(name, *self.ns_args, body)

    def patch(self, name: str, body: Any, sub: str = "", **kw: Any) -> Any:
        return self._fn("patch", sub)(name, *self.ns_args, body, **kw)

    def merge_patch(self, name: str, body: dict, sub: str = "") -> Any:
        return self.patch(name, body, sub, _content_type=MERGE)

    def remove(self, name: str, **kw: Any) -> Any:
        return self._fn("delete")(name, *self.ns_args, **kw)

    def names(self, all_namespaces: bool = False, **selectors: str) -> list[str]:
        lst = self.list_all(**selectors) if all_namespaces else self.list(**selectors)
        assert lst.kind == self.case.kind + "List" and lst.api_version == self.case.api_version
        assert int(lst.metadata.resource_version) > 0
        for item in lst.items:
            assert isinstance(item, self.case.model)
        return [item.metadata.name for item in lst.items]

    def watch_events(self, resource_version: str, until: Callable[[list[dict]], bool],
                     **kw: Any) -> list[dict]:
        """Events of a watch from `resource_version`, stopped as soon as `until(events)` holds."""
        # The item type is passed explicitly: the client derives it from the list model's name, which
        # fails for ResourceClaim (V1ResourceClaimList holds ResourceV1ResourceClaim).
        w = watch.Watch(return_type=self.case.model)
        seen: list[dict] = []
        for event in w.stream(self.list_fn, *self.ns_args, resource_version=resource_version,
                              timeout_seconds=WATCH_SECONDS, _request_timeout=WATCH_SECONDS + 5, **kw):
            seen.append(event)
            if until(seen):
                w.stop()
                break
        return seen


# ------------------------------------------------------------------------- kind-specific extra steps

def slice_field_selectors(h: Handle, name: str) -> None:
    assert name in h.names(field_selector=f"spec.nodeName={SLICE_NODE}")
    assert name in h.names(field_selector=f"spec.driver={DRIVER}")
    assert name in h.names(field_selector=f"spec.driver={DRIVER},spec.pool.name={POOL}")
    assert name not in h.names(field_selector="spec.driver=other.example.com")
    assert name not in h.names(field_selector=f"spec.nodeName!={SLICE_NODE}")
    s = h.read(name)
    assert s.spec.devices[0].attributes["model"].string == "LATEST-GPU-MODEL"
    assert s.spec.devices[0].capacity["memory"].value == "80Gi"


def claim_status(h: Handle, name: str) -> None:
    claim = h.read(name)
    assert claim.status is None or claim.status.allocation is None
    claim.status = client.V1ResourceClaimStatus(allocation=client.V1AllocationResult(
        devices=client.V1DeviceAllocationResult(results=[client.V1DeviceRequestAllocationResult(
            request="gpu", driver=DRIVER, pool=POOL, device="gpu-0")])))
    claim.spec.devices.requests[0].exactly.count = 5   # ignored: /status changes status only
    claim.metadata.labels["pyc-status"] = "ignored"    # ignored too (ResetObjectMetaForStatus)
    out = h.replace(name, claim, "_status")
    assert isinstance(out, h.case.model)
    assert out.status.allocation.devices.results[0].device == "gpu-0"
    assert out.status.allocation.devices.results[0].driver == DRIVER
    assert out.spec.devices.requests[0].exactly.count == 1
    assert "pyc-status" not in out.metadata.labels
    assert "status" in {e.subresource for e in out.metadata.managed_fields}

    uid = str(uuid.uuid4())
    out = h.patch(name, {"status": {"reservedFor": [{"resource": "pods", "name": "pyc-pod", "uid": uid}]},
                         "metadata": {"annotations": {"pyc-status": "ignored"}}}, "_status")
    assert [(r.resource, r.name, r.uid) for r in out.status.reserved_for] == [("pods", "pyc-pod", uid)]
    assert "pyc-status" not in (out.metadata.annotations or {})
    assert out.status.allocation.devices.results[0].pool == POOL

    out = h.merge_patch(name, {"status": {"reservedFor": None}}, "_status")
    assert out.status.reserved_for is None
    assert h.read(name, "_status").status.allocation.devices.results[0].request == "gpu"

    # The main resource ignores status.
    out = h.merge_patch(name, {"status": {"allocation": None}, "metadata": {"annotations": {"main": "x"}}})
    assert out.metadata.annotations["main"] == "x"
    assert out.status.allocation.devices.results[0].device == "gpu-0"


def taint_rule_status(h: Handle, name: str) -> None:
    rule = h.read(name)
    generation = rule.metadata.generation
    rule.status = client.V1DeviceTaintRuleStatus(conditions=[client.V1Condition(
        type="EvictionInProgress", status="False", reason="NoEffect", message="pyc",
        last_transition_time=datetime(2025, 1, 1, tzinfo=UTC), observed_generation=generation)])
    rule.spec.taint.value = "ignored"
    out = h.replace(name, rule, "_status")
    assert out.status.conditions[0].type == "EvictionInProgress"
    assert out.status.conditions[0].last_transition_time == datetime(2025, 1, 1, tzinfo=UTC)
    assert out.spec.taint.value != "ignored"
    assert out.metadata.generation == generation

    out = h.patch(name, {"status": {"conditions": [{
        "type": "EvictionInProgress", "status": "True", "reason": "Evicting", "message": "pyc",
        "lastTransitionTime": "2025-01-02T00:00:00Z", "observedGeneration": generation}]}}, "_status")
    assert [(c.type, c.status, c.reason) for c in out.status.conditions] == [
        ("EvictionInProgress", "True", "Evicting")]
    assert h.read(name, "_status").status.conditions[0].status == "True"
    # The main resource ignores status.
    out = h.merge_patch(name, {"status": None})
    assert out.status.conditions[0].reason == "Evicting"


def node_status(h: Handle, name: str) -> None:
    assert name in h.names(field_selector="spec.unschedulable=true")   # set by the replace step
    now = "2025-01-01T00:00:00Z"
    out = h.patch(name, {"status": {
        "capacity": {"pyc.example.com/gpu": "4"}, "allocatable": {"pyc.example.com/gpu": "4"},
        "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady", "message": "ok",
                        "lastHeartbeatTime": now, "lastTransitionTime": now}]}}, "_status")
    assert out.status.capacity["pyc.example.com/gpu"] == "4"
    assert [(c.type, c.status) for c in out.status.conditions] == [("Ready", "True")]

    node = h.read(name, "_status")
    node.status.allocatable["pyc.example.com/gpu"] = "3"
    node.spec.unschedulable = False  # ignored
    out = h.replace(name, node, "_status")
    assert out.status.allocatable["pyc.example.com/gpu"] == "3"
    assert out.spec.unschedulable is True


def pod_binding_and_status(h: Handle, name: str) -> None:
    core = h.k8s.core
    assert name in h.names(field_selector="spec.nodeName=")  # not scheduled yet
    binding = client.V1Binding(metadata=client.V1ObjectMeta(name=name),
                               target=client.V1ObjectReference(kind="Node", name=BIND_NODE))
    # pods/binding answers a Status, which the client cannot read as its declared V1Binding (target is
    # required): read the raw response instead. Same against a real cluster.
    resp = core.create_namespaced_pod_binding(name, h.namespace, binding, _preload_content=False)
    assert resp.status == 201
    status = h.k8s.api.deserialize(resp.data.decode(), "V1Status", "application/json")
    assert status.status == "Success"
    pod = h.read(name)
    assert pod.spec.node_name == BIND_NODE
    assert any(c.type == "PodScheduled" and c.status == "True" for c in pod.status.conditions)
    assert name in h.names(field_selector=f"spec.nodeName={BIND_NODE}")
    assert name in h.names(all_namespaces=True, field_selector=f"spec.nodeName={BIND_NODE}")
    assert name not in h.names(field_selector="spec.nodeName=")
    conflict = expect_error(h.k8s, 409, "Conflict", lambda: core.create_namespaced_pod_binding(
        name, h.namespace, binding, _preload_content=False))
    assert conflict.details.name == name

    out = h.patch(name, {"status": {"phase": "Running", "podIP": "10.1.2.3",
                                    "conditions": [{"type": "Ready", "status": "True"}]}}, "_status")
    assert (out.status.phase, out.status.pod_ip) == ("Running", "10.1.2.3")
    assert {c.type for c in out.status.conditions} >= {"Ready", "PodScheduled"}
    assert name in h.names(field_selector="status.phase=Running")
    assert name in h.names(field_selector=f"status.phase=Running,spec.nodeName={BIND_NODE}")
    assert name not in h.names(field_selector="status.phase=Pending")
    assert name in h.names(field_selector="status.phase!=Pending")

    pod = h.read(name, "_status")
    pod.status.message = "pyc"
    pod.spec.containers[0].image = "ignored:1"
    out = h.replace(name, pod, "_status")
    assert out.status.message == "pyc" and out.spec.containers[0].image != "ignored:1"

    # A pod bound to a node is deleted gracefully: still there, with a deletionTimestamp.
    graceful = h.remove(name)
    assert isinstance(graceful, client.V1Pod)
    assert graceful.metadata.deletion_timestamp is not None
    assert graceful.metadata.deletion_grace_period_seconds == 30
    assert h.read(name).metadata.deletion_timestamp is not None


def quota_status(h: Handle, name: str) -> None:
    out = h.patch(name, {"status": {"hard": {"pods": "30"}, "used": {"pods": "1"}}}, "_status")
    assert (out.status.hard["pods"], out.status.used["pods"]) == ("30", "1")
    quota = h.read(name, "_status")
    quota.status.used["pods"] = "2"
    quota.spec.hard["pods"] = "99"  # ignored
    out = h.replace(name, quota, "_status")
    assert out.status.used["pods"] == "2" and out.spec.hard["pods"] == "30"
    out = h.merge_patch(name, {"status": {"used": {"pods": "7"}}})  # the main resource ignores status
    assert out.status.used["pods"] == "2"


def core_event_selectors(h: Handle, name: str) -> None:
    assert name in h.names(field_selector=f"involvedObject.name={REGARDING}")
    assert name in h.names(field_selector=f"involvedObject.name={REGARDING},"
                                          "involvedObject.kind=ResourceClaim,reason=Allocated,type=Normal")
    assert name in h.names(all_namespaces=True, field_selector=f"involvedObject.name={REGARDING},"
                                                               f"metadata.name={name}")
    assert name not in h.names(field_selector="involvedObject.name=someone-else")


def events_v1_selectors(h: Handle, name: str) -> None:
    # events.k8s.io/v1 selects on its own field names (regarding.*, reportingController), mapped onto
    # the stored core fields; the core names are not field labels of this version.
    assert name in h.names(field_selector=f"regarding.name={REGARDING},metadata.name={name}")
    assert name in h.names(field_selector=f"reportingController=pyc.example.com/ctl,metadata.name={name}")
    expect_error(h.k8s, 400, "BadRequest",
                 lambda: h.list(field_selector=f"involvedObject.name={REGARDING}"))
    # The same object through the core API.
    core = h.k8s.core.read_namespaced_event(name, h.namespace)
    assert (core.involved_object.name, core.message) == (REGARDING, h.read(name).note)


def secret_selectors(h: Handle, name: str) -> None:
    assert name in h.names(field_selector=f"type=Opaque,metadata.name={name}")
    assert name not in h.names(field_selector="type=kubernetes.io/tls")


def merge_patch_replaces_lists(h: Handle, name: str) -> None:
    out = h.merge_patch(name, {"secrets": [{"name": "pyc-c"}]})
    assert [s.name for s in out.secrets] == ["pyc-c"]


def delete_namespace(h: Handle, name: str) -> None:
    # Upstream: the namespace stays, Terminating, until the namespace controller has emptied it and
    # cleared spec.finalizers through /finalize; the client declares the response as `object`.
    resp = h.remove(name)
    assert resp["kind"] == "Namespace" and resp["metadata"]["name"] == name
    assert resp["status"]["phase"] == "Terminating" and resp["metadata"].get("deletionTimestamp")
    try:
        ns = h.read(name)
    except ApiException as e:  # a namespace controller was quicker
        assert e.status == 404
        return
    assert ns.status.phase == "Terminating" and ns.metadata.deletion_timestamp is not None
    ns.spec.finalizers = []
    try:
        h.k8s.core.replace_namespace_finalize(name, ns)  # what the namespace controller does last
    except ApiException as e:
        assert e.status in (404, 409)  # ... or it is doing it now
    wait_for(lambda: name not in h.names(field_selector=f"metadata.name={name}"), 10,
             what=f"namespace {name} to go")


# ------------------------------------------------------------------------------------------ the kinds

CASES = [
    Case("deviceclass", "DeviceClass", "resource.k8s.io", "deviceclasses", "resource", "device_class", False,
         client.V1DeviceClass,
         body=lambda ns: {"spec": {"selectors": [{"cel": {"expression": f'device.driver == "{DRIVER}"'}}]}},
         typed=lambda o: (o.spec.selectors[0].cel.expression, o.metadata.generation),
         initial=(f'device.driver == "{DRIVER}"', 1),
         update=lambda o: setattr(o.spec.selectors[0].cel, "expression", "true"), updated=("true", 2),
         patch={"spec": {"selectors": [{"cel": {"expression": "false"}}]}}, patched=("false", 3),
         returns_deleted_object=True),
    Case("resourceslice", "ResourceSlice", "resource.k8s.io", "resourceslices", "resource", "resource_slice",
         False, client.V1ResourceSlice,
         body=lambda ns: {"spec": {
             "driver": DRIVER, "nodeName": SLICE_NODE,
             "pool": {"name": POOL, "generation": 1, "resourceSliceCount": 1},
             "devices": [{"name": "gpu-0", "attributes": {"model": {"string": "LATEST-GPU-MODEL"}},
                          "capacity": {"memory": {"value": "80Gi"}}}]}},
         typed=lambda o: (o.spec.pool.name, o.spec.pool.generation, o.spec.driver, o.spec.node_name),
         initial=(POOL, 1, DRIVER, SLICE_NODE),
         update=lambda o: setattr(o.spec.pool, "generation", 2), updated=(POOL, 2, DRIVER, SLICE_NODE),
         patch={"spec": {"pool": {"generation": 3}}}, patched=(POOL, 3, DRIVER, SLICE_NODE),
         extra=slice_field_selectors, returns_deleted_object=True),
    Case("resourceclaim", "ResourceClaim", "resource.k8s.io", "resourceclaims", "resource", "resource_claim",
         True, client.ResourceV1ResourceClaim,
         body=lambda ns: {"spec": claim_spec()},
         typed=lambda o: (o.spec.devices.requests[0].exactly.device_class_name,
                          o.spec.devices.requests[0].exactly.allocation_mode,
                          o.spec.devices.requests[0].exactly.count),
         initial=(f"pyc-{RUN}.example.com", "ExactCount", 1),  # spec is immutable: metadata changes only
         extra=claim_status, returns_deleted_object=True),
    Case("resourceclaimtemplate", "ResourceClaimTemplate", "resource.k8s.io", "resourceclaimtemplates",
         "resource", "resource_claim_template", True, client.V1ResourceClaimTemplate,
         body=lambda ns: {"spec": {"metadata": {"labels": {"from": "template"}}, "spec": claim_spec()}},
         typed=lambda o: (o.spec.spec.devices.requests[0].exactly.device_class_name,
                          o.spec.metadata.labels["from"]),
         initial=(f"pyc-{RUN}.example.com", "template"), returns_deleted_object=True),
    Case("devicetaintrule", "DeviceTaintRule", "resource.k8s.io", "devicetaintrules", "resource",
         "device_taint_rule", False, client.V1DeviceTaintRule,
         body=lambda ns: {"spec": {"deviceSelector": {"driver": DRIVER, "pool": POOL, "device": "gpu-0"},
                                   "taint": {"key": "pyc.example.com/unhealthy", "effect": "NoSchedule"}}},
         typed=lambda o: (o.spec.taint.key, o.spec.taint.effect, o.spec.device_selector.pool,
                          o.metadata.generation),
         initial=("pyc.example.com/unhealthy", "NoSchedule", POOL, 1),
         update=lambda o: setattr(o.spec.taint, "effect", "NoExecute"),
         updated=("pyc.example.com/unhealthy", "NoExecute", POOL, 2),
         patch={"spec": {"taint": {"effect": "NoSchedule"}}},
         patched=("pyc.example.com/unhealthy", "NoSchedule", POOL, 3),
         extra=taint_rule_status),  # v1 answers DELETE with a Status (returnDeletedObject only < v1)
    Case("node", "Node", "", "nodes", "core", "node", False, client.V1Node,
         body=lambda ns: {"spec": {"podCIDR": "10.1.0.0/24"}},
         typed=lambda o: (o.spec.pod_cidr, o.spec.unschedulable, o.spec.taints and o.spec.taints[0].key),
         initial=("10.1.0.0/24", None, None),
         update=lambda o: setattr(o.spec, "unschedulable", True), updated=("10.1.0.0/24", True, None),
         patch={"spec": {"taints": [{"key": "pyc.example.com/maintenance", "effect": "NoSchedule"}]}},
         patched=("10.1.0.0/24", True, "pyc.example.com/maintenance"),
         extra=node_status),
    Case("pod", "Pod", "", "pods", "core", "pod", True, client.V1Pod,
         body=lambda ns: {"spec": {"containers": [{"name": "main", "image": "registry.k8s.io/pause:3.10"}],
                                   "resourceClaims": [{"name": "gpu", "resourceClaimName": REGARDING}]}},
         typed=lambda o: (o.spec.containers[0].image, o.spec.resource_claims[0].resource_claim_name,
                          o.status.phase),
         initial=("registry.k8s.io/pause:3.10", REGARDING, "Pending"),
         update=lambda o: setattr(o.spec.containers[0], "image", "registry.k8s.io/pause:3.11"),
         updated=("registry.k8s.io/pause:3.11", REGARDING, "Pending"),
         # Strategic merge: containers merge by name, so only the image changes.
         patch={"spec": {"containers": [{"name": "main", "image": "registry.k8s.io/pause:3.12"}]}},
         patched=("registry.k8s.io/pause:3.12", REGARDING, "Pending"),
         extra=pod_binding_and_status, delete_kwargs={"grace_period_seconds": 0},
         returns_deleted_object=True),
    Case("resourcequota", "ResourceQuota", "", "resourcequotas", "core", "resource_quota", True,
         client.V1ResourceQuota,
         body=lambda ns: {"spec": {"hard": {"pods": "10", "count/resourceclaims.resource.k8s.io": "4"}}},
         typed=lambda o: o.spec.hard["pods"], initial="10",
         update=lambda o: o.spec.hard.update(pods="20"), updated="20",
         patch={"spec": {"hard": {"pods": "30"}}}, patched="30",
         extra=quota_status, returns_deleted_object=True),
    Case("event", "Event", "", "events", "core", "event", True, client.CoreV1Event,
         body=lambda ns: {
             "involvedObject": {"kind": "ResourceClaim", "apiVersion": "resource.k8s.io/v1",
                                "name": REGARDING, "namespace": ns},
             "reason": "Allocated", "message": "m1", "type": "Normal", "count": 1,
             "source": {"component": "pyc"}, "firstTimestamp": "2025-01-01T00:00:00Z",
             "lastTimestamp": "2025-01-01T00:00:00Z"},
         typed=lambda o: (o.involved_object.name, o.message, o.count, o.last_timestamp),
         initial=(REGARDING, "m1", 1, datetime(2025, 1, 1, tzinfo=UTC)),
         update=lambda o: (setattr(o, "message", "m2"), setattr(o, "count", 2)),
         updated=(REGARDING, "m2", 2, datetime(2025, 1, 1, tzinfo=UTC)),
         patch={"count": 3, "lastTimestamp": "2025-01-01T00:01:00Z"},
         patched=(REGARDING, "m2", 3, datetime(2025, 1, 1, 0, 1, tzinfo=UTC)),
         extra=core_event_selectors),
    Case("configmap", "ConfigMap", "", "configmaps", "core", "config_map", True, client.V1ConfigMap,
         body=lambda ns: {"data": {"k": "v1", "keep": "x"}},
         typed=lambda o: o.data, initial={"k": "v1", "keep": "x"},
         update=lambda o: o.data.update(k="v2"), updated={"k": "v2", "keep": "x"},
         patch={"data": {"k": "v3"}}, patched={"k": "v3", "keep": "x"}),
    Case("secret", "Secret", "", "secrets", "core", "secret", True, client.V1Secret,
         body=lambda ns: {"type": "Opaque", "data": {"k": b64("v1")}},
         typed=lambda o: (o.type, o.data), initial=("Opaque", {"k": b64("v1")}),
         update=lambda o: o.data.update(k=b64("v2")), updated=("Opaque", {"k": b64("v2")}),
         patch={"stringData": {"k": "v3"}}, patched=("Opaque", {"k": b64("v3")}),  # stringData is write-only
         extra=secret_selectors),
    Case("serviceaccount", "ServiceAccount", "", "serviceaccounts", "core", "service_account", True,
         client.V1ServiceAccount,
         body=lambda ns: {"automountServiceAccountToken": False, "secrets": [{"name": "pyc-a"}]},
         typed=lambda o: (o.automount_service_account_token, sorted(s.name for s in o.secrets)),
         initial=(False, ["pyc-a"]),
         update=lambda o: setattr(o, "automount_service_account_token", True), updated=(True, ["pyc-a"]),
         # Strategic merge: secrets merge by name.
         patch={"secrets": [{"name": "pyc-b"}]}, patched=(True, ["pyc-a", "pyc-b"]),
         extra=merge_patch_replaces_lists, returns_deleted_object=True),
    Case("events.k8s.io-event", "Event", "events.k8s.io", "events", "events", "event", True,
         client.EventsV1Event,
         body=lambda ns: {
             "eventTime": EVENT_TIME, "reportingController": "pyc.example.com/ctl",
             "reportingInstance": "pyc-1", "action": "Allocate", "reason": "Allocated", "type": "Normal",
             "regarding": {"kind": "ResourceClaim", "apiVersion": "resource.k8s.io/v1", "name": REGARDING,
                           "namespace": ns},
             "note": "n1"},
         typed=lambda o: (o.regarding.name, o.reporting_controller, o.note, o.event_time),
         initial=(REGARDING, "pyc.example.com/ctl", "n1", EVENT_DT),
         update=lambda o: setattr(o, "note", "n2"),
         updated=(REGARDING, "pyc.example.com/ctl", "n2", EVENT_DT),
         patch={"note": "n3"}, patched=(REGARDING, "pyc.example.com/ctl", "n3", EVENT_DT),
         extra=events_v1_selectors),
    Case("lease", "Lease", "coordination.k8s.io", "leases", "coordination", "lease", True, client.V1Lease,
         body=lambda ns: {"spec": {"holderIdentity": "pyc-holder-1", "leaseDurationSeconds": 15,
                                   "renewTime": EVENT_TIME}},
         typed=lambda o: (o.spec.holder_identity, o.spec.lease_duration_seconds, o.spec.lease_transitions),
         initial=("pyc-holder-1", 15, None),
         update=lambda o: (setattr(o.spec, "holder_identity", "pyc-holder-2"),
                           setattr(o.spec, "lease_transitions", 1)),
         updated=("pyc-holder-2", 15, 1),
         patch={"spec": {"holderIdentity": "pyc-holder-3"}}, patched=("pyc-holder-3", 15, 1)),
    Case("namespace", "Namespace", "", "namespaces", "core", "namespace", False, client.V1Namespace,
         body=lambda ns: {},
         typed=lambda o: (o.status.phase, o.spec.finalizers,
                          o.metadata.labels["kubernetes.io/metadata.name"] == o.metadata.name),
         initial=("Active", ["kubernetes"], True), returns_deleted_object=True, delete=delete_namespace),
]


# ------------------------------------------------------------------------------------------ the tests

def check_typed(case: Case, obj: Any, name: str, expected: Any) -> None:
    assert isinstance(obj, case.model), type(obj)
    assert (obj.kind, obj.api_version) == (case.kind, case.api_version)
    assert obj.metadata.name == name and obj.metadata.uid and int(obj.metadata.resource_version) > 0
    assert isinstance(obj.metadata.creation_timestamp, datetime)
    for entry in obj.metadata.managed_fields:
        assert isinstance(entry, client.V1ManagedFieldsEntry) and isinstance(entry.time, datetime)
        assert entry.operation == "Update" and entry.fields_type == "FieldsV1" and entry.fields_v1
    assert "OpenAPI-Generator" in {e.manager for e in obj.metadata.managed_fields}  # from the User-Agent
    assert case.typed(obj) == expected


@pytest.mark.parametrize("case", CASES, ids=str)
def test_lifecycle(k8s: Clients, ns: str, case: Case) -> None:
    h = Handle(k8s, case, ns)
    name = f"pyc-{case.id.replace('.', '-')}-{RUN}"
    mine = f"pyc-run={RUN},pyc-case={case.id}"
    labels = {"pyc-run": RUN, "pyc-case": case.id, "tier": "backend"}
    start_rv = h.list(label_selector=mine).metadata.resource_version

    # create (and create again)
    created = h.create({"metadata": {"name": name, "labels": labels}, **case.body(ns)})
    check_typed(case, created, name, case.initial)
    assert created.metadata.labels["tier"] == "backend"
    assert created.metadata.namespace == (ns if case.namespaced else None)
    status = expect_error(k8s, 409, "AlreadyExists", lambda: h.create({"metadata": {"name": name},
                                                                       **case.body(ns)}))
    assert (status.details.name, status.details.kind) == (name, case.plural)
    assert (status.details.group or "") == case.group

    # read
    check_typed(case, h.read(name), name, case.initial)

    # list: label selectors (equality and set-based) and field selectors
    assert h.names(label_selector=mine) == [name]
    assert h.names(label_selector=f"{mine},tier=backend") == [name]
    assert h.names(label_selector=f"{mine},tier!=frontend") == [name]
    assert h.names(label_selector=f"{mine},tier in (backend,db)") == [name]
    assert h.names(label_selector=f"{mine},tier notin (backend)") == []
    assert h.names(label_selector=f"{mine},tier,!absent") == [name]
    assert h.names(label_selector=f"{mine},!tier") == []
    assert h.names(field_selector=f"metadata.name={name}") == [name]
    assert h.names(label_selector=mine, field_selector=f"metadata.name!={name}") == []
    assert h.names(label_selector=mine, field_selector=f"metadata.name={name}") == [name]
    assert h.names(label_selector=mine, field_selector="metadata.name=other") == []
    if case.namespaced:
        lst = h.list_all(label_selector=mine, field_selector=f"metadata.name={name}")
        assert [(i.metadata.namespace, i.metadata.name) for i in lst.items] == [(ns, name)]
        assert h.names(all_namespaces=True, field_selector=f"metadata.namespace={ns},metadata.name={name}") \
            == [name]
        assert h.names(all_namespaces=True, label_selector=mine,
                       field_selector=f"metadata.namespace!={ns}") == []

    # replace (PUT of the typed object read back), and a stale replace
    obj = h.read(name)
    set_annotation(obj)
    if case.update:
        case.update(obj)
    replaced = h.replace(name, obj)
    check_typed(case, replaced, name, case.updated if case.update else case.initial)
    assert replaced.metadata.annotations["pyc-replaced"] == "yes"
    assert int(replaced.metadata.resource_version) > int(created.metadata.resource_version)
    assert replaced.metadata.uid == created.metadata.uid
    set_annotation(created)
    status = expect_error(k8s, 409, "Conflict", lambda: h.replace(name, created))
    assert status.details.name == name

    # patch with the client's default content type (strategic merge patch for an object body)
    body = {"metadata": {"labels": {"patched": "strategic"}}, **(case.patch or {})}
    patched = h.patch(name, body, field_manager="pyc-patcher")
    check_typed(case, patched, name, case.patched if case.patch else case.initial)
    assert "pyc-patcher" in {e.manager for e in patched.metadata.managed_fields}
    assert patched.metadata.labels["patched"] == "strategic" and patched.metadata.labels["tier"] == "backend"
    # merge patch: null removes a key
    patched = h.merge_patch(name, {"metadata": {"labels": {"patched": "merge", "tier": None}}})
    assert patched.metadata.labels["patched"] == "merge" and "tier" not in patched.metadata.labels
    assert h.names(label_selector=f"{mine},!tier") == [name]
    # JSON patch (a list body)
    patched = h.patch(name, [{"op": "add", "path": "/metadata/annotations/pyc-json", "value": "yes"},
                             {"op": "test", "path": "/metadata/labels/patched", "value": "merge"}])
    assert patched.metadata.annotations == {**replaced.metadata.annotations, "pyc-json": "yes"}
    check_typed(case, patched, name, case.patched if case.patch else case.initial)

    if case.extra:
        case.extra(h, name)

    # delete
    if case.delete:
        case.delete(h, name)
    else:
        deleted = h.remove(name, **case.delete_kwargs)
        if case.returns_deleted_object:
            assert isinstance(deleted, case.model) and deleted.metadata.name == name
        else:  # declared as `object`: a Status
            assert isinstance(deleted, dict)
            assert (deleted["kind"], deleted["status"]) == ("Status", "Success"), deleted
            assert (deleted["details"]["name"], deleted["details"]["kind"]) == (name, case.plural)
    status = expect_error(k8s, 404, "NotFound", lambda: h.read(name))
    assert (status.details.name, status.details.kind) == (name, case.plural)
    expect_error(k8s, 404, "NotFound", lambda: h.remove(name))
    assert h.names(label_selector=mine) == []

    # watch: the whole history of the object, replayed from before its creation
    events = h.watch_events(start_rv, lambda seen: seen[-1]["type"] == "DELETED",
                            field_selector=f"metadata.name={name}")
    types = [e["type"] for e in events]
    assert types[0] == "ADDED" and types[-1] == "DELETED" and "MODIFIED" in types, types
    assert types.count("ADDED") == 1 and types.count("DELETED") == 1
    for e in events:
        assert isinstance(e["object"], case.model) and e["object"].metadata.name == name
        assert e["raw_object"]["kind"] == case.kind and e["raw_object"]["apiVersion"] == case.api_version
    versions = [int(e["object"].metadata.resource_version) for e in events]
    assert versions == sorted(versions) and len(set(versions)) == len(versions)
    assert events[0]["object"].metadata.resource_version == created.metadata.resource_version
    check_typed(case, events[0]["object"], name, case.initial)
    assert events[1]["object"].metadata.resource_version == replaced.metadata.resource_version


def test_live_watch_with_label_selector(k8s: Clients, ns: str) -> None:
    """A watch open while the writes happen; an object leaving the selector is DELETED for the watcher."""
    case = next(c for c in CASES if c.id == "resourceclaim")
    h = Handle(k8s, case, ns)
    name = f"pyc-live-{RUN}"
    selector = f"pyc-live={RUN}"
    rv = h.list(label_selector=selector).metadata.resource_version
    events: queue.Queue = queue.Queue()
    w = watch.Watch(return_type=case.model)

    def run() -> None:
        try:
            for e in w.stream(h.list_fn, ns, label_selector=selector, resource_version=rv,
                              timeout_seconds=WATCH_SECONDS, _request_timeout=WATCH_SECONDS + 5):
                events.put(e)
        except Exception as exc:  # noqa: BLE001 - anything goes back to the test thread
            events.put(exc)
        events.put(None)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()

    def next_event() -> dict:
        e = events.get(timeout=WATCH_SECONDS)
        assert isinstance(e, dict), e
        assert isinstance(e["object"], case.model) and e["object"].metadata.name == name
        return e

    try:
        h.create({"metadata": {"name": name, "labels": {"pyc-live": RUN}}, "spec": claim_spec()})
        e = next_event()
        assert e["type"] == "ADDED"
        assert e["object"].spec.devices.requests[0].exactly.device_class_name == f"pyc-{RUN}.example.com"
        h.merge_patch(name, {"metadata": {"annotations": {"step": "1"}}})
        e = next_event()
        assert e["type"] == "MODIFIED" and e["object"].metadata.annotations == {"step": "1"}
        h.merge_patch(name, {"metadata": {"labels": {"pyc-live": None}}})  # leaves the selector
        e = next_event()
        assert e["type"] == "DELETED" and not (e["object"].metadata.labels or {}).get("pyc-live")
        h.merge_patch(name, {"metadata": {"labels": {"pyc-live": RUN}}})  # comes back
        assert next_event()["type"] == "ADDED"
        h.remove(name)
        assert next_event()["type"] == "DELETED"
    finally:
        w.stop()
        thread.join(timeout=WATCH_SECONDS + 5)
    assert not thread.is_alive()


def test_errors_are_typed_statuses(k8s: Clients, ns: str) -> None:
    status = expect_error(k8s, 404, "NotFound",
                          lambda: k8s.resource.read_namespaced_resource_claim("pyc-missing", ns))
    assert (status.details.name, status.details.group, status.details.kind) == (
        "pyc-missing", "resource.k8s.io", "resourceclaims")
    assert status.message == 'resourceclaims.resource.k8s.io "pyc-missing" not found'
    status = expect_error(k8s, 404, "NotFound",
                          lambda: k8s.core.read_namespaced_config_map("pyc-missing", ns))
    assert status.message == 'configmaps "pyc-missing" not found'
    # creating in a namespace that does not exist
    status = expect_error(k8s, 404, "NotFound", lambda: k8s.core.create_namespaced_config_map(
        f"pyc-missing-{RUN}", {"metadata": {"name": "x"}}))
    assert (status.details.name, status.details.kind) == (f"pyc-missing-{RUN}", "namespaces")
    # an invalid object
    status = expect_error(k8s, 422, "Invalid", lambda: k8s.resource.create_namespaced_resource_claim(
        ns, {"metadata": {"name": "Not_Valid"}, "spec": claim_spec()}))
    assert status.details.kind == "ResourceClaim" and status.details.causes
    assert status.details.causes[0].field == "metadata.name"


def test_timestamps_on_the_wire(k8s: Clients, ns: str) -> None:
    """Time and MicroTime are answered in UTC ("Z"), Time with second precision, MicroTime with six
    digits, whatever offset the request used; the client itself writes datetimes as "+00:00"."""
    leases, name = k8s.coordination, f"pyc-time-{RUN}"

    def raw_lease() -> dict:
        return json.loads(leases.read_namespaced_lease(name, ns, _preload_content=False).data)

    lease = leases.create_namespaced_lease(ns, {"metadata": {"name": name}, "spec": {
        "holderIdentity": "pyc", "renewTime": "2025-01-01T03:02:03.456789+02:00"}})
    assert lease.spec.renew_time == datetime(2025, 1, 1, 1, 2, 3, 456789, tzinfo=UTC)
    assert raw_lease()["spec"]["renewTime"] == "2025-01-01T01:02:03.456789Z"
    lease.spec.acquire_time = datetime(2025, 1, 1, 0, 0, 0, 1, tzinfo=UTC)  # sent as ...00.000001+00:00
    leases.replace_namespaced_lease(name, ns, lease)
    spec = raw_lease()["spec"]
    assert (spec["acquireTime"], spec["renewTime"]) == ("2025-01-01T00:00:00.000001Z",
                                                        "2025-01-01T01:02:03.456789Z")
    # MicroTime takes exactly six fractional digits.
    status = expect_error(k8s, 400, "BadRequest", lambda: leases.create_namespaced_lease(ns, {
        "metadata": {"name": f"{name}-bad"}, "spec": {"renewTime": "2025-01-01T00:00:00Z"}}))
    assert "2006-01-02T15:04:05.000000Z07:00" in status.message

    event = k8s.core.create_namespaced_event(ns, {
        "metadata": {"name": name}, "involvedObject": {"kind": "Pod", "name": "x", "namespace": ns},
        "reason": "Test", "firstTimestamp": "2025-01-01T02:00:00.75+02:00"}, _preload_content=False)
    assert json.loads(event.data)["firstTimestamp"] == "2025-01-01T00:00:00Z"
    k8s.core.delete_namespaced_event(name, ns)
    leases.delete_namespaced_lease(name, ns)
