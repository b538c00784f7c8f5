"""The ClusterStore protocol: what the scheduler needs from wherever cluster objects live."""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Protocol

from kubesched.errors import KubeschedError

Obj = Mapping[str, Any]

#: Kinds that live outside namespaces.
CLUSTER_SCOPED_KINDS = frozenset({"Node", "PriorityClass", "Namespace", "Queue"})


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

    def __init__(self, kinds: frozenset[str] | None) -> None:
        self.kinds = kinds
        self._events: deque[WatchEvent] = deque()
        self.closed = False

    def push(self, event: WatchEvent) -> None:
        if not self.closed and (self.kinds is None or event.kind in self.kinds):
            self._events.append(event)

    def add_kinds(self, kinds: frozenset[str]) -> None:
        """Follow more kinds from now on (the store's lock must be held so that no event of these
        kinds is missed or seen twice by a listing made under the same lock)."""
        if self.kinds is not None:
            self.kinds = self.kinds | kinds

    def __len__(self) -> int:
        return len(self._events)

    def drain(self) -> Iterator[WatchEvent]:
        while self._events:
            yield self._events.popleft()

    def close(self) -> None:
        self.closed = True
        self._events.clear()


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
