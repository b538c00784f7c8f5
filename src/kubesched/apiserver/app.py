"""The HTTP API: kube-apiserver's REST surface over a :class:`SqliteStore`, as an aiohttp app.

Paths, verbs, status codes and ``Status`` bodies follow upstream, so that kubectl and client
libraries work unchanged. Objects are stored as they are served (one version per kind; Events are
converted between core/v1 and events.k8s.io/v1 on the way out). :class:`ApiServer` is the transport:
authentication, errors as Status bodies, the commit every answer waits for and the wake-ups of the
watches; ``routes`` finds the handler (``handlers/``) and the registry (``kubesched.registry``)
holds each kind's rules.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from typing import Any

from aiohttp import web

from kubesched.apiserver.cluster_summary import Summary, Tally
from kubesched.apiserver.handlers.body import MAX_BODY
from kubesched.apiserver.handlers.responses import error_response
from kubesched.apiserver.pod_list import Freshness, PodRows
from kubesched.apiserver.replay import Replayer
from kubesched.apiserver.routes import dispatch
from kubesched.apiserver.running_configs import RunningConfigs
from kubesched.apiserver.ui import LoginCodes
from kubesched.metrics.health import Check
from kubesched.registry.errors import ApiError, too_large, unauthorized
from kubesched.runtime.metrics import SchedulerMetrics
from kubesched.store.sqlite import CommitFailed, SqliteStore

log = logging.getLogger(__name__)

#: Changes whose encoded watch lines are kept for the other watches (cleared past this size).
_ENCODED_CACHE = 4096

# The web UI's files hold no cluster data and its login trades a one-time code: public too.
_PUBLIC = ("/healthz", "/readyz", "/livez", "/version", "/ui")
_PUBLIC_PREFIXES = ("/healthz/", "/readyz/", "/livez/", "/ui/")


class ApiServer:
    """One served cluster's API: the store, the watches' wake-ups and the commits answers wait for."""

    def __init__(
        self,
        store: SqliteStore,
        token: str,
        *,
        bookmark_interval: float = 60.0,
        git_version: str = "v1.32.0",
        auto_create_namespaces: bool = True,
    ) -> None:
        self.store = store
        self.token = token
        self.bookmark_interval = bookmark_interval
        self.git_version = git_version
        #: A playground convenience (upstream answers 404): creating an object in a namespace that
        #: does not exist creates the namespace, so manifests made for ``simulate`` apply as they are.
        self.auto_create_namespaces = auto_create_namespaces
        #: Per kind, the event the watches of that kind wait on; set (and dropped) when an object
        #: of the kind changes, so a write wakes only the watches that may have something to send.
        self._changed: dict[str, asyncio.Event] = {}
        #: Kinds written since the last wake (guarded by the store's lock).
        self._changed_kinds: set[str] = set()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._wake_pending = False
        #: Requests whose writes wait for the commit made at the end of this turn of the loop.
        self._commit_waiters: list[tuple[int, asyncio.Future[None]]] = []
        self._commit_scheduled = False
        #: Encoded watch lines and served views of recent changes, shared by the watches that send
        #: the same change in the same form: each is built once, not once per watch.
        self.watch_lines: dict[tuple[int, str, str, str], bytes] = {}
        self.watch_views: dict[tuple[int, bool, str, str], dict[str, Any]] = {}
        self.started = time.time()
        #: The served schedulers' metrics (``GET /metrics``, behind the token like every API path);
        #: None: ``/metrics`` is 404.
        self.metrics: SchedulerMetrics | None = None
        #: Named checks ``/readyz`` runs after ``ping`` (``/healthz`` and ``/livez`` run ``ping``).
        self.ready_checks: dict[str, Check] = {}
        #: The running schedulers' configurations (``/kubesched/v1/config/…``); None: 404.
        self.configs: RunningConfigs | None = None
        #: The web UI's one-time login links.
        self.login_codes = LoginCodes(token)
        #: Runs the web UI's replays (``/kubesched/v1/replay``); None: 404.
        self.replayer: Replayer | None = None
        #: The last summary the web UI's Cluster view was sent (``/kubesched/v1/cluster``).
        self.cluster_summary: Summary | None = None
        #: The pods' per-node sums behind it, kept up to date from the store's changes.
        self.pod_tally: Tally | None = None
        #: The Pods view's rows (``/kubesched/v1/pods``), kept up to date from the store's changes.
        self.pod_rows: PodRows | None = None
        self.pod_rows_freshness: Freshness | None = None
        #: CPU seconds this server's thread spent making the web UI's views (``cluster``: the
        #: summary; ``pods``: the pod rows' pages), exported as ``kubesched_ui_cpu_seconds_total``.
        self.ui_cpu_seconds: dict[str, float] = {"cluster": 0.0, "pods": 0.0}

    # -- wiring ----------------------------------------------------------------------------------
    def app(self) -> web.Application:
        app = web.Application(client_max_size=MAX_BODY)
        # Every path reaches one handler that guards itself: an aiohttp middleware would wrap each
        # request in another layer of calls for the same effect.
        app.router.add_route("*", "/{tail:.*}", self._handle)
        app.on_startup.append(self._on_startup)
        app.on_cleanup.append(self._on_cleanup)
        return app

    async def _on_startup(self, _app: web.Application) -> None:
        self._loop = asyncio.get_running_loop()
        self.store.add_kind_listener(self._on_write)

    async def _on_cleanup(self, _app: web.Application) -> None:
        self.store.remove_kind_listener(self._on_write)

    # -- watch wake-ups --------------------------------------------------------------------------
    def _on_write(self, kind: str) -> None:
        """Any thread, after any write, holding the store's lock: wake the watches of ``kind``
        (once per loop turn)."""
        if kind not in self._changed:
            # No watch waits on this kind: a watch registers its wake-up before it reads the
            # changes, under the store's lock that this write holds, so it cannot miss this one.
            return
        self._changed_kinds.add(kind)
        if self._wake_pending or self._loop is None:
            return
        self._wake_pending = True
        try:
            self._loop.call_soon_threadsafe(self._wake)
        except RuntimeError:  # the loop is closed: the server is going down
            self._wake_pending = False

    def _wake(self) -> None:
        with self.store.lock:
            self._wake_pending = False
            kinds, self._changed_kinds = self._changed_kinds, set()
        for kind in kinds:
            changed = self._changed.pop(kind, None)
            if changed is not None:
                changed.set()
        if len(self.watch_lines) > _ENCODED_CACHE or len(self.watch_views) > _ENCODED_CACHE:
            self.watch_lines.clear()
            self.watch_views.clear()

    def changed_event(self, kind: str) -> asyncio.Event:
        """The event set at the next change of an object of ``kind``."""
        changed = self._changed.get(kind)
        if changed is None:
            changed = self._changed[kind] = asyncio.Event()
        return changed

    # -- transport -------------------------------------------------------------------------------
    async def _handle(self, request: web.Request) -> web.StreamResponse:
        return await self._guard(request, self._dispatch)

    async def _dispatch(self, request: web.Request) -> web.StreamResponse:
        return await dispatch(self, request)

    async def _guard(self, request: web.Request, handler: Callable[[web.Request], Any]) -> web.StreamResponse:
        """Authentication, and errors as Status bodies: a handler bug is a 500 Status, never a
        traceback to the client."""
        path = request.path
        if path not in _PUBLIC and not path.startswith(_PUBLIC_PREFIXES):
            auth = request.headers.get("Authorization", "")
            if auth != f"Bearer {self.token}":
                return error_response(unauthorized())
        try:
            response: web.StreamResponse = await handler(request)
            return response
        except ApiError as err:
            return error_response(err)
        except web.HTTPRequestEntityTooLarge:
            return error_response(too_large())
        except (ConnectionResetError, asyncio.CancelledError):
            raise
        except CommitFailed as exc:
            log.error("%s", exc)
            return error_response(ApiError(500, "InternalError", str(exc)))
        except Exception:
            log.exception("internal error serving %s %s", request.method, request.path_qs)
            return error_response(ApiError(500, "InternalError", "an internal error occurred"))

    # -- commits ---------------------------------------------------------------------------------
    async def read(self, handle: Callable[[], web.Response]) -> web.Response:
        """Run a handler that reads the store; answer once what it read is committed."""
        response = handle()
        await self.read_committed()
        return response

    async def read_committed(self) -> None:
        """Return once whatever a read of the store just saw is committed (a write may be in
        memory before its commit, which a client must never see)."""
        await self._committed(self.store.pending_generation())

    async def write(self, handle: Callable[[], web.Response]) -> web.Response:
        """Run a handler that writes; answer once its writes are committed. The handlers that write
        in one turn of the loop share one commit, made after them in the same turn (the store
        commits every write waiting, whoever's)."""
        try:
            with self.store.deferring() as pending:
                return handle()
        finally:
            await self._committed(pending.generation)

    async def _committed(self, generation: int) -> None:
        if not generation or self.store.committed(generation):
            return
        loop = asyncio.get_running_loop()
        waiter = loop.create_future()
        self._commit_waiters.append((generation, waiter))
        if not self._commit_scheduled:
            self._commit_scheduled = True
            loop.call_soon(self._commit_waiting)
        await waiter

    def _commit_waiting(self) -> None:
        self._commit_scheduled = False
        waiters, self._commit_waiters = self._commit_waiters, []
        try:
            self.store.sync(max(generation for generation, _ in waiters))
        except Exception as exc:
            for _, waiter in waiters:
                if not waiter.done():
                    waiter.set_exception(exc)
            return
        for _, waiter in waiters:
            if not waiter.done():
                waiter.set_result(None)
