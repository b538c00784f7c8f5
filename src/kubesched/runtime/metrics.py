"""One scheduler process's metrics: both pipelines' families in a registry of their own.

Each :class:`SchedulerMetrics` has its own :class:`~prometheus_client.CollectorRegistry`, so
several schedulers in one process (tests, a served cluster beside a simulation) never share or
clash over a metric. :meth:`SchedulerMetrics.attach` gives it to a framework scheduler (its queue,
its frameworks' extension points and plugins), :meth:`SchedulerMetrics.attach_batch` to a batch
scheduler; a scheduler without metrics (simulate, bench) records nothing and pays one
``is not None`` check per event.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from prometheus_client import (
    CollectorRegistry,
    ProcessCollector,
    disable_created_metrics,
    generate_latest,
)

from kubesched.batch.metrics import VolcanoMetrics
from kubesched.metrics.instrument import instrument_framework
from kubesched.metrics.kube import PLUGIN_METRICS_SAMPLE_PERCENT, KubeSchedulerMetrics
from kubesched.runtime.metrics_collectors import PendingPodsCollector

if TYPE_CHECKING:
    from kubesched.batch.scheduler import BatchScheduler
    from kubesched.scheduler.scheduler import Scheduler

# Upstream exposes no ``*_created`` series; prometheus_client adds one per counter and histogram
# unless told not to (a process-wide switch).
disable_created_metrics()  # type: ignore[no-untyped-call]

#: The ``Content-Type`` of :meth:`SchedulerMetrics.exposition`: the Prometheus text format 0.0.4, as
#: Kubernetes components serve it (every name here is a classic metric name, so the text is the same
#: in that format and in the newer one prometheus_client would announce).
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


class SchedulerMetrics:
    def __init__(
        self,
        *,
        plugin_sample_percent: float = PLUGIN_METRICS_SAMPLE_PERCENT,
        sample_seed: int | None = None,
        process: bool = True,
    ) -> None:
        """``plugin_sample_percent``: the share of scheduling cycles whose plugin calls are timed
        (upstream 10); ``process``: also export the process's CPU, memory and file descriptors
        (``process_*``, as every Kubernetes component does)."""
        self.registry = CollectorRegistry()
        self.kube = KubeSchedulerMetrics(
            self.registry, plugin_sample_percent=plugin_sample_percent, sample_seed=sample_seed
        )
        self.volcano = VolcanoMetrics(self.registry)
        if process:
            ProcessCollector(registry=self.registry)
        self._queue_collector: PendingPodsCollector | None = None

    def attach(self, scheduler: Scheduler) -> None:
        """Record ``scheduler``'s attempts, queue and frameworks here (one scheduler per instance)."""
        if self._queue_collector is not None and self._queue_collector.queue is not scheduler.queue:
            raise ValueError("these metrics already follow another scheduler")
        kube = self.kube
        kube.now = scheduler.now
        scheduler.metrics = kube
        scheduler.queue.metrics = kube
        for fwk in scheduler.profiles.values():
            instrument_framework(fwk, kube)
        if self._queue_collector is None:
            self._queue_collector = PendingPodsCollector(scheduler.queue)
            self.registry.register(self._queue_collector)

    def attach_batch(self, batch: BatchScheduler) -> None:
        """Record ``batch``'s sessions, actions, plugins and queues here."""
        batch.cycle.metrics = self.volcano

    def exposition(self) -> bytes:
        """Every metric in the Prometheus text format (what ``GET /metrics`` answers)."""
        return generate_latest(self.registry)


__all__ = ["CONTENT_TYPE", "SchedulerMetrics"]
