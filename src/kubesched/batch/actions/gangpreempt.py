"""gangpreempt: a starving gang takes room from lower-priority jobs of its own queue, a topology
domain at a time and a bundle at a time (Volcano ``actions/gangpreempt``, v1.15).

Candidates are the preemptable tasks, bound or running, on the domain's nodes, of *other* jobs of
the same queue with a lower job priority and no PodGroup ``volcano.sh/preemptable: "false"``.
Bundles rank safe before whole, then the job last in job order first, then by efficiency. The
unified victim filters of ``priority`` (only lower-priority jobs), ``gang`` (everything: the
bundles keep gangs whole), ``conformance`` (no system pods) and ``capacity`` (everything) decide
which may go. The search itself is :mod:`~kubesched.batch.actions.gang_eviction`'s.

Arguments (``configurations``, name ``gangpreempt``): ``maxDomains`` (8), ``allowWholeBundle``
(true).
"""

from __future__ import annotations

from kubesched.batch.actions.bundle import Bundle, sort_bundles_for_preempt
from kubesched.batch.actions.gang_eviction import GangEvictAction
from kubesched.batch.actions.preempt import PREEMPTABLE_STATUSES
from kubesched.batch.job_info import JobInfo, TaskInfo
from kubesched.batch.operations import EvictionKind
from kubesched.batch.session import Session
from kubesched.batch.shares import Vector


class GangPreemptAction(GangEvictAction):
    name = "gangpreempt"
    kind = EvictionKind.GANG_PREEMPT
    statuses = PREEMPTABLE_STATUSES

    def is_candidate(self, ssn: Session, job: JobInfo, task: TaskInfo, victim_job: JobInfo) -> bool:
        same_queue = victim_job.queue == job.queue and victim_job.uid != job.uid
        return same_queue and job.priority > victim_job.priority

    def sort_bundles(self, ssn: Session, job: JobInfo, bundles: list[Bundle], need: Vector) -> None:
        sort_bundles_for_preempt(bundles, need, lambda left, right: not ssn.job_order_fn(left, right))
