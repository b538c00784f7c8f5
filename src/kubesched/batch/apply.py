"""Carrying out what a batch session decided, through the side-effect ports.

Committed evictions go to the evictor and binds to the binder (the scheduler cache assumes each
pod first and forgets it when the bind is refused); then the PodGroup phases and conditions, the
pods' ``PodScheduled`` conditions and the events the session produced are written back. A refused
bind (a ``StoreError``: the pod changed or is gone) leaves the pod pending for a later session; an
eviction of a pod already gone is skipped; any other failure is a bug and propagates.
"""

from __future__ import annotations

import copy
import logging
import time
from collections.abc import Callable

from kubesched.batch.framework import JobUpdate
from kubesched.batch.gang_breaks import bound_members, gang_break_notes, with_note
from kubesched.batch.job_info import JobInfo, TaskStatus
from kubesched.batch.jobs import JobCache
from kubesched.batch.objects import PodGroup
from kubesched.batch.operations import Evictee
from kubesched.batch.report import BatchReports, JobReport
from kubesched.batch.session import Session
from kubesched.cache.cache import SchedulerCache
from kubesched.runtime.ports import Ports
from kubesched.scheduler.outcome import PENDING, SCHEDULED, UNSCHEDULABLE, PodOutcome
from kubesched.store.base import NotFound, StoreError

log = logging.getLogger(__name__)

QUEUE_NOT_FOUND_REASON = "QueueNotFound"


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
    ) -> None:
        self.ports = ports
        self.cache = cache
        self.jobs = jobs
        self.reports = reports
        self.outcomes = outcomes
        self.now = now
        #: "namespace/name" of every pod this scheduler evicted.
        self.evicted: list[str] = []
        #: The last message of each (PodGroup, reason) event, so a repeat is not recorded again.
        self._last_events: dict[str, str] = {}
        #: Job uid → why its gang is below minMember, for gangs this scheduler's evictions took
        #: there; told in the PodGroup's condition while the gang stays below.
        self.gang_breaks: dict[str, str] = {}

    def carry_out(self, ssn: Session) -> int:
        """Carry out committed evictions and binds."""
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
            done.append(ev)
            self.ports.events.record(
                t.pod.raw, "Normal", "Evict", "Evicting", f"Pod is evicted, because of {ev.reason}", "volcano"
            )
        bound = 0
        for t in ssn.to_bind:
            node = t.node_name
            assumed = copy.copy(t.pod)
            assumed.node_name = node
            self.cache.assume_pod(assumed, node)
            try:
                self.ports.binder.bind(t.namespace, t.name, t.uid, node)
            except StoreError as exc:
                # Refused (the pod changed or is gone): the session's settle puts the task back to
                # pending, and the change that refused it makes the next session try again.
                self.cache.forget_pod(assumed)
                outcome = self.outcomes.get(t.uid)
                if outcome is not None:
                    outcome.status = PENDING
                    outcome.message = f"binding rejected: {exc}"
                continue
            self.cache.finish_binding(assumed)
            self.jobs.drop_pending(t.uid)
            t.pod = assumed
            job = ssn.jobs.get(t.job)
            if job is not None:
                job.update_task_status(t, TaskStatus.BOUND)
            bound += 1
            outcome = self.outcomes.setdefault(
                t.uid, PodOutcome(t.namespace, t.name, t.uid, scheduler_name=t.pod.scheduler_name)
            )
            outcome.node = node
            outcome.status = SCHEDULED
            outcome.message = ""
            self.ports.events.record(
                t.pod.raw,
                "Normal",
                "Scheduled",
                "Binding",
                f"Successfully assigned {t.key} to {node}",
                "volcano",
            )
        if done:
            self.gang_breaks.update(gang_break_notes(ssn.jobs, done))
        return bound

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
                self.ports.pod_status.set_pod_condition(
                    task.namespace,
                    task.name,
                    {"type": "PodScheduled", "status": "False", "reason": reason, "message": message},
                )
                outcome = self.outcomes.get(task.uid)
                if outcome is not None and task.status != TaskStatus.BOUND:
                    outcome.status = UNSCHEDULABLE
                    outcome.node = None
                    outcome.message = message
            self.reports.report_job(job, up.phase, up.conditions)
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
                if pod.node_name or pod.uid not in self.jobs.pending:
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
        totals = self.jobs.totals
        assert totals is not None
        self.reports.keep_queues(ssn, totals)

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
        updated = self.ports.pod_group_status.update_pod_group_status(pg.namespace, pg.name, status)
        if updated is None:
            return
        group = PodGroup.from_dict(updated)
        self.jobs.pod_groups[key] = group
        if job is not None and self.jobs.live.get(key) is job:
            job.pod_group = group

    def _event(self, pg: PodGroup, etype: str, reason: str, msg: str) -> None:
        key = f"{pg.namespace}/{pg.name}/{reason}"
        if self._last_events.get(key) == msg:
            return
        self._last_events[key] = msg
        raw = dict(pg.raw)
        raw.setdefault("kind", "PodGroup")
        self.ports.events.record(raw, etype, reason, "Scheduling", msg, "volcano")


__all__ = ["QUEUE_NOT_FOUND_REASON", "SessionApplier"]
