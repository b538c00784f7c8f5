"""NodeResourcesFit with ``RequestedToCapacityRatio``, after upstream ``requested_to_capacity_ratio_test.go``.

Upstream builds pods without containers, whose (non-zero) requests are 0; here such pods ask
explicitly for ``cpu: 0`` / ``memory: 0``, which the non-zero rule keeps at 0 as upstream does.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest

from kubesched.api.objects import Node, Pod
from kubesched.cache.cache import SchedulerCache, Snapshot
from kubesched.framework.config import config_from_dict
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.plugin_args import (
    NodeResourcesFitArgs,
    RequestedToCapacityRatioParam,
    ResourceSpec,
    ScoringStrategy,
    UtilizationShapePoint,
)
from kubesched.framework.types import MAX_NODE_SCORE
from kubesched.plugins import default_registry
from kubesched.plugins.noderesources.fit import NodeResourcesFit
from kubesched.plugins.noderesources.requested_to_capacity_ratio import (
    RequestedToCapacityRatio,
    broken_linear_function,
    go_div,
)
from kubesched.sim.simulation import Simulation

_uids = itertools.count()
ZERO = {"cpu": "0", "memory": "0"}
FOO = "intel.com/foo"
BAR = "intel.com/bar"


def make_node(name: str, allocatable: dict[str, str]) -> Node:
    alloc = {"pods": "110", **allocatable}
    return Node.from_dict({"kind": "Node", "metadata": {"name": name}, "status": {"allocatable": alloc}})


def ext_node(name: str, scalars: dict[str, int]) -> Node:
    """Upstream ``makeNode(name, 4000, 10000*1024*1024, scalars)``."""
    return make_node(name, {"cpu": "4000m", "memory": "10000Mi", **{k: str(v) for k, v in scalars.items()}})


def make_pod(*requests: dict[str, str], node_name: str = "") -> Pod:
    uid = f"uid-{next(_uids)}"
    containers = [{"name": f"c{i}", "resources": {"requests": r}} for i, r in enumerate(requests or (ZERO,))]
    spec: dict[str, Any] = {"containers": containers}
    if node_name:
        spec["nodeName"] = node_name
    return Pod.from_dict({"kind": "Pod", "metadata": {"name": uid, "uid": uid}, "spec": spec})


def make_snapshot(nodes: list[Node], pods: list[Pod]) -> Snapshot:
    cache = SchedulerCache()
    for n in nodes:
        cache.add_node(n)
    for p in pods:
        cache.add_pod(p)
    snap = Snapshot()
    cache.update_snapshot(snap)
    return snap


def fit_args(resources: list[tuple[str, int]], shape: list[tuple[int, int]]) -> NodeResourcesFitArgs:
    return NodeResourcesFitArgs(
        scoring_strategy=ScoringStrategy(
            type="RequestedToCapacityRatio",
            resources=[ResourceSpec(name=n, weight=w) for n, w in resources],
            requested_to_capacity_ratio=RequestedToCapacityRatioParam(
                shape=[UtilizationShapePoint(utilization=u, score=s) for u, s in shape]
            ),
        )
    )


@dataclass
class Case:
    name: str
    pod: Pod
    nodes: list[Node]
    expected: list[int]
    pods: list[Pod] = field(default_factory=list)


def run(case: Case, args: NodeResourcesFitArgs) -> list[int]:
    plugin = NodeResourcesFit(args)
    snap = make_snapshot(case.nodes, case.pods)
    slots = np.array([snap.table.slot_of[n.name] for n in case.nodes], dtype=np.int64)
    state = CycleState()
    plugin.pre_filter(state, case.pod, snap)
    scores: list[int] = plugin.score_nodes(state, case.pod, snap.table, slots).tolist()
    return scores


DEFAULT_RESOURCES = [("cpu", 1), ("memory", 1)]
FALLING = [(0, 10), (100, 0)]  # least requested nodes have priority

STRATEGY_CASES = [
    Case(
        "nothing scheduled, nothing requested",
        make_pod(),
        [
            make_node("node1", {"cpu": "4000", "memory": "10000"}),
            make_node("node2", {"cpu": "4000", "memory": "10000"}),
        ],
        [MAX_NODE_SCORE, MAX_NODE_SCORE],
        pods=[make_pod(node_name="node1"), make_pod(node_name="node1")],
    ),
    Case(
        "nothing scheduled, resources requested, differently sized nodes",
        make_pod({"cpu": "1000", "memory": "2000"}, {"cpu": "2000", "memory": "3000"}),
        [
            make_node("node1", {"cpu": "4000", "memory": "10000"}),
            make_node("node2", {"cpu": "6000", "memory": "10000"}),
        ],
        [38, 50],
        pods=[make_pod(node_name="node1"), make_pod(node_name="node1")],
    ),
    Case(
        "no resources requested, pods scheduled with resources",
        make_pod(),
        [
            make_node("node1", {"cpu": "4000", "memory": "10000"}),
            make_node("node2", {"cpu": "6000", "memory": "10000"}),
        ],
        [38, 50],
        pods=[
            make_pod({"cpu": "3000", "memory": "5000"}, node_name="node1"),
            make_pod({"cpu": "3000", "memory": "5000"}, node_name="node2"),
        ],
    ),
]


@pytest.mark.parametrize("case", STRATEGY_CASES, ids=lambda c: c.name)
def test_requested_to_capacity_ratio_strategy(case: Case) -> None:
    assert run(case, fit_args(DEFAULT_RESOURCES, FALLING)) == case.expected


SINGLE_EXTENDED_CASES = [
    Case(
        "nothing scheduled, nothing requested",
        make_pod(),
        [ext_node("node1", {FOO: 8}), ext_node("node2", {FOO: 4})],
        [0, 0],
    ),
    Case(
        "resources requested, pods scheduled with less resources",
        make_pod({FOO: "2"}),
        [ext_node("node1", {FOO: 8}), ext_node("node2", {FOO: 4})],
        [2, 5],
        pods=[make_pod()],
    ),
    Case(
        "resources requested, pods scheduled with resources, on node with existing pod running",
        make_pod({FOO: "2"}),
        [ext_node("node1", {FOO: 8}), ext_node("node2", {FOO: 4})],
        [2, 10],
        pods=[make_pod({FOO: "2"}, node_name="node2")],
    ),
    Case(
        "resources requested, pods scheduled with more resources",
        make_pod({FOO: "4"}),
        [ext_node("node1", {FOO: 8}), ext_node("node2", {FOO: 4})],
        [5, 10],
        pods=[make_pod()],
    ),
]


@pytest.mark.parametrize("case", SINGLE_EXTENDED_CASES, ids=lambda c: c.name)
def test_bin_packing_single_extended(case: Case) -> None:
    assert run(case, fit_args([(FOO, 1)], [(0, 0), (100, 1)])) == case.expected


MULTIPLE_EXTENDED_CASES = [
    Case(
        "nothing scheduled, nothing requested",
        make_pod(),
        [ext_node("node1", {FOO: 8, BAR: 4}), ext_node("node2", {FOO: 4, BAR: 8})],
        [0, 0],
    ),
    Case(
        "resources requested, pods scheduled with less resources",
        make_pod({FOO: "2", BAR: "2"}),
        [ext_node("node1", {FOO: 8, BAR: 4}), ext_node("node2", {FOO: 4, BAR: 8})],
        [4, 3],
        pods=[make_pod()],
    ),
    Case(
        "resources requested, pods scheduled with resources, on node with existing pod running",
        make_pod({FOO: "2", BAR: "2"}),
        [ext_node("node1", {FOO: 8, BAR: 4}), ext_node("node2", {FOO: 4, BAR: 8})],
        [4, 7],
        pods=[make_pod({FOO: "4", BAR: "2"}, node_name="node2")],
    ),
    Case(
        "resources requested, pods scheduled with more resources",
        make_pod({FOO: "4", BAR: "2"}),
        [ext_node("node1", {FOO: 8, BAR: 4}), ext_node("node2", {FOO: 4, BAR: 8})],
        [5, 5],
        pods=[make_pod()],
    ),
]


@pytest.mark.parametrize("case", MULTIPLE_EXTENDED_CASES, ids=lambda c: c.name)
def test_bin_packing_multiple_extended(case: Case) -> None:
    assert run(case, fit_args([(FOO, 3), (BAR, 5)], [(0, 0), (100, 1)])) == case.expected


@pytest.mark.parametrize(
    ("points", "assertions"),
    [
        (
            [(10, 1), (90, 9)],
            [
                (-10, 1),
                (0, 1),
                (9, 1),
                (10, 1),
                (15, 1),
                (19, 1),
                (20, 2),
                (89, 8),
                (90, 9),
                (99, 9),
                (100, 9),
                (110, 9),
            ],
        ),
        (
            [(0, 2), (40, 10), (100, 0)],
            [(-10, 2), (0, 2), (20, 6), (30, 8), (40, 10), (70, 5), (100, 0), (110, 0)],
        ),
        (
            [(0, 2), (40, 2), (100, 2)],
            [(-10, 2), (0, 2), (20, 2), (30, 2), (40, 2), (70, 2), (100, 2), (110, 2)],
        ),
    ],
)
def test_broken_linear_function(points: list[tuple[int, int]], assertions: list[tuple[int, int]]) -> None:
    f = broken_linear_function(points)
    for p, expected in assertions:
        assert f(p) == expected, p


def test_go_division_truncates_toward_zero() -> None:
    assert go_div(-100, 3) == -33
    assert go_div(100, 3) == 33
    assert go_div(-1, 2) == 0
    # A falling segment: 100 + (-100 * 1) / 3 = 100 - 33 in Go (floor division would give 66).
    assert broken_linear_function([(0, 100), (3, 0)])(1) == 67
    ratio = RequestedToCapacityRatio(
        [UtilizationShapePoint(utilization=0, score=10), UtilizationShapePoint(utilization=3, score=0)]
    )
    assert ratio.resource_score(np.array([1], dtype=np.int64), np.array([100], dtype=np.int64)).tolist() == [
        67
    ]


def test_vectorized_shape_matches_scalar_function() -> None:
    shape = [(0, 3), (25, 10), (60, 1), (80, 7), (95, 0)]
    ratio = RequestedToCapacityRatio([UtilizationShapePoint(utilization=u, score=s) for u, s in shape])
    f = broken_linear_function([(u, s * 10) for u, s in shape])
    capacity = np.full(101, 100, dtype=np.int64)
    got = ratio.resource_score(np.arange(101, dtype=np.int64), capacity).tolist()
    assert got == [f(p) for p in range(101)]
    # Over-committed or absent capacity reads as 100% utilization.
    assert (
        ratio.resource_score(np.array([5, 1], dtype=np.int64), np.array([4, 0], dtype=np.int64)).tolist()
        == [f(100)] * 2
    )


def test_zero_resource_scores_do_not_count_towards_weights() -> None:
    # cpu at 50% scores 50; memory over-committed scores 0 and is left out: 50, not 25.
    case = Case(
        "memory over capacity",
        make_pod({"cpu": "2", "memory": "20"}),
        [make_node("node1", {"cpu": "4", "memory": "10"})],
        [50],
    )
    assert run(case, fit_args(DEFAULT_RESOURCES, FALLING)) == [50]


def test_rounding_is_half_away_from_zero() -> None:
    total = np.array([31, 25, 5, 0], dtype=np.int64)
    weights = np.array([8, 8, 2, 0], dtype=np.int64)
    assert RequestedToCapacityRatio.combine(total, weights).tolist() == [4, 3, 3, 0]


CONFIG: dict[str, Any] = {
    "apiVersion": "kubescheduler.config.k8s.io/v1",
    "kind": "KubeSchedulerConfiguration",
    "profiles": [
        {
            "schedulerName": "default-scheduler",
            "pluginConfig": [
                {
                    "name": "NodeResourcesFit",
                    "args": {
                        "scoringStrategy": {
                            "type": "RequestedToCapacityRatio",
                            "resources": [{"name": "cpu", "weight": 1}],
                            "requestedToCapacityRatio": {
                                "shape": [{"utilization": 0, "score": 0}, {"utilization": 100, "score": 10}]
                            },
                        }
                    },
                }
            ],
        }
    ],
}


def test_bin_packing_through_the_scheduler() -> None:
    # A most-requested shape packs: every pod goes to the node that is already the fullest.
    registry = default_registry()
    sim = Simulation(config_from_dict(CONFIG, registry), registry)
    for name in ("a", "b", "c"):
        sim.store.create(
            {
                "kind": "Node",
                "metadata": {"name": name},
                "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}},
            }
        )
    sim.store.create(
        {
            "kind": "Pod",
            "metadata": {"name": "seed", "namespace": "default"},
            "spec": {"nodeName": "b", "containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]},
        }
    )
    for i in range(3):
        sim.store.create(
            {
                "kind": "Pod",
                "metadata": {"name": f"p{i}", "namespace": "default"},
                "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "500m"}}}]},
            }
        )
    result = sim.run()
    assert {o.name: o.node for o in result.outcomes if o.name.startswith("p")} == {
        "p0": "b",
        "p1": "b",
        "p2": "b",
    }
