"""The mirror store: a read-only copy of a real cluster's objects, kept by the reflectors.

It is what an :class:`~kubesched.store.informers.InformerFactory` and the
:class:`~kubesched.runtime.driver.RealTimeDriver` need from a store: ``lock``, ``watch``, ``list``,
``get`` and write listeners. The reflectors (on the event loop's thread) apply what the API server
sends; each applied change is pushed, in order, into every open :class:`Watch` under ``lock``, so a
factory that lists a kind and starts following it under the same lock neither misses nor repeats an
event. Write listeners run after each applied batch, outside the lock.

Applying follows client-go's informer: an object's change is applied only when its
``resourceVersion`` is newer than the copy held (so a replayed event is never applied twice); an
ADDED for an object already held is delivered as MODIFIED, a MODIFIED for one not held as ADDED; a
DELETED for an object not held is dropped. A relist (:meth:`MirrorStore.replace`) emits only the
differences: DELETED for objects gone, MODIFIED for those whose resourceVersion changed, ADDED for
new ones, and DELETED then ADDED for a name that now belongs to another object (a different uid).

Every write of the ``ClusterStore`` protocol raises :class:`ReadOnlyMirror`: the scheduler writes
to a real cluster through its ports, and sees the result when the watch brings it back.
"""

from __future__ import annotations

import builtins
import threading
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

from kubesched.store.base import EventType, Obj, StoreError, Watch, WatchEvent, object_key

if TYPE_CHECKING:
    from kubesched.runtime.driver import WritesNotifier
    from kubesched.store.base import ClusterStore

Key = tuple[str, str, str]


class ReadOnlyMirror(StoreError):
    """A write was attempted on the mirror of a remote cluster."""


def newer(candidate: str, held: str) -> bool:
    """Is resourceVersion ``candidate`` newer than ``held``? ResourceVersions are opaque strings to
    clients, but numeric in every known server: compared as integers when both are, else any
    different version counts as newer."""
    if candidate.isdigit() and held.isdigit():
        return int(candidate) > int(held)
    return candidate != held


def older(candidate: str, held: str) -> bool:
    """Is ``candidate`` known to be older than ``held`` (only numeric versions can tell)?"""
    if candidate.isdigit() and held.isdigit():
        return int(candidate) < int(held)
    return False


def _meta(obj: Obj) -> Mapping[str, Any]:
    meta = obj.get("metadata")
    return meta if isinstance(meta, Mapping) else {}


def _rv(obj: Obj) -> str:
    return str(_meta(obj).get("resourceVersion") or "")


def _uid(obj: Obj) -> str:
    return str(_meta(obj).get("uid") or "")


def _key(kind: str, obj: Obj) -> Key:
    meta = _meta(obj)
    return object_key(kind, meta.get("namespace"), str(meta.get("name")))


class MirrorStore:
    """Objects of a remote cluster, per kind, as the reflectors last saw them."""

    def __init__(self) -> None:
        self.lock = threading.RLock()
        self._objects: dict[str, dict[Key, Obj]] = {}
        self._watches: list[Watch] = []
        self._listeners: list[Callable[[], None]] = []
        #: Changes delivered, and events dropped as not newer than the copy held.
        self.applied = 0
        self.skipped = 0

    # -- reads ----------------------------------------------------------------------------------
    def get(self, kind: str, namespace: str | None, name: str) -> Obj | None:
        with self.lock:
            return self._objects.get(kind, {}).get(object_key(kind, namespace, name))

    def list(self, kind: str) -> builtins.list[Obj]:
        with self.lock:
            return list(self._objects.get(kind, {}).values())

    def count(self, kind: str) -> int:
        with self.lock:
            return len(self._objects.get(kind, {}))

    def watch(self, kinds: frozenset[str] | None = None) -> Watch:
        """A stream of the changes applied from now on (of ``kinds``; all when None)."""
        with self.lock:
            w = Watch(kinds)
            self._watches.append(w)
            return w

    def add_write_listener(self, listener: Callable[[], None]) -> None:
        """Call ``listener`` after every applied batch of changes (on the reflectors' thread)."""
        with self.lock:
            self._listeners.append(listener)

    def remove_write_listener(self, listener: Callable[[], None]) -> None:
        with self.lock:
            self._listeners = [f for f in self._listeners if f is not listener]

    # -- applying (the reflectors) ----------------------------------------------------------------
    def _push(self, events: builtins.list[WatchEvent]) -> None:
        if self._watches and any(w.closed for w in self._watches):
            self._watches = [w for w in self._watches if not w.closed]
        for event in events:
            for w in self._watches:
                w.push(event)
        self.applied += len(events)

    def _notify(self, events: builtins.list[WatchEvent]) -> None:
        if not events:
            return
        for listener in list(self._listeners):
            listener()

    def _change(self, kind: str, type_: EventType, obj: Obj, out: builtins.list[WatchEvent]) -> None:
        objects = self._objects.setdefault(kind, {})
        key = _key(kind, obj)
        held = objects.get(key)
        if type_ == EventType.DELETED:
            if held is None or older(_rv(obj), _rv(held)):
                self.skipped += 1
                return
            del objects[key]
            out.append(WatchEvent(EventType.DELETED, kind, obj, held))
            return
        if held is None:
            objects[key] = obj
            out.append(WatchEvent(EventType.ADDED, kind, obj))
            return
        if not newer(_rv(obj), _rv(held)):
            self.skipped += 1
            return
        if _uid(obj) and _uid(held) and _uid(obj) != _uid(held):
            # Another object under the same name: the old one went away unseen.
            out.append(WatchEvent(EventType.DELETED, kind, held, held))
            objects[key] = obj
            out.append(WatchEvent(EventType.ADDED, kind, obj))
            return
        objects[key] = obj
        out.append(WatchEvent(EventType.MODIFIED, kind, obj, held))

    def apply(self, kind: str, type_: EventType | str, obj: Obj) -> builtins.list[WatchEvent]:
        """Apply one watch event; returns the changes delivered (none when it was not newer)."""
        return self.apply_events(kind, [(EventType(type_), obj)])

    def apply_events(
        self, kind: str, events: Iterable[tuple[EventType | str, Obj]]
    ) -> builtins.list[WatchEvent]:
        """Apply a batch of watch events in order; listeners are called once after the batch."""
        out: builtins.list[WatchEvent] = []
        with self.lock:
            for type_, obj in events:
                self._change(kind, EventType(type_), obj, out)
            self._push(out)
        self._notify(out)
        return out

    def replace(self, kind: str, items: Iterable[Obj]) -> builtins.list[WatchEvent]:
        """Make ``kind``'s objects exactly ``items`` (a fresh listing), delivering only the
        differences; returns them."""
        out: builtins.list[WatchEvent] = []
        with self.lock:
            objects = self._objects.setdefault(kind, {})
            listed: dict[Key, Obj] = {}
            for obj in items:
                listed[_key(kind, obj)] = obj
            for key in [k for k in objects if k not in listed]:
                gone = objects.pop(key)
                out.append(WatchEvent(EventType.DELETED, kind, gone, gone))
            for key, obj in listed.items():
                held = objects.get(key)
                if held is None:
                    objects[key] = obj
                    out.append(WatchEvent(EventType.ADDED, kind, obj))
                elif _uid(obj) and _uid(held) and _uid(obj) != _uid(held):
                    objects[key] = obj
                    out.append(WatchEvent(EventType.DELETED, kind, held, held))
                    out.append(WatchEvent(EventType.ADDED, kind, obj))
                elif _rv(obj) != _rv(held) and not older(_rv(obj), _rv(held)):
                    objects[key] = obj
                    out.append(WatchEvent(EventType.MODIFIED, kind, obj, held))
            self._push(out)
        self._notify(out)
        return out

    # -- the ClusterStore writes: refused --------------------------------------------------------
    def _refuse(self, what: str) -> ReadOnlyMirror:
        return ReadOnlyMirror(
            f"{what}: the mirror of a remote cluster is read-only; write through the API server's ports"
        )

    def create(self, obj: Obj) -> Obj:
        raise self._refuse("create")

    def update(self, obj: Obj) -> Obj:
        raise self._refuse("update")

    def delete(self, kind: str, namespace: str | None, name: str) -> Obj:
        raise self._refuse("delete")

    def bind(self, namespace: str, name: str, uid: str, node_name: str) -> Obj:
        raise self._refuse("bind")

    def update_pod_condition(
        self, namespace: str, name: str, condition: Mapping[str, Any], nominated_node: str | None = None
    ) -> Obj | None:
        raise self._refuse("update_pod_condition")

    def record_event(
        self, regarding: Obj, event_type: str, reason: str, action: str, note: str, reporter: str
    ) -> None:
        raise self._refuse("record_event")


if TYPE_CHECKING:  # the mirror is a ClusterStore for the informers and a WritesNotifier for the driver

    def _conforms(mirror: MirrorStore) -> tuple[ClusterStore, WritesNotifier]:
        return mirror, mirror
