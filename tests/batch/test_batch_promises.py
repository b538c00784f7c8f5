"""Batch pods behave as Volcano and the API server say: gated pods are never placed nor preempted
for, a pod naming a missing PodGroup says so, a gang bound below minMember is never silent, a
PodGroup's status follows evictions, and every input pod is reported once (finished ones with their
phase, holding nothing)."""

from __future__ import annotations

import copy
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests.batch.test_gang_break_condition import NOTE, same_priority_gangs, scheduler

from kubesched.api.manifests import LoadResult, ManifestObject
from kubesched.api.quantity import parse_quantity
from kubesched.batch.conf_loader import batch_conf_from_dict, default_batch_conf
from kubesched.sim.simulation import Simulation, SimulationResult

VOLCANO = "scheduling.volcano.sh/v1beta1"
GATE = "example.com/wait"
READINESS_NOTE = "Gang below minMember by Volcano's readiness rule"


def node(name: str, cpu: str = "4", **labels: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **labels}},
        "status": {"allocatable": {"cpu": cpu, "memory": "16Gi", "pods": "110"}},
    }


def group(name: str, min_member: int, queue: str = "default", **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": VOLCANO,
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": "ns"},
        "spec": {"minMember": min_member, "queue": queue, **spec},
    }


def queue(name: str) -> dict[str, Any]:
    return {"apiVersion": VOLCANO, "kind": "Queue", "metadata": {"name": name}, "spec": {"weight": 1}}


def pc(name: str, value: int) -> dict[str, Any]:
    return {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": name},
        "value": value,
    }


def pod(
    name: str,
    grp: str | None,
    cpu: str | None = "1",
    *,
    gated: bool = False,
    node_name: str | None = None,
    phase: str | None = None,
    scheduler_name: str = "volcano",
    **spec: Any,
) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": "ns"}
    if grp:
        meta["annotations"] = {"scheduling.k8s.io/group-name": grp}
    obj: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": meta,
        "spec": {
            "schedulerName": scheduler_name,
            "containers": [
                {"name": "c", "image": "x", "resources": {"requests": {"cpu": cpu}} if cpu else {}}
            ],
            **spec,
        },
    }
    if gated:
        obj["spec"]["schedulingGates"] = [{"name": GATE}]
    if node_name:
        obj["spec"]["nodeName"] = node_name
    if phase:
        obj["status"] = {"phase": phase}
    return obj


def run(
    objs: list[dict[str, Any]], conf: str | None = None, seed: int = 0
) -> tuple[SimulationResult, Simulation]:
    """Load ``objs`` as a manifest would (bound pods admitted by their kubelet) and run."""
    loaded = LoadResult()
    for i, obj in enumerate(objs):
        loaded.objects.append(ManifestObject(obj["kind"], obj, "cluster.yaml", i + 1))
    bc = batch_conf_from_dict(yaml.safe_load(conf), "test.conf") if conf else default_batch_conf()
    sim = Simulation(seed=seed, batch_conf=bc)
    sim.load(loaded)
    return sim.run(), sim


def outcome(result: SimulationResult, name: str) -> Any:
    (found,) = [o for o in result.outcomes if o.name == name]
    return found


def report(result: SimulationResult, name: str) -> Any:
    return next(g for g in result.pod_groups if g.name == name)


def pod_scheduled(sim: Simulation, name: str) -> dict[str, Any] | None:
    obj = sim.store.get("Pod", "ns", name)
    for cond in (obj.get("status") or {}).get("conditions") or []:
        if cond.get("type") == "PodScheduled":
            return dict(cond)
    return None


PREEMPT_CONF = """
actions: "enqueue, allocate, preempt, backfill"
tiers:
- plugins: [{name: priority}, {name: gang}, {name: conformance}]
- plugins: [{name: drf}, {name: predicates}, {name: proportion}, {name: nodeorder}]
"""
RECLAIM_CONF = PREEMPT_CONF.replace("preempt", "reclaim")


# -- scheduling gates ------------------------------------------------------------------------- #


def test_gated_volcano_pods_are_never_allocated_and_wait_for_their_gates() -> None:
    result, sim = run(
        [node("n1"), group("g", 1), pod("in-group", "g", gated=True), pod("alone", None, gated=True)]
    )
    for name in ("in-group", "alone"):
        out = outcome(result, name)
        assert (out.status, out.node) == ("Pending", None)
        assert out.message == f"waiting for scheduling gates: [{GATE}]"
        assert not sim.store.get("Pod", "ns", name)["spec"].get("nodeName")
        cond = pod_scheduled(sim, name)
        # The API server's SchedulingGated condition is left as it is (Volcano does not touch it).
        assert cond is None or cond["reason"] == "SchedulingGated"


def test_a_gated_pod_is_placed_once_its_gates_are_removed() -> None:
    _, sim = run([node("n1"), group("g", 1), pod("p", "g", gated=True)])
    obj = copy.deepcopy(sim.store.get("Pod", "ns", "p"))
    obj["spec"]["schedulingGates"] = []
    sim.store.update(obj)
    result = sim.run()
    assert (outcome(result, "p").status, outcome(result, "p").node) == ("Scheduled", "n1")


def test_a_gang_with_a_gated_member_binds_nothing() -> None:
    result, _ = run([node("n1"), group("g", 2), pod("open", "g"), pod("gated", "g", gated=True)])
    assert outcome(result, "open").node is None
    assert outcome(result, "gated").message == f"waiting for scheduling gates: [{GATE}]"
    assert report(result, "g").bound == 0


@pytest.mark.parametrize("gated", [False, True], ids=["open", "gated"])
def test_gated_pods_are_never_preempted_for(gated: bool) -> None:
    objs = [
        pc("low", 1),
        pc("high", 1000),
        node("n1", "2"),
        group("low", 1, priorityClassName="low"),
        group("high", 1, priorityClassName="high"),
        pod("victim-0", "low", "1", node_name="n1", phase="Running", priorityClassName="low"),
        pod("victim-1", "low", "1", node_name="n1", phase="Running", priorityClassName="low"),
        pod("urgent", "high", "1", gated=gated, priorityClassName="high"),
    ]
    result, _ = run(objs, PREEMPT_CONF)
    assert (result.evicted == []) is gated
    if gated:
        assert outcome(result, "urgent").message == f"waiting for scheduling gates: [{GATE}]"


@pytest.mark.parametrize("gated", [False, True], ids=["open", "gated"])
def test_gated_pods_are_never_reclaimed_for(gated: bool) -> None:
    # q1 holds the whole node beyond its share; the open pod of q2 reclaims one member, the gated
    # one nothing.
    objs = [
        queue("q1"),
        queue("q2"),
        node("n1", "2"),
        group("holder", 1, "q1"),
        group("waiting", 1, "q2"),
        pod("holder-0", "holder", "1", node_name="n1", phase="Running"),
        pod("holder-1", "holder", "1", node_name="n1", phase="Running"),
        pod("waiter", "waiting", "1", gated=gated),
    ]
    result, _ = run(objs, RECLAIM_CONF)
    assert (result.evicted == []) is gated


# -- a PodGroup that does not exist ------------------------------------------------------------ #


def test_pod_naming_a_missing_podgroup_is_pending_with_a_message_and_a_warning() -> None:
    result, sim = run([node("n1"), pod("lost", "nowhere")])
    out = outcome(result, "lost")
    msg = "PodGroup 'nowhere' of pod ns/lost does not exist"
    assert (out.status, out.node, out.message) == ("Pending", None, msg)
    assert f"{msg}: the pod is not scheduled" in result.warnings
    cond = pod_scheduled(sim, "lost")
    assert cond is not None and (cond["status"], cond["reason"], cond["message"]) == (
        "False",
        "Unschedulable",
        msg,
    )
    events = [e for e in sim.store.list("Event") if e["regarding"]["name"] == "lost"]
    assert [(e["type"], e["reason"], e["note"]) for e in events] == [("Warning", "FailedScheduling", msg)]


def test_a_pod_waiting_for_its_podgroup_is_placed_once_the_group_is_created() -> None:
    _, sim = run([node("n1"), pod("late", "later")])
    sim.store.create(group("later", 1))
    result = sim.run()
    assert outcome(result, "late").status == "Scheduled"


# -- gangs below minMember are never silent ----------------------------------------------------- #


def test_gang_committed_on_a_best_effort_member_that_cannot_be_placed_says_so() -> None:
    """Volcano's allocate counts pending best-effort members as ready and leaves them to backfill;
    when backfill cannot place one, the gang is bound below minMember. kubesched keeps that and says
    what happened on the PodGroup."""
    objs = [
        node("n1"),
        group("g", 3),
        pod("a", "g"),
        pod("b", "g"),
        pod("be", "g", None, nodeSelector={"disk": "ssd"}),
    ]
    result, sim = run(objs)
    rep = report(result, "g")
    assert (rep.bound, rep.min_member) == (2, 3)
    expected = (
        f"{READINESS_NOTE}: 2 of minMember 3 members bound after allocate counted pending best-effort "
        "members as ready, which could not be placed: ns/be (0/1 nodes are unavailable: 1 node(s) "
        "didn't match Pod's node affinity/selector.)."
    )
    assert expected in rep.message
    conds = sim.store.get("PodGroup", "ns", "g")["status"]["conditions"]
    unsched = [c for c in conds if c["type"] == "Unschedulable"]
    assert unsched and expected in unsched[0]["message"] and unsched[0]["reason"] == "NotEnoughResources"


def test_gated_best_effort_member_that_made_the_gang_ready_is_named_with_its_gate() -> None:
    result, _ = run([node("n1"), group("g", 2), pod("a", "g"), pod("be", "g", None, gated=True)])
    rep = report(result, "g")
    assert rep.bound == 1
    assert f"ns/be (waiting for scheduling gates: [{GATE}])" in rep.message


def test_gang_break_note_is_reported_without_pending_members() -> None:
    sched, _ = scheduler(same_priority_gangs(2), "preempt")
    sched.run_session()
    sched.informers.pump()
    sched.run_session()
    big = next(r for r in sched.job_reports() if r.name == "big")
    assert big.pending == 0
    assert NOTE in big.message


# -- status after evictions --------------------------------------------------------------------- #


def test_podgroup_whose_only_member_the_kube_scheduler_preempted_is_no_longer_running() -> None:
    objs = [
        node("n1"),
        pc("high", 1000),
        group("g", 1),
        pod("member", "g", "3"),
        {
            **pod("urgent", None, "3", scheduler_name="default-scheduler", priorityClassName="high"),
            "metadata": {"name": "urgent", "namespace": "ns", "annotations": {"kubesched.io/arrival": "10s"}},
        },
    ]
    result, sim = run(objs)
    assert outcome(result, "member").status == "Evicted"
    assert outcome(result, "urgent").node == "n1"
    rep = report(result, "g")
    assert (rep.phase, rep.bound) == ("Pending", 0)
    assert sim.store.get("PodGroup", "ns", "g")["status"]["phase"] == "Pending"


# -- every input pod reported once ---------------------------------------------------------------- #


def test_finished_pods_bound_in_the_input_are_reported_with_their_phase_and_hold_nothing() -> None:
    objs = [
        node("n1", "4"),
        pod("done", None, "4", node_name="n1", phase="Succeeded", scheduler_name="default-scheduler"),
        pod("broke", None, "4", node_name="n1", phase="Failed", scheduler_name="default-scheduler"),
        pod("batch-done", "g", "4", node_name="n1", phase="Succeeded"),
        group("g", 1),
        pod("new", None, "4", scheduler_name="default-scheduler"),
    ]
    result, _ = run(objs)
    got = {o.name: (o.status, o.node) for o in result.outcomes}
    assert got == {
        "done": ("Succeeded", "n1"),
        "broke": ("Failed", "n1"),
        "batch-done": ("Succeeded", "n1"),
        "new": ("Scheduled", "n1"),  # the finished pods hold nothing on n1
    }
    assert len(result.outcomes) == len(got)


# -- invariants ---------------------------------------------------------------------------------- #

PHASES = (None, "Running", "Succeeded", "Failed")


@st.composite
def clusters(draw: st.DrawFn) -> dict[str, Any]:
    nodes = draw(st.lists(st.integers(1, 6), min_size=1, max_size=3))
    gangs = draw(
        st.lists(
            st.tuples(
                st.integers(1, 4),  # members
                st.integers(1, 4),  # minMember (capped at members)
                st.integers(0, 3),  # cpu per member (0: best-effort)
                st.lists(st.booleans(), min_size=4, max_size=4),  # gated, per member
                st.booleans(),  # best-effort members ask for a label no node has
            ),
            min_size=1,
            max_size=4,
        )
    )
    running = draw(
        st.lists(st.tuples(st.integers(0, 2), st.integers(1, 3), st.sampled_from(PHASES)), max_size=4)
    )
    return {"nodes": nodes, "gangs": gangs, "running": running}


def build(c: dict[str, Any]) -> list[dict[str, Any]]:
    objs: list[dict[str, Any]] = [node(f"n{i}", str(cpu)) for i, cpu in enumerate(c["nodes"])]
    for i, (slot, cpu, phase) in enumerate(c["running"]):
        where = f"n{slot % len(c['nodes'])}"
        objs.append(
            pod(f"r{i}", None, str(cpu), node_name=where, phase=phase, scheduler_name="default-scheduler")
        )
    for g, (size, min_member, cpu, gates, unplaceable) in enumerate(c["gangs"]):
        objs.append(group(f"g{g}", min(min_member, size)))
        for i in range(size):
            spec = {"nodeSelector": {"disk": "none"}} if cpu == 0 and unplaceable else {}
            objs.append(pod(f"g{g}-{i}", f"g{g}", str(cpu) if cpu else None, gated=gates[i], **spec))
    return objs


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(clusters())
def test_no_pod_lost_no_overcommit_no_silent_partial_gang(c: dict[str, Any]) -> None:
    objs = build(c)
    result, sim = run(objs)
    pods_in = [o["metadata"]["name"] for o in objs if o["kind"] == "Pod"]
    reported = [o.name for o in result.outcomes]
    assert sorted(reported) == sorted(pods_in), "every input pod reported exactly once"
    by_name = {o.name: o for o in result.outcomes}
    used: dict[str, int] = {}
    bound_per_gang: dict[str, int] = {}
    for obj in sim.store.list("Pod"):
        name = obj["metadata"]["name"]
        where = obj["spec"].get("nodeName")
        phase = (obj.get("status") or {}).get("phase")
        if obj["spec"].get("schedulingGates"):
            assert not where, f"gated pod {name} bound"
            assert by_name[name].message == f"waiting for scheduling gates: [{GATE}]"
        if not where or phase in ("Succeeded", "Failed") or by_name[name].status == "Failed":
            continue
        requests = obj["spec"]["containers"][0].get("resources", {}).get("requests") or {}
        used[where] = used.get(where, 0) + int(parse_quantity(requests.get("cpu", "0")) * 1000)
        if name.startswith("g"):
            gang = name.split("-")[0]
            bound_per_gang[gang] = bound_per_gang.get(gang, 0) + 1
    for i, cpu in enumerate(c["nodes"]):
        assert used.get(f"n{i}", 0) <= cpu * 1000, f"n{i} over-committed"
    for g, (size, min_member, *_rest) in enumerate(c["gangs"]):
        bound = bound_per_gang.get(f"g{g}", 0)
        if 0 < bound < min(min_member, size):
            assert "Gang below minMember" in report(result, f"g{g}").message, f"g{g} silently partial"
