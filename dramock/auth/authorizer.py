"""The authorizer chain of the secure port (--authorization-mode): system:masters first, as kube-apiserver's
privileged-groups authorizer, then Node, RBAC or AlwaysAllow in the order given; the first Allow or Deny wins."""

from __future__ import annotations

from dramock.auth import user as users
from dramock.auth.attributes import ALLOW, DENY, NO_OPINION, Attributes
from dramock.auth.authz_node import NodeAuthorizer
from dramock.auth.authz_rbac import RBACAuthorizer
from dramock.auth.rules import Rule

MODES = ("AlwaysAllow", "AlwaysDeny", "Node", "RBAC")


class ModeError(ValueError):
    pass


def parse_modes(spec: str) -> list[str]:
    modes = [m.strip() for m in spec.split(",") if m.strip()]
    for m in modes:
        if m not in MODES:
            raise ModeError(f'authorization-mode "{m}" is not a valid mode')
    if not modes:
        raise ModeError("at least one authorization-mode must be passed")
    return modes


class Authorizer:
    def __init__(self, modes: list[str], store) -> None:
        self.modes = modes
        lister = lambda bucket: store.list(bucket)  # noqa: E731
        self.rbac = RBACAuthorizer(lister)
        self.node = NodeAuthorizer(store.get, lister)

    def authorize(self, a: Attributes) -> tuple[str, str]:
        if users.privileged(a.user):
            return ALLOW, ""
        reasons = []
        for mode in self.modes:
            if mode == "AlwaysAllow":
                return ALLOW, ""
            if mode == "AlwaysDeny":
                return DENY, "Everything is forbidden."
            decision, reason = (self.node if mode == "Node" else self.rbac).authorize(a)
            if decision != NO_OPINION:
                return decision, reason
            if reason:
                reasons.append(reason)
        return NO_OPINION, "\n".join(reasons)

    def allowed(self, a: Attributes) -> bool:
        return self.authorize(a)[0] == ALLOW

    def rules_for(self, user: users.UserInfo, namespace: str) -> tuple[list[Rule], bool]:
        """(rules, incomplete) for a SelfSubjectRulesReview: what RBAC grants; incomplete when another
        mode (Node) may allow more than it can list."""
        if users.privileged(user) or "AlwaysAllow" in self.modes:
            return [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]},
                    {"verbs": ["*"], "nonResourceURLs": ["*"]}], False
        rules = self.rbac.rules_for(user, namespace) if "RBAC" in self.modes else []
        return rules, bool(user.node_name) and "Node" in self.modes
