"""The proportion plugin (Volcano ``plugins/proportion``): deserved shares by weight, capability,
guarantee and request; queue order, overused, allocatable, reclaimable and jobEnqueueable; the
per-queue numbers left on the session; the tables of Volcano v1.15.1's ``proportion_test.go`` (case
names verbatim); and a property: whatever
the workload, no queue ends up holding more than its capability.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from prometheus_client.parser import text_string_to_metric_families

from kubesched.api.quantity import parse_quantity
from kubesched.batch.framework import close_session
from kubesched.batch.job_info import PERMIT, REJECT
from kubesched.batch.plugins.proportion import ProportionPlugin
from kubesched.batch.scheduler import BatchScheduler
from kubesched.batch.session import Session
from kubesched.batch.statement import Statement
from kubesched.batch.testing import (
    node,
    one_tier,
    open_on,
    plugin,
    pod,
    pod_group,
    priority_class,
    queue,
    run,
    scheduler_on,
)
from kubesched.plugins.testing import node_dict
from kubesched.runtime.metrics import SchedulerMetrics


def open_with(
    objects: list[dict[str, Any]], plugins: list[dict[str, Any]] | None = None
) -> tuple[Session, ProportionPlugin]:
    """A session on ``objects`` with proportion (and ``plugins``) open, no action run yet."""
    ssn = open_on(objects, plugins or [{"name": "proportion"}])
    return ssn, ssn.plugins["proportion"]


def cpu_of(attr_vec: Any, ssn: Session) -> float:
    return float(attr_vec[ssn.space.index("cpu")])


def pending(job: str, n: int, cpu: str = "1", mem: str = "1Gi") -> list[dict[str, Any]]:
    return [pod(f"{job}-{i}", "", job, cpu, mem) for i in range(n)]


# -- deserved ----------------------------------------------------------------------------------- #


def test_deserved_follows_weights() -> None:
    """12 cpu; three queues asking for everything with weights 1, 2, 3 deserve 2, 4 and 6 cpu."""
    objects = [node("n1", "12", "48Gi"), queue("a", 1), queue("b", 2), queue("c", 3)]
    for name in "abc":
        objects += [pod_group(name, name, 1, "Inqueue"), *pending(name, 12)]
    ssn, prop = open_with(objects)
    assert {q: cpu_of(prop.attrs[q].deserved, ssn) for q in "abc"} == {"a": 2000, "b": 4000, "c": 6000}


@pytest.mark.parametrize(
    ("queue_a", "weight_b", "a_pods", "deserved", "b_real_capability"),
    [
        pytest.param(
            queue("a", 1, capability={"cpu": "2"}),
            1,
            12,
            {"a": 2000, "b": 10000},
            12000,
            id="equal weights, but a may hold 2 cpu: b deserves the other 10",
        ),
        pytest.param(
            queue("a", 5),
            1,
            1,
            {"a": 1000, "b": 11000},
            12000,
            id="a asks for 1 cpu only: it deserves 1 and b the remaining 11",
        ),
        pytest.param(
            queue("a", 1, guarantee={"resource": {"cpu": "6"}}),
            3,
            12,
            {"a": 6000, "b": 6000},
            6000,
            id="a (weight 1 of 4) is guaranteed 6 of 12 cpu: b may only reach the unguaranteed 6",
        ),
    ],
)
def test_capability_request_and_guarantee_shape_deserved(
    queue_a: dict[str, Any], weight_b: int, a_pods: int, deserved: dict[str, int], b_real_capability: int
) -> None:
    """12 cpu; queue a as given and b asking for 12 cpu. A queue's capability and request cap what
    it deserves (the rest goes to the other queue); a guarantee raises it and is kept from others."""
    objects = [
        node("n1", "12", "48Gi"),
        queue_a,
        queue("b", weight_b),
        pod_group("a", "a", 1, "Inqueue"),
        pod_group("b", "b", 1, "Inqueue"),
        *pending("a", a_pods),
        *pending("b", 12),
    ]
    ssn, prop = open_with(objects)
    assert {q: cpu_of(prop.attrs[q].deserved, ssn) for q in "ab"} == deserved
    assert cpu_of(prop.attrs["b"].real_capability, ssn) == b_real_capability


# -- queue functions ---------------------------------------------------------------------------- #


def _two_queues(a_running: int, b_running: int, **qa: Any) -> list[dict[str, Any]]:
    """8 cpu; queues a and b (weight 1) each with running and 4 pending 1-cpu pods (no memory)."""
    return [
        node("n1", "8", "32Gi"),
        queue("a", 1, **qa),
        queue("b", 1),
        pod_group("a", "a", 1, "Running"),
        pod_group("b", "b", 1, "Running"),
        *(pod(f"a-{i}", "n1", "a", mem=None) for i in range(a_running)),
        *(pod(f"b-{i}", "n1", "b", mem=None) for i in range(b_running)),
        *(pod(f"a-p{i}", "", "a", mem=None) for i in range(4)),
        *(pod(f"b-p{i}", "", "b", mem=None) for i in range(4)),
    ]


def test_queue_order_overused_and_allocatable() -> None:
    """8 cpu, both queues deserve 4: a runs 5 (share 1.25, overused), b runs 1 (0.25)."""
    ssn, prop = open_with(_two_queues(5, 1))
    qa, qb = ssn.queues["a"], ssn.queues["b"]
    assert prop.attrs["a"].share == 1.25
    assert prop.attrs["b"].share == 0.25
    assert [q.name for q in sorted([qa, qb], key=ssn.queue_key)] == ["b", "a"]
    assert ssn.overused(qa) and not ssn.overused(qb)
    task_a = next(t for t in ssn.jobs["c1/a"].tasks.values() if not t.node_name)
    task_b = next(t for t in ssn.jobs["c1/b"].tasks.values() if not t.node_name)
    assert not ssn.allocatable_for(qa, task_a)
    assert ssn.allocatable_for(qb, task_b)


def test_queue_priority_comes_before_share() -> None:
    ssn, _ = open_with(_two_queues(5, 1, priority=1))
    order = [q.name for q in sorted(ssn.queues.values(), key=ssn.queue_key)]
    assert order.index("a") < order.index("b")


def test_closed_queue_is_not_allocatable() -> None:
    ssn, _ = open_with(_two_queues(0, 0, state="Closed"))
    task = next(iter(ssn.jobs["c1/a"].tasks.values()))
    assert not ssn.allocatable_for(ssn.queues["a"], task)


def test_reclaimable_takes_only_what_a_queue_holds_beyond_deserved() -> None:
    """a runs 7 of 8 cpu and deserves 4: three of its tasks may go, none of b's."""
    ssn, _ = open_with(_two_queues(7, 1))
    reclaimer = next(t for t in ssn.jobs["c1/b"].tasks.values() if not t.node_name)
    running = [t for j in ssn.jobs.values() for t in j.tasks.values() if t.node_name]
    victims = ssn.reclaimable(reclaimer, running)
    assert len(victims) == 3
    assert all(t.job == "c1/a" for t in victims)


def test_event_handlers_move_allocation_and_share() -> None:
    """10 pod slots, 8 cpu: a deserves 4 cpu and 5 pods (its share of the slots), and runs 3."""
    ssn, prop = open_with(_two_queues(3, 1))
    before = prop.attrs["a"].share
    stmt = Statement(ssn)
    waiting = [t for t in ssn.jobs["c1/a"].tasks.values() if not t.node_name]
    stmt.allocate(waiting[0], "n1")
    assert prop.attrs["a"].share == before + 0.25
    # Volcano counts pods too: holding its deserved cpu but 4 of 5 pods, a is not overused yet.
    assert not ssn.overused(ssn.queues["a"])
    stmt.allocate(waiting[1], "n1")
    assert ssn.overused(ssn.queues["a"])
    stmt.discard()
    assert prop.attrs["a"].share == before
    assert not ssn.overused(ssn.queues["a"])


def test_session_close_records_queue_shares() -> None:
    ssn, _ = open_with(_two_queues(5, 1))
    close_session(ssn)
    shares = ssn.queue_shares  # type: ignore[attr-defined]
    assert shares["a"]["deserved"]["cpu"] == 4000
    assert shares["a"]["allocated"]["cpu"] == 5000
    assert shares["a"]["request"]["cpu"] == 9000
    assert shares["a"]["share"] == 1.25
    assert shares["b"]["share"] == 0.25


# -- jobEnqueueable ----------------------------------------------------------------------------- #


def test_job_enqueueable_checks_min_resources_against_real_capability() -> None:
    """a may hold 4 cpu and holds 3; a job asking for 2 more is turned away with Volcano's
    message, one asking for 1 is admitted, and once admitted its reservation counts."""
    objects = [
        node("n1", "8", "32Gi"),
        queue("a", 1, capability={"cpu": "4"}),
        # minResources equal to what it holds: nothing elastic (a job without minResources counts
        # as wholly elastic in Volcano and would not hold the queue back).
        _with_min(pod_group("run", "a", 1, "Running"), "3", "0"),
        *(pod(f"run-{i}", "n1", "run", mem=None) for i in range(3)),
        _with_min(pod_group("big", "a", 1, "Pending"), "2", "0"),
        _with_min(pod_group("one", "a", 1, "Pending"), "1", "0"),
        _with_min(pod_group("two", "a", 1, "Pending"), "1", "0"),
        *pending("big", 2),
        *pending("one", 1),
        *pending("two", 1),
    ]
    ssn, prop = open_with(objects)
    big, one, two = ssn.jobs["c1/big"], ssn.jobs["c1/one"], ssn.jobs["c1/two"]
    assert prop.job_enqueueable(ssn, big) == REJECT
    assert prop.rejections[big.uid] == "queue resource quota insufficient: insufficient cpu"
    assert (big, "Normal", "Unschedulable", prop.rejections[big.uid]) in ssn.pod_group_events
    assert prop.job_enqueueable(ssn, one) == PERMIT
    ssn.job_enqueued(one)
    assert prop.job_enqueueable(ssn, two) == REJECT


# -- Volcano's cases ---------------------------------------------------------------------------- #


def _bound(sched: BatchScheduler) -> dict[str, str]:
    return {
        f"{p['metadata']['namespace']}/{p['metadata']['name']}": p["spec"]["nodeName"]
        for p in sched.informers.store.list("Pod")
        if p["spec"].get("nodeName") and p["status"].get("phase") != "Running"
    }


def _with_min(pg: dict[str, Any], cpu: str, mem: str) -> dict[str, Any]:
    pg["spec"]["minResources"] = {"cpu": cpu, "memory": mem}
    return pg


ENQUEUE_ALLOCATE_BASE = [
    node("n1", "2", "2G"),
    node("n2", "2", "2G"),
    pod("pod1", "n1", "pg1", "1", "2G"),
    pod("pod2", "n2", "pg2", "2", "1G"),
    _with_min(pod_group("pg1", "q1", 1, "Running"), "1", "2G"),
    _with_min(pod_group("pg2", "q2", 1, "Running"), "2", "1G"),
    queue("q1", 1, capability={"cpu": "2", "memory": "2G"}),
    queue("q2", 1, capability={"cpu": "3", "memory": "3G"}),
]
ALL_ON = [plugin("proportion", "allocatable", "overused", "job_enqueued")]
ENQUEUEABLE = [plugin("proportion", "job_enqueued")]
ALLOCATABLE = [plugin("proportion", "allocatable")]
CLOSED_Q3 = [
    node("n1", "2", "2G"),
    node("n2", "2", "2G"),
    queue("q3", 1, capability={"cpu": "3", "memory": "3G"}, state="Closed"),
    _with_min(pod_group("pg6", "q3", 1, "Pending"), "1", "1G"),
    pod("pod6", "", "pg6", "1", "1G"),
]

# Volcano v1.15.1 TestEnqueueAndAllocable: (name, objects, tier, binds)
ENQUEUE_ALLOCATE_CASES: list[tuple[str, list[dict[str, Any]], list[dict[str, Any]], dict[str, str]]] = [
    (
        "case0: memory exceed derserved, job only request cpu can be enqueued and allocated",
        [
            *ENQUEUE_ALLOCATE_BASE,
            pod("pod3", "", "pg3", "1", "0"),
            _with_min(pod_group("pg3", "q1", 1, "Pending"), "1", "0"),
        ],
        ALL_ON,
        {"c1/pod3": "n1"},
    ),
    (
        "case1: cpu exceed derserved, job only request memory can be enqueued and allocated",
        [
            *ENQUEUE_ALLOCATE_BASE,
            pod("pod4", "", "pg4", "0", "1G"),
            _with_min(pod_group("pg4", "q2", 1, "Pending"), "0", "1G"),
        ],
        ALL_ON,
        {"c1/pod4": "n2"},
    ),
    (
        "case2: exceed capacity, can not enqueue",
        [
            *ENQUEUE_ALLOCATE_BASE,
            pod("pod5", "", "pg5", "1", "1G"),
            _with_min(pod_group("pg5", "q1", 1, "Pending"), "1", "1G"),
        ],
        ENQUEUEABLE,
        {},
    ),
    (
        "case3: exceed deserved, can not allocate",
        [
            *ENQUEUE_ALLOCATE_BASE,
            pod("pod5", "", "pg5", "1", "1G"),
            _with_min(pod_group("pg5", "q1", 1, "Pending"), "1", "1G"),
        ],
        ALLOCATABLE,
        {},
    ),
    ("case4: queue with  non-open state, can not enqueue", CLOSED_Q3, ENQUEUEABLE, {}),
]


@pytest.mark.parametrize(
    ("objects", "plugins", "binds"),
    [c[1:] for c in ENQUEUE_ALLOCATE_CASES],
    ids=[c[0] for c in ENQUEUE_ALLOCATE_CASES],
)
def test_volcano_enqueue_and_allocatable(
    objects: list[dict[str, Any]], plugins: list[dict[str, Any]], binds: dict[str, str]
) -> None:
    assert _bound(run(objects, "enqueue, allocate", plugins)) == binds


# Volcano v1.15.1 TestAllocate: three queues of priority 5, 1 and 10 (capability one node each); one
# node is free: the priority-10 queue's pod gets it.
ALLOCATE_CASES = [
    (
        "case0: Pods are assigned according to the order of Queue Priority in which PGs are placed",
        [
            node("n1", "2", "4Gi"),
            node("n2", "2", "4Gi"),
            pod("p1", "n1", "pg1", "2", "4Gi"),
            pod("p2", "", "pg2", "2", "4Gi"),
            pod("p3", "", "pg3", "2", "4Gi"),
            pod_group("pg1", "q1", 1, "Running"),
            pod_group("pg2", "q2", 1, "Inqueue"),
            pod_group("pg3", "q3", 1, "Inqueue"),
            queue("q1", 1, priority=5, capability={"cpu": "2", "memory": "4Gi"}),
            queue("q2", 1, priority=1, capability={"cpu": "2", "memory": "4Gi"}),
            queue("q3", 1, priority=10, capability={"cpu": "2", "memory": "4Gi"}),
        ],
        {"c1/p3": "n2"},
    )
]


@pytest.mark.parametrize(
    ("objects", "binds"), [c[1:] for c in ALLOCATE_CASES], ids=[c[0] for c in ALLOCATE_CASES]
)
def test_volcano_allocate(objects: list[dict[str, Any]], binds: dict[str, str]) -> None:
    sched = run(objects, "allocate, reclaim", [plugin("proportion", "queue_order")])
    assert _bound(sched) == binds
    assert sched.evicted == []


# Volcano v1.15.1 TestProportion: the queue's allocated gauge follows its PodGroups as they are
# deleted. (Volcano's running pods carry no node; here they run on the nodes their affinity allows.)
def _worker(name: str, node_name: str, group: str, cpu: str) -> dict[str, Any]:
    d = pod(name, node_name, group, cpu, f"{cpu}k")
    d["metadata"]["labels"] = {"role": "worker"}
    return d


PROPORTION_NODES = [
    node_dict("node1", {"cpu": "4", "memory": "4k", "pods": "15"}, labels={"selector": "worker"}),
    node_dict("node2", {"cpu": "3", "memory": "3k", "pods": "15"}),
    node_dict("node3", {"cpu": "4", "memory": "4k", "pods": "15", "nvidia.com/gpu": "8", "rdma/hca": "1k"}),
]
PROPORTION_BASE = [
    priority_class("p1", 1),
    priority_class("p2", 2),
    _worker("worker-1", "node1", "pg1", "3"),
    _worker("worker-2", "node1", "pg1", "5"),
    _worker("worker-3", "node1", "pg2", "4"),
    pod_group("pg1", "q1", 2, "Inqueue", "p2", ns="c1"),
    pod_group("pg2", "q1", 1, "Inqueue", "p1", ns="c1"),
    queue("q1", 0),
    queue("q2", 0, capability={"cpu": "2", "memory": "2k", "pods": "10", "nvidia.com/gpu": "4"}),
]
RDMA_DEMO = [
    pod_group("pg3", "q2", 1, "Inqueue", "p1", ns="c1"),
    pod("rdma-demo", "node3", "pg3", "1", "1k"),
]
RDMA_DEMO[0]["spec"]["minResources"] = {"cpu": "1", "memory": "1k", "nvidia.com/gpu": "1", "rdma/hca": "1"}
RDMA_DEMO[1]["spec"]["containers"][0]["resources"] = {
    "requests": {"cpu": "1", "memory": "1k", "nvidia.com/gpu": "1", "rdma/hca": "1"}
}

PROPORTION_CASES = [
    ("pod-deallocate", [*PROPORTION_NODES[:2], *PROPORTION_BASE]),
    ("realcapability-test", [*PROPORTION_NODES, *PROPORTION_BASE, *RDMA_DEMO]),
]


@pytest.mark.parametrize("objects", [c[1] for c in PROPORTION_CASES], ids=[c[0] for c in PROPORTION_CASES])
def test_volcano_proportion_queue_allocated_follows_deletions(objects: list[dict[str, Any]]) -> None:
    tier = [
        plugin("proportion", "predicate"),
        plugin("gang", "job_ready", "job_pipelined"),
        plugin("priority", "job_order"),
    ]
    sched = scheduler_on(objects, one_tier("allocate", tier))
    metrics = SchedulerMetrics(process=False)
    metrics.attach_batch(sched)
    store = sched.informers.store

    def allocated_cpu() -> float:
        sched.informers.pump()
        sched.run_session()
        for family in text_string_to_metric_families(metrics.exposition().decode()):
            for s in family.samples:
                if s.name == "volcano_queue_allocated_milli_cpu" and s.labels.get("queue_name") == "q1":
                    return float(s.value)
        return 0.0

    assert allocated_cpu() == 12000
    store.delete("PodGroup", "c1", "pg1")
    assert allocated_cpu() == 4000
    store.delete("PodGroup", "c1", "pg2")
    assert allocated_cpu() == 0


def test_volcano_no_double_counting_of_admitted_jobs_holding_resources() -> None:
    """A gang admitted and bound in one session keeps no extra reservation in the next: a second
    job still fits the queue's capability."""
    objects = [
        node("n1", "4", "8Gi"),
        queue("q1", 1, capability={"cpu": "4", "memory": "8Gi"}),
        _with_min(pod_group("pgA", "q1", 3, "Inqueue"), "3", "3Gi"),
        *pending("pgA", 3),
    ]
    sched = scheduler_on(
        objects,
        one_tier("enqueue, allocate", [plugin("proportion", "allocatable", "overused", "job_enqueued")]),
    )
    store = sched.informers.store
    sched.run_session()
    assert len(_bound(sched)) == 3
    store.create(_with_min(pod_group("pgB", "q1", 1, "Pending"), "1", "1Gi"))
    store.create(pod("pB1", "", "pgB"))
    sched.informers.pump()
    sched.run_session()
    assert "c1/pB1" in _bound(sched)


# -- property: capability is never exceeded ----------------------------------------------------- #

QUEUE_NAMES = ("qa", "qb", "qc")


@st.composite
def workloads(draw: st.DrawFn) -> list[dict[str, Any]]:
    objects: list[dict[str, Any]] = []
    for i in range(draw(st.integers(1, 3))):
        objects.append(node(f"n{i}", str(draw(st.integers(2, 8))), f"{draw(st.integers(2, 16))}Gi"))
    for name in QUEUE_NAMES:
        spec: dict[str, Any] = {}
        if draw(st.booleans()):
            spec["capability"] = {"cpu": str(draw(st.integers(1, 8)))}
        objects.append(queue(name, draw(st.integers(1, 4)), **spec))
    for j in range(draw(st.integers(1, 6))):
        n = draw(st.integers(1, 4))
        objects.append(
            pod_group(f"j{j}", draw(st.sampled_from(QUEUE_NAMES)), draw(st.integers(1, n)), "Inqueue")
        )
        for t in range(n):
            objects.append(
                pod(f"j{j}-{t}", "", f"j{j}", str(draw(st.integers(1, 3))), f"{draw(st.integers(1, 2))}Gi")
            )
    return objects


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(workloads())
def test_no_queue_exceeds_its_capability(objects: list[dict[str, Any]]) -> None:
    sched = scheduler_on(
        objects,
        {
            "actions": "enqueue, allocate, preempt, reclaim, backfill",
            "tiers": [
                {"plugins": [{"name": "priority"}, {"name": "gang"}, {"name": "conformance"}]},
                {
                    "plugins": [
                        {"name": "drf"},
                        {"name": "predicates"},
                        {"name": "proportion"},
                        {"name": "nodeorder"},
                    ]
                },
            ],
        },
    )
    store = sched.informers.store
    for _ in range(2):
        sched.run_session()
        sched.informers.pump()
    queue_of = {
        (pg["metadata"]["namespace"], pg["metadata"]["name"]): pg["spec"]["queue"]
        for pg in store.list("PodGroup")
    }
    used: dict[str, float] = {}
    for p in store.list("Pod"):
        if not p["spec"].get("nodeName"):
            continue
        group = p["metadata"]["annotations"]["scheduling.k8s.io/group-name"]
        q = queue_of[(p["metadata"]["namespace"], group)]
        cpu = p["spec"]["containers"][0]["resources"]["requests"]["cpu"]
        used[q] = used.get(q, 0.0) + float(parse_quantity(cpu))
    for q in store.list("Queue"):
        cap = (q["spec"].get("capability") or {}).get("cpu")
        if cap is not None:
            assert used.get(q["metadata"]["name"], 0.0) <= float(parse_quantity(cap)), q["metadata"]["name"]
