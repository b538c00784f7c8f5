"""select_host picks the highest-scoring node, a tie broken uniformly at random by one draw of
the scheduler's generator (upstream selectHost), or by the smallest node name where told to."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from kubesched.scheduler.schedule_one import select_host


def reference(names: list[str], feasible: np.ndarray, scores: np.ndarray, rng: Any, by_name: bool) -> int:
    """The plain reading: list every node of the best score, then draw one of them."""
    best = max(scores.tolist())
    ties = [i for i, s in enumerate(scores.tolist()) if s == best]
    if len(ties) > 1 and by_name:
        return min((int(feasible[t]) for t in ties), key=lambda slot: names[slot])
    pick = ties[0] if len(ties) == 1 else ties[int(rng.integers(len(ties)))]
    return int(feasible[pick])


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.integers(0, 3), min_size=1, max_size=40),
    st.integers(0, 2**32 - 1),
    st.booleans(),
)
def test_select_host_picks_the_node_the_plain_reading_picks(
    scores: list[int], seed: int, by_name: bool
) -> None:
    # Few distinct scores: ties of every size, every node tying included.
    n = len(scores)
    feasible = np.random.default_rng(seed).permutation(2 * n)[:n].astype(np.int64)
    names = [f"node-{(7 * slot) % (2 * n):03d}" for slot in range(2 * n)]
    arr = np.array(scores, dtype=np.int64)
    sched = SimpleNamespace(
        rng=np.random.default_rng(seed),
        tie_break_by_name=by_name,
        snapshot=SimpleNamespace(table=SimpleNamespace(names=names)),
    )
    expected_rng = np.random.default_rng(seed)
    picked = select_host(sched, feasible, arr)  # type: ignore[arg-type]
    assert picked == reference(names, feasible, arr, expected_rng, by_name)
    # The generator moved as far as the plain reading moves it: later draws are the same.
    assert sched.rng.integers(1 << 30) == expected_rng.integers(1 << 30)
