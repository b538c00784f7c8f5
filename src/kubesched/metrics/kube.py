"""The kube-scheduler's Prometheus metrics, with upstream's names, labels and histogram buckets.

:class:`KubeSchedulerMetrics` holds the metric families of one scheduler (registered in the
registry it is given) and the recording methods the scheduler, its queue and its frameworks call.
Every duration is measured with :func:`time.perf_counter`; the pod scheduling SLI is measured on
the scheduler's own clock (virtual seconds in a simulation), from the pod's first attempt.

Plugin execution durations are sampled like upstream: each scheduling cycle decides, with
probability ``plugin_sample_percent``/100, whether the plugins it runs are timed
(``pluginMetricsSamplePercent``, 10 upstream). The draw uses a generator of its own, so turning
metrics on never changes a seeded scheduler's decisions.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Mapping, Sequence

from prometheus_client import CollectorRegistry, Gauge

from kubesched.framework.cycle_state import POST_FILTER_EXPLAIN_KEY, CycleState
from kubesched.framework.interfaces import Plugin
from kubesched.framework.status import Code
from kubesched.framework.types import ClusterEvent, QueuedPodInfo
from kubesched.metrics.families import CounterVec, HistogramVec

#: The PostFilter plugin whose runs are preemption attempts.
PREEMPTION_PLUGIN = "DefaultPreemption"

#: Upstream ``pluginMetricsSamplePercent``.
PLUGIN_METRICS_SAMPLE_PERCENT = 10

#: Status codes as upstream's ``Code.String()`` prints them (the ``status`` label).
CODE_NAMES: dict[Code, str] = {
    Code.SUCCESS: "Success",
    Code.ERROR: "Error",
    Code.UNSCHEDULABLE: "Unschedulable",
    Code.UNSCHEDULABLE_AND_UNRESOLVABLE: "UnschedulableAndUnresolvable",
    Code.WAIT: "Wait",
    Code.SKIP: "Skip",
    Code.PENDING: "Pending",
}

# Results of a scheduling attempt (the ``result`` label).
SCHEDULED = "scheduled"
UNSCHEDULABLE = "unschedulable"
ERROR = "error"

# Incoming-pod events that are not cluster events (upstream's event labels).
POD_ADD = "UnscheduledPodAdd"
POD_UPDATE = "UnscheduledPodUpdate"
SCHEDULE_ATTEMPT_FAILURE = "ScheduleAttemptFailure"
BACKOFF_COMPLETE = "BackoffComplete"
UNSCHEDULABLE_TIMEOUT = "UnschedulableTimeout"


def exponential_buckets(start: float, factor: float, count: int) -> list[float]:
    """Upstream ``ExponentialBuckets``: ``count`` bucket bounds, the first ``start``, each the last
    times ``factor``."""
    return [start * factor**i for i in range(count)]


def event_label(event: ClusterEvent) -> str:
    """A cluster event as upstream's ``ClusterEvent.Label()``: its custom label, else the resource
    followed by the action (``NodeAdd``, ``AssignedPodDelete``, ``NodeUpdateNodeLabel``)."""
    if event.label:
        return event.label
    name = event.action.name or str(int(event.action))
    return event.resource + "".join(part.capitalize() for part in name.split("_"))


def attempts_label(attempts: int) -> str:
    """Upstream ``getAttemptsLabel``: the attempt count, capped at ``15+``."""
    return "15+" if attempts >= 15 else str(attempts)


class KubeSchedulerMetrics:
    def __init__(
        self,
        registry: CollectorRegistry,
        *,
        plugin_sample_percent: float = PLUGIN_METRICS_SAMPLE_PERCENT,
        sample_seed: int | None = None,
    ) -> None:
        self.schedule_attempts = CounterVec(
            "scheduler_schedule_attempts",
            "Number of attempts to schedule pods, by the result. 'unschedulable' means a pod could not be "
            "scheduled, while 'error' means an internal scheduler problem.",
            ["result", "profile"],
            registry=registry,
        )
        self.attempt_duration = HistogramVec(
            "scheduler_scheduling_attempt_duration_seconds",
            "Scheduling attempt latency in seconds (scheduling algorithm + binding)",
            ["result", "profile"],
            buckets=exponential_buckets(0.001, 2, 15),
            registry=registry,
        )
        self.algorithm_duration = HistogramVec(
            "scheduler_scheduling_algorithm_duration_seconds",
            "Scheduling algorithm latency in seconds",
            buckets=exponential_buckets(0.001, 2, 15),
            registry=registry,
        )
        self.preemption_victims = HistogramVec(
            "scheduler_preemption_victims",
            "Number of selected preemption victims",
            buckets=exponential_buckets(1, 2, 7),
            registry=registry,
        )
        self.preemption_attempts = CounterVec(
            "scheduler_preemption_attempts",
            "Total preemption attempts in the cluster till now",
            registry=registry,
        )
        self.sli_duration = HistogramVec(
            "scheduler_pod_scheduling_sli_duration_seconds",
            "E2e latency for a pod being scheduled, from the time the pod enters the scheduling queue and "
            "might involve multiple scheduling attempts.",
            ["attempts"],
            buckets=exponential_buckets(0.01, 2, 20),
            registry=registry,
        )
        self.pod_attempts = HistogramVec(
            "scheduler_pod_scheduling_attempts",
            "Number of attempts to successfully schedule a pod.",
            buckets=exponential_buckets(1, 2, 5),
            registry=registry,
        )
        self.extension_point_duration = HistogramVec(
            "scheduler_framework_extension_point_duration_seconds",
            "Latency for running all plugins of a specific extension point.",
            ["extension_point", "status", "profile"],
            buckets=exponential_buckets(0.0001, 2, 12),
            registry=registry,
        )
        self.plugin_duration = HistogramVec(
            "scheduler_plugin_execution_duration_seconds",
            "Duration for running a plugin at a specific extension point.",
            ["plugin", "extension_point", "status"],
            buckets=exponential_buckets(0.00001, 1.5, 20),
            registry=registry,
        )
        self.queue_incoming = CounterVec(
            "scheduler_queue_incoming_pods",
            "Number of pods added to scheduling queues by event and queue type.",
            ["queue", "event"],
            registry=registry,
        )
        self.unschedulable_pods = Gauge(
            "scheduler_unschedulable_pods",
            "The number of unschedulable pods broken down by plugin name. A pod will increment the gauge "
            "for all plugins that caused it to not schedule and so this metric have meaning only when "
            "broken down by plugin.",
            ["plugin", "profile"],
            registry=registry,
        )
        self.plugin_sample_percent = plugin_sample_percent
        self._sample = random.Random(sample_seed)
        #: Whether the current scheduling cycle times its plugins.
        self.sampled = False
        #: Called with the new value when ``sampled`` changes (installing or removing the plugin
        #: timers, so that cycles not sampled run the plugins as they are).
        self.sampling_switches: list[Callable[[bool], None]] = []
        #: The scheduler's clock (for the SLI); set when the metrics are attached to a scheduler.
        self.now: Callable[[], float] = time.time
        # Pod uid → perf_counter at the start of its attempt (until the attempt's outcome).
        self._attempt_start: dict[str, float] = {}
        # The pod whose scheduling algorithm is running (its latency not yet observed).
        self._algorithm_uid: str | None = None
        self._algorithm_start = 0.0
        self._event_labels: dict[ClusterEvent, str] = {}
        # Pod uid → (profile, plugins) the unschedulable-pods gauge counts it under.
        self._unschedulable: dict[str, tuple[str, frozenset[str]]] = {}

    # -- scheduling attempts ---------------------------------------------------------------------
    def cycle_started(self, info: QueuedPodInfo) -> None:
        """A scheduling cycle took the pod off the queue."""
        uid = info.pod.uid
        self._attempt_start[uid] = self._algorithm_start = time.perf_counter()
        self._algorithm_uid = uid
        sampled = self._sample.random() * 100 < self.plugin_sample_percent
        if sampled != self.sampled:
            self.sampled = sampled
            for switch in self.sampling_switches:
                switch(sampled)

    def _algorithm_done(self, uid: str) -> None:
        if self._algorithm_uid == uid:
            self._algorithm_uid = None
            self.algorithm_duration.observe(time.perf_counter() - self._algorithm_start)

    def assumed(self, uid: str) -> None:
        """The scheduling algorithm found the pod a node (the cycle goes on to Reserve/Permit)."""
        self._algorithm_done(uid)

    def attempt_failed(self, profile: str, info: QueuedPodInfo, *, error: bool) -> None:
        """The attempt ended without a binding: unschedulable, or an error."""
        uid = info.pod.uid
        self._algorithm_done(uid)
        start = self._attempt_start.pop(uid, None)
        result = ERROR if error else UNSCHEDULABLE
        self.schedule_attempts.labels(result, profile).inc()
        if start is not None:
            self.attempt_duration.labels(result, profile).observe(time.perf_counter() - start)

    def pod_scheduled(self, profile: str, info: QueuedPodInfo) -> None:
        """The binding cycle bound the pod."""
        start = self._attempt_start.pop(info.pod.uid, None)
        self.schedule_attempts.labels(SCHEDULED, profile).inc()
        if start is not None:
            self.attempt_duration.labels(SCHEDULED, profile).observe(time.perf_counter() - start)
        self.pod_attempts.observe(info.attempts)
        if info.initial_attempt_timestamp is not None:
            self.sli_duration.labels(attempts_label(info.attempts)).observe(
                max(self.now() - info.initial_attempt_timestamp, 0.0)
            )

    def post_filter_done(self, plugins: Sequence[Plugin], state: CycleState) -> None:
        """PostFilter ran: with DefaultPreemption among ``plugins`` that is a preemption attempt,
        and the victims of the node it chose (what it left in the cycle state) are observed."""
        if not any(pl.name == PREEMPTION_PLUGIN for pl in plugins):
            return
        self.preemption_attempts.inc()
        chosen = state.get(POST_FILTER_EXPLAIN_KEY)
        if isinstance(chosen, Mapping) and isinstance(chosen.get("victims"), list):
            self.preemption_victims.observe(len(chosen["victims"]))

    # -- framework -------------------------------------------------------------------------------
    def plugin(self, plugin: str, point: str, status: str, seconds: float) -> None:
        self.plugin_duration.labels(plugin, point, status).observe(seconds)

    # -- queue -----------------------------------------------------------------------------------
    def incoming(self, queue: str, event: str, count: int = 1) -> None:
        """Pods added to ``queue`` (active, backoff, unschedulable) because of ``event``."""
        if count:
            self.queue_incoming.labels(queue, event).inc(count)

    def moved(self, queue: str, event: ClusterEvent) -> None:
        """A cluster event moved a pod out of unschedulablePods to ``queue``."""
        label = self._event_labels.get(event)
        if label is None:
            label = self._event_labels[event] = event_label(event)
        self.queue_incoming.labels(queue, label).inc()

    def mark_unschedulable(self, info: QueuedPodInfo) -> None:
        """The pod waits because of these plugins (a failed attempt's rejectors, or the PreEnqueue
        plugin gating it) until its next attempt or its deletion."""
        uid = info.pod.uid
        entry = (info.pod.scheduler_name, frozenset(info.unschedulable_plugins | info.pending_plugins))
        old = self._unschedulable.get(uid)
        if old == entry:
            return
        if old is not None:
            self._count_unschedulable(old, -1)
        if entry[1]:
            self._unschedulable[uid] = entry
            self._count_unschedulable(entry, 1)
        else:
            self._unschedulable.pop(uid, None)

    def clear_unschedulable(self, uid: str) -> None:
        """The pod left the queue for an attempt, or was deleted."""
        old = self._unschedulable.pop(uid, None)
        if old is not None:
            self._count_unschedulable(old, -1)

    def _count_unschedulable(self, entry: tuple[str, frozenset[str]], delta: int) -> None:
        profile, plugins = entry
        for plugin in plugins:
            self.unschedulable_pods.labels(plugin, profile).inc(delta)


__all__ = [
    "CODE_NAMES",
    "PLUGIN_METRICS_SAMPLE_PERCENT",
    "KubeSchedulerMetrics",
    "attempts_label",
    "event_label",
    "exponential_buckets",
]
