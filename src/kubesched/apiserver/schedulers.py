"""Both schedulers inside the served cluster, stepped on their own thread on the wall clock.

The loop is the real-time one: ``scheduleOne`` back to back while pods are ready, binding cycles,
a batch session every schedule period while batch work waits, and otherwise an idle wait that a
store write ends early. Every other thread only writes to the store; the schedulers read their
watches and the store from this thread alone.
"""

from __future__ import annotations

import logging
import threading
import time

from kubesched.batch.conf import BatchConf, default_batch_conf
from kubesched.batch.scheduler import BatchScheduler
from kubesched.framework.config import SchedulerConfig, default_config
from kubesched.plugins import default_registry
from kubesched.scheduler.scheduler import Scheduler
from kubesched.store.sqlite import SqliteStore

log = logging.getLogger(__name__)


class SchedulerThread:
    def __init__(
        self,
        store: SqliteStore,
        config: SchedulerConfig | None = None,
        batch_conf: BatchConf | None = None,
        *,
        max_idle: float = 0.1,
    ) -> None:
        registry = default_registry()
        self.store = store
        with store.replaying():
            self.scheduler = Scheduler(
                store, config or default_config(registry), registry, now=time.time, seed=None
            )
            self.batch = BatchScheduler(store, batch_conf or default_batch_conf(), now=time.time, seed=None)
        self.max_idle = max_idle
        self.cycles = 0
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._next_session = 0.0

    def start(self) -> None:
        self.store.add_write_listener(self._wake.set)
        self._thread = threading.Thread(target=self._run, name="kubesched-schedulers", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._wake.set()
        self.store.remove_write_listener(self._wake.set)
        if self._thread is not None:
            self._thread.join(10)

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self._loop()
            except Exception:
                # A scheduler bug must not take the API down: log it and carry on from the next step.
                log.exception("scheduler step failed")
                time.sleep(0.1)

    def _loop(self) -> None:
        sched, batch = self.scheduler, self.batch
        queue = sched.queue
        idle = 0.001
        while not self._stop.is_set():
            self._wake.clear()
            sched.handle_events()
            queue.flush_backoff_completed()
            if sched.schedule_one():
                self.cycles += 1
                idle = 0.001
                continue
            sched.run_binding_cycles()
            sched.handle_events()
            if queue.active_count:
                continue
            batch.handle_events()
            now = time.time()
            if batch.wants_session and now >= self._next_session:
                batch.run_session()
                batch.warnings = []
                self._next_session = time.time() + batch.schedule_period
                idle = 0.001
                continue
            timers = [t for t in (queue.next_backoff_expiry(), sched.next_permit_deadline()) if t is not None]
            if batch.wants_session:
                timers.append(self._next_session)
            wait = idle
            if timers:
                wait = min(wait, max(0.0, min(timers) - time.time()))
            idle = 0.001 if self._wake.wait(wait) else min(idle * 2, self.max_idle)
