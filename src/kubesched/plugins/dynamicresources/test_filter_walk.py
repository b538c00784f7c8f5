"""DynamicResources' Filter stops where the cycle's walk stops: upstream evaluates nodes from its
rotating start only until ``numFeasibleNodesToFind`` of them are feasible, so the per-node
allocation runs for those nodes and no others, and the decisions are the ones a Filter judging
every node leads to."""

from __future__ import annotations

import copy
from typing import Any

import numpy as np
import pytest

from kubesched.api.objects import Pod
from kubesched.framework.types import FilterWalk
from kubesched.plugins import default_registry
from kubesched.plugins.dynamicresources.test_dynamic_resources import (
    DEVICE_CLASS,
    POD_WITH_CLAIM_NAME,
    Case,
    Run,
    claim_dict,
    node,
    resource_slice,
)
from kubesched.plugins.dynamicresources.test_dynamic_resources_simulation import (
    GPU_CLASS,
    gpu_pod,
    gpu_slice,
    simulation,
)
from kubesched.plugins.dynamicresources.test_dynamic_resources_simulation import node as node_obj

NAMES = [f"n{i}" for i in range(6)]
#: Nodes with a device; the others have none.
WITH_DEVICE = {"n0", "n2", "n3", "n5"}


def _run() -> Run:
    case = Case(
        pod=POD_WITH_CLAIM_NAME,
        claims=[claim_dict()],
        classes=[DEVICE_CLASS],
        objs=[{**resource_slice(n), "metadata": {"name": f"{n}-slice"}} for n in NAMES if n in WITH_DEVICE],
        nodes=[node(n) for n in NAMES],
    )
    return Run(case)


def _judged(run: Run, walk: FilterWalk | None) -> tuple[list[str], list[str]]:
    """The nodes the Filter allocated on, and those it rejected."""
    pod = Pod.from_dict(POD_WITH_CLAIM_NAME)
    _, status = run.plugin.pre_filter(run.state, pod, run.snapshot)
    assert status is None
    table = run.snapshot.table
    result = run.plugin.filter_candidates(run.state, pod, table, table.valid.copy(), walk)
    st = run.state.get("DynamicResources")
    rejected = [table.names[s] for s in np.flatnonzero(~result.passed & table.valid).tolist()]
    return sorted(st.node_allocations), sorted(rejected)


def _walk(table: Any, start: str, to_find: int, not_counted: tuple[str, ...] = ()) -> FilterWalk:
    order = np.array([table.slot_of[n] for n in NAMES], dtype=np.int64)
    first = NAMES.index(start)
    counts = np.ones(table.capacity, dtype=np.bool_)
    for n in not_counted:
        counts[table.slot_of[n]] = False
    return FilterWalk(order, first, to_find, counts)


def test_without_walk_every_candidate_is_judged() -> None:
    run = _run()
    assert _judged(run, None) == (["n0", "n2", "n3", "n5"], ["n1", "n4"])


@pytest.mark.parametrize(
    ("start", "to_find", "not_counted", "allocated", "rejected"),
    [
        # From n0: n0 feasible, n1 not, n2 feasible: the walk ends at n2.
        ("n0", 2, (), ["n0", "n2"], ["n1"]),
        # The rotating start: from n4 round to n0.
        ("n4", 2, (), ["n0", "n5"], ["n4"]),
        # A node whose feasibility another Filter (or a nominated pod) decides does not count.
        ("n0", 2, ("n2",), ["n0", "n2", "n3"], ["n1"]),
        # Fewer feasible nodes than wanted: every node is judged.
        ("n1", 5, (), ["n0", "n2", "n3", "n5"], ["n1", "n4"]),
    ],
)
def test_walk_ends_at_the_last_feasible_node_wanted(
    start: str, to_find: int, not_counted: tuple[str, ...], allocated: list[str], rejected: list[str]
) -> None:
    run = _run()
    walk = _walk(run.snapshot.table, start, to_find, not_counted)
    assert _judged(run, walk) == (allocated, rejected)


def test_decisions_match_a_filter_that_judges_every_node(monkeypatch: pytest.MonkeyPatch) -> None:
    """More nodes than the cycle looks at (200 → 100 feasible wanted), a third without devices:
    every pod lands where it lands when the Filter judges all nodes, with fewer allocations."""
    # The class the registry builds (pytest may import this package a second time).
    spec = default_registry().get("DynamicResources")
    assert spec is not None
    plugin_class: Any = spec.factory
    nodes = [node_obj(f"node-{i}") for i in range(200)]
    slices = [gpu_slice(f"node-{i}", "gpu-0", "gpu-1") for i in range(200) if i % 3]
    claims = [
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceClaim",
            "metadata": {"name": f"claim-{i}", "namespace": "default"},
            "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu"}}]}},
        }
        for i in range(40)
    ]
    pods = [gpu_pod(f"pod-{i}", f"claim-{i}") for i in range(40)]

    def placements() -> tuple[dict[str, str | None], int]:
        calls = 0
        original = plugin_class._filter_node

        def counting(self: Any, *args: Any) -> Any:
            nonlocal calls
            calls += 1
            return original(self, *args)

        with monkeypatch.context() as m:
            m.setattr(plugin_class, "_filter_node", counting)
            sim = simulation(GPU_CLASS, *nodes, *slices, *claims, *copy.deepcopy(pods))
            result = sim.run()
        return {o.name: o.node for o in result.outcomes}, calls

    walked, walked_calls = placements()
    original_candidates = plugin_class.filter_candidates

    def every_node(self: Any, state: Any, pod: Any, table: Any, candidates: Any, walk: Any = None) -> Any:
        return original_candidates(self, state, pod, table, candidates)

    monkeypatch.setattr(plugin_class, "filter_candidates", every_node)
    everywhere, all_calls = placements()
    assert walked == everywhere
    assert all(walked.values())
    assert walked_calls < all_calls
