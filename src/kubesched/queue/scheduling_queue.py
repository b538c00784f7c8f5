"""The scheduling queue: activeQ, backoffQ and unschedulable pods, with upstream semantics.

* activeQ is ordered by the profile's QueueSort plugin; ``pop`` hands out its head.
* A pod that failed waits in *unschedulablePods* until a cluster event that one of the plugins that
  rejected it registered for (node added, pod deleted, …) happens, or until
  ``max_in_unschedulable`` seconds pass. A pod that failed for any other reason (an error), or
  whose relevant event arrived while it was being scheduled, goes to backoffQ.
* backoffQ holds a pod for ``initial · 2^(attempts-1)`` seconds, capped at ``max``; expired pods are
  flushed back to activeQ (upstream flushes every second).
* PreEnqueue plugins (SchedulingGates) keep gated pods out of activeQ until they pass.
* The queue holds the :class:`Nominator`: a pending pod that arrives with ``status.nominatedNodeName``
  is nominated there, and a deleted pod loses its nomination.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from kubesched.api.objects import Pod
from kubesched.framework.status import Status
from kubesched.framework.types import ClusterEvent, QueuedPodInfo
from kubesched.queue.heap import KeyedHeap
from kubesched.queue.nominator import Nominator, status_nominated_node

DEFAULT_MAX_IN_UNSCHEDULABLE = 300.0
#: Pseudo event for "moved after max_in_unschedulable", which every pod accepts.
UNSCHEDULABLE_TIMEOUT = ClusterEvent("*", "*", "UnschedulableTimeout")


@dataclass(slots=True)
class _Unschedulable:
    info: QueuedPodInfo
    since: float
    gated: bool


class SchedulingQueue:
    def __init__(
        self,
        sort_key: Callable[[QueuedPodInfo], Any],
        now: Callable[[], float],
        *,
        pre_enqueue: Callable[[Pod], Status | None] | None = None,
        plugin_events: dict[str, list[ClusterEvent]] | None = None,
        initial_backoff: float = 1.0,
        max_backoff: float = 10.0,
        max_in_unschedulable: float = DEFAULT_MAX_IN_UNSCHEDULABLE,
    ) -> None:
        self._now = now
        self._pre_enqueue = pre_enqueue
        self._plugin_events = plugin_events or {}
        self.initial_backoff = initial_backoff
        self.max_backoff = max_backoff
        self.max_in_unschedulable = max_in_unschedulable
        self._active: KeyedHeap[QueuedPodInfo] = KeyedHeap(sort_key)
        self._backoff: KeyedHeap[QueuedPodInfo] = KeyedHeap(self.backoff_expiry)
        self._unschedulable: dict[str, _Unschedulable] = {}
        #: The uids of ``_unschedulable`` that are not gated, in the same order: cluster events and
        #: the leftover flush look only at these, so thousands of gated pods cost nothing per event.
        self._movable: dict[str, None] = {}
        self._in_flight: dict[str, QueuedPodInfo] = {}
        #: events seen while a pod was in flight: pod uid → events
        self._in_flight_events: dict[str, list[ClusterEvent]] = {}
        self._seq = itertools.count()
        self.scheduling_cycle = 0
        #: Pods nominated to nodes by preemption (upstream keeps the nominator in the queue too).
        self.nominator = Nominator()

    # -- sizes -----------------------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self._active) + len(self._backoff) + len(self._unschedulable) + len(self._in_flight)

    @property
    def active_count(self) -> int:
        return len(self._active)

    @property
    def backoff_count(self) -> int:
        return len(self._backoff)

    @property
    def unschedulable_count(self) -> int:
        return len(self._unschedulable)

    def pending_pods(self) -> list[tuple[str, QueuedPodInfo]]:
        out = [("active", q) for q in self._active]
        out += [("backoff", q) for q in self._backoff]
        out += [("gated" if u.gated else "unschedulable", u.info) for u in self._unschedulable.values()]
        return out

    def unschedulable_info(self, uid: str) -> QueuedPodInfo | None:
        u = self._unschedulable.get(uid)
        return u.info if u else None

    # -- backoff ---------------------------------------------------------------------------------
    def backoff_duration(self, info: QueuedPodInfo) -> float:
        duration = self.initial_backoff
        for _ in range(1, info.attempts):
            duration *= 2
            if duration >= self.max_backoff:
                return self.max_backoff
        return min(duration, self.max_backoff)

    def backoff_expiry(self, info: QueuedPodInfo) -> float:
        return info.timestamp + self.backoff_duration(info)

    def _backing_off(self, info: QueuedPodInfo) -> bool:
        return info.attempts > 0 and self.backoff_expiry(info) > self._now()

    def next_backoff_expiry(self) -> float | None:
        head = self._backoff.peek()
        return self.backoff_expiry(head) if head is not None else None

    # -- adding ----------------------------------------------------------------------------------
    def _gate(self, info: QueuedPodInfo) -> bool:
        if self._pre_enqueue is None:
            return False
        st = self._pre_enqueue(info.pod)
        if st is not None and not st.ok:
            info.gated_by = st.plugin or "PreEnqueue"
            info.unschedulable_plugins = {info.gated_by}
            return True
        info.gated_by = ""
        return False

    def add(self, pod: Pod) -> None:
        """A new pending pod (informer ADDED)."""
        info = QueuedPodInfo(pod, self._now(), seq=next(self._seq))
        nominated = status_nominated_node(pod)
        if nominated:
            self.nominator.add(pod, nominated)
        if self._gate(info):
            self._unschedulable[pod.uid] = _Unschedulable(info, self._now(), gated=True)
            self._movable.pop(pod.uid, None)
            return
        self._active.push(pod.uid, info)

    def update(self, pod: Pod) -> None:
        """A pending pod changed (gates removed, labels edited, …)."""
        uid = pod.uid
        self.nominator.update(pod)
        for heap in (self._active, self._backoff):
            info = heap.get(uid)
            if info is not None:
                info.pod = pod
                heap.push(uid, info)
                return
        u = self._unschedulable.get(uid)
        if u is not None:
            u.info.pod = pod
            if u.gated and self._gate(u.info):
                return
            del self._unschedulable[uid]
            self._movable.pop(uid, None)
            self._requeue(u.info)
            return
        if uid in self._in_flight:
            self._in_flight[uid].pod = pod
            return
        self.add(pod)

    def delete(self, uid: str) -> None:
        self.nominator.delete(uid)
        self._active.delete(uid)
        self._backoff.delete(uid)
        self._unschedulable.pop(uid, None)
        self._movable.pop(uid, None)

    def contains(self, uid: str) -> bool:
        return (
            uid in self._active
            or uid in self._backoff
            or uid in self._unschedulable
            or uid in self._in_flight
        )

    # -- popping ---------------------------------------------------------------------------------
    def pop(self) -> QueuedPodInfo | None:
        info = self._active.pop()
        if info is None:
            return None
        info.attempts += 1
        if info.initial_attempt_timestamp is None:
            info.initial_attempt_timestamp = self._now()
        self.scheduling_cycle += 1
        self._in_flight[info.pod.uid] = info
        self._in_flight_events[info.pod.uid] = []
        return info

    def done(self, uid: str) -> None:
        """The pod's scheduling attempt is over (bound, or re-queued)."""
        self._in_flight.pop(uid, None)
        self._in_flight_events.pop(uid, None)

    def add_unschedulable(self, info: QueuedPodInfo, *, error: bool = False) -> None:
        """Requeue a pod whose attempt failed (upstream AddUnschedulableIfNotPresent)."""
        uid = info.pod.uid
        events = self._in_flight_events.get(uid, [])
        self.done(uid)
        info.timestamp = self._now()
        if error or not info.unschedulable_plugins or any(self._relevant(info, e) for e in events):
            self._backoff.push(uid, info)
            return
        self._unschedulable[uid] = _Unschedulable(info, self._now(), gated=False)
        self._movable[uid] = None

    def _requeue(self, info: QueuedPodInfo) -> None:
        if self._backing_off(info):
            self._backoff.push(info.pod.uid, info)
        else:
            self._active.push(info.pod.uid, info)

    # -- events ----------------------------------------------------------------------------------
    def _relevant(self, info: QueuedPodInfo, event: ClusterEvent) -> bool:
        if event is UNSCHEDULABLE_TIMEOUT or not info.unschedulable_plugins:
            return True
        for plugin in info.unschedulable_plugins | info.pending_plugins:
            for registered in self._plugin_events.get(plugin, ()):
                if registered.matches(event):
                    return True
        return False

    def move_all_to_active_or_backoff(self, event: ClusterEvent) -> int:
        """A cluster event happened: requeue every unschedulable pod it may help. Returns the count."""
        for events in self._in_flight_events.values():
            events.append(event)
        moved = 0
        for uid in list(self._movable):
            u = self._unschedulable[uid]
            if self._relevant(u.info, event):
                del self._unschedulable[uid]
                del self._movable[uid]
                self._requeue(u.info)
                moved += 1
        return moved

    def flush_backoff_completed(self) -> int:
        now = self._now()
        moved = 0
        while True:
            head = self._backoff.peek()
            if head is None or self.backoff_expiry(head) > now:
                return moved
            self._backoff.pop()
            self._active.push(head.pod.uid, head)
            moved += 1

    def flush_unschedulable_leftover(self) -> int:
        now = self._now()
        stale = [
            uid for uid in self._movable if now - self._unschedulable[uid].since > self.max_in_unschedulable
        ]
        for uid in stale:
            del self._movable[uid]
            self._requeue(self._unschedulable.pop(uid).info)
        return len(stale)

    def pods(self) -> Iterable[QueuedPodInfo]:
        yield from self._active
        yield from self._backoff
        for u in self._unschedulable.values():
            yield u.info
