"""network-topology-aware's functions, as Volcano v1.15.1's plugin tests call them
(``plugins/network-topology-aware/network_topology_aware_test.go``, names verbatim), and the
session's HyperNode tree."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from kubesched.api.topology import HyperNode
from kubesched.batch.conf import PluginOption
from kubesched.batch.hypernodes import CLUSTER_TOP_HYPER_NODE, HyperNodeInfo, HyperNodeTree, build_tree
from kubesched.batch.operations import SearchPurpose
from kubesched.batch.plugins.network_topology_aware import NetworkTopologyAwarePlugin
from kubesched.batch.testing import node, open_on, pod, queue

PLUGIN = [{"name": "network-topology-aware"}]
ALLOCATE, EVICT = SearchPurpose.ALLOCATE, SearchPurpose.EVICT


def hyper_node(name: str, tier: int, members: list[str], kind: str = "Node") -> dict[str, Any]:
    return {
        "apiVersion": "topology.volcano.sh/v1alpha1",
        "kind": "HyperNode",
        "metadata": {"name": name},
        "spec": {
            "tier": tier,
            "members": [{"type": kind, "selector": {"exactMatch": {"name": m}}} for m in members],
        },
    }


def group(min_member: int, tier: int, min_resources: dict[str, str] | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "minMember": min_member,
        "queue": "q1",
        "networkTopology": {"mode": "hard", "highestTierAllowed": tier},
    }
    if min_resources:
        spec["minResources"] = min_resources
    return {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": "pg1", "namespace": "ns1"},
        "spec": spec,
        "status": {"phase": "Inqueue"},
    }


def three_tier_fabric() -> list[dict[str, Any]]:
    """s0 (tier 3) over s1, s2 (tier 2) over s3..s6 (tier 1), two nodes each."""
    sizes = {"s3": ("2", "4G"), "s4": ("4", "4G"), "s5": ("2", "8G"), "s6": ("4", "8G")}
    out: list[dict[str, Any]] = []
    for leaf, (cpu, mem) in sizes.items():
        out += [node(f"{leaf}-n1", cpu, mem), node(f"{leaf}-n2", cpu, mem)]
        out.append(hyper_node(leaf, 1, [f"{leaf}-n1", f"{leaf}-n2"]))
    out.append(hyper_node("s1", 2, ["s3", "s4"], "HyperNode"))
    out.append(hyper_node("s2", 2, ["s5", "s6"], "HyperNode"))
    out.append(hyper_node("s0", 3, ["s1", "s2"], "HyperNode"))
    return out


def test_hyper_node_order_fn() -> None:
    """score hypernodes for a subjob with default plugin arguments"""
    objects = [
        *three_tier_fabric(),
        queue("q1"),
        group(2, 2),
        pod("p1", "", "pg1", "4", "4G", ns="ns1"),
        pod("p2", "", "pg1", "4", "4G", ns="ns1"),
    ]
    ssn = open_on(objects, PLUGIN)
    job = next(iter(ssn.jobs.values()))
    assert ssn.hyper_nodes is not None
    names = sorted(ssn.hyper_nodes.infos)
    scores = ssn.hyper_node_order(job, names)
    expected = {
        "s0": 25.0,
        "s1": 58.3,
        "s2": 45.8,
        "s3": 0.0,
        "s4": 100.0,
        "s5": 0.0,
        "s6": 75.0,
        CLUSTER_TOP_HYPER_NODE: 25.0,
    }
    assert {n: round(s, 1) for n, s in scores.items()} == expected


# (name, purpose, minResources (cpu, memory), idle / minResources, future idle / minResources,
# hn-1-0 kept). hn-1-0's ten nodes have 40 cpus and 80Gi allocatable.
PRE_FILTERING = [
    ("Job - idle sufficient, futureIdle sufficient", ALLOCATE, ("20", "40Gi"), 1.5, 1.75, True),
    ("Job - idle sufficient, futureIdle insufficient", ALLOCATE, ("20", "40Gi"), 1.5, 0.75, True),
    ("Job - idle insufficient, futureIdle sufficient", ALLOCATE, ("20", "40Gi"), 0.75, 1.5, True),
    ("Job - idle insufficient, futureIdle insufficient", ALLOCATE, ("20", "40Gi"), 0.75, 0.75, False),
    ("Evict purpose - idle insufficient, futureIdle insufficient", EVICT, ("20", "40Gi"), 0.75, 0.75, True),
    ("Evict purpose - allocatable insufficient", EVICT, ("50", "100Gi"), 0.3, 0.3, False),
]


@pytest.mark.parametrize(
    ("purpose", "need", "idle", "future", "kept"),
    [c[1:] for c in PRE_FILTERING],
    ids=[c[0] for c in PRE_FILTERING],
)
def test_hyper_node_gradient_pre_filtering(
    purpose: SearchPurpose, need: tuple[str, str], idle: float, future: float, kept: bool
) -> None:
    objects: list[dict[str, Any]] = [queue("q1"), group(1, 2, {"cpu": need[0], "memory": need[1]})]
    leaves = []
    for i in range(4):
        members = [f"node-{i * 10 + j}" for j in range(10)]
        objects += [node(n, "4", "8Gi") for n in members]
        objects.append(hyper_node(f"hn-1-{i}", 1, members))
        leaves.append(f"hn-1-{i}")
    objects.append(hyper_node("hn-2-0", 2, leaves, "HyperNode"))
    objects.append(pod("p1", "", "pg1", "1", "1Gi", ns="ns1"))
    ssn = open_on(objects, PLUGIN)
    plugin = ssn.plugins["network-topology-aware"]
    assert isinstance(plugin, NetworkTopologyAwarePlugin)
    job = next(iter(ssn.jobs.values()))
    plugin._idle["hn-1-0"] = job.min_resources * idle
    plugin._future_idle["hn-1-0"] = job.min_resources * future
    assert ssn.hyper_nodes is not None
    gradients = ssn.hyper_node_gradient(job, ssn.hyper_nodes.infos["hn-2-0"], purpose)
    found = any(hn.name == "hn-1-0" for level in gradients for hn in level)
    assert found is kept
    tiers = [level[0].tier for level in gradients]
    # Allocation tries the lowest tier first, eviction the highest.
    ascending = sorted(tiers)
    assert tiers == (ascending if purpose is ALLOCATE else ascending[::-1])
    assert all(len({hn.tier for hn in level}) == 1 for level in gradients)


def test_reverse_and_cap_eviction_gradients() -> None:
    """TestReverseAndCapEvictionGradients"""
    plugin = NetworkTopologyAwarePlugin(PluginOption(name="network-topology-aware"))
    plugin.max_hyper_nodes_for_eviction = 3
    hn = {n: HyperNodeInfo(n, 1) for n in "abcd"}
    gradients = [[hn["a"], hn["b"]], [hn["c"], hn["d"]]]
    result = plugin.reverse_and_cap_eviction_gradients(gradients)
    assert [[h.name for h in level] for level in result] == [["c", "d"], ["b"]]
    plugin.max_hyper_nodes_for_eviction = 0
    assert plugin.reverse_and_cap_eviction_gradients(gradients) == gradients


@pytest.mark.parametrize(("value", "expected"), [(2, 2), (0, 8), (-1, 8), ("3", 8)])
def test_eviction_gradients_keep_the_configured_number_of_hyper_nodes(value: object, expected: int) -> None:
    plugin = NetworkTopologyAwarePlugin(
        PluginOption(
            name="network-topology-aware", arguments={"hypernode.gradient.evict.max-hypernodes": value}
        )
    )
    assert plugin.max_hyper_nodes_for_eviction == expected


def _hn(name: str, tier: int, members: list[tuple[str, dict[str, Any]]]) -> HyperNode:
    return HyperNode.from_dict(
        {
            "apiVersion": "topology.volcano.sh/v1alpha1",
            "kind": "HyperNode",
            "metadata": {"name": name},
            "spec": {"tier": tier, "members": [{"type": t, "selector": s} for t, s in members]},
        }
    )


def test_tree_resolves_selectors_parents_and_the_cluster_top() -> None:
    nodes = {
        "gpu-a-1": {"rack": "a"},
        "gpu-a-2": {"rack": "a"},
        "gpu-b-1": {"rack": "b"},
        "cpu-1": {},
    }
    tree = build_tree(
        [
            _hn("leaf-a", 1, [("Node", {"regexMatch": {"pattern": "^gpu-a-"}})]),
            _hn("leaf-b", 1, [("Node", {"labelMatch": {"matchLabels": {"rack": "b"}}})]),
            _hn(
                "leaf-c",
                1,
                [("Node", {"exactMatch": {"name": "cpu-1"}}), ("Node", {"exactMatch": {"name": "gone"}})],
            ),
            _hn(
                "spine",
                2,
                [
                    ("HyperNode", {"exactMatch": {"name": "leaf-a"}}),
                    ("HyperNode", {"exactMatch": {"name": "leaf-b"}}),
                ],
            ),
        ],
        nodes,
    )
    assert tree.ready
    assert tree.infos["leaf-a"].real_nodes == {"gpu-a-1", "gpu-a-2"}
    assert tree.infos["leaf-b"].real_nodes == {"gpu-b-1"}
    assert tree.infos["leaf-c"].real_nodes == {"cpu-1"}  # a node that does not exist is no member
    assert tree.infos["spine"].real_nodes == {"gpu-a-1", "gpu-a-2", "gpu-b-1"}
    assert tree.infos["leaf-a"].parent == "spine"
    top = tree.top()
    assert top.tier == 3 and top.children == {"spine", "leaf-c"} and top.real_nodes == set(nodes)
    assert tree.tiers == [1, 2, 3]  # the virtual top's tier included, as Volcano's session has it
    assert tree.lca("leaf-a", "leaf-b") == "spine"
    assert tree.lca("leaf-a", "leaf-c") == CLUSTER_TOP_HYPER_NODE
    assert tree.leaf_of("gpu-b-1") == "leaf-b"


def test_a_hyper_node_with_two_parents_makes_the_tree_not_ready() -> None:
    tree = build_tree(
        [
            _hn("leaf", 1, [("Node", {"exactMatch": {"name": "n1"}})]),
            _hn("s1", 2, [("HyperNode", {"exactMatch": {"name": "leaf"}})]),
            _hn("s2", 2, [("HyperNode", {"exactMatch": {"name": "leaf"}})]),
        ],
        {"n1": {}},
    )
    assert not tree.ready and "already has a parent s1" in tree.error


def test_batch_node_order_fn_for_a_task_without_network_topology() -> None:
    """score empty nodes for single task with no network topology and default plugin arguments"""
    objects = [
        *three_tier_fabric(),
        queue("q1"),
        {
            "apiVersion": "scheduling.volcano.sh/v1beta1",
            "kind": "PodGroup",
            "metadata": {"name": "pg1", "namespace": "ns1"},
            "spec": {"minMember": 1, "queue": "q1"},
            "status": {"phase": "Inqueue"},
        },
        pod("p1", "", "pg1", "2", "4G", ns="ns1"),
    ]
    ssn = open_on(objects, PLUGIN)
    plugin = ssn.plugins["network-topology-aware"]
    task = next(iter(next(iter(ssn.jobs.values())).tasks.values()))
    slots = ssn.node_slots
    scores = plugin.node_order(task, ssn.table, slots)
    got = {ssn.table.names[s]: round(float(v), 1) for s, v in zip(slots.tolist(), scores, strict=True)}
    expected = {
        "s3-n1": 25.8,
        "s3-n2": 25.8,
        "s4-n1": 21.6,
        "s4-n2": 21.6,
        "s5-n1": 19.9,
        "s5-n2": 19.9,
        "s6-n1": 15.7,
        "s6-n2": 15.7,
    }
    assert got == expected


def test_network_topology_aware_node_score_hard() -> None:
    """Tasks in job rescheduled, score nodes according to node hypernode LCA hyperNode tier"""
    objects = [o for o in three_tier_fabric() if o["kind"] == "HyperNode"]
    objects += [node(f"{leaf}-n{i}", "2", "4Gi") for leaf in ("s3", "s4", "s5", "s6") for i in (1, 2)]
    objects += [queue("q1"), group(1, 0)]
    objects += [
        pod("p1", "s3-n1", "pg1", "2", "4G", ns="ns1"),
        pod("p2", "s3-n2", "pg1", "2", "4G", ns="ns1"),
        pod("p3", "", "pg1", "2", "4G", ns="ns1"),
    ]
    ssn = open_on(objects, [{"name": "network-topology-aware", "arguments": {"weight": 1}}])
    job = next(iter(ssn.jobs.values()))
    assert job.allocated_hyper_node == "s3"
    task = next(t for t in job.tasks.values() if t.name == "p3")
    slots = np.array([ssn.slot_of(n) for n in ("s3-n1", "s4-n1", "s5-n1")], dtype=np.int64)
    scores = ssn.plugins["network-topology-aware"].node_order(task, ssn.table, slots)
    got = {n: int(float(v) * 10) / 10 for n, v in zip(("s3-n1", "s4-n1", "s5-n1"), scores, strict=True)}
    assert got == {"s3-n1": 100.0, "s4-n1": 66.6, "s5-n1": 33.3}


# -- Volcano's api/hyper_node_info_test.go ------------------------------------------------------- #


def _members(*names: str, kind: str = "Node") -> list[tuple[str, dict[str, Any]]]:
    return [(kind, {"exactMatch": {"name": n}}) for n in names]


LCA_CASES = [
    ("Sibling hypernode", "s0", "s1", "s4"),
    ("No common ancestor", "s0", "s-orphan", ""),
    ("One is ancestor of the other", "s4", "s0", "s4"),
    ("Both are the same node", "node6", "node6", "node6"),
]


@pytest.mark.parametrize(("a", "b", "lca"), [c[1:] for c in LCA_CASES], ids=[c[0] for c in LCA_CASES])
def test_get_lca_hyper_node(a: str, b: str, lca: str) -> None:
    parents = {
        "s0": "s4",
        "s1": "s4",
        "s2": "s5",
        "s3": "s5",
        "s4": "s6",
        "s5": "s6",
        "s6": "",
        "s-orphan": "",
    }
    tiers = {"s4": 2, "s5": 2, "s6": 3}
    # Volcano's table is a bare map (no virtual top), so the orphan shares no ancestor with s0.
    infos = {n: HyperNodeInfo(n, tiers.get(n, 1), parent=p) for n, p in parents.items()}
    tree = HyperNodeTree(infos, {}, [1, 2, 3])
    assert tree.lca(a, b) == lca


def test_hyper_nodes_info_update_hyper_node_with_cycle() -> None:
    """cycle dependency and finally corrected"""
    nodes: dict[str, dict[str, str]] = {"node-0": {}, "node-1": {}}
    s0 = _hn("s0", 1, _members("node-0", "node-1"))
    s2 = _hn("s2", 3, _members("s1", kind="HyperNode"))
    s3 = _hn("s3", 4, _members("s2", kind="HyperNode"))
    cyclic = build_tree([s2, s0, _hn("s1", 2, _members("s0", "s3", kind="HyperNode")), s3], nodes)
    assert not cyclic.ready and "cyclic dependency" in cyclic.error
    fixed = build_tree([s2, s0, _hn("s1", 2, _members("s0", kind="HyperNode")), s3], nodes)
    assert fixed.ready
    for name in ("s0", "s1", "s2", "s3"):
        assert fixed.infos[name].real_nodes == {"node-0", "node-1"}
    assert {n: fixed.infos[n].parent for n in ("s0", "s1", "s2")} == {"s0": "s1", "s1": "s2", "s2": "s3"}
    assert fixed.infos["s3"].parent == CLUSTER_TOP_HYPER_NODE
