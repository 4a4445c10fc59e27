"""The operations of a kind as a neutral model (path, path parameters, operations with action, query,
body, responses and group-version-kind), named as upstream names them and limited to the kind's verbs."""

from __future__ import annotations

import re

from dramock.registry.kind import Kind
from dramock.schemas import defs

from .definitions import META, Obj
from .parameters import (
    _DELETE_PARAMS,
    _DELETECOLLECTION_PARAMS,
    _LIST_MEDIA,
    _LIST_PARAMS,
    _OBJECT_MEDIA,
    _PATCH_PARAMS,
    _WATCH_MEDIA,
    _WRITE_PARAMS,
    PATCH_CONTENT_TYPES,
)


def _camel(s: str) -> str:
    return "".join(p[:1].upper() + p[1:] for p in re.split(r"[.\-]", s) if p)


def _group_camel(group: str) -> str:
    if not group:
        return "Core"
    return _camel(group.removesuffix(".k8s.io").removesuffix(".io"))


def _tag(group: str, version: str) -> str:
    g = group.removesuffix(".k8s.io").replace(".", "_").replace("-", "_") if group else "core"
    return f"{g}_{version}"


def _gv_prefix(group: str, version: str) -> str:
    return f"/apis/{group}/{version}" if group else f"/api/{version}"


def _op(method: str, action: str, description: str, op_id: str, kind: Kind | None, *, query=(),
        body: str | None = None, body_required: bool = True, body_media=("*/*",),
        responses: tuple[tuple[str, str | None], ...] = (), media=_OBJECT_MEDIA,
        gvk: tuple[str, str, str] | None = None) -> Obj:
    if gvk is None and kind is not None:
        gvk = (kind.group, kind.version, kind.kind)
    return {
        "method": method, "action": action, "description": description, "operationId": op_id,
        "query": tuple(query), "body": body, "body_required": body_required, "body_media": body_media,
        "responses": responses, "media": media, "gvk": gvk,
    }


def _kind_paths(k: Kind) -> list[tuple[str, list[str], list[str], list[Obj]]]:
    """(path, path params, extra path-level query params, operations) for one kind."""
    base = _gv_prefix(k.group, k.version)
    prefix = _group_camel(k.group) + _camel(k.version)
    ns = "Namespaced" if k.namespaced else ""
    obj = k.definition
    lst = defs.kind_definition(k.group, k.version, k.list_kind) or obj
    status = META + "Status"
    deleted = obj if k.return_deleted_object else status
    coll = f"{base}/namespaces/{{namespace}}/{k.plural}" if k.namespaced else f"{base}/{k.plural}"
    coll_params = ["namespace"] if k.namespaced else []
    item_params = ["name", *coll_params]
    out: list[tuple[str, list[str], list[str], list[Obj]]] = []

    out.append((coll, coll_params, [], [
        _op("delete", "deletecollection", f"delete collection of {k.kind}",
            f"delete{prefix}Collection{ns}{k.kind}", k, query=_DELETECOLLECTION_PARAMS,
            body=META + "DeleteOptions", body_required=False, responses=(("200", status),)),
        _op("get", "list", f"list or watch objects of kind {k.kind}", f"list{prefix}{ns}{k.kind}", k,
            query=_LIST_PARAMS, responses=(("200", lst),), media=_LIST_MEDIA),
        _op("post", "post", f"create a {k.kind}", f"create{prefix}{ns}{k.kind}", k, query=_WRITE_PARAMS,
            body=obj, responses=(("200", obj), ("201", obj), ("202", obj))),
    ]))
    out.append((f"{coll}/{{name}}", item_params, [], [
        _op("delete", "delete", f"delete a {k.kind}", f"delete{prefix}{ns}{k.kind}", k,
            query=_DELETE_PARAMS, body=META + "DeleteOptions", body_required=False,
            responses=(("200", deleted), ("202", deleted))),
        _op("get", "get", f"read the specified {k.kind}", f"read{prefix}{ns}{k.kind}", k,
            responses=(("200", obj),)),
        _op("patch", "patch", f"partially update the specified {k.kind}", f"patch{prefix}{ns}{k.kind}", k,
            query=_PATCH_PARAMS, body=META + "Patch", body_media=PATCH_CONTENT_TYPES,
            responses=(("200", obj), ("201", obj))),
        _op("put", "put", f"replace the specified {k.kind}", f"replace{prefix}{ns}{k.kind}", k,
            query=_WRITE_PARAMS, body=obj, responses=(("200", obj), ("201", obj))),
    ]))
    for sub in k.subresources:
        path = f"{coll}/{{name}}/{sub}"
        sub_camel = _camel(sub)
        if sub == "status":
            out.append((path, item_params, [], [
                _op("get", "get", f"read status of the specified {k.kind}",
                    f"read{prefix}{ns}{k.kind}Status", k, responses=(("200", obj),)),
                _op("patch", "patch", f"partially update status of the specified {k.kind}",
                    f"patch{prefix}{ns}{k.kind}Status", k, query=_PATCH_PARAMS, body=META + "Patch",
                    body_media=PATCH_CONTENT_TYPES, responses=(("200", obj), ("201", obj))),
                _op("put", "put", f"replace status of the specified {k.kind}",
                    f"replace{prefix}{ns}{k.kind}Status", k, query=_WRITE_PARAMS, body=obj,
                    responses=(("200", obj), ("201", obj))),
            ]))
        elif sub == "finalize":
            out.append((path, item_params, [], [
                _op("put", "put", f"replace finalize of the specified {k.kind}",
                    f"replace{prefix}{ns}{k.kind}{sub_camel}", k, query=_WRITE_PARAMS, body=obj,
                    responses=(("200", obj), ("201", obj))),
            ]))
        elif sub == "scale":
            scale = "io.k8s.api.autoscaling.v1.Scale"
            gvk = ("autoscaling", "v1", "Scale")
            out.append((path, item_params, [], [
                _op("get", "get", f"read scale of the specified {k.kind}", f"read{prefix}{ns}{k.kind}Scale",
                    None, responses=(("200", scale),), gvk=gvk),
                _op("patch", "patch", f"partially update scale of the specified {k.kind}",
                    f"patch{prefix}{ns}{k.kind}Scale", None, query=_PATCH_PARAMS, body=META + "Patch",
                    body_media=PATCH_CONTENT_TYPES, responses=(("200", scale), ("201", scale)), gvk=gvk),
                _op("put", "put", f"replace scale of the specified {k.kind}", f"replace{prefix}{ns}{k.kind}Scale",
                    None, query=_WRITE_PARAMS, body=scale, responses=(("200", scale), ("201", scale)), gvk=gvk),
            ]))
        elif sub == "binding":
            binding = "io.k8s.api.core.v1.Binding"
            out.append((path, item_params, [], [
                _op("post", "post", f"create binding of a {k.kind}", f"create{prefix}{ns}{k.kind}Binding",
                    None, query=_WRITE_PARAMS, body=binding,
                    responses=(("200", binding), ("201", binding), ("202", binding)),
                    gvk=("", "v1", "Binding")),
            ]))
    if k.namespaced:
        out.append((f"{base}/{k.plural}", [], list(_LIST_PARAMS), [
            _op("get", "list", f"list or watch objects of kind {k.kind}",
                f"list{prefix}{k.kind}ForAllNamespaces", k, responses=(("200", lst),), media=_LIST_MEDIA),
        ]))
    watch_event = META + "WatchEvent"
    wcoll = (f"{base}/watch/namespaces/{{namespace}}/{k.plural}" if k.namespaced
             else f"{base}/watch/{k.plural}")
    out.append((wcoll, coll_params, list(_LIST_PARAMS), [
        _op("get", "watchlist",
            f"watch individual changes to a list of {k.kind}. deprecated: use the 'watch' parameter with a "
            "list operation instead.", f"watch{prefix}{ns}{k.kind}List", k,
            responses=(("200", watch_event),), media=_WATCH_MEDIA),
    ]))
    out.append((f"{wcoll}/{{name}}", item_params, list(_LIST_PARAMS), [
        _op("get", "watch",
            f"watch changes to an object of kind {k.kind}. deprecated: use the 'watch' parameter with a "
            "list operation instead, filtered to a single item with the 'fieldSelector' parameter.",
            f"watch{prefix}{ns}{k.kind}", k, responses=(("200", watch_event),), media=_WATCH_MEDIA),
    ]))
    if k.namespaced:
        out.append((f"{base}/watch/{k.plural}", [], list(_LIST_PARAMS), [
            _op("get", "watchlist",
                f"watch individual changes to a list of {k.kind}. deprecated: use the 'watch' parameter "
                "with a list operation instead.", f"watch{prefix}{k.kind}ListForAllNamespaces", k,
                responses=(("200", watch_event),), media=_WATCH_MEDIA),
        ]))
    return _served_operations(k, out)


# Operation action -> the verb a kind must serve for it (subresource operations are kept as they are).
_ACTION_VERBS = {"deletecollection": "deletecollection", "list": "list", "post": "create", "delete": "delete",
                 "get": "get", "patch": "patch", "put": "update", "watch": "watch", "watchlist": "watch"}


def _served_operations(k: Kind, paths: list[tuple[str, list[str], list[str], list[Obj]]]) -> list:
    """Only the operations of the kind's verbs (e.g. create alone for the self reviews)."""
    if set(k.verbs) >= set(_ACTION_VERBS.values()):
        return paths
    out = []
    for path, params, query, ops in paths:
        is_sub = path.count("{name}/") > 0
        kept = [op for op in ops if is_sub or _ACTION_VERBS.get(op["action"], op["action"]) in k.verbs]
        if kept:
            out.append((path, params, query, kept))
    return out
