"""Table-driven allocator tests, ported from upstream k8s.io/dynamic-resource-allocation/structured
allocator_test.go (names follow upstream's cases where one exists)."""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from typing import Any, Callable

import pytest

from dramock.scheduler.allocator import allocate
from dramock.scheduler.types import AllocationInput
from dramock.schemas.featuregates import FeatureGates
from dramock.schemas.nodeselector import node_selector_matches

DRIVER_A = "driver-a"
DRIVER_B = "driver-b"
POOL_A = "pool-a"
POOL_B = "pool-b"
NODE = "worker"
NODE2 = "worker-2"
CLASS_A = "class-a"
CLASS_B = "class-b"
REQ0, REQ1 = "req-0", "req-1"
SUB0, SUB1 = "subReq-0", "subReq-1"
DEV1, DEV2, DEV3, DEV4 = "device-1", "device-2", "device-3", "device-4"

NODE_OBJ = {"metadata": {"name": NODE, "labels": {"region": "west", "rack": "r1"}}}
NODE2_OBJ = {"metadata": {"name": NODE2, "labels": {"region": "east"}}}
NODE_SEL_REGION_WEST = {"nodeSelectorTerms": [{"matchExpressions": [
    {"key": "region", "operator": "In", "values": ["west"]}]}]}
LOCAL_NODE_SELECTOR = {"nodeSelectorTerms": [{"matchFields": [
    {"key": "metadata.name", "operator": "In", "values": [NODE]}]}]}


# ---------------------------------------------------------------------------- builders


def dev(name: str, attrs: dict | None = None, caps: dict | None = None, **extra: Any) -> dict:
    d: dict = {"name": name}
    if attrs:
        d["attributes"] = {k: _attr(v) for k, v in attrs.items()}
    if caps:
        d["capacity"] = {k: (v if isinstance(v, dict) else {"value": v}) for k, v in caps.items()}
    d.update(extra)
    return d


def _attr(v: Any) -> dict:
    if isinstance(v, dict):
        return v
    if isinstance(v, bool):
        return {"bool": v}
    if isinstance(v, int):
        return {"int": v}
    return {"string": v}


def slc(name: str, node: str | None, pool: str, generation: int, *devices: dict, driver: str = DRIVER_A,
        count: int = 1, **spec_extra: Any) -> dict:
    spec: dict = {"driver": driver, "pool": {"name": pool, "generation": generation, "resourceSliceCount": count}}
    if node is not None:
        spec["nodeName"] = node
    spec["devices"] = list(devices)
    spec.update(spec_extra)
    if spec.get("nodeSelector") is not None or spec.get("allNodes") or spec.get("perDeviceNodeSelection") \
            or spec.get("sharedCounters"):
        spec.pop("nodeName", None)
    return {"metadata": {"name": name}, "spec": spec}


def cls(name: str, *exprs: str, config: list | None = None) -> dict:
    spec: dict = {}
    if exprs:
        spec["selectors"] = [{"cel": {"expression": e}} for e in exprs]
    if config:
        spec["config"] = config
    return {"metadata": {"name": name}, "spec": spec}


def req(name: str, klass: str = CLASS_A, count: int | None = 1, mode: str = "ExactCount", *exprs: str,
        **extra: Any) -> dict:
    exactly: dict = {"deviceClassName": klass, "allocationMode": mode}
    if mode == "ExactCount":
        exactly["count"] = count
    if exprs:
        exactly["selectors"] = [{"cel": {"expression": e}} for e in exprs]
    exactly.update(extra)
    return {"name": name, "exactly": exactly}


def sub(name: str, klass: str = CLASS_A, count: int = 1, mode: str = "ExactCount", *exprs: str,
        **extra: Any) -> dict:
    s: dict = {"name": name, "deviceClassName": klass, "allocationMode": mode}
    if mode == "ExactCount":
        s["count"] = count
    if exprs:
        s["selectors"] = [{"cel": {"expression": e}} for e in exprs]
    s.update(extra)
    return s


def first_available(name: str, *subs: dict) -> dict:
    return {"name": name, "firstAvailable": list(subs)}


def claim(name: str, *requests: dict, constraints: list | None = None, config: list | None = None) -> dict:
    devices: dict = {"requests": list(requests)}
    if constraints:
        devices["constraints"] = constraints
    if config:
        devices["config"] = config
    return {"metadata": {"name": name, "namespace": "default"}, "spec": {"devices": devices}}


def allocated(name: str, *results: tuple, **result_extra: Any) -> dict:
    c = claim(name, req(REQ0))
    c["status"] = {"allocation": {"devices": {"results": [
        {"request": REQ0, "driver": d, "pool": p, "device": n, **result_extra} for d, p, n in results]}}}
    return c


def opaque(driver: str, params: dict) -> dict:
    return {"opaque": {"driver": driver, "parameters": params}}


# ---------------------------------------------------------------------------- the table


@dataclass
class Case:
    name: str
    claims: list
    slices: list
    classes: list = field(default_factory=lambda: [cls(CLASS_A)])
    node: dict | None = field(default_factory=lambda: NODE_OBJ)
    allocated: list = field(default_factory=list)
    in_flight: list = field(default_factory=list)
    taint_rules: list = field(default_factory=list)
    gates: dict = field(default_factory=dict)
    # Per claim: list of (request, driver, pool, device); None: cannot allocate.
    expect: list | None = None
    error: str | None = None  # regex the reason must match (allocation refused with an error)
    check: Callable[[list], None] | None = None


def R(request: str, device: str, driver: str = DRIVER_A, pool: str = POOL_A) -> tuple:  # noqa: N802
    return (request, driver, pool, device)


def _two_devices(node: str = NODE, pool: str = POOL_A, driver: str = DRIVER_A, gen: int = 1) -> dict:
    return slc(f"{driver}-{pool}-{gen}", node, pool, gen, dev(DEV1), dev(DEV2), driver=driver)


CASES: list[Case] = [
    Case("empty", [], [], expect=[]),
    Case("simple", [claim("c0", req(REQ0))], [_two_devices()], expect=[[R(REQ0, DEV1)]]),
    Case("other-node", [claim("c0", req(REQ0))], [_two_devices(node=NODE2)], expect=None),
    Case("no-node-local-without-node", [claim("c0", req(REQ0))], [_two_devices()], node=None, expect=None),
    Case("small-and-large", [claim("c0", req(REQ0, count=1, mode="ExactCount"), req(REQ1, count=2))],
         [slc("s", NODE, POOL_A, 1, dev(DEV1), dev(DEV2), dev(DEV3))],
         expect=[[R(REQ0, DEV1), R(REQ1, DEV2), R(REQ1, DEV3)]]),
    Case("too-few-devices", [claim("c0", req(REQ0, count=3))], [_two_devices()], expect=None),
    Case("two-claims", [claim("c0", req(REQ0)), claim("c1", req(REQ0))], [_two_devices()],
         expect=[[R(REQ0, DEV1)], [R(REQ0, DEV2)]]),
    Case("two-claims-too-few", [claim("c0", req(REQ0)), claim("c1", req(REQ0, count=2))], [_two_devices()],
         expect=None),
    Case("already-allocated", [claim("c0", req(REQ0))], [_two_devices()],
         allocated=[allocated("a", (DRIVER_A, POOL_A, DEV1))], expect=[[R(REQ0, DEV2)]]),
    Case("all-allocated", [claim("c0", req(REQ0))], [_two_devices()],
         allocated=[allocated("a", (DRIVER_A, POOL_A, DEV1), (DRIVER_A, POOL_A, DEV2))], expect=None),
    Case("in-flight-counts-as-allocated", [claim("c0", req(REQ0))], [_two_devices()],
         in_flight=[allocated("a", (DRIVER_A, POOL_A, DEV1), (DRIVER_A, POOL_A, DEV2))], expect=None),
    Case("admin-access-uses-allocated", [claim("c0", req(REQ0, adminAccess=True))], [_two_devices()],
         allocated=[allocated("a", (DRIVER_A, POOL_A, DEV1), (DRIVER_A, POOL_A, DEV2))],
         expect=[[R(REQ0, DEV1)]],
         check=lambda a: _assert(a[0]["devices"]["results"][0].get("adminAccess") is True)),
    Case("admin-access-results-do-not-take-devices", [claim("c0", req(REQ0, count=2))], [_two_devices()],
         allocated=[allocated("a", (DRIVER_A, POOL_A, DEV1), (DRIVER_A, POOL_A, DEV2), adminAccess=True)],
         expect=[[R(REQ0, DEV1), R(REQ0, DEV2)]]),
    Case("admin-access-not-same-device-twice-in-claim", [claim("c0", req(REQ0, count=3, adminAccess=True))],
         [_two_devices()], expect=None),
    Case("class-selector", [claim("c0", req(REQ0))],
         [slc("s", NODE, POOL_A, 1, dev(DEV1, {"model": "v100"}), dev(DEV2, {"model": "a100"}))],
         classes=[cls(CLASS_A, 'device.attributes["driver-a"].model == "a100"')], expect=[[R(REQ0, DEV2)]]),
    Case("request-selector", [claim("c0", req(REQ0, CLASS_A, 1, "ExactCount", "device.attributes[\"driver-a\"]"
                                              ".memory >= 8"))],
         [slc("s", NODE, POOL_A, 1, dev(DEV1, {"memory": 4}), dev(DEV2, {"memory": 16}))],
         expect=[[R(REQ0, DEV2)]]),
    Case("class-and-request-selectors", [claim("c0", req(REQ0, CLASS_A, 1, "ExactCount",
                                                         'device.attributes["driver-a"].memory >= 8'))],
         [slc("s", NODE, POOL_A, 1, dev(DEV1, {"memory": 16, "model": "v"}),
              dev(DEV2, {"memory": 4, "model": "a"}), dev(DEV3, {"memory": 16, "model": "a"}))],
         classes=[cls(CLASS_A, 'device.attributes["driver-a"].model == "a"')], expect=[[R(REQ0, DEV3)]]),
    Case("unknown-class", [claim("c0", req(REQ0, "nope"))], [_two_devices()],
         error=r'could not retrieve device class nope: deviceclass.resource.k8s.io "nope" not found'),
    Case("cel-runtime-error", [claim("c0", req(REQ0))], [_two_devices()],
         classes=[cls(CLASS_A, 'device.attributes["driver-a"].missing == "x"')],
         error=r"class class-a: selector #0: CEL runtime error: no such key: missing"),
    Case("cel-compile-error", [claim("c0", req(REQ0, CLASS_A, 1, "ExactCount", "device.nope ==="))],
         [_two_devices()], error=r"claim default/c0: selector #0: CEL compile error"),
    Case("all-devices", [claim("c0", req(REQ0, mode="All"))], [_two_devices()],
         expect=[[R(REQ0, DEV1), R(REQ0, DEV2)]]),
    Case("all-devices-some-allocated", [claim("c0", req(REQ0, mode="All"))], [_two_devices()],
         allocated=[allocated("a", (DRIVER_A, POOL_A, DEV1))], expect=None),
    Case("all-devices-some-allocated-admin-access", [claim("c0", req(REQ0, mode="All", adminAccess=True))],
         [_two_devices()], allocated=[allocated("a", (DRIVER_A, POOL_A, DEV1))],
         expect=[[R(REQ0, DEV1), R(REQ0, DEV2)]]),
    Case("all-devices-no-devices", [claim("c0", req(REQ0, mode="All"))], [], expect=None),
    Case("all-devices-of-matching-class", [claim("c0", req(REQ0, mode="All"))],
         [slc("s", NODE, POOL_A, 1, dev(DEV1, {"m": "x"}), dev(DEV2, {"m": "y"}), dev(DEV3, {"m": "x"}))],
         classes=[cls(CLASS_A, 'device.attributes["driver-a"].m == "x"')],
         expect=[[R(REQ0, DEV1), R(REQ0, DEV3)]]),
    Case("all-devices-incomplete-pool", [claim("c0", req(REQ0, mode="All"))],
         [slc("s", NODE, POOL_A, 1, dev(DEV1), count=2)],
         error=r"asks for all devices, but resource pool driver-a/pool-a is currently being updated"),
    Case("all-devices-plus-another", [claim("c0", req(REQ0, mode="All"), req(REQ1))], [_two_devices()],
         expect=None),
    Case("incomplete-pool-offers-nothing", [claim("c0", req(REQ0))],
         [slc("s", NODE, POOL_A, 1, dev(DEV1), count=2)], expect=None),
    Case("complete-multi-slice-pool", [claim("c0", req(REQ0, count=2))],
         [slc("s1", NODE, POOL_A, 1, dev(DEV1), count=2), slc("s2", NODE, POOL_A, 1, dev(DEV2), count=2)],
         expect=[[R(REQ0, DEV1), R(REQ0, DEV2)]]),
    Case("old-generation-ignored", [claim("c0", req(REQ0))],
         [slc("old", NODE, POOL_A, 1, dev(DEV1)), slc("new", NODE, POOL_A, 2, dev(DEV2))],
         expect=[[R(REQ0, DEV2)]]),
    Case("obsolete-generation-for-other-node", [claim("c0", req(REQ0))],
         [slc("old", NODE, POOL_A, 1, dev(DEV1), count=2), slc("new", NODE2, POOL_A, 2, dev(DEV2), count=2)],
         expect=None),
    Case("duplicate-device-name-invalid-pool", [claim("c0", req(REQ0))],
         [slc("s1", NODE, POOL_A, 1, dev(DEV1), count=2), slc("s2", NODE, POOL_A, 1, dev(DEV1), count=2)],
         error=r"^invalid resource pools were encountered$"),
    # An invalid pool is skipped: another pool satisfies the claim and nothing is reported.
    Case("invalid-pool-skipped-when-another-pool-fits", [claim("c0", req(REQ0))],
         [slc("s1", NODE, POOL_A, 1, dev(DEV1), count=2), slc("s2", NODE, POOL_A, 1, dev(DEV1), count=2),
          slc("b", NODE, POOL_B, 1, dev(DEV2))],
         expect=[[R(REQ0, DEV2, pool=POOL_B)]]),
    Case("pools-sorted-by-name", [claim("c0", req(REQ0))],
         [_two_devices(pool=POOL_B), _two_devices(pool=POOL_A, driver=DRIVER_B), _two_devices()],
         expect=[[R(REQ0, DEV1)]]),
    Case("network-attached-node-selector", [claim("c0", req(REQ0))],
         [slc("s", None, POOL_A, 1, dev(DEV1), nodeSelector=NODE_SEL_REGION_WEST)],
         expect=[[R(REQ0, DEV1)]],
         check=lambda a: _assert(a[0]["nodeSelector"] == NODE_SEL_REGION_WEST)),
    Case("node-selector-does-not-match", [claim("c0", req(REQ0))],
         [slc("s", None, POOL_A, 1, dev(DEV1), nodeSelector=NODE_SEL_REGION_WEST)], node=NODE2_OBJ, expect=None),
    Case("all-nodes-no-node-selector", [claim("c0", req(REQ0))],
         [slc("s", None, POOL_A, 1, dev(DEV1), allNodes=True)], expect=[[R(REQ0, DEV1)]],
         check=lambda a: _assert("nodeSelector" not in a[0])),
    Case("node-local-node-selector", [claim("c0", req(REQ0))], [_two_devices()], expect=[[R(REQ0, DEV1)]],
         check=lambda a: _assert(a[0]["nodeSelector"] == LOCAL_NODE_SELECTOR)),
    Case("per-device-node-selection", [claim("c0", req(REQ0))],
         [slc("s", None, POOL_A, 1, dev(DEV1, nodeName=NODE2), dev(DEV2, nodeName=NODE),
              perDeviceNodeSelection=True)],
         expect=[[R(REQ0, DEV2)]], check=lambda a: _assert(a[0]["nodeSelector"] == LOCAL_NODE_SELECTOR)),
    Case("per-device-all-nodes", [claim("c0", req(REQ0))],
         [slc("s", None, POOL_A, 1, dev(DEV1, allNodes=True), perDeviceNodeSelection=True)],
         expect=[[R(REQ0, DEV1)]], check=lambda a: _assert("nodeSelector" not in a[0])),
    Case("match-attribute", [claim("c0", req(REQ0), req(REQ1), constraints=[{"matchAttribute": "driver-a/numa"}])],
         [slc("s", NODE, POOL_A, 1, dev(DEV1, {"numa": 0}), dev(DEV2, {"numa": 1}), dev(DEV3, {"numa": 1}))],
         expect=[[R(REQ0, DEV2), R(REQ1, DEV3)]]),
    Case("match-attribute-missing-attribute", [claim("c0", req(REQ0),
                                                     constraints=[{"matchAttribute": "driver-a/numa"}])],
         [slc("s", NODE, POOL_A, 1, dev(DEV1), dev(DEV2, {"numa": 1}))], expect=[[R(REQ0, DEV2)]]),
    Case("match-attribute-scoped-to-requests",
         [claim("c0", req(REQ0), req(REQ1), req("req-2"),
                constraints=[{"matchAttribute": "driver-a/numa", "requests": [REQ0, "req-2"]}])],
         [slc("s", NODE, POOL_A, 1, dev(DEV1, {"numa": 0}), dev(DEV2, {"numa": 1}), dev(DEV3, {"numa": 1}))],
         expect=[[R(REQ0, DEV2), R(REQ1, DEV1), R("req-2", DEV3)]]),
    Case("match-attribute-unsatisfiable", [claim("c0", req(REQ0, count=2),
                                                 constraints=[{"matchAttribute": "driver-a/numa"}])],
         [slc("s", NODE, POOL_A, 1, dev(DEV1, {"numa": 0}), dev(DEV2, {"numa": 1}))], expect=None),
    Case("match-attribute-all-mode-error", [claim("c0", req(REQ0, mode="All"),
                                                  constraints=[{"matchAttribute": "driver-a/numa"}])],
         [slc("s", NODE, POOL_A, 1, dev(DEV1, {"numa": 0}), dev(DEV2, {"numa": 1}))],
         error=r"cannot add device driver-a/pool-a/device-2 because a claim constraint would not be satisfied"),
    Case("distinct-attribute", [claim("c0", req(REQ0, count=2), constraints=[{"distinctAttribute": "driver-a/numa"}])],
         [slc("s", NODE, POOL_A, 1, dev(DEV1, {"numa": 0}), dev(DEV2, {"numa": 0}), dev(DEV3, {"numa": 1}))],
         expect=[[R(REQ0, DEV1), R(REQ0, DEV3)]]),
    Case("two-claims-backtracking", [claim("c0", req(REQ0, CLASS_A, 1, "ExactCount", "true")),
                                     claim("c1", req(REQ0, CLASS_A, 1, "ExactCount",
                                                     'device.attributes["driver-a"].fast'))],
         [slc("s", NODE, POOL_A, 1, dev(DEV1, {"fast": True}), dev(DEV2, {"fast": False}))],
         expect=[[R(REQ0, DEV2)], [R(REQ0, DEV1)]]),
    Case("prioritized-list-first", [claim("c0", first_available(REQ0, sub(SUB0, count=1), sub(SUB1, count=2)))],
         [_two_devices()], expect=[[R(f"{REQ0}/{SUB0}", DEV1)]]),
    Case("prioritized-list-fallback", [claim("c0", first_available(REQ0, sub(SUB0, CLASS_B), sub(SUB1, count=2)))],
         [_two_devices()], classes=[cls(CLASS_A), cls(CLASS_B, "false")],
         expect=[[R(f"{REQ0}/{SUB1}", DEV1), R(f"{REQ0}/{SUB1}", DEV2)]]),
    Case("prioritized-list-backtracks-across-requests",
         [claim("c0", first_available(REQ0, sub(SUB0, count=2), sub(SUB1, count=1)), req(REQ1))],
         [_two_devices()], expect=[[R(f"{REQ0}/{SUB1}", DEV1), R(REQ1, DEV2)]]),
    Case("prioritized-list-constraint-on-subrequest",
         [claim("c0", first_available(REQ0, sub(SUB0, count=2), sub(SUB1)),
                constraints=[{"matchAttribute": "driver-a/numa", "requests": [f"{REQ0}/{SUB0}"]}])],
         [slc("s", NODE, POOL_A, 1, dev(DEV1, {"numa": 0}), dev(DEV2, {"numa": 1}))],
         expect=[[R(f"{REQ0}/{SUB1}", DEV1)]]),
    Case("prioritized-list-config", [claim("c0", first_available(REQ0, sub(SUB0, CLASS_B), sub(SUB1)),
                                           config=[{"requests": [f"{REQ0}/{SUB0}"], **opaque(DRIVER_A, {"s": 0})},
                                                   {"requests": [f"{REQ0}/{SUB1}"], **opaque(DRIVER_A, {"s": 1})}])],
         [_two_devices()], classes=[cls(CLASS_A, config=[opaque(DRIVER_A, {"c": "a"})]), cls(CLASS_B, "false")],
         expect=[[R(f"{REQ0}/{SUB1}", DEV1)]],
         check=lambda a: _assert(a[0]["devices"]["config"] == [
             {"source": "FromClass", **opaque(DRIVER_A, {"c": "a"})},
             {"source": "FromClaim", "requests": [f"{REQ0}/{SUB1}"], **opaque(DRIVER_A, {"s": 1})}])),
    Case("config", [claim("c0", req(REQ0), req(REQ1, CLASS_B),
                          config=[opaque(DRIVER_A, {"all": True}),
                                  {"requests": [REQ1], **opaque(DRIVER_A, {"one": True})},
                                  {"requests": ["other"], **opaque(DRIVER_A, {"no": True})}])],
         [_two_devices()], classes=[cls(CLASS_A, config=[opaque(DRIVER_A, {"class": "a"})]), cls(CLASS_B)],
         expect=[[R(REQ0, DEV1), R(REQ1, DEV2)]],
         check=lambda a: _assert(a[0]["devices"]["config"] == [
             {"source": "FromClass", **opaque(DRIVER_A, {"class": "a"})},
             {"source": "FromClaim", **opaque(DRIVER_A, {"all": True})},
             {"source": "FromClaim", "requests": [REQ1], **opaque(DRIVER_A, {"one": True})}])),
    Case("too-many-devices", [claim("c0", req(REQ0, count=33))], [_two_devices()],
         error=r"number of requested devices 33 exceeds the claim limit of 32"),
    Case("empty-constraint", [claim("c0", req(REQ0), constraints=[{}])], [_two_devices()],
         error=r"constraint #0: empty constraint"),
    # ----- device taints
    Case("tainted-device-skipped", [claim("c0", req(REQ0))],
         [slc("s", NODE, POOL_A, 1, dev(DEV1, taints=[{"key": "k", "value": "v", "effect": "NoSchedule"}]),
              dev(DEV2))], expect=[[R(REQ0, DEV2)]]),
    Case("tainted-no-execute", [claim("c0", req(REQ0))],
         [slc("s", NODE, POOL_A, 1, dev(DEV1, taints=[{"key": "k", "effect": "NoExecute"}]))], expect=None),
    Case("taint-none-effect-ignored", [claim("c0", req(REQ0))],
         [slc("s", NODE, POOL_A, 1, dev(DEV1, taints=[{"key": "k", "effect": "None"}]))], expect=[[R(REQ0, DEV1)]]),
    Case("taint-tolerated", [claim("c0", req(REQ0, tolerations=[{"key": "k", "operator": "Equal", "value": "v",
                                                                  "effect": "NoSchedule"}]))],
         [slc("s", NODE, POOL_A, 1, dev(DEV1, taints=[{"key": "k", "value": "v", "effect": "NoSchedule"}]))],
         expect=[[R(REQ0, DEV1)]],
         check=lambda a: _assert(a[0]["devices"]["results"][0]["tolerations"][0]["key"] == "k")),
    Case("taint-toleration-exists", [claim("c0", req(REQ0, tolerations=[{"operator": "Exists"}]))],
         [slc("s", NODE, POOL_A, 1, dev(DEV1, taints=[{"key": "k", "value": "v", "effect": "NoExecute"}]))],
         expect=[[R(REQ0, DEV1)]]),
    Case("taint-toleration-wrong-value", [claim("c0", req(REQ0, tolerations=[{"key": "k", "value": "x"}]))],
         [slc("s", NODE, POOL_A, 1, dev(DEV1, taints=[{"key": "k", "value": "v", "effect": "NoSchedule"}]))],
         expect=None),
    Case("taints-gate-off", [claim("c0", req(REQ0))],
         [slc("s", NODE, POOL_A, 1, dev(DEV1, taints=[{"key": "k", "effect": "NoSchedule"}]))],
         gates={"DRADeviceTaints": False, "DRADeviceTaintRules": False}, expect=[[R(REQ0, DEV1)]]),
    Case("taint-rule", [claim("c0", req(REQ0))], [_two_devices()],
         taint_rules=[{"metadata": {"name": "r"}, "spec": {"deviceSelector": {"driver": DRIVER_A, "device": DEV1},
                                                           "taint": {"key": "k", "effect": "NoSchedule"}}}],
         expect=[[R(REQ0, DEV2)]]),
    Case("taint-rule-whole-pool", [claim("c0", req(REQ0))], [_two_devices()],
         taint_rules=[{"metadata": {"name": "r"}, "spec": {"deviceSelector": {"pool": POOL_A},
                                                           "taint": {"key": "k", "effect": "NoExecute"}}}],
         expect=None),
    Case("taint-rule-gate-off", [claim("c0", req(REQ0))], [_two_devices()],
         taint_rules=[{"metadata": {"name": "r"}, "spec": {"deviceSelector": {"pool": POOL_A},
                                                           "taint": {"key": "k", "effect": "NoExecute"}}}],
         gates={"DRADeviceTaintRules": False}, expect=[[R(REQ0, DEV1)]]),
]


# ----- partitionable devices

def _partitionable(*devices: dict, counters: dict | None = None, **extra: Any) -> list:
    counter_slice = slc("a-counters", None, POOL_A, 1, count=2, sharedCounters=[
        {"name": "gpu-0", "counters": counters or {"memory": {"value": "8Gi"}}}], devices=[])
    counter_slice["spec"].pop("devices", None)
    counter_slice["spec"]["devices"] = []
    return [counter_slice, slc("b-devices", NODE, POOL_A, 1, *devices, count=2, **extra)]


def _pool_b_partitionable() -> list:
    """Pool B: the same shape as _partitionable's pool A, with one device of 2Gi."""
    slices = _partitionable(_consumer(DEV2, "2Gi"))
    for s, name in zip(slices, ("c-counters", "d-devices"), strict=True):
        s["metadata"]["name"] = name
        s["spec"]["pool"]["name"] = POOL_B
    return slices


def _consumer(name: str, mem: str, groups: list | None = None, **extra: Any) -> dict:
    cc: dict = {"counterSet": "gpu-0", "counters": {"memory": {"value": mem}}}
    if groups is not None:
        cc["compatibilityGroups"] = groups
    return dev(name, consumesCounters=[cc], **extra)


CASES += [
    Case("partitionable-fits", [claim("c0", req(REQ0, count=2))],
         _partitionable(_consumer(DEV1, "4Gi"), _consumer(DEV2, "4Gi"), _consumer(DEV3, "4Gi")),
         expect=[[R(REQ0, DEV1), R(REQ0, DEV2)]]),
    Case("partitionable-counters-exhausted", [claim("c0", req(REQ0, count=2))],
         _partitionable(_consumer("big", "8Gi"), _consumer(DEV1, "4Gi")), expect=None),
    Case("partitionable-backtracks", [claim("c0", req(REQ0, count=2))],
         _partitionable(_consumer("big", "6Gi"), _consumer(DEV1, "4Gi"), _consumer(DEV2, "4Gi")),
         expect=[[R(REQ0, DEV1), R(REQ0, DEV2)]]),
    Case("partitionable-allocated-consume-counters", [claim("c0", req(REQ0))],
         _partitionable(_consumer("big", "6Gi"), _consumer(DEV1, "4Gi")),
         allocated=[allocated("a", (DRIVER_A, POOL_A, "big"))], expect=None),
    Case("partitionable-in-flight-consume-counters", [claim("c0", req(REQ0))],
         _partitionable(_consumer("big", "6Gi"), _consumer(DEV1, "2Gi")),
         in_flight=[allocated("a", (DRIVER_A, POOL_A, "big"))], expect=[[R(REQ0, DEV1)]]),
    # A pool none of whose devices can be taken (held, or counters short) is passed over; one with adminAccess
    # may still use its held device.
    Case("partitionable-full-pool-passed-over", [claim("c0", req(REQ0))],
         _partitionable(_consumer("big", "6Gi"), _consumer(DEV1, "4Gi")) + _pool_b_partitionable(),
         allocated=[allocated("a", (DRIVER_A, POOL_A, "big"))], expect=[[R(REQ0, DEV2, pool=POOL_B)]]),
    Case("partitionable-full-pool-admin-access", [claim("c0", req(REQ0, adminAccess=True))],
         _partitionable(_consumer("big", "6Gi"), _consumer(DEV1, "4Gi")) + _pool_b_partitionable(),
         allocated=[allocated("a", (DRIVER_A, POOL_A, "big"))], expect=[[R(REQ0, "big")]]),
    Case("partitionable-gate-off", [claim("c0", req(REQ0))],
         _partitionable(_consumer(DEV1, "4Gi")), gates={"DRAPartitionableDevices": False}, expect=None),
    Case("partitionable-missing-counter-set", [claim("c0", req(REQ0))],
         [slc("s", NODE, POOL_A, 1, dev(DEV1, consumesCounters=[{"counterSet": "nope", "counters": {}}]))],
         error=r"^invalid resource pools were encountered$"),
    Case("partitionable-two-claims", [claim("c0", req(REQ0)), claim("c1", req(REQ0))],
         _partitionable(_consumer("big", "6Gi"), _consumer(DEV1, "4Gi"), _consumer(DEV2, "4Gi")),
         expect=[[R(REQ0, DEV1)], [R(REQ0, DEV2)]]),
    # ----- compatibility groups (KEP-5963)
    Case("compat-groups-gate-off-skips-devices", [claim("c0", req(REQ0))],
         _partitionable(_consumer(DEV1, "1Gi", ["mig"]), _consumer(DEV2, "1Gi")), expect=[[R(REQ0, DEV2)]]),
    Case("compat-groups-incompatible", [claim("c0", req(REQ0, count=2))],
         _partitionable(_consumer(DEV1, "1Gi", ["mig"]), _consumer(DEV2, "1Gi", ["vgpu"])),
         gates={"DRADeviceCompatibilityGroups": True}, expect=None),
    Case("compat-groups-compatible", [claim("c0", req(REQ0, count=2))],
         _partitionable(_consumer(DEV1, "1Gi", ["mig"]), _consumer(DEV2, "1Gi", ["vgpu"]),
                        _consumer(DEV3, "1Gi", ["mig", "vgpu"])),
         gates={"DRADeviceCompatibilityGroups": True}, expect=[[R(REQ0, DEV1), R(REQ0, DEV3)]]),
    Case("compat-groups-allocated-device-on-set", [claim("c0", req(REQ0))],
         _partitionable(_consumer(DEV1, "1Gi", ["mig"]), _consumer(DEV2, "1Gi", ["vgpu"])),
         allocated=[allocated("a", (DRIVER_A, POOL_A, DEV1))],
         gates={"DRADeviceCompatibilityGroups": True}, expect=None),
    Case("compat-groups-rolling-intersection", [claim("c0", req(REQ0, count=2))],
         _partitionable(_consumer("foo", "1Gi", ["foo", "foobar"]), _consumer("bar", "1Gi", ["bar", "foobar"]),
                        _consumer("baz", "1Gi", ["baz"])),
         allocated=[allocated("a", (DRIVER_A, POOL_A, "foo"))],
         gates={"DRADeviceCompatibilityGroups": True}, expect=None),
    Case("compat-groups-nil-with-nil", [claim("c0", req(REQ0, count=2))],
         _partitionable(_consumer(DEV1, "1Gi", []), _consumer(DEV2, "1Gi", ["x"]), _consumer(DEV3, "1Gi")),
         gates={"DRADeviceCompatibilityGroups": True}, expect=[[R(REQ0, DEV1), R(REQ0, DEV3)]]),
    # ----- consumable capacity (KEP-5075)
    Case("consumable-shared-device", [claim("c0", req(REQ0, capacity={"requests": {"bandwidth": "1Gi"}})),
                                      claim("c1", req(REQ0, capacity={"requests": {"bandwidth": "1Gi"}}))],
         [slc("s", NODE, POOL_A, 1, dev(DEV1, caps={"bandwidth": "2Gi"}, allowMultipleAllocations=True))],
         expect=[[R(REQ0, DEV1)], [R(REQ0, DEV1)]],
         check=lambda a: _assert(
             a[0]["devices"]["results"][0]["consumedCapacity"] == {"bandwidth": "1Gi"}
             and re.fullmatch(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}",
                              a[0]["devices"]["results"][0]["shareID"])
             and a[0]["devices"]["results"][0]["shareID"] != a[1]["devices"]["results"][0]["shareID"])),
    Case("consumable-exceeds", [claim("c0", req(REQ0, capacity={"requests": {"bandwidth": "3Gi"}}))],
         [slc("s", NODE, POOL_A, 1, dev(DEV1, caps={"bandwidth": "2Gi"}, allowMultipleAllocations=True))],
         expect=None),
    Case("consumable-remaining-after-allocated", [claim("c0", req(REQ0, capacity={"requests": {"bandwidth": "1Gi"}}))],
         [slc("s", NODE, POOL_A, 1, dev(DEV1, caps={"bandwidth": "2Gi"}, allowMultipleAllocations=True))],
         allocated=[allocated("a", (DRIVER_A, POOL_A, DEV1), shareID="x", consumedCapacity={"bandwidth": "1500Mi"})],
         expect=None),
    Case("consumable-default-whole-capacity", [claim("c0", req(REQ0)), claim("c1", req(REQ0))],
         [slc("s", NODE, POOL_A, 1, dev(DEV1, caps={"bandwidth": "2Gi"}, allowMultipleAllocations=True))],
         expect=None),
    Case("consumable-policy-default", [claim("c0", req(REQ0))],
         [slc("s", NODE, POOL_A, 1, dev(DEV1, caps={"bandwidth": {"value": "10Gi", "requestPolicy": {
             "default": "1Gi", "validRange": {"min": "1Gi", "step": "1Gi"}}}}, allowMultipleAllocations=True))],
         expect=[[R(REQ0, DEV1)]],
         check=lambda a: _assert(a[0]["devices"]["results"][0]["consumedCapacity"] == {"bandwidth": "1Gi"})),
    Case("consumable-valid-values-round-up", [claim("c0", req(REQ0, capacity={"requests": {"memory": "3Gi"}}))],
         [slc("s", NODE, POOL_A, 1, dev(DEV1, caps={"memory": {"value": "16Gi", "requestPolicy": {
             "validValues": ["1Gi", "4Gi", "8Gi"]}}}, allowMultipleAllocations=True))],
         expect=[[R(REQ0, DEV1)]],
         check=lambda a: _assert(a[0]["devices"]["results"][0]["consumedCapacity"] == {"memory": "4Gi"})),
    Case("consumable-valid-values-above-max", [claim("c0", req(REQ0, capacity={"requests": {"memory": "9Gi"}}))],
         [slc("s", NODE, POOL_A, 1, dev(DEV1, caps={"memory": {"value": "16Gi", "requestPolicy": {
             "validValues": ["1Gi", "4Gi", "8Gi"]}}}, allowMultipleAllocations=True))], expect=None),
    Case("consumable-valid-range-step", [claim("c0", req(REQ0, capacity={"requests": {"cpu": "3"}}))],
         [slc("s", NODE, POOL_A, 1, dev(DEV1, caps={"cpu": {"value": "16", "requestPolicy": {
             "validRange": {"min": "2", "max": "10", "step": "4"}}}}, allowMultipleAllocations=True))],
         expect=[[R(REQ0, DEV1)]],
         check=lambda a: _assert(a[0]["devices"]["results"][0]["consumedCapacity"] == {"cpu": "6"})),
    Case("consumable-valid-range-below-min", [claim("c0", req(REQ0, capacity={"requests": {"cpu": "1"}}))],
         [slc("s", NODE, POOL_A, 1, dev(DEV1, caps={"cpu": {"value": "16", "requestPolicy": {
             "validRange": {"min": "2"}}}}, allowMultipleAllocations=True))],
         expect=[[R(REQ0, DEV1)]],
         check=lambda a: _assert(a[0]["devices"]["results"][0]["consumedCapacity"] == {"cpu": "2"})),
    Case("consumable-valid-range-above-max", [claim("c0", req(REQ0, capacity={"requests": {"cpu": "11"}}))],
         [slc("s", NODE, POOL_A, 1, dev(DEV1, caps={"cpu": {"value": "16", "requestPolicy": {
             "validRange": {"min": "2", "max": "10"}}}}, allowMultipleAllocations=True))], expect=None),
    Case("consumable-unknown-capacity-name", [claim("c0", req(REQ0, capacity={"requests": {"nope": "1"}}))],
         [slc("s", NODE, POOL_A, 1, dev(DEV1, caps={"cpu": "16"}, allowMultipleAllocations=True), dev(DEV2))],
         expect=None),
    Case("consumable-capacity-on-exclusive-device", [claim("c0", req(REQ0, capacity={"requests": {"cpu": "4"}}))],
         [slc("s", NODE, POOL_A, 1, dev(DEV1, caps={"cpu": "2"}), dev(DEV2, caps={"cpu": "8"}))],
         expect=[[R(REQ0, DEV2)]],
         check=lambda a: _assert("shareID" not in a[0]["devices"]["results"][0])),
    Case("consumable-gate-off-capacity-request", [claim("c0", req(REQ0, capacity={"requests": {"cpu": "4"}}))],
         [_two_devices()], gates={"DRAConsumableCapacity": False},
         error=r"has capacity requests, but the DRAConsumableCapacity feature is disabled"),
    Case("consumable-distinct-attribute-same-device",
         [claim("c0", req(REQ0, count=2, capacity={"requests": {"cpu": "1"}}),
                constraints=[{"distinctAttribute": "driver-a/id"}])],
         [slc("s", NODE, POOL_A, 1, dev(DEV1, {"id": 1}, caps={"cpu": "4"}, allowMultipleAllocations=True),
              dev(DEV2, {"id": 2}, caps={"cpu": "4"}, allowMultipleAllocations=True))],
         expect=[[R(REQ0, DEV1), R(REQ0, DEV2)]]),
    Case("consumable-same-device-twice-in-claim",
         [claim("c0", req(REQ0, count=2, capacity={"requests": {"cpu": "1"}}))],
         [slc("s", NODE, POOL_A, 1, dev(DEV1, caps={"cpu": "4"}, allowMultipleAllocations=True))],
         expect=[[R(REQ0, DEV1), R(REQ0, DEV1)]]),
    # ----- binding conditions
    Case("binding-conditions-last-pool", [claim("c0", req(REQ0))],
         [slc("s-a", NODE, POOL_A, 1, dev(DEV1, bindingConditions=["ready"], bindingFailureConditions=["failed"])),
          slc("s-b", NODE, POOL_B, 1, dev(DEV2))], expect=[[R(REQ0, DEV2, pool=POOL_B)]]),
    Case("binding-conditions-copied", [claim("c0", req(REQ0))],
         [slc("s-a", NODE, POOL_A, 1, dev(DEV1, bindingConditions=["ready"], bindingFailureConditions=["failed"],
                                          bindsToNode=True))], expect=[[R(REQ0, DEV1)]],
         check=lambda a: _assert(a[0]["devices"]["results"][0]["bindingConditions"] == ["ready"]
                                 and "allocationTimestamp" in a[0])),
    Case("binding-conditions-gate-off", [claim("c0", req(REQ0))],
         [slc("s-a", NODE, POOL_A, 1, dev(DEV1, bindingConditions=["ready"]))],
         gates={"DRADeviceBindingConditions": False}, expect=None),
]


def _assert(cond: bool) -> None:
    assert cond


def _run(case: Case):
    return allocate(AllocationInput(
        claims=case.claims, node=case.node, slices=case.slices,
        classes={c["metadata"]["name"]: c for c in case.classes}, allocated=case.allocated,
        in_flight=case.in_flight, taint_rules=case.taint_rules, gates=FeatureGates(case.gates)))


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_allocate(case: Case) -> None:
    out = _run(case)
    if case.error is not None:
        assert not out.fits
        assert re.search(case.error, out.reason), out.reason
        return
    if case.expect is None:
        assert not out.fits, out.allocations
        assert out.reason == "cannot allocate all claims"
        return
    assert out.fits, out.reason
    got = [[(r["request"], r["driver"], r["pool"], r["device"]) for r in a["devices"]["results"]]
           for a in out.allocations]
    assert got == case.expect
    if case.check is not None:
        case.check(out.allocations)


def test_case_names_unique() -> None:
    names = [c.name for c in CASES]
    assert len(names) == len(set(names))


def test_deadline_times_out() -> None:
    out = allocate(AllocationInput(claims=[claim("c0", req(REQ0))], node=NODE_OBJ, slices=[_two_devices()],
                                   classes={CLASS_A: cls(CLASS_A)}, deadline=time.monotonic() - 1))
    assert out.timed_out and not out.fits


def test_sequential_pods_fill_node() -> None:
    slices = [_two_devices()]
    done: list = []
    for i in range(3):
        c = claim(f"c{i}", req(REQ0))
        out = allocate(AllocationInput(claims=[c], node=NODE_OBJ, slices=slices, classes={CLASS_A: cls(CLASS_A)},
                                       allocated=done))
        if i < 2:
            assert out.fits
            c["status"] = {"allocation": out.allocations[0]}
            done.append(c)
        else:
            assert not out.fits


def test_node_selector_matches_operators() -> None:
    node = {"metadata": {"name": "n", "labels": {"a": "1", "b": "5"}}}

    def sel(*reqs: dict) -> dict:
        return {"nodeSelectorTerms": [{"matchExpressions": list(reqs)}]}

    assert node_selector_matches(sel({"key": "a", "operator": "In", "values": ["1"]}), node)
    assert not node_selector_matches(sel({"key": "a", "operator": "NotIn", "values": ["1"]}), node)
    assert node_selector_matches(sel({"key": "c", "operator": "DoesNotExist"}), node)
    assert node_selector_matches(sel({"key": "b", "operator": "Gt", "values": ["4"]}), node)
    assert not node_selector_matches(sel({"key": "b", "operator": "Lt", "values": ["4"]}), node)
    assert not node_selector_matches({"nodeSelectorTerms": [{}]}, node)
    assert node_selector_matches({"nodeSelectorTerms": [{"matchFields": [
        {"key": "metadata.name", "operator": "In", "values": ["n"]}]}]}, node)


def test_cel_cache_keyed_by_resource_version() -> None:
    klass = cls(CLASS_A, 'device.attributes["driver-a"].model == "a100"')

    def run(model: str, rv: str):
        s = slc("cached", NODE, POOL_A, 1, dev(DEV1, {"model": model}))
        s["metadata"].update(uid="u1", resourceVersion=rv)
        return allocate(AllocationInput(claims=[claim("c0", req(REQ0))], node=NODE_OBJ, slices=[s],
                                        classes={CLASS_A: klass}))

    assert run("a100", "1").fits
    assert run("a100", "1").fits  # served from the cache
    assert not run("v100", "2").fits  # updated slice: new key, evaluated again


def _outcome(out) -> tuple:
    """An outcome without its per-call values (allocationTimestamp, shareIDs)."""
    if out.allocations is None:
        return (None, out.reason, out.timed_out)
    allocs = []
    for a in out.allocations:
        a = {k: v for k, v in a.items() if k != "allocationTimestamp"}
        a["devices"] = {**a["devices"], "results": [{k: v for k, v in r.items() if k != "shareID"}
                                                     for r in a["devices"]["results"]]}
        allocs.append(a)
    return (allocs, out.reason, out.timed_out)


def _run_split(case: Case, shared: list, node: dict | None = None):
    """As _run, with the slices passed as the scheduler passes them: the node's own and the shared ones."""
    node = case.node if node is None else node
    name = (node or {}).get("metadata", {}).get("name")
    local = [s for s in case.slices if s["spec"].get("nodeName") and s["spec"]["nodeName"] == name]
    return allocate(AllocationInput(
        claims=case.claims, node=node, slices=case.slices,
        classes={c["metadata"]["name"]: c for c in case.classes}, allocated=case.allocated,
        in_flight=case.in_flight, taint_rules=case.taint_rules, gates=FeatureGates(case.gates),
        node_slices=local, shared_slices=shared))


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_shared_slices_same_outcome(case: Case) -> None:
    """Every case gives the same outcome when the slices without nodeName come apart (shared_slices), on the
    first call (view gathered) and on the next ones (view reused), on its node and on another one."""
    shared = [s for s in case.slices if not s["spec"].get("nodeName")]
    for node in (case.node, NODE2_OBJ):
        want = _outcome(_run(Case(**{**case.__dict__, "node": node})))
        assert _outcome(_run_split(case, shared, node)) == want
        assert _outcome(_run_split(case, shared, node)) == want


def test_shared_view_per_node_signature() -> None:
    """Nodes share a gathered view only when their labels give the same answers to the slices' selectors."""
    from dramock.scheduler.allocator.pools import shared_view_key

    west = slc("west", None, POOL_A, 1, dev(DEV1), nodeSelector=NODE_SEL_REGION_WEST)
    anywhere = slc("all", None, POOL_B, 1, dev(DEV2), allNodes=True)
    shared = [west, anywhere]
    case = Case("split", [claim("c0", req(REQ0))], shared)
    west2 = {"metadata": {"name": "worker-3", "labels": {"region": "west"}}}
    assert shared_view_key(shared, NODE_OBJ, True) == shared_view_key(shared, west2, True)
    assert shared_view_key(shared, NODE_OBJ, True) != shared_view_key(shared, NODE2_OBJ, True)
    for _ in range(2):
        for node, pool, device in ((NODE_OBJ, POOL_A, DEV1), (NODE2_OBJ, POOL_B, DEV2), (west2, POOL_A, DEV1)):
            out = _run_split(case, shared, node)
            assert out.fits, out.reason
            assert [(r["pool"], r["device"]) for r in out.allocations[0]["devices"]["results"]] == [(pool, device)]
    per_device = slc("pd", None, POOL_A, 1, dev(DEV1, nodeName=NODE), perDeviceNodeSelection=True)
    assert shared_view_key([per_device], NODE_OBJ, True) is None
    binds = slc("b", None, POOL_A, 1, dev(DEV1, bindingConditions=["ready"], bindsToNode=True), allNodes=True)
    assert shared_view_key([binds], NODE_OBJ, True) is None
    assert shared_view_key([binds], NODE_OBJ, False) is not None


def test_pool_verdicts_follow_the_loops_pool_versions() -> None:
    """With the loop's pool versions in the allocated state, what the allocator remembers about a pool (passed
    over as full, or not) follows each change of what is held there."""
    from dramock.scheduler.types import AllocatedDevices

    slices = _partitionable(_consumer("big", "6Gi"), _consumer(DEV1, "4Gi")) + _pool_b_partitionable()
    versions: dict = {}
    held = AllocatedDevices(pool_version=versions, versions_of=object())
    big = (DRIVER_A, POOL_A, "big")

    def chosen() -> list:
        out = allocate(AllocationInput(claims=[claim("c0", req(REQ0))], node=NODE_OBJ, slices=slices,
                                       classes={CLASS_A: cls(CLASS_A)}, allocated_devices=held,
                                       gates=FeatureGates({})))
        assert out.fits, out.reason
        return [(r["pool"], r["device"]) for r in out.allocations[0]["devices"]["results"]]

    for _ in range(2):
        assert chosen() == [(POOL_A, "big")]
        held.exclusive.add(big)
        held.consuming.add(big)
        versions[(DRIVER_A, POOL_A)] = versions.get((DRIVER_A, POOL_A), 0) + 1
        assert chosen() == [(POOL_B, DEV2)]  # pool A: "big" held, DEV1's 4Gi not left
        held.exclusive.discard(big)
        held.consuming.discard(big)
        versions[(DRIVER_A, POOL_A)] += 1
