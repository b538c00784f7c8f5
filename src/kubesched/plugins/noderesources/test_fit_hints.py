"""NodeResourcesFit queueing hints.

The node table is upstream's ``Test_isSchedulableAfterNodeChange`` (case names verbatim; its
wrong-object cases have no counterpart here: hints get parsed objects). The pod table covers
``isSchedulableAfterPodEvent`` with in-place pod resizing on (its v1.34 default)."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from kubesched.api.objects import Node, Pod
from kubesched.framework.types import QueueingHint
from kubesched.plugins.noderesources.fit import NodeResourcesFit
from kubesched.plugins.testing import make_node, make_pod

EXT_A = "example.com/aaa"
EXT_B = "example.com/bbb"
Q, SKIP = QueueingHint.QUEUE, QueueingHint.QUEUE_SKIP


def node(resources: dict[str, str]) -> Node:
    # Upstream's node wrapper reports 32 pods with any capacity.
    return make_node("node", {"pods": "32", **resources})


@dataclass
class NodeCase:
    name: str
    pod: Pod
    old: Node | None
    new: Node
    want: QueueingHint


NODE_CASES = [
    NodeCase(
        "skip-queue-on-node-add-without-sufficient-resources",
        make_pod(containers=[{"memory": "2"}]),
        None,
        node({"memory": "1"}),
        SKIP,
    ),
    NodeCase(
        "skip-queue-on-node-add-without-required-resource-type",
        make_pod(containers=[{EXT_A: "1"}]),
        None,
        node({EXT_B: "1"}),
        SKIP,
    ),
    NodeCase(
        "queue-on-node-add-with-sufficient-resources",
        make_pod(containers=[{"memory": "2", EXT_A: "1"}]),
        None,
        node({"memory": "4", EXT_A: "2"}),
        Q,
    ),
    NodeCase(
        "skip-queue-on-node-unrelated-changes",
        make_pod(containers=[{"memory": "2", EXT_A: "1"}]),
        node({"memory": "2", EXT_A: "2"}),
        node({"memory": "2", EXT_A: "1", EXT_B: "2"}),
        SKIP,
    ),
    NodeCase(
        "queue-on-pod-requested-resources-increase",
        make_pod(containers=[{"memory": "2", EXT_A: "1"}]),
        node({"memory": "2", EXT_A: "1"}),
        node({"memory": "2", EXT_A: "2"}),
        Q,
    ),
    NodeCase(
        "skip-queue-on-node-changes-from-suitable-to-unsuitable",
        make_pod(containers=[{"memory": "2", EXT_A: "1"}]),
        node({"memory": "4", EXT_A: "2"}),
        node({"memory": "1", EXT_A: "2"}),
        SKIP,
    ),
    NodeCase(
        "queue-on-node-changes-from-unsuitable-to-suitable",
        make_pod(containers=[{"memory": "2", EXT_A: "1"}]),
        node({"memory": "1", EXT_A: "2"}),
        node({"memory": "4", EXT_A: "2"}),
        Q,
    ),
]


@pytest.mark.parametrize("case", NODE_CASES, ids=[c.name for c in NODE_CASES])
def test_is_schedulable_after_node_change(case: NodeCase) -> None:
    assert NodeResourcesFit(None).is_schedulable_after_node_change(case.pod, case.old, case.new) == case.want


@dataclass
class PodCase:
    name: str
    pod: Pod
    old: Pod
    new: Pod | None
    want: QueueingHint


TARGET = make_pod("target", containers=[{"cpu": "1"}])
PENDING = make_pod("other", containers=[{"cpu": "1"}])
ASSIGNED = make_pod("other", containers=[{"cpu": "1"}], node_name="fake")
SCALED = make_pod("other", containers=[{"cpu": "500m"}], node_name="fake")
MEMORY_SCALED = make_pod("other", containers=[{"cpu": "1", "memory": "1"}], node_name="fake")
MORE_MEMORY = make_pod("other", containers=[{"cpu": "1", "memory": "2"}], node_name="fake")

POD_CASES = [
    PodCase("queue-on-deleted", TARGET, ASSIGNED, None, Q),
    PodCase("skip-queue-on-unscheduled-pod-deleted", TARGET, PENDING, None, SKIP),
    PodCase("skip-queue-on-unchanged-requests", TARGET, ASSIGNED, ASSIGNED, SKIP),
    PodCase("skip-queue-on-other-unscheduled-pod", TARGET, PENDING, PENDING, SKIP),
    PodCase("skip-queue-on-other-resource-scale-down", TARGET, MORE_MEMORY, MEMORY_SCALED, SKIP),
    PodCase("queue-on-target-pod-resource-scale-down", TARGET, ASSIGNED, SCALED, Q),
]


@pytest.mark.parametrize("case", POD_CASES, ids=[c.name for c in POD_CASES])
def test_is_schedulable_after_pod_event(case: PodCase) -> None:
    assert NodeResourcesFit(None).is_schedulable_after_pod_event(case.pod, case.old, case.new) == case.want
