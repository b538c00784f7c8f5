"""A durable cluster store: the in-memory store's objects and admission, written through to SQLite.

Every object lives in one row (kind, namespace, name → resourceVersion, JSON); the database runs in
WAL mode and each write is committed before the call returns (a write inside
:meth:`SqliteStore.transaction`, before the block ends), so an acknowledged write survives the process
being killed. ResourceVersions continue after a restart: the last one handed out (also by a delete,
which leaves no row) is kept in the ``meta`` table.

A write changes memory under the store's lock and leaves its row to be committed; the commit runs
outside that lock, under the database's own, and takes every row left so far, whoever's (a group
commit, as databases write their logs). So a thread waiting for the disk holds up no other thread's
reads or writes in memory, and writes that arrive together share one commit. Changes reach the
history, the watches and the listeners only once committed, in resourceVersion order. A read of
memory may see a write whose commit is still under way: whoever lets such a read out (the API
server) first waits for :meth:`SqliteStore.pending_generation` to be committed.

Reads are served from memory (the rows are loaded once when the store opens). A bounded history of
recent changes, each stamped with its resourceVersion, lets API watches start from a version;
a version older than the history is "too old" (HTTP 410), as etcd's compaction makes it upstream.
"""

from __future__ import annotations

import bisect
import builtins
import contextlib
import functools
import itertools
import sqlite3
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, ParamSpec, TypeVar

import orjson

from kubesched.store.base import (
    AlreadyExists,
    EventType,
    NotFound,
    Obj,
    StoreError,
    Watch,
    WatchEvent,
    object_key,
)
from kubesched.store.memory import MemoryStore

P = ParamSpec("P")
R = TypeVar("R")

#: Changes kept for watches that start from a resourceVersion.
DEFAULT_HISTORY = 100_000
#: client-go's events broadcaster ends a series that saw nothing isomorphic for six minutes.
SERIES_WINDOW = 6 * 60.0
#: How many series are remembered before those that ended are forgotten.
_SERIES_KEPT = 10_000

#: The objects table. A table keyed by rowid with the key in its own index, rather than a
#: ``WITHOUT ROWID`` table clustered on the key: in the latter a row of more than about 1 KB (a
#: bound, running pod) spills into overflow pages on every write and each write lands in the
#: middle of the key order; here a replaced row is appended at the end and the key index holds
#: only the short key (bench/sqlite_rows.py: about 40 % less CPU for the served write mix).
_OBJECTS = """
CREATE TABLE IF NOT EXISTS {name} (
    kind TEXT NOT NULL,
    namespace TEXT NOT NULL,
    name TEXT NOT NULL,
    rv INTEGER NOT NULL,
    data BLOB NOT NULL,
    PRIMARY KEY (kind, namespace, name)
);
"""
_SCHEMA = (
    _OBJECTS.format(name="objects")
    + "CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value INTEGER NOT NULL);\n"
)


#: Rows one statement writes at most (SQLite takes up to 32766 parameters, five a row).
_ROWS_PER_STATEMENT = 500


def _convert_clustered_table(db: sqlite3.Connection) -> None:
    """Move the objects of a database written by an earlier version (a ``WITHOUT ROWID`` table)
    into the table :data:`_OBJECTS` describes, once, in one transaction."""
    row = db.execute("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = 'objects'").fetchone()
    if row is None or "WITHOUT ROWID" not in str(row[0]).upper():
        return
    db.execute("BEGIN")
    try:
        db.execute("DROP TABLE IF EXISTS objects_converted")
        db.execute(_OBJECTS.format(name="objects_converted"))
        db.execute("INSERT INTO objects_converted SELECT kind, namespace, name, rv, data FROM objects")
        db.execute("DROP TABLE objects")
        db.execute("ALTER TABLE objects_converted RENAME TO objects")
    except BaseException:
        db.execute("ROLLBACK")
        raise
    db.execute("COMMIT")


@functools.lru_cache(maxsize=64)
def _upsert(rows: int) -> str:
    values = ", ".join(["(?, ?, ?, ?, ?)"] * rows)
    return f"INSERT OR REPLACE INTO objects (kind, namespace, name, rv, data) VALUES {values}"


@functools.lru_cache(maxsize=64)
def _delete(rows: int) -> str:
    keys = ", ".join(["(?, ?, ?)"] * rows)
    return f"DELETE FROM objects WHERE (kind, namespace, name) IN (VALUES {keys})"


class StoreLocked(StoreError):
    """The database is held by another process: one server per data directory."""


class PendingCommit:
    """The writes a thread made inside :meth:`SqliteStore.deferring`: committed once
    ``SqliteStore.sync(generation)`` returns (0: there were none)."""

    __slots__ = ("generation",)

    def __init__(self) -> None:
        self.generation = 0


class CommitFailed(StoreError):
    """A write could not be committed: memory is ahead of the database until the server restarts."""


class TooOld(Exception):
    """A watch asked for changes from a resourceVersion the history no longer holds."""


class SqliteStore(MemoryStore):
    """ClusterStore persisted in a SQLite database; safe to call from several threads."""

    def __init__(
        self, path: str | Path, now: Callable[[], float] | None = None, history: int = DEFAULT_HISTORY
    ) -> None:
        super().__init__(now=now)
        if not hasattr(self, "lock"):
            self.lock = threading.RLock()
        if not hasattr(self, "_write_listeners"):
            self._write_listeners: list[Callable[[], None]] = []
        self._kind_listeners: list[Callable[[str], None]] = []
        #: Per isomorphic event (action, reason, reporter, object), the Event of its series and when
        #: it was last seen.
        #: Each series' Event name and when it was last observed, least recently observed first.
        self._event_series: OrderedDict[tuple[Any, ...], tuple[str, float]] = OrderedDict()
        self.path = Path(path)
        self._db = sqlite3.connect(str(self.path), check_same_thread=False, isolation_level=None)
        # One process serves a database: holding its lock from the first write to close spares
        # every commit the file-lock calls that sharing it takes (and keeps a second server off it).
        self._db.execute("PRAGMA locking_mode=EXCLUSIVE")
        try:
            self._db.execute("PRAGMA journal_mode=WAL")
        except sqlite3.OperationalError as exc:
            self._db.close()
            if "locked" not in str(exc):
                raise
            raise StoreLocked(
                f"{self.path} is in use by another process (a kubesched serve already runs on it)"
            ) from None
        # A commit reaches the OS before the call returns, which is what surviving a killed process
        # needs; an fsync per write would only add power-loss safety at a large cost.
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.executescript(_SCHEMA)
        _convert_clustered_table(self._db)
        last = 0
        for kind, namespace, name, rv, data in self._db.execute(
            "SELECT kind, namespace, name, rv, data FROM objects ORDER BY rv"
        ):
            obj = orjson.loads(data)
            MemoryStore._put(self, (kind, namespace, name), obj)
            last = max(last, int(rv))
        row = self._db.execute("SELECT value FROM meta WHERE key = 'rv'").fetchone()
        if row is not None:
            last = max(last, int(row[0]))
        self._last_rv = last
        self._rv = itertools.count(last + 1)
        self._max_history = history
        #: Changes beyond ``history`` kept between trims (each trim moves the kept ones' pointers).
        self._history_slack = max(1, history // 64)
        self._history_rvs: list[int] = []
        self._history: list[WatchEvent] = []
        #: Watches may start from any version after this one (older ones were dropped or predate
        #: this process).
        self._oldest_rv = last
        # Event names carry a sequence number; starting it from the clock keeps the names of this
        # run clear of those an earlier run stored (upstream names events by UnixNano too).
        self._event_seq = itertools.count(time.time_ns())
        #: Held while rows are written and committed and their changes published. Taken before
        #: the store's lock, never while holding it (writes inside a transaction do not commit).
        self._db_lock = threading.Lock()
        #: Rows written in memory and not committed yet, in resourceVersion order: the key, the
        #: resourceVersion and the object's JSON (None: a delete).
        self._rows: builtins.list[tuple[tuple[str, str, str], int, bytes | None]] = []
        #: Their changes, published once committed.
        self._unpublished: builtins.list[WatchEvent] = []
        #: How many of those rows and changes belong to finished writes (a transaction's join
        #: when it ends), and the generation of the last finished write.
        self._sealed_rows = 0
        self._sealed_changes = 0
        self._sealed = 0
        #: The generation committed so far.
        self._committed = 0
        self._transaction_depth = 0
        #: Changes taken from ``_unpublished`` by a commit under way, not published yet.
        self._in_flight = False
        #: Set when a commit failed: memory is ahead of the database from then on.
        self._failure: str | None = None
        #: Per thread, the writes made inside :meth:`deferring`.
        self._deferral = threading.local()

    # -- persistence -----------------------------------------------------------------------------
    def _put(self, key: tuple[str, str, str], obj: Obj) -> None:
        rv = int(obj["metadata"]["resourceVersion"])
        # Encoded now, before memory changes: an object that cannot be stored fails its own write,
        # not the commit it would share with others.
        self._rows.append((key, rv, orjson.dumps(obj)))
        self._last_rv = max(self._last_rv, rv)
        MemoryStore._put(self, key, obj)

    def _emit(self, event: WatchEvent) -> None:
        self._unpublished.append(event)

    def _seal(self) -> int:
        """Under the lock, at the end of a write: its rows and changes may be committed now (not
        inside a transaction, whose rows wait for its end). Returns the generation to wait for."""
        if self._transaction_depth:
            return 0
        if len(self._rows) != self._sealed_rows or len(self._unpublished) != self._sealed_changes:
            self._sealed_rows = len(self._rows)
            self._sealed_changes = len(self._unpublished)
            self._sealed += 1
        return self._sealed

    def _finish(self, generation: int) -> None:
        """The end of a write: commit it, unless the thread defers its commits."""
        deferred = getattr(self._deferral, "pending", None)
        if deferred is not None:
            deferred.generation = max(deferred.generation, generation)
        else:
            self._sync(generation)

    @contextlib.contextmanager
    def deferring(self) -> Iterator[PendingCommit]:
        """Writes this thread makes inside return before they are committed; the caller commits
        them with :meth:`sync` (``sync(pending.generation)``) before it lets them out (answers a
        request, say). A write left uncommitted is committed by the next commit of any thread."""
        previous = getattr(self._deferral, "pending", None)
        pending = PendingCommit()
        self._deferral.pending = pending
        try:
            yield pending
        finally:
            self._deferral.pending = previous
            if previous is not None:
                previous.generation = max(previous.generation, pending.generation)

    def sync(self, generation: int | None = None) -> None:
        """Return once the writes up to ``generation`` (every finished write when None) are
        committed and published."""
        if generation is None:
            with self.lock:
                generation = self._seal()
        self._sync(generation)

    def committed(self, generation: int) -> bool:
        return self._committed >= generation

    @property
    def healthy(self) -> bool:
        """False once a commit failed (until the server restarts)."""
        return self._failure is None

    def pending_generation(self) -> int:
        """The generation to wait for before letting out what was just read (0: everything in
        memory is committed). Whatever a read saw in memory was sealed by then (an open
        transaction holds the lock readers need), so committing this generation commits it."""
        sealed = self._sealed
        return sealed if sealed > self._committed else 0

    def _sync(self, generation: int) -> None:
        """Return once the writes up to ``generation`` are committed and published: commit them
        (and every other finished write waiting) unless another thread's commit already has."""
        if not generation or self._committed >= generation:
            return
        with self._db_lock:
            if self._committed >= generation:
                return
            with self.lock:
                if self._failure is not None:
                    raise CommitFailed(self._failure)
                rows, changes, upto = (
                    self._rows[: self._sealed_rows],
                    self._unpublished[: self._sealed_changes],
                    self._sealed,
                )
                del self._rows[: self._sealed_rows]
                del self._unpublished[: self._sealed_changes]
                self._sealed_rows = self._sealed_changes = 0
                self._in_flight = bool(changes)
            try:
                self._write_rows(rows)
            except BaseException as exc:
                with self.lock:
                    self._in_flight = False
                    self._failure = (
                        f"{self.path}: a write could not be committed ({exc}); the served state is "
                        "ahead of the database, restart to continue from what was committed"
                    )
                raise CommitFailed(self._failure) from exc
            with self.lock:
                for event in changes:
                    self._publish(event)
                self._in_flight = False
                # Set once published: whoever sees a generation committed sees its changes too.
                self._committed = upto

    def _publish(self, event: WatchEvent) -> None:
        rv = int(event.obj["metadata"]["resourceVersion"])
        self._history_rvs.append(rv)
        self._history.append(event)
        # Trimmed a little at a time rather than halved now and then: the memory of the changes
        # dropped is reused at once by the changes that follow, so a long-lived server's memory
        # stays level instead of growing through the allocator's fragmentation (a history freed a
        # hundred thousand entries at a time leaves its pages half used by objects that live on).
        if len(self._history) > self._max_history + self._history_slack:
            cut = len(self._history) - self._max_history
            self._oldest_rv = self._history_rvs[cut - 1]
            del self._history[:cut]
            del self._history_rvs[:cut]
        for w in self._watches:
            w.push(event)
        for listener in self._write_listeners:
            listener()
        for kind_listener in self._kind_listeners:
            kind_listener(event.kind)

    def _write_rows(self, rows: builtins.list[tuple[tuple[str, str, str], int, bytes | None]]) -> None:
        # The last write of each key is what the database must hold: one statement writes them
        # all (a statement per row would cost several times as much, each releasing the GIL).
        last: dict[tuple[str, str, str], tuple[int, bytes | None]] = {}
        for key, rv, data in rows:
            last[key] = (rv, data)
        puts = [(key, rv, data) for key, (rv, data) in last.items() if data is not None]
        gone = [key for key, (_, data) in last.items() if data is None]
        statements: builtins.list[tuple[str, builtins.list[Any]]] = []
        for i in range(0, len(puts), _ROWS_PER_STATEMENT):
            chunk = puts[i : i + _ROWS_PER_STATEMENT]
            values: builtins.list[Any] = []
            for key, rv, data in chunk:
                values += (key[0], key[1], key[2], rv, data)
            statements.append((_upsert(len(chunk)), values))
        for i in range(0, len(gone), _ROWS_PER_STATEMENT):
            chunk_keys = gone[i : i + _ROWS_PER_STATEMENT]
            statements.append((_delete(len(chunk_keys)), [part for key in chunk_keys for part in key]))
        if gone:
            # A delete leaves no row: the meta table keeps the versions handed out going up.
            statements.append(("INSERT OR REPLACE INTO meta (key, value) VALUES ('rv', ?)", [rows[-1][1]]))
        db = self._db
        if len(statements) == 1:
            db.execute(*statements[0])
            return
        db.execute("BEGIN")
        try:
            for sql, params in statements:
                db.execute(sql, params)
        except BaseException:
            db.execute("ROLLBACK")
            raise
        db.execute("COMMIT")

    @contextlib.contextmanager
    def transaction(self) -> Iterator[None]:
        """Writes made inside share one commit (a commit costs more than the write it ends).

        The store's lock is held throughout, so no other thread writes in between, and the changes
        reach the history, the watches and the listeners only after the commit, which is done when
        the block ends. Whoever writes inside must not let what it wrote out (answer a request,
        say) before the block ends."""
        generation = 0
        try:
            with self.lock:
                self._transaction_depth += 1
                try:
                    yield
                finally:
                    self._transaction_depth -= 1
                    generation = self._seal()
        finally:
            # What was written is committed even when the block failed part way: memory already
            # holds it.
            self._finish(generation)

    # -- ClusterStore (locked) -------------------------------------------------------------------
    def _committing(self, write: Callable[P, R], /, *args: P.args, **kwargs: P.kwargs) -> R:
        """Make ``write`` in memory under the lock, then commit it (unless the thread defers)."""
        with self.lock:
            out = write(*args, **kwargs)
            generation = self._seal()
        self._finish(generation)
        return out

    def create(self, obj: Obj) -> Obj:
        return self._committing(super().create, obj)

    def update(self, obj: Obj) -> Obj:
        return self._committing(super().update, obj)

    def delete(self, kind: str, namespace: str | None, name: str) -> Obj:
        """Remove the object; the DELETED event carries it with a new resourceVersion, as upstream."""
        return self._committing(self._delete_in_memory, kind, namespace, name)

    def _delete_in_memory(self, kind: str, namespace: str | None, name: str) -> Obj:
        key = object_key(kind, namespace, name)
        old = self._objects.get(key)
        if old is None:
            raise NotFound(f"{kind} {name} not found")
        rv = next(self._rv)
        self._rows.append((key, rv, None))
        self._last_rv = rv
        del self._objects[key]
        del self._by_kind[kind][key]
        gone = {**old, "metadata": {**old["metadata"], "resourceVersion": str(rv)}}
        self._emit(WatchEvent(EventType.DELETED, kind, gone))
        return gone

    def get(self, kind: str, namespace: str | None, name: str) -> Obj | None:
        with self.lock:
            return super().get(kind, namespace, name)

    def list(self, kind: str) -> list[Obj]:
        with self.lock:
            return super().list(kind)

    def watch(self, kinds: frozenset[str] | None = None) -> Watch:
        with self.lock:
            w = Watch(kinds, self._listed_ahead)
            self._watches.append(w)
            return w

    def _listed_ahead(self) -> int:
        """Under the lock: the resourceVersion memory shows while changes up to it are still to be
        published (0 when none is)."""
        return self._last_rv if self._unpublished or self._in_flight else 0

    def bind(self, namespace: str, name: str, uid: str, node_name: str) -> Obj:
        return self._committing(super().bind, namespace, name, uid, node_name)

    def update_pod_condition(
        self, namespace: str, name: str, condition: Mapping[str, Any], nominated_node: str | None = None
    ) -> Obj | None:
        return self._committing(super().update_pod_condition, namespace, name, condition, nominated_node)

    def record_event(
        self, regarding: Obj, event_type: str, reason: str, action: str, note: str, reporter: str
    ) -> None:
        self._committing(self._record_event_in_memory, regarding, event_type, reason, action, note, reporter)

    def _record_event_in_memory(
        self, regarding: Obj, event_type: str, reason: str, action: str, note: str, reporter: str
    ) -> None:
        """client-go's events broadcaster (``tools/events``): an event isomorphic to one recorded
        less than :data:`SERIES_WINDOW` before (same action, reason, reporting controller and
        object) joins that event's series (``series.count``, ``series.lastObservedTime``) instead
        of making another. Upstream writes a series' count every 30 minutes and when the series
        ends; here each occurrence updates it, so the count is current.

        kube-controller-manager's controllers (reporters named ``…-controller``) record through
        the older core/v1 recorder, whose correlator counts only events with the same message too:
        their ``Created pod: a`` and ``Created pod: b`` stay two Events."""
        meta = regarding.get("metadata") or {}
        namespace = str(meta.get("namespace") or "default")
        key: tuple[Any, ...] = (
            action,
            reason,
            reporter,
            regarding.get("kind"),
            namespace,
            meta.get("name"),
            meta.get("uid"),
        )
        if reporter.endswith("-controller"):
            key = (*key, event_type, note)
        now = self._now()
        series = self._event_series.get(key)
        if series is not None and now - series[1] <= SERIES_WINDOW:
            existing = MemoryStore.get(self, "Event", namespace, series[0])
            if existing is not None:
                count = int((existing.get("series") or {}).get("count") or 1) + 1
                observed = datetime.fromtimestamp(now, UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
                MemoryStore.update(
                    self, {**existing, "series": {"count": count, "lastObservedTime": observed}}
                )
                self._event_series[key] = (series[0], now)
                self._event_series.move_to_end(key)
                return
        # Series that ended (nothing isomorphic within the window) are forgotten, as upstream's
        # broadcaster finishes them, and at most _SERIES_KEPT are followed (the least recently
        # observed go first): each event costs the same however many came before it.
        while self._event_series:
            oldest = next(iter(self._event_series.values()))
            if now - oldest[1] <= SERIES_WINDOW and len(self._event_series) < _SERIES_KEPT:
                break
            self._event_series.popitem(last=False)
        for _ in range(3):
            try:
                super().record_event(regarding, event_type, reason, action, note, reporter)
                self._event_series[key] = (self._last_event_name, now)
                self._event_series.move_to_end(key)
                return
            except AlreadyExists:
                # Named after an event of an earlier run: skip past it.
                self._event_seq = itertools.count(time.time_ns())

    # -- API server support ----------------------------------------------------------------------
    def add_write_listener(self, listener: Callable[[], None]) -> None:
        """Call ``listener`` after every write is committed, on the committing thread, holding the
        store's lock; it must be quick and must not write to the store."""
        with self.lock:
            self._write_listeners.append(listener)

    def remove_write_listener(self, listener: Callable[[], None]) -> None:
        with self.lock:
            self._write_listeners = [f for f in self._write_listeners if f is not listener]

    def add_kind_listener(self, listener: Callable[[str], None]) -> None:
        """Call ``listener`` with the changed object's kind after every write, on the writing
        thread, holding the store's lock; it must be quick and must not write to the store."""
        with self.lock:
            self._kind_listeners.append(listener)

    def remove_kind_listener(self, listener: Callable[[str], None]) -> None:
        with self.lock:
            self._kind_listeners = [f for f in self._kind_listeners if f is not listener]

    @property
    def resource_version(self) -> int:
        """The latest resourceVersion handed out."""
        with self.lock:
            return self._last_rv

    def list_with_version(self, kind: str) -> tuple[builtins.list[Obj], int]:
        """A consistent listing and the resourceVersion it is as of."""
        with self.lock:
            return super().list(kind), self._last_rv

    @property
    def history_limit(self) -> int:
        """The changes the watch history keeps (it holds at least this many once that many were made)."""
        return self._max_history

    @property
    def history_size(self) -> int:
        """Changes held for watches that resume from a resourceVersion."""
        with self.lock:
            return len(self._history)

    def changes_since(self, rv: int, limit: int = 10_000) -> builtins.list[WatchEvent]:
        """Changes made after ``rv``, oldest first; :class:`TooOld` if some were already dropped."""
        with self.lock:
            if rv < self._oldest_rv:
                raise TooOld(f"too old resource version: {rv} ({self._oldest_rv + 1})")
            start = bisect.bisect_right(self._history_rvs, rv)
            return self._history[start : start + limit]

    def close(self) -> None:
        with self.lock:
            generation = self._seal()
        with contextlib.suppress(CommitFailed):
            self._sync(generation)
        with self._db_lock, self.lock:
            self._db.close()
