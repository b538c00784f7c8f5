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
    PriorityQueue,
    SortedQueue,
    fits_idle,
    predicate_nodes,
    prioritize_nodes,
)
from kubesched.batch.job_info import JobInfo, QueueInfo, TaskInfo
from kubesched.batch.session import Session
from kubesched.batch.statement import Statement


class AllocateAction:
    name = "allocate"

    def execute(self, ssn: Session) -> None:
        enqueue_on = "enqueue" in ssn.conf.actions
        queues: PriorityQueue[QueueInfo] = PriorityQueue(ssn.queue_order_fn)
        jobs_by_queue: dict[str, PriorityQueue[JobInfo]] = {}
        tasks_of: dict[str, SortedQueue[TaskInfo]] = {}
        for job in ssn.jobs.values():
            if job.is_pending():
                if enqueue_on:
                    continue
                job.phase = "Inqueue"
            if ssn.job_valid(job) is not None:
                continue
            if job.queue not in ssn.queues:
                continue
            tasks: SortedQueue[TaskInfo] = SortedQueue(ssn.task_key)
            for task in job.pending_tasks():
                if task.best_effort:
                    continue  # backfill places pods without requests
                tasks.push(task)
            if tasks.empty():
                continue
            if job.queue not in jobs_by_queue:
                jobs_by_queue[job.queue] = PriorityQueue(ssn.job_order_fn)
                queues.push(ssn.queues[job.queue])
            jobs_by_queue[job.queue].push(job)
            tasks_of[job.uid] = tasks

        while not queues.empty():
            queue = queues.pop()
            if ssn.overused(queue):
                continue
            jobs = jobs_by_queue.get(queue.name)
            if jobs is None or jobs.empty():
                continue
            job = jobs.pop()
            tasks = tasks_of[job.uid]
            stmt = self.allocate_tasks(ssn, job, queue, tasks)
            if stmt is not None and ssn.job_ready(job):
                stmt.commit()
                if not tasks.empty():
                    jobs.push(job)
            queues.push(queue)

    def allocate_tasks(
        self, ssn: Session, job: JobInfo, queue: QueueInfo, tasks: SortedQueue[TaskInfo]
    ) -> Statement | None:
        stmt = ssn.statement()
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
                stmt.allocate(task, slot)
            elif fits_idle(ssn, task, slot, future=True):
                stmt.pipeline(task, slot)
            else:
                continue
            job.fit_errors.pop(task.uid, None)
            if ssn.job_ready(job):
                break
        if ssn.job_ready(job) or ssn.job_pipelined(job):
            return stmt
        stmt.discard()
        return None
