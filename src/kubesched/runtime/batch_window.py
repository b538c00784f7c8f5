"""When writes kept back to be made together are due: once enough are kept, or once the oldest has
waited long enough (the served schedulers' grouped binds and kept events)."""

from __future__ import annotations

from collections.abc import Callable


class BatchWindow:
    """Counts kept items and tells when they are due: ``max_items`` kept, or the oldest kept
    ``max_delay`` seconds. Not locked: its owner guards it."""

    def __init__(self, max_items: int, max_delay: float, now: Callable[[], float]) -> None:
        if max_items < 1:
            raise ValueError("max_items must be at least 1")
        self.max_items = max_items
        self.max_delay = max_delay
        self._now = now
        self.count = 0
        self._oldest = 0.0

    def add(self) -> bool:
        """One more item kept; True when the kept items are due now."""
        if not self.count:
            self._oldest = self._now()
        self.count += 1
        return self.count >= self.max_items or self._now() - self._oldest >= self.max_delay

    def left(self) -> float | None:
        """Seconds until the kept items are due (0 or less: due now; None: none is kept)."""
        if not self.count:
            return None
        return self.max_delay - (self._now() - self._oldest)

    def clear(self) -> None:
        self.count = 0
