"""Gauges read at scrape time: the scheduling queue's sizes (``scheduler_pending_pods``).

A scrape comes from the HTTP server's thread while the scheduler's thread moves pods between the
queues; the collector reads only the queues' lengths (ints), never the pods, so it needs no lock
and the scheduler pays nothing per queue move.
"""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from kubesched.queue.scheduling_queue import SchedulingQueue

PENDING_PODS_HELP = (
    "Number of pending pods, by the queue type. 'active' means number of pods in activeQ; 'backoff' "
    "means number of pods in backoffQ; 'unschedulable' means number of pods in unschedulablePods that "
    "the scheduler attempted to schedule and failed; 'gated' is the number of unschedulable pods that "
    "the scheduler never attempted to schedule because they are gated."
)


class PendingPodsCollector(Collector):
    def __init__(self, queue: SchedulingQueue) -> None:
        self.queue = queue

    def collect(self) -> Iterator[GaugeMetricFamily]:
        family = GaugeMetricFamily("scheduler_pending_pods", PENDING_PODS_HELP, labels=["queue"])
        for name, count in self.queue.pending_counts().items():
            family.add_metric([name], count)
        yield family


__all__ = ["PendingPodsCollector"]
