"""Durations as Kubernetes writes them: Go's ``time.Duration`` strings (``90s``, ``1h30m``) or seconds."""

from __future__ import annotations

import math
import re
from decimal import Decimal
from typing import Final

from kubesched.errors import InputError

_UNITS: Final[dict[str, float]] = {
    "ns": 1e-9,
    "us": 1e-6,
    "µs": 1e-6,  # U+00B5 micro sign
    "μs": 1e-6,  # U+03BC greek mu
    "ms": 1e-3,
    "s": 1.0,
    "m": 60.0,
    "h": 3600.0,
}
_GO_PART: Final = re.compile(r"([0-9]*(?:\.[0-9]*)?)(ns|us|µs|μs|ms|s|m|h)")
_PLAIN: Final = re.compile(r"[0-9]+(?:\.[0-9]*)?|\.[0-9]+")
_MAX_CHARS: Final = 1000
#: Go's ``time.Duration`` is int64 nanoseconds: about 292 years. Longer arrivals and lifetimes are
#: refused, which also keeps virtual timestamps inside what a timestamp can hold.
MAX_DURATION: Final = (2**63 - 1) / 1e9


def parse_duration(text: str | int | float) -> float:
    """Seconds in ``text``: a Go duration (``90s``, ``1h30m``, ``250ms``) or plain seconds (``1.5``).

    Negative, non-finite or malformed values raise :class:`InputError`.
    """
    if isinstance(text, bool):
        raise InputError(f"invalid duration {text!r}")
    if isinstance(text, int | float):
        value = float(text)
        if not math.isfinite(value) or value < 0:
            raise InputError(f"invalid duration {text!r}: must be a finite, non-negative number of seconds")
        if value > MAX_DURATION:
            raise InputError(f"invalid duration {text!r}: longer than Go's maximum duration (2562047h47m16s)")
        return value
    if not isinstance(text, str):
        raise InputError(f"invalid duration {text!r}: must be a string or a number")
    s = text.strip()
    if not s or len(s) > _MAX_CHARS:
        raise InputError(f"invalid duration {text[:_MAX_CHARS]!r}")
    if s.startswith("+"):
        s = s[1:]
    if _PLAIN.fullmatch(s):
        return parse_duration(float(s))
    if s == "0":
        return 0.0
    total = 0.0
    pos = 0
    while pos < len(s):
        m = _GO_PART.match(s, pos)
        if m is None or m.group(1) in ("", "."):
            raise InputError(
                f"invalid duration {text!r}: use seconds (1.5) or Go form like 90s, 2h, 1h30m, 250ms"
            )
        total += float(m.group(1)) * _UNITS[m.group(2)]
        pos = m.end()
    if not math.isfinite(total) or total > MAX_DURATION:
        raise InputError(f"invalid duration {text!r}: longer than Go's maximum duration (2562047h47m16s)")
    return total


def format_duration(seconds: float) -> str:
    """``seconds`` as a duration string :func:`parse_duration` reads back exactly (``90s``, ``0.25s``)."""
    if not math.isfinite(seconds) or seconds < 0:
        raise ValueError(f"cannot format duration {seconds!r}")
    if seconds == int(seconds):
        return f"{int(seconds)}s"
    return f"{format(Decimal(repr(seconds)), 'f')}s"
