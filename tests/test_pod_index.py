"""PodIndex: counts kept by the cache match a brute-force recount after any sequence of pod changes."""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from kubesched.api.objects import Node, Pod
from kubesched.api.selectors import LabelSelector
from kubesched.cache.cache import SchedulerCache, Snapshot
from kubesched.cache.pod_index import MAX_SELECTOR_KEYS, TermKind

NODES = ("n0", "n1", "n2")
SELECTORS = [
    LabelSelector.from_match_labels({"app": "a"}),
    LabelSelector.from_dict(
        {"matchExpressions": [{"key": "app", "operator": "NotIn", "values": ["a"]}]}, "s"
    ),
    LabelSelector.everything(),
]
NAMESPACE_SETS: list[frozenset[str] | None] = [None, frozenset({"default"}), frozenset({"x", "default"})]


def make_node(name: str) -> Node:
    return Node.from_dict({"kind": "Node", "metadata": {"name": name, "labels": {"zone": name}}})


def make_pod(
    uid: str, node: str, app: str, ns: str = "default", terminating: bool = False, anti: str | None = None
) -> Pod:
    meta: dict[str, Any] = {"name": uid, "uid": uid, "namespace": ns, "labels": {"app": app}}
    if terminating:
        meta["deletionTimestamp"] = "2024-01-01T00:00:00Z"
    spec: dict[str, Any] = {"nodeName": node, "containers": [{"name": "c"}]}
    if anti is not None:
        term = {"labelSelector": {"matchLabels": {"app": anti}}, "topologyKey": "zone"}
        spec["affinity"] = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}
    return Pod.from_dict({"kind": "Pod", "metadata": meta, "spec": spec})


def cluster() -> tuple[SchedulerCache, Snapshot]:
    cache = SchedulerCache()
    for n in NODES:
        cache.add_node(make_node(n))
    snapshot = Snapshot()
    cache.update_snapshot(snapshot)
    return cache, snapshot


def brute_force(
    cache: SchedulerCache, snapshot: Snapshot, ns: frozenset[str] | None, sel: LabelSelector
) -> list[int]:
    out = [0] * len(NODES)
    for st_ in cache.pods():
        p = st_.pod
        if p.raw["metadata"].get("deletionTimestamp"):
            continue
        if (ns is None or p.namespace in ns) and sel.matches(p.labels):
            out[snapshot.table.slot_of[st_.node_name]] += 1
    return out


def counts(snapshot: Snapshot, ns: frozenset[str] | None, sel: LabelSelector) -> list[int]:
    arr = snapshot.pod_index.matching_counts(ns, sel)
    padded = np.zeros(max(len(arr), len(NODES)), dtype=np.int64)
    padded[: len(arr)] = arr
    return [int(padded[snapshot.table.slot_of[n]]) for n in NODES]


ops = st.lists(
    st.tuples(
        st.sampled_from(("add", "assume", "remove", "relabel", "forget")),
        st.integers(0, 7),
        st.sampled_from(NODES),
        st.sampled_from(("a", "b")),
        st.sampled_from(("default", "x", "y")),
        st.booleans(),
    ),
    max_size=30,
)


@settings(max_examples=60, deadline=None)
@given(ops, st.integers(0, 30))
def test_incremental_counts_equal_a_recount(
    operations: list[tuple[str, int, str, str, str, bool]], ask_at: int
) -> None:
    cache, snapshot = cluster()
    for step, (op, i, node, app, ns, terminating) in enumerate(operations):
        if step == ask_at:  # register the keys mid-way: the first call scans, later ones are incremental
            for sel in SELECTORS:
                for nss in NAMESPACE_SETS:
                    counts(snapshot, nss, sel)
        uid = f"u{i}"
        known = cache.pod_state(uid)
        if op == "add":
            cache.add_pod(make_pod(uid, node, app, ns, terminating))
        elif op == "assume" and known is None:
            cache.assume_pod(make_pod(uid, node, app, ns, terminating), node)
        elif op == "forget" and known is not None and known.assumed:
            cache.forget_pod(known.pod)
        elif op == "remove" and known is not None:
            cache.remove_pod(known.pod)
        elif op == "relabel" and known is not None:
            cache.update_pod(make_pod(uid, known.node_name, app, known.pod.namespace, terminating))
    cache.update_snapshot(snapshot)
    for sel in SELECTORS:
        for nss in NAMESPACE_SETS:
            assert counts(snapshot, nss, sel) == brute_force(cache, snapshot, nss, sel)


def test_terminating_pods_are_left_out_of_matching_counts_only() -> None:
    cache, snapshot = cluster()
    cache.add_pod(make_pod("live", "n0", "a"))
    cache.add_pod(make_pod("leaving", "n1", "a", terminating=True))
    sel = SELECTORS[0]
    assert counts(snapshot, None, sel) == [1, 0, 0]
    index = snapshot.pod_index
    all_pods = index.matching_all_counts(((None, sel),), include_terminating=True)
    assert [int(all_pods[snapshot.table.slot_of[n]]) for n in NODES] == [1, 1, 0]


def test_existing_pods_terms_are_grouped_by_identical_term() -> None:
    cache, snapshot = cluster()
    for i, node in enumerate(("n0", "n0", "n2")):
        cache.add_pod(make_pod(f"w{i}", node, "web", anti="web"))
    cache.add_pod(make_pod("db", "n1", "db", anti="db"))
    index = snapshot.pod_index
    groups = {g.term.selector: g for g in index.term_groups(TermKind.REQUIRED_ANTI_AFFINITY)}
    assert len(groups) == 2
    web = groups[LabelSelector.from_match_labels({"app": "web"})]
    slot = snapshot.table.slot_of
    assert web.per_slot == {slot["n0"]: 2, slot["n2"]: 1}
    dense = index.group_counts(web)
    assert int(dense[slot["n0"]]) == 2
    cache.remove_pod(make_pod("w0", "n0", "web", anti="web"))
    assert int(index.group_counts(web)[slot["n0"]]) == 1
    cache.remove_pod(make_pod("db", "n1", "db", anti="db"))
    assert len(list(index.term_groups(TermKind.REQUIRED_ANTI_AFFINITY))) == 1


def test_selector_keys_are_bounded() -> None:
    cache, snapshot = cluster()
    cache.add_pod(make_pod("p", "n0", "a"))
    index = snapshot.pod_index
    for i in range(MAX_SELECTOR_KEYS + 50):
        index.matching_counts(None, LabelSelector.from_match_labels({"app": f"v{i}"}))
    assert index.num_selector_keys == MAX_SELECTOR_KEYS
    # A dropped key is rebuilt by a fresh scan when asked again.
    assert counts(snapshot, None, LabelSelector.from_match_labels({"app": "v0"})) == [0, 0, 0]
    assert counts(snapshot, None, SELECTORS[0]) == [1, 0, 0]


def test_selectors_are_usable_as_keys_and_equal_meanings_share_one() -> None:
    a = LabelSelector.from_dict({"matchLabels": {"x": "1", "y": "2"}}, "s")
    b = LabelSelector.from_dict({"matchLabels": {"y": "2", "x": "1"}}, "s")
    assert {a: 1, b: 2}[a] == 1
    _, snapshot = cluster()
    index = snapshot.pod_index
    assert index.matching_counts(None, a) is index.matching_counts(None, b)
    assert index.num_selector_keys == 1


def test_pods_on_lists_the_pods_of_a_slot() -> None:
    cache, snapshot = cluster()
    cache.add_pod(make_pod("p1", "n1", "a"))
    cache.assume_pod(make_pod("p2", "n1", "b"), "n1")
    names = sorted(p.name for p in snapshot.pod_index.pods_on(snapshot.table.slot_of["n1"]))
    assert names == ["p1", "p2"]
