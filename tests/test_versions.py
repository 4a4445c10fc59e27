"""Conversion of resource.k8s.io objects between v1 and v1beta1 / v1beta2 / v1alpha3.

Random objects are generated from the 1.37 definitions by a seeded generator (every optional field is
exercised: one "everything set" object per kind plus many random ones, and coverage is asserted).
"""

from __future__ import annotations

import copy
import random
import zlib
from typing import Any

import pytest

from dramock.schemas import defs, structural, versions
from dramock.schemas.versions import ConversionError, from_v1, to_v1

P = "io.k8s.api.resource."
KINDS = ("DeviceClass", "ResourceSlice", "ResourceClaim", "ResourceClaimTemplate", "DeviceTaintRule")
BETAS = ("v1beta1", "v1beta2", "v1alpha3")


def _served(version: str) -> list[str]:
    return [k for k in KINDS if defs.kind_definition("resource.k8s.io", version, k)]


PAIRS = [(k, v) for v in BETAS for k in _served(v)]


# --- a schema-driven generator ---------------------------------------------------------------------------

_QUANTITIES = ("1", "2Gi", "500m", "10", "1.5", "4096Ki", "3e3")


class Gen:
    """Random JSON-shaped objects for a definition: required fields always, optional ones with
    probability `p` (p=1: every field), maps and arrays of 1..2 entries, non-empty strings."""

    def __init__(self, rng: random.Random, p: float, version: str) -> None:
        self.rng, self.p, self.version = rng, p, version
        self.seen: set[tuple[str, str]] = set()

    def obj(self, kind: str) -> dict[str, Any]:
        name = f"{P}{self.version}.{kind}"
        out = self.value({"$ref": defs.REF_PREFIX + name}, 0)
        out["apiVersion"], out["kind"] = f"resource.k8s.io/{self.version}", kind
        return out

    def _str(self) -> str:
        return self.rng.choice("abcdefgh") + str(self.rng.randrange(1000))

    def value(self, schema: dict[str, Any], depth: int) -> Any:
        name = defs.ref_name(schema)
        if name == "io.k8s.apimachinery.pkg.api.resource.Quantity":
            return self.rng.choice(_QUANTITIES)
        if name in ("io.k8s.apimachinery.pkg.apis.meta.v1.Time", "io.k8s.apimachinery.pkg.apis.meta.v1.MicroTime"):
            return f"2025-0{self.rng.randrange(1, 10)}-1{self.rng.randrange(10)}T0{self.rng.randrange(10)}:00:00Z"
        if name == "io.k8s.apimachinery.pkg.runtime.RawExtension":
            return {"apiVersion": "example.com/v1", "kind": "Config", "level": self.rng.randrange(9),
                    "nested": {"list": [self._str()]}}
        if name == "io.k8s.apimachinery.pkg.apis.meta.v1.FieldsV1":
            return {"f:spec": {".": {}, f"f:{self._str()}": {}}}
        s = defs.resolve(schema)
        if "enum" in s:
            return self.rng.choice(s["enum"])
        if "oneOf" in s:
            return self._str()
        types = defs.types_of(s)
        if defs.is_object(s):
            out: dict[str, Any] = {}
            required = set(s.get("required") or ())
            for prop, sub in s["properties"].items():
                if prop in ("apiVersion", "kind"):
                    continue
                deep = depth > 24 and prop not in required
                if prop in required or (not deep and self.rng.random() < self.p):
                    if name:
                        self.seen.add((name, prop))
                    out[prop] = self.value(sub, depth + 1)
            return out
        if "object" in types:
            add = s.get("additionalProperties")
            if isinstance(add, dict):
                return {f"example.com/{self._str()}": self.value(add, depth + 1)
                        for _ in range(self.rng.randint(1, 2))}
            return {"free": self._str()}
        if "array" in types:
            return [self.value(s.get("items") or {}, depth + 1) for _ in range(self.rng.randint(1, 2))]
        if "boolean" in types:
            return self.rng.random() < 0.5
        if "integer" in types:
            return self.rng.randrange(1, 1000)
        if "number" in types:
            return self.rng.randrange(1, 1000) / 4
        return self._str()


def _reachable(name: str, acc: set[tuple[str, str]] | None = None) -> set[tuple[str, str]]:
    """Every (definition, property) reachable from `name`."""
    acc = set() if acc is None else acc
    s = defs.definition(name)
    for prop, sub in (s.get("properties") or {}).items():
        if prop in ("apiVersion", "kind") or (name, prop) in acc:
            continue
        acc.add((name, prop))
        stack = [sub]
        while stack:
            cur = stack.pop()
            ref = defs.ref_name(cur)
            if ref:
                if ref not in _LEAVES:
                    _reachable(ref, acc)
                continue
            stack.extend(x for x in (cur.get("items"), cur.get("additionalProperties")) if isinstance(x, dict))
    return acc


_LEAVES = {"io.k8s.apimachinery.pkg.api.resource.Quantity", "io.k8s.apimachinery.pkg.apis.meta.v1.Time",
           "io.k8s.apimachinery.pkg.apis.meta.v1.MicroTime", "io.k8s.apimachinery.pkg.runtime.RawExtension",
           "io.k8s.apimachinery.pkg.apis.meta.v1.FieldsV1"}


def _samples(version: str, kind: str, n: int, seed: int) -> tuple[list[dict[str, Any]], set]:
    full = Gen(random.Random(seed), 1.0, version)
    out = [full.obj(kind)]
    rnd = Gen(random.Random(seed + 1), 0.5, version)
    out += [rnd.obj(kind) for _ in range(n)]
    return out, full.seen | rnd.seen


def _assert_structural(obj: dict[str, Any], version: str, kind: str) -> None:
    name = defs.kind_definition("resource.k8s.io", version, kind)
    assert name, (version, kind)
    report = structural.check(copy.deepcopy(obj), name)
    assert report.unknown == [], report.unknown
    assert report.type_errors == [], report.type_errors
    assert obj["apiVersion"] in defs.definition(name)["properties"]["apiVersion"]["enum"]


def _lossy_in_v1beta1(obj: dict[str, Any]) -> dict[str, Any]:
    """What survives v1 -> v1beta1 -> v1: ResourceSliceSpec.allNodes=false / nodeName="" do not
    (a plain bool / string with omitempty in v1beta1, a pointer in v1)."""
    out = copy.deepcopy(obj)
    items = out["items"] if out["kind"].endswith("List") else [out]
    for item in items:
        spec = item.get("spec") if out["kind"].startswith("ResourceSlice") else None
        if isinstance(spec, dict):
            if spec.get("allNodes") is False:
                del spec["allNodes"]
            if spec.get("nodeName") == "":
                del spec["nodeName"]
    return out


# --- property tests ------------------------------------------------------------------------------------


@pytest.mark.parametrize(("kind", "version"), PAIRS)
def test_v1_round_trip(kind: str, version: str) -> None:
    samples, seen = _samples("v1", kind, 150, seed=zlib.crc32(f'{kind}/{version}'.encode()))
    # Every optional field of every type reachable from the kind has been generated at least once.
    missing = _reachable(f"{P}v1.{kind}") - seen
    assert not missing, sorted(missing)
    for x in samples:
        _assert_structural(x, "v1", kind)
        before = copy.deepcopy(x)
        beta = from_v1(x, version)
        assert x == before  # pure
        assert beta["apiVersion"] == f"resource.k8s.io/{version}" and beta["kind"] == kind
        _assert_structural(beta, version, kind)
        back = to_v1(beta, version)
        expected = _lossy_in_v1beta1(x) if version == "v1beta1" else x
        assert back == expected
        if version != "v1beta1":
            assert {k: v for k, v in beta.items() if k != "apiVersion"} == \
                {k: v for k, v in x.items() if k != "apiVersion"}


def _normalize_v1beta1(obj: dict[str, Any]) -> dict[str, Any]:
    """What survives v1beta1 -> v1 -> v1beta1: a device without `basic` comes back with `basic: {}`
    (upstream allocates it unconditionally); `allNodes: false` / `nodeName: ""` are Go zero values."""
    out = _lossy_in_v1beta1(obj)
    if out["kind"] == "ResourceSlice":
        for dev in (out.get("spec") or {}).get("devices") or []:
            dev.setdefault("basic", {})
    return out


@pytest.mark.parametrize(("kind", "version"), PAIRS)
def test_beta_round_trip(kind: str, version: str) -> None:
    samples, seen = _samples(version, kind, 100, seed=zlib.crc32(f'{version}/{kind}'.encode()))
    assert not _reachable(f"{P}{version}.{kind}") - seen
    for x in samples:
        _assert_structural(x, version, kind)
        v1 = to_v1(x, version)
        _assert_structural(v1, "v1", kind)
        back = from_v1(v1, version)
        assert back == (_normalize_v1beta1(x) if version == "v1beta1" else x)


@pytest.mark.parametrize(("kind", "version"), PAIRS)
def test_list_round_trip(kind: str, version: str) -> None:
    samples, _ = _samples("v1", kind, 3, seed=7)
    for i, item in enumerate(samples):  # items in typed lists usually carry no apiVersion / kind
        if i % 2:
            del item["apiVersion"], item["kind"]
    lst = {"apiVersion": "resource.k8s.io/v1", "kind": f"{kind}List",
           "metadata": {"resourceVersion": "42", "continue": "abc"}, "items": samples}
    beta = from_v1(lst, version)
    assert beta["kind"] == f"{kind}List" and beta["metadata"] == lst["metadata"]
    _assert_structural(beta, version, f"{kind}List")
    for i, (b, x) in enumerate(zip(beta["items"], samples, strict=True)):
        assert ("apiVersion" in b) == (i % 2 == 0)
        if i % 2 == 0:
            assert b["apiVersion"] == f"resource.k8s.io/{version}" and b["kind"] == kind
        single = from_v1({**x, "apiVersion": "resource.k8s.io/v1", "kind": kind}, version)
        single.pop("apiVersion"), single.pop("kind")
        assert {k: v for k, v in b.items() if k not in ("apiVersion", "kind")} == single
    back = to_v1(beta, version)
    assert back == (_lossy_in_v1beta1(lst) if version == "v1beta1" else lst)


# --- the schema differences the module hard-codes ------------------------------------------------------


def _strip(s: Any, version: str) -> Any:
    if isinstance(s, dict):
        return {k: _strip(v, version) for k, v in s.items()
                if k not in ("description", "x-kubernetes-group-version-kind")}
    if isinstance(s, list):
        return [_strip(v, version) for v in s]
    if isinstance(s, str):
        return s.replace(f"{P}{version}.", f"{P}v1.")
    return s


def _type_names(version: str) -> set[str]:
    return {n[len(P) + len(version) + 1:] for n in defs.definitions() if n.startswith(f"{P}{version}.")}


@pytest.mark.parametrize("version", BETAS)
def test_only_known_differences(version: str) -> None:
    """Every type reachable from a served kind is the v1 type, but for the ones versions.py handles."""
    names: set[str] = set()
    for kind in _served(version):
        for kind_name in (kind, kind + "List"):
            names |= {n for n, _ in _reachable(f"{P}{version}.{kind_name}") if n.startswith(P + version)}
    handled = {"v1beta1": {"Device", "DeviceRequest", "BasicDevice"}}.get(version, set())
    for n in sorted(names):
        short = n[len(P) + len(version) + 1:]
        if short in handled:
            continue
        a = _strip(defs.definition(f"{P}v1.{short}"), "v1")
        b = _strip(defs.definition(n), version)
        for s in (a, b):
            if "apiVersion" in s.get("properties", {}):
                s["properties"]["apiVersion"].pop("enum")
        assert a == b, short


def test_v1beta1_field_lists_match_schema() -> None:
    basic = set(defs.definition(f"{P}v1beta1.BasicDevice")["properties"])
    v1_device = set(defs.definition(f"{P}v1.Device")["properties"]) - {"name"}
    assert basic == v1_device == set(versions.BASIC_DEVICE_FIELDS)
    assert set(defs.definition(f"{P}v1beta1.Device")["properties"]) == {"name", "basic"}
    flat = set(defs.definition(f"{P}v1beta1.DeviceRequest")["properties"]) - {"name", "firstAvailable"}
    exact = set(defs.definition(f"{P}v1.ExactDeviceRequest")["properties"])
    assert flat == exact == set(versions.EXACT_REQUEST_FIELDS)
    assert set(defs.definition(f"{P}v1.DeviceRequest")["properties"]) == {"name", "firstAvailable", "exactly"}


def test_served_matches_definitions() -> None:
    for version in ("v1", *BETAS):
        for kind in KINDS:
            has = defs.kind_definition("resource.k8s.io", version, kind) is not None
            assert versions.served(kind, version) == has, (kind, version)
            assert versions.served(kind + "List", version) == has
    assert not versions.served("DeviceClass", "v1alpha2")
    assert versions.served("ResourceClaim", "resource.k8s.io/v1beta2")


# --- hand-written cases ---------------------------------------------------------------------------------

V1_SLICE = {
    "apiVersion": "resource.k8s.io/v1",
    "kind": "ResourceSlice",
    "metadata": {"name": "node-1-gpu", "uid": "u1", "resourceVersion": "7"},
    "spec": {
        "driver": "gpu.example.com",
        "pool": {"name": "node-1", "generation": 1, "resourceSliceCount": 1},
        "nodeName": "node-1",
        "devices": [
            {
                "name": "gpu-0",
                "attributes": {"model": {"string": "A100"}, "gpu.example.com/index": {"int": 0}},
                "capacity": {"memory": {"value": "40Gi",
                                        "requestPolicy": {"default": "1Gi",
                                                          "validRange": {"min": "1Gi", "step": "1Gi"}}}},
                "consumesCounters": [{"counterSet": "gpu-0-set", "counters": {"mem": {"value": "40Gi"}}}],
                "taints": [{"key": "maintenance", "value": "soon", "effect": "NoSchedule",
                            "timeAdded": "2025-01-01T00:00:00Z"}],
                "bindsToNode": True,
                "bindingConditions": ["Attached"],
                "bindingFailureConditions": ["AttachFailed"],
                "allowMultipleAllocations": True,
            },
            {"name": "gpu-1"},
        ],
        "sharedCounters": [{"name": "gpu-0-set", "counters": {"mem": {"value": "40Gi"}}}],
    },
}


def test_v1beta1_basic_devices() -> None:
    beta = from_v1(V1_SLICE, "v1beta1")
    assert beta["apiVersion"] == "resource.k8s.io/v1beta1"
    dev0, dev1 = beta["spec"]["devices"]
    assert set(dev0) == {"name", "basic"} and dev0["name"] == "gpu-0"
    assert dev0["basic"] == {k: v for k, v in V1_SLICE["spec"]["devices"][0].items() if k != "name"}
    assert dev0["basic"]["capacity"]["memory"] == {  # same {value, requestPolicy} objects in both
        "value": "40Gi", "requestPolicy": {"default": "1Gi", "validRange": {"min": "1Gi", "step": "1Gi"}}}
    assert dev1 == {"name": "gpu-1", "basic": {}}  # upstream always allocates `basic`
    assert beta["spec"]["nodeName"] == "node-1" and beta["spec"]["sharedCounters"] == V1_SLICE["spec"]["sharedCounters"]
    _assert_structural(beta, "v1beta1", "ResourceSlice")
    assert to_v1(beta, "v1beta1") == V1_SLICE


def test_v1beta1_device_without_basic() -> None:
    beta = {"apiVersion": "resource.k8s.io/v1beta1", "kind": "ResourceSlice", "metadata": {"name": "s"},
            "spec": {"driver": "d", "pool": {"name": "p", "generation": 0, "resourceSliceCount": 1},
                     "allNodes": True,
                     "devices": [{"name": "a"}, {"name": "b", "basic": {"nodeName": "n1",
                                                                       "attributes": {"x": {"bool": True}}}}]}}
    v1 = to_v1(beta, "v1beta1")
    assert v1["spec"]["devices"] == [{"name": "a"},
                                     {"name": "b", "nodeName": "n1", "attributes": {"x": {"bool": True}}}]
    assert v1["spec"]["allNodes"] is True
    _assert_structural(v1, "v1", "ResourceSlice")


def test_slice_spec_pointer_fields() -> None:
    """v1 *string / *bool vs v1beta1 string / bool with omitempty: "" and false are dropped."""
    v1 = copy.deepcopy(V1_SLICE)
    v1["spec"].update(nodeName="", allNodes=False, perDeviceNodeSelection=False)
    beta = from_v1(v1, "v1beta1")
    assert "nodeName" not in beta["spec"] and "allNodes" not in beta["spec"]
    assert beta["spec"]["perDeviceNodeSelection"] is False  # a *bool in v1beta1 as well
    back = to_v1(beta, "v1beta1")
    assert "nodeName" not in back["spec"] and "allNodes" not in back["spec"]
    # v1beta2 carries them as they are.
    assert from_v1(v1, "v1beta2")["spec"]["nodeName"] == ""
    beta_in = {**beta, "spec": {**beta["spec"], "nodeName": "", "allNodes": False}}
    v1_out = to_v1(beta_in, "v1beta1")
    assert "nodeName" not in v1_out["spec"] and "allNodes" not in v1_out["spec"]


V1_CLAIM = {
    "apiVersion": "resource.k8s.io/v1",
    "kind": "ResourceClaim",
    "metadata": {"name": "claim", "namespace": "default"},
    "spec": {"devices": {
        "requests": [
            {"name": "gpu", "exactly": {
                "deviceClassName": "gpu.example.com",
                "selectors": [{"cel": {"expression": "device.attributes['model'].string == 'A100'"}}],
                "allocationMode": "ExactCount", "count": 2, "adminAccess": False,
                "tolerations": [{"key": "maintenance", "operator": "Exists", "effect": "NoSchedule"}],
                "capacity": {"requests": {"memory": "8Gi"}},
                "derivedAttributes": [{"name": "numa", "expression": "device.attributes['numa'].int"}],
            }},
            {"name": "nic", "firstAvailable": [
                {"name": "fast", "deviceClassName": "nic.example.com", "allocationMode": "All",
                 "selectors": [{"cel": {"expression": "true"}}]},
                {"name": "slow", "deviceClassName": "nic.example.com", "allocationMode": "ExactCount",
                 "count": 1, "tolerations": [{"operator": "Exists"}], "capacity": {"requests": {"bw": "1G"}}},
            ]},
        ],
        "constraints": [{"requests": ["gpu", "nic"], "matchAttribute": "numa"}],
        "config": [{"requests": ["gpu"], "opaque": {"driver": "gpu.example.com",
                                                    "parameters": {"kind": "GpuConfig", "sharing": "MPS"}}}],
    }},
    "status": {
        "allocation": {
            "devices": {
                "results": [
                    {"request": "gpu", "driver": "gpu.example.com", "pool": "node-1", "device": "gpu-0",
                     "adminAccess": False, "tolerations": [{"key": "maintenance", "operator": "Exists"}],
                     "bindingConditions": ["Attached"], "bindingFailureConditions": ["AttachFailed"],
                     "shareID": "6c1f2b3a-0000-4000-8000-000000000001",
                     "consumedCapacity": {"memory": "8Gi"}},
                    {"request": "nic/fast", "driver": "nic.example.com", "pool": "node-1", "device": "eth1"},
                ],
                "config": [{"source": "FromClaim", "requests": ["gpu"],
                            "opaque": {"driver": "gpu.example.com", "parameters": {"sharing": "MPS"}}}],
            },
            "nodeSelector": {"nodeSelectorTerms": [{"matchFields": [
                {"key": "metadata.name", "operator": "In", "values": ["node-1"]}]}]},
            "allocationTimestamp": "2025-01-01T00:00:00Z",
        },
        "reservedFor": [{"resource": "pods", "name": "p", "uid": "u-p"}],
        "devices": [{"driver": "nic.example.com", "pool": "node-1", "device": "eth1",
                     "conditions": [{"type": "Ready", "status": "True", "reason": "Up", "message": "",
                                     "lastTransitionTime": "2025-01-01T00:00:00Z"}],
                     "data": {"mtu": 9000},
                     "networkData": {"interfaceName": "eth1", "ips": ["10.0.0.2/24"],
                                     "hardwareAddress": "aa:bb:cc:dd:ee:ff"}}],
    },
}


def test_v1beta1_flat_requests_and_subrequests() -> None:
    beta = from_v1(V1_CLAIM, "v1beta1")
    gpu, nic = beta["spec"]["devices"]["requests"]
    assert gpu == {"name": "gpu", **V1_CLAIM["spec"]["devices"]["requests"][0]["exactly"]}
    assert "exactly" not in gpu
    # firstAvailable subrequests have the same shape in both versions.
    assert nic == V1_CLAIM["spec"]["devices"]["requests"][1]
    assert beta["status"] == V1_CLAIM["status"]  # allocation results are identical
    _assert_structural(beta, "v1beta1", "ResourceClaim")
    assert to_v1(beta, "v1beta1") == V1_CLAIM


def test_v1beta1_flat_request_to_exactly() -> None:
    def req(**fields: Any) -> dict[str, Any]:
        obj = {"apiVersion": "resource.k8s.io/v1beta1", "kind": "ResourceClaim", "metadata": {"name": "c"},
               "spec": {"devices": {"requests": [{"name": "r", **fields}]}}}
        return to_v1(obj, "v1beta1")["spec"]["devices"]["requests"][0]

    assert req(deviceClassName="c") == {"name": "r", "exactly": {"deviceClassName": "c"}}
    assert req(deviceClassName="c", count=3, allocationMode="ExactCount") == \
        {"name": "r", "exactly": {"deviceClassName": "c", "count": 3, "allocationMode": "ExactCount"}}
    # Upstream's hasAnyMainRequestFieldsSet: Go zero values do not count as set ...
    assert req() == {"name": "r"}
    assert req(deviceClassName="", count=0, allocationMode="") == {"name": "r"}
    assert req(firstAvailable=[{"name": "a", "deviceClassName": "c"}]) == \
        {"name": "r", "firstAvailable": [{"name": "a", "deviceClassName": "c"}]}
    # ... but a non-nil slice or pointer does, even when empty / false.
    assert req(selectors=[]) == {"name": "r", "exactly": {"selectors": []}}
    assert req(adminAccess=False) == {"name": "r", "exactly": {"adminAccess": False}}
    assert req(tolerations=[])["exactly"] == {"tolerations": []}
    assert req(capacity={})["exactly"] == {"capacity": {}}
    assert req(derivedAttributes=[])["exactly"] == {"derivedAttributes": []}
    assert req(count=0, allocationMode="All")["exactly"] == {"count": 0, "allocationMode": "All"}
    # Both set (invalid, caught by validation): both survive.
    both = req(deviceClassName="c", firstAvailable=[{"name": "a", "deviceClassName": "c"}])
    assert both == {"name": "r", "exactly": {"deviceClassName": "c"},
                    "firstAvailable": [{"name": "a", "deviceClassName": "c"}]}


def test_claim_template_requests() -> None:
    tmpl = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
            "metadata": {"name": "t", "namespace": "ns"},
            "spec": {"metadata": {"labels": {"a": "b"}}, "spec": copy.deepcopy(V1_CLAIM["spec"])}}
    beta = from_v1(tmpl, "v1beta1")
    assert beta["spec"]["spec"]["devices"]["requests"][0]["deviceClassName"] == "gpu.example.com"
    assert beta["spec"]["metadata"] == {"labels": {"a": "b"}}
    _assert_structural(beta, "v1beta1", "ResourceClaimTemplate")
    assert to_v1(beta, "v1beta1") == tmpl
    assert from_v1(tmpl, "v1beta2") == {**tmpl, "apiVersion": "resource.k8s.io/v1beta2"}


def test_v1beta2_and_v1alpha3_are_the_v1_types() -> None:
    for version in ("v1beta2",):
        out = from_v1(V1_CLAIM, version)
        assert out == {**V1_CLAIM, "apiVersion": f"resource.k8s.io/{version}"}
        assert to_v1(out, version) == V1_CLAIM
    rule = {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceTaintRule", "metadata": {"name": "r"},
            "spec": {"deviceSelector": {"driver": "d", "pool": "p", "device": "x"},
                     "taint": {"key": "k", "value": "v", "effect": "NoExecute"}},
            "status": {"conditions": [{"type": "EvictionInProgress", "status": "False", "reason": "Done",
                                       "message": "", "lastTransitionTime": "2025-01-01T00:00:00Z",
                                       "observedGeneration": 1}]}}
    for version in ("v1beta2", "v1alpha3"):
        out = from_v1(rule, version)
        assert out == {**rule, "apiVersion": f"resource.k8s.io/{version}"}
        _assert_structural(out, version, "DeviceTaintRule")
        assert to_v1(out, version) == rule
    with pytest.raises(ConversionError):
        from_v1(rule, "v1beta1")
    with pytest.raises(ConversionError):
        to_v1({**rule, "apiVersion": "resource.k8s.io/v1beta1"}, "v1beta1")
    with pytest.raises(ConversionError):
        from_v1(V1_CLAIM, "v1alpha3")


def test_device_class_unchanged() -> None:
    dc = {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": "gpu"},
          "spec": {"selectors": [{"cel": {"expression": "device.driver == 'gpu.example.com'"}}],
                   "config": [{"opaque": {"driver": "gpu.example.com", "parameters": {"a": 1}}}],
                   "extendedResourceName": "example.com/gpu"}}
    for version in BETAS[:2]:
        out = from_v1(dc, version)
        assert out == {**dc, "apiVersion": f"resource.k8s.io/{version}"}
        assert to_v1(out, version) == dc


def test_purity_and_no_sharing() -> None:
    before = copy.deepcopy(V1_CLAIM)
    out = from_v1(V1_CLAIM, "v1beta2")
    assert V1_CLAIM == before

    def containers(x: Any) -> list[int]:
        if isinstance(x, dict):
            return [id(x), *(i for v in x.values() for i in containers(v))]
        if isinstance(x, list):
            return [id(x), *(i for v in x for i in containers(v))]
        return []

    assert not set(containers(out)) & set(containers(V1_CLAIM))
    beta = from_v1(V1_SLICE, "v1beta1")
    assert not set(containers(beta)) & set(containers(V1_SLICE))
    back = to_v1(beta, "v1beta1")
    assert not set(containers(back)) & set(containers(beta))


def test_versions_and_kinds_rejected() -> None:
    assert from_v1(V1_CLAIM, "resource.k8s.io/v1beta1") == from_v1(V1_CLAIM, "v1beta1")
    assert from_v1(V1_CLAIM, "v1") == V1_CLAIM
    assert versions.convert(from_v1(V1_CLAIM, "v1beta1"), "v1beta1", "v1beta2") == from_v1(V1_CLAIM, "v1beta2")
    for bad in ("apps/v1", "v1alpha2", "resource.k8s.io/v2"):
        with pytest.raises(ConversionError):
            from_v1(V1_CLAIM, bad)
    with pytest.raises(ConversionError):
        to_v1({"apiVersion": "v1", "kind": "Pod"}, "v1beta1")
    with pytest.raises(ConversionError):
        to_v1({"apiVersion": "resource.k8s.io/v1alpha3", "kind": "ResourcePoolStatusRequest"}, "v1alpha3")
    with pytest.raises(ConversionError):
        to_v1({"metadata": {}}, "v1beta1")
