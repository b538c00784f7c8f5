"""Counter and histogram families cheap enough for the scheduling cycle's hot path.

prometheus_client's own metrics validate labels and take a lock per value on every update (a
histogram observation takes several); a scheduling cycle records about a dozen values, which made
that a measurable share of the cycle. These families keep, per label set, plain numbers behind one
lock per family, hand out the per-label-set child once (callers keep it), and build the exposed
samples only when scraped. They expose exactly what prometheus_client's Counter and Histogram
would (``_total``; ``_bucket`` with cumulative ``le`` counts, ``_count``, ``_sum``); a scrape reads
a consistent copy of each child.
"""

from __future__ import annotations

import threading
from bisect import bisect_left
from collections.abc import Iterator, Sequence

from prometheus_client.core import CounterMetricFamily, HistogramMetricFamily
from prometheus_client.registry import Collector, CollectorRegistry
from prometheus_client.utils import floatToGoString


class _Family(Collector):
    def __init__(
        self, name: str, documentation: str, labelnames: Sequence[str], registry: CollectorRegistry
    ) -> None:
        self.name = name
        self.documentation = documentation
        self.labelnames = tuple(labelnames)
        self.lock = threading.Lock()
        registry.register(self)

    def _check(self, labels: tuple[str, ...]) -> None:
        if len(labels) != len(self.labelnames):
            raise ValueError(f"{self.name} takes labels {self.labelnames}, got {labels}")


class CounterChild:
    __slots__ = ("_lock", "value")

    def __init__(self, lock: threading.Lock) -> None:
        self._lock = lock
        self.value = 0.0

    def inc(self, amount: float = 1.0) -> None:
        with self._lock:
            self.value += amount


class CounterVec(_Family):
    """A counter by label values; ``name`` without ``_total`` (added when exposed)."""

    def __init__(
        self, name: str, documentation: str, labelnames: Sequence[str] = (), *, registry: CollectorRegistry
    ) -> None:
        super().__init__(name, documentation, labelnames, registry)
        self._children: dict[tuple[str, ...], CounterChild] = {}
        if not self.labelnames:
            self.labels()  # exposed (at zero) from the start, as prometheus_client does

    def inc(self, amount: float = 1.0) -> None:
        """For a family without labels."""
        self.labels().inc(amount)

    def labels(self, *values: str) -> CounterChild:
        child = self._children.get(values)
        if child is None:
            self._check(values)
            with self.lock:
                child = self._children.setdefault(values, CounterChild(self.lock))
        return child

    def collect(self) -> Iterator[CounterMetricFamily]:
        family = CounterMetricFamily(self.name, self.documentation, labels=self.labelnames)
        with self.lock:
            values = [(labels, child.value) for labels, child in self._children.items()]
        for labels, value in values:
            family.add_metric(labels, value)
        yield family


class HistogramChild:
    __slots__ = ("_bounds", "_lock", "counts", "sum")

    def __init__(self, bounds: list[float], lock: threading.Lock) -> None:
        self._bounds = bounds
        self._lock = lock
        #: Observations per bucket (not cumulative); the last is above every bound (+Inf).
        self.counts = [0] * (len(bounds) + 1)
        self.sum = 0.0

    def observe(self, value: float) -> None:
        i = bisect_left(self._bounds, value)
        with self._lock:
            self.counts[i] += 1
            self.sum += value


class HistogramVec(_Family):
    def __init__(
        self,
        name: str,
        documentation: str,
        labelnames: Sequence[str] = (),
        *,
        buckets: Sequence[float],
        registry: CollectorRegistry,
    ) -> None:
        super().__init__(name, documentation, labelnames, registry)
        self.bounds = sorted(float(b) for b in buckets)
        self._le = [str(floatToGoString(b)) for b in self.bounds] + ["+Inf"]  # type: ignore[no-untyped-call]
        self._children: dict[tuple[str, ...], HistogramChild] = {}
        if not self.labelnames:
            self.labels()

    def labels(self, *values: str) -> HistogramChild:
        child = self._children.get(values)
        if child is None:
            self._check(values)
            with self.lock:
                child = self._children.setdefault(values, HistogramChild(self.bounds, self.lock))
        return child

    def observe(self, value: float) -> None:
        """For a family without labels."""
        self.labels().observe(value)

    def collect(self) -> Iterator[HistogramMetricFamily]:
        family = HistogramMetricFamily(self.name, self.documentation, labels=self.labelnames)
        with self.lock:
            copies = [(labels, list(child.counts), child.sum) for labels, child in self._children.items()]
        for labels, counts, total in copies:
            cumulative: list[tuple[str, float]] = []
            running = 0
            for le, n in zip(self._le, counts, strict=True):
                running += n
                cumulative.append((le, running))
            family.add_metric(labels, cumulative, total)
        yield family


__all__ = ["CounterChild", "CounterVec", "HistogramChild", "HistogramVec"]
