"""The embedded cluster: an in-memory object store with resourceVersions and watch streams.

It plays the API server's storage for the simulation: it sets what storage owns (uid,
creationTimestamp, resourceVersion), ``bind`` is the Binding subresource, and every change is pushed
to the open watches as ADDED / MODIFIED / DELETED. Objects reach it already admitted
(``kubesched.registry.admission``).

Any thread may write: one re-entrant lock covers each operation together with the watch pushes it
makes, so every watch sees changes in the order the store made them. Watches are drained by their
consumer alone (the driver, through the informers), outside the lock.
"""

from __future__ import annotations

import functools
import itertools
import math
import threading
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any, Concatenate, ParamSpec, TypeVar

from kubesched.api.kinds import SHARED_KINDS, store_kind
from kubesched.api.objects import object_ref
from kubesched.store.base import (
    AlreadyExists,
    Conflict,
    EventType,
    NotFound,
    Obj,
    Watch,
    WatchEvent,
    object_key,
    random_uid,
)

P = ParamSpec("P")
R = TypeVar("R")


def _locked(method: Callable[Concatenate[MemoryStore, P], R]) -> Callable[Concatenate[MemoryStore, P], R]:
    """The method runs holding the store's lock."""

    def wrapper(self: MemoryStore, /, *args: P.args, **kwargs: P.kwargs) -> R:
        with self.lock:
            return method(self, *args, **kwargs)

    wrapper.__doc__ = method.__doc__

    return wrapper


#: 9999-12-31T23:59:59Z, the last second an RFC 3339 timestamp (and ``datetime``) can hold.
_LAST_TIMESTAMP = 253402300799.0


def format_timestamp(seconds: float) -> str:
    """``seconds`` since the epoch as an RFC 3339 stamp of whole seconds, as objects carry them."""
    # Every write stamps the time, and many writes share a second (a virtual clock does not move
    # within a scheduling step; stamps have whole-second resolution): each second is formatted once.
    # The cache is keyed on the whole second, as wall-clock readings all differ.
    # Virtual time may run past year 9999 (long durations back to back); the stamp saturates there.
    return _second_stamp(math.floor(min(seconds, _LAST_TIMESTAMP)))


@functools.lru_cache(maxsize=256)
def _second_stamp(second: int) -> str:
    return datetime.fromtimestamp(second, tz=UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class MemoryStore:
    """ClusterStore kept in process memory. Objects handed out must be treated as read-only."""

    def __init__(self, now: Callable[[], float] | None = None, uid_seed: int | None = None) -> None:
        #: Held by every read and write, and by whoever must list and start following kinds at once.
        self.lock = threading.RLock()
        #: The name of the Event :meth:`record_event` made last.
        self._last_event_name = ""
        self._objects: dict[tuple[str, str, str], Obj] = {}
        self._by_kind: dict[str, dict[tuple[str, str, str], Obj]] = {}
        self._watches: list[Watch] = []
        self._write_listeners: list[Callable[[], None]] = []
        self._rv = itertools.count(1)
        self._event_seq = itertools.count(1)
        self._now = now or (lambda: 0.0)
        # Deterministic uids in simulation so that identical runs give identical output.
        self._uid_counter = itertools.count(1) if uid_seed is not None else None

    def now(self) -> float:
        """The store's clock (virtual in a simulation), in seconds since the epoch."""
        return self._now()

    # -- helpers ---------------------------------------------------------------------------------
    def _new_uid(self) -> str:
        if self._uid_counter is not None:
            return f"00000000-0000-0000-0000-{next(self._uid_counter):012d}"
        return random_uid()

    def _emit(self, event: WatchEvent) -> None:
        for w in self._watches:
            w.push(event)
        for listener in self._write_listeners:
            listener()

    # -- write notification ----------------------------------------------------------------------
    @_locked
    def add_write_listener(self, listener: Callable[[], None]) -> None:
        """Call ``listener`` after every write, on the writing thread (a real-time driver waiting
        for work uses it to wake up); it must be quick and must not write to the store."""
        self._write_listeners.append(listener)

    @_locked
    def remove_write_listener(self, listener: Callable[[], None]) -> None:
        self._write_listeners = [f for f in self._write_listeners if f is not listener]

    @staticmethod
    def _key(obj: Obj) -> tuple[str, str, str]:
        meta = obj.get("metadata") or {}
        kind = str(obj.get("kind"))
        if kind in SHARED_KINDS:
            kind = store_kind(str(obj.get("apiVersion") or ""), kind)
        return object_key(kind, meta.get("namespace"), str(meta.get("name")))

    def _put(self, key: tuple[str, str, str], obj: Obj) -> None:
        self._objects[key] = obj
        of_kind = self._by_kind.get(key[0])
        if of_kind is None:
            of_kind = self._by_kind[key[0]] = {}
        of_kind[key] = obj

    # -- ClusterStore ----------------------------------------------------------------------------
    # The writes every scheduled pod makes (create, bind, its event) take the lock inline rather than
    # through ``_locked``: one call less each.
    def create(self, obj: Obj) -> Obj:
        with self.lock:
            key = self._key(obj)
            if key in self._objects:
                raise AlreadyExists(f"{object_ref(obj)} already exists")
            new: dict[str, Any] = dict(obj)
            new["metadata"] = dict(new.get("metadata") or {})
            return self._add(key, new)

    def _add(self, key: tuple[str, str, str], new: dict[str, Any]) -> Obj:
        """Store ``new`` as a created object, under the lock; ``new`` and its metadata are the
        caller's own, filled in here."""
        meta = new["metadata"]
        if key[1]:
            meta["namespace"] = key[1]
        # The API server owns uid and creationTimestamp: it sets them on every create, whatever the
        # client sent (two copies of one ``kubectl get -o yaml`` output are two objects).
        meta["uid"] = self._new_uid()
        meta["creationTimestamp"] = format_timestamp(self._now())
        meta["resourceVersion"] = str(next(self._rv))
        self._put(key, new)
        self._emit(WatchEvent(EventType.ADDED, key[0], new))
        return new

    @_locked
    def update(self, obj: Obj) -> Obj:
        key = self._key(obj)
        old = self._objects.get(key)
        if old is None:
            raise NotFound(f"{object_ref(obj)} not found")
        meta = dict(obj.get("metadata") or {})
        given_rv = meta.get("resourceVersion")
        if given_rv and given_rv != old["metadata"]["resourceVersion"]:
            raise Conflict(f"{object_ref(obj)}: resourceVersion {given_rv} is stale")
        meta["uid"] = old["metadata"]["uid"]
        meta["creationTimestamp"] = old["metadata"].get("creationTimestamp")
        meta["resourceVersion"] = str(next(self._rv))
        new = dict(obj)
        new["metadata"] = meta
        self._put(key, new)
        self._emit(WatchEvent(EventType.MODIFIED, key[0], new, old))
        return new

    @_locked
    def delete(self, kind: str, namespace: str | None, name: str) -> Obj:
        key = object_key(kind, namespace, name)
        old = self._objects.pop(key, None)
        if old is None:
            raise NotFound(f"{kind} {name} not found")
        del self._by_kind[kind][key]
        self._emit(WatchEvent(EventType.DELETED, kind, old))
        return old

    @_locked
    def get(self, kind: str, namespace: str | None, name: str) -> Obj | None:
        return self._objects.get(object_key(kind, namespace, name))

    @_locked
    def list(self, kind: str) -> list[Obj]:
        return list(self._by_kind.get(kind, {}).values())

    @_locked
    def watch(self, kinds: frozenset[str] | None = None) -> Watch:
        w = Watch(kinds)
        self._watches.append(w)
        return w

    def bind(self, namespace: str, name: str, uid: str, node_name: str) -> Obj:
        """The Binding subresource: sets spec.nodeName once; binding a bound pod is a conflict."""
        with self.lock:
            key = ("Pod", namespace or "default", name)  # object_key's rule for a namespaced kind
            old = self._objects.get(key)
            if old is None:
                raise NotFound(f"pod {namespace}/{name} not found")
            old_meta, old_spec = old["metadata"], old["spec"]
            if uid and old_meta.get("uid") != uid:
                raise Conflict(f"pod {namespace}/{name} was replaced (uid changed)")
            if old_spec.get("nodeName"):
                raise Conflict(f"pod {namespace}/{name} is already assigned to node {old_spec['nodeName']!r}")
            if ("Node", "", node_name) not in self._objects:
                raise NotFound(f"node {node_name!r} not found")
            new = dict(old)
            new["spec"] = {**old_spec, "nodeName": node_name}
            old_status = old.get("status") or {}
            phase = old_status.get("phase")
            if old_status.keys() <= {"phase"} and (phase is None or isinstance(phase, str)):
                # A pod bound at its first try: its status is its phase and the PodScheduled
                # condition, the same for every such pod bound in that second.
                new["status"] = _first_bound_status(phase, format_timestamp(self._now()))
            else:
                status = dict(old_status)
                status["conditions"] = _set_condition(status.get("conditions"), _SCHEDULED, self._now())
                status.pop("nominatedNodeName", None)
                new["status"] = status
            new["metadata"] = {**old_meta, "resourceVersion": str(next(self._rv))}
            self._put(key, new)
            self._emit(WatchEvent(EventType.MODIFIED, "Pod", new, old))
            return new

    def update_pod_condition(
        self, namespace: str, name: str, condition: Mapping[str, Any], nominated_node: str | None = None
    ) -> Obj | None:
        key = object_key("Pod", namespace, name)
        old = self._objects.get(key)
        if old is None:
            return None
        status = dict(old.get("status") or {})
        status["conditions"] = _set_condition(status.get("conditions"), condition, self._now())
        if nominated_node is not None:
            if nominated_node:
                status["nominatedNodeName"] = nominated_node
            else:
                status.pop("nominatedNodeName", None)
        if status == old.get("status"):
            return old
        new = dict(old)
        new["status"] = status
        new["metadata"] = {**old["metadata"], "resourceVersion": str(next(self._rv))}
        self._put(key, new)
        self._emit(WatchEvent(EventType.MODIFIED, "Pod", new, old))
        return new

    def record_event(
        self, regarding: Obj, event_type: str, reason: str, action: str, note: str, reporter: str
    ) -> None:
        """Write an ``events.k8s.io/v1`` Event, as the scheduler's event recorder does.

        One per scheduled pod: the Event is built as a dict of its own and stored as it is, not
        copied by :meth:`create`."""
        meta = regarding.get("metadata") or {}
        namespace = meta.get("namespace") or "default"
        with self.lock:
            seq = next(self._event_seq)
            name = f"{meta.get('name')}.{seq:016x}"
            event: dict[str, Any] = {
                "apiVersion": "events.k8s.io/v1",
                "kind": "Event",
                "metadata": {"name": name, "namespace": namespace},
                "eventTime": format_timestamp(self._now()),
                "reportingController": reporter,
                "reportingInstance": _reporting_instance(reporter),
                "action": action,
                "reason": reason,
                "regarding": {
                    "kind": regarding.get("kind"),
                    "namespace": namespace,
                    "name": meta.get("name"),
                    "uid": meta.get("uid"),
                },
                "note": note,
                "type": event_type,
            }
            key = ("Event", namespace, name)
            if key in self._objects:
                raise AlreadyExists(f"{object_ref(event)} already exists")
            self._add(key, event)
            self._last_event_name = name


#: The condition a bind sets (read only: ``_set_condition`` copies what it keeps).
_SCHEDULED: Mapping[str, Any] = {"type": "PodScheduled", "status": "True"}


def _set_condition(conditions: Any, condition: Mapping[str, Any], now: float) -> list[dict[str, Any]]:
    """Replace the condition of the same type; lastTransitionTime moves only when status changes."""
    out: list[dict[str, Any]] = []
    replaced = False
    for cond in conditions or []:
        if cond.get("type") == condition.get("type"):
            # The condition is replaced whole (upstream's UpdatePodCondition): a reason it no longer
            # gives, such as SchedulingGated once the pod is bound, goes with the old one.
            new = dict(condition)
            if cond.get("status") != condition.get("status"):
                new["lastTransitionTime"] = format_timestamp(now)
            elif "lastTransitionTime" not in new and cond.get("lastTransitionTime"):
                new["lastTransitionTime"] = cond["lastTransitionTime"]
            out.append(new)
            replaced = True
        else:
            out.append(cond)
    if not replaced:
        if condition is _SCHEDULED:
            out.append(_scheduled_at(format_timestamp(now)))
        else:
            out.append({**condition, "lastTransitionTime": format_timestamp(now)})
    return out


@functools.lru_cache(maxsize=64)
def _scheduled_at(stamp: str) -> dict[str, Any]:
    """The PodScheduled condition a bind adds, one dict for every pod bound in that second: stored
    objects are never changed in place, and a simulation binds thousands of pods a virtual second."""
    return {**_SCHEDULED, "lastTransitionTime": stamp}


@functools.lru_cache(maxsize=64)
def _first_bound_status(phase: str | None, stamp: str) -> dict[str, Any]:
    """The status a bind gives a pod whose status held nothing but ``phase`` (read only)."""
    conditions = [_scheduled_at(stamp)]
    return {"conditions": conditions} if phase is None else {"phase": phase, "conditions": conditions}


@functools.lru_cache(maxsize=64)
def _reporting_instance(reporter: str) -> str:
    """The ``reportingInstance`` of an Event ``reporter`` writes, one string for all its Events."""
    return f"{reporter}-kubesched"
