"""A lean HTTP/1.1 client for the small writes a scheduler sends per pod.

Every scheduled pod costs two writes against an API server, its Binding and its ``Scheduled`` event,
and each answer is a small JSON object. Sent through aiohttp's ``ClientSession``, a request builds a
URL object, a request and a response object, a timeout object and its timer, a cookie filter and a
header multidict; together that was most of ``kubesched run``'s CPU outside the scheduling cycle.
This pool does only what those writes need, on kept-alive connections:

- the request head is one byte string: the fixed headers (``Host``, ``User-Agent``, ``Accept``,
  any configured extra headers) are encoded once, ``Authorization`` once per credential;
- answers are parsed by httptools (llhttp, compiled: ``Content-Length`` and chunked bodies alike);
  only the status, the body and ``Retry-After`` are kept, and no ``Accept-Encoding`` is sent, so the
  server does not compress;
- one timer per request; a connection whose request timed out, was cancelled or got a malformed
  answer is closed rather than reused;
- at most ``limit`` connections are open at once (aiohttp's connector held as many); a request
  beyond that waits for one to come free;
- a connection idle for ``idle_timeout`` seconds is closed when the next request comes, the
  longest idle first: before the server's own idle timeout (kube-apiserver's is 90 s) can close it
  under a request, and so that the connections a burst opened do not stay open.

What is not needed here is left out: proxies (a configured proxy keeps the aiohttp path), cookies,
redirects, compressed answers, ``Expect: 100-continue``. Failures are raised as ``OSError``s
(``ConnectionError`` and its kin, ``TimeoutError``), which the client turns into
``ApiConnectionError`` as it does aiohttp's.
"""

from __future__ import annotations

import asyncio
import ssl
from collections import deque
from collections.abc import Mapping
from typing import cast
from urllib.parse import urlencode, urlsplit

import httptools

#: What a request returns: the status code, the body, and ``Retry-After`` as sent (or None).
Answer = tuple[int, bytes, bytes | None]


class ProtocolError(ConnectionError):
    """The server's answer was not HTTP/1.1 this client can read."""


def _header_line(name: str, value: str) -> bytes:
    if any(c in value or c in name for c in "\r\n\0"):
        raise ValueError(f"header {name!r} holds a line break")
    return f"{name}: {value}\r\n".encode("latin-1")


class _Connection(asyncio.Protocol):
    """One kept-alive connection: at most one request on it at a time."""

    def __init__(self, pool: Http1Pool) -> None:
        self._pool = pool
        self._loop = pool.loop
        self._transport: asyncio.Transport | None = None
        self._parser = httptools.HttpResponseParser(self)
        self._waiter: asyncio.Future[Answer] | None = None
        self._timer: asyncio.TimerHandle | None = None
        self._body: list[bytes] = []
        self._retry_after: bytes | None = None
        self.open = False
        #: When the connection was last given back to the pool (the loop's clock).
        self.idle_since = 0.0

    # -- asyncio.Protocol ------------------------------------------------------------------------
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # uvloop's TLS transport is not a subclass of asyncio.Transport, though it acts as one.
        self._transport = cast(asyncio.Transport, transport)
        self.open = True

    def connection_lost(self, exc: Exception | None) -> None:
        if self.open:
            self.open = False
            self._pool._lost(self)
        self._fail(exc if exc is not None else ConnectionResetError("the server closed the connection"))

    def data_received(self, data: bytes) -> None:
        try:
            self._parser.feed_data(data)
        except httptools.HttpParserError as exc:
            self._fail(ProtocolError(f"a malformed answer: {exc}"))
            self.abort()

    # -- httptools callbacks ---------------------------------------------------------------------
    def on_header(self, name: bytes, value: bytes) -> None:
        if len(name) == 11 and name.lower() == b"retry-after":
            self._retry_after = value

    def on_body(self, body: bytes) -> None:
        self._body.append(body)

    def on_message_complete(self) -> None:
        waiter = self._waiter
        self._waiter = None
        self._cancel_timer()
        body = self._body[0] if len(self._body) == 1 else b"".join(self._body)
        self._body = []
        if waiter is None or waiter.done():
            # An answer nobody waits for (the request was cancelled): the connection is out of step.
            self.abort()
            return
        if self._parser.should_keep_alive():
            self._pool._release(self)
        else:
            self.abort()
        waiter.set_result((self._parser.get_status_code(), body, self._retry_after))

    # -- requests --------------------------------------------------------------------------------
    def send(self, data: bytes, timeout: float) -> asyncio.Future[Answer]:
        assert self._transport is not None
        waiter: asyncio.Future[Answer] = self._loop.create_future()
        self._waiter = waiter
        self._retry_after = None
        self._timer = self._loop.call_later(timeout, self._timed_out, timeout)
        self._transport.write(data)
        return waiter

    def _timed_out(self, timeout: float) -> None:
        self._timer = None
        self._fail(TimeoutError(f"no answer within {timeout:g}s"))
        self.abort()

    def _cancel_timer(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _fail(self, exc: BaseException) -> None:
        waiter = self._waiter
        self._waiter = None
        self._cancel_timer()
        if waiter is not None and not waiter.done():
            waiter.set_exception(exc)

    def abort(self) -> None:
        """Close at once (what is in flight on it fails)."""
        if self.open:
            self.open = False
            self._pool._lost(self)
        if self._transport is not None:
            self._transport.abort()


class Http1Pool:
    """Kept-alive HTTP/1.1 connections to one server, made in the running loop on first use."""

    def __init__(
        self,
        base_url: str,
        *,
        ssl_context: ssl.SSLContext | None = None,
        server_hostname: str | None = None,
        headers: Mapping[str, str] | None = None,
        limit: int = 256,
        idle_timeout: float = 45.0,
    ) -> None:
        parts = urlsplit(base_url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"not an http(s) server URL: {base_url!r}")
        self.host = parts.hostname
        self.port = parts.port or (443 if parts.scheme == "https" else 80)
        self.ssl: ssl.SSLContext | None = None
        if parts.scheme == "https":
            self.ssl = ssl_context if ssl_context is not None else ssl.create_default_context()
        self.server_hostname = server_hostname if self.ssl is not None else None
        self.prefix = parts.path.rstrip("/")
        self.limit = limit
        self.idle_timeout = idle_timeout
        host = f"[{self.host}]" if ":" in self.host else self.host
        default_port = 443 if parts.scheme == "https" else 80
        host_header = host if self.port == default_port else f"{host}:{self.port}"
        self._fixed = _header_line("Host", host_header) + b"".join(
            _header_line(name, value) for name, value in (headers or {}).items()
        )
        self._auth: str | None = None
        self._auth_line = b""
        self._idle: list[_Connection] = []
        self._open = 0
        #: Requests waiting for a connection while ``limit`` are open: each gets a free connection,
        #: or None when one closed (it may then open its own).
        self._waiters: deque[asyncio.Future[_Connection | None]] = deque()
        self._closed = False
        self.loop: asyncio.AbstractEventLoop = asyncio.get_running_loop()

    @property
    def connections(self) -> int:
        return self._open

    async def request(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, str] | None = None,
        body: bytes | None = None,
        content_type: str | None = None,
        authorization: str | None = None,
        timeout: float = 60.0,
    ) -> Answer:
        """Send one request and read its answer (any status)."""
        if self._closed:
            raise ConnectionError("the connection pool is closed")
        target = self.prefix + path
        if params:
            target += ("&" if "?" in target else "?") + urlencode(params)
        if authorization != self._auth:
            self._auth_line = _header_line("Authorization", authorization) if authorization else b""
            self._auth = authorization
        head = b"%s %s HTTP/1.1\r\n%s%s" % (method.encode(), target.encode(), self._fixed, self._auth_line)
        if body is not None:
            if content_type:
                head += _header_line("Content-Type", content_type)
            data = b"%sContent-Length: %d\r\n\r\n%s" % (head, len(body), body)
        else:
            data = head + b"\r\n"
        conn = await self._acquire(timeout)
        waiter = conn.send(data, timeout)
        try:
            return await waiter
        except asyncio.CancelledError:
            conn.abort()
            raise

    async def _acquire(self, timeout: float) -> _Connection:
        while True:
            now = self.loop.time()
            idle = self._idle
            while idle and now - idle[0].idle_since > self.idle_timeout:
                idle.pop(0).abort()
            while idle:
                conn = idle.pop()
                if conn.open:
                    return conn
            if self._open < self.limit:
                break
            waiter: asyncio.Future[_Connection | None] = self.loop.create_future()
            self._waiters.append(waiter)
            try:
                got = await waiter
            except asyncio.CancelledError:
                # Handed a connection (or a free slot) just as the wait was cancelled: it goes to
                # the next in line.
                if waiter.done() and not waiter.cancelled():
                    handed = waiter.result()
                    if handed is not None:
                        self._release(handed)
                    else:
                        self._wake(None)
                raise
            if got is not None:
                return got
        self._open += 1
        try:
            _, conn = await asyncio.wait_for(
                self.loop.create_connection(
                    lambda: _Connection(self),
                    self.host,
                    self.port,
                    ssl=self.ssl,
                    server_hostname=self.server_hostname,
                ),
                timeout,
            )
        except BaseException:
            self._open -= 1
            self._wake(None)
            raise
        return conn

    def _wake(self, conn: _Connection | None) -> bool:
        while self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                waiter.set_result(conn)
                return True
        return False

    def _release(self, conn: _Connection) -> None:
        if self._closed:
            conn.abort()
        elif not self._wake(conn):
            conn.idle_since = self.loop.time()
            self._idle.append(conn)

    def _lost(self, conn: _Connection) -> None:
        self._open -= 1
        if conn in self._idle:
            self._idle.remove(conn)
        self._wake(None)

    def close(self) -> None:
        """Close every idle connection; those in use close when their answer comes."""
        self._closed = True
        idle, self._idle = self._idle, []
        for conn in idle:
            conn.abort()
        self._wake(None)
