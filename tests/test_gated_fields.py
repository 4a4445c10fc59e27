"""Feature gates (dramock.schemas.featuregates) and the fields they guard (dramock.registry.gatedfields, with
the rows in the kinds' modules).

The unit tests are generated from gatedfields.TABLE, so a new row is tested without further work: for
every gated field, (1) created with the gate off it is dropped, (2) kept on an update when the old object
already used it (the gate was on when it was written), (3) dropped when an update adds it to an object
that never used it. The end-to-end test does the same over HTTP across a restart of a real server, with
one valid example object per row whose gates can be turned off.
"""

from __future__ import annotations

import copy
import re
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest
from conftest import start_server, stop
from test_validation_resource import claim, counters_slice, device, ex, pod, result, rslice, template

from dramock.registry import gatedfields as generic
from dramock.registry.gatedfields import GatedFields
from dramock.registry.kinds import ALPHA_KINDS, STORED_KINDS
from dramock.registry.kinds import GATED_FIELDS as TABLE
from dramock.schemas import defs, featuregates
from dramock.schemas.featuregates import GATES, FeatureGates


class gatedfields:  # noqa: N801  (the rules by kind name, over the registry's rows and the generic dropper)
    ROOTS = {k.kind: k.definition for k in (*STORED_KINDS, *ALPHA_KINDS)
             if k.group in ("", "resource.k8s.io", "scheduling.k8s.io")}

    @staticmethod
    def rows(kind: str) -> tuple[GatedFields, ...]:
        return tuple(r for r in TABLE if r.kind == kind)

    @staticmethod
    def compile_path(kind: str, path: str) -> object:
        return generic.compile_path(gatedfields.ROOTS[kind], path)

    @staticmethod
    def remove(kind: str, obj: dict, path: str) -> None:
        generic.remove(gatedfields.ROOTS[kind], obj, path)


def uses(kind: str, obj: dict | None, path: str) -> bool:
    return generic.uses(gatedfields.ROOTS[kind], obj, path)


def drop_disabled_fields(kind: str, new: dict, old: dict | None, gates: FeatureGates) -> None:
    generic.drop_disabled_fields(gatedfields.rows(kind), new, old, gates)

Obj = dict[str, Any]
UID = "ac051fac-2ead-46d9-b8b4-4e0fbeb7455d"

# --- helpers: build objects that use a path, from the 1.37 schema ---

_SEG = re.compile(r"^([A-Za-z][A-Za-z0-9]*)(\[\*\]|\{\*\})?$")


def _steps(kind: str, path: str) -> list[tuple[str, str | None, dict]]:
    """(field, "[*]"/"{*}"/None, the field's schema) for each segment of `path`."""
    schema = defs.resolve({"$ref": defs.REF_PREFIX + gatedfields.ROOTS[kind]})
    out = []
    for seg in path.split("."):
        name, star = _SEG.match(seg).groups()  # type: ignore[union-attr]
        field_schema = schema["properties"][name]
        out.append((name, star, field_schema))
        schema = defs.resolve(field_schema.get("items") if star == "[*]" else
                              field_schema.get("additionalProperties") if star == "{*}" else field_schema)
    return out


def sample(schema: dict, depth: int = 0) -> Any:
    """A non-empty value of the schema's type (lists and maps with one entry)."""
    s = defs.resolve(schema)
    types = defs.types_of(s)
    if "array" in types:
        return [sample(s.get("items") or {}, depth + 1)]
    if isinstance(s.get("additionalProperties"), dict) and not s.get("properties"):
        return {"k": sample(s["additionalProperties"], depth + 1)}
    if s.get("properties"):
        names = s.get("required") or sorted(s["properties"])[:1]
        return {} if depth > 4 else {n: sample(s["properties"][n], depth + 1) for n in names}
    if "boolean" in types:
        return True
    if "integer" in types or "number" in types:
        return 1
    if "string" in types:
        return (s.get("enum") or ["x"])[0]
    return "1"  # int-or-string (quantities)


def put(kind: str, obj: Obj, path: str, value: Any = None) -> Obj:
    """Set the field at `path` (a sample value by default) in every place the path reaches, creating the
    containers on the way (one element where a list or map is missing or empty)."""
    steps = _steps(kind, path)
    if value is None:
        value = sample(steps[-1][2])
    nodes = [obj]
    for name, star, _ in steps[:-1]:
        nxt = []
        for node in nodes:
            if star == "[*]":
                if not node.get(name):
                    node[name] = [{}]
                nxt.extend(node[name])
            elif star == "{*}":
                if not node.get(name):
                    node[name] = {"k": {}}
                nxt.extend(node[name].values())
            else:
                if node.get(name) is None:
                    node[name] = {}
                nxt.append(node[name])
        nodes = nxt
    for node in nodes:
        node[steps[-1][0]] = copy.deepcopy(value)
    return obj


BASES: dict[str, Callable[[], Obj]] = {
    "ResourceSlice": rslice,
    "ResourceClaim": lambda: claim(constraints=[{"requests": ["foo"], "matchAttribute": "dra.example.com/a"}]),
    "ResourceClaimTemplate": template,
    "DeviceClass": lambda: {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass",
                            "metadata": {"name": "foo"}, "spec": {}},
    "Pod": pod,
    "PodGroup": lambda: {"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup",
                         "metadata": {"name": "foo", "namespace": "default"},
                         "spec": {"schedulingPolicy": {"basic": {}}}},
    "Workload": lambda: {"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "Workload",
                         "metadata": {"name": "foo", "namespace": "default"},
                         "spec": {"podGroupTemplates": [{"name": "t", "schedulingPolicy": {"basic": {}}}]}},
}


def base(row: GatedFields) -> Obj:
    """A valid object of the row's kind that does not use the row's feature."""
    obj = BASES[row.kind]()
    for path in {*row.paths, *row.in_use_paths}:
        gatedfields.remove(row.kind, obj, path)
    return obj


def off(row: GatedFields, gate: str | None = None) -> FeatureGates:
    return FeatureGates({g: False for g in ((gate,) if gate else row.gates)})


def on(row: GatedFields) -> FeatureGates:
    return FeatureGates({g: True for g in row.gates})


def labelled(obj: Obj) -> Obj:
    obj = copy.deepcopy(obj)
    obj.setdefault("metadata", {}).setdefault("labels", {})["touched"] = "yes"
    return obj


ROW_PATHS = [pytest.param(row, path, id=f"{row.kind}:{'+'.join(row.gates)}:{path}")
             for row in TABLE for path in row.paths]
ROWS = [pytest.param(row, id=f"{row.kind}:{'+'.join(row.gates)}:{row.paths[0]}") for row in TABLE]


# --- the table itself ---


def test_table_gates_and_paths_exist() -> None:
    for row in TABLE:
        assert row.gates and all(g in GATES for g in row.gates), row
        assert row.kind in gatedfields.ROOTS, row
        for path in {*row.paths, *row.in_use_paths}:
            gatedfields.compile_path(row.kind, path)  # raises if the 1.37 schema has no such field


def test_bad_paths_are_refused() -> None:
    for path in ("spec.nope", "spec.devices[*]", "spec.driver[*].x", "spec.pool{*}.name", "spec.devices.bad-seg"):
        with pytest.raises(ValueError):
            gatedfields.compile_path("ResourceSlice", path)


def _schema_gated_fields(kind: str) -> dict[str, set[str]]:
    """path -> gates, for every field whose 1.37 description says it requires enabling feature gates."""
    pat = re.compile(r"requires enabling the ((?:[A-Za-z]+(?:, | and )?)+) feature gates?")
    found: dict[str, set[str]] = {}

    def walk(name: str, path: str, seen: frozenset[str]) -> None:
        for prop, s in (defs.definition(name).get("properties") or {}).items():
            star = "[*]" if s.get("items") else "{*}" if isinstance(s.get("additionalProperties"), dict) else ""
            inner = s.get("items") or s.get("additionalProperties") or s
            here = f"{path}.{prop}" if path else prop
            m = pat.search(s.get("description", ""))
            if m:
                found[here] = set(re.split(r", | and ", m.group(1)))
            ref = defs.ref_name(inner if isinstance(inner, dict) else None)
            if ref and ref not in seen and not ref.startswith("io.k8s.apimachinery"):
                walk(ref, here + star, seen | {ref})

    walk(gatedfields.ROOTS[kind], "", frozenset({gatedfields.ROOTS[kind]}))
    return found


@pytest.mark.parametrize("kind", ["ResourceSlice", "ResourceClaim", "ResourceClaimTemplate", "DeviceClass",
                                  "DeviceTaintRule"])
def test_every_field_the_schema_gates_is_in_the_table(kind: str) -> None:
    """Cross-check with the 1.37 descriptions ("This is an alpha field and requires enabling the X feature
    gate"): each such field is dropped by a row naming those gates."""
    schema_fields = _schema_gated_fields(kind)
    if kind in ("ResourceSlice", "ResourceClaim", "ResourceClaimTemplate"):
        assert schema_fields
    for path, gates in schema_fields.items():
        rows = [r for r in gatedfields.rows(kind) if path in r.paths]
        assert rows, f"{kind} {path} (gates {gates}) is in no row"
        assert any(set(r.gates) == gates for r in rows), (path, gates, [r.gates for r in rows])


# --- the three rules, per field ---


@pytest.mark.parametrize("row,path", ROW_PATHS)
def test_created_with_gate_off_is_dropped(row: GatedFields, path: str) -> None:
    obj = put(row.kind, base(row), path)
    assert uses(row.kind, obj, path)
    kept = copy.deepcopy(obj)
    drop_disabled_fields(row.kind, kept, None, on(row))
    assert kept == obj
    for gate in row.gates:  # any one of the row's gates off drops the field
        dropped = copy.deepcopy(obj)
        drop_disabled_fields(row.kind, dropped, None, off(row, gate))
        assert not uses(row.kind, dropped, path)
        assert dropped["metadata"] == obj["metadata"]


@pytest.mark.parametrize("row,path", ROW_PATHS)
def test_update_keeps_field_already_in_use(row: GatedFields, path: str) -> None:
    """Written while the gate was on, then the server restarted with it off: updates keep the field."""
    old = put(row.kind, base(row), path)
    if path not in row.in_use_paths:  # the feature is in use by another field (pod claims: spec.resourceClaims)
        put(row.kind, old, row.in_use_paths[0])
    drop_disabled_fields(row.kind, old, None, on(row))  # created with the gate on
    new = labelled(old)
    drop_disabled_fields(row.kind, new, old, off(row))
    assert new == labelled(old)


@pytest.mark.parametrize("row,path", ROW_PATHS)
def test_update_adding_field_to_object_that_never_used_it_is_dropped(row: GatedFields, path: str) -> None:
    old = base(row)
    new = put(row.kind, labelled(old), path)
    drop_disabled_fields(row.kind, new, old, off(row))
    assert not uses(row.kind, new, path)
    assert new["metadata"]["labels"]["touched"] == "yes"
    again = put(row.kind, labelled(old), path)
    drop_disabled_fields(row.kind, again, old, on(row))
    assert uses(row.kind, again, path)


@pytest.mark.parametrize("row", ROWS)
def test_feature_in_use_keeps_all_of_the_rows_fields(row: GatedFields) -> None:
    """Upstream's *FeatureInUse guard is per gate: one field of it in the old object keeps them all."""
    for used in row.in_use_paths:
        old = put(row.kind, base(row), used)
        new = base(row)
        for path in row.paths:
            put(row.kind, new, path)
        want = copy.deepcopy(new)
        drop_disabled_fields(row.kind, new, old, off(row))
        assert new == want, used


def test_defaults_drop_only_fields_of_gates_off_by_default() -> None:
    everything: dict[str, Obj] = {}
    for kind in {row.kind for row in TABLE}:
        obj = everything[kind] = BASES[kind]()
        for path in sorted((p for r in gatedfields.rows(kind) for p in r.paths), key=len):  # parents first
            put(kind, obj, path)
    for kind, obj in everything.items():
        drop_disabled_fields(kind, obj, None, FeatureGates())
        for row in gatedfields.rows(kind):
            for path in row.paths:
                assert uses(kind, obj, path) == all(GATES[g].default for g in row.gates), (kind, path)


def test_unknown_kind_is_left_alone() -> None:
    obj = {"kind": "ConfigMap", "metadata": {"name": "x"}, "data": {"a": "b"}}
    drop_disabled_fields("ConfigMap", obj, None, FeatureGates({g: False for g in GATES}))
    assert obj == {"kind": "ConfigMap", "metadata": {"name": "x"}, "data": {"a": "b"}}


def test_used_means_non_empty_collection_or_present_pointer() -> None:
    kind = "ResourceSlice"
    assert not uses(kind, rslice([device(taints=[])]), "spec.devices[*].taints")
    assert uses(kind, rslice([device(taints=[{"key": "k", "effect": "NoSchedule"}])]), "spec.devices[*].taints")
    assert uses(kind, rslice([device(allowMultipleAllocations=False)]), "spec.devices[*].allowMultipleAllocations")
    assert not uses(kind, rslice([device(allowMultipleAllocations=None)]), "spec.devices[*].allowMultipleAllocations")
    assert not uses(kind, None, "spec.devices[*].taints")


def test_drop_reaches_every_list_element_and_map_value() -> None:
    s = rslice([device("a", attributes={"x": {"ints": [1]}, "y": {"strings": ["s"]}, "z": {"int": 1}}),
                device("b", attributes={"x": {"versions": ["1.0.0"]}})])
    drop_disabled_fields("ResourceSlice", s, None, FeatureGates({"DRAListTypeAttributes": False}))
    assert [d["attributes"] for d in s["spec"]["devices"]] == [{"x": {}, "y": {}, "z": {"int": 1}}, {"x": {}}]


# --- feature gate parsing ---


def test_gate_table() -> None:
    locked = {n for n, g in GATES.items() if g.locked}
    assert locked == {"DynamicResourceAllocation", "DRAAdminAccess", "DRAPrioritizedList", "DRAExtendedResource",
                      "DRAResourceClaimDeviceStatus"}
    assert all(GATES[n].default and GATES[n].stage == "GA" for n in locked)
    assert {n for n, g in GATES.items() if g.stage == "GA" and not g.locked} == {"DRADeviceTaints",
                                                                                "DRADeviceTaintRules"}
    assert {n for n, g in GATES.items() if g.stage == "BETA" and g.default} == {
        "DRAPartitionableDevices", "DRAConsumableCapacity", "DRADeviceBindingConditions",
        "DRASchedulerFilterTimeout", "DRAResourceClaimGranularStatusAuthorization"}
    assert {n for n, g in GATES.items() if g.stage == "BETA" and not g.default} == {
        "DRAWorkloadResourceClaims", "DRAFractionalCapacityRange", "GenericWorkload"}
    assert {n for n, g in GATES.items() if g.stage == "ALPHA"} == {
        "DRADeviceCompatibilityGroups", "DRADerivedAttributes", "DRAOptionalNodeOperations",
        "DRASharedConsumableCapacity", "DRAListTypeAttributes", "DRANodeAllocatableResources",
        "DRAResourcePoolStatus"}
    assert not any(g.default for g in GATES.values() if g.stage == "ALPHA")


@pytest.mark.parametrize("spec,message", [
    ("Foo=true", "unrecognized feature gate: Foo"),
    ("DRADeviceTaints=false,Foo=false", "unrecognized feature gate: Foo"),
    ("DynamicResourceAllocation=false", "cannot set feature gate DynamicResourceAllocation to false, feature is "
                                        "locked to true"),
    ("DRAPrioritizedList=false,DRAAdminAccess=false",
     "[cannot set feature gate DRAPrioritizedList to false, feature is locked to true, "
     "cannot set feature gate DRAAdminAccess to false, feature is locked to true]"),
    ("DRAListTypeAttributes", "missing bool value for DRAListTypeAttributes"),
    ("DRAListTypeAttributes=maybe",
     'invalid value of DRAListTypeAttributes=maybe, err: strconv.ParseBool: parsing "maybe": invalid syntax'),
    ("DRADeviceTaints=false",
     "DRADeviceTaintRules is enabled, but depends on features that are disabled: [DRADeviceTaints]"),
])
def test_parse_refuses_like_kube_apiserver(spec: str, message: str) -> None:
    with pytest.raises(featuregates.FeatureGateError) as e:
        featuregates.parse(spec)
    assert str(e.value) == message


def test_parse_accepts() -> None:
    assert featuregates.parse("") == {}
    assert featuregates.parse("DRAListTypeAttributes=true, DRAConsumableCapacity=F,,") == {
        "DRAListTypeAttributes": True, "DRAConsumableCapacity": False}
    assert featuregates.parse("DynamicResourceAllocation=true,DRAExtendedResource=1") == {
        "DynamicResourceAllocation": True, "DRAExtendedResource": True}
    assert featuregates.parse("DRADeviceTaintRules=false,DRADeviceTaints=false") == {
        "DRADeviceTaintRules": False, "DRADeviceTaints": False}
    assert featuregates.parse("DRAListTypeAttributes=true,DRAListTypeAttributes=false") == {
        "DRAListTypeAttributes": False}


def test_parse_all_alpha_and_all_beta() -> None:
    gates = featuregates.parse("AllAlpha=true,DRADerivedAttributes=false")
    assert gates["DRADerivedAttributes"] is False
    assert all(gates[n] for n, g in GATES.items() if g.stage == "ALPHA" and n != "DRADerivedAttributes")
    assert "AllAlpha" not in gates
    gates = featuregates.parse("AllBeta=false")
    assert all(gates[n] is False for n, g in GATES.items() if g.stage == "BETA")
    assert "DRADeviceTaints" not in gates  # GA gates are not beta


def test_feature_gates_object() -> None:
    gates = FeatureGates({"DRAListTypeAttributes": True})
    assert gates.enabled("DRAListTypeAttributes") and gates.enabled("DRAPartitionableDevices")
    assert not gates.enabled("DRAResourcePoolStatus")
    with pytest.raises(KeyError):
        gates.enabled("NoSuchGate")


@pytest.mark.parametrize("spec,message", [
    ("Foo=true", "unrecognized feature gate: Foo"),
    ("DRAAdminAccess=false", "cannot set feature gate DRAAdminAccess to false, feature is locked to true"),
])
@pytest.mark.e2e
def test_serve_refuses_bad_gates(tmp_path: Any, spec: str, message: str) -> None:
    for command in ("serve", "apiserver"):
        res = subprocess.run([sys.executable, "-m", "dramock", command, "--port", "0", "--data-dir",
                              str(tmp_path), "--feature-gates", spec], capture_output=True, text=True, timeout=60)
        assert res.returncode != 0
        assert message in res.stderr


# --- end to end, across a restart ---

NS = "gated"
DRIVER = "dra.example.com"


@dataclass
class Example:
    """A valid object of a row's kind without the feature (`plain`) and a function adding the row's fields;
    `status` rows add them through /status. `valid_after_drop=False` when upstream validation refuses what
    is left once the fields are dropped (a list-only attribute, say)."""

    gates: tuple[str, ...]
    path: str  # identifies the row
    plain: Callable[[str], Obj]
    add: Callable[[Obj], None]
    status: bool = False
    valid_after_drop: bool = True

    @property
    def row(self) -> GatedFields:
        return next(r for r in TABLE if r.gates == self.gates and self.path in r.paths)


def _named(obj: Obj, name: str) -> Obj:
    obj["metadata"]["name"] = name
    if obj["metadata"].get("namespace"):
        obj["metadata"]["namespace"] = NS
    return obj


def _slice(name: str, **spec: Any) -> Obj:
    s = _named(rslice([device("dev-0")], **spec), name)
    s["spec"]["driver"] = DRIVER
    s["spec"]["pool"]["name"] = name
    return s


def _counters_slice(name: str) -> Obj:
    """A slice of a pool's shared counters; `plain` without any."""
    s = _named(counters_slice(), name)
    s["spec"].update(driver=DRIVER, sharedCounters=[])
    s["spec"]["pool"]["name"] = name
    return s


def _partitioned_slice(name: str) -> Obj:
    """A slice whose device consumes counters of a counter set published in another slice."""
    s = _slice(name)
    _dev(s)["consumesCounters"] = [{"counterSet": "gpu-0", "counters": {"memory": {"value": "1Gi"}}}]
    return s


def _dev(obj: Obj) -> Obj:
    return obj["spec"]["devices"][0]


def _allocated_claim(name: str) -> Obj:
    c = _named(claim(), name)
    c["status"] = {"allocation": {"devices": {"results": [result(device="dev-0")]}}}
    return c


def _result(obj: Obj) -> Obj:
    return obj["status"]["allocation"]["devices"]["results"][0]


def _template_request(obj: Obj) -> Obj:
    return obj["spec"]["spec"]["devices"]["requests"][0]["exactly"]


TOLERATION = {"key": "example.com/t", "operator": "Exists", "effect": "NoSchedule"}

EXAMPLES: list[Example] = [
    # ResourceSlice
    Example(("DRADeviceTaints",), "spec.devices[*].taints", _slice,
            lambda o: _dev(o).update(taints=[{"key": "example.com/t", "value": "v", "effect": "NoSchedule",
                                              "timeAdded": "2025-01-01T00:00:00Z"}])),
    Example(("DRAPartitionableDevices",), "spec.sharedCounters", _counters_slice,
            lambda o: o["spec"].update(sharedCounters=[{"name": "gpu-0",
                                                        "counters": {"memory": {"value": "8Gi"}}}])),
    Example(("DRADeviceBindingConditions", "DRAResourceClaimDeviceStatus"), "spec.devices[*].bindingConditions",
            _slice, lambda o: _dev(o).update(bindingConditions=["Ready"], bindingFailureConditions=["Failed"],
                                            bindsToNode=True)),
    Example(("DRAConsumableCapacity",), "spec.devices[*].allowMultipleAllocations", _slice,
            lambda o: _dev(o).update(allowMultipleAllocations=True,
                                     capacity={"memory": {"value": "1Gi", "requestPolicy": {"default": "1Mi"}}})),
    Example(("DRANodeAllocatableResources",), "spec.devices[*].nodeAllocatableResources", _slice,
            lambda o: _dev(o).update(nodeAllocatableResources={"cpu": {"mapping": {"deviceMultiplier": "1"}}})),
    Example(("DRAListTypeAttributes",), "spec.devices[*].attributes{*}.ints", _slice,
            lambda o: _dev(o)["attributes"].update(numbers={"ints": [1, 2]}), valid_after_drop=False),
    Example(("DRAResourcePoolStatus",), "spec.partitionTypeAttribute", _partitioned_slice,
            lambda o: o["spec"].update(partitionTypeAttribute="dra.example.com/string")),
    Example(("DRAOptionalNodeOperations",), "spec.skipNodeOperations", _slice,
            lambda o: o["spec"].update(skipNodeOperations=["*"])),
    Example(("DRADeviceCompatibilityGroups",), "spec.devices[*].consumesCounters[*].compatibilityGroups",
            _partitioned_slice, lambda o: _dev(o)["consumesCounters"][0].update(compatibilityGroups=["mig"])),
    # ResourceClaim spec (immutable: an update adding the field only passes because the field is dropped)
    Example(("DRADeviceTaints",), "spec.devices.requests[*].exactly.tolerations",
            lambda name: _named(ex(), name),
            lambda o: o["spec"]["devices"]["requests"][0]["exactly"].update(tolerations=[TOLERATION])),
    Example(("DRAConsumableCapacity",), "spec.devices.requests[*].exactly.capacity",
            lambda name: _named(ex(), name),
            lambda o: o["spec"]["devices"]["requests"][0]["exactly"].update(capacity={"requests": {"memory": "1Gi"}})),
    Example(("DRADerivedAttributes",), "spec.devices.requests[*].exactly.derivedAttributes",
            lambda name: _named(claim(constraints=[{"requests": ["foo"],
                                                    "matchAttribute": "derived.example.com/numa"}]), name),
            lambda o: o["spec"]["devices"]["requests"][0]["exactly"].update(derivedAttributes=[
                {"name": "derived.example.com/numa", "expression": 'device.attributes["dra.example.com"]["numa"]'}])),
    # ResourceClaim status
    Example(("DRADeviceTaints",), "status.allocation.devices.results[*].tolerations", _allocated_claim,
            lambda o: _result(o).update(tolerations=[TOLERATION]), status=True),
    Example(("DRAConsumableCapacity",), "status.allocation.devices.results[*].shareID", _allocated_claim,
            lambda o: _result(o).update(shareID=UID, consumedCapacity={"memory": "1Gi"}), status=True),
    Example(("DRADeviceBindingConditions", "DRAResourceClaimDeviceStatus"),
            "status.allocation.devices.results[*].bindingConditions", _allocated_claim,
            lambda o: _result(o).update(bindingConditions=["Ready"], bindingFailureConditions=["Failed"]),
            status=True),
    Example(("DRAOptionalNodeOperations",), "status.allocation.devices.results[*].skipNodeOperations",
            _allocated_claim, lambda o: _result(o).update(skipNodeOperations=["*"]), status=True),
    # ResourceClaimTemplate
    Example(("DRADeviceTaints",), "spec.spec.devices.requests[*].exactly.tolerations",
            lambda name: _named(template(), name), lambda o: _template_request(o).update(tolerations=[TOLERATION])),
    Example(("DRAConsumableCapacity",), "spec.spec.devices.requests[*].exactly.capacity",
            lambda name: _named(template(), name),
            lambda o: _template_request(o).update(capacity={"requests": {"memory": "1Gi"}})),
    Example(("DRADerivedAttributes",), "spec.spec.devices.requests[*].exactly.derivedAttributes",
            lambda name: _named(template(claim(constraints=[{"requests": ["foo"],
                                                             "matchAttribute": "derived.example.com/numa"}])
                                         ["spec"]["devices"]), name),
            lambda o: _template_request(o).update(derivedAttributes=[
                {"name": "derived.example.com/numa", "expression": 'device.attributes["dra.example.com"]["numa"]'}])),
    # Pod status
    Example(("DRANodeAllocatableResources",), "status.nodeAllocatableResourceClaimStatuses",
            lambda name: _named(pod(), name) | {"status": {}},
            lambda o: o["status"].update(nodeAllocatableResourceClaimStatuses=[
                {"resourceClaimName": "claim", "containers": ["ctr"]}]), status=True),
    # scheduling.k8s.io/v1beta1 (served with GenericWorkload and --runtime-config, see _gate_args)
    Example(("DRAWorkloadResourceClaims",), "spec.resourceClaims", lambda name: _named(BASES["PodGroup"](), name),
            lambda o: o["spec"].update(resourceClaims=[{"name": "gpu", "resourceClaimTemplateName": "gpu"}])),
    Example(("DRAWorkloadResourceClaims",), "spec.podGroupTemplates[*].resourceClaims",
            lambda name: _named(BASES["Workload"](), name),
            lambda o: o["spec"]["podGroupTemplates"][0].update(
                resourceClaims=[{"name": "n", "resourceClaimName": "c"}])),
]

UNLOCKED = sorted({g for g, spec in GATES.items() if not spec.locked})


def _switchable(row: GatedFields) -> bool:
    return not all(GATES[g].locked for g in row.gates)


def test_every_switchable_row_has_an_end_to_end_example() -> None:
    covered = {id(e.row) for e in EXAMPLES}
    missing = [(r.kind, r.gates, r.paths[0]) for r in TABLE if _switchable(r) and id(r) not in covered]
    assert not missing


def _plural(kind: str) -> str:
    return {"ResourceSlice": "resourceslices", "ResourceClaim": "resourceclaims", "Pod": "pods",
            "ResourceClaimTemplate": "resourceclaimtemplates", "PodGroup": "podgroups", "Workload": "workloads"}[kind]


def _url(obj: Obj, name: str | None = None) -> str:
    kind = obj["kind"]
    group = "/api/v1" if kind == "Pod" else "/apis/" + obj["apiVersion"]
    ns = f"/namespaces/{NS}" if obj["metadata"].get("namespace") else ""
    return f"{group}{ns}/{_plural(kind)}" + (f"/{name}" if name else "")


def _row_uses(ex_: Example, obj: Obj) -> bool:
    row = ex_.row
    return any(uses(row.kind, obj, p) for p in row.paths)


class Client:
    def __init__(self, server: Any, gates_on: bool):
        self.server = server
        self.gates_on = gates_on

    def ok(self, method: str, path: str, body: Obj | None = None, want: int | tuple = (200, 201)) -> Obj:
        code, _, out = self.server.request(method, path, body)
        assert code in ((want,) if isinstance(want, int) else want), (method, path, code, out)
        return out

    def create(self, ex_: Example, name: str, with_fields: bool) -> Obj:
        """Create the example, with the row's fields in it if asked (through /status for status rows)."""
        obj = ex_.plain(name)
        status = obj.pop("status", None)
        if with_fields and not ex_.status:
            ex_.add(obj)
            if not self.gates_on and not ex_.valid_after_drop:
                return self.ok("POST", _url(obj), obj, want=422)
        out = self.ok("POST", _url(obj), obj)
        if ex_.status:
            out["status"] = {**(out.get("status") or {}), **copy.deepcopy(status)}
            if with_fields:
                ex_.add(out)
            out = self.ok("PUT", _url(obj, name) + "/status", out)
        return out


def _gate_args(value: bool) -> list[str]:
    """Every unlocked gate on (off), except GenericWorkload: it stays on, so that the PodGroups and Workloads of
    the DRAWorkloadResourceClaims rows are served in both phases."""
    return ["--feature-gates", ",".join(f"{g}={str(value or g == 'GenericWorkload').lower()}" for g in UNLOCKED),
            "--runtime-config", "scheduling.k8s.io/v1beta1=true"]


@pytest.mark.e2e
def test_fields_survive_restart_with_gate_off(tmp_path: Any) -> None:
    server = start_server(str(tmp_path), *_gate_args(True))
    try:
        c = Client(server, gates_on=True)
        c.ok("POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}})
        for i, e in enumerate(EXAMPLES):
            out = c.create(e, f"on-{i}", with_fields=True)
            assert _row_uses(e, out), (e.path, out)
            for j in (1, 2):  # objects that never use the feature, updated while it is off
                assert not _row_uses(e, c.create(e, f"plain{j}-{i}", with_fields=False))
    finally:
        stop(server)

    server = start_server(str(tmp_path), *_gate_args(False))
    try:
        c = Client(server, gates_on=False)
        for i, e in enumerate(EXAMPLES):
            # 1. Created while the gate was on, updated while it is off: kept.
            cur = c.ok("GET", _url(e.plain(f"on-{i}"), f"on-{i}"))
            assert _row_uses(e, cur), e.path
            upd = c.ok("PUT", _url(cur, f"on-{i}"), labelled(cur))
            assert _row_uses(e, upd) and upd["metadata"]["labels"]["touched"] == "yes", e.path
            if e.status:
                upd = c.ok("PUT", _url(cur, f"on-{i}") + "/status", upd)
                assert _row_uses(e, upd), e.path
            for field_path in e.row.paths:
                assert uses(e.row.kind, upd, field_path) == uses(e.row.kind, cur, field_path)

            # 2. Created while the gate is off: dropped (or refused when what is left is invalid).
            out = c.create(e, f"off-{i}", with_fields=True)
            if e.valid_after_drop:
                assert not _row_uses(e, out), (e.path, out)

            # 3. An object that never used the feature, updated adding it: dropped.
            for j, via_status in ((1, e.status), (2, False)):
                cur = c.ok("GET", _url(e.plain(f"plain{j}-{i}"), f"plain{j}-{i}"))
                new = labelled(cur)
                e.add(new)
                if via_status and e.status:
                    out = c.ok("PUT", _url(cur, f"plain{j}-{i}") + "/status", new)
                elif e.status:
                    out = c.ok("PUT", _url(cur, f"plain{j}-{i}"), new)  # the main resource keeps the old status
                elif not e.valid_after_drop:
                    c.ok("PUT", _url(cur, f"plain{j}-{i}"), new, want=422)
                    continue
                else:
                    out = c.ok("PUT", _url(cur, f"plain{j}-{i}"), new)
                assert not _row_uses(e, out), (e.path, j, out)
    finally:
        stop(server)


def _every_gated_field(kind: str) -> Obj:
    obj = BASES[kind]()
    for path in sorted((p for r in gatedfields.rows(kind) for p in r.paths), key=len):  # parents first
        put(kind, obj, path)
    return obj


@pytest.mark.parametrize("kind", sorted({row.kind for row in TABLE}))
def test_create_drops_what_removing_each_path_in_turn_drops(kind: str) -> None:
    """On a create all disabled rows' paths are removed in one walk: the result is that of removing them one
    by one, row by row (lists doubled, so that every element is visited)."""
    def doubled(value: Any) -> Any:
        if isinstance(value, list):
            return [doubled(v) for v in value] + [doubled(v) for v in value]
        if isinstance(value, dict):
            return {k: doubled(v) for k, v in value.items()}
        return value
    everything = doubled(_every_gated_field(kind))
    for gates in (FeatureGates({g: False for g in GATES}), FeatureGates()):
        want = copy.deepcopy(everything)
        for row in gatedfields.rows(kind):
            if not all(gates.enabled(g) for g in row.gates):
                for path in row.paths:  # every dict holding the field, then out of each
                    steps = gatedfields.compile_path(kind, path).steps  # type: ignore[attr-defined]
                    for parent in list(generic._parents(want, steps)):
                        parent.pop(steps[-1][0], None)
        got = copy.deepcopy(everything)
        drop_disabled_fields(kind, got, None, gates)
        assert got == want
        assert want != everything or gates.overrides == {}


def test_changed_gates_are_seen_on_the_next_drop() -> None:
    rows = gatedfields.rows("ResourceSlice")
    row = rows[0]
    gates = on(row)
    kept = put("ResourceSlice", rslice(), row.paths[0])
    generic.drop_disabled_fields(rows, kept, None, gates)
    assert uses("ResourceSlice", kept, row.paths[0])
    gates.overrides[row.gates[0]] = False
    generic.drop_disabled_fields(rows, kept, None, gates)
    assert not uses("ResourceSlice", kept, row.paths[0])
