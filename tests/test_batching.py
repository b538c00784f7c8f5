"""Opportunistic batching: upstream's batch state table, signatures, and both paths end to end."""

from __future__ import annotations

from collections import Counter
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kubesched.bench.base import node_default, pod_default
from kubesched.errors import InputError
from kubesched.framework.config import config_from_dict, parse_feature_gates
from kubesched.plugins import default_registry
from kubesched.scheduler.batching import OpportunisticBatch, Signature
from kubesched.sim.simulation import Simulation

API = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration"}
NODES = ("n1", "n2", "n3", "n4")
LIST_DEFAULTING = {"defaultingType": "List", "defaultConstraints": []}


def _sig(text: str) -> Signature:
    return (("test", text),)


def _list(names: list[str] | None) -> tuple[Any, Any] | None:
    """Upstream's sorted node list as slots with descending scores."""
    if names is None:
        return None
    slots = np.array([NODES.index(n) for n in names], dtype=np.int64)
    return slots, np.arange(len(names), 0, -1, dtype=np.int64)


# Upstream TestBatchBasic (pkg/scheduler/framework/runtime/batch_test.go): pod ids starting with
# "b" block each other (at most one per node), "a" ones do not.
BATCH_BASIC = [
    # name, first id, first sig, first ok, first chosen, first others, skip, second id, second sig,
    # second chosen, expected hint, expected remaining state
    ("a second pod with the same signature gets a hint", "b-1", "sig", True, "n3", ["n1"], False,
     "b-2", "sig", "n1", "n1", None),
    ("a second pod with a different signature doesn't get a hint", "a-1", "sig", True, "n3", ["n1"],
     False, "a-2", "sig2", "n1", "", None),
    ("a second pod doesn't get a hint if it's not 1-pod-per-node", "a-1", "sig", True, "n3", ["n1"],
     False, "a-2", "sig", "n1", "", None),
    ("pod doesn't get hint if previous pod didn't scheduled", "b-1", "sig", False, "n3", ["n1"], False,
     "b-2", "sig", "n1", "", None),
    ("empty list", "b-1", "sig", True, "n3", [], False, "b-2", "sig", "n4", "", None),
    ("nil list", "b-1", "sig", True, "n3", None, False, "b-2", "sig", "n4", "", None),
    ("pod doesn't get hint because the previous pod is to a different profile", "b-1", "sig", True,
     "n3", ["n1"], True, "b-2", "sig", "n1", "", None),
    ("pod uses batch from preceding pod and leaves remaining batch to next pod", "b-1", "sig", True,
     "n3", ["n1", "n2"], False, "b-2", "sig", "n1", "n1", ["n2"]),
]  # fmt: skip


@pytest.mark.parametrize(
    "first_id,first_sig,first_ok,first_chosen,first_others,skip,second_id,second_sig,"
    "second_chosen,expected_hint,expected_state",
    [pytest.param(*case[1:], id=case[0]) for case in BATCH_BASIC],
)
def test_batch_basic(
    first_id: str,
    first_sig: str,
    first_ok: bool,
    first_chosen: str,
    first_others: list[str] | None,
    skip: bool,
    second_id: str,
    second_sig: str,
    second_chosen: str,
    expected_hint: str,
    expected_state: list[str] | None,
) -> None:
    batch = OpportunisticBatch([], seed=0)
    on_node: dict[str, str] = {}

    def rejects(pod_id: str) -> Any:
        def check(node: str) -> bool | None:
            other = on_node.get(node)
            return other is not None and other[0] == "b" and pod_id[0] == "b"

        return check

    assert batch.node_hint(_sig(first_sig), 1, 0.0, rejects(first_id)) is None
    if first_ok:
        batch.store(_sig(first_sig), None, first_chosen, 1, 0.0, _list(first_others))
        on_node[first_chosen] = first_id
    cycle = 3 if skip else 2
    hint = batch.node_hint(_sig(second_sig), cycle, 0.0, rejects(second_id))
    assert (NODES[hint] if hint is not None else "") == expected_hint
    batch.store(_sig(second_sig), NODES[hint] if hint is not None else None, second_chosen, cycle, 0.0, None)
    state = batch.state
    if expected_state is None:
        assert state is None or state.remaining() == 0
    else:
        assert state is not None and state.signature == _sig(second_sig)
        rest = [NODES[state.pop(batch.rng)] for _ in range(state.remaining())]
        assert rest == expected_state


def test_batch_expires_after_max_age() -> None:
    batch = OpportunisticBatch([], seed=0)
    batch.store(_sig("s"), None, "n3", 1, 10.0, _list(["n1", "n2"]))
    assert batch.node_hint(_sig("s"), 2, 10.6, lambda node: True) is None
    assert batch.flushes["expired"] == 1


def test_batch_dropped_by_cluster_event() -> None:
    batch = OpportunisticBatch([], seed=0)
    batch.store(_sig("s"), None, "n3", 1, 0.0, _list(["n1", "n2"]))
    batch.invalidate()
    assert batch.node_hint(_sig("s"), 2, 0.0, lambda node: True) is None


def test_equal_scores_are_offered_in_random_order_best_first() -> None:
    batch = OpportunisticBatch([], seed=0)
    slots = np.array([0, 1, 2, 3], dtype=np.int64)
    batch.store(_sig("s"), None, "n0", 1, 0.0, (slots, np.array([5, 9, 5, 9], dtype=np.int64)))
    state = batch.state
    assert state is not None
    order = [state.pop(batch.rng) for _ in range(4)]
    assert set(order[:2]) == {1, 3} and set(order[2:]) == {0, 2}


# -- end to end ---------------------------------------------------------------------------------


def _config(gates: dict[str, bool] | None = None, *, default_spread: bool = False) -> Any:
    doc: dict[str, Any] = dict(API)
    if gates is not None:
        doc["featureGates"] = gates
    if not default_spread:
        # Without default spreading constraints, plain pods can be signed (upstream refuses to sign
        # any pod while the profile has default constraints).
        doc["profiles"] = [
            {
                "schedulerName": "default-scheduler",
                "pluginConfig": [
                    {
                        "name": "PodTopologySpread",
                        "args": {"defaultingType": "List", "defaultConstraints": []},
                    }
                ],
            }
        ]
    return config_from_dict(doc, default_registry(), source="<test>")


def _big_pod(i: int, cpu: str = "3") -> dict[str, Any]:
    pod = pod_default(f"p-{i}")
    pod["spec"]["containers"][0]["resources"]["requests"]["cpu"] = cpu
    return pod


def _run(config: Any, nodes: int, pods: list[dict[str, Any]]) -> Simulation:
    sim = Simulation(config, default_registry(), seed=1)
    for i in range(nodes):
        sim.store.create(node_default(i))
    for pod in pods:
        sim.store.create(pod)
    sim.run()
    return sim


def _placements(sim: Simulation) -> dict[str, str]:
    return {o.name: o.node for o in sim.scheduler.outcomes.values() if o.node}


def test_one_pod_per_node_pods_are_batched_and_placed_validly() -> None:
    # 3-CPU pods on 4-CPU nodes: one per node, so every pod after the first takes the next node of
    # the previous pod's list.
    on = _run(_config(), 150, [_big_pod(i) for i in range(120)])
    off = _run(_config({"OpportunisticBatching": False}), 150, [_big_pod(i) for i in range(120)])
    for sim in (on, off):
        placed = _placements(sim)
        assert len(placed) == 120
        assert max(Counter(placed.values()).values()) == 1  # never two on one 4-CPU node
    assert on.scheduler.batches["default-scheduler"].batched_pods > 100
    assert off.scheduler.batches["default-scheduler"].batched_pods == 0


def test_hinted_node_is_among_the_best_a_full_cycle_would_score() -> None:
    # Nodes of two sizes: the bigger ones score higher for LeastAllocated; a batched pod must still
    # go to a big node while one is free, as a full cycle would choose.
    sim = Simulation(_config(), default_registry(), seed=3)
    for i in range(120):
        node = node_default(i)
        if i % 2:
            node["status"]["allocatable"]["cpu"] = "5"
        sim.store.create(node)
    for i in range(40):
        sim.store.create(_big_pod(i))
    sim.run()
    placed = _placements(sim)
    assert len(placed) == 40
    assert all(int(node.split("-")[1]) % 2 == 1 for node in placed.values())
    assert sim.scheduler.batches["default-scheduler"].batched_pods > 0


def test_pods_that_share_a_node_are_not_batched() -> None:
    # Small pods still fit on the node just chosen: upstream gives no hint (node not full).
    sim = _run(_config(), 50, [_big_pod(i, cpu="100m") for i in range(30)])
    batch = sim.scheduler.batches["default-scheduler"]
    assert batch.batched_pods == 0
    assert batch.flushes["node_not_full"] > 0


def test_default_profile_signs_nothing_while_spreading_defaults_apply() -> None:
    sim = _run(_config(default_spread=True), 50, [_big_pod(i) for i in range(30)])
    assert sim.scheduler.batches["default-scheduler"].batched_pods == 0
    assert len(_placements(sim)) == 30


def test_pods_with_affinity_or_spread_constraints_get_no_signature() -> None:
    sim = Simulation(_config(), default_registry(), seed=0)
    batch = sim.scheduler.batches["default-scheduler"]
    plain = _big_pod(0)
    assert batch.sign(sim_pod(plain)) is not None
    spread = _big_pod(1)
    spread["spec"]["topologySpreadConstraints"] = [
        {
            "maxSkew": 1,
            "topologyKey": "kubernetes.io/hostname",
            "whenUnsatisfiable": "DoNotSchedule",
            "labelSelector": {"matchLabels": {"app": "bench"}},
        }
    ]
    assert batch.sign(sim_pod(spread)) is None
    anti = _big_pod(2)
    anti["spec"]["affinity"] = {
        "podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {"labelSelector": {"matchLabels": {"app": "bench"}}, "topologyKey": "kubernetes.io/hostname"}
            ]
        }
    }
    assert batch.sign(sim_pod(anti)) is None
    other = _big_pod(3, cpu="2")
    assert batch.sign(sim_pod(other)) != batch.sign(sim_pod(plain))


def sim_pod(raw: dict[str, Any]) -> Any:
    from kubesched.api.objects import Pod

    return Pod.from_dict(raw)


def test_feature_gate_in_config_and_flag() -> None:
    assert _config().gate_enabled("OpportunisticBatching")
    assert not _config({"OpportunisticBatching": False}).gate_enabled("OpportunisticBatching")
    assert parse_feature_gates("OpportunisticBatching=false") == {"OpportunisticBatching": False}
    with pytest.raises(InputError, match="unknown feature gate"):
        parse_feature_gates("NoSuchGate=true")
    with pytest.raises(InputError, match="unknown feature gate"):
        _config({"NoSuchGate": True})


@settings(max_examples=12, deadline=None)
@given(
    cpus=st.lists(st.sampled_from(["2", "3", "4", "6", "8"]), min_size=3, max_size=25),
    pod_cpu=st.sampled_from(["1500m", "2", "3"]),
    pods=st.integers(1, 30),
)
def test_batched_placements_never_overcommit_a_node(cpus: list[str], pod_cpu: str, pods: int) -> None:
    sim = Simulation(_config(), default_registry(), seed=0)
    for i, cpu in enumerate(cpus):
        node = node_default(i)
        node["status"]["allocatable"]["cpu"] = cpu
        sim.store.create(node)
    for i in range(pods):
        sim.store.create(_big_pod(i, cpu=pod_cpu))
    sim.run()
    millis = {"1500m": 1500, "2": 2000, "3": 3000}[pod_cpu]
    used = Counter(_placements(sim).values())
    for node, count in used.items():
        assert count * millis <= int(cpus[int(node.split("-")[1])]) * 1000
    # Every pod that fits somewhere was placed: batching never leaves a feasible pod pending.
    capacity = sum(int(c) * 1000 // millis for c in cpus)
    assert sum(used.values()) == min(pods, capacity)
