"""The batch scheduler as a wall-clock driver runs it, in a long-running process."""

from __future__ import annotations

import logging

from kubesched.batch.scheduler import BatchScheduler

log = logging.getLogger(__name__)


class LoggedBatchSessions:
    """A :class:`~kubesched.runtime.driver.BatchSessions` whose session warnings are logged, not
    kept (a process that runs for weeks would otherwise collect them without end)."""

    def __init__(self, batch: BatchScheduler) -> None:
        self.batch = batch

    @property
    def wants_session(self) -> bool:
        return self.batch.wants_session

    @property
    def schedule_period(self) -> float:
        return self.batch.schedule_period

    def run_session(self) -> None:
        self.batch.run_session()
        for warning in self.batch.warnings:
            log.warning("batch scheduler: %s", warning)
        self.batch.warnings = []
