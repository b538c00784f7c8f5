"""What a batch session knows of pods, gangs and queues: Volcano's ``TaskInfo``, ``JobInfo`` and
``QueueInfo`` (``pkg/scheduler/api``).

A *task* is one pod, a *job* is the pods of one PodGroup, a *queue* a Volcano Queue. Resources are
float64 vectors over the session's :class:`~kubesched.batch.shares.ResourceSpace` (milli-CPU, bytes,
counts), as Volcano keeps them.

Counting rules follow Volcano: a task in ALLOCATED, BINDING, BOUND or RUNNING holds resources
(:data:`ALLOCATED_STATUSES`); *ready* counts those plus SUCCEEDED; *waiting* counts PIPELINED;
*valid* counts everything that can still run (allocated statuses, SUCCEEDED, PIPELINED, PENDING).
"""

from __future__ import annotations

import enum
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from kubesched.batch.shares import MIN_RESOURCE, Vector

if TYPE_CHECKING:
    from kubesched.api.objects import Pod
    from kubesched.api.volcano import NetworkTopology, PodGroup, Queue

#: Pod annotation (or label) naming a task's role inside its job, for ``minTaskMember``.
TASK_SPEC_KEY = "volcano.sh/task-spec"
#: Pod annotation (or label): ``"false"`` keeps the pod from being preempted or reclaimed.
POD_PREEMPTABLE_KEY = "volcano.sh/preemptable"


class TaskStatus(enum.IntEnum):
    """Volcano's ``TaskStatus``; ``str()`` gives Volcano's spelling (``Pending``, ``Allocated``, …)."""

    PENDING = 1
    ALLOCATED = 2
    PIPELINED = 4
    BINDING = 8
    BOUND = 16
    RUNNING = 32
    RELEASING = 64
    SUCCEEDED = 128
    FAILED = 256
    UNKNOWN = 512

    def __str__(self) -> str:
        return self.name.capitalize()


#: Statuses whose tasks hold node resources (Volcano ``AllocatedStatus``).
ALLOCATED_STATUSES = frozenset(
    {TaskStatus.ALLOCATED, TaskStatus.BINDING, TaskStatus.BOUND, TaskStatus.RUNNING}
)
#: Statuses counted by :meth:`JobInfo.ready_task_num`.
READY_STATUSES = ALLOCATED_STATUSES | {TaskStatus.SUCCEEDED}
#: Statuses counted by :meth:`JobInfo.valid_task_num`.
VALID_STATUSES = READY_STATUSES | {TaskStatus.PIPELINED, TaskStatus.PENDING}


def fit_threshold_of(request: Vector) -> tuple[Vector, list[tuple[int, float]]]:
    """Per resource, what a node's idle amount must exceed for ``request`` to fit, and
    ``(column, threshold)`` of the resources it asks for.

    Volcano's ``LessEqual`` (``want < idle`` or ``|want - idle| < 0.1``) is ``idle > want - 0.1``;
    resources not asked for never block (``-inf``)."""
    threshold: Vector = np.where(request > 0, request - MIN_RESOURCE, -np.inf)
    columns = [(c, float(threshold[c])) for c in np.flatnonzero(request > 0).tolist()]
    return threshold, columns


def allocated_status(status: TaskStatus) -> bool:
    return status in ALLOCATED_STATUSES


# Vote values of jobPipelined / jobEnqueueable functions (Volcano ``util.Permit`` etc.).
PERMIT = 1
ABSTAIN = 0
REJECT = -1


@dataclass(slots=True, eq=False)
class TaskInfo:
    """One pod of a job, with its session status and (when placed) node."""

    uid: str
    name: str
    namespace: str
    #: Uid of the job (``namespace/podgroup``).
    job: str
    pod: Pod
    status: TaskStatus
    node_name: str
    priority: int
    #: Requests in the session's space, with one unit of ``pods`` (Volcano counts a pod slot per task).
    resreq: Vector
    init_resreq: Vector
    #: No request but ``pods`` (Volcano ``Resreq.IsEmpty``).
    best_effort: bool
    preemptable: bool
    creation_timestamp: str
    #: ``volcano.sh/task-spec`` of the pod ("" when absent).
    role: str = ""
    #: Pods of one job that share this key have the same scheduling constraints (the predicate and
    #: node-order caches are keyed by it).
    spec_key: object = None
    #: Node slot while placed in this session (-1: none).
    slot: int = -1
    #: Node the last allocate attempt put the task on, and the status it had then (for messages).
    last_node: str = ""
    last_status: TaskStatus | None = None
    #: Pipelined onto a node whose room evictions are freeing for it (Volcano
    #: ``EvictionOccurred``): the pod is then nominated to that node.
    eviction_occurred: bool = False
    #: Per resource, the idle amount a node must exceed for the task to fit (``init_resreq`` less
    #: Volcano's 0.1 tolerance; ``-inf`` where the task asks for nothing). Built on first use.
    fit_threshold: Vector | None = None
    #: ``(column, threshold)`` of each resource the task asks for (same source, for per-column checks).
    fit_columns: list[tuple[int, float]] | None = None
    #: The pod has ``spec.schedulingGates`` (Volcano's ``SchGated``): it counts as a valid pending
    #: member of its gang, but no action allocates it or preempts for it.
    sch_gated: bool = False

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    def __repr__(self) -> str:
        return f"TaskInfo({self.key}, {self.status}, node={self.node_name or '-'})"


@dataclass(slots=True, eq=False)
class ValidateResult:
    """Why a job may not be scheduled at all (Volcano ``ValidateResult``)."""

    passed: bool
    reason: str = ""
    message: str = ""


@dataclass(slots=True, eq=False)
class JobInfo:
    """The tasks of one PodGroup, indexed by status, with their resource sums."""

    uid: str
    name: str
    namespace: str
    queue: str
    priority: int
    min_available: int
    pod_group: PodGroup
    allocated: Vector
    total_request: Vector
    min_resources: Vector
    creation_timestamp: str
    tasks: dict[str, TaskInfo] = field(default_factory=dict)
    #: Status → tasks in it (Volcano ``TaskStatusIndex``).
    task_status_index: dict[TaskStatus, dict[str, TaskInfo]] = field(default_factory=dict)
    #: ``minTaskMember``: role → minimum members.
    task_min_available: dict[str, int] = field(default_factory=dict)
    #: Task uid → why it fits no node (the ``0/N nodes are available: …`` message).
    fit_errors: dict[str, str] = field(default_factory=dict)
    #: Why the whole job could not go on (enqueue rejected, queue overused, …).
    job_fit_errors: str = ""
    #: PodGroup phase as the session sees (and will write) it.
    phase: str = "Pending"
    #: Pending BestEffort tasks (kept by the two methods below: gang reads it for every task).
    pending_best_effort: int = 0
    #: The lowest HyperNode holding every placed task of a job with a network topology ("" none).
    allocated_hyper_node: str = ""

    @property
    def network_topology(self) -> NetworkTopology | None:
        return self.pod_group.network_topology

    def hard_topology(self) -> tuple[bool, int]:
        """Volcano's ``IsHardTopologyMode``: hard mode with a highest tier, and that tier."""
        nt = self.pod_group.network_topology
        if nt is None or nt.highest_tier_allowed is None:
            return False, 0
        return nt.mode == "hard", nt.highest_tier_allowed

    # -- task bookkeeping ---------------------------------------------------------------------------
    def add_task(self, task: TaskInfo) -> None:
        self.tasks[task.uid] = task
        self.task_status_index.setdefault(task.status, {})[task.uid] = task
        self.total_request = self.total_request + task.resreq
        if task.status in ALLOCATED_STATUSES:
            self.allocated = self.allocated + task.resreq
        if task.status == TaskStatus.PENDING and task.best_effort:
            self.pending_best_effort += 1

    def update_task_status(self, task: TaskInfo, status: TaskStatus) -> None:
        """Move a task to ``status``, keeping the index and ``allocated`` right."""
        old = task.status
        if old == status:
            return
        bucket = self.task_status_index.get(old)
        if bucket is not None:
            bucket.pop(task.uid, None)
            if not bucket:
                del self.task_status_index[old]
        if old in ALLOCATED_STATUSES:
            self.allocated -= task.resreq
        if task.best_effort:
            if old == TaskStatus.PENDING:
                self.pending_best_effort -= 1
            elif status == TaskStatus.PENDING:
                self.pending_best_effort += 1
        task.status = status
        self.task_status_index.setdefault(status, {})[task.uid] = task
        if status in ALLOCATED_STATUSES:
            self.allocated += task.resreq

    # -- counts (Volcano's) ----------------------------------------------------------------------
    def _count(self, statuses: frozenset[TaskStatus] | set[TaskStatus]) -> int:
        return sum(len(ts) for st, ts in self.task_status_index.items() if st in statuses)

    def tasks_in(self, *statuses: TaskStatus) -> list[TaskInfo]:
        out: list[TaskInfo] = []
        for st in statuses:
            out.extend(self.task_status_index.get(st, {}).values())
        return out

    def iter_tasks_in(self, *statuses: TaskStatus) -> Iterator[TaskInfo]:
        for st in statuses:
            yield from self.task_status_index.get(st, {}).values()

    def ready_task_num(self) -> int:
        return self._count(READY_STATUSES)

    def waiting_task_num(self) -> int:
        return len(self.task_status_index.get(TaskStatus.PIPELINED, ()))

    def valid_task_num(self) -> int:
        return self._count(VALID_STATUSES)

    def allocated_task_num(self) -> int:
        return self._count(ALLOCATED_STATUSES)

    def pending_best_effort_task_num(self) -> int:
        return self.pending_best_effort

    def pending_tasks(self) -> list[TaskInfo]:
        """Pending tasks an action may place: gated ones are left out, as Volcano's allocate,
        backfill, preempt and reclaim skip them (kube-apiserver refuses to bind a gated pod)."""
        return [t for t in self.task_status_index.get(TaskStatus.PENDING, {}).values() if not t.sch_gated]

    def has_pending_tasks(self) -> bool:
        return bool(self.task_status_index.get(TaskStatus.PENDING))

    def is_ready(self) -> bool:
        return self.ready_task_num() + self.pending_best_effort_task_num() >= self.min_available

    def is_pipelined(self) -> bool:
        return (
            self.waiting_task_num() + self.ready_task_num() + self.pending_best_effort_task_num()
            >= self.min_available
        )

    def is_starving(self) -> bool:
        return self.waiting_task_num() + self.ready_task_num() < self.min_available

    def fit_failed_roles(self) -> set[str]:
        return {self.tasks[uid].role for uid in self.fit_errors if uid in self.tasks}

    def task_has_fit_errors(self, task: TaskInfo) -> bool:
        """Another task of the same (non-empty) role already fit no node (Volcano ``TaskHasFitErrors``)."""
        return bool(task.role) and task.role in self.fit_failed_roles()

    def need_continue_allocating(self) -> bool:
        """After a task fit no node: may the other tasks still make the job ready? (Volcano's)"""
        if self.min_available == len(self.tasks):
            return False
        failed = self.fit_failed_roles()
        if self.min_available < self.task_min_available_total:
            left = sum(
                1 for t in self.task_status_index.get(TaskStatus.PENDING, {}).values() if t.role not in failed
            )
            return self.ready_task_num() + left >= self.min_available
        allocated = self._roles(READY_STATUSES, pending_empty=True)
        return all(allocated.get(role, 0) >= self.task_min_available.get(role, 0) for role in failed)

    def is_pending(self) -> bool:
        return self.phase in ("Pending", "")

    # -- per-role checks (minTaskMember) -----------------------------------------------------------
    @property
    def task_min_available_total(self) -> int:
        return sum(self.task_min_available.values())

    def _roles(
        self, statuses: frozenset[TaskStatus] | set[TaskStatus], *, pending_empty: bool = False
    ) -> dict[str, int]:
        out: dict[str, int] = {}
        for st, ts in self.task_status_index.items():
            if st in statuses:
                for t in ts.values():
                    out[t.role] = out.get(t.role, 0) + 1
            elif pending_empty and st == TaskStatus.PENDING:
                for t in ts.values():
                    if t.best_effort:
                        out[t.role] = out.get(t.role, 0) + 1
        return out

    def _roles_meet(self, counts: dict[str, int]) -> bool:
        return all(counts.get(role, 0) >= n for role, n in self.task_min_available.items() if n)

    def check_task_valid(self) -> bool:
        if not self.task_min_available or self.min_available < self.task_min_available_total:
            return True
        return self._roles_meet(self._roles(VALID_STATUSES))

    def check_task_ready(self) -> bool:
        if not self.task_min_available or self.min_available < self.task_min_available_total:
            return True
        return self._roles_meet(self._roles(READY_STATUSES))

    def check_task_pipelined(self) -> bool:
        if not self.task_min_available or self.min_available < self.task_min_available_total:
            return True
        return self._roles_meet(self._roles(READY_STATUSES | {TaskStatus.PIPELINED}, pending_empty=True))

    def check_task_starving(self) -> bool:
        if not self.task_min_available:
            return False
        if self.min_available < self.task_min_available_total:
            return True
        return not self._roles_meet(self._roles(READY_STATUSES | {TaskStatus.PIPELINED}))

    # -- messages ----------------------------------------------------------------------------------
    def task_scheduling_reason(self, task: TaskInfo) -> tuple[str, str]:
        """(reason, message) for one task's PodScheduled condition (Volcano ``TaskSchedulingReason``)."""
        status = task.last_status if task.last_status is not None else task.status
        if status == TaskStatus.ALLOCATED:
            return (
                "Schedulable",
                f"Pod {task.namespace}/{task.name} can possibly be assigned to {task.last_node}, "
                "once minAvailable is satisfied",
            )
        if status == TaskStatus.PIPELINED:
            return (
                "Unschedulable",
                f"Pod {task.namespace}/{task.name} can possibly be assigned to {task.last_node}, "
                "once resource is released and minAvailable is satisfied",
            )
        if status == TaskStatus.PENDING:
            fe = self.fit_errors.get(task.uid)
            return ("Unschedulable", fe if fe is not None else self.job_fit_errors)
        return (str(status), self.job_fit_errors)

    def task_nominated_node(self, task: TaskInfo) -> str:
        """The node a waiting task's pod is nominated to (Volcano's third answer of
        ``TaskSchedulingReason``): where it was last pipelined, when evictions free the room there;
        "" otherwise."""
        status = task.last_status if task.last_status is not None else task.status
        if status == TaskStatus.PIPELINED and task.eviction_occurred:
            return task.last_node
        return ""

    def fit_error(self) -> str:
        """Volcano's ``JobInfo.FitError``: the gang summary used in the PodGroup condition."""
        hist: dict[str, int] = {}
        for st, ts in self.task_status_index.items():
            hist[str(st)] = hist.get(str(st), 0) + len(ts)
        hist["minAvailable"] = self.min_available
        state = "pod group is ready" if self.is_ready() else "pod group is not ready"
        msg = f"{state}, {', '.join(sorted(f'{v} {k}' for k, v in hist.items()))}"
        pending: dict[str, int] = {}
        for t in self.task_status_index.get(TaskStatus.PENDING, {}).values():
            reason, _ = self.task_scheduling_reason(t)
            pending[reason] = pending.get(reason, 0) + 1
        if pending:
            msg += f"; Pending: {', '.join(sorted(f'{v} {k}' for k, v in pending.items()))}"
        if self.job_fit_errors:
            msg += ". Origin reason is: " + self.job_fit_errors
        else:
            for t in self.tasks.values():
                fe = self.fit_errors.get(t.uid)
                if fe is not None:
                    msg += f". Origin reason is {t.name}: {fe}"
                    break
        return msg


@dataclass(slots=True, eq=False)
class QueueInfo:
    """A Volcano Queue in the session."""

    uid: str
    name: str
    weight: int
    queue: Queue
    #: ``spec.capability`` as :func:`~kubesched.batch.shares.capability_vector` reads it (``None``:
    #: no capability set; ``inf`` in dimensions it does not name).
    capability: Vector | None
    #: ``spec.guarantee.resource`` (zeros when unset).
    guarantee: Vector
    #: ``spec.deserved`` (zeros when unset).
    deserved: Vector
    reclaimable: bool
    priority: int

    @property
    def open(self) -> bool:
        return self.queue.open
