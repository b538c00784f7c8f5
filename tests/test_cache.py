"""NodeTree zone interleaving (upstream node_tree_test cases) and SchedulerCache assume/forget/confirm."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from kubesched.api.objects import Node, Pod
from kubesched.cache.cache import CacheError, SchedulerCache, Snapshot
from kubesched.cache.node_table import CPU_COL, MEMORY_COL, PODS_COL, NodeTable
from kubesched.cache.node_tree import NodeTree

REGION = "topology.kubernetes.io/region"
ZONE = "topology.kubernetes.io/zone"
BETA_REGION = "failure-domain.beta.kubernetes.io/region"
BETA_ZONE = "failure-domain.beta.kubernetes.io/zone"


def node(
    name: str, labels: dict[str, str] | None = None, cpu: str = "4", memory: str = "8Gi", **spec: Any
) -> Node:
    return Node.from_dict(
        {
            "kind": "Node",
            "metadata": {"name": name, "labels": labels or {}},
            "spec": spec,
            "status": {"allocatable": {"cpu": cpu, "memory": memory, "pods": "110"}},
        }
    )


def pod(name: str, node_name: str = "", cpu: str = "100m", memory: str = "100Mi", uid: str = "") -> Pod:
    return Pod.from_dict(
        {
            "kind": "Pod",
            "metadata": {"name": name, "namespace": "default", "uid": uid or f"uid-{name}"},
            "spec": {
                "nodeName": node_name,
                "containers": [{"name": "c", "resources": {"requests": {"cpu": cpu, "memory": memory}}}],
            },
        }
    )


# upstream node_tree_test's allNodes (index → labels)
ALL_NODES: list[tuple[str, dict[str, str]]] = [
    ("node-0", {}),
    ("node-1", {REGION: "region-1"}),
    ("node-2", {ZONE: "zone-2"}),
    ("node-3", {REGION: "region-1", ZONE: "zone-2"}),
    ("node-4", {REGION: "region-1", ZONE: "zone-2"}),
    ("node-5", {REGION: "region-1", ZONE: "zone-3"}),
    ("node-6", {REGION: "region-2", ZONE: "zone-2"}),
    ("node-7", {REGION: "region-2", ZONE: "zone-2"}),
    ("node-8", {REGION: "region-2", ZONE: "zone-2"}),
    ("node-9", {REGION: "region-2", ZONE: "zone-2", BETA_REGION: "region-2", BETA_ZONE: "zone-2"}),
    ("node-10", {BETA_REGION: "region-2", BETA_ZONE: "zone-3"}),
]
NODES = [node(n, labels) for n, labels in ALL_NODES]


def tree_of(nodes: list[Node]) -> NodeTree:
    tree = NodeTree()
    for n in nodes:
        tree.add(n.name, n.zone_key)
    return tree


def groups(tree: NodeTree) -> dict[str, list[str]]:
    """zone key → node names, read back from the listing (zone order is not part of the contract)."""
    out: dict[str, list[str]] = {}
    for name in tree.list():
        out.setdefault(tree._zone_of[name], []).append(name)
    return out


# -- NodeTree --------------------------------------------------------------------------------------


def test_zone_key_matches_upstream_format() -> None:
    assert NODES[0].zone_key == ""
    assert NODES[1].zone_key == "region-1:\x00:"
    assert NODES[2].zone_key == ":\x00:zone-2"
    assert NODES[3].zone_key == "region-1:\x00:zone-2"


def test_zone_key_falls_back_to_deprecated_labels() -> None:
    assert NODES[9].zone_key == "region-2:\x00:zone-2"
    assert NODES[10].zone_key == "region-2:\x00:zone-3"


@pytest.mark.parametrize(
    ("to_add", "expected"),
    [
        ([0], {"": ["node-0"]}),
        ([0, 0], {"": ["node-0"]}),
        (
            [0, 1, 2, 3],
            {
                "": ["node-0"],
                "region-1:\x00:": ["node-1"],
                ":\x00:zone-2": ["node-2"],
                "region-1:\x00:zone-2": ["node-3"],
            },
        ),
        (
            list(range(7)),
            {
                "": ["node-0"],
                "region-1:\x00:": ["node-1"],
                ":\x00:zone-2": ["node-2"],
                "region-1:\x00:zone-2": ["node-3", "node-4"],
                "region-1:\x00:zone-3": ["node-5"],
                "region-2:\x00:zone-2": ["node-6"],
            },
        ),
        ([9, 10], {"region-2:\x00:zone-2": ["node-9"], "region-2:\x00:zone-3": ["node-10"]}),
    ],
    ids=["single-no-labels", "same-node-twice", "mixed-labels", "zones-with-several", "deprecated-labels"],
)
def test_node_tree_add(to_add: list[int], expected: dict[str, list[str]]) -> None:
    tree = tree_of([NODES[i] for i in to_add])
    assert groups(tree) == expected
    assert len(tree) == sum(len(v) for v in expected.values())


@pytest.mark.parametrize(
    ("to_remove", "expected"),
    [
        (
            [0],
            {
                "region-1:\x00:": ["node-1"],
                ":\x00:zone-2": ["node-2"],
                "region-1:\x00:zone-2": ["node-3", "node-4"],
                "region-1:\x00:zone-3": ["node-5"],
                "region-2:\x00:zone-2": ["node-6"],
            },
        ),
        (
            [1, 2, 3],
            {
                "": ["node-0"],
                "region-1:\x00:zone-2": ["node-4"],
                "region-1:\x00:zone-3": ["node-5"],
                "region-2:\x00:zone-2": ["node-6"],
            },
        ),
        (list(range(7)), {}),
    ],
    ids=["single", "few-incl-multi-zone", "all"],
)
def test_node_tree_remove(to_remove: list[int], expected: dict[str, list[str]]) -> None:
    tree = tree_of(NODES[:7])
    for i in to_remove:
        tree.remove(NODES[i].name)
    assert groups(tree) == expected
    assert len(tree) == sum(len(v) for v in expected.values())


def test_node_tree_remove_unknown_is_harmless() -> None:
    tree = NodeTree()
    for n in NODES[:5]:
        tree.remove(n.name)
    assert tree.list() == []
    assert len(tree) == 0


def test_node_tree_update_moves_node_to_end_of_new_zone() -> None:
    tree = tree_of(NODES[:7])
    moved = node("node-0", {REGION: "region-1", ZONE: "zone-2"})
    tree.update(moved.name, moved.zone_key)
    assert groups(tree) == {
        "region-1:\x00:": ["node-1"],
        ":\x00:zone-2": ["node-2"],
        "region-1:\x00:zone-2": ["node-3", "node-4", "node-0"],
        "region-1:\x00:zone-3": ["node-5"],
        "region-2:\x00:zone-2": ["node-6"],
    }


def test_node_tree_update_only_node_and_unknown_node() -> None:
    tree = tree_of(NODES[:1])
    tree.update("node-0", "region-1:\x00:zone-2")
    assert groups(tree) == {"region-1:\x00:zone-2": ["node-0"]}

    tree = tree_of(NODES[:1])
    tree.update("node-new", "region-1:\x00:zone-2")
    assert groups(tree) == {"": ["node-0"], "region-1:\x00:zone-2": ["node-new"]}


def test_node_tree_update_same_zone_keeps_position() -> None:
    tree = tree_of(NODES[:7])
    before = tree.list()
    tree.update("node-3", NODES[3].zone_key)
    assert tree.list() == before


@pytest.mark.parametrize(
    ("count", "expected"),
    [
        (0, []),
        (1, ["node-0"]),
        (4, ["node-0", "node-1", "node-2", "node-3"]),
        (9, ["node-0", "node-1", "node-2", "node-3", "node-5", "node-6", "node-4", "node-7", "node-8"]),
    ],
)
def test_node_tree_list_interleaves_zones(count: int, expected: list[str]) -> None:
    assert tree_of(NODES[:count]).list() == expected


@pytest.mark.parametrize(
    ("adds", "removes", "ops", "expected"),
    [
        (list(range(2, 9)), list(range(2, 9)), "aaarrr", []),
        (list(range(2, 9)), list(range(2, 9)), "aaar", ["node-3", "node-4"]),
        (list(range(2, 9)), list(range(2, 9)), "aaarrra", ["node-5"]),
        ([4, 5, 6, 7, 8, 3], [], "aaaaaa", ["node-4", "node-5", "node-6", "node-3", "node-7", "node-8"]),
        ([3, 4, 6, 7], [3, 4], "aaraar", ["node-6", "node-7"]),
    ],
    ids=["add-remove-all", "add-remove-some", "remove-three", "exhausted-zone-grows", "remove-zone-add-new"],
)
def test_node_tree_multi_operations(
    adds: list[int], removes: list[int], ops: str, expected: list[str]
) -> None:
    tree = NodeTree()
    add_it, rem_it = iter(adds), iter(removes)
    for op in ops:
        if op == "a":
            n = NODES[next(add_it)]
            tree.add(n.name, n.zone_key)
        else:
            tree.remove(NODES[next(rem_it)].name)
    assert tree.list() == expected


# -- SchedulerCache --------------------------------------------------------------------------------


def snap(cache: SchedulerCache, snapshot: Snapshot | None = None) -> Snapshot:
    snapshot = snapshot or Snapshot()
    cache.update_snapshot(snapshot)
    return snapshot


def row(s: Snapshot, name: str) -> tuple[int, int, int]:
    slot = s.table.slot_of[name]
    r = s.table.requested[slot]
    return int(r[CPU_COL]), int(r[MEMORY_COL]), int(r[PODS_COL])


def order_names(s: Snapshot) -> list[str]:
    return [s.table.names[i] for i in s.table.order.tolist()]


def test_assume_is_seen_by_next_snapshot_and_forget_removes_it() -> None:
    cache = SchedulerCache()
    cache.add_node(node("n1"))
    s = snap(cache)
    assert row(s, "n1") == (0, 0, 0)
    p = pod("p", "n1", cpu="500m", memory="1Gi")
    cache.assume_pod(p, "n1")
    assert cache.is_assumed(p.uid)
    snap(cache, s)
    assert row(s, "n1") == (500, 1 << 30, 1)
    assert s.table.nonzero_requested[s.table.slot_of["n1"]].tolist() == [500, 1 << 30]
    cache.forget_pod(p)
    assert cache.pod_state(p.uid) is None
    snap(cache, s)
    assert row(s, "n1") == (0, 0, 0)
    assert s.node_info("n1") is not None and not s.node_info("n1").pods  # type: ignore[union-attr]


def test_assume_twice_and_forget_unknown_are_errors() -> None:
    cache = SchedulerCache()
    cache.add_node(node("n1"))
    p = pod("p", "n1")
    cache.assume_pod(p, "n1")
    with pytest.raises(CacheError):
        cache.assume_pod(p, "n1")
    with pytest.raises(CacheError):
        cache.forget_pod(pod("other", "n1"))


def test_confirm_via_add_pod_keeps_one_copy() -> None:
    cache = SchedulerCache()
    cache.add_node(node("n1"))
    p = pod("p", "n1", cpu="1")
    cache.assume_pod(p, "n1")
    cache.finish_binding(p)
    cache.add_pod(pod("p", "n1", cpu="1"))  # the informer's bound pod
    assert not cache.is_assumed(p.uid)
    s = snap(cache)
    assert row(s, "n1")[0] == 1000
    assert row(s, "n1")[2] == 1
    assert len(cache.pods()) == 1
    with pytest.raises(CacheError):
        cache.forget_pod(p)  # confirmed pods cannot be forgotten


def test_confirm_on_a_different_node_moves_the_pod() -> None:
    cache = SchedulerCache()
    cache.add_node(node("n1"))
    cache.add_node(node("n2"))
    cache.assume_pod(pod("p", "n1", cpu="1"), "n1")
    cache.add_pod(pod("p", "n2", cpu="1"))
    s = snap(cache)
    assert row(s, "n1") == (0, 0, 0)
    assert row(s, "n2")[0] == 1000
    assert row(s, "n2")[2] == 1


def test_pods_on_a_node_not_known_yet() -> None:
    cache = SchedulerCache()
    cache.add_pod(pod("early", "n1", cpu="2"))
    s = snap(cache)
    assert s.num_nodes == 0
    assert s.node_info("n1") is None  # a NodeInfo without a Node is not schedulable
    cache.add_node(node("n1"))
    snap(cache, s)
    assert s.num_nodes == 1
    assert row(s, "n1") == (2000, 100 << 20, 1)


def test_node_removal_with_pods_keeps_their_accounting_until_they_go() -> None:
    cache = SchedulerCache()
    cache.add_node(node("n1"))
    cache.add_node(node("n2"))
    p = pod("p", "n1", cpu="1")
    cache.add_pod(p)
    s = snap(cache)
    slot = s.table.slot_of["n1"]
    cache.remove_node("n1")
    snap(cache, s)
    assert order_names(s) == ["n2"]
    assert "n1" not in s.node_infos
    assert not s.table.valid[slot]
    assert "n1" in cache.node_infos  # kept while a pod refers to it
    cache.remove_pod(p)
    assert "n1" not in cache.node_infos
    # The node comes back: the pod is gone, so its row starts empty.
    cache.add_node(node("n1"))
    snap(cache, s)
    assert row(s, "n1") == (0, 0, 0)


def test_removed_node_slot_is_reused_and_row_rewritten() -> None:
    cache = SchedulerCache()
    for name in ("a", "b", "c"):
        cache.add_node(node(name, cpu="1"))
    s = snap(cache)
    slot_b = s.table.slot_of["b"]
    cache.remove_node("b")
    snap(cache, s)
    assert "b" not in s.table.slot_of
    assert s.table.names[slot_b] == ""
    cache.add_node(node("d", cpu="7", labels={"disk": "ssd"}))
    snap(cache, s)
    assert s.table.slot_of["d"] == slot_b
    assert s.table.names[slot_b] == "d"
    assert s.table.allocatable[slot_b, CPU_COL] == 7000
    assert s.table.valid[slot_b]
    assert order_names(s) == ["a", "c", "d"]
    assert sorted(s.node_infos) == ["a", "c", "d"]


class OrderedDirty(set[str]):
    """The cache's dirty set, iterated in a fixed order, so both orders of a removal and an add
    sharing one slot are exercised (a plain set's order depends on string hashing)."""

    def __init__(self, reverse: bool) -> None:
        super().__init__()
        self.reverse = reverse

    def __iter__(self):  # type: ignore[no-untyped-def]
        return iter(sorted(set.__iter__(self), reverse=self.reverse))


@pytest.mark.parametrize("reverse", [False, True], ids=["removed-first", "added-first"])
def test_remove_and_add_sharing_a_slot_in_one_refresh(reverse: bool) -> None:
    cache = SchedulerCache()
    cache._dirty = OrderedDirty(reverse)
    cache.add_node(node("a", cpu="1", labels={"disk": "ssd"}))
    cache.add_node(node("z", cpu="3"))
    s = snap(cache)
    slot = s.table.slot_of["a"]
    cache.remove_node("a")
    cache.add_node(node("b", cpu="2"))  # takes a's slot
    snap(cache, s)
    assert s.table.slot_of == {"b": slot, "z": s.table.slot_of["z"]}
    assert s.table.names[slot] == "b"
    assert s.table.valid[slot]
    assert s.table.allocatable[slot, CPU_COL] == 2000
    assert s.table.labels["disk"].codes[slot] == -1
    assert sorted(order_names(s)) == ["b", "z"]
    assert sorted(s.node_infos) == ["b", "z"]


@pytest.mark.parametrize("reverse", [False, True], ids=["a-first", "c-first"])
def test_node_readded_into_another_slot_leaves_no_stale_row(reverse: bool) -> None:
    cache = SchedulerCache()
    cache._dirty = OrderedDirty(reverse)
    for name in ("a", "b", "c"):
        cache.add_node(node(name))
    s = snap(cache)
    cache.remove_node("a")
    cache.remove_node("c")
    cache.add_node(node("a", cpu="5"))  # reuses the most recently freed slot (c's)
    snap(cache, s)
    valid_names = sorted(s.table.names[i] for i in np.flatnonzero(s.table.valid))
    assert valid_names == ["a", "b"]
    assert s.table.allocatable[s.table.slot_of["a"], CPU_COL] == 5000
    assert sorted(order_names(s)) == ["a", "b"]


def test_label_column_cleared_when_slot_is_reused() -> None:
    cache = SchedulerCache()
    cache.add_node(node("a", labels={"disk": "ssd"}))
    s = snap(cache)
    slot = s.table.slot_of["a"]
    cache.remove_node("a")
    cache.add_node(node("b"))
    snap(cache, s)
    assert s.table.slot_of["b"] == slot
    assert s.table.labels["disk"].codes[slot] == -1


def test_incremental_snapshot_writes_only_dirty_rows(monkeypatch: pytest.MonkeyPatch) -> None:
    cache = SchedulerCache()
    for i in range(50):
        cache.add_node(node(f"n{i}"))
    s = snap(cache)
    written: list[int] = []
    original = NodeTable.write

    def counting(self: NodeTable, slot: int, info: Any) -> None:
        written.append(slot)
        original(self, slot, info)

    monkeypatch.setattr(NodeTable, "write", counting)
    snap(cache, s)
    assert written == []  # nothing changed

    cache.assume_pod(pod("p", "n7"), "n7")
    snap(cache, s)
    assert written == [s.table.slot_of["n7"]]

    written.clear()
    cache.update_node(node("n3", cpu="8"))
    cache.add_pod(pod("q", "n9"))
    snap(cache, s)
    assert sorted(written) == sorted([s.table.slot_of["n3"], s.table.slot_of["n9"]])
    assert s.table.allocatable[s.table.slot_of["n3"], CPU_COL] == 8000

    # Confirming an assumed pod with the same footprint rewrites nothing.
    written.clear()
    cache.add_pod(pod("p", "n7"))
    snap(cache, s)
    assert written == []


def test_snapshot_order_is_zone_interleaved() -> None:
    cache = SchedulerCache()
    for n in NODES[:9]:
        cache.add_node(n)
    s = snap(cache)
    assert order_names(s) == [
        "node-0",
        "node-1",
        "node-2",
        "node-3",
        "node-5",
        "node-6",
        "node-4",
        "node-7",
        "node-8",
    ]
    # A zone change moves the node to the end of its new zone.
    cache.update_node(node("node-0", {REGION: "region-2", ZONE: "zone-2"}))
    snap(cache, s)
    assert order_names(s) == [
        "node-1",
        "node-2",
        "node-3",
        "node-5",
        "node-6",
        "node-4",
        "node-7",
        "node-8",
        "node-0",
    ]
    assert np.array_equal(np.sort(s.table.order), np.flatnonzero(s.table.valid))


def test_update_pod_with_new_requests_rewrites_row() -> None:
    cache = SchedulerCache()
    cache.add_node(node("n1"))
    cache.add_pod(pod("p", "n1", cpu="1"))
    cache.update_pod(pod("p", "n1", cpu="3"))
    s = snap(cache)
    assert row(s, "n1")[0] == 3000
    assert row(s, "n1")[2] == 1
