"""Preemption candidates and upstream's ``pickOneNodeForPreemption``.

A candidate is a node where evicting its victims lets the preemptor fit. The dry run yields them as
columns (one entry per candidate), so choosing among hundreds is a handful of array operations.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from kubesched.api.objects import Pod
from kubesched.plugins.defaultpreemption.victims import start_time

#: Upstream adds MaxInt32+1 to each victim priority before summing, so that negative priorities
#: cannot make a node with more victims look cheaper.
PRIORITY_OFFSET = 2**31


@dataclass(slots=True)
class Candidates:
    """Candidate nodes in upstream order (those violating no PodDisruptionBudget first, each group
    in dry-run order), with what ``pickOneNodeForPreemption`` compares."""

    slots: NDArray[np.int64]
    pdb_violations: NDArray[np.int64]
    #: Priority of the most important victim.
    top_priority: NDArray[np.int64]
    #: Sum of (priority + 2^31) over the victims.
    priority_sum: NDArray[np.int64]
    count: NDArray[np.int64]
    #: Earliest start among the victims of top priority (inf: none has started).
    top_earliest_start: NDArray[np.float64]
    #: Candidate index → its victims, most important first.
    victims_of: Callable[[int], list[Pod]]

    def __len__(self) -> int:
        return len(self.slots)

    @classmethod
    def from_lists(cls, entries: Sequence[tuple[int, list[Pod], int]]) -> Candidates:
        """Build from (slot, victims most important first, PDB violations) per candidate."""
        victims = [v for _, v, _ in entries]
        top = [v[0].priority for v in victims]
        earliest = [
            min(start_time(p) for p in v if p.priority == t) for v, t in zip(victims, top, strict=True)
        ]
        return cls(
            slots=np.array([s for s, _, _ in entries], dtype=np.int64),
            pdb_violations=np.array([n for _, _, n in entries], dtype=np.int64),
            top_priority=np.array(top, dtype=np.int64),
            priority_sum=np.array(
                [sum(p.priority + PRIORITY_OFFSET for p in v) for v in victims], dtype=np.int64
            ),
            count=np.array([len(v) for v in victims], dtype=np.int64),
            top_earliest_start=np.array(earliest, dtype=np.float64),
            victims_of=lambda i: victims[i],
        )


def pick_one_node(c: Candidates) -> int:
    """Index of the candidate upstream's ``pickOneNodeForPreemption`` picks. Criteria, each applied to
    the nodes tied on all before it: fewest PDB violations; lowest top victim priority; lowest sum of
    victim priorities; fewest victims; latest start among the top-priority victims; then the first."""
    if len(c) == 1:
        return 0
    keep = np.ones(len(c), dtype=np.bool_)
    scores: list[NDArray[np.int64] | NDArray[np.float64]] = [
        -c.pdb_violations,
        -c.top_priority,
        -c.priority_sum,
        -c.count,
        c.top_earliest_start,
    ]
    for score in scores:
        best = score[keep].max()
        keep &= score == best
        if np.count_nonzero(keep) == 1:
            break
    return int(np.flatnonzero(keep)[0])
