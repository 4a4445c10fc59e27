"""How strategic merge patch fails: k8s.io/apimachinery's mergepatch error strings, the error that
carries upstream's answer kind, and Go's rendering and equality of decoded JSON values used by them."""

from __future__ import annotations

from typing import Any

# k8s.io/apimachinery/pkg/util/mergepatch error strings.
ERR_BAD_FORMAT_PRIMITIVE_LIST = "invalid patch format of primitive list"
ERR_BAD_FORMAT_RETAIN_KEYS = "invalid patch format of retainKeys"
ERR_BAD_FORMAT_SET_ELEMENT_ORDER = "invalid patch format of setElementOrder list"
ERR_NO_LIST_OF_LISTS = "lists of lists are not supported"


def _go_fmt(v: Any) -> str:
    """fmt's %v rendering of a decoded JSON value (maps print with sorted keys), for error messages."""
    if v is None:
        return "<nil>"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        return repr(int(v)) if v.is_integer() and abs(v) < 1e21 else repr(v)
    if isinstance(v, dict):
        return "map[" + " ".join(f"{k}:{_go_fmt(v[k])}" for k in sorted(v)) + "]"
    if isinstance(v, list):
        return "[" + " ".join(_go_fmt(x) for x in v) + "]"
    return str(v)


def _go_type(v: Any) -> str:
    """reflect.TypeOf(v).String() for a decoded JSON value."""
    if isinstance(v, dict):
        return "map[string]interface {}"
    if isinstance(v, list):
        return "[]interface {}"
    if isinstance(v, bool):
        return "bool"
    if isinstance(v, int):
        return "int64"
    if isinstance(v, float):
        return "float64"
    if isinstance(v, str):
        return "string"
    return "<nil>"


def _go_eq(a: Any, b: Any) -> bool:
    """Go interface equality: same dynamic type and equal value (so True != 1 and 1 != 1.0)."""
    return type(a) is type(b) and a == b


class _SMPError(Exception):
    """A strategicpatch failure; `kind` picks the answer upstream's interpretStrategicMergePatchError gives."""

    def __init__(self, kind: str, message: str):
        super().__init__(message)
        self.kind = kind  # "bad_request" | "unprocessable" | "internal"
        self.message = message


def _bad_format(message: str) -> _SMPError:
    return _SMPError("bad_request", message)


def _internal(message: str) -> _SMPError:
    return _SMPError("internal", message)


def _no_merge_key(m: dict, key: str) -> _SMPError:
    return _internal(f"map: {_go_fmt(m)} does not contain declared merge key: {key}")


def _bad_arg_type(expected: str, actual: Any) -> _SMPError:
    return _internal(f"expected a {expected}, but received a {_go_type(actual)}")
