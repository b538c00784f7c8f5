"""Batch outcomes: the per-PodGroup and per-queue reports a scheduler keeps."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kubesched.api.volcano import queue_ancestors
from kubesched.batch.job_info import JobInfo, TaskStatus
from kubesched.batch.queue_totals import QueueTotals
from kubesched.batch.session import Session
from kubesched.batch.shares import ResourceSpace, Vector


@dataclass(slots=True)
class JobReport:
    """Last known outcome of one PodGroup, for reports."""

    namespace: str
    name: str
    queue: str
    min_member: int
    phase: str = "Pending"
    bound: int = 0
    pending: int = 0
    message: str = ""
    #: Task name → why it fits no node (last session).
    fit_errors: dict[str, str] = field(default_factory=dict)


@dataclass(slots=True)
class QueueReport:
    name: str
    weight: int
    allocated: dict[str, int] = field(default_factory=dict)
    deserved: dict[str, int] | None = None
    bound: int = 0
    pending: int = 0
    #: ``spec.parent`` (empty: none named). A queue with children reports its subtree's totals.
    parent: str = ""
    #: Ancestors above it (0: a top-level queue).
    depth: int = 0


@dataclass(slots=True)
class SessionStats:
    #: Wall time of the whole period: snapshot, actions, binds, status writes.
    seconds: float
    pending_before: int
    bound: int
    #: Of which: the actions (the scheduling decisions).
    decide_seconds: float = 0.0
    #: CPU time of the whole period (this process), for measurements on a busy machine.
    cpu_seconds: float = 0.0
    #: Virtual time the session ran at.
    at: float = 0.0


@dataclass(slots=True)
class QueueState:
    """Per queue: weight, allocated (``None``: no jobs), tasks placed, tasks pending; and each
    queue's deserved resources (``None``: no proportion plugin)."""

    space: ResourceSpace
    queues: dict[str, tuple[int, Vector | None, int, int]]
    deserved: dict[str, Vector] | None
    #: Queue → ``spec.parent``, for the queues that name one.
    parents: dict[str, str] = field(default_factory=dict)


class BatchReports:
    """The last known outcome of every PodGroup and queue the scheduler has seen."""

    def __init__(self) -> None:
        self.jobs: dict[str, JobReport] = {}
        self.queue_reports: dict[str, QueueReport] = {}
        #: The queue report's inputs as of the last session (materialized by queue_report_list).
        self.queue_state: QueueState | None = None

    def report_job(
        self, job: JobInfo, phase: str, conditions: list[dict[str, str]], noted: bool = False
    ) -> None:
        """Record a job's outcome. The Unschedulable message is shown while members are pending,
        and whenever it carries a note on a gang below minMember (``noted``)."""
        report = self.jobs.setdefault(
            job.uid, JobReport(job.namespace, job.name, job.queue, job.min_available)
        )
        report.queue = job.queue
        report.min_member = job.min_available
        report.phase = phase
        report.bound = sum(
            len(job.task_status_index.get(s, ()))
            for s in (TaskStatus.BINDING, TaskStatus.BOUND, TaskStatus.RUNNING, TaskStatus.SUCCEEDED)
        )
        report.pending = len(job.task_status_index.get(TaskStatus.PENDING, ())) + len(
            job.task_status_index.get(TaskStatus.PIPELINED, ())
        )
        unsched = next(
            (c for c in conditions if c.get("type") == "Unschedulable" and c.get("status") == "True"), None
        )
        shown = unsched is not None and (report.pending or noted)
        report.message = unsched.get("message", "") if unsched is not None and shown else ""
        report.fit_errors = {
            job.tasks[uid].name: msg for uid, msg in job.fit_errors.items() if uid in job.tasks
        }

    def keep_queues(self, ssn: Session, totals: QueueTotals) -> None:
        """Keep what the queue report needs as of this session; the report itself is made when read
        (queue_report_list)."""
        queues: dict[str, tuple[int, Vector | None, int, int]] = {}
        for name, q in ssn.queues.items():
            qs = totals.queues.get(name)
            if qs is None:
                queues[name] = (q.weight, None, 0, 0)
            else:
                queues[name] = (q.weight, qs.allocated.copy(), qs.holding, qs.pending)
        parents = {name: q.queue.parent for name, q in ssn.queues.items() if q.queue.parent}
        if parents and "root" in ssn.queues:
            # In a tree, a queue naming no parent hangs under root (Volcano's rule).
            for name in ssn.queues:
                if name != "root":
                    parents.setdefault(name, "root")
        state = QueueState(ssn.space, queues, ssn.queue_deserved, parents)
        last = self.queue_state
        if last is not None and not last.queues.keys() <= queues.keys():
            self.materialize(last)  # a queue went away: keep what it last showed
        self.queue_state = state

    def materialize(self, state: QueueState) -> None:
        space = state.space
        queues = state.queues
        if state.parents:
            queues = _subtree_totals(space, queues, state.parents)
        for name, (weight, allocated, bound, pending) in queues.items():
            rep = self.queue_reports.setdefault(name, QueueReport(name, weight))
            rep.weight = weight
            vec = allocated if allocated is not None else space.zeros()
            rep.allocated = _by_name(space.to_dict(vec))
            rep.bound, rep.pending = bound, pending
            rep.parent = state.parents.get(name, "")
            rep.depth = len(queue_ancestors(name, state.parents, queues))
            if state.deserved is not None:
                # A queue without jobs in the session deserves nothing.
                d = state.deserved.get(name)
                rep.deserved = {} if d is None else _by_name(space.to_dict(d))

    def job_reports(self) -> list[JobReport]:
        return sorted(self.jobs.values(), key=lambda r: (r.namespace, r.name))

    def queue_report_list(self) -> list[QueueReport]:
        """Queues by name; with parents named, in tree order (each queue followed by its children)."""
        if self.queue_state is not None:
            self.materialize(self.queue_state)
        reports = self.queue_reports

        def path(r: QueueReport) -> list[str]:
            out = [r.name]
            seen = {r.name}
            cur = reports.get(r.parent) if r.parent else None
            while cur is not None and cur.name not in seen:
                out.append(cur.name)
                seen.add(cur.name)
                cur = reports.get(cur.parent) if cur.parent else None
            return out[::-1]

        return sorted(reports.values(), key=path)


def _by_name(resources: dict[str, int]) -> dict[str, int]:
    """A queue's resources without ``pods``, cpu and memory first and then by name, whatever order
    the session's resource columns came in."""
    return {
        k: resources[k]
        for k in sorted(resources, key=lambda k: (k not in ("cpu", "memory"), k))
        if k != "pods"
    }


def _subtree_totals(
    space: ResourceSpace, queues: dict[str, tuple[int, Vector | None, int, int]], parents: dict[str, str]
) -> dict[str, tuple[int, Vector | None, int, int]]:
    """Each queue's own numbers plus every descendant's (a parent queue reports its subtree)."""
    out: dict[str, list[Any]] = {
        name: [w, None if a is None else a.copy(), b, p] for name, (w, a, b, p) in queues.items()
    }
    for name, (_, allocated, bound, pending) in queues.items():
        for anc in queue_ancestors(name, parents, queues):
            entry = out[anc]
            if allocated is not None:
                entry[1] = (entry[1] if entry[1] is not None else space.zeros()) + allocated
            entry[2] += bound
            entry[3] += pending
    return {name: (e[0], e[1], e[2], e[3]) for name, e in out.items()}
