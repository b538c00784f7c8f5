"""drf: dominant resource fairness between jobs (Volcano ``plugins/drf``, non-hierarchical mode).

A job's *share* is its largest ``allocated / cluster total`` over the resources the cluster has (its
dominant resource). The plugin registers:

* a job order: the smaller share first, so the job furthest behind gets resources next;
* a preemptable function: a running task may be preempted for a preemptor when the preemptor's job,
  with the preemptor's request added, would still have a share no larger than the victim's job
  after losing that task (equal within 1e-6 counts);
* event handlers that keep every job's share current as statements allocate, pipeline and evict.

Volcano's hierarchical DRF (``enableHierarchy``) and its deprecated namespace order are not
provided; the hierarchy switch is accepted and ignored (the conf loader warns about it).
"""

from __future__ import annotations

from collections.abc import Hashable, Iterator, Mapping
from typing import cast

import numpy as np

from kubesched.batch.conf import PluginOption
from kubesched.batch.job_info import PERMIT, JobInfo, TaskInfo, TaskStatus
from kubesched.batch.session import Event, EventHandler, Session
from kubesched.batch.shares import Vector, dominant_resource, dominant_share, drf_preemptable, job_share_order


class DrfPlugin:
    name = "drf"

    def __init__(self, option: PluginOption) -> None:
        self.option = option
        self.total: Vector = np.zeros(0, dtype=np.float64)
        #: Job uid → resources its allocated and pipelined tasks hold in this session.
        self.allocated: _Allocations = _Allocations({})
        #: Job uid → dominant share of ``allocated``; a job whose allocation moved since is left out
        #: until its share is read again (events come for every task, orders read far less often).
        self.shares: dict[str, float] = {}

    # -- state ---------------------------------------------------------------------------------------
    def share_of(self, job_uid: str) -> float:
        share = self.shares.get(job_uid)
        if share is None:
            alloc = self.allocated.get(job_uid)
            if alloc is None:
                return 0.0
            # Nothing held is a share of 0 whatever the total (most jobs waiting hold nothing).
            share = self.shares[job_uid] = dominant_share(alloc, self.total) if alloc.any() else 0.0
        return share

    def _update(self, job_uid: str, delta: Vector, sign: int) -> None:
        alloc = self.allocated.made(job_uid)
        if alloc is None:
            return  # not read yet: made from the job's tasks when first read
        if sign > 0:
            alloc += delta
        else:
            alloc -= delta
        self.shares.pop(job_uid, None)

    # -- session -------------------------------------------------------------------------------------
    def on_session_open(self, ssn: Session) -> None:
        self.total = np.array(ssn.total_resource, dtype=np.float64)
        # Allocations and shares are worked out when first read (most jobs are never ordered).
        self.allocated = _Allocations(dict(ssn.jobs))
        self.shares = {}

        def job_order(left: JobInfo, right: JobInfo) -> int:
            return job_share_order(self.share_of(left.uid), self.share_of(right.uid))

        ssn.add_job_order_fn(self.name, job_order, key=lambda j: self.share_of(j.uid))

        def preemptable(preemptor: TaskInfo, preemptees: list[TaskInfo]) -> tuple[list[TaskInfo], int]:
            mine = self.allocated.get(preemptor.job)
            if mine is None:
                return [], PERMIT
            picked = drf_preemptable(
                self.total,
                mine,
                preemptor.resreq,
                [(t.job, t.resreq) for t in preemptees],
                cast("Mapping[Hashable, Vector]", self.allocated),
            )
            return [preemptees[i] for i in picked], PERMIT

        ssn.add_preemptable_fn(self.name, preemptable)

        def on_allocate(event: Event) -> None:
            self._update(event.task.job, event.task.resreq, 1)

        def on_deallocate(event: Event) -> None:
            self._update(event.task.job, event.task.resreq, -1)

        ssn.add_event_handler(EventHandler(allocate_func=on_allocate, deallocate_func=on_deallocate))

    def on_session_close(self, ssn: Session) -> None:
        # A plugin instance lives for one session; its shares stay readable for reports.
        return None

    # -- reports -------------------------------------------------------------------------------------
    def dominant(self, ssn: Session, job_uid: str) -> tuple[str, float]:
        """The job's dominant resource and share right now (``("", 0.0)`` when it holds nothing)."""
        alloc = self.allocated.get(job_uid)
        if alloc is None:
            return "", 0.0
        return dominant_resource(ssn.space, alloc, self.total)


class _Allocations(Mapping[str, Vector]):
    """Job uid → what the job's allocated and pipelined tasks hold, made on first read.

    The event handlers add and take away each task a statement allocates, pipelines or evicts, so
    an entry made later from the job itself (tasks in allocated statuses, plus pipelined tasks) has
    the value the handlers would have brought a copy taken at open to."""

    def __init__(self, jobs: Mapping[str, JobInfo]) -> None:
        self._jobs = jobs
        self._made: dict[str, Vector] = {}

    def made(self, uid: str) -> Vector | None:
        """The entry if it was read already (``None`` otherwise)."""
        return self._made.get(uid)

    def __getitem__(self, uid: str) -> Vector:
        alloc = self._made.get(uid)
        if alloc is None:
            job = self._jobs[uid]
            alloc = job.allocated.copy()
            for task in job.task_status_index.get(TaskStatus.PIPELINED, {}).values():
                alloc += task.resreq
            self._made[uid] = alloc
        return alloc

    def __contains__(self, uid: object) -> bool:
        return uid in self._jobs

    def __iter__(self) -> Iterator[str]:
        return iter(self._jobs)

    def __len__(self) -> int:
        return len(self._jobs)
