"""Network-topology-aware allocation: Volcano v1.15.1's ``TestAllocateWithNetWorkTopologies`` cases
(``actions/allocate/allocate_test.go``, names verbatim) on kubesched's allocate action with the
predicates, gang and network-topology-aware plugins."""

from __future__ import annotations

from typing import Any

import pytest

from kubesched.batch.testing import node, one_tier, pod, queue, run_conf

PLUGINS = [{"name": "predicates"}, {"name": "gang"}, {"name": "network-topology-aware"}]


def hyper_node(
    name: str, tier: int, members: list[str], kind: str = "Node", tier_name: str = ""
) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "tier": tier,
        "members": [{"type": kind, "selector": {"exactMatch": {"name": m}}} for m in members],
    }
    if tier_name:
        spec["tierName"] = tier_name
    return {
        "apiVersion": "topology.volcano.sh/v1alpha1",
        "kind": "HyperNode",
        "metadata": {"name": name},
        "spec": spec,
    }


def group(min_member: int, mode: str, tier: int | str) -> dict[str, Any]:
    """A PodGroup with ``highestTierAllowed`` (an int) or ``highestTierName`` (a string)."""
    key = "highestTierName" if isinstance(tier, str) else "highestTierAllowed"
    return {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": "pg1", "namespace": "c1"},
        "spec": {"minMember": min_member, "queue": "q1", "networkTopology": {"mode": mode, key: tier}},
        "status": {"phase": "Inqueue"},
    }


def task(name: str, node_name: str, role: str, selector: dict[str, str] | None = None) -> dict[str, Any]:
    p = pod(name, node_name, "pg1", "2", "4G")
    p["metadata"]["labels"] = {"volcano.sh/task-spec": role}
    if selector:
        p["spec"]["nodeSelector"] = selector
    return p


def two_leaves(spine: bool = True) -> list[dict[str, Any]]:
    """s0 = {s0-n1, s0-n2}, s1 = {s1-n3, s1-n4} at tier 1, under s2 at tier 2 when ``spine``."""
    out = [node(n, "2", "4Gi") for n in ("s0-n1", "s0-n2", "s1-n3", "s1-n4")]
    out += [hyper_node("s0", 1, ["s0-n1", "s0-n2"]), hyper_node("s1", 1, ["s1-n3", "s1-n4"])]
    if spine:
        out.append(hyper_node("s2", 2, ["s0", "s1"], "HyperNode"))
    return out


def named_tiers(spine: bool = True) -> list[dict[str, Any]]:
    """:func:`two_leaves` with tier names ``volcano.sh/task-spec`` (1) and ``volcano.sh/job-spec`` (2)."""
    out = [node(n, "2", "4Gi") for n in ("s0-n1", "s0-n2", "s1-n3", "s1-n4")]
    out += [
        hyper_node("s0", 1, ["s0-n1", "s0-n2"], tier_name="volcano.sh/task-spec"),
        hyper_node("s1", 1, ["s1-n3", "s1-n4"], tier_name="volcano.sh/task-spec"),
    ]
    if spine:
        out.append(hyper_node("s2", 2, ["s0", "s1"], "HyperNode", "volcano.sh/job-spec"))
    return out


def three_tiers() -> list[dict[str, Any]]:
    """s0 (tier 3) over s1 = {s3, s4} and s2 = {s5, s6} (tier 2), leaves of two 2-cpu nodes each."""
    out: list[dict[str, Any]] = []
    for leaf in ("s3", "s4", "s5", "s6"):
        out += [node(f"{leaf}-n1", "2", "4Gi"), node(f"{leaf}-n2", "2", "4Gi")]
        out.append(hyper_node(leaf, 1, [f"{leaf}-n1", f"{leaf}-n2"]))
    out.append(hyper_node("s1", 2, ["s3", "s4"], "HyperNode"))
    out.append(hyper_node("s2", 2, ["s5", "s6"], "HyperNode"))
    out.append(hyper_node("s0", 3, ["s1", "s2"], "HyperNode"))
    return out


def rescheduled_in_s3() -> list[dict[str, Any]]:
    return [task("p1", "s3-n1", "master"), task("p2", "s3-n2", "worker"), task("p3", "", "worker")]


def three_pending() -> list[dict[str, Any]]:
    return [task("p1", "", "master"), task("p2", "", "worker"), task("p3", "", "worker")]


def rescheduled() -> list[dict[str, Any]]:
    return [task("p1", "s0-n1", "master"), task("p2", "s0-n2", "worker"), task("p3", "", "worker")]


CASES: list[tuple[str, list[dict[str, Any]], int, dict[str, str] | None]] = [
    (
        "soft network topology constrain, can allocate job when resources are enough",
        [*two_leaves(), group(3, "soft", 0), *three_pending()],
        3,
        None,
    ),
    (
        "soft network topology constrain, can allocate job when minavailable < replicas",
        [*two_leaves(), group(1, "soft", 1), task("p1", "", "master"), task("p2", "", "worker")],
        2,
        None,
    ),
    (
        "soft network topology constrain and tasks in job rescheduled, can allocate job when resources are enough",  # noqa: E501 (Volcano's name)
        [*two_leaves(), group(2, "soft", 1), *rescheduled()],
        1,
        None,
    ),
    (
        "soft network topology constrain and tasks in job rescheduled, can allocate job when resources are enough and minavailable = replicas",  # noqa: E501 (Volcano's name)
        [*two_leaves(), group(3, "soft", 0), *rescheduled()],
        1,
        None,
    ),
    (
        "soft network topology constrain and tasks in job rescheduled, can allocate job when cross highestTierAllowed tier and hyperNodesInfo has three tier",  # noqa: E501 (Volcano's name)
        [*three_tiers(), group(2, "soft", 0), *rescheduled_in_s3()],
        1,
        None,
    ),
    (
        "hard network topology constrain, can not allocate job when cross highestTierAllowed tier",
        [*two_leaves(), group(3, "hard", 1), *three_pending()],
        0,
        None,
    ),
    (
        "hard network topology constrain, can allocate job when highestTierAllowed not reached",
        [*two_leaves(), group(3, "hard", 2), *three_pending()],
        3,
        None,
    ),
    (
        "hard network topology constrain, can allocate job when multi hyperNodes are available",
        [*two_leaves(), group(2, "hard", 1), task("p1", "", "master"), task("p2", "", "worker")],
        2,
        None,
    ),
    (
        "hard network topology constrain, can allocate job when minavailable < replicas",
        [*two_leaves(), group(1, "hard", 1), task("p1", "", "master"), task("p2", "", "worker")],
        2,
        None,
    ),
    (
        "hard network topology constrain, two available hyperNodes, can allocate job to nodes with affinity",
        [
            node("s0-n1", "2", "4Gi"),
            {**node("s1-n2", "2", "4Gi")},
            hyper_node("s0", 0, ["s0-n1"]),
            hyper_node("s1", 0, ["s1-n2"]),
            group(1, "hard", 1),
            task("p1", "", "master", {"nodeRole": "master"}),
        ],
        1,
        {"p1": "s1-n2"},
    ),
    (
        "hard network topology constrain and tasks in job rescheduled, can allocate job when highestTierAllowed not reached",  # noqa: E501 (Volcano's name)
        [*two_leaves(), group(2, "hard", 2), *rescheduled()],
        1,
        None,
    ),
    (
        "hard network topology constrain and tasks in job rescheduled, can allocate job when highestTierAllowed not reached and minavailable = replicas",  # noqa: E501 (Volcano's name)
        [*two_leaves(), group(3, "hard", 2), *rescheduled()],
        1,
        None,
    ),
    (
        "hard network topology constrain and tasks in job rescheduled, can allocate job when highestTierAllowed not reached and hyperNodesInfo has three tier",  # noqa: E501 (Volcano's name)
        [*three_tiers(), group(2, "hard", 2), *rescheduled_in_s3()],
        1,
        None,
    ),
    (
        "hard network topology constrain and tasks in job rescheduled, can not allocate job when cross highestTierAllowed tier and hyperNodesInfo has three tier",  # noqa: E501 (Volcano's name)
        [*three_tiers(), group(2, "hard", 1), *rescheduled_in_s3()],
        0,
        None,
    ),
    (
        "hard network topology constrain and tasks in job rescheduled, can not allocate job when cross highestTierAllowed tier",  # noqa: E501 (Volcano's name)
        [*two_leaves(), group(2, "hard", 1), *rescheduled()],
        0,
        None,
    ),
    (
        "hard network topology constrain and tasks in job rescheduled, can allocate job when LCAHyperNode is empty",  # noqa: E501 (Volcano's name)
        [*two_leaves(spine=False), group(2, "hard", 2), *rescheduled()],
        1,
        None,
    ),
    (
        "hard network topology constrain, can not allocate job when cross highestTierName tier",
        [*named_tiers(), group(3, "hard", "volcano.sh/task-spec"), *three_pending()],
        0,
        None,
    ),
    (
        "hard network topology constrain, can allocate job when the tier corresponding to highestTierName not reached",  # noqa: E501 (Volcano's name)
        [*named_tiers(), group(3, "hard", "volcano.sh/job-spec"), *three_pending()],
        3,
        None,
    ),
    (
        "hard network topology with highestTierName constrain and tasks in job rescheduled, can allocate job when here is no corresponding highestTierAllowed for highestTierName",  # noqa: E501 (Volcano's name)
        [*named_tiers(spine=False), group(2, "hard", "volcano.sh/hypercluster"), *rescheduled()],
        1,
        None,
    ),
]


def _label(objects: list[dict[str, Any]]) -> list[dict[str, Any]]:
    for obj in objects:
        if obj["kind"] == "Node" and obj["metadata"]["name"] == "s1-n2":
            obj["metadata"]["labels"] = {**obj["metadata"].get("labels", {}), "nodeRole": "master"}
    return objects


@pytest.mark.parametrize(("objects", "binds", "where"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_allocate_with_network_topologies(
    objects: list[dict[str, Any]], binds: int, where: dict[str, str] | None
) -> None:
    sched = run_conf([*_label(objects), queue("q1")], one_tier("allocate", PLUGINS))
    bound = {
        o["metadata"]["name"]: o["spec"].get("nodeName")
        for o in sched.informers.store.list("Pod")
        if o["spec"].get("nodeName")
    }
    running = (
        {"p1", "p2"} if any(o["kind"] == "Pod" and o["spec"].get("nodeName") for o in objects) else set()
    )
    newly = {k: v for k, v in bound.items() if k not in running}
    assert len(newly) == binds, newly
    if where:
        assert {k: newly[k] for k in where} == where


def test_node_level_score_with_network_topologies() -> None:
    """hard network topology constrain, allocate job to highest score hypeNode with node level binpack"""
    objects: list[dict[str, Any]] = [
        node("s0-n1", "4", "8Gi"),
        node("s0-n2", "8", "16Gi"),
        node("s1-n3", "4", "8Gi"),
        node("s1-n4", "8", "16Gi"),
        hyper_node("s0", 1, ["s0-n1", "s0-n2"]),
        hyper_node("s1", 1, ["s1-n3", "s1-n4"]),
        hyper_node("s2", 2, ["s0", "s1"], "HyperNode"),
        group(2, "hard", 1),
        queue("q1"),
    ]
    running = {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": "pg2", "namespace": "c1"},
        "spec": {"minMember": 2, "queue": "q1"},
        "status": {"phase": "Running"},
    }
    pods = [task("p1", "", "master"), task("p2", "", "worker")]
    pods[0]["spec"]["containers"][0]["resources"]["requests"] = {"cpu": "2", "memory": "4Gi"}
    pods[1]["spec"]["containers"][0]["resources"]["requests"] = {"cpu": "4", "memory": "8Gi"}
    others = [pod("p3", "s0-n1", "pg2", "2", "4Gi"), pod("p4", "s0-n2", "pg2", "4", "8Gi")]
    plugins = [
        {"name": "gang"},
        {"name": "predicates"},
        {"name": "binpack"},
        {"name": "network-topology-aware"},
    ]
    sched = run_conf([*objects, running, *pods, *others], one_tier("allocate", plugins))
    bound = {o["metadata"]["name"]: o["spec"].get("nodeName") for o in sched.informers.store.list("Pod")}
    # s0-n1 and s0-n2 run pods already: binpacking, at HyperNode level and then at node level, wants them.
    assert {k: bound[k] for k in ("p1", "p2")} == {"p1": "s0-n1", "p2": "s0-n2"}
