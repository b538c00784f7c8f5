"""Helpers shared by score plugins."""

from __future__ import annotations

import numpy as np

from kubesched.framework.types import MAX_NODE_SCORE, IntArray


def default_normalize_score(scores: IntArray, reverse: bool, max_priority: int = MAX_NODE_SCORE) -> None:
    """Upstream ``helper.DefaultNormalizeScore``, in place, integer arithmetic.

    Scales to ``[0, max_priority]`` by the largest score; with ``reverse`` the order flips. When every
    score is 0, reverse gives everyone ``max_priority`` (nobody is worse than anybody else).
    """
    if len(scores) == 0:
        return
    max_count = int(scores.max())
    if max_count == 0:
        if reverse:
            scores[:] = max_priority
        return
    np.floor_divide(scores * max_priority, max_count, out=scores)
    if reverse:
        np.subtract(max_priority, scores, out=scores)
