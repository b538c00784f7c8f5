"""NodeName: table after upstream's node_name_test.go.

A pod with ``spec.nodeName`` fits only the node of that name; every other node is unresolvable with
``node(s) didn't match the requested node name``. A pod without a node name fits everywhere.
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from kubesched.framework.status import Code, Status
from kubesched.plugins.nodename import ERR_REASON, NodeName
from kubesched.plugins.testing import build_snapshot, make_node, make_pod, run_filter

MISMATCH = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ["node(s) didn't match the requested node name"])


@dataclass
class Case:
    name: str
    pod_node_name: str
    node: str
    want: Status | None = None


CASES = [
    Case("no host specified", "", "foo"),
    Case("host matches", "foo", "foo"),
    Case("host doesn't match", "bar", "foo", MISMATCH),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_node_name(case: Case) -> None:
    snapshot = build_snapshot([make_node(case.node, {"cpu": "1"})])
    pod = make_pod("pod", node_name=case.pod_node_name)
    assert run_filter(NodeName(), pod, snapshot) == {case.node: case.want}


def test_only_the_named_node_passes() -> None:
    assert ERR_REASON == "node(s) didn't match the requested node name"
    snapshot = build_snapshot([make_node(n, {"cpu": "1"}) for n in ("a", "b", "c")])
    got = run_filter(NodeName(), make_pod("p", node_name="b"), snapshot)
    assert got == {"a": MISMATCH, "b": None, "c": MISMATCH}


def test_named_node_missing_rejects_every_node() -> None:
    snapshot = build_snapshot([make_node(n, {"cpu": "1"}) for n in ("a", "b")])
    got = run_filter(NodeName(), make_pod("p", node_name="gone"), snapshot)
    assert got == {"a": MISMATCH, "b": MISMATCH}
