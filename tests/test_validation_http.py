"""Validation through real HTTP: a table of requests against the shared server, each with the Status it must get.

Every resource.k8s.io kind (DeviceClass, ResourceSlice, ResourceClaim and its /status, ResourceClaimTemplate,
DeviceTaintRule and its /status) and the Pod claim fields (spec.resourceClaims, containers[].resources.claims,
status.resourceClaimStatuses, status.extendedResourceClaimStatus). The objects come from the builders of
tests/test_validation_resource.py (the unit table drawn from upstream's validation_*_test.go); here they go
over the wire: create, update (GET, change, PUT), merge patch, /status, delete, raw and YAML bodies.

A case is (id, resource, object, steps, expected code, expected details.causes as (field, reason[, message])
and optionally the Status reason and message). Every step but the last must succeed; the last is checked.
Every 422 is also checked for upstream's shape: reason Invalid, details {group, kind, name} and the message
`<Kind>.<group> "<name>" is invalid: <field>: <detail>` (several errors as `[a, b]`, duplicates folded).
"""

from __future__ import annotations

import copy
import json
import re
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest

from tests.helpers import Server
from tests.test_validation_resource import (
    BAD_NAME,
    C_IDENT_MSG,
    DUP,
    EX,
    FORB,
    FQN_MSG,
    GPU_CTR,
    INV,
    LABEL_MSG,
    LABEL_VALUE_MSG,
    LONG,
    MANY,
    NAME_PART_MSG,
    NFOUND,
    NSUP,
    R0,
    REF_MSG,
    REQ,
    SUBDOMAIN_MSG,
    UID,
    UID2,
    allocated,
    capacity_slice,
    claim,
    condition,
    consumer,
    counters_slice,
    ctr,
    device,
    device_class,
    ex,
    exact,
    ext_status,
    first_available_claim,
    mapping,
    opaque,
    per_device_slice,
    pod,
    policy,
    result,
    rslice,
    taint_rule,
    template,
    with_,
)

NS = "validation-http"
ADMIN_NS = "validation-http-admin"  # labeled resource.kubernetes.io/admin-access=true
JSON, MERGE, YAML = "application/json", "application/merge-patch+json", "application/yaml"

RC, RCT, DC, RS, DTR, POD = ("resourceclaims", "resourceclaimtemplates", "deviceclasses", "resourceslices",
                             "devicetaintrules", "pods")
KINDS = {  # plural -> (api prefix, group, kind, namespaced)
    RC: ("/apis/resource.k8s.io/v1", "resource.k8s.io", "ResourceClaim", True),
    RCT: ("/apis/resource.k8s.io/v1", "resource.k8s.io", "ResourceClaimTemplate", True),
    DC: ("/apis/resource.k8s.io/v1", "resource.k8s.io", "DeviceClass", False),
    RS: ("/apis/resource.k8s.io/v1", "resource.k8s.io", "ResourceSlice", False),
    DTR: ("/apis/resource.k8s.io/v1", "resource.k8s.io", "DeviceTaintRule", False),
    POD: ("/api/v1", "", "Pod", True),
}
REASONS = {400: "BadRequest", 404: "NotFound", 409: "Conflict", 422: "Invalid"}


# --- the table ---


@dataclass
class Step:
    method: str  # POST (create the case's object, or `body`), PUT (GET, mutate, PUT), PATCH, DELETE
    sub: str = ""  # subresource: "" or "status"
    body: Any = None  # POST/PATCH: dict or bytes; PUT: a function changing the object read back
    query: str = ""
    content_type: str = JSON


def create(body: Any = None, query: str = "", content_type: str = JSON) -> Step:
    return Step("POST", body=body, query=query, content_type=content_type)


def put(fn: Callable[[dict], Any], sub: str = "") -> Step:
    return Step("PUT", sub, fn)


def patch(body: dict, sub: str = "") -> Step:
    return Step("PATCH", sub, body, content_type=MERGE)


def set_status(status: dict) -> Step:
    """PUT /status with `status` on the object read back."""
    return put(lambda o: o.update(status=copy.deepcopy(status)), "status")


def delete() -> Step:
    return Step("DELETE")


@dataclass
class Case:
    id: str
    resource: str
    obj: dict | None
    steps: list[Step]
    code: int
    causes: list[tuple] = field(default_factory=list)
    reason: str | None = None
    message: str | None = None  # exact; "{name}" stands for the object's name
    contains: str | None = None  # substring of the message
    check: Callable[[dict], Any] | None = None  # on the final response body
    name: str | None = None  # a fixed object name instead of the generated one
    namespace: str = NS
    marks: tuple = ()


CASES: list[Case] = []


def add(id: str, resource: str, obj: dict | None, *causes: tuple, steps: list[Step] | None = None,
        code: int | None = None, **kw: Any) -> None:
    if code is None:
        code = 422 if causes else (201 if steps is None or steps[-1].method == "POST" else 200)
    CASES.append(Case(id, resource, obj, steps or [create()], code, list(causes), **kw))


def bad(id: str, resource: str, obj: dict, *causes: tuple, **kw: Any) -> None:
    assert causes, id
    add(id, resource, obj, *causes, **kw)


def update(id: str, resource: str, obj: dict, fn: Callable[[dict], Any], *causes: tuple,
           before: list[Step] = (), **kw: Any) -> None:
    add(id, resource, obj, *causes, steps=[create(), *before, put(fn)], **kw)


def status(id: str, resource: str, obj: dict, new_status: dict, *causes: tuple, before: list[Step] = (),
           **kw: Any) -> None:
    add(id, resource, obj, *causes, steps=[create(), *before, set_status(new_status)], **kw)


def spec_of(path: str, value: Any) -> Callable[[dict], None]:
    """A mutation setting the dotted `path` (below the object) to `value`."""
    def fn(o: dict) -> None:
        *parents, last = path.split(".")
        for p in parents:
            o = o[int(p)] if isinstance(o, list) else o.setdefault(p, {})
        o[last] = copy.deepcopy(value)
    return fn


def absent(*path: str) -> Callable[[dict], None]:
    def check(body: dict) -> None:
        node: Any = body
        for p in path:
            if isinstance(node, list):
                node = node[int(p)]
            elif isinstance(node, dict) and p in node:
                node = node[p]
            else:
                return
        raise AssertionError(f"{'.'.join(path)} should have been dropped, got {node!r}")
    return check


def equals(value: Any, *path: str) -> Callable[[dict], None]:
    def check(body: dict) -> None:
        node: Any = body
        for p in path:
            node = node[int(p)] if isinstance(node, list) else node.get(p)
        assert node == value, f"{'.'.join(path)}: {node!r} != {value!r}"
    return check


ALLOC = allocated()["status"]  # one device (dev-0) for request foo
CLAIM_STATUS = allocated(reserved=[consumer()])["status"]
BAD_CEL = "device.driver =="
CEL_SYNTAX = ("compilation failed: ERROR: <input>:1:17: Syntax error: mismatched input '<EOF>' expecting {'[', '{', "
              "'(', '.', '-', '!', 'true', 'false', 'null', NUM_FLOAT, NUM_INT, NUM_UINT, STRING, BYTES, IDENTIFIER}"
              "\n | device.driver ==\n | ................^")
CEL_COSTLY = ("device.attributes.map(x, device.attributes.map(y, device.attributes.map(z, device.driver + x + y + z)))"
              ".size() > 0")
ADMIN_MSG = ("Forbidden: admin access to devices requires the `resource.kubernetes.io/admin-access: true` label on "
             "the containing namespace")


def sel(expr: str) -> list:
    return [{"cel": {"expression": expr}}]


# ---------------------------------------------------------------- ResourceClaim: create

add("claim/valid", RC, claim(), check=equals("ExactCount", "spec", "devices", "requests", "0", "exactly",
                                             "allocationMode"))
add("claim/valid-first-available", RC, first_available_claim())
add("claim/valid-empty", RC, claim([]))
add("claim/valid-full", RC, claim(
    [{"name": "foo", "exactly": exact(selectors=sel('device.driver == "dra.example.com"'),
                                      tolerations=[{"key": "example.com/x", "operator": "Equal", "value": "y",
                                                    "effect": "NoSchedule", "tolerationSeconds": 5}],
                                      adminAccess=True)},
     {"name": "bar", "exactly": exact(allocationMode="All", count=None)}],
    constraints=[{"requests": ["foo", "bar"], "matchAttribute": "dra.example.com/numa"},
                 {"distinctAttribute": "dra.example.com/nic"}],
    config=[{"requests": ["foo"], **opaque()}, opaque()]), namespace=ADMIN_NS)
add("claim/defaults", RC, claim([{"name": "foo", "exactly": {"deviceClassName": "foo",
                                                              "tolerations": [{"key": "a"}]}}]),
    check=equals({"deviceClassName": "foo", "allocationMode": "ExactCount", "count": 1,
                  "tolerations": [{"key": "a", "operator": "Equal"}]}, "spec", "devices", "requests", "0",
                 "exactly"))
add("claim/max-requests", RC, claim([{"name": f"r{i}", "exactly": exact()} for i in range(32)]))
add("claim/cel-max-length", RC, ex(selectors=sel('device.driver == "' + "x" * (10240 - 19) + '"')))
add("claim/match-attribute-max-id", RC, claim(constraints=[{"matchAttribute": "dra.example.com/" + "a" * 32}]))
add("claim/max-constraints-and-config", RC, claim(constraints=[{"matchAttribute": "foo/bar"}] * 32,
                                                  config=[opaque()] * 32))
add("claim/config-max-parameters", RC, claim(config=[
    {"opaque": {"driver": "dra.example.com", "parameters": {"x": "y" * (10240 - 8)}}}]))
add("claim/config-uppercase-driver", RC, claim(config=[opaque("DRA.Example.COM")]))
add("claim/toleration-match-all", RC, ex(tolerations=[{"operator": "Exists"}]))
add("claim/constraint-subrequest", RC, first_available_claim(
    constraints=[{"requests": ["foo/bar", "foo"], "matchAttribute": "dra.example.com/numa"}]))
add("claim/status-dropped-on-create", RC, with_(claim(), lambda o: o.update(status=CLAIM_STATUS)),
    check=absent("status", "allocation"))
add("claim/yaml-body", RC, None, steps=[create(
    b"apiVersion: resource.k8s.io/v1\nkind: ResourceClaim\nmetadata:\n  name: {name}\nspec:\n  devices:\n"
    b"    requests:\n    - name: gpu\n      exactly:\n        deviceClassName: gpu.example.com\n",
    content_type=YAML)], check=equals(1, "spec", "devices", "requests", "0", "exactly", "count"))
add("claim/generate-name", RC, with_(claim(), lambda o: o["metadata"].update(name=None, generateName="gen-")),
    check=lambda b: re.fullmatch(r"gen-[a-z0-9]{5}", b["metadata"]["name"]) or pytest.fail(b["metadata"]))

bad("claim/missing-classname", RC, ex(deviceClassName=""), (EX + ".deviceClassName", REQ, "Required value"),
    message='ResourceClaim.resource.k8s.io "{name}" is invalid: spec.devices.requests[0].exactly.deviceClassName: '
            "Required value")
bad("claim/bad-classname", RC, ex(deviceClassName=BAD_NAME),
    (EX + ".deviceClassName", INV, f'Invalid value: "{BAD_NAME}": {SUBDOMAIN_MSG}'))
bad("claim/long-classname", RC, ex(deviceClassName="a" * 254),
    (EX + ".deviceClassName", INV, f'Invalid value: "{"a" * 254}": must be no more than 253 characters'))
bad("claim/bad-request-name", RC, claim([{"name": BAD_NAME, "exactly": exact()}]),
    (R0 + ".name", INV, f'Invalid value: "{BAD_NAME}": {LABEL_MSG}'))
bad("claim/empty-request-name", RC, claim([{"name": "", "exactly": exact()}]),
    (R0 + ".name", INV, f'Invalid value: "": {LABEL_MSG}'))
bad("claim/duplicate-request", RC, claim([{"name": "foo", "exactly": exact()}, {"name": "foo", "exactly": exact()}]),
    ("spec.devices.requests[1]", DUP, 'Duplicate value: "foo"'),
    message='ResourceClaim.resource.k8s.io "{name}" is invalid: spec.devices.requests[1]: Duplicate value: "foo"')
bad("claim/no-request-type", RC, claim([{"name": "foo"}]),
    (R0, REQ, "Required value: exactly one of `exactly` or `firstAvailable` is required"))
bad("claim/both-request-types", RC, with_(first_available_claim(), lambda o: o["spec"]["devices"]["requests"][0]
                                          .update(exactly=exact())),
    (R0, INV, "Invalid value: null: exactly one of `exactly` or `firstAvailable` is required, but multiple fields "
              "are set"))
bad("claim/too-many-requests", RC, claim([{"name": f"r{i}", "exactly": exact()} for i in range(33)]),
    ("spec.devices.requests", MANY, "Too many: 33: must have at most 32 items"))
bad("claim/too-many-subrequests", RC, claim([{"name": "foo", "firstAvailable": [
    {"name": f"s{i}", "deviceClassName": "foo", "allocationMode": "ExactCount", "count": 1} for i in range(9)]}]),
    (R0 + ".firstAvailable", MANY, "Too many: 9: must have at most 8 items"))
bad("claim/duplicate-subrequest", RC, with_(first_available_claim(), lambda o: o["spec"]["devices"]["requests"][0][
    "firstAvailable"][1].update(name="foo")), (R0 + ".firstAvailable[1]", DUP, 'Duplicate value: "foo"'))
bad("claim/bad-subrequest", RC, with_(first_available_claim(), lambda o: o["spec"]["devices"]["requests"][0][
    "firstAvailable"][0].update(name=BAD_NAME, deviceClassName="")),
    (R0 + ".firstAvailable[0].name", INV, f'Invalid value: "{BAD_NAME}": {LABEL_MSG}'),
    (R0 + ".firstAvailable[0].deviceClassName", REQ))
bad("claim/subrequest-count", RC, with_(first_available_claim(), lambda o: o["spec"]["devices"]["requests"][0][
    "firstAvailable"][1].update(count=0)),
    (R0 + ".firstAvailable[1].count", INV, "Invalid value: 0: must be greater than zero"))
bad("claim/all-with-count", RC, ex(allocationMode="All", count=2),
    (EX + ".count", INV, "Invalid value: 2: must not be specified when allocationMode is 'All'"))
bad("claim/exact-count-zero", RC, ex(count=0), (EX + ".count", INV, "Invalid value: 0: must be greater than zero"))
bad("claim/exact-count-negative", RC, ex(count=-1),
    (EX + ".count", INV, "Invalid value: -1: must be greater than zero"))
bad("claim/bad-allocation-mode", RC, ex(allocationMode="Some"),
    (EX + ".allocationMode", NSUP, 'Unsupported value: "Some": supported values: "All", "ExactCount"'))
bad("claim/too-many-selectors", RC, ex(selectors=sel("true") * 33),
    (EX + ".selectors", MANY, "Too many: 33: must have at most 32 items"))
bad("claim/selector-without-cel", RC, ex(selectors=[{}]), (EX + ".selectors[0].cel", REQ, "Required value"))
bad("claim/cel-too-long", RC, ex(selectors=sel("x" * 10241)),
    (EX + ".selectors[0].cel.expression", LONG, "Too long: may not be more than 10240 bytes"))
bad("claim/constraint-without-attribute", RC, claim(constraints=[{}]),
    ("spec.devices.constraints[0]", REQ, 'Required value: exactly one of "matchAttribute" or "distinctAttribute" '
                                         "is required, but multiple fields are set"))
bad("claim/match-attribute-missing-domain", RC, claim(constraints=[{"matchAttribute": "missing-domain"}]),
    ("spec.devices.constraints[0].matchAttribute", INV, f'Invalid value: "missing-domain": {C_IDENT_MSG}'),
    ("spec.devices.constraints[0].matchAttribute", INV, f'Invalid value: "missing-domain": {FQN_MSG}'))
bad("claim/match-attribute-empty-domain", RC, claim(constraints=[{"matchAttribute": "/numa"}]),
    ("spec.devices.constraints[0].matchAttribute", INV, 'Invalid value: "": the domain must not be empty'))
bad("claim/match-attribute-empty-name", RC, claim(constraints=[{"matchAttribute": "dra.example.com/"}]),
    ("spec.devices.constraints[0].matchAttribute", INV, 'Invalid value: "": the name must not be empty'))
bad("claim/match-attribute-bad-domain", RC, claim(constraints=[{"matchAttribute": "bad_domain/numa"}]),
    ("spec.devices.constraints[0].matchAttribute", INV, f'Invalid value: "bad_domain": {SUBDOMAIN_MSG}'))
bad("claim/match-attribute-long-domain", RC, claim(constraints=[{"matchAttribute": "a" * 64 + "/numa"}]),
    ("spec.devices.constraints[0].matchAttribute", LONG, "Too long: may not be more than 63 bytes"))
bad("claim/match-attribute-long-id", RC, claim(constraints=[{"matchAttribute": "dra.example.com/" + "a" * 33}]),
    ("spec.devices.constraints[0].matchAttribute", LONG, "Too long: may not be more than 32 bytes"))
bad("claim/match-attribute-two-slashes", RC, claim(constraints=[{"matchAttribute": "a/b/c"}]),
    ("spec.devices.constraints[0].matchAttribute", INV, 'Invalid value: "a/b/c": must not contain more than one '
                                                        "slash"))
bad("claim/distinct-attribute-bad", RC, claim(constraints=[{"distinctAttribute": "nic"}]),
    ("spec.devices.constraints[0].distinctAttribute", INV, f'Invalid value: "nic": {FQN_MSG}'))
bad("claim/constraint-unknown-request", RC, claim(constraints=[{"requests": ["bar"],
                                                                "matchAttribute": "dra.example.com/numa"}]),
    ("spec.devices.constraints[0].requests[0]", INV, f'Invalid value: "bar": {REF_MSG}'))
bad("claim/constraint-bad-request", RC, claim(constraints=[{"requests": ["foo", BAD_NAME],
                                                            "matchAttribute": "dra.example.com/numa"}]),
    ("spec.devices.constraints[0].requests[1]", INV, f'Invalid value: "{BAD_NAME}": {LABEL_MSG}'),
    ("spec.devices.constraints[0].requests[1]", INV, f'Invalid value: "{BAD_NAME}": {REF_MSG}'))
bad("claim/constraint-bad-request-format", RC, claim(constraints=[{"requests": ["foo/foo/foo"],
                                                                   "matchAttribute": "dra.example.com/numa"}]),
    ("spec.devices.constraints[0].requests[0]", INV, f'Invalid value: "foo/foo/foo": {REF_MSG}'))
bad("claim/constraint-unknown-subrequest", RC, first_available_claim(
    constraints=[{"requests": ["foo/baz"], "matchAttribute": "dra.example.com/numa"}]),
    ("spec.devices.constraints[0].requests[0]", INV, f'Invalid value: "foo/baz": {REF_MSG}'))
bad("claim/constraint-subrequest-of-exact", RC, claim(constraints=[{"requests": ["foo/foo"],
                                                                    "matchAttribute": "dra.example.com/numa"}]),
    ("spec.devices.constraints[0].requests[0]", INV, f'Invalid value: "foo/foo": {REF_MSG}'))
bad("claim/constraint-duplicate-request", RC, claim(constraints=[{"requests": ["foo", "foo"],
                                                                  "matchAttribute": "dra.example.com/numa"}]),
    ("spec.devices.constraints[0].requests[1]", DUP, 'Duplicate value: "foo"'))
bad("claim/too-many-constraints", RC, claim(constraints=[{"matchAttribute": "foo/bar"}] * 33),
    ("spec.devices.constraints", MANY, "Too many: 33: must have at most 32 items"))
bad("claim/too-many-configs", RC, claim(config=[opaque()] * 33),
    ("spec.devices.config", MANY, "Too many: 33: must have at most 32 items"))
bad("claim/config-without-opaque", RC, claim(config=[{"requests": ["foo"]}]),
    ("spec.devices.config[0].opaque", REQ, "Required value"))
bad("claim/config-unknown-request", RC, claim(config=[{"requests": ["bar"], **opaque()}]),
    ("spec.devices.config[0].requests[0]", INV, f'Invalid value: "bar": {REF_MSG}'))
bad("claim/config-bad-driver", RC, claim(config=[opaque(BAD_NAME)]),
    ("spec.devices.config[0].opaque.driver", INV, f'Invalid value: "{BAD_NAME}": {SUBDOMAIN_MSG}'))
bad("claim/config-empty-driver", RC, claim(config=[opaque("")]),
    ("spec.devices.config[0].opaque.driver", REQ, "Required value"),
    ("spec.devices.config[0].opaque.driver", INV, f'Invalid value: "": {SUBDOMAIN_MSG}'))
bad("claim/config-long-driver", RC, claim(config=[opaque("a" * 64)]),
    ("spec.devices.config[0].opaque.driver", LONG, "Too long: may not be more than 63 bytes"))
bad("claim/config-missing-parameters", RC, claim(config=[{"opaque": {"driver": "dra.example.com"}}]),
    ("spec.devices.config[0].opaque.parameters", REQ, "Required value"))
bad("claim/config-array-parameters", RC, claim(config=[{"opaque": {"driver": "dra.example.com",
                                                                   "parameters": [1, 2]}}]),
    ("spec.devices.config[0].opaque.parameters", INV, 'Invalid value: "<value omitted>": must be a valid JSON '
                                                      "object"))
bad("claim/config-string-parameters", RC, claim(config=[{"opaque": {"driver": "dra.example.com",
                                                                    "parameters": "x"}}]),
    ("spec.devices.config[0].opaque.parameters", INV))
bad("claim/config-large-parameters", RC, claim(config=[{"opaque": {"driver": "dra.example.com",
                                                                   "parameters": {"x": "y" * 10240}}}]),
    ("spec.devices.config[0].opaque.parameters", LONG, "Too long: may not be more than 10240 bytes"))
bad("claim/toleration-bad-key", RC, ex(tolerations=[{"key": BAD_NAME, "operator": "Exists"}]),
    (EX + ".tolerations[0].key", INV, f'Invalid value: "{BAD_NAME}": {NAME_PART_MSG}'))
bad("claim/toleration-exists-with-value", RC, ex(tolerations=[{"key": "a", "operator": "Exists", "value": "b"}]),
    (EX + ".tolerations[0].value", INV, 'Invalid value: "b": must be empty for operator `Exists`'))
bad("claim/toleration-bad-value", RC, ex(tolerations=[{"key": "a", "operator": "Equal", "value": "a b"}]),
    (EX + ".tolerations[0].value", INV, f'Invalid value: "a b": {LABEL_VALUE_MSG}'))
bad("claim/toleration-bad-operator", RC, ex(tolerations=[{"key": "a", "operator": "In"}]),
    (EX + ".tolerations[0].operator", NSUP, 'Unsupported value: "In": supported values: "Equal", "Exists"'))
bad("claim/toleration-bad-effect", RC, ex(tolerations=[{"operator": "Exists", "effect": "PreferNoSchedule"}]),
    (EX + ".tolerations[0].effect", NSUP, 'Unsupported value: "PreferNoSchedule": supported values: "NoExecute", '
                                          '"NoSchedule", "None"'))
bad("claim/subrequest-toleration", RC, with_(first_available_claim(), lambda o: o["spec"]["devices"]["requests"][0][
    "firstAvailable"][0].update(tolerations=[{"operator": "Equal", "effect": "Bad"}])),
    (R0 + ".firstAvailable[0].tolerations[0].effect", NSUP))
bad("claim/many-errors", RC, claim([{"name": "foo", "exactly": exact("", count=0)}, {"name": "foo"}],
                                   constraints=[{"matchAttribute": "x"}]),
    (EX + ".deviceClassName", REQ), (EX + ".count", INV), ("spec.devices.requests[1]", DUP),
    ("spec.devices.requests[1]", REQ),
    ("spec.devices.constraints[0].matchAttribute", INV, f'Invalid value: "x": {FQN_MSG}'))
# metadata
bad("claim/bad-name", RC, claim(), ("metadata.name", INV, f'Invalid value: "Bad_Name": {SUBDOMAIN_MSG}'),
    name="Bad_Name")
bad("claim/missing-name", RC, claim(), ("metadata.name", REQ, "Required value: name or generateName is required"),
    name="")
bad("claim/bad-label", RC, with_(claim(), lambda o: o["metadata"].update(labels={"a": "b c"})),
    ("metadata.labels", INV, f'Invalid value: "b c": {LABEL_VALUE_MSG}'))
# admin access needs the namespace label (pkg/registry/resource/utils.go AuthorizedForAdmin)
bad("claim/admin-access-unlabeled-namespace", RC, ex(adminAccess=True),
    ("spec.devices.requests[0].adminAccess", FORB, ADMIN_MSG))
add("claim/admin-access-labeled-namespace", RC, ex(adminAccess=True), namespace=ADMIN_NS)
# gated fields are dropped while their gate is off (DRADerivedAttributes is alpha, off by default)
add("claim/derived-attributes-dropped-gate-off", RC, claim(
    [{"name": "foo", "exactly": exact(derivedAttributes=[{"name": "derived/numa", "expression": "1"}])}],
    constraints=[{"matchAttribute": "derived/numa"}]),
    check=absent("spec", "devices", "requests", "0", "exactly", "derivedAttributes"))
# CEL selectors, compiled at the field they are written at
bad("claim/cel-syntax-error", RC, ex(selectors=sel(BAD_CEL)),
    (EX + ".selectors[0].cel.expression", INV, f'Invalid value: "{BAD_CEL}": {CEL_SYNTAX}'))
bad("claim/cel-undeclared-reference", RC, ex(selectors=sel("true") + sel("foo == 1")),
    (EX + ".selectors[1].cel.expression", INV,
     "Invalid value: \"foo == 1\": compilation failed: ERROR: <input>:1:1: undeclared reference to 'foo' (in "
     "container '')\n | foo == 1\n | ^"))
bad("claim/cel-no-overload", RC, ex(selectors=sel("device.driver == 1")),
    (EX + ".selectors[0].cel.expression", INV,
     "Invalid value: \"device.driver == 1\": compilation failed: ERROR: <input>:1:15: found no matching overload "
     "for '_==_' applied to '(string, int)'\n | device.driver == 1\n | ..............^"))
bad("claim/cel-not-bool", RC, ex(selectors=sel("device.driver")),
    (EX + ".selectors[0].cel.expression", INV,
     'Invalid value: "device.driver": must evaluate to bool or the unknown type, not string'))
bad("claim/cel-too-costly", RC, ex(selectors=sel(CEL_COSTLY)),
    (EX + ".selectors[0].cel.expression", FORB, "Forbidden: too complex, exceeds cost limit"))
bad("claim/cel-in-subrequest", RC, with_(first_available_claim(), lambda o: o["spec"]["devices"]["requests"][0][
    "firstAvailable"][1].update(selectors=sel(BAD_CEL))),
    (R0 + ".firstAvailable[1].selectors[0].cel.expression", INV))
add("claim/cel-valid-attributes-and-capacity", RC, ex(selectors=sel(
    'device.attributes["dra.example.com"].model == "x" && '
    'device.capacity["dra.example.com"].memory.compareTo(quantity("1Gi")) >= 0')))

# ---------------------------------------------------------------- structural errors and field validation (400)

BADREQ_PREFIX = 'ResourceClaim in version "v1" cannot be handled as a ResourceClaim: '
add("structural/malformed-json", RC, None, steps=[create(b'{"apiVersion":')], code=400,
    contains="couldn't get version/kind; json parse error: ")
# transformDecodeError (apiserver handlers/rest.go): no kind could be read, so the body is summarized
add("structural/malformed-json-message", RC, None, steps=[create(b'{"apiVersion":')], code=400,
    message="the object provided is unrecognized (must be of type ResourceClaim): couldn't get version/kind; "
            'json parse error: unexpected end of JSON input ({"apiVersion":)')
add("structural/type-mismatch", RC, ex(count="x"), code=400,
    contains=BADREQ_PREFIX + "json: cannot unmarshal string into Go struct field ")
# sigs.k8s.io/json's UnmarshalTypeError: "<struct type>.<json path without indices>" (as in the well-known
# `Go struct field DeploymentSpec.spec.replicas of type int32`).
add("structural/type-mismatch-message", RC, ex(count="x"), code=400,
    message=BADREQ_PREFIX + "json: cannot unmarshal string into Go struct field "
                            "ExactDeviceRequest.spec.devices.requests.exactly.count of type int64")
add("structural/bool-mismatch", RC, ex(adminAccess="yes"), code=400,
    contains="json: cannot unmarshal string into Go struct field ")
add("structural/spec-not-object", RC, with_(claim(), lambda o: o.update(spec="x")), code=400,
    contains=BADREQ_PREFIX + "json: cannot unmarshal string into Go struct field ")
add("structural/requests-not-list", RC, with_(claim(), lambda o: o["spec"]["devices"].update(requests={})),
    code=400, contains=BADREQ_PREFIX + "json: cannot unmarshal object into Go struct field ")
add("structural/count-float", RC, ex(count=1.5), code=400,
    contains=BADREQ_PREFIX + "json: cannot unmarshal number 1.5 into Go struct field ")
add("structural/count-overflows-int64", RC, ex(count=2 ** 64), code=400,
    contains=BADREQ_PREFIX + "json: cannot unmarshal number 18446744073709551616 into Go struct field ")
add("structural/unknown-field-strict", RC, with_(ex(), lambda o: o["spec"]["devices"]["requests"][0]["exactly"]
                                                 .update(bogus=1)),
    steps=[create(query="?fieldValidation=Strict")], code=400,
    message=BADREQ_PREFIX + 'strict decoding error: unknown field "spec.devices.requests[0].exactly.bogus"')
add("structural/unknown-fields-strict", DC, with_(device_class(), lambda o: o.update(foo=1)
                                                  or o["spec"].update(bar=2)),
    steps=[create(query="?fieldValidation=Strict")], code=400,
    message='DeviceClass in version "v1" cannot be handled as a DeviceClass: strict decoding error: '
            'unknown field "spec.bar", unknown field "foo"')  # in the order the decoder meets them
add("structural/duplicate-field-strict", RC, None, steps=[create(
    b'{"apiVersion":"resource.k8s.io/v1","kind":"ResourceClaim","metadata":{"name":"{name}","name":"{name}"},'
    b'"spec":{}}', query="?fieldValidation=Strict")], code=400,
    message=BADREQ_PREFIX + 'strict decoding error: duplicate field "metadata.name"')
add("structural/unknown-field-ignore", RC, with_(claim(), lambda o: o["spec"].update(bogus=1)),
    steps=[create(query="?fieldValidation=Ignore")], check=absent("spec", "bogus"))
# The body decodes as a v1 DeviceClass, which the codec cannot convert into the internal ResourceClaim.
add("structural/wrong-kind", RC, with_(claim(), lambda o: o.update(kind="DeviceClass")), code=400,
    contains='DeviceClass in version "v1" cannot be handled as a ResourceClaim: ')
add("structural/other-api-version", RC, with_(claim(), lambda o: o.update(apiVersion="resource.k8s.io/v1beta1")),
    code=400, message="the API version in the data (resource.k8s.io/v1beta1) does not match the expected API "
                      "version (resource.k8s.io/v1)")
add("structural/unregistered-api-version", RC, with_(claim(), lambda o: o.update(apiVersion="resource.k8s.io/v2")),
    code=400, contains='ResourceClaim in version "v2" cannot be handled as a ResourceClaim: no kind "ResourceClaim" '
                       'is registered for version "resource.k8s.io/v2"')
add("structural/namespace-mismatch", RC, with_(claim(), lambda o: o["metadata"].update(namespace="elsewhere")),
    code=400, message="the namespace of the provided object does not match the namespace sent on the request")
add("structural/put-name-mismatch", RC, claim(), steps=[create(), put(lambda o: o["metadata"].update(name="other"))],
    code=400, message="the name of the object (other) does not match the name on the URL ({name})")
add("structural/yaml-invalid-object", RC, None, (EX + ".count", INV, "Invalid value: 0: must be greater than zero"),
    steps=[create(
    b"apiVersion: resource.k8s.io/v1\nkind: ResourceClaim\nmetadata:\n  name: {name}\nspec:\n  devices:\n"
    b"    requests:\n    - name: a\n      exactly: {deviceClassName: x, count: 0}\n", content_type=YAML)])

# ---------------------------------------------------------------- ResourceClaim: update and /status

update("claim-update/labels", RC, claim(), lambda o: o["metadata"].update(labels={"a": "b"}),
       check=equals({"a": "b"}, "metadata", "labels"))
update("claim-update/spec-immutable", RC, claim(), spec_of("spec.devices.requests.0.exactly.count", 2),
       ("spec", INV), contains="field is immutable")
update("claim-update/spec-immutable-add-request", RC, claim(), lambda o: o["spec"]["devices"]["requests"].append(
    {"name": "bar", "exactly": exact()}), ("spec", INV), contains="field is immutable")
update("claim-update/invalid-label", RC, claim(), lambda o: o["metadata"].update(labels={"a": "-"}),
       ("metadata.labels", INV, f'Invalid value: "-": {LABEL_VALUE_MSG}'))
update("claim-update/status-ignored", RC, claim(), lambda o: o.update(status=CLAIM_STATUS),
       check=absent("status", "allocation"))
add("claim-update/merge-patch-spec", RC, claim(), ("spec", INV),
    steps=[create(), patch({"spec": {"devices": {"requests": [{"name": "x", "exactly": exact()}]}}})])
status("claim-status/valid-allocation", RC, claim(), allocated(reserved=[consumer()], config=[
    {"source": "FromClaim", "requests": ["foo"], **opaque()}, {"source": "FromClass", **opaque()}],
    node_selector={"nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In",
                                                           "values": ["worker"]}]}]})["status"],
    check=equals([consumer()], "status", "reservedFor"))
add("claim-status/spec-ignored", RC, claim(), steps=[create(), put(lambda o: o.update(status=ALLOC) or o["spec"][
    "devices"]["requests"][0]["exactly"].update(count=5), "status")],
    check=equals(1, "spec", "devices", "requests", "0", "exactly", "count"))
add("claim-status/merge-patch", RC, claim(), steps=[create(), patch({"status": CLAIM_STATUS}, "status")],
    check=equals(CLAIM_STATUS, "status"))
status("claim-status/result-unknown-request", RC, claim(), allocated([result("bar")])["status"],
       ("status.allocation.devices.results[0].request", INV, f'Invalid value: "bar": {REF_MSG}'))
status("claim-status/result-subrequest", RC, first_available_claim(),
       allocated([result("foo/bar")], base=first_available_claim())["status"])
status("claim-status/result-subrequest-unknown", RC, first_available_claim(),
       allocated([result("foo/baz")], base=first_available_claim())["status"],
       ("status.allocation.devices.results[0].request", INV))
status("claim-status/result-bad-names", RC, claim(),
       allocated([result(driver=BAD_NAME, pool="", device=BAD_NAME)])["status"],
       ("status.allocation.devices.results[0].driver", INV),
       ("status.allocation.devices.results[0].pool", REQ),
       ("status.allocation.devices.results[0].device", INV, f'Invalid value: "{BAD_NAME}": {LABEL_MSG}'))
status("claim-status/too-many-results", RC, claim(), allocated([result()] * 33)["status"],
       ("status.allocation.devices.results", MANY, "Too many: 33: must have at most 32 items"))
status("claim-status/too-many-configs", RC, claim(),
       allocated(config=[{"source": "FromClass", **opaque()}] * 65)["status"],
       ("status.allocation.devices.config", MANY, "Too many: 65: must have at most 64 items"))
status("claim-status/config-source", RC, claim(), allocated(config=[opaque(), {"source": "FromPod", **opaque()}])[
    "status"], ("status.allocation.devices.config[0].source", REQ),
    ("status.allocation.devices.config[1].source", NSUP, 'Unsupported value: "FromPod": supported values: '
                                                         '"FromClaim", "FromClass"'))
status("claim-status/reserved-without-allocation", RC, claim(), {"reservedFor": [consumer()]},
       ("status.reservedFor", FORB, "Forbidden: may not be specified when `allocated` is not set"),
       message='ResourceClaim.resource.k8s.io "{name}" is invalid: status.reservedFor: Forbidden: may not be '
               "specified when `allocated` is not set")
status("claim-status/reserved-duplicate-uid", RC, claim(),
       allocated(reserved=[consumer(), consumer(name="bar")])["status"],
       ("status.reservedFor[1]", DUP, f'Duplicate value: "{UID}"'))
status("claim-status/reserved-missing-fields", RC, claim(), allocated(reserved=[{}])["status"],
       ("status.reservedFor[0].resource", REQ), ("status.reservedFor[0].name", REQ),
       ("status.reservedFor[0].uid", REQ))
status("claim-status/reserved-max", RC, claim(), allocated(reserved=[
    consumer(f"{i:08d}-2ead-46d9-b8b4-4e0fbeb7455d") for i in range(256)])["status"],
    check=lambda b: len(b["status"]["reservedFor"]) == 256 or pytest.fail("256 consumers expected"))
status("claim-status/reserved-too-many", RC, claim(), allocated(reserved=[
    consumer(f"{i:08d}-2ead-46d9-b8b4-4e0fbeb7455d") for i in range(257)])["status"],
    ("status.reservedFor", MANY, "Too many: 257: must have at most 256 items"))
status("claim-status/reserved-added-later", RC, claim(), allocated(reserved=[consumer(), consumer(UID2)])["status"],
       before=[set_status(CLAIM_STATUS)],
       check=lambda b: [r["uid"] for r in b["status"]["reservedFor"]] == [UID, UID2] or pytest.fail(b["status"]))
status("claim-status/reserved-removed", RC, claim(), ALLOC, before=[set_status(CLAIM_STATUS)],
       check=absent("status", "reservedFor"))
status("claim-status/reserved-duplicate-added-later", RC, claim(),
       allocated(reserved=[consumer(), consumer(name="other")])["status"], ("status.reservedFor[1]", DUP),
       before=[set_status(CLAIM_STATUS)])
add("claim-status/reserved-added-while-deleting", RC, with_(claim(), lambda o: o["metadata"].update(
    finalizers=["example.com/hold"])), ("status.reservedFor", FORB,
                                        "Forbidden: new entries may not be added while `deallocationRequested` or "
                                        "`deletionTimestamp` are set"),
    steps=[create(), set_status(CLAIM_STATUS), delete(),
           set_status(allocated(reserved=[consumer(), consumer(UID2)])["status"])])
add("claim-status/reserved-removed-while-deleting", RC, with_(claim(), lambda o: o["metadata"].update(
    finalizers=["example.com/hold"])),
    steps=[create(), set_status(allocated(reserved=[consumer(), consumer(UID2)])["status"]), delete(),
           set_status(CLAIM_STATUS)], check=equals([consumer()], "status", "reservedFor"))
status("claim-status/allocation-immutable", RC, claim(), allocated([result(device="dev-1")])["status"],
       ("status.allocation", INV), before=[set_status(ALLOC)], contains="field is immutable")
status("claim-status/allocation-unchanged", RC, claim(), CLAIM_STATUS, before=[set_status(ALLOC)])
status("claim-status/allocation-cleared", RC, claim(), {}, before=[set_status(CLAIM_STATUS)],
       check=absent("status", "allocation"))
status("claim-status/allocation-set-again", RC, claim(), allocated([result(device="dev-1")])["status"],
       before=[set_status(ALLOC), set_status({})],
       check=equals("dev-1", "status", "allocation", "devices", "results", "0", "device"))
status("claim-status/device-not-allocated", RC, claim(), allocated(devices=[
    {"driver": "dra.example.com", "pool": "pool", "device": "dev-9"}])["status"],
    ("status.devices[0]", INV, "Invalid value: dra.example.com/pool/dev-9: must be an allocated device in the claim"))
status("claim-status/device-status-valid", RC, claim(), allocated(
    [result(), result(shareID=UID)],
    devices=[{"driver": "dra.example.com", "pool": "pool", "device": "dev-0", "conditions": [condition()],
              "data": {"a": 1}, "networkData": {"interfaceName": "eth0", "hardwareAddress": "ea:9f:cb:40:b1:7b",
                                                "ips": ["10.9.8.0/24", "2001:db8::/64"]}},
             {"driver": "dra.example.com", "pool": "pool", "device": "dev-0", "shareID": UID}])["status"])
status("claim-status/device-duplicate", RC, claim(), allocated(devices=[
    {"driver": "dra.example.com", "pool": "pool", "device": "dev-0"}] * 2)["status"],
    ("status.devices[1]", DUP, "Duplicate value: dra.example.com/pool/dev-0"))
status("claim-status/device-bad-share-id", RC, claim(), allocated([result(shareID="nope")])["status"],
       ("status.allocation.devices.results[0].shareID", INV, 'Invalid value: "nope": error validating uid: invalid '
                                                             "UUID length: 4"))
status("claim-status/device-too-many-conditions", RC, claim(), allocated(devices=[
    {"driver": "dra.example.com", "pool": "pool", "device": "dev-0",
     "conditions": [condition(f"C{i}") for i in range(9)]}])["status"],
    ("status.devices[0].conditions", MANY, "Too many: 9: must have at most 8 items"))
status("claim-status/device-bad-condition", RC, claim(), allocated(devices=[
    {"driver": "dra.example.com", "pool": "pool", "device": "dev-0",
     "conditions": [condition(status="Maybe", reason=""), condition()]}])["status"],
    ("status.devices[0].conditions[0].status", NSUP, 'Unsupported value: "Maybe": supported values: "False", '
                                                     '"True", "Unknown"'),
    ("status.devices[0].conditions[0].reason", REQ, "Required value: must be set"),
    ("status.devices[0].conditions[1].type", DUP))
status("claim-status/device-large-data", RC, claim(), allocated(devices=[
    {"driver": "dra.example.com", "pool": "pool", "device": "dev-0", "data": {"x": "y" * 10240}}])["status"],
    ("status.devices[0].data", LONG, "Too long: may not be more than 10240 bytes"))
status("claim-status/network-data", RC, claim(), allocated(devices=[
    {"driver": "dra.example.com", "pool": "pool", "device": "dev-0",
     "networkData": {"interfaceName": "x" * 257, "hardwareAddress": "x" * 129,
                     "ips": ["300.0.0.1/24", "10.9.8.7/24", "2001:db8::/64", "2001:db8::/64"]}}])["status"],
    ("status.devices[0].networkData.interfaceName", LONG, "Too long: may not be more than 256 bytes"),
    ("status.devices[0].networkData.hardwareAddress", LONG, "Too long: may not be more than 128 bytes"),
    ("status.devices[0].networkData.ips[0]", INV, 'Invalid value: "300.0.0.1/24": must be a valid address in CIDR '
                                                  "form, (e.g. 10.9.8.7/24 or 2001:db8::1/64)"),
    ("status.devices[0].networkData.ips[3]", DUP))
status("claim-status/result-binding-conditions", RC, claim(), allocated([result(bindingConditions=["a"])])["status"],
       ("status.allocation.devices.results[0].bindingFailureConditions", INV,
        "Invalid value: []string(nil): bindingFailureConditions are required to use bindingConditions"))
status("claim-status/result-tolerations", RC, claim(), allocated([result(tolerations=[
    {"operator": "Exists", "value": "x"}])])["status"],
    ("status.allocation.devices.results[0].tolerations[0].value", INV))
status("claim-status/allocation-node-selector", RC, claim(), allocated(node_selector={"nodeSelectorTerms": []})[
    "status"], ("status.allocation.nodeSelector.nodeSelectorTerms", REQ,
                "Required value: must have at least one node selector term"))
status("claim-status/admin-access-unlabeled-namespace", RC, claim(), allocated([result(adminAccess=True)])["status"],
       ("status.allocation.devices.results[0].adminAccess", FORB, ADMIN_MSG))

# ---------------------------------------------------------------- ResourceClaimTemplate

add("template/valid", RCT, template(meta={"labels": {"a": "b"}, "annotations": {"c": "d"}}))
add("template/valid-first-available", RCT, template(first_available_claim()["spec"]["devices"]))
bad("template/forbidden-meta", RCT, template(meta={"name": "x", "namespace": "y", "uid": UID,
                                                   "finalizers": ["a/b"]}),
    ("spec.metadata.name", FORB, "Forbidden: cannot be set for a template"), ("spec.metadata.namespace", FORB),
    ("spec.metadata.uID", FORB), ("spec.metadata.finalizers", FORB))
bad("template/bad-labels", RCT, template(meta={"labels": {"a": "b c"}}),
    ("spec.metadata.labels", INV, f'Invalid value: "b c": {LABEL_VALUE_MSG}'))
bad("template/bad-annotations", RCT, template(meta={"annotations": {BAD_NAME: "x"}}),
    ("spec.metadata.annotations", INV, f'Invalid value: "{BAD_NAME}": {NAME_PART_MSG}'))
bad("template/bad-spec", RCT, template({"requests": [{"name": "foo", "exactly": exact("")}]}),
    ("spec.spec.devices.requests[0].exactly.deviceClassName", REQ),
    message='ResourceClaimTemplate.resource.k8s.io "{name}" is invalid: '
            "spec.spec.devices.requests[0].exactly.deviceClassName: Required value")
bad("template/bad-constraint", RCT, template({"requests": [], "constraints": [{"matchAttribute": "x"}]}),
    ("spec.spec.devices.constraints[0].matchAttribute", INV, f'Invalid value: "x": {FQN_MSG}'))
bad("template/cel-syntax-error", RCT, template({"requests": [{"name": "foo", "exactly": exact(
    selectors=sel(BAD_CEL))}]}),
    ("spec.spec.devices.requests[0].exactly.selectors[0].cel.expression", INV,
     f'Invalid value: "{BAD_CEL}": {CEL_SYNTAX}'))
bad("template/too-many-requests", RCT, template({"requests": [{"name": f"r{i}", "exactly": exact()}
                                                             for i in range(33)]}),
    ("spec.spec.devices.requests", MANY))
bad("template/admin-access-unlabeled-namespace", RCT, template({"requests": [{"name": "foo", "exactly": exact(
    adminAccess=True)}]}), ("spec.devices.requests[0].adminAccess", FORB, ADMIN_MSG))
update("template-update/labels", RCT, template(), lambda o: o["metadata"].update(labels={"a": "b"}))
update("template-update/invalid-label", RCT, template(), lambda o: o["metadata"].update(labels={"a": "-"}),
       ("metadata.labels", INV, f'Invalid value: "-": {LABEL_VALUE_MSG}'))
update("template-update/spec-immutable", RCT, template(), lambda o: o["spec"].update(metadata={"labels": {"a": "b"}}),
       ("spec", INV), contains="field is immutable")
add("template-update/no-status-subresource", RCT, template(), steps=[create(), patch({"status": {}}, "status")],
    code=404)

# ---------------------------------------------------------------- DeviceClass

add("class/valid", DC, device_class(selectors=sel("true"), config=[opaque()], extendedResourceName="example.com/gpu"))
add("class/valid-empty", DC, device_class())
add("class/extended-resource-name-subdomain", DC, device_class(extendedResourceName="gpu.example.com/my_gpu.v2"))
add("class/cel-valid", DC, device_class(selectors=sel("device.allowMultipleAllocations == true")))
bad("class/too-many-selectors", DC, device_class(selectors=[{}] * 33),
    ("spec.selectors", MANY, "Too many: 33: must have at most 32 items"),
    message='DeviceClass.resource.k8s.io "{name}" is invalid: spec.selectors: Too many: 33: must have at most 32 '
            "items")
bad("class/selector-without-cel", DC, device_class(selectors=[{}]), ("spec.selectors[0].cel", REQ))
bad("class/cel-too-long", DC, device_class(selectors=sel("x" * 10241)), ("spec.selectors[0].cel.expression", LONG))
bad("class/too-many-configs", DC, device_class(config=[opaque()] * 33),
    ("spec.config", MANY, "Too many: 33: must have at most 32 items"))
bad("class/config-without-opaque", DC, device_class(config=[{}]), ("spec.config[0].opaque", REQ))
bad("class/config-bad-parameters", DC, device_class(config=[{"opaque": {"driver": "dra.example.com",
                                                                        "parameters": 1}}]),
    ("spec.config[0].opaque.parameters", INV))
for _i, _name in enumerate(("gpu", "kubernetes.io/gpu", "requests.example.com/gpu", "example.com/",
                            "example.com/a b", "example.com/" + "a" * 64, "example.com/gpu/x")):
    bad(f"class/bad-extended-resource-name-{_i}", DC, device_class(extendedResourceName=_name),
        ("spec.extendedResourceName", INV, f'Invalid value: "{_name}": must be a valid extended resource name'))
bad("class/extended-resource-name-deviceclass-prefix", DC, device_class(
    extendedResourceName="deviceclass.resource.kubernetes.io/gpu"), ("spec.extendedResourceName", INV))
bad("class/bad-name", DC, device_class(), ("metadata.name", INV), name="Bad_Class")
bad("class/cel-syntax-error", DC, device_class(selectors=sel("true") + sel(BAD_CEL)),
    ("spec.selectors[1].cel.expression", INV, f'Invalid value: "{BAD_CEL}": {CEL_SYNTAX}'),
    message=f'DeviceClass.resource.k8s.io "{{name}}" is invalid: spec.selectors[1].cel.expression: Invalid value: '
            f'"{BAD_CEL}": {CEL_SYNTAX}')
bad("class/cel-too-costly", DC, device_class(selectors=sel(CEL_COSTLY)),
    ("spec.selectors[0].cel.expression", FORB, "Forbidden: too complex, exceeds cost limit"))
update("class-update/extended-resource-name", DC, device_class(selectors=sel("true")),
       lambda o: o["spec"].update(extendedResourceName="example.com/a"),
       check=equals("example.com/a", "spec", "extendedResourceName"))
update("class-update/bad-selector-added", DC, device_class(selectors=sel("true")),
       lambda o: o["spec"]["selectors"].append({"cel": {"expression": BAD_CEL}}),
       ("spec.selectors[1].cel.expression", INV))
update("class-update/too-many-configs", DC, device_class(), lambda o: o["spec"].update(config=[opaque()] * 33),
       ("spec.config", MANY))
add("class-update/merge-patch-invalid", DC, device_class(), ("spec.extendedResourceName", INV),
    steps=[create(), patch({"spec": {"extendedResourceName": "gpu"}})])

# ---------------------------------------------------------------- ResourceSlice

add("slice/valid", RS, rslice(num=128))
add("slice/valid-all-nodes", RS, rslice(nodeName=None, allNodes=True))
add("slice/valid-node-selector", RS, rslice(nodeName=None, nodeSelector={
    "nodeSelectorTerms": [{"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}]}))
add("slice/valid-shared-counters", RS, counters_slice())
add("slice/valid-per-device", RS, per_device_slice(
    device("a", nodeName="worker"), device("b", allNodes=True),
    device("c", nodeSelector={"nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In",
                                                                      "values": ["w"]}]}]})))
add("slice/valid-consumes-counters", RS, rslice([device(consumesCounters=[
    {"counterSet": "gpu-0", "counters": {"memory": {"value": "4Gi"}}}])]))
add("slice/valid-binding-conditions", RS, rslice([device(bindsToNode=True, bindingConditions=["a", "example.com/b"],
                                                         bindingFailureConditions=["c"])]))
add("slice/valid-capacity-policy", RS, capacity_slice(policy("10Gi", "1Gi", valid_range={
    "min": "1Gi", "max": "10Gi", "step": "1Gi"})))
add("slice/valid-multi-pool-name", RS, rslice(pool={"name": "a.example.com/b/c", "resourceSliceCount": 1}))
add("slice/compatibility-groups-dropped-gate-off", RS, rslice([device(consumesCounters=[
    {"counterSet": "gpu-0", "counters": {"memory": {"value": "4Gi"}}, "compatibilityGroups": ["full"]}])]),
    check=absent("spec", "devices", "0", "consumesCounters", "0", "compatibilityGroups"))
bad("slice/too-many-devices", RS, rslice(num=129),
    ("spec.devices", MANY, "Too many: 129: must have at most 128 items"))
bad("slice/too-many-devices-with-taints", RS, rslice(
    [device(f"d{i}") for i in range(64)] + [device("t", taints=[{"key": "a", "effect": "NoSchedule"}])]),
    ("spec.devices", MANY, "Too many: 65: must have at most 64 items"))
bad("slice/missing-driver", RS, rslice(driver=""), ("spec.driver", REQ), ("spec.driver", INV))
bad("slice/bad-driver", RS, rslice(driver=BAD_NAME),
    ("spec.driver", INV, f'Invalid value: "{BAD_NAME}": {SUBDOMAIN_MSG}'))
bad("slice/long-driver", RS, rslice(driver="a" * 64),
    ("spec.driver", LONG, "Too long: may not be more than 63 bytes"))
bad("slice/missing-pool", RS, with_(rslice(), lambda o: o["spec"].pop("pool")),
    ("spec.pool.name", REQ, "Required value"),
    ("spec.pool.resourceSliceCount", INV, "Invalid value: 0: must be greater than zero"))
bad("slice/bad-pool", RS, rslice(pool={"name": "x/" * 126 + "xy", "resourceSliceCount": 0, "generation": -1}),
    ("spec.pool.name", LONG, "Too long: may not be more than 253 bytes"),
    ("spec.pool.resourceSliceCount", INV, "Invalid value: 0: must be greater than zero"),
    ("spec.pool.generation", INV, "Invalid value: -1: must be greater than or equal to zero"))
bad("slice/bad-multi-pool-name", RS, rslice(pool={"name": f"{BAD_NAME}/{BAD_NAME}", "resourceSliceCount": 1}),
    ("spec.pool.name", INV, f'Invalid value: "{BAD_NAME}": {SUBDOMAIN_MSG}'), ("spec.pool.name", INV))
bad("slice/bad-node-name", RS, rslice(nodeName=BAD_NAME),
    ("spec.nodeName", INV, f'Invalid value: "{BAD_NAME}": {SUBDOMAIN_MSG}'))
bad("slice/empty-node-selection", RS, rslice(nodeName=None),
    ("spec", REQ, "Required value: exactly one of `nodeName`, `nodeSelector`, `allNodes`, `perDeviceNodeSelection` "
                  "is required"),
    message='ResourceSlice.resource.k8s.io "{name}" is invalid: spec: Required value: exactly one of `nodeName`, '
            "`nodeSelector`, `allNodes`, `perDeviceNodeSelection` is required")
bad("slice/shared-counters-without-node-selection", RS, with_(counters_slice(), lambda o: o["spec"].pop("allNodes")),
    ("spec", REQ))
bad("slice/node-name-and-all-nodes", RS, rslice(allNodes=True),
    ("spec", INV, 'Invalid value: "{`nodeName`, `allNodes`}": exactly one of `nodeName`, `nodeSelector`, '
                  "`allNodes`, `perDeviceNodeSelection` is required, but multiple fields are set"))
bad("slice/empty-node-name", RS, rslice(nodeName=""),
    ("spec.nodeName", INV, 'Invalid value: "": must be either unset or set to a non-empty string'), ("spec", REQ))
bad("slice/all-nodes-false", RS, rslice(nodeName=None, allNodes=False),
    ("spec.allNodes", INV, "Invalid value: false: must be either unset or set to true"), ("spec", REQ))
bad("slice/empty-node-selector", RS, rslice(nodeName=None, nodeSelector={}),
    ("spec.nodeSelector.nodeSelectorTerms", REQ, "Required value: must have at least one node selector term"),
    ("spec.nodeSelector.nodeSelectorTerms", INV))
bad("slice/two-node-selector-terms", RS, rslice(nodeName=None, nodeSelector={
    "nodeSelectorTerms": [{"matchExpressions": [{"key": "a", "operator": "Exists"}]}] * 2}),
    ("spec.nodeSelector.nodeSelectorTerms", INV))
bad("slice/bad-node-selector-requirements", RS, rslice(nodeName=None, nodeSelector={
    "nodeSelectorTerms": [{"matchExpressions": [{"key": "a", "operator": "Bad"},
                                                {"key": "b", "operator": "In"},
                                                {"key": "c", "operator": "Exists", "values": ["x"]}],
                           "matchFields": [{"key": "metadata.namespace", "operator": "In", "values": ["x"]}]}]}),
    ("spec.nodeSelector.nodeSelectorTerms[0].matchExpressions[0].operator", INV,
     'Invalid value: "Bad": not a valid selector operator'),
    ("spec.nodeSelector.nodeSelectorTerms[0].matchExpressions[1].values", REQ),
    ("spec.nodeSelector.nodeSelectorTerms[0].matchExpressions[2].values", FORB),
    ("spec.nodeSelector.nodeSelectorTerms[0].matchFields[0].key", INV,
     'Invalid value: "metadata.namespace": not a valid field selector key'))
bad("slice/duplicate-device", RS, rslice([device("a"), device("a")]), ("spec.devices[1]", DUP, 'Duplicate value: "a"'))
bad("slice/bad-device-name", RS, rslice([device("a"), device(BAD_NAME)]),
    ("spec.devices[1].name", INV, f'Invalid value: "{BAD_NAME}": {LABEL_MSG}'))
bad("slice/too-many-attributes-and-capacities", RS, rslice([device(
    attributes={f"a{i}": {"int": i} for i in range(20)}, capacity={f"c{i}": {"value": "1"} for i in range(13)})]),
    ("spec.devices[0]", INV, "Invalid value: 33: the total number of attributes and capacities must not exceed 32"))
bad("slice/bad-attribute-name", RS, rslice([device(attributes={BAD_NAME: {"int": 1}})]),
    ("spec.devices[0].attributes", INV, f'Invalid value: "{BAD_NAME}": {C_IDENT_MSG}'))
bad("slice/attribute-without-value", RS, rslice([device(attributes={"x": {}})]),
    ("spec.devices[0].attributes[x]", INV, 'Invalid value: "": exactly one value must be specified'))
bad("slice/attribute-two-values", RS, rslice([device(attributes={"x": {"string": "a", "version": "1.2.3"}})]),
    ("spec.devices[0].attributes[x]", INV))
bad("slice/attribute-long-string", RS, rslice([device(attributes={"x": {"string": "x" * 65}})]),
    ("spec.devices[0].attributes[x].string", LONG, "Too long: may not be more than 64 bytes"))
bad("slice/attribute-bad-version", RS, rslice([device(attributes={"x": {"version": "x" * 65}})]),
    ("spec.devices[0].attributes[x].version", INV, f'Invalid value: "{"x" * 65}": must be a string compatible '
                                                   "with semver.org spec 2.0.0"),
    ("spec.devices[0].attributes[x].version", LONG))
bad("slice/attribute-domain", RS, rslice([device(attributes={
    "dra.example.com/x": {"int": 1}, "/y": {"int": 1}, "a" * 64 + "/z": {"int": 1}})]),
    ("spec.devices[0].attributes", INV, 'Invalid value: "": the domain must not be empty'),
    ("spec.devices[0].attributes", LONG, "Too long: may not be more than 63 bytes"))
bad("slice/capacity-bad-name", RS, rslice([device(capacity={"1x": {"value": "1"}})]),
    ("spec.devices[0].capacity", INV, f'Invalid value: "1x": {C_IDENT_MSG}'))
add("slice/capacity-bad-quantity", RS, rslice([device(capacity={"memory": {"value": "1 Gi"}})]), code=400,
    message='ResourceSlice in version "v1" cannot be handled as a ResourceSlice: quantities must match the regular '
            "expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'")
add("slice/capacity-canonical-quantity", RS, rslice([device(capacity={"memory": {"value": "1024Mi"}})]),
    check=equals("1Gi", "spec", "devices", "0", "capacity", "memory", "value"))
bad("slice/request-policy-without-multiple-allocations", RS, capacity_slice(policy("10Gi", "1Gi"),
                                                                            allow_multiple=False),
    ("spec.devices[0].capacity[cap].requestPolicy", FORB, "Forbidden: allowMultipleAllocations must be true"))
P = "spec.devices[0].capacity[cap].requestPolicy"
bad("slice/policy-more-than-one", RS, capacity_slice(policy("10Gi", "1Gi", valid_values=["1Gi"],
                                                            valid_range={"min": "1Gi"})),
    (P, FORB, 'Forbidden: exactly one policy can be specified, cannot specify "validValues" and "validRange" at the '
              "same time"))
bad("slice/policy-option-over-capacity", RS, capacity_slice(policy("10Gi", "1Gi", valid_values=["20Gi"])),
    (P + ".validValues[0]", INV, 'Invalid value: "20Gi": option is larger than capacity value: 10Gi'),
    (P + ".validValues", INV, 'Invalid value: "1Gi": default value is not valid according to the requestPolicy'))
bad("slice/policy-unsorted-options", RS, capacity_slice(policy("10Gi", "1Gi", valid_values=["2Gi", "1Gi"])),
    (P + ".validValues[1]", INV, 'Invalid value: "1Gi": values must be sorted in ascending order'))
bad("slice/policy-range-not-multiple-of-step", RS, capacity_slice(policy("10Gi", "2Gi", valid_range={
    "min": "1Gi", "max": "10Gi", "step": "2Gi"})),
    (P + ".validRange.step", INV, 'Invalid value: "2Gi": value is not a multiple of a given step (2Gi) from (1Gi)'),
    (P + ".validRange.step", INV, 'Invalid value: "10Gi": value is not a multiple of a given step (2Gi) from (1Gi)'))
bad("slice/policy-valid-values-without-default", RS, capacity_slice(policy("1Gi", valid_values=["1Gi"])),
    (P + ".default", REQ, "Required value: required when validValues is defined"))
bad("slice/taint-bad", RS, rslice([device(taints=[
    {"key": BAD_NAME, "effect": "NoSchedule"}, {"key": "a", "value": "b c", "effect": "PreferNoSchedule"},
    {"key": "a"}])]),
    ("spec.devices[0].taints[0].key", INV, f'Invalid value: "{BAD_NAME}": {NAME_PART_MSG}'),
    ("spec.devices[0].taints[1].value", INV, f'Invalid value: "b c": {LABEL_VALUE_MSG}'),
    ("spec.devices[0].taints[1].effect", NSUP),
    ("spec.devices[0].taints[2].effect", REQ))
bad("slice/too-many-taints", RS, rslice([device(taints=[{"key": f"k{i}", "effect": "None"} for i in range(17)])]),
    ("spec.devices[0].taints", MANY, "Too many: 17: must have at most 16 items"))
bad("slice/counter-consumption", RS, rslice([device(consumesCounters=[
    {"counterSet": "a", "counters": {"c": {"value": "1"}}}, {"counterSet": "a", "counters": {"c": {"value": "1"}}}]),
    device("d2", consumesCounters=[{"counterSet": "", "counters": {}}])]),
    ("spec.devices[0].consumesCounters[1]", DUP, 'Duplicate value: "a"'),
    ("spec.devices[1].consumesCounters[0].counterSet", REQ),
    ("spec.devices[1].consumesCounters[0].counters", REQ))
bad("slice/shared-counters-bad", RS, counters_slice(sharedCounters=[
    {"name": "a", "counters": {"c": {"value": "1"}}}, {"name": "a", "counters": {"c": {"value": "1"}}},
    {"name": "", "counters": {}}]),
    ("spec.sharedCounters[1]", DUP, 'Duplicate value: "a"'),
    ("spec.sharedCounters[2].name", REQ), ("spec.sharedCounters[2].counters", REQ))
bad("slice/too-many-counter-sets", RS, counters_slice(sharedCounters=[
    {"name": f"s{i}", "counters": {"c": {"value": "1"}}} for i in range(9)]),
    ("spec.sharedCounters", MANY, "Too many: 9: must have at most 8 items"))
bad("slice/counters-and-devices", RS, with_(counters_slice(), lambda o: o["spec"].update(devices=[device()])),
    ("spec", INV, 'Invalid value: "": only one of `sharedCounters` or `devices` is allowed'))
bad("slice/per-device-missing-selection", RS, per_device_slice(device()),
    ("spec.devices[0]", REQ, "Required value: exactly one of `nodeName`, `nodeSelector`, or `allNodes` is required "
                             "when `perDeviceNodeSelection` is set to true in the ResourceSlice spec"))
bad("slice/device-node-name-without-per-device", RS, rslice([device(nodeName="w")]),
    ("spec.devices[0]", INV, "Invalid value: null: `nodeName`, `nodeSelector` and `allNodes` can only be set if "
                             "`perDeviceNodeSelection` is set to true in the ResourceSlice spec"))
bad("slice/binding-conditions-without-failure", RS, rslice([device(bindingFailureConditions=["x"])]),
    ("spec.devices[0].bindingConditions", INV, "Invalid value: []string(nil): bindingConditions are required to use "
                                               "bindingFailureConditions"))
# updates
update("slice-update/driver-pool-node-immutable", RS, rslice(), lambda o: o["spec"].update(
    driver="other.example.com", pool={"name": "bar", "resourceSliceCount": 1}, nodeName="other"),
    ("spec.driver", INV, 'Invalid value: "other.example.com": field is immutable'),
    ("spec.pool.name", INV, 'Invalid value: "bar": field is immutable'),
    ("spec.nodeName", INV, 'Invalid value: "other": field is immutable'))
update("slice-update/node-name-removed", RS, rslice(), lambda o: o["spec"].pop("nodeName") and o["spec"].update(
    allNodes=True), ("spec.nodeName", INV, "Invalid value: null: field is immutable"))
update("slice-update/pool-generation", RS, rslice(), lambda o: o["spec"]["pool"].update(generation=5,
                                                                                        resourceSliceCount=2),
       check=equals(5, "spec", "pool", "generation"))
update("slice-update/devices-changed", RS, rslice(num=2), lambda o: o["spec"]["devices"].pop(),
       check=lambda b: len(b["spec"]["devices"]) == 1 or pytest.fail(b["spec"]))
update("slice-update/invalid-device-added", RS, rslice(), lambda o: o["spec"]["devices"].append(device(BAD_NAME)),
       ("spec.devices[1].name", INV))
add("slice-update/merge-patch-driver", RS, rslice(), ("spec.driver", INV),
    steps=[create(), patch({"spec": {"driver": "other.example.com"}})])
add("slice-update/no-status-subresource", RS, rslice(), steps=[create(), patch({"status": {}}, "status")], code=404)

# ---------------------------------------------------------------- DeviceTaintRule and /status

add("taint-rule/valid", DTR, taint_rule(selector={"driver": "dra.example.com", "pool": "a/b", "device": "dev-0"}))
add("taint-rule/valid-none-effect", DTR, taint_rule({"key": "a", "effect": "None"}))
bad("taint-rule/bad-selector", DTR, taint_rule(selector={"driver": BAD_NAME, "pool": "", "device": BAD_NAME}),
    ("spec.deviceSelector.driver", INV), ("spec.deviceSelector.pool", REQ),
    ("spec.deviceSelector.device", INV, f'Invalid value: "{BAD_NAME}": {LABEL_MSG}'))
bad("taint-rule/missing-effect", DTR, taint_rule({"key": "a"}), ("spec.taint.effect", REQ, "Required value"),
    message='DeviceTaintRule.resource.k8s.io "{name}" is invalid: spec.taint.effect: Required value')
bad("taint-rule/bad-effect", DTR, taint_rule({"key": "a", "effect": "PreferNoSchedule"}),
    ("spec.taint.effect", NSUP, 'Unsupported value: "PreferNoSchedule": supported values: "NoExecute", '
                                '"NoSchedule", "None"'))
bad("taint-rule/missing-key", DTR, taint_rule({"effect": "None"}),
    ("spec.taint.key", INV, 'Invalid value: "": name part must be non-empty'),
    ("spec.taint.key", INV, f'Invalid value: "": {NAME_PART_MSG}'))
bad("taint-rule/bad-value", DTR, taint_rule({"key": "a", "value": "-x", "effect": "None"}),
    ("spec.taint.value", INV, f'Invalid value: "-x": {LABEL_VALUE_MSG}'))
update("taint-rule-update/effect", DTR, taint_rule(), lambda o: o["spec"]["taint"].update(effect="None"),
       check=equals("None", "spec", "taint", "effect"))
update("taint-rule-update/bad-effect", DTR, taint_rule(), lambda o: o["spec"]["taint"].update(effect="Future"),
       ("spec.taint.effect", NSUP))
update("taint-rule-update/status-ignored", DTR, taint_rule(), lambda o: o.update(
    status={"conditions": [condition("EvictionInProgress")]}), check=absent("status", "conditions"))
status("taint-rule-status/valid", DTR, taint_rule(), {"conditions": [condition("EvictionInProgress")]},
       check=equals("EvictionInProgress", "status", "conditions", "0", "type"))
add("taint-rule-status/spec-ignored", DTR, taint_rule(), steps=[create(), patch(
    {"spec": {"taint": {"key": "changed"}}, "status": {"conditions": [condition()]}}, "status")],
    check=equals("example.com/taint", "spec", "taint", "key"))
status("taint-rule-status/too-many-conditions", DTR, taint_rule(), {"conditions": [condition(f"C{i}")
                                                                                   for i in range(9)]},
       ("status.conditions", MANY, "Too many: 9: must have at most 8 items"),
       message='DeviceTaintRule.resource.k8s.io "{name}" is invalid: status.conditions: Too many: 9: must have at '
               "most 8 items")
status("taint-rule-status/bad-condition", DTR, taint_rule(), {"conditions": [
    condition(reason="1bad", observedGeneration=-1, lastTransitionTime=None)]},
    ("status.conditions[0].reason", INV), ("status.conditions[0].observedGeneration", INV),
    ("status.conditions[0].lastTransitionTime", REQ, "Required value: must be set"))
status("taint-rule-status/duplicate-condition", DTR, taint_rule(), {"conditions": [condition(), condition()]},
       ("status.conditions[1].type", DUP))

# ---------------------------------------------------------------- Pod claim fields

add("pod/valid", POD, pod())
add("pod/valid-requests", POD, pod(containers=[
    ctr({"name": "my-claim", "request": "a"}, {"name": "my-claim", "request": "b"}, {"name": "my-template"})],
    initContainers=[ctr({"name": "my-claim"}, name="init")]))
add("pod/no-claims", POD, pod([], [ctr()]))
bad("pod/claim-missing-name", POD, pod([{"resourceClaimName": "x"}], [ctr()]),
    ("spec.resourceClaims[0].name", REQ, "Required value"))
bad("pod/claim-bad-name", POD, pod([{"name": "Bad", "resourceClaimName": "x"}], [ctr()]),
    ("spec.resourceClaims[0].name", INV, f'Invalid value: "Bad": {LABEL_MSG}'),
    message=f'Pod "{{name}}" is invalid: spec.resourceClaims[0].name: Invalid value: "Bad": {LABEL_MSG}')
bad("pod/claim-duplicate-name", POD, pod([{"name": "my-claim", "resourceClaimName": "x"},
                                          {"name": "my-claim", "resourceClaimTemplateName": "y"}]),
    ("spec.resourceClaims[1].name", DUP, 'Duplicate value: "my-claim"'))
bad("pod/claim-neither-source", POD, pod([{"name": "my-claim"}]),
    ("spec.resourceClaims[0]", INV, 'Invalid value: core.PodResourceClaim{Name:"my-claim", '
                                    "ResourceClaimName:(*string)(nil), ResourceClaimTemplateName:(*string)(nil)}: "
                                    "must specify one of: `resourceClaimName`, `resourceClaimTemplateName`"))
bad("pod/claim-both-sources", POD, pod([{"name": "my-claim", "resourceClaimName": "x",
                                         "resourceClaimTemplateName": "y"}]),
    ("spec.resourceClaims[0]", INV))
bad("pod/claim-bad-source-names", POD, pod([{"name": "my-claim", "resourceClaimName": BAD_NAME},
                                            {"name": "t", "resourceClaimTemplateName": "a" * 254}]),
    ("spec.resourceClaims[0].resourceClaimName", INV, f'Invalid value: "{BAD_NAME}": {SUBDOMAIN_MSG}'),
    ("spec.resourceClaims[1].resourceClaimTemplateName", INV))
bad("pod/container-claim-not-found", POD, pod(containers=[ctr({"name": "nope"})]),
    ("spec.containers[0].resources.claims[0]", NFOUND, 'Not found: "nope": must be one of the names in '
                                                       "pod.spec.resourceClaims: my-claim, my-template"))
bad("pod/container-claim-none-defined", POD, pod([], [ctr({"name": "nope"})]),
    ("spec.containers[0].resources.claims[0]", NFOUND, 'Not found: "nope": must be one of the names in '
                                                       "pod.spec.resourceClaims which is empty"))
bad("pod/container-claim-duplicate", POD, pod(containers=[ctr({"name": "my-claim"}, {"name": "my-claim"})]),
    ("spec.containers[0].resources.claims[1]", DUP, 'Duplicate value: "my-claim"'))
bad("pod/container-claim-request-duplicate", POD, pod(containers=[
    ctr({"name": "my-claim", "request": "a"}, {"name": "my-claim", "request": "a"})]),
    ("spec.containers[0].resources.claims[1]", DUP, 'Duplicate value: "my-claim/a"'))
bad("pod/container-claim-whole-after-request", POD, pod(containers=[
    ctr({"name": "my-claim", "request": "a"}, {"name": "my-claim"})]),
    ("spec.containers[0].resources.claims[1]", DUP, 'Duplicate value: "my-claim"'))
bad("pod/container-claim-empty", POD, pod(containers=[ctr({"name": ""})]),
    ("spec.containers[0].resources.claims[0]", REQ))
bad("pod/container-claim-bad-request", POD, pod(containers=[ctr({"name": "my-claim", "request": "A"})]),
    ("spec.containers[0].resources.claims[0].request", INV, f'Invalid value: "A": {LABEL_MSG}'))
bad("pod/init-container-claim-not-found", POD, pod(initContainers=[ctr({"name": "x"}, name="init")]),
    ("spec.initContainers[0].resources.claims[0]", NFOUND))
bad("pod/pod-level-claims", POD, pod(resources={"claims": [{"name": "my-claim"}]}),
    ("spec.resources.claims", FORB, "Forbidden: claims cannot be set for Resources at pod-level"))
update("pod-update/resource-claims-immutable", POD, pod(), lambda o: o["spec"]["resourceClaims"][0].update(
    resourceClaimName="other"), ("spec", FORB), contains="pod updates may not change fields")
add("pod-status/valid", POD, pod(), steps=[create(), patch({"status": {"resourceClaimStatuses": [
    {"name": "my-template", "resourceClaimName": "pod-my-template-abcde"}, {"name": "my-claim"}]}}, "status")],
    check=equals("pod-my-template-abcde", "status", "resourceClaimStatuses", "0", "resourceClaimName"))
add("pod-status/unknown-claim", POD, pod(), ("status.resourceClaimStatuses[0].name", INV,
                                             'Invalid value: "other": must match the name of an entry in '
                                             "`spec.resourceClaims`"),
    steps=[create(), patch({"status": {"resourceClaimStatuses": [{"name": "other", "resourceClaimName": "x"}]}},
                           "status")])
add("pod-status/duplicate", POD, pod(), ("status.resourceClaimStatuses[1].name", DUP),
    steps=[create(), set_status({"resourceClaimStatuses": [{"name": "my-template"}, {"name": "my-template"}]})])
add("pod-status/bad-claim-name", POD, pod(), ("status.resourceClaimStatuses[0].name", INV,
                                              f'Invalid value: "{BAD_NAME}": {SUBDOMAIN_MSG}'),
    steps=[create(), set_status({"resourceClaimStatuses": [{"name": "my-template", "resourceClaimName": BAD_NAME}]})])
add("pod-status/extended-valid", POD, pod([], GPU_CTR), steps=[create(), set_status(ext_status(mapping()))],
    check=equals("pod-extended-resources-x", "status", "extendedResourceClaimStatus", "resourceClaimName"))
add("pod-status/extended-no-mappings", POD, pod([], GPU_CTR), ("status.extendedResourceClaimStatus.requestMappings",
                                                               REQ, "Required value: at least one request mapping "
                                                                    "is required"),
    steps=[create(), set_status(ext_status())])
add("pod-status/extended-unknown-container", POD, pod([], GPU_CTR),
    ("status.extendedResourceClaimStatus.requestMappings[0].containerName", INV,
     'Invalid value: "other": must match the name of an entry in spec.initContainers.name or spec.containers.name'),
    steps=[create(), set_status(ext_status(mapping("other")))])
add("pod-status/extended-unrequested-resource", POD, pod([], GPU_CTR),
    ("status.extendedResourceClaimStatus.requestMappings[0].resourceName", INV),
    steps=[create(), patch({"status": ext_status(mapping(resource="example.com/fpga"))}, "status")])
add("pod-status/extended-bad-request-name", POD, pod([], GPU_CTR),
    ("status.extendedResourceClaimStatus.requestName", INV, f'Invalid value: "Bad": {LABEL_MSG}'),
    steps=[create(), set_status(ext_status(mapping(request="Bad")))])
add("pod-status/extended-duplicate", POD, pod([], GPU_CTR),
    ("status.extendedResourceClaimStatus.requestMappings[1].containerName", DUP),
    ("status.extendedResourceClaimStatus.requestMappings[1].resourceName", DUP),
    ("status.extendedResourceClaimStatus.requestMappings[1].requestName", DUP),
    steps=[create(), set_status(ext_status(mapping(), mapping()))])
add("pod-status/extended-empty-claim-name", POD, pod([], GPU_CTR),
    ("status.extendedResourceClaimStatus.resourceClaimName", REQ),
    steps=[create(), set_status(ext_status(mapping(), claim_name=""))])
add("pod-status/extended-bad-claim-name", POD, pod([], GPU_CTR),
    ("status.extendedResourceClaimStatus.resourceClaimName", INV),
    steps=[create(), set_status(ext_status(mapping(), claim_name=BAD_NAME))])
add("pod/status-on-create-ignored", POD, pod(status={"resourceClaimStatuses": [{"name": "other"}]}),
    check=absent("status", "resourceClaimStatuses"))


# --- running a case ---


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


NAMES = {c.id: f"vh{i:03d}-{_slug(c.id)}"[:60].rstrip("-") for i, c in enumerate(CASES)}


def _collection(case: Case) -> str:
    prefix, _, _, namespaced = KINDS[case.resource]
    return f"{prefix}/namespaces/{case.namespace}/{case.resource}" if namespaced else f"{prefix}/{case.resource}"


def _prepared(case: Case, name: str) -> dict | None:
    if case.obj is None:
        return None
    obj = copy.deepcopy(case.obj)
    meta = obj.setdefault("metadata", {})
    if meta.get("generateName"):
        meta.pop("name", None)
    else:
        meta["name"] = name
    if KINDS[case.resource][3]:
        if meta.get("namespace") in (None, "ns"):  # the builders' placeholder namespace
            meta["namespace"] = case.namespace
    else:
        meta.pop("namespace", None)
    return obj


def _send(server: Server, method: str, path: str, body: Any, content_type: str, name: str):
    if isinstance(body, bytes):
        body = body.replace(b"{name}", name.encode())
    return server.request(method, path, body, content_type)


def run_case(server: Server, case: Case) -> tuple[int, dict, dict, str, str]:
    name = case.name if case.name is not None else NAMES[case.id]
    obj = _prepared(case, name)
    collection = _collection(case)
    res: tuple[int, dict, dict] = (0, {}, {})
    request = ""
    for i, step in enumerate(case.steps):
        item = f"{collection}/{name}" + (f"/{step.sub}" if step.sub else "")
        request = f"{step.method} {collection + step.query if step.method == 'POST' else item + step.query}"
        if step.method == "POST":
            body = obj if step.body is None else step.body
            res = _send(server, "POST", collection + step.query, body, step.content_type, name)
            if 200 <= res[0] < 300 and res[2].get("metadata", {}).get("name"):
                name = res[2]["metadata"]["name"]
        elif step.method == "PUT":
            code, _, current = server.request("GET", f"{collection}/{name}")
            assert code == 200, f"{case.id}: GET before step {i} failed: {code} {current}"
            step.body(current)
            res = server.request("PUT", item + step.query, current)
        elif step.method == "PATCH":
            res = server.request("PATCH", item + step.query, step.body, step.content_type)
        else:
            res = server.request(step.method, item + step.query)
        if i < len(case.steps) - 1:
            assert 200 <= res[0] < 300, f"{case.id}: setup step {i} ({step.method} {step.sub}) failed: {res[0]} " \
                                        f"{json.dumps(res[2])[:2000]}"
    return (*res, name, request)


def _invalid_message(qualified: str, name: str, causes: list[dict]) -> str:
    """apierrors.NewInvalid: `<kind>.<group> "<name>" is invalid: <ErrorList.ToAggregate()>`."""
    parts: list[str] = []
    for c in causes:
        text = f"{c.get('field', '')}: {c.get('message', '')}"
        if text not in parts:
            parts.append(text)
    agg = parts[0] if len(parts) == 1 else "[" + ", ".join(parts) + "]"
    return f'{qualified} "{name}" is invalid: {agg}'


def check_case(case: Case, code: int, headers: dict, body: dict, name: str, request: str = "") -> None:
    where = f"{case.id}: {request} -> {code} {json.dumps(body)[:3000]}"
    assert code == case.code, where
    _, group, kind, _ = KINDS[case.resource]
    if code >= 400:
        assert body.get("kind") == "Status" and body.get("status") == "Failure" and body.get("code") == code, where
        assert body.get("reason") == (case.reason or REASONS[code]), where
        message = body.get("message", "")
        if code == 422:
            details = body.get("details") or {}
            assert (details.get("group", ""), details.get("kind"), details.get("name", "")) == (group, kind, name), \
                where
            causes = details.get("causes") or []
            got = sorted((c.get("field"), c.get("reason")) for c in causes)
            assert got == sorted((w[0], w[1]) for w in case.causes), where
            for w in case.causes:
                if len(w) > 2:
                    msgs = [c.get("message") for c in causes if (c.get("field"), c.get("reason")) == (w[0], w[1])]
                    assert w[2] in msgs, f"{case.id}: {w} not among {msgs}"
            qualified = f"{kind}.{group}" if group else kind
            assert message == _invalid_message(qualified, name, causes), where
        else:
            assert not case.causes, case.id
        if case.message is not None:
            assert message == case.message.replace("{name}", name), where
        if case.contains is not None:
            assert case.contains.replace("{name}", name) in message, where
    else:
        assert body.get("kind") == kind and body.get("metadata", {}).get("name") == name, where
        if case.contains is not None or case.message is not None:
            raise AssertionError(f"{case.id}: a message was expected, got {code}")
        if case.check is not None:
            case.check(body)


@pytest.fixture(scope="module")
def vserver(server: Server) -> Server:
    for ns, labels in ((NS, {}), (ADMIN_NS, {"resource.kubernetes.io/admin-access": "true"})):
        code, _, body = server.request("POST", "/api/v1/namespaces", {
            "apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns, "labels": labels}})
        assert code in (201, 409), body
    return server


@pytest.mark.parametrize("case", [pytest.param(c, id=c.id, marks=c.marks) for c in CASES])
def test_validation_over_http(vserver: Server, case: Case) -> None:
    code, headers, body, name, request = run_case(vserver, case)
    check_case(case, code, headers, body, name, request)


def test_unknown_fields_warn_by_default(vserver: Server) -> None:
    """fieldValidation defaults to Warn: the object is created and each unknown field is a 299 Warning."""
    obj = with_(claim(), lambda o: o["spec"].update(foo=1) or o["spec"]["devices"].update(bar=2))
    obj["metadata"] = {"name": "vh-warn-default", "namespace": NS}
    req = urllib.request.Request(f"{vserver.url}/apis/resource.k8s.io/v1/namespaces/{NS}/resourceclaims",
                                 data=json.dumps(obj).encode(), method="POST",
                                 headers={"Content-Type": JSON})
    with urllib.request.urlopen(req, timeout=30) as resp:
        assert resp.status == 201
        warnings = resp.headers.get_all("Warning") or []
        body = json.loads(resp.read())
    assert warnings == ['299 - "unknown field \\"spec.devices.bar\\""', '299 - "unknown field \\"spec.foo\\""'] \
        or sorted(warnings) == sorted(['299 - "unknown field \\"spec.foo\\""',
                                       '299 - "unknown field \\"spec.devices.bar\\""']), warnings
    assert "foo" not in body["spec"] and "bar" not in body["spec"]["devices"]


def test_case_count_and_coverage() -> None:
    assert len(CASES) >= 150
    assert len({c.id for c in CASES}) == len(CASES), "case ids must be unique"
    assert len(set(NAMES.values())) == len(CASES), "object names must be unique"
    per_kind = {r: sum(c.resource == r for c in CASES) for r in KINDS}
    assert all(n >= 10 for n in per_kind.values()), per_kind
    status_cases = {c.resource for c in CASES if any(s.sub == "status" for s in c.steps)}
    assert {RC, DTR, POD} <= status_cases
