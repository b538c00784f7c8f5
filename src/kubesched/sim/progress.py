"""A progress bar for trace replays: virtual time done out of the timeline known so far, pods bound.

Shown on stderr only when stderr is a terminal; the CLI turns it off with ``-q``. The bar reads the
virtual clock through the metrics recorder; the wall clock only paces screen refreshes, so it never
influences results.
"""

from __future__ import annotations

import time
from types import TracebackType

from rich.console import Console
from rich.progress import BarColumn, Progress, TaskID, TextColumn, TimeElapsedColumn

from kubesched.sim.report import format_duration

__all__ = ["ReplayProgress"]

#: Seconds of wall time between two updates of the bar (rich redraws on its own timer anyway).
_UPDATE_EVERY = 0.1


class ReplayProgress:
    """Context manager; pass :meth:`update` as a :class:`MetricsRecorder` ``progress`` callback."""

    def __init__(self, label: str, console: Console | None = None) -> None:
        self.console = console or Console(stderr=True)
        self._progress = Progress(
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            TextColumn("{task.percentage:>3.0f}%"),
            TextColumn("{task.fields[virtual]}"),
            TextColumn("{task.fields[bound]} pods bound"),
            TimeElapsedColumn(),
            console=self.console,
            transient=True,
        )
        self._task: TaskID = self._progress.add_task(label, total=1.0, virtual="", bound=0)
        self._last = 0.0

    def __enter__(self) -> ReplayProgress:
        self._progress.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._progress.stop()

    def update(self, elapsed: float, total: float, bound: int) -> None:
        wall = time.monotonic()
        if wall - self._last < _UPDATE_EVERY and elapsed < total:
            return
        self._last = wall
        self._progress.update(
            self._task,
            completed=elapsed,
            total=max(total, 1e-9),
            virtual=f"{format_duration(elapsed)} / {format_duration(total)} virtual",
            bound=bound,
        )
