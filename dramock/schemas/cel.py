"""CEL for Dynamic Resource Allocation: the one CEL module of dramock.

Used by API validation (compile checks of `DeviceSelector.cel.expression` on create/update) and by the
scheduler's allocator (evaluation per device). The behaviour follows upstream Kubernetes
`k8s.io/dynamic-resource-allocation/cel` (compile.go) and the Kubernetes CEL libraries (quantity, semver,
lists, regex, strings/ext, sets, optional types, two-variable comprehensions, `cel.bind`).

The pipeline is self-contained: a CEL lexer and recursive-descent parser (macros expanded at parse time,
as cel-go does), a static type checker over the DRA environment (the `device` variable), a worst-case
cost estimator (as `cel.EstimateCost` with the DRA size limits) and a compiler that turns the checked AST
into Python closures. Runtime cost is tracked in every comprehension iteration and in every operation
whose cost grows with its input (string/list concatenation, replace, join, regexes...), and evaluation
also has a wall-clock budget, so pathological expressions are cut off (`CELCostExceeded`) instead of
hanging the scheduler.

Why not celpy's runners: cel-python 0.5 has no type checker (no upstream-like compile errors), no
cost tracking, no `cel.bind`, no optional types, `has()` that swallows every error, and its
`CompiledRunner` (~40 µs per call) is several times slower than these closures; see bench/cel.py.

Public API:

    compile(expression, *, cost_limit=..., list_type_attributes=True, consumable_capacity=True)
        -> CompiledExpression    (cached per expression + options; raises CELCompileError/CELCostExceeded)
    CompiledExpression.evaluate(device) -> bool     (raises CELRuntimeError / CELCostExceeded)
    CompiledExpression.evaluate_cached(device_key, device) -> bool
    evaluate_cached(expression_or_compiled, device_key, device) -> bool
    device_env(driver, resource_slice_device) -> DeviceEnv    (v1 wire shape -> evaluation input)
    parse_quantity(s) -> Fraction,  Quantity.parse(s) -> Quantity,  Semver.parse(s) -> Semver
"""

from __future__ import annotations

import decimal
import math
import re
import sys
import threading
import time
from fractions import Fraction
from operator import itemgetter
from typing import Any, Callable, Iterable, Mapping

try:  # RE2 semantics (linear time, as Go's regexp) when google-re2 is installed.
    import re2 as _re2

    _RE2_OPTIONS = _re2.Options()
    _RE2_OPTIONS.log_errors = False
except Exception:  # pragma: no cover - depends on the machine
    _re2 = None
    _RE2_OPTIONS = None

__all__ = [
    "MAX_EXPRESSION_LENGTH", "CEL_SELECTOR_EXPRESSION_MAX_COST", "DEFAULT_TIME_BUDGET",
    "CELError", "CELCompileError", "CELRuntimeError", "CELCostExceeded",
    "CompiledExpression", "compile", "evaluate_cached", "device_env", "DeviceEnv", "clear_caches",
    "Quantity", "parse_quantity", "Semver", "UInt", "CelType", "CelOptional", "estimate_cost",
]

# Upstream resource.k8s.io/v1 constants.
MAX_EXPRESSION_LENGTH = 10 * 1024  # CELSelectorExpressionMaxLength
CEL_SELECTOR_EXPRESSION_MAX_COST = 1_000_000  # CELSelectorExpressionMaxCost
DEFAULT_TIME_BUDGET = 2.0  # seconds of wall clock per evaluation (a second guard after the cost limit)
MAX_RECURSION_DEPTH = 250  # cel-go's default parser recursion limit

# Size limits (resource.k8s.io/v1) that bound the worst-case cost estimate.
_DRIVER_NAME_MAX = 63  # DriverNameMaxLength
_DOMAIN_MAX = 63  # DeviceMaxDomainLength
_ID_MAX = 32  # DeviceMaxIDLength
_ATTRS_PER_DEVICE = 32  # ResourceSliceMaxAttributesAndCapacitiesPerDevice
_ATTR_VALUE_MAX = 64  # DeviceAttributeMaxValueLength (and list length bound with list-type attributes)
_ATTR_VALUES_PER_DEVICE = 48  # ResourceSliceMaxAttributeValuesPerDevice

_INT64_MAX = (1 << 63) - 1
_INT64_MIN = -(1 << 63)
_UINT64_MAX = (1 << 64) - 1

# Python-level recursion is what deep (left-nested) expressions need; 3.11 does not use the C stack for it.
if sys.getrecursionlimit() < 20000:
    sys.setrecursionlimit(20000)


# ============================================================================ errors


class CELError(Exception):
    """Base of every CEL error; `.message` is the upstream-like text."""

    def __init__(self, message: str):
        super().__init__(message)
        self.message = message


class CELCompileError(CELError):
    """The expression does not compile (syntax, type check, result type). Validation: field.Invalid."""


class CELRuntimeError(CELError):
    """Evaluation failed (missing attribute, bad operand...). The allocator treats it as "no match"."""


class CELCostExceeded(CELCompileError, CELRuntimeError):
    """Estimated cost above the limit at compile time ("too complex, exceeds cost limit": field.Forbidden
    upstream) or actual cost / time budget exhausted during evaluation."""

    def __init__(self, message: str, cost: int | None = None):
        super().__init__(message)
        self.cost = cost


_COST_LIMIT_MESSAGE = "too complex, exceeds cost limit"


# ============================================================================ values


class UInt(int):
    """A CEL `uint` value (Python int subclass, so arithmetic must re-wrap)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return f"{int(self)}u"


class CelType:
    """A CEL type value (`type(x)`, `int`, `list`...)."""

    __slots__ = ("name",)

    def __init__(self, name: str):
        self.name = name

    def __eq__(self, other: object) -> bool:
        return type(other) is CelType and other.name == self.name  # type: ignore[union-attr]

    def __hash__(self) -> int:
        return hash(("type", self.name))

    def __repr__(self) -> str:
        return self.name


class CelOptional:
    """A CEL `optional_type` value."""

    __slots__ = ("present", "value")

    def __init__(self, present: bool, value: Any = None):
        self.present = present
        self.value = value

    def __eq__(self, other: object) -> bool:
        if type(other) is not CelOptional:
            return False
        if not self.present or not other.present:  # type: ignore[union-attr]
            return self.present == other.present  # type: ignore[union-attr]
        return _eq(self.value, other.value)  # type: ignore[union-attr]

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"optional.of({self.value!r})" if self.present else "optional.none()"


_NONE = CelOptional(False)

# ---------------------------------------------------------------------------- Quantity

DECIMAL_SI, BINARY_SI, DECIMAL_EXPONENT = "DecimalSI", "BinarySI", "DecimalExponent"

_DCTX = decimal.Context(prec=decimal.MAX_PREC, Emax=decimal.MAX_EMAX, Emin=decimal.MIN_EMIN,
                        traps=[decimal.InvalidOperation, decimal.DivisionByZero, decimal.Overflow])
_D0 = decimal.Decimal(0)
_NANO = decimal.Decimal("1e-9")

_QTY_SPLIT_RE = "^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$"
_QTY_ERR_FORMAT = f"quantities must match the regular expression '{_QTY_SPLIT_RE}'"
_QTY_ERR_NUMERIC = "unable to parse numeric part of quantity"
_QTY_ERR_SUFFIX = "unable to parse quantity's suffix"
_DEC_SUFFIXES = {"": 0, "n": -9, "u": -6, "m": -3, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_BIN_SUFFIXES = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
_SUFFIX_CHARS = frozenset("eEinumkKMGTP")


def _fits64(v: int) -> bool:
    return _INT64_MIN <= v <= _INT64_MAX


def _isdigit(c: str) -> bool:
    return "0" <= c <= "9"


def _scale_up64(v: int, scale: int) -> int | None:
    """v * 10**scale (scale >= 0) if it fits an int64."""
    if v == 0:
        return 0
    if scale > 18:
        return None
    r = v * 10 ** scale
    return r if _fits64(r) else None


def _i64_add(a: tuple[int, int], b: tuple[int, int]) -> tuple[int, int] | None:
    """Go's int64Amount.Add: None when the fast int64 path would overflow (Go then uses inf.Dec)."""
    av, asc = a
    bv, bsc = b
    if bv == 0:
        return a
    if av == 0:
        return b
    if asc == bsc:
        c = av + bv
        return (c, asc) if _fits64(c) else None
    if asc > bsc:
        up = _scale_up64(av, asc - bsc)
        if up is None:
            return None
        c = up + bv
        return (c, bsc) if _fits64(c) else None
    up = _scale_up64(bv, bsc - asc)
    if up is None:
        return None
    c = av + up
    return (c, asc) if _fits64(c) else None


class Quantity:
    """An exact Kubernetes resource.Quantity.

    `dec` is the exact value (a Decimal computed in an unbounded context). `i64` mirrors whether Go would
    hold the value in its fast int64Amount form `(value, base-10 scale)` or fell back to inf.Dec (None):
    `isInteger()`/`asInteger()` depend on it exactly as upstream (e.g. `quantity("1000m").isInteger()` is
    false, `quantity("1k").isInteger()` is true).
    """

    __slots__ = ("dec", "i64", "format")

    def __init__(self, dec: decimal.Decimal, i64: tuple[int, int] | None = None, fmt: str = DECIMAL_SI):
        self.dec = dec
        self.i64 = i64
        self.format = fmt

    @classmethod
    def _from_i64(cls, v: int, scale: int, fmt: str) -> Quantity:
        return cls(decimal.Decimal(v).scaleb(scale, _DCTX) if v else _D0, (v, scale), fmt)

    @classmethod
    def from_int(cls, v: int, fmt: str = DECIMAL_SI) -> Quantity:
        return cls._from_i64(v, 0, fmt)

    @classmethod
    def parse(cls, s: str) -> Quantity:
        """resource.ParseQuantity; raises ValueError with upstream's messages."""
        if not isinstance(s, str):
            raise ValueError(_QTY_ERR_FORMAT)
        if not s:
            raise ValueError(_QTY_ERR_FORMAT)
        if s == "0":
            return cls(_D0, (0, 0), DECIMAL_SI)
        positive, value, num, denom, suf = _scan_quantity(s)
        base, exponent, fmt = _quantity_suffix(suf)

        # Fast path (int64Amount) exactly when Go takes it.
        if fmt == BINARY_SI:
            scale = 0
            if exponent >= 0 and not denom:
                mantissa = 1 << exponent
                precision = 15 - len(num) - int(exponent * 3 / 10) - 1
            else:
                mantissa, precision = 1, -1
        else:
            scale = exponent
            mantissa = 1
            precision = 18 - (len(num) + len(denom))
        if precision >= 0:
            scale -= len(denom)
            if scale >= -9:
                shifted = int(num + denom)
                result = shifted * mantissa
                if _fits64(result):
                    return cls._from_i64(result if positive else -result, scale, fmt)

        # inf.Dec path.
        try:
            amount = decimal.Decimal(value) if value else None
        except decimal.InvalidOperation:
            amount = None
        if amount is None:
            raise ValueError(_QTY_ERR_NUMERIC)
        if base == 10:
            amount = amount.scaleb(exponent, _DCTX)
        else:
            amount = _DCTX.multiply(amount, decimal.Decimal(1 << exponent))
        negative = amount < 0
        amount = abs(amount)
        if amount != 0 and amount.as_tuple().exponent < -9:  # round non-zero values up to 1n
            amount = amount.quantize(_NANO, rounding=decimal.ROUND_UP, context=_DCTX)
        if fmt == BINARY_SI and amount > _INT64_MAX:
            amount = decimal.Decimal(_INT64_MAX)
        if fmt == BINARY_SI and 0 < amount < 1:
            fmt = DECIMAL_SI
        if negative:
            amount = -amount
        return cls(amount, None, fmt)

    # --- comparisons
    def cmp(self, other: Quantity) -> int:
        a, b = self.dec, other.dec
        return (a > b) - (a < b)

    def __eq__(self, other: object) -> bool:
        return type(other) is Quantity and self.dec == other.dec  # type: ignore[union-attr]

    def __hash__(self) -> int:
        return hash(self.dec)

    def __lt__(self, other: Quantity) -> bool:
        return self.dec < other.dec

    def __le__(self, other: Quantity) -> bool:
        return self.dec <= other.dec

    def __gt__(self, other: Quantity) -> bool:
        return self.dec > other.dec

    def __ge__(self, other: Quantity) -> bool:
        return self.dec >= other.dec

    # --- conversions
    def to_fraction(self) -> Fraction:
        if self.dec and self.dec.adjusted() > 4000:
            raise ValueError("quantity too large to convert exactly")
        return Fraction(self.dec)

    def sign(self) -> int:
        return (self.dec > 0) - (self.dec < 0)

    def as_int64(self) -> int | None:
        """Go's Quantity.AsInt64 (None when it reports false)."""
        if self.i64 is None:
            return None
        v, scale = self.i64
        if scale == 0:
            return v
        if scale < 0:
            return None
        return _scale_up64(v, scale)

    def as_approximate_float(self) -> float:
        try:
            return float(self.dec)
        except OverflowError:  # pragma: no cover
            return math.inf if self.dec > 0 else -math.inf

    # --- arithmetic (new values; the format follows Go: a zero receiver takes the operand's format)
    def add(self, other: Quantity) -> Quantity:
        fmt = other.format if self.dec == 0 else self.format
        if self.i64 is not None and other.i64 is not None:
            r = _i64_add(self.i64, other.i64)
            if r is not None:
                return Quantity._from_i64(r[0], r[1], fmt)
        return Quantity(_DCTX.add(self.dec, other.dec), None, fmt)

    def sub(self, other: Quantity) -> Quantity:
        fmt = other.format if self.dec == 0 else self.format
        if self.i64 is not None and other.i64 is not None and other.i64[0] != _INT64_MIN:
            r = _i64_add(self.i64, (-other.i64[0], other.i64[1]))
            if r is not None:
                return Quantity._from_i64(r[0], r[1], fmt)
        return Quantity(_DCTX.subtract(self.dec, other.dec), None, fmt)

    def mul(self, m: int) -> Quantity:
        if self.i64 is not None:
            v, scale = self.i64
            if v == 0:
                return Quantity._from_i64(0, scale, self.format)
            if m == 0:
                return Quantity._from_i64(0, 0, self.format)
            c = v * m
            if _fits64(c):
                if scale == 0 or (scale > 0 and _scale_up64(c, scale) is not None) or (
                        scale < 0 and -scale <= 18 and c % 10 ** -scale == 0):
                    return Quantity._from_i64(c, scale, self.format)
        return Quantity(_DCTX.multiply(self.dec, decimal.Decimal(m)), None, self.format)

    def div(self, d: int, places: int = 4) -> Quantity:
        q = _DCTX.divide(self.dec, decimal.Decimal(d))
        q = q.quantize(decimal.Decimal(1).scaleb(-places), rounding=decimal.ROUND_HALF_UP, context=_DCTX)
        return Quantity(q, None, self.format)

    def div_int(self, d: int) -> Quantity:
        q = _DCTX.divide_int(self.dec, decimal.Decimal(d))
        return Quantity(q, None, self.format)

    def __str__(self) -> str:
        return format_quantity(self)

    def __repr__(self) -> str:
        return f"Quantity({format_quantity(self)!r})"


def _scan_quantity(s: str) -> tuple[bool, str, str, str, str]:
    """Split a quantity string into (positive, value, numerator, denominator, suffix) the way
    resource.parseQuantityString does (including its leniencies: "+", "-" and "." are zero)."""
    n = len(s)
    pos = 0
    positive = True
    if n and s[0] in "+-":
        positive = s[0] == "+"
        pos = 1
    while pos < n and s[pos] == "0":
        pos += 1
    if pos >= n:
        return positive, "0", "0", "", ""
    start = pos
    while pos < n and _isdigit(s[pos]):
        pos += 1
    if pos >= n:
        return positive, s, s[start:], "", ""
    num = s[start:pos] or "0"
    denom = ""
    if s[pos] == ".":
        pos += 1
        dstart = pos
        while pos < n and _isdigit(s[pos]):
            pos += 1
        if pos >= n:
            return positive, s, num, s[dstart:], ""
        denom = s[dstart:pos]
    value = s[:pos]
    suffix_start = pos
    while pos < n and s[pos] in _SUFFIX_CHARS:
        pos += 1
    if pos >= n:
        return positive, value, num, denom, s[suffix_start:]
    if s[pos] in "+-":
        pos += 1
    while pos < n and _isdigit(s[pos]):
        pos += 1
    if pos >= n:
        return positive, value, num, denom, s[suffix_start:]
    raise ValueError(_QTY_ERR_FORMAT)


def _quantity_suffix(suf: str) -> tuple[int, int, str]:
    if suf in _DEC_SUFFIXES:
        return 10, _DEC_SUFFIXES[suf], DECIMAL_SI
    if suf in _BIN_SUFFIXES:
        return 2, _BIN_SUFFIXES[suf], BINARY_SI
    if len(suf) > 1 and suf[0] in "eE":
        digits = suf[1:]
        body = digits[1:] if digits[0] in "+-" else digits
        if body and all(_isdigit(c) for c in body):
            parsed = int(digits)
            if _fits64(parsed):
                parsed = ((parsed + (1 << 31)) % (1 << 32)) - (1 << 31)  # Go's int32() conversion
                return 10, parsed, DECIMAL_EXPONENT
    raise ValueError(_QTY_ERR_SUFFIX)


def parse_quantity(s: str) -> Fraction:
    """Parse Kubernetes quantity syntax exactly ("1Gi", "500m", "1.5e3", "2E"...) into an exact Fraction.
    Raises ValueError with resource.ParseQuantity's message for invalid input."""
    return Quantity.parse(s).to_fraction()


def format_quantity(q: Quantity) -> str:
    """Canonical string of a quantity (resource.Quantity.String): no fraction digits, the largest
    exponent that loses no precision, in the quantity's format."""
    d = q.dec
    if d == 0:
        return "0"
    fmt = q.format
    if fmt == BINARY_SI:
        if -1024 < d < 1024:
            fmt = DECIMAL_SI
        elif d != d.to_integral_value(rounding=decimal.ROUND_UP, context=_DCTX):
            fmt = DECIMAL_SI
    if fmt == BINARY_SI:
        v = int(d)
        exp = 0
        while exp < 60 and v % 1024 == 0:
            v //= 1024
            exp += 10
        suffix = {0: "", 10: "Ki", 20: "Mi", 30: "Gi", 40: "Ti", 50: "Pi", 60: "Ei"}[exp]
        return f"{v}{suffix}"
    # Base 10: mantissa * 10**exponent with the exponent a multiple of 3, rounded up to nano.
    if d.as_tuple().exponent < -9:
        d = d.quantize(_NANO, rounding=decimal.ROUND_UP, context=_DCTX)
    sign, digits, exponent = d.as_tuple()
    mantissa = int("".join(map(str, digits)))
    while mantissa and mantissa % 10 == 0:
        mantissa //= 10
        exponent += 1
    while exponent % 3:
        mantissa *= 10
        exponent -= 1
    text = f"{'-' if sign else ''}{mantissa}"
    if fmt == DECIMAL_EXPONENT:
        return text if exponent == 0 else f"{text}e{exponent}"
    table = {-9: "n", -6: "u", -3: "m", 0: "", 3: "k", 6: "M", 9: "G", 12: "T", 15: "P", 18: "E"}
    if exponent in table:
        return text + table[exponent]
    if exponent > 18:
        return f"{text}{'0' * (exponent - 18)}E"
    return f"{text}e{exponent}"  # pragma: no cover - exponent < -9 cannot happen after rounding


# ---------------------------------------------------------------------------- Semver

_SEMVER_ALNUM = frozenset("0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ-")
_SEMVER_DIGITS = frozenset("0123456789")


def _goq(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _parse_uint64(s: str) -> int:
    if not s or not all(c in _SEMVER_DIGITS for c in s):
        raise ValueError(f"strconv.ParseUint: parsing {_goq(s)}: invalid syntax")
    v = int(s)
    if v > _UINT64_MAX:
        raise ValueError(f"strconv.ParseUint: parsing {_goq(s)}: value out of range")
    return v


class Semver:
    """A semantic version (semver.org 2.0.0, parsed as github.com/blang/semver/v4 does)."""

    __slots__ = ("major", "minor", "patch", "pre", "build")

    def __init__(self, major: int, minor: int, patch: int, pre: tuple = (), build: tuple = ()):
        self.major, self.minor, self.patch, self.pre, self.build = major, minor, patch, pre, build

    @classmethod
    def parse(cls, s: str, normalize: bool = False) -> Semver:
        """blang/semver Parse (or the CEL library's normalizeAndParse); raises ValueError."""
        if normalize:
            s = _normalize_semver(s)
        if not s:
            raise ValueError("Version string empty")
        parts = s.split(".", 2)
        if len(parts) != 3:
            raise ValueError("No Major.Minor.Patch elements found")
        nums = []
        for label, p in (("major", parts[0]), ("minor", parts[1])):
            if not all(c in _SEMVER_DIGITS for c in p):
                raise ValueError(f"Invalid character(s) found in {label} number {_goq(p)}")
            if len(p) > 1 and p[0] == "0":
                raise ValueError(f"{label.capitalize()} number must not contain leading zeroes {_goq(p)}")
            nums.append(_parse_uint64(p))
        patch = parts[2]
        build: list[str] = []
        pre_parts: list[str] = []
        if "+" in patch:
            patch, _, b = patch.partition("+")
            build = b.split(".")
        if "-" in patch:
            patch, _, p = patch.partition("-")
            pre_parts = p.split(".")
        if not all(c in _SEMVER_DIGITS for c in patch):
            raise ValueError(f"Invalid character(s) found in patch number {_goq(patch)}")
        if len(patch) > 1 and patch[0] == "0":
            raise ValueError(f"Patch number must not contain leading zeroes {_goq(patch)}")
        nums.append(_parse_uint64(patch))
        pre = []
        for p in pre_parts:
            if not p:
                raise ValueError("Prerelease is empty")
            if all(c in _SEMVER_DIGITS for c in p):
                if len(p) > 1 and p[0] == "0":
                    raise ValueError(f"Numeric PreRelease version must not contain leading zeroes {_goq(p)}")
                pre.append((True, _parse_uint64(p)))
            elif all(c in _SEMVER_ALNUM for c in p):
                pre.append((False, p))
            else:
                raise ValueError(f"Invalid character(s) found in prerelease {_goq(p)}")
        for b in build:
            if not b:
                raise ValueError("Build meta data is empty")
            if not all(c in _SEMVER_ALNUM for c in b):
                raise ValueError(f"Invalid character(s) found in build meta data {_goq(b)}")
        return cls(nums[0], nums[1], nums[2], tuple(pre), tuple(build))

    def compare(self, o: Semver) -> int:
        for a, b in ((self.major, o.major), (self.minor, o.minor), (self.patch, o.patch)):
            if a != b:
                return 1 if a > b else -1
        if not self.pre or not o.pre:
            return (not self.pre) - (not o.pre)
        for (an, av), (bn, bv) in zip(self.pre, o.pre):
            if an and bn:
                if av != bv:
                    return 1 if av > bv else -1
            elif an != bn:
                return -1 if an else 1
            elif av != bv:
                return 1 if av > bv else -1
        return (len(self.pre) > len(o.pre)) - (len(self.pre) < len(o.pre))

    def __eq__(self, other: object) -> bool:
        return type(other) is Semver and self.compare(other) == 0  # type: ignore[arg-type]

    def __hash__(self) -> int:
        return hash((self.major, self.minor, self.patch, self.pre))

    def __lt__(self, other: Semver) -> bool:
        return self.compare(other) < 0

    def __str__(self) -> str:
        s = f"{self.major}.{self.minor}.{self.patch}"
        if self.pre:
            s += "-" + ".".join(str(v) for _, v in self.pre)
        if self.build:
            s += "+" + ".".join(self.build)
        return s

    def __repr__(self) -> str:
        return f"Semver({str(self)!r})"


def _normalize_semver(s: str) -> str:
    """The Kubernetes CEL semver library's normalization: drop a "v" prefix, strip leading zeros,
    fill a missing minor/patch with 0."""
    if s.startswith("v"):
        s = s[1:]
    parts = s.split(".", 2)
    for i, p in enumerate(parts):
        if len(p) > 1:
            p = p.lstrip("0")
            if not p or not _isdigit(p[0]):
                p = "0" + p
            parts[i] = p
    if len(parts) < 3:
        if "+" in parts[-1] or "-" in parts[-1]:
            raise ValueError("short version cannot contain PreRelease/Build meta data")
        parts += ["0"] * (3 - len(parts))
    return ".".join(parts)


# ============================================================================ lexer

_RESERVED = frozenset({"as", "break", "const", "continue", "else", "for", "function", "if", "import", "let",
                       "loop", "package", "namespace", "return", "var", "void", "while"})
_KEYWORDS = frozenset({"true", "false", "null", "in"})

_TOKEN_RE = re.compile(r"""
  (?P<ws>[ \t\n\r\f]+|//[^\n]*)
| (?P<rstr>(?:[rR][bB]?|[bB][rR])(?:\"\"\"[\s\S]*?\"\"\"|'''[\s\S]*?'''|"[^"\n\r]*"|'[^'\n\r]*'))
| (?P<str>[bB]?(?:\"\"\"(?:\\[\s\S]|[^\\])*?\"\"\"|'''(?:\\[\s\S]|[^\\])*?'''|"(?:\\.|[^"\\\n\r])*"|'(?:\\.|[^'\\\n\r])*'))
| (?P<float>[0-9]+\.[0-9]+(?:[eE][+-]?[0-9]+)?|[0-9]+[eE][+-]?[0-9]+|\.[0-9]+(?:[eE][+-]?[0-9]+)?)
| (?P<int>0x[0-9a-fA-F]+[uU]?|[0-9]+[uU]?)
| (?P<ident>[_a-zA-Z][_a-zA-Z0-9]*)
| (?P<qident>`[^`\n\r]+`)
| (?P<op>==|!=|<=|>=|&&|\|\||\.\?|\[\?|[-+*/%!<>?:.,\[\]{}()])
""", re.VERBOSE)

_ESCAPES = {"a": "\a", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v", "\\": "\\",
            "'": "'", '"': '"', "`": "`", "?": "?"}
_ESCAPE_RE = re.compile(r"\\(?:([abfnrtv\\'\"`?])|([0-3][0-7][0-7])|[xX]([0-9a-fA-F]{2})|u([0-9a-fA-F]{4})"
                        r"|U([0-9a-fA-F]{8})|(.|\n|$))")


class _Tok:
    __slots__ = ("kind", "text", "pos", "value")

    def __init__(self, kind: str, text: str, pos: int, value: Any = None):
        self.kind, self.text, self.pos, self.value = kind, text, pos, value

    def is_op(self, text: str) -> bool:
        return (self.kind == "op" or self.kind == "kw") and self.text == text

    def show(self) -> str:
        return "<EOF>" if self.kind == "eof" else self.text


class _SyntaxError(Exception):
    def __init__(self, pos: int, message: str):
        super().__init__(message)
        self.pos, self.message = pos, message


def _unescape(body: str, is_bytes: bool, pos: int) -> str | bytes:
    out: list = []
    last = 0
    for m in _ESCAPE_RE.finditer(body):
        chunk = body[last:m.start()]
        out.append(chunk.encode() if is_bytes else chunk)
        last = m.end()
        simple, octal, hx, u4, u8, bad = m.groups()
        if simple is not None:
            ch = _ESCAPES[simple]
            out.append(ch.encode() if is_bytes else ch)
        elif octal is not None or hx is not None:
            code = int(octal, 8) if octal is not None else int(hx, 16)
            out.append(bytes([code]) if is_bytes else chr(code))
        elif (u4 is not None or u8 is not None) and not is_bytes:
            code = int(u4 or u8, 16)
            if code > 0x10FFFF or 0xD800 <= code <= 0xDFFF:
                raise _SyntaxError(pos, "Syntax error: invalid unicode code point")
            out.append(chr(code))
        else:
            raise _SyntaxError(pos, f"Syntax error: token recognition error at: '\\{bad or ''}'")
    tail = body[last:]
    out.append(tail.encode() if is_bytes else tail)
    return b"".join(out) if is_bytes else "".join(out)


def _string_token(text: str, raw: bool, pos: int) -> _Tok:
    i = 0
    is_bytes = False
    while text[i] not in "'\"":
        if text[i] in "bB":
            is_bytes = True
        i += 1
    q = 3 if text[i:i + 3] in ('"""', "'''") else 1
    body = text[i + q:len(text) - q]
    if raw:
        value: str | bytes = body.encode() if is_bytes else body
    else:
        value = _unescape(body, is_bytes, pos)
    return _Tok("bytes" if is_bytes else "string", text, pos, value)


def _lex(src: str) -> list[_Tok]:
    toks: list[_Tok] = []
    pos = 0
    n = len(src)
    match = _TOKEN_RE.match
    while pos < n:
        m = match(src, pos)
        if m is None:
            rest = src[pos:]
            if rest[0] in "'\"":
                raise _SyntaxError(pos, f"Syntax error: token recognition error at: '{rest.splitlines()[0]}'")
            raise _SyntaxError(pos, f"Syntax error: token recognition error at: '{rest[0]}'")
        kind = m.lastgroup
        text = m.group()
        if kind == "ws":
            pass
        elif kind == "rstr" or kind == "str":
            toks.append(_string_token(text, kind == "rstr", pos))
        elif kind == "float":
            toks.append(_Tok("double", text, pos, float(text)))
        elif kind == "int":
            unsigned = text[-1] in "uU"
            digits = text[:-1] if unsigned else text
            value = int(digits, 16) if digits.startswith("0x") else int(digits)
            if unsigned:
                if value > _UINT64_MAX:
                    raise _SyntaxError(pos, "invalid uint literal")
                toks.append(_Tok("uint", text, pos, UInt(value)))
            else:
                if value > _INT64_MAX + 1:
                    raise _SyntaxError(pos, "invalid int literal")
                toks.append(_Tok("int", text, pos, value))
        elif kind == "ident":
            toks.append(_Tok("kw" if text in _KEYWORDS else "ident", text, pos))
        elif kind == "qident":
            toks.append(_Tok("qident", text, pos, text[1:-1]))
        else:
            toks.append(_Tok("op", text, pos))
        pos = m.end()
    toks.append(_Tok("eof", "", n))
    return toks


# ============================================================================ AST


class _Node:
    __slots__ = ("pos", "t")


class Lit(_Node):
    __slots__ = ("value", "big")

    def __init__(self, value: Any, pos: int, big: bool = False):
        self.value, self.pos, self.big = value, pos, big


class Ident(_Node):
    __slots__ = ("name",)

    def __init__(self, name: str, pos: int):
        self.name, self.pos = name, pos


class Select(_Node):
    __slots__ = ("operand", "field", "test", "opt")

    def __init__(self, operand: _Node, field: str, pos: int, test: bool = False, opt: bool = False):
        self.operand, self.field, self.pos, self.test, self.opt = operand, field, pos, test, opt


class Index(_Node):
    __slots__ = ("operand", "index", "opt")

    def __init__(self, operand: _Node, index: _Node, pos: int, opt: bool = False):
        self.operand, self.index, self.pos, self.opt = operand, index, pos, opt


class Call(_Node):
    __slots__ = ("fn", "args", "target")

    def __init__(self, fn: str, args: list, pos: int, target: _Node | None = None):
        self.fn, self.args, self.pos, self.target = fn, args, pos, target


class ListLit(_Node):
    __slots__ = ("elems", "opt")

    def __init__(self, elems: list, opt: frozenset, pos: int):
        self.elems, self.opt, self.pos = elems, opt, pos


class MapLit(_Node):
    __slots__ = ("entries",)

    def __init__(self, entries: list, pos: int):
        self.entries, self.pos = entries, pos  # [(key, value, optional)]


class StructLit(_Node):
    __slots__ = ("name", "fields")

    def __init__(self, name: str, fields: list, pos: int):
        self.name, self.fields, self.pos = name, fields, pos


class Loop(_Node):
    """An expanded comprehension macro. kind: all, exists, exists_one, map, filter, transformList,
    transformMap, transformMapEntry; v2 is the second variable of the two-variable forms."""

    __slots__ = ("kind", "v1", "v2", "rng", "pred", "body", "iter_cost")

    def __init__(self, kind: str, v1: str, v2: str | None, rng: _Node, pred: _Node | None,
                 body: _Node | None, pos: int):
        self.kind, self.v1, self.v2, self.rng, self.pred, self.body, self.pos = kind, v1, v2, rng, pred, body, pos
        self.iter_cost = 1


class Let(_Node):
    """cel.bind(var, init, body)."""

    __slots__ = ("var", "init", "body")

    def __init__(self, var: str, init: _Node, body: _Node, pos: int):
        self.var, self.init, self.body, self.pos = var, init, body, pos


class OptMap(_Node):
    """opt.optMap(var, body) / opt.optFlatMap(var, body)."""

    __slots__ = ("flat", "target", "var", "body")

    def __init__(self, flat: bool, target: _Node, var: str, body: _Node, pos: int):
        self.flat, self.target, self.var, self.body, self.pos = flat, target, var, body, pos


# ============================================================================ parser

_PRIMARY_EXPECTED = ("{'[', '{', '(', '.', '-', '!', 'true', 'false', 'null', NUM_FLOAT, NUM_INT, NUM_UINT, "
                     "STRING, BYTES, IDENTIFIER}")
_RELATIONS = {"<": "_<_", "<=": "_<=_", ">": "_>_", ">=": "_>=_", "==": "_==_", "!=": "_!=_", "in": "@in"}
_ONE_VAR_MACROS = {"all": "all", "exists": "exists", "exists_one": "exists_one", "existsOne": "exists_one"}


class _Parser:
    def __init__(self, src: str):
        self.toks = _lex(src)
        self.i = 0
        self.depth = 0
        self.last_literal: _Node | None = None  # the last literal made from a number token (for -literal)

    # --- token helpers
    def peek(self) -> _Tok:
        return self.toks[self.i]

    def next(self) -> _Tok:
        t = self.toks[self.i]
        self.i += 1
        return t

    def at(self, text: str) -> bool:
        return self.toks[self.i].is_op(text)

    def accept(self, text: str) -> bool:
        if self.toks[self.i].is_op(text):
            self.i += 1
            return True
        return False

    def expect(self, text: str) -> _Tok:
        t = self.toks[self.i]
        if not t.is_op(text):
            if t.kind == "eof":
                raise _SyntaxError(t.pos, f"Syntax error: missing '{text}' at '<EOF>'")
            raise _SyntaxError(t.pos, f"Syntax error: mismatched input '{t.show()}' expecting '{text}'")
        self.i += 1
        return t

    def ident(self) -> _Tok:
        t = self.next()
        if t.kind == "ident":
            return t
        if t.kind == "qident":
            return t
        raise _SyntaxError(t.pos, f"Syntax error: mismatched input '{t.show()}' expecting IDENTIFIER")

    # --- grammar
    def parse(self) -> _Node:
        e = self.expr()
        t = self.peek()
        if t.kind != "eof":
            raise _SyntaxError(t.pos, f"Syntax error: mismatched input '{t.show()}' expecting <EOF>")
        return e

    def expr(self) -> _Node:
        self.depth += 1
        if self.depth > MAX_RECURSION_DEPTH:
            raise _SyntaxError(self.peek().pos, f"expression recursion limit exceeded: {MAX_RECURSION_DEPTH}")
        e = self.or_()
        if self.at("?"):
            t = self.next()
            a = self.or_()
            self.expect(":")
            b = self.expr()
            e = Call("_?_:_", [e, a, b], t.pos)
        self.depth -= 1
        return e

    def or_(self) -> _Node:
        e = self.and_()
        while self.at("||"):
            t = self.next()
            e = Call("_||_", [e, self.and_()], t.pos)
        return e

    def and_(self) -> _Node:
        e = self.relation()
        while self.at("&&"):
            t = self.next()
            e = Call("_&&_", [e, self.relation()], t.pos)
        return e

    def relation(self) -> _Node:
        e = self.addition()
        while True:
            t = self.peek()
            fn = _RELATIONS.get(t.text) if t.kind in ("op", "kw") else None
            if fn is None:
                return e
            self.i += 1
            e = Call(fn, [e, self.addition()], t.pos)

    def addition(self) -> _Node:
        e = self.multiplication()
        while True:
            t = self.peek()
            if t.kind == "op" and t.text in ("+", "-"):
                self.i += 1
                e = Call("_+_" if t.text == "+" else "_-_", [e, self.multiplication()], t.pos)
            else:
                return e

    def multiplication(self) -> _Node:
        e = self.unary()
        while True:
            t = self.peek()
            if t.kind == "op" and t.text in ("*", "/", "%"):
                self.i += 1
                e = Call({"*": "_*_", "/": "_/_", "%": "_%_"}[t.text], [e, self.unary()], t.pos)
            else:
                return e

    def unary(self) -> _Node:
        t = self.peek()
        if t.is_op("!") or t.is_op("-"):
            op = t.text
            count = 0
            while self.accept(op):
                count += 1
            m = self.member()
            if count % 2 == 0:
                return m
            if op == "-" and m is self.last_literal:
                v = m.value
                if type(v) is int or type(v) is float:
                    m.value = -v
                    m.big = False
                    m.pos = t.pos
                    return m
            return Call("!_" if op == "!" else "-_", [m], t.pos)
        return self.member()

    def member(self) -> _Node:
        e = self.primary()
        while True:
            t = self.peek()
            if t.kind != "op":
                return e
            if t.text == ".":
                self.i += 1
                name = self.ident()
                if self.at("("):
                    args = self.args()
                    e = self.call(name.value if name.kind == "qident" else name.text, args, e, name.pos)
                else:
                    e = Select(e, name.value if name.kind == "qident" else name.text, t.pos)
            elif t.text == ".?":
                self.i += 1
                name = self.ident()
                e = Select(e, name.value if name.kind == "qident" else name.text, t.pos, opt=True)
            elif t.text == "[" or t.text == "[?":
                self.i += 1
                idx = self.expr()
                self.expect("]")
                e = Index(e, idx, t.pos, opt=t.text == "[?")
            elif t.text == "{" and _qualified_name(e) is not None:
                self.i += 1
                fields = []
                while not self.at("}"):
                    opt = self.accept("?")
                    f = self.ident()
                    self.expect(":")
                    fields.append((f.text, self.expr(), opt))
                    if not self.accept(","):
                        break
                self.expect("}")
                e = StructLit(_qualified_name(e) or "", fields, t.pos)
            else:
                return e

    def args(self) -> list[_Node]:
        self.expect("(")
        args: list[_Node] = []
        if self.accept(")"):
            return args
        while True:
            args.append(self.expr())
            if self.accept(")"):
                return args
            t = self.peek()
            if not t.is_op(","):
                if t.kind == "eof":
                    raise _SyntaxError(t.pos, "Syntax error: missing ')' at '<EOF>'")
                raise _SyntaxError(t.pos, f"Syntax error: mismatched input '{t.show()}' expecting {{')', ','}}")
            self.i += 1

    def primary(self) -> _Node:
        t = self.next()
        k = t.kind
        if k == "ident":
            if t.text in _RESERVED:
                raise _SyntaxError(t.pos, f"reserved identifier: {t.text}")
            if self.at("("):
                return self.call(t.text, self.args(), None, t.pos)
            return Ident(t.text, t.pos)
        if k == "int" or k == "double":
            lit = self.last_literal = Lit(t.value, t.pos, big=k == "int" and t.value > _INT64_MAX)
            return lit
        if k in ("uint", "string", "bytes"):
            return Lit(t.value, t.pos)
        if k == "kw":
            if t.text == "true":
                return Lit(True, t.pos)
            if t.text == "false":
                return Lit(False, t.pos)
            if t.text == "null":
                return Lit(None, t.pos)
        elif k == "op":
            if t.text == "(":
                e = self.expr()
                self.expect(")")
                if e is self.last_literal:  # a parenthesized literal is not folded with a leading '-'
                    self.last_literal = None
                return e
            if t.text == "[":
                return self.list_lit(t)
            if t.text == "{":
                return self.map_lit(t)
            if t.text == ".":
                name = self.ident()
                if self.at("("):
                    return self.call(name.text, self.args(), None, name.pos)
                return Ident(name.text, name.pos)
        if k == "eof":
            raise _SyntaxError(t.pos, f"Syntax error: mismatched input '<EOF>' expecting {_PRIMARY_EXPECTED}")
        raise _SyntaxError(t.pos, f"Syntax error: mismatched input '{t.show()}' expecting {_PRIMARY_EXPECTED}")

    def list_lit(self, start: _Tok) -> _Node:
        elems: list[_Node] = []
        opt: set[int] = set()
        while not self.at("]"):
            if self.accept("?"):
                opt.add(len(elems))
            elems.append(self.expr())
            if not self.accept(","):
                break
        self.expect("]")
        return ListLit(elems, frozenset(opt), start.pos)

    def map_lit(self, start: _Tok) -> _Node:
        entries = []
        while not self.at("}"):
            opt = self.accept("?")
            k = self.expr()
            self.expect(":")
            entries.append((k, self.expr(), opt))
            if not self.accept(","):
                break
        self.expect("}")
        return MapLit(entries, start.pos)

    # --- macros (expanded at parse time, as cel-go does)
    def call(self, fn: str, args: list[_Node], target: _Node | None, pos: int) -> _Node:
        n = len(args)
        if target is None:
            if fn == "has" and n == 1:
                a = args[0]
                if not isinstance(a, Select) or a.test or a.opt:
                    raise _SyntaxError(pos, "invalid argument to has() macro")
                return Select(a.operand, a.field, a.pos, test=True)
            return Call(fn, args, pos)
        if fn in _ONE_VAR_MACROS and n in (2, 3):
            if n == 2:
                return Loop(_ONE_VAR_MACROS[fn], self.var(args[0]), None, target, args[1], None, pos)
            v1, v2 = self.var(args[0]), self.var(args[1])
            if v1 == v2:
                raise _SyntaxError(args[1].pos, f"duplicate variable name: {v1}")
            return Loop(_ONE_VAR_MACROS[fn], v1, v2, target, args[2], None, pos)
        if fn == "map" and n in (2, 3):
            pred = args[1] if n == 3 else None
            return Loop("map", self.var(args[0]), None, target, pred, args[-1], pos)
        if fn == "filter" and n == 2:
            return Loop("filter", self.var(args[0]), None, target, args[1], None, pos)
        if fn in ("transformList", "transformMap", "transformMapEntry") and n in (3, 4):
            v1, v2 = self.var(args[0]), self.var(args[1])
            if v1 == v2:
                raise _SyntaxError(args[1].pos, f"duplicate variable name: {v1}")
            pred = args[2] if n == 4 else None
            return Loop(fn, v1, v2, target, pred, args[-1], pos)
        if fn == "bind" and n == 3 and isinstance(target, Ident) and target.name == "cel":
            if not isinstance(args[0], Ident):
                raise _SyntaxError(args[0].pos, "cel.bind() variable names must be simple identifiers")
            return Let(args[0].name, args[1], args[2], pos)
        if fn in ("optMap", "optFlatMap") and n == 2:
            if not isinstance(args[0], Ident):
                raise _SyntaxError(args[0].pos, f"{fn}() variable name must be a simple identifier")
            return OptMap(fn == "optFlatMap", target, args[0].name, args[1], pos)
        return Call(fn, args, pos, target)

    @staticmethod
    def var(arg: _Node) -> str:
        if not isinstance(arg, Ident):
            raise _SyntaxError(arg.pos, "argument must be a simple name")
        return arg.name


def _qualified_name(e: _Node) -> str | None:
    if isinstance(e, Ident):
        return e.name
    if isinstance(e, Select) and not e.test and not e.opt:
        base = _qualified_name(e.operand)
        return None if base is None else f"{base}.{e.field}"
    return None


def _line_col(src: str, pos: int) -> tuple[int, int]:
    line = src.count("\n", 0, pos) + 1
    col = pos - (src.rfind("\n", 0, pos) + 1) + 1
    return line, col


def _format_issues(src: str, issues: list[tuple[int, str]]) -> str:
    """cel-go's Issues.String(): one "ERROR: <input>:L:C: msg" block per issue with the source snippet."""
    lines = src.split("\n")
    out = []
    seen = set()
    for pos, msg in sorted(issues, key=lambda i: i[0]):
        if (pos, msg) in seen:
            continue
        seen.add((pos, msg))
        line, col = _line_col(src, min(pos, len(src)))
        text = lines[line - 1] if line - 1 < len(lines) else ""
        out.append(f"ERROR: <input>:{line}:{col}: {msg}\n | {text}\n | {'.' * (col - 1)}^")
    return "\n".join(out)


# ============================================================================ types


class _T:
    """A static CEL type. kind: bool int uint double string bytes null_type dyn error list map type
    optional_type obj (name) param (name)."""

    __slots__ = ("kind", "params", "name")

    def __init__(self, kind: str, params: tuple = (), name: str = ""):
        self.kind, self.params, self.name = kind, params, name

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, _T) and self.kind == other.kind and self.name == other.name
                and self.params == other.params)

    def __hash__(self) -> int:
        return hash((self.kind, self.params, self.name))

    def __str__(self) -> str:
        k = self.kind
        if k == "list":
            return f"list({self.params[0]})"
        if k == "map":
            return f"map({self.params[0]}, {self.params[1]})"
        if k == "type":
            return f"type({self.params[0]})" if self.params else "type"
        if k == "optional_type":
            return f"optional_type({self.params[0]})"
        if k in ("obj", "param"):
            return self.name
        if k == "error":
            return "*error*"
        return k

    __repr__ = __str__


BOOL, INT, UINT, DOUBLE = _T("bool"), _T("int"), _T("uint"), _T("double")
STRING, BYTES, NULL, DYN, ERR = _T("string"), _T("bytes"), _T("null_type"), _T("dyn"), _T("error")
QUANTITY = _T("obj", name="kubernetes.Quantity")
SEMVER = _T("obj", name="kubernetes.Semver")
DEVICE = _T("obj", name="kubernetes.DRADevice")
_PA, _PB = _T("param", name="A"), _T("param", name="B")


def _list(e: _T) -> _T:
    return _T("list", (e,))


def _map(k: _T, v: _T) -> _T:
    return _T("map", (k, v))


def _opt(e: _T) -> _T:
    return _T("optional_type", (e,))


def _type(e: _T | None = None) -> _T:
    return _T("type", (e,) if e is not None else ())


ATTRIBUTES = _map(STRING, _map(STRING, DYN))
CAPACITY = _map(STRING, _map(STRING, QUANTITY))
_DEVICE_FIELDS = {"driver": STRING, "attributes": ATTRIBUTES, "capacity": CAPACITY,
                  "allowMultipleAllocations": BOOL}

_TYPE_IDENTS = {"bool": BOOL, "int": INT, "uint": UINT, "double": DOUBLE, "string": STRING, "bytes": BYTES,
                "null_type": NULL, "list": _list(DYN), "map": _map(DYN, DYN), "type": _type()}
_TYPE_VALUES = {"bool": "bool", "int": "int", "uint": "uint", "double": "double", "string": "string",
                "bytes": "bytes", "null_type": "null_type", "list": "list", "map": "map", "type": "type"}


def _is_dyn(t: _T) -> bool:
    return t.kind == "dyn" or t.kind == "error"


def _assign(formal: _T, actual: _T, b: dict) -> bool:
    """Is `actual` assignable to `formal`, binding the type parameters of `formal` in `b`."""
    fk = formal.kind
    if fk == "param":
        cur = b.get(formal.name)
        if cur is None:
            b[formal.name] = actual
            return True
        if _assign(cur, actual, {}):
            return True
        if _assign(actual, cur, {}):
            b[formal.name] = actual
            return True
        return False
    ak = actual.kind
    if fk == "dyn" or fk == "error" or ak == "dyn" or ak == "error":
        if formal.params:
            for p in formal.params:
                _assign(p, DYN, b)
        return True
    if fk != ak:
        return False
    if fk == "obj":
        return formal.name == actual.name
    if len(formal.params) != len(actual.params):
        return len(formal.params) == 0 or len(actual.params) == 0
    return all(_assign(fp, ap, b) for fp, ap in zip(formal.params, actual.params))


def _subst(t: _T, b: dict) -> _T:
    if t.kind == "param":
        return b.get(t.name) or DYN
    if t.params:
        return _T(t.kind, tuple(_subst(p, b) for p in t.params), t.name)
    return t


class _Ov:
    __slots__ = ("member", "params", "result")

    def __init__(self, member: bool, params: tuple, result: _T):
        self.member, self.params, self.result = member, params, result


_FUNCS: dict[str, list[_Ov]] = {}


def _decl(name: str, how: str, *sigs: tuple) -> None:
    """how: "g" global, "m" member (receiver is the first parameter), "gm" both. sig: (*params, result)."""
    for sig in sigs:
        for member in ((False,) if how == "g" else (True,) if how == "m" else (False, True)):
            _FUNCS.setdefault(name, []).append(_Ov(member, tuple(sig[:-1]), sig[-1]))


_NUMS = (INT, UINT, DOUBLE)
_decl("_+_", "g", (INT, INT, INT), (UINT, UINT, UINT), (DOUBLE, DOUBLE, DOUBLE), (STRING, STRING, STRING),
      (BYTES, BYTES, BYTES), (_list(_PA), _list(_PA), _list(_PA)))
for _op in ("_-_", "_*_", "_/_"):
    _decl(_op, "g", (INT, INT, INT), (UINT, UINT, UINT), (DOUBLE, DOUBLE, DOUBLE))
_decl("_%_", "g", (INT, INT, INT), (UINT, UINT, UINT))
_decl("-_", "g", (INT, INT), (DOUBLE, DOUBLE))
_decl("!_", "g", (BOOL, BOOL))
_decl("_==_", "g", (_PA, _PA, BOOL))
_decl("_!=_", "g", (_PA, _PA, BOOL))
for _op in ("_<_", "_<=_", "_>_", "_>=_"):
    _decl(_op, "g", (BOOL, BOOL, BOOL), (STRING, STRING, BOOL), (BYTES, BYTES, BOOL),
          *((a, b, BOOL) for a in _NUMS for b in _NUMS))
_decl("@in", "g", (_PA, _list(_PA), BOOL), (_PA, _map(_PA, _PB), BOOL))
_decl("size", "gm", (STRING, INT), (BYTES, INT), (_list(_PA), INT), (_map(_PA, _PB), INT))
for _f in ("contains", "startsWith", "endsWith"):
    _decl(_f, "m", (STRING, STRING, BOOL))
_decl("matches", "gm", (STRING, STRING, BOOL))
_decl("int", "g", (INT, INT), (UINT, INT), (DOUBLE, INT), (STRING, INT))
_decl("uint", "g", (INT, UINT), (UINT, UINT), (DOUBLE, UINT), (STRING, UINT))
_decl("double", "g", (INT, DOUBLE), (UINT, DOUBLE), (DOUBLE, DOUBLE), (STRING, DOUBLE))
_decl("string", "g", (INT, STRING), (UINT, STRING), (DOUBLE, STRING), (BOOL, STRING), (BYTES, STRING),
      (STRING, STRING))
_decl("bytes", "g", (STRING, BYTES), (BYTES, BYTES))
_decl("bool", "g", (BOOL, BOOL), (STRING, BOOL))
_decl("dyn", "g", (_PA, DYN))
_decl("type", "g", (_PA, _type(_PA)))
# strings extension (cel-go ext.Strings, version 2)
_decl("charAt", "m", (STRING, INT, STRING))
_decl("indexOf", "m", (STRING, STRING, INT), (STRING, STRING, INT, INT), (_list(_PA), _PA, INT))
_decl("lastIndexOf", "m", (STRING, STRING, INT), (STRING, STRING, INT, INT), (_list(_PA), _PA, INT))
_decl("lowerAscii", "m", (STRING, STRING))
_decl("upperAscii", "m", (STRING, STRING))
_decl("replace", "m", (STRING, STRING, STRING, STRING), (STRING, STRING, STRING, INT, STRING))
_decl("split", "m", (STRING, STRING, _list(STRING)), (STRING, STRING, INT, _list(STRING)))
_decl("substring", "m", (STRING, INT, STRING), (STRING, INT, INT, STRING))
_decl("trim", "m", (STRING, STRING))
_decl("join", "m", (_list(STRING), STRING), (_list(STRING), STRING, STRING))
_decl("strings.quote", "g", (STRING, STRING))
# Kubernetes lists library
_decl("isSorted", "m", (_list(_PA), BOOL))
_decl("sum", "m", (_list(_PA), _PA))
_decl("min", "m", (_list(_PA), _PA))
_decl("max", "m", (_list(_PA), _PA))
# Kubernetes regex library
_decl("find", "m", (STRING, STRING, STRING))
_decl("findAll", "m", (STRING, STRING, _list(STRING)), (STRING, STRING, INT, _list(STRING)))
# cel-go ext.Sets
for _f in ("sets.contains", "sets.equivalent", "sets.intersects"):
    _decl(_f, "g", (_list(_PA), _list(_PA), BOOL))
# Kubernetes quantity library
_decl("quantity", "g", (STRING, QUANTITY))
_decl("isQuantity", "g", (STRING, BOOL))
_decl("sign", "gm", (QUANTITY, INT))
_decl("isGreaterThan", "m", (QUANTITY, QUANTITY, BOOL), (SEMVER, SEMVER, BOOL))
_decl("isLessThan", "m", (QUANTITY, QUANTITY, BOOL), (SEMVER, SEMVER, BOOL))
_decl("compareTo", "m", (QUANTITY, QUANTITY, INT), (SEMVER, SEMVER, INT))
_decl("asApproximateFloat", "m", (QUANTITY, DOUBLE))
_decl("asInteger", "m", (QUANTITY, INT))
_decl("isInteger", "m", (QUANTITY, BOOL))
_decl("add", "m", (QUANTITY, QUANTITY, QUANTITY), (QUANTITY, INT, QUANTITY))
_decl("sub", "m", (QUANTITY, QUANTITY, QUANTITY), (QUANTITY, INT, QUANTITY))
_decl("mul", "m", (QUANTITY, INT, QUANTITY))
_decl("div", "m", (QUANTITY, INT, QUANTITY), (QUANTITY, INT, INT, QUANTITY))
_decl("divInt", "m", (QUANTITY, INT, QUANTITY))
# Kubernetes semver library
_decl("semver", "g", (STRING, SEMVER), (STRING, BOOL, SEMVER))
_decl("isSemver", "g", (STRING, BOOL), (STRING, BOOL, BOOL))
for _f in ("major", "minor", "patch"):
    _decl(_f, "m", (SEMVER, INT))
# optional types
_decl("optional.of", "g", (_PA, _opt(_PA)))
_decl("optional.ofNonZeroValue", "g", (_PA, _opt(_PA)))
_decl("optional.none", "g", (_opt(DYN),))
_decl("hasValue", "m", (_opt(_PA), BOOL))
_decl("value", "m", (_opt(_PA), _PA))
_decl("orValue", "m", (_opt(_PA), _PA, _PA))
_decl("or", "m", (_opt(_PA), _opt(_PA), _opt(_PA)))
# DRAListTypeAttributes: includes() works for scalar and list-type attributes
_decl("includes", "m", (_list(_PA), _PA, BOOL), (_PA, _PA, BOOL))

_OPERATOR_NAMES = {"_+_", "_-_", "_*_", "_/_", "_%_", "-_", "!_", "_==_", "_!=_", "_<_", "_<=_", "_>_", "_>=_",
                   "@in", "_&&_", "_||_", "_?_:_"}
_FEATURE_FUNCS = {"includes": "list_type_attributes"}


class _Options:
    __slots__ = ("list_type_attributes", "consumable_capacity")

    def __init__(self, list_type_attributes: bool, consumable_capacity: bool):
        self.list_type_attributes = list_type_attributes
        self.consumable_capacity = consumable_capacity


# ============================================================================ checker


class _Checker:
    def __init__(self, opts: _Options):
        self.opts = opts
        self.issues: list[tuple[int, str]] = []
        self.scopes: list[dict[str, _T]] = []

    def err(self, pos: int, msg: str) -> _T:
        self.issues.append((pos, msg))
        return ERR

    def check(self, n: _Node) -> _T:
        t = getattr(self, "c_" + type(n).__name__)(n)
        n.t = t
        return t

    def lookup(self, name: str) -> _T | None:
        for scope in reversed(self.scopes):
            if name in scope:
                return scope[name]
        return None

    # --- nodes
    def c_Lit(self, n: Lit) -> _T:
        v = n.value
        if n.big:
            return self.err(n.pos, "invalid int literal")
        if v is None:
            return NULL
        t = type(v)
        return {bool: BOOL, int: INT, UInt: UINT, float: DOUBLE, str: STRING, bytes: BYTES}[t]

    def c_Ident(self, n: Ident) -> _T:
        t = self.lookup(n.name)
        if t is not None:
            return t
        if n.name == "device":
            return DEVICE
        if n.name in _TYPE_IDENTS:
            return _type(_TYPE_IDENTS[n.name])
        return self.err(n.pos, f"undeclared reference to '{n.name}' (in container '')")

    def _field(self, ot: _T, field: str, pos: int) -> _T:
        k = ot.kind
        if k == "dyn" or k == "error":
            return DYN if k == "dyn" else ERR
        if k == "map":
            if not _assign(ot.params[0], STRING, {}):
                return self.err(pos, f"type '{ot}' does not support field selection")
            return ot.params[1]
        if ot == DEVICE:
            ft = _DEVICE_FIELDS.get(field)
            if ft is None or (field == "allowMultipleAllocations" and not self.opts.consumable_capacity):
                return self.err(pos, f"undefined field '{field}'")
            return ft
        return self.err(pos, f"type '{ot}' does not support field selection")

    def c_Select(self, n: Select) -> _T:
        ot = self.check(n.operand)
        if n.test:
            self._field(ot.params[0] if ot.kind == "optional_type" else ot, n.field, n.pos)
            return BOOL
        if ot.kind == "optional_type":
            inner = ot.params[0]
            ft = self._field(inner, n.field, n.pos)
            return ft if ft.kind == "error" else _opt(ft)
        ft = self._field(ot, n.field, n.pos)
        if n.opt and ft.kind != "error":
            return _opt(ft)
        return ft

    def c_Index(self, n: Index) -> _T:
        ot = self.check(n.operand)
        it = self.check(n.index)
        wrap = n.opt or ot.kind == "optional_type"
        if ot.kind == "optional_type":
            ot = ot.params[0]
        k = ot.kind
        if k == "dyn" or k == "error":
            rt = DYN
        elif k == "list" and (it.kind in ("int", "dyn", "error")):
            rt = ot.params[0]
        elif k == "map" and _assign(ot.params[0], it, {}):
            rt = ot.params[1]
        else:
            return self.err(n.pos, f"found no matching overload for '_[_]' applied to '({ot}, {it})'")
        return _opt(rt) if wrap else rt

    def c_ListLit(self, n: ListLit) -> _T:
        first: _T | None = None
        mismatch = False
        for i, e in enumerate(n.elems):
            et = self.check(e)
            if i in n.opt:
                if et.kind == "optional_type":
                    et = et.params[0]
                elif not _is_dyn(et):
                    self.err(e.pos, f"found no matching overload for 'optional element' applied to '({et})'")
            if first is None:
                first = et
            elif not mismatch and et != first and not _is_dyn(first) and et.kind != "error":
                self.err(e.pos, f"expected type '{first}' but found '{et}'")
                mismatch = True
        return _list(first or DYN)

    def c_MapLit(self, n: MapLit) -> _T:
        kt: _T | None = None
        vt: _T | None = None
        for k, v, opt in n.entries:
            a = self.check(k)
            b = self.check(v)
            if opt and b.kind == "optional_type":
                b = b.params[0]
            if a.kind not in ("string", "int", "uint", "bool", "dyn", "error"):
                self.err(k.pos, f"unsupported map key type: {a}")
            if kt is None:
                kt, vt = a, b
                continue
            if a != kt and not _is_dyn(kt) and a.kind != "error":
                self.err(k.pos, f"expected type '{kt}' but found '{a}'")
            if b != vt and vt is not None and not _is_dyn(vt) and b.kind != "error":
                self.err(v.pos, f"expected type '{vt}' but found '{b}'")
        return _map(kt or DYN, vt or DYN)

    def c_StructLit(self, n: StructLit) -> _T:
        for _, v, _ in n.fields:
            self.check(v)
        return self.err(n.pos, f"undeclared reference to '{n.name}' (in container '')")

    def c_Let(self, n: Let) -> _T:
        it = self.check(n.init)
        self.scopes.append({n.var: it})
        try:
            return self.check(n.body)
        finally:
            self.scopes.pop()

    def c_OptMap(self, n: OptMap) -> _T:
        tt = self.check(n.target)
        if tt.kind == "optional_type":
            vt = tt.params[0]
        elif _is_dyn(tt):
            vt = DYN
        else:
            fn = "optFlatMap" if n.flat else "optMap"
            return self.err(n.pos, f"found no matching overload for '{fn}' applied to '{tt}.(dyn)'")
        self.scopes.append({n.var: vt})
        try:
            bt = self.check(n.body)
        finally:
            self.scopes.pop()
        if n.flat:
            if bt.kind != "optional_type" and not _is_dyn(bt):
                return self.err(n.pos, f"found no matching overload for 'optFlatMap' applied to '{tt}.({bt})'")
            return bt if bt.kind == "optional_type" else _opt(DYN)
        return _opt(bt)

    def c_Loop(self, n: Loop) -> _T:
        rt = self.check(n.rng)
        two = n.v2 is not None
        if rt.kind == "list":
            v1, v2 = (INT, rt.params[0]) if two else (rt.params[0], None)
        elif rt.kind == "map":
            v1, v2 = (rt.params[0], rt.params[1]) if two else (rt.params[0], None)
        elif _is_dyn(rt):
            v1, v2 = DYN, DYN
        else:
            self.err(n.rng.pos, f"expression of type '{rt}' cannot be range of a comprehension "
                                "(must be list, map, or dynamic)")
            v1, v2 = ERR, ERR
        scope = {n.v1: v1}
        if two:
            scope[n.v2] = v2  # type: ignore[index]
        self.scopes.append(scope)
        try:
            pt = self.check(n.pred) if n.pred is not None else None
            bt = self.check(n.body) if n.body is not None else None
        finally:
            self.scopes.pop()
        kind = n.kind
        if pt is not None and pt.kind not in ("bool", "dyn", "error"):
            op = {"all": "_&&_", "exists": "_||_", "exists_one": "_?_:_"}.get(kind, "_?_:_")
            if op == "_?_:_":
                return self.err(n.pred.pos, f"found no matching overload for '_?_:_' applied to "  # type: ignore
                                            f"'({pt}, {bt or 'int'}, {bt or 'int'})'")
            return self.err(n.pred.pos, f"found no matching overload for '{op}' applied to '(bool, {pt})'")
        if kind in ("all", "exists", "exists_one"):
            return BOOL
        if kind == "map" or kind == "transformList":
            return _list(bt or DYN)
        if kind == "filter":
            return _list(v1)
        if kind == "transformMap":
            return _map(INT if rt.kind == "list" else v1, bt or DYN)
        # transformMapEntry
        if bt is not None and bt.kind == "map":
            return bt
        if bt is not None and not _is_dyn(bt):
            return self.err(n.body.pos, f"found no matching overload for 'transformMapEntry' applied to "  # type: ignore
                                        f"'({bt})'")
        return _map(DYN, DYN)

    def c_Call(self, n: Call) -> _T:
        fn = n.fn
        if n.target is not None and fn not in _FUNCS or (n.target is not None and _namespace(n, self)):
            qual = _qualified_name(n.target) if n.target is not None else None
            if qual is not None and f"{qual}.{fn}" in _FUNCS and self.lookup(qual.split(".")[0]) is None \
                    and qual.split(".")[0] != "device":
                n.fn = fn = f"{qual}.{fn}"
                n.target = None
        if fn == "_&&_" or fn == "_||_":
            ts = [self.check(a) for a in n.args]
            if any(t.kind not in ("bool", "dyn", "error") for t in ts):
                return self.err(n.pos, f"found no matching overload for '{fn}' applied to '({ts[0]}, {ts[1]})'")
            return BOOL
        if fn == "_?_:_":
            c, a, b = (self.check(x) for x in n.args)
            if c.kind not in ("bool", "dyn", "error"):
                return self.err(n.pos, f"found no matching overload for '_?_:_' applied to '({c}, {a}, {b})'")
            if a == b:
                return a
            if a.kind == "error" or b.kind == "error":
                return ERR
            if _is_dyn(a) or _is_dyn(b):
                return DYN
            bind: dict = {}
            if _assign(a, b, bind):
                return a
            if _assign(b, a, {}):
                return b
            return self.err(n.pos, f"found no matching overload for '_?_:_' applied to '({c}, {a}, {b})'")
        target_t = self.check(n.target) if n.target is not None else None
        arg_ts = [self.check(a) for a in n.args]
        member = n.target is not None
        ovs = _FUNCS.get(fn)
        feature = _FEATURE_FUNCS.get(fn)
        if ovs is not None and feature is not None and not getattr(self.opts, feature):
            ovs = None
        if ovs is not None:
            ovs = [o for o in ovs if o.member == member]
        if not ovs or fn in _OPERATOR_NAMES and member:
            return self.err(n.pos, f"undeclared reference to '{fn}' (in container '')")
        all_ts = ([target_t] if member else []) + arg_ts  # type: ignore[list-item]
        if any(t.kind == "error" for t in all_ts):
            return ERR
        results = []
        for o in ovs:
            if len(o.params) != len(all_ts):
                continue
            b: dict = {}
            if all(_assign(p, t, b) for p, t in zip(o.params, all_ts)):
                results.append(_subst(o.result, b))
        if not results:
            if member:
                sig = f"{target_t}.({', '.join(map(str, arg_ts))})"
            else:
                sig = f"({', '.join(map(str, arg_ts))})"
            return self.err(n.pos, f"found no matching overload for '{fn}' applied to '{sig}'")
        if fn == "matches" or fn == "find" or fn == "findAll":
            pat = n.args[0] if member else (n.args[1] if len(n.args) > 1 else None)
            if isinstance(pat, Lit) and isinstance(pat.value, str):
                try:
                    _regex(pat.value)
                except CELRuntimeError:
                    self.err(pat.pos, f"invalid {fn} argument")
        first = results[0]
        if all(r == first for r in results):
            return first
        return DYN


def _namespace(n: Call, checker: _Checker) -> bool:
    """A member call whose target is a dotted name that is not a variable, e.g. sets.contains(...)."""
    qual = _qualified_name(n.target) if n.target is not None else None
    if qual is None:
        return False
    root = qual.split(".")[0]
    return checker.lookup(root) is None and root != "device" and f"{qual}.{n.fn}" in _FUNCS
