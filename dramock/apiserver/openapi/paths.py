"""The paths object of a group-version: the operations model rendered as OpenAPI v2 or v3."""

from __future__ import annotations

from dramock.registry.kind import Kind

from .definitions import META, Obj
from .operations import _camel, _group_camel, _gv_prefix, _kind_paths, _tag
from .parameters import _render_param_v2, _render_param_v3


def _path_param_desc(name: str, kind: Kind, path: str) -> str:
    if name == "namespace":
        return "object name and auth scope, such as for teams and projects"
    if path.endswith("/binding"):
        return "name of the Binding"
    return f"name of the {kind.kind}"


_STATUS_TEXT = {"200": "OK", "201": "Created", "202": "Accepted"}


def _render_paths(kinds: list[Kind], group: str, version: str, v3: bool) -> Obj:
    prefix = "#/components/schemas/" if v3 else "#/definitions/"
    tag = _tag(group, version)
    paths: dict[str, Obj] = {}

    root_op: Obj = {
        "description": "get available resources",
        "operationId": f"get{_group_camel(group)}{_camel(version)}APIResources",
        "tags": [tag],
    }
    root_schema = {"$ref": prefix + META + "APIResourceList"}
    if v3:
        root_op["responses"] = {
            "200": {"content": {m: {"schema": root_schema} for m in
                                ("application/json", "application/vnd.kubernetes.protobuf", "application/yaml")},
                    "description": "OK"},
            "401": {"description": "Unauthorized"},
        }
    else:
        root_op.update({
            "consumes": ["application/json", "application/yaml", "application/vnd.kubernetes.protobuf"],
            "produces": ["application/json", "application/yaml", "application/vnd.kubernetes.protobuf"],
            "responses": {"200": {"description": "OK", "schema": root_schema},
                          "401": {"description": "Unauthorized"}},
            "schemes": ["https"],
        })
        root_op = dict(sorted(root_op.items()))
    paths[_gv_prefix(group, version) + "/"] = {"get": root_op}

    for k in kinds:
        for path, path_params, level_query, ops in _kind_paths(k):
            item: Obj = {}
            for op in ops:
                item[op["method"]] = _render_op(op, prefix, tag, v3)
            params: list[Obj] = []
            for pp in path_params:
                p: Obj = {"description": _path_param_desc(pp, k, path), "in": "path", "name": pp,
                          "required": True}
                if v3:
                    p["schema"] = {"type": "string", "uniqueItems": True}
                else:
                    p.update({"type": "string", "uniqueItems": True})
                params.append(p)
            render = _render_param_v3 if v3 else _render_param_v2
            params.append(render("pretty"))
            params.extend(render(q) for q in level_query)
            params.sort(key=lambda p: p["name"])
            item["parameters"] = params
            paths[path] = dict(sorted(item.items()))
    return dict(sorted(paths.items()))


def _render_op(op: Obj, prefix: str, tag: str, v3: bool) -> Obj:
    render = _render_param_v3 if v3 else _render_param_v2
    out: Obj = {"description": op["description"], "operationId": op["operationId"]}
    params = [render(q) for q in op["query"]]
    if v3:
        if params:
            out["parameters"] = params
        if op["body"]:
            rb: Obj = {"content": {m: {"schema": {"$ref": prefix + op["body"]}} for m in op["body_media"]}}
            if op["body_required"]:
                rb["required"] = True
            out["requestBody"] = rb
        responses: Obj = {}
        for code, schema in op["responses"]:
            resp: Obj = {"description": _STATUS_TEXT[code]}
            if schema:
                resp = {"content": {m: {"schema": {"$ref": prefix + schema}} for m in op["media"]}, **resp}
            responses[code] = resp
        responses["401"] = {"description": "Unauthorized"}
        out["responses"] = responses
    else:
        if op["body"]:
            body: Obj = {"in": "body", "name": "body", "schema": {"$ref": prefix + op["body"]}}
            if op["body_required"]:
                body["required"] = True
            params.insert(0, body)
        if params:
            out["parameters"] = params
        out["consumes"] = list(op["body_media"]) if op["body"] else ["*/*"]
        out["produces"] = [m for m in op["media"] if m != "application/cbor-seq"]
        responses = {}
        for code, schema in op["responses"]:
            resp = {"description": _STATUS_TEXT[code]}
            if schema:
                resp["schema"] = {"$ref": prefix + schema}
            responses[code] = resp
        responses["401"] = {"description": "Unauthorized"}
        out["responses"] = responses
        out["schemes"] = ["https"]
    out["tags"] = [tag]
    out["x-kubernetes-action"] = op["action"]
    if op["gvk"]:
        g, v, kd = op["gvk"]
        out["x-kubernetes-group-version-kind"] = {"group": g, "kind": kd, "version": v}
    return dict(sorted(out.items()))
