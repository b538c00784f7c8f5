"""Waiting jobs a batch session keeps out of its ``waiting`` set and hands to allocate in job order,
one at a time, only when allocate reaches them."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from kubesched.batch.job_info import JobInfo, TaskInfo


class ParkedJobs:
    """Waiting jobs of one queue, in job order (by :meth:`Session.job_order_key`), pulled one at a
    time. Each has pending tasks, none best-effort, and is admitted and valid; ``requests`` holds
    one task per distinct request among their pending tasks, so a queue that refuses all of them
    (with monotone allocatable functions) refuses every job left."""

    def __init__(self, jobs: Iterator[tuple[Any, JobInfo]], requests: list[TaskInfo]) -> None:
        self._jobs = jobs
        self._head = next(jobs, None)
        self.requests = requests

    def peek_key(self) -> Any:
        """The next job's key (``None`` when none is left)."""
        return self._head[0] if self._head is not None else None

    def pop(self) -> JobInfo:
        assert self._head is not None
        job = self._head[1]
        self._head = next(self._jobs, None)
        return job

    def empty(self) -> bool:
        return self._head is None

    def drop(self) -> None:
        """Leave the rest (they would all be refused)."""
        self._head = None
