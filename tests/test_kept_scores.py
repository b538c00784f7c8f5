"""Raw scores kept between cycles (NodeResourcesFit, NodeResourcesBalancedAllocation) must equal
the scores computed afresh in every cycle, whatever happened to the rows in between: pods bound,
deleted, nodes resized, relabelled, deleted and added again; and a run with kept scores must place
every pod where a run that scores every row afresh places it."""

from __future__ import annotations

from typing import Any
from unittest import mock

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kubesched.api.objects import Node, Pod
from kubesched.cache import node_table as node_table_module
from kubesched.cache.cache import SchedulerCache, Snapshot
from kubesched.framework import kept_scores as kept_scores_module
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.runtime import Framework
from kubesched.plugins.noderesources.balanced_allocation import NodeResourcesBalancedAllocation
from kubesched.plugins.noderesources.fit import FEW_ROWS, NodeResourcesFit
from kubesched.sim.simulation import Simulation

GPU = "example.com/gpu"
#: cpu, memory, gpus: from best-effort (BalancedAllocation skips it) to a request only some fit.
SHAPES = [("", "", 0), ("100m", "", 0), ("1500m", "1Gi", 0), ("500m", "3Gi", 1), ("3", "6Gi", 0)]


def node(name: str, cpu: int, memory_gi: int, gpus: int, zone: int) -> dict[str, Any]:
    allocatable = {"cpu": str(cpu), "memory": f"{memory_gi}Gi", "pods": "110"}
    if gpus:
        allocatable[GPU] = str(gpus)
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, "zone": f"z{zone}"}},
        "status": {"allocatable": allocatable, "capacity": allocatable},
    }


def pod(name: str, shape: int) -> dict[str, Any]:
    cpu, memory, gpus = SHAPES[shape]
    requests: dict[str, str] = {}
    if cpu:
        requests["cpu"] = cpu
    if memory:
        requests["memory"] = memory
    if gpus:
        requests[GPU] = str(gpus)
    container: dict[str, Any] = {"name": "c", "image": "busybox"}
    if requests:
        container["resources"] = {"requests": requests, "limits": {GPU: str(gpus)} if gpus else {}}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"containers": [container]},
    }


nodes_st = st.tuples(st.sampled_from([1, 2, 4, 8]), st.sampled_from([2, 8, 16]), st.sampled_from([0, 0, 2]))
ops_st = st.lists(
    st.one_of(
        st.tuples(st.just("pods"), st.integers(0, len(SHAPES) - 1), st.integers(1, 12)),
        st.tuples(st.just("delete-pod"), st.integers(0, 10_000)),
        st.tuples(st.just("resize"), st.integers(0, 10_000), nodes_st),
        st.tuples(st.just("relabel"), st.integers(0, 10_000)),
        st.tuples(st.just("delete-node"), st.integers(0, 10_000)),
        st.tuples(st.just("add-node"), nodes_st),
    ),
    min_size=1,
    max_size=14,
)


def apply(sim: Simulation, op: tuple[Any, ...], step: int) -> None:
    store = sim.store
    nodes = sorted(o["metadata"]["name"] for o in store.list("Node"))
    bound = sorted(o["metadata"]["name"] for o in store.list("Pod") if o["spec"].get("nodeName"))
    kind = op[0]
    if kind == "pods":
        for k in range(op[2]):
            store.create(pod(f"p{step}-{k}", op[1]))
    elif kind == "delete-pod" and bound:
        store.delete("Pod", "default", bound[op[1] % len(bound)])
    elif kind in ("resize", "relabel") and nodes:
        name = nodes[op[1] % len(nodes)]
        obj = dict(store.get("Node", None, name) or {})
        if kind == "resize":
            fresh = node(name, *op[2], zone=0)
            obj["status"] = fresh["status"]
        else:
            obj["metadata"] = {**obj["metadata"], "labels": {"kubernetes.io/hostname": name, "zone": "zx"}}
        store.update(obj)
    elif kind == "delete-node" and len(nodes) > 1:
        store.delete("Node", None, nodes[op[1] % len(nodes)])
    elif kind == "add-node":
        store.create(node(f"added-{step}", *op[1], zone=step % 3))
    sim.run()


def scores(fwk: Framework, sim: Simulation, shape: int, slots: np.ndarray, keep: bool) -> list[int]:
    sched = sim.scheduler
    obj = pod("probe", shape)
    obj["metadata"]["uid"] = "uid-probe"
    the_pod = Pod.from_dict(obj)
    table = sched.snapshot.table
    state = CycleState()
    fwk.keep_scores = keep
    try:
        fwk.run_pre_score(state, the_pod, table, slots)
        return fwk.run_score(state, the_pod, table, slots, None).tolist()
    finally:
        fwk.keep_scores = True


def cluster(spec: list[tuple[int, int, int]], keep: bool) -> Simulation:
    sim = Simulation(seed=0)
    for i, (cpu, memory, gpus) in enumerate(spec):
        sim.store.create(node(f"n{i}", cpu, memory, gpus, zone=i % 3))
    sim.scheduler.profiles["default-scheduler"].keep_scores = keep
    sim.run()
    return sim


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(nodes_st, min_size=3, max_size=40),
    ops_st,
    st.lists(st.integers(0, 2**31), min_size=1, max_size=4),
)
def test_kept_scores_equal_fresh_scores_every_cycle(
    spec: list[tuple[int, int, int]], ops: list[tuple[Any, ...]], seeds: list[int]
) -> None:
    check_kept_against_fresh(spec, ops, seeds)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(nodes_st, min_size=3, max_size=40),
    ops_st,
    st.lists(st.integers(0, 2**31), min_size=1, max_size=4),
)
def test_kept_scores_equal_fresh_scores_when_changed_rows_are_rescored_at_once(
    spec: list[tuple[int, int, int]], ops: list[tuple[Any, ...]], seeds: list[int]
) -> None:
    # Changed rows scored again at the next lookup of a key, whatever the cycle's rows, rows of
    # deleted and added nodes included.
    with mock.patch.object(kept_scores_module, "_RESCORE_AFTER", 1):
        check_kept_against_fresh(spec, ops, seeds)


def check_kept_against_fresh(
    spec: list[tuple[int, int, int]], ops: list[tuple[Any, ...]], seeds: list[int]
) -> None:
    kept = cluster(spec, keep=True)
    fresh = cluster(spec, keep=False)
    fwk = kept.scheduler.profiles["default-scheduler"]
    for step, op in enumerate(ops):
        apply(kept, op, step)
        apply(fresh, op, step)
        sched = kept.scheduler
        sched.informers.pump()
        sched.cache.update_snapshot(sched.snapshot)
        valid = np.flatnonzero(sched.snapshot.table.valid)
        for seed in seeds:
            # A random part of the rows, as a rotating window scores, so some kept rows are old.
            rng = np.random.default_rng(seed + step)
            slots = valid[rng.random(len(valid)) < 0.6]
            for shape in range(len(SHAPES)):
                assert scores(fwk, kept, shape, slots, True) == scores(fwk, kept, shape, slots, False)

    def placements(sim: Simulation) -> dict[str, str | None]:
        return {o["metadata"]["name"]: o["spec"].get("nodeName") for o in sim.store.list("Pod")}

    assert placements(kept) == placements(fresh)


def test_kept_scores_follow_a_node_that_fills_up() -> None:
    # Two nodes; the emptier scores higher under LeastAllocated. Each bound pod changes only its
    # node's row, and the next pod must see that row's new score, not the one kept from before.
    sim = cluster([(4, 8, 0), (4, 8, 0)], keep=True)
    sim.scheduler.tie_break_by_name = True  # equal scores: always n0
    for k in range(6):
        sim.store.create(pod(f"p{k}", 1))
        sim.run()
    on = [o["spec"]["nodeName"] for o in sim.store.list("Pod")]
    assert sorted(on.count(n) for n in ("n0", "n1")) == [3, 3]


def test_kept_scores_start_over_when_the_change_log_does(monkeypatch: pytest.MonkeyPatch) -> None:
    # A log of changed rows that starts over past a few rows: a reader behind it cannot know which
    # rows changed, and must score them all afresh, not keep what it had.
    monkeypatch.setattr(node_table_module, "_CHANGE_LOG_LIMIT", 3)
    spec = [(8, 16, 0), (16, 32, 0), (4, 8, 0), (32, 64, 0)]
    kept = cluster(spec, keep=True)
    fwk = kept.scheduler.profiles["default-scheduler"]
    for step in range(6):
        for k in range(step + 1):
            kept.store.create(pod(f"p{step}-{k}", step % len(SHAPES)))
        kept.run()
        sched = kept.scheduler
        sched.cache.update_snapshot(sched.snapshot)
        table = sched.snapshot.table
        assert len(table.change_log) <= 3
        slots = np.flatnonzero(table.valid)
        for shape in range(len(SHAPES)):
            assert scores(fwk, kept, shape, slots, True) == scores(fwk, kept, shape, slots, False)
    assert kept.scheduler.snapshot.table.change_log_start > 0


def table_of(nodes: list[tuple[int, int]], used: list[tuple[int, int, int]]) -> Any:
    """A snapshot table of nodes (milli-CPU, memory bytes) and bound pods (node, milli-CPU, bytes)."""
    cache = SchedulerCache()
    for i, (cpu, memory) in enumerate(nodes):
        alloc = {"cpu": f"{cpu}m", "memory": str(memory), "pods": "110"}
        cache.add_node(
            Node.from_dict({"kind": "Node", "metadata": {"name": f"n{i}"}, "status": {"allocatable": alloc}})
        )
    for k, (i, cpu, memory) in enumerate(used):
        requests = {"cpu": f"{cpu}m", "memory": str(memory)}
        spec = {
            "nodeName": f"n{i % len(nodes)}",
            "containers": [{"name": "c", "resources": {"requests": requests}}],
        }
        cache.add_pod(
            Pod.from_dict({"kind": "Pod", "metadata": {"name": f"u{k}", "uid": f"u{k}"}, "spec": spec})
        )
    snap = Snapshot()
    cache.update_snapshot(snap)
    return snap.table


amounts = st.one_of(st.integers(0, 64_000), st.integers(0, 2**62))


@settings(max_examples=150, deadline=None)
@given(
    st.lists(st.tuples(amounts, amounts), min_size=1, max_size=12),
    st.lists(st.tuples(st.integers(0, 100), st.integers(0, 8000), st.integers(0, 2**34)), max_size=12),
    st.tuples(st.integers(0, 8000), st.integers(0, 2**34)),
)
def test_a_few_rows_score_as_many_rows_do(
    nodes: list[tuple[int, int]], used: list[tuple[int, int, int]], request: tuple[int, int]
) -> None:
    # Kept scores rescore a few rows at a time, row by row; a full cycle scores thousands with
    # array operations: every row must get the same number both ways.
    table = table_of(nodes, used)
    requests = {"cpu": f"{request[0]}m", "memory": str(request[1])}
    spec = {"containers": [{"name": "c", "resources": {"requests": requests}}]}
    the_pod = Pod.from_dict({"kind": "Pod", "metadata": {"name": "p", "uid": "p"}, "spec": spec})
    rows = np.flatnonzero(table.valid)
    many = np.resize(rows, max(len(rows), 3 * FEW_ROWS))  # repeated rows: the array path
    for plugin in (NodeResourcesFit(None), NodeResourcesBalancedAllocation()):
        state = CycleState()
        plugin.pre_score(state, the_pod, table, many)
        together = plugin.score_nodes(state, the_pod, table, many).tolist()
        alone = [int(plugin.score_nodes(state, the_pod, table, many[i : i + 1])[0]) for i in range(len(many))]
        assert alone == together, plugin.name
