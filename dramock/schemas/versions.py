"""Conversion of resource.k8s.io objects between the stored version (v1) and the other served versions.

Kubernetes 1.37 stores resource.k8s.io in v1 and, when enabled by --runtime-config, also serves
v1beta1, v1beta2 and (DeviceTaintRule only) v1alpha3. The field-by-field differences were found by
diffing the 1.37 definitions of every type against its v1 counterpart; the behaviour at each
difference follows upstream's hand-written conversions (pkg/apis/resource/v1beta1/conversion.go;
v1beta2 and v1alpha3 have none: their types are the v1 types under another apiVersion).

v1beta1 differs from v1 in exactly three places:

* `Device`: v1 has the device's fields inline next to `name`; v1beta1 nests all of them under
  `basic` (`BasicDevice`). v1 -> v1beta1 always writes `basic` (upstream allocates it
  unconditionally); v1beta1 -> v1 lifts the content of `basic`, if any, back to the device.
* `DeviceRequest`: v1 has `name`, `firstAvailable` and `exactly` (`ExactDeviceRequest`); v1beta1 has
  the fields of `ExactDeviceRequest` flat on the request. v1 -> v1beta1 flattens `exactly`;
  v1beta1 -> v1 creates `exactly` only when one of the flat fields is set in Go's sense (non-empty
  deviceClassName / allocationMode, non-zero count, non-nil selectors / adminAccess / tolerations /
  capacity / derivedAttributes), exactly as upstream's hasAnyMainRequestFieldsSet.
* `ResourceSliceSpec`: `nodeName` and `allNodes` are pointers in v1 but a plain string / bool with
  omitempty in v1beta1, so an explicit `nodeName: ""` or `allNodes: false` does not survive v1beta1.

Everything here works on plain JSON-shaped dicts, never mutates its input, and returns fresh
containers throughout (no structure is shared between input and output).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from dramock import KUBERNETES_VERSION

Obj = dict[str, Any]
_Fn = Callable[[Obj], Obj]

GROUP = "resource.k8s.io"
STORAGE_VERSION = "v1"

# Kinds (without their List) each non-storage version serves, per the 1.37 definitions.
_ALL_KINDS = frozenset({"DeviceClass", "ResourceSlice", "ResourceClaim", "ResourceClaimTemplate",
                        "DeviceTaintRule"})
SERVED_KINDS: dict[str, frozenset[str]] = {
    "v1": _ALL_KINDS,
    "v1beta2": _ALL_KINDS,
    "v1beta1": _ALL_KINDS - {"DeviceTaintRule"},
    "v1alpha3": frozenset({"DeviceTaintRule"}),
}

# (version, kind) -> (deprecated in, unavailable in), from the types' prerelease-lifecycle tags. A version
# deprecated after 1.37 (v1beta2 DeviceTaintRule: 1.39) carries no warning yet.
LIFECYCLE: dict[tuple[str, str], tuple[int, int]] = {
    **{("v1beta1", k): (35, 38) for k in SERVED_KINDS["v1beta1"]},
    **{("v1beta2", k): (36, 39) for k in SERVED_KINDS["v1beta2"] - {"DeviceTaintRule"}},
    ("v1beta2", "DeviceTaintRule"): (39, 42),
    ("v1alpha3", "DeviceTaintRule"): (36, 39),
}


def deprecation_warning(version: str, kind: str) -> str | None:
    """The Warning every request to a deprecated version gets, in upstream's words."""
    lifecycle = LIFECYCLE.get((version, kind))
    if lifecycle is None or lifecycle[0] > int(KUBERNETES_VERSION.split(".")[1]):
        return None
    deprecated, removed = lifecycle
    return f"{GROUP}/{version} {kind} is deprecated in v1.{deprecated}+, unavailable in v1.{removed}+"


# The fields v1beta1 keeps under Device.basic (= v1 Device's properties except `name`).
BASIC_DEVICE_FIELDS = (
    "attributes", "capacity", "consumesCounters", "nodeName", "nodeSelector", "allNodes", "taints",
    "bindsToNode", "bindingConditions", "bindingFailureConditions", "allowMultipleAllocations",
    "nodeAllocatableResources",
)

# The fields v1beta1 keeps flat on DeviceRequest (= v1 ExactDeviceRequest's properties).
EXACT_REQUEST_FIELDS = (
    "deviceClassName", "selectors", "allocationMode", "count", "adminAccess", "tolerations",
    "capacity", "derivedAttributes",
)

# DeviceRequest fields that exist in both v1 and v1beta1.
_COMMON_REQUEST_FIELDS = ("name", "firstAvailable")


class ConversionError(ValueError):
    """The object's kind is not served in the requested version (or is no resource.k8s.io kind)."""


def _clone(v: Any) -> Any:
    if isinstance(v, dict):
        return {k: _clone(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_clone(x) for x in v]
    return v


def _version(version: str) -> str:
    """Accepts "v1beta1" as well as "resource.k8s.io/v1beta1"."""
    if "/" in version:
        group, _, version = version.partition("/")
        if group != GROUP:
            raise ConversionError(f"not a {GROUP} version: {group}/{version}")
    if version not in SERVED_KINDS:
        raise ConversionError(f"{GROUP}/{version} is not a served version")
    return version


def _kind(obj: Obj) -> tuple[str, bool]:
    """(item kind, is_list) for an object or a list."""
    kind = obj.get("kind")
    if not isinstance(kind, str) or not kind:
        raise ConversionError("object has no kind")
    if kind.endswith("List") and kind[:-4] in _ALL_KINDS:
        return kind[:-4], True
    if kind in _ALL_KINDS:
        return kind, False
    raise ConversionError(f"{kind} is not a convertible {GROUP} kind")


def served(kind: str, version: str) -> bool:
    """Whether `kind` (or `kind`List) exists in `version` of resource.k8s.io."""
    try:
        version = _version(version)
    except ConversionError:
        return False
    return kind.removesuffix("List") in SERVED_KINDS[version]


def to_v1(obj: Obj, version: str) -> Obj:
    """`obj`, in `version` of resource.k8s.io, as its v1 (stored) form. Lists convert every item."""
    return _convert(obj, _version(version), up=True)


def from_v1(obj: Obj, version: str) -> Obj:
    """The v1 object (or list) `obj` as `version` of resource.k8s.io represents it."""
    return _convert(obj, _version(version), up=False)


def convert(obj: Obj, from_version: str, to_version: str) -> Obj:
    """Between any two served versions, through v1 (the hub)."""
    return from_v1(to_v1(obj, from_version), to_version)


def _convert(obj: Obj, version: str, up: bool) -> Obj:
    kind, is_list = _kind(obj)
    if kind not in SERVED_KINDS[version]:
        raise ConversionError(f"{kind} is not served in {GROUP}/{version}")
    target = STORAGE_VERSION if up else version
    out = _clone(obj)
    out["apiVersion"] = f"{GROUP}/{target}"
    if version == "v1beta1":
        item_fn = _V1BETA1_UP[kind] if up else _V1BETA1_DOWN[kind]
    else:  # v1, v1beta2, v1alpha3: the v1 types under another apiVersion
        item_fn = None
    if is_list:
        items = out.get("items")
        if isinstance(items, list):
            for i, item in enumerate(items):
                if not isinstance(item, dict):
                    continue
                if "apiVersion" in item:
                    item["apiVersion"] = out["apiVersion"]
                if item_fn is not None:
                    items[i] = item_fn(item)
    elif item_fn is not None:
        out = item_fn(out)
    return out


# --- v1beta1 -----------------------------------------------------------------------------------------
# The helpers below operate on already-cloned dicts, so they may rebuild them freely.


def _dict_at(obj: Any, *path: str) -> Obj | None:
    for p in path:
        if not isinstance(obj, dict):
            return None
        obj = obj.get(p)
    return obj if isinstance(obj, dict) else None


def _map_list(container: Obj | None, field: str, fn: _Fn) -> None:
    if container is None:
        return
    values = container.get(field)
    if isinstance(values, list):
        container[field] = [fn(v) if isinstance(v, dict) else v for v in values]


# Device


def _device_to_v1beta1(dev: Obj) -> Obj:
    # Upstream allocates `basic` even for a device that has nothing but its name.
    return {**({"name": dev["name"]} if "name" in dev else {}),
            "basic": {k: v for k, v in dev.items() if k != "name"}}


def _device_to_v1(dev: Obj) -> Obj:
    out = {k: v for k, v in dev.items() if k != "basic"}
    basic = dev.get("basic")
    if isinstance(basic, dict):
        for k, v in basic.items():
            if k != "name":
                out[k] = v
    return out


# DeviceRequest


def _flat_field_set(req: Obj) -> bool:
    """Upstream's hasAnyMainRequestFieldsSet, with Go zero values read off the JSON."""
    return bool(req.get("deviceClassName")) or bool(req.get("allocationMode")) \
        or req.get("count") not in (None, 0) \
        or any(req.get(k) is not None
               for k in ("selectors", "adminAccess", "tolerations", "capacity", "derivedAttributes"))


def _request_to_v1beta1(req: Obj) -> Obj:
    out = {k: v for k, v in req.items() if k != "exactly"}
    exactly = req.get("exactly")
    if isinstance(exactly, dict):
        for k, v in exactly.items():
            if k not in _COMMON_REQUEST_FIELDS:
                out[k] = v
    return out


def _request_to_v1(req: Obj) -> Obj:
    out = {k: v for k, v in req.items() if k not in EXACT_REQUEST_FIELDS}
    if _flat_field_set(req):
        out["exactly"] = {k: req[k] for k in EXACT_REQUEST_FIELDS if k in req}
    return out


def _claim_spec(spec: Obj | None, fn: _Fn) -> None:
    _map_list(_dict_at(spec, "devices"), "requests", fn)


# ResourceSliceSpec: *string / *bool in v1, string / bool with omitempty in v1beta1.


def _slice_spec_pointers(spec: Obj) -> None:
    if "nodeName" in spec and spec["nodeName"] in ("", None):
        del spec["nodeName"]
    if "allNodes" in spec and (spec["allNodes"] is None or spec["allNodes"] is False):
        del spec["allNodes"]


# Per kind


def _identity(obj: Obj) -> Obj:
    return obj


def _slice(device_fn: _Fn) -> _Fn:
    def fn(obj: Obj) -> Obj:
        spec = _dict_at(obj, "spec")
        if spec is not None:
            _slice_spec_pointers(spec)
            _map_list(spec, "devices", device_fn)
        return obj
    return fn


def _claim(request_fn: _Fn) -> _Fn:
    def fn(obj: Obj) -> Obj:
        _claim_spec(_dict_at(obj, "spec"), request_fn)
        return obj
    return fn


def _template(request_fn: _Fn) -> _Fn:
    def fn(obj: Obj) -> Obj:
        _claim_spec(_dict_at(obj, "spec", "spec"), request_fn)
        return obj
    return fn


_V1BETA1_DOWN = {
    "DeviceClass": _identity,
    "ResourceSlice": _slice(_device_to_v1beta1),
    "ResourceClaim": _claim(_request_to_v1beta1),
    "ResourceClaimTemplate": _template(_request_to_v1beta1),
}
_V1BETA1_UP = {
    "DeviceClass": _identity,
    "ResourceSlice": _slice(_device_to_v1),
    "ResourceClaim": _claim(_request_to_v1),
    "ResourceClaimTemplate": _template(_request_to_v1),
}
