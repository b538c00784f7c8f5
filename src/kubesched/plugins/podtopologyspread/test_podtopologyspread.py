"""PodTopologySpread: tables after upstream's filtering_test.go (TestPreFilterState, TestSingleConstraint,
TestMultipleConstraints, TestPreFilterStateAddPod/RemovePod) and scoring_test.go
(TestPodTopologySpreadScore), kube-scheduler v1.34 semantics (node inclusion policies, minDomains and
matchLabelKeys all on), plus constraint parsing and default constraints built from workloads.

Upstream's PreFilter expectations name the per-domain counts (``TpValueToMatchNum``) and the global
minimum (``CriticalPaths[0]``); the tables below check the same two things.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pytest

from kubesched.api.objects import HOSTNAME_LABEL, ZONE_LABEL, Node, Pod
from kubesched.api.selectors import LabelSelector
from kubesched.api.topology_spread import parse_topology_spread_constraints
from kubesched.cache.cache import Snapshot
from kubesched.errors import InputError
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.plugin_args import PodTopologySpreadArgs
from kubesched.framework.status import Code
from kubesched.plugins.helper.spread import default_selector
from kubesched.plugins.podtopologyspread import (
    ERR_REASON_CONSTRAINTS_NOT_MATCH,
    ERR_REASON_NODE_LABEL_NOT_MATCH,
    PRE_FILTER_KEY,
    PodTopologySpread,
    PreFilterState,
)
from kubesched.plugins.testing import build_snapshot, make_node, node_statuses, pod_dict, store_handle
from kubesched.store.memory import MemoryStore
from kubesched.store.parsers import informer_factory

FOO = {"matchExpressions": [{"key": "foo", "operator": "Exists"}]}
BAR = {"matchExpressions": [{"key": "bar", "operator": "Exists"}]}
DNS, SA = "DoNotSchedule", "ScheduleAnyway"
UNSCHEDULABLE_TAINT = {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}


def spread(
    max_skew: int,
    key: str,
    when: str,
    selector: Mapping[str, Any] | None = None,
    *,
    min_domains: int | None = None,
    affinity_policy: str | None = None,
    taints_policy: str | None = None,
    match_label_keys: Sequence[str] = (),
) -> dict[str, Any]:
    out: dict[str, Any] = {"maxSkew": max_skew, "topologyKey": key, "whenUnsatisfiable": when}
    if selector is not None:
        out["labelSelector"] = dict(selector)
    if min_domains is not None:
        out["minDomains"] = min_domains
    if affinity_policy is not None:
        out["nodeAffinityPolicy"] = affinity_policy
    if taints_policy is not None:
        out["nodeTaintsPolicy"] = taints_policy
    if match_label_keys:
        out["matchLabelKeys"] = list(match_label_keys)
    return out


def pod(
    name: str,
    labels: Mapping[str, str] | None = None,
    *,
    node: str = "",
    namespace: str = "default",
    constraints: Sequence[Mapping[str, Any]] = (),
    node_selector: Mapping[str, str] | None = None,
    node_affinity: Mapping[str, Any] | None = None,
    tolerations: Sequence[Mapping[str, Any]] = (),
    owner: tuple[str, str, str] | None = None,
    terminating: bool = False,
) -> Pod:
    obj = pod_dict(name, namespace=namespace, node_name=node, tolerations=tolerations)
    meta, spec = obj["metadata"], obj["spec"]
    meta["labels"] = dict(labels or {})
    if owner is not None:
        api_version, kind, owner_name = owner
        meta["ownerReferences"] = [
            {"apiVersion": api_version, "kind": kind, "name": owner_name, "uid": "u1", "controller": True}
        ]
    if terminating:
        meta["deletionTimestamp"] = "2024-01-01T00:00:00Z"
    if constraints:
        spec["topologySpreadConstraints"] = [dict(c) for c in constraints]
    if node_selector:
        spec["nodeSelector"] = dict(node_selector)
    if node_affinity is not None:
        spec["affinity"] = {"nodeAffinity": dict(node_affinity)}
    return Pod.from_dict(obj)


def node(name: str, labels: Mapping[str, str], taints: Sequence[Mapping[str, Any]] = ()) -> Node:
    return make_node(name, {"cpu": "8", "memory": "16Gi", "pods": "110"}, labels=labels, taints=taints)


def zn(name: str, zone: str) -> Node:
    """Upstream's usual test node: labels ``zone`` and ``node``."""
    return node(name, {"zone": zone, "node": name})


def required_in(key: str, values: Sequence[str], operator: str = "In") -> dict[str, Any]:
    expr: dict[str, Any] = {"key": key, "operator": operator, "values": list(values)}
    return {
        "requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [{"matchExpressions": [expr]}]
        }
    }


def plugin(
    snapshot: Snapshot, *, args: PodTopologySpreadArgs | None = None, store: MemoryStore | None = None
) -> PodTopologySpread:
    handle = store_handle(store, snapshot)
    return PodTopologySpread(args or PodTopologySpreadArgs(defaulting_type="List"), handle)


def pods_on(spec: Mapping[str, int], labels: Mapping[str, str] | None = None) -> list[Pod]:
    """``{"node-a": 2}`` → two pods labelled ``labels`` (default ``foo: ""``) bound to node-a."""
    labels = {"foo": ""} if labels is None else labels
    return [pod(f"p-{n}{i}", labels, node=n) for n, k in spec.items() for i in range(k)]


def pre_filter(pl: PodTopologySpread, p: Pod, snapshot: Snapshot) -> tuple[CycleState, PreFilterState | None]:
    state = CycleState()
    _, status = pl.pre_filter(state, p, snapshot)
    if status is not None and status.code == Code.SKIP:
        return state, None
    assert status is None or status.ok, status
    pre: PreFilterState = state.read(PRE_FILTER_KEY)
    return state, pre


def domain_counts(pre: PreFilterState, i: int, snapshot: Snapshot) -> dict[str, int]:
    """Upstream ``TpValueToMatchNum[i]``: eligible domains and their matching pods."""
    column = snapshot.table.labels[pre.constraints[i].topology_key]
    return {column.values[code]: int(pre.counts[i][code]) for code in np.flatnonzero(pre.present[i])}


FOUR_NODES = [zn("node-a", "zone1"), zn("node-b", "zone1"), zn("node-x", "zone2"), zn("node-y", "zone2")]


# -- PreFilter state (TestPreFilterState) ---------------------------------------------------------------

PRE_FILTER_CASES: list[tuple[str, Pod, list[Node], list[Pod], list[tuple[dict[str, int], int]]]] = [
    (
        "clean cluster with one spreadConstraint",
        pod("p", {"foo": ""}, constraints=[spread(5, "zone", DNS, {"matchLabels": {"foo": "bar"}})]),
        FOUR_NODES,
        [],
        [({"zone1": 0, "zone2": 0}, 0)],
    ),
    (
        "normal case with one spreadConstraint",
        pod("p", {"foo": ""}, constraints=[spread(1, "zone", DNS, FOO)]),
        FOUR_NODES,
        pods_on({"node-a": 2, "node-b": 1, "node-y": 2}),
        [({"zone1": 3, "zone2": 2}, 2)],
    ),
    (
        "normal case with null label selector",
        pod("p", {"foo": ""}, constraints=[spread(1, "zone", DNS)]),
        FOUR_NODES,
        pods_on({"node-a": 2, "node-b": 1, "node-y": 2}),
        [({"zone1": 0, "zone2": 0}, 0)],
    ),
    (
        "normal case with one spreadConstraint, on a 3-zone cluster",
        pod("p", {"foo": ""}, constraints=[spread(1, "zone", DNS, FOO)]),
        [*FOUR_NODES, zn("node-o", "zone3"), zn("node-p", "zone3")],
        pods_on({"node-a": 2, "node-b": 1, "node-y": 2}),
        [({"zone1": 3, "zone2": 2, "zone3": 0}, 0)],
    ),
    (
        "namespace mismatch doesn't count",
        pod("p", {"foo": ""}, constraints=[spread(1, "zone", DNS, FOO)]),
        FOUR_NODES,
        [
            pod("p-a1", {"foo": ""}, node="node-a"),
            pod("p-a2", {"foo": ""}, node="node-a", namespace="ns1"),
            pod("p-b1", {"foo": ""}, node="node-b"),
            pod("p-y1", {"foo": ""}, node="node-y", namespace="ns2"),
            pod("p-y2", {"foo": ""}, node="node-y"),
        ],
        [({"zone1": 2, "zone2": 1}, 1)],
    ),
    (
        "normal case with two spreadConstraints",
        pod("p", {"foo": ""}, constraints=[spread(1, "zone", DNS, FOO), spread(1, "node", DNS, FOO)]),
        FOUR_NODES,
        pods_on({"node-a": 2, "node-b": 1, "node-y": 4}),
        [({"zone1": 3, "zone2": 4}, 3), ({"node-a": 2, "node-b": 1, "node-x": 0, "node-y": 4}, 0)],
    ),
    (
        "soft spreadConstraints should be bypassed",
        pod(
            "p",
            {"foo": ""},
            constraints=[
                spread(1, "zone", SA, FOO),
                spread(1, "zone", DNS, FOO),
                spread(1, "node", SA, FOO),
                spread(1, "node", DNS, FOO),
            ],
        ),
        [zn("node-a", "zone1"), zn("node-b", "zone1"), zn("node-y", "zone2")],
        pods_on({"node-a": 2, "node-b": 1, "node-y": 4}),
        [({"zone1": 3, "zone2": 4}, 3), ({"node-a": 2, "node-b": 1, "node-y": 4}, 1)],
    ),
    (
        "different labelSelectors - simple version",
        pod(
            "p",
            {"foo": "", "bar": ""},
            constraints=[spread(1, "zone", DNS, FOO), spread(1, "node", DNS, BAR)],
        ),
        [zn("node-a", "zone1"), zn("node-b", "zone1"), zn("node-y", "zone2")],
        [pod("p-a", {"foo": ""}, node="node-a"), pod("p-b", {"bar": ""}, node="node-b")],
        [({"zone1": 1, "zone2": 0}, 0), ({"node-a": 0, "node-b": 1, "node-y": 0}, 0)],
    ),
    (
        "different labelSelectors - complex pods",
        pod(
            "p",
            {"foo": "", "bar": ""},
            constraints=[spread(1, "zone", DNS, FOO), spread(1, "node", DNS, BAR)],
        ),
        [zn("node-a", "zone1"), zn("node-b", "zone1"), zn("node-y", "zone2")],
        [
            pod("p-a1", {"foo": ""}, node="node-a"),
            pod("p-a2", {"foo": "", "bar": ""}, node="node-a"),
            pod("p-b1", {"foo": ""}, node="node-b"),
            pod("p-y1", {"foo": ""}, node="node-y"),
            pod("p-y2", {"foo": "", "bar": ""}, node="node-y"),
            pod("p-y3", {"foo": ""}, node="node-y"),
            pod("p-y4", {"foo": "", "bar": ""}, node="node-y"),
        ],
        [({"zone1": 3, "zone2": 4}, 3), ({"node-a": 1, "node-b": 0, "node-y": 2}, 0)],
    ),
    (
        "two spreadConstraints, and with podAffinity",
        pod(
            "p",
            {"foo": ""},
            node_affinity=required_in("node", ["node-x"], "NotIn"),
            constraints=[spread(1, "zone", DNS, FOO), spread(1, "node", DNS, FOO)],
        ),
        FOUR_NODES,
        pods_on({"node-a": 2, "node-b": 1, "node-y": 4}),
        [({"zone1": 3, "zone2": 4}, 3), ({"node-a": 2, "node-b": 1, "node-y": 4}, 1)],
    ),
    (
        "NodeAffinityPolicy honored with labelSelectors",
        pod("p", {"foo": ""}, node_selector={"foo": ""}, constraints=[spread(1, "node", DNS, BAR)]),
        [
            node("node-a", {"node": "node-a", "foo": ""}),
            node("node-b", {"node": "node-b", "foo": ""}),
            node("node-c", {"node": "node-c", "bar": ""}),
        ],
        [*pods_on({"node-a": 1, "node-b": 2}, {"bar": ""}), pod("p-d", node="node-c")],
        [({"node-a": 1, "node-b": 2}, 1)],
    ),
    (
        "NodeAffinityPolicy ignored with labelSelectors",
        pod(
            "p",
            {"foo": ""},
            node_selector={"foo": ""},
            constraints=[spread(1, "node", DNS, BAR, affinity_policy="Ignore")],
        ),
        [
            node("node-a", {"node": "node-a", "foo": ""}),
            node("node-b", {"node": "node-b", "foo": ""}),
            node("node-c", {"node": "node-c", "bar": ""}),
        ],
        [*pods_on({"node-a": 1, "node-b": 2}, {"bar": ""}), pod("p-d", node="node-c")],
        [({"node-a": 1, "node-b": 2, "node-c": 0}, 0)],
    ),
    (
        "NodeAffinityPolicy honored with nodeAffinity",
        pod(
            "p",
            {"foo": ""},
            node_affinity=required_in("foo", [""]),
            constraints=[spread(1, "node", DNS, BAR)],
        ),
        [
            node("node-a", {"node": "node-a", "foo": ""}),
            node("node-b", {"node": "node-b", "foo": ""}),
            node("node-c", {"node": "node-c", "bar": ""}),
        ],
        [*pods_on({"node-a": 1, "node-b": 2}, {"bar": ""}), pod("p-e", node="node-c")],
        [({"node-a": 1, "node-b": 2}, 1)],
    ),
    (
        "NodeAffinityPolicy ignored with nodeAffinity",
        pod(
            "p",
            {"foo": ""},
            node_affinity=required_in("foo", [""]),
            constraints=[spread(1, "node", DNS, BAR, affinity_policy="Ignore")],
        ),
        [
            node("node-a", {"node": "node-a", "foo": ""}),
            node("node-b", {"node": "node-b", "foo": ""}),
            node("node-c", {"node": "node-c", "bar": ""}),
        ],
        [*pods_on({"node-a": 1, "node-b": 2}, {"bar": ""}), pod("p-d", node="node-c")],
        [({"node-a": 1, "node-b": 2, "node-c": 0}, 0)],
    ),
    (
        "NodeTaintsPolicy ignored",
        pod("p", {"foo": ""}, constraints=[spread(1, "node", DNS, BAR)]),
        [
            node("node-a", {"node": "node-a"}),
            node("node-b", {"node": "node-b"}),
            node("node-c", {"node": "node-c", "bar": ""}, [UNSCHEDULABLE_TAINT]),
        ],
        [*pods_on({"node-a": 1, "node-b": 2}, {"bar": ""}), pod("p-d", node="node-c")],
        [({"node-a": 1, "node-b": 2, "node-c": 0}, 0)],
    ),
    (
        "NodeTaintsPolicy honored",
        pod("p", {"foo": ""}, constraints=[spread(1, "node", DNS, BAR, taints_policy="Honor")]),
        [
            node("node-a", {"node": "node-a"}),
            node("node-b", {"node": "node-b"}),
            node("node-c", {"node": "node-c", "bar": ""}, [UNSCHEDULABLE_TAINT]),
        ],
        [*pods_on({"node-a": 1, "node-b": 2}, {"bar": ""}), pod("p-d", node="node-c")],
        [({"node-a": 1, "node-b": 2}, 1)],
    ),
    (
        "NodeTaintsPolicy honored with tolerated taints",
        pod(
            "p",
            {"foo": ""},
            tolerations=[{"key": "node.kubernetes.io/unschedulable", "operator": "Exists"}],
            constraints=[spread(1, "node", DNS, BAR, taints_policy="Honor")],
        ),
        [
            node("node-a", {"node": "node-a"}),
            node("node-b", {"node": "node-b"}),
            node("node-c", {"node": "node-c", "bar": ""}, [UNSCHEDULABLE_TAINT]),
        ],
        [*pods_on({"node-a": 1, "node-b": 2}, {"bar": ""}), pod("p-d", node="node-c")],
        [({"node-a": 1, "node-b": 2, "node-c": 0}, 0)],
    ),
    (
        "two node inclusion Constraints, zone: honor/ignore, node: ignore/ignore",
        pod(
            "p",
            {"foo": ""},
            node_selector={"foo": ""},
            constraints=[spread(1, "zone", DNS, FOO), spread(1, "node", DNS, FOO, affinity_policy="Ignore")],
        ),
        [
            node("node-a", {"zone": "zone1", "node": "node-a", "foo": ""}),
            node("node-b", {"zone": "zone1", "node": "node-b"}),
            node("node-x", {"zone": "zone2", "node": "node-x", "foo": ""}),
        ],
        pods_on({"node-b": 2, "node-x": 1}),
        [({"zone1": 0, "zone2": 1}, 0), ({"node-a": 0, "node-b": 2, "node-x": 1}, 0)],
    ),
    (
        "two node inclusion Constraints, zone: honor/honor, node: honor/ignore",
        pod(
            "p",
            {"foo": ""},
            constraints=[spread(1, "zone", DNS, FOO, taints_policy="Honor"), spread(1, "node", DNS, FOO)],
        ),
        [
            node("node-a", {"zone": "zone1", "node": "node-a", "foo": ""}),
            node("node-b", {"zone": "zone1", "node": "node-b"}, [UNSCHEDULABLE_TAINT]),
            node("node-x", {"zone": "zone2", "node": "node-x", "foo": ""}),
        ],
        pods_on({"node-b": 2, "node-x": 1}),
        [({"zone1": 0, "zone2": 1}, 0), ({"node-a": 0, "node-b": 2, "node-x": 1}, 0)],
    ),
    (
        "two node inclusion Constraints, zone: honor/ignore, node: honor/ignore",
        pod(
            "p",
            {"foo": ""},
            node_selector={"foo": ""},
            constraints=[spread(1, "zone", DNS, FOO), spread(1, "node", DNS, FOO)],
        ),
        [
            node("node-a", {"zone": "zone1", "node": "node-a"}),
            node("node-b", {"zone": "zone1", "node": "node-b", "foo": ""}, [UNSCHEDULABLE_TAINT]),
            node("node-x", {"zone": "zone2", "node": "node-x", "foo": ""}),
            node("node-y", {"zone": "zone2", "node": "node-y"}),
        ],
        pods_on({"node-a": 2, "node-x": 1, "node-y": 1}),
        [({"zone1": 0, "zone2": 1}, 0), ({"node-b": 0, "node-x": 1}, 0)],
    ),
    (
        "two node inclusion Constraints, zone: ignore/ignore, node: honor/honor",
        pod(
            "p",
            {"foo": ""},
            node_selector={"foo": ""},
            constraints=[
                spread(1, "zone", DNS, FOO, affinity_policy="Ignore"),
                spread(1, "node", DNS, FOO, taints_policy="Honor"),
            ],
        ),
        [
            node("node-a", {"zone": "zone1", "node": "node-a"}),
            node("node-b", {"zone": "zone1", "node": "node-b", "foo": ""}, [UNSCHEDULABLE_TAINT]),
            node("node-x", {"zone": "zone2", "node": "node-x", "foo": ""}),
            node("node-y", {"zone": "zone2", "node": "node-y", "foo": ""}),
        ],
        pods_on({"node-a": 2, "node-x": 2, "node-y": 1}),
        [({"zone1": 2, "zone2": 3}, 2), ({"node-x": 2, "node-y": 1}, 1)],
    ),
    (
        "matchLabelKeys narrow the selector to the pod's own values",
        pod(
            "p", {"foo": "", "bar": "a"}, constraints=[spread(1, "zone", DNS, FOO, match_label_keys=["bar"])]
        ),
        FOUR_NODES,
        [
            pod("p-a1", {"foo": "", "bar": "a"}, node="node-a"),
            pod("p-a2", {"foo": "", "bar": "b"}, node="node-a"),
            pod("p-b1", {"foo": ""}, node="node-b"),
            pod("p-y1", {"foo": "", "bar": "a"}, node="node-y"),
            pod("p-y2", {"foo": "", "bar": "a"}, node="node-y"),
        ],
        [({"zone1": 1, "zone2": 2}, 1)],
    ),
    (
        "matchLabelKeys the pod lacks are ignored",
        pod("p", {"foo": ""}, constraints=[spread(1, "zone", DNS, FOO, match_label_keys=["bar"])]),
        FOUR_NODES,
        [
            pod("p-a1", {"foo": "", "bar": "a"}, node="node-a"),
            pod("p-a2", {"foo": "", "bar": "b"}, node="node-a"),
            pod("p-y1", {"foo": ""}, node="node-y"),
        ],
        [({"zone1": 2, "zone2": 1}, 1)],
    ),
]


@pytest.mark.parametrize(
    ("pod_", "nodes", "existing", "want"),
    [c[1:] for c in PRE_FILTER_CASES],
    ids=[c[0] for c in PRE_FILTER_CASES],
)
def test_pre_filter_state(
    pod_: Pod, nodes: list[Node], existing: list[Pod], want: list[tuple[dict[str, int], int]]
) -> None:
    snapshot = build_snapshot(nodes, existing)
    _, pre = pre_filter(plugin(snapshot), pod_, snapshot)
    assert pre is not None
    got = [(domain_counts(pre, i, snapshot), pre.min_match(i)) for i in range(len(pre.constraints))]
    assert got == want


def test_pre_filter_skips_pods_without_hard_constraints() -> None:
    snapshot = build_snapshot(FOUR_NODES)
    p = pod("p", {"foo": ""}, constraints=[spread(1, "zone", SA, FOO)])
    assert pre_filter(plugin(snapshot), p, snapshot)[1] is None
    assert pre_filter(plugin(snapshot), pod("q"), snapshot)[1] is None


# -- Filter (TestSingleConstraint, TestMultipleConstraints) ---------------------------------------------

S, U, UU = Code.SUCCESS, Code.UNSCHEDULABLE, Code.UNSCHEDULABLE_AND_UNRESOLVABLE

FILTER_CASES: list[tuple[str, Pod, list[Node], list[Pod], dict[str, Code]]] = [
    (
        "no existing pods",
        pod("p", {"foo": ""}, constraints=[spread(1, "zone", DNS, FOO)]),
        FOUR_NODES,
        [],
        {"node-a": S, "node-b": S, "node-x": S, "node-y": S},
    ),
    (
        "no existing pods, incoming pod doesn't match itself",
        pod("p", {"foo": ""}, constraints=[spread(1, "zone", DNS, BAR)]),
        FOUR_NODES,
        [],
        {"node-a": S, "node-b": S, "node-x": S, "node-y": S},
    ),
    (
        "existing pods in a different namespace do not count",
        pod("p", {"foo": ""}, constraints=[spread(1, "zone", DNS, FOO)]),
        FOUR_NODES,
        [
            pod("p-a1", {"foo": ""}, node="node-a", namespace="ns1"),
            pod("p-b1", {"foo": ""}, node="node-a", namespace="ns2"),
            pod("p-x1", {"foo": ""}, node="node-x"),
            pod("p-y1", {"foo": ""}, node="node-y"),
        ],
        {"node-a": S, "node-b": S, "node-x": U, "node-y": U},
    ),
    (
        "existing pods do not match null selector",
        pod("p", {"foo": ""}, constraints=[spread(1, "zone", DNS)]),
        FOUR_NODES,
        pods_on({"node-x": 1, "node-y": 1}),
        {"node-a": S, "node-b": S, "node-x": S, "node-y": S},
    ),
    (
        "pods spread across zones as 3/3, all nodes fit",
        pod("p", {"foo": ""}, constraints=[spread(1, "zone", DNS, FOO)]),
        FOUR_NODES,
        pods_on({"node-a": 2, "node-b": 1, "node-y": 3}),
        {"node-a": S, "node-b": S, "node-x": S, "node-y": S},
    ),
    (
        "pods spread across zones as 1/2 due to absence of label 'zone' on node-b",
        pod("p", {"foo": ""}, constraints=[spread(1, "zone", DNS, FOO)]),
        [zn("node-a", "zone1"), node("node-b", {"zon": "zone1", "node": "node-b"}), *FOUR_NODES[2:]],
        pods_on({"node-a": 1, "node-b": 1, "node-x": 1, "node-y": 1}),
        {"node-a": S, "node-b": UU, "node-x": U, "node-y": U},
    ),
    (
        "pod cannot be scheduled as all nodes don't have label 'rack'",
        pod("p", {"foo": ""}, constraints=[spread(1, "rack", DNS, FOO)]),
        [zn("node-a", "zone1"), zn("node-x", "zone2")],
        [],
        {"node-a": UU, "node-x": UU},
    ),
    (
        "pods spread across nodes as 2/1/0/3, only node-x fits",
        pod("p", {"foo": ""}, constraints=[spread(1, "node", DNS, FOO)]),
        FOUR_NODES,
        pods_on({"node-a": 2, "node-b": 1, "node-y": 3}),
        {"node-a": U, "node-b": U, "node-x": S, "node-y": U},
    ),
    (
        "pods spread across nodes as 2/1/0/3, maxSkew is 2, node-b and node-x fit",
        pod("p", {"foo": ""}, constraints=[spread(2, "node", DNS, FOO)]),
        FOUR_NODES,
        pods_on({"node-a": 2, "node-b": 1, "node-y": 3}),
        {"node-a": U, "node-b": S, "node-x": S, "node-y": U},
    ),
    (
        "pods spread across nodes as 2/1/0/3, but pod doesn't match itself",
        pod("p", {"bar": ""}, constraints=[spread(1, "node", DNS, FOO)]),
        FOUR_NODES,
        pods_on({"node-a": 2, "node-b": 1, "node-y": 3}),
        {"node-a": U, "node-b": S, "node-x": S, "node-y": U},
    ),
    (
        "incoming pod has nodeAffinity, pods spread as 2/~1~/~0~/3, hence node-a fits",
        pod(
            "p",
            {"foo": ""},
            node_affinity=required_in("node", ["node-a", "node-y"]),
            constraints=[spread(1, "node", DNS, FOO)],
        ),
        FOUR_NODES,
        pods_on({"node-a": 2, "node-b": 1, "node-y": 3}),
        # node-b and node-x pass here; NodeAffinity would reject them in a real cycle.
        {"node-a": S, "node-b": S, "node-x": S, "node-y": U},
    ),
    (
        "terminating Pods should be excluded",
        pod("p", {"foo": ""}, constraints=[spread(1, "node", DNS, FOO)]),
        [node("node-a", {"node": "node-a"}), node("node-b", {"node": "node-b"})],
        [pod("p-a", {"foo": ""}, node="node-a", terminating=True), pod("p-b", {"foo": ""}, node="node-b")],
        {"node-a": S, "node-b": U},
    ),
    (
        "incoming pod has nodeAffinity, pods spread as 0/~2~/0/1, hence node-a fits",
        pod(
            "p",
            {"foo": ""},
            node_affinity=required_in("node", ["node-b"], "NotIn"),
            constraints=[spread(1, "zone", DNS, FOO)],
        ),
        FOUR_NODES,
        pods_on({"node-b": 2, "node-y": 1}),
        {"node-a": S, "node-b": S, "node-x": U, "node-y": U},
    ),
    (
        "pods spread across nodes as 2/2/1, maxSkew is 2, and the number of domains < minDomains",
        pod("p", {"foo": ""}, constraints=[spread(2, "node", DNS, FOO, min_domains=4)]),
        [node(n, {"node": n}) for n in ("node-a", "node-b", "node-c")],
        pods_on({"node-a": 2, "node-b": 2, "node-c": 1}),
        {"node-a": U, "node-b": U, "node-c": S},
    ),
    (
        "pods spread across nodes as 2/2/1, maxSkew is 2, and the number of domains > minDomains",
        pod("p", {"foo": ""}, constraints=[spread(2, "node", DNS, FOO, min_domains=2)]),
        [node(n, {"node": n}) for n in ("node-a", "node-b", "node-c")],
        pods_on({"node-a": 2, "node-b": 2, "node-c": 1}),
        {"node-a": S, "node-b": S, "node-c": S},
    ),
    (
        "pods spread across zone as 2/1, maxSkew is 2 and the number of domains < minDomains",
        pod("p", {"foo": ""}, constraints=[spread(2, "zone", DNS, FOO, min_domains=3)]),
        FOUR_NODES,
        pods_on({"node-a": 1, "node-b": 1, "node-x": 1}),
        {"node-a": U, "node-b": U, "node-x": S, "node-y": S},
    ),
    (
        "NodeAffinityPolicy honored with labelSelectors",
        pod("p", {"foo": ""}, node_selector={"foo": ""}, constraints=[spread(1, "node", DNS, FOO)]),
        [
            node("node-a", {"node": "node-a", "foo": ""}),
            node("node-b", {"node": "node-b", "foo": ""}),
            node("node-c", {"node": "node-c"}),
        ],
        pods_on({"node-a": 1, "node-b": 2}),
        {"node-a": S, "node-b": U, "node-c": S},
    ),
    (
        "NodeAffinityPolicy ignored with labelSelectors",
        pod(
            "p",
            {"foo": ""},
            node_selector={"foo": ""},
            constraints=[spread(1, "node", DNS, FOO, affinity_policy="Ignore")],
        ),
        [
            node("node-a", {"node": "node-a", "foo": ""}),
            node("node-b", {"node": "node-b", "foo": ""}),
            node("node-c", {"node": "node-c"}),
        ],
        pods_on({"node-a": 1, "node-b": 2}),
        {"node-a": U, "node-b": U, "node-c": S},
    ),
    (
        "NodeTaintsPolicy honored",
        pod("p", {"foo": ""}, constraints=[spread(1, "node", DNS, FOO, taints_policy="Honor")]),
        [
            node("node-a", {"node": "node-a"}),
            node("node-b", {"node": "node-b"}),
            node("node-c", {"node": "node-c"}, [UNSCHEDULABLE_TAINT]),
        ],
        pods_on({"node-a": 1, "node-b": 2}),
        {"node-a": S, "node-b": U, "node-c": S},
    ),
    (
        "NodeTaintsPolicy ignored",
        pod("p", {"foo": ""}, constraints=[spread(1, "node", DNS, FOO)]),
        [
            node("node-a", {"node": "node-a"}),
            node("node-b", {"node": "node-b"}),
            node("node-c", {"node": "node-c"}, [UNSCHEDULABLE_TAINT]),
        ],
        pods_on({"node-a": 1, "node-b": 2}),
        {"node-a": U, "node-b": U, "node-c": S},
    ),
    # TestMultipleConstraints
    (
        "two Constraints on zone and node, spreads = [3/3, 2/1/0/3]",
        pod("p", {"foo": ""}, constraints=[spread(1, "zone", DNS, FOO), spread(1, "node", DNS, FOO)]),
        FOUR_NODES,
        pods_on({"node-a": 2, "node-b": 1, "node-y": 3}),
        {"node-a": U, "node-b": U, "node-x": S, "node-y": U},
    ),
    (
        "two Constraints on zone and node, spreads = [3/4, 2/1/0/4]",
        pod("p", {"foo": ""}, constraints=[spread(1, "zone", DNS, FOO), spread(1, "node", DNS, FOO)]),
        FOUR_NODES,
        pods_on({"node-a": 2, "node-b": 1, "node-y": 4}),
        {"node-a": U, "node-b": U, "node-x": U, "node-y": U},
    ),
    (
        "Constraints hold different labelSelectors, spreads = [1/0, 1/0/0/1]",
        pod(
            "p",
            {"foo": "", "bar": ""},
            constraints=[spread(1, "zone", DNS, FOO), spread(1, "node", DNS, BAR)],
        ),
        FOUR_NODES,
        [pod("p-a1", {"foo": ""}, node="node-a"), pod("p-y1", {"bar": ""}, node="node-y")],
        {"node-a": U, "node-b": U, "node-x": S, "node-y": U},
    ),
    (
        "Constraints hold different labelSelectors, spreads = [1/0, 0/0/1/1]",
        pod(
            "p",
            {"foo": "", "bar": ""},
            constraints=[spread(1, "zone", DNS, FOO), spread(1, "node", DNS, BAR)],
        ),
        FOUR_NODES,
        [
            pod("p-a1", {"foo": ""}, node="node-a"),
            pod("p-x1", {"bar": ""}, node="node-x"),
            pod("p-y1", {"bar": ""}, node="node-y"),
        ],
        {"node-a": U, "node-b": U, "node-x": U, "node-y": U},
    ),
    (
        "Constraints hold different labelSelectors, spreads = [2/3, 1/0/0/1]",
        pod(
            "p",
            {"foo": "", "bar": ""},
            constraints=[spread(1, "zone", DNS, FOO), spread(1, "node", DNS, BAR)],
        ),
        FOUR_NODES,
        [
            pod("p-a1", {"foo": ""}, node="node-a"),
            pod("p-a2", {"foo": "", "bar": ""}, node="node-a"),
            pod("p-x1", {"foo": ""}, node="node-x"),
            pod("p-y1", {"foo": "", "bar": ""}, node="node-y"),
            pod("p-y2", {"foo": ""}, node="node-y"),
        ],
        {"node-a": U, "node-b": S, "node-x": U, "node-y": U},
    ),
    (
        "Constraints hold different labelSelectors but pod doesn't match itself on 'zone' constraint",
        pod("p", {"bar": ""}, constraints=[spread(1, "zone", DNS, FOO), spread(1, "node", DNS, BAR)]),
        FOUR_NODES,
        [
            pod("p-a1", {"foo": ""}, node="node-a"),
            pod("p-x1", {"bar": ""}, node="node-x"),
            pod("p-y1", {"bar": ""}, node="node-y"),
        ],
        {"node-a": S, "node-b": S, "node-x": U, "node-y": U},
    ),
    (
        "two Constraints on zone and node, absence of label 'node' on node-x, spreads = [1/1, 1/0/0/1]",
        pod("p", {"foo": ""}, constraints=[spread(1, "zone", DNS, FOO), spread(1, "node", DNS, FOO)]),
        [
            zn("node-a", "zone1"),
            zn("node-b", "zone1"),
            node("node-x", {"zone": "zone2"}),
            zn("node-y", "zone2"),
        ],
        pods_on({"node-a": 1, "node-y": 1}),
        {"node-a": U, "node-b": S, "node-x": UU, "node-y": U},
    ),
]


@pytest.mark.parametrize(
    ("pod_", "nodes", "existing", "want"), [c[1:] for c in FILTER_CASES], ids=[c[0] for c in FILTER_CASES]
)
def test_filter(pod_: Pod, nodes: list[Node], existing: list[Pod], want: dict[str, Code]) -> None:
    snapshot = build_snapshot(nodes, existing)
    pl = plugin(snapshot)
    state, _ = pre_filter(pl, pod_, snapshot)
    statuses = node_statuses(pl.filter_nodes(state, pod_, snapshot.table), snapshot)
    got = {name: (S if st is None else st.code) for name, st in statuses.items()}
    assert got == want
    for st in statuses.values():
        if st is not None:
            expected = ERR_REASON_NODE_LABEL_NOT_MATCH if st.code == UU else ERR_REASON_CONSTRAINTS_NOT_MATCH
            assert st.reasons == [expected]


def test_filter_reports_first_failing_constraint_only() -> None:
    """A node that violates the zone skew and lacks the node label fails with the zone reason only
    (upstream stops at the first failing constraint)."""
    nodes = [zn("node-a", "zone1"), node("node-b", {"zone": "zone1"}), zn("node-x", "zone2")]
    snapshot = build_snapshot(nodes, pods_on({"node-a": 2}))
    p = pod("p", {"foo": ""}, constraints=[spread(1, "zone", DNS, FOO), spread(1, "node", DNS, FOO)])
    pl = plugin(snapshot)
    state, _ = pre_filter(pl, p, snapshot)
    statuses = node_statuses(pl.filter_nodes(state, p, snapshot.table), snapshot)
    b = statuses["node-b"]
    assert b is not None and b.code == U and b.reasons == [ERR_REASON_CONSTRAINTS_NOT_MATCH]


# -- AddPod / RemovePod (TestPreFilterStateAddPod / RemovePod) ----------------------------------------


def _slot(snapshot: Snapshot, name: str) -> int:
    return snapshot.table.slot_of[name]


def test_remove_pod_one_constraint() -> None:
    existing = pods_on({"node-a": 1, "node-b": 1, "node-x": 1})
    snapshot = build_snapshot([zn("node-a", "zone1"), zn("node-b", "zone1"), zn("node-x", "zone2")], existing)
    p = pod("p", {"foo": ""}, constraints=[spread(1, "zone", DNS, FOO)])
    pl = plugin(snapshot)
    state, pre = pre_filter(pl, p, snapshot)
    assert pre is not None
    assert pl.remove_pod(state, p, existing[0], _slot(snapshot, "node-a")) is None
    assert (domain_counts(pre, 0, snapshot), pre.min_match(0)) == ({"zone1": 1, "zone2": 1}, 1)


def test_remove_pod_irrelevant_or_other_namespace_changes_nothing() -> None:
    existing = [
        pod("p-a0", {"bar": ""}, node="node-a"),
        *pods_on({"node-a": 1, "node-b": 1, "node-x": 1, "node-y": 1}),
    ]
    snapshot = build_snapshot(FOUR_NODES, existing)
    p = pod("p", {"foo": ""}, constraints=[spread(1, "zone", DNS, FOO)])
    pl = plugin(snapshot)
    state, pre = pre_filter(pl, p, snapshot)
    assert pre is not None
    pl.remove_pod(state, p, existing[0], _slot(snapshot, "node-a"))
    pl.remove_pod(state, p, pod("q", {"foo": ""}, node="node-a", namespace="ns1"), _slot(snapshot, "node-a"))
    assert domain_counts(pre, 0, snapshot) == {"zone1": 2, "zone2": 2}


def test_remove_pod_two_constraints() -> None:
    existing = pods_on({"node-a": 2, "node-b": 1, "node-x": 2})
    snapshot = build_snapshot(FOUR_NODES[:3], existing)
    p = pod("p", {"foo": ""}, constraints=[spread(1, "zone", DNS, FOO), spread(1, "node", DNS, FOO)])
    pl = plugin(snapshot)
    state, pre = pre_filter(pl, p, snapshot)
    assert pre is not None
    pl.remove_pod(state, p, existing[3], _slot(snapshot, "node-x"))
    assert (domain_counts(pre, 0, snapshot), pre.min_match(0)) == ({"zone1": 3, "zone2": 1}, 1)
    assert (domain_counts(pre, 1, snapshot), pre.min_match(1)) == ({"node-a": 2, "node-b": 1, "node-x": 1}, 1)


def test_remove_pod_on_node_excluded_by_node_affinity_changes_nothing() -> None:
    nodes = [
        node("node-a", {"zone": "zone1", "node": "node-a", "foo": "bar"}),
        node("node-b", {"zone": "zone2", "node": "node-b", "foo": ""}),
    ]
    existing = [pod("p-a2", {"foo": ""}, node="node-a"), pod("p-b1", {"foo": ""}, node="node-b")]
    snapshot = build_snapshot(nodes, existing)
    p = pod(
        "p",
        {"foo": ""},
        node_affinity=required_in("foo", ["bar"], "NotIn"),
        constraints=[spread(1, "zone", DNS, FOO)],
    )
    pl = plugin(snapshot)
    state, pre = pre_filter(pl, p, snapshot)
    assert pre is not None
    pl.remove_pod(state, p, pod("p-a1", {"foo": ""}, node="node-a"), _slot(snapshot, "node-a"))
    assert (domain_counts(pre, 0, snapshot), pre.min_match(0)) == ({"zone2": 1}, 1)


def test_add_pod_on_a_cloned_state_leaves_the_original_alone() -> None:
    existing = pods_on({"node-a": 1, "node-x": 1})
    snapshot = build_snapshot(FOUR_NODES, existing)
    p = pod("p", {"foo": ""}, constraints=[spread(1, "zone", DNS, FOO), spread(1, "node", DNS, FOO)])
    pl = plugin(snapshot)
    state, pre = pre_filter(pl, p, snapshot)
    assert pre is not None
    clone = CycleState()
    copied = pre.clone()
    clone.write(PRE_FILTER_KEY, copied)
    pl.add_pod(clone, p, pod("n", {"foo": ""}, node="node-b"), _slot(snapshot, "node-b"))
    assert domain_counts(copied, 0, snapshot) == {"zone1": 2, "zone2": 1}
    assert domain_counts(copied, 1, snapshot) == {"node-a": 1, "node-b": 1, "node-x": 1, "node-y": 0}
    assert domain_counts(pre, 0, snapshot) == {"zone1": 1, "zone2": 1}
    # After the add, node-b's zone (zone1: 2 + 1 - 1) is too skewed in the clone only.
    table = snapshot.table
    b = _slot(snapshot, "node-b")
    assert not pl.filter_nodes(clone, p, table).passed[b]
    assert pl.filter_nodes(state, p, table).passed[b]


# -- Score (TestPodTopologySpreadScore) -----------------------------------------------------------------


def score(pl: PodTopologySpread, p: Pod, snapshot: Snapshot, candidates: Sequence[str]) -> dict[str, int]:
    """PreScore over ``candidates`` (the nodes that passed Filter), Score, NormalizeScore."""
    state = CycleState()
    table = snapshot.table
    slots = np.asarray([table.slot_of[n] for n in candidates], dtype=np.int64)
    status = pl.pre_score(state, p, table, slots)
    if status is not None and status.code == Code.SKIP:
        return {}
    assert status is None or status.ok, status
    scores = pl.score_nodes(state, p, table, slots).copy()
    pl.normalize_scores(state, p, scores)
    return dict(zip(candidates, (int(s) for s in scores), strict=True))


def hn(name: str, **extra: str) -> Node:
    return node(name, {HOSTNAME_LABEL: name, **extra})


SCORE_CASES: list[tuple[str, Pod, list[Node], list[Node], list[Pod], dict[str, int]]] = [
    (
        "one constraint on node, no existing pods",
        pod("p", {"foo": ""}, constraints=[spread(1, HOSTNAME_LABEL, SA, FOO)]),
        [hn("node-a"), hn("node-b")],
        [],
        [],
        {"node-a": 100, "node-b": 100},
    ),
    (
        "one constraint on node, only one node is candidate",
        pod("p", {"foo": ""}, constraints=[spread(1, HOSTNAME_LABEL, SA, FOO)]),
        [hn("node-a")],
        [hn("node-b")],
        pods_on({"node-a": 2, "node-b": 1}),
        {"node-a": 100},
    ),
    (
        "one constraint on node, all nodes have the same number of matching pods",
        pod("p", {"foo": ""}, constraints=[spread(1, HOSTNAME_LABEL, SA, FOO)]),
        [hn("node-a"), hn("node-b")],
        [],
        pods_on({"node-a": 1, "node-b": 1}),
        {"node-a": 100, "node-b": 100},
    ),
    (
        "one constraint on node, all 4 nodes are candidates",
        pod("p", {"foo": ""}, constraints=[spread(1, HOSTNAME_LABEL, SA, FOO)]),
        [hn("node-a"), hn("node-b"), hn("node-c"), hn("node-d")],
        [],
        pods_on({"node-a": 2, "node-b": 1, "node-d": 3}),
        {"node-a": 20, "node-b": 60, "node-c": 100, "node-d": 0},
    ),
    (
        "one constraint on node, null selector",
        pod("p", {"foo": ""}, constraints=[spread(1, HOSTNAME_LABEL, SA)]),
        [hn("node-a"), hn("node-b"), hn("node-c"), hn("node-d")],
        [],
        pods_on({"node-a": 2, "node-b": 1, "node-d": 3}),
        {"node-a": 100, "node-b": 100, "node-c": 100, "node-d": 100},
    ),
    (
        "one constraint on node, all 4 nodes are candidates, maxSkew=2",
        pod("p", {"foo": ""}, constraints=[spread(2, HOSTNAME_LABEL, SA, FOO)]),
        [hn("node-a"), hn("node-b"), hn("node-c"), hn("node-d")],
        [],
        pods_on({"node-a": 2, "node-b": 1, "node-d": 3}),
        {"node-a": 33, "node-b": 66, "node-c": 100, "node-d": 16},
    ),
    (
        "one constraint on node, all 4 nodes are candidates, maxSkew=3",
        pod("p", {"foo": ""}, constraints=[spread(3, HOSTNAME_LABEL, SA, FOO)]),
        [hn("node-a"), hn("node-b"), hn("node-c"), hn("node-d")],
        [],
        pods_on({"node-a": 4, "node-b": 3, "node-c": 2, "node-d": 1}),
        {"node-a": 44, "node-b": 66, "node-c": 77, "node-d": 100},
    ),
    (
        "one constraint on node, 3 out of 4 nodes are candidates",
        pod("p", {"foo": ""}, constraints=[spread(1, HOSTNAME_LABEL, SA, FOO)]),
        [hn("node-a"), hn("node-b"), hn("node-x")],
        [hn("node-y")],
        pods_on({"node-a": 4, "node-b": 2, "node-x": 1, "node-y": 3}),
        {"node-a": 33, "node-b": 83, "node-x": 100},
    ),
    (
        "one constraint on node, 3 out of 4 nodes are candidates, one node doesn't match topology key",
        pod("p", {"foo": ""}, constraints=[spread(1, HOSTNAME_LABEL, SA, FOO)]),
        [hn("node-a"), node("node-b", {"n": "node-b"}), hn("node-x")],
        [hn("node-y")],
        pods_on({"node-a": 4, "node-b": 2, "node-x": 1, "node-y": 3}),
        {"node-a": 16, "node-b": 0, "node-x": 100},
    ),
    (
        "one constraint on zone, 3 out of 4 nodes are candidates",
        pod("p", {"foo": ""}, constraints=[spread(1, "zone", SA, FOO)]),
        [hn("node-a", zone="zone1"), hn("node-b", zone="zone1"), hn("node-x", zone="zone2")],
        [hn("node-y", zone="zone2")],
        pods_on({"node-a": 4, "node-b": 2, "node-x": 1, "node-y": 3}),
        {"node-a": 75, "node-b": 75, "node-x": 100},
    ),
]


@pytest.mark.parametrize(
    ("pod_", "nodes", "failed", "existing", "want"),
    [c[1:] for c in SCORE_CASES],
    ids=[c[0] for c in SCORE_CASES],
)
def test_score(
    pod_: Pod, nodes: list[Node], failed: list[Node], existing: list[Pod], want: dict[str, int]
) -> None:
    snapshot = build_snapshot([*nodes, *failed], existing)
    assert score(plugin(snapshot), pod_, snapshot, [n.name for n in nodes]) == want


def test_score_skips_pods_without_soft_constraints() -> None:
    snapshot = build_snapshot([hn("node-a")])
    p = pod("p", {"foo": ""}, constraints=[spread(1, HOSTNAME_LABEL, DNS, FOO)])
    assert score(plugin(snapshot), p, snapshot, ["node-a"]) == {}


# -- default constraints -----------------------------------------------------------------------------


def _store(*objs: dict[str, Any]) -> MemoryStore:
    store = MemoryStore()
    for obj in objs:
        store.create(obj)
    return store


def service(name: str, selector: Mapping[str, str] | None, namespace: str = "default") -> dict[str, Any]:
    spec: dict[str, Any] = {} if selector is None else {"selector": dict(selector)}
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": name, "namespace": namespace},
        "spec": spec,
    }


def replica_set(name: str, selector: Mapping[str, Any], kind: str = "ReplicaSet") -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": kind,
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"selector": dict(selector)},
    }


LIST_DEFAULTS = PodTopologySpreadArgs(
    defaulting_type="List",
    default_constraints=[
        {"maxSkew": 3, "topologyKey": "node", "whenUnsatisfiable": DNS},
        {"maxSkew": 2, "topologyKey": "node", "whenUnsatisfiable": SA},
        {"maxSkew": 5, "topologyKey": "rack", "whenUnsatisfiable": DNS},
    ],
)


def test_default_constraints_take_the_service_selector() -> None:
    snapshot = build_snapshot([])
    pl = plugin(snapshot, args=LIST_DEFAULTS, store=_store(service("s", {"foo": "bar"})))
    p = pod("p", {"foo": "bar", "baz": "kar"})
    hard = pl.constraints(CycleState(), p, DNS)
    assert [(c.max_skew, c.topology_key) for c in hard] == [(3, "node"), (5, "rack")]
    assert all(c.selector.matches({"foo": "bar"}) and not c.selector.matches({"baz": "kar"}) for c in hard)


def test_default_constraints_need_a_matching_service_or_owner() -> None:
    snapshot = build_snapshot([])
    for store in (_store(service("s", {"baz": "kep"})), _store(service("s", None)), _store()):
        pl = plugin(snapshot, args=LIST_DEFAULTS, store=store)
        assert pre_filter(pl, pod("p", {"foo": "bar"}), snapshot)[1] is None


def test_default_constraints_ignore_services_of_other_namespaces() -> None:
    snapshot = build_snapshot([])
    pl = plugin(snapshot, args=LIST_DEFAULTS, store=_store(service("s", {"foo": "bar"}, namespace="other")))
    assert pl.constraints(None, pod("p", {"foo": "bar"}), DNS) == ()


def test_pod_constraints_win_over_defaults() -> None:
    snapshot = build_snapshot([])
    pl = plugin(snapshot, args=LIST_DEFAULTS, store=_store(service("s", {"foo": "bar"})))
    p = pod(
        "p",
        {"foo": "bar", "baz": "tar"},
        constraints=[
            spread(1, "zone", DNS, {"matchLabels": {"baz": "tar"}}),
            spread(2, "planet", SA, {"matchLabels": {"fot": "rok"}}),
        ],
    )
    hard = pl.constraints(None, p, DNS)
    assert [(c.max_skew, c.topology_key) for c in hard] == [(1, "zone")]
    assert hard[0].selector.matches({"baz": "tar"}) and not hard[0].selector.matches({"foo": "bar"})


def test_default_soft_constraints_do_not_filter() -> None:
    args = PodTopologySpreadArgs(
        defaulting_type="List",
        default_constraints=[{"maxSkew": 2, "topologyKey": "node", "whenUnsatisfiable": SA}],
    )
    snapshot = build_snapshot([])
    pl = plugin(snapshot, args=args, store=_store(service("s", {"foo": "bar"})))
    assert pre_filter(pl, pod("p", {"foo": "bar"}), snapshot)[1] is None


@pytest.mark.parametrize(
    ("owner", "workload"),
    [
        (("apps/v1", "ReplicaSet", "rs"), replica_set("rs", {"matchLabels": {"app": "web"}})),
        (("apps/v1", "StatefulSet", "ss"), replica_set("ss", {"matchLabels": {"app": "web"}}, "StatefulSet")),
        (
            ("v1", "ReplicationController", "rc"),
            {
                "apiVersion": "v1",
                "kind": "ReplicationController",
                "metadata": {"name": "rc", "namespace": "default"},
                "spec": {"selector": {"app": "web"}},
            },
        ),
    ],
    ids=["ReplicaSet", "StatefulSet", "ReplicationController"],
)
def test_system_defaults_spread_pods_of_the_owning_workload(
    owner: tuple[str, str, str], workload: dict[str, Any]
) -> None:
    """System defaults (hostname maxSkew 3, zone maxSkew 5, ScheduleAnyway) with the owner's selector:
    the node with fewer of the workload's pods scores higher."""
    nodes = [
        node("n1", {HOSTNAME_LABEL: "n1", ZONE_LABEL: "z1"}),
        node("n2", {HOSTNAME_LABEL: "n2", ZONE_LABEL: "z2"}),
    ]
    existing = [pod(f"w{i}", {"app": "web"}, node="n1") for i in range(6)] + [
        pod(f"o{i}", {"app": "other"}, node="n2") for i in range(6)
    ]
    snapshot = build_snapshot(nodes, existing)
    pl = plugin(snapshot, args=PodTopologySpreadArgs(), store=_store(workload))
    p = pod("p", {"app": "web"}, owner=owner)
    assert pl.constraints(None, p, DNS) == ()
    soft = pl.constraints(None, p, SA)
    assert [(c.max_skew, c.topology_key) for c in soft] == [(3, HOSTNAME_LABEL), (5, ZONE_LABEL)]
    scores = score(pl, p, snapshot, ["n1", "n2"])
    assert scores["n2"] == 100 and scores["n1"] < scores["n2"]
    # The same pod without an owner has no workload: no default spreading, no score.
    assert score(pl, pod("q", {"app": "web"}), snapshot, ["n1", "n2"]) == {}


def test_owner_that_does_not_exist_or_is_not_a_controller_gives_no_defaults() -> None:
    snapshot = build_snapshot([])
    pl = plugin(snapshot, args=PodTopologySpreadArgs(), store=_store())
    assert pl.constraints(None, pod("p", {"app": "web"}, owner=("apps/v1", "ReplicaSet", "gone")), SA) == ()
    assert pl.constraints(None, pod("p", {"app": "web"}, owner=("apps/v1beta1", "ReplicaSet", "x")), SA) == ()


def test_system_defaulting_nodes_without_zone_still_spread_by_hostname() -> None:
    """Upstream "system defaulting, nodes don't have zone, pods match service": the same scores as a
    single hostname constraint with maxSkew 3."""
    nodes = [hn("node-a"), hn("node-b"), hn("node-c"), hn("node-d")]
    snapshot = build_snapshot(nodes, pods_on({"node-a": 4, "node-b": 3, "node-c": 2, "node-d": 1}))
    pl = plugin(snapshot, args=PodTopologySpreadArgs(), store=_store(service("s", {"foo": ""})))
    got = score(pl, pod("p", {"foo": ""}), snapshot, [n.name for n in nodes])
    assert got == {"node-a": 44, "node-b": 66, "node-c": 77, "node-d": 100}


# -- workload selectors kept between cycles --------------------------------------------------------------


def _soft_selector(pl: PodTopologySpread, p: Pod) -> LabelSelector | None:
    """The selector the system default constraints would use for ``p`` in a new cycle (None: none)."""
    pl.handle.informers.pump()  # the driver applies the store's changes before each cycle
    soft = pl.constraints(CycleState(), p, SA)
    return soft[0].selector if soft else None


def test_service_changes_between_cycles_are_seen() -> None:
    store = _store()
    pl = plugin(build_snapshot([]), args=PodTopologySpreadArgs(), store=store)
    p = pod("p", {"app": "web", "tier": "front"})
    assert _soft_selector(pl, p) is None
    store.create(service("s", {"app": "web"}))
    created = _soft_selector(pl, p)
    assert created is not None and not created.matches({"tier": "front"})
    store.update(service("s", {"tier": "front"}))
    updated = _soft_selector(pl, p)
    assert updated is not None and updated.matches({"tier": "front"}) and not updated.matches({"app": "web"})
    store.update(service("s", {"app": "db"}))  # selects the pod no more
    assert _soft_selector(pl, p) is None
    store.delete("Service", "default", "s")
    assert _soft_selector(pl, p) is None


def test_owner_created_between_cycles_is_seen() -> None:
    store = _store()
    pl = plugin(build_snapshot([]), args=PodTopologySpreadArgs(), store=store)
    p = pod("p", {"app": "web"}, owner=("apps/v1", "ReplicaSet", "rs"))
    assert _soft_selector(pl, p) is None
    store.create(replica_set("rs", {"matchLabels": {"app": "web"}}))
    assert _soft_selector(pl, p) is not None
    store.update(replica_set("rs", {"matchLabels": {"app": "web", "v": "2"}}))
    latest = _soft_selector(pl, p)
    assert latest is not None and not latest.matches({"app": "web"})


def test_kept_selectors_equal_a_fresh_read() -> None:
    """Services of two namespaces created, updated and deleted at random: the kept answer is the one a
    pass over every Service gives (the later of two Services naming the same key wins, in store order)."""
    rng = random.Random(7)
    store = _store()
    pl = plugin(build_snapshot([]), args=PodTopologySpreadArgs(), store=store)
    pods = [
        pod(f"p{i}", labels, namespace=ns)
        for i, (labels, ns) in enumerate(
            [
                ({"a": "1"}, "default"),
                ({"a": "1", "b": "2"}, "default"),
                ({"a": "1"}, "other"),
                ({}, "default"),
            ]
        )
    ]
    for _ in range(120):
        name, ns = f"s{rng.randrange(3)}", rng.choice(["default", "other"])
        selector = rng.choice([{"a": "1"}, {"b": "2"}, {"a": "1", "b": "2"}, {"c": "3"}, None])
        exists = store.get("Service", ns, name) is not None
        if exists and rng.random() < 0.3:
            store.delete("Service", ns, name)
        else:
            (store.update if exists else store.create)(service(name, selector, ns))
        if rng.random() < 0.4:
            pl.handle.informers.pump()
            for p in pods:
                kept = pl.constraints(CycleState(), p, SA)
                fresh = default_selector(p, informer_factory(store))
                assert (kept[0].selector if kept else LabelSelector()) == fresh


# -- parsing -------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "field"),
    [
        ([{"topologyKey": "zone", "whenUnsatisfiable": DNS}], "spec.topologySpreadConstraints[0].maxSkew"),
        ([spread(0, "zone", DNS)], "spec.topologySpreadConstraints[0].maxSkew"),
        ([{"maxSkew": 1, "whenUnsatisfiable": DNS}], "spec.topologySpreadConstraints[0].topologyKey"),
        ([spread(1, "zone", "Maybe")], "spec.topologySpreadConstraints[0].whenUnsatisfiable"),
        ([spread(1, "zone", SA, FOO, min_domains=2)], "spec.topologySpreadConstraints[0].minDomains"),
        ([spread(1, "zone", DNS, FOO, min_domains=0)], "spec.topologySpreadConstraints[0].minDomains"),
        (
            [spread(1, "zone", DNS, FOO, affinity_policy="Maybe")],
            "spec.topologySpreadConstraints[0].nodeAffinityPolicy",
        ),
        (
            [spread(1, "zone", DNS, FOO, taints_policy="honor")],
            "spec.topologySpreadConstraints[0].nodeTaintsPolicy",
        ),
        (
            [spread(1, "zone", DNS, match_label_keys=["app"])],
            "spec.topologySpreadConstraints[0].matchLabelKeys",
        ),
        (
            [spread(1, "zone", DNS, FOO, match_label_keys=["bad key"])],
            "spec.topologySpreadConstraints[0].matchLabelKeys[0]",
        ),
        (
            [spread(1, "zone", DNS, {"matchLabels": {"a": "b"}, "matchExpression": []})],
            "spec.topologySpreadConstraints[0].labelSelector.matchExpression",
        ),
        (
            [spread(1, "zone", DNS), spread(2, "zone", DNS)],
            "spec.topologySpreadConstraints[1].{topologyKey, whenUnsatisfiable}",
        ),
        ([{**spread(1, "zone", DNS), "maxskew": 1}], "spec.topologySpreadConstraints[0].maxskew"),
    ],
)
def test_invalid_constraints_name_the_field(raw: list[dict[str, Any]], field: str) -> None:
    with pytest.raises(InputError) as err:
        parse_topology_spread_constraints(raw)
    assert err.value.field == field


def test_constraint_defaults() -> None:
    (c,) = parse_topology_spread_constraints([spread(2, "zone", DNS, FOO)])
    assert (c.min_domains, c.node_affinity_policy, c.node_taints_policy) == (None, "Honor", "Ignore")
    (n,) = parse_topology_spread_constraints([spread(1, "zone", DNS)])
    assert n.label_selector.match_nothing


def test_invalid_constraints_fail_pre_filter_with_an_error() -> None:
    snapshot = build_snapshot([])
    obj = pod_dict("p")
    obj["spec"]["topologySpreadConstraints"] = [spread(0, "zone", DNS)]
    _, status = plugin(snapshot).pre_filter(CycleState(), Pod.from_dict(obj), snapshot)
    assert status is not None and status.code == Code.ERROR and "maxSkew" in status.message
    # Upstream wraps the error twice: calPreFilterState, then getConstraints.
    assert status.message.startswith(
        "get constraints from pod: obtaining pod's hard topology spread constraints:"
    )
