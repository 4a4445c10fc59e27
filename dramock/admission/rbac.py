"""Strategies of the rbac.authorization.k8s.io kinds: names are path segments (ValidateRBACName), as the
bootstrap roles' `system:` names need; a binding's roleRef cannot change (pkg/apis/rbac/validation)."""

from __future__ import annotations

from typing import Any

from dramock.admission.strategy import Cause, Strategy

Obj = dict[str, Any]


def validate_path_segment(value: str, path: str) -> list[Cause]:
    if value in (".", ".."):
        return [{"reason": "FieldValueInvalid", "field": path,
                 "message": f'Invalid value: "{value}": may not be \'{value}\''}]
    for bad in ("/", "%"):
        if bad in value:
            return [{"reason": "FieldValueInvalid", "field": path,
                     "message": f'Invalid value: "{value}": may not contain \'{bad}\''}]
    return []


class RoleStrategy(Strategy):
    name_check = staticmethod(validate_path_segment)


class BindingStrategy(Strategy):
    name_check = staticmethod(validate_path_segment)

    def validate_semantic(self, obj: Obj) -> list[Cause]:
        ref = obj.get("roleRef") or {}
        causes = []
        if ref.get("kind") not in ("Role", "ClusterRole") or (self.kind.plural == "clusterrolebindings"
                                                               and ref.get("kind") != "ClusterRole"):
            causes.append({"reason": "FieldValueNotSupported", "field": "roleRef.kind",
                           "message": f'Unsupported value: "{ref.get("kind", "")}"'})
        if not ref.get("name"):
            causes.append({"reason": "FieldValueRequired", "field": "roleRef.name", "message": "Required value"})
        return causes

    def validate_semantic_update(self, new: Obj, old: Obj) -> list[Cause]:
        if new.get("roleRef") != old.get("roleRef"):
            return [{"reason": "FieldValueInvalid", "field": "roleRef",
                     "message": "Invalid value: cannot change roleRef"}]
        return self.validate_semantic(new)


STRATEGIES = {"roles": RoleStrategy, "clusterroles": RoleStrategy, "rolebindings": BindingStrategy,
              "clusterrolebindings": BindingStrategy}
