"""Kubernetes resource quantities ("500m", "1.5Gi", "2e3"), parsed exactly.

Quantities are held as :class:`fractions.Fraction` so that no value is ever a float: the scheduler
compares sums of requests against allocatable capacity, and a rounding error there would admit
or reject pods that the real kube-scheduler would not.

Semantics follow ``k8s.io/apimachinery/pkg/api/resource``:

* grammar: ``[+-]<digits>[.<digits>]<suffix>`` where the suffix is a binary SI suffix
  (``Ki`` .. ``Ei``), a decimal SI suffix (``n u m "" k M G T P E``) or a decimal exponent
  (``e3``, ``E-2``);
* parsing keeps precision down to one nano unit and rounds anything finer *away from zero*, so
  ``0.9n`` becomes ``1n`` ("if you ask for some resource you get some");
* a binary-suffixed quantity is silently capped at ``2**63 - 1`` in magnitude (``8Ei``);
* ``Value()``/``MilliValue()`` round up, away from zero (``milli_value`` / ``int_value`` here).

Deliberate, documented differences: a quantity must contain at least one digit (upstream reads
``"Ki"``, ``"."`` or ``"-"`` as zero, which is never what a user meant), exponents must fit in a
32-bit integer (upstream silently truncates them) and inputs are limited to 1000 characters.
"""

from __future__ import annotations

import functools
import math
import re
from fractions import Fraction
from typing import Final

__all__ = [
    "BINARY_SUFFIXES",
    "DECIMAL_SUFFIXES",
    "QuantityError",
    "canonical_quantity",
    "format_quantity",
    "int_value",
    "is_memory_like",
    "milli_value",
    "parse_quantity",
    "resource_amount",
]


class QuantityError(ValueError):
    """A value that is not a valid Kubernetes quantity (or not valid for its resource)."""


#: Binary SI suffixes and the power of two they stand for.
BINARY_SUFFIXES: Final[dict[str, int]] = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
#: Decimal SI suffixes and the power of ten they stand for.
DECIMAL_SUFFIXES: Final[dict[str, int]] = {
    "n": -9,
    "u": -6,
    "m": -3,
    "": 0,
    "k": 3,
    "M": 6,
    "G": 9,
    "T": 12,
    "P": 15,
    "E": 18,
}

_MAX_INPUT_CHARS: Final = 1000
_INT32_MAX: Final = 2**31 - 1
_INT64_MAX: Final = 2**63 - 1
_NANO: Final = 10**9
# Positive exponents beyond this make numbers no resource could ever have; refusing them keeps a
# hostile "1e2000000000" from allocating gigabytes.
_MAX_DECIMAL_EXPONENT: Final = 1000
_VALID_SUFFIXES: Final = ", ".join([*BINARY_SUFFIXES, *(s for s in DECIMAL_SUFFIXES if s)])

_NUMBER_RE: Final = re.compile(r"([+-]?)([0-9]*)(?:\.([0-9]*))?(.*)", re.DOTALL)
_EXPONENT_RE: Final = re.compile(r"[eE]([+-]?[0-9]+)")


def _fail(value: object, why: str) -> QuantityError:
    return QuantityError(f"invalid quantity {value!r}: {why} (examples: '500m', '2', '1.5Gi', '129e6')")


def _as_text(value: str | int | float) -> str:
    """Turn the accepted input types into quantity text, rejecting look-alikes such as bools."""
    if isinstance(value, bool):  # bool is an int subclass; `cpu: true` is a manifest mistake
        raise _fail(value, "a boolean is not a quantity")
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise _fail(value, "must be a finite number")
        # str() of a float is the shortest decimal that round-trips, i.e. what the user wrote.
        return str(value)
    if isinstance(value, str):
        return value
    raise _fail(value, f"must be a string or a number, not {type(value).__name__}")


def _round_nano_away(value: Fraction) -> Fraction:
    """Round to a whole number of nano units, away from zero, like upstream's parser."""
    scaled = value * _NANO
    if scaled.denominator == 1:
        return value
    magnitude = math.ceil(abs(scaled))
    return Fraction(magnitude if value > 0 else -magnitude, _NANO)


def parse_quantity(value: str | int | float) -> Fraction:
    """Return the exact value of a Kubernetes quantity.

    Raises :class:`QuantityError` (and nothing else) for anything that is not a quantity.
    """
    text = _as_text(value)
    if not text:
        raise _fail(value, "must not be empty")
    if len(text) > _MAX_INPUT_CHARS:
        raise _fail(text[:20] + "...", f"longer than {_MAX_INPUT_CHARS} characters")
    if any(ch.isspace() for ch in text):
        raise _fail(value, "must not contain whitespace")

    match = _NUMBER_RE.fullmatch(text)
    if match is None:  # pragma: no cover - the pattern matches every string
        raise _fail(value, "not a number")
    sign, whole, frac, suffix = match.group(1), match.group(2), match.group(3) or "", match.group(4)
    if not whole and not frac:
        raise _fail(value, "must start with a number")

    base, exponent = 10, 0
    if suffix in BINARY_SUFFIXES:
        base, exponent = 2, BINARY_SUFFIXES[suffix]
    elif suffix in DECIMAL_SUFFIXES:
        exponent = DECIMAL_SUFFIXES[suffix]
    else:
        exp_match = _EXPONENT_RE.fullmatch(suffix)
        if exp_match is None:
            if suffix and suffix[0] in "+-.":
                raise _fail(value, f"unexpected {suffix[0]!r} after the number")
            raise _fail(value, f"unknown suffix {suffix!r}; valid suffixes are {_VALID_SUFFIXES} or e<int>")
        exponent = int(exp_match.group(1))
        if abs(exponent) > _INT32_MAX:
            raise _fail(value, "exponent out of range")

    mantissa = Fraction(int(whole + frac or "0"), 10 ** len(frac))
    if mantissa == 0:
        return Fraction(0)
    if sign == "-":
        mantissa = -mantissa

    if base == 2:
        result = mantissa * 2**exponent
    else:
        # Orders of magnitude of the integer part bound the result: refuse absurdly large values and
        # short-cut absurdly small ones (they round to one nano unit) without building 10**huge.
        magnitude = len(whole.lstrip("0")) + exponent
        if magnitude > _MAX_DECIMAL_EXPONENT:
            raise _fail(value, "value is too large")
        if magnitude <= -9:  # below one nano unit
            return Fraction(1 if mantissa > 0 else -1, _NANO)
        result = mantissa * 10**exponent if exponent >= 0 else mantissa / 10**-exponent

    result = _round_nano_away(result)
    if base == 2 and abs(result) > _INT64_MAX:
        result = Fraction(_INT64_MAX if result > 0 else -_INT64_MAX)
    return result


def _ceil_away_from_zero(value: Fraction) -> int:
    magnitude = math.ceil(abs(value))
    return magnitude if value >= 0 else -magnitude


def milli_value(q: Fraction) -> int:
    """``q * 1000`` rounded up away from zero, like upstream ``Quantity.MilliValue()``."""
    return _ceil_away_from_zero(q * 1000)


def int_value(q: Fraction) -> int:
    """``q`` rounded up away from zero, like upstream ``Quantity.Value()`` (``0.1`` -> ``1``)."""
    return _ceil_away_from_zero(q)


def is_memory_like(resource_name: str) -> bool:
    """Whether a resource counts bytes (and so reads best with binary suffixes)."""
    return resource_name in ("memory", "ephemeral-storage", "storage") or resource_name.startswith(
        "hugepages-"
    )


def resource_amount(resource_name: str, value: str | int | float) -> int:
    """The integer the scheduler stores for a resource: milli-CPU for ``cpu``, else units.

    Like kube-scheduler, which reads ``cpu`` with ``MilliValue()`` and everything else (bytes,
    pods, hugepages, extended resources) with ``Value()``; both round up.
    """
    if isinstance(value, str):
        # Manifests repeat the same few strings ("100m", "500Mi") thousands of times.
        return _cached_string_amount(resource_name == "cpu", resource_name, value)
    return _resource_amount(resource_name, value)


@functools.lru_cache(maxsize=8192)
def _cached_string_amount(is_cpu: bool, resource_name: str, value: str) -> int:
    return _resource_amount("cpu" if is_cpu else resource_name, value)


def _resource_amount(resource_name: str, value: str | int | float) -> int:
    q = parse_quantity(value)
    if q < 0:
        raise QuantityError(f"invalid quantity {value!r} for {resource_name}: must be non-negative")
    amount = milli_value(q) if resource_name == "cpu" else int_value(q)
    if amount > _INT64_MAX:
        raise QuantityError(
            f"invalid quantity {value!r} for {resource_name}: too large (more than 2^63-1 "
            f"{'millicores' if resource_name == 'cpu' else 'units'})"
        )
    return amount


def format_quantity(resource_name: str, amount: int) -> str:
    """Human form of a :func:`resource_amount` result; feeding it back gives the same amount."""
    sign = "-" if amount < 0 else ""
    magnitude = abs(amount)
    if resource_name == "cpu":
        if magnitude % 1000 == 0:
            return f"{sign}{magnitude // 1000}"
        return f"{sign}{magnitude}m"
    if is_memory_like(resource_name) and magnitude:
        for suffix, power in reversed(BINARY_SUFFIXES.items()):
            if magnitude % (1 << power) == 0:
                return f"{sign}{magnitude >> power}{suffix}"
    return f"{sign}{magnitude}"


#: Decimal SI suffixes by the power of ten they stand for (the canonical form's exponents).
_DECIMAL_BY_EXPONENT: Final[dict[int, str]] = {e: s for s, e in DECIMAL_SUFFIXES.items()}
#: Binary suffixes by their power of 1024.
_BINARY_BY_POWER: Final[tuple[str, ...]] = ("", *BINARY_SUFFIXES)


def canonical_quantity(value: str | int | float) -> str:
    """Upstream ``Quantity.String()`` of a quantity as written: the value in the format its suffix
    chose (binary, decimal SI or decimal exponent) with the largest suffix that keeps the number a
    whole one (``1.5Gi`` prints ``1536Mi``, ``1000M`` prints ``1G``, ``2048`` prints ``2048``). A
    binary quantity that is below 1024 or not whole prints as decimal SI, as upstream's does."""
    q = parse_quantity(value)
    if q == 0:
        return "0"
    match = _NUMBER_RE.fullmatch(_as_text(value))
    suffix = match.group(4) if match is not None else ""
    sign = "-" if q < 0 else ""
    magnitude = abs(q)
    if suffix in BINARY_SUFFIXES and magnitude >= 1024 and magnitude.denominator == 1:
        whole, power = int(magnitude), 0
        while whole % 1024 == 0 and power < len(_BINARY_BY_POWER) - 1:
            whole //= 1024
            power += 1
        return f"{sign}{whole}{_BINARY_BY_POWER[power]}"
    # Nano units are whole by construction; the exponent rises in steps of three while it stays so.
    mantissa, exponent = int(magnitude * _NANO), -9
    while mantissa % 1000 == 0:
        mantissa //= 1000
        exponent += 3
    exponential = bool(suffix) and suffix[0] in "eE" and suffix not in DECIMAL_SUFFIXES
    if exponential or exponent not in _DECIMAL_BY_EXPONENT:
        return f"{sign}{mantissa}" + (f"e{exponent}" if exponent else "")
    return f"{sign}{mantissa}{_DECIMAL_BY_EXPONENT[exponent]}"
