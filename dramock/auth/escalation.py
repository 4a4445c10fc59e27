"""Privilege-escalation prevention on RBAC writes (pkg/registry/rbac): a Role or ClusterRole may grant only
rules its author holds, unless the author may `escalate` it; a binding may reference only a role whose rules
its author holds, unless the author may `bind` it."""

from __future__ import annotations

import json
from typing import Any

from dramock import errors
from dramock.auth import user as users
from dramock.auth.attributes import Attributes
from dramock.auth.authorizer import Authorizer
from dramock.auth.rules import Rule, covers

Obj = dict[str, Any]
RBAC = "rbac.authorization.k8s.io"


def _rule_text(r: Rule) -> str:
    """A rule as upstream's PolicyRule.CompactString prints it in escalation errors."""
    parts = []
    for key, name in (("apiGroups", "APIGroups"), ("resources", "Resources"), ("resourceNames", "ResourceNames"),
                      ("nonResourceURLs", "NonResourceURLs"), ("verbs", "Verbs")):
        if r.get(key):
            parts.append(f"{name}:{json.dumps(r[key]).replace(', ', ' ')}")
    return "{" + ", ".join(parts) + "}"


class EscalationCheck:
    def __init__(self, authorizer: Authorizer) -> None:
        self.authorizer = authorizer

    def admit(self, call, obj: Obj | None, old: Obj | None) -> None:
        user = getattr(call, "user", None)
        kind = call.kind
        if user is None or obj is None or kind.group != RBAC or users.privileged(user):
            return
        ns = call.namespace or ""
        name = obj.get("metadata", {}).get("name", "")
        if kind.plural in ("roles", "clusterroles"):
            if self._may(user, "escalate", kind.plural, ns, name):
                return
            rules = obj.get("rules") or []
            if kind.plural == "clusterroles" and obj.get("aggregationRule"):
                rules = self.authorizer.rbac.cluster_role_rules(obj, self.authorizer.rbac._cluster_roles())
            self._require(call, user, ns, rules, name)
        elif kind.plural in ("rolebindings", "clusterrolebindings"):
            ref = obj.get("roleRef") or {}
            role_plural = "clusterroles" if ref.get("kind") == "ClusterRole" else "roles"
            if self._may(user, "bind", role_plural, ns if role_plural == "roles" else ns, ref.get("name", "")):
                return
            self._require(call, user, ns, self._role_rules(ref, ns), name)

    def _may(self, user, verb: str, plural: str, ns: str, name: str) -> bool:
        return self.authorizer.allowed(Attributes(user, verb, namespace=ns, api_group=RBAC, resource=plural,
                                                  name=name))

    def _role_rules(self, ref: Obj, ns: str) -> list[Rule]:
        rbac = self.authorizer.rbac
        if ref.get("kind") == "ClusterRole":
            roles = rbac._cluster_roles()
            role = roles.get(ref.get("name", ""))
            return rbac.cluster_role_rules(role, roles) if role else []
        for _, r in rbac.list(f"{RBAC}/roles"):
            if r["metadata"].get("namespace") == ns and r["metadata"]["name"] == ref.get("name"):
                return r.get("rules") or []
        return []

    def _require(self, call, user, ns: str, rules: list[Rule], name: str) -> None:
        held, _ = self.authorizer.rules_for(user, ns)
        missing = [r for r in rules if not covers(held, r)]
        if missing:
            groups = json.dumps(user.groups).replace(", ", " ")
            raise errors.forbidden(call.kind.plural, call.kind.group, name,
                                   f'user "{user.name}" (groups={groups}) is attempting to grant RBAC permissions '
                                   f"not currently held:\n" + "\n".join(_rule_text(r) for r in missing))
