"""DefaultPreemption tables, after upstream default_preemption_test.go (victim selection, PDBs,
pickOneNodeForPreemption, preemptionPolicy, numCandidates), plus the vectorized dry run checked
against the literal one on random clusters."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kubesched.framework.config import config_from_dict
from kubesched.framework.outcome import PodOutcome
from kubesched.framework.plugin_args import DefaultPreemptionArgs
from kubesched.plugins import default_registry
from kubesched.plugins.defaultpreemption import DefaultPreemption, num_candidates
from kubesched.sim.simulation import Simulation

START = "2024-01-01T00:00:{:02d}Z"


def node(name: str, cpu: str = "4", pods: int = 110) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
        "status": {"allocatable": {"cpu": cpu, "memory": "32Gi", "pods": str(pods)}},
    }


def pod(
    name: str,
    cpu: str,
    priority: int,
    node_name: str = "",
    *,
    started: int | None = None,
    labels: dict[str, str] | None = None,
    policy: str | None = None,
) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "priority": priority,
        "containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}],
    }
    if node_name:
        spec["nodeName"] = node_name
    if policy:
        spec["preemptionPolicy"] = policy
    obj: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", "labels": labels or {}},
        "spec": spec,
    }
    if started is not None:
        obj["status"] = {"phase": "Running", "startTime": START.format(started)}
    return obj


def pdb(name: str, app: str, allowed: int | None = None, min_available: int | None = None) -> dict[str, Any]:
    obj: dict[str, Any] = {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"selector": {"matchLabels": {"app": app}}},
    }
    if min_available is not None:
        obj["spec"]["minAvailable"] = min_available
    if allowed is not None:
        obj["status"] = {"disruptionsAllowed": allowed}
    return obj


@dataclass
class Attempt:
    sim: Simulation
    outcome: PodOutcome
    nominated: str | None
    victims: list[str]


def plugin_of(sim: Simulation) -> DefaultPreemption:
    pl = sim.scheduler.profiles["default-scheduler"].plugins["DefaultPreemption"]
    assert isinstance(pl, DefaultPreemption) and pl.name == "DefaultPreemption"
    return pl


def preempt_once(
    objects: Sequence[dict[str, Any]], preemptor: dict[str, Any], *, generic: bool = False, seed: int = 0
) -> Attempt:
    """Create the cluster, then run exactly one scheduling cycle for ``preemptor``."""
    sim = Simulation(seed=seed, explain=True)
    plugin_of(sim).force_generic = generic
    for obj in sorted(objects, key=lambda o: o["kind"] != "Node"):
        sim.store.create(obj)
    sched = sim.scheduler
    sched.informers.pump()
    created = sim.store.create(preemptor)
    sched.informers.pump()
    assert sched.schedule_one()
    uid = created["metadata"]["uid"]
    entry = (sched.explain.get(uid) if sched.explain else None) or {}
    pre = entry.get("preemption") or {}
    stored = sim.store.get("Pod", "default", preemptor["metadata"]["name"]) or {}
    nominated = (stored.get("status") or {}).get("nominatedNodeName")
    assert nominated == pre.get("nominatedNode")
    return Attempt(sim, sched.outcomes[uid], nominated, sorted(pre.get("victims") or []))


# --------------------------------------------------------------------------- victim selection

VICTIM_CASES = [
    pytest.param(
        [node("n1", cpu="4"), pod("a", "2", 1, "n1"), pod("b", "2", 1, "n1")],
        pod("p", "2", 10),
        "n1",
        ["default/b"],  # b started later: less important, evicted first; a is reprieved
        id="reprieve-the-more-important",
    ),
    pytest.param(
        [node("n1", cpu="4"), pod("a", "1", 1, "n1", started=1), pod("b", "3", 1, "n1", started=2)],
        pod("p", "3", 10),
        "n1",
        ["default/b"],
        id="only-what-is-needed",
    ),
    pytest.param(
        [node("n1", cpu="4"), pod("hi", "2", 20, "n1"), pod("lo", "2", 1, "n1")],
        pod("p", "3", 10),
        None,
        [],
        id="higher-priority-pods-stay",
    ),
    pytest.param(
        [
            node("n1", cpu="4"),
            node("n2", cpu="4"),
            pod("hi", "1", 20, "n1"),
            pod("lo", "3", 1, "n1"),
            pod("lo-a", "2", 1, "n2"),
            pod("lo-b", "2", 1, "n2"),
        ],
        pod("p", "3", 10),
        "n1",
        ["default/lo"],  # nodes with different numbers of lower-priority pods, examined together
        id="fewer-victims-next-to-a-pod-that-stays",
    ),
    pytest.param(
        [node("n1", cpu="4"), pod("lo1", "1", 1, "n1", started=1), pod("lo2", "3", 2, "n1", started=2)],
        pod("p", "4", 10),
        "n1",
        ["default/lo1", "default/lo2"],
        id="all-lower-priority-pods",
    ),
]


@pytest.mark.parametrize(("objects", "preemptor", "node_name", "victims"), VICTIM_CASES)
@pytest.mark.parametrize("generic", [False, True], ids=["fast", "generic"])
def test_victims(
    objects: list[dict[str, Any]],
    preemptor: dict[str, Any],
    node_name: str | None,
    victims: list[str],
    generic: bool,
) -> None:
    a = preempt_once(objects, preemptor, generic=generic)
    assert a.nominated == node_name
    assert a.victims == victims
    evicted = {f"{o['metadata']['namespace']}/{o['metadata']['name']}" for o in a.sim.store.list("Pod")}
    assert not set(victims) & evicted  # victims are gone from the cluster


# --------------------------------------------------------------------------- pickOneNodeForPreemption

PICK_CASES = [
    pytest.param(
        [
            node("n1"),
            node("n2"),
            pod("n1-mid", "4", 5, "n1"),
            pod("n2-low", "4", 1, "n2"),
        ],
        "n2",
        id="lowest-top-victim-priority",
    ),
    pytest.param(
        [
            node("n1"),
            node("n2"),
            pod("n1-a", "2", 5, "n1"),
            pod("n1-b", "2", 4, "n1"),
            pod("n2-a", "2", 5, "n2"),
            pod("n2-b", "2", 1, "n2"),
        ],
        "n2",
        id="same-top-priority-lowest-sum",
    ),
    pytest.param(
        [
            node("n1"),
            node("n2"),
            pod("n1-a", "2", 5, "n1"),
            pod("n1-b", "2", 0, "n1"),
            pod("n2-a", "4", 5, "n2"),
        ],
        "n2",
        id="sums-use-priority-plus-2^31-so-fewer-victims-win",
    ),
    pytest.param(
        [
            node("n1"),
            node("n2"),
            pod("n1-a", "2", -5, "n1"),
            pod("n1-b", "2", -5, "n1"),
            pod("n2-a", "4", -5, "n2"),
        ],
        "n2",
        id="negative-priorities-fewer-victims",
    ),
    pytest.param(
        [
            node("n1"),
            node("n2"),
            pod("n1-a", "4", 3, "n1", started=5),
            pod("n2-a", "4", 3, "n2", started=9),
        ],
        "n2",
        id="latest-start-of-top-victims",
    ),
    pytest.param(
        [
            node("n1"),
            node("n2"),
            pod("n1-a", "2", 3, "n1", started=7),
            pod("n1-b", "2", 1, "n1", started=1),
            pod("n2-a", "2", 3, "n2", started=3),
            pod("n2-b", "2", 1, "n2", started=9),
        ],
        "n1",
        id="start-time-counts-only-the-top-priority-victims",
    ),
]


@pytest.mark.parametrize(("objects", "expected"), PICK_CASES)
@pytest.mark.parametrize("generic", [False, True], ids=["fast", "generic"])
def test_pick_one_node(objects: list[dict[str, Any]], expected: str, generic: bool) -> None:
    a = preempt_once(objects, pod("p", "4", 10), generic=generic)
    assert a.nominated == expected


# --------------------------------------------------------------------------- PodDisruptionBudgets


@pytest.mark.parametrize("generic", [False, True], ids=["fast", "generic"])
def test_node_without_pdb_violation_is_preferred(generic: bool) -> None:
    objects = [
        node("n1"),
        node("n2"),
        pod("guarded", "4", 1, "n1", labels={"app": "db"}),
        pod("free", "4", 5, "n2"),  # higher priority, but evicting it violates no budget
        pdb("db", "db", allowed=0),
    ]
    a = preempt_once(objects, pod("p", "4", 10), generic=generic)
    assert a.nominated == "n2"
    assert a.victims == ["default/free"]


@pytest.mark.parametrize("generic", [False, True], ids=["fast", "generic"])
def test_pdb_violating_pods_are_reprieved_first(generic: bool) -> None:
    # Either pod alone makes room; the one whose eviction would break its budget is put back first.
    objects = [
        node("n1", cpu="4"),
        pod("guarded", "2", 1, "n1", started=9, labels={"app": "db"}),
        pod("plain", "2", 1, "n1", started=1),
        pdb("db", "db", allowed=0),
    ]
    a = preempt_once(objects, pod("p", "2", 10), generic=generic)
    assert a.victims == ["default/plain"]


@pytest.mark.parametrize("generic", [False, True], ids=["fast", "generic"])
def test_pdb_budget_computed_from_pods_when_status_is_absent(generic: bool) -> None:
    # minAvailable 1 of 2 healthy pods: one disruption allowed, so evicting both violates once.
    objects = [
        node("n1", cpu="4"),
        node("n2", cpu="4"),
        pod("db-1", "2", 1, "n1", labels={"app": "db"}),
        pod("db-2", "2", 1, "n1", labels={"app": "db"}),
        pod("web", "4", 1, "n2", labels={"app": "web"}),
        pdb("db", "db", min_available=1),
    ]
    a = preempt_once(objects, pod("p", "4", 10), generic=generic)
    assert a.nominated == "n2"


# --------------------------------------------------------------------------- eligibility and messages


def test_preemption_policy_never() -> None:
    objects = [node("n1"), pod("lo", "4", 1, "n1")]
    a = preempt_once(objects, pod("p", "4", 10, policy="Never"))
    assert a.nominated is None
    assert a.outcome.message == (
        "0/1 nodes are available: 1 Insufficient cpu. no new claims to deallocate, preemption: not eligible "
        "due to preemptionPolicy=Never."
    )


def test_no_victims_message() -> None:
    objects = [node("n1"), node("n2"), pod("a", "4", 10, "n1"), pod("b", "4", 10, "n2")]
    a = preempt_once(objects, pod("p", "4", 10))
    assert a.outcome.message == (
        "0/2 nodes are available: 2 Insufficient cpu. "
        "no new claims to deallocate,"
        " preemption: 0/2 nodes are available: 2 No preemption victims found for incoming pod."
    )


def test_unresolvable_nodes_are_not_helpful() -> None:
    objects = [
        node("small", cpu="1"),
        node("busy", cpu="4"),
        pod("hi", "4", 20, "busy"),
        pod("lo", "1", 1, "small"),
    ]
    a = preempt_once(objects, pod("p", "2", 10))
    # "small" can never hold 2 CPUs; "busy" only has a pod of higher priority.
    assert a.outcome.message == (
        "0/2 nodes are available: 2 Insufficient cpu. "
        "no new claims to deallocate,"
        " preemption: 0/2 nodes are available: 1 No preemption victims found for incoming pod, "
        "1 Preemption is not helpful for scheduling."
    )


@pytest.mark.parametrize(
    ("nodes", "pct", "absolute", "expected"),
    [
        (0, 10, 100, 0),
        (50, 10, 100, 50),  # fewer nodes than the absolute minimum: all of them
        (1000, 10, 100, 100),
        (1000, 50, 100, 500),
        (1000, 0, 20, 20),
        (1000, 100, 0, 1000),
    ],
)
def test_num_candidates(nodes: int, pct: int, absolute: int, expected: int) -> None:
    args = DefaultPreemptionArgs(min_candidate_nodes_percentage=pct, min_candidate_nodes_absolute=absolute)
    assert num_candidates(args, nodes) == expected


# --------------------------------------------------------------------------- fast path == generic path

_pods = st.lists(
    st.tuples(st.integers(0, 3), st.sampled_from(["200m", "500m", "1", "1500m", "2"]), st.booleans()),
    max_size=4,
)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    layout=st.lists(_pods, min_size=1, max_size=5),
    preemptor_cpu=st.sampled_from(["1", "2", "3", "4"]),
    preemptor_priority=st.integers(1, 4),
    budget=st.integers(0, 2),
    seed=st.integers(0, 3),
    with_volume=st.booleans(),
)
def test_fast_and_generic_dry_runs_agree(
    layout: list[list[tuple[int, str, bool]]],
    preemptor_cpu: str,
    preemptor_priority: int,
    budget: int,
    seed: int,
    with_volume: bool,
) -> None:
    objects: list[dict[str, Any]] = [pdb("guard", "guarded", allowed=budget)]
    for i, pods in enumerate(layout):
        objects.append(node(f"n{i}", cpu="3"))
        for j, (prio, cpu, guarded) in enumerate(pods):
            labels = {"app": "guarded"} if guarded else {"app": "plain"}
            objects.append(pod(f"p{i}-{j}", cpu, prio, f"n{i}", started=(i * 7 + j * 3) % 11, labels=labels))
    preemptor = pod("incoming", preemptor_cpu, preemptor_priority)
    if with_volume:
        # A claim pre-bound to a volume no CSINode limits: VolumeBinding, VolumeZone and
        # NodeVolumeLimits run for the preemptor and judge by the node alone.
        objects += [
            {
                "apiVersion": "v1",
                "kind": "PersistentVolume",
                "metadata": {"name": "pv", "labels": {"topology.kubernetes.io/zone": "z"}},
                "spec": {
                    "capacity": {"storage": "1Gi"},
                    "accessModes": ["ReadWriteOnce"],
                    "csi": {"driver": "ebs.csi.aws.com", "volumeHandle": "vol"},
                    "claimRef": {"namespace": "default", "name": "data"},
                },
            },
            {
                "apiVersion": "v1",
                "kind": "PersistentVolumeClaim",
                "metadata": {"name": "data", "namespace": "default"},
                "spec": {
                    "accessModes": ["ReadWriteOnce"],
                    "resources": {"requests": {"storage": "1Gi"}},
                    "volumeName": "pv",
                },
            },
        ]
        preemptor["spec"]["volumes"] = [{"name": "d", "persistentVolumeClaim": {"claimName": "data"}}]
    fast = preempt_once(objects, preemptor, seed=seed)
    generic = preempt_once(objects, preemptor, generic=True, seed=seed)
    assert (fast.nominated, fast.victims, fast.outcome.message) == (
        generic.nominated,
        generic.victims,
        generic.outcome.message,
    )
    if fast.nominated is not None:
        assert plugin_of(fast.sim).last_dry_run == "fast"  # the comparison did exercise the fast path


# --------------------------------------------------------------------------- nominations and eviction


def _nominated_on_store(sim: Simulation, name: str) -> str | None:
    obj = sim.store.get("Pod", "default", name) or {}
    value: str | None = (obj.get("status") or {}).get("nominatedNodeName")
    return value


def _one_cycle_nominated(
    objects: Sequence[dict[str, Any]], preemptor: dict[str, Any], sim: Simulation | None = None
) -> tuple[Simulation, str]:
    """One scheduling cycle for ``preemptor``, which arrives nominated to n1 by an earlier cycle."""
    sim = sim or Simulation(seed=0)
    for obj in sorted(objects, key=lambda o: o["kind"] != "Node"):
        sim.store.create(obj)
    sim.informers.pump()
    created = sim.store.create({**preemptor, "status": {"nominatedNodeName": "n1"}})
    sim.informers.pump()
    uid: str = created["metadata"]["uid"]
    assert sim.scheduler.queue.nominator.node_of(uid) == "n1"
    assert sim.scheduler.schedule_one()
    return sim, uid


def test_no_candidate_clears_an_earlier_nomination() -> None:
    # Upstream Preempt returns NominatedNode("") with Unschedulable when no node can be made to fit,
    # and RunPostFilterPlugins passes that result on: the pod's nomination is cleared.
    sim, uid = _one_cycle_nominated([node("n1"), pod("hi", "4", 20, "n1")], pod("p", "4", 10))
    assert sim.scheduler.queue.nominator.node_of(uid) == ""
    assert _nominated_on_store(sim, "p") is None
    assert sim.scheduler.outcomes[uid].message.endswith(
        "no new claims to deallocate,"
        " preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod."
    )


def test_not_eligible_keeps_the_nomination() -> None:
    # Not eligible (preemptionPolicy: Never): no nominating info, the nomination stays.
    sim, uid = _one_cycle_nominated([node("n1"), pod("lo", "4", 1, "n1")], pod("p", "4", 10, policy="Never"))
    assert sim.scheduler.queue.nominator.node_of(uid) == "n1"
    assert _nominated_on_store(sim, "p") == "n1"


def test_victim_already_terminating_gets_no_second_deletion_or_event() -> None:
    # Upstream prepareCandidate skips victims whose graceful deletion has started.
    victim = pod("lo", "4", 1, "n1", started=1)
    victim["metadata"]["deletionTimestamp"] = START.format(30)
    a = preempt_once([node("n1"), victim], pod("p", "4", 10))
    assert a.nominated == "n1"
    assert a.victims == ["default/lo"]
    left = a.sim.store.get("Pod", "default", "lo")
    assert left is not None  # not deleted a second time
    conditions = (left.get("status") or {}).get("conditions") or []
    assert not any(c.get("type") == "DisruptionTarget" for c in conditions)
    events = [e for e in a.sim.store.list("Event") if e.get("reason") == "Preempted"]
    assert events == []


def test_preempted_event_and_condition_wording() -> None:
    a = preempt_once([node("n1"), pod("lo", "4", 1, "n1", started=1)], pod("p", "4", 10))
    events = [e for e in a.sim.store.list("Event") if e.get("reason") == "Preempted"]
    assert [(e["type"], e["action"], e["note"]) for e in events] == [
        ("Normal", "Preempting", f"Preempted by pod {a.outcome.uid} on node n1")
    ]
    # After a successful preemption the preemptor's message carries no preemption part.
    assert a.outcome.message == "0/1 nodes are available: 1 Insufficient cpu."


def test_no_post_filter_plugins_keep_the_nomination() -> None:
    registry = default_registry()
    config = config_from_dict(
        {
            "apiVersion": "kubescheduler.config.k8s.io/v1",
            "kind": "KubeSchedulerConfiguration",
            "profiles": [{"plugins": {"postFilter": {"disabled": [{"name": "*"}]}}}],
        },
        registry,
    )
    sim, uid = _one_cycle_nominated(
        [node("n1"), pod("hi", "4", 20, "n1")], pod("p", "4", 10), Simulation(config, registry, seed=0)
    )
    assert sim.scheduler.queue.nominator.node_of(uid) == "n1"
    assert _nominated_on_store(sim, "p") == "n1"
