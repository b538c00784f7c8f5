"""The in-memory store's writes on a scheduled pod's path: what create, bind and the Event recorder
store and push to a watch."""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest

from kubesched.registry.admission import admitted
from kubesched.store.base import AlreadyExists, Conflict, EventType, NotFound
from kubesched.store.memory import MemoryStore


def _node(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name}, "status": {}}


def _pod(name: str, namespace: str | None = "default") -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name}
    if namespace is not None:
        meta["namespace"] = namespace
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": {"containers": [{"name": "c"}]}}


def _event_as_created(store: MemoryStore, regarding: dict[str, Any], seq: int) -> dict[str, Any]:
    """The Event the recorder writes, made through ``create``: the recorder must store just this."""
    meta = regarding["metadata"]
    namespace = meta.get("namespace") or "default"
    return dict(
        store.create(
            {
                "apiVersion": "events.k8s.io/v1",
                "kind": "Event",
                "metadata": {"name": f"{meta['name']}.{seq:016x}", "namespace": namespace},
                "eventTime": "1970-01-01T00:00:07Z",
                "reportingController": "default-scheduler",
                "reportingInstance": "default-scheduler-kubesched",
                "action": "Binding",
                "reason": "Scheduled",
                "regarding": {
                    "kind": "Pod",
                    "namespace": namespace,
                    "name": meta["name"],
                    "uid": meta.get("uid"),
                },
                "note": "Successfully assigned",
                "type": "Normal",
            }
        )
    )


def test_recorded_event_is_the_object_create_would_store():
    recorded, created = MemoryStore(now=lambda: 7.0, uid_seed=1), MemoryStore(now=lambda: 7.0, uid_seed=1)
    watch = recorded.watch()
    for store in (recorded, created):
        store.create(_node("n1"))
    pods = [recorded.create(_pod("p1")), recorded.create(_pod("p2", namespace=None))]
    for pod in pods:
        created.create(_pod(pod["metadata"]["name"], pod["metadata"].get("namespace")))
    for seq, pod in enumerate(pods, start=1):
        recorded.record_event(
            pod, "Normal", "Scheduled", "Binding", "Successfully assigned", "default-scheduler"
        )
        want = _event_as_created(created, pod, seq)
        got = recorded.get("Event", want["metadata"]["namespace"], want["metadata"]["name"])
        assert json.dumps(got) == json.dumps(want)  # the same fields in the same order
    events = [e for e in watch.drain() if e.kind == "Event"]
    assert [(e.type, e.obj["metadata"]["resourceVersion"]) for e in events] == [
        (EventType.ADDED, "4"),
        (EventType.ADDED, "5"),
    ]
    # Later writes go on from the same uid and resourceVersion.
    after = [s.create(_pod("p3")) for s in (recorded, created)]
    assert after[0] == after[1]


def test_event_named_as_an_existing_one_is_refused_before_taking_a_uid():
    store = MemoryStore(uid_seed=1)
    pod = store.create(_pod("p1"))
    store.create({"apiVersion": "events.k8s.io/v1", "kind": "Event", "metadata": {"name": f"p1.{1:016x}"}})
    with pytest.raises(AlreadyExists, match=r"^Event default/p1\.0000000000000001 already exists$"):
        store.record_event(pod, "Normal", "Scheduled", "Binding", "note", "default-scheduler")
    assert store.create(_pod("p2"))["metadata"]["uid"] == "00000000-0000-0000-0000-000000000003"


def test_bind_sets_the_node_and_the_condition_once():
    store = MemoryStore(now=lambda: 3.0, uid_seed=1)
    store.create(_node("n1"))
    pod = store.create(admitted(store, _pod("p1", namespace=None)))
    watch = store.watch()
    bound = store.bind("", "p1", pod["metadata"]["uid"], "n1")
    assert bound["spec"] == {**pod["spec"], "nodeName": "n1"}
    assert bound["status"] == {
        "phase": "Pending",
        "conditions": [
            {"type": "PodScheduled", "status": "True", "lastTransitionTime": "1970-01-01T00:00:03Z"}
        ],
    }
    assert bound["metadata"] == {**pod["metadata"], "resourceVersion": "3"}
    [event] = list(watch.drain())
    assert (event.type, event.obj, event.old) == (EventType.MODIFIED, bound, pod)
    with pytest.raises(Conflict, match=r"^pod /p1 is already assigned to node 'n1'$"):
        store.bind("", "p1", pod["metadata"]["uid"], "n1")
    store.create(_pod("p2"))
    with pytest.raises(NotFound, match=r"^node 'n2' not found$"):
        store.bind("default", "p2", "", "n2")
    with pytest.raises(Conflict, match=r"^pod default/p2 was replaced \(uid changed\)$"):
        store.bind("default", "p2", "other", "n1")
    with pytest.raises(NotFound, match=r"^pod default/p3 not found$"):
        store.bind("default", "p3", "", "n1")


def test_created_objects_get_distinct_random_version_4_uids():
    store = MemoryStore()
    made = [
        store.create({"kind": "ConfigMap", "metadata": {"name": f"c{i}", "namespace": "default"}})
        for i in range(600)  # past one read of random bytes
    ]
    uids = [obj["metadata"]["uid"] for obj in made]
    assert len(set(uids)) == len(uids)
    for uid in uids:
        parsed = uuid.UUID(uid)
        assert str(parsed) == uid
        assert parsed.version == 4
        assert parsed.variant == uuid.RFC_4122


def test_a_forked_process_does_not_repeat_its_parents_uids():
    import os

    store = MemoryStore()
    store.create({"kind": "ConfigMap", "metadata": {"name": "before", "namespace": "default"}})
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: one uid, written back to the parent
        try:
            obj = store.create({"kind": "ConfigMap", "metadata": {"name": "child", "namespace": "default"}})
            os.write(write, obj["metadata"]["uid"].encode())
        finally:
            os._exit(0)
    os.close(write)
    os.waitpid(pid, 0)
    child_uid = os.read(read, 64).decode()
    os.close(read)
    mine = store.create({"kind": "ConfigMap", "metadata": {"name": "parent", "namespace": "default"}})
    assert uuid.UUID(child_uid).version == 4
    assert child_uid != mine["metadata"]["uid"]
