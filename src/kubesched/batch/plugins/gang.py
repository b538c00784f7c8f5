"""gang: a job runs only with ``minMember`` tasks placed together (Volcano ``plugins/gang``).

Registers jobValid (enough valid tasks, per-role minimums), jobReady / jobPipelined, a job order
that puts jobs not yet ready first, victims that never take a job below ``minMember`` (the
gang-aware actions' unified victim filter allows every candidate: their bundles keep gangs whole),
jobStarving,
and at session close the PodGroup ``Unschedulable`` / ``Scheduled`` condition.
"""

from __future__ import annotations

from kubesched.batch.conf import PluginOption
from kubesched.batch.job_info import (
    ALLOCATED_STATUSES,
    PERMIT,
    REJECT,
    JobInfo,
    TaskInfo,
    TaskStatus,
    ValidateResult,
)
from kubesched.batch.session import PodGroupConditionUpdate, Session

NOT_ENOUGH_PODS_REASON = "NotEnoughTasks"
NOT_ENOUGH_PODS_OF_TASK_REASON = "NotEnoughPodsOfTask"
NOT_ENOUGH_RESOURCES_REASON = "NotEnoughResources"


def valid_job(job: JobInfo) -> ValidateResult | None:
    if not job.check_task_valid():
        return ValidateResult(
            False, NOT_ENOUGH_PODS_OF_TASK_REASON, "Not enough valid pods of each task for gang-scheduling"
        )
    vtn = job.valid_task_num()
    if vtn < job.min_available:
        return ValidateResult(
            False,
            NOT_ENOUGH_PODS_REASON,
            f"Not enough valid tasks for gang-scheduling, valid: {vtn}, min: {job.min_available}",
        )
    return None


def gang_victims(ssn: Session, preemptees: list[TaskInfo]) -> list[TaskInfo]:
    occupied: dict[str, int] = {}
    victims: list[TaskInfo] = []
    for t in preemptees:
        job = ssn.jobs.get(t.job)
        if job is None:
            continue
        if job.uid not in occupied:
            occupied[job.uid] = job.ready_task_num()
        if occupied[job.uid] > job.min_available:
            occupied[job.uid] -= 1
            victims.append(t)
    return victims


class GangPlugin:
    name = "gang"

    def __init__(self, option: PluginOption) -> None:
        self.option = option

    def on_session_open(self, ssn: Session) -> None:
        ssn.add_job_valid_fn(self.name, valid_job)

        def victims(preemptor: TaskInfo, preemptees: list[TaskInfo]) -> tuple[list[TaskInfo], int]:
            return gang_victims(ssn, preemptees), PERMIT

        ssn.add_reclaimable_fn(self.name, victims)
        ssn.add_preemptable_fn(self.name, victims)
        # The gang-aware actions keep gangs whole through their bundles (a whole bundle may break
        # a gang on purpose), so gang allows every candidate there.
        ssn.add_unified_evictable_fn(self.name, lambda ctx, candidates: (candidates, PERMIT))

        def job_order(a: JobInfo, b: JobInfo) -> int:
            lr, rr = a.is_ready(), b.is_ready()
            if lr and rr:
                return 0
            if lr:
                return 1
            if rr:
                return -1
            return 0

        ssn.add_job_order_fn(self.name, job_order, key=lambda j: j.is_ready())
        ssn.add_job_ready_fn(self.name, lambda j: j.check_task_ready() and j.is_ready())
        ssn.add_job_pipelined_fn(
            self.name, lambda j: PERMIT if j.check_task_pipelined() and j.is_pipelined() else REJECT
        )
        ssn.add_job_starving_fn(self.name, lambda j: j.is_starving())

    def on_session_close(self, ssn: Session) -> None:
        only = ssn.update_jobs
        jobs = ssn.jobs.values() if only is None else [j for u in only if (j := ssn.jobs.get(u)) is not None]
        for job in jobs:
            if not job.tasks:
                continue
            if not job.is_ready():
                if _skip_for_releasing(job):
                    continue
                schedulable = job.ready_task_num() + sum(
                    1
                    for t in job.task_status_index.get(TaskStatus.PENDING, {}).values()
                    if t.last_status in ALLOCATED_STATUSES
                )
                unready = job.min_available - schedulable
                msg = f"{unready}/{len(job.tasks)} tasks in gang unschedulable: {job.fit_error()}"
                ssn.update_pod_group_condition(
                    job,
                    PodGroupConditionUpdate(
                        "Unschedulable", "True", NOT_ENOUGH_RESOURCES_REASON, msg, ssn.uid
                    ),
                )
            else:
                ssn.update_pod_group_condition(
                    job,
                    PodGroupConditionUpdate(
                        "Scheduled", "True", "tasks in gang are ready to be scheduled", "", ssn.uid
                    ),
                )


def _skip_for_releasing(job: JobInfo) -> bool:
    releasing = sum(1 for t in job.task_status_index.get(TaskStatus.RELEASING, {}).values() if t.node_name)
    if releasing == 0:
        return False
    if job.task_status_index.get(TaskStatus.PENDING) or job.task_status_index.get(TaskStatus.PIPELINED):
        return False
    scheduled = sum(
        len(job.task_status_index.get(s, ()))
        for s in (TaskStatus.RUNNING, TaskStatus.BOUND, TaskStatus.FAILED, TaskStatus.SUCCEEDED)
    )
    return scheduled + releasing >= job.min_available
