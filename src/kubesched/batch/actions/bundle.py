"""Victim bundles of the gang-aware actions (Volcano ``actions/utils/bundle.go``).

``gangpreempt`` and ``gangreclaim`` do not pick victims task by task: the candidate tasks a job has
in a HyperNode are split into at most two *bundles*, each evicted as one decision.

* A **safe** bundle holds the tasks the job can lose and stay gang-ready: its members beyond
  ``minMember`` (the lowest-priority ones first), and only as many per role as the role has beyond
  its ``minTaskMember``. A job already below ``minMember`` has nothing left to protect: all its
  candidates are safe.
* A **whole** bundle holds the rest: taking any of them breaks the gang, so it is weighed at the
  cost of the whole job.

Bundles are ranked safe before whole, then by the action's policy (job order for preempt, the
victim queue order for reclaim), then by efficiency, and last by job uid and first task uid so the
order never depends on map iteration. Efficiency is what a bundle frees where it is needed over
what evicting it costs, in the dimensions the preemptor asks for: the sum of ``min(local, need) /
need`` over the sum of ``global / need``. A safe bundle costs nothing globally (infinitely
efficient); a whole bundle costs every task of its job.
"""

from __future__ import annotations

import enum
import functools
import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace

import numpy as np

from kubesched.batch.job_info import ALLOCATED_STATUSES, JobInfo, QueueInfo, TaskInfo, TaskStatus
from kubesched.batch.shares import Vector, less_equal


class BundleType(enum.IntEnum):
    """Safe sorts before whole."""

    SAFE = 0
    WHOLE = 1


@dataclass(slots=True, eq=False)
class Bundle:
    type: BundleType
    job: JobInfo
    tasks: list[TaskInfo]
    #: What the bundle's tasks free in the HyperNode searched.
    local: Vector
    #: What evicting it costs across the cluster (nothing for a safe bundle, the job's every task
    #: for a whole one).
    global_: Vector


def sum_requests(tasks: Iterable[TaskInfo], size: int) -> Vector:
    total: Vector = np.zeros(size, dtype=np.float64)
    for t in tasks:
        total = total + t.resreq
    return total


def _role_ready(job: JobInfo) -> dict[str, int]:
    """Per role, the tasks counted ready by the gang's per-role check: placed or finished ones, and
    pending ones that ask for nothing."""
    ready: dict[str, int] = {}
    for status, tasks in job.task_status_index.items():
        if status in ALLOCATED_STATUSES or status == TaskStatus.SUCCEEDED:
            for t in tasks.values():
                ready[t.role] = ready.get(t.role, 0) + 1
        elif status == TaskStatus.PENDING:
            for t in tasks.values():
                if t.best_effort:
                    ready[t.role] = ready.get(t.role, 0) + 1
    return ready


def create_job_bundles(job: JobInfo, local_tasks: list[TaskInfo], size: int) -> list[Bundle]:
    """Split a job's candidate tasks in one HyperNode into its safe and whole bundles (either may be
    missing). ``size``: the length of resource vectors."""
    if not local_tasks:
        return []
    tasks = sorted(local_tasks, key=lambda t: (t.priority, t.uid))
    empty: Vector = np.zeros(size, dtype=np.float64)
    job_surplus = job.ready_task_num() - job.min_available
    if job_surplus < 0:
        return [Bundle(BundleType.SAFE, job, tasks, sum_requests(tasks, size), empty)]
    # Roles are checked only when the gang's per-role check applies (minMember covers them all).
    enforce_roles = job.min_available >= job.task_min_available_total
    role_surplus: dict[str, int] = {}
    if enforce_roles:
        ready = _role_ready(job)
        role_surplus = {role: ready.get(role, 0) - n for role, n in job.task_min_available.items()}
    safe: list[TaskInfo] = []
    whole: list[TaskInfo] = []
    for t in tasks:
        has_role_min = enforce_roles and t.role in job.task_min_available
        role_safe = role_surplus[t.role] > 0 if has_role_min else True
        if job_surplus > 0 and role_safe:
            safe.append(t)
            job_surplus -= 1
            if has_role_min:
                role_surplus[t.role] -= 1
        else:
            whole.append(t)
    out: list[Bundle] = []
    if safe:
        out.append(Bundle(BundleType.SAFE, job, safe, sum_requests(safe, size), empty))
    if whole:
        cost = sum_requests(job.tasks.values(), size)
        out.append(Bundle(BundleType.WHOLE, job, whole, sum_requests(whole, size), cost))
    return out


def flatten_bundles(bundles: Iterable[Bundle]) -> list[TaskInfo]:
    return [t for b in bundles for t in b.tasks]


def apply_allowed_tasks(bundles: Iterable[Bundle], allowed: set[str], size: int) -> list[Bundle]:
    """The bundles the victim filters left: a whole bundle only with every task allowed, a safe
    bundle shrunk to its allowed tasks."""
    out: list[Bundle] = []
    for b in bundles:
        if not b.tasks:
            continue
        approved = [t for t in b.tasks if t.uid in allowed]
        if b.type is BundleType.WHOLE:
            if len(approved) == len(b.tasks):
                out.append(b)
        elif approved:
            out.append(replace(b, tasks=approved, local=sum_requests(approved, size)))
    return out


def select_bundles(bundles: Iterable[Bundle], need: Vector, allow_whole: bool) -> list[Bundle]:
    """Bundles in order until what they free covers ``need``; whole ones only if allowed."""
    selected: list[Bundle] = []
    freed: Vector | None = None
    for b in bundles:
        if b.type is BundleType.WHOLE and not allow_whole:
            continue
        selected.append(b)
        freed = b.local.copy() if freed is None else freed + b.local
        if less_equal(need, freed):
            break
    return selected


def _score(res: Vector, need: Vector, cap: bool) -> float:
    dims = need > 0
    if not dims.any():
        return 0.0
    n = need[dims]
    v = res[dims]
    if cap:
        v = np.minimum(v, n)
    return float((v / n).sum())


def bundle_roi(b: Bundle, need: Vector) -> float:
    """Local relief per unit of global disruption, in the dimensions ``need`` asks for."""
    glob = _score(b.global_, need, cap=False)
    if glob == 0:
        return math.inf
    return _score(b.local, need, cap=True) / glob


def _first_task_uid(b: Bundle) -> str:
    return b.tasks[0].uid if b.tasks else ""


def _tie_break(left: Bundle, right: Bundle) -> int:
    for lv, rv in ((left.job.uid, right.job.uid), (_first_task_uid(left), _first_task_uid(right))):
        if lv != rv:
            return -1 if lv < rv else 1
    if len(left.tasks) != len(right.tasks):
        return -1 if len(left.tasks) < len(right.tasks) else 1
    return 0


def _sort(bundles: list[Bundle], need: Vector, policy: Callable[[Bundle, Bundle], bool | None]) -> None:
    """Stable sort: type, then ``policy`` (True: left first, None: no opinion), then efficiency,
    then the tie break."""
    roi = {id(b): bundle_roi(b, need) for b in bundles}

    def compare(left: Bundle, right: Bundle) -> int:
        if left.type != right.type:
            return -1 if left.type < right.type else 1
        first = policy(left, right)
        if first is not None:
            return -1 if first else 1
        lr, rr = roi[id(left)], roi[id(right)]
        if lr != rr:
            return -1 if lr > rr else 1
        return _tie_break(left, right)

    bundles.sort(key=functools.cmp_to_key(compare))


def _asymmetric(less: Callable[[object, object], bool], left: object, right: object) -> bool | None:
    """``less(left, right)`` when it and ``less(right, left)`` disagree; otherwise no opinion."""
    ij, ji = less(left, right), less(right, left)
    return ij if ij != ji else None


def sort_bundles_for_preempt(
    bundles: list[Bundle], need: Vector, less_victim_job: Callable[[JobInfo, JobInfo], bool] | None
) -> None:
    """Order for gangpreempt: ``less_victim_job(a, b)`` puts job ``a``'s bundles first."""

    def policy(left: Bundle, right: Bundle) -> bool | None:
        if less_victim_job is None or left.job.uid == right.job.uid:
            return None
        return _asymmetric(less_victim_job, left.job, right.job)  # type: ignore[arg-type]

    _sort(bundles, need, policy)


def sort_bundles_for_reclaim(
    bundles: list[Bundle],
    need: Vector,
    less_queue: Callable[[QueueInfo, QueueInfo], bool] | None,
    queues: dict[str, QueueInfo],
) -> None:
    """Order for gangreclaim: ``less_queue(a, b)`` puts the bundles of queue ``a``'s jobs first."""

    def policy(left: Bundle, right: Bundle) -> bool | None:
        if less_queue is None:
            return None
        lq, rq = queues.get(left.job.queue), queues.get(right.job.queue)
        if lq is None or rq is None or lq.name == rq.name:
            return None
        return _asymmetric(less_queue, lq, rq)  # type: ignore[arg-type]

    _sort(bundles, need, policy)


__all__ = [
    "Bundle",
    "BundleType",
    "apply_allowed_tasks",
    "bundle_roi",
    "create_job_bundles",
    "flatten_bundles",
    "select_bundles",
    "sort_bundles_for_preempt",
    "sort_bundles_for_reclaim",
    "sum_requests",
]
