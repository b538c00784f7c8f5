"""Shared informers: one store watch for every kind, each object parsed once, listers and handlers.

As client-go's SharedInformerFactory: whoever needs a kind (a scheduler, a plugin through its
handle, the simulation's bookkeeping) asks the factory for that kind's :class:`Informer`, registers
handlers and reads through its lister; nobody else opens a watch on the store. Every event is
parsed into its typed view once and handed to every subscriber in registration order.

Events are applied when the driver calls :meth:`InformerFactory.pump` — between scheduling steps, on
the driver's own thread — so a scheduling cycle or a batch session reads a lister that does not move
under it, while the store itself may take writes from other threads at any time.
"""

from __future__ import annotations

import builtins
import logging
import threading
from collections.abc import Callable, Iterable, Mapping
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from kubesched.store.base import (
    CLUSTER_SCOPED_KINDS,
    ClusterStore,
    EventType,
    Obj,
    Watch,
    WatchEvent,
    object_key,
)

log = logging.getLogger(__name__)

V = TypeVar("V")
T = TypeVar("T")

#: Parses a stored object into its typed view; gets the previous view of the same object (None for
#: a new one) so that unchanged parts can be reused. Raises on an object it cannot parse.
Parser = Callable[[Obj, Any], Any]

Key = tuple[str, str, str]


# Not frozen: one is made per event and per replay, and a frozen dataclass costs three times as much
# to build. Handlers treat it as read-only.
@dataclass(slots=True)
class Change(Generic[V]):
    """One delivered event: the raw objects and their typed views.

    ``view`` is the parsed new object (the last state for DELETED); ``old_view`` the previous view,
    if the informer had one. A view is None when the object did not parse (a warning was logged).
    """

    type: EventType
    kind: str
    obj: Obj
    old: Obj | None
    view: V | None
    old_view: V | None


Handler = Callable[[Change[Any]], None]
IndexFunc = Callable[[Any], Iterable[str]]


def _identity(obj: Obj, _previous: Any) -> Obj:
    return obj


class Informer(Generic[V]):
    """One kind's cache (the lister) and its subscribers."""

    def __init__(self, kind: str, parse: Parser) -> None:
        self.kind = kind
        self._cluster_scoped = kind in CLUSTER_SCOPED_KINDS
        self._parse = parse
        self._raw: dict[Key, Obj] = {}
        self._views: dict[Key, V] = {}
        self._by_namespace: dict[str, dict[Key, V]] = {}
        self._handlers: list[Handler] = []
        self._indexers: dict[str, IndexFunc] = {}
        self._indexes: dict[str, dict[str, dict[Key, V]]] = {}
        #: Per index, the values each object is filed under (so a change touches only its buckets).
        self._indexed_as: dict[str, dict[Key, tuple[str, ...]]] = {}

    # -- subscribers -----------------------------------------------------------------------------
    def add_handler(self, handler: Handler, *, replay: bool = True) -> None:
        """Subscribe to this kind's changes. With ``replay``, the handler first gets an ADDED for
        every object already known (as client-go replays the store to a late handler)."""
        self._handlers.append(handler)
        if replay:
            for key, obj in list(self._raw.items()):
                handler(Change(EventType.ADDED, self.kind, obj, None, self._views.get(key), None))

    def remove_handler(self, handler: Handler) -> None:
        """Unsubscribe (a consumer that is replaced, e.g. a plugin cache of a handle given up)."""
        self._handlers = [h for h in self._handlers if h is not handler]

    def add_index(self, name: str, func: IndexFunc) -> None:
        """Index the views by the values ``func`` gives (``by_index(name, value)`` then lists them)."""
        self._indexers[name] = func
        self._indexes[name] = {}
        self._indexed_as[name] = {}
        for key, view in self._views.items():
            self._file(name, key, view)

    def _file(self, name: str, key: Key, view: V | None) -> None:
        """Move ``key`` from the buckets it was filed under to those of ``view`` (none: removed)."""
        index, filed = self._indexes[name], self._indexed_as[name]
        for value in filed.pop(key, ()):
            bucket = index.get(value)
            if bucket is not None:
                bucket.pop(key, None)
                if not bucket:
                    del index[value]
        if view is not None:
            values = tuple(self._indexers[name](view))
            for value in values:
                index.setdefault(value, {})[key] = view
            filed[key] = values

    # -- lister ----------------------------------------------------------------------------------
    def get(self, namespace: str | None, name: str) -> V | None:
        return self._views.get(object_key(self.kind, namespace, name))

    def get_raw(self, namespace: str | None, name: str) -> Obj | None:
        return self._raw.get(object_key(self.kind, namespace, name))

    def list(self) -> list[V]:
        return list(self._views.values())

    def list_raw(self) -> builtins.list[Obj]:
        return list(self._raw.values())

    def in_namespace(self, namespace: str) -> builtins.list[V]:
        return list(self._by_namespace.get(namespace, {}).values())

    def by_index(self, name: str, value: str) -> builtins.list[V]:
        return list(self._indexes[name].get(value, {}).values())

    def __len__(self) -> int:
        return len(self._raw)

    # -- applying events -------------------------------------------------------------------------
    def _view_of(self, obj: Obj, previous: V | None) -> V | None:
        try:
            view: V = self._parse(obj, previous)
        except Exception as exc:  # a bad object must not stop the scheduler
            meta = obj.get("metadata") or {}
            log.warning("ignoring %s %s/%s: %s", self.kind, meta.get("namespace"), meta.get("name"), exc)
            return None
        return view

    def _index(self, key: Key, view: V | None) -> None:
        """File ``view`` under ``key`` (None: the key leaves the lister)."""
        ns = key[1]
        if view is not None:
            self._views[key] = view
            bucket = self._by_namespace.get(ns)
            if bucket is None:
                bucket = self._by_namespace[ns] = {}
            bucket[key] = view
        else:
            self._views.pop(key, None)
            bucket = self._by_namespace.get(ns)
            if bucket is not None:
                bucket.pop(key, None)
        for name in self._indexers:
            self._file(name, key, view)

    def apply(self, event: WatchEvent) -> None:
        # Every event of every kind passes here: the key is built inline (object_key's rule).
        obj = event.obj
        meta = obj.get("metadata") or {}
        kind = self.kind
        ns = "" if self._cluster_scoped else (meta.get("namespace") or "default")
        key = (kind, ns, str(meta.get("name")))
        old_view = self._views.get(key)
        if event.type == EventType.DELETED:
            self._raw.pop(key, None)
            view = old_view if old_view is not None else self._view_of(obj, None)
            if old_view is not None or self._indexers:
                self._index(key, None)
        else:
            self._raw[key] = obj
            view = self._view_of(obj, old_view)
            if view is None or old_view is None or self._indexers:
                self._index(key, view)
            else:
                # A known object changed: the same buckets, the new view.
                self._views[key] = view
                self._by_namespace[ns][key] = view
        change: Change[V] = Change(event.type, kind, obj, event.old, view, old_view)
        for handler in self._handlers:
            handler(change)


class InformerFactory:
    """The informers of one store. The factory follows the store through one watch, so events of all
    kinds reach the handlers in the order the store made them (a bind after the node it names, an
    Event after the pod it is about). A kind registered with :meth:`informer` is listed once and
    followed from then on; listing and following start together under the store's lock, when it has
    one, so writers on other threads cannot slip an event between them."""

    def __init__(self, store: ClusterStore, parsers: Mapping[str, Parser] | None = None) -> None:
        self.store = store
        self._parsers: dict[str, Parser] = dict(parsers or {})
        self._informers: dict[str, Informer[Any]] = {}
        self._watch: Watch | None = None
        self._shared: dict[object, Any] = {}
        self._shared_lock = threading.Lock()

    def register_parser(self, kind: str, parse: Parser) -> None:
        if kind in self._informers:
            raise ValueError(f"the {kind} informer already exists")
        self._parsers[kind] = parse

    def shared(self, key: object, make: Callable[[], T]) -> T:
        """The one object ``make`` builds for these informers under ``key``, made on first use.

        What several plugins share over one set of informers (an index fed by their handlers) is
        kept here rather than in a table beside them: it holds the informers, so it must go when
        they do, or every cluster a process builds (a simulation run, a sweep's cells) would stay."""
        with self._shared_lock:
            if key not in self._shared:
                self._shared[key] = make()
            made: T = self._shared[key]
            return made

    def informer(self, kind: str) -> Informer[Any]:
        inf = self._informers.get(kind)
        if inf is None:
            inf = Informer(kind, self._parsers.get(kind, _identity))
            self._informers[kind] = inf
            self._start(inf)
        return inf

    def _store_lock(self) -> AbstractContextManager[Any]:
        lock: AbstractContextManager[Any] | None = getattr(self.store, "lock", None)
        return lock if lock is not None else nullcontext()

    def _start(self, inf: Informer[Any]) -> None:
        """List the new kind and follow it: its events enter the watch from the listing on."""
        kinds = frozenset({inf.kind})
        with self._store_lock():
            if self._watch is None:
                self._watch = self.store.watch(kinds)
            else:
                self._watch.add_kinds(kinds)
            listed = self.store.list(inf.kind)
        for obj in listed:
            inf.apply(WatchEvent(EventType.ADDED, inf.kind, obj))

    @property
    def kinds(self) -> frozenset[str]:
        return frozenset(self._informers)

    def pending(self) -> int:
        """Events waiting to be applied."""
        return len(self._watch) if self._watch is not None else 0

    def pump(self) -> int:
        """Apply every waiting event to its informer and its handlers; returns how many. Called by
        the driver's thread only, between scheduling steps."""
        watch = self._watch
        if watch is None:
            return 0
        n = 0
        informers = self._informers
        for event in watch.drain():
            inf = informers.get(event.kind)
            if inf is not None:
                inf.apply(event)
                n += 1
        return n

    def close(self) -> None:
        if self._watch is not None:
            self._watch.close()
            self._watch = None


def reuse_or_parse(parse: Callable[[Obj], V], same: Callable[[V, Obj], V | None]) -> Parser:
    """A parser that first asks ``same(previous, obj)`` for a reused view (e.g. a pod whose spec
    object is unchanged) and parses only when that gives None."""

    def parser(obj: Obj, previous: Any) -> V:
        if previous is not None:
            reused = same(previous, obj)
            if reused is not None:
                return reused
        return parse(obj)

    return parser
