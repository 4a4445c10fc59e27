"""The DRA parts of Pod validation, as upstream's pkg/apis/core/validation does them.

- `spec.resourceClaims`: name (DNS label, unique), exactly one of resourceClaimName /
  resourceClaimTemplateName, each a valid ResourceClaim(Template) name.
- `spec.{containers,initContainers,ephemeralContainers}[*].resources.claims`: each entry names a pod
  claim, entries are unique (a whole claim also conflicts with one of its requests); and
  `spec.resources.claims` (pod-level resources) is forbidden.
- `status.resourceClaimStatuses` and `status.extendedResourceClaimStatus` (validated on status updates).
- the essentials of ValidatePod / ValidatePodUpdate that matter here: containers are required, and after
  creation only a few spec fields may change.
"""

from __future__ import annotations

from typing import Any

from dramock.jsonvalue import clone
from dramock.schemas.validation.field import (
    Cause,
    Obj,
    _dict,
    _list,
    _str,
    child,
    duplicate,
    forbidden,
    index,
    invalid_raw,
    invalid_value,
    not_found,
    required,
    semantic_equal,
)
from dramock.schemas.validation.names import is_dns1123_subdomain, validate_dns1123_label

CONTAINER_KINDS = ("containers", "initContainers", "ephemeralContainers")


def _go_string_ptr(value: Any) -> str:
    return "(*string)(nil)" if value is None else f'"{value}"'


def _go_claim_reference(go_type: str, claim: Obj) -> str:
    """Go's %#v of a claim reference (core.PodResourceClaim, scheduling.PodGroupResourceClaim), as upstream
    prints it for the one-of errors."""
    return (f'{go_type}{{Name:"{_str(claim.get("name"))}", '
            f'ResourceClaimName:{_go_string_ptr(claim.get("resourceClaimName"))}, '
            f'ResourceClaimTemplateName:{_go_string_ptr(claim.get("resourceClaimTemplateName"))}}}')


def validate_unique_label_name(name: str, names: set[str], path: str) -> list[Cause]:
    """A required DNS-label name, unique among `names` (which collects the valid ones seen so far)."""
    if not name:
        return [required(path)]
    if name in names:
        return [duplicate(path, name)]
    names.add(name)
    return validate_dns1123_label(name, path)


def validate_claim_reference(claim: Obj, names: set[str], path: str,
                             go_type: str = "core.PodResourceClaim") -> list[Cause]:
    """A named reference to a ResourceClaim or ResourceClaimTemplate (a pod's or a PodGroup's): a unique DNS
    label name and exactly one of the two names. `names` collects the names seen so far."""
    errs = validate_unique_label_name(_str(claim.get("name")), names, child(path, "name"))
    claim_name, template_name = claim.get("resourceClaimName"), claim.get("resourceClaimTemplateName")
    if claim_name is not None and template_name is not None:
        errs.append(invalid_raw(path, _go_claim_reference(go_type, claim),
                                "at most one of `resourceClaimName` or `resourceClaimTemplateName` may be specified"))
    if claim_name is None and template_name is None:
        errs.append(invalid_raw(path, _go_claim_reference(go_type, claim),
                                "must specify one of: `resourceClaimName`, `resourceClaimTemplateName`"))
    if claim_name is not None:
        errs += [invalid_value(child(path, "resourceClaimName"), _str(claim_name), m)
                 for m in is_dns1123_subdomain(_str(claim_name))]
    if template_name is not None:
        errs += [invalid_value(child(path, "resourceClaimTemplateName"), _str(template_name), m)
                 for m in is_dns1123_subdomain(_str(template_name))]
    return errs


def _validate_container_claims(claims: list, pod_claim_names: set[str], path: str) -> list[Cause]:
    """validateResourceClaimNames."""
    errs: list[Cause] = []
    seen: set[str] = set()
    for i, claim in enumerate(claims):
        claim = _dict(claim)
        p = index(path, i)
        name = _str(claim.get("name"))
        if not name:
            errs.append(required(p))
            continue
        if name in seen:
            # All requests of that claim are already referenced.
            errs.append(duplicate(p, name))
        else:
            key = name
            request = _str(claim.get("request"))
            if request:
                errs += validate_dns1123_label(request, child(p, "request"))
                key += "/" + request
            if key in seen:
                errs.append(duplicate(p, key))
            elif not request:
                # The whole claim overlaps with a request of it referenced before.
                for other in seen:
                    if "/" in other and other.split("/", 1)[0] == name:
                        errs.append(duplicate(p, name))
            seen.add(key)
        if name not in pod_claim_names:
            detail = "must be one of the names in pod.spec.resourceClaims"
            detail += ": " + ", ".join(sorted(pod_claim_names)) if pod_claim_names else " which is empty"
            errs.append(not_found(p, name, detail))
    return errs


def validate_pod_spec_resource_claims(pod: Obj) -> list[Cause]:
    """spec.resourceClaims and the claims of every container (and pod-level resources)."""
    spec = _dict(pod.get("spec"))
    errs: list[Cause] = []
    names: set[str] = set()
    for i, claim in enumerate(_list(spec.get("resourceClaims"))):
        errs += validate_claim_reference(_dict(claim), names, index("spec.resourceClaims", i))
    pod_claim_names = {_str(_dict(c).get("name")) for c in _list(spec.get("resourceClaims"))} - {""}
    for kind in CONTAINER_KINDS:
        for i, container in enumerate(_list(spec.get(kind))):
            claims = _list(_dict(_dict(container).get("resources")).get("claims"))
            errs += _validate_container_claims(claims, pod_claim_names,
                                               child(index(f"spec.{kind}", i), "resources", "claims"))
    if _dict(spec.get("resources")).get("claims") is not None:
        errs.append(forbidden("spec.resources.claims", "claims cannot be set for Resources at pod-level"))
    return errs


def _validate_resource_claim_statuses(statuses: list, pod_claims: list, path: str) -> list[Cause]:
    errs: list[Cause] = []
    pod_claim_names = {_str(_dict(c).get("name")) for c in pod_claims}
    seen: set[str] = set()
    for i, status in enumerate(statuses):
        status = _dict(status)
        p = index(path, i)
        name = _str(status.get("name"))
        if name not in pod_claim_names:
            errs.append(invalid_value(child(p, "name"), name, "must match the name of an entry in "
                                      "`spec.resourceClaims`"))
        if name in seen:
            errs.append(duplicate(child(p, "name"), name))
        else:
            seen.add(name)
        claim_name = status.get("resourceClaimName")
        if claim_name is not None:
            # Upstream reports these on `.name`.
            errs += [invalid_value(child(p, "name"), _str(claim_name), m)
                     for m in is_dns1123_subdomain(_str(claim_name))]
    return errs


def _validate_extended_resource_claim_status(claim_status: Obj, spec: Obj, path: str) -> list[Cause]:
    containers: dict[str, Obj] = {}
    for kind in ("initContainers", "containers"):
        for c in _list(spec.get(kind)):
            containers[_str(_dict(c).get("name"))] = _dict(c)
    errs: list[Cause] = []
    mappings_path = child(path, "requestMappings")
    mappings = _list(claim_status.get("requestMappings"))
    if not mappings:
        errs.append(required(mappings_path, "at least one request mapping is required"))
    seen: set[tuple[str, str, str]] = set()
    for i, mapping in enumerate(mappings):
        mapping = _dict(mapping)
        p = index(mappings_path, i)
        container_name = _str(mapping.get("containerName"))
        resource_name = _str(mapping.get("resourceName"))
        request_name = _str(mapping.get("requestName"))
        container = containers.get(container_name)
        if container is None:
            errs.append(invalid_value(child(p, "containerName"), container_name, "must match the name of an entry in "
                                      "spec.initContainers.name or spec.containers.name"))
        elif resource_name not in _dict(_dict(container.get("resources")).get("requests")):
            errs.append(invalid_value(child(p, "resourceName"), resource_name, "must match the extended resource "
                                      "name of an entry in spec.initContainers.resources.requests or "
                                      "spec.containers.resources.requests"))
        # Upstream reports request name format errors on the status-level `requestName`.
        errs += validate_dns1123_label(request_name, child(path, "requestName"))
        k = (container_name, resource_name, request_name)
        if k in seen:
            errs.append(duplicate(child(p, "containerName"), container_name))
            errs.append(duplicate(child(p, "resourceName"), resource_name))
            errs.append(duplicate(child(p, "requestName"), request_name))
        seen.add(k)
    claim_name = _str(claim_status.get("resourceClaimName"))
    if not claim_name:
        errs.append(required(child(path, "resourceClaimName")))
    else:
        errs += [invalid_value(child(path, "resourceClaimName"), claim_name, m)
                 for m in is_dns1123_subdomain(claim_name)]
    return errs


def validate_pod_status_resource_claims(pod: Obj) -> list[Cause]:
    """status.resourceClaimStatuses and status.extendedResourceClaimStatus (ValidatePodStatusUpdate)."""
    spec, status = _dict(pod.get("spec")), _dict(pod.get("status"))
    errs = _validate_resource_claim_statuses(_list(status.get("resourceClaimStatuses")),
                                             _list(spec.get("resourceClaims")), "status.resourceClaimStatuses")
    if status.get("extendedResourceClaimStatus") is not None:
        errs += _validate_extended_resource_claim_status(_dict(status.get("extendedResourceClaimStatus")), spec,
                                                         "status.extendedResourceClaimStatus")
    return errs


def validate_pod_resource_claims(pod: Obj) -> list[Cause]:
    """Every DRA rule of a Pod: the spec parts (create / update) and the status parts (status updates)."""
    return validate_pod_spec_resource_claims(pod) + validate_pod_status_resource_claims(pod)


def validate_pod_spec_basics(pod: Obj) -> list[Cause]:
    if not (pod.get("spec") or {}).get("containers"):
        return [required("spec.containers")]
    return []


def validate_pod_create(pod: Obj) -> list[Cause]:
    """ValidatePodCreate's extra rule: no ephemeral containers on create."""
    if (pod.get("spec") or {}).get("ephemeralContainers"):
        return [forbidden("spec.ephemeralContainers", "cannot be set on create")]
    return []


_POD_UPDATE_FORBIDDEN = (
    "pod updates may not change fields other than `spec.containers[*].image`,`spec.initContainers[*].image`,"
    "`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to existing tolerations),"
    "`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)")


def validate_pod_spec_update(new: Obj, old: Obj) -> list[Cause]:
    """Upstream's ValidatePodUpdate: only a few spec fields may change after creation."""
    ns, os_ = clone(new.get("spec") or {}), old.get("spec") or {}
    for key in ("containers", "initContainers"):
        old_list = os_.get(key) or []
        for i, c in enumerate(ns.get(key) or []):
            if i < len(old_list) and isinstance(c, dict) and isinstance(old_list[i], dict):
                c["image"] = old_list[i].get("image")
    for key in ("activeDeadlineSeconds", "terminationGracePeriodSeconds"):
        if key in os_:
            ns[key] = os_[key]
        else:
            ns.pop(key, None)
    old_tol, new_tol = os_.get("tolerations") or [], ns.get("tolerations") or []
    if new_tol[:len(old_tol)] == old_tol:  # additions only
        ns["tolerations"] = old_tol
    gates_old, gates_new = os_.get("schedulingGates") or [], ns.get("schedulingGates") or []
    if all(g in gates_old for g in gates_new):  # scheduling gates may only be removed
        ns["schedulingGates"] = gates_old
    if semantic_equal(ns, os_):
        return []
    return [forbidden("spec", _POD_UPDATE_FORBIDDEN)]
