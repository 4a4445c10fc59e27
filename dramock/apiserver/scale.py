"""The `scale` subresource (deployments, replicasets, statefulsets): an autoscaling/v1 Scale view of
spec.replicas and status.replicas/selector, as upstream's ScaleREST serves it. GET reads it; PUT and PATCH
change only spec.replicas of the parent, through the parent's normal update path."""

from __future__ import annotations

import json
from typing import Any

from dramock import errors
from dramock.apiserver import codec, patch
from dramock.apiserver.rest import Call, Rest, Result
from dramock.schemas import labelselector
from dramock.schemas.validation.field import invalid_value

Obj = dict[str, Any]
SCALE = "io.k8s.api.autoscaling.v1.Scale"


def to_scale(obj: Obj) -> Obj:
    m = obj["metadata"]
    return {"kind": "Scale", "apiVersion": "autoscaling/v1",
            "metadata": {k: m[k] for k in ("name", "namespace", "uid", "resourceVersion", "creationTimestamp")
                         if k in m},
            "spec": {"replicas": (obj.get("spec") or {}).get("replicas", 0)},
            "status": {"replicas": (obj.get("status") or {}).get("replicas", 0),
                       "selector": labelselector.to_string((obj.get("spec") or {}).get("selector"))}}


def handle(rest: Rest, call: Call, verb: str, body: bytes, content_type: str) -> Result:
    parent_call = Call(call.kind, call.namespace, call.name, "", call.query, call.user_agent, verb=verb)
    current = rest.get(parent_call).body
    if verb == "get":
        return Result(to_scale(current))
    scale = to_scale(current)
    if verb == "update":
        doc, _ = codec.parse_body(body, content_type)  # kubectl scale sends protobuf
        if not isinstance(doc, dict):
            raise errors.bad_request("the body of the request was in an unknown format")
        codec.check_types(doc, SCALE, "Scale", "v1")
        scale = doc
    elif verb == "patch":
        mt = codec.media_type(content_type)
        if mt == "application/json-patch+json":
            scale = patch.apply_json_patch(scale, body)
        elif mt == "application/strategic-merge-patch+json":
            scale = patch.apply_strategic_merge_patch(scale, json.loads(body or b"{}"), SCALE)
        else:
            scale = patch.apply_merge_patch(scale, json.loads(body or b"{}"))
    replicas = (scale.get("spec") or {}).get("replicas", 0)
    name = call.name or ""
    if not isinstance(replicas, int) or isinstance(replicas, bool) or replicas < 0:
        raise errors.invalid("Scale", "autoscaling", name, [invalid_value(
            "spec.replicas", replicas, "must be greater than or equal to 0")])
    rv = (scale.get("metadata") or {}).get("resourceVersion")
    if verb == "update" and rv and rv != current["metadata"].get("resourceVersion"):
        raise errors.conflict(call.kind.plural, call.kind.group, name, errors.STALE_OBJECT)
    updated = dict(current)
    updated["spec"] = dict(current.get("spec") or {}, replicas=replicas)
    stored = rest.update_object(parent_call, updated).body
    return Result(to_scale(stored))
