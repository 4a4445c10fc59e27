"""Table-driven unit tests of dramock.schemas.validation, drawn from upstream's validation_*_test.go.

Every case lists the exact (field, reason) pairs expected; where upstream's message is stable the
message is asserted too.
"""

from __future__ import annotations

import copy
import types
from collections.abc import Callable
from typing import Any

import pytest

from dramock.schemas.featuregates import FeatureGates
from dramock.schemas.validation import (
    validate_device_class,
    validate_device_class_update,
    validate_device_taint_rule,
    validate_device_taint_rule_status_update,
    validate_device_taint_rule_update,
    validate_pod_resource_claims,
    validate_pod_spec_resource_claims,
    validate_pod_status_resource_claims,
    validate_resource_claim,
    validate_resource_claim_status_update,
    validate_resource_claim_template,
    validate_resource_claim_template_update,
    validate_resource_claim_update,
    validate_resource_slice,
    validate_resource_slice_update,
)
from dramock.schemas.validation.resource import cel as rv_cel

BAD_NAME = "!@#$%^"
LABEL_MSG = ("a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start "
             "and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is "
             "'[a-z0-9]([-a-z0-9]*[a-z0-9])?')")
SUBDOMAIN_MSG = ("a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and "
                 "must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is "
                 "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')")
C_IDENT_MSG = ("a valid C identifier must start with alphabetic character or '_', followed by a string of alphanumeric "
               "characters or '_' (e.g. 'my_name',  or 'MY_NAME',  or 'MyName', regex used for validation is "
               "'[A-Za-z_][A-Za-z0-9_]*')")
LABEL_VALUE_MSG = ("a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and "
                   "must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', "
                   "regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')")
NAME_PART_MSG = ("name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
                 "alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
                 "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')")
REF_MSG = "must be the name of a request in the claim or the name of a request and a subrequest separated by '/'"
FQN_MSG = "a fully qualified name must be a domain and a name separated by a slash"
UID = "ac051fac-2ead-46d9-b8b4-4e0fbeb7455d"
UID2 = "bd052fac-2ead-46d9-b8b4-4e0fbeb7455e"
INV, REQ, FORB, DUP = "FieldValueInvalid", "FieldValueRequired", "FieldValueForbidden", "FieldValueDuplicate"
MANY, LONG, NSUP, NFOUND = "FieldValueTooMany", "FieldValueTooLong", "FieldValueNotSupported", "FieldValueNotFound"
R0 = "spec.devices.requests[0]"
EX = R0 + ".exactly"
ALPHA_OFF = FeatureGates({"DRAConsumableCapacity": False})
FRACTIONAL_ON = FeatureGates({"DRAFractionalCapacityRange": True})


# --- builders ---


def exact(class_name: str = "foo", **extra: Any) -> dict:
    return {"deviceClassName": class_name, "allocationMode": "ExactCount", "count": 1, **extra}


def claim(requests: list | None = None, **devices: Any) -> dict:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
            "metadata": {"name": "foo", "namespace": "ns"},
            "spec": {"devices": {"requests": requests if requests is not None
                                 else [{"name": "foo", "exactly": exact()}], **devices}}}


def first_available_claim(**devices: Any) -> dict:
    return claim([{"name": "foo", "firstAvailable": [
        {"name": "foo", "deviceClassName": "foo", "allocationMode": "ExactCount", "count": 1},
        {"name": "bar", "deviceClassName": "foo", "allocationMode": "ExactCount", "count": 1}]}], **devices)


def opaque(driver: str = "dra.example.com", **params: Any) -> dict:
    return {"opaque": {"driver": driver, "parameters": params or {"kind": "foo", "apiVersion": "dra.example.com/v1"}}}


def with_(obj: dict, fn: Callable[[dict], Any]) -> dict:
    obj = copy.deepcopy(obj)
    fn(obj)
    return obj


def ex(**fields: Any) -> dict:
    """A claim whose single exactly request carries `fields` in addition to the basics."""
    return claim([{"name": "foo", "exactly": exact(**fields)}])


def result(request: str = "foo", device: str = "dev-0", **extra: Any) -> dict:
    return {"request": request, "driver": "dra.example.com", "pool": "pool", "device": device, **extra}


def allocated(results: list | None = None, *, reserved: list | None = None, devices: list | None = None,
              config: list | None = None, node_selector: dict | None = None, base: dict | None = None) -> dict:
    obj = copy.deepcopy(base or claim())
    allocation: dict = {"devices": {"results": results if results is not None else [result()]}}
    if config is not None:
        allocation["devices"]["config"] = config
    if node_selector is not None:
        allocation["nodeSelector"] = node_selector
    obj["status"] = {"allocation": allocation}
    if reserved is not None:
        obj["status"]["reservedFor"] = reserved
    if devices is not None:
        obj["status"]["devices"] = devices
    return obj


def consumer(uid: str = UID, **extra: Any) -> dict:
    return {"resource": "pods", "name": "foo", "uid": uid, **extra}


def claim_status(new: dict, old: dict | None = None) -> list:
    return validate_resource_claim_status_update(new, old if old is not None else claim())


def device(name: str = "device-0", **extra: Any) -> dict:
    d = {"name": name,
         "attributes": {"int": {"int": 42}, "string": {"string": "hello world"}, "version": {"version": "1.2.3"},
                        "bool": {"bool": True}},
         "capacity": {"memory": {"value": "1Gi"}}}
    d.update(extra)
    return d


def rslice(devices: list | None = None, num: int = 1, **spec: Any) -> dict:
    s = {"driver": "test.example.com", "pool": {"name": "foo", "resourceSliceCount": 1, "generation": 0},
         "nodeName": "worker"}
    s.update(spec)
    s = {k: v for k, v in s.items() if v is not None}
    s["devices"] = devices if devices is not None else [device(f"device-{i}") for i in range(num)]
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": "foo"}, "spec": s}


def per_device_slice(*devices: dict) -> dict:
    return rslice(list(devices), nodeName=None, perDeviceNodeSelection=True)


def counters_slice(**spec: Any) -> dict:
    s = rslice(nodeName=None, allNodes=True, **spec)
    del s["spec"]["devices"]
    s["spec"]["sharedCounters"] = spec.get(
        "sharedCounters", [{"name": "gpu-0", "counters": {"memory": {"value": "8Gi"}}}])
    return s


def capacity_slice(capacity: dict, allow_multiple: bool = True) -> dict:
    d = device(capacity={"cap": capacity})
    if allow_multiple:
        d["allowMultipleAllocations"] = True
    return rslice([d])


def policy(value: str, default: str | None = None, valid_values: list | None = None,
           valid_range: dict | None = None) -> dict:
    p: dict = {}
    if default is not None:
        p["default"] = default
    if valid_values is not None:
        p["validValues"] = valid_values
    if valid_range is not None:
        p["validRange"] = valid_range
    return {"value": value, "requestPolicy": p}


def device_class(**spec: Any) -> dict:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": "foo"}, "spec": spec}


def template(spec_devices: dict | None = None, meta: dict | None = None) -> dict:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
            "metadata": {"name": "foo", "namespace": "ns"},
            "spec": {**({"metadata": meta} if meta is not None else {}),
                     "spec": {"devices": spec_devices if spec_devices is not None else claim()["spec"]["devices"]}}}


def taint_rule(taint: dict | None = None, selector: dict | None = None) -> dict:
    spec: dict = {"taint": taint if taint is not None else {"key": "example.com/taint", "value": "x",
                                                            "effect": "NoExecute"}}
    if selector is not None:
        spec["deviceSelector"] = selector
    return {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceTaintRule", "metadata": {"name": "foo"}, "spec": spec}


def condition(ctype: str = "Ready", **extra: Any) -> dict:
    return {"type": ctype, "status": "True", "reason": "Done", "message": "",
            "lastTransitionTime": "2025-01-01T00:00:00Z", **extra}


def pod(claims: list | None = None, containers: list | None = None, status: dict | None = None,
        **spec: Any) -> dict:
    p = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "pod", "namespace": "ns"},
         "spec": {"containers": containers if containers is not None else
                  [{"name": "ctr", "image": "busybox", "resources": {"claims": [{"name": "my-claim"}]}}],
                  "resourceClaims": claims if claims is not None else
                  [{"name": "my-claim", "resourceClaimName": "claim"},
                   {"name": "my-template", "resourceClaimTemplateName": "template"}], **spec}}
    if status is not None:
        p["status"] = status
    return p


def ctr(*claims: dict, name: str = "ctr", requests: dict | None = None) -> dict:
    c: dict = {"name": name, "image": "busybox", "resources": {"claims": list(claims)}}
    if requests is not None:
        c["resources"]["requests"] = requests
    return c


def ext_status(*mappings: dict, claim_name: str = "pod-extended-resources-x") -> dict:
    return {"extendedResourceClaimStatus": {"requestMappings": list(mappings), "resourceClaimName": claim_name}}


def mapping(container: str = "ctr", resource: str = "example.com/gpu", request: str = "container-0-request-0"
            ) -> dict:
    return {"containerName": container, "resourceName": resource, "requestName": request}


GPU_CTR = [ctr(requests={"example.com/gpu": "1"})]


# --- the table ---

CASES: list[tuple[str, Callable[[], list], list[tuple]]] = []


def case(name: str, fn: Callable[[], list], *want: tuple) -> None:
    CASES.append((name, fn, list(want)))


# ResourceClaim: create
case("claim/valid", lambda: validate_resource_claim(claim()))
case("claim/valid-first-available", lambda: validate_resource_claim(first_available_claim()))
case("claim/valid-empty", lambda: validate_resource_claim(claim([])))
case("claim/valid-full", lambda: validate_resource_claim(claim(
    [{"name": "foo", "exactly": exact(selectors=[{"cel": {"expression": 'device.driver == "dra.example.com"'}}],
                                      tolerations=[{"key": "example.com/x", "operator": "Equal", "value": "y",
                                                    "effect": "NoSchedule", "tolerationSeconds": 5}],
                                      adminAccess=True)},
     {"name": "bar", "exactly": exact(allocationMode="All", count=None)}],
    constraints=[{"requests": ["foo", "bar"], "matchAttribute": "dra.example.com/numa"},
                 {"distinctAttribute": "dra.example.com/nic"}],
    config=[{"requests": ["foo"], **opaque()}, opaque()])))
case("claim/missing-classname", lambda: validate_resource_claim(ex(deviceClassName="")),
     (EX + ".deviceClassName", REQ, "Required value"))
case("claim/bad-classname", lambda: validate_resource_claim(ex(deviceClassName=BAD_NAME)),
     (EX + ".deviceClassName", INV, f'Invalid value: "{BAD_NAME}": {SUBDOMAIN_MSG}'))
case("claim/long-classname", lambda: validate_resource_claim(ex(deviceClassName="a" * 254)),
     (EX + ".deviceClassName", INV, f'Invalid value: "{"a" * 254}": must be no more than 253 characters'))
case("claim/bad-request-name", lambda: validate_resource_claim(claim([{"name": BAD_NAME, "exactly": exact()}])),
     (R0 + ".name", INV, f'Invalid value: "{BAD_NAME}": {LABEL_MSG}'))
case("claim/empty-request-name", lambda: validate_resource_claim(claim([{"name": "", "exactly": exact()}])),
     (R0 + ".name", INV, f'Invalid value: "": {LABEL_MSG}'))
case("claim/duplicate-request", lambda: validate_resource_claim(claim(
    [{"name": "foo", "exactly": exact()}, {"name": "foo", "exactly": exact()}])),
    ("spec.devices.requests[1]", DUP, 'Duplicate value: "foo"'))
case("claim/no-request-type", lambda: validate_resource_claim(claim([{"name": "foo"}])),
     (R0, REQ, "Required value: exactly one of `exactly` or `firstAvailable` is required"))
case("claim/both-request-types", lambda: validate_resource_claim(with_(first_available_claim(), lambda o: o[
    "spec"]["devices"]["requests"][0].update(exactly=exact()))),
    (R0, INV, ("Invalid value: null: exactly one of `exactly` or `firstAvailable` is required, but multiple fields "
              "are set")))
case("claim/too-many-requests", lambda: validate_resource_claim(claim(
    [{"name": f"r{i}", "exactly": exact(deviceClassName=BAD_NAME)} for i in range(33)])),
    ("spec.devices.requests", MANY, "Too many: 33: must have at most 32 items"))
case("claim/max-requests", lambda: validate_resource_claim(claim(
    [{"name": f"r{i}", "exactly": exact()} for i in range(32)])))
case("claim/too-many-subrequests", lambda: validate_resource_claim(claim([{"name": "foo", "firstAvailable": [
    {"name": f"s{i}", "deviceClassName": "foo", "allocationMode": "ExactCount", "count": 1} for i in range(9)]}])),
    (R0 + ".firstAvailable", MANY, "Too many: 9: must have at most 8 items"))
case("claim/duplicate-subrequest", lambda: validate_resource_claim(with_(first_available_claim(), lambda o: o[
    "spec"]["devices"]["requests"][0]["firstAvailable"][1].update(name="foo"))),
    (R0 + ".firstAvailable[1]", DUP, 'Duplicate value: "foo"'))
case("claim/bad-subrequest", lambda: validate_resource_claim(with_(first_available_claim(), lambda o: o[
    "spec"]["devices"]["requests"][0]["firstAvailable"][0].update(name=BAD_NAME, deviceClassName=""))),
    (R0 + ".firstAvailable[0].name", INV, f'Invalid value: "{BAD_NAME}": {LABEL_MSG}'),
    (R0 + ".firstAvailable[0].deviceClassName", REQ))
case("claim/subrequest-count", lambda: validate_resource_claim(with_(first_available_claim(), lambda o: o[
    "spec"]["devices"]["requests"][0]["firstAvailable"][1].update(count=0))),
    (R0 + ".firstAvailable[1].count", INV, "Invalid value: 0: must be greater than zero"))
case("claim/all-with-count", lambda: validate_resource_claim(ex(allocationMode="All", count=2)),
     (EX + ".count", INV, "Invalid value: 2: must not be specified when allocationMode is 'All'"))
case("claim/exact-count-zero", lambda: validate_resource_claim(ex(count=0)),
     (EX + ".count", INV, "Invalid value: 0: must be greater than zero"))
case("claim/exact-count-negative", lambda: validate_resource_claim(ex(count=-1)),
     (EX + ".count", INV, "Invalid value: -1: must be greater than zero"))
case("claim/bad-allocation-mode", lambda: validate_resource_claim(ex(allocationMode="Some")),
     (EX + ".allocationMode", NSUP, 'Unsupported value: "Some": supported values: "All", "ExactCount"'))
case("claim/too-many-selectors", lambda: validate_resource_claim(ex(
    selectors=[{"cel": {"expression": "true"}}] * 33)),
    (EX + ".selectors", MANY, "Too many: 33: must have at most 32 items"))
case("claim/selector-without-cel", lambda: validate_resource_claim(ex(selectors=[{}])),
     (EX + ".selectors[0].cel", REQ, "Required value"))
case("claim/cel-too-long", lambda: validate_resource_claim(ex(selectors=[{"cel": {"expression": "x" * 10241}}])),
     (EX + ".selectors[0].cel.expression", LONG, "Too long: may not be more than 10240 bytes"))
case("claim/cel-max-length", lambda: validate_resource_claim(ex(selectors=[{"cel": {
    "expression": 'device.driver == "' + "x" * (10240 - 19) + '"'}}])))
case("claim/constraint-without-attribute", lambda: validate_resource_claim(claim(constraints=[{}])),
     ("spec.devices.constraints[0]", REQ, ('Required value: exactly one of "matchAttribute" or "distinctAttribute" '
                                          'is required, but multiple fields are set')))
case("claim/constraint-without-attribute-no-consumable-capacity",
     lambda: validate_resource_claim(claim(constraints=[{}]), gates=ALPHA_OFF),
     ("spec.devices.constraints[0].matchAttribute", REQ, "Required value"))
case("claim/match-attribute-missing-domain", lambda: validate_resource_claim(claim(
    constraints=[{"matchAttribute": "missing-domain"}])),
    ("spec.devices.constraints[0].matchAttribute", INV, f'Invalid value: "missing-domain": {C_IDENT_MSG}'),
    ("spec.devices.constraints[0].matchAttribute", INV, f'Invalid value: "missing-domain": {FQN_MSG}'))
case("claim/match-attribute-empty", lambda: validate_resource_claim(claim(constraints=[{"matchAttribute": ""}])),
     ("spec.devices.constraints[0].matchAttribute", INV, f'Invalid value: "": {C_IDENT_MSG}'),
     ("spec.devices.constraints[0].matchAttribute", INV, f'Invalid value: "": {FQN_MSG}'))
case("claim/match-attribute-empty-domain", lambda: validate_resource_claim(claim(
    constraints=[{"matchAttribute": "/numa"}])),
    ("spec.devices.constraints[0].matchAttribute", INV, 'Invalid value: "": the domain must not be empty'))
case("claim/match-attribute-empty-name", lambda: validate_resource_claim(claim(
    constraints=[{"matchAttribute": "dra.example.com/"}])),
    ("spec.devices.constraints[0].matchAttribute", INV, 'Invalid value: "": the name must not be empty'))
case("claim/match-attribute-bad-domain", lambda: validate_resource_claim(claim(
    constraints=[{"matchAttribute": "bad_domain/numa"}])),
    ("spec.devices.constraints[0].matchAttribute", INV, f'Invalid value: "bad_domain": {SUBDOMAIN_MSG}'))
case("claim/match-attribute-long-domain", lambda: validate_resource_claim(claim(
    constraints=[{"matchAttribute": "a" * 64 + "/numa"}])),
    ("spec.devices.constraints[0].matchAttribute", LONG, "Too long: may not be more than 63 bytes"))
case("claim/match-attribute-long-id", lambda: validate_resource_claim(claim(
    constraints=[{"matchAttribute": "dra.example.com/" + "a" * 33}])),
    ("spec.devices.constraints[0].matchAttribute", LONG, "Too long: may not be more than 32 bytes"))
case("claim/match-attribute-max-id", lambda: validate_resource_claim(claim(
    constraints=[{"matchAttribute": "dra.example.com/" + "a" * 32}])))
case("claim/match-attribute-two-slashes", lambda: validate_resource_claim(claim(
    constraints=[{"matchAttribute": "a/b/c"}])),
    ("spec.devices.constraints[0].matchAttribute", INV, ('Invalid value: "a/b/c": must not contain more than one '
                                                        'slash')))
case("claim/distinct-attribute-bad", lambda: validate_resource_claim(claim(
    constraints=[{"distinctAttribute": "nic"}])),
    ("spec.devices.constraints[0].distinctAttribute", INV, f'Invalid value: "nic": {FQN_MSG}'))
case("claim/constraint-unknown-request", lambda: validate_resource_claim(claim(
    constraints=[{"requests": ["bar"], "matchAttribute": "dra.example.com/numa"}])),
    ("spec.devices.constraints[0].requests[0]", INV, f'Invalid value: "bar": {REF_MSG}'))
case("claim/constraint-bad-request", lambda: validate_resource_claim(claim(
    constraints=[{"requests": ["foo", BAD_NAME], "matchAttribute": "dra.example.com/numa"}])),
    ("spec.devices.constraints[0].requests[1]", INV, f'Invalid value: "{BAD_NAME}": {LABEL_MSG}'),
    ("spec.devices.constraints[0].requests[1]", INV, f'Invalid value: "{BAD_NAME}": {REF_MSG}'))
case("claim/constraint-bad-request-format", lambda: validate_resource_claim(claim(
    constraints=[{"requests": ["foo/foo/foo"], "matchAttribute": "dra.example.com/numa"}])),
    ("spec.devices.constraints[0].requests[0]", INV, f'Invalid value: "foo/foo/foo": {REF_MSG}'))
case("claim/constraint-subrequest", lambda: validate_resource_claim(first_available_claim(
    constraints=[{"requests": ["foo/bar", "foo"], "matchAttribute": "dra.example.com/numa"}])))
case("claim/constraint-unknown-subrequest", lambda: validate_resource_claim(first_available_claim(
    constraints=[{"requests": ["foo/baz"], "matchAttribute": "dra.example.com/numa"}])),
    ("spec.devices.constraints[0].requests[0]", INV, f'Invalid value: "foo/baz": {REF_MSG}'))
case("claim/constraint-subrequest-of-exact", lambda: validate_resource_claim(claim(
    constraints=[{"requests": ["foo/foo"], "matchAttribute": "dra.example.com/numa"}])),
    ("spec.devices.constraints[0].requests[0]", INV, f'Invalid value: "foo/foo": {REF_MSG}'))
case("claim/constraint-duplicate-request", lambda: validate_resource_claim(claim(
    constraints=[{"requests": ["foo", "foo"], "matchAttribute": "dra.example.com/numa"}])),
    ("spec.devices.constraints[0].requests[1]", DUP, 'Duplicate value: "foo"'))
case("claim/too-many-constraints", lambda: validate_resource_claim(claim(
    constraints=[{"matchAttribute": "foo/bar"}] * 33)),
    ("spec.devices.constraints", MANY, "Too many: 33: must have at most 32 items"))
case("claim/max-constraints-and-config", lambda: validate_resource_claim(claim(
    constraints=[{"matchAttribute": "foo/bar"}] * 32, config=[opaque()] * 32)))
case("claim/too-many-configs", lambda: validate_resource_claim(claim(config=[opaque()] * 33)),
     ("spec.devices.config", MANY, "Too many: 33: must have at most 32 items"))
case("claim/config-without-opaque", lambda: validate_resource_claim(claim(config=[{"requests": ["foo"]}])),
     ("spec.devices.config[0].opaque", REQ, "Required value"))
case("claim/config-unknown-request", lambda: validate_resource_claim(claim(config=[{"requests": ["bar"], **opaque()}])),
     ("spec.devices.config[0].requests[0]", INV, f'Invalid value: "bar": {REF_MSG}'))
case("claim/config-bad-driver", lambda: validate_resource_claim(claim(config=[opaque(BAD_NAME)])),
     ("spec.devices.config[0].opaque.driver", INV, f'Invalid value: "{BAD_NAME}": {SUBDOMAIN_MSG}'))
case("claim/config-empty-driver", lambda: validate_resource_claim(claim(config=[opaque("")])),
     ("spec.devices.config[0].opaque.driver", REQ, "Required value"),
     ("spec.devices.config[0].opaque.driver", INV, f'Invalid value: "": {SUBDOMAIN_MSG}'))
case("claim/config-long-driver", lambda: validate_resource_claim(claim(config=[opaque("a" * 64)])),
     ("spec.devices.config[0].opaque.driver", LONG, "Too long: may not be more than 63 bytes"))
case("claim/config-uppercase-driver", lambda: validate_resource_claim(claim(config=[opaque("DRA.Example.COM")])))
case("claim/config-missing-parameters", lambda: validate_resource_claim(claim(config=[
    {"opaque": {"driver": "dra.example.com"}}])),
    ("spec.devices.config[0].opaque.parameters", REQ, "Required value"))
case("claim/config-null-parameters", lambda: validate_resource_claim(claim(config=[
    {"opaque": {"driver": "dra.example.com", "parameters": None}}])),
    ("spec.devices.config[0].opaque.parameters", REQ))
case("claim/config-array-parameters", lambda: validate_resource_claim(claim(config=[
    {"opaque": {"driver": "dra.example.com", "parameters": [1, 2]}}])),
    ("spec.devices.config[0].opaque.parameters", INV, ('Invalid value: "<value omitted>": must be a valid JSON '
                                                      'object')))
case("claim/config-string-parameters", lambda: validate_resource_claim(claim(config=[
    {"opaque": {"driver": "dra.example.com", "parameters": "x"}}])),
    ("spec.devices.config[0].opaque.parameters", INV))
case("claim/config-large-parameters", lambda: validate_resource_claim(claim(config=[
    {"opaque": {"driver": "dra.example.com", "parameters": {"x": "y" * 10240}}}])),
    ("spec.devices.config[0].opaque.parameters", LONG, "Too long: may not be more than 10240 bytes"))
case("claim/config-max-parameters", lambda: validate_resource_claim(claim(config=[
    {"opaque": {"driver": "dra.example.com", "parameters": {"x": "y" * (10240 - 8)}}}])))
case("claim/toleration-bad-key", lambda: validate_resource_claim(ex(tolerations=[
    {"key": BAD_NAME, "operator": "Exists"}])),
    (EX + ".tolerations[0].key", INV, f'Invalid value: "{BAD_NAME}": {NAME_PART_MSG}'))
case("claim/toleration-exists-with-value", lambda: validate_resource_claim(ex(tolerations=[
    {"key": "a", "operator": "Exists", "value": "b"}])),
    (EX + ".tolerations[0].value", INV, 'Invalid value: "b": must be empty for operator `Exists`'))
case("claim/toleration-bad-value", lambda: validate_resource_claim(ex(tolerations=[
    {"key": "a", "operator": "Equal", "value": "a b"}])),
    (EX + ".tolerations[0].value", INV, f'Invalid value: "a b": {LABEL_VALUE_MSG}'))
case("claim/toleration-bad-operator", lambda: validate_resource_claim(ex(tolerations=[
    {"key": "a", "operator": "In"}])),
    (EX + ".tolerations[0].operator", NSUP, 'Unsupported value: "In": supported values: "Equal", "Exists"'))
case("claim/toleration-missing-operator", lambda: validate_resource_claim(ex(tolerations=[{"key": "a"}])),
     (EX + ".tolerations[0].operator", REQ))
case("claim/toleration-bad-effect", lambda: validate_resource_claim(ex(tolerations=[
    {"operator": "Exists", "effect": "PreferNoSchedule"}])),
    (EX + ".tolerations[0].effect", NSUP, ('Unsupported value: "PreferNoSchedule": supported values: "NoExecute", '
                                          '"NoSchedule", "None"')))
case("claim/toleration-match-all", lambda: validate_resource_claim(ex(tolerations=[{"operator": "Exists"}])))
case("claim/subrequest-toleration", lambda: validate_resource_claim(with_(first_available_claim(), lambda o: o[
    "spec"]["devices"]["requests"][0]["firstAvailable"][0].update(tolerations=[{"operator": "Equal",
                                                                                "effect": "Bad"}]))),
    (R0 + ".firstAvailable[0].tolerations[0].effect", NSUP))
case("claim/derived-attribute-valid", lambda: validate_resource_claim(claim(
    [{"name": "foo", "exactly": exact(derivedAttributes=[{"name": "derived/numa", "expression": "1"}])}],
    constraints=[{"matchAttribute": "derived/numa"}])))
case("claim/derived-attribute-for-subrequest", lambda: validate_resource_claim(with_(first_available_claim(
    constraints=[{"requests": ["foo"], "matchAttribute": "derived/numa"}]), lambda o: o["spec"]["devices"][
    "requests"][0]["firstAvailable"][1].update(derivedAttributes=[{"name": "derived/numa", "expression": "1"}]))))
case("claim/derived-attribute-unused", lambda: validate_resource_claim(claim(
    [{"name": "foo", "exactly": exact(derivedAttributes=[{"name": "derived/numa", "expression": "1"}])}],
    constraints=[{"requests": ["foo"], "matchAttribute": "derived/other"}])),
    (EX + ".derivedAttributes[0].name", INV, ('Invalid value: "derived/numa": must be referenced by at least one '
                                             'matchAttribute or distinctAttribute constraint targeting this request')))
case("claim/derived-attribute-missing-fields", lambda: validate_resource_claim(ex(derivedAttributes=[{}])),
     (EX + ".derivedAttributes[0].name", REQ), (EX + ".derivedAttributes[0].expression", REQ))
case("claim/derived-attribute-bad-name", lambda: validate_resource_claim(claim(
    [{"name": "foo", "exactly": exact(derivedAttributes=[{"name": "numa", "expression": "1"}])}],
    constraints=[{"matchAttribute": "dra.example.com/x"}])),
    (EX + ".derivedAttributes[0].name", INV, f'Invalid value: "numa": {FQN_MSG}'),
    (EX + ".derivedAttributes[0].name", INV))
case("claim/derived-attribute-duplicate", lambda: validate_resource_claim(claim(
    [{"name": "foo", "exactly": exact(derivedAttributes=[{"name": "d/x", "expression": "1"}] * 2)}],
    constraints=[{"matchAttribute": "d/x"}])),
    (EX + ".derivedAttributes[1]", DUP, 'Duplicate value: "d/x"'))
case("claim/derived-attribute-too-many", lambda: validate_resource_claim(ex(
    derivedAttributes=[{"name": f"d/x{i}", "expression": "1"} for i in range(33)])),
    (EX + ".derivedAttributes", MANY, "Too many: 33: must have at most 32 items"))

# ResourceClaim: update
case("claim-update/unchanged", lambda: validate_resource_claim_update(claim(), claim()))
case("claim-update/spec-changed", lambda: validate_resource_claim_update(ex(count=2), claim()),
     ("spec", INV))
case("claim-update/metadata-only", lambda: validate_resource_claim_update(
    with_(claim(), lambda o: o["metadata"].update(labels={"a": "b"})), claim()))

# ResourceClaim: status update
case("status/valid-allocation", lambda: claim_status(allocated(reserved=[consumer()], config=[
    {"source": "FromClaim", "requests": ["foo"], **opaque()}, {"source": "FromClass", **opaque()}],
    node_selector={"nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In",
                                                           "values": ["worker"]}]}]})))
case("status/valid-empty", lambda: claim_status(claim()))
case("status/result-unknown-request", lambda: claim_status(allocated([result("bar")])),
     ("status.allocation.devices.results[0].request", INV, f'Invalid value: "bar": {REF_MSG}'))
case("status/result-subrequest", lambda: claim_status(allocated([result("foo/bar")], base=first_available_claim())))
case("status/result-subrequest-unknown", lambda: claim_status(allocated([result("foo/baz")],
                                                                         base=first_available_claim())),
     ("status.allocation.devices.results[0].request", INV))
case("status/result-bad-names", lambda: claim_status(allocated([result(driver=BAD_NAME, pool="", device=BAD_NAME)])),
     ("status.allocation.devices.results[0].driver", INV),
     ("status.allocation.devices.results[0].pool", REQ),
     ("status.allocation.devices.results[0].device", INV, f'Invalid value: "{BAD_NAME}": {LABEL_MSG}'))
case("status/too-many-results", lambda: claim_status(allocated([result()] * 33)),
     ("status.allocation.devices.results", MANY, "Too many: 33: must have at most 32 items"))
case("status/too-many-configs", lambda: claim_status(allocated(config=[{"source": "FromClass", **opaque()}] * 65)),
     ("status.allocation.devices.config", MANY, "Too many: 65: must have at most 64 items"))
case("status/config-source", lambda: claim_status(allocated(config=[opaque(), {"source": "FromPod", **opaque()}])),
     ("status.allocation.devices.config[0].source", REQ),
     ("status.allocation.devices.config[1].source", NSUP, ('Unsupported value: "FromPod": supported values: '
                                                          '"FromClaim", "FromClass"')))
case("status/config-bad-opaque", lambda: claim_status(allocated(config=[{"source": "FromClass",
                                                                         "opaque": {"driver": "d.example.com"}}])),
     ("status.allocation.devices.config[0].opaque.parameters", REQ))
case("status/reserved-without-allocation", lambda: claim_status(with_(claim(), lambda o: o.update(
    status={"reservedFor": [consumer()]}))),
    ("status.reservedFor", FORB, "Forbidden: may not be specified when `allocated` is not set"))
case("status/reserved-duplicate-uid", lambda: claim_status(allocated(reserved=[consumer(), consumer(name="bar")])),
     ("status.reservedFor[1]", DUP, f'Duplicate value: "{UID}"'))
case("status/reserved-missing-fields", lambda: claim_status(allocated(reserved=[{}])),
     ("status.reservedFor[0].resource", REQ), ("status.reservedFor[0].name", REQ), ("status.reservedFor[0].uid", REQ))
case("status/reserved-max", lambda: claim_status(allocated(reserved=[
    consumer(f"{i:08d}-2ead-46d9-b8b4-4e0fbeb7455d") for i in range(256)])))
case("status/reserved-too-many", lambda: claim_status(allocated(reserved=[
    consumer(f"{i:08d}-2ead-46d9-b8b4-4e0fbeb7455d") for i in range(257)])),
    ("status.reservedFor", MANY, "Too many: 257: must have at most 256 items"))
case("status/reserved-added-while-deleting", lambda: claim_status(
    with_(allocated(reserved=[consumer(), consumer(UID2)]), lambda o: o["metadata"].update(
        deletionTimestamp="2025-01-01T00:00:00Z")), allocated(reserved=[consumer()])),
    ("status.reservedFor", FORB, ("Forbidden: new entries may not be added while `deallocationRequested` or "
                                 "`deletionTimestamp` are set")))
case("status/reserved-removed-while-deleting", lambda: claim_status(
    with_(allocated(reserved=[consumer()]), lambda o: o["metadata"].update(deletionTimestamp="2025-01-01T00:00:00Z")),
    allocated(reserved=[consumer(), consumer(UID2)])))
case("status/allocation-immutable", lambda: claim_status(allocated([result(device="dev-1")]), allocated()),
     ("status.allocation", INV))
case("status/allocation-unchanged-not-revalidated", lambda: claim_status(
    allocated([result("gone")], reserved=[consumer()]), allocated([result("gone")])))
case("status/allocation-cleared", lambda: claim_status(claim(), allocated()))
case("status/device-not-allocated", lambda: claim_status(allocated(devices=[
    {"driver": "dra.example.com", "pool": "pool", "device": "dev-9"}])),
    ("status.devices[0]", INV, "Invalid value: dra.example.com/pool/dev-9: must be an allocated device in the claim"))
case("status/device-status-valid", lambda: claim_status(allocated(
    [result(), result(shareID=UID)],
    devices=[{"driver": "dra.example.com", "pool": "pool", "device": "dev-0", "conditions": [condition()],
              "data": {"a": 1}, "networkData": {"interfaceName": "eth0", "hardwareAddress": "ea:9f:cb:40:b1:7b",
                                                "ips": ["10.9.8.0/24", "2001:db8::/64"]}},
             {"driver": "dra.example.com", "pool": "pool", "device": "dev-0", "shareID": UID}])))
case("status/device-duplicate", lambda: claim_status(allocated(devices=[
    {"driver": "dra.example.com", "pool": "pool", "device": "dev-0"}] * 2)),
    ("status.devices[1]", DUP, "Duplicate value: dra.example.com/pool/dev-0"))
case("status/device-share-id-must-match", lambda: claim_status(allocated(devices=[
    {"driver": "dra.example.com", "pool": "pool", "device": "dev-0", "shareID": UID}])),
    ("status.devices[0]", INV, (f"Invalid value: dra.example.com/pool/dev-0/{UID}: must be an allocated device in "
                               "the claim")))
case("status/device-bad-share-id", lambda: claim_status(allocated([result(shareID="nope")])),
     ("status.allocation.devices.results[0].shareID", INV, ('Invalid value: "nope": error validating uid: invalid '
                                                           'UUID length: 4')))
case("status/device-uppercase-share-id", lambda: claim_status(allocated([result(shareID=UID.upper())])),
     ("status.allocation.devices.results[0].shareID", INV))
case("status/device-too-many-conditions", lambda: claim_status(allocated(devices=[
    {"driver": "dra.example.com", "pool": "pool", "device": "dev-0",
     "conditions": [condition(f"C{i}") for i in range(9)]}])),
    ("status.devices[0].conditions", MANY, "Too many: 9: must have at most 8 items"))
case("status/device-bad-condition", lambda: claim_status(allocated(devices=[
    {"driver": "dra.example.com", "pool": "pool", "device": "dev-0",
     "conditions": [condition(status="Maybe", reason=""), condition()]}])),
    ("status.devices[0].conditions[0].status", NSUP, ('Unsupported value: "Maybe": supported values: "False", '
                                                     '"True", "Unknown"')),
    ("status.devices[0].conditions[0].reason", REQ, "Required value: must be set"),
    ("status.devices[0].conditions[1].type", DUP))
case("status/device-bad-data", lambda: claim_status(allocated(devices=[
    {"driver": "dra.example.com", "pool": "pool", "device": "dev-0", "data": [1]}])),
    ("status.devices[0].data", INV))
case("status/device-large-data", lambda: claim_status(allocated(devices=[
    {"driver": "dra.example.com", "pool": "pool", "device": "dev-0", "data": {"x": "y" * 10240}}])),
    ("status.devices[0].data", LONG, "Too long: may not be more than 10240 bytes"))
case("status/network-data", lambda: claim_status(allocated(devices=[
    {"driver": "dra.example.com", "pool": "pool", "device": "dev-0",
     "networkData": {"interfaceName": "x" * 257, "hardwareAddress": "x" * 129,
                     "ips": ["300.0.0.1/24", "10.9.8.7/24", "2001:db8::/64", "2001:db8::/64"]}}])),
    ("status.devices[0].networkData.interfaceName", LONG, "Too long: may not be more than 256 bytes"),
    ("status.devices[0].networkData.hardwareAddress", LONG, "Too long: may not be more than 128 bytes"),
    ("status.devices[0].networkData.ips[0]", INV, ('Invalid value: "300.0.0.1/24": must be a valid address in CIDR '
                                                  'form, (e.g. 10.9.8.7/24 or 2001:db8::1/64)')),
    ("status.devices[0].networkData.ips[3]", DUP))
case("status/network-data-too-many-ips", lambda: claim_status(allocated(devices=[
    {"driver": "dra.example.com", "pool": "pool", "device": "dev-0",
     "networkData": {"ips": [f"10.0.0.{i}/24" for i in range(17)]}}])),
    ("status.devices[0].networkData.ips", MANY, "Too many: 17: must have at most 16 items"))
case("status/result-binding-conditions", lambda: claim_status(allocated([result(bindingConditions=["a"])])),
     ("status.allocation.devices.results[0].bindingFailureConditions", INV,
      "Invalid value: []string(nil): bindingFailureConditions are required to use bindingConditions"))
case("status/result-tolerations", lambda: claim_status(allocated([result(tolerations=[{"operator": "Exists",
                                                                                        "value": "x"}])])),
     ("status.allocation.devices.results[0].tolerations[0].value", INV))
case("status/allocation-node-selector", lambda: claim_status(allocated(node_selector={"nodeSelectorTerms": []})),
     ("status.allocation.nodeSelector.nodeSelectorTerms", REQ, ("Required value: must have at least one node "
                                                               "selector term")))
case("status/result-skip-node-operations", lambda: claim_status(allocated([
    result(skipNodeOperations=["NodePrepareResources", "Other"])])),
    ("status.allocation.devices.results[0].skipNodeOperations[1]", NSUP),
    ("status.allocation.devices.results[0].skipNodeOperations", INV))

# ResourceClaimTemplate
case("template/valid", lambda: validate_resource_claim_template(template(meta={"labels": {"a": "b"},
                                                                                "annotations": {"c": "d"}})))
case("template/forbidden-meta", lambda: validate_resource_claim_template(template(meta={
    "name": "x", "namespace": "y", "uid": UID, "finalizers": ["a/b"], "creationTimestamp": None})),
    ("spec.metadata.name", FORB, "Forbidden: cannot be set for a template"),
    ("spec.metadata.namespace", FORB), ("spec.metadata.uID", FORB), ("spec.metadata.finalizers", FORB))
case("template/bad-labels", lambda: validate_resource_claim_template(template(meta={"labels": {"a": "b c"}})),
     ("spec.metadata.labels", INV, f'Invalid value: "b c": {LABEL_VALUE_MSG}'))
case("template/bad-annotations", lambda: validate_resource_claim_template(template(meta={
    "annotations": {BAD_NAME: "x"}})),
    ("spec.metadata.annotations", INV, f'Invalid value: "{BAD_NAME}": {NAME_PART_MSG}'))
case("template/bad-spec", lambda: validate_resource_claim_template(template(
    {"requests": [{"name": "foo", "exactly": exact("")}]})),
    ("spec.spec.devices.requests[0].exactly.deviceClassName", REQ))
case("template/bad-constraint", lambda: validate_resource_claim_template(template(
    {"requests": [], "constraints": [{"matchAttribute": "x"}]})),
    ("spec.spec.devices.constraints[0].matchAttribute", INV))
case("template-update/unchanged", lambda: validate_resource_claim_template_update(template(), template()))
case("template-update/changed", lambda: validate_resource_claim_template_update(
    template(meta={"labels": {"a": "b"}}), template()),
    ("spec", INV))

# DeviceClass
case("class/valid", lambda: validate_device_class(device_class(
    selectors=[{"cel": {"expression": "true"}}], config=[opaque()], extendedResourceName="example.com/gpu")))
case("class/valid-empty", lambda: validate_device_class(device_class()))
case("class/too-many-selectors", lambda: validate_device_class(device_class(selectors=[{}] * 33)),
     ("spec.selectors", MANY, "Too many: 33: must have at most 32 items"))
case("class/selector-without-cel", lambda: validate_device_class(device_class(selectors=[{}])),
     ("spec.selectors[0].cel", REQ))
case("class/cel-too-long",
     lambda: validate_device_class(device_class(selectors=[{"cel": {"expression": "x" * 10241}}])),
     ("spec.selectors[0].cel.expression", LONG))
case("class/too-many-configs", lambda: validate_device_class(device_class(config=[opaque()] * 33)),
     ("spec.config", MANY, "Too many: 33: must have at most 32 items"))
case("class/config-without-opaque", lambda: validate_device_class(device_class(config=[{}])),
     ("spec.config[0].opaque", REQ))
case("class/config-bad-parameters", lambda: validate_device_class(device_class(config=[
    {"opaque": {"driver": "dra.example.com", "parameters": 1}}])),
    ("spec.config[0].opaque.parameters", INV))
for _name in ("gpu", "kubernetes.io/gpu", "requests.example.com/gpu", "example.com/", "example.com/a b",
              "example.com/" + "a" * 64, "example.com/gpu/x"):
    case(f"class/bad-extended-resource-name-{_name}", lambda _n=_name: validate_device_class(
        device_class(extendedResourceName=_n)),
        ("spec.extendedResourceName", INV, f'Invalid value: "{_name}": must be a valid extended resource name'))
case("class/extended-resource-name-deviceclass-prefix", lambda: validate_device_class(device_class(
    extendedResourceName="deviceclass.resource.kubernetes.io/gpu")),
    ("spec.extendedResourceName", INV))
case("class/extended-resource-name-subdomain", lambda: validate_device_class(device_class(
    extendedResourceName="gpu.example.com/my_gpu.v2")))
case("class-update/unchanged-selectors-not-recompiled", lambda: validate_device_class_update(
    device_class(selectors=[{"cel": {"expression": "x" * 10241}}], extendedResourceName="example.com/a"),
    device_class(selectors=[{"cel": {"expression": "x" * 10241}}])))
case("class-update/changed-selectors", lambda: validate_device_class_update(
    device_class(selectors=[{"cel": {"expression": "x" * 10241}}, {"cel": {"expression": "true"}}]),
    device_class(selectors=[{"cel": {"expression": "x" * 10241}}])),
    ("spec.selectors[0].cel.expression", LONG))
case("class-update/unchanged-config-not-limited", lambda: validate_device_class_update(
    device_class(config=[{"opaque": {"driver": "d.example.com", "parameters": {"x": "y" * 10240}}}]),
    device_class(config=[{"opaque": {"driver": "d.example.com", "parameters": {"x": "y" * 10240}}}])))
case("class-update/too-many-selectors-even-if-stored", lambda: validate_device_class_update(
    device_class(selectors=[{"cel": {"expression": "true"}}] * 33),
    device_class(selectors=[{"cel": {"expression": "true"}}] * 33)),
    ("spec.selectors", MANY))

# ResourceSlice
case("slice/valid", lambda: validate_resource_slice(rslice(num=128)))
case("slice/valid-all-nodes", lambda: validate_resource_slice(rslice(nodeName=None, allNodes=True)))
case("slice/valid-node-selector", lambda: validate_resource_slice(rslice(nodeName=None, nodeSelector={
    "nodeSelectorTerms": [{"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}]})))
case("slice/valid-shared-counters", lambda: validate_resource_slice(counters_slice()))
case("slice/valid-per-device", lambda: validate_resource_slice(per_device_slice(
    device("a", nodeName="worker"), device("b", allNodes=True),
    device("c", nodeSelector={"nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In",
                                                                      "values": ["w"]}]}]}))))
case("slice/valid-consumes-counters", lambda: validate_resource_slice(rslice([device(consumesCounters=[
    {"counterSet": "gpu-0", "counters": {"memory": {"value": "4Gi"}}, "compatibilityGroups": ["full", "half"]}])])))
case("slice/too-many-devices", lambda: validate_resource_slice(rslice(num=129)),
     ("spec.devices", MANY, "Too many: 129: must have at most 128 items"))
case("slice/too-many-devices-with-taints", lambda: validate_resource_slice(rslice(
    [device(f"d{i}") for i in range(64)] + [device("t", taints=[{"key": "a", "effect": "NoSchedule"}])])),
    ("spec.devices", MANY, "Too many: 65: must have at most 64 items"))
case("slice/too-many-devices-with-counters", lambda: validate_resource_slice(rslice(
    [device(f"d{i}") for i in range(64)] + [device("c", consumesCounters=[
        {"counterSet": "s", "counters": {"c": {"value": "1"}}}])])),
    ("spec.devices", MANY))
case("slice/too-many-devices-with-list-attributes", lambda: validate_resource_slice(rslice(
    [device(f"d{i}") for i in range(64)] + [device("l", attributes={"x": {"ints": [1]}})])),
    ("spec.devices", MANY))
case("slice/max-devices-with-taints", lambda: validate_resource_slice(rslice(
    [device(f"d{i}", taints=[{"key": "a", "effect": "None"}]) for i in range(64)])))
case("slice/missing-driver", lambda: validate_resource_slice(rslice(driver="")),
     ("spec.driver", REQ), ("spec.driver", INV))
case("slice/bad-driver", lambda: validate_resource_slice(rslice(driver=BAD_NAME)),
     ("spec.driver", INV, f'Invalid value: "{BAD_NAME}": {SUBDOMAIN_MSG}'))
case("slice/long-driver", lambda: validate_resource_slice(rslice(driver="a" * 64)),
     ("spec.driver", LONG, "Too long: may not be more than 63 bytes"))
case("slice/missing-pool-name", lambda: validate_resource_slice(rslice(pool={"name": "", "resourceSliceCount": 1})),
     ("spec.pool.name", REQ, "Required value"))
case("slice/bad-multi-pool-name", lambda: validate_resource_slice(rslice(pool={
    "name": f"{BAD_NAME}/{BAD_NAME}", "resourceSliceCount": 1})),
    ("spec.pool.name", INV, f'Invalid value: "{BAD_NAME}": {SUBDOMAIN_MSG}'), ("spec.pool.name", INV))
case("slice/valid-multi-pool-name", lambda: validate_resource_slice(rslice(pool={
    "name": "a.example.com/b/c", "resourceSliceCount": 1})))
case("slice/pool-name-max", lambda: validate_resource_slice(rslice(pool={"name": "x" * 253, "resourceSliceCount": 1})))
case("slice/bad-pool", lambda: validate_resource_slice(rslice(pool={
    "name": "x/" * 126 + "xy", "resourceSliceCount": 0, "generation": -1})),
    ("spec.pool.name", LONG, "Too long: may not be more than 253 bytes"),
    ("spec.pool.resourceSliceCount", INV, "Invalid value: 0: must be greater than zero"),
    ("spec.pool.generation", INV, "Invalid value: -1: must be greater than or equal to zero"))
case("slice/bad-node-name", lambda: validate_resource_slice(rslice(nodeName=BAD_NAME)),
     ("spec.nodeName", INV, f'Invalid value: "{BAD_NAME}": {SUBDOMAIN_MSG}'))
case("slice/empty-node-selection", lambda: validate_resource_slice(rslice(nodeName=None)),
     ("spec", REQ, ("Required value: exactly one of `nodeName`, `nodeSelector`, `allNodes`, `perDeviceNodeSelection` "
                   "is required")))
case("slice/node-name-and-selector", lambda: validate_resource_slice(rslice(nodeSelector={"nodeSelectorTerms": [
    {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["worker"]}]}]})),
    ("spec", INV, ('Invalid value: "{`nodeName`, `nodeSelector`}": exactly one of `nodeName`, `nodeSelector`, '
                  '`allNodes`, `perDeviceNodeSelection` is required, but multiple fields are set')))
case("slice/node-name-and-all-nodes", lambda: validate_resource_slice(rslice(allNodes=True)),
     ("spec", INV, ('Invalid value: "{`nodeName`, `allNodes`}": exactly one of `nodeName`, `nodeSelector`, '
                   '`allNodes`, `perDeviceNodeSelection` is required, but multiple fields are set')))
case("slice/empty-node-name", lambda: validate_resource_slice(rslice(nodeName="")),
     ("spec.nodeName", INV, 'Invalid value: "": must be either unset or set to a non-empty string'), ("spec", REQ))
case("slice/all-nodes-false", lambda: validate_resource_slice(rslice(nodeName=None, allNodes=False)),
     ("spec.allNodes", INV, "Invalid value: false: must be either unset or set to true"), ("spec", REQ))
case("slice/per-device-false", lambda: validate_resource_slice(rslice(perDeviceNodeSelection=False)),
     ("spec.perDeviceNodeSelection", INV, "Invalid value: false: must be either unset or set to true"))
case("slice/empty-node-selector", lambda: validate_resource_slice(rslice(nodeName=None, nodeSelector={})),
     ("spec.nodeSelector.nodeSelectorTerms", REQ, "Required value: must have at least one node selector term"),
     ("spec.nodeSelector.nodeSelectorTerms", INV))
case("slice/two-node-selector-terms", lambda: validate_resource_slice(rslice(nodeName=None, nodeSelector={
    "nodeSelectorTerms": [{"matchExpressions": [{"key": "a", "operator": "Exists"}]}] * 2})),
    ("spec.nodeSelector.nodeSelectorTerms", INV))
case("slice/bad-node-selector-requirements", lambda: validate_resource_slice(rslice(nodeName=None, nodeSelector={
    "nodeSelectorTerms": [{"matchExpressions": [{"key": "a", "operator": "Bad"},
                                                {"key": "b", "operator": "In"},
                                                {"key": "c", "operator": "Exists", "values": ["x"]},
                                                {"key": "d", "operator": "Gt", "values": ["1", "2"]},
                                                {"key": "e", "operator": "In", "values": ["a b"]}],
                           "matchFields": [{"key": "metadata.namespace", "operator": "In", "values": ["x"]},
                                           {"key": "metadata.name", "operator": "Exists"}]}]})),
    ("spec.nodeSelector.nodeSelectorTerms[0].matchExpressions[0].operator", INV,
     'Invalid value: "Bad": not a valid selector operator'),
    ("spec.nodeSelector.nodeSelectorTerms[0].matchExpressions[1].values", REQ),
    ("spec.nodeSelector.nodeSelectorTerms[0].matchExpressions[2].values", FORB),
    ("spec.nodeSelector.nodeSelectorTerms[0].matchExpressions[3].values", REQ),
    ("spec.nodeSelector.nodeSelectorTerms[0].matchExpressions[4].values[0]", INV),
    ("spec.nodeSelector.nodeSelectorTerms[0].matchFields[0].key", INV,
     'Invalid value: "metadata.namespace": not a valid field selector key'),
    ("spec.nodeSelector.nodeSelectorTerms[0].matchFields[1].operator", INV))
case("slice/duplicate-device", lambda: validate_resource_slice(rslice([device("a"), device("a")])),
     ("spec.devices[1]", DUP, 'Duplicate value: "a"'))
case("slice/bad-device-name", lambda: validate_resource_slice(rslice([device("a"), device(BAD_NAME)])),
     ("spec.devices[1].name", INV, f'Invalid value: "{BAD_NAME}": {LABEL_MSG}'))
case("slice/too-many-attributes-and-capacities", lambda: validate_resource_slice(rslice([device(
    attributes={f"a{i}": {"int": i} for i in range(20)}, capacity={f"c{i}": {"value": "1"} for i in range(13)})])),
    ("spec.devices[0]", INV, "Invalid value: 33: the total number of attributes and capacities must not exceed 32"))
case("slice/max-attributes-and-capacities", lambda: validate_resource_slice(rslice([device(
    attributes={f"a{i}": {"int": i} for i in range(20)}, capacity={f"c{i}": {"value": "1"} for i in range(12)})])))
case("slice/too-many-attribute-values", lambda: validate_resource_slice(rslice([device(
    attributes={"a": {"strings": ["x"] * 40}, "b": {"ints": list(range(9))}})])),
    ("spec.devices[0]", INV, "Invalid value: 49: the total number of attribute values must not exceed 48"))
case("slice/bad-attribute-name", lambda: validate_resource_slice(rslice([device(attributes={BAD_NAME: {"int": 1}})])),
     ("spec.devices[0].attributes", INV, f'Invalid value: "{BAD_NAME}": {C_IDENT_MSG}'))
case("slice/attribute-without-value", lambda: validate_resource_slice(rslice([device(attributes={"x": {}})])),
     ("spec.devices[0].attributes[x]", INV, 'Invalid value: "": exactly one value must be specified'))
case("slice/attribute-two-values", lambda: validate_resource_slice(rslice([device(attributes={
    "x": {"string": "a", "version": "1.2.3"}})])),
    ("spec.devices[0].attributes[x]", INV))
case("slice/attribute-long-string", lambda: validate_resource_slice(rslice([device(attributes={
    "x": {"string": "x" * 65}})])),
    ("spec.devices[0].attributes[x].string", LONG, "Too long: may not be more than 64 bytes"))
case("slice/attribute-max-string", lambda: validate_resource_slice(rslice([device(attributes={
    "x": {"string": "x" * 64}})])))
case("slice/attribute-bad-version", lambda: validate_resource_slice(rslice([device(attributes={
    "x": {"version": "x" * 65}})])),
    ("spec.devices[0].attributes[x].version", INV, (f'Invalid value: "{"x" * 65}": must be a string compatible '
                                                   'with semver.org spec 2.0.0')),
    ("spec.devices[0].attributes[x].version", LONG))
case("slice/attribute-semver", lambda: validate_resource_slice(rslice([device(attributes={
    "a": {"version": "1.0.0-alpha.1+build.5"}, "b": {"versions": ["1.0.0", "01.0.0"]}})])),
    ("spec.devices[0].attributes[b].versions[1]", INV))
case("slice/attribute-empty-lists", lambda: validate_resource_slice(rslice([device(attributes={
    "a": {"bools": []}, "b": {"strings": []}})])),
    ("spec.devices[0].attributes[a].bools", INV, "Invalid value: []bool{}: must not be empty if specified"),
    ("spec.devices[0].attributes[b].strings", INV, "Invalid value: []string{}: must not be empty if specified"))
case("slice/attribute-long-list-string", lambda: validate_resource_slice(rslice([device(attributes={
    "a": {"strings": ["ok", "x" * 65]}})])),
    ("spec.devices[0].attributes[a].strings[1]", LONG))
case("slice/attribute-domain", lambda: validate_resource_slice(rslice([device(attributes={
    "dra.example.com/x": {"int": 1}, "/y": {"int": 1}, "a" * 64 + "/z": {"int": 1}})])),
    ("spec.devices[0].attributes", INV, 'Invalid value: "": the domain must not be empty'),
    ("spec.devices[0].attributes", LONG, "Too long: may not be more than 63 bytes"))
case("slice/capacity-bad-name", lambda: validate_resource_slice(rslice([device(capacity={"1x": {"value": "1"}})])),
     ("spec.devices[0].capacity", INV, f'Invalid value: "1x": {C_IDENT_MSG}'))
case("slice/request-policy-without-multiple-allocations", lambda: validate_resource_slice(capacity_slice(
    policy("10Gi", "1Gi"), allow_multiple=False)),
    ("spec.devices[0].capacity[cap].requestPolicy", FORB, "Forbidden: allowMultipleAllocations must be true"))

P = "spec.devices[0].capacity[cap].requestPolicy"
VV, VR = P + ".validValues", P + ".validRange"
case("policy/none", lambda: validate_resource_slice(capacity_slice({"value": "1Gi"})))
case("policy/without-default", lambda: validate_resource_slice(capacity_slice(policy("1Gi"))))
case("policy/valid-values-without-default", lambda: validate_resource_slice(capacity_slice(policy(
    "1Gi", valid_values=["1Gi"]))),
    (P + ".default", REQ, "Required value: required when validValues is defined"))
case("policy/valid-range-without-default", lambda: validate_resource_slice(capacity_slice(policy(
    "1Gi", valid_range={"min": "1Gi"}))),
    (P + ".default", REQ, "Required value: required when validRange is defined"))
case("policy/valid-range-without-min", lambda: validate_resource_slice(capacity_slice(policy(
    "1Gi", "1Gi", valid_range={}))),
    (VR + ".min", REQ, "Required value: required when validRange is defined"))
case("policy/valid-range", lambda: validate_resource_slice(capacity_slice(policy(
    "10Gi", "1Gi", valid_range={"min": "1Gi", "max": "10Gi", "step": "1Gi"}))))
case("policy/valid-options", lambda: validate_resource_slice(capacity_slice(policy(
    "10Gi", "1Gi", valid_values=["1Gi", "10Gi"]))))
case("policy/more-than-one", lambda: validate_resource_slice(capacity_slice(policy(
    "10Gi", "1Gi", valid_values=["1Gi"], valid_range={"min": "1Gi"}))),
    (P, FORB, ('Forbidden: exactly one policy can be specified, cannot specify "validValues" and "validRange" at the '
              'same time')))
case("policy/option-over-capacity", lambda: validate_resource_slice(capacity_slice(policy(
    "10Gi", "1Gi", valid_values=["20Gi"]))),
    (VV + "[0]", INV, 'Invalid value: "20Gi": option is larger than capacity value: 10Gi'),
    (VV, INV, 'Invalid value: "1Gi": default value is not valid according to the requestPolicy'))
case("policy/duplicate-option", lambda: validate_resource_slice(capacity_slice(policy(
    "10Gi", "1Gi", valid_values=["1Gi", "1Gi"]))),
    (VV + "[1]", DUP, 'Duplicate value: "1073741824"'))
case("policy/duplicate-option-normalized", lambda: validate_resource_slice(capacity_slice(policy(
    "10Gi", "1Ki", valid_values=["1Ki", "1024"]))),
    (VV + "[1]", DUP, 'Duplicate value: "1024"'))
case("policy/duplicate-option-fractional-gate", lambda: validate_resource_slice(capacity_slice(policy(
    "10Gi", "1.0Ki", valid_values=["1.0Ki", "1.00Ki"])), gates=FRACTIONAL_ON),
    (VV + "[1]", DUP, 'Duplicate value: "1Ki"'))
case("policy/too-many-options", lambda: validate_resource_slice(capacity_slice(policy(
    "10Gi", "1", valid_values=["1"] * 11))),
    (VV, MANY, "Too many: 11: must have at most 10 items"),
    (VV, INV, 'Invalid value: "1": default value is not valid according to the requestPolicy'))
case("policy/unsorted-options", lambda: validate_resource_slice(capacity_slice(policy(
    "10Gi", "1Gi", valid_values=["2Gi", "1Gi"]))),
    (VV + "[1]", INV, 'Invalid value: "1Gi": values must be sorted in ascending order'))
case("policy/range-large-min-small-max", lambda: validate_resource_slice(capacity_slice(policy(
    "10Gi", "2Gi", valid_range={"min": "20Gi", "max": "1Gi"}))),
    (VR + ".min", INV, 'Invalid value: "20Gi": min is larger than capacity value: 10Gi'),
    (VR + ".default", INV, 'Invalid value: "2Gi": default is less than min: 20Gi'),
    (VR + ".max", INV, 'Invalid value: "20Gi": min is larger than max: 1Gi'),
    (VR + ".default", INV, 'Invalid value: "2Gi": default is more than max: 1Gi'))
case("policy/range-large-max", lambda: validate_resource_slice(capacity_slice(policy(
    "10Gi", "1Gi", valid_range={"min": "1Gi", "max": "20Gi"}))),
    (VR + ".max", INV, 'Invalid value: "20Gi": max is larger than capacity value: 10Gi'))
case("policy/range-not-multiple-of-step", lambda: validate_resource_slice(capacity_slice(policy(
    "10Gi", "2Gi", valid_range={"min": "1Gi", "max": "10Gi", "step": "2Gi"}))),
    (VR + ".step", INV, 'Invalid value: "2Gi": value is not a multiple of a given step (2Gi) from (1Gi)'),
    (VR + ".step", INV, 'Invalid value: "10Gi": value is not a multiple of a given step (2Gi) from (1Gi)'))
case("policy/range-large-step", lambda: validate_resource_slice(capacity_slice(policy(
    "10Gi", "1Gi", valid_range={"min": "1Gi", "step": "10Gi"}))),
    (VR + ".step", INV, 'Invalid value: "10Gi": one step 11Gi is larger than capacity value: 10Gi'))
case("policy/range-zero-step", lambda: validate_resource_slice(capacity_slice(policy(
    "10Gi", "1Gi", valid_range={"min": "1Gi", "step": "0"}))),
    (VR + ".step", INV, 'Invalid value: "0": must be greater than zero'))
case("policy/range-step-over-int64", lambda: validate_resource_slice(capacity_slice(policy(
    "18446744073709551616", "0", valid_range={"min": "0", "step": "18446744073709551616"}))),
    (VR + ".step", INV, 'Invalid value: "18446744073709551616": must not be larger than 9223372036854775807'))
case("policy/range-step-int64-max", lambda: validate_resource_slice(capacity_slice(policy(
    "9223372036854775807", "0", valid_range={"min": "0", "step": "9223372036854775807"}))))
case("policy/range-negative-min-with-step", lambda: validate_resource_slice(capacity_slice(policy(
    "10Gi", "0", valid_range={"min": "-1", "step": "1Gi"}))),
    (VR + ".min", INV, 'Invalid value: "-1": must be greater than or equal to 0'))
case("policy/range-negative-without-step", lambda: validate_resource_slice(capacity_slice(policy(
    "10Gi", "-1", valid_range={"min": "-1"}))))
case("policy/range-fractional-gate-off", lambda: validate_resource_slice(capacity_slice(policy(
    "1", "250m", valid_range={"min": "200m", "max": "1", "step": "100m"}))))
case("policy/range-fractional-gate-on", lambda: validate_resource_slice(capacity_slice(policy(
    "1", "250m", valid_range={"min": "200m", "max": "1", "step": "100m"})), gates=FRACTIONAL_ON),
    (VR + ".step", INV, 'Invalid value: "250m": value is not a multiple of a given step (100m) from (200m)'))
case("policy/range-fractional-valid", lambda: validate_resource_slice(capacity_slice(policy(
    "1", "200m", valid_range={"min": "200m", "max": "1", "step": "100m"})), gates=FRACTIONAL_ON))
case("policy/range-fractional-default-integer-range", lambda: validate_resource_slice(capacity_slice(policy(
    "10Gi", "100m", valid_range={"min": "0", "step": "1"})), gates=FRACTIONAL_ON),
    (VR + ".step", INV, 'Invalid value: "100m": value is not a multiple of a given step (1) from (0)'))
case("policy/range-fractional-overflow", lambda: validate_resource_slice(capacity_slice(policy(
    "100P", "20P", valid_range={"min": "10P", "step": "100m"})), gates=FRACTIONAL_ON),
    (VR + ".default", INV, 'Invalid value: "20P": value cannot be represented as a milli value'),
    (VR + ".min", INV, 'Invalid value: "10P": value cannot be represented as a milli value'))
case("policy/range-fractional-too-fine", lambda: validate_resource_slice(capacity_slice(policy(
    "1", "20u", valid_range={"min": "10u"})), gates=FRACTIONAL_ON),
    (VR + ".default", INV, 'Invalid value: "20u": value cannot be represented as a milli value'),
    (VR + ".min", INV, 'Invalid value: "10u": value cannot be represented as a milli value'))

case("slice/taint-bad", lambda: validate_resource_slice(rslice([device(taints=[
    {"key": BAD_NAME, "effect": "NoSchedule"}, {"key": "a", "value": "b c", "effect": "PreferNoSchedule"},
    {"key": "a"}])])),
    ("spec.devices[0].taints[0].key", INV, f'Invalid value: "{BAD_NAME}": {NAME_PART_MSG}'),
    ("spec.devices[0].taints[1].value", INV, f'Invalid value: "b c": {LABEL_VALUE_MSG}'),
    ("spec.devices[0].taints[1].effect", NSUP, ('Unsupported value: "PreferNoSchedule": supported values: '
                                               '"NoExecute", "NoSchedule", "None"')),
    ("spec.devices[0].taints[2].effect", REQ))
case("slice/too-many-taints", lambda: validate_resource_slice(rslice([device(taints=[
    {"key": f"k{i}", "effect": "None"} for i in range(17)])])),
    ("spec.devices[0].taints", MANY, "Too many: 17: must have at most 16 items"))
case("slice/counter-consumption", lambda: validate_resource_slice(rslice([device(consumesCounters=[
    {"counterSet": "a", "counters": {"c": {"value": "1"}}}, {"counterSet": "a", "counters": {"c": {"value": "1"}}}]),
    device("d2", consumesCounters=[{"counterSet": "", "counters": {}}]),
    device("d3", consumesCounters=[{"counterSet": BAD_NAME, "counters": {BAD_NAME: {"value": "1"}}}])])),
    ("spec.devices[0].consumesCounters[1]", DUP, 'Duplicate value: "a"'),
    ("spec.devices[1].consumesCounters[0].counterSet", REQ),
    ("spec.devices[1].consumesCounters[0].counters", REQ),
    ("spec.devices[2].consumesCounters[0].counterSet", INV),
    ("spec.devices[2].consumesCounters[0].counters", INV, f'Invalid value: "{BAD_NAME}": {LABEL_MSG}'))
case("slice/too-many-counter-consumptions", lambda: validate_resource_slice(rslice([device(consumesCounters=[
    {"counterSet": f"s{i}", "counters": {"c": {"value": "1"}}} for i in range(3)])])),
    ("spec.devices[0].consumesCounters", MANY, "Too many: 3: must have at most 2 items"))
case("slice/too-many-consumed-counters", lambda: validate_resource_slice(rslice([device(consumesCounters=[
    {"counterSet": "s", "counters": {f"c{i}": {"value": "1"} for i in range(33)}}])])),
    ("spec.devices[0].consumesCounters[0].counters", MANY, "Too many: 33: must have at most 32 items"))
case("slice/compatibility-groups", lambda: validate_resource_slice(rslice([device(consumesCounters=[
    {"counterSet": "s", "counters": {"c": {"value": "1"}}, "compatibilityGroups": ["a", "a"]},
    {"counterSet": "t", "counters": {"c": {"value": "1"}}, "compatibilityGroups": ["a", "b", "c"]}]),
    device("d2", consumesCounters=[{"counterSet": "s", "counters": {"c": {"value": "1"}},
                                    "compatibilityGroups": ["Bad"]}])])),
    ("spec.devices[0].consumesCounters[0].compatibilityGroups[1]", DUP),
    ("spec.devices[0].consumesCounters[1].compatibilityGroups", MANY, "Too many: 3: must have at most 2 items"),
    ("spec.devices[1].consumesCounters[0].compatibilityGroups[0]", INV))
case("slice/shared-counters-bad", lambda: validate_resource_slice(counters_slice(sharedCounters=[
    {"name": "a", "counters": {"c": {"value": "1"}}}, {"name": "a", "counters": {"c": {"value": "1"}}},
    {"name": "", "counters": {}}, {"name": BAD_NAME, "counters": {"C": {"value": "1"}}}])),
    ("spec.sharedCounters[1]", DUP, 'Duplicate value: "a"'),
    ("spec.sharedCounters[2].name", REQ), ("spec.sharedCounters[2].counters", REQ),
    ("spec.sharedCounters[3].name", INV), ("spec.sharedCounters[3].counters", INV))
case("slice/too-many-counter-sets", lambda: validate_resource_slice(counters_slice(sharedCounters=[
    {"name": f"s{i}", "counters": {"c": {"value": "1"}}} for i in range(9)])),
    ("spec.sharedCounters", MANY, "Too many: 9: must have at most 8 items"))
case("slice/too-many-counters", lambda: validate_resource_slice(counters_slice(sharedCounters=[
    {"name": "s", "counters": {f"c{i}": {"value": "1"} for i in range(33)}}])),
    ("spec.sharedCounters[0].counters", MANY, "Too many: 33: must have at most 32 items"))
case("slice/counters-and-devices", lambda: validate_resource_slice(with_(counters_slice(), lambda o: o["spec"].update(
    devices=[device()]))),
    ("spec", INV, 'Invalid value: "": only one of `sharedCounters` or `devices` is allowed'))
case("slice/per-device-missing-selection", lambda: validate_resource_slice(per_device_slice(device())),
     ("spec.devices[0]", REQ, ("Required value: exactly one of `nodeName`, `nodeSelector`, or `allNodes` is required "
                              "when `perDeviceNodeSelection` is set to true in the ResourceSlice spec")))
case("slice/per-device-two-selections", lambda: validate_resource_slice(per_device_slice(
    device(nodeName="w", allNodes=True))),
    ("spec.devices[0]", INV, ('Invalid value: "{`nodeName`, `allNodes`}": exactly one of `nodeName`, '
                             '`nodeSelector`, or `allNodes` is required when `perDeviceNodeSelection` is set to true '
                             'in the ResourceSlice spec')))
case("slice/per-device-bad-values", lambda: validate_resource_slice(per_device_slice(
    device("a", nodeName=""), device("b", allNodes=False), device("c", nodeName=BAD_NAME),
    device("d", nodeSelector={}))),
    ("spec.devices[0].nodeName", INV, 'Invalid value: "": must not be empty'), ("spec.devices[0]", REQ),
    ("spec.devices[1].allNodes", INV), ("spec.devices[1]", REQ),
    ("spec.devices[2].nodeName", INV, f'Invalid value: "{BAD_NAME}": {SUBDOMAIN_MSG}'),
    ("spec.devices[3].nodeSelector.nodeSelectorTerms", REQ))
case("slice/device-node-name-without-per-device", lambda: validate_resource_slice(rslice([device(nodeName="w")])),
     ("spec.devices[0]", INV, ("Invalid value: null: `nodeName`, `nodeSelector` and `allNodes` can only be set if "
                              "`perDeviceNodeSelection` is set to true in the ResourceSlice spec")))
case("slice/binding-conditions-valid", lambda: validate_resource_slice(rslice([device(
    bindsToNode=True, bindingConditions=["a", "example.com/b"], bindingFailureConditions=["c"])])))
case("slice/binding-conditions-bad", lambda: validate_resource_slice(rslice([device(
    bindingConditions=["a", "a", BAD_NAME], bindingFailureConditions=["a"]),
    device("d2", bindingFailureConditions=["x"]),
    device("d3", bindingConditions=["a", "b", "c", "d", "e"], bindingFailureConditions=["x"] * 5)])),
    ("spec.devices[0].bindingConditions[2]", INV),
    ("spec.devices[0].bindingConditions[1]", DUP, 'Duplicate value: "a"'),
    ("spec.devices[0].bindingFailureConditions[0]", INV, ('Invalid value: "a": bindingFailureConditions must not '
                                                         'overlap with bindingConditions')),
    ("spec.devices[1].bindingConditions", INV, ("Invalid value: []string(nil): bindingConditions are required to "
                                               "use bindingFailureConditions")),
    ("spec.devices[2].bindingConditions", MANY, "Too many: 5: must have at most 4 items"),
    ("spec.devices[2].bindingFailureConditions", MANY),
    *[(f"spec.devices[2].bindingFailureConditions[{i}]", DUP) for i in range(1, 5)])
case("slice/partition-type-attribute-valid", lambda: validate_resource_slice(rslice([
    device(attributes={"profile": {"string": "Full"}},
           consumesCounters=[{"counterSet": "s", "counters": {"c": {"value": "1"}}}]),
    device("d2", attributes={"test.example.com/profile": {"string": "Half"}},
           consumesCounters=[{"counterSet": "s", "counters": {"c": {"value": "1"}}}]),
    device("d3")], partitionTypeAttribute="test.example.com/profile")))
case("slice/partition-type-attribute-no-counters", lambda: validate_resource_slice(rslice(
    partitionTypeAttribute="test.example.com/profile")),
    ("spec.partitionTypeAttribute", INV, ('Invalid value: "test.example.com/profile": may only be set on a slice '
                                         'which declares devices that consume counters')))
case("slice/partition-type-attribute-missing", lambda: validate_resource_slice(rslice([
    device(consumesCounters=[{"counterSet": "s", "counters": {"c": {"value": "1"}}}]),
    device("d2", attributes={"example.com/profile": {"int": 1}},
           consumesCounters=[{"counterSet": "s", "counters": {"c": {"value": "1"}}}])],
    partitionTypeAttribute="example.com/profile")),
    ("spec.devices[0].attributes[example.com/profile]", REQ, ("Required value: device consumes counters and "
                                                             "`partitionTypeAttribute` names this attribute, so it "
                                                             "must be set")),
    ("spec.devices[1].attributes[example.com/profile]", INV))
case("slice/partition-type-attribute-bad-name", lambda: validate_resource_slice(rslice([
    device(consumesCounters=[{"counterSet": "s", "counters": {"c": {"value": "1"}}}])],
    partitionTypeAttribute="profile")),
    ("spec.partitionTypeAttribute", INV, f'Invalid value: "profile": {FQN_MSG}'))
case("slice/skip-node-operations", lambda: validate_resource_slice(rslice(skipNodeOperations=[
    "NodePrepareResources", "Bogus", "Bogus"])),
    ("spec.skipNodeOperations[1]", NSUP, ('Unsupported value: "Bogus": supported values: "*", "NodePrepareResources", '
                                         '"NodeUnprepareResources"')),
    ("spec.skipNodeOperations[2]", NSUP), ("spec.skipNodeOperations[2]", DUP),
    ("spec.skipNodeOperations", INV,
     ('Invalid value: []resource.SkipNodeOperation{"NodePrepareResources", "Bogus", '
      '"Bogus"}: NodePrepareResources cannot be skipped unless NodeUnprepareResources is '
      'also skipped')))
case("slice/skip-node-operations-valid", lambda: validate_resource_slice(rslice(skipNodeOperations=[
    "NodePrepareResources", "NodeUnprepareResources"])))
case("slice/skip-node-operations-all", lambda: validate_resource_slice(rslice(skipNodeOperations=[
    "NodePrepareResources", "*"])))
case("slice/node-allocatable-valid", lambda: validate_resource_slice(rslice([device(
    capacity={"dra.example.com/cores": {"value": "8"}},
    nodeAllocatableResources={"cpu": {"mapping": {"capacityKey": "dra.example.com/cores", "capacityMultiplier": "2"}},
                               "memory": {"overhead": {"perPod": "1Gi", "perContainer": "0"}},
                               "hugepages-2Mi": {"mapping": {"deviceMultiplier": "4"}}})])))
case("slice/node-allocatable-bad", lambda: validate_resource_slice(rslice([device(nodeAllocatableResources={
    "example.com/gpu": {"mapping": {"deviceMultiplier": "1"}},
    "cpu": {},
    "memory": {"mapping": {"capacityKey": "missing"}, "overhead": {}},
    "ephemeral-storage": {"mapping": {"capacityMultiplier": "-1", "deviceMultiplier": "0"},
                          "overhead": {"perPod": "-1"}}})])),
    ("spec.devices[0].nodeAllocatableResources[example.com/gpu]", INV, ('Invalid value: "example.com/gpu": must be a '
                                                                       'node allocatable resource name')),
    ("spec.devices[0].nodeAllocatableResources[cpu]", REQ, ("Required value: at least one of mapping or overhead "
                                                           "must be set")),
    ("spec.devices[0].nodeAllocatableResources[memory].mapping.capacityKey", NFOUND, 'Not found: "missing"'),
    ("spec.devices[0].nodeAllocatableResources[memory].mapping.capacityMultiplier", REQ),
    ("spec.devices[0].nodeAllocatableResources[memory].overhead", INV),
    ("spec.devices[0].nodeAllocatableResources[ephemeral-storage].mapping.deviceMultiplier", INV,
     'Invalid value: "0": must be positive'),
    ("spec.devices[0].nodeAllocatableResources[ephemeral-storage].mapping.capacityKey", REQ),
    ("spec.devices[0].nodeAllocatableResources[ephemeral-storage].overhead.perPod", INV,
     'Invalid value: "-1": must be non-negative'))

# ResourceSlice: update
case("slice-update/unchanged", lambda: validate_resource_slice_update(rslice(), rslice()))
case("slice-update/immutable", lambda: validate_resource_slice_update(
    rslice(driver="other.example.com", pool={"name": "bar", "resourceSliceCount": 1}, nodeName="other"), rslice()),
    ("spec.driver", INV, 'Invalid value: "other.example.com": field is immutable'),
    ("spec.pool.name", INV, 'Invalid value: "bar": field is immutable'),
    ("spec.nodeName", INV, 'Invalid value: "other": field is immutable'))
case("slice-update/node-name-removed", lambda: validate_resource_slice_update(
    rslice(nodeName=None, allNodes=True), rslice()),
    ("spec.nodeName", INV, "Invalid value: null: field is immutable"))
case("slice-update/pool-generation-may-change", lambda: validate_resource_slice_update(
    rslice(pool={"name": "foo", "resourceSliceCount": 2, "generation": 5}), rslice()))
case("slice-update/stored-capacity-not-revalidated", lambda: validate_resource_slice_update(
    capacity_slice(policy("10Gi", "1Gi"), allow_multiple=False),
    capacity_slice(policy("10Gi", "1Gi"), allow_multiple=False)))
case("slice-update/changed-capacity-revalidated", lambda: validate_resource_slice_update(
    capacity_slice(policy("10Gi", "2Gi"), allow_multiple=False),
    capacity_slice(policy("10Gi", "1Gi"), allow_multiple=False)),
    ("spec.devices[0].capacity[cap].requestPolicy", FORB))
case("slice-update/stored-taints-not-revalidated", lambda: validate_resource_slice_update(
    rslice([device(taints=[{"key": "a", "effect": "Future"}])]),
    rslice([device(taints=[{"key": "a", "effect": "Future"}])])))

# DeviceTaintRule
case("taint-rule/valid", lambda: validate_device_taint_rule(taint_rule(selector={
    "driver": "dra.example.com", "pool": "a/b", "device": "dev-0"})))
case("taint-rule/valid-none-effect", lambda: validate_device_taint_rule(taint_rule({"key": "a", "effect": "None"})))
case("taint-rule/bad-selector", lambda: validate_device_taint_rule(taint_rule(selector={
    "driver": BAD_NAME, "pool": "", "device": BAD_NAME})),
    ("spec.deviceSelector.driver", INV), ("spec.deviceSelector.pool", REQ),
    ("spec.deviceSelector.device", INV, f'Invalid value: "{BAD_NAME}": {LABEL_MSG}'))
case("taint-rule/missing-effect", lambda: validate_device_taint_rule(taint_rule({"key": "a"})),
     ("spec.taint.effect", REQ, "Required value"))
case("taint-rule/bad-effect",
     lambda: validate_device_taint_rule(taint_rule({"key": "a", "effect": "PreferNoSchedule"})),
     ("spec.taint.effect", NSUP, ('Unsupported value: "PreferNoSchedule": supported values: "NoExecute", '
                                 '"NoSchedule", "None"')))
case("taint-rule/missing-key", lambda: validate_device_taint_rule(taint_rule({"effect": "None"})),
     ("spec.taint.key", INV, 'Invalid value: "": name part must be non-empty'),
     ("spec.taint.key", INV, f'Invalid value: "": {NAME_PART_MSG}'))
case("taint-rule/bad-value", lambda: validate_device_taint_rule(taint_rule({"key": "a", "value": "-x",
                                                                              "effect": "None"})),
     ("spec.taint.value", INV, f'Invalid value: "-x": {LABEL_VALUE_MSG}'))
case("taint-rule-update/unknown-effect-kept", lambda: validate_device_taint_rule_update(
    taint_rule({"key": "b", "effect": "Future"}), taint_rule({"key": "a", "effect": "Future"})))
case("taint-rule-update/unknown-effect-set", lambda: validate_device_taint_rule_update(
    taint_rule({"key": "a", "effect": "Future"}), taint_rule({"key": "a", "effect": "None"})),
    ("spec.taint.effect", NSUP))
case("taint-rule-status/valid", lambda: validate_device_taint_rule_status_update(
    with_(taint_rule(), lambda o: o.update(status={"conditions": [condition("EvictionInProgress")]})), taint_rule()))
case("taint-rule-status/too-many-conditions", lambda: validate_device_taint_rule_status_update(
    with_(taint_rule(), lambda o: o.update(status={"conditions": [condition(f"C{i}") for i in range(9)]})),
    taint_rule()),
    ("status.conditions", MANY, "Too many: 9: must have at most 8 items"))
case("taint-rule-status/bad-condition", lambda: validate_device_taint_rule_status_update(
    with_(taint_rule(), lambda o: o.update(status={"conditions": [condition(reason="1bad", observedGeneration=-1,
                                                                            lastTransitionTime=None)]})),
    taint_rule()),
    ("status.conditions[0].reason", INV), ("status.conditions[0].observedGeneration", INV),
    ("status.conditions[0].lastTransitionTime", REQ, "Required value: must be set"))

# Pod
CLAIM_NEITHER = ('Invalid value: core.PodResourceClaim{Name:"my-claim", ResourceClaimName:(*string)(nil), '
                 'ResourceClaimTemplateName:(*string)(nil)}: must specify one of: `resourceClaimName`, '
                 '`resourceClaimTemplateName`')
case("pod/valid", lambda: validate_pod_resource_claims(pod()))
case("pod/valid-requests", lambda: validate_pod_resource_claims(pod(containers=[
    ctr({"name": "my-claim", "request": "a"}, {"name": "my-claim", "request": "b"}, {"name": "my-template"})],
    initContainers=[ctr({"name": "my-claim"}, name="init")])))
case("pod/no-claims", lambda: validate_pod_resource_claims(pod([], [ctr()])))
case("pod/claim-missing-name", lambda: validate_pod_resource_claims(pod([{"resourceClaimName": "x"}], [ctr()])),
     ("spec.resourceClaims[0].name", REQ, "Required value"))
case("pod/claim-bad-name", lambda: validate_pod_resource_claims(pod([{"name": "Bad", "resourceClaimName": "x"}],
                                                                    [ctr()])),
     ("spec.resourceClaims[0].name", INV, f'Invalid value: "Bad": {LABEL_MSG}'))
case("pod/claim-duplicate-name", lambda: validate_pod_resource_claims(pod([
    {"name": "my-claim", "resourceClaimName": "x"}, {"name": "my-claim", "resourceClaimTemplateName": "y"}])),
    ("spec.resourceClaims[1].name", DUP, 'Duplicate value: "my-claim"'))
case("pod/claim-neither-source", lambda: validate_pod_resource_claims(pod([{"name": "my-claim"}])),
     ("spec.resourceClaims[0]", INV, CLAIM_NEITHER))
case("pod/claim-both-sources", lambda: validate_pod_resource_claims(pod([
    {"name": "my-claim", "resourceClaimName": "x", "resourceClaimTemplateName": "y"}])),
    ("spec.resourceClaims[0]", INV))
case("pod/claim-bad-source-names", lambda: validate_pod_resource_claims(pod([
    {"name": "my-claim", "resourceClaimName": BAD_NAME}, {"name": "t", "resourceClaimTemplateName": "a" * 254}])),
    ("spec.resourceClaims[0].resourceClaimName", INV, f'Invalid value: "{BAD_NAME}": {SUBDOMAIN_MSG}'),
    ("spec.resourceClaims[1].resourceClaimTemplateName", INV))
case("pod/container-claim-not-found", lambda: validate_pod_resource_claims(pod(containers=[ctr({"name": "nope"})])),
     ("spec.containers[0].resources.claims[0]", NFOUND, ('Not found: "nope": must be one of the names in '
                                                         'pod.spec.resourceClaims: my-claim, my-template')))
case("pod/container-claim-none-defined", lambda: validate_pod_resource_claims(pod([], [ctr({"name": "nope"})])),
     ("spec.containers[0].resources.claims[0]", NFOUND, ('Not found: "nope": must be one of the names in '
                                                         'pod.spec.resourceClaims which is empty')))
case("pod/container-claim-duplicate", lambda: validate_pod_resource_claims(pod(containers=[
    ctr({"name": "my-claim"}, {"name": "my-claim"})])),
    ("spec.containers[0].resources.claims[1]", DUP, 'Duplicate value: "my-claim"'))
case("pod/container-claim-request-duplicate", lambda: validate_pod_resource_claims(pod(containers=[
    ctr({"name": "my-claim", "request": "a"}, {"name": "my-claim", "request": "a"})])),
    ("spec.containers[0].resources.claims[1]", DUP, 'Duplicate value: "my-claim/a"'))
case("pod/container-claim-whole-after-request", lambda: validate_pod_resource_claims(pod(containers=[
    ctr({"name": "my-claim", "request": "a"}, {"name": "my-claim"})])),
    ("spec.containers[0].resources.claims[1]", DUP, 'Duplicate value: "my-claim"'))
case("pod/container-claim-request-after-whole", lambda: validate_pod_resource_claims(pod(containers=[
    ctr({"name": "my-claim"}, {"name": "my-claim", "request": "a"})])),
    ("spec.containers[0].resources.claims[1]", DUP, 'Duplicate value: "my-claim"'))
case("pod/container-claim-empty", lambda: validate_pod_resource_claims(pod(containers=[ctr({"name": ""})])),
     ("spec.containers[0].resources.claims[0]", REQ))
case("pod/container-claim-bad-request", lambda: validate_pod_resource_claims(pod(containers=[
    ctr({"name": "my-claim", "request": "A"})])),
    ("spec.containers[0].resources.claims[0].request", INV, f'Invalid value: "A": {LABEL_MSG}'))
case("pod/init-and-ephemeral-claims", lambda: validate_pod_resource_claims(pod(
    initContainers=[ctr({"name": "x"}, name="init")], ephemeralContainers=[ctr({"name": "y"}, name="debug")])),
    ("spec.initContainers[0].resources.claims[0]", NFOUND),
    ("spec.ephemeralContainers[0].resources.claims[0]", NFOUND))
case("pod/pod-level-claims", lambda: validate_pod_resource_claims(pod(resources={"claims": [{"name": "my-claim"}]})),
     ("spec.resources.claims", FORB, "Forbidden: claims cannot be set for Resources at pod-level"))
case("pod-status/valid", lambda: validate_pod_status_resource_claims(pod(status={"resourceClaimStatuses": [
    {"name": "my-template", "resourceClaimName": "pod-my-template-abcde"}, {"name": "my-claim"}]})))
case("pod-status/unknown-claim", lambda: validate_pod_status_resource_claims(pod(status={"resourceClaimStatuses": [
    {"name": "other", "resourceClaimName": "x"}]})),
    ("status.resourceClaimStatuses[0].name", INV, ('Invalid value: "other": must match the name of an entry in '
                                                  '`spec.resourceClaims`')))
case("pod-status/duplicate", lambda: validate_pod_status_resource_claims(pod(status={"resourceClaimStatuses": [
    {"name": "my-template"}, {"name": "my-template"}]})),
    ("status.resourceClaimStatuses[1].name", DUP))
case("pod-status/bad-claim-name", lambda: validate_pod_status_resource_claims(pod(status={"resourceClaimStatuses": [
    {"name": "my-template", "resourceClaimName": BAD_NAME}]})),
    ("status.resourceClaimStatuses[0].name", INV, f'Invalid value: "{BAD_NAME}": {SUBDOMAIN_MSG}'))
case("pod-status/extended-valid", lambda: validate_pod_status_resource_claims(pod(
    [], GPU_CTR, ext_status(mapping()))))
case("pod-status/extended-no-mappings", lambda: validate_pod_status_resource_claims(pod([], GPU_CTR, ext_status())),
     ("status.extendedResourceClaimStatus.requestMappings", REQ, ("Required value: at least one request mapping is "
                                                                 "required")))
case("pod-status/extended-unknown-container", lambda: validate_pod_status_resource_claims(pod(
    [], GPU_CTR, ext_status(mapping("other")))),
    ("status.extendedResourceClaimStatus.requestMappings[0].containerName", INV,
     'Invalid value: "other": must match the name of an entry in spec.initContainers.name or spec.containers.name'))
case("pod-status/extended-unrequested-resource", lambda: validate_pod_status_resource_claims(pod(
    [], GPU_CTR, ext_status(mapping(resource="example.com/fpga")))),
    ("status.extendedResourceClaimStatus.requestMappings[0].resourceName", INV))
case("pod-status/extended-bad-request-name", lambda: validate_pod_status_resource_claims(pod(
    [], GPU_CTR, ext_status(mapping(request="Bad")))),
    ("status.extendedResourceClaimStatus.requestName", INV, f'Invalid value: "Bad": {LABEL_MSG}'))
case("pod-status/extended-duplicate", lambda: validate_pod_status_resource_claims(pod(
    [], GPU_CTR, ext_status(mapping(), mapping()))),
    ("status.extendedResourceClaimStatus.requestMappings[1].containerName", DUP),
    ("status.extendedResourceClaimStatus.requestMappings[1].resourceName", DUP),
    ("status.extendedResourceClaimStatus.requestMappings[1].requestName", DUP))
case("pod-status/extended-claim-name", lambda: validate_pod_status_resource_claims(pod(
    [], GPU_CTR, ext_status(mapping(), claim_name=""))),
    ("status.extendedResourceClaimStatus.resourceClaimName", REQ))
case("pod-status/extended-bad-claim-name", lambda: validate_pod_status_resource_claims(pod(
    [], GPU_CTR, ext_status(mapping(), claim_name=BAD_NAME))),
    ("status.extendedResourceClaimStatus.resourceClaimName", INV))
case("pod-spec/ignores-status", lambda: validate_pod_spec_resource_claims(pod(status={"resourceClaimStatuses": [
    {"name": "other"}]})))


@pytest.mark.parametrize(("name", "fn", "want"), CASES, ids=[c[0] for c in CASES])
def test_validation(name: str, fn: Callable[[], list], want: list[tuple]) -> None:
    errs = fn()
    assert all(set(e) == {"reason", "message", "field"} for e in errs), errs
    got = sorted((e["field"], e["reason"]) for e in errs)
    assert got == sorted((w[0], w[1]) for w in want), [(e["field"], e["reason"], e["message"]) for e in errs]
    for w in want:
        if len(w) > 2:
            matches = [e["message"] for e in errs if (e["field"], e["reason"]) == (w[0], w[1])]
            assert w[2] in matches, (w, matches)


def test_case_count() -> None:
    assert len(CASES) >= 150


# --- CEL compilation through dramock.cel (faked here; the real module is another engineer's) ---


class FakeCELCompileError(Exception):
    pass


@pytest.fixture
def fake_cel(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    compiled: list[str] = []

    def compile_(expr: str) -> Any:
        compiled.append(expr)
        if "bad" in expr:
            raise FakeCELCompileError("compilation failed: ERROR: <input>:1:1: undeclared reference to 'bad'")
        return types.SimpleNamespace(max_cost=2_000_000 if "costly" in expr else 10)

    monkeypatch.setattr(rv_cel, "_cel", types.SimpleNamespace(compile=compile_, CELCompileError=FakeCELCompileError))
    return compiled


def test_cel_compile_error_is_invalid(fake_cel: list[str]) -> None:
    errs = validate_resource_claim(ex(selectors=[{"cel": {"expression": "true"}}, {"cel": {"expression": "bad"}}]))
    assert errs == [{"reason": INV, "field": EX + ".selectors[1].cel.expression",
                     "message": 'Invalid value: "bad": compilation failed: ERROR: <input>:1:1: undeclared reference '
                                "to 'bad'"}]
    assert fake_cel == ["true", "bad"]


def test_cel_cost_limit(fake_cel: list[str]) -> None:
    errs = validate_device_class(device_class(selectors=[{"cel": {"expression": "costly"}}]))
    assert errs == [{"reason": FORB, "field": "spec.selectors[0].cel.expression",
                     "message": "Forbidden: too complex, exceeds cost limit"}]


def test_cel_too_long_is_not_compiled(fake_cel: list[str]) -> None:
    errs = validate_resource_claim(ex(selectors=[{"cel": {"expression": "bad" * 4000}}]))
    assert [e["reason"] for e in errs] == [LONG]
    assert fake_cel == []


def test_cel_stored_selectors_not_compiled(fake_cel: list[str]) -> None:
    old = device_class(selectors=[{"cel": {"expression": "bad"}}])
    assert validate_device_class_update(with_(old, lambda o: o["spec"].update(extendedResourceName="a.com/b")),
                                        old) == []
    assert fake_cel == []
    errs = validate_device_class_update(device_class(selectors=[{"cel": {"expression": "bad"}},
                                                                {"cel": {"expression": "true"}}]), old)
    assert [(e["field"], e["reason"]) for e in errs] == [("spec.selectors[0].cel.expression", INV)]


class FakeCELCostExceeded(FakeCELCompileError):
    pass


def test_cel_cost_exceeded_and_options(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[tuple[str, dict]] = []

    def compile_(expr: str, **options: Any) -> Any:
        calls.append((expr, options))
        if expr == "costly":
            raise FakeCELCostExceeded("too complex")
        return object()

    monkeypatch.setattr(rv_cel, "_cel", types.SimpleNamespace(compile=compile_, CELCompileError=FakeCELCompileError,
                                                              CELCostExceeded=FakeCELCostExceeded))
    errs = validate_resource_claim(ex(selectors=[{"cel": {"expression": "costly"}}]))
    assert errs == [{"reason": FORB, "field": EX + ".selectors[0].cel.expression",
                     "message": "Forbidden: too complex, exceeds cost limit"}]
    assert calls == [("costly", {"list_type_attributes": False, "consumable_capacity": True})]
    validate_device_class(device_class(selectors=[{"cel": {"expression": "x"}}]),
                          gates=FeatureGates({"DRAListTypeAttributes": True, "DRAConsumableCapacity": False}))
    assert calls[-1] == ("x", {"list_type_attributes": True, "consumable_capacity": False})


def test_cel_error_message_attribute(monkeypatch: pytest.MonkeyPatch) -> None:
    def compile_(expr: str, **options: Any) -> Any:
        e = FakeCELCompileError("ignored")
        e.message = "compilation failed: ERROR: <input>:1:2: Syntax error: mismatched input"
        raise e

    monkeypatch.setattr(rv_cel, "_cel", types.SimpleNamespace(compile=compile_, CELCompileError=FakeCELCompileError))
    errs = validate_device_class(device_class(selectors=[{"cel": {"expression": "1 +"}}]))
    assert errs[0]["message"] == ('Invalid value: "1 +": compilation failed: ERROR: <input>:1:2: Syntax error: '
                                  "mismatched input")


def test_cel_derived_attributes_not_compiled_as_selectors(fake_cel: list[str]) -> None:
    errs = validate_resource_claim(claim(
        [{"name": "foo", "exactly": exact(derivedAttributes=[{"name": "d/numa", "expression": "bad + 1"}])}],
        constraints=[{"matchAttribute": "d/numa"}]))
    assert errs == [] and fake_cel == []


def test_cel_other_exceptions_propagate(monkeypatch: pytest.MonkeyPatch) -> None:
    def compile_(expr: str) -> Any:
        raise RuntimeError("boom")

    monkeypatch.setattr(rv_cel, "_cel", types.SimpleNamespace(compile=compile_, CELCompileError=FakeCELCompileError))
    with pytest.raises(RuntimeError):
        validate_resource_claim(ex(selectors=[{"cel": {"expression": "x"}}]))


def test_cel_module_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(rv_cel, "_cel", None)
    assert validate_resource_claim(ex(selectors=[{"cel": {"expression": "anything ("}}])) == []
