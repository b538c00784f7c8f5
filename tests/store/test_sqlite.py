"""The SQLite store: write-through, resourceVersions across restarts, watch history."""

from __future__ import annotations

import pytest

from kubesched.store.base import Conflict, EventType, NotFound
from kubesched.store.sqlite import SqliteStore, TooOld


def _node(name: str) -> dict:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name},
        "status": {"allocatable": {"cpu": "4"}},
    }


def _pod(name: str) -> dict:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"containers": [{"name": "c", "image": "x"}]},
    }


def test_objects_and_versions_survive_reopen(tmp_path):
    db = tmp_path / "state.db"
    store = SqliteStore(db)
    store.create(_node("n1"))
    pod = store.create(_pod("p1"))
    store.bind("default", "p1", pod["metadata"]["uid"], "n1")
    store.create(_pod("p2"))
    gone = store.delete("Pod", "default", "p2")
    last = int(gone["metadata"]["resourceVersion"])
    assert store.resource_version == last
    store.close()

    again = SqliteStore(db)
    assert again.get("Pod", "default", "p1")["spec"]["nodeName"] == "n1"
    assert again.get("Pod", "default", "p2") is None
    assert again.resource_version == last
    created = again.create(_pod("p3"))
    assert int(created["metadata"]["resourceVersion"]) == last + 1
    # The pod's uid and default fields came back as they were stored.
    assert again.get("Pod", "default", "p1")["metadata"]["uid"] == pod["metadata"]["uid"]
    again.close()


def test_stale_update_conflicts_and_missing_delete(tmp_path):
    store = SqliteStore(tmp_path / "s.db")
    node = store.create(_node("n1"))
    store.update({**node, "metadata": {**node["metadata"], "labels": {"a": "b"}}})
    with pytest.raises(Conflict):
        store.update({**node, "metadata": {**node["metadata"], "labels": {"a": "c"}}})
    with pytest.raises(NotFound):
        store.delete("Node", None, "nope")


def test_changes_since_and_too_old(tmp_path):
    store = SqliteStore(tmp_path / "s.db", history=2)
    start = store.resource_version
    for i in range(3):
        store.create(_node(f"n{i}"))
    events = store.changes_since(start)
    assert [e.obj["metadata"]["name"] for e in events] == ["n0", "n1", "n2"]
    assert all(e.type == EventType.ADDED for e in events)
    mid = int(events[0].obj["metadata"]["resourceVersion"])
    assert [e.obj["metadata"]["name"] for e in store.changes_since(mid)] == ["n1", "n2"]
    for i in range(3, 8):
        store.create(_node(f"n{i}"))
    with pytest.raises(TooOld):
        store.changes_since(start)
    store.close()
    # After a restart, only changes from then on can be watched.
    again = SqliteStore(tmp_path / "s.db")
    with pytest.raises(TooOld):
        again.changes_since(start)
    assert again.changes_since(again.resource_version) == []
