"""gangreclaim: a starving gang of a queue below its share takes room from other queues, a topology
domain at a time and a bundle at a time (Volcano ``actions/gangreclaim``, v1.15).

Queues in queue order, an overused queue skipped; a job goes on only if its queue may reclaim for
all its pending tasks together (``preemptive``). Candidates are the preemptable running tasks on the
domain's nodes of jobs of *other*, reclaimable queues, whose PodGroup does not say
``volcano.sh/preemptable: "false"``. Bundles rank safe before whole, then by the victim queue order
(capacity's hierarchy when it has one, else the queue last in queue order first), then by
efficiency. ``capacity``'s unified victim filter keeps every victim queue at its guarantee and takes
only from queues above their deserved share in a dimension the victim uses (or owed nothing it
holds); ``priority`` and ``gang`` allow everything; ``conformance`` keeps system pods. The search
itself is :mod:`~kubesched.batch.actions.gang_eviction`'s.

Arguments (``configurations``, name ``gangreclaim``): ``maxDomains`` (8), ``allowWholeBundle``
(true).
"""

from __future__ import annotations

import dataclasses

from kubesched.batch.actions.bundle import Bundle, sort_bundles_for_reclaim
from kubesched.batch.actions.gang_eviction import GangEvictAction
from kubesched.batch.job_info import JobInfo, QueueInfo, TaskInfo, TaskStatus
from kubesched.batch.operations import EvictionKind
from kubesched.batch.session import Session
from kubesched.batch.shares import Vector


def combined_task(tasks: list[TaskInfo]) -> TaskInfo:
    """One task asking for what ``tasks`` ask together, for queue checks made for a whole job."""
    first = tasks[0]
    resreq = sum((t.resreq for t in tasks[1:]), first.resreq.copy())
    init = sum((t.init_resreq for t in tasks[1:]), first.init_resreq.copy())
    return dataclasses.replace(first, resreq=resreq, init_resreq=init, fit_threshold=None, fit_columns=None)


class GangReclaimAction(GangEvictAction):
    name = "gangreclaim"
    kind = EvictionKind.GANG_RECLAIM
    statuses = frozenset({TaskStatus.RUNNING})

    def skip_queue(self, ssn: Session, queue: QueueInfo) -> bool:
        return ssn.overused(queue)

    def may_start(self, ssn: Session, queue: QueueInfo, pending: list[TaskInfo]) -> bool:
        return ssn.preemptive(queue, combined_task(pending))

    def is_candidate(self, ssn: Session, job: JobInfo, task: TaskInfo, victim_job: JobInfo) -> bool:
        if victim_job.queue == job.queue:
            return False
        queue = ssn.queues.get(victim_job.queue)
        return queue is not None and queue.reclaimable

    def sort_bundles(self, ssn: Session, job: JobInfo, bundles: list[Bundle], need: Vector) -> None:
        own = ssn.queues.get(job.queue)

        def less(left: QueueInfo, right: QueueInfo) -> bool:
            if own is None:
                return ssn.queue_order_fn(left, right)
            return ssn.victim_queue_compare(left, right, own) < 0

        sort_bundles_for_reclaim(bundles, need, less, ssn.queues)
