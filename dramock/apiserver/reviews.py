"""Self-review APIs: authentication.k8s.io/v1 SelfSubjectReview and authorization.k8s.io/v1
SelfSubjectAccessReview / SelfSubjectRulesReview / SubjectAccessReview. Create-only and never stored, as
upstream. They answer from the authorizer in force (dramock.auth): on the plain port every request is
`system:unsecured`, in `system:masters`, and everything is allowed."""

from __future__ import annotations

from typing import Any

from dramock import errors
from dramock.apiserver import codec
from dramock.apiserver.rest import Call, Result
from dramock.auth import user as users
from dramock.auth.attributes import ALLOW, DENY, Attributes
from dramock.auth.security import Security
from dramock.auth.user import UserInfo
from dramock.registry.kind import Kind

Obj = dict[str, Any]
REVIEW_KINDS = {("authentication.k8s.io", "SelfSubjectReview"), ("authorization.k8s.io", "SelfSubjectAccessReview"),
                ("authorization.k8s.io", "SelfSubjectRulesReview"), ("authorization.k8s.io", "SubjectAccessReview")}


def is_review(kind: Kind) -> bool:
    return (kind.group, kind.kind) in REVIEW_KINDS


def _decode(body: bytes, content_type: str, kind: Kind) -> Obj:
    """The review as sent, decoded and type-checked as any create body is."""
    return codec.decode_object(body, content_type, kind, "Ignore").obj


def _attributes(user: UserInfo, spec: Obj) -> Attributes:
    res = spec.get("resourceAttributes")
    if res:
        return Attributes(user, res.get("verb", ""), namespace=res.get("namespace", ""), api_group=res.get("group", ""),
                          resource=res.get("resource", ""), subresource=res.get("subresource", ""),
                          name=res.get("name", ""))
    nonres = spec.get("nonResourceAttributes") or {}
    return Attributes(user, nonres.get("verb", ""), resource_request=False, path=nonres.get("path", ""))


def _access_status(security: Security, attrs: Attributes) -> Obj:
    decision, reason = security.authorizer.authorize(attrs)
    status: Obj = {"allowed": decision == ALLOW}
    if decision == DENY:
        status["denied"] = True
    if reason:
        status["reason"] = reason
    elif decision == ALLOW and attrs.user.groups and "system:masters" not in attrs.user.groups:
        status["reason"] = "RBAC: allowed"
    return status


def review(call: Call, body: bytes, content_type: str, security: Security) -> Result:
    user: UserInfo = call.user or users.unsecured()
    kind = call.kind
    doc = _decode(body, content_type, kind)
    out: Obj = {"kind": kind.kind, "apiVersion": kind.api_version,
                "metadata": {"creationTimestamp": None, **{k: v for k, v in (doc.get("metadata") or {}).items()
                                                          if k in ("name", "generateName", "labels",
                                                                   "annotations")}}}
    if kind.kind == "SelfSubjectReview":
        out["status"] = {"userInfo": user.to_status()}
    elif kind.kind in ("SelfSubjectAccessReview", "SubjectAccessReview"):
        spec = doc.get("spec") or {}
        if not spec.get("resourceAttributes") and not spec.get("nonResourceAttributes"):
            raise errors.invalid(kind.kind, kind.group, "", [{
                "reason": "FieldValueRequired", "field": "spec.resourceAttributes",
                "message": "Required value: exactly one of nonResourceAttributes or resourceAttributes must be "
                           "specified"}])
        out["spec"] = spec
        if kind.kind == "SubjectAccessReview":
            if not spec.get("user") and not spec.get("groups"):
                raise errors.invalid(kind.kind, kind.group, "", [{
                    "reason": "FieldValueRequired", "field": "spec.user",
                    "message": "Required value: at least one of user or group must be specified"}])
            user = UserInfo(spec.get("user", ""), spec.get("uid", ""), list(spec.get("groups") or []),
                            dict(spec.get("extra") or {}))
        out["status"] = _access_status(security, _attributes(user, spec))
    else:
        out["spec"] = doc.get("spec") or {}
        rules, incomplete = security.authorizer.rules_for(user, out["spec"].get("namespace") or "")
        out["status"] = {"resourceRules": [{k: r[k] for k in ("verbs", "apiGroups", "resources", "resourceNames")
                                            if r.get(k) is not None} for r in rules if not r.get("nonResourceURLs")],
                         "nonResourceRules": [{"verbs": r["verbs"], "nonResourceURLs": r["nonResourceURLs"]}
                                              for r in rules if r.get("nonResourceURLs")],
                         "incomplete": incomplete}
    return Result(out, 201)
