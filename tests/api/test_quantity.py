"""Quantity parsing, rounding and formatting, checked against upstream apimachinery's own cases."""

from __future__ import annotations

import math
from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kubesched.api.quantity import (
    BINARY_SUFFIXES,
    DECIMAL_SUFFIXES,
    QuantityError,
    format_quantity,
    int_value,
    milli_value,
    parse_quantity,
    resource_amount,
)

F = Fraction
KI, MI, GI, TI, PI, EI = (2**p for p in (10, 20, 30, 40, 50, 60))
INT64_MAX = 2**63 - 1


def dec(mantissa: int, exp10: int) -> Fraction:
    return F(mantissa) * F(10) ** exp10


# (input, exact value) pairs from TestQuantityParse in apimachinery's quantity_test.go.
UPSTREAM_VALID = [
    ("0", dec(0, 0)),
    ("0n", dec(0, 0)),
    ("0u", dec(0, 0)),
    ("0m", dec(0, 0)),
    ("0Ki", dec(0, 0)),
    ("0k", dec(0, 0)),
    ("0Mi", dec(0, 0)),
    ("0M", dec(0, 0)),
    ("0Gi", dec(0, 0)),
    ("0G", dec(0, 0)),
    ("0Ti", dec(0, 0)),
    ("0T", dec(0, 0)),
    ("1", dec(1, 0)),
    ("1Ki", F(KI)),
    ("8Ki", F(8 * KI)),
    ("7Mi", F(7 * MI)),
    ("6Gi", F(6 * GI)),
    ("5Ti", F(5 * TI)),
    ("4Pi", F(4 * PI)),
    ("3Ei", F(3 * EI)),
    ("10Ti", F(10 * TI)),
    ("100Ti", F(100 * TI)),
    ("5n", dec(5, -9)),
    ("4u", dec(4, -6)),
    ("3m", dec(3, -3)),
    ("9", dec(9, 0)),
    ("8k", dec(8, 3)),
    ("50k", dec(5, 4)),
    ("7M", dec(7, 6)),
    ("6G", dec(6, 9)),
    ("5T", dec(5, 12)),
    ("40T", dec(4, 13)),
    ("300T", dec(3, 14)),
    ("2P", dec(2, 15)),
    ("1E", dec(1, 18)),
    ("1E-3", dec(1, -3)),
    ("1e3", dec(1, 3)),
    ("1E6", dec(1, 6)),
    ("1e9", dec(1, 9)),
    ("1E12", dec(1, 12)),
    ("1e15", dec(1, 15)),
    ("1E18", dec(1, 18)),
    ("1e14", dec(1, 14)),
    ("1e13", dec(1, 13)),
    ("100.035k", dec(100035, 0)),
    ("0.001", dec(1, -3)),
    ("0.0005k", dec(5, -1)),
    ("0.005", dec(5, -3)),
    ("0.05", dec(5, -2)),
    ("0.5", dec(5, -1)),
    ("0.00050k", dec(5, -1)),
    ("0.00500", dec(5, -3)),
    ("0.05000", dec(5, -2)),
    ("0.50000", dec(5, -1)),
    ("0.5e0", dec(5, -1)),
    ("0.5e-1", dec(5, -2)),
    ("0.5e-2", dec(5, -3)),
    ("10.035M", dec(10035, 3)),
    ("1.2e3", dec(12, 2)),
    ("1.3E+6", dec(13, 5)),
    ("1.40e9", dec(14, 8)),
    ("1.53E12", dec(153, 10)),
    ("1.6e15", dec(16, 14)),
    ("1.7E18", dec(17, 17)),
    ("9.01", dec(901, -2)),
    ("8.1k", dec(81, 2)),
    ("7.123456M", dec(7123456, 0)),
    ("6.987654321G", dec(6987654321, 0)),
    ("5.444T", dec(5444, 9)),
    ("40.1T", dec(401, 11)),
    ("300.2T", dec(3002, 11)),
    ("2.5P", dec(25, 14)),
    ("1.01E", dec(101, 16)),
    # Things that saturate or round: precision stops at nano, finer values round away from zero.
    ("3.001n", dec(4, -9)),
    ("1.1E-9", dec(2, -9)),
    ("0.0000000001", dec(1, -9)),
    ("0.0000000005", dec(1, -9)),
    ("0.00000000050", dec(1, -9)),
    ("0.5e-9", dec(1, -9)),
    ("0.9n", dec(1, -9)),
    ("0.00000012345", dec(124, -9)),
    ("0.00000012354", dec(124, -9)),
    ("9Ei", F(INT64_MAX)),
    ("9223372036854775807Ki", F(INT64_MAX)),
    ("12E", dec(12, 18)),
    # Fractional binary quantities.
    ("100.035Ki", dec(10243584, -2)),
    ("0.5Mi", F(MI // 2)),
    ("0.05Gi", dec(536870912, -1)),
    ("0.025Ti", dec(274877906944, -1)),
    # "Things written by trolls".
    ("0.000000000001Ki", dec(2, -9)),
    (".001", dec(1, -3)),
    (".0001k", dec(100, -3)),
    ("1.", dec(1, 0)),
    ("1.G", dec(1, 9)),
]


@pytest.mark.parametrize(("text", "expected"), UPSTREAM_VALID)
def test_parse_upstream_table(text: str, expected: Fraction) -> None:
    assert parse_quantity(text) == expected
    # Upstream also checks every entry with an explicit sign.
    assert parse_quantity("+" + text) == expected
    assert parse_quantity("-" + text) == -expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("7Ei", F(7 * EI)),  # fits in int64: not capped
        ("8Ei", F(INT64_MAX)),  # 2**63 does not: capped like upstream
        ("-8Ei", F(-INT64_MAX)),
        ("1e-30", dec(1, -9)),
        ("-1e-30", dec(-1, -9)),
        ("0e2000000000", F(0)),
        ("1e+3", dec(1, 3)),
        ("500m", F(1, 2)),
        ("1.5Gi", F(3 * GI // 2)),
        ("129e6", F(129_000_000)),
        ("129M", F(129_000_000)),
        ("123Mi", F(123 * MI)),
        ("-0", F(0)),
        ("000123", F(123)),
    ],
)
def test_parse_extra(text: str, expected: Fraction) -> None:
    assert parse_quantity(text) == expected


@pytest.mark.parametrize(
    ("value", "expected"),
    [(0, F(0)), (5, F(5)), (-3, F(-3)), (0.5, F(1, 2)), (0.1, F(1, 10)), (1e-5, F(1, 100000)), (2.0, F(2))],
)
def test_parse_numbers(value: int | float, expected: Fraction) -> None:
    assert parse_quantity(value) == expected


# Upstream's invalid list, plus the cases a manifest author is likely to write by mistake.
INVALID = [
    "1.1.M",
    "1+1.0M",
    "0.1mi",
    "0.1am",
    "aoeu",
    ".5i",
    "1i",
    "-3.01i",
    "-3.01e-",
    " 1",
    "1 ",
    "",
    "1.2.3",
    "1KB",
    "1K",
    "1KiB",
    "1ki",
    "abc",
    "Ki",
    "1 Gi",
    "1\tGi",
    ".",
    "-",
    "+",
    "1e",
    "1e+",
    "1e3k",
    "1E3Ki",
    "1e1.5",
    "1e+-3",
    "1..5",
    "++1",
    "1,5",
    "1_000",
    "0x10",
    "1/2",
    "\uff11",  # fullwidth digit one
    "\u0663",  # Arabic-Indic digit three
    "\u22121",  # Unicode minus sign
    "1\x00",
    "Inf",
    "NaN",
    "1e99999999999999999999",
    "1e5000",
]


@pytest.mark.parametrize("text", INVALID)
def test_parse_invalid(text: str) -> None:
    with pytest.raises(QuantityError, match="invalid quantity"):
        parse_quantity(text)


@pytest.mark.parametrize("value", [True, False, math.nan, math.inf, -math.inf, None, [1], {"a": 1}])
def test_parse_invalid_types(value: object) -> None:
    with pytest.raises(QuantityError):
        parse_quantity(value)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("", "empty"),
        ("1 Gi", "whitespace"),
        ("1KB", "unknown suffix 'KB'"),
        ("1.2.3", "unexpected '.'"),
        ("Ki", "must start with a number"),
    ],
)
def test_parse_error_messages_are_helpful(text: str, why: str) -> None:
    with pytest.raises(QuantityError, match=why):
        parse_quantity(text)


@pytest.mark.parametrize(
    ("text", "value", "milli"),
    [
        ("9.01", 10, 9010),  # TestQuantityRoundUp: rounds up
        ("-9.01", -10, -9010),  # ...and away from zero for negatives
        ("0.1", 1, 100),
        ("1", 1, 1000),
        ("100m", 1, 100),
        ("0.1m", 1, 1),
        ("1.5m", 1, 2),
        ("-1.5m", -1, -2),
        ("1n", 1, 1),
        ("-1n", -1, -1),
        ("0", 0, 0),
        ("1Ki", 1024, 1024000),
    ],
)
def test_value_and_milli_value_round_up(text: str, value: int, milli: int) -> None:
    q = parse_quantity(text)
    assert int_value(q) == value
    assert milli_value(q) == milli


@pytest.mark.parametrize(
    ("resource", "value", "expected"),
    [
        ("cpu", "500m", 500),
        ("cpu", "1", 1000),
        ("cpu", 2, 2000),
        ("cpu", 0.5, 500),
        ("cpu", "0.1m", 1),
        ("cpu", "1.0005", 1001),
        ("memory", "1Gi", GI),
        ("memory", "1.5Gi", 3 * GI // 2),
        ("memory", "128974848", 128974848),
        ("memory", "129e6", 129_000_000),
        ("memory", "129M", 129_000_000),
        ("memory", "123Mi", 123 * MI),
        ("memory", "0.5", 1),
        ("memory", "100m", 1),
        ("ephemeral-storage", "10Gi", 10 * GI),
        ("pods", "110", 110),
        ("pods", 110, 110),
        ("hugepages-2Mi", "4Mi", 4 * MI),
        ("nvidia.com/gpu", 1, 1),
        ("nvidia.com/gpu", "-0", 0),
    ],
)
def test_resource_amount(resource: str, value: str | int | float, expected: int) -> None:
    assert resource_amount(resource, value) == expected


@pytest.mark.parametrize(
    ("resource", "value"), [("cpu", "-1"), ("memory", "-1Gi"), ("pods", -1), ("cpu", "-1n")]
)
def test_resource_amount_rejects_negative(resource: str, value: str | int) -> None:
    with pytest.raises(QuantityError, match="must be non-negative"):
        resource_amount(resource, value)


def test_resource_amount_rejects_values_beyond_int64() -> None:
    with pytest.raises(QuantityError, match="too large"):
        resource_amount("memory", "10E")
    with pytest.raises(QuantityError, match="too large"):
        resource_amount("cpu", "9223372036854776")  # fine as cores, too many millicores
    assert resource_amount("memory", "9Ei") == INT64_MAX  # binary suffixes cap instead


@pytest.mark.parametrize(
    ("resource", "amount", "expected"),
    [
        ("cpu", 500, "500m"),
        ("cpu", 2000, "2"),
        ("cpu", 1500, "1500m"),
        ("cpu", 0, "0"),
        ("memory", 512 * MI, "512Mi"),
        ("memory", GI, "1Gi"),
        ("memory", 1536 * MI, "1536Mi"),
        ("memory", 1000, "1000"),
        ("memory", 1536, "1536"),
        ("memory", 0, "0"),
        ("memory", 2 * EI, "2Ei"),
        ("ephemeral-storage", 20 * GI, "20Gi"),
        ("hugepages-1Gi", 2 * GI, "2Gi"),
        ("pods", 110, "110"),
        ("pods", 1024, "1024"),
        ("nvidia.com/gpu", 8, "8"),
    ],
)
def test_format_quantity(resource: str, amount: int, expected: str) -> None:
    assert format_quantity(resource, amount) == expected


# ----------------------------------------------------------------------------- properties

ALL_SUFFIXES = [*BINARY_SUFFIXES, *DECIMAL_SUFFIXES]
EXPONENT_SUFFIXES = [f"{e}{n}" for e in "eE" for n in (-9, -6, -3, -1, 0, 1, 3, 6, 9, 12, 18, "+2", "-0")]


def _multiplier(suffix: str) -> Fraction:
    if suffix in BINARY_SUFFIXES:
        return F(2) ** BINARY_SUFFIXES[suffix]
    if suffix in DECIMAL_SUFFIXES:
        return F(10) ** DECIMAL_SUFFIXES[suffix]
    return F(10) ** int(suffix[1:])


@given(st.text())
def test_parse_arbitrary_text_raises_only_quantity_error(text: str) -> None:
    try:
        result = parse_quantity(text)
    except QuantityError:
        return
    assert isinstance(result, Fraction)


@given(
    st.from_regex(
        r"[+-]?[0-9]{0,4}(\.[0-9]{0,4})?([eE][+-]?[0-9]{1,3}|[numkMGTPE]|[KMGTPE]i)?", fullmatch=True
    )
)
def test_parse_grammar_like_text_raises_only_quantity_error(text: str) -> None:
    try:
        result = parse_quantity(text)
    except QuantityError:
        return
    assert result * 10**9 == int(result * 10**9)  # always a whole number of nano units


@given(st.integers(min_value=0, max_value=10**20), st.sampled_from(ALL_SUFFIXES + EXPONENT_SUFFIXES))
def test_integer_with_suffix_is_multiplied_exactly(n: int, suffix: str) -> None:
    expected = n * _multiplier(suffix)
    if suffix in BINARY_SUFFIXES:
        expected = min(expected, F(INT64_MAX))  # upstream caps binary quantities
    assert parse_quantity(f"{n}{suffix}") == expected


@given(st.floats(allow_nan=True, allow_infinity=True))
def test_parse_floats_use_their_decimal_repr(value: float) -> None:
    if not math.isfinite(value):
        with pytest.raises(QuantityError):
            parse_quantity(value)
        return
    try:
        result = parse_quantity(value)
    except QuantityError:
        assert abs(value) > 1e300  # only absurdly large floats are refused
        return
    exact = F(repr(value))
    if exact * 10**9 == int(exact * 10**9):
        assert result == exact
    else:  # finer than nano: rounded away from zero to the next nano unit
        assert abs(result) >= abs(exact)
        assert abs(result - exact) < F(1, 10**9)


@given(
    st.sampled_from(["cpu", "memory", "ephemeral-storage", "hugepages-2Mi", "pods", "nvidia.com/gpu"]),
    st.integers(min_value=0, max_value=INT64_MAX),
)
def test_format_then_resource_amount_round_trips(resource: str, amount: int) -> None:
    assert resource_amount(resource, format_quantity(resource, amount)) == amount
