"""The CEL standard library functions: size, the string tests contains/startsWith/endsWith, and the type
conversions int, uint, double, string, bytes, bool, dyn and type (parsing and formatting as Go's strconv
does). Like every library implementation, each takes the activation first and the receiver next."""

from __future__ import annotations

import decimal
import math
import re
from typing import Any

from dramock.cel.errors import CELRuntimeError, go_quote
from dramock.cel.limits import INT64_MAX, UINT64_MAX, fits_int64
from dramock.cel.operators import no_overload, require_strings
from dramock.cel.values import CelType, DeviceEnv, UInt, type_name


def fn_size(s: list, x: Any) -> int:
    t = type(x)
    if t is str or t is bytes or t is list or isinstance(x, dict):
        return len(x)
    raise no_overload("size", x)


def fn_contains(s: list, a: Any, b: Any) -> bool:
    require_strings("contains", a, b)
    return b in a


def fn_starts_with(s: list, a: Any, b: Any) -> bool:
    require_strings("startsWith", a, b)
    return a.startswith(b)


def fn_ends_with(s: list, a: Any, b: Any) -> bool:
    require_strings("endsWith", a, b)
    return a.endswith(b)


_INT_RE = re.compile(r"[+-]?[0-9]+\Z")
_UINT_RE = re.compile(r"\+?[0-9]+\Z")
_FLOAT_RE = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*(?:[eE][+-]?[0-9]+)?|\.[0-9]+(?:[eE][+-]?[0-9]+)?|inf|infinity|nan)\Z",
                       re.IGNORECASE)


def fn_int(s: list, x: Any) -> int:
    t = type(x)
    if t is int:
        return x
    if t is UInt:
        if x > INT64_MAX:
            raise CELRuntimeError("range error")
        return int(x)
    if t is float:
        if not (-9.223372036854776e18 < x < 9.223372036854776e18):
            raise CELRuntimeError("range error")
        return int(x)
    if t is str:
        if not _INT_RE.match(x):
            raise CELRuntimeError(f"strconv.ParseInt: parsing {go_quote(x)}: invalid syntax")
        v = int(x)
        if not fits_int64(v):
            raise CELRuntimeError(f"strconv.ParseInt: parsing {go_quote(x)}: value out of range")
        return v
    raise no_overload("int", x)


def fn_uint(s: list, x: Any) -> UInt:
    t = type(x)
    if t is UInt:
        return x
    if t is int:
        if x < 0:
            raise CELRuntimeError("range error")
        return UInt(x)
    if t is float:
        if not (-1 < x < 1.8446744073709552e19):
            raise CELRuntimeError("range error")
        return UInt(int(x))
    if t is str:
        if not _UINT_RE.match(x):
            raise CELRuntimeError(f"strconv.ParseUint: parsing {go_quote(x)}: invalid syntax")
        v = int(x)
        if v > UINT64_MAX:
            raise CELRuntimeError(f"strconv.ParseUint: parsing {go_quote(x)}: value out of range")
        return UInt(v)
    raise no_overload("uint", x)


def fn_double(s: list, x: Any) -> float:
    t = type(x)
    if t is float:
        return x
    if t is int or t is UInt:
        return float(x)
    if t is str:
        if not _FLOAT_RE.match(x):
            raise CELRuntimeError(f"strconv.ParseFloat: parsing {go_quote(x)}: invalid syntax")
        return float(x)
    raise no_overload("double", x)


def _fmt_double(f: float) -> str:
    """strconv.FormatFloat(f, 'g', -1, 64), as cel-go's string(double)."""
    if math.isnan(f):
        return "NaN"
    if math.isinf(f):
        return "+Inf" if f > 0 else "-Inf"
    if f == 0:
        return "-0" if math.copysign(1.0, f) < 0 else "0"
    sign, digit_tuple, exp = decimal.Decimal(repr(f)).as_tuple()
    assert isinstance(exp, int)  # finite: NaN and the infinities returned above
    digits = "".join(map(str, digit_tuple)).rstrip("0") or "0"
    x = exp + len(digit_tuple) - 1  # decimal exponent of the first digit
    if x < -4 or x >= 6:
        mant = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
        out = f"{mant}e{'-' if x < 0 else '+'}{abs(x):02d}"
    elif x >= 0:
        whole = digits[:x + 1].ljust(x + 1, "0")
        frac = digits[x + 1:]
        out = whole + ("." + frac if frac else "")
    else:
        out = "0." + "0" * (-x - 1) + digits
    return ("-" if sign else "") + out


def fn_string(s: list, x: Any) -> str:
    t = type(x)
    if t is str:
        return x
    if t is bool:
        return "true" if x else "false"
    if t is int or t is UInt:
        return str(int(x))
    if t is float:
        return _fmt_double(x)
    if t is bytes:
        try:
            return x.decode("utf-8")
        except UnicodeDecodeError:
            raise CELRuntimeError("invalid UTF-8 in bytes, cannot convert to string") from None
    raise no_overload("string", x)


def fn_bytes(s: list, x: Any) -> bytes:
    if type(x) is bytes:
        return x
    if type(x) is str:
        return x.encode("utf-8", errors="surrogatepass")
    raise no_overload("bytes", x)


_GO_BOOLS = {"1": True, "t": True, "T": True, "TRUE": True, "true": True, "True": True,
             "0": False, "f": False, "F": False, "FALSE": False, "false": False, "False": False}


def fn_bool(s: list, x: Any) -> bool:
    if type(x) is bool:
        return x
    if type(x) is str:
        v = _GO_BOOLS.get(x)
        if v is None:
            raise CELRuntimeError(f"strconv.ParseBool: parsing {go_quote(x)}: invalid syntax")
        return v
    raise no_overload("bool", x)


def fn_dyn(s: list, x: Any) -> Any:
    return x


def fn_type(s: list, x: Any) -> CelType:
    return CelType(type_name(x) if type(x) is not DeviceEnv else "kubernetes.DRADevice")
