"""Who a request comes from: upstream's user.Info and the well-known names and groups."""

from __future__ import annotations

from dataclasses import dataclass, field

ANONYMOUS = "system:anonymous"
UNAUTHENTICATED = "system:unauthenticated"
AUTHENTICATED = "system:authenticated"
MASTERS = "system:masters"
NODES = "system:nodes"
NODE_PREFIX = "system:node:"
SERVICEACCOUNT_PREFIX = "system:serviceaccount:"
SERVICEACCOUNTS = "system:serviceaccounts"
# kube-apiserver's old insecure port made every request this user (in system:masters).
UNSECURED = "system:unsecured"
KUBE_SCHEDULER = "system:kube-scheduler"
KUBE_CONTROLLER_MANAGER = "system:kube-controller-manager"
# Extra keys a ServiceAccount token bound to a pod adds (upstream's serviceaccount.*Key).
EXTRA_POD_NAME = "authentication.kubernetes.io/pod-name"
EXTRA_POD_UID = "authentication.kubernetes.io/pod-uid"
EXTRA_NODE_NAME = "authentication.kubernetes.io/node-name"
EXTRA_NODE_UID = "authentication.kubernetes.io/node-uid"
EXTRA_CREDENTIAL_ID = "authentication.kubernetes.io/credential-id"


@dataclass
class UserInfo:
    name: str
    uid: str = ""
    groups: list[str] = field(default_factory=list)
    extra: dict[str, list[str]] = field(default_factory=dict)

    def to_status(self) -> dict:
        """The authentication.k8s.io/v1 UserInfo of a SelfSubjectReview."""
        out: dict = {"username": self.name}
        if self.uid:
            out["uid"] = self.uid
        if self.groups:
            out["groups"] = list(self.groups)
        if self.extra:
            out["extra"] = {k: list(v) for k, v in self.extra.items()}
        return out

    @property
    def node_name(self) -> str | None:
        """The node of a `system:node:<name>` identity in system:nodes, else None."""
        if self.name.startswith(NODE_PREFIX) and NODES in self.groups:
            return self.name[len(NODE_PREFIX):]
        return None


def privileged(user: UserInfo) -> bool:
    """In system:masters, which every authorizer allows before asking anything else (as upstream's)."""
    return MASTERS in user.groups


def unsecured() -> UserInfo:
    return UserInfo(UNSECURED, groups=[MASTERS, AUTHENTICATED])


def anonymous() -> UserInfo:
    return UserInfo(ANONYMOUS, groups=[UNAUTHENTICATED])


def service_account_user(namespace: str, name: str) -> str:
    return f"{SERVICEACCOUNT_PREFIX}{namespace}:{name}"


def service_account_groups(namespace: str) -> list[str]:
    return [SERVICEACCOUNTS, f"{SERVICEACCOUNTS}:{namespace}", AUTHENTICATED]


def split_service_account(username: str) -> tuple[str, str] | None:
    """(namespace, name) of `system:serviceaccount:NS:NAME`, else None."""
    if not username.startswith(SERVICEACCOUNT_PREFIX):
        return None
    parts = username[len(SERVICEACCOUNT_PREFIX):].split(":")
    return (parts[0], parts[1]) if len(parts) == 2 and all(parts) else None
