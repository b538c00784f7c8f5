"""Event expiry as kube-apiserver's ``--event-ttl``: an Event goes once its TTL has passed, and
outlives it by at most what an etcd lease shared by the writes of a few seconds adds (5 % of the
TTL, at most a minute), whatever the TTL."""

from __future__ import annotations

from pathlib import Path

import pytest

from kubesched.controllers import eventttl
from kubesched.controllers.manager import ControllerManager
from kubesched.store.sqlite import SqliteStore


@pytest.mark.parametrize(("ttl", "interval"), [(3600.0, 60.0), (60.0, 3.0), (7200.0, 60.0), (20.0, 1.0)])
def test_sweep_interval_is_the_lease_reuse_duration(tmp_path: Path, ttl: float, interval: float) -> None:
    store = SqliteStore(tmp_path / "cluster.db")
    try:
        assert ControllerManager(store, event_ttl=ttl).event_ttl.sweep_interval == interval
    finally:
        store.close()


@pytest.mark.parametrize("ttl", [60.0, 3600.0])
def test_an_event_lives_its_ttl_and_at_most_one_sweep_more(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, ttl: float
) -> None:
    clock = [1_000_000.0]
    monkeypatch.setattr(eventttl.time, "time", lambda: clock[0])
    store = SqliteStore(tmp_path / "cluster.db", now=lambda: clock[0])
    try:
        manager = ControllerManager(store, event_ttl=ttl)
        regarding = {"kind": "Pod", "metadata": {"name": "p", "namespace": "default", "uid": "u"}}
        made = clock[0]
        store.record_event(regarding, "Normal", "Scheduled", "Binding", "ok", "default-scheduler")
        gone = None
        while gone is None and clock[0] < made + 2 * ttl:
            manager.tick()
            if not store.list("Event"):
                gone = clock[0]
            clock[0] += 0.5
        assert gone is not None
        # Creation times have whole seconds: the Event may look up to a second older than it is.
        assert ttl - 1 < gone - made <= ttl + manager.event_ttl.sweep_interval + 0.5
    finally:
        store.close()
