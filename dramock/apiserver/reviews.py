"""Self-review APIs: authentication.k8s.io/v1 SelfSubjectReview and authorization.k8s.io/v1
SelfSubjectAccessReview / SelfSubjectRulesReview. Create-only and never stored, as upstream. They answer from
the authorization in force; dramock has no authentication or authorization yet, so every request comes from
the user an unsecured kube-apiserver port used to assign (`system:unsecured`, in `system:masters`) and
everything is allowed."""

from __future__ import annotations

from typing import Any

from dramock import errors
from dramock.apiserver import codec
from dramock.apiserver.rest import Call, Result
from dramock.schemas.registry import Kind

Obj = dict[str, Any]
USER = {"username": "system:unsecured", "groups": ["system:masters", "system:authenticated"]}
REVIEW_KINDS = {("authentication.k8s.io", "SelfSubjectReview"), ("authorization.k8s.io", "SelfSubjectAccessReview"),
                ("authorization.k8s.io", "SelfSubjectRulesReview")}


def is_review(kind: Kind) -> bool:
    return (kind.group, kind.kind) in REVIEW_KINDS


def _decode(body: bytes, content_type: str, kind: Kind) -> Obj:
    """The review as sent, decoded and type-checked as any create body is."""
    return codec.decode_object(body, content_type, kind, "Ignore").obj


def review(call: Call, body: bytes, content_type: str) -> Result:
    kind = call.kind
    doc = _decode(body, content_type, kind)
    out: Obj = {"kind": kind.kind, "apiVersion": kind.api_version,
                "metadata": {"creationTimestamp": None, **{k: v for k, v in (doc.get("metadata") or {}).items()
                                                          if k in ("name", "generateName", "labels",
                                                                   "annotations")}}}
    if kind.kind == "SelfSubjectReview":
        out["status"] = {"userInfo": dict(USER)}
    elif kind.kind == "SelfSubjectAccessReview":
        spec = doc.get("spec") or {}
        if not spec.get("resourceAttributes") and not spec.get("nonResourceAttributes"):
            raise errors.invalid(kind.kind, kind.group, "", [{
                "reason": "FieldValueRequired", "field": "spec.resourceAttributes",
                "message": "Required value: exactly one of nonResourceAttributes or resourceAttributes must be "
                           "specified"}])
        out["spec"] = spec
        out["status"] = {"allowed": True, "reason": "dramock runs without authorization: everything is allowed"}
    else:
        out["spec"] = doc.get("spec") or {}
        out["status"] = {"resourceRules": [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}],
                         "nonResourceRules": [{"verbs": ["*"], "nonResourceURLs": ["*"]}],
                         "incomplete": False}
    return Result(out, 201)
