"""The assume cache: upstream ``pkg/scheduler/util/assumecache/assume_cache_test.go`` (case and step
names verbatim). The cache is fed directly, as upstream's test informer does."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from kubesched.plugins.helper.assume_cache import (
    AssumeCache,
    AssumeCacheError,
    NotFoundError,
    ObjectNameError,
    object_key,
)


def make_obj(name: str, version: str, namespace: str = "") -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "resourceVersion": version}
    if namespace:
        meta["namespace"] = namespace
    return {"metadata": meta}


def verify(cache: AssumeCache, key: str, expected: object, expected_api: object) -> None:
    assert cache.get(key) is expected
    assert cache.get_api_obj(key) is expected_api


def verify_list(cache: AssumeCache, expected: list[Any], index_obj: object | None) -> None:
    got = cache.list(index_obj)
    assert sorted(got, key=object_key) == sorted(expected, key=object_key)


Event = tuple[str, Any, Any, bool]


class Handler:
    def __init__(self, cache: AssumeCache | None = None, block: threading.Event | None = None) -> None:
        self.lock = threading.Lock()
        self.events: list[Event] = []
        self.cache = cache
        self.block = block

    def on_add(self, obj: Any, initial_list: bool) -> None:
        with self.lock:
            self.events.append(("add", None, obj, initial_list))
        if self.cache is not None:
            self.cache.list(None)  # must not deadlock
        if self.block is not None:
            self.block.wait(5)

    def on_update(self, old: Any, new: Any) -> None:
        with self.lock:
            self.events.append(("update", old, new, False))

    def on_delete(self, obj: Any) -> None:
        with self.lock:
            self.events.append(("delete", None, obj, False))

    def flush(self) -> list[Event]:
        with self.lock:
            out, self.events = self.events, []
        return out


def same(got: list[Event], want: list[Event]) -> bool:
    return len(got) == len(want) and all(
        g[0] == w[0] and g[1] is w[1] and g[2] is w[2] and g[3] == w[3]
        for g, w in zip(got, want, strict=True)
    )


ASSUME_CASES: list[tuple[str, dict[str, Any], Any, type[Exception] | None]] = [
    ("success-same-version", make_obj("pvc1", "5"), make_obj("pvc1", "5"), None),
    ("success-new-higher-version", make_obj("pvc1", "5"), make_obj("pvc1", "6"), None),
    ("fail-old-not-found", make_obj("pvc2", "5"), make_obj("pvc1", "5"), NotFoundError),
    ("fail-new-lower-version", make_obj("pvc1", "5"), make_obj("pvc1", "4"), AssumeCacheError),
    ("fail-new-bad-version", make_obj("pvc1", "5"), make_obj("pvc1", "a"), AssumeCacheError),
    ("fail-old-bad-version", make_obj("pvc1", "a"), make_obj("pvc1", "5"), AssumeCacheError),
    ("fail-new-bad-object", make_obj("pvc1", "5"), 1, ObjectNameError),
]


@pytest.mark.parametrize(("name", "old", "new", "error"), ASSUME_CASES, ids=[c[0] for c in ASSUME_CASES])
def test_assume(name: str, old: dict[str, Any], new: Any, error: type[Exception] | None) -> None:
    cache = AssumeCache(None, "TestObject")
    events = Handler()
    cache.add_event_handler(events)
    cache.add(old)
    key = old["metadata"]["name"]
    verify(cache, key, old, old)
    if error is None:
        cache.assume(new)
    else:
        with pytest.raises(error):
            cache.assume(new)
    want: list[Event] = [("add", None, old, False)]
    if error is None:
        want.append(("update", old, new, False))
    verify(cache, key, new if error is None else old, old)
    assert same(events.flush(), want)


def test_restore() -> None:
    cache = AssumeCache(None, "TestObject")
    events = Handler()
    cache.add_event_handler(events)
    # Assuming an object of the API object's own version is supported (and racy in real code).
    old = make_obj("pvc1", "5")
    new = make_obj("pvc1", "5")
    # empty cache
    cache.restore("nothing")
    assert events.flush() == []
    # initial update
    cache.add(old)
    verify(cache, "pvc1", old, old)
    assert same(events.flush(), [("add", None, old, False)])
    # initial Restore
    cache.restore("pvc1")
    verify(cache, "pvc1", old, old)
    assert events.flush() == []
    # Assume
    cache.assume(new)
    verify(cache, "pvc1", new, old)
    assert same(events.flush(), [("update", old, new, False)])
    # second Restore
    cache.restore("pvc1")
    verify(cache, "pvc1", old, old)
    assert same(events.flush(), [("update", new, old, False)])


def test_events() -> None:
    cache = AssumeCache(None, "TestObject")
    old = make_obj("pvc1", "5")
    new = make_obj("pvc1", "6")
    cache.add(old)
    verify(cache, "pvc1", old, old)
    # initial list
    events = Handler()
    cache.add_event_handler(events)
    assert same(events.flush(), [("add", None, old, True)])
    # initial update
    cache.update(None, new)
    verify(cache, "pvc1", new, new)
    assert same(events.flush(), [("update", old, new, False)])
    # nop add, nil add, nop update, nil update, nop delete: nothing changes
    cache.add(1)
    cache.add(None)
    cache.update(None, old)
    cache.update(None, None)
    cache.delete(None)
    verify(cache, "pvc1", new, new)
    assert events.flush() == []
    # delete
    cache.delete(old)
    assert same(events.flush(), [("delete", None, new, False)])
    with pytest.raises(NotFoundError):
        cache.get("pvc1")


def test_event_handlers() -> None:
    cache = AssumeCache(None, "TestObject")
    handlers = [Handler() for _ in range(5)]
    objs: list[dict[str, Any]] = []
    for i in range(5):
        objs.append(make_obj(f"test-pvc{i}", "1"))
        cache.add(objs[i])
    handlers[0].cache = cache  # accessing the cache during on_add must not deadlock
    expected: list[Event] = [("add", None, obj, True) for obj in objs]
    for h in handlers:
        cache.add_event_handler(h)
        got = sorted(h.flush(), key=lambda e: object_key(e[2]))
        assert same(got, expected)
    for i in range(5, 7):
        objs.append(make_obj(f"test-pvc{i}", "1"))
        cache.add(objs[i])
        for h in handlers:
            assert same(h.flush(), [("add", None, objs[i], False)])
    for i, old in enumerate(list(objs)):
        new = make_obj(f"test-pvc{i}", "2")
        objs[i] = new
        cache.update(None, new)
        for h in handlers:
            assert same(h.flush(), [("update", old, new, False)])
    for obj in objs:
        cache.delete(obj)
        for h in handlers:
            assert same(h.flush(), [("delete", None, obj, False)])


def test_event_handler_concurrency() -> None:
    cache = AssumeCache(None, "TestObject")
    proceed = threading.Event()
    handlers = [Handler(block=proceed) for _ in range(5)]
    handlers[0].cache = cache
    for h in handlers:
        cache.add_event_handler(h)
    objs = [make_obj(f"test-pvc{i}", "1") for i in range(5)]
    threads = [threading.Thread(target=cache.add, args=(obj,)) for obj in objs]
    for t in threads:
        t.start()
    proceed.set()
    for t in threads:
        t.join(10)
    expected: list[Event] = [("add", None, obj, False) for obj in objs]
    for h in handlers:
        got = sorted(h.flush(), key=lambda e: object_key(e[2]))
        assert same(got, expected)


def test_list_no_indexer() -> None:
    cache = AssumeCache(None, "TestObject")
    objs: list[Any] = [make_obj(f"test-pvc{i}", "1") for i in range(10)]
    for obj in objs:
        cache.add(obj)
    verify_list(cache, objs, None)  # after add
    updated = make_obj("test-pvc3", "2")
    objs[3] = updated
    cache.update(None, updated)
    verify_list(cache, objs, None)  # after update
    deleted = objs.pop(7)
    cache.delete(deleted)
    verify_list(cache, objs, None)  # after delete


def test_list_with_indexer() -> None:
    cache = AssumeCache(
        None, "TestObject", "myNamespace", lambda obj: [obj["metadata"].get("namespace") or ""]
    )
    objs: list[Any] = [make_obj(f"test-pvc{i}", "1", "ns1") for i in range(10)]
    for obj in objs:
        cache.add(obj)
    for i in range(10):
        cache.add(make_obj(f"test-pvc{i}", "1", "ns2"))
    verify_list(cache, objs, objs[0])  # after add
    updated = make_obj("test-pvc3", "2", "ns1")
    objs[3] = updated
    cache.update(None, updated)
    verify_list(cache, objs, objs[0])  # after update
    deleted = objs.pop(7)
    cache.delete(deleted)
    verify_list(cache, objs, objs[0])  # after delete
