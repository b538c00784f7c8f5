"""The watch stream of a resource: the initial state (unless resumed from a resourceVersion), then
each change as ADDED / MODIFIED / DELETED lines, bookmarks, and ERROR when history is gone."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import orjson
from aiohttp import web

from kubesched.apiserver.convert import served
from kubesched.apiserver.handlers.get import matchers
from kubesched.apiserver.handlers.responses import matches, sort_key, view, wants_table
from kubesched.apiserver.query import Match
from kubesched.apiserver.tables import TableOptions, table
from kubesched.registry.errors import bad_request, gone
from kubesched.registry.strategy import Resource, Strategy
from kubesched.store.base import EventType, Obj, WatchEvent
from kubesched.store.sqlite import TooOld

if TYPE_CHECKING:
    from kubesched.apiserver.app import ApiServer

#: Upstream caps a watch at a random 30 to 60 minutes; one fixed cap is enough here.
MAX_WATCH_SECONDS = 1800
#: After a watch has sent changes, how long it waits to gather the next ones into one write.
WATCH_BATCH_SECONDS = 0.005


async def watch(
    server: ApiServer, request: web.Request, strategy: Strategy, namespace: str | None
) -> web.StreamResponse:
    q = request.query
    labels, fields = matchers(request, strategy)
    try:
        timeout = float(q.get("timeoutSeconds") or MAX_WATCH_SECONDS)
    except ValueError:
        raise bad_request(f"timeoutSeconds: Invalid value: {q.get('timeoutSeconds')!r}") from None
    timeout = max(0.0, min(timeout, MAX_WATCH_SECONDS))
    rv_text = q.get("resourceVersion") or ""
    start_rv: int | None = None
    if rv_text not in ("", "0"):
        if not rv_text.isdigit():
            raise bad_request(f'resourceVersion: Invalid value: "{rv_text}": must be a non-negative integer')
        start_rv = int(rv_text)
    options = wants_table(request)
    resp = web.StreamResponse(status=200, headers={"Content-Type": "application/json"})
    resp.enable_chunked_encoding()
    await resp.prepare(request)
    stream = _Stream(server, strategy, resp, namespace, labels, fields, table=options)
    bookmarks = q.get("allowWatchBookmarks") in ("1", "true", "True")
    try:
        await stream.run(start_rv, time.monotonic() + timeout, bookmarks)
    except (ConnectionResetError, ConnectionError):
        return resp
    with contextlib.suppress(ConnectionError):
        await resp.write_eof()
    return resp


class _Stream:
    """One watch's lines, written a batch at a time."""

    def __init__(
        self,
        server: ApiServer,
        strategy: Strategy,
        resp: web.StreamResponse,
        namespace: str | None,
        labels: Match | None,
        fields: Match | None,
        *,
        table: TableOptions | None,
    ) -> None:
        self.server = server
        self.strategy = strategy
        self.res = strategy.resource
        self.resp = resp
        self.namespace = namespace
        self.labels = labels
        self.fields = fields
        #: The Table each event's object is sent as (None: the object itself); the column
        #: definitions go with the first one only, as upstream's watch sends them.
        self.table = table
        self.headers = True
        self.pending: list[bytes] = []

    def line(self, kind: str, obj: Mapping[str, Any]) -> None:
        body = obj
        if self.table is not None and kind not in ("ERROR", "BOOKMARK"):
            list_meta = {"resourceVersion": obj["metadata"].get("resourceVersion", "")}
            body = table(self.strategy, [obj], list_meta, self.table, headers=self.headers)
            self.headers = False
        self.pending.append(orjson.dumps({"type": kind, "object": body}) + b"\n")

    def change_line(self, kind: str, obj: Mapping[str, Any], rv: int) -> None:
        # Every watch of this group version sends the change in the same bytes (unless it wants
        # tables): encode it once.
        if self.table is not None:
            self.line(kind, obj)
            return
        lines = self.server.watch_lines
        key = (rv, kind, self.res.group, self.res.version)
        data = lines.get(key)
        if data is None:
            data = lines[key] = orjson.dumps({"type": kind, "object": obj}) + b"\n"
        self.pending.append(data)

    async def flush(self) -> None:
        # One write per batch of events: a burst of changes costs one TLS record, not one each.
        if self.pending:
            data = b"".join(self.pending)
            self.pending.clear()
            await self.resp.write(data)

    async def send(self, kind: str, obj: Mapping[str, Any]) -> None:
        self.line(kind, obj)
        await self.flush()

    async def initial(self) -> int:
        """Send the objects there are now as ADDED; returns the resourceVersion they are at."""
        server, res = self.server, self.res
        items, start_rv = server.store.list_with_version(res.store_kind)
        await server.read_committed()
        for obj in sorted(items, key=sort_key):
            served_obj = view(res, obj)
            if matches(served_obj, self.namespace, self.labels, self.fields):
                self.line("ADDED", served_obj)
        await self.flush()
        return start_rv

    async def run(self, start_rv: int | None, deadline: float, bookmarks: bool) -> None:
        server, res = self.server, self.res
        rv = await self.initial() if start_rv is None else start_rv
        last_sent = time.monotonic()
        interval = server.bookmark_interval
        while True:
            changed = server.changed_event(res.store_kind)
            try:
                events = server.store.changes_since(rv)
            except TooOld as exc:
                await self.send("ERROR", gone(str(exc)).status())
                return
            for event in events:
                rv = int(event.obj["metadata"]["resourceVersion"])
                if event.kind != res.store_kind:
                    continue
                typed = self.event_for(event, rv)
                if typed is not None:
                    self.change_line(typed[0], typed[1], rv)
            sent = bool(self.pending)
            if sent:
                await self.flush()
                last_sent = time.monotonic()
            now = time.monotonic()
            if now >= deadline:
                return
            if sent:
                # Changes that follow within a few milliseconds go out in the next write together:
                # under load a stream costs a write per batch, not per change, and an isolated
                # change still goes out at once.
                await asyncio.sleep(min(WATCH_BATCH_SECONDS, deadline - now))
            if events:
                continue
            if bookmarks and now - last_sent >= interval:
                await self.send(
                    "BOOKMARK",
                    {
                        "kind": res.kind,
                        "apiVersion": res.group_version,
                        "metadata": {"resourceVersion": str(rv)},
                    },
                )
                last_sent = now
            wait = deadline - now
            if bookmarks:
                wait = min(wait, max(0.01, interval - (now - last_sent)))
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(wait):
                    await changed.wait()

    def event_for(self, event: WatchEvent, rv: int) -> tuple[str, dict[str, Any]] | None:
        """What a filtered watch sees of one change: an object that starts matching is ADDED, one
        that stops matching DELETED (as upstream's filtered watch)."""
        namespace, labels, fields = self.namespace, self.labels, self.fields
        now_view = _served_view(self.server, event.obj, rv, False, self.res)
        now = matches(now_view, namespace, labels, fields)
        if event.type == EventType.DELETED:
            return ("DELETED", now_view) if now else None
        if event.type == EventType.ADDED:
            return ("ADDED", now_view) if now else None
        before = event.old is not None and matches(
            _served_view(self.server, event.old, rv, True, self.res), namespace, labels, fields
        )
        if now and before:
            return ("MODIFIED", now_view)
        if now:
            return ("ADDED", now_view)
        if before:
            return ("DELETED", now_view)
        return None


def _served_view(server: ApiServer, obj: Obj, rv: int, old: bool, res: Resource) -> dict[str, Any]:
    """``served`` of a change's object (``old``: its previous state), built once per change."""
    views = server.watch_views
    key = (rv, old, res.group, res.version)
    served_obj = views.get(key)
    if served_obj is None:
        served_obj = views[key] = served(dict(obj), res.group, res.version)
    return served_obj
