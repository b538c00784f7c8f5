"""The TTL-after-finished controller (upstream ``pkg/controller/ttlafterfinished``): a Job with
``spec.ttlSecondsAfterFinished`` is deleted, with its pods, that many seconds after it finished.

A Job finished when its ``Complete`` or ``Failed`` condition became True; the condition's
``lastTransitionTime`` is the finish time. Before deleting, the controller reads the Job again and
checks the TTL once more (it may have been changed or removed since), then deletes it in the
foreground with a UID precondition, so a Job made again under the same name is not taken."""

from __future__ import annotations

import heapq
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from kubesched.controllers.controller_utils import seconds
from kubesched.controllers.garbagecollector import delete_cascading
from kubesched.store.base import EventType, Obj
from kubesched.store.informers import Change, InformerFactory
from kubesched.store.sqlite import SqliteStore

_FINISHED = ("Complete", "Failed")


class NotCleanable(ValueError):
    """The Job has no TTL, has not finished, or does not say when it finished."""


@dataclass(frozen=True)
class Expiry:
    finished_at: float
    expire_at: float


def needs_cleanup(job: Mapping[str, Any]) -> bool:
    """A TTL is set and the Job is finished (``Complete`` or ``Failed`` is True)."""
    ttl = (job.get("spec") or {}).get("ttlSecondsAfterFinished")
    return isinstance(ttl, int) and not isinstance(ttl, bool) and _finish_condition(job) is not None


def _finish_condition(job: Mapping[str, Any]) -> Mapping[str, Any] | None:
    for cond in (job.get("status") or {}).get("conditions") or []:
        if (
            isinstance(cond, dict)
            and cond.get("type") in ("Complete", "Failed")
            and cond.get("status") == "True"
        ):
            return cond
    return None


def expiry(job: Mapping[str, Any]) -> Expiry:
    """When the Job finished and when its TTL runs out; :class:`NotCleanable` when it is not due
    for cleaning at all."""
    meta = job.get("metadata") or {}
    ref = f"{meta.get('namespace')}/{meta.get('name')}"
    if not needs_cleanup(job):
        raise NotCleanable(f"job {ref} should not be cleaned up")
    cond = _finish_condition(job) or {}
    finished = seconds(cond.get("lastTransitionTime"))
    if finished is None:
        raise NotCleanable(f"unable to find the time when the Job {ref} finished")
    ttl = int((job.get("spec") or {})["ttlSecondsAfterFinished"])
    return Expiry(finished, finished + ttl)


def time_left(job: Mapping[str, Any], since: float) -> tuple[float, float]:
    """Seconds until the Job's TTL runs out (zero or less: expired) and when it does."""
    due = expiry(job)
    return due.expire_at - since, due.expire_at


class TTLAfterFinishedController:
    """Keeps the finished Jobs with a TTL in order of expiry; ``sync`` deletes those due."""

    def __init__(
        self, store: SqliteStore, informers: InformerFactory, clock: Callable[[], float] = time.time
    ) -> None:
        self.store = store
        self.clock = clock
        #: Expiry time, namespace, name, uid of each finished Job seen with a TTL.
        self._due: list[tuple[float, str, str, str]] = []
        informers.informer("Job").add_handler(self._on_job)

    @property
    def next_due(self) -> float | None:
        return self._due[0][0] if self._due else None

    def _on_job(self, change: Change[Any]) -> None:
        if change.type == EventType.DELETED:
            return
        job = change.obj
        if (job.get("metadata") or {}).get("deletionTimestamp") or not needs_cleanup(job):
            return
        try:
            due = expiry(job)
        except NotCleanable:
            return
        meta = job["metadata"]
        heapq.heappush(
            self._due, (due.expire_at, str(meta.get("namespace")), str(meta["name"]), str(meta.get("uid")))
        )

    def sync(self) -> None:
        now = self.clock()
        while self._due and self._due[0][0] <= now:
            _, namespace, name, uid = heapq.heappop(self._due)
            fresh = self.store.get("Job", namespace, name)
            if fresh is None or not self._expired(fresh, now):
                # Gone, made again, or its TTL changed: a change to it queued it anew.
                continue
            if str(fresh["metadata"].get("uid")) != uid:
                continue
            delete_cascading(self.store, "Job", namespace, name, "Foreground")

    @staticmethod
    def _expired(job: Obj, now: float) -> bool:
        if (job.get("metadata") or {}).get("deletionTimestamp"):
            return False
        try:
            left, _ = time_left(job, now)
        except NotCleanable:
            return False
        return left <= 0
