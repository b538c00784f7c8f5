"""How long a Job waits before it replaces a failed pod (upstream ``pkg/controller/job/backoff_utils.go``).

Each Job keeps a record of its failures since its last success and when the last of them happened.
A Job whose record holds ``n`` failures creates no pod until ``10s·2^(n-1)`` (at most ten minutes)
after the last failure; a success clears the record. When each pod ended is read from the pod as
upstream reads it: its containers' ``finishedAt``, else when it stopped being Ready, else its
deletion (less its grace period), else its creation.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kubesched.controllers.controller_utils import seconds

#: Upstream's DefaultJobPodFailureBackOff and MaxJobPodFailureBackOff, in seconds.
DEFAULT_POD_FAILURE_BACKOFF = 10.0
MAX_POD_FAILURE_BACKOFF = 600.0


@dataclass(frozen=True, slots=True)
class BackoffRecord:
    failures_after_last_success: int = 0
    last_failure_time: float | None = None

    def remaining(
        self,
        now: float,
        default: float = DEFAULT_POD_FAILURE_BACKOFF,
        maximum: float = MAX_POD_FAILURE_BACKOFF,
    ) -> float:
        """Seconds until the next pod may be created (0: now)."""
        if self.failures_after_last_success == 0 or self.last_failure_time is None:
            return 0.0
        backoff = default
        for _ in range(1, self.failures_after_last_success):
            backoff *= 2
            if backoff >= maximum:
                backoff = maximum
                break
        elapsed = now - self.last_failure_time
        return 0.0 if backoff < elapsed else backoff - elapsed


def new_backoff_record(
    old: BackoffRecord, succeeded: Sequence[Mapping[str, Any]], failed: Sequence[Mapping[str, Any]]
) -> BackoffRecord:
    """The record after the pods that ended since it was made (upstream ``newBackoffRecord``)."""
    success_times = sorted(finished_time(p) for p in succeeded)
    failure_times = sorted(finished_time(p) for p in failed)
    if not success_times:
        if not failure_times:
            return old
        return BackoffRecord(old.failures_after_last_success + len(failure_times), failure_times[-1])
    count, last = 0, None
    for when in reversed(failure_times):
        if when <= success_times[-1]:
            break
        if last is None:
            last = when
        count += 1
    return BackoffRecord(count, last)


def finished_time(pod: Mapping[str, Any]) -> float:
    """When a pod ended (upstream ``getFinishedTime``)."""
    status = pod.get("status") or {}
    meta = pod.get("metadata") or {}
    when = _from_containers(pod)
    if when is None:
        when = _from_ready_false(status)
    if when is None and meta.get("deletionTimestamp"):
        deleted = seconds(meta["deletionTimestamp"])
        if deleted is not None:
            when = deleted - float(meta.get("deletionGracePeriodSeconds") or 0)
    if when is None:
        when = seconds(meta.get("creationTimestamp"))
    return when if when is not None else 0.0


def _from_containers(pod: Mapping[str, Any]) -> float | None:
    status = pod.get("status") or {}
    latest = _latest(None, status.get("containerStatuses") or [], None)
    # Sidecars (restartable init containers) end after the regular containers.
    sidecars = {
        c.get("name")
        for c in (pod.get("spec") or {}).get("initContainers") or []
        if isinstance(c, dict) and c.get("restartPolicy") == "Always"
    }
    return _latest(latest, status.get("initContainerStatuses") or [], sidecars)


def _latest(previous: float | None, statuses: Sequence[Any], names: set[Any] | None) -> float | None:
    latest = previous
    for cs in statuses:
        if not isinstance(cs, dict) or (names is not None and cs.get("name") not in names):
            continue
        finished = seconds(((cs.get("state") or {}).get("terminated") or {}).get("finishedAt"))
        if finished is None:
            return None
        if latest is None or latest < finished:
            latest = finished
    return latest


def _from_ready_false(status: Mapping[str, Any]) -> float | None:
    for cond in status.get("conditions") or []:
        if isinstance(cond, dict) and cond.get("type") == "Ready" and cond.get("status") == "False":
            return seconds(cond.get("lastTransitionTime"))
    return None
