"""The reclaim action, end to end through the batch scheduler: the table of Volcano v1.15.1's
``actions/reclaim/reclaim_test.go`` (same pods, nodes, queues and expected victims, case names
verbatim), plus gang and queue-reclaimability guarantees.

As in Volcano's test, the tier enables only the switches the test names (every other switch off),
and only the plugins a case registers take part.
"""

from __future__ import annotations

from typing import Any

import pytest

from kubesched.batch.testing import node, plugin, pod, pod_group, priority_class, queue, registered, run

# -- Volcano's table (v1.15.1 actions/reclaim/reclaim_test.go) --------------------------------- #

# One tier for every case; each case registers its own plugins, and only those take part.
TIER = [
    plugin("conformance", "reclaimable"),
    plugin("gang", "reclaimable", "job_starving"),
    plugin("proportion", "reclaimable", "queue_order", "preemptive"),
    plugin("capacity", "reclaimable", "queue_order", "preemptive"),
    plugin("priority", "reclaimable", "job_order", "task_order"),
]
BASIC = frozenset({"conformance", "gang", "proportion"})
WITH_PRIORITY = BASIC | {"priority"}
LOW_MID_HIGH = [
    priority_class("low-priority", 100),
    priority_class("mid-priority", 500),
    priority_class("high-priority", 1000),
]


def _overusing_q1(q2_state: str = "Open") -> list[dict[str, Any]]:
    return [
        pod_group("pg1", "q1", 1, "Running", "low-priority"),
        pod_group("pg2", "q2", 1, "Inqueue", "high-priority"),
        pod("preemptee1", "n1", "pg1", preemptable="false"),
        pod("preemptee2", "n1", "pg1", preemptable="true"),
        pod("preemptee3", "n1", "pg1", preemptable="false"),
        pod("preemptor1", "", "pg2"),
        node("n1", "3", "3Gi"),
        queue("q1"),
        queue("q2", state=q2_state),
    ]


# (name, registered plugins, objects, expected victims)
CASES: list[tuple[str, frozenset[str], list[dict[str, Any]], list[str]]] = [
    (
        "Two Queue with one Queue overusing resource, should reclaim",
        BASIC,
        [
            pod_group("pg1", "q1", 1, "Inqueue", "low-priority"),
            pod_group("pg2", "q2", 1, "Inqueue", "high-priority"),
            pod("preemptee1", "n1", "pg1", preemptable="false"),
            pod("preemptee2", "n1", "pg1", preemptable="true"),
            pod("preemptee3", "n1", "pg1", preemptable="false"),
            pod("preemptor1", "", "pg2"),
            node("n1", "3", "3Gi"),
            queue("q1"),
            queue("q2"),
        ],
        ["c1/preemptee2"],
    ),
    (
        "sort reclaimees when reclaiming from overusing queue",
        WITH_PRIORITY,
        [
            *LOW_MID_HIGH,
            pod_group("pg1", "q1", 1, "Inqueue", "mid-priority"),
            pod_group("pg2", "q2", 1, "Inqueue", "low-priority"),
            pod_group("pg3", "q3", 1, "Inqueue", "high-priority"),
            pod("preemptee1-1", "n1", "pg1", preemptable="true"),
            pod("preemptee1-2", "n1", "pg1", preemptable="true"),
            pod("preemptee2-1", "n1", "pg2", preemptable="true"),
            pod("preemptee2-2", "n1", "pg2", preemptable="false"),
            pod("preemptor1", "", "pg3"),
            node("n1", "4", "4Gi"),
            queue("q1"),
            queue("q2"),
            queue("q3"),
        ],
        ["c1/preemptee2-1"],
    ),
    (
        "sort reclaimees when reclaiming from overusing queues with different queue priority",
        BASIC,
        [
            pod_group("pg1", "q1", 1, "Inqueue", "mid-priority"),
            pod_group("pg2", "q2", 1, "Inqueue", "mid-priority"),
            pod_group("pg3", "q3", 1, "Inqueue", "mid-priority"),
            pod("preemptee1-1", "n1", "pg1", preemptable="true"),
            pod("preemptee1-2", "n1", "pg1", preemptable="false"),
            pod("preemptee2-1", "n1", "pg2", preemptable="true"),
            pod("preemptee2-2", "n1", "pg2", preemptable="false"),
            pod("preemptor1", "", "pg3"),
            node("n1", "4", "4Gi"),
            queue("q1", 1, priority=5),
            queue("q2", 1, priority=10),
            queue("q3", 1, priority=1),
        ],
        ["c1/preemptee1-1"],
    ),
    (
        "can not reclaim resources when task preemption policy is never",
        BASIC,
        [
            priority_class("low-priority", 100),
            priority_class("high-priority", 1000, never=True),
            pod_group("pg1", "q1", 0, "Inqueue", "low-priority"),
            pod_group("pg2", "q2", 0, "Inqueue", "high-priority"),
            pod("preemptee1", "n1", "pg1", preemptable="true"),
            pod("preemptor1", "", "pg2", never=True),
            node("n1", "1", "1Gi", pods="1"),
            queue("q1", 5),
            queue("q2", 10),
        ],
        [],
    ),
    (
        "can not reclaim resources when queue is not open(proportion plugin)",
        BASIC,
        _overusing_q1("Closed"),
        [],
    ),
    (
        "can not reclaim resources when queue is not open(capacity plugin)",
        frozenset({"conformance", "gang", "capacity"}),
        _overusing_q1("Closed"),
        [],
    ),
    (
        "Node available resources should be included in reclaimed resources",
        WITH_PRIORITY,
        [
            *LOW_MID_HIGH,
            pod_group("pg1", "q1", 0, "Running", "mid-priority"),
            pod_group("pg2", "q2", 0, "Running", "mid-priority"),
            pod_group("pg3", "q3", 1, "Inqueue", "mid-priority"),
            pod("preemptee1-1", "n1", "pg1", preemptable="true"),
            pod("preemptee2-1", "n1", "pg2", preemptable="true"),
            pod("preemptor1", "", "pg3", cpu="2", mem="1G"),
            node("n1", "10", "2Gi"),
            queue("q1", 1, priority=1),
            queue("q2", 1, priority=2),
            queue("q3", 3),
        ],
        ["c1/preemptee1-1"],
    ),
    (
        "Reclaim succeeds for second task when first task has PreemptionPolicy=Never",
        WITH_PRIORITY,
        [
            priority_class("low-priority", 100),
            priority_class("high-priority-no-preempt", 1000, never=True),
            priority_class("high-priority-can-preempt", 900),
            pod_group("pg-victim", "q1", 1, "Running", "low-priority"),
            pod_group("pg-preemptor", "q2", 2, "Inqueue", "high-priority-no-preempt"),
            pod("victim-pod-no", "n1", "pg-victim", preemptable="false"),
            pod("victim-pod", "n1", "pg-victim", preemptable="true"),
            pod("preemptor-task1-non-preemptable", "", "pg-preemptor", never=True),
            pod("preemptor-task2-preemptable", "", "pg-preemptor"),
            node("n1", "2", "2G"),
            queue("q1"),
            queue("q2"),
        ],
        ["c1/victim-pod"],
    ),
    (
        "only commit evictions on the node where reclaim succeeds",
        BASIC,
        [
            pod_group("pg-victim", "q1", 0, "Running", "low-priority"),
            pod_group("pg-preemptor", "q2", 1, "Inqueue", "low-priority"),
            pod("victim-n1", "n1", "pg-victim", cpu="2", mem="2G", preemptable="true"),
            pod("preemptor1", "", "pg-preemptor", cpu="3", mem="3G"),
            node("n1", "10", "10G"),
            queue("q1", 1),
            queue("q2", 9),
        ],
        [],
    ),
]


@pytest.mark.parametrize(("plugins", "objects", "evicted"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_volcano_reclaim(plugins: frozenset[str], objects: list[dict[str, Any]], evicted: list[str]) -> None:
    sched = run(objects, "reclaim", registered(TIER, plugins))
    assert sorted(sched.evicted) == sorted(evicted)


def test_an_open_queue_reclaims_with_capacity() -> None:
    """The same cluster with q2 Open and owed 1 cpu / 1G: capacity lets it reclaim the preemptable
    pod (q1 has no deserved, so everything it holds is on loan)."""
    objects = [
        o if o.get("metadata", {}).get("name") != "q2" else queue("q2", deserved={"cpu": "1", "memory": "1G"})
        for o in _overusing_q1()
    ]
    sched = run(
        LOW_MID_HIGH + objects, "reclaim", registered(TIER, {"conformance", "gang", "capacity", "priority"})
    )
    assert sched.evicted == ["c1/preemptee2"]


# -- guarantees --------------------------------------------------------------------------------- #

DEFAULT_TIER = [
    {"name": "priority"},
    {"name": "gang"},
    {"name": "conformance"},
    {"name": "drf"},
    {"name": "proportion"},
]


def test_reclaimed_task_is_pipelined_and_bound_next_session() -> None:
    """The evicted pod is deleted and the reclaiming task waits pipelined on its node."""
    objects = [
        node("n1", "2", "2Gi"),
        queue("q1"),
        queue("q2"),
        pod_group("pg1", "q1", 1, "Running"),
        pod_group("pg2", "q2", 1, "Inqueue"),
        pod("a1", "n1", "pg1"),
        pod("a2", "n1", "pg1"),
        pod("b1", "", "pg2"),
    ]
    sched = run(objects, "reclaim", DEFAULT_TIER)
    assert len(sched.evicted) == 1
    assert sched.evicted[0] in ("c1/a1", "c1/a2")
    assert sched.informers.store.get("Pod", "c1", sched.evicted[0].split("/")[1]) is None


def test_gang_is_never_broken_below_min_member() -> None:
    """q1 overuses the cluster, but its gang has exactly minMember running: nothing is reclaimed."""
    objects = [
        node("n1", "3", "3Gi"),
        queue("q1"),
        queue("q2"),
        pod_group("pg1", "q1", 3, "Running"),
        pod_group("pg2", "q2", 1, "Inqueue"),
        pod("a1", "n1", "pg1"),
        pod("a2", "n1", "pg1"),
        pod("a3", "n1", "pg1"),
        pod("b1", "", "pg2"),
    ]
    assert run(objects, "reclaim", DEFAULT_TIER).evicted == []


def test_non_reclaimable_queue_keeps_its_pods() -> None:
    objects = [
        node("n1", "3", "3Gi"),
        queue("q1", reclaimable=False),
        queue("q2"),
        pod_group("pg1", "q1", 1, "Running"),
        pod_group("pg2", "q2", 1, "Inqueue"),
        pod("a1", "n1", "pg1"),
        pod("a2", "n1", "pg1"),
        pod("a3", "n1", "pg1"),
        pod("b1", "", "pg2"),
    ]
    assert run(objects, "reclaim", DEFAULT_TIER).evicted == []


def test_never_takes_a_queue_below_its_deserved_share() -> None:
    """q1 deserves 2 of 4 cpus and runs 4; q2 wants 3. Two pods are reclaimed, then q2 is at its
    deserved share (not preemptive) and q1 at its own (no more victims)."""
    objects = [
        node("n1", "4", "4Gi"),
        queue("q1"),
        queue("q2"),
        pod_group("pg1", "q1", 1, "Running"),
        pod_group("pg2", "q2", 1, "Inqueue"),
        *(pod(f"a{i}", "n1", "pg1") for i in range(4)),
        *(pod(f"b{i}", "", "pg2") for i in range(3)),
    ]
    # gang's starving check stops at minMember; priority's goes on while any task waits.
    tier = [{"name": "priority"}, {"name": "gang", "enableJobStarving": False}, {"name": "proportion"}]
    sched = run(objects, "reclaim", tier)
    assert len(sched.evicted) == 2
    assert all(key.startswith("c1/a") for key in sched.evicted)


def test_job_not_pipelined_restores_every_eviction() -> None:
    """A gang of two can only get one node's worth: the statement is discarded, nothing evicted."""
    objects = [
        node("n1", "2", "2Gi"),
        queue("q1"),
        queue("q2"),
        pod_group("pg1", "q1", 1, "Running"),
        pod_group("pg2", "q2", 2, "Inqueue"),
        pod("a1", "n1", "pg1"),
        pod("a2", "n1", "pg1"),
        pod("b1", "", "pg2", cpu="2", mem="1G"),
        pod("b2", "", "pg2", cpu="2", mem="1G"),
    ]
    sched = run(objects, "reclaim", DEFAULT_TIER)
    assert sched.evicted == []
    assert {p["metadata"]["name"] for p in sched.informers.store.list("Pod")} == {"a1", "a2", "b1", "b2"}
