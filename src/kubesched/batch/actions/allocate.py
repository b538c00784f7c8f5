"""allocate: place pending tasks, gang by gang (Volcano ``actions/allocate``).

Queues in queue order (an overused queue drops out), jobs of a queue in job order, tasks of a job in
task order. For each task: the queue must allow it (allocatable), then the nodes that pass the
resource check and the predicates, the best of them by node order (nodes with room now before
nodes with room once evictions finish), and the task is allocated (or pipelined) in the job's
statement. The statement is committed once the job is ready (gang: ``minMember`` placed) — the job
goes back in line if it has more tasks — kept uncommitted when the job is only pipelined, and
discarded otherwise, so a gang is bound whole or not at all. A task whose pod is nominated to a node
(``status.nominatedNodeName``, set when preemption freed room there for it) tries that node alone
first, when it is among the nodes searched, fits there once evictions finish and passes the
predicates there.

A job in hard network-topology mode (``spec.networkTopology``: ``mode: hard`` with a
``highestTierAllowed``) is placed as Volcano's ``allocateForJob`` does: the HyperNode gradients
(network-topology-aware: tier by tier from the lowest, within the highest tier allowed) are tried in
turn; in a gradient the job is dry-run in each HyperNode, its tasks confined to that HyperNode's
nodes, and among those where it becomes ready the best by HyperNode order gets it. No HyperNode of
any gradient: the job places nothing. A soft-mode job is placed the same way with the virtual top's
tier as its highest (Volcano v1.15's session turns soft into hard so): the lowest HyperNode that
takes it whole, else the whole cluster. While the HyperNode tree is broken (a cycle, two parents) jobs
with a network topology wait.
"""

from __future__ import annotations

from kubesched.batch.actions.util import (
    KeyedQueue,
    PriorityQueue,
    SortedQueue,
    fits_idle,
    predicate_nodes,
    prioritize_nodes,
)
from kubesched.batch.hypernodes import CLUSTER_TOP_HYPER_NODE, HyperNodeInfo, build_tree
from kubesched.batch.job_info import JobInfo, QueueInfo, TaskInfo, TaskStatus
from kubesched.batch.operations import Op
from kubesched.batch.parked_jobs import ParkedJobs
from kubesched.batch.session import Session
from kubesched.batch.statement import Statement
from kubesched.framework.nominated_pods import status_nominated_node


class AllocateAction:
    name = "allocate"

    def execute(self, ssn: Session) -> None:
        enqueue_on = "enqueue" in ssn.conf.actions
        queues: PriorityQueue[QueueInfo] = PriorityQueue(ssn.queue_order_fn)
        job_key = ssn.job_order_key()
        jobs_by_queue: dict[str, KeyedQueue[JobInfo] | PriorityQueue[JobInfo]] = {}
        tasks_of: dict[str, SortedQueue[TaskInfo]] = {}
        # With monotone allocatable functions a task its queue refuses now is refused all action
        # long (a queue's allocation only grows here: statements allocate and pipeline, and a
        # discard goes back to an earlier, larger-or-equal state). A job whose every task is
        # refused would be popped, place nothing and change nothing, so it is not queued at all;
        # the other jobs meet the same states in the same order.
        monotone = ssn.allocatable_is_monotone()
        refusals: dict[tuple[str, bytes], bool] | None = {} if monotone else None
        # Parked jobs come in job order and are pulled only when reached (needs keys to merge them
        # with the other jobs of their queue).
        parked = ssn.parked if job_key is not None and monotone else {}

        def queue_jobs(name: str) -> KeyedQueue[JobInfo] | PriorityQueue[JobInfo]:
            jobs = jobs_by_queue.get(name)
            if jobs is None:
                jobs = jobs_by_queue[name] = (
                    KeyedQueue(job_key) if job_key is not None else PriorityQueue(ssn.job_order_fn)
                )
                queues.push(ssn.queues[name])
            return jobs

        for job in ssn.waiting_jobs():
            if job.is_pending():
                if enqueue_on:
                    continue
                job.phase = "Inqueue"
            if TaskStatus.PENDING not in job.task_status_index:
                continue  # nothing to place (checked first: it is cheaper than jobValid)
            if ssn.job_valid(job) is not None:
                continue
            if job.queue not in ssn.queues:
                continue
            if job.network_topology is not None and ssn.hyper_nodes is not None and not ssn.hyper_nodes.ready:
                continue  # hyperNodes are not ready for scheduling
            tasks = self._tasks(ssn, job)
            if tasks.empty():
                continue
            if refusals is not None and self._all_refused(ssn, ssn.queues[job.queue], tasks, refusals):
                continue
            queue_jobs(job.queue).push(job)
            tasks_of[job.uid] = tasks
        for name, waiting in parked.items():
            if not waiting.empty() and name in ssn.queues:
                queue_jobs(name)

        while not queues.empty():
            queue = queues.pop()
            if ssn.overused(queue):
                continue
            jobs = jobs_by_queue[queue.name]
            more = parked.get(queue.name)
            picked = self._next_job(jobs, more)
            if picked is None:
                continue
            ssn.attempted.add(picked.uid)
            known = tasks_of.get(picked.uid)
            tasks = known if known is not None else self._tasks(ssn, picked)
            tasks_of[picked.uid] = tasks
            if ssn.hard_topology(picked)[0]:
                stmt = self.allocate_for_job(ssn, picked, queue, tasks)
                if stmt is not None and not ssn.job_ready(picked):
                    stmt = None  # a pipelined hard-topology job keeps nothing (Volcano commits none)
            else:
                stmt = self.allocate_tasks(ssn, picked, queue, tasks)
            if stmt is not None:
                if ssn.job_ready(picked):
                    stmt.commit()
                    if not tasks.empty():
                        jobs.push(picked)
                if (
                    more is not None
                    and not more.empty()
                    and all(not ssn.allocatable(queue, t) for t in more.requests)
                ):
                    more.drop()  # the queue is full for every parked job left
            queues.push(queue)

    @staticmethod
    def _tasks(ssn: Session, job: JobInfo) -> SortedQueue[TaskInfo]:
        tasks: SortedQueue[TaskInfo] = SortedQueue(ssn.task_key)
        for task in job.pending_tasks():
            if task.best_effort:
                continue  # backfill places pods without requests
            tasks.push(task)
        return tasks

    @staticmethod
    def _next_job(
        jobs: KeyedQueue[JobInfo] | PriorityQueue[JobInfo], parked: ParkedJobs | None
    ) -> JobInfo | None:
        """The first job of the queue in job order: the head of its heap or of its parked jobs."""
        if parked is None or parked.empty():
            return None if jobs.empty() else jobs.pop()
        if jobs.empty():
            return parked.pop()
        assert isinstance(jobs, KeyedQueue)
        return jobs.pop() if jobs.peek_key() < parked.peek_key() else parked.pop()

    @staticmethod
    def _all_refused(
        ssn: Session, queue: QueueInfo, tasks: SortedQueue[TaskInfo], seen: dict[tuple[str, bytes], bool]
    ) -> bool:
        """Whether the queue refuses every task (as of now); answers are shared by equal requests."""
        for task in tasks:
            key = (queue.name, task.resreq.tobytes())
            refused = seen.get(key)
            if refused is None:
                refused = seen[key] = not ssn.allocatable(queue, task)
            if not refused:
                return False
        return True

    def allocate_for_job(
        self, ssn: Session, job: JobInfo, queue: QueueInfo, tasks: SortedQueue[TaskInfo]
    ) -> Statement | None:
        """Volcano's ``allocateForJob`` for the job's one (default) sub-job: the first gradient in
        which some HyperNode takes the job, the best such HyperNode; ``tasks`` keeps what is left."""
        tree = ssn.hyper_nodes
        if tree is None:
            tree = ssn.hyper_nodes = build_tree((), {ssn.table.names[s]: {} for s in ssn.node_slots.tolist()})
        for gradient in ssn.hyper_node_gradient(job, tree.top()):
            found: dict[str, tuple[list[tuple[Op, TaskInfo, int]], SortedQueue[TaskInfo], float, str]] = {}
            for hn in gradient:
                job.fit_errors.clear()
                left = self._copy(ssn, tasks)
                result = self._allocate_for_sub_job(ssn, job, queue, left, hn)
                if result is None:
                    continue
                stmt, score, allocated = result
                if stmt.operations and (ssn.job_ready(job) or ssn.job_pipelined(job)):
                    ops = [(o.op, o.task, o.task.slot) for o in stmt.operations]
                    found[hn.name] = (ops, left, score, allocated)
                stmt.discard()
            if not found:
                continue
            best = max(found.values(), key=lambda f: f[2])[2]
            tied = sorted(name for name, f in found.items() if f[2] == best)
            chosen = tied[int(ssn.rng.integers(len(tied)))] if len(tied) > 1 else tied[0]
            ops, left, _, allocated = found[chosen]
            final = Statement(ssn)
            for op, task, slot in ops:
                if op is Op.PIPELINE:
                    final.pipeline(task, slot)
                else:
                    final.allocate(task, slot)
                job.fit_errors.pop(task.uid, None)
            tasks.replace(left)
            job.allocated_hyper_node = allocated
            return final
        return None

    def _allocate_for_sub_job(
        self,
        ssn: Session,
        job: JobInfo,
        queue: QueueInfo,
        tasks: SortedQueue[TaskInfo],
        within: HyperNodeInfo,
    ) -> tuple[Statement, float, str] | None:
        """Volcano's ``allocateForSubJob``: the gradients below ``within``; in the first where the
        job's tasks place somewhere, the best HyperNode by HyperNode order."""
        tree = ssn.hyper_nodes
        assert tree is not None
        for gradient in ssn.hyper_node_gradient(job, within):
            found: dict[str, tuple[list[tuple[Op, TaskInfo, int]], SortedQueue[TaskInfo]]] = {}
            for hn in gradient:
                for uid in [u for u in job.fit_errors if u in job.tasks]:
                    del job.fit_errors[uid]
                left = self._copy(ssn, tasks)
                stmt = self._in_hyper_node(ssn, job, queue, left, hn.name)
                if stmt is not None and stmt.operations:
                    found[hn.name] = ([(o.op, o.task, o.task.slot) for o in stmt.operations], left)
                    stmt.discard()
            if not found:
                continue
            scores = ssn.hyper_node_order(job, sorted(found))
            best = max(scores.values())
            tied = sorted(name for name, s in scores.items() if s == best)
            chosen = tied[int(ssn.rng.integers(len(tied)))] if len(tied) > 1 else tied[0]
            ops, left = found[chosen]
            final = Statement(ssn)
            for op, task, slot in ops:
                if op is Op.PIPELINE:
                    final.pipeline(task, slot)
                else:
                    final.allocate(task, slot)
            tasks.replace(left)
            return final, best, tree.lca(job.allocated_hyper_node, chosen)
        return None

    def _in_hyper_node(
        self, ssn: Session, job: JobInfo, queue: QueueInfo, tasks: SortedQueue[TaskInfo], name: str
    ) -> Statement | None:
        """``allocate_tasks`` with the nodes of HyperNode ``name`` only; fit errors say where."""
        if name == CLUSTER_TOP_HYPER_NODE:
            return self.allocate_tasks(ssn, job, queue, tasks)
        mask = ssn.hyper_node_mask(name)
        if not mask.any():
            return None
        with ssn.confined_to(mask):
            stmt = self.allocate_tasks(ssn, job, queue, tasks)
        for task in job.tasks.values():
            msg = job.fit_errors.get(task.uid)
            if msg and not msg.startswith("In hyperNode ") and not msg.startswith("Task "):
                job.fit_errors[task.uid] = f"In hyperNode {name}: {msg}"
        return stmt

    @staticmethod
    def _nominated_slot(ssn: Session, task: TaskInfo) -> int:
        """The node the task's pod is nominated to (preemption freed it there), when it is among
        the nodes searched, the task fits its future idle resources and passes the predicates
        there; -1 otherwise. Volcano tries that node alone first."""
        name = status_nominated_node(task.pod)
        if not name:
            return -1
        slot = ssn.table.slot_of.get(name, -1)
        if slot < 0 or not bool((ssn.node_slots == slot).any()):
            return -1
        if not fits_idle(ssn, task, slot, future=True) or not ssn.predicate_mask(task)[slot]:
            return -1
        return slot

    @staticmethod
    def _copy(ssn: Session, tasks: SortedQueue[TaskInfo]) -> SortedQueue[TaskInfo]:
        out: SortedQueue[TaskInfo] = SortedQueue(ssn.task_key)
        for task in tasks:
            out.push(task)
        return out

    def allocate_tasks(
        self, ssn: Session, job: JobInfo, queue: QueueInfo, tasks: SortedQueue[TaskInfo]
    ) -> Statement | None:
        stmt = Statement(ssn)
        # A job with a network topology: the lowest HyperNode over its tasks so far, which the
        # network-topology-aware node order reads while the job's tasks are placed.
        tree = ssn.hyper_nodes if job.network_topology is not None else None
        before = job.allocated_hyper_node
        while not tasks.empty():
            task = tasks.pop()
            if not ssn.allocatable(queue, task):
                continue
            if job.task_has_fit_errors(task):
                job.fit_errors[task.uid] = (
                    f"Task {task.name} with role spec {task.role} has already predicated failed, skip"
                )
                continue
            nominated = self._nominated_slot(ssn, task)
            if nominated >= 0:
                slot: int | None = nominated
            else:
                choice = predicate_nodes(ssn, task)
                if len(choice.feasible) == 0:
                    job.fit_errors[task.uid] = choice.fit_error
                    if job.need_continue_allocating():
                        continue
                    break
                slot = prioritize_nodes(ssn, task, choice.feasible)
            if slot is None:
                continue
            if not ssn.future_differs or fits_idle(ssn, task, slot, future=False):
                placed = stmt.allocate(task, slot)
            elif fits_idle(ssn, task, slot, future=True):
                placed = stmt.pipeline(task, slot)
            else:
                continue
            if not placed:
                # A plugin could not reserve the task's needs there (Volcano logs and goes on).
                continue
            job.fit_errors.pop(task.uid, None)
            if tree is not None:
                job.allocated_hyper_node = tree.lca(tree.leaf_of(task.node_name), job.allocated_hyper_node)
            if ssn.job_ready(job):
                break
        if tree is not None and not (ssn.job_ready(job) and not ssn.hard_topology(job)[0]):
            # Only a soft-mode job that became ready keeps it; a hard-mode job's is set by the
            # HyperNode it is given.
            job.allocated_hyper_node = before
        if ssn.job_ready(job) or ssn.job_pipelined(job):
            return stmt
        stmt.discard()
        return None
