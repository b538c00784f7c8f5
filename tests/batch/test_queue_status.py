"""Queue status: when a session closes, each queue's ``status.allocated`` says what its jobs hold
(Volcano's updateQueueStatus); a hierarchy under ``root`` counts children in their ancestors; the
queue controller's fields are kept, and an unchanged queue is not written again."""

from __future__ import annotations

from typing import Any

from kubesched.batch.testing import node, pod, pod_group, queue, run, scheduler_on
from kubesched.store.base import EventType

TIER = [{"name": "priority"}, {"name": "gang"}, {"name": "predicates"}, {"name": "proportion"}]


def _allocated(sched: Any, name: str) -> dict[str, str] | None:
    obj = sched.informers.store.get("Queue", None, name)
    return (obj.get("status") or {}).get("allocated")


def test_a_session_writes_what_each_queues_jobs_hold() -> None:
    q2 = queue("q2")
    q2["status"].update({"running": 3, "pending": 1})  # the queue controller's counts
    objects = [
        node("n1", "8", "8Gi"),
        queue("q1"),
        q2,
        pod_group("pg1", "q1", 2, "Inqueue"),
        pod("a", "", "pg1", "1500m", "1Gi"),
        pod("b", "", "pg1", "500m", "1Gi"),
    ]
    sched = run(objects, "allocate", TIER)
    assert _allocated(sched, "q1") == {"cpu": "2", "memory": "2Gi"}
    assert _allocated(sched, "q2") == {"cpu": "0", "memory": "0"}
    status = sched.informers.store.get("Queue", None, "q2")["status"]
    assert status["running"] == 3 and status["pending"] == 1 and status["state"] == "Open"


def test_an_unchanged_queue_is_not_written_again() -> None:
    objects = [node("n1", "8", "8Gi"), queue("q1"), pod_group("pg1", "q1", 1, "Inqueue"), pod("a", "", "pg1")]
    sched = scheduler_on(objects, {"actions": "allocate", "tiers": [{"plugins": TIER}]})
    watch = sched.informers.store.watch(frozenset({"Queue"}))
    sched.run_session()
    sched.informers.pump()
    sched.run_session()
    sched.informers.pump()
    sched.run_session()
    writes = [e for e in watch.drain() if e.type == EventType.MODIFIED]
    assert len(writes) == 1
    # As Go prints a binary-SI quantity that is no multiple of 1024: plain bytes.
    assert _allocated(sched, "q1") == {"cpu": "1", "memory": "1000000000"}


def test_a_status_write_does_not_start_another_session() -> None:
    objects = [node("n1", "8", "8Gi"), queue("q1"), pod_group("pg1", "q1", 1, "Inqueue"), pod("a", "", "pg1")]
    sched = scheduler_on(objects, {"actions": "allocate", "tiers": [{"plugins": TIER}]})
    sched.run_session()
    sched.informers.pump()  # the bind and the queue's status write
    sched.run_session()  # settles the bound pod
    sched.informers.pump()
    assert not sched.wants_session


def test_children_count_in_their_ancestors_under_root() -> None:
    capacity_tier = [{"name": "priority"}, {"name": "gang"}, {"name": "predicates"}, {"name": "capacity"}]
    objects = [
        node("n1", "16", "16Gi"),
        queue("root"),
        queue("eng", parent="root"),
        queue("ml", parent="eng"),
        queue("web", parent="eng"),
        pod_group("train", "ml", 1, "Inqueue"),
        pod("t", "", "train", "4", "4Gi"),
        pod_group("site", "web", 1, "Inqueue"),
        pod("s", "", "site", "1", "1Gi"),
    ]
    sched = run(objects, "enqueue, allocate", capacity_tier)
    assert _allocated(sched, "ml") == {"cpu": "4", "memory": "4Gi"}
    assert _allocated(sched, "web") == {"cpu": "1", "memory": "1Gi"}
    assert _allocated(sched, "eng") == {"cpu": "5", "memory": "5Gi"}
    assert _allocated(sched, "root") == {"cpu": "5", "memory": "5Gi"}
