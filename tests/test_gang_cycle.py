"""The pod group cycle end to end on the embedded cluster: a gang of 8 with minCount 8 on room for
7 binds none and says why on its PodGroup; a node more and all 8 bind together."""

from __future__ import annotations

import json
from typing import Any

import yaml

from kubesched.api.scheduling_groups import POD_GROUP_STORE_KIND
from kubesched.cli import main
from kubesched.framework.config import config_from_dict
from kubesched.plugins import default_registry
from kubesched.sim.simulation import Simulation

GATES = {"GenericWorkload": True, "GangScheduling": True}


def _sim(gates: dict[str, bool] = GATES) -> Simulation:
    registry = default_registry()
    config = config_from_dict(
        {
            "apiVersion": "kubescheduler.config.k8s.io/v1",
            "kind": "KubeSchedulerConfiguration",
            "featureGates": gates,
        },
        registry,
    )
    return Simulation(config, registry, seed=0)


def _node(name: str, cpu: str = "4") -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name},
        "status": {"allocatable": {"cpu": cpu, "memory": "16Gi", "pods": "110"}},
    }


def _pod_group(name: str, min_count: int | None, namespace: str = "default") -> dict[str, Any]:
    policy: dict[str, Any] = {"gang": {"minCount": min_count}} if min_count is not None else {"basic": {}}
    return {
        "apiVersion": "scheduling.k8s.io/v1alpha2",
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"schedulingPolicy": policy},
    }


def _pod(name: str, group: str | None, cpu: str = "2", priority: int | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "containers": [{"name": "c", "image": "i", "resources": {"requests": {"cpu": cpu}}}]
    }
    if group is not None:
        spec["schedulingGroup"] = {"podGroupName": group}
    if priority is not None:
        spec["priority"] = priority
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default"},
        "spec": spec,
    }


def _bound(sim: Simulation) -> dict[str, str]:
    return {
        p["metadata"]["name"]: p["spec"]["nodeName"]
        for p in sim.store.list("Pod")
        if (p.get("spec") or {}).get("nodeName")
    }


def _condition(sim: Simulation, name: str) -> dict[str, Any] | None:
    pg = sim.store.get(POD_GROUP_STORE_KIND, "default", name)
    assert pg is not None
    for c in (pg.get("status") or {}).get("conditions") or []:
        if c["type"] == "PodGroupScheduled":
            return dict(c)
    return None


def test_gang_of_8_on_room_for_7_binds_none_then_all_with_a_node_more() -> None:
    sim = _sim()
    # 2 cpu per pod: two nodes of 4 and one of 6 hold 2 + 2 + 3 = 7 pods.
    for name, cpu in (("n1", "4"), ("n2", "4"), ("n3", "6")):
        sim.store.create(_node(name, cpu))
    sim.store.create(_pod_group("train", 8))
    for i in range(8):
        sim.store.create(_pod(f"train-{i}", "train"))
    result = sim.run()
    assert _bound(sim) == {}
    assert result.scheduled == 0
    cond = _condition(sim, "train")
    assert cond is not None
    assert (cond["status"], cond["reason"], cond["message"]) == (
        "False",
        "Unschedulable",
        "pod group is unschedulable",
    )
    messages = {o.name: o.message for o in sim.outcomes()}
    waiting = [
        n
        for n, m in messages.items()
        if m
        == f'pod group is unschedulable, one or more plugins asked to wait and no plugin rejected pod "{n}"'
    ]
    assert len(waiting) == 7
    assert sum("Insufficient cpu" in m for m in messages.values()) == 1

    sim.store.create(_node("n4", "4"))
    sim.run()
    bound = _bound(sim)
    assert sorted(bound) == [f"train-{i}" for i in range(8)]
    cond = _condition(sim, "train")
    assert cond is not None
    assert (cond["status"], cond["reason"]) == ("True", "Scheduled")


def test_gang_waits_at_pre_enqueue_until_min_count_pods_exist() -> None:
    sim = _sim()
    sim.store.create(_node("n1", "16"))
    sim.store.create(_pod_group("g", 3))
    for i in range(2):
        sim.store.create(_pod(f"g-{i}", "g"))
    sim.run()
    assert _bound(sim) == {}
    assert {o.message for o in sim.outcomes()} == {
        "waiting for minCount pods from a gang to appear in scheduling queue"
    }
    sim.store.create(_pod("g-2", "g"))
    sim.run()
    assert sorted(_bound(sim)) == ["g-0", "g-1", "g-2"]


def test_pods_without_a_group_are_scheduled_as_before() -> None:
    results = []
    for gates in ({}, GATES):
        sim = _sim(gates)
        for name in ("n1", "n2"):
            sim.store.create(_node(name))
        for i in range(5):
            sim.store.create(_pod(f"p{i}", None))
        sim.run()
        results.append(_bound(sim))
    assert results[0] == results[1]
    assert len(results[0]) == 4


TAS_GATES = {**GATES, "TopologyAwareWorkloadScheduling": True}


def _rack_node(name: str, rack: str, cpu: str) -> dict[str, Any]:
    node = _node(name, cpu)
    node["metadata"]["labels"] = {"example.com/rack": rack}
    return node


def _rack_pod_group(name: str, min_count: int) -> dict[str, Any]:
    pg = _pod_group(name, min_count)
    pg["spec"]["schedulingConstraints"] = {"topology": [{"key": "example.com/rack"}]}
    return pg


def test_a_gang_with_a_rack_constraint_lands_in_one_rack() -> None:
    sim = _sim(TAS_GATES)
    # Rack a holds 3 pods of 2 cpu, rack b holds 4: a gang of 4 fits only in b, although the
    # cluster as a whole has room for 7.
    for name, rack, cpu in (("a1", "a", "4"), ("a2", "a", "2"), ("b1", "b", "4"), ("b2", "b", "4")):
        sim.store.create(_rack_node(name, rack, cpu))
    sim.store.create(_rack_pod_group("g", 4))
    for i in range(4):
        sim.store.create(_pod(f"g-{i}", "g"))
    sim.run()
    assert sorted(set(_bound(sim).values())) == ["b1", "b2"]
    cond = _condition(sim, "g")
    assert cond is not None and cond["status"] == "True"


def test_a_gang_that_fits_no_single_rack_stays_pending_and_says_so() -> None:
    sim = _sim(TAS_GATES)
    for name, rack in (("a1", "a"), ("b1", "b")):
        sim.store.create(_rack_node(name, rack, "4"))
    sim.store.create(_rack_pod_group("g", 3))
    for i in range(3):
        sim.store.create(_pod(f"g-{i}", "g"))
    sim.run()
    assert _bound(sim) == {}
    cond = _condition(sim, "g")
    assert cond is not None
    assert (cond["status"], cond["reason"], cond["message"]) == (
        "False",
        "Unschedulable",
        "0/2 placements are available, first placement status: pod group is unschedulable",
    )


def test_of_two_feasible_racks_the_gang_takes_the_tighter_fit() -> None:
    sim = _sim(TAS_GATES)
    # Both racks hold the gang of 2; rack b is the smaller, so NodeResourcesFit's placement score
    # (the most allocated once placed) prefers it and PodGroupPodsCount ties.
    for name, rack, cpu in (("a1", "a", "16"), ("b1", "b", "4")):
        sim.store.create(_rack_node(name, rack, cpu))
    sim.store.create(_rack_pod_group("g", 2))
    for i in range(2):
        sim.store.create(_pod(f"g-{i}", "g"))
    sim.run()
    assert set(_bound(sim).values()) == {"b1"}


WAP_GATES = {**GATES, "WorkloadAwarePreemption": True}


def _bound_pod(name: str, node: str, group: str | None = None, priority: int = 0) -> dict[str, Any]:
    pod = _pod(name, group, priority=priority)
    pod["spec"]["nodeName"] = node
    return pod


def _preemption_cluster(gates: dict[str, bool]) -> Simulation:
    sim = _sim(gates)
    for name in ("n1", "n2"):
        sim.store.create(_node(name, "4"))
    # n1 is full with a low-priority PodGroup disrupted as a whole; n2 holds one low pod.
    low = _pod_group("low", 2)
    low["spec"]["disruptionMode"] = "PodGroup"
    sim.store.create(low)
    for i in range(2):
        sim.store.create(_bound_pod(f"low-{i}", "n1", "low"))
    sim.store.create(_bound_pod("single", "n2"))
    high = _pod_group("high", 2)
    high["spec"]["priority"] = 100
    sim.store.create(high)
    for i in range(2):
        sim.store.create(_pod(f"high-{i}", "high", priority=100))
    return sim


def test_without_workload_aware_preemption_each_pod_of_the_gang_preempts_for_itself() -> None:
    sim = _preemption_cluster(GATES)
    sim.run()
    bound = _bound(sim)
    # high-0 fits n2 beside the lone pod; high-1 then preempts there as any pod would.
    assert bound["high-0"] == bound["high-1"] == "n2"
    assert "single" not in bound
    evicted = [o.name for o in sim.outcomes() if o.status == "Evicted"]
    assert evicted == ["single"]


def test_workload_aware_preemption_evicts_the_least_important_unit_that_makes_room() -> None:
    sim = _preemption_cluster(WAP_GATES)
    sim.run()
    bound = _bound(sim)
    # The PodGroup outranks the lone pod of the same priority, so the lone pod is the victim and
    # the whole gang lands on n2.
    assert "single" not in bound
    assert bound["low-0"] == bound["low-1"] == "n1"
    assert bound["high-0"] == bound["high-1"] == "n2"


def test_simulate_reports_a_gang_that_does_not_fit_and_its_group_condition(
    tmp_path: Any, capsys: Any
) -> None:
    docs = [_node("n1", "4"), _node("n2", "4"), _node("n3", "6"), _pod_group("train", 8)]
    docs += [_pod(f"train-{i}", "train") for i in range(8)]
    path = tmp_path / "gang.yaml"
    path.write_text(yaml.safe_dump_all(docs))
    code = main(
        [
            "simulate",
            str(path),
            "-o",
            "json",
            "-q",
            "--feature-gates",
            "GenericWorkload=true,GangScheduling=true",
        ]
    )
    assert code == 0
    out = json.loads(capsys.readouterr().out)
    assert out["summary"]["scheduled"] == 0
    statuses = {p["name"]: (p["status"], p["message"]) for p in out["pods"]}
    assert all(s == "Unschedulable" for s, _ in statuses.values())
    assert (
        sum(
            m.startswith("pod group is unschedulable, one or more plugins asked to wait")
            for _, m in statuses.values()
        )
        == 7
    )

    docs.append(_node("n4", "4"))
    path.write_text(yaml.safe_dump_all(docs))
    assert (
        main(
            [
                "simulate",
                str(path),
                "-o",
                "json",
                "-q",
                "--feature-gates",
                "GenericWorkload=true,GangScheduling=true",
            ]
        )
        == 0
    )
    out = json.loads(capsys.readouterr().out)
    assert out["summary"]["scheduled"] == 8


def test_topology_does_not_trigger_workload_aware_preemption() -> None:
    sim = _sim({**WAP_GATES, "TopologyAwareWorkloadScheduling": True})
    for name, rack in (("a1", "a"), ("b1", "b")):
        sim.store.create(_rack_node(name, rack, "4"))
    for i, node in enumerate(("a1", "b1")):
        sim.store.create(_bound_pod(f"low-{i}", node))
    sim.store.create(_rack_pod_group("g", 2))
    for i in range(2):
        sim.store.create(_pod(f"g-{i}", "g", priority=100))
    sim.run()
    assert set(_bound(sim)) == {"low-0", "low-1"}
    cond = _condition(sim, "g")
    assert cond is not None
    assert cond["message"] == (
        "0/2 placements are available, first placement status: pod group is unschedulable, "
        "workload aware preemption is not supported for pod groups with scheduling constraints"
    )


def test_a_group_of_mixed_shapes_is_placed_greedily_without_backtracking() -> None:
    # n1 has room for 4 CPUs, n2 for 2. The 2-CPU pod comes first (higher priority) and takes n1,
    # the emptier node; the 4-CPU pod then fits nowhere, although the other way round both would
    # (upstream's documented limit for heterogeneous groups).
    sim = _sim()
    sim.store.create(_node("n1", "4"))
    sim.store.create(_node("n2", "2"))
    sim.store.create(_pod_group("g", 2))
    sim.store.create(_pod("small", "g", cpu="2", priority=10))
    sim.store.create(_pod("big", "g", cpu="4", priority=0))
    sim.run()
    assert _bound(sim) == {}
    cond = _condition(sim, "g")
    assert cond is not None and cond["message"] == "pod group is unschedulable"


def test_pods_created_before_their_pod_group_wait_and_go_when_it_appears() -> None:
    sim = _sim()
    sim.store.create(_node("n1", "8"))
    for i in range(3):
        sim.store.create(_pod(f"g-{i}", "g"))
    sim.run()
    assert {o.message for o in sim.outcomes()} == {
        'waiting for pods\'s pod group "g" to appear in scheduling queue'
    }
    sim.store.create(_pod_group("g", 3))
    sim.run()
    assert sorted(_bound(sim)) == ["g-0", "g-1", "g-2"]


def _pdb_cluster(protected: str) -> Simulation:
    sim = _sim(WAP_GATES)
    for name in ("n1", "n2"):
        sim.store.create(_node(name, "4"))
    for name, node in (("a", "n1"), ("b", "n2")):
        pod = _bound_pod(name, node)
        pod["metadata"]["labels"] = {"app": name}
        sim.store.create(pod)
    sim.store.create(
        {
            "apiVersion": "policy/v1",
            "kind": "PodDisruptionBudget",
            "metadata": {"name": "keep", "namespace": "default"},
            "spec": {"maxUnavailable": 0, "selector": {"matchLabels": {"app": protected}}},
        }
    )
    high = _pod_group("high", 3)
    sim.store.create(high)
    for i in range(3):
        sim.store.create(_pod(f"high-{i}", "high", priority=100))
    return sim


def test_workload_aware_preemption_spares_the_pod_a_disruption_budget_protects() -> None:
    for protected, evicted in (("a", "b"), ("b", "a")):
        sim = _pdb_cluster(protected)
        sim.run()
        bound = _bound(sim)
        assert protected in bound and evicted not in bound, protected
        assert all(f"high-{i}" in bound for i in range(3))
