"""Names and labels as apimachinery checks them (k8s.io/apimachinery/pkg/util/validation and
metav1 validation): DNS-1123 label and subdomain, qualified name, label value, C identifier.

The one copy of these rules. Matching is Go's: the whole value must match, so `"gpu\n"` is not a name
(Python's `$` would also match before a trailing newline; `re.fullmatch` does not).
"""

from __future__ import annotations

import re
from typing import Any

from dramock.schemas.validation.field import Cause, invalid_value

_DNS1123_LABEL_FMT = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS1123_LABEL_RE = re.compile(_DNS1123_LABEL_FMT)
_DNS1123_SUBDOMAIN_FMT = _DNS1123_LABEL_FMT + "(\\." + _DNS1123_LABEL_FMT + ")*"
_DNS1123_SUBDOMAIN_RE = re.compile(_DNS1123_SUBDOMAIN_FMT)
_QUALIFIED_NAME_FMT = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_QUALIFIED_NAME_RE = re.compile(_QUALIFIED_NAME_FMT)
_LABEL_VALUE_FMT = "(" + _QUALIFIED_NAME_FMT + ")?"
_LABEL_VALUE_RE = re.compile(_LABEL_VALUE_FMT)
_C_IDENTIFIER_FMT = "[A-Za-z_][A-Za-z0-9_]*"
_C_IDENTIFIER_RE = C_IDENTIFIER_RE = re.compile(_C_IDENTIFIER_FMT)


def regex_error(msg: str, fmt: str, *examples: str) -> str:
    if not examples:
        return f"{msg} (regex used for validation is '{fmt}')"
    msg += " (e.g. "
    for i, example in enumerate(examples):
        if i > 0:
            msg += " or "
        msg += f"'{example}', "
    return msg + f"regex used for validation is '{fmt}')"


def max_len_error(n: int) -> str:
    return f"must be no more than {n} characters"


def full_match(regex: re.Pattern, value: str) -> bool:
    return regex.fullmatch(value) is not None


def is_dns1123_label(value: str) -> list[str]:
    if len(value) <= 63 and _DNS1123_LABEL_RE.fullmatch(value) is not None:
        return []
    errs = []
    if len(value) > 63:
        errs.append(max_len_error(63))
    if not full_match(_DNS1123_LABEL_RE, value):
        errs.append(regex_error("a lowercase RFC 1123 label must consist of lower case alphanumeric characters or "
                                "'-', and must start and end with an alphanumeric character",
                                _DNS1123_LABEL_FMT, "my-name", "123-abc"))
    return errs


def is_dns1123_subdomain(value: str) -> list[str]:
    if len(value) <= 253 and _DNS1123_SUBDOMAIN_RE.fullmatch(value) is not None:
        return []
    errs = []
    if len(value) > 253:
        errs.append(max_len_error(253))
    if not full_match(_DNS1123_SUBDOMAIN_RE, value):
        errs.append(regex_error("a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, "
                                "'-' or '.', and must start and end with an alphanumeric character",
                                _DNS1123_SUBDOMAIN_FMT, "example.com"))
    return errs


_QUALIFIED_NAME_ERR = ("must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
                       "alphanumeric character")


def is_qualified_name(value: str) -> list[str]:
    if len(value) <= 63 and _QUALIFIED_NAME_RE.fullmatch(value) is not None:  # no prefix, valid
        return []
    errs: list[str] = []
    parts = value.split("/")
    if len(parts) == 1:
        name = parts[0]
    elif len(parts) == 2:
        prefix, name = parts
        if not prefix:
            errs.append("prefix part must be non-empty")
        else:
            errs.extend("prefix part " + m for m in is_dns1123_subdomain(prefix))
    else:
        return ["a qualified name " + regex_error(_QUALIFIED_NAME_ERR, _QUALIFIED_NAME_FMT, "MyName", "my.name",
                                                  "123-abc")
                + " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"]
    if not name:
        errs.append("name part must be non-empty")
    elif len(name) > 63:
        errs.append("name part " + max_len_error(63))
    if not full_match(_QUALIFIED_NAME_RE, name):
        errs.append("name part " + regex_error(_QUALIFIED_NAME_ERR, _QUALIFIED_NAME_FMT, "MyName", "my.name",
                                               "123-abc"))
    return errs


def is_label_value(value: str) -> list[str]:
    if len(value) <= 63 and _LABEL_VALUE_RE.fullmatch(value) is not None:
        return []
    errs = []
    if len(value) > 63:
        errs.append(max_len_error(63))
    if not full_match(_LABEL_VALUE_RE, value):
        errs.append(regex_error("a valid label must be an empty string or consist of alphanumeric characters, '-', "
                                "'_' or '.', and must start and end with an alphanumeric character",
                                _LABEL_VALUE_FMT, "MyValue", "my_value", "12345"))
    return errs


def is_c_identifier(value: str) -> list[str]:
    if _C_IDENTIFIER_RE.fullmatch(value) is not None:
        return []
    return [regex_error("a valid C identifier must start with alphabetic character or '_', followed by a string of "
                        "alphanumeric characters or '_'", _C_IDENTIFIER_FMT, "my_name", "MY_NAME", "MyName")]


def validate_dns1123_label(value: str, path: str) -> list[Cause]:
    if len(value) <= 63 and _DNS1123_LABEL_RE.fullmatch(value) is not None:
        return []
    return [invalid_value(path, value, m) for m in is_dns1123_label(value)]


def validate_dns1123_subdomain(value: str, path: str) -> list[Cause]:
    if len(value) <= 253 and _DNS1123_SUBDOMAIN_RE.fullmatch(value) is not None:
        return []
    return [invalid_value(path, value, m) for m in is_dns1123_subdomain(value)]


def validate_label_name(value: str, path: str) -> list[Cause]:
    """metav1validation.ValidateLabelName."""
    if len(value) <= 63 and _QUALIFIED_NAME_RE.fullmatch(value) is not None:  # no prefix, valid
        return []
    return [invalid_value(path, value, m) for m in is_qualified_name(value)]


def validate_label_value(value: str, path: str) -> list[Cause]:
    if len(value) <= 63 and _LABEL_VALUE_RE.fullmatch(value) is not None:
        return []
    return [invalid_value(path, value, m) for m in is_label_value(value)]


def validate_labels(labels: Any, path: str) -> list[Cause]:
    errs: list[Cause] = []
    for k, v in (labels or {}).items():
        errs.extend(validate_label_name(k, path))
        errs.extend(validate_label_value(v if isinstance(v, str) else str(v), path))
    return errs
