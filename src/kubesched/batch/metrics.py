"""The Volcano scheduler's Prometheus metrics, with Volcano's names, labels and buckets.

:class:`VolcanoMetrics` holds the families of one batch scheduler; the session cycle calls
:meth:`VolcanoMetrics.action` per action, :meth:`VolcanoMetrics.plugin` per plugin open/close and
:meth:`VolcanoMetrics.session_closed` once per session, which also sets the per-queue gauges
(Volcano's proportion plugin sets them at session close).

Volcano's attempt counter (``volcano_schedule_attempts_total``) is counted per session here:
``Success`` for each pod the session bound, ``Failure`` for each pod it left pending with a
``PodScheduled=False`` condition written.
``volcano_pod_preemption_victims`` is set to the evictions of the last session that evicted any.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import TYPE_CHECKING, Any

from prometheus_client import CollectorRegistry, Gauge

from kubesched.metrics.families import CounterVec, HistogramVec
from kubesched.metrics.kube import exponential_buckets

if TYPE_CHECKING:
    from kubesched.batch.framework import JobUpdate
    from kubesched.batch.job_info import JobInfo
    from kubesched.batch.session import Session

ON_SESSION_OPEN = "OnSessionOpen"
ON_SESSION_CLOSE = "OnSessionClose"

#: PodGroup phase → the per-queue gauge that counts it.
_PHASE_GAUGES = {
    "Inqueue": "inqueue",
    "Pending": "pending",
    "Running": "running",
    "Unknown": "unknown",
}


def _rfc3339(value: str) -> float | None:
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


class VolcanoMetrics:
    def __init__(self, registry: CollectorRegistry) -> None:
        def histogram(name: str, doc: str, start: float, labels: tuple[str, ...] = ()) -> HistogramVec:
            return HistogramVec(
                name, doc, list(labels), buckets=exponential_buckets(start, 2, 10), registry=registry
            )

        self.e2e_latency = histogram(
            "volcano_e2e_scheduling_latency_milliseconds",
            "E2e scheduling latency in milliseconds (scheduling algorithm + binding)",
            5,
        )
        self.e2e_job_latency = histogram(
            "volcano_e2e_job_scheduling_latency_milliseconds",
            "E2e job scheduling latency in milliseconds",
            32,
        )
        self.plugin_latency = histogram(
            "volcano_plugin_scheduling_latency_microseconds",
            "Plugin scheduling latency in microseconds",
            5,
            ("plugin", "OnSession"),
        )
        self.action_latency = histogram(
            "volcano_action_scheduling_latency_microseconds",
            "Action scheduling latency in microseconds",
            5,
            ("action",),
        )
        self.schedule_attempts = CounterVec(
            "volcano_schedule_attempts",
            "Number of attempts to schedule pods, by the result. 'unschedulable' means a pod could not be "
            "scheduled, while 'error' means an internal scheduler problem.",
            ["result"],
            registry=registry,
        )
        self.preemption_victims = Gauge(
            "volcano_pod_preemption_victims", "Number of selected preemption victims", registry=registry
        )
        self.unschedule_job_count = Gauge(
            "volcano_unschedule_job_count", "Number of jobs could not be scheduled", registry=registry
        )

        def queue_gauge(name: str, doc: str) -> Gauge:
            return Gauge(name, doc, ["queue_name"], registry=registry)

        self.queue_gauges: dict[str, Gauge] = {
            f"{kind}_{dim}": queue_gauge(
                f"volcano_queue_{kind}_{unit}", f"{kind.capitalize()} {what} for one queue"
            )
            for kind in ("allocated", "request", "deserved")
            for dim, unit, what in (("cpu", "milli_cpu", "CPU count"), ("memory", "memory_bytes", "memory"))
        }
        self.queue_gauges.update(
            share=queue_gauge("volcano_queue_share", "Share for one queue"),
            weight=queue_gauge("volcano_queue_weight", "Weight for one queue"),
            overused=queue_gauge("volcano_queue_overused", "If one queue is overused"),
        )
        for phase, key in _PHASE_GAUGES.items():
            self.queue_gauges[key] = queue_gauge(
                f"volcano_queue_pod_group_{key}_count", f"The number of {phase} PodGroup in this queue"
            )
        self._queues: set[str] = set()

    # -- per session ----------------------------------------------------------------------------
    def action(self, name: str, seconds: float) -> None:
        self.action_latency.labels(name).observe(seconds * 1e6)

    def plugin(self, name: str, on_session: str, seconds: float) -> None:
        self.plugin_latency.labels(name, on_session).observe(seconds * 1e6)

    def session_closed(
        self,
        ssn: Session,
        seconds: float,
        bound: int,
        updates: Iterable[JobUpdate],
        jobs: Mapping[str, JobInfo],
    ) -> None:
        """A session ended: its latency, its outcome per pod, and the queues as it left them.

        ``ssn``: the closed :class:`~kubesched.batch.session.Session`; ``updates``: its
        ``JobUpdate`` list; ``jobs``: every job the batch scheduler keeps (uid → ``JobInfo``)."""
        self.e2e_latency.observe(seconds * 1e3)
        updates = list(updates)
        failed = sum(len(up.task_conditions) for up in updates)
        if bound:
            self.schedule_attempts.labels("Success").inc(bound)
        if failed:
            self.schedule_attempts.labels("Failure").inc(failed)
        if ssn.to_evict:
            self.preemption_victims.set(len(ssn.to_evict))
        now = float(ssn.now)
        written: dict[str, str] = {}
        unschedulable = 0
        for up in updates:
            written[up.job.uid] = up.phase
            if up.task_conditions:
                unschedulable += 1
            if up.phase == "Running" and up.job.pod_group.phase not in ("Running", "Completed"):
                created = _rfc3339(up.job.pod_group.creation_timestamp or "")
                if created is not None:
                    self.e2e_job_latency.observe(max(now - created, 0.0) * 1e3)
        self.unschedule_job_count.set(unschedulable)
        self._set_queues(ssn, jobs, written)

    def _set_queues(self, ssn: Session, jobs: Mapping[str, JobInfo], written: Mapping[str, str]) -> None:
        gauges = self.queue_gauges
        names = set(ssn.queues)
        for gone in self._queues - names:
            for g in gauges.values():
                with contextlib.suppress(KeyError):
                    g.remove(gone)
        self._queues = names
        counts: dict[str, dict[str, int]] = {q: dict.fromkeys(_PHASE_GAUGES.values(), 0) for q in names}
        for uid, job in jobs.items():
            phase = written.get(uid) or job.pod_group.phase
            key = _PHASE_GAUGES.get(phase)
            per_queue = counts.get(job.queue)
            if key is not None and per_queue is not None:
                per_queue[key] += 1
        # Left by proportion or capacity; absent when the conf has neither.
        shares: Mapping[str, Mapping[str, Any]] | None = getattr(ssn, "queue_shares", None)
        for name in names:
            gauges["weight"].labels(name).set(ssn.queues[name].weight)
            for key, n in counts[name].items():
                gauges[key].labels(name).set(n)
            if shares is None:
                continue
            share = shares.get(name)
            if share is None:
                # A queue with no job this session holds and asks for nothing (Volcano's plugins
                # zero these two and leave its other figures as they were).
                for kind in ("allocated", "request"):
                    gauges[f"{kind}_cpu"].labels(name).set(0)
                    gauges[f"{kind}_memory"].labels(name).set(0)
                continue
            for kind in ("allocated", "request", "deserved"):
                values = share.get(kind) or {}
                gauges[f"{kind}_cpu"].labels(name).set(values.get("cpu", 0))
                gauges[f"{kind}_memory"].labels(name).set(values.get("memory", 0))
            gauges["share"].labels(name).set(float(share.get("share") or 0.0))
            deserved, allocated = share.get("deserved") or {}, share.get("allocated") or {}
            overused = all(allocated.get(k, 0) >= v for k, v in deserved.items())
            gauges["overused"].labels(name).set(1 if overused else 0)


__all__ = ["ON_SESSION_CLOSE", "ON_SESSION_OPEN", "VolcanoMetrics"]
