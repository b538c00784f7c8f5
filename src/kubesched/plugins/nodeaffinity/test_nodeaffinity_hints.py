"""NodeAffinity queueing hint: upstream ``Test_isSchedulableAfterNodeChange`` (case names verbatim; the
wrong-object cases have no counterpart here: hints get parsed objects)."""

from __future__ import annotations

from typing import Any

import pytest

from kubesched.api.objects import Node, Pod
from kubesched.framework.plugin_args import NodeAffinityArgs
from kubesched.framework.types import QueueingHint
from kubesched.plugins.nodeaffinity import NodeAffinity
from kubesched.plugins.testing import make_node, pod_dict

Q, SKIP = QueueingHint.QUEUE, QueueingHint.QUEUE_SKIP
FOO_IN_BAR = {"matchExpressions": [{"key": "foo", "operator": "In", "values": ["bar"]}]}
ENFORCED = {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [FOO_IN_BAR]}}


def pod_with_node_affinity() -> Pod:
    raw = pod_dict("pod")
    raw["spec"]["affinity"] = {"nodeAffinity": ENFORCED}
    return Pod.from_dict(raw)


def node(labels: dict[str, str] | None = None, capacity: dict[str, str] | None = None) -> Node:
    return make_node("node", capacity, labels=labels)


CASES: list[tuple[str, dict[str, Any] | None, Node | None, Node, QueueingHint]] = [
    ("skip-queue-on-add", None, None, node(), SKIP),
    ("queue-on-add", None, None, node({"foo": "bar"}), Q),
    ("skip-unrelated-changes", None, node(), node(capacity={"cpu": "1"}), SKIP),
    ("skip-unrelated-changes-on-labels", None, node(), node({"k": "v"}), SKIP),
    (
        "skip-labels-changes-on-node-from-suitable-to-unsuitable",
        None,
        node({"foo": "bar"}),
        node({"k": "v"}),
        SKIP,
    ),
    ("queue-on-labels-change-makes-pod-schedulable", None, node(), node({"foo": "bar"}), Q),
    ("skip-queue-on-add-scheduler-enforced-node-affinity", ENFORCED, None, node(), SKIP),
    ("queue-on-add-scheduler-enforced-node-affinity", ENFORCED, None, node({"foo": "bar"}), Q),
]


@pytest.mark.parametrize(("name", "added", "old", "new", "want"), CASES, ids=[c[0] for c in CASES])
def test_is_schedulable_after_node_change(
    name: str, added: dict[str, Any] | None, old: Node | None, new: Node, want: QueueingHint
) -> None:
    plugin = NodeAffinity(NodeAffinityArgs(added_affinity=added))
    assert plugin.is_schedulable_after_node_change(pod_with_node_affinity(), old, new) == want
