"""Carrying out what a batch session decided, through the side-effect ports.

Committed evictions go to the evictor and binds to the binder (the scheduler cache assumes each
pod first and forgets it when the bind is refused; sending a bind and settling its result are
shared with the kube-scheduler pipeline, :mod:`~kubesched.framework.bind_result`); then the
PodGroup phases and conditions, the pods' ``PodScheduled`` conditions and the events the session
produced are written back. A refused bind (a ``StoreError``: the pod changed or is gone) leaves the
pod pending for a later session; an eviction of a pod already gone is skipped; any other failure is
a bug and propagates.
"""

from __future__ import annotations

import copy
import logging
import time
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from kubesched.api.objects import Pod
from kubesched.api.quantity import format_quantity, resource_amount
from kubesched.api.resources import CPU, EPHEMERAL_STORAGE, MEMORY, PODS
from kubesched.api.volcano import ROOT_QUEUE, PodGroup, Queue, queue_ancestors
from kubesched.batch.framework import JobUpdate
from kubesched.batch.gang_breaks import best_effort_notes, bound_members, gang_break_notes, with_note
from kubesched.batch.job_info import JobInfo, TaskInfo, TaskStatus
from kubesched.batch.jobs import JobCache
from kubesched.batch.operations import Evictee
from kubesched.batch.queue_totals import QueueTotals
from kubesched.batch.report import BatchReports, JobReport
from kubesched.batch.session import PreBinder, Session
from kubesched.cache.cache import SchedulerCache
from kubesched.framework.bind_result import (
    BindWorkers,
    forget_assumed,
    record_bound,
    rejection_message,
    send_binding,
)
from kubesched.framework.outcome import PENDING, UNSCHEDULABLE, PodOutcome
from kubesched.store.base import NotFound, StoreError
from kubesched.store.ports import Ports

log = logging.getLogger(__name__)

QUEUE_NOT_FOUND_REASON = "QueueNotFound"
#: Volcano ``PodReasonSchedulerError``: the pod's PodScheduled reason when its PreBind failed.
PRE_BIND_FAILED_REASON = "SchedulerError"
NOT_IN_QUEUE_STATUS = frozenset({PODS, EPHEMERAL_STORAGE})


#: Evictions :attr:`SessionApplier.evicted` keeps when deleted pods are not kept.
EVICTED_KEPT = 1000


class SessionApplier:
    def __init__(
        self,
        ports: Ports,
        cache: SchedulerCache,
        jobs: JobCache,
        reports: BatchReports,
        outcomes: dict[str, PodOutcome],
        *,
        now: Callable[[], float],
        bind_pool: BindWorkers[Pod, StoreError | None] | None = None,
        keep_deleted: bool = False,
    ) -> None:
        """``bind_pool``: workers that send a session's binds side by side (Volcano binds in
        goroutines); without workers each bind is sent and settled before the next."""
        self.ports = ports
        self.bind_pool: BindWorkers[Pod, StoreError | None] = (
            bind_pool if bind_pool is not None else BindWorkers(0, "volcano-bind")
        )
        self.cache = cache
        self.jobs = jobs
        self.reports = reports
        self.outcomes = outcomes
        self.now = now
        #: Keep what belongs to deleted pods and PodGroups: outcomes, reports, the evicted list.
        self.keep_deleted = keep_deleted
        #: "namespace/name" of the pods this scheduler evicted: all of them with ``keep_deleted``,
        #: else the latest :data:`EVICTED_KEPT`.
        self.evicted: list[str] = []
        #: Per PodGroup key, the last message of each reason's event, so a repeat is not recorded
        #: again.
        self._last_events: dict[str, dict[str, str]] = {}
        #: Job uid → why its gang is below minMember, for gangs this scheduler's evictions took
        #: there; told in the PodGroup's condition while the gang stays below.
        self.gang_breaks: dict[str, str] = {}

    def carry_out(self, ssn: Session) -> int:
        """Carry out committed evictions and binds; each bind after the session's pre-binders
        (VolumeBinding's PreBind) succeeded for its task."""
        to_bind = self._pre_bind(ssn) if ssn.pre_binders else ssn.to_bind
        done: list[Evictee] = []
        for ev in ssn.to_evict:
            t = ev.task
            try:
                evicted = self.ports.evictor.evict(
                    t.namespace, t.name, "PreemptionByScheduler", f"volcano: {ev.reason}"
                )
            except NotFound:
                evicted = False
            if not evicted:
                log.info("evicting %s: already gone", t.key)
                continue
            self.evicted.append(t.key)
            if not self.keep_deleted and len(self.evicted) >= 2 * EVICTED_KEPT:
                del self.evicted[:-EVICTED_KEPT]
            done.append(ev)
            self.ports.events.record(
                t.pod.raw, "Normal", "Evict", "Evicting", f"Pod is evicted, because of {ev.reason}", "volcano"
            )
        bound = 0
        pool = self.bind_pool
        if pool.executor is None or len(to_bind) < 2:
            for t in to_bind:
                assumed = self._assume(t)
                bound += self._settle(ssn, t, assumed, self._bind(assumed))
        else:
            # Side by side: every pod is assumed first, so no bind waits for another's reply.
            assumed_pods = [self._assume(t) for t in to_bind]
            results = pool.map(self._bind, assumed_pods)
            for t, assumed, exc in zip(to_bind, assumed_pods, results, strict=True):
                bound += self._settle(ssn, t, assumed, exc)
        if done:
            self.gang_breaks.update(gang_break_notes(ssn.jobs, done))
        if bound:
            placed = [t.job for t in to_bind if t.status == TaskStatus.BOUND]
            backfill = "backfill" in ssn.conf.actions
            self.gang_breaks.update(best_effort_notes(ssn.jobs, placed, backfill))
        return bound

    def forget_pod(self, uid: str) -> None:
        """A pod was deleted: its outcome goes (unless kept for a report)."""
        if not self.keep_deleted:
            self.outcomes.pop(uid, None)

    def forget_pod_group(self, key: str) -> None:
        """A PodGroup was deleted: what was kept about it goes (its report, unless kept). A
        PodGroup made again under the name is a new object: its events are told again."""
        self._last_events.pop(key, None)
        self.gang_breaks.pop(key, None)
        if not self.keep_deleted:
            self.reports.jobs.pop(key, None)

    def _pre_bind(self, ssn: Session) -> list[TaskInfo]:
        """Run the pre-binders for every committed task, in commit order, on the session's thread
        (a PreBind may wait for the cluster, which pumps the informers on this thread). Returns
        the tasks to bind. A task whose PreBind failed is not bound: as Volcano's cache, the
        pre-binders that had already succeeded for it are rolled back (not the one that failed),
        its pod gets ``PodScheduled=False`` with reason ``SchedulerError`` and a
        ``FailedScheduling`` event, and the task is pending again for a later session."""
        ready: list[TaskInfo] = []
        for t in ssn.to_bind:
            done: list[PreBinder] = []
            error: str | None = None
            for binder in ssn.pre_binders:
                error = binder.pre_bind(t)
                if error is not None:
                    break
                done.append(binder)
            if error is None:
                ready.append(t)
                continue
            for binder in reversed(done):
                binder.pre_bind_rollback(t)
            self._pre_bind_failed(t, error)
        return ready

    def _pre_bind_failed(self, t: TaskInfo, error: str) -> None:
        message = f"execute preBind for pod {t.namespace}/{t.name} failed: {error}, resync the task"
        log.info("%s", message)
        if _condition_changes(t.pod.raw, PRE_BIND_FAILED_REASON, message):
            self.ports.events.record(
                t.pod.raw, "Warning", "FailedScheduling", "Scheduling", message, "volcano"
            )
        try:
            self.ports.pod_status.set_pod_condition(
                t.namespace,
                t.name,
                {
                    "type": "PodScheduled",
                    "status": "False",
                    "reason": PRE_BIND_FAILED_REASON,
                    "message": message,
                },
            )
        except StoreError as exc:  # the pod is gone or changed: the next session sees it
            log.info("updating the condition of pod %s: %s", t.key, exc)
        outcome = self.outcomes.get(t.uid)
        if outcome is not None:
            outcome.status = UNSCHEDULABLE
            outcome.node = None
            outcome.message = message

    def _assume(self, t: TaskInfo) -> Pod:
        assumed = copy.copy(t.pod)
        assumed.node_name = t.node_name
        self.cache.assume_pod(assumed, t.node_name)
        return assumed

    def _bind(self, assumed: Pod) -> StoreError | None:
        """Send one bind (from a bind worker, or the session's thread); the refusal, if any."""
        return send_binding(self.ports.binder, assumed, assumed.node_name)

    def _settle(self, ssn: Session, t: TaskInfo, assumed: Pod, exc: StoreError | None) -> bool:
        """Record a bind's result; True when the pod was bound."""
        node = assumed.node_name
        if exc is not None:
            # Refused (the pod changed or is gone): the session's settle puts the task back to
            # pending, and the change that refused it makes the next session try again. What the
            # pre-binders reserved for it is given back (Volcano's PreBindRollBack).
            for binder in ssn.pre_binders:
                binder.pre_bind_rollback(t)
            forget_assumed(self.cache, assumed)
            outcome = self.outcomes.get(t.uid)
            if outcome is not None:
                outcome.status = PENDING
                outcome.message = rejection_message(exc)
            return False
        self.jobs.drop_pending(t.uid)
        t.pod = assumed
        job = ssn.jobs.get(t.job)
        if job is not None:
            job.update_task_status(t, TaskStatus.BOUND)
        outcome = self.outcomes.setdefault(
            t.uid, PodOutcome(t.namespace, t.name, t.uid, scheduler_name=t.pod.scheduler_name)
        )
        record_bound(self.cache, self.ports.events, outcome, assumed, node, "volcano")
        return True

    def write(
        self, ssn: Session, updates: list[JobUpdate], missing_queue: dict[str, tuple[PodGroup, str]]
    ) -> None:
        now = self.now()
        stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(now))
        for job, etype, reason, msg in ssn.pod_group_events:
            self._event(job.pod_group, etype, reason, msg)
        for up in updates:
            job = up.job
            pg = job.pod_group
            self._tell_gang_break(ssn, up, stamp)
            for c in up.conditions:
                if c.get("transitionID") == ssn.uid and not c.get("lastTransitionTime"):
                    c["lastTransitionTime"] = stamp
            if up.status_changed:
                self._write_status(pg, up.phase, up.conditions, job)
            if up.event is not None:
                self._event(pg, *up.event)
            for task, reason, message in up.task_conditions:
                if _condition_changes(task.pod.raw, reason, message):
                    # Volcano's taskUnschedulable: a Warning event with each changed condition.
                    self.ports.events.record(
                        task.pod.raw, "Warning", "FailedScheduling", "Scheduling", message, "volcano"
                    )
                # Volcano only ever sets a nomination here: a task still pipelined in a later
                # session, with nothing evicted for it then, keeps the one it has.
                self.ports.pod_status.set_pod_condition(
                    task.namespace,
                    task.name,
                    {"type": "PodScheduled", "status": "False", "reason": reason, "message": message},
                    nominated_node=up.nominations.get(task.uid),
                )
                outcome = self.outcomes.get(task.uid)
                if outcome is not None and task.status != TaskStatus.BOUND:
                    outcome.status = UNSCHEDULABLE
                    outcome.node = None
                    outcome.message = message
            self.reports.report_job(job, up.phase, up.conditions, noted=job.uid in self.gang_breaks)
        for key, (pg, queue) in missing_queue.items():
            msg = f"queue {queue!r} of PodGroup {key} does not exist"
            cond = {
                "type": "Unschedulable",
                "status": "True",
                "reason": QUEUE_NOT_FOUND_REASON,
                "message": msg,
                "transitionID": ssn.uid,
                "lastTransitionTime": stamp,
            }
            old = [dict(c) for c in ((pg.raw.get("status") or {}).get("conditions") or [])]
            if not any(c.get("type") == "Unschedulable" and c.get("message") == msg for c in old):
                conditions = [c for c in old if c.get("type") != "Unschedulable"] + [cond]
                self._write_status(pg, "Pending", conditions, None)
            self._event(pg, "Warning", "Unschedulable", msg)
            report = self.reports.jobs.setdefault(key, JobReport(pg.namespace, pg.name, queue, pg.min_member))
            report.message = msg
            report.phase = "Pending"
            for pod in self.jobs.members.get(key, {}).values():
                if pod.node_name or pod.uid not in self.jobs.pending or pod.scheduling_gates:
                    continue
                self.ports.pod_status.set_pod_condition(
                    pod.namespace,
                    pod.name,
                    {"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": msg},
                )
                outcome = self.outcomes.get(pod.uid)
                if outcome is not None:
                    outcome.status = UNSCHEDULABLE
                    outcome.message = msg
        self._tell_missing_groups(ssn)
        totals = self.jobs.totals
        assert totals is not None
        self.reports.keep_queues(ssn, totals)

    def _tell_missing_groups(self, ssn: Session) -> None:
        """Pods naming a PodGroup that does not exist stay pending (Volcano leaves such a job out of
        every session without a word); kubesched says why on the pod, in an event and a warning."""
        for key, group in self.jobs.missing_group.items():
            for pod in self.jobs.members.get(key, {}).values():
                if pod.node_name or pod.uid not in self.jobs.pending or pod.scheduling_gates:
                    continue
                msg = f"PodGroup {group!r} of pod {pod.namespace}/{pod.name} does not exist"
                if _condition_changes(pod.raw, "Unschedulable", msg):
                    self.ports.events.record(
                        pod.raw, "Warning", "FailedScheduling", "Scheduling", msg, "volcano"
                    )
                    try:
                        self.ports.pod_status.set_pod_condition(
                            pod.namespace,
                            pod.name,
                            {
                                "type": "PodScheduled",
                                "status": "False",
                                "reason": "Unschedulable",
                                "message": msg,
                            },
                        )
                    except StoreError as exc:  # the pod is gone or changed: the next session sees it
                        log.info("updating the condition of pod %s/%s: %s", pod.namespace, pod.name, exc)
                ssn.warnings.append(f"{msg}: the pod is not scheduled")
                outcome = self.outcomes.get(pod.uid)
                if outcome is not None:
                    outcome.status = PENDING
                    outcome.node = None
                    outcome.message = msg

    def _tell_gang_break(self, ssn: Session, up: JobUpdate, stamp: str) -> None:
        """Put the note of a gang this scheduler's evictions took below minMember into the job's
        condition, while it stays below (a gang bound whole again, or not at all, is no longer)."""
        job = up.job
        note = self.gang_breaks.get(job.uid)
        if note is None:
            return
        if not 0 < bound_members(job) < job.min_available:
            del self.gang_breaks[job.uid]
            return
        conditions = with_note(up.conditions, note, ssn.uid, stamp)
        if conditions != up.conditions:
            up.conditions = conditions
            up.status_changed = True

    def _write_status(
        self, pg: PodGroup, phase: str, conditions: list[dict[str, str]], job: JobInfo | None
    ) -> None:
        key = f"{pg.namespace}/{pg.name}"
        # The newest version this scheduler knows: from the informer, or its own last write.
        obj = self.jobs.pod_groups.get(key, pg).raw
        status = dict(obj.get("status") or {})
        status["phase"] = phase
        status["conditions"] = conditions
        if job is not None:
            status["running"] = len(job.task_status_index.get(TaskStatus.RUNNING, ())) + len(
                job.task_status_index.get(TaskStatus.BOUND, ())
            )
            status["succeeded"] = len(job.task_status_index.get(TaskStatus.SUCCEEDED, ()))
            status["failed"] = len(job.task_status_index.get(TaskStatus.FAILED, ()))
        try:
            updated = self.ports.pod_group_status.update_pod_group_status(pg.namespace, pg.name, status)
        except StoreError as exc:
            # Not written (the API server unreachable, the write refused): the job keeps the status
            # it had, so the next session finds it changed and writes it again (Volcano logs it).
            log.warning("updating the status of PodGroup %s: %s", key, exc)
            return
        if updated is None:
            return
        group = PodGroup.from_dict(updated)
        self.jobs.pod_groups[key] = group
        if job is not None and self.jobs.live.get(key) is job:
            job.pod_group = group

    def write_queue_status(self, totals: QueueTotals, queues: Mapping[str, Queue]) -> None:
        """Each queue's ``status.allocated`` as Volcano's scheduler writes it when a session closes:
        what the queue's jobs hold in allocated statuses, a child's part counted in its ancestors
        too when a ``root`` queue exists; written only when it changed."""
        writer = self.ports.queue_status
        if writer is None:
            return
        names = totals.space.names
        allocated: dict[str, np.ndarray] = {name: totals.space.zeros() for name in queues}
        # Volcano counts a queue's part up to root only when a root queue exists; a queue that names
        # no parent hangs under root.
        parents = (
            {name: q.parent or ROOT_QUEUE for name, q in queues.items() if name != ROOT_QUEUE}
            if ROOT_QUEUE in queues
            else {}
        )
        for name, qsum in totals.queues.items():
            if name not in allocated:
                continue
            for holder in (name, *queue_ancestors(name, parents, queues)):
                allocated[holder] += qsum.allocated
        for name, vector in allocated.items():
            # cpu and memory always, other resources when held (Volcano's resource lists carry
            # scalar resources only; the pod count and ephemeral storage are not among them).
            amounts = {
                res: round(float(v))
                for res, v in zip(names, vector, strict=True)
                if res in (CPU, MEMORY) or (v and res not in NOT_IN_QUEUE_STATUS)
            }
            if _allocated_of(queues[name]) == amounts:
                continue
            status = {"allocated": {res: format_quantity(res, amount) for res, amount in amounts.items()}}
            try:
                writer.update_queue_status(name, status)
            except StoreError as exc:  # written again after the next session
                log.info("updating the status of queue %s: %s", name, exc)

    def _event(self, pg: PodGroup, etype: str, reason: str, msg: str) -> None:
        last = self._last_events.setdefault(f"{pg.namespace}/{pg.name}", {})
        if last.get(reason) == msg:
            return
        last[reason] = msg
        raw = dict(pg.raw)
        raw.setdefault("kind", "PodGroup")
        self.ports.events.record(raw, etype, reason, "Scheduling", msg, "volcano")


__all__ = ["PRE_BIND_FAILED_REASON", "QUEUE_NOT_FOUND_REASON", "SessionApplier"]


def _allocated_of(queue: Queue) -> dict[str, int] | None:
    """The ``status.allocated`` a queue carries, as amounts (None when absent or unreadable)."""
    raw = (queue.raw.get("status") or {}).get("allocated")
    if not isinstance(raw, Mapping):
        return None
    try:
        return {str(res): resource_amount(str(res), str(q)) for res, q in raw.items()}
    except (ValueError, TypeError):
        return None


def _condition_changes(pod: Mapping[str, Any], reason: str, message: str) -> bool:
    """Whether ``PodScheduled=False`` with ``reason`` and ``message`` differs from the pod's own
    (Volcano's podConditionHaveUpdate, which ignores the timestamps)."""
    for cond in (pod.get("status") or {}).get("conditions") or []:
        if cond.get("type") == "PodScheduled":
            return not (
                cond.get("status") == "False"
                and cond.get("reason") == reason
                and cond.get("message") == message
            )
    return True
