"""The four rbac.authorization.k8s.io kinds (upstream's pkg/registry/rbac): Roles and ClusterRoles,
RoleBindings and ClusterRoleBindings. Names are path segments; validation is schemas/validation/rbac.py.
Enforced on the secure port by dramock/auth."""

from __future__ import annotations

from typing import Any

from dramock.registry.kind import Kind
from dramock.registry.strategy import Strategy
from dramock.schemas.validation.field import Cause
from dramock.schemas.validation.rbac import (
    validate_path_segment,
    validate_role_binding,
    validate_role_binding_update,
)

Obj = dict[str, Any]
GROUP = "rbac.authorization.k8s.io"


class RoleStrategy(Strategy):
    name_check = staticmethod(validate_path_segment)


class BindingStrategy(Strategy):
    name_check = staticmethod(validate_path_segment)

    @property
    def cluster(self) -> bool:
        return not self.kind.namespaced

    def validate_semantic(self, obj: Obj) -> list[Cause]:
        return validate_role_binding(obj, self.cluster)

    def validate_semantic_update(self, new: Obj, old: Obj) -> list[Cause]:
        return validate_role_binding_update(new, old, self.cluster)


KINDS = (
    Kind(GROUP, "v1", "ClusterRole", "clusterroles", False, strategy=RoleStrategy),
    Kind(GROUP, "v1", "ClusterRoleBinding", "clusterrolebindings", False, strategy=BindingStrategy),
    Kind(GROUP, "v1", "Role", "roles", True, strategy=RoleStrategy),
    Kind(GROUP, "v1", "RoleBinding", "rolebindings", True, strategy=BindingStrategy),
)
