"""reclaim: a queue below its fair share takes back resources other queues hold beyond theirs
(Volcano ``actions/reclaim``).

Queues with admitted, valid jobs are visited in queue order; an overused queue is skipped. For each
starving job of the queue (job order), each pending task (task order) that its queue may still take
(``preemptive``) and whose pod may preempt (``preemptionPolicy`` not ``Never``) looks for a node:
in node order, the running, preemptable tasks there of *other*, reclaimable queues go to
:meth:`Session.reclaimable` (proportion: only from queues above their deserved share, never below
it; gang: never below ``minMember``; conformance: never system pods…). If the node's future idle
plus the victims can hold the task, victims are evicted lowest-ranked first until it fits, and the
task is pipelined there; evictions on a node that still cannot hold it are undone. A job's
statement commits only if the job is then pipelined, otherwise every eviction is restored.

Vectorized like ``preempt``: per task, the predicates run once over all nodes and the reclaimable
resources are summed per node in one pass, so only nodes that could hold the task are visited.
"""

from __future__ import annotations

import numpy as np

from kubesched.batch.actions.preempt import (
    BoolArray,
    Demand,
    EvictionCandidates,
    candidate_slots,
    may_preempt,
    task_queue,
    victim_order,
)
from kubesched.batch.actions.util import starving_jobs_by_queue
from kubesched.batch.job_info import TaskInfo, TaskStatus
from kubesched.batch.session import Session
from kubesched.batch.shares import Amounts
from kubesched.batch.statement import Statement

#: Reclaim takes only running tasks (Volcano checks ``Status == Running``).
RECLAIMABLE_STATUSES = frozenset({TaskStatus.RUNNING})


class ReclaimAction:
    name = "reclaim"

    def execute(self, ssn: Session) -> None:
        found = starving_jobs_by_queue(ssn)
        queues, preemptors = found.queues, found.by_queue
        pending = {job.uid: task_queue(ssn, job.pending_tasks()) for job in found.jobs}
        if not preemptors:
            return

        victims = EvictionCandidates(ssn, RECLAIMABLE_STATUSES)
        # Only tasks of other queues that allow reclaim are ever victims.
        reclaimable_queue = np.array([q.reclaimable for q in ssn.queues.values()], dtype=np.bool_)
        known = victims.queue >= 0
        from_reclaimable = known & reclaimable_queue[np.where(known, victims.queue, 0)]

        while not queues.empty():
            queue = queues.pop()
            if ssn.overused(queue):
                continue
            jobs = preemptors.get(queue.name)
            if jobs is None:
                continue
            other_queues = from_reclaimable & (victims.queue != victims.queue_index(queue.name))
            # Volcano puts the queue back after each job while jobs remain, and goes on with the
            # next job at once; the re-queued entry finds no jobs left, so this loop is the same.
            while not jobs.empty():
                job = jobs.pop()
                stmt = Statement(ssn)
                tasks = pending[job.uid]
                while ssn.job_starving(job) and not tasks.empty():
                    task = tasks.pop()
                    if not may_preempt(task):
                        continue
                    if not ssn.preemptive(queue, task):
                        continue
                    self.reclaim_for_task(ssn, stmt, task, victims, other_queues)
                if ssn.job_pipelined(job):
                    stmt.commit()
                else:
                    stmt.discard()
                    victims.revive()

    @staticmethod
    def reclaim_for_task(
        ssn: Session,
        stmt: Statement,
        task: TaskInfo,
        victims: EvictionCandidates,
        mask: BoolArray,
    ) -> bool:
        """Evict reclaimable tasks on one node until ``task`` fits there, then pipeline it."""
        demand = Demand(task)
        freed, count = victims.per_node(mask)
        possible = (
            candidate_slots(ssn, task) & (count > 0) & demand.fits_rows(ssn.future_idle_array() + freed)
        )
        slots = ssn.node_slots[possible[ssn.node_slots]] if len(ssn.node_slots) else ssn.node_slots
        by_victim = victim_order(ssn, task)
        for slot in slots.tolist():
            reclaimees = victims.on_node(slot, mask)
            if not reclaimees:
                continue
            chosen = ssn.reclaimable(task, reclaimees)
            available: Amounts = ssn.node_future_idle(slot)
            if not demand.fits(available + sum((v.resreq for v in chosen), ssn.space.zeros())):
                continue
            node_stmt = Statement(ssn)
            for victim in sorted(chosen, key=by_victim):
                if demand.fits(available):
                    break
                victims.evict(node_stmt, victim, "reclaim")
                available = available + victim.resreq
            if not demand.fits(available) or not node_stmt.pipeline(task, slot, node_stmt.has_evictions()):
                node_stmt.discard()
                victims.revive()
                continue
            stmt.merge(node_stmt)
            return True
        return False
