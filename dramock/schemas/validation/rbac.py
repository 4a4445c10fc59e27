"""rbac.authorization.k8s.io validation (upstream's pkg/apis/rbac/validation): names are path segments
(ValidateRBACName), as the bootstrap roles' `system:` names need; a binding's roleRef names a Role or
ClusterRole (only a ClusterRole for a ClusterRoleBinding) and cannot change."""

from __future__ import annotations

from dramock.schemas.validation.field import Cause, Obj


def validate_path_segment(value: str, path: str) -> list[Cause]:
    if value in (".", ".."):
        return [{"reason": "FieldValueInvalid", "field": path,
                 "message": f'Invalid value: "{value}": may not be \'{value}\''}]
    for bad in ("/", "%"):
        if bad in value:
            return [{"reason": "FieldValueInvalid", "field": path,
                     "message": f'Invalid value: "{value}": may not contain \'{bad}\''}]
    return []


def validate_role_binding(obj: Obj, cluster: bool) -> list[Cause]:
    ref = obj.get("roleRef") or {}
    causes = []
    if ref.get("kind") not in ("Role", "ClusterRole") or (cluster and ref.get("kind") != "ClusterRole"):
        causes.append({"reason": "FieldValueNotSupported", "field": "roleRef.kind",
                       "message": f'Unsupported value: "{ref.get("kind", "")}"'})
    if not ref.get("name"):
        causes.append({"reason": "FieldValueRequired", "field": "roleRef.name", "message": "Required value"})
    return causes


def validate_role_binding_update(new: Obj, old: Obj, cluster: bool) -> list[Cause]:
    if new.get("roleRef") != old.get("roleRef"):
        return [{"reason": "FieldValueInvalid", "field": "roleRef",
                 "message": "Invalid value: cannot change roleRef"}]
    return validate_role_binding(new, cluster)
