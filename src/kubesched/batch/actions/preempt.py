"""preempt: starving jobs take resources from lower-ranked jobs of the same queue (Volcano
``actions/preempt``, normal mode).

For each queue (queue order), its starving jobs (job order) try to place their pending tasks (task
order). A task's candidate nodes are the ready nodes its predicates do not rule out for good
(UnschedulableAndUnresolvable), best node-order score first. On a node, the running tasks the filter
admits go to :meth:`Session.preemptable` (the plugins' verdict: priority, gang, drf, conformance…);
if the node's future idle plus those victims can hold the task, victims are evicted lowest-ranked
first until the task fits the node *and* its queue (``allocatable``) and passes the predicates,
then the task is pipelined there. Evictions on a node where the task does not end up are undone.
A job's statement commits only if the job is then pipelined (gang), otherwise everything it evicted
is restored. A second pass lets each starving job's pending tasks preempt lower-priority tasks of
the same job, committing task by task.

With ``enableTopologyAwarePreemption`` (the action's arguments) a task's victims come from a dry
run on candidate nodes instead (:class:`DryRunPreemption`): only the victims the placement needs are
evicted, on the node whose victims matter least.

Vectorized: per preemptor, the predicates run once over all nodes and the resources the filter
could free are summed per node with ``bincount``; nodes that could not hold the task even with every
admitted victim gone are never visited.

The helpers here (:class:`EvictionCandidates`, :func:`victim_order`, :func:`candidate_slots`) are
shared with the ``reclaim`` action.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from kubesched.batch.actions.util import PriorityQueue, jobs_taking_part
from kubesched.batch.conf import TOPOLOGY_AWARE_PREEMPTION, argument_bool, argument_int
from kubesched.batch.job_info import JobInfo, QueueInfo, TaskInfo, TaskStatus
from kubesched.batch.session import Session
from kubesched.batch.shares import MIN_RESOURCE, Amounts, Vector, fits_rows
from kubesched.batch.statement import Statement
from kubesched.plugins.defaultpreemption.victims import start_time

BoolArray = NDArray[np.bool_]
IntArray = NDArray[np.int64]

#: Statuses a preempt victim may have (Volcano ``PreemptableStatus``).
PREEMPTABLE_STATUSES = frozenset({TaskStatus.BOUND, TaskStatus.RUNNING})


# ------------------------------------------------------------------------------------------------ #
# Shared with reclaim


class EvictionCandidates:
    """The session's evictable tasks as arrays (one row per task), so the resources a preemptor
    could free are summed per node in one pass.

    Only tasks with ``preemptable`` set, in one of ``statuses``, of a job in the session and placed
    on a ready node are kept. ``alive`` follows evictions made through :meth:`evict`; after a
    statement is discarded :meth:`revive` re-reads the status of the tasks marked gone.
    """

    def __init__(self, ssn: Session, statuses: frozenset[TaskStatus]) -> None:
        self.ssn = ssn
        self.statuses = statuses
        self.queue_ids = queue_ids = {name: i for i, name in enumerate(ssn.queues)}
        tasks: list[TaskInfo] = []
        slots: list[int] = []
        queues: list[int] = []
        jobs: list[int] = []
        self.job_ids: dict[str, int] = {}
        slot_of = ssn.table.slot_of
        mask = ssn.node_mask
        for ji, job in enumerate(ssn.jobs.values()):
            self.job_ids[job.uid] = ji
            qi = queue_ids.get(job.queue, -1)
            for status in statuses:
                for t in job.task_status_index.get(status, {}).values():
                    slot = slot_of.get(t.node_name, -1)
                    if not t.preemptable or slot < 0 or not mask[slot]:
                        continue
                    tasks.append(t)
                    slots.append(slot)
                    queues.append(qi)
                    jobs.append(ji)
        r = len(ssn.space)
        self.tasks = tasks
        self.position = {t.uid: i for i, t in enumerate(tasks)}
        self.slot: IntArray = np.array(slots, dtype=np.int64)
        self.queue: IntArray = np.array(queues, dtype=np.int64)
        self.job: IntArray = np.array(jobs, dtype=np.int64)
        self.best_effort: BoolArray = np.array([t.best_effort for t in tasks], dtype=np.bool_)
        self.resreq = (
            np.stack([t.resreq for t in tasks]).astype(np.float64)
            if tasks
            else np.zeros((0, r), dtype=np.float64)
        )
        self.alive: BoolArray = np.ones(len(tasks), dtype=np.bool_)
        self._gone: set[int] = set()
        self.by_slot: dict[int, list[int]] = {}
        for i, slot in enumerate(slots):
            self.by_slot.setdefault(slot, []).append(i)

    def queue_index(self, name: str) -> int:
        return self.queue_ids.get(name, -1)

    def job_index(self, job_uid: str) -> int:
        return self.job_ids.get(job_uid, -1)

    def per_node(self, mask: BoolArray) -> tuple[NDArray[np.float64], IntArray]:
        """Per slot: the summed requests and the number of the tasks selected by ``mask``."""
        cap = self.ssn.table.capacity
        sel = mask & self.alive
        slots = self.slot[sel]
        req = self.resreq[sel]
        freed = np.zeros((cap, req.shape[1]), dtype=np.float64)
        for d in range(req.shape[1]):
            freed[:, d] = np.bincount(slots, weights=req[:, d], minlength=cap)
        count = np.bincount(slots, minlength=cap).astype(np.int64)
        return freed, count

    def on_node(self, slot: int, mask: BoolArray) -> list[TaskInfo]:
        """Tasks on ``slot`` selected by ``mask`` and not evicted, in the session's order."""
        alive = self.alive
        return [self.tasks[i] for i in self.by_slot.get(slot, ()) if mask[i] and alive[i]]

    def evict(self, stmt: Statement, task: TaskInfo, reason: str) -> None:
        stmt.evict(task, reason)
        i = self.position.get(task.uid)
        if i is not None:
            self.alive[i] = False
            self._gone.add(i)

    def restore(self, stmt: Statement, task: TaskInfo) -> None:
        """Take back ``stmt``'s eviction of ``task``: it runs again and may be chosen again."""
        stmt.restore(task)
        i = self.position.get(task.uid)
        if i is not None:
            self.alive[i] = True
            self._gone.discard(i)

    def revive(self) -> None:
        """Re-read the tasks marked gone: a discarded statement put them back."""
        back = [i for i in self._gone if self.tasks[i].status in self.statuses]
        for i in back:
            self.alive[i] = True
            self._gone.discard(i)


class Demand:
    """A task's request in the dimensions it asks for, compared with what a node has (Volcano
    ``LessEqual`` with its 0.1 tolerance). A ``pods`` entry in the request (Volcano counts one per
    task) is compared like any other resource."""

    def __init__(self, task: TaskInfo) -> None:
        req = task.init_resreq
        self.cols: IntArray = np.flatnonzero(req > 0)
        self.want: Vector = req[self.cols]
        self.want_list: list[float] = self.want.tolist()

    def fits(self, available: Amounts) -> bool:
        # Plain floats: for a handful of dimensions this beats NumPy's per-call overhead.
        for want, have in zip(self.want_list, available[self.cols].tolist(), strict=True):
            if not (want < have or abs(want - have) < MIN_RESOURCE):
                return False
        return True

    def fits_rows(self, available: Amounts) -> BoolArray:
        return fits_rows(self.want, available[:, self.cols])


def job_plugin_compare(ssn: Session, left: JobInfo, right: JobInfo) -> int:
    """The job order plugins' verdict alone (Volcano ``JobOrderCompareFn``: no creation-time
    fallback)."""
    for tier in ssn.tiers:
        for opt in tier.plugins:
            fn = ssn.job_order_fns.get(opt.name)
            if fn is None or not opt.enabled("job_order"):
                continue
            res = fn(left, right)
            if res != 0:
                return -1 if res < 0 else 1
    return 0


def victim_order(ssn: Session, preemptor: TaskInfo) -> Callable[[TaskInfo], Any]:
    """Sort key putting the victim to evict first first (Volcano ``BuildVictimsPriorityQueue``).

    Same job: the task last in task order first. Different queues: the queue last in queue order
    first. Same queue: the job last in job order first, then the task last in task order.
    """
    preemptor_job = ssn.jobs.get(preemptor.job)
    has_victim_queue_order = bool(ssn.victim_queue_order_fns) and (
        preemptor_job is not None and preemptor_job.queue in ssn.queues
    )

    def compare(left: TaskInfo, right: TaskInfo) -> int:
        if left.job == right.job:
            return -ssn.task_compare(left, right)
        lj = ssn.jobs.get(left.job)
        rj = ssn.jobs.get(right.job)
        if lj is None or rj is None:
            if lj is None and rj is None:
                return -ssn.task_compare(left, right)
            return -1 if lj is None else 1
        if preemptor_job is not None and lj.queue != rj.queue:
            if has_victim_queue_order:
                return ssn.victim_queue_compare(
                    ssn.queues[lj.queue], ssn.queues[rj.queue], ssn.queues[preemptor_job.queue]
                )
            return -ssn.queue_compare(ssn.queues[lj.queue], ssn.queues[rj.queue])
        by_job = job_plugin_compare(ssn, lj, rj)
        if by_job != 0:
            return -by_job
        return -ssn.task_compare(left, right)

    return functools.cmp_to_key(compare)


def candidate_slots(ssn: Session, task: TaskInfo) -> BoolArray:
    """Ready nodes the task's predicates do not rule out for good (Volcano
    ``PredicateForPreemptAction``: only UnschedulableAndUnresolvable failures exclude a node)."""
    res = ssn.predicate(task)
    out = ssn.node_mask.copy()
    for f in res.failures:
        if f.unresolvable:
            out &= ~f.nodes
    return out


def task_queue(ssn: Session, tasks: list[TaskInfo]) -> PriorityQueue[TaskInfo]:
    """Tasks in task order, as a Volcano priority queue."""
    out: PriorityQueue[TaskInfo] = PriorityQueue(ssn.task_order_fn)
    for t in tasks:
        out.push(t)
    return out


def may_preempt(task: TaskInfo) -> bool:
    """A pod with ``preemptionPolicy: Never`` never evicts anyone."""
    return task.pod.preemption_policy != "Never"


# ------------------------------------------------------------------------------------------------ #
# The action


class PreemptAction:
    name = "preempt"

    def __init__(self) -> None:
        #: Volcano's topology-aware mode: each task's victims come from a dry run on candidate nodes.
        self.dry_run: DryRunPreemption | None = None

    def execute(self, ssn: Session) -> None:
        args = ssn.conf.action_arguments(self.name)
        self.dry_run = (
            DryRunPreemption.from_arguments(args)
            if argument_bool(args, TOPOLOGY_AWARE_PREEMPTION, False)
            else None
        )
        preemptors: dict[str, PriorityQueue[JobInfo]] = {}
        under_request: dict[str, list[JobInfo]] = {}
        pending: dict[str, PriorityQueue[TaskInfo]] = {}
        for job, _ in jobs_taking_part(ssn):
            if not ssn.job_starving(job):
                continue
            preemptors.setdefault(job.queue, PriorityQueue(ssn.job_order_fn)).push(job)
            under_request.setdefault(job.queue, []).append(job)
            pending[job.uid] = task_queue(ssn, job.pending_tasks())
        if not preemptors:
            return

        victims = EvictionCandidates(ssn, PREEMPTABLE_STATUSES)
        queues: PriorityQueue[QueueInfo] = PriorityQueue(ssn.queue_order_fn)
        for name in preemptors:
            queues.push(ssn.queues[name])
        while not queues.empty():
            queue = queues.pop()
            jobs = preemptors[queue.name]
            in_queue = victims.queue == victims.queue_index(queue.name)
            # Between jobs of the queue.
            while not jobs.empty():
                job = jobs.pop()
                stmt = Statement(ssn)
                tasks = pending[job.uid]
                other_jobs = in_queue & (victims.job != victims.job_index(job.uid))
                while ssn.job_starving(job) and not tasks.empty():
                    self.preempt(ssn, stmt, tasks.pop(), queue, victims, other_jobs, self.dry_run)
                if ssn.job_pipelined(job):
                    stmt.commit()
                else:
                    stmt.discard()
                    victims.revive()
            # Between tasks of one job.
            for job in under_request[queue.name]:
                same_job = victims.job == victims.job_index(job.uid)
                tasks = task_queue(ssn, job.pending_tasks())
                while not tasks.empty():
                    stmt = Statement(ssn)
                    if not self.preempt(ssn, stmt, tasks.pop(), queue, victims, same_job, self.dry_run):
                        stmt.discard()
                        victims.revive()
                        break
                    stmt.commit()

    @staticmethod
    def preempt(
        ssn: Session,
        stmt: Statement,
        preemptor: TaskInfo,
        queue: QueueInfo,
        victims: EvictionCandidates,
        mask: BoolArray,
        dry_run: DryRunPreemption | None = None,
    ) -> bool:
        """Try to place ``preemptor`` by evicting tasks selected by ``mask``; True when pipelined."""
        if not may_preempt(preemptor):
            return False
        if preemptor.best_effort:
            # A BestEffort pod may only preempt BestEffort pods.
            mask = mask & victims.best_effort
        demand = Demand(preemptor)
        freed, _ = victims.per_node(mask)
        possible = candidate_slots(ssn, preemptor) & demand.fits_rows(ssn.future_idle_array() + freed)
        slots = np.flatnonzero(possible[ssn.node_slots]) if len(ssn.node_slots) else np.zeros(0, np.int64)
        if len(slots) == 0:
            return False
        slots = ssn.node_slots[slots]
        if dry_run is not None:
            return dry_run.preempt(ssn, stmt, preemptor, queue, victims, mask, slots)
        scores = ssn.node_order(preemptor, slots)
        order = slots[np.argsort(-scores, kind="stable")]

        def fits(slot: int) -> bool:
            return (
                ssn.allocatable_for(queue, preemptor)
                and demand.fits(ssn.node_future_idle(slot))
                and bool(ssn.predicate(preemptor).passed[slot])
            )

        by_victim = victim_order(ssn, preemptor)
        # Victim sets whose eviction still left the queue refusing the preemptor. Queue limits only
        # loosen as the queue's usage drops, so a set freeing no more in any dimension cannot help
        # either: such nodes are skipped without evicting and restoring their victims one by one.
        not_enough = np.zeros((0, len(ssn.space)), dtype=np.float64)
        hopeless = np.zeros(len(order), dtype=np.bool_)
        future = ssn.future_idle_array()  # node rows are restored after every failed attempt
        for pos, slot in enumerate(order.tolist()):
            if hopeless[pos]:
                continue
            preemptees = victims.on_node(slot, mask)
            chosen = ssn.preemptable(preemptor, preemptees)
            freeing = ssn.space.zeros()
            for v in chosen:
                freeing += v.resreq
            if not demand.fits(future[slot] + freeing):
                continue
            if len(not_enough) and bool(np.all(not_enough >= freeing, axis=1).any()):
                continue
            node_stmt = Statement(ssn)
            fitted = fits(slot)
            for victim in sorted(chosen, key=by_victim):
                if fitted:
                    break
                victims.evict(node_stmt, victim, "preempt")
                fitted = fits(slot)
            if fitted and node_stmt.pipeline(preemptor, slot, node_stmt.has_evictions()):
                stmt.merge(node_stmt)
                return True
            if fitted:
                # A plugin could not reserve the preemptor's needs here: the evictions for this
                # node are undone and the next node is tried (Volcano).
                node_stmt.discard()
                victims.revive()
                continue
            if not ssn.allocatable_for(queue, preemptor):
                not_enough = np.vstack([not_enough, freeing])
                # Nodes whose every admissible victim together frees no more: skip them too.
                hopeless |= np.all(freed[order] <= freeing, axis=1)
            node_stmt.discard()
            victims.revive()
        return False


# ------------------------------------------------------------------------------------------------ #
# Topology-aware mode


@dataclass(frozen=True, slots=True)
class DryRunPreemption:
    """Volcano's topology-aware preemption (kube-scheduler's way): on candidate nodes, a dry run
    finds the fewest victims that let the preemptor in; the best node by its victims is chosen, and
    only then are they evicted.

    On one node the dry run evicts the admissible victims lowest-ranked first until the preemptor
    fits the node and its queue and passes the predicates; the node is no candidate when it still
    fails the predicates with all of them gone. Then each victim, highest-ranked first, is put back
    and stays when the preemptor still fits, so no eviction is kept that the placement does not
    need. Nodes are tried from a random one on, as many as the candidate count asks
    (``minCandidateNodesPercentage`` of the nodes, within ``minCandidateNodesAbsolute`` and
    ``maxCandidateNodesAbsolute``). The chosen node has the lowest highest victim priority, then the
    lowest sum of priorities, the fewest victims, the latest start among its highest-priority
    victims, and the first found.

    As in Volcano, the end of the dry run checks the predicates but not the queue: a preemptor its
    queue still refuses with every victim gone keeps them all as victims and is placed anyway.
    """

    min_percentage: int = 10
    min_absolute: int = 1
    max_absolute: int = 100

    @classmethod
    def from_arguments(cls, args: dict[str, Any]) -> DryRunPreemption:
        return cls(
            argument_int(args, "minCandidateNodesPercentage", 10),
            argument_int(args, "minCandidateNodesAbsolute", 1),
            argument_int(args, "maxCandidateNodesAbsolute", 100),
        )

    def candidates_wanted(self, nodes: int) -> int:
        n = nodes * self.min_percentage // 100
        n = max(n, self.min_absolute)
        n = min(n, self.max_absolute)
        return min(n, nodes)

    def preempt(
        self,
        ssn: Session,
        stmt: Statement,
        preemptor: TaskInfo,
        queue: QueueInfo,
        victims: EvictionCandidates,
        mask: BoolArray,
        slots: IntArray,
    ) -> bool:
        """Place ``preemptor`` on the best of the candidate nodes among ``slots`` (node order)."""
        wanted = self.candidates_wanted(len(slots))
        offset = int(ssn.rng.integers(len(slots)))
        found: list[tuple[int, list[TaskInfo]]] = []
        for i in range(len(slots)):
            slot = int(slots[(offset + i) % len(slots)])
            chosen = self.victims_on_node(ssn, preemptor, queue, victims, mask, slot)
            if chosen:
                found.append((slot, chosen))
                if len(found) >= wanted:
                    break
        if not found:
            return False
        slot, chosen = min(found, key=_candidate_rank)
        node_stmt = Statement(ssn)
        for victim in chosen:
            victims.evict(node_stmt, victim, "preempt")
        if not node_stmt.pipeline(preemptor, slot, eviction_occurred=True):
            # Every eviction of the dry run's choice is undone (Volcano).
            node_stmt.discard()
            victims.revive()
            return False
        stmt.merge(node_stmt)
        return True

    @staticmethod
    def victims_on_node(
        ssn: Session,
        preemptor: TaskInfo,
        queue: QueueInfo,
        victims: EvictionCandidates,
        mask: BoolArray,
        slot: int,
    ) -> list[TaskInfo]:
        """The fewest victims on ``slot`` that let ``preemptor`` in, highest-ranked first (empty:
        the node is no candidate). The session is left as it was."""
        demand = Demand(preemptor)
        admissible = ssn.preemptable(preemptor, victims.on_node(slot, mask))
        freeing = ssn.space.zeros()
        for v in admissible:
            freeing += v.resreq
        if not demand.fits(ssn.node_future_idle(slot) + freeing):
            return []

        def fits() -> bool:
            return (
                ssn.allocatable_for(queue, preemptor)
                and demand.fits(ssn.node_future_idle(slot))
                and bool(ssn.predicate(preemptor).passed[slot])
            )

        trial = Statement(ssn)
        removed: list[TaskInfo] = []
        for victim in sorted(admissible, key=victim_order(ssn, preemptor)):
            removed.append(victim)
            victims.evict(trial, victim, "preempt")
            if fits():
                break
        chosen: list[TaskInfo] = []
        if removed and bool(ssn.predicate(preemptor).passed[slot]):
            for victim in reversed(removed):
                victims.restore(trial, victim)
                if not fits():
                    victims.evict(trial, victim, "preempt")
                    chosen.append(victim)
        trial.discard()
        victims.revive()
        return chosen


def _candidate_rank(candidate: tuple[int, list[TaskInfo]]) -> tuple[int, int, int, float]:
    """Smaller is better (kube-scheduler's ``pickOneNodeForPreemption``): the priority of the first
    victim (the highest-ranked one kept), the sum of priorities, the number of victims, then the
    latest earliest start among the victims of the highest priority."""
    chosen = candidate[1]
    priorities = [t.pod.priority for t in chosen]
    highest = max(priorities)
    earliest = min(start_time(t.pod) for t, p in zip(chosen, priorities, strict=True) if p == highest)
    # Each priority is lifted by 2^31 before summing, so more victims never make a smaller sum, even
    # with negative priorities.
    return (priorities[0], sum(p + _PRIORITY_LIFT for p in priorities), len(chosen), -earliest)


_PRIORITY_LIFT = 2**31
