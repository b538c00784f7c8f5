"""What a metrics recording is made of: the samples over virtual time (:class:`TimeSeries`), one
:class:`PodRecord` per pod, and the statistics and message parsing the summaries use."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Final

import numpy as np
from numpy.typing import NDArray

#: Percentiles reported for latencies and completion times.
PERCENTILES: Final = (50, 90, 99)

_AVAILABLE: Final = re.compile(r"^\d+/\d+ nodes are (?:available|unavailable): ")
_COUNTED: Final = re.compile(r"^(\d+) (.+)$")

FloatArray = NDArray[np.float64]


def is_gpu_resource(name: str) -> bool:
    """Accelerator columns fragmentation is measured on: ``*/gpu`` counts and ``*/gpu-milli`` shares."""
    return name.endswith(("/gpu", "/gpu-milli"))


def parse_reasons(message: str) -> list[str]:
    """The reason phrases of a ``FailedScheduling`` message, without their node counts.

    ``0/5 nodes are available: 1 Insufficient cpu, 4 node(s) had untolerated taint(s). preemption: …``
    gives ``["Insufficient cpu", "node(s) had untolerated taint(s)"]``; a PreFilter rejection gives
    its message as one phrase; anything else (``no nodes available to schedule pods``, a bind error)
    is one phrase as it is.
    """
    text = message.strip()
    m = _AVAILABLE.match(text)
    if m is None:
        return [text] if text else []
    # Reasons end at the first sentence break; the preemption part (if any) follows it. Reason
    # phrases themselves contain dots only inside names (nvidia.com/gpu), never ". ".
    body = text[m.end() :].split(". ", 1)[0].rstrip(".")
    parts = body.split(", ")
    phrases: list[str] = []
    for part in parts:
        counted = _COUNTED.match(part)
        if counted is None:
            return [body] if body else []
        phrases.append(counted.group(2))
    return phrases


def percentiles(values: Sequence[float] | FloatArray) -> dict[str, float | None]:
    """p50/p90/p99 (NumPy's linear interpolation between closest ranks); None when there are none."""
    arr = np.asarray(values, dtype=np.float64)
    if arr.size == 0:
        return {f"p{p}": None for p in PERCENTILES}
    got = np.percentile(arr, PERCENTILES)
    return {f"p{p}": float(v) for p, v in zip(PERCENTILES, got, strict=True)}


def time_weighted_mean(times: FloatArray, values: FloatArray, end: float) -> float | None:
    """Mean of a step function (each value holds until the next sample time) over ``[times[0], end]``.

    NaN samples (the metric did not exist yet) are left out of the numerator and the span. With a
    zero-length span the last defined value is returned.
    """
    if times.size == 0:
        return None
    nxt = np.append(times[1:], max(end, float(times[-1])))
    widths = nxt - times
    ok = ~np.isnan(values)
    if not ok.any():
        return None
    span = float(widths[ok].sum())
    if span <= 0:
        return float(values[ok][-1])
    return float((values[ok] * widths[ok]).sum() / span)


class TimeSeries:
    """Samples as columns: ``time`` (virtual seconds since the start) and one column per metric.

    A metric that first appears in a later sample (a new node pool, a queue) is NaN before it.
    """

    def __init__(self) -> None:
        self.columns: dict[str, list[float]] = {"time": []}
        self.length = 0

    def __len__(self) -> int:
        return self.length

    def append(self, time: float, row: Mapping[str, float]) -> None:
        self.length += 1
        self.columns["time"].append(time)
        for name, value in row.items():
            col = self.columns.get(name)
            if col is None:
                col = [math.nan] * (self.length - 1)
                self.columns[name] = col
            col.append(value)
        if len(row) + 1 != len(self.columns):
            for col in self.columns.values():
                if len(col) < self.length:
                    col.append(math.nan)

    def thin(self, step: int) -> None:
        """Keep every ``step``-th sample, starting with the first."""
        for name, col in self.columns.items():
            self.columns[name] = col[::step]
        self.length = len(self.columns["time"])

    def drop_last(self) -> None:
        if self.length:
            self.length -= 1
            for col in self.columns.values():
                del col[-1]

    @property
    def last_time(self) -> float | None:
        times = self.columns["time"]
        return times[-1] if times else None

    def array(self, name: str) -> FloatArray:
        col = self.columns.get(name)
        if col is None:
            return np.full(self.length, np.nan)
        return np.asarray(col, dtype=np.float64)

    def names(self, prefix: str) -> list[str]:
        return [name for name in self.columns if name.startswith(prefix)]


@dataclass(slots=True)
class PodRecord:
    """One pod's life on the virtual clock (seconds since the start of the simulation)."""

    uid: str
    namespace: str
    name: str
    arrival: float
    requests: dict[str, int]
    duration: float | None = None
    #: ``namespace/name`` of its PodGroup, if it belongs to one.
    group: str | None = None
    queue: str | None = None
    #: Already bound when created (a running pod of the input): not part of latency or JCT.
    preexisting: bool = False
    bound: float | None = None
    node: str | None = None
    #: When a bound pod went away: a completion (ran its full duration) or an eviction.
    finished: float | None = None
    completed: bool = False
    evicted: bool = False
    #: Deleted before it was ever bound.
    deleted: float | None = None
    failures: int = 0
    last_failure: str = ""

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    @property
    def latency(self) -> float | None:
        """Scheduling latency: arrival to bind (queue time)."""
        return None if self.bound is None else self.bound - self.arrival
