"""default_normalize_score: table after upstream's helper/normalize_score_test.go."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pytest

from kubesched.plugins.helper import default_normalize_score


@dataclass
class Case:
    scores: Sequence[int]
    expected: Sequence[int]
    reverse: bool = False


CASES = [
    Case([1, 2, 3, 4], [25, 50, 75, 100]),
    Case([1, 2, 3, 4], [75, 50, 25, 0], reverse=True),
    Case([1000, 10, 20, 30], [100, 1, 2, 3]),
    Case([1000, 10, 20, 30], [0, 99, 98, 97], reverse=True),
    Case([1, 1, 1, 1], [100, 100, 100, 100]),
    Case([1000, 1, 1, 1], [100, 0, 0, 0]),
    Case([0, 1, 1, 1], [100, 0, 0, 0], reverse=True),
    # All zero: nothing to scale; reversed, every node is equally good.
    Case([0, 0, 0], [0, 0, 0]),
    Case([0, 0, 0], [100, 100, 100], reverse=True),
    # Integer division truncates: 100 * 1 // 3 = 33, 100 * 2 // 3 = 66.
    Case([1, 2, 3], [33, 66, 100]),
    Case([1, 2, 3], [67, 34, 0], reverse=True),
    Case([], []),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{list(c.scores)}-reverse={c.reverse}")
def test_default_normalize_score(case: Case) -> None:
    scores = np.array(case.scores, dtype=np.int64)
    default_normalize_score(scores, case.reverse)
    assert scores.tolist() == list(case.expected)
    assert scores.dtype == np.int64


def test_custom_max_priority() -> None:
    scores = np.array([1, 2, 4], dtype=np.int64)
    default_normalize_score(scores, False, max_priority=10)
    assert scores.tolist() == [2, 5, 10]
