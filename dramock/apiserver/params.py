"""Query parameters as kube-apiserver decodes and validates them (its parameter codec, then
apimachinery's ValidateListOptions and the per-verb option checks).

Decoding failures are 400 BadRequest with Go's strconv message; options that decode but break a rule
are 422 Invalid against `<Verb>Options.meta.k8s.io ""`.
"""

from __future__ import annotations

import re
from typing import Any

from dramock import errors

_DECIMAL = re.compile(r"[+-]?[0-9]+")  # what strconv.ParseInt(s, 10, 64) reads (no spaces, no underscores)
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1
# Which options kind a verb's query parameters decode into (for the 422's kind).
OPTIONS_KIND = {"create": "CreateOptions", "update": "UpdateOptions", "patch": "PatchOptions",
                "delete": "DeleteOptions", "deletecollection": "DeleteOptions"}
FIELD_VALIDATION_VALUES = ("Ignore", "Strict", "Warn")


def query_bool(raw: str | None) -> bool | None:
    """Absent: None. Present: false only for "0" or "false" (any case), as upstream's converter reads it."""
    if raw is None:
        return None
    return not (raw == "0" or raw.lower() == "false")


def query_int(raw: str, key: str) -> int:
    """An int64 query parameter; a bad one is a 400 with strconv's wording."""
    if not _DECIMAL.fullmatch(raw):
        raise errors.bad_request(f'strconv.ParseInt: parsing "{raw}": invalid syntax')
    value = int(raw)
    if not _INT64_MIN <= value <= _INT64_MAX:
        raise errors.bad_request(f'strconv.ParseInt: parsing "{raw}": value out of range')
    return value


def _cause(reason: str, field: str, message: str) -> dict[str, str]:
    return {"reason": reason, "field": field, "message": message}


def _quoted(values: tuple[str, ...] | list[str]) -> str:
    return ", ".join(f'"{v}"' for v in values)


def invalid_options(kind: str, causes: list[dict[str, str]]) -> errors.APIError:
    return errors.invalid(kind, "meta.k8s.io", "", causes)


def check_list_options(rv: str, rv_match: str, token: str, send_initial: bool | None) -> None:
    """ValidateListOptions for a list (not a watch)."""
    causes = []
    if rv_match:
        if not rv:
            causes.append(_cause("FieldValueForbidden", "resourceVersionMatch",
                                 "Forbidden: resourceVersionMatch is forbidden unless resourceVersion is provided"))
        if token:
            causes.append(_cause("FieldValueForbidden", "resourceVersionMatch",
                                 "Forbidden: resourceVersionMatch is forbidden when continue is provided"))
        if rv_match not in ("Exact", "NotOlderThan"):
            causes.append(_cause("FieldValueNotSupported", "resourceVersionMatch",
                                 f'Unsupported value: "{rv_match}": supported values: "Exact", "NotOlderThan", ""'))
        if rv_match == "Exact" and rv == "0":
            causes.append(_cause("FieldValueForbidden", "resourceVersionMatch",
                                 'Forbidden: resourceVersionMatch "exact" is forbidden for resourceVersion "0"'))
    if send_initial is not None:
        causes.append(_cause("FieldValueForbidden", "sendInitialEvents",
                             "Forbidden: sendInitialEvents is forbidden for list"))
    if causes:
        raise invalid_options("ListOptions", causes)


def check_dry_run(verb: str, values: list[str]) -> bool:
    if any(v != "All" for v in values):
        rendered = "[" + ",".join(f'"{v}"' for v in values) + "]"
        raise invalid_options(OPTIONS_KIND.get(verb, "CreateOptions"), [_cause(
            "FieldValueNotSupported", "dryRun", f'Unsupported value: {rendered}: supported values: "All"')])
    return bool(values)


def check_field_validation(verb: str, value: str) -> str:
    if value and value not in FIELD_VALIDATION_VALUES:
        raise invalid_options(OPTIONS_KIND.get(verb, "CreateOptions"), [_cause(
            "FieldValueNotSupported", "fieldValidation",
            f'Unsupported value: "{value}": supported values: "", {_quoted(FIELD_VALIDATION_VALUES)}')])
    return value or "Warn"


def check_propagation_policy(options: dict[str, Any]) -> None:
    policy = options.get("propagationPolicy")
    if policy and options.get("orphanDependents") is not None:
        raise invalid_options("DeleteOptions", [_cause(
            "FieldValueInvalid", "propagationPolicy",
            f'Invalid value: "{policy}": orphanDependents and deletionPropagation cannot be both set')])
    if policy and policy not in ("Orphan", "Background", "Foreground"):
        raise invalid_options("DeleteOptions", [_cause(
            "FieldValueNotSupported", "propagationPolicy",
            f'Unsupported value: "{policy}": supported values: "Foreground", "Background", "Orphan", "nil"')])
