"""A small asynchronous Kubernetes REST client over one aiohttp session.

Only what the scheduler's hot path needs, done the way client-go's REST client does it:

- every request waits for a token from a client-side token bucket (``qps`` tokens a second, at
  most ``burst`` saved up; kube-scheduler's defaults are 50 and 100); a watch takes a token to start
  and none while it streams;
- JSON bodies are encoded and decoded with orjson into plain dicts (no generated model classes);
- a non-2xx answer becomes an :class:`ApiError` built from its ``Status`` body, with subclasses that
  are also the store's ``NotFound`` / ``Conflict`` / ``AlreadyExists`` so that code written against
  the embedded store catches them unchanged;
- 429 and 5xx answers that carry ``Retry-After`` are retried after that many seconds, at most
  ``max_retries`` times (client-go's default is 10);
- a refused credential (401) is renewed once when it can be (token file, exec plugin);
- when the server cannot be reached, or drops the connection, :class:`ApiConnectionError` is
  raised: callers (the reflectors) back off and try again.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncGenerator, Callable, Mapping
from typing import Any

import aiohttp
import orjson

from kubesched.remote.config import ClientConfig
from kubesched.remote.http1 import Http1Pool
from kubesched.store.base import AlreadyExists, Conflict, NotFound, StoreError

USER_AGENT = "kubesched/0.1"

#: Requests not answered within this many seconds fail (a watch gets its timeoutSeconds on top).
REQUEST_TIMEOUT = 60.0

#: Connections a client's writes may hold open at once; more writes than that wait for one. Binds
#: are not bounded by workers once they are sent from the loop, and against a slow server every
#: write in flight would otherwise open (and handshake) a connection of its own.
WRITE_CONNECTIONS = 32

#: aiohttp's connection errors and the ones raised under it (socket, TLS, payload, timeouts).
_CONNECTION_ERRORS = (aiohttp.ClientConnectionError, aiohttp.ClientPayloadError, TimeoutError, OSError)


# -- errors ----------------------------------------------------------------------------------------
class ApiError(StoreError):
    """The API server refused a request: ``code`` is the HTTP status, ``reason`` and ``message`` the
    ``Status`` body's (``details`` as given)."""

    def __init__(
        self,
        code: int,
        reason: str,
        message: str,
        *,
        details: Mapping[str, Any] | None = None,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(f"{message} ({code} {reason})" if reason else f"{message} ({code})")
        self.code = code
        self.reason = reason
        self.message = message
        self.details: Mapping[str, Any] = details or {}
        self.retry_after = retry_after


class RemoteNotFound(ApiError, NotFound):
    """404."""


class RemoteConflict(ApiError, Conflict):
    """409 Conflict: the object changed since it was read (a stale resourceVersion)."""


class RemoteAlreadyExists(ApiError, AlreadyExists):
    """409 AlreadyExists: an object with that name exists."""


class Gone(ApiError):
    """410: the resourceVersion asked for is older than what the server still keeps."""


class Invalid(ApiError):
    """422: the object failed validation."""


class TooManyRequests(ApiError):
    """429: throttled by the server (still so after the allowed retries)."""


class Unauthorized(ApiError):
    """401: no or a refused credential."""


class Forbidden(ApiError):
    """403: the credential may not do this."""


class ApiConnectionError(StoreError):
    """The server could not be reached or dropped the connection (no HTTP answer to report)."""


_BY_CODE: dict[int, type[ApiError]] = {
    401: Unauthorized,
    403: Forbidden,
    404: RemoteNotFound,
    410: Gone,
    422: Invalid,
    429: TooManyRequests,
}


def error_from_status(status: Any, code: int | None = None, *, retry_after: float | None = None) -> ApiError:
    """The :class:`ApiError` for a ``Status`` object (a response body or a watch ERROR event)."""
    body: Mapping[str, Any] = status if isinstance(status, Mapping) else {}
    if code is None or code == 0:
        raw_code = body.get("code")
        code = raw_code if isinstance(raw_code, int) else 500
    reason = str(body.get("reason") or "")
    message = str(body.get("message") or "") or (status if isinstance(status, str) else "") or f"HTTP {code}"
    details = body.get("details") if isinstance(body.get("details"), Mapping) else None
    cls: type[ApiError]
    if code == 409:
        cls = RemoteAlreadyExists if reason == "AlreadyExists" else RemoteConflict
    else:
        cls = _BY_CODE.get(code, ApiError)
    return cls(code, reason, message, details=details, retry_after=retry_after)


# -- the limiter ------------------------------------------------------------------------------------
class TokenBucket:
    """client-go's token-bucket rate limiter: ``qps`` tokens a second, up to ``burst`` saved.

    A caller reserves a token and waits until it would exist (the bucket may go negative, so waiters
    are served in arrival order at exactly ``qps``). ``qps <= 0`` turns limiting off."""

    def __init__(self, qps: float, burst: int, clock: Callable[[], float] = time.monotonic) -> None:
        if burst < 1 and qps > 0:
            raise ValueError("burst must be at least 1")
        self.qps = qps
        self.burst = burst
        self._clock = clock
        self._tokens = float(burst)
        self._last = clock()

    def reserve(self) -> float:
        """Take a token; returns how many seconds to wait before using it."""
        if self.qps <= 0:
            return 0.0
        now = self._clock()
        self._tokens = min(float(self.burst), self._tokens + (now - self._last) * self.qps)
        self._last = now
        self._tokens -= 1.0
        return 0.0 if self._tokens >= 0 else -self._tokens / self.qps

    async def acquire(self) -> float:
        """Wait for a token; returns how long it waited."""
        delay = self.reserve()
        if delay > 0:
            await asyncio.sleep(delay)
        return delay


def _retry_after(headers: Mapping[str, str]) -> float | None:
    """``Retry-After`` in whole seconds, as client-go reads it (an HTTP date is not honoured)."""
    return _seconds(headers.get("Retry-After"))


def _seconds(value: str | bytes | None) -> float | None:
    if value is None:
        return None
    try:
        seconds = int(value.strip())
    except ValueError:
        return None
    return float(seconds) if seconds >= 0 else None


def _decode(raw: bytes) -> Any:
    if not raw:
        return None
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError:
        return raw.decode(errors="replace")


# -- the client -------------------------------------------------------------------------------------
class ApiClient:
    """Requests and watches against one API server. Create with :meth:`connect` inside the event
    loop that will use it; :meth:`close` when done."""

    def __init__(
        self,
        config: ClientConfig,
        session: aiohttp.ClientSession,
        limiter: TokenBucket,
        *,
        max_retries: int = 10,
        timeout: float = REQUEST_TIMEOUT,
        writes: Http1Pool | None = None,
    ) -> None:
        self.config = config
        self.session = session
        self.limiter = limiter
        self.max_retries = max_retries
        self.timeout = timeout
        self.base = config.server.rstrip("/")
        #: Where requests other than GETs go (None: through aiohttp like the rest).
        self.writes = writes
        self._timeout = aiohttp.ClientTimeout(total=timeout)
        self._request_kwargs: dict[str, Any] = {}
        if config.tls_server_name:
            self._request_kwargs["server_hostname"] = config.tls_server_name
        if config.proxy:
            self._request_kwargs["proxy"] = config.proxy
        #: Requests sent (retries included) and seconds spent waiting for the limiter.
        self.requests = 0
        self.throttled = 0.0

    @classmethod
    async def connect(
        cls,
        config: ClientConfig,
        *,
        qps: float = 50.0,
        burst: int = 100,
        max_retries: int = 10,
        timeout: float = REQUEST_TIMEOUT,
    ) -> ApiClient:
        connector = aiohttp.TCPConnector(limit=256, ssl=config.ssl if config.ssl is not None else True)
        session = aiohttp.ClientSession(
            connector=connector,
            headers={"Accept": "application/json", "User-Agent": USER_AGENT, **config.headers},
            auto_decompress=True,
        )
        # Writes (a Binding and an event per scheduled pod) go on a lean pool of their own; reads,
        # lists and watches stay with aiohttp. A proxy keeps everything on aiohttp.
        writes = None
        if not config.proxy:
            writes = Http1Pool(
                config.server,
                ssl_context=config.ssl,
                server_hostname=config.tls_server_name,
                headers={"Accept": "application/json", "User-Agent": USER_AGENT, **config.headers},
                limit=WRITE_CONNECTIONS,
            )
        return cls(
            config, session, TokenBucket(qps, burst), max_retries=max_retries, timeout=timeout, writes=writes
        )

    async def close(self) -> None:
        if self.writes is not None:
            self.writes.close()
        await self.session.close()

    async def __aenter__(self) -> ApiClient:
        return self

    async def __aexit__(self, *_exc: object) -> None:
        await self.close()

    # -- requests --------------------------------------------------------------------------------
    async def _headers(self, content_type: str | None) -> dict[str, str]:
        headers: dict[str, str] = {}
        auth = await self.config.auth_header()
        if auth:
            headers["Authorization"] = auth
        if content_type:
            headers["Content-Type"] = content_type
        return headers

    async def request(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, str] | None = None,
        body: Any = None,
        content_type: str = "application/json",
        decode: bool = True,
    ) -> Any:
        """Send one request; the decoded body of a 2xx answer (None without ``decode``: a caller
        that needs only to know the write went through), else the :class:`ApiError` for it."""
        data: bytes | None = None
        if body is not None:
            data = body if isinstance(body, bytes) else orjson.dumps(body)
        url = self.base + path
        attempts = 0
        renewed = False
        reconnected = False
        writes = self.writes if method != "GET" else None
        while True:
            delay = self.limiter.reserve()
            if delay > 0:
                self.throttled += delay
                await asyncio.sleep(delay)
            self.requests += 1
            retry_value: str | bytes | None
            try:
                if writes is not None:
                    status, raw, retry_value = await writes.request(
                        method,
                        path,
                        params=params,
                        body=data,
                        content_type=content_type if data is not None else None,
                        authorization=await self.config.auth_header(),
                        timeout=self.timeout,
                    )
                else:
                    headers = await self._headers(content_type if data is not None else None)
                    async with self.session.request(
                        method,
                        url,
                        params=params,
                        data=data,
                        headers=headers,
                        timeout=self._timeout,
                        **self._request_kwargs,
                    ) as resp:
                        raw = await resp.read()
                        status = resp.status
                        retry_value = resp.headers.get("Retry-After")
            except _CONNECTION_ERRORS as exc:
                # A pooled keep-alive connection the server closed fails on reuse: a read is
                # retried once on a fresh connection (client-go retries GETs on reset/EOF).
                if method == "GET" and not reconnected and isinstance(exc, aiohttp.ServerDisconnectedError):
                    reconnected = True
                    continue
                raise ApiConnectionError(f"{method} {url}: {_describe(exc)}") from exc
            if 200 <= status < 300:
                return _decode(raw) if decode else None
            if status == 401 and not renewed and self.config.refused():
                renewed = True
                continue
            retry_after = _seconds(retry_value)
            if (status == 429 or status >= 500) and retry_after is not None and attempts < self.max_retries:
                attempts += 1
                await asyncio.sleep(retry_after)
                continue
            raise error_from_status(_decode(raw), status, retry_after=retry_after)

    async def get(self, path: str, params: Mapping[str, str] | None = None) -> Any:
        return await self.request("GET", path, params=params)

    # -- watches ---------------------------------------------------------------------------------
    async def watch(self, path: str, params: Mapping[str, str]) -> AsyncGenerator[dict[str, Any], None]:
        """Stream a watch: one decoded event (``{"type": …, "object": …}``) per line, until the server
        ends the stream. Close it with ``contextlib.aclosing`` when leaving early."""
        async with contextlib.aclosing(self.watch_batches(path, params)) as batches:
            async for batch in batches:
                for event in batch:
                    yield event

    async def watch_batches(
        self, path: str, params: Mapping[str, str]
    ) -> AsyncGenerator[list[dict[str, Any]], None]:
        """The same stream, as the events that arrived together: each batch holds the whole lines of
        one read from the socket, in order (a busy server sends several per read). A line that does
        not decode ends the stream after the events before it were given."""
        query = {**params, "watch": "true"}
        url = self.base + path
        self.throttled += await self.limiter.acquire()
        headers = await self._headers(None)
        self.requests += 1
        try:
            seconds = float(query.get("timeoutSeconds") or 0)
        except ValueError:
            seconds = 0.0
        # The server ends the stream after timeoutSeconds; a stream that outlives it by a minute is
        # a dead connection.
        timeout = aiohttp.ClientTimeout(
            total=seconds + self.timeout if seconds > 0 else None, sock_connect=self.timeout
        )
        loads = orjson.loads
        try:
            async with self.session.get(
                url, params=query, headers=headers, timeout=timeout, **self._request_kwargs
            ) as resp:
                if resp.status != 200:
                    raw = await resp.read()
                    if resp.status == 401:
                        self.config.refused()
                    raise error_from_status(_decode(raw), resp.status, retry_after=_retry_after(resp.headers))
                buffer = b""
                async for chunk in resp.content.iter_any():
                    buffer = buffer + chunk if buffer else chunk
                    if b"\n" not in chunk:
                        continue
                    lines = buffer.split(b"\n")
                    buffer = lines.pop()
                    batch: list[dict[str, Any]] = []
                    for line in lines:
                        if line and not line.isspace():
                            try:
                                batch.append(loads(line))
                            except orjson.JSONDecodeError:
                                if batch:
                                    yield batch
                                raise
                    if batch:
                        yield batch
                if buffer.strip():
                    yield [loads(buffer)]
        except _CONNECTION_ERRORS as exc:
            raise ApiConnectionError(f"watch {url}: {_describe(exc)}") from exc
        except orjson.JSONDecodeError as exc:
            raise ApiConnectionError(f"watch {url}: a malformed event ({exc})") from exc


def _describe(exc: BaseException) -> str:
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
