"""An asyncio event loop on a daemon thread, for synchronous callers of asynchronous clients.

The scheduler's driver and binding workers are plain threads; the API client, the reflectors and
the lease renewal are coroutines. They all run on one loop owned by a :class:`LoopThread`, and other
threads hand it work with :meth:`LoopThread.run` (wait for the result) or :meth:`LoopThread.submit`
(a ``concurrent.futures.Future``).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

try:  # libuv's loop: its I/O, TLS and call scheduling are compiled, where asyncio's are Python
    import uvloop
except ImportError:  # pragma: no cover - a platform without uvloop wheels
    uvloop = None  # type: ignore[assignment]

T = TypeVar("T")


def new_event_loop() -> asyncio.AbstractEventLoop:
    """uvloop's event loop where it is installed, else asyncio's."""
    return uvloop.new_event_loop() if uvloop is not None else asyncio.new_event_loop()


class LoopThread:
    """An event loop running on its own daemon thread until :meth:`stop`."""

    def __init__(self, name: str = "kubesched-remote") -> None:
        self.loop = new_event_loop()
        self._started = threading.Event()
        #: Calls handed over by :meth:`call_soon_batched` not yet taken by the loop, and whether the
        #: loop has been woken for them.
        self._handed: list[Callable[[], None]] = []
        self._woken = False
        self._handed_lock = threading.Lock()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()
        self._started.wait()

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.call_soon(self._started.set)
        try:
            self.loop.run_forever()
        finally:
            try:
                self._cancel_all()
                self.loop.run_until_complete(self.loop.shutdown_asyncgens())
            finally:
                self.loop.close()

    def _cancel_all(self) -> None:
        tasks = [t for t in asyncio.all_tasks(self.loop) if not t.done()]
        for task in tasks:
            task.cancel()
        if tasks:
            self.loop.run_until_complete(asyncio.gather(*tasks, return_exceptions=True))

    @property
    def running(self) -> bool:
        return self._thread.is_alive() and not self.loop.is_closed()

    def in_loop(self) -> bool:
        """True when called from the loop's own thread."""
        return threading.current_thread() is self._thread

    def call_soon_batched(self, call: Callable[[], None]) -> None:
        """Run ``call`` on the loop soon, from any thread. Calls handed over before the loop took
        the first share one wake-up of the loop (a driver starting binds and events in one turn
        writes the loop's self-pipe once). Raises ``RuntimeError`` when the loop is stopped."""
        with self._handed_lock:
            self._handed.append(call)
            if self._woken:
                return
            self._woken = True
        try:
            self.loop.call_soon_threadsafe(self._run_handed)
        except RuntimeError:
            with self._handed_lock:
                self._handed.clear()
                self._woken = False
            raise RuntimeError("the event loop thread is stopped") from None

    def _run_handed(self) -> None:
        with self._handed_lock:
            calls, self._handed = self._handed, []
            self._woken = False
        for call in calls:
            try:
                call()
            except Exception as exc:  # one failed call does not keep the others from running
                self.loop.call_exception_handler(
                    {"message": "a call handed to the loop failed", "exception": exc}
                )

    def submit(self, coro: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
        """Schedule ``coro`` on the loop; returns at once."""
        if not self.running:
            coro.close()
            raise RuntimeError("the event loop thread is stopped")
        return asyncio.run_coroutine_threadsafe(coro, self.loop)

    def run(self, coro: Coroutine[Any, Any, T], timeout: float | None = None) -> T:
        """Run ``coro`` on the loop and wait for its result (its exception is raised here). On
        timeout the coroutine is cancelled and ``TimeoutError`` raised.

        Every bind and status write of the schedulers comes through here, so the handoff is kept
        small: the task is created from one ``call_soon_threadsafe`` and its end releases a plain
        lock the caller waits on (no ``concurrent.futures.Future`` chained to the task)."""
        if self.in_loop():
            coro.close()
            raise RuntimeError("LoopThread.run called from the loop's own thread (await the coroutine)")
        if not self.running:
            coro.close()
            raise RuntimeError("the event loop thread is stopped")
        done = threading.Lock()
        done.acquire()
        box: list[asyncio.Task[T]] = []

        def finished(_task: asyncio.Task[T]) -> None:
            done.release()

        def start() -> None:
            task = self.loop.create_task(coro)
            box.append(task)
            task.add_done_callback(finished)

        try:
            self.loop.call_soon_threadsafe(start)
        except RuntimeError:
            coro.close()
            raise RuntimeError("the event loop thread is stopped") from None
        if not done.acquire(timeout=-1 if timeout is None else max(0.0, timeout)):
            # The task may not have been created yet: cancel it once it is.
            self.loop.call_soon_threadsafe(lambda: box[0].cancel() if box else coro.close())
            raise TimeoutError(f"no result within {timeout}s")
        task = box[0]
        if task.cancelled():
            # As a future of run_coroutine_threadsafe reports it: an Exception, not asyncio's.
            raise concurrent.futures.CancelledError()
        return task.result()

    def stop(self, timeout: float | None = 5.0) -> None:
        """Cancel what still runs on the loop, stop it and wait for the thread to end."""
        if self.loop.is_closed():
            return
        if self._thread.is_alive():
            self.loop.call_soon_threadsafe(self.loop.stop)
            if not self.in_loop():
                self._thread.join(timeout)

    def __enter__(self) -> LoopThread:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.stop()
