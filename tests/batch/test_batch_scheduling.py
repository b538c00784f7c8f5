"""The batch profile end to end on the embedded cluster: cases mirroring Volcano's allocate,
enqueue and backfill action tests and the gang/priority plugin tests."""

from __future__ import annotations

from typing import Any

import yaml

from kubesched.batch.conf_loader import batch_conf_from_dict, default_batch_conf
from kubesched.sim.simulation import Simulation, SimulationResult

VOLCANO = "scheduling.volcano.sh/v1beta1"


def node(name: str, cpu: str = "4", memory: str = "16Gi", **extra: Any) -> dict[str, Any]:
    obj: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
        "status": {"allocatable": {"cpu": cpu, "memory": memory, "pods": "110"}},
    }
    obj.update(extra)
    return obj


def group(name: str, min_member: int, queue: str | None = None, **spec: Any) -> dict[str, Any]:
    s: dict[str, Any] = {"minMember": min_member, **spec}
    if queue:
        s["queue"] = queue
    return {
        "apiVersion": VOLCANO,
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": "ns"},
        "spec": s,
    }


def queue(name: str, weight: int = 1, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": VOLCANO,
        "kind": "Queue",
        "metadata": {"name": name},
        "spec": {"weight": weight, **spec},
    }


def pod(
    name: str, grp: str | None, cpu: str | None = "1", memory: str = "1Gi", **spec: Any
) -> dict[str, Any]:
    resources = {"requests": {"cpu": cpu, "memory": memory}} if cpu else {}
    meta: dict[str, Any] = {"name": name, "namespace": "ns"}
    if grp:
        meta["annotations"] = {"scheduling.k8s.io/group-name": grp}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": meta,
        "spec": {
            "schedulerName": "volcano",
            "containers": [{"name": "c", "image": "x", "resources": resources}],
            **spec,
        },
    }


def run(objs: list[dict[str, Any]], conf: str | None = None) -> tuple[SimulationResult, Simulation]:
    bc = batch_conf_from_dict(yaml.safe_load(conf), "test.conf") if conf else default_batch_conf()
    sim = Simulation(seed=0, batch_conf=bc)
    order = {"PriorityClass": 0, "Queue": 1, "Node": 2, "PodGroup": 3, "Pod": 4}
    for obj in sorted(objs, key=lambda o: order[o["kind"]]):
        sim.store.create(obj)
    return sim.run(), sim


def nodes_of(result: SimulationResult) -> dict[str, str | None]:
    return {o.name: o.node for o in result.outcomes}


def group_report(result: SimulationResult, name: str) -> Any:
    return next(g for g in result.pod_groups if g.name == name)


# -- allocate ----------------------------------------------------------------------------------


def test_gang_is_bound_whole_when_it_fits() -> None:
    result, _ = run([node("n1"), node("n2"), group("pg1", 2), pod("p1", "pg1", "3"), pod("p2", "pg1", "3")])
    placed = nodes_of(result)
    assert placed["p1"] and placed["p2"] and placed["p1"] != placed["p2"]
    assert group_report(result, "pg1").phase == "Running"


def test_gang_that_does_not_fit_binds_nothing_and_says_why() -> None:
    # Volcano allocate_test "one Job with two Pods on one node": 2 x 3 cpu on one 4-cpu node.
    result, sim = run([node("n1"), group("pg1", 2), pod("p1", "pg1", "3"), pod("p2", "pg1", "3")])
    assert nodes_of(result) == {"p1": None, "p2": None}
    report = group_report(result, "pg1")
    assert report.phase == "Inqueue"
    assert report.bound == 0
    assert report.message.startswith(
        "1/2 tasks in gang unschedulable: pod group is not ready, 2 Pending, 2 minAvailable"
    )
    assert "Pending: 1 Schedulable, 1 Unschedulable" in report.message
    pg = sim.store.get("PodGroup", "ns", "pg1")
    assert pg is not None
    cond = pg["status"]["conditions"][0]
    assert (cond["type"], cond["status"], cond["reason"]) == ("Unschedulable", "True", "NotEnoughResources")
    p2 = sim.store.get("Pod", "ns", "p2")
    assert p2 is not None
    ps = next(c for c in p2["status"]["conditions"] if c["type"] == "PodScheduled")
    assert ps["status"] == "False"


NO_PROPORTION = """
actions: "enqueue, allocate, backfill"
tiers:
- plugins: [{name: priority}, {name: gang}, {name: conformance}]
- plugins: [{name: overcommit}, {name: drf}, {name: predicates}, {name: nodeorder}]
"""


def test_gang_message_names_the_first_task_that_fit_nowhere() -> None:
    # Without proportion the second task reaches the predicates (with it, the queue's deserved share
    # of 4 cpu already refuses it, silently, as in Volcano).
    result, _ = run(
        [node("n1"), group("pg1", 2), pod("p1", "pg1", "3"), pod("p2", "pg1", "3")], NO_PROPORTION
    )
    report = group_report(result, "pg1")
    assert report.message == (
        "1/2 tasks in gang unschedulable: pod group is not ready, 2 Pending, 2 minAvailable; "
        "Pending: 1 Schedulable, 1 Unschedulable. "
        "Origin reason is p2: 0/1 nodes are unavailable: 1 Insufficient cpu."
    )
    assert report.fit_errors == {"p2": "0/1 nodes are unavailable: 1 Insufficient cpu."}


def test_gang_member_count_above_min_member_binds_what_fits() -> None:
    # minMember 2 of 3 pods: two fit, the third waits; the gang runs.
    result, _ = run(
        [node("n1"), group("pg1", 2), pod("p1", "pg1", "2"), pod("p2", "pg1", "2"), pod("p3", "pg1", "2")]
    )
    bound = [n for n in nodes_of(result).values() if n]
    assert len(bound) == 2
    assert group_report(result, "pg1").phase == "Running"


def test_higher_priority_job_goes_first() -> None:
    pcs = [
        {
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": {"name": "high"},
            "value": 100,
        },
        {
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": {"name": "low"},
            "value": 1,
        },
    ]
    objs = [
        *pcs,
        node("n1"),
        group("low", 1, priorityClassName="low"),
        group("high", 1, priorityClassName="high"),
        pod("low-0", "low", "3"),
        pod("high-0", "high", "3"),
    ]
    result, _ = run(objs)
    placed = nodes_of(result)
    assert placed["high-0"] == "n1"
    assert placed["low-0"] is None


def test_invalid_gang_gets_condition_and_is_not_scheduled() -> None:
    result, sim = run([node("n1"), group("pg1", 3), pod("p1", "pg1"), pod("p2", "pg1")])
    assert nodes_of(result) == {"p1": None, "p2": None}
    pg = sim.store.get("PodGroup", "ns", "pg1")
    assert pg is not None
    cond = pg["status"]["conditions"][0]
    assert cond["reason"] == "NotEnoughTasks"
    assert cond["message"] == "Not enough valid tasks for gang-scheduling, valid: 2, min: 3"


def test_unknown_queue_leaves_group_pending_with_reason() -> None:
    result, sim = run([node("n1"), group("pg1", 1, queue="nosuch"), pod("p1", "pg1")])
    assert nodes_of(result) == {"p1": None}
    report = group_report(result, "pg1")
    assert report.phase == "Pending"
    assert "nosuch" in report.message and "does not exist" in report.message
    pg = sim.store.get("PodGroup", "ns", "pg1")
    assert pg is not None and pg["status"]["conditions"][0]["reason"] == "QueueNotFound"


def test_pod_without_group_gets_its_own() -> None:
    result, _ = run([node("n1"), pod("solo", None)])
    assert nodes_of(result)["solo"] == "n1"
    assert any(g.name.startswith("podgroup-") and g.min_member == 1 for g in result.pod_groups)


def test_predicates_reuse_framework_filters_and_reasons() -> None:
    tainted = node("n2", spec={"taints": [{"key": "k", "value": "v", "effect": "NoSchedule"}]})
    cordoned = node("n3", spec={"unschedulable": True})
    result, _ = run([node("n1", cpu="1"), tainted, cordoned, group("pg1", 1), pod("p1", "pg1", "2")])
    assert nodes_of(result) == {"p1": None}
    expected = (
        "0/3 nodes are unavailable: 1 Insufficient cpu, 1 node(s) had untolerated taint(s), "
        "1 node(s) were unschedulable."
    )
    assert group_report(result, "pg1").fit_errors == {"p1": expected}
    assert next(o.message for o in result.outcomes if o.name == "p1") == expected


def test_nodeorder_least_requested_spreads() -> None:
    busy = pod("busy", None, "3")
    busy["spec"]["nodeName"] = "n1"
    result, _ = run([node("n1"), node("n2"), busy, group("pg1", 1), pod("p1", "pg1", "1")])
    assert nodes_of(result)["p1"] == "n2"


def test_binpack_packs_onto_the_fuller_node() -> None:
    conf = """
actions: "enqueue, allocate, backfill"
tiers:
- plugins: [{name: priority}, {name: gang}]
- plugins: [{name: predicates}, {name: binpack, arguments: {binpack.weight: 10}}]
"""
    busy = pod("busy", None, "3")
    busy["spec"]["nodeName"] = "n1"
    result, _ = run([node("n1"), node("n2"), busy, group("pg1", 1), pod("p1", "pg1", "1")], conf)
    assert nodes_of(result)["p1"] == "n1"


def test_framework_and_batch_pods_share_the_cluster() -> None:
    web = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "web", "namespace": "ns"},
        "spec": {"containers": [{"name": "c", "image": "x", "resources": {"requests": {"cpu": "3"}}}]},
    }
    result, _ = run(
        [node("n1"), node("n2"), web, group("pg1", 2), pod("a", "pg1", "3"), pod("b", "pg1", "3")]
    )
    placed = nodes_of(result)
    # web takes one node; the 2-pod gang needs both: it must wait, whole.
    assert placed["web"] is not None
    assert placed["a"] is None and placed["b"] is None


# -- enqueue / overcommit ------------------------------------------------------------------------


def test_overcommit_keeps_too_big_groups_pending() -> None:
    objs = [
        node("n1"),
        group("small", 1, minResources={"cpu": "2"}),
        group("huge", 1, minResources={"cpu": "100"}),
        pod("s", "small", "1"),
        pod("h", "huge", "1"),
    ]
    result, _ = run(objs)
    assert group_report(result, "huge").phase == "Pending"
    assert nodes_of(result)["h"] is None
    assert nodes_of(result)["s"] == "n1"


def test_overcommit_factor_from_conf_admits_more() -> None:
    conf = """
actions: "enqueue, allocate"
tiers:
- plugins: [{name: priority}, {name: gang}]
- plugins: [{name: overcommit, arguments: {overcommit-factor: 30}}, {name: predicates}]
"""
    objs = [node("n1"), group("huge", 1, minResources={"cpu": "100"}), pod("h", "huge", "1")]
    result, _ = run(objs, conf)
    assert nodes_of(result)["h"] == "n1"


# -- backfill ------------------------------------------------------------------------------------


def test_backfill_places_best_effort_pods() -> None:
    result, _ = run([node("n1"), group("pg1", 1), pod("be", "pg1", None)])
    assert nodes_of(result)["be"] == "n1"


def test_without_backfill_best_effort_pods_wait() -> None:
    conf = """
actions: "enqueue, allocate"
tiers:
- plugins: [{name: priority}, {name: gang}]
- plugins: [{name: predicates}]
"""
    result, _ = run([node("n1"), group("pg1", 1), pod("be", "pg1", None)], conf)
    assert nodes_of(result)["be"] is None


def test_unsupported_plugin_is_a_warning_not_an_error() -> None:
    conf = """
actions: "enqueue, allocate, shuffle"
tiers:
- plugins: [{name: priority}, {name: gang}, {name: tdm}]
- plugins: [{name: predicates}]
"""
    result, _ = run([node("n1"), group("pg1", 1), pod("p", "pg1")], conf)
    assert nodes_of(result)["p"] == "n1"
    assert any("'shuffle'" in w for w in result.warnings)
    assert any("'tdm'" in w for w in result.warnings)
