"""kube-apiserver's bootstrap RBAC policy (plugin/pkg/auth/authorizer/rbac/bootstrappolicy), as data: the
cluster roles and bindings created at start, labelled kubernetes.io/bootstrapping=rbac-defaults and
auto-updated (annotation rbac.authorization.kubernetes.io/autoupdate). Trimmed to the API groups dramock
serves, plus the groups the roles name for completeness."""

from __future__ import annotations

from typing import Any

from dramock.auth import user as users

Obj = dict[str, Any]

READ = ["get", "list", "watch"]
READ_WRITE = ["get", "list", "watch", "create", "update", "patch", "delete", "deletecollection"]
CORE, APPS, BATCH, RBAC, RESOURCE = "", "apps", "batch", "rbac.authorization.k8s.io", "resource.k8s.io"
COORD, EVENTS = "coordination.k8s.io", "events.k8s.io"
AUTHN, AUTHZ = "authentication.k8s.io", "authorization.k8s.io"


def rule(verbs: list[str], groups: list[str], resources: list[str], names: list[str] | None = None) -> Obj:
    r: Obj = {"verbs": verbs, "apiGroups": groups, "resources": resources}
    if names:
        r["resourceNames"] = names
    return r


def urls(verbs: list[str], paths: list[str]) -> Obj:
    return {"verbs": verbs, "nonResourceURLs": paths}


def _events() -> Obj:
    return rule(["create", "update", "patch"], [CORE, EVENTS], ["events"])


def node_rules() -> list[Obj]:
    """The system:node role's rules, which the Node authorizer applies to node identities."""
    return [
        rule(["create", "get", "list", "watch"], [CORE], ["nodes"]),
        rule(["update", "patch"], [CORE], ["nodes/status"]),
        rule(["update", "patch", "delete"], [CORE], ["nodes"]),
        rule(["create", "update", "patch"], [CORE, EVENTS], ["events"]),
        rule(READ, [CORE], ["pods"]),
        rule(["create", "delete"], [CORE], ["pods"]),
        rule(["update", "patch"], [CORE], ["pods/status"]),
        rule(["create"], [CORE], ["pods/eviction"]),
        rule(READ, [CORE], ["services"]),
        rule(["get"], [CORE], ["endpoints"]),
        rule(["get", "list", "watch"], [CORE], ["configmaps", "secrets"]),
        rule(["get"], [CORE], ["persistentvolumeclaims", "persistentvolumes"]),
        rule(["update", "patch"], [CORE], ["persistentvolumeclaims/status"]),
        rule(["create"], [CORE], ["serviceaccounts/token"]),
        rule(["get", "create", "update", "patch", "delete"], [COORD], ["leases"]),
        rule(["get"], [RESOURCE], ["resourceclaims"]),
        rule([*READ, "create", "update", "patch", "delete", "deletecollection"], [RESOURCE], ["resourceslices"]),
        # dramock's own: the kubelet shims ask the server whether a kubelet-side fault fires (dramock.faults).
        urls(["get", "post"], ["/dramock/faults", "/dramock/faults/fire"]),
    ]


def _aggregate_label(to: str) -> Obj:
    return {f"rbac.authorization.k8s.io/aggregate-to-{to}": "true"}


def cluster_roles() -> list[Obj]:
    def role(name: str, rules: list[Obj], labels: Obj | None = None, aggregate_from: list[str] | None = None) -> Obj:
        obj: Obj = {"name": name, "rules": rules, "labels": labels or {}}
        if aggregate_from:
            obj["aggregationRule"] = {"clusterRoleSelectors": [{"matchLabels": _aggregate_label(t)}
                                                               for t in aggregate_from]}
        return obj

    workloads = ["deployments", "deployments/scale", "deployments/rollback", "replicasets", "replicasets/scale",
                 "statefulsets", "statefulsets/scale", "daemonsets", "controllerrevisions"]
    dra_user = ["resourceclaims", "resourceclaimtemplates"]
    return [
        role("cluster-admin", [rule(["*"], ["*"], ["*"]), urls(["*"], ["*"])]),
        role("system:discovery", [urls(["get"], ["/api", "/api/*", "/apis", "/apis/*", "/healthz", "/livez",
                                                 "/openapi", "/openapi/*", "/readyz", "/version", "/version/"])]),
        role("system:basic-user", [
            rule(["create"], [AUTHZ], ["selfsubjectaccessreviews", "selfsubjectrulesreviews"]),
            rule(["create"], [AUTHN], ["selfsubjectreviews"])]),
        role("system:public-info-viewer", [urls(["get"], ["/healthz", "/livez", "/readyz", "/version",
                                                          "/version/"])]),
        # The user-facing roles are aggregated from the aggregate-to-* roles below (and any a user labels).
        role("admin", [], aggregate_from=["admin"]),
        role("edit", [], labels=_aggregate_label("admin"), aggregate_from=["edit"]),
        role("view", [], labels=_aggregate_label("edit"), aggregate_from=["view"]),
        role("system:aggregate-to-admin", [
            rule(["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"], [RBAC],
                 ["rolebindings", "roles"]),
            rule(["create"], [AUTHZ], ["localsubjectaccessreviews"])], labels=_aggregate_label("admin")),
        role("system:aggregate-to-edit", [
            rule(["create", "delete", "deletecollection", "patch", "update"], [CORE],
                 ["pods", "pods/attach", "pods/exec", "pods/portforward", "pods/proxy"]),
            rule(["create"], [CORE], ["pods/eviction"]),
            rule(["create", "delete", "deletecollection", "patch", "update"], [CORE],
                 ["configmaps", "events", "persistentvolumeclaims", "replicationcontrollers",
                  "replicationcontrollers/scale", "secrets", "serviceaccounts", "services", "services/proxy",
                  "endpoints"]),
            rule(["create"], [CORE], ["serviceaccounts/token"]),
            rule(["create", "delete", "deletecollection", "patch", "update"], [APPS], workloads),
            rule(["create", "delete", "deletecollection", "patch", "update"], [BATCH], ["jobs", "cronjobs"]),
            rule(["create", "delete", "deletecollection", "patch", "update"], [RESOURCE], dra_user)],
            labels=_aggregate_label("edit")),
        role("system:aggregate-to-view", [
            rule(READ, [CORE], ["configmaps", "endpoints", "persistentvolumeclaims", "persistentvolumeclaims/status",
                                "pods", "replicationcontrollers", "replicationcontrollers/scale",
                                "serviceaccounts", "services", "services/status"]),
            rule(READ, [CORE], ["bindings", "events", "limitranges", "namespaces/status", "pods/log",
                                "pods/status", "replicationcontrollers/status", "resourcequotas",
                                "resourcequotas/status"]),
            rule(READ, [CORE], ["namespaces"]),
            rule(READ, [APPS], [*workloads, "daemonsets/status", "deployments/status", "replicasets/status",
                                "statefulsets/status"]),
            rule(READ, [BATCH], ["cronjobs", "cronjobs/status", "jobs", "jobs/status"]),
            rule(READ, [RESOURCE], [*dra_user, "resourceclaims/status"])],
            labels=_aggregate_label("view")),
        role("system:node", node_rules()),
        role("system:kube-scheduler", [
            _events(),
            rule(["create"], [COORD], ["leases"]),
            rule(["get", "update"], [COORD], ["leases"], names=["kube-scheduler"]),
            rule(["delete", "get", "list", "watch"], [CORE], ["pods"]),
            rule(["create"], [CORE], ["pods/binding", "bindings"]),
            rule(["patch", "update"], [CORE], ["pods/status"]),
            rule(READ, [CORE], ["nodes", "namespaces", "services", "persistentvolumeclaims", "persistentvolumes",
                                "replicationcontrollers", "configmaps"]),
            rule(READ, [APPS], ["replicasets", "statefulsets"]),
            rule(["create"], [AUTHN], ["tokenreviews"]),
            rule(["create"], [AUTHZ], ["subjectaccessreviews"]),
            rule(READ, [RESOURCE], ["resourceclaims", "resourceclaimtemplates", "deviceclasses",
                                    "resourceslices", "devicetaintrules"]),
            rule(["patch", "update"], [RESOURCE], ["resourceclaims", "resourceclaims/status"]),
            # Claims for extended resources backed by DRA (DRAExtendedResource) are the scheduler's own.
            rule(["create", "delete"], [RESOURCE], ["resourceclaims"]),
            rule(["update"], [RESOURCE], ["resourceclaims/binding"]),
            # Workload-aware scheduling (GenericWorkload); the scheduler reads PodGroups for their claims.
            rule(READ, ["scheduling.k8s.io"], ["podgroups", "workloads"]),
        ]),
        role("system:kube-controller-manager", [
            _events(),
            rule(["create"], [COORD], ["leases"]),
            rule(["get", "update"], [COORD], ["leases"], names=["kube-controller-manager"]),
            rule(["create"], [CORE], ["secrets", "serviceaccounts"]),
            rule(["delete"], [CORE], ["secrets"]),
            rule(["get"], [CORE], ["namespaces", "secrets", "serviceaccounts"]),
            rule(["update"], [CORE], ["secrets", "serviceaccounts"]),
            rule(["create"], [AUTHN], ["tokenreviews"]),
            rule(["create"], [AUTHZ], ["subjectaccessreviews"]),
            rule(["list", "watch"], ["*"], ["*"]),
            rule(["create"], [CORE], ["serviceaccounts/token"]),
        ]),
    ]


def cluster_role_bindings() -> list[Obj]:
    def bind(role: str, groups: list[str] = (), user_names: list[str] = ()) -> Obj:  # type: ignore[assignment]
        subjects = [{"kind": "Group", "apiGroup": RBAC, "name": g} for g in groups] + \
                   [{"kind": "User", "apiGroup": RBAC, "name": u} for u in user_names]
        return {"name": role, "role": role, "subjects": subjects}

    return [
        bind("cluster-admin", [users.MASTERS]),
        bind("system:discovery", [users.AUTHENTICATED]),
        bind("system:basic-user", [users.AUTHENTICATED]),
        bind("system:public-info-viewer", [users.AUTHENTICATED, users.UNAUTHENTICATED]),
        bind("system:node", []),  # kept without subjects: nodes are authorized by the Node authorizer
        bind("system:kube-scheduler", user_names=[users.KUBE_SCHEDULER]),
        bind("system:kube-controller-manager", user_names=[users.KUBE_CONTROLLER_MANAGER]),
    ]


_META_LABELS = {"kubernetes.io/bootstrapping": "rbac-defaults"}
_META_ANNOTATIONS = {"rbac.authorization.kubernetes.io/autoupdate": "true"}


def objects() -> list[tuple[str, Obj]]:
    """(plural, object) of every bootstrap ClusterRole and ClusterRoleBinding, in rbac/v1 shape."""
    out: list[tuple[str, Obj]] = []
    for r in cluster_roles():
        obj: Obj = {"apiVersion": f"{RBAC}/v1", "kind": "ClusterRole",
                    "metadata": {"name": r["name"], "labels": {**_META_LABELS, **r["labels"]},
                                 "annotations": dict(_META_ANNOTATIONS)},
                    "rules": r["rules"]}
        if "aggregationRule" in r:
            obj["aggregationRule"] = r["aggregationRule"]
        out.append(("clusterroles", obj))
    for b in cluster_role_bindings():
        obj = {"apiVersion": f"{RBAC}/v1", "kind": "ClusterRoleBinding",
               "metadata": {"name": b["name"], "labels": dict(_META_LABELS), "annotations": dict(_META_ANNOTATIONS)},
               "roleRef": {"apiGroup": RBAC, "kind": "ClusterRole", "name": b["role"]}}
        if b["subjects"]:
            obj["subjects"] = b["subjects"]
        out.append(("clusterrolebindings", obj))
    return out
