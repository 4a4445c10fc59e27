"""Discovery documents: /version, /api, /apis, /api/v1, /apis/<g>, /apis/<g>/<v> and aggregated discovery.

Everything is derived from the server's `Registry` (the default one when none is given); the shapes follow
what a 1.37 kube-apiserver serves (apimachinery `metav1.APIVersions`, `APIGroupList`, `APIGroup`,
`APIResourceList` and `apidiscovery.k8s.io/v2` `APIGroupDiscoveryList`).
"""

from __future__ import annotations

import base64
import functools
import hashlib
import json
import platform
from dataclasses import dataclass
from typing import Any

from dramock import KUBERNETES_VERSION
from dramock.apiserver import protobuf
from dramock.registry import Registry
from dramock.registry.kind import Kind

Obj = dict[str, Any]

PROTOBUF = protobuf.MEDIA_TYPE

# Content types of aggregated discovery (the only version kubectl >= 1.30 and client-go ask for first).
AGGREGATED_V2 = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
AGGREGATED_V2_PROTOBUF = "application/vnd.kubernetes.protobuf;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
AGGREGATED_V2BETA1 = "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList"

# kube-apiserver's group priorities (pkg/controlplane/apiserver: apiVersionPriorities); /apis lists groups in
# descending priority order. Unknown groups sort after these, in registry order.
_GROUP_PRIORITY = {
    "apiregistration.k8s.io": 18000,
    "apps": 17800,
    "events.k8s.io": 17750,
    "authentication.k8s.io": 17700,
    "authorization.k8s.io": 17600,
    "autoscaling": 17500,
    "batch": 17400,
    "certificates.k8s.io": 17300,
    "networking.k8s.io": 17200,
    "policy": 17100,
    "rbac.authorization.k8s.io": 17000,
    "storage.k8s.io": 16800,
    "admissionregistration.k8s.io": 16700,
    "apiextensions.k8s.io": 16700,
    "scheduling.k8s.io": 16600,
    "coordination.k8s.io": 16500,
    "node.k8s.io": 16300,
    "discovery.k8s.io": 16200,
    "flowcontrol.apiserver.k8s.io": 16100,
    "internal.apiserver.k8s.io": 16000,
    "resource.k8s.io": 15900,
}

# Subresource -> (verbs, response kind as (group, version, kind) or None for the parent kind).
_SUBRESOURCES: dict[str, tuple[tuple[str, ...], tuple[str, str, str] | None]] = {
    "status": (("get", "patch", "update"), None),
    "finalize": (("update",), None),
    "binding": (("create",), ("", "v1", "Binding")),
    "token": (("create",), ("authentication.k8s.io", "v1", "TokenRequest")),
    "scale": (("get", "patch", "update"), ("autoscaling", "v1", "Scale")),
    "log": (("get",), None),
    "exec": (("create", "get"), ("", "v1", "PodExecOptions")),
    "attach": (("create", "get"), ("", "v1", "PodAttachOptions")),
    "portforward": (("create", "get"), ("", "v1", "PodPortForwardOptions")),
}



def _split_version(v: str) -> tuple[str, str]:
    parts = v.lstrip("v").split(".")
    return parts[0], parts[1]


def version_info() -> Obj:
    """The /version document (apimachinery version.Info)."""
    major, minor = _split_version(KUBERNETES_VERSION)
    machine = platform.machine().lower()
    arch = {"x86_64": "amd64", "aarch64": "arm64"}.get(machine, machine or "amd64")
    return {
        "major": major,
        "minor": minor,
        "emulationMajor": major,
        "emulationMinor": minor,
        "minCompatibilityMajor": major,
        "minCompatibilityMinor": str(int(minor) - 1),
        "gitVersion": KUBERNETES_VERSION,
        "gitCommit": hashlib.sha1(KUBERNETES_VERSION.encode()).hexdigest(),
        "gitTreeState": "clean",
        "buildDate": "2026-08-26T00:00:00Z",
        "goVersion": "go1.26.0",
        "compiler": "gc",
        "platform": f"linux/{arch}",
    }


def storage_version_hash(kind: Kind) -> str:
    """upstream discovery.StorageVersionHash: base64 of the first 8 bytes of sha256("group/version/kind"), of
    the storage kind when the kind is stored as another."""
    g, v, k = kind.stored_as or (kind.group, kind.version, kind.kind)
    digest = hashlib.sha256(f"{g}/{v}/{k}".encode()).digest()
    return base64.b64encode(digest[:8]).decode()


def verbs_of(kind: Kind) -> list[str]:
    return sorted(kind.verbs)


def _subresource_kind(kind: Kind, sub: str) -> tuple[str, str, str]:
    return _SUBRESOURCES[sub][1] or (kind.group, kind.version, kind.kind)


def _group_versions(group: str, registry: Registry) -> list[Obj]:
    return [{"groupVersion": f"{group}/{v}", "version": v} for v in registry.versions_of(group)]


def _sorted_groups(registry: Registry) -> list[str]:
    order = registry.groups()
    return sorted(order, key=lambda g: (-_GROUP_PRIORITY.get(g, 0), order.index(g)))


def core_versions(server_address: str = "127.0.0.1:6443", registry: Registry | None = None) -> Obj:
    """GET /api: metav1.APIVersions (served without apiVersion, as upstream does)."""
    registry = registry or Registry.default()
    return {
        "kind": "APIVersions",
        "versions": registry.versions_of(""),
        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": server_address}],
    }


def group(name: str, registry: Registry | None = None) -> Obj | None:
    """GET /apis/<name>: metav1.APIGroup, or None when the group is not served."""
    versions = _group_versions(name, registry or Registry.default())
    if not name or not versions:
        return None
    return {
        "kind": "APIGroup",
        "apiVersion": "v1",
        "name": name,
        "versions": versions,
        "preferredVersion": versions[0],
    }


def group_list(registry: Registry | None = None) -> Obj:
    """GET /apis: metav1.APIGroupList."""
    registry = registry or Registry.default()
    groups = []
    for g in _sorted_groups(registry):
        entry = group(g, registry)
        assert entry is not None
        entry = {k: v for k, v in entry.items() if k not in ("kind", "apiVersion")}
        groups.append(entry)
    return {"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}


def _api_resource(kind: Kind) -> Obj:
    out: Obj = {
        "name": kind.plural,
        "singularName": kind.singular,
        "namespaced": kind.namespaced,
        "kind": kind.kind,
        "verbs": verbs_of(kind),
    }
    if kind.short_names:
        out["shortNames"] = list(kind.short_names)
    if kind.categories:
        out["categories"] = list(kind.categories)
    out["storageVersionHash"] = storage_version_hash(kind)
    return out


def _api_subresource(kind: Kind, sub: str) -> Obj:
    g, v, k = _subresource_kind(kind, sub)
    out: Obj = {
        "name": f"{kind.plural}/{sub}",
        "singularName": "",
        "namespaced": kind.namespaced,
    }
    if (g, v) != (kind.group, kind.version):
        # APIResource.group/version are only set when they differ from the list's groupVersion.
        if g != kind.group:
            out["group"] = g
        if v != kind.version:
            out["version"] = v
    out["kind"] = k
    out["verbs"] = list(_SUBRESOURCES[sub][0])
    return out


def resource_list(group_name: str, version: str, registry: Registry | None = None) -> Obj | None:
    """GET /api/v1 or /apis/<g>/<v>: metav1.APIResourceList, or None when not served."""
    kinds = (registry or Registry.default()).kinds_in(group_name, version)
    if not kinds:
        return None
    entries: list[Obj] = []
    for k in kinds:
        entries.append(_api_resource(k))
        entries.extend(_api_subresource(k, sub) for sub in k.subresources)
    entries.sort(key=lambda e: e["name"])
    out: Obj = {"kind": "APIResourceList"}
    if group_name:
        out["apiVersion"] = "v1"
    out["groupVersion"] = f"{group_name}/{version}" if group_name else version
    out["resources"] = entries
    return out


def _gvk(g: str, v: str, k: str) -> Obj:
    return {"group": g, "version": v, "kind": k}


def _discovery_resource(kind: Kind) -> Obj:
    out: Obj = {
        "resource": kind.plural,
        "responseKind": _gvk(kind.group, kind.version, kind.kind),
        "scope": "Namespaced" if kind.namespaced else "Cluster",
        "singularResource": kind.singular,
        "verbs": verbs_of(kind),
    }
    if kind.short_names:
        out["shortNames"] = list(kind.short_names)
    if kind.categories:
        out["categories"] = list(kind.categories)
    if kind.subresources:
        out["subresources"] = [
            {
                "subresource": sub,
                "responseKind": _gvk(*_subresource_kind(kind, sub)),
                "verbs": list(_SUBRESOURCES[sub][0]),
            }
            for sub in sorted(kind.subresources)
        ]
    return out


def _group_discovery(group_name: str, registry: Registry) -> Obj:
    versions = []
    for v in registry.versions_of(group_name):
        kinds = sorted(registry.kinds_in(group_name, v), key=lambda k: k.plural)
        versions.append({
            "version": v,
            "resources": [_discovery_resource(k) for k in kinds],
            "freshness": "Current",
        })
    return {"metadata": {"name": group_name} if group_name else {}, "versions": versions}


def aggregated(core: bool, registry: Registry | None = None) -> Obj:
    """apidiscovery.k8s.io/v2 APIGroupDiscoveryList for /api (core=True) or /apis (core=False)."""
    registry = registry or Registry.default()
    items = [_group_discovery("", registry)] if core else \
        [_group_discovery(g, registry) for g in _sorted_groups(registry)]
    return {
        "kind": "APIGroupDiscoveryList",
        "apiVersion": "apidiscovery.k8s.io/v2",
        "metadata": {},
        "items": items,
    }


def aggregated_bytes(core: bool, registry: Registry | None = None) -> tuple[bytes, str]:
    """The serialized aggregated document and its ETag (quoted, as upstream sends it). Built once per
    registry."""
    return _aggregated_bytes(core, registry or Registry.default())


@functools.cache
def _aggregated_bytes(core: bool, registry: Registry) -> tuple[bytes, str]:
    body = json.dumps(aggregated(core, registry), separators=(",", ":")).encode()
    return body, '"' + hashlib.sha512(body).hexdigest().upper() + '"'


def _media_ranges(accept: str) -> list[tuple[str, dict[str, str], float]]:
    out = []
    for clause in accept.split(","):
        parts = [p.strip() for p in clause.split(";")]
        if not parts[0]:
            continue
        params: dict[str, str] = {}
        for p in parts[1:]:
            if "=" in p:
                k, v = p.split("=", 1)
                params[k.strip().lower()] = v.strip().strip('"')
        q = 1.0
        try:
            q = float(params.pop("q", "1"))
        except ValueError:
            pass
        out.append((parts[0].lower(), params, q))
    return out


@dataclass(frozen=True)
class Form:
    """How a discovery document is answered: aggregated (apidiscovery.k8s.io/v2) or legacy, JSON or protobuf."""

    aggregated: bool = False
    protobuf: bool = False


def negotiate(accept_header: str | None) -> Form:
    """The discovery form the Accept header asks for.

    Upstream picks the first acceptable clause in the client's order: a plain `application/json` listed
    before the aggregated type gets the legacy document. client-go set to protobuf lists the protobuf
    aggregated type first, then JSON.
    """
    if not accept_header:
        return Form()
    for mime, params, q in _media_ranges(accept_header):
        if q <= 0:
            continue
        if params.get("g") == "apidiscovery.k8s.io" and params.get("as") == "APIGroupDiscoveryList":
            if params.get("v") == "v2" and mime in ("application/json", "application/*", "*/*", PROTOBUF):
                return Form(aggregated=True, protobuf=mime == PROTOBUF)
            continue  # v2beta1 (removed in 1.33): not served, try the next clause
        if mime in ("application/json", "application/*", "*/*"):
            return Form()
        if mime == PROTOBUF and "as" not in params:
            return Form(protobuf=True)
    return Form()


def aggregated_protobuf_bytes(core: bool, registry: Registry | None = None) -> tuple[bytes, str]:
    """The aggregated document as protobuf and its ETag. Built once per registry."""
    return _aggregated_protobuf_bytes(core, registry or Registry.default())


@functools.cache
def _aggregated_protobuf_bytes(core: bool, registry: Registry) -> tuple[bytes, str]:
    body = protobuf.encode(aggregated(core, registry))
    return body, '"' + hashlib.sha512(body).hexdigest().upper() + '"'
