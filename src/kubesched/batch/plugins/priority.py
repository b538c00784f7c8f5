"""priority: jobs and tasks in priority order; only lower-priority tasks may be preempted, and for
gangpreempt only tasks of lower-priority jobs (Volcano ``plugins/priority``)."""

from __future__ import annotations

from kubesched.batch.conf import PluginOption
from kubesched.batch.job_info import PERMIT, JobInfo, TaskInfo
from kubesched.batch.operations import EvictionContext, EvictionKind
from kubesched.batch.session import Session


def _desc(lp: int, rp: int) -> int:
    if lp == rp:
        return 0
    return -1 if lp > rp else 1


class PriorityPlugin:
    name = "priority"

    def __init__(self, option: PluginOption) -> None:
        self.option = option

    def on_session_open(self, ssn: Session) -> None:
        ssn.add_task_order_fn(self.name, lambda a, b: _desc(a.priority, b.priority))
        ssn.add_job_order_fn(self.name, lambda a, b: _desc(a.priority, b.priority), key=lambda j: -j.priority)

        def preemptable(preemptor: TaskInfo, preemptees: list[TaskInfo]) -> tuple[list[TaskInfo], int]:
            pjob = ssn.jobs.get(preemptor.job)
            if pjob is None:
                return [], PERMIT
            victims: list[TaskInfo] = []
            for t in preemptees:
                job = ssn.jobs.get(t.job)
                if job is None:
                    continue
                if job.uid != pjob.uid:
                    if job.priority < pjob.priority:
                        victims.append(t)
                elif t.priority < preemptor.priority:
                    victims.append(t)
            return victims, PERMIT

        ssn.add_preemptable_fn(self.name, preemptable)

        def unified(ctx: EvictionContext, candidates: list[TaskInfo]) -> tuple[list[TaskInfo], int]:
            # Reclaim is about queue shares, not priority: every candidate may go.
            if ctx.kind is EvictionKind.GANG_RECLAIM:
                return candidates, PERMIT
            out: list[TaskInfo] = []
            for t in candidates:
                job = ssn.jobs.get(t.job)
                if job is not None and job.priority < ctx.job.priority:
                    out.append(t)
            return out, PERMIT

        ssn.add_unified_evictable_fn(self.name, unified)

        def starving(job: JobInfo) -> bool:
            return job.ready_task_num() + job.waiting_task_num() < len(job.tasks)

        ssn.add_job_starving_fn(self.name, starving)

    def on_session_close(self, ssn: Session) -> None:
        return None
