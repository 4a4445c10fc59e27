"""The Node authorizer (plugin/pkg/auth/authorizer/node) for `system:node:<name>` identities, with a simplified
graph read straight from the store: a node may read the ResourceClaims, Secrets and ConfigMaps of the pods bound
to it, and only its own ResourceSlices; everything else it may do is the system:node role's rules. Which objects
it may *write* is NodeRestriction's business (dramock/admission/noderestriction.py)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from dramock.auth.attributes import ALLOW, DENY, NO_OPINION, Attributes
from dramock.auth.bootstrap_policy import node_rules
from dramock.auth.rules import rules_allow

Obj = dict[str, Any]
# Reads one object of the store: (bucket, key) -> object or None; and a bucket's (key, object) pairs.
Getter = Callable[[str, str], Obj | None]


def _pods_on(lister, node: str, namespace: str) -> list[Obj]:
    return [p for _, p in lister("pods") if (p.get("spec") or {}).get("nodeName") == node
            and (not namespace or p["metadata"].get("namespace") == namespace)]


def _claim_names(pod: Obj) -> set[str]:
    names = {s.get("resourceClaimName") for s in (pod.get("status") or {}).get("resourceClaimStatuses") or []}
    names |= {c.get("resourceClaimName") for c in (pod.get("spec") or {}).get("resourceClaims") or []}
    return {n for n in names if n}


class NodeAuthorizer:
    def __init__(self, getter: Getter, lister) -> None:
        self.get = getter
        self.list = lister
        self.rules = node_rules()

    def authorize(self, a: Attributes) -> tuple[str, str]:
        node = a.user.node_name
        if node is None:
            return NO_OPINION, ""
        if a.resource_request and a.api_group == "resource.k8s.io" and a.resource == "resourceslices":
            return self._slice(a, node)
        if a.resource_request and a.api_group == "resource.k8s.io" and a.resource == "resourceclaims" \
                and not a.subresource:
            if a.verb != "get":
                return NO_OPINION, ""
            if any(a.name in _claim_names(p) for p in _pods_on(self.list, node, a.namespace)):
                return ALLOW, ""
            return NO_OPINION, f"no relationship found between node '{node}' and this object"
        if a.resource_request and a.api_group == "" and a.resource in ("secrets", "configmaps") \
                and not a.subresource:
            if a.verb == "get" and _pods_on(self.list, node, a.namespace):
                return ALLOW, ""
            return NO_OPINION, f"no relationship found between node '{node}' and this object"
        if rules_allow(a, self.rules):
            return ALLOW, ""
        return NO_OPINION, ""

    def _slice(self, a: Attributes, node: str) -> tuple[str, str]:
        if a.verb == "create":
            return ALLOW, ""  # NodeRestriction checks spec.nodeName
        if a.verb in ("list", "watch", "deletecollection"):
            if a.field_selector.get("spec.nodeName") == node:
                return ALLOW, ""
            return DENY, "can only list/watch/deletecollection resourceslices with nodeName field selector"
        if a.verb in ("get", "update", "patch", "delete"):
            obj = self.get("resource.k8s.io/resourceslices", a.name)
            if obj is None or (obj.get("spec") or {}).get("nodeName") == node:
                return ALLOW, ""
            return NO_OPINION, f"no relationship found between node '{node}' and this object"
        return NO_OPINION, ""
