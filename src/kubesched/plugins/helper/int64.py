"""int64 arithmetic on node columns that neither wraps nor raises.

Every quantity fits an int64, but sums and products of them need not: a node's requested total plus
a pod's request can pass ``2**63 - 1``, and the scorers' ``amount * 100`` does for allocatable above
about ``9.2e16`` units. NumPy wraps silently there (Go's int64 does too), so a huge node would score
as a small or over-full one. These helpers saturate sums and compute the scaled quotients exactly:
for values that do not overflow, the result is the plain int64 one.

Both take an optional ``ceiling``: a known bound of the magnitude of the array's values (the
node table keeps one, :meth:`~kubesched.cache.node_table.NodeTable.value_ceiling`). When the bound
shows the plain operation cannot overflow, it runs without the guards — same result, less work.
"""

from __future__ import annotations

import numpy as np

from kubesched.api.resources import INT64_MAX
from kubesched.framework.types import IntArray

__all__ = ["INT64_MAX", "clamp", "saturating_add", "scaled_quotient"]


def clamp(value: int) -> int:
    """``value`` saturated to the int64 range."""
    return max(-INT64_MAX - 1, min(value, INT64_MAX))


def saturating_add(values: IntArray, amount: int, ceiling: int | None = None) -> IntArray:
    """``values + amount`` for non-negative operands, capped at ``2**63 - 1``. ``ceiling``, if
    given, bounds every ``abs(value)``."""
    if ceiling is not None and 0 <= amount <= INT64_MAX - ceiling:
        plain: IntArray = values + amount
        return plain
    amount = clamp(amount)
    if amount <= 0:
        out: IntArray = values + amount
        return out
    capped: IntArray = np.minimum(values, INT64_MAX - amount) + amount
    return capped


def scaled_quotient(
    numerator: IntArray, denominator: IntArray, scale: int, ceiling: int | None = None
) -> IntArray:
    """``(numerator * scale) // denominator`` without overflow (floor division, like the int64
    expression where it does not overflow); ``denominator`` must be positive. ``ceiling``, if
    given, bounds every ``abs(numerator)``."""
    if (ceiling is not None and ceiling <= INT64_MAX // scale) or (
        numerator.size == 0 or int(np.abs(numerator).max()) <= INT64_MAX // scale
    ):
        fast: IntArray = (numerator * scale) // denominator
        return fast
    # Rare: allocatable above ~9e16 units. Python integers are exact at any size.
    exact = [n * scale // d for n, d in zip(numerator.tolist(), denominator.tolist(), strict=True)]
    return np.array(exact, dtype=np.int64)
