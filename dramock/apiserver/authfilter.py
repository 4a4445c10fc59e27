"""Where the HTTP layer meets dramock.auth: the secure-port flag of a connection, its client certificate, the
authorization of resource and non-resource requests, the bootstrap RBAC policy and the TokenRequest API."""

from __future__ import annotations

from typing import Any

from aiohttp import web

from dramock import errors, timefmt
from dramock.apiserver import codec
from dramock.apiserver.rest import Call, Result
from dramock.auth import bootstrap_policy
from dramock.auth import user as users
from dramock.auth.attributes import Attributes
from dramock.auth.security import Security
from dramock.auth.tokens import DEFAULT_EXPIRATION, MIN_EXPIRATION

Obj = dict[str, Any]


def is_secure(request: web.Request) -> bool:
    transport = request.transport
    return transport is not None and transport.get_extra_info("sslcontext") is not None


def peercert(request: web.Request) -> Any:
    transport = request.transport
    return transport.get_extra_info("peercert") if transport is not None else None


def check_path(security: Security, request: web.Request) -> None:
    verb = {"HEAD": "get"}.get(request.method, request.method.lower())
    security.check(Attributes(request["user"], verb, resource_request=False, path=request.path))


def _field_selector(call: Call) -> dict[str, str]:
    out: dict[str, str] = {}
    for part in (call.param("fieldSelector") or "").split(","):
        key, sep, value = part.partition("=")
        if sep and not key.endswith("!"):
            out[key.strip()] = value.lstrip("=").strip()
    return out


def attributes(call: Call, verb: str | None = None) -> Attributes:
    return Attributes(call.user, verb or call.verb, namespace=call.namespace or "", api_group=call.kind.group,
                      resource=call.kind.plural, subresource=call.subresource, name=call.name or "",
                      field_selector=_field_selector(call))


def check_resource(security: Security, call: Call) -> None:
    if not users.privileged(call.user):  # allowed without a look at the request (nor building its Attributes)
        security.check(attributes(call))


def seed_bootstrap_policy(rest, store) -> None:
    """Create the bootstrap ClusterRoles and ClusterRoleBindings that are missing (as upstream's
    storage_rbac post-start hook does)."""
    from dramock.apiserver.app import _EMPTY_QUERY

    for plural, obj in bootstrap_policy.objects():
        kind = rest.registry.lookup(bootstrap_policy.RBAC, "v1", plural)
        assert kind is not None
        if store.get(kind.storage_bucket, obj["metadata"]["name"]) is None:
            rest.create_object(Call(kind, None, None, "", _EMPTY_QUERY, user_agent="kube-apiserver"), obj)


def token_request(security: Security, store, call: Call, body: bytes, content_type: str) -> Result:
    """serviceaccounts/token: a signed ServiceAccount JWT, bound to a Pod (and its Node) or a Node if asked."""
    if codec.media_type(content_type) == codec.PROTOBUF:
        from dramock.apiserver import protobuf

        doc = protobuf.decode(body)
    else:
        doc, _ = codec.parse_document(body, content_type or codec.JSON)
    codec.check_types(doc, "io.k8s.api.authentication.v1.TokenRequest", "TokenRequest", "v1")
    sa = store.get("serviceaccounts", f"{call.namespace}/{call.name}")
    if sa is None:
        raise errors.not_found("serviceaccounts", "", call.name or "")
    spec = doc.get("spec") or {}
    seconds = spec.get("expirationSeconds") or DEFAULT_EXPIRATION
    if not isinstance(seconds, int) or seconds < MIN_EXPIRATION or seconds > 2 ** 32:
        raise errors.invalid("TokenRequest", "authentication.k8s.io", call.name or "", [{
            "reason": "FieldValueInvalid", "field": "spec.expirationSeconds",
            "message": f"Invalid value: {seconds}: may not specify a duration less than 10 minutes"}])
    pod = node = None
    ref = spec.get("boundObjectRef") or {}
    if ref:
        if ref.get("kind") == "Pod":
            pod = store.get("pods", f"{call.namespace}/{ref.get('name')}")
            if pod is None or (ref.get("uid") and pod["metadata"].get("uid") != ref["uid"]):
                raise errors.not_found("pods", "", ref.get("name") or "")
            node_name = (pod.get("spec") or {}).get("nodeName")
            node = store.get("nodes", node_name) if node_name else None
        elif ref.get("kind") == "Node":
            node = store.get("nodes", ref.get("name") or "")
            if node is None:
                raise errors.not_found("nodes", "", ref.get("name") or "")
        else:
            raise errors.bad_request(f'cannot bind token for serviceaccount "{call.name}" to object of kind '
                                     f'"{ref.get("kind")}"')
    token, expiry = security.issuer.issue(call.namespace or "", sa, list(spec.get("audiences") or []), seconds,
                                          pod, node)
    out_spec = {"audiences": list(spec.get("audiences") or security.issuer.audiences),
                "expirationSeconds": seconds, **({"boundObjectRef": ref} if ref else {})}
    created = timefmt.now()
    return Result({"kind": "TokenRequest", "apiVersion": "authentication.k8s.io/v1",
                   "metadata": {"name": call.name, "namespace": call.namespace, "creationTimestamp": created},
                   "spec": out_spec,
                   "status": {"token": token, "expirationTimestamp": timefmt.format_time(expiry)}}, 201)


def admission_plugins(security: Security) -> list[Any]:
    from dramock.admission.claimstatus import ClaimStatusAuthorization
    from dramock.admission.noderestriction import NodeRestriction
    from dramock.auth.escalation import EscalationCheck

    return [NodeRestriction(), EscalationCheck(security.authorizer), ClaimStatusAuthorization(security.authorizer)]
