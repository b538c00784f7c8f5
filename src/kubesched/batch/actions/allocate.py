"""allocate: place pending tasks, gang by gang (Volcano ``actions/allocate``).

Queues in queue order (an overused queue drops out), jobs of a queue in job order, tasks of a job in
task order. For each task: the queue must allow it (allocatable), then the nodes that pass the
resource check and the predicates, the best of them by node order (nodes with room now before
nodes with room once evictions finish), and the task is allocated (or pipelined) in the job's
statement. The statement is committed once the job is ready (gang: ``minMember`` placed) — the job
goes back in line if it has more tasks — kept uncommitted when the job is only pipelined, and
discarded otherwise, so a gang is bound whole or not at all.
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
from kubesched.batch.job_info import JobInfo, QueueInfo, TaskInfo, TaskStatus
from kubesched.batch.parked_jobs import ParkedJobs
from kubesched.batch.session import Session
from kubesched.batch.statement import Statement


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

    def allocate_tasks(
        self, ssn: Session, job: JobInfo, queue: QueueInfo, tasks: SortedQueue[TaskInfo]
    ) -> Statement | None:
        stmt = Statement(ssn)
        while not tasks.empty():
            task = tasks.pop()
            if not ssn.allocatable(queue, task):
                continue
            if job.task_has_fit_errors(task):
                job.fit_errors[task.uid] = (
                    f"Task {task.name} with role spec {task.role} has already predicated failed, skip"
                )
                continue
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
            if ssn.job_ready(job):
                break
        if ssn.job_ready(job) or ssn.job_pipelined(job):
            return stmt
        stmt.discard()
        return None
