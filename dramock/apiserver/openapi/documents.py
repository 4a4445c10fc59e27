"""Whole documents: Swagger 2.0 for every served kind, one OpenAPI 3.0 document per group-version, and
the v3 documents of the discovery endpoints themselves."""

from __future__ import annotations

from dramock import KUBERNETES_VERSION
from dramock.registry import Registry

from .definitions import META, Obj, _definition, _kind_roots, closure
from .operations import _group_camel
from .paths import _render_paths

_SECURITY_SCHEME = {"BearerToken": {"description": "Bearer Token authentication", "in": "header",
                                    "name": "authorization", "type": "apiKey"}}


def v2_document(registry: Registry | None = None) -> Obj:
    """Swagger 2.0 for every served kind."""
    registry = registry or Registry.default()
    kinds = list(registry.kinds)
    paths: Obj = {}
    for g, v in registry.group_versions:
        paths.update(_render_paths(registry.kinds_in(g, v), g, v, v3=False))
    return {
        "definitions": {n: _definition(n, "#/definitions/", False) for n in closure(_kind_roots(kinds))},
        "info": {"title": "Kubernetes", "version": KUBERNETES_VERSION},
        "paths": dict(sorted(paths.items())),
        "security": [{"BearerToken": []}],
        "securityDefinitions": _SECURITY_SCHEME,
        "swagger": "2.0",
    }


def v3_path_of(group: str, version: str) -> str:
    """The /openapi/v3/<path> key of a group-version: "api/v1" or "apis/resource.k8s.io/v1"."""
    return f"apis/{group}/{version}" if group else f"api/{version}"


# Documents for the discovery endpoints themselves: path -> (URL, operationId, tag, response definition).
def _discovery_docs(registry: Registry) -> dict[str, tuple[str, str, str, str]]:
    out = {
        "api": ("/api/", "getCoreAPIVersions", "core", META + "APIVersions"),
        "apis": ("/apis/", "getAPIVersions", "apis", META + "APIGroupList"),
        "version": ("/version/", "getCodeVersion", "version", "io.k8s.apimachinery.pkg.version.Info"),
    }
    for g in registry.groups():
        tag = g.removesuffix(".k8s.io").replace(".", "_").replace("-", "_")
        out[f"apis/{g}"] = (f"/apis/{g}/", f"get{_group_camel(g)}APIGroup", tag, META + "APIGroup")
    return out


def v3_paths(registry: Registry | None = None) -> list[str]:
    """Every key of the /openapi/v3 index, sorted as upstream serializes it."""
    registry = registry or Registry.default()
    return sorted([v3_path_of(g, v) for g, v in registry.group_versions] + list(_discovery_docs(registry)))


def _gv_of(path: str, registry: Registry) -> tuple[str, str] | None:
    path = path.strip("/")
    for g, v in registry.group_versions:
        if v3_path_of(g, v) == path:
            return g, v
    return None


def _discovery_document(path: str, registry: Registry) -> Obj | None:
    entry = _discovery_docs(registry).get(path.strip("/"))
    if entry is None:
        return None
    url, op_id, tag, schema = entry
    prefix = "#/components/schemas/"
    media = ("application/json",) if path == "version" else (
        "application/json", "application/vnd.kubernetes.protobuf", "application/yaml")
    description = "get the version information for this server" if path == "version" else (
        "get available API versions" if path in ("api", "apis") else "get information of a group")
    return {
        "components": {
            "schemas": {n: _definition(n, prefix, True) for n in closure([schema])},
            "securitySchemes": _SECURITY_SCHEME,
        },
        "info": {"title": "Kubernetes", "version": KUBERNETES_VERSION},
        "openapi": "3.0.0",
        "paths": {url: {"get": {
            "description": description,
            "operationId": op_id,
            "responses": {
                "200": {"content": {m: {"schema": {"$ref": prefix + schema}} for m in media},
                        "description": "OK"},
                "401": {"description": "Unauthorized"},
            },
            "tags": [tag],
        }}},
    }


def v3_document(path: str, registry: Registry | None = None) -> Obj | None:
    """The OpenAPI 3.0 document at /openapi/v3/<path> (`api/v1`, `apis/resource.k8s.io/v1`, `apis`, ...)."""
    registry = registry or Registry.default()
    gv = _gv_of(path, registry)
    if gv is None:
        return _discovery_document(path, registry)
    kinds = registry.kinds_in(*gv)
    prefix = "#/components/schemas/"
    return {
        "components": {
            "schemas": {n: _definition(n, prefix, True) for n in closure(_kind_roots(kinds))},
            "securitySchemes": _SECURITY_SCHEME,
        },
        "info": {"title": "Kubernetes", "version": KUBERNETES_VERSION},
        "openapi": "3.0.0",
        "paths": _render_paths(kinds, gv[0], gv[1], v3=True),
    }
