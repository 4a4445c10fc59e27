"""Semantic validation of resource.k8s.io/v1 objects, as upstream's pkg/apis/resource/validation does it.

Objects are plain dicts in JSON wire shape (v1). Every public function returns a list of causes
(`{"reason", "message", "field"}`) with upstream's reasons, field paths (`spec.devices.requests[0].
exactly.deviceClassName`) and messages (`Invalid value: "x": ...`, `Too many: 33: must have at most 32
items`, ...).

Scope: the spec / status rules of each kind. The generic ObjectMeta checks (name format, namespace,
labels, annotations, immutable metadata on update) are the strategy's `validate_object_meta` and
`validate_object_meta_update`; every DRA kind uses a DNS-subdomain name, which is its default.

Where upstream has moved a rule to declarative validation only (derived attribute names, compatibility
groups, skipNodeOperations enum), the declarative rule's message is used; elsewhere the handwritten
function's message is used.
"""

from __future__ import annotations

import ipaddress
import json
import re
from collections.abc import Callable, Iterable
from typing import Any

from dramock import cel as _cel
from dramock.schemas.featuregates import FeatureGates
from dramock.schemas.quantity import Quantity, parse_or_none
from dramock.schemas.validation.field import (  # noqa: F401  (too_long re-exported)
    cause,
    forbidden,
    invalid_value,
    required,
    semantic_equal,
    too_long,
)
from dramock.schemas.validation.names import (  # noqa: F401  (re-exported for pod.py)
    full_match,
    is_c_identifier,
    is_dns1123_label,
    is_dns1123_subdomain,
    is_label_value,
    is_qualified_name,
    max_len_error,
    regex_error,
    validate_dns1123_label,
    validate_dns1123_subdomain,
    validate_label_name,
    validate_label_value,
    validate_labels,
)

Obj = dict[str, Any]
Cause = dict[str, str]

# --- limits of resource.k8s.io/v1 in Kubernetes 1.37 (staging/src/k8s.io/api/resource/v1/types.go) ---
RESOURCE_SLICE_MAX_DEVICES = 128
RESOURCE_SLICE_MAX_DEVICES_WITH_ADVANCED_FEATURES = 64  # taints, consumesCounters or list attributes
RESOURCE_SLICE_MAX_ATTRIBUTES_AND_CAPACITIES_PER_DEVICE = 32
RESOURCE_SLICE_MAX_ATTRIBUTE_VALUES_PER_DEVICE = 48
RESOURCE_SLICE_MAX_COUNTER_SETS = 8
RESOURCE_SLICE_MAX_COUNTERS_PER_COUNTER_SET = 32
RESOURCE_SLICE_MAX_DEVICE_COUNTER_CONSUMPTIONS_PER_DEVICE = 2
RESOURCE_SLICE_MAX_COUNTERS_PER_DEVICE_COUNTER_CONSUMPTION = 32
DEVICE_COMPATIBILITY_GROUPS_MAX_SIZE = 2
POOL_NAME_MAX_LENGTH = 253
DRIVER_NAME_MAX_LENGTH = 63
DEVICE_MAX_DOMAIN_LENGTH = 63
DEVICE_MAX_ID_LENGTH = 32
ATTRIBUTE_AND_CAPACITY_MAX_KEY_LENGTH = DEVICE_MAX_DOMAIN_LENGTH + 1 + DEVICE_MAX_ID_LENGTH
DEVICE_ATTRIBUTE_MAX_VALUE_LENGTH = 64
DEVICE_TAINTS_MAX_LENGTH = 16
DEVICE_TOLERATIONS_MAX_LENGTH = 16  # documented; upstream validation does not enforce it
BINDING_CONDITIONS_MAX_SIZE = 4
BINDING_FAILURE_CONDITIONS_MAX_SIZE = 4
ALLOCATION_RESULTS_MAX_SIZE = 32
DEVICE_REQUESTS_MAX_SIZE = ALLOCATION_RESULTS_MAX_SIZE
DEVICE_CONSTRAINTS_MAX_SIZE = 32
DEVICE_CONFIG_MAX_SIZE = 32
DEVICE_SELECTORS_MAX_SIZE = 32
FIRST_AVAILABLE_DEVICE_REQUEST_MAX_SIZE = 8
DEVICE_DERIVED_ATTRIBUTES_MAX_SIZE = 32
CEL_SELECTOR_EXPRESSION_MAX_LENGTH = 10 * 1024
CEL_SELECTOR_EXPRESSION_MAX_COST = 1_000_000
OPAQUE_PARAMETERS_MAX_LENGTH = 10 * 1024
RESOURCE_CLAIM_RESERVED_FOR_MAX_SIZE = 256
ALLOCATED_DEVICE_STATUS_MAX_CONDITIONS = 8
ALLOCATED_DEVICE_STATUS_DATA_MAX_LENGTH = 10 * 1024
NETWORK_DEVICE_DATA_MAX_IPS = 16
NETWORK_DEVICE_DATA_INTERFACE_NAME_MAX_LENGTH = 256
NETWORK_DEVICE_DATA_HARDWARE_ADDRESS_MAX_LENGTH = 128
CAPACITY_REQUEST_POLICY_DISCRETE_MAX_OPTIONS = 10
DEVICE_TAINT_RULE_STATUS_MAX_CONDITIONS = 8
MAX_INT64 = 2**63 - 1

DEVICE_TAINT_EFFECTS = ["NoExecute", "NoSchedule", "None"]  # sets.List order (sorted)
DEVICE_TOLERATION_OPERATORS = ["Equal", "Exists"]
ALLOCATION_MODES = ["All", "ExactCount"]
ALLOCATION_CONFIG_SOURCES = ["FromClaim", "FromClass"]
SKIP_NODE_OPERATIONS = ["*", "NodePrepareResources", "NodeUnprepareResources"]

def render(value: Any) -> str:
    """A bad value the way field.Error prints simple values: strings quoted, the rest as JSON."""
    if isinstance(value, str):
        return f'"{value}"'
    return json.dumps(value)


def invalid_raw(field: str, rendered: str, detail: str) -> Cause:
    """FieldValueInvalid for a value printed through its String() method (not quoted)."""
    return cause("FieldValueInvalid", field, f"Invalid value: {rendered}: {detail}")


def too_many(field: str, actual: int, maximum: int) -> Cause:
    return cause("FieldValueTooMany", field, f"Too many: {actual}: must have at most {maximum} items")


def duplicate(field: str, value: Any) -> Cause:
    return cause("FieldValueDuplicate", field, f"Duplicate value: {render(value)}")


def not_supported(field: str, value: Any, supported: Iterable[str]) -> Cause:
    values = ", ".join(f'"{s}"' for s in supported)
    return cause("FieldValueNotSupported", field,
                 f"Unsupported value: {render(value)}" + (f": supported values: {values}" if values else ""))


def not_found(field: str, value: Any, detail: str = "") -> Cause:
    return cause("FieldValueNotFound", field, f"Not found: {render(value)}" + (f": {detail}" if detail else ""))


def go_list(type_name: str, items: list | None) -> str:
    """Go's %#v of a slice: `[]string{"a", "b"}`, `[]string(nil)`."""
    if items is None:
        return f"[]{type_name}(nil)"
    return f"[]{type_name}{{" + ", ".join(render(i) for i in items) + "}"


def invalid_list(field: str, type_name: str, items: list | None, detail: str) -> Cause:
    return invalid_raw(field, go_list(type_name, items), detail)


# --- paths ---


def child(path: str, *names: str) -> str:
    for name in names:
        path = f"{path}.{name}" if path else name
    return path


def index(path: str, i: int) -> str:
    return f"{path}[{i}]"


def key(path: str, k: str) -> str:
    return f"{path}[{k}]"


def validate_annotations(annotations: Any, path: str) -> list[Cause]:
    errs: list[Cause] = []
    total = 0
    for k, v in (annotations or {}).items():
        errs.extend(invalid_value(path, k, m) for m in is_qualified_name(k.lower()))
        total += len(k) + len(v if isinstance(v, str) else str(v))
    if total > 256 * 1024:
        errs.append(too_long(path, 256 * 1024))
    return errs


# --- core validation pieces used by DRA (pkg/apis/core/validation) ---


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


def validate_driver_name(name: str, path: str) -> list[Cause]:
    """corevalidation.ValidateCSIDriverName: DRA driver names follow the CSI driver name rules."""
    errs: list[Cause] = []
    if not name:
        errs.append(required(path))
    if len(name) > DRIVER_NAME_MAX_LENGTH:
        errs.append(too_long(path, DRIVER_NAME_MAX_LENGTH))
    errs.extend(invalid_value(path, name, m) for m in is_dns1123_subdomain(name.lower()))
    return errs


_CONDITION_REASON_FMT = "[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?"
_CONDITION_REASON_RE = re.compile(f"^{_CONDITION_REASON_FMT}$")


def validate_conditions(conditions: Any, path: str) -> list[Cause]:
    """metav1validation.ValidateConditions."""
    errs: list[Cause] = []
    seen: set[str] = set()
    for i, cond in enumerate(conditions or []):
        cond = cond or {}
        p = index(path, i)
        ctype = cond.get("type") or ""
        if ctype in seen:
            errs.append(duplicate(child(p, "type"), ctype))
        else:
            seen.add(ctype)
        errs.extend(validate_label_name(ctype, child(p, "type")))
        status = cond.get("status") or ""
        if status not in ("False", "True", "Unknown"):
            errs.append(not_supported(child(p, "status"), status, ["False", "True", "Unknown"]))
        gen = cond.get("observedGeneration") or 0
        if isinstance(gen, int) and gen < 0:
            errs.append(invalid_value(child(p, "observedGeneration"), gen, "must be greater than or equal to zero"))
        if not cond.get("lastTransitionTime"):
            errs.append(required(child(p, "lastTransitionTime"), "must be set"))
        reason = cond.get("reason") or ""
        if not reason:
            errs.append(required(child(p, "reason"), "must be set"))
        else:
            if not full_match(_CONDITION_REASON_RE, reason):
                errs.append(invalid_value(child(p, "reason"), reason, regex_error(
                    "a condition reason must start with alphabetic character, optionally followed by a string of "
                    "alphanumeric characters or '_,:', and must end with an alphanumeric character or '_'",
                    _CONDITION_REASON_FMT, "my_name", "MY_NAME", "MyName", "ReasonA,ReasonB", "ReasonA:ReasonB")))
            if len(reason) > 1024:
                errs.append(too_long(child(p, "reason"), 1024))
        if len(cond.get("message") or "") > 32 * 1024:
            errs.append(too_long(child(p, "message"), 32 * 1024))
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


# --- generic list / map helpers (upstream's validateSlice, validateSet, validateMap) ---


def _list(value: Any) -> list:
    return value if isinstance(value, list) else []


def _dict(value: Any) -> dict:
    return value if isinstance(value, dict) else {}


def _str(value: Any) -> str:
    return value if isinstance(value, str) else ""


def validate_slice(items: list, max_size: int, validate_item: Callable[[Any, str], list[Cause]],
                   path: str) -> list[Cause]:
    if 0 <= max_size < len(items):
        return [too_many(path, len(items), max_size)]  # short-circuits, as a DOS protection
    errs: list[Cause] = []
    for i, item in enumerate(items):
        errs.extend(validate_item(item, index(path, i)))
    return errs


def validate_set(items: list, max_size: int, validate_item: Callable[[Any, str], list[Cause]],
                 item_key: Callable[[Any], Any], path: str,
                 render_key: Callable[[str, Any], Cause] | None = None) -> list[Cause]:
    if 0 <= max_size < len(items):
        return [too_many(path, len(items), max_size)]
    errs: list[Cause] = []
    for i, item in enumerate(items):
        errs.extend(validate_item(item, index(path, i)))
    seen: set = set()
    for i, item in enumerate(items):
        k = item_key(item)
        if k in seen:
            errs.append(render_key(index(path, i), k) if render_key else duplicate(index(path, i), k))
        else:
            seen.add(k)
    return errs


def _truncate(s: str, max_len: int) -> str:
    max_len = max(max_len, 16)
    if len(s) <= max_len:
        return s
    remaining = max_len - 3
    return s[:(remaining + 1) // 2] + "..." + s[len(s) - remaining // 2:]


def validate_map(m: dict, max_size: int, truncate_key_len: int, validate_key: Callable[[str, str], list[Cause]],
                 validate_item: Callable[[Any, str], list[Cause]], path: str) -> list[Cause]:
    if 0 <= max_size < len(m):
        return [too_many(path, len(m), max_size)]
    errs: list[Cause] = []
    for k, item in m.items():
        errs.extend(validate_key(k, path))  # key errors are reported on the map itself
        errs.extend(validate_item(item, key(path, _truncate(k, truncate_key_len))))
    return errs


def _gate(gates: FeatureGates | None, name: str) -> bool:
    return (gates or FeatureGates()).enabled(name)


# --- names ---


def validate_pool_name(name: str, path: str) -> list[Cause]:
    if not name:
        return [required(path)]
    errs: list[Cause] = []
    if len(name) > POOL_NAME_MAX_LENGTH:
        errs.append(too_long(path, POOL_NAME_MAX_LENGTH))
    for part in name.split("/"):
        errs.extend(validate_dns1123_subdomain(part, path))
    return errs


def _validate_uid(uid: str, path: str) -> list[Cause]:
    """validateUID: google/uuid.Validate, then the lowercase RFC 4122 normalized form."""
    s = uid
    if len(s) == 45 and s[:9].lower() == "urn:uuid:":
        s = s[9:]
    elif len(s) == 38 and s[0] == "{" and s[-1] == "}":
        s = s[1:-1]
    if len(s) == 36:
        ok = all(s[i] == "-" for i in (8, 13, 18, 23)) and all(
            c in "0123456789abcdefABCDEF" for i, c in enumerate(s) if i not in (8, 13, 18, 23))
    elif len(s) == 32:
        ok = all(c in "0123456789abcdefABCDEF" for c in s)
    else:
        return [invalid_value(path, uid, f"error validating uid: invalid UUID length: {len(uid)}")]
    if not ok:
        return [invalid_value(path, uid, "error validating uid: invalid UUID format")]
    if len(uid) != 36 or uid != uid.lower():
        return [invalid_value(path, uid, "uid must be in RFC 4122 normalized form, "
                              "`xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx` with lowercase hexadecimal characters")]
    return []


def _validate_c_identifier(ident: str, path: str) -> list[Cause]:
    errs: list[Cause] = []
    if len(ident) > DEVICE_MAX_ID_LENGTH:
        errs.append(too_long(path, DEVICE_MAX_ID_LENGTH))
    errs.extend(invalid_value(path, ident, m) for m in is_c_identifier(ident))
    return errs


def validate_qualified_name(name: str, path: str) -> list[Cause]:
    """Attribute and capacity names: a C identifier, optionally prefixed with a domain and `/`."""
    parts = name.split("/")
    errs: list[Cause] = []
    if len(parts) == 1:
        errs.extend(_validate_c_identifier(parts[0], path))
    elif len(parts) == 2:
        if not parts[0]:
            errs.append(invalid_value(path, "", "the domain must not be empty"))
        else:
            errs.extend(validate_driver_name(parts[0], path))
        if not parts[1]:
            errs.append(invalid_value(path, "", "the name must not be empty"))
        else:
            errs.extend(_validate_c_identifier(parts[1], path))
    else:
        errs.append(invalid_value(path, name, "must not contain more than one slash"))
    return errs


def validate_fully_qualified_name(name: str, path: str) -> list[Cause]:
    errs = validate_qualified_name(name, path)
    if "/" not in name:
        errs.append(invalid_value(path, name, "a fully qualified name must be a domain and a name separated by a "
                                  "slash"))
    return errs


def _dv_fully_qualified_name(name: str, path: str) -> list[Cause]:
    """The declarative format=k8s-resource-fully-qualified-name (used where only it applies)."""
    errs: list[Cause] = []
    parts = name.split("/")
    if len(parts) == 1:
        errs.extend(_validate_c_identifier(parts[0], path))
    elif len(parts) == 2:
        if not parts[0]:
            errs.append(invalid_value(path, "", "prefix must not be empty"))
        else:
            if len(parts[0]) > DEVICE_MAX_DOMAIN_LENGTH:
                errs.append(too_long(path, DEVICE_MAX_DOMAIN_LENGTH))
            errs.extend(invalid_value(path, parts[0], "prefix: " + m) for m in is_dns1123_subdomain(parts[0]))
        if not parts[1]:
            errs.append(invalid_value(path, "", "name must not be empty"))
        else:
            errs.extend(_validate_c_identifier(parts[1], path))
    if "/" not in name:
        errs.append(invalid_value(path, name, "a fully qualified name must be a domain and a name separated by a "
                                  "slash"))
    return errs


# --- CEL ---


def validate_cel_expression(expression: str, path: str, stored: bool = False, gates: FeatureGates | None = None,
                            derived_attribute: bool = False) -> list[Cause]:
    """validateCELExpression: length limit, then compilation through dramock.cel.

    A compile error (CELCompileError) is a FieldValueInvalid with the compiler's message; an estimated cost
    above the limit (CELCostExceeded) is upstream's FieldValueForbidden "too complex, exceeds cost limit".
    """
    if stored:
        # A stored expression was valid when it was stored; it is not compiled again.
        return []
    if len(expression) > CEL_SELECTOR_EXPRESSION_MAX_LENGTH:
        return [too_long(path, CEL_SELECTOR_EXPRESSION_MAX_LENGTH)]
    compile_ = getattr(_cel, "compile", None)
    if compile_ is None or derived_attribute:
        # Derived attributes evaluate to any scalar or list, not to a bool like selectors: the selector
        # compiler would reject them, so only their length is checked here.
        return []
    error_type = getattr(_cel, "CELCompileError", None)
    cost_type = getattr(_cel, "CELCostExceeded", None)
    try:
        try:
            result = compile_(expression, list_type_attributes=_gate(gates, "DRAListTypeAttributes"),
                              consumable_capacity=_gate(gates, "DRAConsumableCapacity"))
        except TypeError as e:
            if "keyword" not in str(e):
                raise
            result = compile_(expression)
    except Exception as e:
        if cost_type is not None and isinstance(e, cost_type):
            return [forbidden(path, "too complex, exceeds cost limit")]
        if error_type is not None and not isinstance(e, error_type):
            raise
        return [invalid_value(path, expression, getattr(e, "message", None) or str(e) or "compilation failed")]
    cost = getattr(result, "max_cost", None)
    if isinstance(cost, (int, float)) and cost > CEL_SELECTOR_EXPRESSION_MAX_COST:
        return [forbidden(path, "too complex, exceeds cost limit")]
    return []


# --- device claims (ResourceClaim / ResourceClaimTemplate spec) ---


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
    names = _RequestNames(device_claim)
    opts = _Opts(stored, _constraint_attributes(_list(device_claim.get("constraints"))), gates)
    errs = validate_set(_list(device_claim.get("requests")), DEVICE_REQUESTS_MAX_SIZE,
                        lambda r, p: _validate_device_request(_dict(r), p, opts),
                        lambda r: _str(_dict(r).get("name")), child(path, "requests"))
    errs += validate_slice(_list(device_claim.get("constraints")), DEVICE_CONSTRAINTS_MAX_SIZE,
                           lambda c, p: _validate_device_constraint(_dict(c), p, names, gates),
                           child(path, "constraints"))
    errs += validate_slice(_list(device_claim.get("config")), DEVICE_CONFIG_MAX_SIZE,
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
    errs += validate_slice(_list(request.get("selectors")), DEVICE_SELECTORS_MAX_SIZE,
                           lambda s, p: _validate_selector(_dict(s), p, opts.stored, opts.gates),
                           child(path, "selectors"))
    errs += _validate_derived_attributes(_list(request.get("derivedAttributes")), child(path, "derivedAttributes"),
                                         opts, request_name)
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


def _validate_selector(selector: Obj, path: str, stored: bool, gates: FeatureGates | None) -> list[Cause]:
    if selector.get("cel") is None:
        return [required(child(path, "cel"))]
    return validate_cel_expression(_str(_dict(selector.get("cel")).get("expression")),
                                   child(path, "cel", "expression"), stored, gates)


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


def _validate_device_configuration(config: Obj, path: str, stored: bool) -> list[Cause]:
    if config.get("opaque") is None:
        return [required(child(path, "opaque"))]
    opaque = _dict(config.get("opaque"))
    p = child(path, "opaque")
    errs = validate_driver_name(_str(opaque.get("driver")), child(p, "driver"))
    return errs + _validate_raw_extension(opaque.get("parameters"), "parameters" in opaque, child(p, "parameters"),
                                          stored, OPAQUE_PARAMETERS_MAX_LENGTH)


def _validate_raw_extension(value: Any, present: bool, path: str, stored: bool, max_length: int) -> list[Cause]:
    """A runtime.RawExtension in JSON form: the raw bytes are the compact JSON encoding of the value."""
    if not present or value is None:  # absent or null: empty Raw
        return [required(path)]
    raw = json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    if not stored and len(raw.encode()) > max_length:
        return [too_long(path, max_length)]
    if not isinstance(value, dict):
        return [invalid_value(path, "<value omitted>", "must be a valid JSON object")]
    return []


def _validate_device_toleration(toleration: Obj, path: str) -> list[Cause]:
    errs: list[Cause] = []
    k = _str(toleration.get("key"))
    if k:
        errs += validate_label_name(k, child(path, "key"))
    op = _str(toleration.get("operator"))
    value = _str(toleration.get("value"))
    if op == "Exists":
        if value:
            errs.append(invalid_value(child(path, "value"), value, "must be empty for operator `Exists`"))
    elif op == "Equal":
        errs += validate_label_value(value, child(path, "value"))
    elif op == "":
        errs.append(required(child(path, "operator")))
    else:
        errs.append(not_supported(child(path, "operator"), op, DEVICE_TOLERATION_OPERATORS))
    effect = _str(toleration.get("effect"))
    if effect and effect not in DEVICE_TAINT_EFFECTS:
        errs.append(not_supported(child(path, "effect"), effect, DEVICE_TAINT_EFFECTS))
    return errs


def _validate_device_taint(taint: Obj, old_taint: Obj | None, path: str) -> list[Cause]:
    errs = validate_label_name(_str(taint.get("key")), child(path, "key"))
    value = _str(taint.get("value"))
    if value:
        errs += validate_label_value(value, child(path, "value"))
    effect = _str(taint.get("effect"))
    if old_taint is None or _str(old_taint.get("effect")) != effect:
        if not effect:
            errs.append(required(child(path, "effect")))
        elif effect not in DEVICE_TAINT_EFFECTS:
            errs.append(not_supported(child(path, "effect"), effect, DEVICE_TAINT_EFFECTS))
    return errs


# --- ResourceClaim ---


def validate_resource_claim(obj: Obj, *, gates: FeatureGates | None = None) -> list[Cause]:
    """ValidateResourceClaim (spec part)."""
    return _validate_device_claim(_dict(obj.get("spec")).get("devices"), "spec.devices", False, gates)


def validate_resource_claim_update(new: Obj, old: Obj, *, gates: FeatureGates | None = None) -> list[Cause]:
    """The spec is immutable; nothing else of the spec is validated again on update."""
    if not semantic_equal(new.get("spec"), old.get("spec")):
        return [invalid_value("spec", new.get("spec"), "field is immutable")]
    return []


def _device_id(d: Obj) -> tuple[str, str, str, str | None]:
    share = d.get("shareID")
    return (_str(d.get("driver")), _str(d.get("pool")), _str(d.get("device")),
            share if isinstance(share, str) else None)


def _device_id_string(device_id: tuple[str, str, str, str | None]) -> str:
    s = "/".join(device_id[:3])
    return f"{s}/{device_id[3]}" if device_id[3] is not None else s


def validate_resource_claim_status_update(new: Obj, old: Obj, *, gates: FeatureGates | None = None) -> list[Cause]:
    """ValidateResourceClaimStatusUpdate (status part; metadata is the strategy's)."""
    spec = _dict(new.get("spec"))
    names = _RequestNames(_dict(spec.get("devices")))
    status, old_status = _dict(new.get("status")), _dict(old.get("status"))
    claim_deleted = bool(_dict(new.get("metadata")).get("deletionTimestamp"))
    path = "status"
    reserved_for = _list(status.get("reservedFor"))
    errs = validate_set(reserved_for, RESOURCE_CLAIM_RESERVED_FOR_MAX_SIZE, _validate_consumer_reference,
                        lambda r: _str(_dict(r).get("uid")), child(path, "reservedFor"))

    allocation = status.get("allocation")
    allocated: set = set()
    if allocation is not None:
        for result in _list(_dict(_dict(allocation).get("devices")).get("results")):
            allocated.add(_device_id(_dict(result)))
    errs += validate_set(
        _list(status.get("devices")), -1, lambda d, p: _validate_device_status(_dict(d), p, allocated),
        lambda d: _device_id(_dict(d)), child(path, "devices"),
        render_key=lambda p, k: cause("FieldValueDuplicate", p, f"Duplicate value: {_device_id_string(k)}"))

    if reserved_for:
        if allocation is None:
            errs.append(forbidden(child(path, "reservedFor"), "may not be specified when `allocated` is not set"))
        elif claim_deleted:
            old_uids = {json.dumps(r, sort_keys=True) for r in _list(old_status.get("reservedFor"))}
            if any(json.dumps(r, sort_keys=True) not in old_uids for r in reserved_for):
                errs.append(forbidden(child(path, "reservedFor"), "new entries may not be added while "
                                      "`deallocationRequested` or `deletionTimestamp` are set"))

    old_allocation = old_status.get("allocation")
    if old_allocation is not None and allocation is not None:
        if not semantic_equal(allocation, old_allocation):
            errs.append(invalid_value(child(path, "allocation"), allocation, "field is immutable"))
    elif allocation is not None:
        errs += _validate_allocation_result(_dict(allocation), child(path, "allocation"), names)
    return errs


def _validate_consumer_reference(ref: Any, path: str) -> list[Cause]:
    ref = _dict(ref)
    return [required(child(path, f)) for f in ("resource", "name", "uid") if not _str(ref.get(f))]


def _validate_allocation_result(allocation: Obj, path: str, names: _RequestNames) -> list[Cause]:
    devices = _dict(allocation.get("devices"))
    dpath = child(path, "devices")
    errs = validate_slice(_list(devices.get("results")), ALLOCATION_RESULTS_MAX_SIZE,
                          lambda r, p: _validate_request_allocation_result(_dict(r), p, names),
                          child(dpath, "results"))
    errs += validate_slice(_list(devices.get("config")), 2 * DEVICE_CONFIG_MAX_SIZE,
                           lambda c, p: _validate_allocation_configuration(_dict(c), p, names),
                           child(dpath, "config"))
    if allocation.get("nodeSelector") is not None:
        errs += validate_node_selector(allocation.get("nodeSelector"), child(path, "nodeSelector"))
    return errs


def _validate_request_allocation_result(result: Obj, path: str, names: _RequestNames) -> list[Cause]:
    errs = _validate_request_name_ref(_str(result.get("request")), child(path, "request"), names)
    errs += validate_driver_name(_str(result.get("driver")), child(path, "driver"))
    errs += validate_pool_name(_str(result.get("pool")), child(path, "pool"))
    errs += validate_dns1123_label(_str(result.get("device")), child(path, "device"))
    errs += _validate_binding_parameters(result.get("bindingConditions"), result.get("bindingFailureConditions"),
                                         path)
    for i, toleration in enumerate(_list(result.get("tolerations"))):
        errs += _validate_device_toleration(_dict(toleration), index(child(path, "tolerations"), i))
    if result.get("shareID") is not None:
        errs += _validate_uid(_str(result.get("shareID")), child(path, "shareID"))
    errs += _validate_skip_node_operations(result.get("skipNodeOperations"), child(path, "skipNodeOperations"))
    return errs


def _validate_allocation_configuration(config: Obj, path: str, names: _RequestNames) -> list[Cause]:
    errs: list[Cause] = []
    source = _str(config.get("source"))
    if not source:
        errs.append(required(child(path, "source")))
    elif source not in ALLOCATION_CONFIG_SOURCES:
        errs.append(not_supported(child(path, "source"), source, ALLOCATION_CONFIG_SOURCES))
    errs += validate_set(_list(config.get("requests")), DEVICE_REQUESTS_MAX_SIZE,
                         lambda n, p: _validate_request_name_ref(_str(n), p, names), _str, child(path, "requests"))
    return errs + _validate_device_configuration(config, path, False)


def _validate_device_status(device: Obj, path: str, allocated: set) -> list[Cause]:
    errs = validate_driver_name(_str(device.get("driver")), child(path, "driver"))
    errs += validate_pool_name(_str(device.get("pool")), child(path, "pool"))
    errs += validate_dns1123_label(_str(device.get("device")), child(path, "device"))
    if device.get("shareID") is not None:
        errs += _validate_uid(_str(device.get("shareID")), child(path, "shareID"))
    device_id = _device_id(device)
    if device_id not in allocated:
        errs.append(invalid_raw(path, _device_id_string(device_id), "must be an allocated device in the claim"))
    conditions = _list(device.get("conditions"))
    if len(conditions) > ALLOCATED_DEVICE_STATUS_MAX_CONDITIONS:
        errs.append(too_many(child(path, "conditions"), len(conditions), ALLOCATED_DEVICE_STATUS_MAX_CONDITIONS))
    errs += validate_conditions(conditions, child(path, "conditions"))
    if device.get("data") is not None:
        errs += _validate_raw_extension(device.get("data"), True, child(path, "data"), False,
                                        ALLOCATED_DEVICE_STATUS_DATA_MAX_LENGTH)
    if device.get("networkData") is not None:
        errs += _validate_network_device_data(_dict(device.get("networkData")), child(path, "networkData"))
    return errs


def _validate_network_device_data(data: Obj, path: str) -> list[Cause]:
    errs: list[Cause] = []
    if len(_str(data.get("interfaceName")).encode()) > NETWORK_DEVICE_DATA_INTERFACE_NAME_MAX_LENGTH:
        errs.append(too_long(child(path, "interfaceName"), NETWORK_DEVICE_DATA_INTERFACE_NAME_MAX_LENGTH))
    if len(_str(data.get("hardwareAddress")).encode()) > NETWORK_DEVICE_DATA_HARDWARE_ADDRESS_MAX_LENGTH:
        errs.append(too_long(child(path, "hardwareAddress"), NETWORK_DEVICE_DATA_HARDWARE_ADDRESS_MAX_LENGTH))
    errs += validate_set(_list(data.get("ips")), NETWORK_DEVICE_DATA_MAX_IPS,
                         lambda a, p: _validate_interface_address(_str(a), p), _str, child(path, "ips"))
    return errs


def _validate_interface_address(address: str, path: str) -> list[Cause]:
    """validation.IsValidInterfaceAddress: an address in CIDR form, canonical."""
    try:
        if "/" not in address:
            raise ValueError
        iface = ipaddress.ip_interface(address)
    except ValueError:
        return [invalid_value(path, address, "must be a valid address in CIDR form, (e.g. 10.9.8.7/24 or "
                              "2001:db8::1/64)")]
    canonical = f"{iface.ip}/{iface.network.prefixlen}"
    if address != canonical:
        return [invalid_value(path, address, f'must be in canonical form ("{canonical}")')]
    return []


def _validate_binding_parameters(conditions: Any, failure_conditions: Any, path: str) -> list[Cause]:
    bc = [_str(c) for c in _list(conditions)] if conditions is not None else None
    bfc = [_str(c) for c in _list(failure_conditions)] if failure_conditions is not None else None
    errs = validate_slice(bc or [], BINDING_CONDITIONS_MAX_SIZE, validate_label_name,
                          child(path, "bindingConditions"))
    errs += validate_slice(bfc or [], BINDING_FAILURE_CONDITIONS_MAX_SIZE, validate_label_name,
                           child(path, "bindingFailureConditions"))
    seen: set[str] = set()
    for i, c in enumerate(bc or []):
        if c in seen:
            errs.append(duplicate(index(child(path, "bindingConditions"), i), c))
        seen.add(c)
    seen_failure: set[str] = set()
    for i, c in enumerate(bfc or []):
        if c in seen_failure:
            errs.append(duplicate(index(child(path, "bindingFailureConditions"), i), c))
        seen_failure.add(c)
        if c in set(bc or []):
            errs.append(invalid_value(index(child(path, "bindingFailureConditions"), i), c,
                                      "bindingFailureConditions must not overlap with bindingConditions"))
    if not bc and bfc:
        errs.append(invalid_list(child(path, "bindingConditions"), "string", bc,
                                 "bindingConditions are required to use bindingFailureConditions"))
    if not bfc and bc:
        errs.append(invalid_list(child(path, "bindingFailureConditions"), "string", bfc,
                                 "bindingFailureConditions are required to use bindingConditions"))
    return errs


def _validate_skip_node_operations(ops: Any, path: str) -> list[Cause]:
    if ops is None:
        return []
    items = [_str(o) for o in _list(ops)]
    errs: list[Cause] = []
    seen: set[str] = set()
    for i, op in enumerate(items):
        if op not in SKIP_NODE_OPERATIONS:
            errs.append(not_supported(index(path, i), op, SKIP_NODE_OPERATIONS))
        if op in seen:
            errs.append(duplicate(index(path, i), op))
        seen.add(op)
    if "NodePrepareResources" in seen and "NodeUnprepareResources" not in seen and "*" not in seen:
        errs.append(invalid_list(path, "resource.SkipNodeOperation", items,
                                 "NodePrepareResources cannot be skipped unless NodeUnprepareResources is also "
                                 "skipped"))
    return errs


# --- ResourceClaimTemplate ---

# ObjectMeta fields in Go struct order, with the name validateFieldAllowList reports (lower-cased first rune).
_TEMPLATE_META_FIELDS = [
    ("name", "name"), ("generateName", "generateName"), ("namespace", "namespace"), ("selfLink", "selfLink"),
    ("uid", "uID"), ("resourceVersion", "resourceVersion"), ("generation", "generation"),
    ("creationTimestamp", "creationTimestamp"), ("deletionTimestamp", "deletionTimestamp"),
    ("deletionGracePeriodSeconds", "deletionGracePeriodSeconds"), ("ownerReferences", "ownerReferences"),
    ("finalizers", "finalizers"), ("managedFields", "managedFields"),
]


def validate_template_object_meta(meta: Any, path: str) -> list[Cause]:
    """corevalidation.ValidateTemplateObjectMeta: only labels and annotations may be set."""
    meta = _dict(meta)
    errs = validate_annotations(meta.get("annotations"), child(path, "annotations"))
    errs += validate_labels(meta.get("labels"), child(path, "labels"))
    for json_name, go_name in _TEMPLATE_META_FIELDS:
        value = meta.get(json_name)
        if value is None or value == "" or value == 0 and not isinstance(value, bool):
            continue
        errs.append(forbidden(child(path, go_name), "cannot be set for a template"))
    return errs


def validate_resource_claim_template(obj: Obj, *, gates: FeatureGates | None = None) -> list[Cause]:
    spec = _dict(obj.get("spec"))
    errs = validate_template_object_meta(spec.get("metadata"), "spec.metadata")
    return errs + _validate_device_claim(_dict(spec.get("spec")).get("devices"), "spec.spec.devices", False, gates)


def validate_resource_claim_template_update(new: Obj, old: Obj, *, gates: FeatureGates | None = None
                                            ) -> list[Cause]:
    if not semantic_equal(new.get("spec"), old.get("spec")):
        return [invalid_value("spec", new.get("spec"), "field is immutable")]
    return []


# --- DeviceClass ---


def validate_device_class(obj: Obj, *, gates: FeatureGates | None = None) -> list[Cause]:
    return _validate_device_class_spec(_dict(obj.get("spec")), None, "spec", gates)


def validate_device_class_update(new: Obj, old: Obj, *, gates: FeatureGates | None = None) -> list[Cause]:
    return _validate_device_class_spec(_dict(new.get("spec")), _dict(old.get("spec")), "spec", gates)


def _validate_device_class_spec(spec: Obj, old_spec: Obj | None, path: str, gates: FeatureGates | None
                                ) -> list[Cause]:
    # Unchanged selectors (or configs) were valid when stored and are not compiled / limited again.
    stored = old_spec is not None and spec.get("selectors") == old_spec.get("selectors")
    errs = validate_slice(_list(spec.get("selectors")), DEVICE_SELECTORS_MAX_SIZE,
                          lambda s, p: _validate_selector(_dict(s), p, stored, gates), child(path, "selectors"))
    stored = old_spec is not None and spec.get("config") == old_spec.get("config")
    errs += validate_slice(_list(spec.get("config")), DEVICE_CONFIG_MAX_SIZE,
                           lambda c, p: _validate_device_configuration(_dict(c), p, stored), child(path, "config"))
    name = spec.get("extendedResourceName")
    if name is not None and not is_extended_resource_name(_str(name)):
        errs.append(invalid_value(child(path, "extendedResourceName"), _str(name),
                                  "must be a valid extended resource name"))
    return errs


# --- ResourceSlice ---


def validate_resource_slice(obj: Obj, *, gates: FeatureGates | None = None) -> list[Cause]:
    return _validate_resource_slice_spec(_dict(obj.get("spec")), None, "spec", gates)


def validate_resource_slice_update(new: Obj, old: Obj, *, gates: FeatureGates | None = None) -> list[Cause]:
    return _validate_resource_slice_spec(_dict(new.get("spec")), _dict(old.get("spec")), "spec", gates)


def _have_device_taints(devices: list) -> bool:
    return any(_list(_dict(d).get("taints")) for d in devices)


def _have_consumes_counters(devices: list) -> bool:
    return any(_list(_dict(d).get("consumesCounters")) for d in devices)


def _have_list_attributes(devices: list) -> bool:
    return any(any(_dict(a).get(k) is not None for k in ("bools", "ints", "strings", "versions"))
               for d in devices for a in _dict(_dict(d).get("attributes")).values())


def _validate_resource_slice_spec(spec: Obj, old_spec: Obj | None, path: str,
                                  gates: FeatureGates | None) -> list[Cause]:
    driver = _str(spec.get("driver"))
    pool = _dict(spec.get("pool"))
    errs = validate_driver_name(driver, child(path, "driver"))
    errs += validate_pool_name(_str(pool.get("name")), child(path, "pool", "name"))
    count = pool.get("resourceSliceCount") or 0
    if not isinstance(count, int) or count <= 0:
        errs.append(invalid_value(child(path, "pool", "resourceSliceCount"), count, "must be greater than zero"))
    generation = pool.get("generation") or 0
    if isinstance(generation, int) and generation < 0:
        errs.append(invalid_value(child(path, "pool", "generation"), generation,
                                  "must be greater than or equal to zero"))
    if old_spec is not None:
        old_pool = _dict(old_spec.get("pool"))
        if _str(pool.get("name")) != _str(old_pool.get("name")):
            errs.append(invalid_value(child(path, "pool", "name"), _str(pool.get("name")), "field is immutable"))
        if driver != _str(old_spec.get("driver")):
            errs.append(invalid_value(child(path, "driver"), driver, "field is immutable"))
        if spec.get("nodeName") != old_spec.get("nodeName"):
            errs.append(invalid_value(child(path, "nodeName"), spec.get("nodeName"), "field is immutable"))

    set_fields: list[str] = []
    node_name = spec.get("nodeName")
    if node_name is not None:
        if node_name != "":
            set_fields.append("`nodeName`")
            errs += validate_node_name(_str(node_name), child(path, "nodeName"))
        else:
            errs.append(invalid_value(child(path, "nodeName"), "", "must be either unset or set to a non-empty "
                                      "string"))
    if spec.get("nodeSelector") is not None:
        set_fields.append("`nodeSelector`")
        errs += validate_node_selector(spec.get("nodeSelector"), child(path, "nodeSelector"))
        terms = _dict(spec.get("nodeSelector")).get("nodeSelectorTerms")
        if len(_list(terms)) != 1:
            errs.append(invalid_value(child(path, "nodeSelector", "nodeSelectorTerms"), terms,
                                      "must have exactly one node selector term"))
    for flag in ("allNodes", "perDeviceNodeSelection"):
        if spec.get(flag) is not None:
            if spec.get(flag) is True:
                set_fields.append(f"`{flag}`")
            else:
                errs.append(invalid_value(child(path, flag), spec.get(flag), "must be either unset or set to true"))
    one_of = "exactly one of `nodeName`, `nodeSelector`, `allNodes`, `perDeviceNodeSelection` is required"
    if not set_fields:
        errs.append(required(path, one_of))
    elif len(set_fields) > 1:
        errs.append(invalid_value(path, "{" + ", ".join(set_fields) + "}", one_of + ", but multiple fields are set"))

    if spec.get("sharedCounters") is not None and spec.get("devices") is not None:
        errs.append(invalid_value(path, "", "only one of `sharedCounters` or `devices` is allowed"))

    devices = _list(spec.get("devices"))
    max_devices = RESOURCE_SLICE_MAX_DEVICES
    if _have_device_taints(devices) or _have_consumes_counters(devices) or _have_list_attributes(devices):
        max_devices = RESOURCE_SLICE_MAX_DEVICES_WITH_ADVANCED_FEATURES
    old_devices = {_str(_dict(d).get("name")): _dict(d) for d in _list((old_spec or {}).get("devices"))}
    per_device = spec.get("perDeviceNodeSelection") is True
    errs += validate_set(devices, max_devices,
                         lambda d, p: _validate_device(_dict(d), old_devices.get(_str(_dict(d).get("name"))) if
                                                       old_spec is not None else None, p, per_device, gates),
                         lambda d: _str(_dict(d).get("name")), child(path, "devices"))
    errs += validate_set(_list(spec.get("sharedCounters")), RESOURCE_SLICE_MAX_COUNTER_SETS,
                         lambda c, p: _validate_counter_set(_dict(c), p), lambda c: _str(_dict(c).get("name")),
                         child(path, "sharedCounters"))
    if spec.get("partitionTypeAttribute") is not None:
        errs += _validate_partition_type_attribute(spec, path)
    errs += _validate_skip_node_operations(spec.get("skipNodeOperations"), child(path, "skipNodeOperations"))
    return errs


def _validate_partition_type_attribute(spec: Obj, path: str) -> list[Cause]:
    name = _str(spec.get("partitionTypeAttribute"))
    p = child(path, "partitionTypeAttribute")
    devices = _list(spec.get("devices"))
    format_errs = _dv_fully_qualified_name(name, p)
    if not _have_consumes_counters(devices):
        return format_errs + [invalid_value(p, name, "may only be set on a slice which declares devices that "
                                            "consume counters")]
    if format_errs:
        return format_errs
    driver = _str(spec.get("driver"))
    bare = name[len(driver) + 1:] if name.startswith(driver + "/") else ""
    errs: list[Cause] = []
    for i, device in enumerate(devices):
        device = _dict(device)
        if not _list(device.get("consumesCounters")):
            continue
        attr_path = key(child(index(child(path, "devices"), i), "attributes"), name)
        attributes = _dict(device.get("attributes"))
        attribute = attributes.get(name)
        if attribute is None and bare:
            attribute = attributes.get(bare)
        if attribute is None:
            errs.append(required(attr_path, "device consumes counters and `partitionTypeAttribute` names this "
                                 "attribute, so it must be set"))
        elif _dict(attribute).get("string") is None:
            errs.append(invalid_value(attr_path, attribute, "must be a string value because `partitionTypeAttribute` "
                                      "names this attribute"))
    return errs


def _validate_counter_set(counter_set: Obj, path: str) -> list[Cause]:
    errs: list[Cause] = []
    name = _str(counter_set.get("name"))
    if not name:
        errs.append(required(child(path, "name")))
    else:
        errs += validate_dns1123_label(name, child(path, "name"))
    counters = _dict(counter_set.get("counters"))
    if not counters:
        errs.append(required(child(path, "counters")))
    else:
        errs += validate_map(counters, RESOURCE_SLICE_MAX_COUNTERS_PER_COUNTER_SET, 63, validate_dns1123_label,
                             lambda c, p: [], child(path, "counters"))
    return errs


def _num_attribute_values(attributes: dict) -> int:
    n = 0
    for attr in attributes.values():
        attr = _dict(attr)
        lengths = [len(_list(attr.get(k))) for k in ("bools", "ints", "strings", "versions")]
        n += sum(lengths) if any(lengths) else 1
    return n


def _validate_device(device: Obj, old_device: Obj | None, path: str, per_device_node_selection: bool,
                     gates: FeatureGates | None) -> list[Cause]:
    allow_multiple = device.get("allowMultipleAllocations") is True
    errs = validate_dns1123_label(_str(device.get("name")), child(path, "name"))
    attributes, capacity = _dict(device.get("attributes")), _dict(device.get("capacity"))
    total = len(attributes) + len(capacity)
    if total > RESOURCE_SLICE_MAX_ATTRIBUTES_AND_CAPACITIES_PER_DEVICE:
        errs.append(invalid_value(path, total, "the total number of attributes and capacities must not exceed "
                                  f"{RESOURCE_SLICE_MAX_ATTRIBUTES_AND_CAPACITIES_PER_DEVICE}"))
    values = _num_attribute_values(attributes)
    if values > RESOURCE_SLICE_MAX_ATTRIBUTE_VALUES_PER_DEVICE:
        errs.append(invalid_value(path, values, "the total number of attribute values must not exceed "
                                  f"{RESOURCE_SLICE_MAX_ATTRIBUTE_VALUES_PER_DEVICE}"))
    errs += validate_map(attributes, -1, ATTRIBUTE_AND_CAPACITY_MAX_KEY_LENGTH, validate_qualified_name,
                         lambda a, p: _validate_device_attribute(_dict(a), p), child(path, "attributes"))
    if old_device is None or old_device.get("capacity") != device.get("capacity"):
        item = _validate_multi_allocatable_capacity if allow_multiple else _validate_single_allocatable_capacity
        errs += validate_map(capacity, -1, ATTRIBUTE_AND_CAPACITY_MAX_KEY_LENGTH, validate_qualified_name,
                             lambda c, p: item(_dict(c), p, gates), child(path, "capacity"))
    if old_device is None or old_device.get("taints") != device.get("taints"):
        errs += validate_slice(_list(device.get("taints")), DEVICE_TAINTS_MAX_LENGTH,
                               lambda t, p: _validate_device_taint(_dict(t), None, p), child(path, "taints"))
    errs += validate_set(_list(device.get("consumesCounters")),
                         RESOURCE_SLICE_MAX_DEVICE_COUNTER_CONSUMPTIONS_PER_DEVICE,
                         lambda c, p: _validate_device_counter_consumption(_dict(c), p),
                         lambda c: _str(_dict(c).get("counterSet")), child(path, "consumesCounters"))

    node_fields = [device.get(f) is not None for f in ("nodeName", "nodeSelector", "allNodes")]
    if per_device_node_selection:
        set_fields: list[str] = []
        if device.get("nodeName") is not None:
            if _str(device.get("nodeName")):
                set_fields.append("`nodeName`")
                errs += validate_node_name(_str(device.get("nodeName")), child(path, "nodeName"))
            else:
                errs.append(invalid_value(child(path, "nodeName"), "", "must not be empty"))
        if device.get("nodeSelector") is not None:
            set_fields.append("`nodeSelector`")
            errs += validate_node_selector(device.get("nodeSelector"), child(path, "nodeSelector"))
        if device.get("allNodes") is not None:
            if device.get("allNodes") is True:
                set_fields.append("`allNodes`")
            else:
                errs.append(invalid_value(child(path, "allNodes"), device.get("allNodes"),
                                          "must be either unset or set to true"))
        one_of = ("exactly one of `nodeName`, `nodeSelector`, or `allNodes` is required when "
                  "`perDeviceNodeSelection` is set to true in the ResourceSlice spec")
        if not set_fields:
            errs.append(required(path, one_of))
        elif len(set_fields) > 1:
            errs.append(invalid_value(path, "{" + ", ".join(set_fields) + "}", one_of))
    elif any(node_fields):
        errs.append(invalid_value(path, None, "`nodeName`, `nodeSelector` and `allNodes` can only be set if "
                                  "`perDeviceNodeSelection` is set to true in the ResourceSlice spec"))

    errs += _validate_binding_parameters(device.get("bindingConditions"), device.get("bindingFailureConditions"),
                                         path)
    errs += _validate_node_allocatable_resources(_dict(device.get("nodeAllocatableResources")), capacity,
                                                 child(path, "nodeAllocatableResources"))
    return errs


def _validate_device_counter_consumption(consumption: Obj, path: str) -> list[Cause]:
    errs: list[Cause] = []
    counter_set = _str(consumption.get("counterSet"))
    if not counter_set:
        errs.append(required(child(path, "counterSet")))
    else:
        errs += validate_dns1123_label(counter_set, child(path, "counterSet"))
    counters = _dict(consumption.get("counters"))
    if not counters:
        errs.append(required(child(path, "counters")))
    else:
        errs += validate_map(counters, RESOURCE_SLICE_MAX_COUNTERS_PER_DEVICE_COUNTER_CONSUMPTION, 63,
                             validate_dns1123_label, lambda c, p: [], child(path, "counters"))
    groups = consumption.get("compatibilityGroups")
    if groups is not None:
        errs += validate_set([_str(g) for g in _list(groups)], DEVICE_COMPATIBILITY_GROUPS_MAX_SIZE,
                             validate_dns1123_label, _str, child(path, "compatibilityGroups"))
    return errs


_NUMERIC_ID = r"(0|[1-9]\d*)"
_PRE_RELEASE_ID = r"(0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)"
_BUILD_ID = r"[0-9a-zA-Z-]+"
_SEMVER_RE = re.compile("^" + _NUMERIC_ID + r"\." + _NUMERIC_ID + r"\." + _NUMERIC_ID
                        + "(-" + _PRE_RELEASE_ID + r"(\." + _PRE_RELEASE_ID + ")*)?"
                        + r"(\+" + _BUILD_ID + r"(\." + _BUILD_ID + ")*)?$")


def _validate_attribute_string(value: str, path: str) -> list[Cause]:
    if len(value.encode()) > DEVICE_ATTRIBUTE_MAX_VALUE_LENGTH:
        return [too_long(path, DEVICE_ATTRIBUTE_MAX_VALUE_LENGTH)]
    return []


def _validate_attribute_version(value: str, path: str) -> list[Cause]:
    errs: list[Cause] = []
    if not full_match(_SEMVER_RE, value):
        errs.append(invalid_value(path, value, "must be a string compatible with semver.org spec 2.0.0"))
    errs += _validate_attribute_string(value, path)
    return errs


def _validate_device_attribute(attribute: Obj, path: str) -> list[Cause]:
    errs: list[Cause] = []
    num = 0
    for field in ("bool", "int"):
        if attribute.get(field) is not None:
            num += 1
    if attribute.get("string") is not None:
        num += 1
        errs += _validate_attribute_string(_str(attribute.get("string")), child(path, "string"))
    if attribute.get("version") is not None:
        num += 1
        errs += _validate_attribute_version(_str(attribute.get("version")), child(path, "version"))
    for field, go_type, check in (("bools", "bool", None), ("ints", "int64", None),
                                  ("strings", "string", _validate_attribute_string),
                                  ("versions", "string", _validate_attribute_version)):
        if attribute.get(field) is None:
            continue
        num += 1
        items = _list(attribute.get(field))
        if not items:
            errs.append(invalid_list(child(path, field), go_type, [], "must not be empty if specified"))
        if check is not None:
            for i, item in enumerate(items):
                errs += check(_str(item), index(child(path, field), i))
    if num == 0:
        errs.append(invalid_value(path, "", "exactly one value must be specified"))
    elif num > 1:
        errs.append(invalid_value(path, attribute, "exactly one value must be specified"))
    return errs


def _validate_single_allocatable_capacity(capacity: Obj, path: str, gates: FeatureGates | None) -> list[Cause]:
    if capacity.get("requestPolicy") is not None:
        return [forbidden(child(path, "requestPolicy"), "allowMultipleAllocations must be true")]
    return []


def _validate_multi_allocatable_capacity(capacity: Obj, path: str, gates: FeatureGates | None) -> list[Cause]:
    policy = capacity.get("requestPolicy")
    value = parse_or_none(capacity.get("value"))
    if policy is None or value is None:
        return []
    return _validate_request_policy(value, _dict(policy), child(path, "requestPolicy"), gates)


def _validate_request_policy(capacity: Quantity, policy: Obj, path: str, gates: FeatureGates | None) -> list[Cause]:
    valid_values = _list(policy.get("validValues"))
    valid_range = policy.get("validRange")
    if valid_values and valid_range is not None:
        return [forbidden(path, 'exactly one policy can be specified, cannot specify "validValues" and "validRange" '
                          'at the same time')]
    default = parse_or_none(policy.get("default"))
    if valid_values:
        if default is None:
            return [required(child(path, "default"), "required when validValues is defined")]
        return _validate_valid_values(default, capacity, valid_values, child(path, "validValues"), gates)
    if valid_range is not None:
        if default is None:
            return [required(child(path, "default"), "required when validRange is defined")]
        return _validate_valid_range(default, capacity, _dict(valid_range), child(path, "validRange"), gates)
    return []


def _validate_valid_values(default: Quantity, capacity: Quantity, raw_values: list, path: str,
                           gates: FeatureGates | None) -> list[Cause]:
    values = [parse_or_none(v) for v in raw_values]
    errs: list[Cause] = []
    for i in range(len(values) - 1):
        a, b = values[i], values[i + 1]
        if a is not None and b is not None and a > b:
            errs.append(invalid_value(index(path, i + 1), str(b), "values must be sorted in ascending order"))
    found_default = False
    fractional = _gate(gates, "DRAFractionalCapacityRange")

    def one(option: Quantity | None, p: str) -> list[Cause]:
        nonlocal found_default
        if option is None:
            return []
        out: list[Cause] = []
        if option > capacity:
            out.append(invalid_value(p, str(option), f"option is larger than capacity value: {capacity}"))
        if option == default:
            found_default = True
        return out

    def option_key(option: Quantity | None) -> str:
        if option is None:
            return ""
        return str(option) if fractional else str(option.value())

    errs += validate_set(values, CAPACITY_REQUEST_POLICY_DISCRETE_MAX_OPTIONS, one, option_key, path)
    if not found_default:
        errs.append(invalid_value(path, str(default), "default value is not valid according to the requestPolicy"))
    return errs


def _validate_valid_range(default: Quantity, capacity: Quantity, valid_range: Obj, path: str,
                          gates: FeatureGates | None) -> list[Cause]:
    minimum = parse_or_none(valid_range.get("min"))
    if minimum is None:
        return [required(child(path, "min"), "required when validRange is defined")]
    maximum = parse_or_none(valid_range.get("max"))
    step = parse_or_none(valid_range.get("step"))
    errs: list[Cause] = []
    if minimum > capacity:
        errs.append(invalid_value(child(path, "min"), str(minimum), f"min is larger than capacity value: {capacity}"))
    if default < minimum:
        errs.append(invalid_value(child(path, "default"), str(default), f"default is less than min: {minimum}"))
    if maximum is not None:
        if minimum > maximum:
            errs.append(invalid_value(child(path, "max"), str(minimum), f"min is larger than max: {maximum}"))
        if maximum > capacity:
            errs.append(invalid_value(child(path, "max"), str(maximum),
                                      f"max is larger than capacity value: {capacity}"))
        if default > maximum:
            errs.append(invalid_value(child(path, "default"), str(default), f"default is more than max: {maximum}"))
    named = [(default, "default"), (minimum, "min"), (maximum, "max"), (step, "step")]
    use_milli = False
    if _gate(gates, "DRAFractionalCapacityRange"):
        use_milli = any(q is not None and q.is_fractional() for q in (minimum, maximum, step, default))
        if use_milli:
            unsafe = False
            for q, name in named:
                if q is not None and not q.milli_exact():
                    errs.append(invalid_value(child(path, name), str(q), "value cannot be represented as a milli "
                                              "value"))
                    unsafe = True
            if unsafe:
                return errs
    if step is None:
        return errs
    if step.sign() <= 0:
        errs.append(invalid_value(child(path, "step"), str(step), "must be greater than zero"))
        return errs
    added = minimum.add(step)
    if added > capacity:
        errs.append(invalid_value(child(path, "step"), str(step),
                                  f"one step {added} is larger than capacity value: {capacity}"))
    if not use_milli:
        unsafe = False
        for q, name in named:
            if q is None:
                continue
            if q.sign() < 0:
                errs.append(invalid_value(child(path, name), str(q), "must be greater than or equal to 0"))
                unsafe = True
            elif q.dec > MAX_INT64:
                errs.append(invalid_value(child(path, name), str(q), f"must not be larger than {MAX_INT64}"))
                unsafe = True
        if unsafe:
            return errs
    for value in (default, maximum):
        if value is None:
            continue
        if use_milli:
            v, lo, s = value.milli_value(), minimum.milli_value(), step.milli_value()
        else:
            v, lo, s = value.value(), minimum.value(), step.value()
        if s and (v - lo) % s != 0:
            errs.append(invalid_value(child(path, "step"), str(value),
                                      f"value is not a multiple of a given step ({step}) from ({minimum})"))
    return errs


def _validate_node_allocatable_resources(resources: dict, capacity: dict, path: str) -> list[Cause]:
    errs: list[Cause] = []
    for name, mapping in resources.items():
        kp = key(path, name)
        mapping = _dict(mapping)
        if not is_node_allocatable_resource_name(name):
            errs.append(invalid_value(kp, name, "must be a node allocatable resource name"))
        if mapping.get("mapping") is None and mapping.get("overhead") is None:
            errs.append(required(kp, "at least one of mapping or overhead must be set"))
        if mapping.get("mapping") is not None:
            errs += _validate_node_allocatable_mapping(_dict(mapping.get("mapping")), capacity, child(kp, "mapping"))
        if mapping.get("overhead") is not None:
            errs += _validate_node_allocatable_overhead(_dict(mapping.get("overhead")), child(kp, "overhead"))
    return errs


def _validate_node_allocatable_mapping(mapping: Obj, capacity: dict, path: str) -> list[Cause]:
    errs: list[Cause] = []
    capacity_key = mapping.get("capacityKey")
    multiplier = parse_or_none(mapping.get("capacityMultiplier"))
    if capacity_key is not None:
        if capacity_key == "":
            errs.append(invalid_value(child(path, "capacityKey"), "", "capacityKey must not be an empty string"))
        elif capacity_key not in capacity:
            errs.append(not_found(child(path, "capacityKey"), capacity_key))
        if mapping.get("capacityMultiplier") is None:
            errs.append(required(child(path, "capacityMultiplier"), "capacityMultiplier is required when capacityKey "
                                 "is set"))
        elif multiplier is not None and multiplier.sign() <= 0:
            errs.append(invalid_value(child(path, "capacityMultiplier"), str(multiplier), "must be positive"))
    device_multiplier = parse_or_none(mapping.get("deviceMultiplier"))
    if device_multiplier is not None and device_multiplier.sign() <= 0:
        errs.append(invalid_value(child(path, "deviceMultiplier"), str(device_multiplier), "must be positive"))
    if mapping.get("capacityMultiplier") is not None and capacity_key is None:
        errs.append(required(child(path, "capacityKey"), "capacityKey is required when capacityMultiplier is set"))
    return errs


def _validate_node_allocatable_overhead(overhead: Obj, path: str) -> list[Cause]:
    if overhead.get("perPod") is None and overhead.get("perContainer") is None:
        return [invalid_value(path, "", "at least one of perPod or perContainer must be set")]
    errs: list[Cause] = []
    for name in ("perPod", "perContainer"):
        q = parse_or_none(overhead.get(name))
        if q is not None and q.sign() < 0:
            errs.append(invalid_value(child(path, name), str(q), "must be non-negative"))
    return errs


# --- DeviceTaintRule ---


def validate_device_taint_rule(obj: Obj, *, gates: FeatureGates | None = None) -> list[Cause]:
    return _validate_device_taint_rule_spec(_dict(obj.get("spec")), None, "spec")


def validate_device_taint_rule_update(new: Obj, old: Obj, *, gates: FeatureGates | None = None) -> list[Cause]:
    return _validate_device_taint_rule_spec(_dict(new.get("spec")), _dict(old.get("spec")), "spec")


def validate_device_taint_rule_status_update(new: Obj, old: Obj, *, gates: FeatureGates | None = None
                                             ) -> list[Cause]:
    conditions = _list(_dict(new.get("status")).get("conditions"))
    errs = validate_conditions(conditions, "status.conditions")
    if len(conditions) > DEVICE_TAINT_RULE_STATUS_MAX_CONDITIONS:
        errs.append(too_many("status.conditions", len(conditions), DEVICE_TAINT_RULE_STATUS_MAX_CONDITIONS))
    return errs


def _validate_device_taint_rule_spec(spec: Obj, old_spec: Obj | None, path: str) -> list[Cause]:
    errs: list[Cause] = []
    selector = spec.get("deviceSelector")
    if selector is not None:
        selector = _dict(selector)
        sp = child(path, "deviceSelector")
        if selector.get("driver") is not None:
            errs += validate_driver_name(_str(selector.get("driver")), child(sp, "driver"))
        if selector.get("pool") is not None:
            errs += validate_pool_name(_str(selector.get("pool")), child(sp, "pool"))
        if selector.get("device") is not None:
            errs += validate_dns1123_label(_str(selector.get("device")), child(sp, "device"))
    old_taint = _dict(old_spec.get("taint")) if old_spec is not None else None
    errs += _validate_device_taint(_dict(spec.get("taint")), old_taint, child(path, "taint"))
    return errs


# --- ResourcePoolStatusRequest (resource.k8s.io/v1alpha3, DRAResourcePoolStatus, KEP-5677) ---
RESOURCE_POOL_STATUS_REQUEST_LIMIT_MAX = 1000
RESOURCE_POOL_STATUS_REQUEST_MAX_POOLS = 1000
RESOURCE_POOL_STATUS_REQUEST_MAX_CONDITIONS = 10


def validate_resource_pool_status_request(obj: Obj, *, gates: FeatureGates | None = None) -> list[Cause]:
    spec = _dict(obj.get("spec"))
    errs: list[Cause] = []
    if not spec.get("driver"):
        errs.append(required("spec.driver"))
    else:
        errs += validate_driver_name(_str(spec["driver"]), "spec.driver")
    if spec.get("poolName") is not None:
        errs += validate_pool_name(_str(spec["poolName"]), "spec.poolName")
    limit = spec.get("limit")
    if isinstance(limit, int) and limit < 1:
        errs.append(invalid_value("spec.limit", limit, "must be greater than or equal to 1"))
    elif isinstance(limit, int) and limit > RESOURCE_POOL_STATUS_REQUEST_LIMIT_MAX:
        errs.append(invalid_value("spec.limit", limit,
                                  f"must be less than or equal to {RESOURCE_POOL_STATUS_REQUEST_LIMIT_MAX}"))
    return errs


def validate_resource_pool_status_request_update(new: Obj, old: Obj, *, gates: FeatureGates | None = None
                                                 ) -> list[Cause]:
    """The spec is immutable."""
    if not semantic_equal(new.get("spec"), old.get("spec")):
        return [invalid_value("spec", new.get("spec"), "field is immutable")]
    return []


def validate_resource_pool_status_request_status_update(new: Obj, old: Obj, *, gates: FeatureGates | None = None
                                                        ) -> list[Cause]:
    """A status once set is final (the request is complete); a new one names its pool count."""
    if old.get("status") is not None:
        if not semantic_equal(new.get("status"), old.get("status")):
            return [invalid_value("status", new.get("status"), "field is immutable")]
        return []
    status = new.get("status")
    if status is None:
        return []
    status = _dict(status)
    errs: list[Cause] = []
    count = status.get("poolCount")
    if count is None:
        errs.append(required("status.poolCount"))
    elif isinstance(count, int) and count < 0:
        errs.append(invalid_value("status.poolCount", count, "must be greater than or equal to 0"))
    pools = _list(status.get("pools"))
    if len(pools) > RESOURCE_POOL_STATUS_REQUEST_MAX_POOLS:
        errs.append(too_many("status.pools", len(pools), RESOURCE_POOL_STATUS_REQUEST_MAX_POOLS))
    for i, pool in enumerate(pools):
        p = index("status.pools", i)
        pool = _dict(pool)
        if not pool.get("driver"):
            errs.append(required(child(p, "driver")))
        else:
            errs += validate_driver_name(_str(pool["driver"]), child(p, "driver"))
        if not pool.get("poolName"):
            errs.append(required(child(p, "poolName")))
        else:
            errs += validate_pool_name(_str(pool["poolName"]), child(p, "poolName"))
    conditions = _list(status.get("conditions"))
    errs += validate_conditions(conditions, "status.conditions")
    if len(conditions) > RESOURCE_POOL_STATUS_REQUEST_MAX_CONDITIONS:
        errs.append(too_many("status.conditions", len(conditions), RESOURCE_POOL_STATUS_REQUEST_MAX_CONDITIONS))
    return errs
