"""Drivers: what runs the schedulers' steps, and when.

A scheduler does not loop by itself. A driver interleaves, on one thread, the steps the real
scheduler runs in its goroutines: pump the shared informers (their handlers update the cache and the
queue), flush the backoff queue, run one scheduling cycle (``scheduleOne``), run the binding cycles
that may go, and run a batch session when one is due.

- :class:`VirtualClockDriver` runs on a virtual clock: when nothing is ready it jumps the clock to
  the next timer (a backoff expiry, a Permit timeout, a timed cluster change, a batch session), and
  stops when no timer is left. The same input always gives the same decisions.
- :class:`RealTimeDriver` runs on the wall clock: ``scheduleOne`` back to back while pods are ready
  (``wait.Until`` with period 0), and otherwise an idle wait that grows from a millisecond up to a
  cap (``wait.BackoffUntil``) and ends early when the store takes a write, from any thread, or a
  binding worker finishes a bind. It runs until :meth:`RealTimeDriver.stop`, then lets the binds in
  flight complete. Its ``on_idle`` hook runs whenever it runs out of work and may ask to run again
  after a while; ``on_stop`` runs at the end (the served schedulers commit their grouped binds and
  write their kept events through these).

Only the driver's thread pumps the informers, so a cycle reads listers that do not move under it.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from kubesched.scheduler.scheduler import Scheduler
from kubesched.store.informers import InformerFactory


class VirtualClock(Protocol):
    def now(self) -> float: ...
    def advance_to(self, t: float) -> None: ...


class VirtualWorld(Protocol):
    """What a virtual-time run adds around the scheduler (the simulation implements it)."""

    def apply_due(self) -> bool:
        """Apply the timed cluster changes that are due; True if any was."""
        ...

    def next_change(self) -> float | None:
        """When the next timed cluster change is due (None: none left)."""
        ...

    def batch_step(self) -> bool:
        """Run a batch session if one is due; True if it ran."""
        ...

    def next_batch_session(self) -> float | None:
        """When a batch session is next wanted (None: no batch work waits)."""
        ...

    def observe(self, until: float) -> None:
        """The run settled at the current time and will next move to ``until``."""
        ...


@dataclass(slots=True)
class VirtualRun:
    cycles: int
    #: Why the run stopped early, when it did (retries alone outlived the horizon).
    warning: str | None = None


class VirtualClockDriver:
    """Runs a scheduler (and a world's timed changes and batch sessions) on a virtual clock."""

    def __init__(
        self, informers: InformerFactory, scheduler: Scheduler, clock: VirtualClock, world: VirtualWorld
    ) -> None:
        self.informers = informers
        self.scheduler = scheduler
        self.clock = clock
        self.world = world
        self.cycles = 0
        scheduler.handle.wait_for_cluster = self.wait_for_cluster

    #: Rounds of pumping a wait may take: each round is one wave of controller reactions.
    WAIT_ROUNDS = 64

    def wait_for_cluster(self, condition: Callable[[], bool], timeout: float) -> bool:
        """Pump the informers (whose handlers include the simulated cluster's controllers) until
        ``condition()`` holds; False once a round delivers nothing new, as the cluster is idle and
        no amount of waiting would change it."""
        for _ in range(self.WAIT_ROUNDS):
            if condition():
                return True
            if not self.informers.pump():
                return condition()
        return condition()

    def run(self, horizon: float) -> VirtualRun:
        """Run until no timer is left. Retries alone stop ``horizon`` virtual seconds after the last
        timed cluster change."""
        sched, world, clock = self.scheduler, self.world, self.clock
        queue = sched.queue
        pump = self.informers.pump
        deadline = clock.now() + horizon
        start_cycles = self.cycles
        warning: str | None = None
        while True:
            # Changes made since the last step first: a pod bound just now schedules its completion
            # before the due timeline entries are applied.
            pump()
            world.apply_due()
            pump()
            queue.flush_backoff_completed()
            if sched.schedule_one():
                self.cycles += 1
                continue
            sched.run_binding_cycles()
            pump()
            if queue.active_count:
                continue
            if world.batch_step():
                continue
            pump()
            # Nothing to do now: jump to the next timer (an arrival or completion, a backoff expiry,
            # a Permit timeout). Retries alone stop after ``horizon`` seconds without a cluster change.
            change = world.next_change()
            if change is not None:
                deadline = max(deadline, change + horizon)
            timers = [
                t
                for t in (
                    queue.next_backoff_expiry(),
                    sched.next_permit_deadline(),
                    change,
                    world.next_batch_session(),
                )
                if t is not None
            ]
            if not timers:
                break
            nxt = min(timers)
            if nxt > deadline:
                warning = (
                    f"stopped after {horizon:.0f} virtual seconds with "
                    f"{queue.backoff_count} pod(s) still backing off"
                )
                break
            world.observe(nxt)
            clock.advance_to(nxt)
        return VirtualRun(self.cycles - start_cycles, warning)


class BatchSessions(Protocol):
    """A batch scheduler as a driver runs it: a session every ``schedule_period`` while work waits."""

    @property
    def wants_session(self) -> bool: ...

    @property
    def schedule_period(self) -> float: ...

    def run_session(self) -> None: ...


class WritesNotifier(Protocol):
    """A store that calls back after each write (from the writing thread)."""

    def add_write_listener(self, listener: Callable[[], None]) -> None: ...
    def remove_write_listener(self, listener: Callable[[], None]) -> None: ...


class RealTimeDriver:
    """Runs a scheduler on the wall clock while other threads write to the store."""

    def __init__(
        self,
        informers: InformerFactory,
        scheduler: Scheduler,
        store: WritesNotifier,
        *,
        batch: BatchSessions | None = None,
        now: Callable[[], float] = time.time,
        max_idle: float = 0.1,
        bind_drain_timeout: float = 30.0,
        on_idle: Callable[[], float | None] | None = None,
        on_stop: Callable[[], object] | None = None,
    ) -> None:
        self.informers = informers
        self.scheduler = scheduler
        self.store = store
        self.batch = batch
        self.now = now
        #: The longest idle wait (the BackoffUntil cap): timers are checked at least this often.
        self.max_idle = max_idle
        #: How long a stop waits for the binds in flight.
        self.bind_drain_timeout = bind_drain_timeout
        #: Called when the loop runs out of work, before it waits, and after each batch session
        #: (writes put off until they are due, such as kept events); returns in how many seconds it
        #: wants to be called again, if nothing wakes the loop before (None: no need).
        self.on_idle = on_idle
        #: Called once the loop has stopped and the binds in flight are done (writes still put off).
        self.on_stop = on_stop
        self.cycles = 0
        self.sessions = 0
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._error: BaseException | None = None
        self._next_session = 0.0
        self._driver_thread: threading.Thread | None = None
        scheduler.handle.wait_for_cluster = self.wait_for_cluster

    #: How often a wait for the cluster looks again (upstream polls once a second; a shorter
    #: poll costs one lister read).
    WAIT_POLL = 0.05

    def wait_for_cluster(self, condition: Callable[[], bool], timeout: float) -> bool:
        """Poll ``condition()`` until it holds or ``timeout`` passes. On the driver's own thread
        (no binding workers) the informers are pumped between looks, as nobody else will."""
        on_driver = threading.current_thread() is self._driver_thread
        deadline = time.monotonic() + timeout
        while True:
            if on_driver:
                self.informers.pump()
            if condition():
                return True
            left = deadline - time.monotonic()
            if left <= 0 or self._stop.is_set():
                return False
            time.sleep(min(self.WAIT_POLL, left))

    # -- lifecycle -------------------------------------------------------------------------------
    def start(self) -> threading.Thread:
        """Run the loop in a new thread (``run`` on the caller's thread is the other way)."""
        if self._thread is not None:
            raise RuntimeError("the driver is already running")
        self._thread = threading.Thread(target=self._run_guarded, name="kubesched-driver", daemon=True)
        self._thread.start()
        return self._thread

    def stop(self, timeout: float | None = 5.0) -> None:
        """Ask the loop to stop after its current step and wait for it; re-raises what stopped it."""
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout)
            if self._thread.is_alive():
                raise TimeoutError(f"the driver did not stop within {timeout}s")
            self._thread = None
        if self._error is not None:
            error, self._error = self._error, None
            raise error

    @property
    def stopped(self) -> bool:
        return self._stop.is_set()

    def _run_guarded(self) -> None:
        try:
            self.run()
        except BaseException as exc:  # reported by stop() on the controlling thread
            self._error = exc
            self._stop.set()

    def _notify(self) -> None:
        # Called after every write. Setting a set Event still takes its lock and notifies; a flag
        # seen set is cleared only by the loop, before it looks for work, so the write is seen.
        if not self._wake.is_set():
            self._wake.set()

    # -- the loop --------------------------------------------------------------------------------
    def run(self) -> None:
        """Loop until :meth:`stop`."""
        self._driver_thread = threading.current_thread()
        self.store.add_write_listener(self._notify)
        self.scheduler.on_binding_done = self._notify
        try:
            self._loop()
            # Stopped: no pod is popped any more; the binds in flight complete and are recorded.
            self.scheduler.wait_for_bindings(self.bind_drain_timeout)
            if self.on_stop is not None:
                self.on_stop()
        finally:
            self.scheduler.on_binding_done = None
            self.store.remove_write_listener(self._notify)

    def _loop(self) -> None:
        sched = self.scheduler
        queue = sched.queue
        pump = self.informers.pump
        idle = 0.001
        self._next_session = self.now()
        while not self._stop.is_set():
            # Cleared before looking for work: a write from now on wakes the idle wait below.
            self._wake.clear()
            pump()
            queue.flush_backoff_completed()
            if sched.schedule_one():
                self.cycles += 1
                idle = 0.001
                continue
            if sched.run_binding_cycles():
                idle = 0.001
            pump()
            if queue.active_count:
                continue
            if self._batch_step():
                idle = 0.001
                if self.on_idle is not None:
                    # A session may take long: what was put off meanwhile is not held up further.
                    self.on_idle()
                continue
            if self.informers.pending():
                continue
            due = self.on_idle() if self.on_idle is not None else None
            timers = [t for t in (queue.next_backoff_expiry(), sched.next_permit_deadline()) if t is not None]
            if due is not None:
                timers.append(self.now() + due)
            if self.batch is not None and self.batch.wants_session:
                timers.append(self._next_session)
            wait = idle
            if timers:
                wait = min(wait, max(0.0, min(timers) - self.now()))
            # Woken by a write: look again at once; a quiet spell waits longer each time.
            idle = 0.001 if self._wake.wait(wait) else min(idle * 2, self.max_idle)

    def _batch_step(self) -> bool:
        batch = self.batch
        if batch is None or not batch.wants_session or self.now() < self._next_session:
            return False
        batch.run_session()
        self.sessions += 1
        self._next_session = self.now() + batch.schedule_period
        return True
