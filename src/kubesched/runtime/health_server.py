"""A server for ``/metrics``, ``/healthz``, ``/livez`` and ``/readyz``: HTTPS when given an SSL
context, with the middlewares it is given in front (``kubesched run`` puts delegated
authentication and authorization there, :mod:`kubesched.remote.delegated_auth`).

For a scheduler that runs without ``kubesched serve`` (``kubesched run`` against a cluster): start
it beside the scheduler and stop it when the scheduler stops::

    metrics = SchedulerMetrics()
    metrics.attach(scheduler)                 # and metrics.attach_batch(batch)
    server = start_health_server(
        "0.0.0.0", 10259, metrics,
        {"sched-handler-sync": lambda: synced.is_set()},      # healthz, livez and readyz
        ready_checks={"shutdown": lambda: not stopping.is_set()},  # readyz only
    )
    ...
    server.stop()

:func:`start_health_server` runs the server on an event loop of its own in a daemon thread and
returns once it listens (``server.port`` is the port it got when asked for port 0); a port that
cannot be bound raises ``OSError`` there. ``GET /metrics`` answers the Prometheus text format of
the metrics' registry; the health endpoints answer as :mod:`kubesched.metrics.health` describes.
Checks run on the server's thread: they should read a flag, never wait. ``metrics`` may be None
(health endpoints only; ``/metrics`` is then 404). Without an SSL context and middlewares the
server is plain HTTP open to anyone who reaches it (tests, embedding). ``kubesched serve`` serves
``/metrics`` itself, behind its bearer token.

:func:`health_app` is the same as an aiohttp application, to mount elsewhere.
"""

from __future__ import annotations

import asyncio
import ssl
import threading
from collections import ChainMap
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

from aiohttp import web

from kubesched.metrics.health import ENDPOINTS, Check, health_response, with_ping
from kubesched.runtime.metrics import CONTENT_TYPE, SchedulerMetrics


def metrics_response(metrics: SchedulerMetrics) -> web.Response:
    """``GET /metrics``: every metric of ``metrics`` in the Prometheus text format."""
    return web.Response(body=metrics.exposition(), headers={"Content-Type": CONTENT_TYPE})


def health_handler(endpoint: str, checks: Mapping[str, Check], request: web.Request) -> web.Response:
    """``GET /<endpoint>[/<check>]`` for the aiohttp ``request``."""
    path = request.path.rstrip("/")
    prefix = f"/{endpoint}"
    check = path[len(prefix) + 1 :] if path.startswith(prefix + "/") else None
    status, body = health_response(
        endpoint,
        checks,
        check=check,
        verbose="verbose" in request.query,
        exclude=request.query.getall("exclude", []),
    )
    return web.Response(
        text=body,
        status=status,
        content_type="text/plain",
        charset="utf-8",
        headers={"X-Content-Type-Options": "nosniff"},
    )


def health_app(
    metrics: SchedulerMetrics | None,
    checks: Mapping[str, Check],
    *,
    ready_checks: Mapping[str, Check] | None = None,
    middlewares: Sequence[Any] = (),
    on_cleanup: Sequence[Callable[[web.Application], Awaitable[None]]] = (),
) -> web.Application:
    """``checks`` answer every health endpoint; ``ready_checks`` only ``/readyz``. Both are read on
    each request, so checks their owner adds later are served too (upstream's ``ping`` first).
    ``middlewares`` see every request first; ``on_cleanup`` run when the server stops."""
    ping = with_ping({})
    live: Mapping[str, Check] = ChainMap(checks, ping)  # type: ignore[arg-type]
    by_endpoint = {name: live for name in ENDPOINTS}
    by_endpoint["readyz"] = ChainMap(ready_checks or {}, checks, ping)  # type: ignore[arg-type]

    async def metrics_handler(_request: web.Request) -> web.Response:
        if metrics is None:
            raise web.HTTPNotFound()
        return metrics_response(metrics)

    app = web.Application(middlewares=list(middlewares))
    app.on_cleanup.extend(on_cleanup)
    app.router.add_get("/metrics", metrics_handler)
    for endpoint, endpoint_checks in by_endpoint.items():
        handler = _health_route(endpoint, endpoint_checks)
        app.router.add_get(f"/{endpoint}", handler)
        app.router.add_get(f"/{endpoint}/{{check}}", handler)
    return app


_Handler = Callable[[web.Request], Awaitable[web.Response]]


def _health_route(endpoint: str, checks: Mapping[str, Check]) -> _Handler:
    async def handler(request: web.Request) -> web.Response:
        return health_handler(endpoint, checks, request)

    return handler


class HealthServer:
    """A running :func:`start_health_server`; :meth:`stop` ends it."""

    def __init__(
        self, app: web.Application, host: str, port: int, ssl_context: ssl.SSLContext | None = None
    ) -> None:
        self.host = host
        self.port = port
        self.ssl_context = ssl_context
        self._app = app
        self._loop = asyncio.new_event_loop()
        self._runner = web.AppRunner(app, access_log=None, handle_signals=False)
        self._thread = threading.Thread(target=self._run, name="kubesched-health", daemon=True)
        self._ready = threading.Event()
        self._failure: BaseException | None = None

    @property
    def url(self) -> str:
        host = "127.0.0.1" if self.host in ("0.0.0.0", "", "::") else self.host
        if ":" in host:
            host = f"[{host}]"
        scheme = "https" if self.ssl_context is not None else "http"
        return f"{scheme}://{host}:{self.port}"

    def _run(self) -> None:
        loop = self._loop
        asyncio.set_event_loop(loop)
        try:
            loop.run_until_complete(self._start())
        except BaseException as exc:
            self._failure = exc
            self._ready.set()
            loop.run_until_complete(self._runner.cleanup())
            loop.close()
            return
        self._ready.set()
        loop.run_forever()
        loop.run_until_complete(self._runner.cleanup())
        loop.close()

    async def _start(self) -> None:
        await self._runner.setup()
        site = web.TCPSite(self._runner, self.host, self.port, ssl_context=self.ssl_context)
        await site.start()
        server = site._server
        sockets = getattr(server, "sockets", None) or []
        if sockets:
            self.port = int(sockets[0].getsockname()[1])

    def start(self, timeout: float = 10.0) -> HealthServer:
        self._thread.start()
        if not self._ready.wait(timeout):
            raise TimeoutError(f"the health server on {self.host}:{self.port} did not start")
        if self._failure is not None:
            raise self._failure
        return self

    def stop(self, timeout: float = 5.0) -> None:
        """Stop serving and wait for the thread (at most ``timeout`` seconds); idempotent."""
        if not self._thread.is_alive():
            return
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout)


def start_health_server(
    host: str,
    port: int,
    metrics: SchedulerMetrics | None,
    checks: Mapping[str, Check],
    *,
    ready_checks: Mapping[str, Check] | None = None,
    ssl_context: ssl.SSLContext | None = None,
    middlewares: Sequence[Any] = (),
    on_cleanup: Sequence[Callable[[web.Application], Awaitable[None]]] = (),
) -> HealthServer:
    """Serve ``/metrics`` and the health endpoints on ``host:port`` (0: any free port) from a
    thread of its own, over HTTPS when ``ssl_context`` is given; returns once it listens."""
    app = health_app(
        metrics, checks, ready_checks=ready_checks, middlewares=middlewares, on_cleanup=on_cleanup
    )
    return HealthServer(app, host, port, ssl_context).start()


__all__ = ["HealthServer", "health_app", "health_handler", "metrics_response", "start_health_server"]
