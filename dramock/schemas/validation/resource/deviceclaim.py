"""The device claim of a ResourceClaim or ResourceClaimTemplate spec: requests, subrequests
(firstAvailable), derived attributes, constraints and configuration."""

from __future__ import annotations

from typing import Any

from dramock.schemas.featuregates import FeatureGates
from dramock.schemas.validation.field import (
    Cause,
    Obj,
    _dict,
    _list,
    _str,
    child,
    index,
    invalid_value,
    not_supported,
    required,
)
from dramock.schemas.validation.names import validate_dns1123_label, validate_dns1123_subdomain
from dramock.schemas.validation.resource.cel import _validate_selector, validate_cel_expression
from dramock.schemas.validation.resource.common import _gate, validate_set, validate_slice
from dramock.schemas.validation.resource.config import _validate_device_configuration
from dramock.schemas.validation.resource.limits import (
    ALLOCATION_MODES,
    DEVICE_CONFIG_MAX_SIZE,
    DEVICE_CONSTRAINTS_MAX_SIZE,
    DEVICE_DERIVED_ATTRIBUTES_MAX_SIZE,
    DEVICE_REQUESTS_MAX_SIZE,
    DEVICE_SELECTORS_MAX_SIZE,
    FIRST_AVAILABLE_DEVICE_REQUEST_MAX_SIZE,
)
from dramock.schemas.validation.resource.names import _dv_fully_qualified_name, validate_fully_qualified_name
from dramock.schemas.validation.resource.taints import _validate_device_toleration


class _RequestNames:
    def __init__(self, device_claim: Obj):
        self.names: dict[str, set[str] | None] = {}
        for request in _list(device_claim.get("requests")):
            request = _dict(request)
            subs = _list(request.get("firstAvailable"))
            if not subs:
                self.names[_str(request.get("name"))] = None
            else:
                self.names[_str(request.get("name"))] = {_str(_dict(s).get("name")) for s in subs}

    def has(self, ref: str) -> bool:
        segments = ref.split("/")
        if len(segments) > 2 or segments[0] not in self.names:
            return False
        if len(segments) == 1:
            return True
        return segments[1] in (self.names[segments[0]] or set())


def _constraint_attributes(constraints: list) -> dict[str, set[str]]:
    attrs: dict[str, set[str]] = {}
    for constraint in constraints:
        constraint = _dict(constraint)
        if constraint.get("matchAttribute") is not None:
            name = _str(constraint.get("matchAttribute"))
        elif constraint.get("distinctAttribute") is not None:
            name = _str(constraint.get("distinctAttribute"))
        else:
            continue
        requests = _list(constraint.get("requests"))
        for req in requests or [""]:
            attrs.setdefault(_str(req), set()).add(name)
    return attrs


class _Opts:
    def __init__(self, stored: bool, constraint_attributes: dict[str, set[str]], gates: FeatureGates | None):
        self.stored = stored
        self.constraint_attributes = constraint_attributes
        self.gates = gates


def _validate_device_claim(device_claim: Any, path: str, stored: bool, gates: FeatureGates | None) -> list[Cause]:
    device_claim = _dict(device_claim)
    constraints, config = _list(device_claim.get("constraints")), _list(device_claim.get("config"))
    opts = _Opts(stored, _constraint_attributes(constraints) if constraints else {}, gates)
    errs = validate_set(_list(device_claim.get("requests")), DEVICE_REQUESTS_MAX_SIZE,
                        lambda r, p: _validate_device_request(_dict(r), p, opts),
                        lambda r: _str(_dict(r).get("name")), child(path, "requests"))
    if not constraints and not config:  # (what the request names are needed for)
        return errs
    names = _RequestNames(device_claim)
    errs += validate_slice(constraints, DEVICE_CONSTRAINTS_MAX_SIZE,
                           lambda c, p: _validate_device_constraint(_dict(c), p, names, gates),
                           child(path, "constraints"))
    errs += validate_slice(config, DEVICE_CONFIG_MAX_SIZE,
                           lambda c, p: _validate_device_claim_configuration(_dict(c), p, names, stored),
                           child(path, "config"))
    return errs


def _validate_device_request(request: Obj, path: str, opts: _Opts) -> list[Cause]:
    name = _str(request.get("name"))
    errs = validate_dns1123_label(name, child(path, "name"))
    has_first_available = len(_list(request.get("firstAvailable"))) > 0
    has_exactly = request.get("exactly") is not None
    if not has_first_available and not has_exactly:
        errs.append(required(path, "exactly one of `exactly` or `firstAvailable` is required"))
    elif has_first_available and has_exactly:
        errs.append(invalid_value(path, None, "exactly one of `exactly` or `firstAvailable` is required, but "
                                  "multiple fields are set"))
    elif has_first_available:
        errs += validate_set(_list(request.get("firstAvailable")), FIRST_AVAILABLE_DEVICE_REQUEST_MAX_SIZE,
                             lambda s, p: _validate_device_sub_request(_dict(s), p, opts, name),
                             lambda s: _str(_dict(s).get("name")), child(path, "firstAvailable"))
    else:
        errs += _validate_exact_device_request(_dict(request.get("exactly")), child(path, "exactly"), opts, name)
    return errs


def _validate_request_common(request: Obj, path: str, opts: _Opts, request_name: str) -> list[Cause]:
    errs = _validate_device_class_name(_str(request.get("deviceClassName")), child(path, "deviceClassName"))
    selectors = _list(request.get("selectors"))
    if selectors:  # (empty lists, which have nothing to check, are skipped)
        errs += validate_slice(selectors, DEVICE_SELECTORS_MAX_SIZE,
                               lambda s, p: _validate_selector(_dict(s), p, opts.stored, opts.gates),
                               child(path, "selectors"))
    derived = _list(request.get("derivedAttributes"))
    if derived:
        errs += _validate_derived_attributes(derived, child(path, "derivedAttributes"), opts, request_name)
    errs += _validate_allocation_mode(request, path)
    for i, toleration in enumerate(_list(request.get("tolerations"))):
        errs += _validate_device_toleration(_dict(toleration), index(child(path, "tolerations"), i))
    return errs


def _validate_device_sub_request(sub: Obj, path: str, opts: _Opts, parent: str) -> list[Cause]:
    name = _str(sub.get("name"))
    errs = validate_dns1123_label(name, child(path, "name"))
    return errs + _validate_request_common(sub, path, opts, f"{parent}/{name}")


def _validate_exact_device_request(request: Obj, path: str, opts: _Opts, request_name: str) -> list[Cause]:
    return _validate_request_common(request, path, opts, request_name)


def _validate_device_class_name(name: str, path: str) -> list[Cause]:
    if not name:
        return [required(path)]
    return validate_dns1123_subdomain(name, path)


def _validate_allocation_mode(request: Obj, path: str) -> list[Cause]:
    mode = _str(request.get("allocationMode"))
    count = request.get("count") or 0
    if mode == "All":
        if count != 0:
            return [invalid_value(child(path, "count"), count,
                                  "must not be specified when allocationMode is 'All'")]
    elif mode == "ExactCount":
        if not isinstance(count, int) or count <= 0:
            return [invalid_value(child(path, "count"), count, "must be greater than zero")]
    else:
        return [not_supported(child(path, "allocationMode"), mode, ALLOCATION_MODES)]
    return []


def _attribute_used_by_constraint(attr: str, request_name: str, attrs: dict[str, set[str]]) -> bool:
    if attr in attrs.get("", set()) or attr in attrs.get(request_name, set()):
        return True
    parent, sep, _ = request_name.partition("/")
    return bool(sep) and attr in attrs.get(parent, set())


def _validate_derived_attributes(items: list, path: str, opts: _Opts, request_name: str) -> list[Cause]:
    def one(attr: Any, p: str) -> list[Cause]:
        attr = _dict(attr)
        errs: list[Cause] = []
        name = _str(attr.get("name"))
        if not name:
            errs.append(required(child(p, "name")))
        else:
            errs += _dv_fully_qualified_name(name, child(p, "name"))
            if not _attribute_used_by_constraint(name, request_name, opts.constraint_attributes):
                errs.append(invalid_value(child(p, "name"), name, "must be referenced by at least one matchAttribute "
                                          "or distinctAttribute constraint targeting this request"))
        expression = _str(attr.get("expression"))
        if not expression:
            errs.append(required(child(p, "expression")))
        else:
            errs += validate_cel_expression(expression, child(p, "expression"), opts.stored, opts.gates,
                                            derived_attribute=True)
        return errs

    return validate_set(items, DEVICE_DERIVED_ATTRIBUTES_MAX_SIZE, one, lambda a: _str(_dict(a).get("name")), path)


def _validate_device_constraint(constraint: Obj, path: str, names: _RequestNames,
                                gates: FeatureGates | None) -> list[Cause]:
    errs = validate_set(_list(constraint.get("requests")), DEVICE_REQUESTS_MAX_SIZE,
                        lambda n, p: _validate_request_name_ref(_str(n), p, names), _str, child(path, "requests"))
    if constraint.get("matchAttribute") is not None:
        errs += validate_fully_qualified_name(_str(constraint.get("matchAttribute")), child(path, "matchAttribute"))
    elif constraint.get("distinctAttribute") is not None:
        errs += validate_fully_qualified_name(_str(constraint.get("distinctAttribute")),
                                              child(path, "distinctAttribute"))
    elif _gate(gates, "DRAConsumableCapacity"):
        errs.append(required(path, 'exactly one of "matchAttribute" or "distinctAttribute" is required, but '
                             'multiple fields are set'))
    else:
        errs.append(required(child(path, "matchAttribute")))
    return errs


_REQUEST_REF_MSG = ("must be the name of a request in the claim or the name of a request and a subrequest "
                    "separated by '/'")


def _validate_request_name_ref(name: str, path: str, names: _RequestNames) -> list[Cause]:
    segments = name.split("/")
    if len(segments) > 2:
        return [invalid_value(path, name, _REQUEST_REF_MSG)]
    errs: list[Cause] = []
    for segment in segments:
        errs += validate_dns1123_label(segment, path)
    if not names.has(name):
        errs.append(invalid_value(path, name, _REQUEST_REF_MSG))
    return errs


def _validate_device_claim_configuration(config: Obj, path: str, names: _RequestNames, stored: bool) -> list[Cause]:
    errs = validate_set(_list(config.get("requests")), DEVICE_REQUESTS_MAX_SIZE,
                        lambda n, p: _validate_request_name_ref(_str(n), p, names), _str, child(path, "requests"))
    return errs + _validate_device_configuration(config, path, stored)
