"""The RBAC authorizer (plugin/pkg/auth/authorizer/rbac): the rules of every ClusterRoleBinding, and in a
namespace of every RoleBinding there, whose subjects include the user. ClusterRoles with an aggregationRule
get the rules of the ClusterRoles their selectors match, evaluated here at read time."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from dramock.auth import user as users
from dramock.auth.attributes import ALLOW, NO_OPINION, Attributes
from dramock.auth.rules import Rule, rules_allow
from dramock.auth.user import UserInfo
from dramock.schemas.labelselector import matches as selector_matches

Obj = dict[str, Any]
RBAC = "rbac.authorization.k8s.io"
# Reads a bucket of the store: bucket -> (key, object) pairs.
Lister = Callable[[str], Iterable[tuple[str, Obj]]]


def subject_matches(subject: Obj, user: UserInfo, binding_ns: str) -> bool:
    kind = subject.get("kind")
    name = subject.get("name", "")
    if kind == "User":
        return name == user.name
    if kind == "Group":
        return name in user.groups
    if kind == "ServiceAccount":
        ns = subject.get("namespace") or binding_ns
        return user.name == users.service_account_user(ns, name)
    return False


class RBACAuthorizer:
    def __init__(self, lister: Lister) -> None:
        self.list = lister

    def _cluster_roles(self) -> dict[str, Obj]:
        return {obj["metadata"]["name"]: obj for _, obj in self.list(f"{RBAC}/clusterroles")}

    @staticmethod
    def cluster_role_rules(role: Obj, all_roles: dict[str, Obj]) -> list[Rule]:
        aggregation = role.get("aggregationRule")
        if not aggregation:
            return list(role.get("rules") or [])
        out: list[Rule] = []
        for sel in aggregation.get("clusterRoleSelectors") or []:
            for other in all_roles.values():
                if other is role:
                    continue
                if selector_matches(sel, (other.get("metadata") or {}).get("labels") or {}):
                    out += [r for r in other.get("rules") or [] if r not in out]
        return out

    def rules_for(self, user: UserInfo, namespace: str) -> list[Rule]:
        """Every rule applying to `user` in `namespace` ("" for cluster-scoped and non-resource requests)."""
        roles = self._cluster_roles()
        out: list[Rule] = []
        for _, b in self.list(f"{RBAC}/clusterrolebindings"):
            if any(subject_matches(s, user, "") for s in b.get("subjects") or []):
                role = roles.get(b["roleRef"]["name"])
                if role is not None:
                    out += self.cluster_role_rules(role, roles)
        if namespace:
            for _, b in self.list(f"{RBAC}/rolebindings"):
                if b["metadata"].get("namespace") != namespace:
                    continue
                if not any(subject_matches(s, user, namespace) for s in b.get("subjects") or []):
                    continue
                ref = b["roleRef"]
                if ref.get("kind") == "ClusterRole":
                    role = roles.get(ref["name"])
                    if role is not None:
                        out += self.cluster_role_rules(role, roles)
                else:
                    for _, r in self.list(f"{RBAC}/roles"):
                        if r["metadata"].get("namespace") == namespace and r["metadata"]["name"] == ref["name"]:
                            out += r.get("rules") or []
        return out

    def authorize(self, a: Attributes) -> tuple[str, str]:
        if rules_allow(a, self.rules_for(a.user, a.namespace)):
            return ALLOW, ""
        return NO_OPINION, ""
