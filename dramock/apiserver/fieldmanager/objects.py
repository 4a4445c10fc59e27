"""Objects, kinds and versions: apiVersion parsing, the kind of a definition, the zero object a create
starts from and the object shaped like its Go type."""

from __future__ import annotations

import functools
from collections.abc import Iterable
from typing import Any

from dramock.jsonvalue import clone
from dramock.schemas import defs

from .paths import FieldSet, Path, _path
from .schema import _type_of
from .values import Obj

# What `runtime.Scheme.New(kind)` serialises to: the "old" object of a create. It matters because
# only fields absent from it count as added containers (the `.` entries of FieldsV1). Non-pointer
# structs are present, non-omitempty scalars carry their zero value, non-omitempty slices are null.
_NODE_INFO = ("machineID", "systemUUID", "bootID", "kernelVersion", "osImage", "containerRuntimeVersion",
              "kubeletVersion", "kubeProxyVersion", "operatingSystem", "architecture")
_ZERO_OBJECTS: dict[str, Obj] = {
    "io.k8s.api.core.v1.Pod": {"spec": {"containers": None}, "status": {}},
    "io.k8s.api.core.v1.Node": {"spec": {}, "status": {
        "daemonEndpoints": {"kubeletEndpoint": {"Port": 0}}, "nodeInfo": {k: "" for k in _NODE_INFO}}},
    "io.k8s.api.core.v1.Namespace": {"spec": {}, "status": {}},
    "io.k8s.api.core.v1.ResourceQuota": {"spec": {}, "status": {}},
    "io.k8s.api.core.v1.Event": {"involvedObject": {}, "source": {}, "firstTimestamp": None,
                                 "lastTimestamp": None, "eventTime": None, "reportingComponent": "",
                                 "reportingInstance": ""},
    "io.k8s.api.events.v1.Event": {"eventTime": None, "regarding": {}, "deprecatedSource": {},
                                   "deprecatedFirstTimestamp": None, "deprecatedLastTimestamp": None},
    "io.k8s.api.core.v1.ConfigMap": {},
    "io.k8s.api.core.v1.Secret": {},
    "io.k8s.api.core.v1.ServiceAccount": {},
    "io.k8s.api.coordination.v1.Lease": {"spec": {}},
    "io.k8s.api.resource.v1.DeviceClass": {"spec": {}},
    "io.k8s.api.resource.v1.ResourceSlice": {"spec": {
        "driver": "", "pool": {"name": "", "generation": 0, "resourceSliceCount": 0}}},
    "io.k8s.api.resource.v1.ResourceClaim": {"spec": {"devices": {"requests": None}}, "status": {}},
    "io.k8s.api.resource.v1.ResourceClaimTemplate": {"spec": {"metadata": {},
                                                              "spec": {"devices": {"requests": None}}}},
    "io.k8s.api.resource.v1.DeviceTaintRule": {"spec": {"taint": {"key": "", "effect": ""}}, "status": {}},
}


def _split_api_version(api_version: Any) -> tuple[str, str] | None:
    """schema.ParseGroupVersion; None when it does not parse."""
    if not isinstance(api_version, str) or api_version in ("", "/"):
        return ("", "")
    parts = api_version.split("/")
    if len(parts) == 1:
        return ("", parts[0])
    if len(parts) == 2:
        return (parts[0], parts[1])
    return None


def _gvk_string(api_version: Any, kind: Any) -> str:
    """schema.GroupVersionKind.String() of an object's apiVersion and kind."""
    kind = kind if isinstance(kind, str) else ""
    gv = _split_api_version(api_version) or ("", "")
    return f"{gv[0]}/{gv[1]}, Kind={kind}"


def _kind_of(definition: str, api_version: str) -> str:
    gv = _split_api_version(api_version) or ("", "")
    gvks = defs.definition(definition).get("x-kubernetes-group-version-kind") or []
    for g in gvks:
        if (g.get("group", ""), g.get("version")) == gv:
            return g["kind"]
    return gvks[0]["kind"] if gvks else definition.rsplit(".", 1)[-1]


def _zero_object(definition: str, api_version: str) -> Obj:
    """The "live" object of a create: what a fresh Go object of the kind serialises to."""
    zero = _ZERO_OBJECTS.get(definition)
    if zero is None:
        props = defs.definition(definition).get("properties") or {}
        zero = {k: {} for k in ("spec", "status") if k in props and _type_of(props[k]).kind == "struct"}
    out: Obj = {"apiVersion": api_version, "kind": _kind_of(definition, api_version), "metadata": {}}
    out.update(clone(zero))
    return out


@functools.lru_cache(maxsize=256)
def _shared_zero_object(definition: str, api_version: str) -> Obj:
    """_zero_object, one per kind and version, for callers that only read it (and _with_zero(share=True))."""
    return _zero_object(definition, api_version)


def _with_zero(obj: Obj, zero: Obj, share: bool = False) -> Obj:
    """`obj` shaped like the Go object it stands for: fields the Go type always has are filled in.

    Stored objects may omit empty non-pointer structs (`status: {}`) that upstream's typed values
    always carry; comparing with them missing would report them as newly added containers.
    The fill-ins are copies of `zero`'s values, or (share=True, for a result only read) those values.
    """
    out = dict(obj)  # the callers only read the result: copy just the dicts on the way to what is filled in
    for k, z in zero.items():
        if k not in out:
            out[k] = z if share else clone(z)
        elif isinstance(z, dict) and isinstance(out[k], dict):
            out[k] = _with_zero(out[k], z, share)
    return out


def _ignored(reset_fields: Iterable[str]) -> FieldSet:
    return {_path(p) for p in reset_fields}


@functools.lru_cache(maxsize=64)
def _frozen_ignored(reset_fields: tuple[str, ...]) -> frozenset[Path]:
    """_ignored, remembered: every write of a kind passes the same reset fields."""
    return frozenset(_ignored(reset_fields))


def _meta(obj: Any) -> dict:
    m = obj.get("metadata") if isinstance(obj, dict) else None
    return m if isinstance(m, dict) else {}
