"""Per-queue sums over a session's jobs, kept job by job between sessions.

The proportion plugin needs, per queue, what its jobs hold and ask for; the queue report needs what
they hold and how many tasks are placed or waiting. Summing every job each session costs as much as
the jobs the run keeps alive. :class:`QueueTotals` keeps each job's part and the per-queue sums,
and the scheduler replaces the part of a job only when the job may have changed (a watch event
touched it, it has tasks waiting, the session worked on it). A job's part is a function of the job
alone, so the sums equal a fresh sum over the same jobs. Amounts are integers held in float64, so
adding and taking away parts is exact.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from kubesched.batch.job_info import ALLOCATED_STATUSES, JobInfo, TaskStatus
from kubesched.batch.shares import ResourceSpace, Vector

#: Statuses counted as placed in the queue report.
HOLDING_STATUSES = (TaskStatus.BINDING, TaskStatus.BOUND, TaskStatus.RUNNING)


@dataclass(slots=True, eq=False)
class JobPart:
    """One job's contribution to its queue's sums."""

    queue: str
    #: Resources of tasks in allocated statuses (``JobInfo.allocated``).
    allocated: Vector
    #: Resources of pending tasks.
    pending_request: Vector
    #: Allocated beyond ``minResources`` (proportion's elastic resources).
    elastic: Vector
    #: ``minResources`` the job reserves and does not hold yet (proportion's inqueue resources).
    inqueue: Vector
    #: What the job reserves for the overcommit plugin: all of ``minResources`` while Inqueue, the
    #: part not held yet while Running with ``minMember`` tasks holding resources.
    reserved: Vector
    #: Tasks binding, bound or running.
    holding: int
    #: Pending tasks.
    pending: int


@dataclass(slots=True, eq=False)
class QueueSum:
    """The sums of the parts of one queue's jobs."""

    allocated: Vector
    pending_request: Vector
    elastic: Vector
    inqueue: Vector
    reserved: Vector
    holding: int = 0
    pending: int = 0
    jobs: int = 0

    @property
    def request(self) -> Vector:
        """Allocated plus pending (proportion's request)."""
        request: Vector = self.allocated + self.pending_request
        return request


def reserves_min_resources(job: JobInfo) -> bool:
    """Whether an admitted job reserves the part of ``minResources`` it does not hold yet: while
    Inqueue, or Running with at least ``minMember`` tasks holding resources (Volcano proportion)."""
    if not job.pod_group.min_resources:
        return False
    return job.phase == "Inqueue" or (
        job.phase == "Running"
        and sum(len(ts) for st, ts in job.task_status_index.items() if st in ALLOCATED_STATUSES)
        >= job.pod_group.min_member
    )


def job_part(job: JobInfo, space: ResourceSpace) -> JobPart:
    index = job.task_status_index
    pending_tasks = index.get(TaskStatus.PENDING)
    if pending_tasks:
        pending_request: Vector = np.sum([t.resreq for t in pending_tasks.values()], axis=0)
    else:
        pending_request = space.zeros()
    allocated = job.allocated.copy()
    if not job.pod_group.min_resources:
        # No minResources: the whole allocation is elastic, nothing is reserved.
        elastic = allocated
        inqueue = reserved = space.zeros()
    else:
        elastic = np.maximum(allocated - job.min_resources, 0.0)
        if reserves_min_resources(job):
            inqueue = np.maximum(job.min_resources - allocated, 0.0)
            reserved = job.min_resources.copy() if job.phase == "Inqueue" else inqueue
        else:
            inqueue = reserved = space.zeros()
    return JobPart(
        job.queue,
        allocated,
        pending_request,
        elastic,
        inqueue,
        reserved,
        sum(len(index.get(s, ())) for s in HOLDING_STATUSES),
        len(pending_tasks) if pending_tasks else 0,
    )


class QueueTotals:
    """Per-queue sums of :class:`JobPart` over a set of jobs, updated one job at a time."""

    def __init__(self, space: ResourceSpace) -> None:
        self.space = space
        self.parts: dict[str, JobPart] = {}
        self.queues: dict[str, QueueSum] = {}

    def __len__(self) -> int:
        return len(self.parts)

    @classmethod
    def of(cls, space: ResourceSpace, jobs: Mapping[str, JobInfo]) -> QueueTotals:
        """The sums over ``jobs``."""
        totals = cls(space)
        for uid, job in jobs.items():
            totals.set(uid, job)
        return totals

    def reserved(self) -> Vector:
        """What all jobs reserve for the overcommit plugin."""
        out = self.space.zeros()
        for qs in self.queues.values():
            out += qs.reserved
        return out

    def set(self, uid: str, job: JobInfo | None) -> None:
        """Make ``job`` (``None``: no job) the one counted under ``uid``."""
        old = self.parts.pop(uid, None)
        if old is not None:
            qs = self.queues[old.queue]
            qs.jobs -= 1
            if qs.jobs == 0:
                del self.queues[old.queue]
            else:
                qs.allocated -= old.allocated
                qs.pending_request -= old.pending_request
                qs.elastic -= old.elastic
                qs.inqueue -= old.inqueue
                qs.reserved -= old.reserved
                qs.holding -= old.holding
                qs.pending -= old.pending
        if job is None:
            return
        part = job_part(job, self.space)
        self.parts[uid] = part
        into = self.queues.get(part.queue)
        if into is None:
            self.queues[part.queue] = QueueSum(
                part.allocated.copy(),
                part.pending_request.copy(),
                part.elastic.copy(),
                part.inqueue.copy(),
                part.reserved.copy(),
                part.holding,
                part.pending,
                1,
            )
            return
        into.jobs += 1
        into.allocated += part.allocated
        into.pending_request += part.pending_request
        into.elastic += part.elastic
        into.inqueue += part.inqueue
        into.reserved += part.reserved
        into.holding += part.holding
        into.pending += part.pending


__all__ = ["JobPart", "QueueSum", "QueueTotals", "job_part", "reserves_min_resources"]
