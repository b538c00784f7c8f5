"""Clocks: the simulation's virtual time, and wall time for live runs."""

from __future__ import annotations

import time

#: 2026-01-01T00:00:00Z: the virtual clock's epoch, so timestamps in output look like real ones.
SIM_EPOCH = 1767225600.0


class SimulatedClock:
    """Virtual time that moves only when told to: no sleeps, same run → same timestamps."""

    def __init__(self, start: float = SIM_EPOCH) -> None:
        self._now = start
        self.start = start

    def now(self) -> float:
        return self._now

    def advance_to(self, t: float) -> None:
        if t > self._now:
            self._now = t

    def advance(self, seconds: float) -> None:
        self._now += max(0.0, seconds)

    @property
    def elapsed(self) -> float:
        return self._now - self.start


class WallClock:
    def now(self) -> float:
        return time.time()
