"""The rotating walk that picks a cycle's feasible nodes, against upstream's sequential loop."""

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from kubesched.scheduler.schedule_one import _walk_from_start


def sequential_walk(nodes: list[int], feasible: set[int], start: int, to_find: int) -> tuple[list[int], int]:
    """Upstream's loop run one node at a time: a feasible node beyond ``to_find`` cancels the walk,
    which then counts the nodes up to the ``to_find``-th feasible one; a walk never cancelled
    processed every node."""
    found: list[int] = []
    n = len(nodes)
    last = -1
    for k in range(n):
        slot = nodes[(start + k) % n]
        if slot in feasible:
            if len(found) == to_find:
                return found, last + 1
            found.append(slot)
            last = k
    return found, n


@st.composite
def walks(draw: st.DrawFn) -> tuple[list[int], set[int], int, int, int]:
    capacity = draw(st.integers(1, 60))
    subset = draw(st.lists(st.integers(0, capacity - 1), min_size=1, max_size=capacity, unique=True))
    feasible = set(draw(st.lists(st.sampled_from(range(capacity)), max_size=capacity)))
    start = draw(st.integers(0, len(subset) - 1))
    to_find = draw(st.integers(1, len(subset)))
    return subset, feasible, start, to_find, capacity


@given(walks())
def test_walk_matches_upstream_loop(case: tuple[list[int], set[int], int, int, int]) -> None:
    subset, feasible, start, to_find, capacity = case
    mask = np.zeros(capacity, dtype=np.bool_)
    mask[list(feasible)] = True
    got, processed = _walk_from_start(np.array(subset, dtype=np.int64), mask, start, to_find)
    want, want_processed = sequential_walk(subset, feasible, start, to_find)
    assert got.tolist() == want
    assert processed == want_processed


@given(walks())
def test_walk_with_every_node_feasible(case: tuple[list[int], set[int], int, int, int]) -> None:
    subset, _, start, to_find, _ = case
    got, processed = _walk_from_start(np.array(subset, dtype=np.int64), None, start, to_find)
    want, want_processed = sequential_walk(subset, set(subset), start, to_find)
    assert got.tolist() == want
    assert processed == want_processed


def test_nothing_feasible_processes_every_node() -> None:
    nodes = np.arange(10, dtype=np.int64)
    got, processed = _walk_from_start(nodes, np.zeros(10, dtype=np.bool_), 3, 2)
    assert got.tolist() == []
    assert processed == 10
