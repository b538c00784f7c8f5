"""TaintToleration queueing hints: upstream ``TestIsSchedulableAfterNodeChange`` and
``Test_isSchedulableAfterPodChange`` (case names verbatim; the wrong-object cases have no
counterpart here: hints get parsed objects)."""

from __future__ import annotations

from typing import Any

import pytest

from kubesched.api.objects import Node, Pod
from kubesched.framework.types import QueueingHint
from kubesched.plugins.tainttoleration import TaintToleration
from kubesched.plugins.testing import make_node, make_pod

Q, SKIP = QueueingHint.QUEUE, QueueingHint.QUEUE_SKIP


def tainted(*values: str) -> Node:
    return make_node(
        "nodeA",
        {"cpu": "1"},
        taints=[{"key": "dedicated", "value": v, "effect": "NoSchedule"} for v in values],
    )


def tolerating(value: str) -> Pod:
    tol = {"key": "dedicated", "operator": "Equal", "value": value, "effect": "NoSchedule"}
    return make_pod("pod1", tolerations=[tol])


NODE_CASES: list[tuple[str, Pod, Node | None, Node, QueueingHint]] = [
    ("skip-queue-on-untoleratedtaint-node-added", tolerating("user2"), None, tainted("user1"), SKIP),
    ("queue-on-toleratedtaint-node-added", tolerating("user2"), None, tainted("user2"), Q),
    ("skip-unrelated-change", tolerating("user2"), tainted("user1"), tainted("user1", "user3"), SKIP),
    ("queue-on-taint-change", tolerating("user2"), tainted("user1"), tainted("user2"), Q),
]


@pytest.mark.parametrize(("name", "pod", "old", "new", "want"), NODE_CASES, ids=[c[0] for c in NODE_CASES])
def test_is_schedulable_after_node_change(
    name: str, pod: Pod, old: Node | None, new: Node, want: Any
) -> None:
    assert TaintToleration().is_schedulable_after_node_change(pod, old, new) == want


POD1 = make_pod("pod-1", namespace="ns-1", uid="uid0")
NO_SCHEDULE_FOO = [{"key": "foo", "effect": "NoSchedule"}]


def _relabelled(pod: Pod) -> Pod:
    raw = dict(pod.raw)
    raw["metadata"] = {**raw["metadata"], "labels": {"foo": "bar"}}
    return Pod.from_dict(raw)


POD_CASES: list[tuple[str, Pod, Pod, Pod, QueueingHint]] = [
    (
        "skip-updates-other-pod",
        POD1,
        make_pod("pod-2", namespace="ns-1", uid="uid1"),
        make_pod("pod-2", namespace="ns-1", uid="uid1", tolerations=NO_SCHEDULE_FOO),
        SKIP,
    ),
    ("skip-updates-not-toleration", POD1, POD1, _relabelled(POD1), SKIP),
    (
        "queue-on-toleration-added",
        POD1,
        POD1,
        make_pod("pod-1", namespace="ns-1", uid="uid0", tolerations=NO_SCHEDULE_FOO),
        Q,
    ),
]


@pytest.mark.parametrize(("name", "pod", "old", "new", "want"), POD_CASES, ids=[c[0] for c in POD_CASES])
def test_is_schedulable_after_pod_change(name: str, pod: Pod, old: Pod, new: Pod, want: Any) -> None:
    assert TaintToleration().is_schedulable_after_pod_toleration_change(pod, old, new) == want
