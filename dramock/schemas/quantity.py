"""Kubernetes `resource.Quantity` (k8s.io/apimachinery/pkg/api/resource): the one implementation in dramock.

Used by the CEL library (`quantity()`, `isQuantity()`, comparisons, arithmetic on device capacities), by
API validation (the KEP-5075 requestPolicy rules and their messages) and, next, by quota and the scheduler.

What is exact, as upstream:
  * parsing (`ParseQuantity`), including its lenient forms ("1.", ".5", "1.G", "+", "-.") and its rounding:
    non-zero values finer than 1n round up (away from zero) to 1n, BinarySI saturates at max int64, a
    BinarySI value in (0, 1) becomes DecimalSI, exponents outside the int32 scale are rejected;
  * the representation Go picks: the int64 fast path `(value, base-10 scale)` exactly when Go takes it
    (`i64`; `isInteger()`/`asInteger()` depend on it) or the inf.Dec fallback, whose scale `dec` keeps
    (its Decimal exponent is inf.Dec's negated scale), so `AsApproximateFloat64()` rounds as Go does;
  * `String()`: the text parse keeps when Go reuses it ("1500m", "+1Ki", "1.500"), otherwise the canonical
    form of `CanonicalizeBytes` ("1.5Gi" -> "1536Mi", "1.5" -> "1500m", "1000E" -> "1e21", 2^70 BinarySI ->
    "1180591620717411303424");
  * `Cmp`, `Sign`, `AsInt64`, `Value`/`MilliValue`/`ScaledValue` (rounded away from zero; the int64 form
    saturates, the inf.Dec form wraps), `Add`/`Sub` (a zero receiver takes the operand's format), `Mul`.

Public API:

    DECIMAL_SI, BINARY_SI, DECIMAL_EXPONENT          the format names ("DecimalSI", "BinarySI", "DecimalExponent")
    Quantity.parse(s) -> Quantity                    raises ValueError with upstream's message, TypeError for a non-str
    Quantity.from_int(v, fmt=DECIMAL_SI)             resource.NewQuantity
    q.dec (exact Decimal), q.format, q.i64 ((value, scale) or None)
    str(q) / format_quantity(q)                      Go's String() (and MarshalJSON)
    q.canonical()                                    Go's CanonicalizeBytes, ignoring the text kept by parse
    q.cmp(o), ==, <, <=, >, >=, hash                 by value
    q.sign(), q.to_fraction(), q.as_int64(), q.as_approximate_float()
    q.scaled_value(scale), q.value(), q.milli_value(), q.milli_exact(), q.is_fractional()
    q.add(o), q.sub(o), q.mul(int), q.div(int, places=4), q.div_int(int)      new quantities
    parse_quantity(s) -> Fraction                    the exact value
    parse_or_none(raw) -> Quantity | None            a JSON value as UnmarshalJSON reads it; None when invalid
"""

from __future__ import annotations

import decimal
import math
from fractions import Fraction
from typing import Any

__all__ = [
    "BINARY_SI",
    "DECIMAL_EXPONENT",
    "DECIMAL_SI",
    "Quantity",
    "format_quantity",
    "parse_or_none",
    "parse_quantity",
]

DECIMAL_SI, BINARY_SI, DECIMAL_EXPONENT = "DecimalSI", "BinarySI", "DecimalExponent"

_INT64_MAX = (1 << 63) - 1
_INT64_MIN = -(1 << 63)

# Exact arithmetic: an unbounded context that traps instead of rounding.
_DCTX = decimal.Context(prec=decimal.MAX_PREC, Emax=decimal.MAX_EMAX, Emin=decimal.MIN_EMIN,
                        traps=[decimal.InvalidOperation, decimal.DivisionByZero, decimal.Overflow])
_D0 = decimal.Decimal(0)
_NANO = decimal.Decimal("1e-9")
# Above this decimal exponent values are not widened to Go's nano scale (the digits would be wasted: such a
# value converts to an infinite float either way) and exact arithmetic refuses them.
_MAGNITUDE_LIMIT = 4000

_SPLIT_RE = "^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$"
_ERR_FORMAT = f"quantities must match the regular expression '{_SPLIT_RE}'"
_ERR_NUMERIC = "unable to parse numeric part of quantity"
_ERR_SUFFIX = "unable to parse quantity's suffix"
_DEC_SUFFIXES = {"": 0, "n": -9, "u": -6, "m": -3, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_BIN_SUFFIXES = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
_DEC_NAMES = {v: k for k, v in _DEC_SUFFIXES.items()}
_BIN_NAMES = {0: "", **{v // 10: k for k, v in _BIN_SUFFIXES.items()}}  # by power of 1024
_SUFFIX_CHARS = frozenset("eEinumkKMGTP")
_MAX_INT64_DIGITS = 18  # resource.maxInt64Factors: more digits than this never take the int64 fast path
# strings.TrimSpace (unicode.IsSpace), which UnmarshalJSON applies.
_GO_SPACE = ("\t\n\v\f\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a"
             "\u2028\u2029\u202f\u205f\u3000")

# math.Pow10's tables: Go scales int64 and inf.Dec mantissas with them in AsApproximateFloat64.
_POW10 = [float(f"1e{i}") for i in range(32)]
_POW10_POS32 = [float(f"1e{32 * i}") for i in range(10)]
_POW10_NEG32 = [float(f"1e-{32 * i}") for i in range(11)]


def _pow10(n: int) -> float:
    """math.Pow10."""
    if 0 <= n <= 308:
        return _POW10_POS32[n // 32] * _POW10[n % 32]
    if -323 <= n <= 0:
        return _POW10_NEG32[-n // 32] / _POW10[-n % 32]
    return math.inf if n > 0 else 0.0


def _fits64(v: int) -> bool:
    return _INT64_MIN <= v <= _INT64_MAX


def _isdigit(c: str) -> bool:
    return "0" <= c <= "9"


def _wrap64(v: int) -> int:
    """Two's-complement int64 truncation (big.Int.Int64 of a value that does not fit)."""
    v &= (1 << 64) - 1
    return v - (1 << 64) if v > _INT64_MAX else v


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


def _parts(d: decimal.Decimal) -> tuple[int, tuple[int, ...], int]:
    """`d.as_tuple()` of a finite Decimal: only NaN and the infinities have a str exponent ('n', 'N', 'F')."""
    sign, digits, exponent = d.as_tuple()
    assert isinstance(exponent, int)
    return sign, digits, exponent


def _int_text(v: int) -> str:
    """str(v) without Python's limit on the digits of an int-to-str conversion."""
    return str(decimal.Decimal(v))


class Quantity:
    """An exact Kubernetes resource.Quantity; immutable.

    `dec` is the exact value (a Decimal computed in an unbounded context) whose exponent is Go's base-10
    scale. `i64` mirrors whether Go holds the value in its fast int64Amount form `(value, base-10 scale)` or
    fell back to inf.Dec (None): `isInteger()`/`asInteger()` depend on it exactly as upstream (e.g.
    `quantity("1000m").isInteger()` is false, `quantity("1k").isInteger()` is true).
    """

    __slots__ = ("_text", "dec", "format", "i64")

    def __init__(self, dec: decimal.Decimal, i64: tuple[int, int] | None = None, fmt: str = DECIMAL_SI,
                 text: str | None = None):
        self.dec = dec
        self.i64 = i64
        self.format = fmt
        self._text = text  # Go's cached `s`: what String() returns

    @classmethod
    def _from_i64(cls, v: int, scale: int, fmt: str, text: str | None = None) -> Quantity:
        return cls(decimal.Decimal(v).scaleb(scale, _DCTX) if v else _D0, (v, scale), fmt, text)

    @classmethod
    def from_int(cls, v: int, fmt: str = DECIMAL_SI) -> Quantity:
        """resource.NewQuantity(v, fmt)."""
        return cls._from_i64(v, 0, fmt)

    @classmethod
    def parse(cls, s: str) -> Quantity:
        """resource.ParseQuantity; raises ValueError with upstream's messages."""
        if not isinstance(s, str):
            raise TypeError("a quantity must be a string")
        if not s:
            raise ValueError(_ERR_FORMAT)
        if s == "0":
            return cls(_D0, (0, 0), DECIMAL_SI, s)
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
            precision = _MAX_INT64_DIGITS - (len(num) + len(denom))
        if precision >= 0:
            scale -= len(denom)
            if scale >= -9:
                shifted = num + denom
                parsed = int(shifted)
                result = parsed * mantissa
                if _fits64(result):
                    # Go keeps the input as the String() of a number it considers canonical.
                    if fmt == BINARY_SI:
                        keep = exponent % 10 == 0 and parsed & 7 != 0
                    else:
                        keep = scale % 3 == 0 and not shifted.endswith("000") and shifted[0] != "0"
                    return cls._from_i64(result if positive else -result, scale, fmt, s if keep else None)

        # inf.Dec path.
        try:
            amount = decimal.Decimal(value) if value else None
        except decimal.InvalidOperation:
            amount = None
        if amount is None:
            raise ValueError(_ERR_NUMERIC)
        if base == 10:
            amount = amount.scaleb(exponent, _DCTX)
        else:
            amount = _DCTX.multiply(amount, decimal.Decimal(1 << exponent))
        negative = amount < 0
        amount = amount.copy_abs()
        if amount:
            # Go rounds every non-zero value to the nano scale, up (away from zero); values coarser than that
            # keep their digits at scale 9 (widened only while that stays small).
            if _parts(amount)[2] < -9 or amount.adjusted() <= _MAGNITUDE_LIMIT:
                amount = amount.quantize(_NANO, rounding=decimal.ROUND_UP, context=_DCTX)
        if fmt == BINARY_SI and amount > _INT64_MAX:
            amount = decimal.Decimal(_INT64_MAX)
        if fmt == BINARY_SI and 0 < amount < 1:
            fmt = DECIMAL_SI
        if negative:
            amount = amount.copy_negate()
        return cls(amount, None, fmt)

    # --- comparisons (by value, as Cmp)
    def cmp(self, other: Quantity) -> int:
        a, b = self.dec, other.dec
        return (a > b) - (a < b)

    def __eq__(self, other: object) -> bool:
        return type(other) is Quantity and self.dec == other.dec

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
        if self.dec and self.dec.adjusted() > _MAGNITUDE_LIMIT:
            raise ValueError("quantity too large to convert exactly")
        return Fraction(self.dec)

    def sign(self) -> int:
        return (self.dec > 0) - (self.dec < 0)

    def is_fractional(self) -> bool:
        """Whether the value is not a whole number."""
        return self.dec != self.dec.to_integral_value(context=_DCTX)

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

    def _unscaled(self) -> tuple[int, int, int]:
        """(unscaled mantissa, base-10 exponent, digits of the mantissa) of Go's representation."""
        if self.i64 is not None:
            v, scale = self.i64
            return v, scale, len(str(abs(v)))
        _sign, digits, exponent = _parts(self.dec)
        return int(self.dec.scaleb(-exponent, _DCTX)), exponent, len(digits)

    def as_approximate_float(self) -> float:
        """Go's AsApproximateFloat64: float(mantissa) * math.Pow10(exponent), rounding the way Go does."""
        if not self.dec:
            return 0.0
        mantissa, exponent, _ = self._unscaled()
        try:
            base = float(mantissa)
        except OverflowError:
            base = math.inf if mantissa > 0 else -math.inf
        return base if exponent == 0 else base * _pow10(exponent)

    def scaled_value(self, scale: int) -> int:
        """Go's ScaledValue: the value in units of 10**scale, rounded away from zero. Out of the int64
        range the int64 form saturates and the inf.Dec form wraps, as upstream."""
        mantissa, exponent, ndigits = self._unscaled()
        if mantissa == 0:
            return 0
        shift = exponent - scale
        negative = mantissa < 0
        magnitude = -mantissa if negative else mantissa
        if shift >= 0:
            if self.i64 is not None:
                if shift >= 19 or not _fits64(magnitude * 10 ** shift):
                    return _INT64_MIN if negative else _INT64_MAX
                result = magnitude * 10 ** shift
            else:  # only the low 64 bits survive
                result = magnitude * pow(10, shift, 1 << 64)
        elif -shift > ndigits:  # |value| < one unit
            result = 1
        else:
            q, r = divmod(magnitude, 10 ** -shift)
            result = q + (1 if r else 0)
        return _wrap64(-result if negative else result)

    def value(self) -> int:
        """Go's Value(): ScaledValue(0)."""
        return self.scaled_value(0)

    def milli_value(self) -> int:
        """Go's MilliValue(): ScaledValue(Milli)."""
        return self.scaled_value(-3)

    def milli_exact(self) -> bool:
        """Whether the value is a whole number of milli units that fits an int64."""
        milli = _DCTX.multiply(self.dec, decimal.Decimal(1000))
        return milli.copy_abs() <= _INT64_MAX and milli == milli.to_integral_value(context=_DCTX)

    # --- arithmetic (new values; the format follows Go: a zero receiver takes the operand's format)
    def add(self, other: Quantity) -> Quantity:
        fmt = other.format if self.dec == 0 else self.format
        if self.i64 is not None and other.i64 is not None:
            r = _i64_add(self.i64, other.i64)
            if r is not None:
                return Quantity._from_i64(r[0], r[1], fmt)
        _check_magnitude(self, other)
        return Quantity(_DCTX.add(self.dec, other.dec), None, fmt)

    def sub(self, other: Quantity) -> Quantity:
        fmt = other.format if self.dec == 0 else self.format
        if self.i64 is not None and other.i64 is not None and other.i64[0] != _INT64_MIN:
            r = _i64_add(self.i64, (-other.i64[0], other.i64[1]))
            if r is not None:
                return Quantity._from_i64(r[0], r[1], fmt)
        _check_magnitude(self, other)
        return Quantity(_DCTX.subtract(self.dec, other.dec), None, fmt)

    def mul(self, m: int) -> Quantity:
        _check_magnitude(self)
        if self.i64 is not None:
            v, scale = self.i64
            if v == 0:
                return Quantity._from_i64(0, scale, self.format)
            if m == 0:
                return Quantity._from_i64(0, 0, self.format)
            c = v * m
            if _fits64(c) and (scale == 0 or (scale > 0 and _scale_up64(c, scale) is not None) or (
                    scale < 0 and -scale <= 18 and c % 10 ** -scale == 0)):
                return Quantity._from_i64(c, scale, self.format)
        return Quantity(_DCTX.multiply(self.dec, decimal.Decimal(m)), None, self.format)

    def div(self, d: int, places: int = 4) -> Quantity:
        """Division rounded half away from zero to `places` decimal places."""
        scaled = self.to_fraction() * 10 ** places / d
        n = math.floor(abs(scaled) + Fraction(1, 2))
        return Quantity(decimal.Decimal(n if scaled >= 0 else -n).scaleb(-places, _DCTX), None, self.format)

    def div_int(self, d: int) -> Quantity:
        """Integer division, truncated toward zero."""
        q = self.to_fraction() / d
        return Quantity(decimal.Decimal(math.trunc(q)), None, self.format)

    # --- text
    def canonical(self) -> str:
        """Go's CanonicalizeBytes: no fraction digits, the largest exponent that loses no precision, in the
        quantity's format ("1536Mi", "1500m", "1e3", "1e21")."""
        d = self.dec
        if d == 0:
            return "0"
        fmt = self.format
        if fmt not in (DECIMAL_SI, BINARY_SI):
            fmt = DECIMAL_EXPONENT
        if fmt == BINARY_SI and (-1024 < d < 1024 or d != d.to_integral_value(context=_DCTX)):
            fmt = DECIMAL_SI  # don't lose precision
        if fmt == BINARY_SI:
            v = int(d)
            if self.i64 is not None and v == _INT64_MIN:  # removeInt64Factors cannot negate it
                return str(v)
            power = 0
            while v % 1024 == 0:
                v //= 1024
                power += 1
            name = _BIN_NAMES.get(power)
            if name is not None:
                return _int_text(v) + name
            fmt = DECIMAL_SI  # no binary suffix beyond Ei: the exact decimal form
        sign, digits, exponent = _parts(d)
        text = "".join(map(str, digits))
        mantissa = text.rstrip("0")
        exponent += len(text) - len(mantissa)
        pad = exponent % 3
        mantissa += "0" * pad
        exponent -= pad
        number = f"{'-' if sign else ''}{mantissa}"
        if fmt == DECIMAL_EXPONENT:
            return number if exponent == 0 else f"{number}e{exponent}"
        name = _DEC_NAMES.get(exponent)
        return number + name if name is not None else f"{number}e{exponent}"

    def __str__(self) -> str:
        """Go's String(): the text parse kept, else the canonical form."""
        if self._text is None:
            self._text = self.canonical()
        return self._text

    def __repr__(self) -> str:
        return f"Quantity({str(self)!r})"


def _check_magnitude(*qs: Quantity) -> None:
    """Exact arithmetic on values like 1e2147483647 (a valid quantity) would build numbers with billions of
    digits; quantities never need that, so such operations fail instead of exhausting the machine."""
    for q in qs:
        if q.dec and abs(q.dec.adjusted()) > _MAGNITUDE_LIMIT:
            raise ValueError("quantity out of range for arithmetic")


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
    raise ValueError(_ERR_FORMAT)


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
            if -(1 << 31) < parsed < (1 << 31):  # an exponent outside the int32 scale is rejected
                return 10, parsed, DECIMAL_EXPONENT
    raise ValueError(_ERR_SUFFIX)


def parse_quantity(s: str) -> Fraction:
    """Parse Kubernetes quantity syntax exactly ("1Gi", "500m", "1.5e3", "2E"...) into an exact Fraction.
    Raises ValueError with resource.ParseQuantity's message for invalid input."""
    return Quantity.parse(s).to_fraction()


def format_like(value: Fraction, like: str) -> str:
    """An exact value as the canonical quantity in the format (binary SI, decimal SI, exponent) of the quantity
    `like`, as Go keeps the format of the first operand of Add/Sub."""
    exact = decimal.Decimal(value.numerator) / decimal.Decimal(value.denominator)
    return Quantity(exact, None, Quantity.parse(like).format).canonical()


def format_quantity(q: Quantity) -> str:
    """The string Kubernetes serializes a quantity as (resource.Quantity.String / MarshalJSON)."""
    return str(q)


def parse_or_none(raw: Any) -> Quantity | None:
    """A quantity from a decoded JSON value as resource.Quantity.UnmarshalJSON reads it: a string, or a number
    by its JSON text, with surrounding whitespace trimmed. None for anything that is not a valid quantity."""
    if isinstance(raw, str):
        text = raw
    elif isinstance(raw, bool) or raw is None:
        return None
    elif isinstance(raw, int):
        text = str(raw)
    elif isinstance(raw, float):
        text = repr(raw)
    else:
        return None
    try:
        return Quantity.parse(text.strip(_GO_SPACE))
    except ValueError:
        return None
