"""TaintToleration: tables after upstream's taint_toleration_test.go (TestTaintTolerationScore,
TestTaintTolerationFilter), kube-scheduler v1.34 semantics.

Filter: a NoSchedule / NoExecute taint the pod does not tolerate makes the node unresolvable, with the
generic reason ``node(s) had untolerated taint(s)`` (upstream stopped naming the taint in v1.34.x).
Score: count of untolerated PreferNoSchedule taints, then DefaultNormalizeScore reversed, so the node
with the most such taints gets 0 and nodes without any get 100.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pytest

from kubesched.framework.status import Code, Status
from kubesched.plugins.tainttoleration import ERR_REASON_UNTOLERATED, TaintToleration
from kubesched.plugins.testing import build_snapshot, make_node, make_pod, run_filter, run_score

Taints = Sequence[Mapping[str, Any]]


def taint(key: str, value: str, effect: str) -> dict[str, str]:
    return {"key": key, "value": value, "effect": effect}


def tol(key: str, value: str = "", effect: str = "", operator: str = "Equal") -> dict[str, str]:
    out = {"key": key, "operator": operator, "effect": effect}
    if value:
        out["value"] = value
    return out


UNTOLERATED = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, [ERR_REASON_UNTOLERATED])


@dataclass
class ScoreCase:
    name: str
    tolerations: Sequence[Mapping[str, Any]]
    nodes: Sequence[tuple[str, Taints]]
    want: dict[str, int]


SCORE_CASES = [
    ScoreCase(
        "node with taints tolerated by the pod, gets a higher score than those node with intolerable taints",
        [tol("foo", "bar", "PreferNoSchedule")],
        [
            ("nodeA", [taint("foo", "bar", "PreferNoSchedule")]),
            ("nodeB", [taint("foo", "blah", "PreferNoSchedule")]),
        ],
        {"nodeA": 100, "nodeB": 0},
    ),
    ScoreCase(
        "the nodes that all of their taints are tolerated by the pod, get the same score, no matter how many "
        "tolerable taints a node has",
        [tol("cpu-type", "arm64", "PreferNoSchedule"), tol("disk-type", "ssd", "PreferNoSchedule")],
        [
            ("nodeA", []),
            ("nodeB", [taint("cpu-type", "arm64", "PreferNoSchedule")]),
            (
                "nodeC",
                [
                    taint("cpu-type", "arm64", "PreferNoSchedule"),
                    taint("disk-type", "ssd", "PreferNoSchedule"),
                ],
            ),
        ],
        {"nodeA": 100, "nodeB": 100, "nodeC": 100},
    ),
    ScoreCase(
        # counts 0, 1, 2 -> reverse normalize: 100 - 100*c//2
        "the more intolerable taints a node has, the lower score it gets",
        [tol("foo", "bar", "PreferNoSchedule")],
        [
            ("nodeA", []),
            ("nodeB", [taint("cpu-type", "arm64", "PreferNoSchedule")]),
            (
                "nodeC",
                [
                    taint("cpu-type", "arm64", "PreferNoSchedule"),
                    taint("disk-type", "ssd", "PreferNoSchedule"),
                ],
            ),
        ],
        {"nodeA": 100, "nodeB": 50, "nodeC": 0},
    ),
    ScoreCase(
        "only taints and tolerations that have effect PreferNoSchedule are checked by taints-tolerations "
        "priority function",
        [tol("cpu-type", "arm64", "NoSchedule"), tol("disk-type", "ssd", "NoSchedule")],
        [
            ("nodeA", []),
            ("nodeB", [taint("cpu-type", "arm64", "NoSchedule")]),
            (
                "nodeC",
                [
                    taint("cpu-type", "arm64", "PreferNoSchedule"),
                    taint("disk-type", "ssd", "PreferNoSchedule"),
                ],
            ),
        ],
        {"nodeA": 100, "nodeB": 100, "nodeC": 0},
    ),
    ScoreCase(
        "Default behaviour No taints and tolerations, lands on node with no taints",
        [],
        [("nodeA", []), ("nodeB", [taint("cpu-type", "arm64", "PreferNoSchedule")])],
        {"nodeA": 100, "nodeB": 0},
    ),
    ScoreCase(
        # A toleration with an empty effect matches PreferNoSchedule taints too.
        "toleration with empty effect counts for scoring",
        [tol("foo", "bar")],
        [
            ("nodeA", [taint("foo", "bar", "PreferNoSchedule")]),
            ("nodeB", [taint("x", "y", "PreferNoSchedule")]),
        ],
        {"nodeA": 100, "nodeB": 0},
    ),
    ScoreCase(
        "no PreferNoSchedule taints anywhere: every node gets the maximum",
        [],
        [("nodeA", []), ("nodeB", [taint("dedicated", "user1", "NoSchedule")])],
        {"nodeA": 100, "nodeB": 100},
    ),
]


@pytest.mark.parametrize("case", SCORE_CASES, ids=lambda c: c.name)
def test_taint_toleration_score(case: ScoreCase) -> None:
    nodes = [make_node(name, {"cpu": "1"}, taints=taints) for name, taints in case.nodes]
    snapshot = build_snapshot(nodes)
    pod = make_pod("pod1", tolerations=case.tolerations)
    assert run_score(TaintToleration(), pod, snapshot) == case.want


@dataclass
class FilterCase:
    name: str
    tolerations: Sequence[Mapping[str, Any]]
    taints: Taints
    want: Status | None = None


FILTER_CASES = [
    FilterCase(
        "A pod having no tolerations can't be scheduled onto a node with nonempty taints",
        [],
        [taint("dedicated", "user1", "NoSchedule")],
        UNTOLERATED,
    ),
    FilterCase(
        "A pod which can be scheduled on a dedicated node assigned to user1 with effect NoSchedule",
        [tol("dedicated", "user1", "NoSchedule")],
        [taint("dedicated", "user1", "NoSchedule")],
    ),
    FilterCase(
        "A pod which can't be scheduled on a dedicated node assigned to user2 with effect NoSchedule",
        [tol("dedicated", "user2", "NoSchedule")],
        [taint("dedicated", "user1", "NoSchedule")],
        UNTOLERATED,
    ),
    FilterCase(
        "A pod can be scheduled onto the node, with a toleration uses operator Exists that tolerates the "
        "taints",
        [tol("foo", effect="NoSchedule", operator="Exists")],
        [taint("foo", "bar", "NoSchedule")],
    ),
    FilterCase(
        "A pod has multiple tolerations, node has multiple taints, all the taints are tolerated",
        [tol("dedicated", "user2", "NoSchedule"), tol("foo", effect="NoSchedule", operator="Exists")],
        [taint("dedicated", "user2", "NoSchedule"), taint("foo", "bar", "NoSchedule")],
    ),
    FilterCase(
        "A pod has a toleration that keys and values match the taint on the node, but (non-empty) effect "
        "doesn't match, can't be scheduled onto the node",
        [tol("foo", "bar", "PreferNoSchedule")],
        [taint("foo", "bar", "NoSchedule")],
        UNTOLERATED,
    ),
    FilterCase(
        "The pod has a toleration that keys and values match the taint on the node, the effect of toleration "
        "is empty, and the effect of taint is NoSchedule. Pod can be scheduled onto the node",
        [tol("foo", "bar")],
        [taint("foo", "bar", "NoSchedule")],
    ),
    FilterCase(
        "The pod has a toleration that key and value don't match the taint on the node, but the effect of "
        "taint on node is PreferNoSchedule. Pod can be scheduled onto the node",
        [tol("dedicated", "user2", "NoSchedule")],
        [taint("dedicated", "user1", "PreferNoSchedule")],
    ),
    FilterCase(
        "The pod has no toleration, but the effect of taint on node is PreferNoSchedule",
        [],
        [taint("dedicated", "user1", "PreferNoSchedule")],
    ),
    FilterCase(
        "NoExecute taints repel pods like NoSchedule ones",
        [tol("dedicated", "user1", "NoSchedule")],
        [taint("dedicated", "user1", "NoExecute")],
        UNTOLERATED,
    ),
    FilterCase(
        "an empty key with Exists tolerates every taint",
        [{"operator": "Exists"}],
        [taint("dedicated", "user1", "NoSchedule"), taint("foo", "bar", "NoExecute")],
    ),
    FilterCase(
        "one untolerated taint among tolerated ones is enough",
        [tol("dedicated", "user1", "NoSchedule")],
        [taint("dedicated", "user1", "NoSchedule"), taint("foo", "bar", "NoSchedule")],
        UNTOLERATED,
    ),
]


@pytest.mark.parametrize("case", FILTER_CASES, ids=lambda c: c.name)
def test_taint_toleration_filter(case: FilterCase) -> None:
    snapshot = build_snapshot([make_node("nodeA", {"cpu": "1"}, taints=case.taints)])
    pod = make_pod("pod1", tolerations=case.tolerations)
    assert run_filter(TaintToleration(), pod, snapshot) == {"nodeA": case.want}


def test_filter_reason_does_not_name_the_taint() -> None:
    # The reason lands in pod status and events: it must not leak taint keys or values.
    snapshot = build_snapshot(
        [make_node("n", {"cpu": "1"}, taints=[taint("secret-team", "s3cr3t", "NoSchedule")])]
    )
    status = run_filter(TaintToleration(), make_pod("p"), snapshot)["n"]
    assert status is not None
    assert "secret-team" not in status.message
    assert "s3cr3t" not in status.message


def test_filter_over_many_nodes_and_repeated_pods() -> None:
    # Nodes sharing a taint list share one evaluation; the verdicts must still be per node, and a
    # second pod with other tolerations must not reuse the first pod's answers.
    nodes = [
        make_node("plain", {"cpu": "1"}),
        make_node("gpu-1", {"cpu": "1"}, taints=[taint("nvidia.com/gpu", "present", "NoSchedule")]),
        make_node("gpu-2", {"cpu": "1"}, taints=[taint("nvidia.com/gpu", "present", "NoSchedule")]),
        make_node("soft", {"cpu": "1"}, taints=[taint("spot", "true", "PreferNoSchedule")]),
    ]
    snapshot = build_snapshot(nodes)
    plugin = TaintToleration()
    plain_pod = make_pod("plain-pod")
    gpu_pod = make_pod("gpu-pod", tolerations=[tol("nvidia.com/gpu", effect="NoSchedule", operator="Exists")])
    assert run_filter(plugin, plain_pod, snapshot) == {
        "plain": None,
        "gpu-1": UNTOLERATED,
        "gpu-2": UNTOLERATED,
        "soft": None,
    }
    assert run_filter(plugin, gpu_pod, snapshot) == {
        "plain": None,
        "gpu-1": None,
        "gpu-2": None,
        "soft": None,
    }
    assert run_filter(plugin, plain_pod, snapshot)["gpu-2"] == UNTOLERATED
