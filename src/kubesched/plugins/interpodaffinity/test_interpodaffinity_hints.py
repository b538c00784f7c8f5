"""InterPodAffinity queueing hints: upstream ``Test_isSchedulableAfterPodChange`` and
``Test_isSchedulableAfterNodeChange`` (case names verbatim)."""

from __future__ import annotations

from typing import Any

import pytest

from kubesched.api.objects import Node, Pod
from kubesched.framework.types import QueueingHint
from kubesched.plugins.interpodaffinity import InterPodAffinity
from kubesched.plugins.testing import make_node, pod_dict

Q, SKIP = QueueingHint.QUEUE, QueueingHint.QUEUE_SKIP


def term(key: str, selector: dict[str, Any]) -> dict[str, Any]:
    return {"labelSelector": selector, "topologyKey": key}


def in_values(key: str, *values: str) -> dict[str, Any]:
    return {"matchExpressions": [{"key": key, "operator": "In", "values": list(values)}]}


def exists(key: str) -> dict[str, Any]:
    return {"matchExpressions": [{"key": key, "operator": "Exists"}]}


def pod(
    uid: str,
    labels: dict[str, str] | None = None,
    *,
    node: str = "",
    affinity: list[dict[str, Any]] | None = None,
    anti: list[dict[str, Any]] | None = None,
) -> Pod:
    raw = pod_dict(uid, uid=uid, node_name=node)
    raw["metadata"]["labels"] = labels or {}
    spec_affinity: dict[str, Any] = {}
    if affinity:
        spec_affinity["podAffinity"] = {"requiredDuringSchedulingIgnoredDuringExecution": affinity}
    if anti:
        spec_affinity["podAntiAffinity"] = {"requiredDuringSchedulingIgnoredDuringExecution": anti}
    if spec_affinity:
        raw["spec"]["affinity"] = spec_affinity
    return Pod.from_dict(raw)


SCAN = [term("region", in_values("service", "securityscan", "value2"))]
WANTS = pod("p", affinity=SCAN)
AVOIDS = pod("p", anti=SCAN)
TWO_TERMS = pod("p", affinity=[term("hostname", exists("aaa")), term("hostname", exists("bbb"))])
F = "fake-node"

POD_CASES: list[tuple[str, Pod, Pod | None, Pod | None, QueueingHint]] = [
    (
        "add a pod which matches the pod affinity",
        WANTS,
        None,
        pod("other", {"service": "securityscan"}, node=F),
        Q,
    ),
    ("add an un-scheduled pod", WANTS, None, pod("other", {"service": "securityscan"}), SKIP),
    ("add a pod which doesn't match the pod affinity", WANTS, None, pod("other", {"aaa": "a"}, node=F), SKIP),
    (
        "update a pod from non-match to match pod affinity",
        WANTS,
        pod("other", {"aaa": "a"}, node=F),
        pod("other", {"service": "securityscan"}, node=F),
        Q,
    ),
    (
        "the updating pod matches target pod's affinity both before and after label changes",
        WANTS,
        pod("other", {"service": "value2"}, node=F),
        pod("other", {"service": "securityscan"}, node=F),
        SKIP,
    ),
    (
        "update an un-scheduled pod",
        WANTS,
        pod("other", {"aaa": "a"}),
        pod("other", {"service": "securityscan"}),
        SKIP,
    ),
    (
        "update a pod from match to non-match the pod affinity",
        WANTS,
        pod("other", {"service": "securityscan"}, node=F),
        pod("other", {"aaa": "a"}, node=F),
        SKIP,
    ),
    (
        "update a pod from match to non-match pod's affinity - multiple terms case",
        TWO_TERMS,
        pod("other", {"aaa": "a"}, node=F),
        pod("other", {"service": "securityscan"}, node=F),
        SKIP,
    ),
    (
        "update a pod from non-match to match pod's affinity - multiple terms case",
        TWO_TERMS,
        pod("other", {"aaa": "a"}, node=F),
        pod("other", {"aaa": "", "bbb": ""}, node=F),
        Q,
    ),
    (
        "updated pod is the target pod",
        pod("p", {"foo": "baz"}),
        pod("p", {"foo": "bar"}),
        pod("p", {"foo": "baz"}),
        Q,
    ),
    (
        "modify pod label to change it from satisfying pod anti-affinity to not satisfying anti-affinity",
        AVOIDS,
        pod("other", {"service": "securityscan"}, node=F),
        pod("other", {"service": "aaaa"}, node=F),
        Q,
    ),
    (
        "modify pod label to change it from not satisfying pod anti-affinity to satisfying anti-affinity",
        AVOIDS,
        pod("other", {"service": "bbb"}, node=F),
        pod("other", {"service": "securityscan"}, node=F),
        SKIP,
    ),
    (
        "delete a pod which doesn't match pod's anti-affinity",
        AVOIDS,
        pod("other", {"aaa": "a"}, node=F),
        None,
        SKIP,
    ),
    (
        "delete a pod which matches pod's anti-affinity",
        AVOIDS,
        pod("other", {"service": "securityscan"}, node=F),
        None,
        Q,
    ),
    (
        "delete a pod with anti-affinity that matches pending pod",
        pod("p", {"service": "securityscan"}),
        pod("other", node=F, anti=SCAN),
        None,
        Q,
    ),
    (
        "delete a pod with anti-affinity that doesn't match pending pod",
        pod("p", {"service": "foo"}),
        pod("other", node=F, anti=SCAN),
        None,
        SKIP,
    ),
    (
        "delete a pod which doesn't match pending pod's anti-affinity and has anti-affinity that doesn't match pending pod",  # noqa: E501
        pod("p", {"service": "foo"}, anti=SCAN),
        pod("other", {"service": "foo"}, node=F, anti=SCAN),
        None,
        SKIP,
    ),
]


@pytest.mark.parametrize(("name", "target", "old", "new", "want"), POD_CASES, ids=[c[0] for c in POD_CASES])
def test_is_schedulable_after_pod_change(
    name: str, target: Pod, old: Pod | None, new: Pod | None, want: QueueingHint
) -> None:
    assert InterPodAffinity().is_schedulable_after_pod_change(target, old, new) == want


def node(labels: dict[str, str]) -> Node:
    return make_node("node-a", labels=labels)


ZONE_AFFINITY = pod("p", affinity=[term("zone", in_values("service", "securityscan", "value2"))])
REGION_AFFINITY = WANTS
ZONE_ANTI = pod("p", anti=[term("zone", {"matchLabels": {"another": "label"}})])

NODE_CASES: list[tuple[str, Pod, Node | None, Node, QueueingHint]] = [
    ("add a new node with matched pod affinity topologyKey", ZONE_AFFINITY, None, node({"zone": "zone1"}), Q),
    ("add a new node without matched topologyKey", REGION_AFFINITY, None, node({"zone": "zone1"}), SKIP),
    ("update node label but not topologyKey", ZONE_AFFINITY, node({"aaa": "a"}), node({"aaa": "b"}), SKIP),
    (
        "update node label that isn't related to the pod affinity",
        ZONE_AFFINITY,
        node({"zone": "zone1"}),
        node({"zone": "zone1", "unrelated-label": "unrelated"}),
        SKIP,
    ),
    (
        "update node with different affinity topologyKey value",
        ZONE_AFFINITY,
        node({"zone": "zone1"}),
        node({"zone": "zone2"}),
        Q,
    ),
    (
        "update node to have the affinity topology label",
        ZONE_AFFINITY,
        node({"aaa": "a"}),
        node({"zone": "zone1"}),
        Q,
    ),
    (
        "add a new node with matched pod anti-affinity topologyKey",
        ZONE_ANTI,
        None,
        node({"zone": "zone1"}),
        Q,
    ),
    ("add a new node without matched pod anti-affinity topologyKey", ZONE_ANTI, None, node({}), Q),
    (
        "update node label that isn't related to the pod anti-affinity",
        ZONE_ANTI,
        node({"zone": "zone1"}),
        node({"zone": "zone1", "unrelated-label": "unrelated"}),
        SKIP,
    ),
    (
        "update node with different anti-affinity topologyKey value",
        ZONE_ANTI,
        node({"zone": "zone1"}),
        node({"zone": "zone2"}),
        Q,
    ),
    (
        "update node to have the anti-affinity topology label",
        ZONE_ANTI,
        node({"aaa": "a"}),
        node({"zone": "zone1"}),
        SKIP,
    ),
    (
        "update node label not to have anti-affinity topology label",
        ZONE_ANTI,
        node({"zone": "zone1"}),
        node({"aaa": "a"}),
        Q,
    ),
]


@pytest.mark.parametrize(("name", "target", "old", "new", "want"), NODE_CASES, ids=[c[0] for c in NODE_CASES])
def test_is_schedulable_after_node_change(
    name: str, target: Pod, old: Node | None, new: Node, want: QueueingHint
) -> None:
    assert InterPodAffinity().is_schedulable_after_node_change(target, old, new) == want
