"""scheduleOne end to end: messages, events, node order, tie-breaks, assume, bind failures, profiles."""

from __future__ import annotations

from collections import Counter
from typing import Any, ClassVar

import pytest

from kubesched.bench.base import node_default, pod_default
from kubesched.cache.node_info import NodeInfo
from kubesched.framework.config import config_from_dict
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.interfaces import PerNodeFilterPlugin
from kubesched.framework.status import Status
from kubesched.framework.types import PreFilterResult
from kubesched.plugins import default_registry, spec_for
from kubesched.scheduler.scheduler import Scheduler
from kubesched.sim.simulation import Simulation
from kubesched.store.base import NotFound, StoreError

API = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration"}
ZONE = "topology.kubernetes.io/zone"


def make_node(
    name: str,
    cpu: str = "4",
    memory: str = "8Gi",
    pods: str = "110",
    *,
    labels: dict[str, str] | None = None,
    taints: list[dict[str, str]] | None = None,
    unschedulable: bool = False,
) -> dict[str, Any]:
    spec: dict[str, Any] = {}
    if taints:
        spec["taints"] = taints
    if unschedulable:
        spec["unschedulable"] = True
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **(labels or {})}},
        "spec": spec,
        "status": {"allocatable": {"cpu": cpu, "memory": memory, "pods": pods}},
    }


def make_pod(
    name: str,
    cpu: str | None = "100m",
    memory: str | None = "100Mi",
    *,
    priority: int | None = None,
    scheduler_name: str | None = None,
    tolerations: list[dict[str, str]] | None = None,
) -> dict[str, Any]:
    requests = {k: v for k, v in (("cpu", cpu), ("memory", memory)) if v is not None}
    spec: dict[str, Any] = {"containers": [{"name": "c", "resources": {"requests": requests}}]}
    if priority is not None:
        spec["priority"] = priority
    if scheduler_name:
        spec["schedulerName"] = scheduler_name
    if tolerations:
        spec["tolerations"] = tolerations
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default"},
        "spec": spec,
    }


def outcome_of(sim: Simulation, name: str) -> Any:
    for o in sim.outcomes():
        if o.name == name:
            return o
    raise KeyError(name)


def stored_pod(sim: Simulation, name: str) -> dict[str, Any]:
    obj = sim.store.get("Pod", "default", name)
    assert obj is not None
    return dict(obj)


def spy_scoring(sched: Scheduler) -> list[list[str]]:
    """Record the feasible node names (in evaluation order) every scoring pass sees."""
    seen: list[list[str]] = []
    original = sched.prioritize_nodes

    def spy(fwk, state, pod, feasible, details):  # type: ignore[no-untyped-def]
        seen.append([sched.snapshot.table.names[int(s)] for s in feasible])
        return original(fwk, state, pod, feasible, details)

    sched.prioritize_nodes = spy  # type: ignore[method-assign]
    return seen


# -- FitError message, event, condition ------------------------------------------------------------


def test_fit_error_message_counts_every_reason_of_every_node() -> None:
    sim = Simulation()
    sim.store.create(make_node("small", cpu="1", memory="1Gi"))
    sim.store.create(
        make_node("tainted", taints=[{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}])
    )
    sim.store.create(make_node("cordoned", unschedulable=True))
    sim.store.create(make_pod("big", cpu="2", memory="2Gi"))
    result = sim.run()
    o = outcome_of(sim, "big")
    assert o.status == "Unschedulable"
    assert o.node is None
    assert o.message == (
        "0/3 nodes are available: 1 Insufficient cpu, 1 Insufficient memory, "
        "1 node(s) had untolerated taint(s), 1 node(s) were unschedulable."
        # Every node is unresolvable (the Insufficient ones have less than the pod asks in all).
        " no new claims to deallocate,"
        " preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling."
    )
    assert result.unschedulable == 1


def test_fit_error_reasons_are_sorted_as_strings() -> None:
    sim = Simulation()
    for i in range(10):
        sim.store.create(make_node(f"c{i}", unschedulable=True))
    for i in range(2):
        sim.store.create(make_node(f"s{i}", cpu="100m"))
    sim.store.create(make_pod("p", cpu="1", memory=None))
    sim.run()
    # Upstream sorts the "count reason" strings, so "10 …" comes before "2 …".
    assert outcome_of(sim, "p").message == (
        "0/12 nodes are available: 10 node(s) were unschedulable, 2 Insufficient cpu."
        " no new claims to deallocate,"
        " preemption: 0/12 nodes are available: 12 Preemption is not helpful for scheduling."
    )


def test_too_many_pods_reason() -> None:
    sim = Simulation()
    sim.store.create(make_node("n", pods="1"))
    sim.store.create(make_pod("a"))
    sim.store.create(make_pod("b"))
    sim.run()
    statuses = {o.name: (o.status, o.message) for o in sim.outcomes()}
    assert sorted(s for s, _ in statuses.values()) == ["Scheduled", "Unschedulable"]
    failed = next(m for s, m in statuses.values() if s == "Unschedulable")
    # The pod in the way has the same priority: preemption finds no victim.
    assert failed == (
        "0/1 nodes are available: 1 Too many pods."
        " no new claims to deallocate,"
        " preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod."
    )


def test_failed_scheduling_event_and_condition() -> None:
    sim = Simulation()
    sim.store.create(make_node("n", cpu="1"))
    sim.store.create(make_pod("p", cpu="2"))
    sim.run()
    msg = (
        "0/1 nodes are available: 1 Insufficient cpu."
        " no new claims to deallocate,"
        " preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling."
    )
    events = [e for e in sim.store.list("Event") if e["regarding"]["name"] == "p"]
    assert [e["reason"] for e in events] == ["FailedScheduling"]
    ev = events[0]
    assert ev["type"] == "Warning"
    assert ev["note"] == msg
    assert ev["action"] == "Scheduling"
    assert ev["reportingController"] == "default-scheduler"
    conds = stored_pod(sim, "p")["status"]["conditions"]
    sched_cond = [c for c in conds if c["type"] == "PodScheduled"]
    assert len(sched_cond) == 1
    assert sched_cond[0]["status"] == "False"
    assert sched_cond[0]["reason"] == "Unschedulable"
    assert sched_cond[0]["message"] == msg
    assert not stored_pod(sim, "p")["spec"].get("nodeName")


def test_scheduled_event_and_binding() -> None:
    sim = Simulation()
    sim.store.create(make_node("n"))
    sim.store.create(make_pod("p"))
    sim.run()
    pod = stored_pod(sim, "p")
    assert pod["spec"]["nodeName"] == "n"
    assert {"type": "PodScheduled", "status": "True"}.items() <= pod["status"]["conditions"][0].items()
    events = [e for e in sim.store.list("Event") if e["regarding"]["name"] == "p"]
    assert [(e["type"], e["reason"]) for e in events] == [("Normal", "Scheduled")]
    assert events[0]["note"] == "Successfully assigned default/p to n"


def test_no_nodes_at_all() -> None:
    sim = Simulation()
    sim.store.create(make_pod("p"))
    sim.run()
    o = outcome_of(sim, "p")
    assert o.status == "Unschedulable"
    assert o.message == "no nodes available to schedule pods"


# -- node order: rotation, zones, feasible-node cap ------------------------------------------------


def test_start_index_advances_by_evaluated_nodes_large_cluster() -> None:
    sim = Simulation(seed=3)
    for i in range(200):
        sim.store.create(node_default(i))
    for i in range(3):
        sim.store.create(pod_default(f"p{i}"))
    sched = sim.scheduler
    seen = spy_scoring(sched)
    sched.informers.pump()
    sched.cache.update_snapshot(sched.snapshot)
    order = [sched.snapshot.table.names[s] for s in sched.snapshot.table.order.tolist()]
    assert sched.next_start_node_index == 0
    assert sched.schedule_one()
    # 200 nodes, adaptive: max(100, 200 * (50 - 200 // 125) // 100) = 100 nodes are scored.
    assert seen[0] == order[:100]
    assert sched.next_start_node_index == 100
    assert sched.schedule_one()
    assert seen[1] == order[100:]
    assert sched.next_start_node_index == 0
    assert sched.schedule_one()
    assert seen[2] == order[:100]


def test_start_index_counts_infeasible_nodes_evaluated_on_the_way() -> None:
    sim = Simulation(seed=0)
    cordoned = set()
    for i in range(300):
        n = node_default(i)
        if i % 3 == 0:
            n["spec"] = {"unschedulable": True}
            cordoned.add(n["metadata"]["name"])
        sim.store.create(n)
    sim.store.create(pod_default("a"))
    sim.store.create(pod_default("b"))
    sched = sim.scheduler
    seen = spy_scoring(sched)
    sched.informers.pump()
    sched.cache.update_snapshot(sched.snapshot)
    order = [sched.snapshot.table.names[s] for s in sched.snapshot.table.order.tolist()]

    def expected(start: int) -> tuple[list[str], int]:
        # adaptive for 300 nodes: 300 * (50 - 2) // 100 = 144 feasible nodes wanted
        feasible: list[str] = []
        evaluated = 0
        for k in range(300):
            name = order[(start + k) % 300]
            evaluated += 1
            if name not in cordoned:
                feasible.append(name)
                if len(feasible) == 144:
                    break
        return feasible, evaluated

    want, evaluated = expected(0)
    assert sched.schedule_one()
    assert seen[0] == want
    assert sched.next_start_node_index == evaluated
    want2, evaluated2 = expected(evaluated)
    assert sched.schedule_one()
    assert seen[1] == want2
    assert sched.next_start_node_index == (evaluated + evaluated2) % 300


def test_small_cluster_evaluates_every_node_and_start_wraps() -> None:
    sim = Simulation()
    for i in range(7):
        sim.store.create(node_default(i))
    sim.store.create(pod_default("p"))
    sched = sim.scheduler
    seen = spy_scoring(sched)
    sched.informers.pump()
    assert sched.schedule_one()
    assert len(seen[0]) == 7
    assert sched.next_start_node_index == 0


def test_unschedulable_pod_evaluates_all_nodes() -> None:
    sim = Simulation()
    for i in range(150):
        sim.store.create(make_node(f"n{i}", cpu="1"))
    sim.store.create(make_pod("p", cpu="2"))
    sim.run()
    assert outcome_of(sim, "p").message == (
        "0/150 nodes are available: 150 Insufficient cpu."
        " no new claims to deallocate,"
        " preemption: 0/150 nodes are available: 150 Preemption is not helpful for scheduling."
    )
    assert sim.scheduler.next_start_node_index == 0


def test_evaluation_order_interleaves_zones() -> None:
    sim = Simulation()
    for zone in ("a", "b", "c"):
        for i in range(3):
            sim.store.create(make_node(f"{zone}{i}", labels={ZONE: f"zone-{zone}"}))
    sim.store.create(make_pod("p"))
    sched = sim.scheduler
    seen = spy_scoring(sched)
    sim.run()
    assert seen[0] == ["a0", "b0", "c0", "a1", "b1", "c1", "a2", "b2", "c2"]


def test_no_score_plugins_stops_at_first_feasible_node() -> None:
    registry = default_registry()
    config = config_from_dict(
        {**API, "profiles": [{"plugins": {"score": {"disabled": [{"name": "*"}]}}}]}, registry
    )
    sim = Simulation(config, registry)
    for i in range(5):
        sim.store.create(make_node(f"n{i}", unschedulable=i < 2))
    sim.store.create(make_pod("p"))
    sim.store.create(make_pod("q"))
    sched = sim.scheduler
    sched.informers.pump()
    sched.cache.update_snapshot(sched.snapshot)
    order = [sched.snapshot.table.names[s] for s in sched.snapshot.table.order.tolist()]
    assert sched.schedule_one()
    # Upstream (hasScoring == false): look for one feasible node only; n0 and n1 are cordoned.
    assert sched.next_start_node_index == 3
    assert sched.schedule_one()
    assert sched.next_start_node_index == 4
    sched.informers.pump()
    placed = {o.name: o.node for o in sim.outcomes()}
    assert placed == {"p": order[2], "q": order[3]}


# -- selectHost ------------------------------------------------------------------------------------


def _place_one(seed: int) -> str:
    sim = Simulation(seed=seed)
    for i in range(6):
        sim.store.create(make_node(f"n{i}"))
    sim.store.create(make_pod("p"))
    sim.run()
    node = outcome_of(sim, "p").node
    assert node is not None
    return str(node)


def test_tie_break_is_seeded_and_spreads() -> None:
    assert _place_one(7) == _place_one(7)
    picks = Counter(_place_one(seed) for seed in range(40))
    assert len(picks) >= 4, picks  # six equal nodes: ties break at random
    assert max(picks.values()) <= 20, picks


def test_highest_score_wins_over_ties() -> None:
    sim = Simulation(seed=1)
    for i in range(4):
        sim.store.create(make_node(f"n{i}", cpu="2" if i != 2 else "64", memory="4Gi" if i != 2 else "256Gi"))
    sim.store.create(make_pod("p"))
    sim.run()
    assert outcome_of(sim, "p").node == "n2"  # LeastAllocated: the big node is emptiest


def test_single_feasible_node_is_chosen_without_scoring() -> None:
    sim = Simulation()
    sim.store.create(make_node("a", unschedulable=True))
    sim.store.create(make_node("b"))
    sim.store.create(make_node("c", cpu="10m"))
    sim.store.create(make_pod("p"))
    seen = spy_scoring(sim.scheduler)
    sim.run()
    assert outcome_of(sim, "p").node == "b"
    assert seen == []


# -- ordering and assume -----------------------------------------------------------------------------


def test_higher_priority_pod_is_scheduled_first() -> None:
    sim = Simulation()
    sim.store.create(make_node("n", cpu="1"))
    sim.store.create(make_pod("low", cpu="1", priority=1))
    sim.store.create(make_pod("high", cpu="1", priority=1000))
    sim.store.create(make_pod("mid", cpu="1", priority=10))
    sim.run()
    outcomes = {o.name: o.status for o in sim.outcomes()}
    assert outcomes == {"high": "Scheduled", "mid": "Unschedulable", "low": "Unschedulable"}


def test_assumed_pod_is_counted_by_the_next_cycle() -> None:
    sim = Simulation()
    sim.store.create(make_node("a", cpu="1"))
    sim.store.create(make_node("b", cpu="1"))
    sim.store.create(make_pod("p1", cpu="700m"))
    sim.store.create(make_pod("p2", cpu="700m"))
    sched = sim.scheduler
    sched.informers.pump()
    # Two cycles back to back: the informer has not reported the first binding yet.
    assert sched.schedule_one()
    assert sched.schedule_one()
    nodes = {o.name: o.node for o in sched.outcomes.values()}
    assert {nodes["p1"], nodes["p2"]} == {"a", "b"}
    assert sum(1 for st in sched.cache.pods() if st.assumed) == 2
    sched.informers.pump()  # confirms both
    assert sum(1 for st in sched.cache.pods() if st.assumed) == 0
    assert len(sched.cache.pods()) == 2


def test_prebound_pods_count_against_their_node() -> None:
    sim = Simulation()
    sim.store.create(make_node("a", cpu="1"))
    sim.store.create(make_node("b", cpu="1"))
    bound = make_pod("bound", cpu="800m")
    bound["spec"]["nodeName"] = "a"
    sim.store.create(bound)
    sim.store.create(make_pod("p", cpu="500m"))
    sim.run()
    assert outcome_of(sim, "p").node == "b"
    assert [o.name for o in sim.outcomes()] == ["p"]


# -- bind failures -----------------------------------------------------------------------------------


def test_bind_failure_forgets_pod_and_retries_with_backoff(monkeypatch: pytest.MonkeyPatch) -> None:
    sim = Simulation()
    sim.store.create(make_node("n"))
    sim.store.create(make_pod("p"))
    sched = sim.scheduler
    real_bind = sim.store.bind
    calls: list[str] = []

    def flaky_bind(namespace: str, name: str, uid: str, node_name: str) -> Any:
        calls.append(node_name)
        if len(calls) == 1:
            raise NotFound(f"node {node_name!r} not found")
        return real_bind(namespace, name, uid, node_name)

    monkeypatch.setattr(sim.store, "bind", flaky_bind)
    sched.informers.pump()
    assert sched.schedule_one()
    uid = next(iter(sched.outcomes))
    assert sched.cache.pod_state(uid) is None  # forgotten
    assert sched.queue.backoff_count == 1
    assert sched.outcomes[uid].status == "Pending"
    assert "binding rejected" in sched.outcomes[uid].message
    sched.cache.update_snapshot(sched.snapshot)
    assert int(sched.snapshot.table.requested[sched.snapshot.table.slot_of["n"]].sum()) == 0

    start = sim.clock.now()
    result = sim.run()
    o = outcome_of(sim, "p")
    assert (o.status, o.node, o.attempts) == ("Scheduled", "n", 2)
    assert sim.clock.now() - start == pytest.approx(1.0)  # waited out the 1s backoff
    assert calls == ["n", "n"]
    assert result.scheduled == 1
    assert stored_pod(sim, "p")["spec"]["nodeName"] == "n"
    reasons = [e["reason"] for e in sim.store.list("Event") if e["regarding"]["name"] == "p"]
    assert reasons == ["FailedScheduling", "Scheduled"]


class NodeVanishesBinder:
    """A Bind plugin for tests: the chosen node is deleted just before the first bind."""

    name: ClassVar[str] = "NodeVanishesBinder"

    def __init__(self, args: Any, handle: Any) -> None:
        self.handle = handle
        self.deleted: list[str] = []

    def bind(self, state: CycleState, pod: Any, node_name: str) -> Status | None:
        if not self.deleted:
            # Someone else deletes the node, straight in the cluster.
            self.handle.informers.store.delete("Node", None, node_name)
            self.deleted.append(node_name)
        try:
            self.handle.ports.binder.bind(pod.namespace, pod.name, pod.uid, node_name)
        except StoreError as exc:
            return Status.error(str(exc))
        return None


def test_node_deleted_between_cycle_and_bind() -> None:
    registry = default_registry()
    registry.register(spec_for(NodeVanishesBinder))
    config = config_from_dict(
        {
            **API,
            "profiles": [
                {
                    "plugins": {
                        "bind": {
                            "enabled": [{"name": "NodeVanishesBinder"}],
                            "disabled": [{"name": "DefaultBinder"}],
                        }
                    }
                }
            ],
        },
        registry,
    )
    sim = Simulation(config, registry, seed=5)
    sim.store.create(make_node("a"))
    sim.store.create(make_node("b"))
    sim.store.create(make_pod("p"))
    sim.run()
    binder = sim.scheduler.profiles["default-scheduler"].plugins["NodeVanishesBinder"]
    assert len(binder.deleted) == 1
    gone = binder.deleted[0]
    o = outcome_of(sim, "p")
    assert o.status == "Scheduled"
    assert o.node == ({"a", "b"} - {gone}).pop()
    assert o.attempts == 2
    assert len(sim.scheduler.cache.pods()) == 1
    assert gone not in sim.scheduler.cache.node_infos


# -- events make pods schedulable ----------------------------------------------------------------------


def test_node_added_later_makes_pod_schedulable() -> None:
    sim = Simulation()
    sim.store.create(make_node("small", cpu="1"))
    sim.store.create(make_pod("p", cpu="2"))
    sim.run()
    assert outcome_of(sim, "p").status == "Unschedulable"
    assert sim.scheduler.queue.unschedulable_count == 1
    sim.store.create(make_node("big", cpu="8"))
    sim.run()
    o = outcome_of(sim, "p")
    assert (o.status, o.node, o.message) == ("Scheduled", "big", "")


def test_pod_deleted_frees_room() -> None:
    sim = Simulation()
    sim.store.create(make_node("n", cpu="1"))
    sim.store.create(make_pod("first", cpu="1"))
    sim.run()
    sim.store.create(make_pod("second", cpu="1"))
    sim.run()
    assert outcome_of(sim, "second").status == "Unschedulable"
    sim.store.delete("Pod", "default", "first")
    sim.run()
    assert outcome_of(sim, "second").node == "n"


def test_taint_removed_by_node_update() -> None:
    sim = Simulation()
    tainted = make_node("n", taints=[{"key": "k", "value": "v", "effect": "NoSchedule"}])
    sim.store.create(tainted)
    sim.store.create(make_pod("p"))
    sim.run()
    assert outcome_of(sim, "p").message == (
        "0/1 nodes are available: 1 node(s) had untolerated taint(s)."
        " no new claims to deallocate,"
        " preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling."
    )
    current = dict(sim.store.get("Node", None, "n") or {})
    current["spec"] = {}
    sim.store.update(current)
    sim.run()
    assert outcome_of(sim, "p").node == "n"


def test_unknown_scheduler_name_stays_pending() -> None:
    sim = Simulation()
    sim.store.create(make_node("n"))
    sim.store.create(make_pod("p", scheduler_name="my-scheduler"))
    sim.run()
    o = outcome_of(sim, "p")
    assert o.status == "Pending"
    assert o.node is None
    assert "my-scheduler" in o.message
    assert not stored_pod(sim, "p")["spec"].get("nodeName")
    assert [e for e in sim.store.list("Event") if e["regarding"]["name"] == "p"] == []


# -- out-of-tree per-node filter in a custom profile ---------------------------------------------------


class NeedsMagicLabel(PerNodeFilterPlugin):
    name: ClassVar[str] = "NeedsMagicLabel"

    def filter(self, state: CycleState, pod: Any, node_info: NodeInfo) -> Status | None:
        assert node_info.node is not None
        if node_info.node.labels.get("magic") == "yes":
            return None
        return Status.unschedulable("node(s) lack the magic label")


def _custom_profile_sim() -> Simulation:
    registry = default_registry()
    registry.register(spec_for(NeedsMagicLabel))
    config = config_from_dict(
        {
            **API,
            "profiles": [
                {"schedulerName": "default-scheduler"},
                {
                    "schedulerName": "magic-scheduler",
                    "plugins": {"filter": {"enabled": [{"name": "NeedsMagicLabel"}]}},
                },
            ],
        },
        registry,
    )
    return Simulation(config, registry)


def test_per_node_filter_plugin_in_custom_profile() -> None:
    sim = _custom_profile_sim()
    for i in range(4):
        sim.store.create(make_node(f"n{i}", labels={"magic": "yes"} if i == 2 else {}))
    sim.store.create(make_pod("magic", scheduler_name="magic-scheduler"))
    sim.store.create(make_pod("plain"))
    sim.run()
    assert outcome_of(sim, "magic").node == "n2"
    assert outcome_of(sim, "plain").status == "Scheduled"


def test_per_node_filter_rejection_message_and_requeue_on_any_event() -> None:
    sim = _custom_profile_sim()
    for i in range(3):
        sim.store.create(make_node(f"n{i}"))
    sim.store.create(make_pod("magic", scheduler_name="magic-scheduler"))
    sim.run()
    o = outcome_of(sim, "magic")
    assert o.status == "Unschedulable"
    # Unschedulable (not unresolvable) nodes are preemption candidates, but they hold no pods.
    assert o.message == (
        "0/3 nodes are available: 3 node(s) lack the magic label."
        " no new claims to deallocate,"
        " preemption: 0/3 nodes are available: 3 No preemption victims found for incoming pod."
    )
    # The plugin registers no events, so (as upstream) any event may help it: a label change does.
    node = dict(sim.store.get("Node", None, "n1") or {})
    node["metadata"] = {**node["metadata"], "labels": {"magic": "yes"}}
    sim.store.update(node)
    sim.run()
    assert outcome_of(sim, "magic").node == "n1"


# -- PreFilterResult: node subsets --------------------------------------------------------------------


def _picker(plugin_name: str, nodes: set[str]) -> type:
    class Picker:
        name: ClassVar[str] = plugin_name

        def __init__(self, args: Any, handle: Any) -> None:
            pass

        def pre_filter(self, state: CycleState, pod: Any, snapshot: Any) -> tuple[PreFilterResult, None]:
            return PreFilterResult(set(nodes)), None

    return Picker


def _picker_sim(pickers: dict[str, set[str]], nodes: list[dict[str, Any]]) -> Simulation:
    registry = default_registry()
    for name, picked in pickers.items():
        registry.register(spec_for(_picker(name, picked)))
    config = config_from_dict(
        {**API, "profiles": [{"plugins": {"preFilter": {"enabled": [{"name": n} for n in pickers]}}}]},
        registry,
    )
    sim = Simulation(config, registry)
    for n in nodes:
        sim.store.create(n)
    return sim


def test_pre_filter_results_that_do_not_intersect() -> None:
    sim = _picker_sim({"PickA": {"n0"}, "PickB": {"n1"}}, [make_node(f"n{i}") for i in range(3)])
    sim.store.create(make_pod("p"))
    sim.run()
    assert outcome_of(sim, "p").message == (
        "0/3 nodes are available: node(s) didn't satisfy plugin(s) [PickA PickB] simultaneously."
        " no new claims to deallocate,"
        " preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling."
    )


def test_pre_filter_subset_counts_absent_nodes() -> None:
    nodes = [make_node("n0", unschedulable=True), make_node("n1"), make_node("n2")]
    sim = _picker_sim({"PickA": {"n0", "ghost"}}, nodes)
    sim.store.create(make_pod("p"))
    sim.run()
    assert outcome_of(sim, "p").message == (
        "0/3 nodes are available: 1 node(s) were unschedulable, 2 node(s) didn't satisfy plugin(s) [PickA]."
        " no new claims to deallocate,"
        " preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling."
    )


def test_pre_filter_subset_advances_start_index_over_all_nodes() -> None:
    sim = _picker_sim({"PickA": {"n3"}}, [make_node(f"n{i}") for i in range(5)])
    sim.store.create(make_pod("p"))
    sim.run()
    assert outcome_of(sim, "p").node == "n3"
    # Upstream: nextStartNodeIndex = (nextStartNodeIndex + processed) % len(allNodes).
    assert sim.scheduler.next_start_node_index == 1
