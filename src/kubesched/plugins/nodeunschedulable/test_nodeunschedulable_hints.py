"""NodeUnschedulable queueing hint: upstream ``TestIsSchedulableAfterNodeChange`` (case names verbatim;
the wrong-object cases have no counterpart here: hints get parsed objects)."""

from __future__ import annotations

import pytest

from kubesched.api.objects import Node
from kubesched.framework.types import QueueingHint
from kubesched.plugins.nodeunschedulable import NodeUnschedulable
from kubesched.plugins.testing import make_node, make_pod

Q, SKIP = QueueingHint.QUEUE, QueueingHint.QUEUE_SKIP
NOT_READY = [{"key": "node.kubernetes.io/not-ready", "effect": "NoExecute"}]

CASES: list[tuple[str, Node | None, Node, QueueingHint]] = [
    ("skip-queue-on-unschedulable-node-added", None, make_node("n", unschedulable=True), SKIP),
    ("queue-on-schedulable-node-added", None, make_node("n"), Q),
    (
        "skip-unrelated-change",
        make_node("n", unschedulable=True),
        make_node("n", unschedulable=True, taints=NOT_READY),
        SKIP,
    ),
    ("queue-on-unschedulable-field-change", make_node("n", unschedulable=True), make_node("n"), Q),
]


@pytest.mark.parametrize(("name", "old", "new", "want"), CASES, ids=[c[0] for c in CASES])
def test_is_schedulable_after_node_change(name: str, old: Node | None, new: Node, want: QueueingHint) -> None:
    assert NodeUnschedulable().is_schedulable_after_node_change(make_pod(), old, new) == want
