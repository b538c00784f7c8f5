"""Events recorded through a served cluster's store join a series as client-go's events
broadcaster does: one Event per isomorphic occurrence within six minutes, its count going up."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kubesched.apiserver.convert import event_to_core
from kubesched.store.sqlite import SERIES_WINDOW, SqliteStore

POD = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "default", "uid": "u1"}}


def _store(tmp_path: Path, clock: list[float]) -> SqliteStore:
    return SqliteStore(tmp_path / "cluster.db", now=lambda: clock[0])


def _record(
    store: SqliteStore, note: str = "0/3 nodes are available", reason: str = "FailedScheduling"
) -> None:
    store.record_event(POD, "Warning", reason, "Scheduling", note, "default-scheduler")


def test_isomorphic_events_make_one_series(tmp_path: Path) -> None:
    clock = [1_700_000_000.0]
    store = _store(tmp_path, clock)
    _record(store)
    (first,) = store.list("Event")
    assert "series" not in first
    clock[0] += 10
    _record(store, note="0/4 nodes are available")  # the note is not part of what makes it the same
    clock[0] += 10
    _record(store)
    (event,) = store.list("Event")
    assert event["metadata"]["name"] == first["metadata"]["name"]
    assert event["series"] == {"count": 3, "lastObservedTime": "2023-11-14T22:13:40.000000Z"}
    assert event["note"] == "0/3 nodes are available"
    core: dict[str, Any] = event_to_core(dict(event))
    assert core["count"] == 3 and core["lastTimestamp"] == "2023-11-14T22:13:40Z"
    assert core["firstTimestamp"] == first["eventTime"]

    # Another reason, or the same after the series ended, is an Event of its own.
    _record(store, reason="Preempted")
    clock[0] += SERIES_WINDOW + 1
    _record(store)
    assert len(store.list("Event")) == 3
    store.close()


def test_a_series_whose_event_is_gone_starts_again(tmp_path: Path) -> None:
    clock = [1_700_000_000.0]
    store = _store(tmp_path, clock)
    _record(store)
    (event,) = store.list("Event")
    store.delete("Event", "default", event["metadata"]["name"])
    _record(store)
    (again,) = store.list("Event")
    assert again["metadata"]["name"] != event["metadata"]["name"] and "series" not in again
    store.close()


def test_controllers_events_aggregate_only_when_their_messages_match(tmp_path: Path) -> None:
    clock = [1_700_000_000.0]
    store = _store(tmp_path, clock)
    for note in ("Created pod: a", "Created pod: b", "Created pod: a"):
        store.record_event(POD, "Normal", "SuccessfulCreate", "Create", note, "job-controller")
    events = sorted(store.list("Event"), key=lambda e: e["note"])
    assert [(e["note"], (e.get("series") or {}).get("count", 1)) for e in events] == [
        ("Created pod: a", 2),
        ("Created pod: b", 1),
    ]
    store.close()


def test_the_series_followed_are_bounded_and_the_latest_still_aggregate(tmp_path: Path, monkeypatch) -> None:
    """More distinct events within the window than the store follows: the least recently observed
    series are let go (their next occurrence starts a new Event), the latest keep counting."""
    import kubesched.store.sqlite as sqlite_module

    monkeypatch.setattr(sqlite_module, "_SERIES_KEPT", 5)
    clock = [1_700_000_000.0]
    store = _store(tmp_path, clock)

    def pod(i: int) -> dict[str, Any]:
        return {**POD, "metadata": {"name": f"p{i}", "namespace": "default", "uid": f"u{i}"}}

    for i in range(8):
        clock[0] += 1
        store.record_event(pod(i), "Warning", "FailedScheduling", "Scheduling", "n", "default-scheduler")
    assert len(store._event_series) == 5
    store.record_event(pod(7), "Warning", "FailedScheduling", "Scheduling", "n", "default-scheduler")
    store.record_event(pod(0), "Warning", "FailedScheduling", "Scheduling", "n", "default-scheduler")
    counts = sorted(
        (e["regarding"]["name"], (e.get("series") or {}).get("count", 1)) for e in store.list("Event")
    )
    assert ("p7", 2) in counts  # still followed: joined its series
    assert [c for name, c in counts if name == "p0"] == [1, 1]  # let go: a new Event
    assert len(store._event_series) == 5
    store.close()
