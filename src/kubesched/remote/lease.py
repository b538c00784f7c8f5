"""Leases on an API server: the :class:`~kubesched.runtime.leader_election.LeaseAPI` that leader
election uses in ``kubesched run``, over an :class:`~kubesched.remote.client.ApiClient`, and
:class:`Election`, which runs an elector on the client's loop thread for a threaded owner.

The client turns Status answers into ``kubesched.store.base`` exceptions (404 ``NotFound``, 409
``Conflict`` or ``AlreadyExists``), which is what the elector expects; a missing Lease reads as None.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import threading
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any
from urllib.parse import quote

from kubesched.remote.client import ApiClient, ApiError
from kubesched.remote.loop import LoopThread
from kubesched.runtime.leader_election import LeaderCallbacks, LeaderElectionConfig, LeaderElector, LeaseAPI
from kubesched.store.base import NotFound

log = logging.getLogger(__name__)

#: How long past its lease a leader may go unrenewed before its health check fails (kube-scheduler's
#: ``NewLeaderHealthzAdaptor(20 * time.Second)``).
HEALTHZ_TOLERANCE = 20.0

LEASES = "/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases"


def lease_path(namespace: str, name: str | None = None) -> str:
    path = LEASES.format(namespace=quote(namespace, safe=""))
    return path if name is None else f"{path}/{quote(name, safe='')}"


def _object(answer: Any, what: str) -> dict[str, Any]:
    if not isinstance(answer, dict) or answer.get("kind") not in (None, "Lease"):
        raise ApiError(200, "", f"{what}: the server answered with something other than a Lease")
    return answer


def _where(obj: Mapping[str, Any]) -> tuple[str, str]:
    meta = obj.get("metadata")
    if not isinstance(meta, Mapping) or not meta.get("name") or not meta.get("namespace"):
        raise ValueError("a Lease needs metadata.name and metadata.namespace")
    return str(meta["namespace"]), str(meta["name"])


class RemoteLeaseAPI:
    """``coordination.k8s.io/v1`` Leases through one client: get, create, update (PUT, carrying the
    ``resourceVersion`` it was read at, so a concurrent writer makes it fail with Conflict)."""

    def __init__(self, client: ApiClient) -> None:
        self.client = client

    async def get(self, namespace: str, name: str) -> dict[str, Any] | None:
        try:
            answer = await self.client.request("GET", lease_path(namespace, name))
        except NotFound:
            return None
        return _object(answer, f"GET lease {namespace}/{name}")

    async def create(self, obj: Mapping[str, Any]) -> dict[str, Any]:
        namespace, name = _where(obj)
        answer = await self.client.request("POST", lease_path(namespace), body=dict(obj))
        return _object(answer, f"POST lease {namespace}/{name}")

    async def update(self, obj: Mapping[str, Any]) -> dict[str, Any]:
        namespace, name = _where(obj)
        answer = await self.client.request("PUT", lease_path(namespace, name), body=dict(obj))
        return _object(answer, f"PUT lease {namespace}/{name}")


class Election:
    """A :class:`LeaderElector` on a :class:`LoopThread`, for an owner that lives on other threads.

    The elector runs on the loop; its callbacks are handed, in order, to one thread of their own,
    because an owner's callbacks may block on the loop (stopping the scheduler waits for a bind in
    flight, and the bind needs the loop). ``on_stopped_leading`` is handed over the moment the
    elector gives up, before anything else it does."""

    def __init__(self, loop: LoopThread, api: LeaseAPI, config: LeaderElectionConfig) -> None:
        self.loop = loop
        self._callbacks = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="leader-election")
        owner = config.callbacks
        handed = LeaderCallbacks(
            on_started_leading=lambda: self._hand(owner.on_started_leading),
            on_stopped_leading=lambda: self._hand(owner.on_stopped_leading),
            on_new_leader=lambda identity: self._hand(owner.on_new_leader, identity),
            on_leader_event=lambda lease, message: self._hand(owner.on_leader_event, lease, message),
        )
        self.elector = LeaderElector(replace(config, callbacks=handed), api)
        self._task: asyncio.Task[None] | None = None
        self._in_callback = threading.local()

    def _hand(self, callback: Callable[..., None], *args: Any) -> None:
        def call() -> None:
            self._in_callback.active = True
            try:
                callback(*args)
            except Exception:
                log.exception("leader election callback %s failed", getattr(callback, "__name__", callback))

        self._callbacks.submit(call)

    def start(self) -> None:
        """Begin campaigning (returns at once)."""
        if self._task is None:

            async def begin() -> asyncio.Task[None]:
                return asyncio.get_running_loop().create_task(self.elector.run())

            self._task = self.loop.run(begin())

    @property
    def done(self) -> bool:
        """The election is over: leadership was lost (or :meth:`stop` was called)."""
        return self._task is not None and self._task.done()

    def holds_lease(self) -> bool:
        """Whether this replica may still act as the leader (:meth:`LeaderElector.holds_lease`)."""
        return self.elector.holds_lease()

    def healthy(self, max_tolerable_expired: float = HEALTHZ_TOLERANCE) -> bool:
        """False when this process leads on a Lease it has not renewed for a lease duration plus
        ``max_tolerable_expired`` (kube-scheduler's ``leaderElection`` health check, 20s)."""
        problem = self.elector.check(max_tolerable_expired)
        if problem is not None:
            log.error("%s", problem)
        return problem is None

    def stop(self, timeout: float = 15.0) -> None:
        """End the election: a leader first releases the Lease when ``release_on_cancel`` is set.
        Waits (unless called from a callback) for the callbacks handed over so far to finish."""
        task = self._task
        if task is not None and not task.done() and self.loop.running:

            async def end() -> None:
                task.cancel()
                await asyncio.gather(task, return_exceptions=True)

            try:
                self.loop.run(end(), timeout)
            except TimeoutError:
                log.warning("leader election did not end within %gs", timeout)
        self._callbacks.shutdown(wait=not getattr(self._in_callback, "active", False))
