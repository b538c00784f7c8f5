"""The operations a statement records, the evictions a session commits, and the verdict of the
victim functions behind an eviction.

Their own module so that the session (which collects committed evictions) and the statement (which
records operations on a session) both import them and neither imports the other's module for them.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from kubesched.batch.job_info import JobInfo, TaskInfo, TaskStatus


class Op(Enum):
    EVICT = "evict"
    PIPELINE = "pipeline"
    ALLOCATE = "allocate"


@dataclass(frozen=True, slots=True)
class VictimVerdict:
    """How the session's victim functions (preemptable or reclaimable) chose a set of victims, with
    Volcano's tier precedence: the tiers before ``tier`` decided nothing, and in ``tier`` the
    answers of ``plugins`` were intersected."""

    #: "preemptable" or "reclaimable"; for the gang-aware actions' unified victim filters,
    #: "gangpreempt" or "gangreclaim".
    switch: str
    #: The task the victims make room for ("namespace/name"; the job's uid for the gang-aware
    #: actions, which make room for a job).
    preemptor: str
    #: The deciding tier, counted from 1.
    tier: int
    #: The plugins of that tier whose answers were intersected, in conf order.
    plugins: tuple[str, ...]
    #: Each earlier tier that decided nothing: (tier from 1, the plugin that answered no victims,
    #: or "" when every plugin of the tier abstained).
    undecided: tuple[tuple[int, str], ...] = ()


@dataclass(slots=True)
class Operation:
    op: Op
    task: TaskInfo
    reason: str = ""
    #: Status the task had before (restored by discard).
    previous: TaskStatus = TaskStatus.PENDING
    #: For an eviction: the victim functions' verdict that allowed it (None: none was asked).
    verdict: VictimVerdict | None = None


class SearchPurpose(Enum):
    """What a HyperNode gradient is asked for (Volcano ``SearchPurpose``): allocation tries the
    tightest HyperNodes first; eviction the widest first, and only as many as it may scan."""

    ALLOCATE = "allocate"
    EVICT = "evict"


class EvictionKind(Enum):
    """Which gang-aware action asks the unified victim functions (Volcano ``EvictionKind``)."""

    GANG_PREEMPT = "gangpreempt"
    GANG_RECLAIM = "gangreclaim"


@dataclass(frozen=True, slots=True)
class EvictionContext:
    """What a unified victim function is told (Volcano ``EvictionContext``): the action, the job
    that needs the room, and the HyperNode whose tasks are the candidates."""

    kind: EvictionKind
    job: JobInfo
    hyper_node: str


@dataclass(slots=True)
class Evictee:
    """A committed eviction, carried out when the session closes."""

    task: TaskInfo
    reason: str
    verdict: VictimVerdict | None = None


__all__ = [
    "Evictee",
    "EvictionContext",
    "EvictionKind",
    "Op",
    "Operation",
    "SearchPurpose",
    "VictimVerdict",
]
