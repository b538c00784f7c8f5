"""backfill: place best-effort tasks (no resource requests) of admitted jobs (Volcano
``actions/backfill``): predicates only, the best node by node order; allocations of a job are bound
once the job is ready."""

from __future__ import annotations

from kubesched.batch.actions.util import PriorityQueue, predicate_nodes, select_best
from kubesched.batch.job_info import JobInfo, QueueInfo, TaskInfo
from kubesched.batch.session import Session
from kubesched.batch.statement import Statement


class BackfillAction:
    name = "backfill"

    def execute(self, ssn: Session) -> None:
        statements: dict[str, Statement] = {}
        for task in self.pending_tasks(ssn):
            job = ssn.jobs[task.job]
            choice = predicate_nodes(ssn, task, check_resources=False)
            if len(choice.feasible) == 0:
                job.fit_errors[task.uid] = choice.fit_error
                continue
            slot = select_best(ssn, task, choice.feasible)
            stmt = statements.setdefault(job.uid, Statement(ssn))
            if not stmt.allocate(task, slot):
                continue
            job.fit_errors.pop(task.uid, None)
            if ssn.job_ready(job):
                stmt.commit()
        # Allocations of jobs that never became ready stay in this session only (as in Volcano).

    def pending_tasks(self, ssn: Session) -> list[TaskInfo]:
        queues: PriorityQueue[QueueInfo] = PriorityQueue(ssn.queue_order_fn)
        jobs: dict[str, PriorityQueue[JobInfo]] = {}
        tasks: dict[str, PriorityQueue[TaskInfo]] = {}
        for job in ssn.waiting_jobs():
            if not job.pending_best_effort or job.is_pending() or ssn.job_valid(job) is not None:
                continue
            queue = ssn.queues.get(job.queue)
            if queue is None:
                continue
            for task in job.pending_tasks():
                if task.best_effort:
                    tasks.setdefault(job.uid, PriorityQueue(ssn.task_order_fn)).push(task)
            if job.uid not in tasks:
                continue
            if job.queue not in jobs:
                queues.push(queue)
                jobs[job.queue] = PriorityQueue(ssn.job_order_fn)
            jobs[job.queue].push(job)
        out: list[TaskInfo] = []
        while not queues.empty():
            queue = queues.pop()
            while not jobs[queue.name].empty():
                job = jobs[queue.name].pop()
                pq = tasks[job.uid]
                while not pq.empty():
                    out.append(pq.pop())
        return out
