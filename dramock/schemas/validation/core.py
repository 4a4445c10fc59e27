"""Pieces of upstream's pkg/apis/core/validation (and core/v1 helpers) that other groups call: node names,
node selectors, extended and node-allocatable resource names."""

from __future__ import annotations

from typing import Any

from dramock.schemas.validation.field import Cause, Obj, child, forbidden, index, invalid_value, required
from dramock.schemas.validation.names import (
    is_dns1123_subdomain,
    is_label_value,
    is_qualified_name,
    validate_dns1123_subdomain,
    validate_label_name,
)


def validate_node_name(name: str, path: str) -> list[Cause]:
    return validate_dns1123_subdomain(name, path)


def validate_node_selector(selector: Any, path: str) -> list[Cause]:
    """corevalidation.ValidateNodeSelector(selector, allowInvalidLabelValueInRequiredNodeAffinity=false)."""
    selector = selector or {}
    terms_path = child(path, "nodeSelectorTerms")
    terms = selector.get("nodeSelectorTerms") or []
    if not terms:
        return [required(terms_path, "must have at least one node selector term")]
    errs: list[Cause] = []
    for i, term in enumerate(terms):
        term = term or {}
        tp = index(terms_path, i)
        for j, req in enumerate(term.get("matchExpressions") or []):
            errs.extend(_validate_node_selector_requirement(req or {}, index(child(tp, "matchExpressions"), j)))
        for j, req in enumerate(term.get("matchFields") or []):
            errs.extend(_validate_node_field_selector_requirement(req or {}, index(child(tp, "matchFields"), j)))
    return errs


def _validate_node_selector_requirement(req: Obj, path: str) -> list[Cause]:
    errs: list[Cause] = []
    op = req.get("operator") or ""
    values = req.get("values") or []
    if op in ("In", "NotIn"):
        if not values:
            errs.append(required(child(path, "values"), "must be specified when `operator` is 'In' or 'NotIn'"))
    elif op in ("Exists", "DoesNotExist"):
        if values:
            errs.append(forbidden(child(path, "values"),
                                  "may not be specified when `operator` is 'Exists' or 'DoesNotExist'"))
    elif op in ("Gt", "Lt"):
        if len(values) != 1:
            errs.append(required(child(path, "values"),
                                 "must be specified single value when `operator` is 'Lt' or 'Gt'"))
    else:
        errs.append(invalid_value(child(path, "operator"), op, "not a valid selector operator"))
    errs.extend(validate_label_name(req.get("key") or "", child(path, "key")))
    for k, v in enumerate(values):
        errs.extend(invalid_value(index(child(path, "values"), k), v, m) for m in is_label_value(str(v)))
    return errs


def _validate_node_field_selector_requirement(req: Obj, path: str) -> list[Cause]:
    errs: list[Cause] = []
    op = req.get("operator") or ""
    values = req.get("values") or []
    if op in ("In", "NotIn"):
        if len(values) != 1:
            errs.append(required(child(path, "values"),
                                 "must be only one value when `operator` is 'In' or 'NotIn' for node field selector"))
    else:
        errs.append(invalid_value(child(path, "operator"), op, "not a valid selector operator"))
    k = req.get("key") or ""
    if k != "metadata.name":
        errs.append(invalid_value(child(path, "key"), k, "not a valid field selector key"))
    else:
        for i, v in enumerate(values):
            errs.extend(invalid_value(index(child(path, "values"), i), v, m) for m in is_dns1123_subdomain(str(v)))
    return errs


def is_extended_resource_name(name: str) -> bool:
    """v1helper.IsExtendedResourceName."""
    if "/" not in name or "kubernetes.io/" in name:  # native resource
        return False
    if name.startswith("requests."):
        return False
    return not is_qualified_name("requests." + name)


def is_node_allocatable_resource_name(name: str) -> bool:
    return name in ("cpu", "memory", "ephemeral-storage") or name.startswith("hugepages-")
