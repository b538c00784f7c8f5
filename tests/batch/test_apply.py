"""Carrying out a session's decisions through the ports: a refused bind or an eviction of a pod
already gone is reported and tolerated; any other failure propagates, and the session still closes."""

from __future__ import annotations

import dataclasses
import threading
import time
from typing import Any

import pytest

from kubesched.batch.conf_loader import batch_conf_from_dict
from kubesched.batch.plugins.gang import GangPlugin
from kubesched.batch.scheduler import BatchScheduler
from kubesched.batch.session import Session
from kubesched.batch.testing import node, one_tier, pod, pod_group, queue, store_of
from kubesched.framework.outcome import PENDING, SCHEDULED
from kubesched.store.base import Conflict
from kubesched.store.memory import MemoryStore
from kubesched.store.parsers import informer_factory
from kubesched.store.ports import StorePorts

TIER = [{"name": "priority"}, {"name": "gang"}, {"name": "predicates"}, {"name": "proportion"}]


class _Binder:
    """Binds through the store, or raises ``fail`` (once) instead."""

    def __init__(self, store: MemoryStore, fail: Exception | None) -> None:
        self.store = store
        self.fail = fail

    def bind(self, namespace: str, name: str, uid: str, node_name: str) -> None:
        if self.fail is not None:
            exc, self.fail = self.fail, None
            raise exc
        self.store.bind(namespace, name, uid, node_name)


def _scheduler(objects: list[dict[str, Any]], actions: str, binder_fails: Exception | None = None) -> Any:
    store = store_of(objects)
    binder = _Binder(store, binder_fails)
    ports = dataclasses.replace(StorePorts(store).ports(), binder=binder)
    conf = batch_conf_from_dict(one_tier(actions, TIER))
    sched = BatchScheduler(informer_factory(store), ports, conf, now=lambda: 0.0)
    sched.informers.pump()
    return sched, store


def _one_pod() -> list[dict[str, Any]]:
    return [node("n1", "4", "4Gi"), queue("q1"), pod_group("pg", "q1", 1, "Inqueue"), pod("p", "", "pg")]


def test_a_refused_bind_leaves_the_pod_pending_and_a_later_session_binds_it() -> None:
    sched, store = _scheduler(_one_pod(), "allocate", binder_fails=Conflict("pod p changed"))
    sched.run_session()
    uid = store.get("Pod", "c1", "p")["metadata"]["uid"]
    outcome = sched.outcomes[uid]
    assert outcome.status == PENDING and outcome.message.startswith("binding rejected")
    assert sched.cache.pod_state(uid) is None  # the assumed pod was forgotten
    assert not store.get("Pod", "c1", "p")["spec"].get("nodeName")
    sched.informers.pump()
    sched.run_session()
    assert store.get("Pod", "c1", "p")["spec"]["nodeName"] == "n1"
    assert sched.outcomes[uid].status == SCHEDULED


def test_a_bind_failing_otherwise_propagates() -> None:
    sched, _ = _scheduler(_one_pod(), "allocate", binder_fails=RuntimeError("binder bug"))
    with pytest.raises(RuntimeError, match="binder bug"):
        sched.run_session()


def test_a_failing_action_still_closes_the_session(monkeypatch: pytest.MonkeyPatch) -> None:
    closed: list[Session] = []
    original = GangPlugin.on_session_close

    def spy(self: GangPlugin, ssn: Session) -> None:
        closed.append(ssn)
        original(self, ssn)

    class Boom:
        name = "boom"

        def execute(self, ssn: Session) -> None:
            raise RuntimeError("action bug")

    monkeypatch.setattr(GangPlugin, "on_session_close", spy)
    sched, _ = _scheduler(_one_pod(), "allocate")
    sched.cycle.actions = [Boom()]
    with pytest.raises(RuntimeError, match="action bug"):
        sched.run_session()
    assert len(closed) == 1


def test_an_eviction_of_a_pod_already_gone_is_skipped() -> None:
    objects = [
        node("n1", "2", "2Gi"),
        queue("q1"),
        queue("q2"),
        pod_group("pg1", "q1", 1, "Running"),
        pod_group("pg2", "q2", 1, "Inqueue"),
        pod("a1", "n1", "pg1"),
        pod("a2", "n1", "pg1"),
        pod("b1", "", "pg2"),
    ]
    sched, store = _scheduler(objects, "reclaim")
    evictor = _GoneFirst(store)
    sched.ports.evictor = evictor
    sched.run_session()
    assert len(evictor.tried) == 1
    assert sched.evicted == []


class _GoneFirst:
    """An evictor that finds every pod already deleted (by someone else, just before)."""

    def __init__(self, store: MemoryStore) -> None:
        self.ports = StorePorts(store)
        self.tried: list[str] = []

    def evict(self, namespace: str, name: str, reason: str, message: str) -> bool:
        self.tried.append(name)
        self.ports.store.delete("Pod", namespace, name)
        return self.ports.evict(namespace, name, reason, message)


class _SlowBinder:
    """Binds through the store after a pause, refusing one named pod; records overlapping binds."""

    def __init__(self, store: MemoryStore, refuse: str) -> None:
        self.store = store
        self.refuse = refuse
        self.lock = threading.Lock()
        self.active = 0
        self.most_active = 0

    def bind(self, namespace: str, name: str, uid: str, node_name: str) -> None:
        with self.lock:
            self.active += 1
            self.most_active = max(self.most_active, self.active)
        try:
            time.sleep(0.05)
            if name == self.refuse:
                raise Conflict(f"pod {name} changed")
            self.store.bind(namespace, name, uid, node_name)
        finally:
            with self.lock:
                self.active -= 1


def test_bind_workers_send_a_sessions_binds_side_by_side() -> None:
    objects = [node("n1", "16", "16Gi"), queue("q1"), pod_group("pg", "q1", 4, "Inqueue")]
    objects += [pod(f"p{i}", "", "pg") for i in range(6)]
    store = store_of(objects)
    binder = _SlowBinder(store, refuse="p3")
    ports = dataclasses.replace(StorePorts(store).ports(), binder=binder)
    conf = batch_conf_from_dict(one_tier("allocate", TIER))
    sched = BatchScheduler(informer_factory(store), ports, conf, now=lambda: 0.0, bind_workers=4)
    try:
        sched.informers.pump()
        sched.run_session()
    finally:
        sched.close()
    assert binder.most_active > 1
    bound = {p["metadata"]["name"] for p in store.list("Pod") if p["spec"].get("nodeName")}
    assert bound == {"p0", "p1", "p2", "p4", "p5"}
    refused = store.get("Pod", "c1", "p3")["metadata"]["uid"]
    assert sched.outcomes[refused].status == PENDING
    assert sched.cache.pod_state(refused) is None
    for name in bound:
        uid = store.get("Pod", "c1", name)["metadata"]["uid"]
        assert sched.outcomes[uid].status == SCHEDULED
        assert not sched.cache.pod_state(uid).assumed or sched.cache.pod_state(uid).binding_finished


def test_an_unschedulable_task_gets_one_failed_scheduling_event_per_new_reason() -> None:
    # Volcano records a Warning FailedScheduling event with each changed PodScheduled condition:
    # once for a pod left pending, not again in later sessions that find the same reason.
    objects = [node("n1", "1", "1Gi"), queue("q1"), pod_group("pg", "q1", 1, "Inqueue")]
    objects.append(pod("big", "", "pg", "4", "1Gi"))
    sched, store = _scheduler(objects, "allocate")
    for _ in range(3):
        sched.run_session()
        sched.informers.pump()
    events = [e for e in store.list("Event") if e["regarding"]["name"] == "big"]
    assert [(e["type"], e["reason"]) for e in events] == [("Warning", "FailedScheduling")]
    cond = next(
        c for c in store.get("Pod", "c1", "big")["status"]["conditions"] if c["type"] == "PodScheduled"
    )
    assert events[0]["note"] == cond["message"]
