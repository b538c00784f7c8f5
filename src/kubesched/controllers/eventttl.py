"""Event expiry, as kube-apiserver's ``--event-ttl`` (1h): an Event goes that long after it was
last written (made, or its series last counted); events would otherwise pile up without end.

kube-apiserver attaches an Event to an etcd lease of the TTL plus a little: the lease is shared by
the writes of the next few seconds (5 % of the TTL, at most a minute), so an Event outlives its TTL
by at most that much. The sweep here runs as often, for the same bound."""

from __future__ import annotations

import contextlib
import heapq
import time
from typing import Any

from kubesched.controllers.controller_utils import seconds
from kubesched.store.base import EventType, NotFound
from kubesched.store.informers import Change, InformerFactory
from kubesched.store.sqlite import SqliteStore

#: The most seconds between sweeps (kube-apiserver's ``--lease-reuse-duration-seconds``).
SWEEP_INTERVAL = 60.0
#: The share of the TTL an Event may outlive it by (kube-apiserver's lease reuse percentage).
SWEEP_SHARE = 0.05


class EventTTLController:
    """Deletes the Events older than ``ttl`` seconds, once every :data:`SWEEP_SHARE` of the TTL
    (at most :data:`SWEEP_INTERVAL`): the Events it saw made wait in order of age, so a sweep reads
    only those due. A shortened TTL is swept as often as its share says, so the Events held stay
    within a twentieth of the TTL's worth rather than doubling between sweeps."""

    def __init__(self, store: SqliteStore, informers: InformerFactory, ttl: float = 3600.0) -> None:
        self.store = store
        self.ttl = ttl
        self.sweep_interval = min(SWEEP_INTERVAL, SWEEP_SHARE * ttl)
        self._next_sweep = 0.0
        #: Every Event seen made, oldest first: creation time, namespace, name.
        self._made: list[tuple[float, str, str]] = []
        informers.informer("Event").add_handler(self._on_event)

    def _on_event(self, change: Change[Any]) -> None:
        if change.type == EventType.DELETED:
            return
        if change.type == EventType.MODIFIED and _last_written(change.obj) == _last_written(change.old or {}):
            return
        meta = change.obj.get("metadata") or {}
        written = _last_written(change.obj)
        if written is not None:
            heapq.heappush(self._made, (written, str(meta.get("namespace")), str(meta.get("name"))))

    def sync(self) -> None:
        now = time.time()
        if now >= self._next_sweep:
            self._next_sweep = now + self.sweep_interval
            self._expire(now)

    def _expire(self, now: float) -> None:
        # One commit per sweep: a busy cluster expires thousands of Events a minute.
        with self.store.transaction():
            while self._made and now - self._made[0][0] > self.ttl:
                _, namespace, name = heapq.heappop(self._made)
                event = self.store.get("Event", namespace, name)
                # The name may have been made again since: the Event there now has an entry of its own.
                written = _last_written(event) if event else None
                if written is not None and now - written > self.ttl:
                    with contextlib.suppress(NotFound):
                        self.store.delete("Event", namespace, name)


def _last_written(event: Any) -> float | None:
    """When the Event was made or, for a series, last seen: kube-apiserver's TTL starts again with
    each write of an Event."""
    created = seconds((event.get("metadata") or {}).get("creationTimestamp"))
    series = event.get("series")
    observed = seconds(str(series.get("lastObservedTime"))[:19] + "Z") if isinstance(series, dict) else None
    if observed is None:
        return created
    return observed if created is None else max(created, observed)
