"""NodeUnschedulable: table after upstream's node_unschedulable_test.go.

A cordoned node (``spec.unschedulable``) rejects pods as unresolvable with ``node(s) were
unschedulable``, unless the pod tolerates the ``node.kubernetes.io/unschedulable:NoSchedule`` taint.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pytest

from kubesched.framework.status import Code, Status
from kubesched.plugins.nodeunschedulable import ERR_REASON_UNSCHEDULABLE, NodeUnschedulable
from kubesched.plugins.testing import build_snapshot, make_node, make_pod, run_filter

UNSCHEDULABLE = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ["node(s) were unschedulable"])
TAINT_KEY = "node.kubernetes.io/unschedulable"


@dataclass
class Case:
    name: str
    unschedulable: bool
    tolerations: Sequence[Mapping[str, Any]] = ()
    want: Status | None = None


CASES = [
    Case(
        "Does not schedule pod to unschedulable node (node.Spec.Unschedulable==true)",
        True,
        want=UNSCHEDULABLE,
    ),
    Case("Schedule pod to normal node", False),
    Case(
        "Schedule pod with toleration to unschedulable node (node.Spec.Unschedulable==true)",
        True,
        [{"key": TAINT_KEY, "effect": "NoSchedule"}],
    ),
    Case(
        "Schedule pod with Exists toleration to unschedulable node",
        True,
        [{"key": TAINT_KEY, "operator": "Exists", "effect": "NoSchedule"}],
    ),
    Case("A toleration for every taint also covers a cordoned node", True, [{"operator": "Exists"}]),
    Case(
        "A toleration with another effect does not help",
        True,
        [{"key": TAINT_KEY, "operator": "Exists", "effect": "NoExecute"}],
        UNSCHEDULABLE,
    ),
    Case(
        "A toleration for another key does not help",
        True,
        [{"key": "example.com/other", "operator": "Exists", "effect": "NoSchedule"}],
        UNSCHEDULABLE,
    ),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_node_unschedulable(case: Case) -> None:
    snapshot = build_snapshot([make_node("node", {"cpu": "1"}, unschedulable=case.unschedulable)])
    pod = make_pod("pod", tolerations=case.tolerations)
    assert run_filter(NodeUnschedulable(), pod, snapshot) == {"node": case.want}


def test_only_cordoned_nodes_fail() -> None:
    assert ERR_REASON_UNSCHEDULABLE == "node(s) were unschedulable"
    nodes = [
        make_node("a", {"cpu": "1"}),
        make_node("b", {"cpu": "1"}, unschedulable=True),
        make_node("c", {"cpu": "1"}),
    ]
    got = run_filter(NodeUnschedulable(), make_pod("p"), build_snapshot(nodes))
    assert got == {"a": None, "b": UNSCHEDULABLE, "c": None}
