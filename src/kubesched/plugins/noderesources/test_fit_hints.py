"""NodeResourcesFit queueing hints.

Upstream's ``Test_isSchedulableAfterNodeChange`` and ``Test_isSchedulableAfterPodChange`` (case names
verbatim). Left out: the wrong-object cases (hints get parsed objects here) and the case with in-place
pod resizing disabled (kubesched follows its v1.34 default, on)."""

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


def cpu_pod(name: str, cpu: str | None = None, *, node: str = "", memory: str | None = None) -> Pod:
    requests = {k: v for k, v in (("cpu", cpu), ("memory", memory)) if v is not None}
    return make_pod(name, uid=name, containers=[requests], node_name=node)


def pod_level(name: str, requests: dict[str, str], *, node: str = "") -> Pod:
    return make_pod(name, uid=name, containers=[None], pod_requests=requests, node_name=node)


POD_CASES = [
    PodCase("queue-on-other-pod-deleted", cpu_pod("pod1", "1"), cpu_pod("pod2", "1", node="fake"), None, Q),
    PodCase("skip-queue-on-unscheduled-pod-deleted", cpu_pod("pod1"), cpu_pod("pod2"), None, SKIP),
    PodCase(
        "skip-queue-on-other-unscheduled-pod",
        cpu_pod("pod1", "1"),
        cpu_pod("pod2", "2"),
        cpu_pod("pod2", "1"),
        SKIP,
    ),
    PodCase(
        "skip-queue-on-other-pod-unrelated-resource-scaled-down",
        cpu_pod("pod1", "1"),
        cpu_pod("pod2", memory="2", node="fake"),
        cpu_pod("pod2", memory="1", node="fake"),
        SKIP,
    ),
    PodCase(
        "skip-queue-on-other-pod-unrelated-pod-level-resource-scaled-down",
        pod_level("pod1", {"cpu": "1"}),
        pod_level("pod2", {"memory": "2"}, node="fake"),
        pod_level("pod2", {"memory": "1"}, node="fake"),
        SKIP,
    ),
    PodCase(
        "queue-on-other-pod-some-resource-scale-down",
        cpu_pod("pod1", "1"),
        cpu_pod("pod2", "2", node="fake"),
        cpu_pod("pod2", "1", node="fake"),
        Q,
    ),
    PodCase(
        "queue-on-other-pod-some-pod-level-resource-scale-down",
        pod_level("pod1", {"cpu": "1"}),
        pod_level("pod2", {"cpu": "2"}, node="fake"),
        pod_level("pod2", {"cpu": "1"}, node="fake"),
        Q,
    ),
    PodCase(
        "queue-on-target-pod-some-resource-scale-down",
        cpu_pod("pod1", "1"),
        cpu_pod("pod1", "2"),
        cpu_pod("pod1", "1"),
        Q,
    ),
    PodCase(
        "queue-on-target-pod-some-pod-level-resource-scale-down",
        pod_level("pod1", {"cpu": "1"}),
        pod_level("pod1", {"cpu": "2"}),
        pod_level("pod1", {"cpu": "1"}),
        Q,
    ),
]


@pytest.mark.parametrize("case", POD_CASES, ids=[c.name for c in POD_CASES])
def test_is_schedulable_after_pod_event(case: PodCase) -> None:
    assert NodeResourcesFit(None).is_schedulable_after_pod_event(case.pod, case.old, case.new) == case.want
