"""The ClusterStore protocol: what the scheduler needs from wherever cluster objects live."""

from __future__ import annotations

import os
import threading
from collections import deque
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Protocol

from kubesched.errors import KubeschedError

Obj = Mapping[str, Any]

#: Kinds that live outside namespaces.
CLUSTER_SCOPED_KINDS = frozenset(
    {
        "Node",
        "PriorityClass",
        "Namespace",
        "Queue",
        "HyperNode",
        "PersistentVolume",
        "StorageClass",
        "CSINode",
        "CSIDriver",
        "VolumeAttachment",
        "DeviceClass",
        "ResourceSlice",
        "ServiceCIDR",
    }
)


class EventType(StrEnum):
    ADDED = "ADDED"
    MODIFIED = "MODIFIED"
    DELETED = "DELETED"


# Not frozen: the store makes one per write, and a frozen dataclass costs three times as much to
# build. Whoever receives one treats it as read-only.
@dataclass(slots=True)
class WatchEvent:
    type: EventType
    kind: str
    obj: Obj
    old: Obj | None = None


class StoreError(KubeschedError):
    """A store operation that the API server would refuse (conflict, not found, invalid)."""


class NotFound(StoreError):
    pass


class AlreadyExists(StoreError):
    pass


class Conflict(StoreError):
    pass


class Watch:
    """A buffered stream of watch events; the consumer drains it between scheduling cycles.

    The store pushes from whichever thread writes while one consumer drains: a deque's append and
    popleft are atomic, so neither side needs a lock."""

    def __init__(self, kinds: frozenset[str] | None, listed_through: Callable[[], int] | None = None) -> None:
        self.kinds = kinds
        self._events: deque[WatchEvent] = deque()
        self.closed = False
        #: For a store that publishes a change after it is committed, and lists what it holds in
        #: memory: the resourceVersion a listing made now already shows (0: none ahead of the
        #: published changes). The changes up to it that are still to come are skipped, per kind.
        self._listed_through = listed_through
        self._skip: dict[str, int] = {}
        if listed_through is not None:
            self._skip_through(kinds)

    def _skip_through(self, kinds: frozenset[str] | None) -> None:
        rv = self._listed_through() if self._listed_through is not None else 0
        if rv and kinds is not None:
            for kind in kinds:
                self._skip[kind] = rv
        elif rv:
            self._skip[""] = rv

    def push(self, event: WatchEvent) -> None:
        if self.closed or (self.kinds is not None and event.kind not in self.kinds):
            return
        if self._skip:
            kind = event.kind if event.kind in self._skip else ""
            through = self._skip.get(kind)
            if through is not None:
                if int(event.obj["metadata"]["resourceVersion"]) <= through:
                    return
                del self._skip[kind]
        self._events.append(event)

    def add_kinds(self, kinds: frozenset[str]) -> None:
        """Follow more kinds from now on (the store's lock must be held so that no event of these
        kinds is missed or seen twice by a listing made under the same lock)."""
        if self.kinds is not None:
            self._skip_through(kinds - self.kinds)
            self.kinds = self.kinds | kinds

    def __len__(self) -> int:
        return len(self._events)

    def drain(self) -> Iterator[WatchEvent]:
        while self._events:
            yield self._events.popleft()

    def close(self) -> None:
        self.closed = True
        self._events.clear()


class _RandomUids:
    """Random (version 4) UUIDs as strings, as ``str(uuid.uuid4())`` makes them, from random bytes
    read a few kilobytes at a time: a served pod takes two (itself and its Scheduled event), and
    a ``UUID`` object and a system call each cost more than the formatting."""

    _CHUNK = 4096

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._bytes = b""
        self._at = 0
        # A forked child must not hand out the bytes its parent still holds.
        os.register_at_fork(after_in_child=self._forget)

    def _forget(self) -> None:
        self._lock = threading.Lock()
        self._bytes = b""
        self._at = 0

    def __call__(self) -> str:
        with self._lock:
            if self._at >= len(self._bytes):
                self._bytes = os.urandom(self._CHUNK)
                self._at = 0
            raw = self._bytes[self._at : self._at + 16]
            self._at += 16
        h = raw.hex()
        # The version nibble is 4 and the variant bits 10 (RFC 9562), as uuid4 sets them.
        return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-{'89ab'[int(h[16], 16) & 3]}{h[17:20]}-{h[20:]}"


#: A new random uid for an object (metadata.uid), as kube-apiserver gives each object it creates.
random_uid = _RandomUids()


def object_key(kind: str, namespace: str | None, name: str) -> tuple[str, str, str]:
    return (kind, "" if kind in CLUSTER_SCOPED_KINDS else (namespace or "default"), name)


class ClusterStore(Protocol):
    def create(self, obj: Obj) -> Obj: ...
    def update(self, obj: Obj) -> Obj: ...
    def delete(self, kind: str, namespace: str | None, name: str) -> Obj: ...
    def get(self, kind: str, namespace: str | None, name: str) -> Obj | None: ...
    def list(self, kind: str) -> list[Obj]: ...
    def watch(self, kinds: frozenset[str] | None = None) -> Watch: ...
    def bind(self, namespace: str, name: str, uid: str, node_name: str) -> Obj: ...
    def update_pod_condition(
        self, namespace: str, name: str, condition: Mapping[str, Any], nominated_node: str | None = None
    ) -> Obj | None: ...
    def record_event(
        self, regarding: Obj, event_type: str, reason: str, action: str, note: str, reporter: str
    ) -> None: ...
