"""A cache over an informer whose objects can be replaced in memory until the cluster catches up
(upstream ``pkg/scheduler/util/assumecache``).

Each object is held twice: as the informer last delivered it (the *API object*) and as the latest
version, which is the API object or one the scheduler *assumed* — a PersistentVolume it decided to
bind, a claim it picked a node for — before writing it. Reads (``get``, ``list``) see the latest
version, so the next pod's cycle already sees the first pod's decision; ``restore`` drops an
assumption. An informer event replaces both versions, but only when its resourceVersion is newer
than the latest one, so a late echo of an older state cannot undo an assumption.

Objects are kubesched's typed views (anything with a ``raw`` manifest) or plain manifests; the key is
``namespace/name`` (``name`` for cluster-scoped objects), as client-go's ``MetaNamespaceKeyFunc``.
Handlers get ``on_add``/``on_update``/``on_delete`` calls for every change of the latest version,
delivered after the cache is consistent again, in the order the changes were made. Every method may
be called from any thread.
"""

from __future__ import annotations

import builtins
import functools
import logging
import threading
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from kubesched.store.base import EventType
from kubesched.store.informers import Change, Informer

log = logging.getLogger(__name__)

IndexFunc = Callable[[Any], Iterable[str]]


class AssumeCacheError(Exception):
    """A request the cache cannot carry out."""


class NotFoundError(AssumeCacheError):
    def __init__(self, description: str, key: str) -> None:
        super().__init__(f'could not find {description} "{key}"')
        self.key = key


class ObjectNameError(AssumeCacheError):
    def __init__(self, detail: str) -> None:
        super().__init__(f"failed to get object name: {detail}")


class WrongTypeError(AssumeCacheError):
    def __init__(self, type_name: str, obj: object) -> None:
        super().__init__(f"could not convert object to type {type_name}: {obj!r}")


class EventHandler(Protocol):
    def on_add(self, obj: Any, initial_list: bool) -> None: ...
    def on_update(self, old: Any, new: Any) -> None: ...
    def on_delete(self, obj: Any) -> None: ...


def object_meta(obj: object) -> Mapping[str, Any]:
    """The ``metadata`` of a typed view (through its ``raw`` manifest) or of a manifest."""
    raw = getattr(obj, "raw", obj)
    if not isinstance(raw, Mapping):
        raise ObjectNameError(f"object has no metadata: {obj!r}")
    meta = raw.get("metadata")
    if not isinstance(meta, Mapping):
        raise ObjectNameError(f"object has no metadata: {obj!r}")
    return meta


def object_key(obj: object) -> str:
    """``namespace/name``, or ``name`` when the object has no namespace. A typed view's own
    ``namespace`` wins over its manifest's (the view has the default namespace filled in)."""
    name = getattr(obj, "name", None)
    if isinstance(name, str) and name and hasattr(obj, "raw"):
        namespace = getattr(obj, "namespace", "")
        return f"{namespace}/{name}" if isinstance(namespace, str) and namespace else name
    meta = object_meta(obj)
    name = meta.get("name")
    if not isinstance(name, str) or not name:
        raise ObjectNameError(f"object has no name: {obj!r}")
    namespace = meta.get("namespace")
    return f"{namespace}/{name}" if namespace else name


@dataclass(slots=True)
class _ObjInfo:
    latest: Any
    api: Any


class AssumeCache:
    def __init__(
        self,
        informer: Informer[Any] | None,
        description: str,
        index_name: str = "",
        index_func: IndexFunc | None = None,
    ) -> None:
        self.description = description
        self._lock = threading.RLock()
        self._objs: dict[str, _ObjInfo] = {}
        self._index_func = index_func if index_name else None
        #: Index value → keys of the objects whose latest version is filed under it.
        self._index: dict[str, dict[str, None]] = {}
        self._filed: dict[str, tuple[str, ...]] = {}
        self._handlers: list[EventHandler] = []
        #: Events waiting to be delivered; one caller delivers at a time, in order.
        self._events: deque[Callable[[], None]] = deque()
        self._emitting = False
        # Unit tests feed the cache themselves.
        if informer is not None:
            informer.add_handler(self._on_change)

    def _on_change(self, change: Change[Any]) -> None:
        if change.type == EventType.DELETED:
            self.delete(change.view if change.view is not None else change.obj)
        elif change.view is not None:
            self.add(change.view)

    # -- versions and the index -------------------------------------------------------------------
    def _version(self, key: str, obj: object) -> int:
        rv = object_meta(obj).get("resourceVersion")
        try:
            return int(str(rv))
        except ValueError:
            raise AssumeCacheError(
                f'error parsing ResourceVersion "{rv}" for {self.description} "{key}"'
            ) from None

    def _refile(self, key: str, obj: object | None) -> None:
        if self._index_func is None:
            return
        for value in self._filed.pop(key, ()):
            bucket = self._index.get(value)
            if bucket is not None:
                bucket.pop(key, None)
                if not bucket:
                    del self._index[value]
        if obj is not None:
            values = tuple(self._index_func(obj))
            for value in values:
                self._index.setdefault(value, {})[key] = None
            self._filed[key] = values

    # -- events -----------------------------------------------------------------------------------
    def _push(self, old: Any, new: Any) -> None:
        """Queue the change for every handler (called with the lock held)."""
        for handler in self._handlers:
            if old is None:
                self._events.append(functools.partial(handler.on_add, new, False))
            elif new is None:
                self._events.append(functools.partial(handler.on_delete, old))
            else:
                self._events.append(functools.partial(handler.on_update, old, new))

    def _emit(self) -> None:
        """Deliver queued events without holding the lock (handlers may read the cache). One caller
        delivers at a time; a caller arriving meanwhile leaves its events to that one."""
        with self._lock:
            if self._emitting:
                return
            self._emitting = True
        while True:
            with self._lock:
                if not self._events:
                    self._emitting = False
                    return
                deliver = self._events.popleft()
            try:
                deliver()
            except Exception:
                log.exception("%s assume cache: an event handler failed", self.description)

    # -- informer side ----------------------------------------------------------------------------
    def add(self, obj: object) -> None:
        """An informer ADDED or MODIFIED: taken when newer than the latest version."""
        if obj is None:
            return
        try:
            key = object_key(obj)
        except ObjectNameError:
            return
        with self._lock:
            old = None
            info = self._objs.get(key)
            if info is not None:
                try:
                    if self._version(key, obj) <= self._version(key, info.latest):
                        return
                except AssumeCacheError:
                    return
                old = info.latest
            self._objs[key] = _ObjInfo(obj, obj)
            self._refile(key, obj)
            self._push(old, obj)
        self._emit()

    def update(self, old: object, new: object) -> None:
        self.add(new)

    def delete(self, obj: object) -> None:
        if obj is None:
            return
        try:
            key = object_key(obj)
        except ObjectNameError:
            return
        with self._lock:
            info = self._objs.pop(key, None)
            self._refile(key, None)
            if info is not None:
                self._push(info.latest, None)
        self._emit()

    # -- reads ------------------------------------------------------------------------------------
    def _info(self, key: str) -> _ObjInfo:
        info = self._objs.get(key)
        if info is None:
            raise NotFoundError(self.description, key)
        return info

    def get(self, key: str) -> Any:
        """The latest version (assumed or from the informer)."""
        with self._lock:
            return self._info(key).latest

    def get_api_obj(self, key: str) -> Any:
        """The informer's version."""
        with self._lock:
            return self._info(key).api

    def list(self, index_obj: object | None = None) -> list[Any]:
        """Every latest version; with an index, those filed under ``index_obj``'s index values."""
        with self._lock:
            if self._index_func is None or index_obj is None:
                return [info.latest for info in self._objs.values()]
            return self.by_index_locked(self._index_func(index_obj))

    def by_index(self, *values: str) -> builtins.list[Any]:
        """The latest versions filed under any of ``values``."""
        with self._lock:
            return self.by_index_locked(values)

    def by_index_locked(self, values: Iterable[str]) -> builtins.list[Any]:
        keys: dict[str, None] = {}
        for value in values:
            keys.update(self._index.get(value, {}))
        return [self._objs[key].latest for key in keys]

    # -- assumptions ------------------------------------------------------------------------------
    def assume(self, obj: object) -> None:
        """Make ``obj`` the latest version of its object, in memory only. Its resourceVersion may
        not be older than the latest one's (an object read from the cache, or written since)."""
        key = object_key(obj)
        with self._lock:
            info = self._info(key)
            new_version = self._version(key, obj)
            stored = self._version(key, info.latest)
            if new_version < stored:
                raise AssumeCacheError(
                    f'{self.description} "{key}" is out of sync (stored: {stored}, assume: {new_version})'
                )
            self._push(info.latest, obj)
            info.latest = obj
            self._refile(key, obj)
        self._emit()

    def restore(self, key: str) -> None:
        """Back to the informer's version (nothing happens for an unknown key: it may be gone)."""
        with self._lock:
            info = self._objs.get(key)
            if info is not None and info.latest is not info.api:
                self._push(info.latest, info.api)
                info.latest = info.api
                self._refile(key, info.api)
        self._emit()

    def add_event_handler(self, handler: EventHandler) -> None:
        """Subscribe; the handler first gets an add for every object held (``initial_list``)."""
        with self._lock:
            self._handlers.append(handler)
            for info in list(self._objs.values()):
                self._events.append(functools.partial(handler.on_add, info.latest, True))
        self._emit()
