"""Field errors (upstream's k8s.io/apimachinery/pkg/util/validation/field) and ObjectMeta validation.

A cause is `{"reason", "message", "field"}` as it appears in a Status's details.causes.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

Obj = dict[str, Any]
Cause = dict[str, str]

DNS1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
DNS1123_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_LABEL_NAME = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
_LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")


def cause(reason: str, field: str, message: str) -> Cause:
    return {"reason": reason, "message": message, "field": field}


def invalid_value(field: str, value: Any, detail: str) -> Cause:
    rendered = json.dumps(value) if not isinstance(value, str) else f'"{value}"'
    return cause("FieldValueInvalid", field, f"Invalid value: {rendered}: {detail}")


def required(field: str, detail: str = "") -> Cause:
    return cause("FieldValueRequired", field, "Required value" + (f": {detail}" if detail else ""))


def forbidden(field: str, detail: str) -> Cause:
    return cause("FieldValueForbidden", field, f"Forbidden: {detail}")


def dns_subdomain_errors(value: str, field: str) -> list[Cause]:
    if len(value) > 253:
        return [invalid_value(field, value, "must be no more than 253 characters")]
    if not DNS1123_SUBDOMAIN.match(value):
        return [invalid_value(field, value, "a lowercase RFC 1123 subdomain must consist of lower case "
                              "alphanumeric characters, '-' or '.', and must start and end with an "
                              "alphanumeric character (e.g. 'example.com', regex used for validation is "
                              "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')")]
    return []


def dns_label_errors(value: str, field: str) -> list[Cause]:
    if len(value) > 63:
        return [invalid_value(field, value, "must be no more than 63 characters")]
    if not DNS1123_LABEL.match(value):
        return [invalid_value(field, value, "a lowercase RFC 1123 label must consist of lower case "
                              "alphanumeric characters or '-', and must start and end with an "
                              "alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for "
                              "validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')")]
    return []


def qualified_name_errors(key: str, field: str) -> list[Cause]:
    prefix, _, name = key.rpartition("/")
    errs: list[Cause] = []
    if prefix and dns_subdomain_errors(prefix, field):
        errs.append(invalid_value(field, key, "prefix part a lowercase RFC 1123 subdomain must consist of "
                                  "lower case alphanumeric characters, '-' or '.', and must start and end "
                                  "with an alphanumeric character"))
    if not name or len(name) > 63 or not _LABEL_NAME.match(name):
        errs.append(invalid_value(field, key, "name part must consist of alphanumeric characters, '-', '_' "
                                  "or '.', and must start and end with an alphanumeric character (e.g. "
                                  "'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
                                  "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"))
    return errs


def _pruned(value: Any) -> Any:
    """`value` without null, {} and [] members (Go's decoding makes them indistinguishable from absent)."""
    if isinstance(value, dict):
        out = {k: _pruned(v) for k, v in value.items()}
        return {k: v for k, v in out.items() if v not in (None, {}, [])}
    if isinstance(value, list):
        return [_pruned(v) for v in value]
    return value


def semantic_equal(a: Any, b: Any) -> bool:
    """Upstream's apiequality.Semantic.DeepEqual on wire-shaped values: empty and absent are equal."""
    return a == b or _pruned(a) == _pruned(b)


def validate_object_meta(obj: Obj, namespaced: bool, name_check: Callable[[str, str], list[Cause]]
                         ) -> list[Cause]:
    meta = obj.get("metadata") or {}
    errs: list[Cause] = []
    name = meta.get("name") or ""
    if not name:
        errs.append(required("metadata.name", "name or generateName is required"))
    else:
        errs.extend(name_check(name, "metadata.name"))
    if namespaced and not meta.get("namespace"):
        errs.append(required("metadata.namespace"))
    if not namespaced and meta.get("namespace"):
        errs.append(forbidden("metadata.namespace", "not allowed on this type"))
    for key, value in (meta.get("labels") or {}).items():
        errs.extend(qualified_name_errors(key, "metadata.labels"))
        if not isinstance(value, str) or len(value) > 63 or not _LABEL_VALUE.match(value):
            errs.append(invalid_value("metadata.labels", value, "a valid label must be an empty string or "
                                      "consist of alphanumeric characters, '-', '_' or '.', and must start "
                                      "and end with an alphanumeric character (e.g. 'MyValue',  or "
                                      "'my_value',  or '12345', regex used for validation is "
                                      "'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"))
    for key in (meta.get("annotations") or {}):
        errs.extend(qualified_name_errors(key.lower(), "metadata.annotations"))
    return errs


def validate_object_meta_update(new: Obj, old: Obj) -> list[Cause]:
    errs: list[Cause] = []
    nm, om = new.get("metadata") or {}, old.get("metadata") or {}
    for f in ("name", "namespace", "uid", "creationTimestamp"):
        if nm.get(f) != om.get(f):
            errs.append(invalid_value(f"metadata.{f}", nm.get(f), "field is immutable"))
    return errs
