"""The mirror store: applying watch events once, relists as differences, informers over it."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from kubesched.remote.mirror import MirrorStore, ReadOnlyMirror, newer, older
from kubesched.store.base import EventType, StoreError
from kubesched.store.parsers import informer_factory


def pod(name: str, rv: str, uid: str | None = None, node: str = "", ns: str = "default") -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": ns, "resourceVersion": rv, "uid": uid or f"uid-{name}"},
        "spec": {"nodeName": node, "containers": [{"name": "c", "image": "pause"}]},
    }


def types(events) -> list[tuple[str, str, str]]:
    return [(e.type.value, e.obj["metadata"]["name"], e.obj["metadata"]["resourceVersion"]) for e in events]


def test_resource_versions_compare_as_numbers_when_they_are():
    assert newer("10", "9") and not newer("9", "10") and not newer("7", "7")
    assert older("9", "10") and not older("10", "9")
    # Opaque versions: any different one is newer, none is known older.
    assert newer("b", "a") and newer("a", "b") and not newer("x", "x")
    assert not older("a", "b")


def test_events_apply_once_and_in_client_go_terms():
    mirror = MirrorStore()
    watch = mirror.watch()
    assert types(mirror.apply("Pod", "ADDED", pod("a", "5"))) == [("ADDED", "a", "5")]
    # Replays of what the mirror already holds change nothing.
    assert mirror.apply("Pod", "ADDED", pod("a", "5")) == []
    assert mirror.apply("Pod", "MODIFIED", pod("a", "4")) == []
    # An ADDED for an object held is a modification; a MODIFIED for an unknown one an addition.
    assert types(mirror.apply("Pod", "ADDED", pod("a", "7", node="n1"))) == [("MODIFIED", "a", "7")]
    assert types(mirror.apply("Pod", "MODIFIED", pod("b", "8"))) == [("ADDED", "b", "8")]
    # A deletion of an unknown object, or an older one, is dropped.
    assert mirror.apply("Pod", "DELETED", pod("zzz", "9")) == []
    assert mirror.apply("Pod", "DELETED", pod("a", "6")) == []
    deleted = mirror.apply("Pod", "DELETED", pod("a", "9"))
    assert types(deleted) == [("DELETED", "a", "9")]
    assert deleted[0].old is not None and deleted[0].old["metadata"]["resourceVersion"] == "7"
    # The same name, another object: the old one is deleted first.
    mirror.apply("Pod", "ADDED", pod("c", "10", uid="one"))
    assert types(mirror.apply("Pod", "MODIFIED", pod("c", "11", uid="two"))) == [
        ("DELETED", "c", "10"),
        ("ADDED", "c", "11"),
    ]
    assert [e.type.value for e in watch.drain()] == [
        "ADDED",
        "MODIFIED",
        "ADDED",
        "DELETED",
        "ADDED",
        "DELETED",
        "ADDED",
    ]
    assert sorted(p["metadata"]["name"] for p in mirror.list("Pod")) == ["b", "c"]
    assert mirror.skipped == 4


def test_replace_emits_only_the_differences():
    mirror = MirrorStore()
    mirror.replace(
        "Pod", [pod("keep", "1"), pod("change", "2"), pod("drop", "3"), pod("reborn", "4", uid="x")]
    )
    watch = mirror.watch(frozenset({"Pod"}))
    out = mirror.replace(
        "Pod", [pod("keep", "1"), pod("change", "6"), pod("reborn", "7", uid="y"), pod("new", "8")]
    )
    assert types(out) == [
        ("DELETED", "drop", "3"),
        ("MODIFIED", "change", "6"),
        ("DELETED", "reborn", "4"),
        ("ADDED", "reborn", "7"),
        ("ADDED", "new", "8"),
    ]
    assert len(watch) == 5
    assert mirror.replace("Pod", [p for p in mirror.list("Pod")]) == []
    assert mirror.get("Pod", "default", "change")["metadata"]["resourceVersion"] == "6"


def test_writes_are_refused_with_a_store_error():
    mirror = MirrorStore()
    for call in (
        lambda: mirror.create(pod("a", "1")),
        lambda: mirror.update(pod("a", "1")),
        lambda: mirror.delete("Pod", "default", "a"),
        lambda: mirror.bind("default", "a", "uid", "n1"),
        lambda: mirror.update_pod_condition("default", "a", {"type": "PodScheduled"}),
        lambda: mirror.record_event({}, "Normal", "R", "A", "n", "me"),
    ):
        with pytest.raises(ReadOnlyMirror, match="read-only") as info:
            call()
        assert isinstance(info.value, StoreError)


def test_write_listeners_run_after_each_batch_outside_the_lock():
    mirror = MirrorStore()
    calls: list[bool] = []

    def listener() -> None:
        # Another thread can take the lock while the listener runs: it is not held.
        got: list[bool] = []

        def take() -> None:
            got.append(mirror.lock.acquire(timeout=1))
            if got[0]:
                mirror.lock.release()

        t = threading.Thread(target=take)
        t.start()
        t.join()
        calls.append(got[0])

    mirror.add_write_listener(listener)
    mirror.apply_events("Pod", [(EventType.ADDED, pod("a", "1")), (EventType.ADDED, pod("b", "2"))])
    mirror.apply("Pod", "ADDED", pod("a", "1"))  # nothing applied: no call
    mirror.replace("Pod", [pod("a", "1")])
    assert calls == [True, True]
    mirror.remove_write_listener(listener)
    mirror.apply("Pod", "ADDED", pod("c", "3"))
    assert len(calls) == 2


def test_informers_list_and_follow_the_mirror():
    mirror = MirrorStore()
    mirror.replace(
        "Node", [{"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1", "resourceVersion": "1"}}]
    )
    mirror.apply("Pod", "ADDED", pod("a", "2"))
    informers = informer_factory(mirror)
    pods = informers.informer("Pod")
    nodes = informers.informer("Node")
    assert [p.name for p in pods.list()] == ["a"]
    assert [n.name for n in nodes.list()] == ["n1"]
    seen: list[tuple[str, str]] = []
    pods.add_handler(lambda ch: seen.append((ch.type.value, ch.view.node_name)), replay=False)
    mirror.apply("Pod", "MODIFIED", pod("a", "3", node="n1"))
    mirror.apply("Pod", "MODIFIED", pod("a", "3", node="n1"))  # a replay: not delivered
    mirror.apply("Pod", "DELETED", pod("a", "4", node="n1"))
    assert informers.pump() == 2
    assert seen == [("MODIFIED", "n1"), ("DELETED", "n1")]
    assert pods.list() == []
