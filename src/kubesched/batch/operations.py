"""The operations a statement records and the evictions a session commits.

Their own module so that the session (which collects committed evictions) and the statement (which
records operations on a session) both import them and neither imports the other's module for them.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from kubesched.batch.job_info import TaskInfo, TaskStatus


class Op(Enum):
    EVICT = "evict"
    PIPELINE = "pipeline"
    ALLOCATE = "allocate"


@dataclass(slots=True)
class Operation:
    op: Op
    task: TaskInfo
    reason: str = ""
    #: Status the task had before (restored by discard).
    previous: TaskStatus = TaskStatus.PENDING


@dataclass(slots=True)
class Evictee:
    """A committed eviction, carried out when the session closes."""

    task: TaskInfo
    reason: str


__all__ = ["Evictee", "Op", "Operation"]
