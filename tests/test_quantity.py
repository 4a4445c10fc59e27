"""Tests of dramock.schemas.quantity, the one resource.Quantity: parsing, Go's String(), values, arithmetic.

Tables marked "Go" are taken from k8s.io/apimachinery/pkg/api/resource/quantity_test.go.
"""

from __future__ import annotations

import math
import re
from decimal import Decimal
from fractions import Fraction
from typing import Any

import pytest

from dramock.schemas.quantity import (
    BINARY_SI,
    DECIMAL_EXPONENT,
    DECIMAL_SI,
    Quantity,
    format_quantity,
    parse_or_none,
    parse_quantity,
)

INT64_MAX = 2 ** 63 - 1
INT64_MIN = -(2 ** 63)


def dec(unscaled: int, exponent: int, fmt: str) -> Quantity:
    """Go's decQuantity: an inf.Dec-backed quantity unscaled * 10**exponent."""
    return Quantity(Decimal(unscaled).scaleb(exponent), None, fmt)


# ============================================================================ parsing


@pytest.mark.parametrize("text,value,fmt", [
    ("0", "0", "DecimalSI"), ("0n", "0", "DecimalSI"), ("0Ki", "0", "BinarySI"), ("0M", "0", "DecimalSI"),
    ("1", "1", "DecimalSI"), ("1Ki", "1024", "BinarySI"), ("7Mi", str(7 * 2 ** 20), "BinarySI"),
    ("6Gi", str(6 * 2 ** 30), "BinarySI"), ("5Ti", str(5 * 2 ** 40), "BinarySI"),
    ("4Pi", str(4 * 2 ** 50), "BinarySI"), ("3Ei", str(3 * 2 ** 60), "BinarySI"),
    ("5n", "5e-9", "DecimalSI"), ("4u", "4e-6", "DecimalSI"), ("3m", "0.003", "DecimalSI"),
    ("8k", "8000", "DecimalSI"), ("50k", "50000", "DecimalSI"), ("7M", "7e6", "DecimalSI"),
    ("6G", "6e9", "DecimalSI"), ("5T", "5e12", "DecimalSI"), ("2P", "2e15", "DecimalSI"),
    ("1E", "1e18", "DecimalSI"), ("1E-3", "0.001", "DecimalExponent"), ("1e3", "1000", "DecimalExponent"),
    ("1E6", "1e6", "DecimalExponent"), ("100.035k", "100035", "DecimalSI"), ("0.001", "0.001", "DecimalSI"),
    ("0.0005k", "0.5", "DecimalSI"), ("0.5e-1", "0.05", "DecimalExponent"), ("10.035M", "10035000", "DecimalSI"),
    ("1.2e3", "1200", "DecimalExponent"), ("1.3E+6", "1300000", "DecimalExponent"),
    ("7.123456M", "7123456", "DecimalSI"), ("6.987654321G", "6987654321", "DecimalSI"),
    ("1.01E", "1.01e18", "DecimalSI"),
    # things that round up to the nano scale or saturate
    ("3.001n", "4e-9", "DecimalSI"), ("1.1E-9", "2e-9", "DecimalExponent"), ("0.0000000001", "1e-9", "DecimalSI"),
    ("0.5e-9", "1e-9", "DecimalExponent"), ("0.9n", "1e-9", "DecimalSI"), ("0.00000012345", "1.24e-7", "DecimalSI"),
    ("9Ei", str(2 ** 63 - 1), "BinarySI"), ("9223372036854775807Ki", str(2 ** 63 - 1), "BinarySI"),
    ("12E", "1.2e19", "DecimalSI"),
    # fractional binary
    ("100.035Ki", "102435.84", "BinarySI"), ("0.5Mi", str(2 ** 19), "BinarySI"), ("0.05Gi", "53687091.2", "BinarySI"),
    ("0.000000000001Ki", "2e-9", "DecimalSI"),
    # lenient forms
    (".001", "0.001", "DecimalSI"), (".0001k", "0.1", "DecimalSI"), ("1.", "1", "DecimalSI"),
    ("1.G", "1e9", "DecimalSI"), ("-1.5", "-1.5", "DecimalSI"), ("+2", "2", "DecimalSI"),
    ("-0.5Gi", str(-(2 ** 29)), "BinarySI"),
])
def test_quantity_parse(text, value, fmt):
    q = Quantity.parse(text)
    assert q.dec == Decimal(value)
    assert q.format == fmt
    assert parse_quantity(text) == Fraction(Decimal(value))


@pytest.mark.parametrize("text", [
    "", "1.1.M", "1+1.0M", "0.1mi", "0.1am", "aoeu", ".5i", "1i", "-3.01i", "-3.01e-", "1e4294967297",
    " 1", "1 ", "1K", "1ki", "200K", "Three", "1e", "1,3G", "1Gib", "--1",
])
def test_quantity_invalid(text):
    with pytest.raises(ValueError):
        Quantity.parse(text)


def test_quantity_error_messages():
    with pytest.raises(ValueError, match=re.escape("quantities must match the regular expression "
                                                   "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'")):
        Quantity.parse("aoeu")
    with pytest.raises(ValueError, match="unable to parse quantity's suffix"):
        Quantity.parse("1K")


@pytest.mark.parametrize("text,canonical", [
    ("1Ki", "1Ki"), ("1024Mi", "1Gi"), ("1000M", "1G"), (".001Ki", "1024m"), (".000001Ki", "1024u"),
    (".000000001Ki", "1024n"), (".000000000001Ki", "2n"), ("1.5Gi", "1536Mi"), ("1500m", "1500m"),
    ("1.5", "1500m"), ("1e3", "1e3"), ("1000E", "1e21"), ("0.5Mi", "512Ki"), ("300M", "300M"),
    ("1025", "1025"), ("-1.08", "-1080m"), ("0", "0"), ("80e-3", "80e-3"),
])
def test_quantity_canonical_string(text, canonical):
    assert format_quantity(Quantity.parse(text)) == canonical
    assert str(Quantity.parse(text)) == canonical


def test_quantity_arithmetic_is_exact():
    a = Quantity.parse("0.1")
    total = Quantity.from_int(0)
    for _ in range(10):
        total = total.add(a)
    assert total == Quantity.parse("1")
    assert Quantity.parse("1Ki").sub(Quantity.parse("1000")) == Quantity.parse("24")
    assert Quantity.parse("1Ei").mul(1024).dec == 2 ** 70
    big = Quantity.parse("9223372036854775807").add(Quantity.parse("1"))  # leaves the int64 fast path
    assert big.dec == 2 ** 63 and big.i64 is None and big.as_int64() is None
    assert Quantity.parse("1k").as_int64() == 1000
    assert Quantity.parse("1000m").as_int64() is None  # as upstream: negative scale
    assert sorted([Quantity.parse("1Gi"), Quantity.parse("1G"), Quantity.parse("1Mi")]) == [
        Quantity.parse("1Mi"), Quantity.parse("1G"), Quantity.parse("1Gi")]


@pytest.mark.parametrize("suffix_exponent,valid", [
    ("2147483647", True), ("-2147483647", True), ("2147483648", False), ("-2147483648", False),
    ("4294967297", False), ("8589934592", False), ("9223372036854775807", False), ("6024865272343", False),
])
def test_exponent_int32_bounds(suffix_exponent, valid):
    """Go: TestInterpretExponentInt32Bounds (an exponent is rejected, not narrowed, past the int32 scale)."""
    text = "1E" + suffix_exponent
    if valid:
        assert Quantity.parse(text).format == DECIMAL_EXPONENT
    else:
        with pytest.raises(ValueError, match="unable to parse quantity's suffix"):
            Quantity.parse(text)


@pytest.mark.parametrize("text,int64", [
    ("-999999999999999999", -999999999999999999), ("999999999999999999", 999999999999999999),
    ("1E", 10 ** 18), ("-1.0E", -(10 ** 18)), ("9223372036854775807", None), ("1000000000000000000", None),
    ("999999999999999999.0", None), ("10E", None), ("1000m", None),
])
def test_int64_fast_path_as_go(text, int64):
    """Go: TestParseQuantity (which inputs AsInt64 reports: the int64 form and scale Go picks)."""
    assert Quantity.parse(text).as_int64() == int64


def test_parse_quantity_is_exact():
    assert parse_quantity("1.5Gi") == Fraction(3 * 2 ** 29)
    assert parse_quantity("100m") == Fraction(1, 10)
    with pytest.raises(TypeError):
        Quantity.parse(5)  # type: ignore[arg-type]


# ============================================================================ String()


@pytest.mark.parametrize("text,string", [
    # Go reuses the input when it looks canonical (TestQuantityString: "did not copy canonical string on parse")
    ("1Gi", "1Gi"), ("300Mi", "300Mi"), ("1001Gi", "1001Gi"), ("1e21", "1e21"), ("10e69", "10e69"),
    ("1080m", "1080m"), ("80n", "80n"), ("300e6", "300e6"), ("3k", "3k"), ("1234567M", "1234567M"),
    # ... including the forms it does not normalize
    ("+1Ki", "+1Ki"), ("1.500", "1.500"), ("05", "05"), ("+5", "+5"), ("-1E", "-1E"),
    # ... and computes the canonical form otherwise (TestQuantityString alternates, TestParseQuantity)
    ("1024Mi", "1Gi"), ("307200Ki", "300Mi"), ("1025024Mi", "1001Gi"), ("0.001T", "1G"), ("1000E", "1e21"),
    ("5000E", "5e21"), ("1000000E", "1e24"), ("1.08", "1080m"), ("1080000000n", "1080m"), (".001e12", "1e9"),
    ("0.001e0", "1e-3"), ("1000e-12", "1e-9"), ("00", "0"), ("-0", "0"), ("1.0E", "1E"), ("10.0E", "10E"),
    ("1000000000000000000", "1E"), ("999999999999999999.1", "999999999999999999100m"),
    ("9999999999999999999000m", "9999999999999999999"), ("-10.0000000000000000001E", "-10000000000000000000100m"),
    ("9223372036854775808.1", "9223372036854775808100m"), ("9999999999999999999", "9999999999999999999"),
])
def test_string_as_go(text, string):
    assert str(Quantity.parse(text)) == string
    assert format_quantity(Quantity.parse(text)) == string


@pytest.mark.parametrize("text,canonical", [
    ("+1Ki", "1Ki"), ("1.500", "1500m"), ("05", "5"), ("-1E", "-1E"), ("1e21", "1e21"),
])
def test_canonical_ignores_the_kept_text(text, canonical):
    assert Quantity.parse(text).canonical() == canonical


@pytest.mark.parametrize("q,string", [
    # Go: TestQuantityString
    (dec(1024 ** 3, 0, BINARY_SI), "1Gi"), (dec(6 * 1024, 0, BINARY_SI), "6Ki"), (dec(1024 ** 4, 0, BINARY_SI), "1Ti"),
    (dec(5, 0, BINARY_SI), "5"), (dec(500, -3, BINARY_SI), "500m"), (dec(1, 9, DECIMAL_SI), "1G"),
    (dec(1000, 6, DECIMAL_SI), "1G"), (dec(1000000, 3, DECIMAL_SI), "1G"), (dec(1, -3, DECIMAL_SI), "1m"),
    (dec(108, -2, DECIMAL_SI), "1080m"), (dec(10800, -4, DECIMAL_SI), "1080m"), (dec(1, 18, DECIMAL_SI), "1E"),
    (dec(1, 21, DECIMAL_SI), "1e21"), (dec(5, 21, DECIMAL_SI), "5e21"), (dec(1, 24, DECIMAL_SI), "1e24"),
    (dec(1, 70, BINARY_SI), "10e69"), (dec(2, 70, BINARY_SI), "20e69"), (dec(1, 72, BINARY_SI), "1e72"),
    (dec(1234567, -3, BINARY_SI), "1234567m"), (dec(1025, 0, BINARY_SI), "1025"), (dec(0, 0, BINARY_SI), "0"),
    (dec(1, -3, DECIMAL_EXPONENT), "1e-3"), (dec(80, -3, DECIMAL_EXPONENT), "80e-3"),
    (dec(300, 6, DECIMAL_EXPONENT), "300e6"), (dec(0, 0, DECIMAL_EXPONENT), "0"), (dec(108, -8, DECIMAL_SI), "1080n"),
    (dec(10800, -10, DECIMAL_SI), "1080n"), (dec(1080, -6, DECIMAL_SI), "1080u"),
    (dec(-108, -2, DECIMAL_SI), "-1080m"), (dec(-1024 ** 3, 0, BINARY_SI), "-1Gi"),
    # Go: TestQuantityStringBelowNano, TestBinarySIZeroExponentString
    (dec(1, -12, DECIMAL_SI), "1e-12"), (dec(1, -10, DECIMAL_SI), "100e-12"),
    (Quantity.from_int(2000, BINARY_SI), "2000"), (Quantity.from_int(-2000, BINARY_SI), "-2000"),
    (dec(2000, 0, BINARY_SI), "2000"), (dec(-2000, 0, BINARY_SI), "-2000"),
    # Go: TestNewSet (an unknown format prints as DecimalExponent)
    (Quantity.from_int(1000, DECIMAL_SI), "1k"), (Quantity.from_int(1024, BINARY_SI), "1Ki"),
    (Quantity.from_int(1000000, "invalidFormatDefaultsToExponent"), "1e6"),
])
def test_canonical_string_of_values(q, string):
    assert str(q) == string


def test_binary_si_past_ei_is_exact_decimal():
    """Go: TestBinarySIPastEiArithmeticRoundTrip."""
    q = Quantity.parse("1Ei").mul(1024)
    assert str(q) == "1180591620717411303424"
    assert Quantity.parse(str(q)) == q


@pytest.mark.parametrize("text,string", [
    ("1Ki", "1Ki"), ("1Mi", "1Mi"), ("1Gi", "1Gi"), ("1024Mi", "1Gi"), ("1000M", "1G"), (".001Ki", "1024m"),
    (".000001Ki", "1024u"), (".000000001Ki", "1024n"), (".000000000001Ki", "2n"),
])
def test_parse_emit(text, string):
    """Go: TestQuantityParseEmit, with the negated inputs too."""
    assert str(Quantity.parse(text)) == string
    assert str(Quantity.parse("-" + text)) == "-" + string


# ============================================================================ values


@pytest.mark.parametrize("q,expected", [
    # Go: TestQuantityAsApproximateFloat64
    (dec(0, 0, DECIMAL_SI), 0.0), (dec(0, 500, DECIMAL_SI), 0.0), (dec(0, -500, DECIMAL_SI), 0.0),
    (dec(1, 0, BINARY_SI), 1.0), (dec(7 * 1024 * 1024, 8, BINARY_SI), (7 * 1024 * 1024) * 100000000),
    (dec(7 * 1024 * 1024, -1, DECIMAL_SI), (7 * 1024 * 1024) * 0.1),  # '* Pow10' and '/ 10' differ
    (dec(7 * 1024 * 1024, -8, DECIMAL_EXPONENT), (7 * 1024 * 1024) / 100000000.0),
    (Quantity(Decimal(INT64_MAX), None, BINARY_SI), float(INT64_MAX)), (dec(12, 18, DECIMAL_SI), 1.2e19),
    (dec(12, 500, DECIMAL_SI), math.inf), (dec(-12, 500, DECIMAL_SI), -math.inf),
    # Go: TestStringQuantityAsApproximateFloat64
    (Quantity.parse("2Ki"), 2048.0), (Quantity.parse("1.1Ki"), 1126.4), (Quantity.parse("1Mi"), 1.048576e06),
    (Quantity.parse("2Gi"), 2.147483648e09),
    # mantissa * Pow10(scale), as Go computes it: not the float nearest the exact value
    (Quantity.parse("0.3"), 3 * 0.1), (Quantity.parse("4.35"), 435 * 0.01), (Quantity.parse("1.5"), 1.5),
])
def test_as_approximate_float(q, expected):
    assert q.as_approximate_float() == expected


@pytest.mark.parametrize("text,value,milli", [
    # Go: TestNegativeValueRoundsAwayFromZero
    ("-.484785E-7466", -1, -1), (".484785E-7466", 1, 1), ("-.484785E-1", -1, -49), (".484785E-1", 1, 49),
    ("-0.0005", -1, -1), ("0.0005", 1, 1), ("-1500m", -2, -1500), ("1500m", 2, 1500),
    ("-9.5000000001Gi", -10200547329, -10200547328108), ("9.5000000001Gi", 10200547329, 10200547328108),
    ("-1", -1, -1000), ("1", 1, 1000), ("0", 0, 0),
])
def test_value_and_milli_value_round_away_from_zero(text, value, milli):
    q = Quantity.parse(text)
    assert q.value() == value
    assert q.milli_value() == milli


@pytest.mark.parametrize("text,scale,expected", [
    # Go: TestScaledValue (NewScaledQuantity(1, from).ScaledValue(to))
    ("1n", -9, 1), ("1n", -6, 1), ("1n", -3, 1), ("1n", 0, 1), ("1u", -9, 1000), ("1u", 0, 1),
    ("1m", -9, 1000 * 1000), ("1m", -6, 1000), ("1m", 0, 1), ("1", -9, 1000 * 1000 * 1000), ("1", -3, 1000),
    ("1", 0, 1), ("1e2", -2, 100 * 100),
])
def test_scaled_value(text, scale, expected):
    assert Quantity.parse(text).scaled_value(scale) == expected


def test_value_out_of_int64_saturates_or_wraps_as_go():
    """The int64 form saturates (AsScaledInt64); the inf.Dec form keeps the low 64 bits (big.Int.Int64)."""
    assert Quantity.parse("1e19").value() == INT64_MAX
    assert Quantity.parse("-1e19").value() == INT64_MIN
    assert Quantity.parse("10000000000000000000").value() == 10 ** 19 - 2 ** 64
    assert Quantity.parse("9223372036854775807").value() == INT64_MAX


def test_milli_exact_and_fractional():
    assert Quantity.parse("1.5").milli_exact() and Quantity.parse("1.5").is_fractional()
    assert not Quantity.parse("1.0005").milli_exact()
    assert not Quantity.parse("10P").milli_exact()  # beyond MaxMilliValue
    assert Quantity.parse("9223372036854775807m").milli_exact()
    assert not Quantity.parse("9223372036854775808m").milli_exact()
    assert not Quantity.parse("2Gi").is_fractional()


# ============================================================================ comparisons and arithmetic


@pytest.mark.parametrize("x,y,expected", [
    ("0", "0", 0), ("100m", "50m", 1), ("50m", "100m", -1), ("10000T", "100Gi", 1), ("1k", "1000", 0),
])
def test_cmp(x, y, expected):
    """Go: TestQuantityCmp."""
    assert Quantity.parse(x).cmp(Quantity.parse(y)) == expected
    assert (Quantity.parse(x) == Quantity.parse(y)) == (expected == 0)


@pytest.mark.parametrize("text", ["100m", "1Gi"])
def test_zero_takes_the_operands_format(text):
    """Go: TestQuantityAddZeroPreservesSuffix, TestQuantitySubZeroPreservesSuffix."""
    zero, value = Quantity.parse("0"), Quantity.parse(text)
    assert str(value.add(zero)) == text
    assert str(zero.add(value)) == text
    assert str(value.sub(zero)) == text
    assert str(zero.sub(value)) == "-" + text


def test_arithmetic_formats():
    """Go: TestAdd, TestSub (the receiver's format wins unless it is zero)."""
    ten_si, ten_bin = Quantity.from_int(10, DECIMAL_SI), Quantity.from_int(10, BINARY_SI)
    one_bin, one_si = Quantity.from_int(1, BINARY_SI), Quantity.from_int(1, DECIMAL_SI)
    assert ten_si.add(one_bin).format == DECIMAL_SI and ten_si.add(one_bin) == Quantity.from_int(11)
    assert ten_bin.sub(one_si).format == BINARY_SI and ten_bin.sub(one_si) == Quantity.from_int(9)
    assert Quantity.parse("0").sub(Quantity.from_int(50)) == Quantity.from_int(-50)


def test_sub_at_most_negative():
    """Go: TestNegAndSubAtMostNegative, TestSubMostNegativeCrossScale, TestZeroSubMostNegativeInheritsFormat."""
    most_negative = Quantity.from_int(INT64_MIN)
    r = Quantity.parse("0").sub(most_negative)
    assert r.as_int64() is None and r.sign() == 1 and str(r) == "9223372036854775808"
    r = Quantity.from_int(1).sub(most_negative)
    assert r.as_int64() is None and str(r) == "9223372036854775809"
    r = Quantity.parse("1e1").sub(most_negative)
    assert r.as_int64() is None and str(r) == "9223372036854775818"
    r = Quantity.parse("0").sub(Quantity.from_int(INT64_MIN, BINARY_SI))
    assert r.format == BINARY_SI and str(r) == "8Ei" and r.as_int64() is None
    assert str(Quantity.from_int(INT64_MIN, BINARY_SI)) == "-9223372036854775808"


@pytest.mark.parametrize("a,m,expected,int64", [
    # Go: TestMul (ok=false there: the product left the int64 form)
    (10, 10, 100, True), (10, -10, -100, True), (-50, -50, 2500, True), (INT64_MAX, 0, 0, True),
    (INT64_MAX, -1, -INT64_MAX, True), (INT64_MIN // 2, 2, INT64_MIN, True), (INT64_MAX, 2, 2 * INT64_MAX, False),
    (INT64_MAX, 10, 10 * INT64_MAX, False), (INT64_MIN, -1, 2 ** 63, False), (INT64_MIN, -10, 10 * 2 ** 63, False),
])
def test_mul(a, m, expected, int64):
    r = Quantity.from_int(a).mul(m)
    assert r.dec == expected
    assert (r.i64 is not None) == int64


def test_huge_values_refuse_exact_arithmetic():
    huge = Quantity.parse("1e2147483647")
    assert huge > Quantity.parse("1E") and huge.sign() == 1
    with pytest.raises(ValueError, match="out of range"):
        huge.add(Quantity.parse("1"))
    with pytest.raises(ValueError, match="out of range"):
        huge.mul(2)
    with pytest.raises(ValueError, match="too large"):
        huge.to_fraction()
    assert huge.as_approximate_float() == math.inf


def test_div():
    assert Quantity.parse("10").div(3) == Quantity(Decimal("3.3333"))
    assert Quantity.parse("-10").div(3, 1) == Quantity(Decimal("-3.3"))
    assert Quantity.parse("1").div(8, 2) == Quantity(Decimal("0.13"))  # half away from zero
    assert Quantity.parse("-7").div_int(2) == Quantity.from_int(-3)


# ============================================================================ JSON values (validation's reader)


@pytest.mark.parametrize(("raw", "canonical"), [
    ("1Gi", "1Gi"), ("1024Mi", "1Gi"), ("1.5Gi", "1536Mi"), ("0.5", "500m"), ("100m", "100m"), ("1e3", "1e3"),
    ("2k", "2k"), (4, "4"), ("1000M", "1G"), ("1.0Ki", "1Ki"), ("512", "512"), ("1e100000", "10e99999"),
    ("0.0000000001", "1n"), ("-1.5", "-1500m"), ("0", "0"),
])
def test_quantity_canonical_form(raw: Any, canonical: str) -> None:
    q = parse_or_none(raw)
    assert q is not None and str(q) == canonical


def test_quantity_rejects_garbage() -> None:
    assert parse_or_none("1 Gi") is None
    assert parse_or_none("abc") is None
    assert parse_or_none(True) is None


@pytest.mark.parametrize("raw,string", [
    # Go: TestJSONWhitespace (UnmarshalJSON trims the text)
    (" 1", "1"), ("1 ", "1"), (1, "1"), (10, "10"), (-1, "-1"), (" -1", "-1"), ("\t2Gi\n", "2Gi"),
    (1.5, "1500m"), (0.25, "250m"),
])
def test_parse_or_none_reads_json_values(raw, string):
    q = parse_or_none(raw)
    assert q is not None and str(q) == string


@pytest.mark.parametrize("raw", [None, False, "", " ", [], {"value": "1"}, "1 Gi", math.nan, math.inf])
def test_parse_or_none_invalid(raw):
    assert parse_or_none(raw) is None
