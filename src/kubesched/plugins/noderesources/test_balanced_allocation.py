"""NodeResourcesBalancedAllocation, table-driven after upstream ``balanced_allocation_test.go`` (v1.34).

Nodes are upstream's ``makeNode(name, milliCPU, memoryBytes, scalars)``; expected scores are the
numbers in upstream's table (their derivations are in the comments there).
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest

from kubesched.api.objects import Node, Pod
from kubesched.cache.cache import SchedulerCache, Snapshot
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.plugin_args import NodeResourcesBalancedAllocationArgs, ResourceSpec
from kubesched.framework.status import Code, Status
from kubesched.framework.types import MAX_NODE_SCORE, IntArray
from kubesched.plugins.noderesources.balanced_allocation import (
    NodeResourcesBalancedAllocation,
    balanced_score,
    is_scalar_resource,
)

_uids = itertools.count()
GPU = "nvidia.com/gpu"


def make_node(name: str, milli_cpu: int, memory: int, scalars: dict[str, int] | None = None) -> Node:
    alloc: dict[str, Any] = {"cpu": f"{milli_cpu}m", "memory": str(memory), "pods": "110"}
    alloc.update({k: str(v) for k, v in (scalars or {}).items()})
    return Node.from_dict({"kind": "Node", "metadata": {"name": name}, "status": {"allocatable": alloc}})


def make_pod(*containers: dict[str, str], node_name: str = "") -> Pod:
    uid = f"uid-{next(_uids)}"
    spec: dict[str, Any] = {
        "containers": [{"name": f"c{i}", "resources": {"requests": req}} for i, req in enumerate(containers)]
        or [{"name": "c"}]
    }
    if node_name:
        spec["nodeName"] = node_name
    return Pod.from_dict({"kind": "Pod", "metadata": {"name": uid, "uid": uid}, "spec": spec})


# upstream's pod specs
def cpu_only(node_name: str = "") -> Pod:
    return make_pod({"cpu": "1000m", "memory": "0"}, {"cpu": "2000m", "memory": "0"}, node_name=node_name)


def cpu_and_memory(node_name: str = "") -> Pod:
    return make_pod(
        {"cpu": "1000m", "memory": "2000"}, {"cpu": "2000m", "memory": "3000"}, node_name=node_name
    )


def cpu_and_memory_and_gpu(node_name: str = "") -> Pod:
    return make_pod(
        {"cpu": "1000m", "memory": "2000"}, {"cpu": "2000m", "memory": "3000", GPU: "3"}, node_name=node_name
    )


def make_snapshot(nodes: list[Node], pods: list[Pod]) -> Snapshot:
    cache = SchedulerCache()
    for n in nodes:
        cache.add_node(n)
    for p in pods:
        cache.add_pod(p)
    snap = Snapshot()
    cache.update_snapshot(snap)
    return snap


DEFAULT = [ResourceSpec(name="cpu", weight=1), ResourceSpec(name="memory", weight=1)]
WITH_GPU = [*DEFAULT, ResourceSpec(name=GPU, weight=1)]


@dataclass
class Case:
    name: str
    pod: Pod
    nodes: list[Node]
    expected: list[int]
    pods: list[Pod] = field(default_factory=list)
    resources: list[ResourceSpec] = field(default_factory=lambda: list(DEFAULT))
    run_pre_score: bool = True
    want_skip: bool = False


CASES = [
    Case(
        "nothing scheduled, nothing requested, skip in PreScore",
        make_pod(),
        [make_node("node1", 4000, 10000), make_node("node2", 4000, 10000)],
        [],
        want_skip=True,
    ),
    Case(
        "nothing scheduled, resources requested, differently sized nodes",
        cpu_and_memory(),
        [make_node("node1", 4000, 10000), make_node("node2", 6000, 10000)],
        [87, MAX_NODE_SCORE],
    ),
    Case(
        "resources requested, pods scheduled with resources",
        cpu_and_memory(),
        [make_node("node1", 10000, 20000), make_node("node2", 10000, 20000)],
        [82, 95],
        pods=[cpu_only("node1"), cpu_and_memory("node2")],
    ),
    Case(
        "resources requested, pods scheduled with resources, differently sized nodes",
        cpu_and_memory(),
        [make_node("node1", 10000, 20000), make_node("node2", 10000, 50000)],
        [82, 80],
        pods=[cpu_only("node1"), cpu_and_memory("node2")],
    ),
    Case(
        "requested resources at node capacity",
        cpu_only(),
        [make_node("node1", 6000, 10000), make_node("node2", 6000, 10000)],
        [50, 75],
        pods=[cpu_only("node1"), cpu_and_memory("node2")],
    ),
    Case(
        "include scalar resource on a node for balanced resource allocation",
        make_pod({"memory": "0", GPU: "1"}),
        [make_node("node1", 3500, 40000, {GPU: 8}), make_node("node2", 3500, 40000, {GPU: 8})],
        [70, 65],
        pods=[cpu_and_memory("node2"), cpu_and_memory_and_gpu("node1")],
        resources=list(WITH_GPU),
    ),
    Case(
        "node without the scalar resource should skip the scalar resource",
        cpu_and_memory(),
        [make_node("node1", 3500, 40000, {GPU: 8}), make_node("node2", 3500, 40000)],
        [63, 63],
        resources=list(WITH_GPU),
    ),
    Case(
        "resources requested, pods scheduled with resources if PreScore not called",
        cpu_and_memory(),
        [make_node("node1", 10000, 20000), make_node("node2", 10000, 20000)],
        [82, 95],
        pods=[cpu_only("node1"), cpu_and_memory("node2")],
        run_pre_score=False,
    ),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_balanced_allocation(case: Case) -> None:
    plugin = NodeResourcesBalancedAllocation(NodeResourcesBalancedAllocationArgs(resources=case.resources))
    snap = make_snapshot(case.nodes, case.pods)
    table = snap.table
    slots = np.array([table.slot_of[n.name] for n in case.nodes], dtype=np.int64)
    state = CycleState()
    if case.run_pre_score:
        status = plugin.pre_score(state, case.pod, table, slots)
        if case.want_skip:
            assert status == Status(Code.SKIP)
            return
        assert status is None
    assert plugin.score_nodes(state, case.pod, table, slots).tolist() == case.expected


def test_uses_requested_not_nonzero_defaults() -> None:
    # An existing pod without requests counts as 0 here (useRequested), not as 100m / 200Mi.
    plugin = NodeResourcesBalancedAllocation()
    snap = make_snapshot([make_node("node1", 4000, 10000)], [make_pod(node_name="node1")])
    pod = cpu_and_memory()
    state = CycleState()
    slots = np.array([0], dtype=np.int64)
    assert plugin.pre_score(state, pod, snap.table, slots) is None
    assert plugin.score_nodes(state, pod, snap.table, slots).tolist() == [87]  # as with an empty node


def go_scorer(requested: list[int], allocatable: list[int]) -> int:
    """Upstream ``balancedResourceScorer``, transcribed for one node as the reference."""
    fractions: list[float] = []
    total = 0.0
    for req, alloc in zip(requested, allocatable, strict=True):
        if alloc == 0:
            continue
        fraction = min(req / alloc, 1.0)
        total += fraction
        fractions.append(fraction)
    std = 0.0
    if len(fractions) == 2:
        std = abs((fractions[0] - fractions[1]) / 2)
    elif len(fractions) > 2:
        mean = total / len(fractions)
        acc = 0.0
        for f in fractions:
            acc = acc + (f - mean) * (f - mean)
        std = math.sqrt(acc / len(fractions))
    return int((1 - std) * MAX_NODE_SCORE)


def test_vectorized_scorer_matches_reference() -> None:
    rng = np.random.default_rng(7)
    for resources in (1, 2, 3, 4):
        n = 500
        alloc = [rng.integers(0, 5, n) * rng.integers(1, 10_000, n) for _ in range(resources)]
        req = [rng.integers(0, 12_000, n) for _ in range(resources)]
        got = balanced_score([r.astype(np.int64) for r in req], [a.astype(np.int64) for a in alloc])
        want = [go_scorer([int(r[i]) for r in req], [int(a[i]) for a in alloc]) for i in range(n)]
        assert got.tolist() == want


def test_three_resources_with_one_missing_use_the_two_resource_formula() -> None:
    requested: list[IntArray] = [np.array([3000]), np.array([5000]), np.array([1])]
    allocatable: list[IntArray] = [np.array([3500]), np.array([40000]), np.array([0])]
    assert balanced_score(requested, allocatable).tolist() == [63]  # (0.857 - 0.125) / 2 = 0.366


def test_scalar_resource_names() -> None:
    assert is_scalar_resource(GPU)
    assert is_scalar_resource("hugepages-2Mi")
    assert is_scalar_resource("kubernetes.io/batch-cpu")
    assert is_scalar_resource("attachable-volumes-csi-x")
    assert not is_scalar_resource("cpu")
    assert not is_scalar_resource("pods")
