"""The CronJob controller (upstream ``pkg/controller/cronjob``, v2): at each scheduled time a Job
from the CronJob's template, named ``<cronjob>-<minutes since the epoch>``; the concurrency
policy (Allow, Forbid: skip while one runs, Replace: delete the running ones), the starting
deadline, suspension, the history limits of finished Jobs, and the status (``active``,
``lastScheduleTime``, ``lastSuccessfulTime``). Times are read from ``clock`` (the wall clock in
``serve``)."""

from __future__ import annotations

import copy
import logging
import time
from collections.abc import Callable, Mapping
from typing import Any

from kubesched.controllers.controller_utils import (
    Key,
    OwnerController,
    owner_ref,
    seconds,
    timestamp,
    write_status,
)
from kubesched.controllers.garbagecollector import delete_cascading
from kubesched.errors import InputError
from kubesched.registry.admission import apply_defaults
from kubesched.registry.batch.cronjob import parse_schedule, schedule_stamp
from kubesched.store.base import AlreadyExists, Obj
from kubesched.store.informers import InformerFactory
from kubesched.store.sqlite import SqliteStore

log = logging.getLogger(__name__)

SCHEDULED_TIMESTAMP = "batch.kubernetes.io/cronjob-scheduled-timestamp"


def finished(job: Mapping[str, Any]) -> str | None:
    """``Complete`` or ``Failed`` when the Job has finished so, else None."""
    for condition in (job.get("status") or {}).get("conditions") or []:
        if condition.get("type") in ("Complete", "Failed") and condition.get("status") == "True":
            return str(condition["type"])
    return None


def job_ref(job: Mapping[str, Any]) -> dict[str, Any]:
    meta = job.get("metadata") or {}
    return {
        "kind": "Job",
        "namespace": meta.get("namespace"),
        "name": meta.get("name"),
        "uid": meta.get("uid"),
        "apiVersion": "batch/v1",
        "resourceVersion": meta.get("resourceVersion"),
    }


class CronJobController(OwnerController):
    kind = "CronJob"
    dependent_kind = "Job"

    def __init__(
        self, store: SqliteStore, informers: InformerFactory, clock: Callable[[], float] = time.time
    ) -> None:
        super().__init__(store, informers)
        self.clock = clock
        #: When each CronJob's next scheduled time comes.
        self._next: dict[Key, float] = {}

    @property
    def next_due(self) -> float | None:
        return min(self._next.values()) if self._next else None

    def sync(self) -> None:
        now = self.clock()
        for key, when in list(self._next.items()):
            if when <= now:
                del self._next[key]
                self._due[key] = None
        super().sync()

    def reconcile(self, cj: Obj, jobs: list[Obj]) -> None:
        meta, spec = cj["metadata"], cj.get("spec") or {}
        key = (str(meta.get("namespace")), str(meta["name"]))
        now = self.clock()
        status: dict[str, Any] = copy.deepcopy(dict(cj.get("status") or {}))
        active = sorted((j for j in jobs if finished(j) is None), key=_created)
        self._keep_active(status, active)
        succeeded = [j for j in jobs if finished(j) == "Complete"]
        for job in succeeded:
            done = (job.get("status") or {}).get("completionTime")
            if done and (seconds(done) or 0) > (seconds(status.get("lastSuccessfulTime")) or 0):
                status["lastSuccessfulTime"] = done
        self._trim(succeeded, spec.get("successfulJobsHistoryLimit"))
        self._trim([j for j in jobs if finished(j) == "Failed"], spec.get("failedJobsHistoryLimit"))
        self._next.pop(key, None)
        try:
            schedule = parse_schedule(str(spec.get("schedule")), spec.get("timeZone"))
        except InputError as exc:
            log.warning("CronJob %s/%s: %s", *key, exc.message)
            write_status(self.store, cj, status)
            return
        if spec.get("suspend"):
            write_status(self.store, cj, status)
            return
        earliest = seconds(status.get("lastScheduleTime")) or seconds(meta.get("creationTimestamp")) or now
        missed = schedule.times_between(earliest, now)
        self._next[key] = schedule.next_after(now)
        deadline = spec.get("startingDeadlineSeconds")
        if not missed or (deadline is not None and now - missed[-1] > deadline):
            write_status(self.store, cj, status)
            return
        scheduled = missed[-1]
        policy = spec.get("concurrencyPolicy") or "Allow"
        if policy == "Forbid" and active:
            # Started once the running Job finishes (its change makes this CronJob due again),
            # unless the starting deadline has passed by then.
            write_status(self.store, cj, status)
            return
        if policy == "Replace":
            for job in active:
                delete_cascading(self.store, "Job", key[0], job["metadata"]["name"], "Background")
            active = []
            self._keep_active(status, active)
        job = self._create_job(cj, scheduled, schedule.zone)
        status.setdefault("active", []).append(job_ref(job))
        status["lastScheduleTime"] = timestamp(scheduled)
        write_status(self.store, cj, status)

    def _keep_active(self, status: dict[str, Any], active: list[Obj]) -> None:
        """``status.active``: the refs kept for the Jobs still running, new ones added."""
        uids = {str(j["metadata"].get("uid")) for j in active}
        kept = [r for r in status.get("active") or [] if str(r.get("uid")) in uids]
        known = {str(r.get("uid")) for r in kept}
        kept += [job_ref(j) for j in active if str(j["metadata"].get("uid")) not in known]
        if kept:
            status["active"] = kept
        else:
            status.pop("active", None)

    def _trim(self, jobs: list[Obj], limit: Any) -> None:
        if limit is None or not isinstance(limit, int):
            return
        ordered = sorted(jobs, key=_created)
        for job in ordered[: max(0, len(ordered) - limit)]:
            meta = job["metadata"]
            delete_cascading(self.store, "Job", meta.get("namespace"), meta["name"], "Background")

    def _create_job(self, cj: Obj, scheduled: float, zone: Any) -> Obj:
        template = (cj.get("spec") or {}).get("jobTemplate") or {}
        tmeta = template.get("metadata") or {}
        meta = cj["metadata"]
        name = f"{meta['name']}-{int(scheduled // 60)}"
        job: dict[str, Any] = {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {
                "name": name,
                "namespace": meta.get("namespace"),
                "labels": dict(tmeta.get("labels") or {}),
                "annotations": {
                    **(tmeta.get("annotations") or {}),
                    SCHEDULED_TIMESTAMP: schedule_stamp(scheduled, zone),
                },
                "ownerReferences": [owner_ref(cj)],
            },
            "spec": copy.deepcopy(template.get("spec") or {}),
        }
        if not job["metadata"]["labels"]:
            del job["metadata"]["labels"]
        apply_defaults(job)
        try:
            return self.store.create(job)
        except AlreadyExists:
            existing = self.store.get("Job", meta.get("namespace"), name)
            return existing if existing is not None else job


def _created(obj: Mapping[str, Any]) -> tuple[str, str]:
    meta = obj.get("metadata") or {}
    return (str(meta.get("creationTimestamp") or ""), str(meta.get("name") or ""))
