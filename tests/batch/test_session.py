"""Session dispatch (tier precedence as Volcano's session_plugins.go), statements, and the binpack
and nodeorder scoring tables."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import yaml

from kubesched.api.objects import Node, Pod
from kubesched.api.volcano import PodGroup
from kubesched.batch.actions.util import fit_error_message
from kubesched.batch.conf_loader import batch_conf_from_dict
from kubesched.batch.framework import open_session
from kubesched.batch.job_info import ABSTAIN, PERMIT, REJECT, TaskInfo, TaskStatus
from kubesched.batch.plugins.binpack import binpack_scores
from kubesched.batch.scheduler import BatchScheduler
from kubesched.batch.session import EventHandler, Session
from kubesched.batch.statement import Statement
from kubesched.cache.cache import SchedulerCache, Snapshot
from kubesched.runtime.cluster import Cluster, ClusterOptions
from kubesched.store.memory import MemoryStore

CONF = """
actions: "allocate"
tiers:
- plugins: [{name: a}, {name: b}]
- plugins: [{name: c}]
"""


def bare_session(conf: str = CONF) -> Session:
    """A session on an empty cluster whose tiers name plugins kubesched does not have (a, b, c):
    the test registers functions under those names by hand."""
    c = yaml.safe_load(conf)
    for t in c["tiers"]:
        for p in t["plugins"]:
            p["name"] = {"a": "priority", "b": "gang", "c": "drf"}[p["name"]]
    bc = batch_conf_from_dict(c, "t")
    cache = SchedulerCache()
    snap = Snapshot()
    cache.update_snapshot(snap)
    from kubesched.batch.shares import ResourceSpace

    space = ResourceSpace(tuple(snap.table.resource_names))
    ssn = Session(
        conf=bc,
        table=snap.table,
        node_infos={},
        node_mask=np.zeros(snap.table.capacity, dtype=np.bool_),
        jobs={},
        queues={},
        space=space,
    )
    return ssn


def fake_task(uid: str, job: str = "j") -> Any:
    return TaskInfo(
        uid=uid,
        name=uid,
        namespace="ns",
        job=job,
        pod=None,  # type: ignore[arg-type]
        status=TaskStatus.RUNNING,
        node_name="",
        priority=0,
        resreq=np.zeros(4),
        init_resreq=np.zeros(4),
        best_effort=True,
        preemptable=True,
        creation_timestamp="",
    )


def test_order_first_nonzero_answer_wins_in_tier_order() -> None:
    ssn = bare_session()
    ssn.add_task_order_fn("priority", lambda a, b: 0)
    ssn.add_task_order_fn("gang", lambda a, b: 1)  # r first
    ssn.add_task_order_fn("drf", lambda a, b: -1)
    a, b = fake_task("a"), fake_task("b")
    assert ssn.task_order_fn(a, b) is False
    assert ssn.task_order_fn(b, a) is False


def test_order_falls_back_to_creation_then_uid() -> None:
    ssn = bare_session()
    a, b = fake_task("a"), fake_task("b")
    assert ssn.task_order_fn(a, b) is True
    b.creation_timestamp = "2020-01-01T00:00:00Z"
    a.creation_timestamp = "2021-01-01T00:00:00Z"
    assert ssn.task_order_fn(b, a) is True


def test_victims_intersect_within_a_tier_and_first_deciding_tier_wins() -> None:
    ssn = bare_session()
    t1, t2, t3 = fake_task("1"), fake_task("2"), fake_task("3")
    ssn.add_preemptable_fn("priority", lambda p, c: ([t1, t2], PERMIT))
    ssn.add_preemptable_fn("gang", lambda p, c: ([t2, t3], PERMIT))
    ssn.add_preemptable_fn("drf", lambda p, c: ([t3], PERMIT))
    assert [t.uid for t in ssn.preemptable(t1, [t1, t2, t3])] == ["2"]


def test_victims_empty_answer_passes_to_next_tier_abstain_is_ignored() -> None:
    ssn = bare_session()
    t1, t2 = fake_task("1"), fake_task("2")
    ssn.add_preemptable_fn("priority", lambda p, c: ([t1], ABSTAIN))
    ssn.add_preemptable_fn("gang", lambda p, c: ([], PERMIT))
    ssn.add_preemptable_fn("drf", lambda p, c: ([t2], PERMIT))
    assert [t.uid for t in ssn.preemptable(t1, [t1, t2])] == ["2"]


def test_votes_reject_wins_permit_stops_at_its_tier() -> None:
    ssn = bare_session()
    ssn.add_job_pipelined_fn("priority", lambda j: PERMIT)
    ssn.add_job_pipelined_fn("drf", lambda j: REJECT)
    assert ssn.job_pipelined(object()) is True  # type: ignore[arg-type]
    ssn.add_job_pipelined_fn("gang", lambda j: REJECT)
    assert ssn.job_pipelined(object()) is False  # type: ignore[arg-type]


def test_disabled_switch_hides_a_plugin() -> None:
    conf = """
actions: "allocate"
tiers:
- plugins: [{name: a, enableJobOrder: false}, {name: b}]
"""
    ssn = bare_session(conf)
    ssn.add_job_order_fn("priority", lambda a, b: -1)
    ssn.add_job_order_fn("gang", lambda a, b: 1)
    assert ssn.job_compare(object(), object()) == 1  # type: ignore[arg-type]


def test_fit_error_message_is_volcanos() -> None:
    assert fit_error_message(3, {"Insufficient cpu": 2, "node(s) pod number exceeded": 1}) == (
        "0/3 nodes are unavailable: 1 node(s) pod number exceeded, 2 Insufficient cpu."
    )


# -- statements ------------------------------------------------------------------------------------


def _real_session() -> tuple[Session, BatchScheduler]:
    store = MemoryStore(uid_seed=0)
    for i in range(2):
        store.create(
            {
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {"name": f"n{i}"},
                "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "10"}},
            }
        )
    store.create(
        {
            "apiVersion": "scheduling.volcano.sh/v1beta1",
            "kind": "PodGroup",
            "metadata": {"name": "g", "namespace": "ns"},
            "spec": {"minMember": 2},
        }
    )
    for i in range(2):
        store.create(
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {
                    "name": f"p{i}",
                    "namespace": "ns",
                    "annotations": {"scheduling.k8s.io/group-name": "g"},
                },
                "spec": {
                    "schedulerName": "volcano",
                    "containers": [{"name": "c", "image": "x", "resources": {"requests": {"cpu": "1"}}}],
                },
            }
        )
    conf = batch_conf_from_dict(
        yaml.safe_load(
            'actions: "allocate"\ntiers:\n- plugins: [{name: gang}]\n- plugins: [{name: predicates}]'
        ),
        "t",
    )
    sched = Cluster(store, ClusterOptions(now=lambda: 0.0, batch_conf=conf)).start_batch()
    snap, _ = sched.build_snapshot()
    return open_session(snap, conf), sched


def test_statement_discard_restores_the_session_exactly() -> None:
    ssn, _ = _real_session()
    job = ssn.jobs["ns/g"]
    requested = ssn.table.requested.copy()
    idle = ssn.idle.copy()
    events: list[str] = []
    ssn.add_event_handler(
        EventHandler(lambda e: events.append("+" + e.task.name), lambda e: events.append("-" + e.task.name))
    )
    stmt = Statement(ssn)
    t0, t1 = sorted(job.tasks.values(), key=lambda t: t.name)
    stmt.allocate(t0, "n0")
    stmt.allocate(t1, "n1")
    assert job.allocated_task_num() == 2 and job.is_ready()
    assert not np.array_equal(ssn.table.requested, requested)
    stmt.discard()
    assert job.allocated_task_num() == 0
    assert {t.status for t in job.tasks.values()} == {TaskStatus.PENDING}
    assert np.array_equal(ssn.table.requested, requested)
    assert np.array_equal(ssn.idle, idle)
    assert events == ["+p0", "+p1", "-p1", "-p0"]


def test_statement_commit_turns_allocations_into_binds() -> None:
    ssn, _ = _real_session()
    job = ssn.jobs["ns/g"]
    stmt = Statement(ssn)
    for t, n in zip(sorted(job.tasks.values(), key=lambda t: t.name), ("n0", "n1"), strict=True):
        stmt.allocate(t, n)
    stmt.commit()
    assert {t.status for t in job.tasks.values()} == {TaskStatus.BINDING}
    assert sorted(t.name for t in ssn.to_bind) == ["p0", "p1"]


def test_evict_and_pipeline_move_future_idle() -> None:
    ssn, _ = _real_session()
    job = ssn.jobs["ns/g"]
    t0, t1 = sorted(job.tasks.values(), key=lambda t: t.name)
    stmt = Statement(ssn)
    stmt.allocate(t0, "n0")
    stmt.commit()
    slot = ssn.slot_of("n0")
    before = ssn.node_future_idle(slot).copy()
    s2 = Statement(ssn)
    s2.evict(t0, "test")
    assert t0.status == TaskStatus.RELEASING
    assert ssn.node_future_idle(slot)[0] == before[0] + 1000
    s2.pipeline(t1, "n0")
    assert ssn.node_future_idle(slot)[0] == before[0]
    s2.discard()
    assert t0.status == TaskStatus.BINDING and t1.status == TaskStatus.PENDING
    assert np.array_equal(ssn.node_future_idle(slot), before)


# -- scoring tables ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("request_", "alloc", "used", "weights", "bw", "expected"),
    [
        # Volcano binpack_test: cpu 1000m asked on a 4000m node using 2000m -> 3/4; memory likewise.
        ([1000, 2 * 2**30], [4000, 8 * 2**30], [2000, 4 * 2**30], [1, 1], 1, 75.0),
        # weights 2:1 for cpu:memory, cpu ends at 100%, memory at 50% -> (2*1 + 1*0.5)/3 * 100 * 10
        ([2000, 1 * 2**30], [4000, 8 * 2**30], [2000, 3 * 2**30], [2, 1], 10, (2 * 1 + 0.5) / 3 * 1000),
        # overflow in any resource: 0 for the node
        ([3000, 1], [4000, 8], [2000, 1], [1, 1], 1, 0.0),
        # nothing asked: 0
        ([0, 0], [4000, 8], [0, 0], [1, 1], 1, 0.0),
    ],
)
def test_binpack_scores(
    request_: list[float],
    alloc: list[float],
    used: list[float],
    weights: list[float],
    bw: int,
    expected: float,
) -> None:
    got = binpack_scores(
        np.array(request_, dtype=np.float64),
        np.array([alloc], dtype=np.float64),
        np.array([used], dtype=np.float64),
        np.array(weights, dtype=np.float64),
        bw,
    )
    assert got[0] == pytest.approx(expected)


def test_group_objects_parse_both_apis() -> None:
    pg = PodGroup.from_dict(
        {
            "apiVersion": "scheduling.volcano.sh/v1beta1",
            "kind": "PodGroup",
            "metadata": {"name": "g"},
            "spec": {"minMember": 2},
        }
    )
    assert pg.queue == "default" and pg.min_member == 2
    assert Pod and Node  # the session works on the same parsed views as the framework side
