"""Shared informers: one watch, parse once, listers, fan-out, replay to late handlers."""

from __future__ import annotations

from typing import Any

from kubesched.store.base import EventType
from kubesched.store.informers import Change, InformerFactory
from kubesched.store.memory import MemoryStore


def _pod(name: str, ns: str = "default", labels: dict[str, str] | None = None) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": ns, "labels": labels or {}},
    }


def test_lists_then_follows_and_parses_once() -> None:
    store = MemoryStore(uid_seed=0)
    store.create(_pod("a"))
    calls: list[str] = []

    def parse(obj: Any, previous: Any) -> str:
        calls.append(obj["metadata"]["name"])
        return f"view-{obj['metadata']['name']}"

    factory = InformerFactory(store, {"Pod": parse})
    pods = factory.informer("Pod")
    seen: list[list[tuple[EventType, str | None]]] = [[], []]
    for i in range(2):
        pods.add_handler(lambda c, i=i: seen[i].append((c.type, c.view)))
    assert pods.get("default", "a") == "view-a"
    store.create(_pod("b", "team"))
    store.delete("Pod", "default", "a")
    assert pods.get("team", "b") is None  # nothing applied before the pump
    assert factory.pump() == 2
    assert pods.get("team", "b") == "view-b" and pods.get("default", "a") is None
    assert [p for p in pods.in_namespace("team")] == ["view-b"]
    expected = [(EventType.ADDED, "view-a"), (EventType.ADDED, "view-b"), (EventType.DELETED, "view-a")]
    assert seen[0] == expected and seen[1] == expected
    assert calls == ["a", "b"]  # two subscribers, each object parsed once


def test_bad_object_is_skipped_with_no_view() -> None:
    store = MemoryStore(uid_seed=0)

    def parse(obj: Any, previous: Any) -> str:
        if obj["metadata"]["name"] == "bad":
            raise ValueError("nope")
        return "ok"

    factory = InformerFactory(store, {"Pod": parse})
    pods = factory.informer("Pod")
    got: list[Change[Any]] = []
    pods.add_handler(got.append)
    store.create(_pod("bad"))
    store.create(_pod("good"))
    factory.pump()
    assert [c.view for c in got] == [None, "ok"]
    assert pods.list() == ["ok"]


def test_index_follows_updates() -> None:
    store = MemoryStore(uid_seed=0)
    factory = InformerFactory(store)
    pods = factory.informer("Pod")
    pods.add_index("app", lambda o: [o["metadata"]["labels"].get("app", "")])
    store.create(_pod("a", labels={"app": "web"}))
    factory.pump()
    assert [o["metadata"]["name"] for o in pods.by_index("app", "web")] == ["a"]
    obj = store.get("Pod", "default", "a")
    assert obj is not None
    store.update({**obj, "metadata": {**obj["metadata"], "labels": {"app": "db"}}})
    factory.pump()
    assert pods.by_index("app", "web") == [] and len(pods.by_index("app", "db")) == 1


def test_late_handler_gets_replay() -> None:
    store = MemoryStore(uid_seed=0)
    store.create(_pod("a"))
    factory = InformerFactory(store)
    got: list[str] = []
    factory.informer("Pod").add_handler(lambda c: got.append(c.obj["metadata"]["name"]))
    assert got == ["a"]


def test_index_drops_emptied_buckets_and_deleted_objects() -> None:
    store = MemoryStore(uid_seed=0)
    factory = InformerFactory(store)
    pods = factory.informer("Pod")
    pods.add_index("app", lambda o: [o["metadata"]["labels"].get("app", "")])
    for i in range(3):
        store.create(_pod(f"p{i}", labels={"app": f"a{i}"}))
    factory.pump()
    store.delete("Pod", "default", "p1")
    factory.pump()
    assert pods.by_index("app", "a1") == []
    assert [o["metadata"]["name"] for o in pods.by_index("app", "a2")] == ["p2"]
    assert "a1" not in pods._indexes["app"]
