"""InterPodAffinity, table-driven after upstream ``filtering_test.go`` and ``scoring_test.go`` (v1.34).

Upstream's tests use the namespace ``""``; pods here default to ``default`` the way the API server
would place them, and terms that name the default namespace say ``default``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest

from kubesched.api.objects import Node, Pod
from kubesched.cache.cache import SchedulerCache, Snapshot
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.plugin_args import InterPodAffinityArgs
from kubesched.framework.status import Code, Status
from kubesched.framework.types import MAX_NODE_SCORE
from kubesched.plugins.interpodaffinity import (
    ERR_REASON_AFFINITY,
    ERR_REASON_ANTI_AFFINITY,
    ERR_REASON_EXISTING_ANTI_AFFINITY,
    InterPodAffinity,
)
from kubesched.plugins.testing import node_statuses, store_handle
from kubesched.store.memory import MemoryStore

AFF = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, [ERR_REASON_AFFINITY])
ANTI = Status(Code.UNSCHEDULABLE, [ERR_REASON_ANTI_AFFINITY])
EXISTING = Status(Code.UNSCHEDULABLE, [ERR_REASON_EXISTING_ANTI_AFFINITY])
SKIP = Status(Code.SKIP)

NAMESPACES = {
    "subteam1.team1": {"team": "team1"},
    "subteam2.team1": {"team": "team1"},
    "subteam1.team2": {"team": "team2"},
    "subteam2.team2": {"team": "team2"},
    "NS1": {},
}

_seq = iter(range(1_000_000))


# ------------------------------------------------------------------------------------ builders


def expr(key: str, op: str, *values: str) -> dict[str, Any]:
    out: dict[str, Any] = {"key": key, "operator": op}
    if values:
        out["values"] = list(values)
    return out


def term(
    topology_key: str,
    *exprs: dict[str, Any],
    namespaces: Sequence[str] | None = None,
    namespace_selector: dict[str, Any] | None = None,
    **extra: Any,
) -> dict[str, Any]:
    out: dict[str, Any] = {"labelSelector": {"matchExpressions": list(exprs)}, "topologyKey": topology_key}
    if namespaces is not None:
        out["namespaces"] = list(namespaces)
    if namespace_selector is not None:
        out["namespaceSelector"] = namespace_selector
    out.update(extra)
    return out


def weighted(weight: int, t: dict[str, Any]) -> dict[str, Any]:
    return {"weight": weight, "podAffinityTerm": t}


def affinity(
    aff: Sequence[dict[str, Any]] = (),
    anti: Sequence[dict[str, Any]] = (),
    pref_aff: Sequence[dict[str, Any]] = (),
    pref_anti: Sequence[dict[str, Any]] = (),
) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if aff or pref_aff:
        out["podAffinity"] = {}
        if aff:
            out["podAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"] = list(aff)
        if pref_aff:
            out["podAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"] = list(pref_aff)
    if anti or pref_anti:
        out["podAntiAffinity"] = {}
        if anti:
            out["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"] = list(anti)
        if pref_anti:
            out["podAntiAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"] = list(pref_anti)
    return out


def pod(
    labels: dict[str, str] | None = None,
    node: str = "",
    ns: str = "default",
    aff: dict[str, Any] | None = None,
    name: str = "",
) -> Pod:
    name = name or f"p{next(_seq)}"
    spec: dict[str, Any] = {"containers": [{"name": "c"}]}
    if node:
        spec["nodeName"] = node
    if aff:
        spec["affinity"] = aff
    meta: dict[str, Any] = {"name": name, "namespace": ns, "uid": f"uid-{name}", "labels": labels or {}}
    return Pod.from_dict({"kind": "Pod", "metadata": meta, "spec": spec})


def node(name: str, labels: dict[str, str]) -> Node:
    return Node.from_dict(
        {
            "kind": "Node",
            "metadata": {"name": name, "labels": labels},
            "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}},
        }
    )


def setup(
    nodes: Sequence[Node], pods: Sequence[Pod], args: InterPodAffinityArgs | None = None
) -> tuple[InterPodAffinity, Snapshot, SchedulerCache]:
    cache = SchedulerCache()
    for n in nodes:
        cache.add_node(n)
    for p in pods:
        cache.add_pod(p)
    snapshot = Snapshot()
    cache.update_snapshot(snapshot)
    store = MemoryStore()
    for ns, labels in NAMESPACES.items():
        store.create({"kind": "Namespace", "metadata": {"name": ns, "labels": labels}})
    return InterPodAffinity(args, store_handle(store, snapshot)), snapshot, cache


def run_filter(
    plugin: InterPodAffinity, p: Pod, snapshot: Snapshot, state: CycleState | None = None
) -> tuple[Status | None, dict[str, Status | None]]:
    state = state or CycleState()
    _, status = plugin.pre_filter(state, p, snapshot)
    if status is not None and not status.ok:
        return status, {}
    return status, node_statuses(plugin.filter_nodes(state, p, snapshot.table), snapshot)


# ------------------------------------------------------------------------------------ Filter, one node

POD_LABEL = {"service": "securityscan"}
POD_LABEL2 = {"security": "S1"}
NODE1 = node("node1", {"region": "r1", "zone": "z11"})


def existing(labels: dict[str, str] | None = None, aff: dict[str, Any] | None = None, **kw: Any) -> Pod:
    return pod(labels if labels is not None else POD_LABEL, node=kw.pop("node", "node1"), aff=aff, **kw)


@dataclass
class SingleNodeCase:
    name: str
    pod: Pod
    pods: list[Pod] = field(default_factory=list)
    want_pre_filter: Status | None = None
    want: Status | None = None


SINGLE_NODE_CASES = [
    SingleNodeCase("no required pod affinity rules and no pods", pod(), want_pre_filter=SKIP),
    SingleNodeCase(
        "affinity In matches the existing pod",
        pod(POD_LABEL2, aff=affinity([term("region", expr("service", "In", "securityscan", "value2"))])),
        [existing()],
    ),
    SingleNodeCase(
        "affinity NotIn matches the existing pod",
        pod(POD_LABEL2, aff=affinity([term("region", expr("service", "NotIn", "securityscan3", "value3"))])),
        [existing()],
    ),
    SingleNodeCase(
        "affinity fails because of a different namespace",
        pod(
            POD_LABEL2,
            aff=affinity(
                [term("", expr("service", "In", "securityscan", "value2"), namespaces=["DiffNameSpace"])]
            ),
        ),
        [existing(ns="ns")],
        want=AFF,
    ),
    SingleNodeCase(
        "affinity fails: selector does not match the existing pod",
        pod(POD_LABEL, aff=affinity([term("", expr("service", "In", "antivirusscan", "value2"))])),
        [existing()],
        want=AFF,
    ),
    SingleNodeCase(
        "several required terms with different operators all match",
        pod(
            POD_LABEL2,
            aff=affinity(
                [
                    term("region", expr("service", "Exists"), expr("wrongkey", "DoesNotExist")),
                    term(
                        "region",
                        expr("service", "In", "securityscan"),
                        expr("service", "NotIn", "WrongValue"),
                    ),
                ]
            ),
        ),
        [existing()],
    ),
    SingleNodeCase(
        "matchExpressions are ANDed: one does not match",
        pod(
            POD_LABEL2,
            aff=affinity(
                [
                    term("region", expr("service", "Exists"), expr("wrongkey", "DoesNotExist")),
                    term(
                        "region",
                        expr("service", "In", "securityscan2"),
                        expr("service", "NotIn", "WrongValue"),
                    ),
                ]
            ),
        ),
        [existing()],
        want=AFF,
    ),
    SingleNodeCase(
        "affinity and anti-affinity both satisfied",
        pod(
            POD_LABEL2,
            aff=affinity(
                [term("region", expr("service", "In", "securityscan", "value2"))],
                [term("node", expr("service", "In", "antivirusscan", "value2"))],
            ),
        ),
        [existing()],
    ),
    SingleNodeCase(
        "affinity, anti-affinity and the existing pod's anti-affinity satisfied",
        pod(
            POD_LABEL2,
            aff=affinity(
                [term("region", expr("service", "In", "securityscan", "value2"))],
                [term("node", expr("service", "In", "antivirusscan", "value2"))],
            ),
        ),
        [existing(aff=affinity(anti=[term("node", expr("service", "In", "antivirusscan", "value2"))]))],
    ),
    SingleNodeCase(
        "affinity satisfied, anti-affinity not",
        pod(
            POD_LABEL2,
            aff=affinity(
                [term("region", expr("service", "In", "securityscan", "value2"))],
                [term("zone", expr("service", "In", "securityscan", "value2"))],
            ),
        ),
        [existing()],
        want=ANTI,
    ),
    SingleNodeCase(
        "affinity and anti-affinity satisfied, the existing pod's anti-affinity not",
        pod(
            POD_LABEL,
            aff=affinity(
                [term("region", expr("service", "In", "securityscan", "value2"))],
                [term("node", expr("service", "In", "antivirusscan", "value2"))],
            ),
        ),
        [existing(aff=affinity(anti=[term("zone", expr("service", "In", "securityscan", "value2"))]))],
        want=EXISTING,
    ),
    SingleNodeCase(
        "the only matching pod is on a node that is not in the snapshot",
        pod(POD_LABEL, aff=affinity([term("region", expr("service", "NotIn", "securityscan", "value2"))])),
        [existing(node="node2")],
        want=AFF,
    ),
    SingleNodeCase(
        "existing pod's anti-affinity applies to a pod without anti-affinity",
        pod(POD_LABEL),
        [existing(aff=affinity(anti=[term("zone", expr("service", "In", "securityscan", "value2"))]))],
        want=EXISTING,
    ),
    SingleNodeCase(
        "existing pod's anti-affinity does not match the pod: PreFilter skips",
        pod(POD_LABEL),
        [existing(aff=affinity(anti=[term("zone", expr("service", "NotIn", "securityscan", "value2"))]))],
        want_pre_filter=SKIP,
    ),
    SingleNodeCase(
        "the pod's anti-affinity fails before the existing pod's is looked at",
        pod(
            POD_LABEL,
            aff=affinity(
                anti=[term("region", expr("service", "Exists")), term("region", expr("security", "Exists"))]
            ),
        ),
        [existing(POD_LABEL2, aff=affinity(anti=[term("zone", expr("security", "Exists"))]))],
        want=ANTI,
    ),
    SingleNodeCase(
        "symmetry a1: partial matches each way",
        pod(
            POD_LABEL,
            aff=affinity(
                anti=[term("zone", expr("service", "Exists")), term("zone", expr("security", "Exists"))]
            ),
        ),
        [existing(POD_LABEL2, aff=affinity(anti=[term("zone", expr("security", "Exists"))]))],
        want=ANTI,
    ),
    SingleNodeCase(
        "symmetry a2: partial matches each way",
        pod(POD_LABEL2, aff=affinity(anti=[term("zone", expr("security", "Exists"))])),
        [
            existing(
                POD_LABEL,
                aff=affinity(
                    anti=[term("zone", expr("service", "Exists")), term("zone", expr("security", "Exists"))]
                ),
            )
        ],
        want=EXISTING,
    ),
    SingleNodeCase(
        "symmetry b1",
        pod(
            {"abc": "", "xyz": ""},
            aff=affinity(anti=[term("zone", expr("abc", "Exists")), term("zone", expr("def", "Exists"))]),
        ),
        [
            existing(
                {"def": "", "xyz": ""},
                aff=affinity(anti=[term("zone", expr("abc", "Exists")), term("zone", expr("def", "Exists"))]),
            )
        ],
        want=ANTI,
    ),
    SingleNodeCase(
        "symmetry b2",
        pod(
            {"def": "", "xyz": ""},
            aff=affinity(anti=[term("zone", expr("abc", "Exists")), term("zone", expr("def", "Exists"))]),
        ),
        [
            existing(
                {"abc": "", "xyz": ""},
                aff=affinity(anti=[term("zone", expr("abc", "Exists")), term("zone", expr("def", "Exists"))]),
            )
        ],
        want=ANTI,
    ),
    SingleNodeCase(
        "affinity with a matching namespaceSelector",
        pod(
            POD_LABEL2,
            aff=affinity(
                [
                    term(
                        "region",
                        expr("service", "In", "securityscan", "value2"),
                        namespace_selector={"matchExpressions": [expr("team", "In", "team1")]},
                    )
                ]
            ),
        ),
        [existing(ns="subteam1.team1")],
    ),
    SingleNodeCase(
        "affinity with a non-matching namespaceSelector",
        pod(
            POD_LABEL2,
            aff=affinity(
                [
                    term(
                        "region",
                        expr("service", "In", "securityscan", "value2"),
                        namespace_selector={"matchExpressions": [expr("team", "In", "team1")]},
                    )
                ]
            ),
        ),
        [existing(ns="subteam1.team2")],
        want=AFF,
    ),
    SingleNodeCase(
        "anti-affinity with a matching namespaceSelector",
        pod(
            POD_LABEL2,
            ns="subteam1.team1",
            aff=affinity(
                anti=[
                    term(
                        "zone",
                        expr("service", "In", "securityscan", "value2"),
                        namespace_selector={"matchExpressions": [expr("team", "In", "team1")]},
                    )
                ]
            ),
        ),
        [existing(ns="subteam2.team1")],
        want=ANTI,
    ),
    SingleNodeCase(
        "anti-affinity with an empty namespaceSelector matches every namespace",
        pod(
            POD_LABEL2,
            ns="subteam1.team1",
            aff=affinity(
                anti=[term("zone", expr("service", "In", "securityscan", "value2"), namespace_selector={})]
            ),
        ),
        [existing(ns="subteam2.team1")],
        want=ANTI,
    ),
    SingleNodeCase(
        "anti-affinity with a non-matching namespaceSelector",
        pod(
            POD_LABEL2,
            ns="subteam1.team1",
            aff=affinity(
                anti=[
                    term(
                        "zone",
                        expr("service", "In", "securityscan", "value2"),
                        namespace_selector={"matchExpressions": [expr("team", "In", "team1")]},
                    )
                ]
            ),
        ),
        [existing(ns="subteam1.team2")],
    ),
]


@pytest.mark.parametrize("case", SINGLE_NODE_CASES, ids=lambda c: c.name)
def test_required_affinity_single_node(case: SingleNodeCase) -> None:
    plugin, snapshot, _ = setup([NODE1], case.pods)
    status, nodes = run_filter(plugin, case.pod, snapshot)
    assert status == case.want_pre_filter
    if status is None:
        assert nodes == {"node1": case.want}


@pytest.mark.parametrize(
    ("aff", "what"),
    [
        (affinity([term("region", expr("service", "In", "{{.bad-value.}}"))]), "requiredAffinityTerms"),
        (
            affinity(anti=[term("node", expr("service", "In", "{{.bad-value.}}"))]),
            "requiredAntiAffinityTerms",
        ),
    ],
)
def test_invalid_label_value_fails_pre_filter(aff: dict[str, Any], what: str) -> None:
    plugin, snapshot, _ = setup([NODE1], [])
    status, _ = run_filter(plugin, pod(POD_LABEL, aff=aff), snapshot)
    assert status is not None and status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert status.message.startswith(f"parsing pod: {what}: ")
    assert "{{.bad-value.}}" in status.message


# ------------------------------------------------------------------------------------ Filter, many nodes

RG_CHINA = {"region": "China"}
RG_CHINA_AZ1 = {"region": "China", "az": "az1"}
RG_INDIA = {"region": "India"}


def zone_nodes(*zones: str, region: str = "r1") -> list[Node]:
    names = "ABC"
    return [
        node(f"node{names[i]}", {"region": region, "zone": z, "hostname": f"node{names[i]}"})
        for i, z in enumerate(zones)
    ]


@dataclass
class MultiNodeCase:
    name: str
    pod: Pod
    pods: list[Pod]
    nodes: list[Node]
    want: list[Status | None]
    want_pre_filter: Status | None = None


MULTI_NODE_CASES = [
    MultiNodeCase(
        "nodes sharing the topology value of a matching pod's node pass",
        pod(aff=affinity([term("region", expr("foo", "In", "bar"))])),
        [pod({"foo": "bar"}, node="node1")],
        [node("node1", RG_CHINA), node("node2", RG_CHINA_AZ1), node("node3", RG_INDIA)],
        [None, None, AFF],
    ),
    MultiNodeCase(
        "the first pod of a collection is not blocked when no pod matches anywhere",
        pod(
            {"foo": "bar", "service": "securityscan"},
            aff=affinity(
                [term("zone", expr("foo", "In", "bar")), term("zone", expr("service", "In", "securityscan"))]
            ),
        ),
        [pod({"foo": "bar"}, node="nodeA")],
        [node("nodeA", {"zone": "az1", "hostname": "h1"}), node("nodeB", {"zone": "az2", "hostname": "h2"})],
        [None, None],
    ),
    MultiNodeCase(
        "the first pod of a collection still needs the topology keys",
        pod(
            {"foo": "bar", "service": "securityscan"},
            aff=affinity(
                [term("zone", expr("foo", "In", "bar")), term("zone", expr("service", "In", "securityscan"))]
            ),
        ),
        [pod({"foo": "bar"}, node="nodeA")],
        [
            node("nodeA", {"zoneLabel": "az1", "hostname": "h1"}),
            node("nodeB", {"zoneLabel": "az2", "hostname": "h2"}),
        ],
        [AFF, AFF],
    ),
    MultiNodeCase(
        "anti-affinity blocks every node of the matching pod's domain",
        pod(aff=affinity(anti=[term("region", expr("foo", "In", "abc"))])),
        [pod({"foo": "abc"}, node="nodeA")],
        zone_nodes("z1", "z1"),
        [ANTI, ANTI],
    ),
    MultiNodeCase(
        "anti-affinity blocks when any term matches",
        pod(
            aff=affinity(
                anti=[
                    term("region", expr("foo", "In", "abc")),
                    term("zone", expr("service", "In", "securityscan")),
                ]
            )
        ),
        [pod({"foo": "abc", "service": "securityscan"}, node="nodeA")],
        zone_nodes("z1", "z2"),
        [ANTI, ANTI],
    ),
    MultiNodeCase(
        "anti-affinity leaves other regions",
        pod(aff=affinity(anti=[term("region", expr("foo", "In", "abc"))])),
        [pod({"foo": "abc"}, node="nodeA")],
        [node("nodeA", RG_CHINA), node("nodeB", RG_CHINA_AZ1), node("nodeC", RG_INDIA)],
        [ANTI, ANTI, None],
    ),
    MultiNodeCase(
        "a matching pod in another namespace does not count",
        pod({"foo": "123"}, ns="NS1", aff=affinity(anti=[term("region", expr("foo", "In", "bar"))])),
        [
            pod({"foo": "bar"}, node="nodeA", ns="NS1"),
            pod(node="nodeC", ns="NS2", aff=affinity(anti=[term("region", expr("foo", "In", "123"))])),
        ],
        [node("nodeA", RG_CHINA), node("nodeB", RG_CHINA_AZ1), node("nodeC", RG_INDIA)],
        [ANTI, ANTI, None],
    ),
    MultiNodeCase(
        "existing pod's term with a topology key no node has: PreFilter skips",
        pod({"foo": ""}),
        [pod(node="nodeA", aff=affinity(anti=[term("invalid-node-label", expr("foo", "Exists"))]))],
        zone_nodes("z1", "z1"),
        [None, None],
        want_pre_filter=SKIP,
    ),
    MultiNodeCase(
        "the pod's anti-affinity term needs its topology key on the node too",
        pod(aff=affinity(anti=[term("invalid-node-label", expr("foo", "Exists"))])),
        [pod({"foo": ""}, node="nodeA")],
        zone_nodes("z1", "z1"),
        [None, None],
    ),
    MultiNodeCase(
        "existing pods' terms each block a domain",
        pod({"foo": "", "bar": ""}),
        [
            pod(node="nodeA", aff=affinity(anti=[term("zone", expr("foo", "Exists"))])),
            pod(node="nodeA", aff=affinity(anti=[term("region", expr("bar", "Exists"))])),
        ],
        zone_nodes("z1", "z2"),
        [EXISTING, EXISTING],
    ),
    MultiNodeCase(
        "the pod's anti-affinity terms each block a domain",
        pod(aff=affinity(anti=[term("zone", expr("foo", "Exists")), term("region", expr("bar", "Exists"))])),
        [pod({"foo": ""}, node="nodeA"), pod({"bar": ""}, node="nodeB")],
        zone_nodes("z1", "z2"),
        [ANTI, ANTI],
    ),
    MultiNodeCase(
        "existing pod: a term counts only where its topology key exists",
        pod({"foo": "", "bar": ""}),
        [
            pod(
                node="nodeA",
                aff=affinity(
                    anti=[
                        term("invalid-node-label", expr("foo", "Exists")),
                        term("zone", expr("bar", "Exists")),
                    ]
                ),
            )
        ],
        zone_nodes("z1", "z2"),
        [EXISTING, None],
    ),
    MultiNodeCase(
        "incoming pod: a term counts only where its topology key exists",
        pod(
            aff=affinity(
                anti=[term("invalid-node-label", expr("foo", "Exists")), term("zone", expr("bar", "Exists"))]
            )
        ),
        [pod({"foo": "", "bar": ""}, node="nodeA", name="podA")],
        zone_nodes("z1", "z2"),
        [ANTI, None],
    ),
    MultiNodeCase(
        "existing pod: every term with a valid key counts",
        pod({"foo": "", "bar": ""}),
        [
            pod(
                node="nodeA",
                aff=affinity(
                    anti=[term("region", expr("foo", "Exists")), term("zone", expr("bar", "Exists"))]
                ),
            )
        ],
        zone_nodes("z1", "z2"),
        [EXISTING, EXISTING],
    ),
    MultiNodeCase(
        "incoming pod: every term with a valid key counts",
        pod(aff=affinity(anti=[term("region", expr("foo", "Exists")), term("zone", expr("bar", "Exists"))])),
        [pod({"foo": "", "bar": ""}, node="nodeA")],
        zone_nodes("z1", "z2"),
        [ANTI, ANTI],
    ),
    MultiNodeCase(
        "existing pods on two nodes leave the third",
        pod({"foo": "", "bar": ""}),
        [
            pod(
                node="nodeA",
                aff=affinity(
                    anti=[term("zone", expr("foo", "Exists")), term("zone", expr("labelA", "Exists"))]
                ),
            ),
            pod(
                node="nodeB",
                aff=affinity(
                    anti=[term("zone", expr("bar", "Exists")), term("zone", expr("labelB", "Exists"))]
                ),
            ),
        ],
        zone_nodes("z1", "z2", "z3"),
        [EXISTING, EXISTING, None],
    ),
    MultiNodeCase(
        "affinity: all terms matched by one pod, then the keys",
        pod(aff=affinity([term("region", expr("foo", "Exists")), term("zone", expr("bar", "Exists"))])),
        [pod({"foo": "", "bar": ""}, node="nodeA", name="pod1")],
        zone_nodes("z1", "z1"),
        [None, None],
    ),
    MultiNodeCase(
        "affinity: the terms must be matched by the same pod",
        pod(aff=affinity([term("region", expr("foo", "Exists")), term("zone", expr("bar", "Exists"))])),
        [pod({"foo": ""}, node="nodeA", name="pod1"), pod({"bar": ""}, node="nodeB", name="pod2")],
        zone_nodes("z1", "z2"),
        [AFF, AFF],
    ),
]


@pytest.mark.parametrize("case", MULTI_NODE_CASES, ids=lambda c: c.name)
def test_required_affinity_multiple_nodes(case: MultiNodeCase) -> None:
    plugin, snapshot, _ = setup(case.nodes, case.pods)
    status, nodes = run_filter(plugin, case.pod, snapshot)
    assert status == case.want_pre_filter
    if status is None:
        assert nodes == {n.name: w for n, w in zip(case.nodes, case.want, strict=True)}


def test_match_label_keys_are_merged_into_the_selector() -> None:
    """The API server turns matchLabelKeys into ``key In (own value)``, mismatchLabelKeys into NotIn."""
    nodes = zone_nodes("z1", "z2", "z3")
    blue_v1 = pod({"app": "web", "ver": "v1"}, node="nodeA")
    blue_v2 = pod({"app": "web", "ver": "v2"}, node="nodeB")
    anti = term("zone", expr("app", "In", "web"), matchLabelKeys=["ver"])
    plugin, snapshot, _ = setup(nodes, [blue_v1, blue_v2])
    _, got = run_filter(plugin, pod({"app": "web", "ver": "v1"}, aff=affinity(anti=[anti])), snapshot)
    assert got == {"nodeA": ANTI, "nodeB": None, "nodeC": None}
    mismatch = term("zone", expr("app", "In", "web"), mismatchLabelKeys=["ver"])
    _, got = run_filter(plugin, pod({"app": "web", "ver": "v1"}, aff=affinity(anti=[mismatch])), snapshot)
    assert got == {"nodeA": None, "nodeB": ANTI, "nodeC": None}


def test_terminating_pods_still_count() -> None:
    nodes = zone_nodes("z1", "z2")
    leaving = Pod.from_dict(
        {
            "kind": "Pod",
            "metadata": {
                "name": "old",
                "uid": "old",
                "labels": {"foo": "x"},
                "deletionTimestamp": "2024-01-01T00:00:00Z",
            },
            "spec": {"nodeName": "nodeA", "containers": [{"name": "c"}]},
        }
    )
    plugin, snapshot, _ = setup(nodes, [leaving])
    _, got = run_filter(plugin, pod(aff=affinity(anti=[term("zone", expr("foo", "Exists"))])), snapshot)
    assert got == {"nodeA": ANTI, "nodeB": None}


def test_cache_changes_reach_the_next_cycle() -> None:
    nodes = zone_nodes("z1", "z2")
    plugin, snapshot, cache = setup(nodes, [])
    incoming = pod(aff=affinity(anti=[term("zone", expr("app", "In", "db"))]))
    _, status = plugin.pre_filter(CycleState(), incoming, snapshot)
    assert status is None
    db = pod({"app": "db"}, node="nodeB")
    cache.add_pod(db)
    cache.update_snapshot(snapshot)
    assert run_filter(plugin, incoming, snapshot)[1] == {"nodeA": None, "nodeB": ANTI}
    cache.remove_pod(db)
    cache.update_snapshot(snapshot)
    assert run_filter(plugin, incoming, snapshot)[1] == {"nodeA": None, "nodeB": None}


# ------------------------------------------------------------------------------------ AddPod / RemovePod


def test_add_and_remove_pod_update_a_clone_only() -> None:
    nodes = [
        node("nodeA", {"region": "r1", "zone": "z11"}),
        node("nodeB", {"region": "r1", "zone": "z12"}),
        node("nodeC", {"region": "r2", "zone": "z21"}),
    ]
    anti_foo = affinity(anti=[term("region", expr("foo", "In", "bar"))])
    pending = pod({"foo": "bar"}, aff=anti_foo)
    plugin, snapshot, _ = setup(nodes, [pod(node="nodeC", aff=anti_foo)])
    state = CycleState()
    _, status = plugin.pre_filter(state, pending, snapshot)
    assert status is None
    base = node_statuses(plugin.filter_nodes(state, pending, snapshot.table), snapshot)
    assert base == {"nodeA": None, "nodeB": None, "nodeC": EXISTING}

    pre = state.get("PreFilterInterPodAffinity")
    clone = CycleState()
    clone.write("PreFilterInterPodAffinity", pre.clone())
    added = pod({"foo": "bar"}, node="nodeB", aff=anti_foo)
    assert plugin.add_pod(clone, pending, added, snapshot.table.slot_of["nodeB"]) is None
    after_add = node_statuses(plugin.filter_nodes(clone, pending, snapshot.table), snapshot)
    # The added pod matches the pending pod's anti-affinity (region r1) and its own term matches it.
    assert after_add == {"nodeA": ANTI, "nodeB": ANTI, "nodeC": EXISTING}
    assert node_statuses(plugin.filter_nodes(state, pending, snapshot.table), snapshot) == base

    assert plugin.remove_pod(clone, pending, added, snapshot.table.slot_of["nodeB"]) is None
    assert node_statuses(plugin.filter_nodes(clone, pending, snapshot.table), snapshot) == base


def test_remove_pod_lifts_affinity_partner() -> None:
    nodes = zone_nodes("z1", "z2")
    partner = pod({"app": "db"}, node="nodeA")
    plugin, snapshot, _ = setup(nodes, [partner])
    incoming = pod({"app": "web"}, aff=affinity([term("zone", expr("app", "In", "db"))]))
    state = CycleState()
    plugin.pre_filter(state, incoming, snapshot)
    assert node_statuses(plugin.filter_nodes(state, incoming, snapshot.table), snapshot) == {
        "nodeA": None,
        "nodeB": AFF,
    }
    plugin.remove_pod(state, incoming, partner, snapshot.table.slot_of["nodeA"])
    assert node_statuses(plugin.filter_nodes(state, incoming, snapshot.table), snapshot) == {
        "nodeA": AFF,
        "nodeB": AFF,
    }


# ------------------------------------------------------------------------------------ Score

S1 = {"security": "S1"}
S2 = {"security": "S2"}
AZ1 = {"az": "az1"}
AZ2 = {"az": "az2"}

STAY_WITH_S1_IN_REGION = affinity(pref_aff=[weighted(5, term("region", expr("security", "In", "S1")))])
STAY_WITH_S2_IN_REGION = affinity(pref_aff=[weighted(6, term("region", expr("security", "In", "S2")))])
AFFINITY3 = affinity(
    pref_aff=[
        weighted(8, term("region", expr("security", "NotIn", "S1"), expr("security", "In", "S2"))),
        weighted(2, term("region", expr("security", "Exists"), expr("wrongkey", "DoesNotExist"))),
    ]
)
HARD_AFFINITY = affinity(
    [
        term("region", expr("security", "In", "S1", "value2")),
        term("region", expr("security", "Exists"), expr("wrongkey", "DoesNotExist")),
    ]
)
AWAY_FROM_S1_IN_AZ = affinity(pref_anti=[weighted(5, term("az", expr("security", "In", "S1")))])
AWAY_FROM_S2_IN_AZ = affinity(pref_anti=[weighted(5, term("az", expr("security", "In", "S2")))])
STAY_S1_AWAY_S2 = affinity(
    pref_aff=[weighted(8, term("region", expr("security", "In", "S1")))],
    pref_anti=[weighted(5, term("az", expr("security", "In", "S2")))],
)
_NS_SELECTOR = {"matchExpressions": [expr("team", "In", "team1")]}
AFFINITY_NS_SELECTOR = affinity(
    pref_aff=[
        weighted(
            5,
            term(
                "region",
                expr("security", "In", "S1"),
                namespaces=["subteam2.team2"],
                namespace_selector=_NS_SELECTOR,
            ),
        )
    ]
)
ANTI_AFFINITY_NS_SELECTOR = affinity(
    pref_anti=[
        weighted(
            5,
            term(
                "region",
                expr("security", "In", "S1"),
                namespaces=["subteam2.team2"],
                namespace_selector=_NS_SELECTOR,
            ),
        )
    ]
)

MAX = MAX_NODE_SCORE


@dataclass
class ScoreCase:
    name: str
    pod: Pod
    pods: list[Pod]
    nodes: list[Node]
    want: list[int] | None = None
    want_pre_score: Code | None = None
    ignore_preferred: bool = False
    hard_weight: int = 1


def nodes_with(*labels: dict[str, str]) -> list[Node]:
    return [node(f"node{i + 1}", lab) for i, lab in enumerate(labels)]


SCORE_CASES = [
    ScoreCase(
        "no affinity anywhere: skip",
        pod(S1),
        [],
        nodes_with(RG_CHINA, RG_INDIA, AZ1),
        want_pre_score=Code.SKIP,
    ),
    ScoreCase(
        "affinity: the node matching both the key and the pods scores highest",
        pod(S1, aff=STAY_WITH_S1_IN_REGION),
        [pod(S1, node="node1"), pod(S2, node="node2"), pod(S1, node="node3")],
        nodes_with(RG_CHINA, RG_INDIA, AZ1),
        [MAX, 0, 0],
    ),
    ScoreCase(
        "affinity: the whole domain of a matching pod scores the same",
        pod(aff=STAY_WITH_S1_IN_REGION),
        [pod(S1, node="node1")],
        nodes_with(RG_CHINA, RG_CHINA_AZ1, RG_INDIA),
        [MAX, MAX, 0],
    ),
    ScoreCase(
        "affinity: the region with more matching pods wins",
        pod(S1, aff=STAY_WITH_S2_IN_REGION),
        [pod(S2, node=n) for n in ("node1", "node1", "node2", "node3", "node4", "node5")],
        nodes_with(RG_CHINA, RG_INDIA, RG_CHINA, RG_CHINA, RG_INDIA),
        [MAX, 0, MAX, MAX, 0],
    ),
    ScoreCase(
        "affinity: different operators, some terms not matching",
        pod(S1, aff=AFFINITY3),
        [pod(S1, node="node1"), pod(S2, node="node2"), pod(S1, node="node3")],
        nodes_with(RG_CHINA, RG_INDIA, AZ1),
        [20, MAX, 0],
    ),
    ScoreCase(
        "affinity symmetry: existing pods' preferred terms",
        pod(S2),
        [
            pod(S1, node="node1", aff=STAY_WITH_S1_IN_REGION),
            pod(S2, node="node2", aff=STAY_WITH_S2_IN_REGION),
        ],
        nodes_with(RG_CHINA, RG_INDIA, AZ1),
        [0, MAX, 0],
    ),
    ScoreCase(
        "affinity symmetry with a namespace selector",
        pod(S1, ns="subteam1.team1"),
        [
            pod(S1, node="node1", aff=AFFINITY_NS_SELECTOR),
            pod(S2, node="node2", aff=STAY_WITH_S2_IN_REGION),
        ],
        nodes_with(RG_CHINA, RG_INDIA, AZ1),
        [MAX, 0, 0],
    ),
    ScoreCase(
        "anti-affinity symmetry with a namespace selector",
        pod(S1, ns="subteam1.team1"),
        [
            pod(S1, node="node1", aff=ANTI_AFFINITY_NS_SELECTOR),
            pod(S2, node="node2", aff=STAY_WITH_S2_IN_REGION),
        ],
        nodes_with(RG_CHINA, RG_INDIA, AZ1),
        [0, MAX, MAX],
    ),
    ScoreCase(
        "affinity symmetry: existing pods' required terms with hardPodAffinityWeight",
        pod(S1),
        [pod(S1, node="node1", aff=HARD_AFFINITY), pod(S2, node="node2", aff=HARD_AFFINITY)],
        nodes_with(RG_CHINA, RG_INDIA, AZ1),
        [MAX, MAX, 0],
    ),
    ScoreCase(
        "anti-affinity: the node without matching pods scores high",
        pod(S1, aff=AWAY_FROM_S1_IN_AZ),
        [pod(S1, node="node1"), pod(S2, node="node2")],
        nodes_with(AZ1, RG_CHINA),
        [0, MAX],
    ),
    ScoreCase(
        "anti-affinity: a node without the key scores high",
        pod(S1, aff=AWAY_FROM_S1_IN_AZ),
        [pod(S1, node="node1"), pod(S1, node="node2")],
        nodes_with(AZ1, RG_CHINA),
        [0, MAX],
    ),
    ScoreCase(
        "anti-affinity: more matching pods, lower score",
        pod(S1, aff=AWAY_FROM_S1_IN_AZ),
        [pod(S1, node="node1"), pod(S1, node="node1"), pod(S2, node="node2")],
        nodes_with(AZ1, RG_INDIA),
        [0, MAX],
    ),
    ScoreCase(
        "anti-affinity symmetry",
        pod(S2),
        [pod(S1, node="node1", aff=AWAY_FROM_S2_IN_AZ), pod(S2, node="node2", aff=AWAY_FROM_S1_IN_AZ)],
        nodes_with(AZ1, AZ2),
        [0, MAX],
    ),
    ScoreCase(
        "affinity and anti-affinity together",
        pod(S1, aff=STAY_S1_AWAY_S2),
        [pod(S1, node="node1"), pod(S1, node="node2")],
        nodes_with(RG_CHINA, AZ1),
        [MAX, 0],
    ),
    ScoreCase(
        "affinity and anti-affinity, pods with the same labels",
        pod(S1, aff=STAY_S1_AWAY_S2),
        [pod(S1, node=n) for n in ("node1", "node1", "node2", "node3", "node3", "node4", "node5")],
        nodes_with(RG_CHINA_AZ1, RG_INDIA, RG_CHINA, RG_CHINA, RG_INDIA),
        [MAX, 0, MAX, MAX, 0],
    ),
    ScoreCase(
        "affinity, anti-affinity and symmetry",
        pod(S1, aff=STAY_S1_AWAY_S2),
        [
            pod(S1, node="node1"),
            pod(S2, node="node2"),
            pod(node="node3", aff=STAY_S1_AWAY_S2),
            pod(node="node4", aff=AWAY_FROM_S1_IN_AZ),
        ],
        nodes_with(RG_CHINA, AZ1, RG_INDIA, AZ2),
        [MAX, 0, MAX, 0],
    ),
    ScoreCase(
        "only some nodes of a domain host pods with affinity",
        pod(S1),
        [pod(S1, node="node1"), pod(node="node2", aff=STAY_S1_AWAY_S2)],
        nodes_with(RG_CHINA, RG_CHINA),
        [0, 0],
    ),
    ScoreCase(
        "the pod's preferred terms with a namespace selector",
        pod(S1, ns="subteam1.team1", aff=AFFINITY_NS_SELECTOR),
        [
            pod(S1, node="node1", ns="subteam1.team1"),
            pod(S1, node="node1", ns="subteam1.team1"),
            pod(S1, node="node1", ns="subteam1.team2"),
            pod(S1, node="node2", ns="subteam2.team1"),
        ],
        nodes_with(RG_CHINA, RG_INDIA),
        [MAX, 0],
    ),
    ScoreCase(
        "the pod's preferred terms with a namespace selector and namespaces",
        pod(S1, ns="subteam1.team1", aff=AFFINITY_NS_SELECTOR),
        [
            pod(S1, node="node1", ns="subteam1.team1"),
            pod(S1, node="node1", ns="subteam1.team1"),
            pod(S1, node="node1", ns="subteam2.team2"),
            pod(S1, node="node2", ns="subteam2.team1"),
        ],
        nodes_with(RG_CHINA, RG_INDIA),
        [MAX, 0],
    ),
    ScoreCase(
        "the pod's preferred anti-affinity with a namespace selector",
        pod(S1, ns="subteam1.team1", aff=ANTI_AFFINITY_NS_SELECTOR),
        [
            pod(S1, node="node1", ns="subteam1.team1"),
            pod(S1, node="node1", ns="subteam1.team1"),
            pod(S1, node="node1", ns="subteam1.team2"),
            pod(S1, node="node2", ns="subteam2.team1"),
        ],
        nodes_with(RG_CHINA, RG_INDIA),
        [0, MAX],
    ),
    ScoreCase(
        "ignorePreferredTermsOfExistingPods skips a pod without preferred terms",
        pod(S2),
        [pod(S1, node="node1", aff=STAY_S1_AWAY_S2), pod(S2, node="node2", aff=STAY_WITH_S2_IN_REGION)],
        nodes_with(RG_CHINA, RG_INDIA),
        want_pre_score=Code.SKIP,
        ignore_preferred=True,
    ),
    ScoreCase(
        "existing pods' preferred terms count by default",
        pod(S2),
        [pod(S1, node="node1", aff=STAY_S1_AWAY_S2), pod(S2, node="node2", aff=STAY_WITH_S2_IN_REGION)],
        nodes_with(RG_CHINA, RG_INDIA),
        [0, MAX],
    ),
    ScoreCase("no nodes to score", pod(S2), [], [], want_pre_score=Code.SKIP),
]

_HARD_SYMMETRIC = affinity(
    [
        term(
            "region",
            expr("service", "In", "S1"),
            namespaces=["default", "subteam2.team2"],
            namespace_selector=_NS_SELECTOR,
        )
    ]
)
_HARD_PODS = [pod(node="node1", aff=_HARD_SYMMETRIC), pod(node="node2", aff=_HARD_SYMMETRIC)]
_HARD_NODES = nodes_with(RG_CHINA, RG_INDIA, AZ1)
SCORE_CASES += [
    ScoreCase("hardPodAffinityWeight 1", pod({"service": "S1"}), _HARD_PODS, _HARD_NODES, [MAX, MAX, 0]),
    ScoreCase(
        "hardPodAffinityWeight 0",
        pod({"service": "S1"}),
        _HARD_PODS,
        _HARD_NODES,
        want_pre_score=Code.SKIP,
        hard_weight=0,
    ),
    ScoreCase(
        "hard affinity, no matching namespace",
        pod({"service": "S1"}, ns="subteam1.team2"),
        _HARD_PODS,
        _HARD_NODES,
        want_pre_score=Code.SKIP,
    ),
    ScoreCase(
        "hard affinity, matching namespace selector",
        pod({"service": "S1"}, ns="subteam1.team1"),
        _HARD_PODS,
        _HARD_NODES,
        [MAX, MAX, 0],
    ),
    ScoreCase(
        "hard affinity, matching namespaces",
        pod({"service": "S1"}, ns="subteam2.team2"),
        _HARD_PODS,
        _HARD_NODES,
        [MAX, MAX, 0],
    ),
]


@pytest.mark.parametrize("case", SCORE_CASES, ids=lambda c: c.name)
def test_score(case: ScoreCase) -> None:
    args = InterPodAffinityArgs(
        hard_pod_affinity_weight=case.hard_weight,
        ignore_preferred_terms_of_existing_pods=case.ignore_preferred,
    )
    plugin, snapshot, _ = setup(case.nodes, case.pods, args)
    table = snapshot.table
    slots = np.array([table.slot_of[n.name] for n in case.nodes], dtype=np.int64)
    state = CycleState()
    status = plugin.pre_score(state, case.pod, table, slots)
    if case.want_pre_score is not None:
        assert status is not None and status.code == case.want_pre_score
        return
    assert status is None
    scores = plugin.score_nodes(state, case.pod, table, slots).copy()
    plugin.normalize_scores(state, case.pod, scores)
    assert scores.tolist() == case.want


@pytest.mark.parametrize("anti", [False, True])
def test_invalid_preferred_term_fails_pre_score(anti: bool) -> None:
    bad = [weighted(8, term("region", expr("security", "In", "{{.bad-value.}}")))]
    aff = affinity(pref_anti=bad) if anti else affinity(pref_aff=bad)
    plugin, snapshot, _ = setup(nodes_with(RG_CHINA, RG_CHINA), [])
    slots = np.array(list(snapshot.table.slot_of.values()), dtype=np.int64)
    status = plugin.pre_score(CycleState(), pod(aff=aff), snapshot.table, slots)
    assert status is not None and status.code == Code.ERROR
    assert "{{.bad-value.}}" in status.message


def test_raw_scores_and_float_normalization() -> None:
    """Raw scores are signed weight sums per domain; normalization is upstream's float64 formula."""
    nodes = nodes_with(AZ1, AZ2, {"az": "az3"})
    pods = [pod(S1, node="node1"), pod(S1, node="node1"), pod(S1, node="node2"), pod(S2, node="node3")]
    incoming = pod(aff=affinity(pref_anti=[weighted(3, term("az", expr("security", "In", "S1")))]))
    plugin, snapshot, _ = setup(nodes, pods)
    table = snapshot.table
    slots = np.array([table.slot_of[n.name] for n in nodes], dtype=np.int64)
    state = CycleState()
    assert plugin.pre_score(state, incoming, table, slots) is None
    raw = plugin.score_nodes(state, incoming, table, slots)
    assert raw.tolist() == [-6, -3, 0]
    scores = raw.copy()
    plugin.normalize_scores(state, incoming, scores)
    assert scores.tolist() == [0, int(100 * (3 / 6)), 100]


def test_normalize_equal_scores_gives_zero() -> None:
    plugin = InterPodAffinity()
    state = CycleState()
    state.write("PreScoreInterPodAffinity", {"zone": np.array([4], dtype=np.int64)})
    scores = np.array([4, 4], dtype=np.int64)
    plugin.normalize_scores(state, pod(), scores)
    assert scores.tolist() == [0, 0]


def test_events_to_register_cover_pods_and_node_changes() -> None:
    events = InterPodAffinity().events_to_register()
    assert {(e.resource, str(e.action)) for e in events} == {
        ("Pod", "*"),
        ("Node", "Add"),
        ("Node", "Update"),
    }


# ---------------------------------------------------------------------------- namespaces between cycles


class _Pumped:
    """The plugin's store, whose writes reach the informers before the next cycle (as the driver
    pumps them between cycles)."""

    def __init__(self, plugin: InterPodAffinity) -> None:
        self.handle = plugin.handle
        self.store = self.handle.informers.store

    def get(self, kind: str, namespace: str | None, name: str) -> Any:
        return self.store.get(kind, namespace, name)

    def create(self, obj: dict[str, Any]) -> None:
        self.store.create(obj)
        self.handle.informers.pump()

    def update(self, obj: dict[str, Any]) -> None:
        self.store.update(obj)
        self.handle.informers.pump()

    def delete(self, kind: str, namespace: str | None, name: str) -> None:
        self.store.delete(kind, namespace, name)
        self.handle.informers.pump()


def _store_of(plugin: InterPodAffinity) -> _Pumped:
    return _Pumped(plugin)


def test_namespace_changes_between_cycles_reach_a_namespace_selector() -> None:
    team1 = {"matchExpressions": [expr("team", "In", "team1")]}
    incoming = pod(
        POD_LABEL2, aff=affinity(anti=[term("region", expr("service", "Exists"), namespace_selector=team1)])
    )
    plugin, snapshot, _ = setup([NODE1], [existing(ns="subteam1.team2"), existing(ns="later")])
    store = _store_of(plugin)
    assert run_filter(plugin, incoming, snapshot)[1] == {"node1": None}
    relabelled = dict(store.get("Namespace", None, "subteam1.team2") or {})
    store.update({**relabelled, "metadata": {"name": "subteam1.team2", "labels": {"team": "team1"}}})
    assert run_filter(plugin, incoming, snapshot)[1] == {"node1": ANTI}
    store.update({**relabelled, "metadata": {"name": "subteam1.team2", "labels": {"team": "team2"}}})
    assert run_filter(plugin, incoming, snapshot)[1] == {"node1": None}
    store.create({"kind": "Namespace", "metadata": {"name": "later", "labels": {"team": "team1"}}})
    assert run_filter(plugin, incoming, snapshot)[1] == {"node1": ANTI}
    store.delete("Namespace", None, "later")
    assert run_filter(plugin, incoming, snapshot)[1] == {"node1": None}


def test_namespace_changes_between_cycles_reach_preferred_terms() -> None:
    team1 = {"matchExpressions": [expr("team", "In", "team1")]}
    nodes = nodes_with(AZ1, AZ2)
    pods = [pod(S1, node="node1", ns="subteam1.team2")]
    incoming = pod(
        aff=affinity(
            pref_aff=[weighted(5, term("az", expr("security", "In", "S1"), namespace_selector=team1))]
        )
    )
    plugin, snapshot, _ = setup(nodes, pods)
    table = snapshot.table
    slots = np.array([table.slot_of[n.name] for n in nodes], dtype=np.int64)

    def raw_scores() -> list[int] | None:
        state = CycleState()
        if plugin.pre_score(state, incoming, table, slots) is not None:
            return None  # skipped: no term matched anything
        return [int(v) for v in plugin.score_nodes(state, incoming, table, slots)]

    assert raw_scores() is None
    store = _store_of(plugin)
    store.update({"kind": "Namespace", "metadata": {"name": "subteam1.team2", "labels": {"team": "team1"}}})
    assert raw_scores() == [5, 0]
