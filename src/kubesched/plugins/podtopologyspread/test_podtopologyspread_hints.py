"""PodTopologySpread queueing hints: upstream ``Test_isSchedulableAfterNodeChange`` and
``Test_isSchedulableAfterPodChange`` (case names verbatim)."""

from __future__ import annotations

from typing import Any

import pytest

from kubesched.api.objects import Node, Pod
from kubesched.framework.types import QueueingHint
from kubesched.plugins.podtopologyspread import PodTopologySpread
from kubesched.plugins.testing import make_node, pod_dict

Q, SKIP = QueueingHint.QUEUE, QueueingHint.QUEUE_SKIP


def constraint(key: str, selector_key: str = "foo", taints_policy: str | None = None) -> dict[str, Any]:
    c: dict[str, Any] = {
        "maxSkew": 1,
        "topologyKey": key,
        "whenUnsatisfiable": "DoNotSchedule",
        "labelSelector": {"matchExpressions": [{"key": selector_key, "operator": "Exists"}]},
    }
    if taints_policy is not None:
        c["nodeTaintsPolicy"] = taints_policy
    return c


def pod(
    uid: str,
    labels: dict[str, str] | None = None,
    *constraints: dict[str, Any],
    node: str = "",
    namespace: str = "default",
    tolerations: list[dict[str, Any]] | None = None,
) -> Pod:
    raw = pod_dict(uid, uid=uid, node_name=node, namespace=namespace, tolerations=tolerations or [])
    raw["metadata"]["labels"] = labels or {}
    if constraints:
        raw["spec"]["topologySpreadConstraints"] = list(constraints)
    return Pod.from_dict(raw)


def node(labels: dict[str, str], taint: str | None = None) -> Node:
    taints = [{"key": taint, "value": "bbb", "effect": "NoSchedule"}] if taint else []
    return make_node("node-a", labels=labels, taints=taints)


ZONE = constraint("zone")
ZONE_NODE = (constraint("zone"), constraint("node"))

NODE_CASES: list[tuple[str, Pod, Node | None, Node | None, QueueingHint]] = [
    (
        "node updates label which matches topologyKey",
        pod("p", None, ZONE),
        node({"zone": "zone1"}),
        node({"zone": "zone2"}),
        Q,
    ),
    (
        "node that doesn't match topologySpreadConstraints updates non-related label",
        pod("p", None, ZONE),
        node({"foo": "bar1"}),
        node({"foo": "bar2"}),
        SKIP,
    ),
    (
        "node that match topologySpreadConstraints adds non-related label",
        pod("p", None, *ZONE_NODE),
        node({"zone": "zone1", "node": "node1", "foo": "bar"}),
        node({"zone": "zone1", "node": "node1"}),
        SKIP,
    ),
    ("create node with non-related labels", pod("p", None, ZONE), None, node({"foo": "bar"}), SKIP),
    ("create node with related labels", pod("p", None, ZONE), None, node({"zone": "zone1"}), Q),
    ("delete node with non-related labels", pod("p", None, ZONE), node({"foo": "bar"}), None, SKIP),
    ("delete node with related labels", pod("p", None, ZONE), node({"zone": "zone1"}), None, Q),
    (
        "add node with related labels that only match one of topologySpreadConstraints",
        pod("p", None, *ZONE_NODE),
        None,
        node({"zone": "zone1"}),
        SKIP,
    ),
    (
        "add node with related labels that match all topologySpreadConstraints",
        pod("p", None, *ZONE_NODE),
        None,
        node({"zone": "zone1", "node": "node1"}),
        Q,
    ),
    (
        "update node with related labels that only match one of topologySpreadConstraints",
        pod("p", None, *ZONE_NODE),
        node({"zone": "zone1"}),
        node({"zone": "zone1"}),
        SKIP,
    ),
    (
        "update node with related labels that match all topologySpreadConstraints",
        pod("p", None, *ZONE_NODE),
        node({"zone": "zone1", "node": "node1"}),
        node({"zone": "zone1", "node": "node2"}),
        Q,
    ),
    (
        "update node with different taints that match all topologySpreadConstraints",
        pod("p", None, *ZONE_NODE),
        node({"zone": "zone1", "node": "node1"}, "aaa"),
        node({"zone": "zone1", "node": "node1"}, "ccc"),
        Q,
    ),
    (
        "update node with different taints that only match one of topologySpreadConstraints",
        pod("p", None, *ZONE_NODE),
        node({"node": "node1"}, "aaa"),
        node({"node": "node1"}, "ccc"),
        SKIP,
    ),
]


@pytest.mark.parametrize(("name", "target", "old", "new", "want"), NODE_CASES, ids=[c[0] for c in NODE_CASES])
def test_is_schedulable_after_node_change(
    name: str, target: Pod, old: Node | None, new: Node | None, want: QueueingHint
) -> None:
    assert PodTopologySpread().is_schedulable_after_node_change(target, old, new) == want


FOO = {"foo": ""}
TARGET = pod("p", FOO, ZONE)
MULTI = pod("p", FOO, constraint("zone"), constraint("node", "bar"))
UNSCHEDULABLE_TAINT = [{"key": "node.kubernetes.io/unschedulable", "operator": "Exists"}]


def with_policy(policy: str, labels: dict[str, str] | None = FOO) -> Pod:
    return pod("p", labels, constraint("zone", taints_policy=policy), constraint("node", "bar"))


POD_CASES: list[tuple[str, Pod, Pod | None, Pod | None, QueueingHint]] = [
    (
        "add pod with labels match topologySpreadConstraints selector",
        TARGET,
        None,
        pod("p2", FOO, node="fake-node"),
        Q,
    ),
    ("add un-scheduled pod", TARGET, None, pod("p2", FOO), SKIP),
    ("update un-scheduled pod", TARGET, pod("p2", {"bar": ""}), pod("p2", FOO), SKIP),
    ("delete un-scheduled pod", TARGET, pod("p2", FOO), None, SKIP),
    (
        "add pod with different namespace",
        TARGET,
        None,
        pod("p2", FOO, node="fake-node", namespace="fake-namespace"),
        SKIP,
    ),
    (
        "add pod with labels don't match topologySpreadConstraints selector",
        TARGET,
        None,
        pod("p2", {"bar": ""}, node="fake-node"),
        SKIP,
    ),
    (
        "delete pod with labels that match topologySpreadConstraints selector",
        TARGET,
        pod("p2", FOO, node="fake-node"),
        None,
        Q,
    ),
    (
        "delete pod with labels that don't match topologySpreadConstraints selector",
        TARGET,
        pod("p2", {"bar": ""}, node="fake-node"),
        None,
        SKIP,
    ),
    (
        "update pod's non-related label",
        TARGET,
        pod("p2", {"foo": "", "bar": "bar1"}, node="fake-node"),
        pod("p2", {"foo": "", "bar": "bar2"}, node="fake-node"),
        SKIP,
    ),
    (
        "add pod's label that matches topologySpreadConstraints selector",
        TARGET,
        pod("p2", None, node="fake-node"),
        pod("p2", FOO, node="fake-node"),
        Q,
    ),
    (
        "delete pod label that matches topologySpreadConstraints selector",
        TARGET,
        pod("p2", FOO, node="fake-node"),
        pod("p2", None, node="fake-node"),
        Q,
    ),
    (
        "change pod's label that matches topologySpreadConstraints selector",
        TARGET,
        pod("p2", {"foo": "foo1"}, node="fake-node"),
        pod("p2", {"foo": "foo2"}, node="fake-node"),
        SKIP,
    ),
    (
        "change pod's label that doesn't match topologySpreadConstraints selector",
        TARGET,
        pod("p2", {"foo": "", "bar": "bar1"}, node="fake-node"),
        pod("p2", {"foo": "", "bar": "bar2"}, node="fake-node"),
        SKIP,
    ),
    (
        "add pod's label that matches topologySpreadConstraints selector with multi topologySpreadConstraints",  # noqa: E501
        MULTI,
        pod("p2", FOO, node="fake-node"),
        pod("p2", {"foo": "", "bar": "bar2"}, node="fake-node"),
        Q,
    ),
    (
        "change pod's label that doesn't match topologySpreadConstraints selector with multi topologySpreadConstraints",  # noqa: E501
        MULTI,
        pod("p2", FOO, node="fake-node"),
        pod("p2", {"foo": "", "baz": ""}, node="fake-node"),
        SKIP,
    ),
    (
        "change pod's label that match topologySpreadConstraints selector with multi topologySpreadConstraints",  # noqa: E501
        MULTI,
        pod("p2", {"foo": "", "bar": ""}, node="fake-node"),
        pod("p2", {"foo": "", "bar": "bar2"}, node="fake-node"),
        SKIP,
    ),
    (
        "the unschedulable Pod has topologySpreadConstraint with NodeTaintsPolicy:Honor and has got a new toleration",  # noqa: E501
        with_policy("Honor"),
        pod("p", FOO),
        pod("p", FOO, tolerations=UNSCHEDULABLE_TAINT),
        Q,
    ),
    (
        "the unschedulable Pod has topologySpreadConstraint without NodeTaintsPolicy:Honor and has got a new toleration",  # noqa: E501
        with_policy("Ignore"),
        pod("p", FOO),
        pod("p", FOO, tolerations=UNSCHEDULABLE_TAINT),
        SKIP,
    ),
    (
        "the unschedulable Pod has topologySpreadConstraint and has got a new label matching the selector of the constraint",  # noqa: E501
        with_policy("Ignore"),
        pod("p"),
        pod("p", FOO),
        Q,
    ),
    (
        "the unschedulable Pod has topologySpreadConstraint and has got a new unrelated label",
        with_policy("Ignore"),
        pod("p"),
        pod("p", {"unrelated": ""}),
        SKIP,
    ),
]


@pytest.mark.parametrize(("name", "target", "old", "new", "want"), POD_CASES, ids=[c[0] for c in POD_CASES])
def test_is_schedulable_after_pod_change(
    name: str, target: Pod, old: Pod | None, new: Pod | None, want: QueueingHint
) -> None:
    assert PodTopologySpread().is_schedulable_after_pod_change(target, old, new) == want
