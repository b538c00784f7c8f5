"""Sending a bind and settling its result, shared by the kube-scheduler and the batch pipelines.

Both pipelines assume a pod on its node in the cluster's one scheduler cache, write its Binding
through the binder port, and settle the result on the driver's thread, the only one that touches
the cache:

- a bind that went through confirms the assumed pod (:func:`record_bound`): the cache marks its
  binding finished until the informer brings the bound pod, the pod's outcome says where it runs,
  and a ``Scheduled`` event tells the user;
- a refused bind is the API server's answer, a :class:`~kubesched.store.base.StoreError` (the pod
  changed, is gone, or is already bound): :func:`send_binding` turns it into a value,
  :func:`binding_landed` tells a write whose reply was lost from a real refusal, and
  :func:`forget_assumed` frees what the assumed pod held; the message the user sees is
  :func:`rejection_message`.

What each pipeline does around that stays with it: Unreserve, the requeue and the
``FailedScheduling`` report in the kube-scheduler pipeline; the job's task statuses in the batch one.

:class:`BindWorkers` is where binds are sent: in place on the driver's thread (the embedded cluster,
where a bind costs nothing), or on a pool of threads (against an API server a bind is a round trip).
The kube-scheduler hands each binding cycle to a worker and goes on scheduling (upstream: a goroutine
per binding cycle); the batch scheduler sends a session's binds side by side and waits for them all
(Volcano binds in goroutines before the session closes).

This module depends only on the cache, the ports and the outcome record, so the batch pipeline
imports it without the kube-scheduler's framework.
"""

from __future__ import annotations

import functools
import logging
import queue
import threading
from collections import deque
from collections.abc import Callable, Iterable
from typing import Generic, TypeVar

from kubesched.api.objects import Pod
from kubesched.cache.cache import SchedulerCache
from kubesched.framework.outcome import SCHEDULED, PodOutcome
from kubesched.store.base import StoreError
from kubesched.store.ports import Binder, EventRecorder

T = TypeVar("T")
R = TypeVar("R")

log = logging.getLogger(__name__)


def send_binding(binder: Binder, pod: Pod, node: str) -> StoreError | None:
    """Write the pod's Binding to ``node``; the API server's refusal, if any, as a value."""
    try:
        binder.bind(pod.namespace, pod.name, pod.uid, node)
    except StoreError as exc:
        return exc
    return None


def already_assigned(refusal: StoreError, node: str) -> bool:
    """Whether a refused Binding says the pod is bound to ``node`` already (a second write of the
    same Binding: nothing left to do)."""
    return f"already assigned to node {node!r}" in str(refusal)


def rejection_message(reason: object) -> str:
    """What the pod's outcome (and the kube-scheduler's ``FailedScheduling`` event) says of a
    refused bind."""
    return f"binding rejected: {reason}"


def binding_landed(cache: SchedulerCache, pod: Pod, node: str) -> bool:
    """Whether the informer has already seen ``pod`` bound on ``node``: a bind reported as failed
    whose write did land (the reply was lost on the way back), so the bind succeeded after all."""
    cached = cache.pod_state(pod.uid)
    return cached is not None and not cached.assumed and cached.node_name == node


def forget_assumed(cache: SchedulerCache, pod: Pod) -> None:
    """A refused bind: the resources the assumed pod held are free again (unless the informer has
    replaced or removed the pod meanwhile, and with it the assumption)."""
    cached = cache.pod_state(pod.uid)
    if cached is not None and cached.assumed:
        cache.forget_pod(pod)


def record_bound(
    cache: SchedulerCache, events: EventRecorder, outcome: PodOutcome, pod: Pod, node: str, reporter: str
) -> None:
    """A bind that went through: the cache keeps the assumed pod until the informer confirms it,
    the outcome says where the pod runs, and the ``Scheduled`` event tells the user."""
    cache.finish_binding(pod)
    outcome.node = node
    outcome.status = SCHEDULED
    outcome.message = ""
    events.record(
        pod.raw,
        "Normal",
        "Scheduled",
        "Binding",
        f"Successfully assigned {pod.namespace}/{pod.name} to {node}",
        reporter,
    )


class WorkerPool:
    """Threads that run the calls put on one queue, in order taken. Handing a call over is one
    ``put`` on a C ``SimpleQueue`` (a bind goes to a worker per pod against an API server: a
    ``ThreadPoolExecutor`` adds a future, a work item and a semaphore check to each)."""

    def __init__(self, workers: int, thread_name_prefix: str) -> None:
        self._calls: queue.SimpleQueue[Callable[[], None] | None] = queue.SimpleQueue()
        self._threads = [
            threading.Thread(target=self._work, name=f"{thread_name_prefix}_{i}", daemon=True)
            for i in range(workers)
        ]
        for thread in self._threads:
            thread.start()

    def submit(self, call: Callable[[], None]) -> None:
        self._calls.put(call)

    def _work(self) -> None:
        while (call := self._calls.get()) is not None:
            try:
                call()
            except Exception:  # a worker outlives a failed call, as a pool's thread does
                log.exception("a call on a worker thread failed")

    def map(self, send: Callable[[T], R], items: Iterable[T]) -> list[R]:
        """``send`` of every item on the workers side by side; the results in the order of
        ``items``. The first item's exception, in that order, is raised once all are done."""
        todo = list(items)
        results: list[R | None] = [None] * len(todo)
        errors: dict[int, BaseException] = {}
        left = [len(todo)]
        finished = threading.Condition()

        def run(i: int, item: T) -> None:
            try:
                results[i] = send(item)
            except BaseException as exc:
                errors[i] = exc
            finally:
                with finished:
                    left[0] -= 1
                    if not left[0]:
                        finished.notify_all()

        for i, item in enumerate(todo):
            self.submit(functools.partial(run, i, item))
        with finished:
            finished.wait_for(lambda: not left[0])
        if errors:
            raise errors[min(errors)]
        return results  # type: ignore[return-value]

    def shutdown(self, wait: bool = True) -> None:
        """The workers stop once the calls already given are done."""
        for _ in self._threads:
            self._calls.put(None)
        if wait:
            for thread in self._threads:
                if thread is not threading.current_thread():
                    thread.join()


class BindWorkers(Generic[T, R]):
    """Threads that send binds, or none (``workers=0``): then every bind is sent in place.

    :meth:`map` sends a batch of binds side by side and waits for them all. :meth:`start` hands one
    bind to a worker and returns at once; its result waits in :attr:`done` until the driver's thread
    takes it (:meth:`take`) and settles it."""

    def __init__(self, workers: int, thread_name_prefix: str) -> None:
        self.executor = WorkerPool(workers, thread_name_prefix) if workers else None
        #: Binds handed to the workers by :meth:`start` and not yet taken back.
        self.in_flight = 0
        #: Results of started binds, (item, result), in the order the workers finished them.
        self.done: deque[tuple[T, R]] = deque()
        self._idle = threading.Condition()
        #: Threads in :meth:`wait` (a finished bind takes the condition's lock only then).
        self._waiting = 0
        #: Called from a worker when a started bind finished (a driver wakes up to settle it).
        self.on_done: Callable[[], None] | None = None

    def map(self, send: Callable[[T], R], items: Iterable[T]) -> list[R]:
        """Send every item's bind on the workers side by side (in place without workers); the
        results in the order of ``items``."""
        if self.executor is None:
            return [send(item) for item in items]
        return self.executor.map(send, items)

    def start(self, send: Callable[[T], R], item: T) -> None:
        """Hand one bind to a worker (there must be workers)."""
        assert self.executor is not None
        self.in_flight += 1
        self.executor.submit(lambda: self._finished(item, send(item)))

    def begin(self, item: T) -> Callable[[R], None]:
        """Count one bind in flight that is sent without a worker (a request on the client's
        event loop); its result is reported, from any thread, through the function returned, and
        waits in :attr:`done` like a worker's."""
        self.in_flight += 1
        return functools.partial(self._finished, item)

    def _finished(self, item: T, result: R) -> None:
        self.done.append((item, result))
        if self._waiting:
            with self._idle:
                self._idle.notify_all()
        listener = self.on_done
        if listener is not None:
            listener()

    def take(self) -> tuple[T, R]:
        """The oldest finished bind (:attr:`done` must not be empty), no longer in flight."""
        self.in_flight -= 1
        return self.done.popleft()

    def wait(self, timeout: float | None = None) -> None:
        """Wait until every started bind has finished, or ``timeout`` passed."""
        with self._idle:
            self._waiting += 1
            try:
                self._idle.wait_for(lambda: len(self.done) >= self.in_flight, timeout)
            finally:
                self._waiting -= 1

    def shutdown(self) -> None:
        """Stop the workers once the binds they were given are sent; later binds go in place."""
        if self.executor is not None:
            self.executor.shutdown(wait=True)
            self.executor = None
