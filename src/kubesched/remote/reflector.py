"""Reflectors: list then watch each followed kind into the mirror store, as client-go's Reflector.

For one kind, a :class:`Reflector`:

1. lists the collection (``limit``/``continue`` pages, a consistent read) and makes the mirror's
   copy of the kind equal to it, emitting only the differences (the first list emits every object
   as ADDED); the list's ``resourceVersion`` is where the watch starts;
2. watches from that resourceVersion with ``allowWatchBookmarks=true`` and a ``timeoutSeconds``
   drawn between 5 and 10 minutes (client-go's spread, so that reflectors do not renew together);
   each ADDED/MODIFIED/DELETED is applied to the mirror (one that is not newer than the copy held is
   skipped, so replays never apply twice) and advances the resourceVersion; a BOOKMARK only
   advances it;
3. when the watch ends on its timeout it watches again from the last resourceVersion;
4. a ``410 Gone`` (as the watch's answer, or as an ERROR event: the version is older than the
   server keeps) relists, and the relist emits only the differences against the mirror;
5. when the server cannot be reached or cuts the stream, it waits (jittered exponential backoff:
   800 ms doubling up to 30 s, reset after 2 quiet minutes, as client-go's backoff manager) and
   watches again from the last resourceVersion; other refusals back off and relist.

A :class:`ReflectorSet` runs one reflector per kind the server serves and sets :attr:`synced` (a
``threading.Event``) once every initial list has been applied to the mirror.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from kubesched.remote.client import (
    ApiClient,
    ApiConnectionError,
    ApiError,
    Gone,
    TooManyRequests,
    error_from_status,
)
from kubesched.remote.discovery import FOLLOWED_KINDS, Discovery, Getter
from kubesched.remote.mirror import MirrorStore
from kubesched.store.base import EventType, StoreError

log = logging.getLogger(__name__)

#: Objects asked for per list page (client-go's pager default).
PAGE_SIZE = 500

#: The watch event types that change an object.
_CHANGES = frozenset({EventType.ADDED, EventType.MODIFIED, EventType.DELETED})

#: A watch that ends this soon without an event is treated as a failure (client-go: "very short watch").
SHORT_WATCH = 1.0


async def list_pages(
    client: Getter, path: str, selectors: Mapping[str, str], limit: int, kind: str
) -> tuple[list[dict[str, Any]], str]:
    """Every object of the collection at ``path`` and the list's resourceVersion, read ``limit`` at a
    time (all at once when 0). A continue token that expired mid-way (410) restarts the listing in
    one page, as client-go's pager does."""
    items: list[dict[str, Any]] = []
    params: dict[str, str] = {**selectors}
    if limit > 0:
        params["limit"] = str(limit)
    while True:
        try:
            page = await client.get(path, params)
        except Gone:
            if "continue" not in params:
                raise
            params = {**selectors}
            items = []
            continue
        if not isinstance(page, Mapping):
            raise ApiError(500, "InternalError", f"the {kind} list is not an object")
        items.extend(page.get("items") or [])
        meta = page.get("metadata") or {}
        token = meta.get("continue")
        if not token:
            return items, str(meta.get("resourceVersion") or "")
        params["continue"] = str(token)


class Backoff:
    """Jittered exponential backoff (client-go's ``NewExponentialBackoffManager(800ms, 30s, 2m, 2.0,
    1.0)``): each wait is the current step plus up to ``jitter`` times it at random; the step doubles
    up to ``cap``; after ``reset_after`` seconds without a wait it starts again from ``initial``."""

    def __init__(
        self,
        initial: float = 0.8,
        cap: float = 30.0,
        factor: float = 2.0,
        jitter: float = 1.0,
        reset_after: float = 120.0,
        rng: random.Random | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.initial = initial
        self.cap = cap
        self.factor = factor
        self.jitter = jitter
        self.reset_after = reset_after
        self._rng = rng or random.Random()
        self._clock = clock
        self._step = initial
        self._last = -float("inf")

    def next(self) -> float:
        """The next wait in seconds."""
        now = self._clock()
        if now - self._last > self.reset_after:
            self._step = self.initial
        self._last = now
        step = self._step
        self._step = min(self.cap, self._step * self.factor)
        return step + self._rng.random() * step * self.jitter if self.jitter > 0 else step

    def reset(self) -> None:
        self._step = self.initial


@dataclass
class ReflectorStats:
    lists: int = 0
    relists: int = 0
    watches: int = 0
    bookmarks: int = 0
    events: int = 0
    backoffs: int = 0
    gone: int = 0


class _Relist(Exception):
    """The watch cannot go on from its resourceVersion: list again."""


class Reflector:
    """Keeps one kind of the mirror equal to the server's."""

    def __init__(
        self,
        client: ApiClient,
        discovery: Discovery,
        kind: str,
        mirror: MirrorStore,
        *,
        page_size: int = PAGE_SIZE,
        watch_timeout: tuple[float, float] = (300.0, 600.0),
        backoff: Backoff | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        rng: random.Random | None = None,
        sleep: Callable[[float], Any] = asyncio.sleep,
    ) -> None:
        self.client = client
        self.discovery = discovery
        self.kind = kind
        self.info = discovery.info(kind)
        self.path = discovery.path(kind)
        self.mirror = mirror
        self.page_size = page_size
        self.watch_timeout = watch_timeout
        self.backoff = backoff or Backoff(rng=rng)
        self.selectors: dict[str, str] = {}
        if label_selector:
            self.selectors["labelSelector"] = label_selector
        if field_selector:
            self.selectors["fieldSelector"] = field_selector
        self._rng = rng or random.Random()
        self._sleep = sleep
        #: The resourceVersion the mirror holds this kind as of ("" before the first list).
        self.resource_version = ""
        self.synced = threading.Event()
        self.stats = ReflectorStats()
        #: The last error that made it back off or relist (for status reports).
        self.last_error: BaseException | None = None
        #: Whether any watch event (a bookmark included) came since the last list.
        self._progressed = False

    # -- the loop -------------------------------------------------------------------------------
    async def run(self) -> None:
        """List and watch until cancelled."""
        need_list = True
        while True:
            try:
                if need_list:
                    await self._list()
                    need_list = False
                await self._watch()
            except asyncio.CancelledError:
                raise
            except Gone as exc:
                self.stats.gone += 1
                log.info("%s: %s; listing again", self.kind, exc)
                self.last_error = exc
                need_list = True
                if not self._progressed:
                    await self._back_off(exc)  # refused before anything came since the list: do not spin
            except _Relist as exc:
                self.last_error = exc
                need_list = True
                await self._back_off(exc)
            except (ApiConnectionError, TooManyRequests) as exc:
                # Cannot reach the server (or it asks to slow down): wait, then carry on from where
                # the mirror is (a list that failed is retried, a watch resumes from its version).
                self.last_error = exc
                await self._back_off(exc)
            except StoreError as exc:  # any other refusal: wait, then list again
                self.last_error = exc
                need_list = True
                await self._back_off(exc)
            except Exception as exc:  # e.g. an unreadable token file: keep trying, loudly
                log.exception("%s: reflector failure", self.kind)
                self.last_error = exc
                need_list = True
                await self._back_off(exc)

    async def _back_off(self, exc: BaseException) -> None:
        wait = self.backoff.next()
        self.stats.backoffs += 1
        log.warning("%s: %s; retrying in %.1fs", self.kind, exc, wait)
        await self._sleep(wait)

    # -- list -----------------------------------------------------------------------------------
    async def _list(self) -> None:
        items, rv = await list_pages(self.client, self.path, self.selectors, self.page_size, self.kind)
        convert = self.discovery.convert
        kind = self.kind
        objects = [convert(kind, obj) for obj in items]
        self.mirror.replace(kind, objects)
        self.resource_version = rv
        if self.stats.lists:
            self.stats.relists += 1
        self.stats.lists += 1
        self._progressed = False
        self.synced.set()

    # -- watch ----------------------------------------------------------------------------------
    def _apply(self, changes: list[tuple[str, dict[str, Any]]]) -> None:
        """Apply the watched changes gathered so far (and forget them); the resourceVersion moves to
        the last one's."""
        if not changes:
            return
        self.mirror.apply_events(self.kind, changes)
        self.stats.events += len(changes)
        self._progressed = True
        rv = str((changes[-1][1].get("metadata") or {}).get("resourceVersion") or "")
        if rv:
            self.resource_version = rv
        changes.clear()

    async def _watch(self) -> None:
        """One watch from the current resourceVersion, until the server ends it."""
        low, high = self.watch_timeout
        timeout = int(low + self._rng.random() * (high - low)) if high > low else int(low)
        params = {
            **self.selectors,
            "resourceVersion": self.resource_version,
            "allowWatchBookmarks": "true",
            "timeoutSeconds": str(max(1, timeout)),
        }
        self.stats.watches += 1
        started = time.monotonic()
        seen = 0
        kind = self.kind
        convert = self.discovery.convert
        async with contextlib.aclosing(self.client.watch_batches(self.path, params)) as stream:
            async for batch in stream:
                seen += len(batch)
                # The changes that arrived together are applied to the mirror together: one lock,
                # one wake-up of the scheduler, in the server's order.
                changes: list[tuple[str, dict[str, Any]]] = []
                try:
                    for event in batch:
                        type_ = event.get("type")
                        obj = event.get("object")
                        if not isinstance(obj, dict):
                            raise ApiError(500, "InternalError", f"a {kind} watch event without an object")
                        if type_ == "BOOKMARK":
                            self._apply(changes)
                            rv = str((obj.get("metadata") or {}).get("resourceVersion") or "")
                            if rv:
                                self.resource_version = rv
                            self.stats.bookmarks += 1
                            self._progressed = True
                            continue
                        if type_ == "ERROR":
                            err = error_from_status(obj)
                            if isinstance(err, Gone):
                                raise err
                            raise _Relist(f"watch error {err}")
                        if type_ not in _CHANGES:
                            log.warning("%s: ignoring a watch event of type %r", kind, type_)
                            continue
                        convert(kind, obj)
                        changes.append((type_, obj))
                finally:
                    self._apply(changes)
        if seen == 0 and time.monotonic() - started < SHORT_WATCH:
            raise ApiConnectionError(f"the {kind} watch ended at once without an event")


class ReflectorSet:
    """One reflector per followed kind the server serves, on the calling event loop."""

    def __init__(
        self,
        client: ApiClient,
        discovery: Discovery,
        mirror: MirrorStore,
        kinds: Iterable[str] = FOLLOWED_KINDS,
        *,
        selectors: Mapping[str, Mapping[str, str]] | None = None,
        **options: Any,
    ) -> None:
        self.mirror = mirror
        self.discovery = discovery
        self.skipped = [k for k in kinds if not discovery.has(k)]
        self.reflectors: dict[str, Reflector] = {}
        for kind in kinds:
            if discovery.has(kind):
                extra = dict((selectors or {}).get(kind) or {})
                self.reflectors[kind] = Reflector(
                    client,
                    discovery,
                    kind,
                    mirror,
                    label_selector=extra.get("labelSelector"),
                    field_selector=extra.get("fieldSelector"),
                    **options,
                )
        #: Set once every reflector's first list was applied to the mirror.
        self.synced = threading.Event()
        self._tasks: list[asyncio.Task[None]] = []

    def has_synced(self) -> bool:
        return self.synced.is_set()

    async def start(self) -> None:
        """Start every reflector as a task of the running loop (returns at once)."""
        if self._tasks:
            raise RuntimeError("the reflectors are already running")
        for kind, reflector in self.reflectors.items():
            self._tasks.append(asyncio.create_task(reflector.run(), name=f"reflector-{kind}"))
        self._tasks.append(asyncio.create_task(self._watch_synced(), name="reflectors-synced"))

    async def _watch_synced(self) -> None:
        for reflector in self.reflectors.values():
            while not reflector.synced.is_set():
                await asyncio.sleep(0.01)
        self.synced.set()

    async def wait_synced(self, timeout: float | None = None) -> bool:
        """Wait (on the loop) until every initial list is applied; False on timeout."""
        try:
            async with asyncio.timeout(timeout):
                while not self.synced.is_set():
                    await asyncio.sleep(0.01)
        except TimeoutError:
            return False
        return True

    async def stop(self) -> None:
        tasks, self._tasks = self._tasks, []
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    def resource_versions(self) -> dict[str, str]:
        return {kind: r.resource_version for kind, r in self.reflectors.items()}
