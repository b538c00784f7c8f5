"""Both schedulers inside the served cluster, run by the real-time driver on their own thread.

The default scheduler reads through shared informers and writes through the store's ports; the
driver pumps the informers between steps, runs ``scheduleOne`` back to back while pods are ready and
a batch session every schedule period while batch work waits, and otherwise waits until the store
takes a write (from the API's thread, or the simulated kubelets').
"""

from __future__ import annotations

import time

from kubesched.batch.conf import BatchConf, default_batch_conf
from kubesched.batch.scheduler import BatchScheduler
from kubesched.framework.config import SchedulerConfig, default_config
from kubesched.plugins import default_registry
from kubesched.runtime.driver import RealTimeDriver
from kubesched.runtime.ports import StorePorts
from kubesched.scheduler.scheduler import Scheduler
from kubesched.store.parsers import informer_factory
from kubesched.store.sqlite import SqliteStore


class _BatchSessions:
    """The batch scheduler as the driver runs it: its watch is drained before the driver asks
    whether a session is wanted, on the driver's thread."""

    def __init__(self, batch: BatchScheduler) -> None:
        self.batch = batch

    @property
    def wants_session(self) -> bool:
        self.batch.handle_events()
        return self.batch.wants_session

    @property
    def schedule_period(self) -> float:
        return self.batch.schedule_period

    def run_session(self) -> None:
        self.batch.run_session()
        self.batch.warnings = []


class ServedSchedulers:
    def __init__(
        self,
        store: SqliteStore,
        config: SchedulerConfig | None = None,
        batch_conf: BatchConf | None = None,
        *,
        max_idle: float = 0.1,
    ) -> None:
        registry = default_registry()
        self.informers = informer_factory(store)
        self.scheduler = Scheduler(
            self.informers,
            StorePorts(store).ports(),
            config or default_config(registry),
            registry,
            now=time.time,
            seed=None,
        )
        self.batch = BatchScheduler(store, batch_conf or default_batch_conf(), now=time.time, seed=None)
        self.driver = RealTimeDriver(
            self.informers, self.scheduler, store, batch=_BatchSessions(self.batch), max_idle=max_idle
        )

    def start(self) -> None:
        self.driver.start()

    @property
    def running(self) -> bool:
        return not self.driver.stopped

    def stop(self) -> None:
        self.driver.stop(timeout=10.0)
