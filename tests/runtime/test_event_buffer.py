"""Kept events: written in batches, one commit each, never lost while the process runs, and a
failing write costs only its own event."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from tests.runtime.test_realtime_driver import node, pod

from kubesched.plugins import default_registry
from kubesched.runtime.cluster import Cluster, ClusterOptions
from kubesched.runtime.driver import RealTimeDriver
from kubesched.runtime.event_buffer import BufferedEventRecorder
from kubesched.store.memory import MemoryStore
from kubesched.store.ports import StorePorts
from kubesched.store.sqlite import SqliteStore


def _pod(name: str) -> dict[str, Any]:
    return {"kind": "Pod", "metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}"}}


def _record(recorder: BufferedEventRecorder, name: str) -> None:
    recorder.record(_pod(name), "Normal", "Scheduled", "Binding", f"assigned {name}", "default-scheduler")


def _events(store: MemoryStore) -> list[str]:
    return sorted(str(e["regarding"]["name"]) for e in store.list("Event"))


class Clock:
    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        return self.t


def test_events_are_kept_until_flushed_then_written_in_one_commit(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "cluster.db")
    commits: list[int] = []
    transaction = store.transaction

    def counting_transaction() -> Any:
        commits.append(1)
        return transaction()

    recorder = BufferedEventRecorder(StorePorts(store), transaction=counting_transaction, max_batch=100)
    for i in range(5):
        _record(recorder, f"p{i}")
    assert _events(store) == [] and len(recorder) == 5
    assert recorder.flush() == 5
    assert _events(store) == [f"p{i}" for i in range(5)]
    assert commits == [1]
    assert recorder.flush() == 0
    store.close()
    # Written for good: a reopened store has them.
    again = SqliteStore(tmp_path / "cluster.db")
    assert _events(again) == [f"p{i}" for i in range(5)]
    again.close()


def test_a_full_buffer_is_written_by_the_record_that_fills_it() -> None:
    store = MemoryStore()
    recorder = BufferedEventRecorder(StorePorts(store), max_batch=3, now=Clock())
    _record(recorder, "a")
    _record(recorder, "b")
    assert _events(store) == []
    _record(recorder, "c")
    assert _events(store) == ["a", "b", "c"] and len(recorder) == 0


def test_an_event_kept_too_long_is_written_by_the_next_record() -> None:
    store = MemoryStore()
    clock = Clock()
    recorder = BufferedEventRecorder(StorePorts(store), max_batch=100, max_delay=0.2, now=clock)
    _record(recorder, "a")
    clock.t = 0.1
    _record(recorder, "b")
    assert _events(store) == []
    clock.t = 0.25
    _record(recorder, "c")
    assert _events(store) == ["a", "b", "c"]


class FlakySink:
    def __init__(self, store: MemoryStore, failing: str) -> None:
        self.ports = StorePorts(store)
        self.failing = failing

    def record(
        self, regarding: dict[str, Any], event_type: str, reason: str, action: str, note: str, reporter: str
    ) -> None:
        if regarding["metadata"]["name"] == self.failing:
            raise RuntimeError("the API server said no")
        self.ports.record(regarding, event_type, reason, action, note, reporter)


def test_a_failing_event_is_dropped_and_logged_and_the_others_are_written(
    caplog: pytest.LogCaptureFixture,
) -> None:
    store = MemoryStore()
    recorder = BufferedEventRecorder(FlakySink(store, "b"), max_batch=100)
    for name in "abc":
        _record(recorder, name)
    assert recorder.flush() == 2
    assert _events(store) == ["a", "c"]
    assert recorder.dropped == 1
    assert "dropping Scheduled event about default/b: the API server said no" in caplog.text


def test_max_batch_must_be_positive() -> None:
    with pytest.raises(ValueError, match="max_batch"):
        BufferedEventRecorder(StorePorts(MemoryStore()), max_batch=0)


def _buffered_driver(
    *, max_idle: float, max_delay: float
) -> tuple[MemoryStore, BufferedEventRecorder, RealTimeDriver]:
    """A scheduler on the embedded store recording through a buffer that never fills, and a
    real-time driver that flushes it when due and when it stops."""
    store = MemoryStore(now=time.time)
    registry = default_registry()
    scheduler = Cluster(store, ClusterOptions(registry=registry, now=time.time)).scheduler
    recorder = BufferedEventRecorder(StorePorts(store), max_batch=1000, max_delay=max_delay)
    scheduler.ports.events = recorder
    driver = RealTimeDriver(
        scheduler.informers,
        scheduler,
        store,
        max_idle=max_idle,
        on_idle=recorder.flush_due,
        on_stop=recorder.flush,
    )
    return store, recorder, driver


def test_the_idle_driver_writes_kept_events_once_they_are_due() -> None:
    """A scheduler recording through a buffer that never fills, on a driver whose idle waits may
    grow to 30 s: the Scheduled and FailedScheduling events still reach the store about
    ``max_delay`` after they were made, the driver woken for them."""
    store, _, driver = _buffered_driver(max_idle=30.0, max_delay=0.2)
    driver.start()
    try:
        store.create(node("n0"))
        time.sleep(0.5)  # the driver is idle and its waits have grown
        store.create(pod("fits", 1000))
        store.create(pod("too-big", 64000))
        start = time.monotonic()
        reasons: set[str] = set()
        while time.monotonic() < start + 5.0 and reasons != {"Scheduled", "FailedScheduling"}:
            reasons = {str(e.get("reason")) for e in store.list("Event")}
            time.sleep(0.01)
        assert reasons == {"Scheduled", "FailedScheduling"}
        assert time.monotonic() - start < 2.0
    finally:
        driver.stop(timeout=2.0)


def test_kept_events_are_due_max_delay_after_the_oldest() -> None:
    store = MemoryStore()
    clock = Clock()
    recorder = BufferedEventRecorder(StorePorts(store), max_batch=100, max_delay=0.2, now=clock)
    assert recorder.flush_due() is None
    _record(recorder, "a")
    clock.t = 0.05
    assert recorder.flush_due() == pytest.approx(0.15)
    assert _events(store) == []
    clock.t = 0.2
    assert recorder.flush_due() is None
    assert _events(store) == ["a"]


def test_a_stopping_driver_writes_what_is_still_kept() -> None:
    store, recorder, driver = _buffered_driver(max_idle=5.0, max_delay=3600.0)
    driver.start()
    time.sleep(0.05)  # the driver is in its idle wait now
    _record(recorder, "late")
    driver.stop(timeout=2.0)
    assert _events(store) == ["late"]
