"""NodeResourcesFit's ``RequestedToCapacityRatio`` scoring strategy (bin packing by a custom shape).

Per resource, the utilization ``requested * 100 / allocatable`` (integer division; 100 when the node
is over-committed or has none) is mapped through a piecewise-linear *shape* whose scores (0..10 in
the config) are scaled by 10 to 0..100. The node score is the weight-averaged resource score, where
only resources scoring above 0 count towards the weights, rounded half away from zero (Go
``math.Round``). The shape is evaluated with Go integer semantics: the interpolation's division
truncates toward zero, which matters for falling segments.

Utilizations are always in 0..100 here and validated shapes lie within it, so the shape is tabulated
once into 101 entries and each cycle is one gather per resource.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from kubesched.framework.plugin_args import MAX_CUSTOM_PRIORITY_SCORE, UtilizationShapePoint
from kubesched.framework.types import MAX_NODE_SCORE, BoolArray, IntArray
from kubesched.plugins.helper.int64 import scaled_quotient

MAX_UTILIZATION = 100

#: (utilization, score) points, utilization strictly increasing.
Shape = Sequence[tuple[int, int]]


def go_div(a: int, b: int) -> int:
    """Go's integer division: the quotient truncated toward zero."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b > 0) else -q


def broken_linear_function(shape: Shape) -> Callable[[int], int]:
    """Upstream ``helper.BuildBrokenLinearFunction``: the first point's score up to its utilization,
    the last point's beyond, and integer linear interpolation in between."""
    points = list(shape)

    def f(p: int) -> int:
        for i, (util, score) in enumerate(points):
            if p <= util:
                if i == 0:
                    return score
                prev_util, prev_score = points[i - 1]
                return prev_score + go_div((score - prev_score) * (p - prev_util), util - prev_util)
        return points[-1][1]

    return f


def scaled_shape(points: Sequence[UtilizationShapePoint]) -> list[tuple[int, int]]:
    """The configured shape with scores moved from 0..10 to the scheduler's 0..100."""
    factor = MAX_NODE_SCORE // MAX_CUSTOM_PRIORITY_SCORE
    return [(p.utilization, p.score * factor) for p in points]


class RequestedToCapacityRatio:
    """Vectorized scorer: :meth:`resource_score` per resource, :meth:`combine` for the node."""

    __slots__ = ("_table",)

    def __init__(self, shape: Sequence[UtilizationShapePoint]) -> None:
        f = broken_linear_function(scaled_shape(shape))
        self._table = np.array([f(p) for p in range(MAX_UTILIZATION + 1)], dtype=np.int64)

    def resource_score(
        self, requested: IntArray, allocatable: IntArray, ceiling: int | None = None, nonzero: bool = False
    ) -> IntArray:
        """The shape's score at each node's utilization of one resource (``ceiling``: a bound of
        ``abs(allocatable)`` and ``-requested``, see ``fit.least_allocated``; ``nonzero`` is not
        needed here)."""
        full = (allocatable == 0) | (requested > allocatable)
        utilization = scaled_quotient(
            np.where(full, 0, requested), np.where(full, 1, allocatable), MAX_UTILIZATION, ceiling
        )
        utilization = np.where(full, MAX_UTILIZATION, np.clip(utilization, 0, MAX_UTILIZATION))
        scores: IntArray = self._table[utilization]
        return scores

    @staticmethod
    def counts(scores: IntArray) -> BoolArray:
        """Which resource scores count towards the weights (upstream: only those above 0)."""
        counted: BoolArray = scores > 0
        return counted

    @staticmethod
    def combine(total: IntArray, weight_sum: IntArray) -> IntArray:
        """``math.Round(total / weight_sum)`` for non-negative totals, 0 without weights; exact in
        integers (the float quotient cannot cross a .5 boundary that the exact one does not)."""
        safe = np.maximum(weight_sum, 1)
        rounded: IntArray = np.where(weight_sum == 0, 0, (2 * total + safe) // (2 * safe))
        return rounded
