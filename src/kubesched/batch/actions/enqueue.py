"""enqueue: move PodGroups from Pending to Inqueue while the cluster can take them (Volcano
``actions/enqueue``): queues in queue order, jobs in job order; a job without ``minResources`` is
always admitted, others when every enabled jobEnqueueable vote allows it."""

from __future__ import annotations

from kubesched.batch.actions.util import PriorityQueue
from kubesched.batch.job_info import JobInfo, QueueInfo
from kubesched.batch.session import Session


class EnqueueAction:
    name = "enqueue"

    def execute(self, ssn: Session) -> None:
        queues: PriorityQueue[QueueInfo] = PriorityQueue(ssn.queue_order_fn)
        jobs_by_queue: dict[str, PriorityQueue[JobInfo]] = {}
        for job in ssn.waiting_jobs():
            if not job.is_pending():
                continue
            queue = ssn.queues.get(job.queue)
            if queue is None:
                continue
            jobs = jobs_by_queue.get(queue.name)
            if jobs is None:
                # Only queues with jobs to admit are visited: a queue without any would be popped
                # and dropped without effect.
                jobs = jobs_by_queue[queue.name] = PriorityQueue(ssn.job_order_fn)
                queues.push(queue)
            jobs.push(job)
        while not queues.empty():
            queue = queues.pop()
            jobs = jobs_by_queue.get(queue.name)
            if jobs is None or jobs.empty():
                continue
            job = jobs.pop()
            if not job.pod_group.min_resources or ssn.job_enqueueable(job):
                ssn.job_enqueued(job)
                job.phase = "Inqueue"
            queues.push(queue)
