"""The scheduling queue: activeQ, backoffQ and unschedulable pods, with upstream semantics.

* activeQ is ordered by the profile's QueueSort plugin; ``pop`` hands out its head.
* A pod that failed waits in *unschedulablePods* until a cluster event that one of the plugins that
  rejected it registered for (node added, pod deleted, …) happens *and* that plugin's queueing hint
  for the event answers Queue for this pod, or until ``max_in_unschedulable`` seconds pass
  (upstream ``isPodWorthRequeuing``). Queue from a plugin that rejected the pod moves it to backoffQ
  (activeQ once its backoff is over); Queue from a plugin that left it *pending* moves it to activeQ
  at once. A pod that failed for any other reason (an error) goes to backoffQ; so does one for
  which an event seen while it was being scheduled (an in-flight event) gets Queue.
* An update of an unschedulable pod itself is an event too (its labels, tolerations, scheduling
  gates, resources changed): the pod moves only when a hint of a plugin that rejected it says so.
* backoffQ holds a pod for ``initial · 2^(attempts-1)`` seconds, capped at ``max``; expired pods are
  flushed back to activeQ (upstream flushes every second).
* PreEnqueue plugins (SchedulingGates) keep gated pods out of activeQ until they pass.
* The queue holds the :class:`Nominator`: a pending pod that arrives with ``status.nominatedNodeName``
  is nominated there, and a deleted pod loses its nomination.
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from enum import IntEnum
from typing import TYPE_CHECKING, Any

from kubesched.api.objects import Pod
from kubesched.framework.nominated_pods import status_nominated_node
from kubesched.framework.status import Status
from kubesched.framework.types import (
    UNSCHEDULED_POD,
    WILDCARD,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    HintKeys,
    QueuedPodInfo,
    QueueingHint,
)
from kubesched.queue.heap import KeyedHeap
from kubesched.queue.nominator import Nominator

if TYPE_CHECKING:
    from kubesched.metrics.kube import KubeSchedulerMetrics

DEFAULT_MAX_IN_UNSCHEDULABLE = 300.0
#: Pseudo event for "moved after max_in_unschedulable", which every pod accepts.
UNSCHEDULABLE_TIMEOUT = ClusterEvent(WILDCARD, ActionType.ALL, "UnschedulableTimeout")

log = logging.getLogger(__name__)

#: Plugin name → its registrations (upstream's queueingHintMap of one profile).
PluginEvents = Mapping[str, Sequence[ClusterEvent | ClusterEventWithHint]]


class Strategy(IntEnum):
    """Where an event sends an unschedulable pod (upstream ``queueingStrategy``)."""

    SKIP = 0
    AFTER_BACKOFF = 1
    IMMEDIATELY = 2


@dataclass(frozen=True, slots=True)
class InFlightEvent:
    event: ClusterEvent
    old: Any
    new: Any


def pod_update_events(old: Any, new: Any) -> list[ClusterEvent]:
    """The fine-grained events of a pod update (upstream ``PodSchedulingPropertiesChange``): what
    changed among labels, requests (scaled down), scheduling gates (all removed) and tolerations
    (added), else a generic update. ``old``/``new`` are parsed pods."""
    resource = "AssignedPod" if new.node_name else UNSCHEDULED_POD
    actions: list[ActionType] = []
    if old.labels != new.labels:
        actions.append(ActionType.UPDATE_POD_LABEL)
    if any(v > new.requests.get(r, -1) for r, v in old.requests.items()):
        actions.append(ActionType.UPDATE_POD_SCALE_DOWN)
    if old.scheduling_gates and not new.scheduling_gates:
        actions.append(ActionType.UPDATE_POD_SCHEDULING_GATES_ELIMINATED)
    if len(old.tolerations) != len(new.tolerations):
        actions.append(ActionType.UPDATE_POD_TOLERATION)
    if old.claim_statuses != new.claim_statuses or _extended_claim_status(old) != _extended_claim_status(new):
        actions.append(ActionType.UPDATE_POD_GENERATED_RESOURCE_CLAIM)
    if not actions:
        actions.append(ActionType.UPDATE)
    return [ClusterEvent(resource, a) for a in actions]


def _extended_claim_status(pod: Any) -> Any:
    return (pod.raw.get("status") or {}).get("extendedResourceClaimStatus")


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
        plugin_events: PluginEvents | None = None,
        profile_events: Mapping[str, PluginEvents] | None = None,
        initial_backoff: float = 1.0,
        max_backoff: float = 10.0,
        max_in_unschedulable: float = DEFAULT_MAX_IN_UNSCHEDULABLE,
        nominator: Nominator | None = None,
    ) -> None:
        self._now = now
        self._pre_enqueue = pre_enqueue
        # Per schedulerName (upstream keeps one hint map per profile); ``plugin_events`` serves pods of
        # any other schedulerName.
        self._default_events = _with_hints(plugin_events or {})
        self._profile_events = {k: _with_hints(v) for k, v in (profile_events or {}).items()}
        self.initial_backoff = initial_backoff
        self.max_backoff = max_backoff
        self.max_in_unschedulable = max_in_unschedulable
        self._active: KeyedHeap[QueuedPodInfo] = KeyedHeap(sort_key)
        self._backoff: KeyedHeap[QueuedPodInfo] = KeyedHeap(self.backoff_expiry)
        self._unschedulable: dict[str, _Unschedulable] = {}
        #: The uids of ``_unschedulable`` that are not gated, in the same order: cluster events and
        #: the leftover flush look only at these, so thousands of gated pods cost nothing per event.
        self._movable: dict[str, None] = {}
        #: The uids of gated pods by the PreEnqueue plugin that holds them: a cluster event looks at
        #: those of a plugin only when the plugin registered the event (a pod waiting for its
        #: ResourceClaim moves when the claim is created; one waiting for its scheduling gates,
        #: only on its own update), so gated pods cost nothing per event otherwise.
        self._gated: dict[str, dict[str, None]] = {}
        self._gated_by: dict[str, str] = {}
        #: When each uid of ``_movable`` or of a ``_gated`` entry went in: the order events visit
        #: them in, which the pods they move keep in the queues.
        self._order: dict[str, int] = {}
        self._order_seq = itertools.count()
        #: Registrations whose hints say which pods they concern (:class:`HintKeys`), from every
        #: profile. With any, the waiting pods are filed by (registration, key) and by the plugins
        #: that rejected them: an event looks only at the pods of the plugins whose registrations
        #: it matches, and for a keyed registration only at those with its keys.
        self._keyed = _keyed_registrations([self._default_events, *self._profile_events.values()])
        self._by_key: dict[tuple[int, Hashable], set[str]] = {}
        self._by_rejector: dict[str, set[str]] = {}
        self._filed: dict[str, tuple[list[tuple[int, Hashable]], set[str]]] = {}
        #: Waiting pods every event looks at (no plugin rejected them, or their keys are unknown).
        self._unkeyed: set[str] = set()
        #: Per (resource, action) of an event: the plugins with a matching registration that has
        #: no keys, and the matching keyed registrations with their plugin.
        self._matching: dict[tuple[str, int], tuple[set[str], list[tuple[int, str, HintKeys]]]] = {}
        self._in_flight: dict[str, QueuedPodInfo] = {}
        #: events seen while a pod was in flight: pod uid → events, with the changed objects
        self._in_flight_events: dict[str, list[InFlightEvent]] = {}
        self._seq = itertools.count()
        self.scheduling_cycle = 0
        #: Pods nominated to nodes by preemption (upstream keeps the nominator in the queue too); the
        #: scheduler passes the one its frameworks read.
        self.nominator = nominator if nominator is not None else Nominator()
        #: Where incoming pods and unschedulable plugins are counted (None: not counted).
        self.metrics: KubeSchedulerMetrics | None = None

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

    def pending_counts(self) -> dict[str, int]:
        """Pods per queue (upstream's ``pending_pods`` gauge): active, backoff, unschedulable (tried
        and failed) and gated (held by a PreEnqueue plugin). Reads lengths only: safe from any
        thread."""
        waiting = len(self._unschedulable)
        movable = len(self._movable)
        return {
            "active": len(self._active),
            "backoff": len(self._backoff),
            "unschedulable": movable,
            "gated": max(waiting - movable, 0),
        }

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
            info.gated_message = st.message
            info.unschedulable_plugins = {info.gated_by}
            if self.metrics is not None:
                self.metrics.mark_unschedulable(info)
            return True
        info.gated_by = ""
        info.gated_message = ""
        return False

    def add(self, pod: Pod) -> None:
        """A new pending pod (informer ADDED)."""
        info = QueuedPodInfo(pod, self._now(), seq=next(self._seq))
        nominated = status_nominated_node(pod)
        if nominated:
            self.nominator.add(pod, nominated)
        if self._gate(info):
            self._park(_Unschedulable(info, self._now(), gated=True))
            self._movable.pop(pod.uid, None)
            self._index_gated(info)
            if self.metrics is not None:
                self.metrics.incoming("unschedulable", "UnscheduledPodAdd")
            return
        self._active.push(pod.uid, info)
        if self.metrics is not None:
            self.metrics.incoming("active", "UnscheduledPodAdd")

    def update(self, pod: Pod, old: Pod | None = None) -> None:
        """A pending pod changed (gates removed, labels edited, …); ``old`` is its previous view."""
        uid = pod.uid
        events = pod_update_events(old, pod) if old is not None else []
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
            self._index_keys(u.info)
            if u.gated:
                if self._gate(u.info):
                    self._index_gated(u.info)
                    return
                self._unpark(uid)
                self._unindex_gated(uid)
                where = self._requeue(u.info)
                if self.metrics is not None:
                    self.metrics.incoming(where, "UnscheduledPodUpdate")
                return
            strategy = Strategy.AFTER_BACKOFF if not events else Strategy.SKIP
            for event in events:
                strategy = max(strategy, self._worth_requeuing(u.info, event, old, pod))
                if strategy is Strategy.IMMEDIATELY:
                    break
            if strategy is not Strategy.SKIP:
                self._unpark(uid)
                self._movable.pop(uid, None)
                where = self._requeue_with(u.info, strategy)
                if self.metrics is not None:
                    self.metrics.incoming(where, "UnscheduledPodUpdate")
            return
        if uid in self._in_flight:
            self._in_flight[uid].pod = pod
            for event in events:
                self._record_in_flight(event, old, pod)
            return
        self.add(pod)

    def delete(self, uid: str) -> None:
        if self.metrics is not None:
            self.metrics.clear_unschedulable(uid)
        self.nominator.delete(uid)
        self._active.delete(uid)
        self._backoff.delete(uid)
        self._unpark(uid)
        self._movable.pop(uid, None)
        self._unindex_gated(uid)

    def _index_gated(self, info: QueuedPodInfo) -> None:
        uid = info.pod.uid
        held = self._gated_by.get(uid)
        if held == info.gated_by:
            return
        if held is not None:
            self._unindex_gated(uid)
        self._gated_by[uid] = info.gated_by
        self._gated.setdefault(info.gated_by, {})[uid] = None
        self._order[uid] = next(self._order_seq)

    def _unindex_gated(self, uid: str) -> None:
        plugin = self._gated_by.pop(uid, None)
        if plugin is not None:
            uids = self._gated.get(plugin)
            if uids is not None:
                uids.pop(uid, None)
                if not uids:
                    del self._gated[plugin]

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
        if self.metrics is not None:
            self.metrics.clear_unschedulable(info.pod.uid)
        return info

    def pop_specific(self, uid: str) -> QueuedPodInfo | None:
        """Take one pod out of the queue for the running cycle, wherever it waits (upstream
        ``PopSpecificPod``: the pod group cycle takes its group's pods with the one popped). A pod
        held at PreEnqueue or already in flight stays where it is: None."""
        if uid in self._in_flight:
            return None
        info = self._active.get(uid)
        if info is not None:
            self._active.delete(uid)
        else:
            info = self._backoff.get(uid)
            if info is not None:
                self._backoff.delete(uid)
            else:
                u = self._unschedulable.get(uid)
                if u is None or u.gated:
                    return None
                self._unpark(uid)
                self._movable.pop(uid, None)
                info = u.info
        info.attempts += 1
        if info.initial_attempt_timestamp is None:
            info.initial_attempt_timestamp = self._now()
        self._in_flight[uid] = info
        self._in_flight_events[uid] = []
        if self.metrics is not None:
            self.metrics.clear_unschedulable(uid)
        return info

    def activate(self, uids: Iterable[str]) -> None:
        """Move these pods to activeQ from backoffQ or unschedulablePods (upstream ``Activate``);
        gated pods, pods in flight and unknown ones are left alone."""
        for uid in uids:
            info = self._backoff.get(uid)
            if info is not None:
                self._backoff.delete(uid)
                self._active.push(uid, info)
                continue
            u = self._unschedulable.get(uid)
            if u is None or u.gated:
                continue
            self._unpark(uid)
            self._movable.pop(uid, None)
            self._active.push(uid, u.info)
            if self.metrics is not None:
                self.metrics.incoming("active", "ForceActivate")

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
        m = self.metrics
        if m is not None:
            m.mark_unschedulable(info)
        if error or not (info.unschedulable_plugins or info.pending_plugins):
            self._backoff.push(uid, info)
            if m is not None:
                m.incoming("backoff", "ScheduleAttemptFailure")
            return
        # Did anything that happened while the pod was being scheduled change its verdict
        # (upstream ``determineSchedulingHintForInFlightPod``)?
        strategy = Strategy.SKIP
        for e in events:
            strategy = max(strategy, self._worth_requeuing(info, e.event, e.old, e.new))
            if strategy is Strategy.IMMEDIATELY or (strategy and not info.pending_plugins):
                break
        if strategy is Strategy.IMMEDIATELY:
            self._active.push(uid, info)
            where = "active"
        elif strategy is Strategy.AFTER_BACKOFF:
            self._backoff.push(uid, info)
            where = "backoff"
        else:
            self._park(_Unschedulable(info, self._now(), gated=False))
            self._movable[uid] = None
            self._order[uid] = next(self._order_seq)
            where = "unschedulable"
        if m is not None:
            m.incoming(where, "ScheduleAttemptFailure")

    def _requeue(self, info: QueuedPodInfo) -> str:
        """Back to backoffQ or activeQ; returns which ("backoff" or "active")."""
        if self._backing_off(info):
            self._backoff.push(info.pod.uid, info)
            return "backoff"
        self._active.push(info.pod.uid, info)
        return "active"

    def _requeue_with(self, info: QueuedPodInfo, strategy: Strategy) -> str:
        """Upstream ``requeuePodWithQueueingStrategy`` for a pod leaving unschedulablePods; returns
        the queue it went to."""
        if strategy is Strategy.IMMEDIATELY:
            self._active.push(info.pod.uid, info)
            return "active"
        return self._requeue(info)

    # -- events ----------------------------------------------------------------------------------
    def _events_for(self, pod: Pod) -> dict[str, list[ClusterEventWithHint]]:
        return self._profile_events.get(pod.scheduler_name, self._default_events)

    def _worth_requeuing(self, info: QueuedPodInfo, event: ClusterEvent, old: Any, new: Any) -> Strategy:
        """Upstream ``isPodWorthRequeuing``: ask the hints of the plugins that rejected the pod (or left
        it pending) and registered for the event."""
        rejectors = info.unschedulable_plugins | info.pending_plugins
        if not rejectors or event.is_wildcard:
            return Strategy.AFTER_BACKOFF
        registered = self._events_for(info.pod)
        strategy = Strategy.SKIP
        for plugin in sorted(rejectors):
            for reg in registered.get(plugin, ()):
                if not reg.event.matches(event):
                    continue
                hint = QueueingHint.QUEUE
                if reg.hint is not None:
                    try:
                        hint = reg.hint(info.pod, old, new)
                    except Exception:
                        # A failing hint must not strand the pod: treat it as Queue, like upstream.
                        log.exception("queueing hint of %s failed for pod %s", plugin, info.pod.key)
                if hint is QueueingHint.QUEUE_SKIP:
                    continue
                if plugin in info.pending_plugins:
                    return Strategy.IMMEDIATELY
                if not info.pending_plugins:
                    return Strategy.AFTER_BACKOFF
                strategy = Strategy.AFTER_BACKOFF
        return strategy

    def _record_in_flight(self, event: ClusterEvent, old: Any, new: Any) -> None:
        if self._in_flight_events:
            seen = InFlightEvent(event, old, new)
            for events in self._in_flight_events.values():
                events.append(seen)

    def move_all_to_active_or_backoff(
        self,
        event: ClusterEvent,
        old: Any = None,
        new: Any = None,
        *,
        pre_check: Callable[[QueuedPodInfo], bool] | None = None,
    ) -> int:
        """A cluster event happened (``old``/``new``: the changed object's views): requeue every
        unschedulable pod that passes ``pre_check`` and that a hint says the event may help.
        Returns how many moved."""
        self._record_in_flight(event, old, new)
        moved = 0
        concerned = self._concerned(event, old, new)
        for uid in self._visit(self._movable, concerned):
            u = self._unschedulable[uid]
            if pre_check is not None and not pre_check(u.info):
                continue
            strategy = self._worth_requeuing(u.info, event, old, new)
            if strategy is Strategy.SKIP:
                continue
            self._unpark(uid)
            del self._movable[uid]
            where = self._requeue_with(u.info, strategy)
            if self.metrics is not None:
                self.metrics.moved(where, event)
            moved += 1
        if self._gated:
            moved += self._move_gated(event, old, new, pre_check, concerned)
        return moved

    # -- waiting pods by key -----------------------------------------------------------------------
    def _park(self, u: _Unschedulable) -> None:
        self._unschedulable[u.info.pod.uid] = u
        self._index_keys(u.info)

    def _unpark(self, uid: str) -> _Unschedulable | None:
        self._order.pop(uid, None)
        if self._keyed:
            self._unindex_keys(uid)
        return self._unschedulable.pop(uid, None)

    def _index_keys(self, info: QueuedPodInfo) -> None:
        """File a waiting pod under the plugins that rejected it and the keys its profile's
        keyed hints give it."""
        if not self._keyed:
            return
        uid = info.pod.uid
        self._unindex_keys(uid)
        rejectors = info.unschedulable_plugins | info.pending_plugins
        if not rejectors:
            # Every event moves such a pod (``_worth_requeuing``).
            self._unkeyed.add(uid)
            return
        ids = {id(reg) for regs in self._events_for(info.pod).values() for reg in regs}
        keys: list[tuple[int, Hashable]] = []
        try:
            for index, _, reg in self._keyed:
                if id(reg) in ids and reg.keys is not None:
                    keys.extend((index, key) for key in reg.keys.of_pod(info.pod))
        except Exception:
            log.exception("hint keys failed for pod %s", info.pod.key)
            self._unkeyed.add(uid)
            return
        for entry in keys:
            self._by_key.setdefault(entry, set()).add(uid)
        for plugin in rejectors:
            self._by_rejector.setdefault(plugin, set()).add(uid)
        self._filed[uid] = (keys, set(rejectors))

    def _unindex_keys(self, uid: str) -> None:
        self._unkeyed.discard(uid)
        filed = self._filed.pop(uid, None)
        if filed is None:
            return
        keys, rejectors = filed
        for key in keys:
            _discard(self._by_key, key, uid)
        for plugin in rejectors:
            _discard(self._by_rejector, plugin, uid)

    def _concerned(self, event: ClusterEvent, old: Any, new: Any) -> set[str] | None:
        """The waiting pods an event can move (None: any): those rejected by a plugin with a
        registration for it, and for a registration with keys, only those with its keys."""
        if not self._keyed or not self._unschedulable or event.is_wildcard:
            return None
        slot = (event.resource, int(event.action))
        matching = self._matching.get(slot)
        if matching is None:
            matching = self._matching[slot] = self._registered_for(event)
        unkeyed, keyed = matching
        concerned = set(self._unkeyed)
        for plugin in unkeyed:
            concerned |= self._by_rejector.get(plugin, set())
        for index, plugin, keys in keyed:
            try:
                wanted = keys.of_event(old, new)
            except Exception:
                log.exception("hint keys failed for event %s", event)
                wanted = None
            if wanted is None:
                concerned |= self._by_rejector.get(plugin, set())
                continue
            for key in wanted:
                concerned |= self._by_key.get((index, key), set())
        return concerned

    def _registered_for(self, event: ClusterEvent) -> tuple[set[str], list[tuple[int, str, HintKeys]]]:
        unkeyed: set[str] = set()
        keyed: list[tuple[int, str, HintKeys]] = []
        index_of = {id(reg): index for index, _, reg in self._keyed}
        for table in (self._default_events, *self._profile_events.values()):
            for plugin, regs in table.items():
                for reg in regs:
                    if not reg.event.matches(event):
                        continue
                    if reg.keys is None:
                        unkeyed.add(plugin)
                    else:
                        keyed.append((index_of[id(reg)], plugin, reg.keys))
        return unkeyed, keyed

    def _visit(self, uids: Mapping[str, None], concerned: set[str] | None) -> list[str]:
        """``uids`` in their order, or those of them an event concerns."""
        if concerned is None:
            return list(uids)
        order = self._order
        return sorted((uid for uid in concerned if uid in uids), key=order.__getitem__)

    def _registers(self, plugin: str, event: ClusterEvent) -> bool:
        """Whether ``plugin`` registered ``event`` in any profile."""
        tables = [self._default_events, *self._profile_events.values()]
        return any(reg.event.matches(event) for t in tables for reg in t.get(plugin, ()))

    def _move_gated(
        self,
        event: ClusterEvent,
        old: Any,
        new: Any,
        pre_check: Callable[[QueuedPodInfo], bool] | None,
        concerned: set[str] | None = None,
    ) -> int:
        """Gated pods whose gating plugin registered the event and whose hint answers Queue are
        asked again (upstream runs PreEnqueue when such a pod moves): let in, or kept gated."""
        moved = 0
        for plugin, uids in list(self._gated.items()):
            if event.is_wildcard or not self._registers(plugin, event):
                continue
            for uid in self._visit(uids, concerned):
                u = self._unschedulable[uid]
                if pre_check is not None and not pre_check(u.info):
                    continue
                if self._worth_requeuing(u.info, event, old, new) is Strategy.SKIP:
                    continue
                if self._gate(u.info):
                    self._index_gated(u.info)
                    self._index_keys(u.info)
                    continue
                self._unpark(uid)
                self._unindex_gated(uid)
                where = self._requeue(u.info)
                if self.metrics is not None:
                    self.metrics.moved(where, event)
                moved += 1
        return moved

    def flush_backoff_completed(self) -> int:
        now = self._now()
        moved = 0
        while True:
            head = self._backoff.peek()
            if head is None or self.backoff_expiry(head) > now:
                if moved and self.metrics is not None:
                    self.metrics.incoming("active", "BackoffComplete", moved)
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
            gone = self._unpark(uid)
            assert gone is not None
            where = self._requeue(gone.info)
            if self.metrics is not None:
                self.metrics.incoming(where, "UnschedulableTimeout")
        return len(stale)

    def pods(self) -> Iterable[QueuedPodInfo]:
        yield from self._active
        yield from self._backoff
        for u in self._unschedulable.values():
            yield u.info


def _discard(index: dict[Any, set[str]], key: Any, uid: str) -> None:
    uids = index.get(key)
    if uids is not None:
        uids.discard(uid)
        if not uids:
            del index[key]


def _keyed_registrations(
    tables: Iterable[Mapping[str, list[ClusterEventWithHint]]],
) -> list[tuple[int, str, ClusterEventWithHint]]:
    """The registrations with :class:`HintKeys`, each once, numbered, with their plugin."""
    seen: dict[int, tuple[str, ClusterEventWithHint]] = {}
    for table in tables:
        for plugin, regs in table.items():
            for reg in regs:
                if reg.keys is not None:
                    seen.setdefault(id(reg), (plugin, reg))
    return [(index, plugin, reg) for index, (plugin, reg) in enumerate(seen.values())]


def _with_hints(events: PluginEvents) -> dict[str, list[ClusterEventWithHint]]:
    return {
        name: [e if isinstance(e, ClusterEventWithHint) else ClusterEventWithHint(e) for e in regs]
        for name, regs in events.items()
    }
