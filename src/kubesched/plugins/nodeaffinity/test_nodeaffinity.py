"""NodeAffinity, table-driven after upstream ``node_affinity_test.go`` (v1.34)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest

from kubesched.api.manifests import load_manifests
from kubesched.api.objects import Node, Pod
from kubesched.cache.cache import SchedulerCache, Snapshot
from kubesched.errors import InputError
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.plugin_args import NodeAffinityArgs, parse_args
from kubesched.framework.status import Code, Status
from kubesched.framework.types import MAX_NODE_SCORE, ActionType, ClusterEvent
from kubesched.plugins.nodeaffinity import (
    ERR_REASON_CONFLICT,
    ERR_REASON_ENFORCED,
    ERR_REASON_POD,
    NodeAffinity,
)
from kubesched.sim.simulation import Simulation


def make_node(name: str, labels: dict[str, str] | None = None) -> Node:
    return Node.from_dict(
        {
            "kind": "Node",
            "metadata": {"name": name, "labels": labels or {}},
            "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}},
        }
    )


def make_pod(
    node_selector: dict[str, str] | None = None, affinity: dict[str, Any] | None = None, name: str = "p"
) -> Pod:
    spec: dict[str, Any] = {"containers": [{"name": "c"}]}
    if node_selector is not None:
        spec["nodeSelector"] = node_selector
    if affinity is not None:
        spec["affinity"] = affinity
    return Pod.from_dict({"kind": "Pod", "metadata": {"name": name, "uid": f"uid-{name}"}, "spec": spec})


def make_snapshot(nodes: list[Node]) -> Snapshot:
    cache = SchedulerCache()
    for n in nodes:
        cache.add_node(n)
    snap = Snapshot()
    cache.update_snapshot(snap)
    return snap


def expr(key: str, op: str, *values: str) -> dict[str, Any]:
    out: dict[str, Any] = {"key": key, "operator": op}
    if values:
        out["values"] = list(values)
    return out


def name_in(*names: str) -> dict[str, Any]:
    return {"key": "metadata.name", "operator": "In", "values": list(names)}


def required(*terms: dict[str, Any]) -> dict[str, Any]:
    return {
        "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": list(terms)}}
    }


def preferred(*terms: tuple[int, dict[str, Any]]) -> dict[str, Any]:
    return {
        "nodeAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": w, "preference": pref} for w, pref in terms
            ]
        }
    }


# ------------------------------------------------------------------------------------ Filter


@dataclass
class FilterCase:
    name: str
    pod: Pod
    labels: dict[str, str] = field(default_factory=dict)
    node_name: str = "node1"
    want_reason: str | None = None  # Filter: None passes, else the UnschedulableAndUnresolvable reason
    want_pre_filter: Status | None = None
    want_pre_filter_names: set[str] | None = None
    added: dict[str, Any] | None = None
    run_pre_filter: bool = True


FILTER_CASES = [
    FilterCase("missing labels", make_pod({"foo": "bar"}), want_reason=ERR_REASON_POD),
    FilterCase("same labels", make_pod({"foo": "bar"}), {"foo": "bar"}),
    FilterCase("node labels are superset", make_pod({"foo": "bar"}), {"foo": "bar", "baz": "blah"}),
    FilterCase(
        "node labels are subset",
        make_pod({"foo": "bar", "baz": "blah"}),
        {"foo": "bar"},
        want_reason=ERR_REASON_POD,
    ),
    FilterCase(
        "matchExpressions In matches",
        make_pod(affinity=required({"matchExpressions": [expr("foo", "In", "bar", "value2")]})),
        {"foo": "bar"},
    ),
    FilterCase(
        "matchExpressions Gt matches",
        make_pod(affinity=required({"matchExpressions": [expr("kernel-version", "Gt", "0204")]})),
        {"kernel-version": "0206"},
    ),
    FilterCase(
        "matchExpressions NotIn matches",
        make_pod(affinity=required({"matchExpressions": [expr("mem-type", "NotIn", "DDR", "DDR2")]})),
        {"mem-type": "DDR3"},
    ),
    FilterCase(
        "matchExpressions Exists matches",
        make_pod(affinity=required({"matchExpressions": [expr("GPU", "Exists")]})),
        {"GPU": "NVIDIA-GRID-K1"},
    ),
    FilterCase(
        "affinity that doesn't match node's labels",
        make_pod(affinity=required({"matchExpressions": [expr("foo", "In", "value1", "value2")]})),
        {"foo": "bar"},
        want_reason=ERR_REASON_POD,
    ),
    FilterCase(
        "empty matchExpressions match no objects",
        make_pod(affinity=required({"matchExpressions": []})),
        {"foo": "bar"},
        want_reason=ERR_REASON_POD,
    ),
    FilterCase("no affinity", make_pod(), {"foo": "bar"}, want_pre_filter=Status(Code.SKIP)),
    FilterCase(
        "affinity but nil required selector",
        make_pod(affinity={"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": None}}),
        {"foo": "bar"},
        want_pre_filter=Status(Code.SKIP),
    ),
    FilterCase(
        "multiple matchExpressions ANDed that match",
        make_pod(
            affinity=required(
                {"matchExpressions": [expr("GPU", "Exists"), expr("GPU", "NotIn", "AMD", "INTER")]}
            )
        ),
        {"GPU": "NVIDIA-GRID-K1"},
    ),
    FilterCase(
        "multiple matchExpressions ANDed that don't match",
        make_pod(
            affinity=required(
                {"matchExpressions": [expr("GPU", "Exists"), expr("GPU", "In", "AMD", "INTER")]}
            )
        ),
        {"GPU": "NVIDIA-GRID-K1"},
        want_reason=ERR_REASON_POD,
    ),
    FilterCase(
        "multiple terms ORed, one matches",
        make_pod(
            affinity=required(
                {"matchExpressions": [expr("foo", "In", "bar", "value2")]},
                {"matchExpressions": [expr("diffkey", "In", "wrong", "value2")]},
            )
        ),
        {"foo": "bar"},
    ),
    FilterCase(
        "affinity and nodeSelector both satisfied",
        make_pod({"foo": "bar"}, required({"matchExpressions": [expr("foo", "Exists")]})),
        {"foo": "bar"},
    ),
    FilterCase(
        "affinity matches but nodeSelector does not",
        make_pod({"foo": "bar"}, required({"matchExpressions": [expr("foo", "Exists")]})),
        {"foo": "barrrrrr"},
        want_reason=ERR_REASON_POD,
    ),
    FilterCase(
        "invalid value in an affinity term matches no node",
        make_pod(affinity=required({"matchExpressions": [expr("foo", "NotIn", "invalid value: ___@#$%^")]})),
        {"foo": "bar"},
        want_reason=ERR_REASON_POD,
    ),
    FilterCase(
        "matchFields In matches",
        make_pod(affinity=required({"matchFields": [name_in("node1")]})),
        node_name="node1",
        want_pre_filter_names={"node1"},
    ),
    FilterCase(
        "matchFields In does not match",
        make_pod(affinity=required({"matchFields": [name_in("node1")]})),
        node_name="node2",
        want_reason=ERR_REASON_POD,
        want_pre_filter_names={"node1"},
    ),
    FilterCase(
        "two terms: matchFields does not match, matchExpressions matches",
        make_pod(
            affinity=required(
                {"matchFields": [name_in("node1"), name_in("node2")]},
                {"matchExpressions": [expr("foo", "In", "bar")]},
            )
        ),
        {"foo": "bar"},
        node_name="node2",
    ),
    FilterCase(
        "one term: matchFields does not match, matchExpressions matches",
        make_pod(
            affinity=required(
                {"matchFields": [name_in("node1")], "matchExpressions": [expr("foo", "In", "bar")]}
            )
        ),
        {"foo": "bar"},
        node_name="node2",
        want_reason=ERR_REASON_POD,
        want_pre_filter_names={"node1"},
    ),
    FilterCase(
        "one term: both matchFields and matchExpressions match",
        make_pod(
            affinity=required(
                {"matchFields": [name_in("node1")], "matchExpressions": [expr("foo", "In", "bar")]}
            )
        ),
        {"foo": "bar"},
        node_name="node1",
        want_pre_filter_names={"node1"},
    ),
    FilterCase(
        "two terms: neither matches",
        make_pod(
            affinity=required(
                {"matchFields": [name_in("node1")]},
                {"matchExpressions": [expr("foo", "In", "not-match-to-bar")]},
            )
        ),
        {"foo": "bar"},
        node_name="node2",
        want_reason=ERR_REASON_POD,
    ),
    FilterCase(
        "two terms of node name affinity",
        make_pod(affinity=required({"matchFields": [name_in("node1")]}, {"matchFields": [name_in("node2")]})),
        node_name="node2",
        want_pre_filter_names={"node1", "node2"},
    ),
    FilterCase(
        "two conflicting matchFields requirements",
        make_pod(affinity=required({"matchFields": [name_in("node1"), name_in("node2")]})),
        {"foo": "bar"},
        node_name="node2",
        want_pre_filter=Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, [ERR_REASON_CONFLICT]),
        want_reason=ERR_REASON_POD,
    ),
    FilterCase(
        "matches added affinity and pod's node affinity",
        make_pod(affinity=required({"matchExpressions": [expr("zone", "In", "foo")]})),
        {"zone": "foo"},
        node_name="node2",
        added={
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchFields": [name_in("node2")]}]
            }
        },
    ),
    FilterCase(
        "matches added affinity but not pod's node affinity",
        make_pod(affinity=required({"matchExpressions": [expr("zone", "In", "bar")]})),
        {"zone": "foo"},
        node_name="node2",
        added={
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchFields": [name_in("node2")]}]
            }
        },
        want_reason=ERR_REASON_POD,
    ),
    FilterCase(
        "doesn't match added affinity",
        make_pod(),
        {"zone": "foo"},
        node_name="node2",
        added={
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchExpressions": [expr("zone", "In", "bar")]}]
            }
        },
        want_reason=ERR_REASON_ENFORCED,
    ),
    FilterCase(
        "node selector without PreFilter",
        make_pod({"foo": "bar"}),
        {"foo": "bar", "baz": "blah"},
        run_pre_filter=False,
    ),
    FilterCase(
        "node affinity without PreFilter",
        make_pod(
            affinity=required(
                {"matchExpressions": [expr("GPU", "Exists"), expr("GPU", "NotIn", "AMD", "INTER")]}
            )
        ),
        {"GPU": "NVIDIA-GRID-K1"},
        run_pre_filter=False,
    ),
]


@pytest.mark.parametrize("case", FILTER_CASES, ids=lambda c: c.name)
def test_filter(case: FilterCase) -> None:
    plugin = NodeAffinity(NodeAffinityArgs(added_affinity=case.added))
    snap = make_snapshot([make_node(case.node_name, case.labels)])
    state = CycleState()
    if case.run_pre_filter:
        result, status = plugin.pre_filter(state, case.pod, snap)
        assert status == case.want_pre_filter
        got_names = None if result is None else result.node_names
        assert got_names == case.want_pre_filter_names
    res = plugin.filter_nodes(state, case.pod, snap.table)
    slot = snap.table.slot_of[case.node_name]
    if case.want_reason is None:
        assert res.passed[slot]
        assert res.reasons_for(slot) == []
    else:
        assert not res.passed[slot]
        assert res.reasons_for(slot) == [case.want_reason]
        assert all(f.unresolvable for f in res.failures if f.nodes[slot])


def test_filter_many_nodes_reports_each_node_once() -> None:
    added = {
        "requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [{"matchExpressions": [expr("pool", "In", "a")]}]
        }
    }
    plugin = NodeAffinity(NodeAffinityArgs(added_affinity=added))
    nodes = [
        make_node("n1", {"pool": "a", "zone": "z1"}),  # passes both
        make_node("n2", {"pool": "a", "zone": "z2"}),  # fails the pod's selector
        make_node("n3", {"pool": "b", "zone": "z1"}),  # fails the enforced affinity only
        make_node("n4", {"pool": "b", "zone": "z2"}),  # fails both: the enforced reason only
    ]
    snap = make_snapshot(nodes)
    pod = make_pod({"zone": "z1"})
    state = CycleState()
    assert plugin.pre_filter(state, pod, snap) == (None, None)
    res = plugin.filter_nodes(state, pod, snap.table)
    got = {
        n.name: (bool(res.passed[snap.table.slot_of[n.name]]), res.reasons_for(snap.table.slot_of[n.name]))
        for n in nodes
    }
    assert got == {
        "n1": (True, []),
        "n2": (False, [ERR_REASON_POD]),
        "n3": (False, [ERR_REASON_ENFORCED]),
        "n4": (False, [ERR_REASON_ENFORCED]),
    }


# ------------------------------------------------------------------------------------- Score

LABEL1 = {"foo": "bar"}
LABEL2 = {"key": "value"}
LABEL3 = {"az": "az1"}
LABEL4 = {"abc": "az11", "def": "az22"}
LABEL5 = {"foo": "bar", "key": "value", "az": "az1"}

AFFINITY1 = preferred((2, {"matchExpressions": [expr("foo", "In", "bar")]}))
AFFINITY2 = preferred(
    (2, {"matchExpressions": [expr("foo", "In", "bar")]}),
    (4, {"matchExpressions": [expr("key", "In", "value")]}),
    (
        5,
        {"matchExpressions": [expr("foo", "In", "bar"), expr("key", "In", "value"), expr("az", "In", "az1")]},
    ),
)


@dataclass
class ScoreCase:
    name: str
    pod: Pod
    nodes: list[tuple[str, dict[str, str]]]
    expected: list[int]
    added: dict[str, Any] | None = None
    run_pre_score: bool = True
    want_skip: bool = False


SCORE_CASES = [
    ScoreCase(
        "all nodes are same priority as NodeAffinity is nil",
        make_pod(),
        [("node1", LABEL1), ("node2", LABEL2), ("node3", LABEL3)],
        [0, 0, 0],
        want_skip=True,
    ),
    ScoreCase(
        "no node matches preferred terms",
        make_pod(affinity=AFFINITY1),
        [("node1", LABEL4), ("node2", LABEL2), ("node3", LABEL3)],
        [0, 0, 0],
    ),
    ScoreCase(
        "only node1 matches the preferred terms",
        make_pod(affinity=AFFINITY1),
        [("node1", LABEL1), ("node2", LABEL2), ("node3", LABEL3)],
        [MAX_NODE_SCORE, 0, 0],
    ),
    ScoreCase(
        "all nodes match the preferred terms with different priorities",
        make_pod(affinity=AFFINITY2),
        [("node1", LABEL1), ("node5", LABEL5), ("node2", LABEL2)],
        [18, MAX_NODE_SCORE, 36],
    ),
    ScoreCase(
        "added affinity",
        make_pod(),
        [("node1", LABEL1), ("node2", LABEL2)],
        [MAX_NODE_SCORE, 0],
        added=AFFINITY1["nodeAffinity"],
    ),
    ScoreCase(
        "added affinity and pod has default affinity",
        make_pod(affinity=AFFINITY1),
        [("node1", LABEL1), ("node2", LABEL2), ("node3", LABEL5)],
        [40, 60, MAX_NODE_SCORE],
        added=preferred((3, {"matchExpressions": [expr("key", "In", "value")]}))["nodeAffinity"],
    ),
    ScoreCase(
        "priorities are right even if PreScore is not called",
        make_pod(affinity=AFFINITY2),
        [("node1", LABEL1), ("node5", LABEL5), ("node2", LABEL2)],
        [18, MAX_NODE_SCORE, 36],
        run_pre_score=False,
    ),
]


@pytest.mark.parametrize("case", SCORE_CASES, ids=lambda c: c.name)
def test_score(case: ScoreCase) -> None:
    plugin = NodeAffinity(NodeAffinityArgs(added_affinity=case.added))
    snap = make_snapshot([make_node(n, lab) for n, lab in case.nodes])
    table = snap.table
    slots = np.array([table.slot_of[n] for n, _ in case.nodes], dtype=np.int64)
    state = CycleState()
    if case.run_pre_score:
        status = plugin.pre_score(state, case.pod, table, slots)
        if case.want_skip:
            assert status == Status(Code.SKIP)
            return
        assert status is None
    scores = plugin.score_nodes(state, case.pod, table, slots)
    plugin.normalize_scores(state, case.pod, scores)
    assert scores.tolist() == case.expected


def test_score_raw_is_sum_of_matching_weights() -> None:
    plugin = NodeAffinity()
    snap = make_snapshot([make_node("node1", LABEL1), make_node("node5", LABEL5), make_node("node2", LABEL2)])
    slots = np.array([snap.table.slot_of[n] for n in ("node1", "node5", "node2")], dtype=np.int64)
    pod = make_pod(affinity=AFFINITY2)
    state = CycleState()
    assert plugin.pre_score(state, pod, snap.table, slots) is None
    assert plugin.score_nodes(state, pod, snap.table, slots).tolist() == [2, 11, 4]


def test_pre_score_error_on_unparsable_preferred_term() -> None:
    plugin = NodeAffinity()
    pod = make_pod(affinity=preferred((1, {"matchExpressions": [expr("foo", "Gt", "not-a-number")]})))
    snap = make_snapshot([make_node("node1")])
    status = plugin.pre_score(CycleState(), pod, snap.table, np.array([0], dtype=np.int64))
    assert status is not None and status.code == Code.ERROR
    assert (
        "preferredDuringSchedulingIgnoredDuringExecution[0].preference.matchExpressions[0].values[0]"
        in status.message
    )


def test_weight_zero_and_empty_preferences_are_ignored() -> None:
    plugin = NodeAffinity()
    pod = make_pod(
        affinity=preferred(
            (0, {"matchExpressions": [expr("foo", "In", "bar")]}),
            (7, {}),
            (3, {"matchExpressions": [expr("foo", "In", "bar")]}),
        )
    )
    snap = make_snapshot([make_node("node1", LABEL1)])
    state = CycleState()
    slots = np.array([0], dtype=np.int64)
    assert plugin.pre_score(state, pod, snap.table, slots) is None
    assert plugin.score_nodes(state, pod, snap.table, slots).tolist() == [3]


def test_parsed_affinity_is_cached_per_affinity_object() -> None:
    plugin = NodeAffinity()
    pod = make_pod(affinity=AFFINITY1)
    first = plugin.parsed(pod)
    assert plugin.parsed(pod) is first
    again = make_pod(affinity=AFFINITY1)  # a re-parsed pod: a different mapping, parsed anew
    assert plugin.parsed(again) == first


def test_events() -> None:
    events = NodeAffinity().events_to_register()
    assert [e.event for e in events] == [ClusterEvent("Node", ActionType.ADD | ActionType.UPDATE_NODE_LABEL)]


# ------------------------------------------------------------------------------ addedAffinity


@pytest.mark.parametrize(
    ("added", "field"),
    [
        (
            {"requiredDuringSchedulingRequiredDuringExecution": {}},
            "addedAffinity.requiredDuringSchedulingRequiredDuringExecution",
        ),
        (
            {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [{"matchExpressions": [expr("foo", "Gt", "x")]}]
                }
            },
            "addedAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].values[0]",
        ),
        (
            {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [{"matchFields": [expr("metadata.name", "Exists")]}]
                }
            },
            "addedAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchFields[0].operator",
        ),
        (
            {"preferredDuringSchedulingIgnoredDuringExecution": [{"weight": -1, "preference": {}}]},
            "addedAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].weight",
        ),
        (
            {
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {"weight": 1, "preference": {"matchExpressions": [expr("Bad Key", "Exists")]}}
                ]
            },
            "addedAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].preference.matchExpressions[0].key",
        ),
        (
            {"preferredDuringSchedulingIgnoredDuringExecution": {"weight": 1}},
            "addedAffinity.preferredDuringSchedulingIgnoredDuringExecution",
        ),
    ],
)
def test_added_affinity_validation(added: dict[str, Any], field: str) -> None:
    # Checked with the args (upstream ValidateNodeAffinityArgs), so that a configuration file's error
    # names the file and profiles[i].pluginConfig[j].args before it.
    with pytest.raises(InputError) as err:
        parse_args(NodeAffinityArgs, {"addedAffinity": added})
    assert err.value.field == field


def test_added_affinity_with_no_terms_matches_nothing() -> None:
    plugin = NodeAffinity(
        NodeAffinityArgs(
            added_affinity={"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": []}}
        )
    )
    snap = make_snapshot([make_node("node1", LABEL1)])
    pod = make_pod()
    state = CycleState()
    assert plugin.pre_filter(state, pod, snap) == (None, None)  # not skipped: the enforced affinity applies
    res = plugin.filter_nodes(state, pod, snap.table)
    assert res.reasons_for(0) == [ERR_REASON_ENFORCED]


# ---------------------------------------------------------------------------- end to end


CLUSTER = """
apiVersion: v1
kind: Node
metadata: {name: gpu-1, labels: {accelerator: nvidia, zone: a}}
status: {allocatable: {cpu: "4", memory: 8Gi, pods: "110"}}
---
apiVersion: v1
kind: Node
metadata: {name: gpu-2, labels: {accelerator: nvidia, zone: b}}
status: {allocatable: {cpu: "4", memory: 8Gi, pods: "110"}}
---
apiVersion: v1
kind: Node
metadata: {name: cpu-1, labels: {zone: a}}
status: {allocatable: {cpu: "4", memory: 8Gi, pods: "110"}}
---
apiVersion: v1
kind: Pod
metadata: {name: by-selector, namespace: default}
spec:
  nodeSelector: {accelerator: nvidia}
  containers: [{name: c, resources: {requests: {cpu: 100m}}}]
---
apiVersion: v1
kind: Pod
metadata: {name: by-affinity, namespace: default}
spec:
  affinity:
    nodeAffinity:
      requiredDuringSchedulingIgnoredDuringExecution:
        nodeSelectorTerms:
        - matchExpressions:
          - {key: accelerator, operator: In, values: [nvidia]}
          - {key: zone, operator: In, values: [b]}
  containers: [{name: c}]
---
apiVersion: v1
kind: Pod
metadata: {name: preferring, namespace: default}
spec:
  affinity:
    nodeAffinity:
      preferredDuringSchedulingIgnoredDuringExecution:
      - weight: 100
        preference: {matchExpressions: [{key: accelerator, operator: DoesNotExist}]}
  containers: [{name: c}]
---
apiVersion: v1
kind: Pod
metadata: {name: nowhere, namespace: default}
spec:
  nodeSelector: {accelerator: tpu}
  containers: [{name: c}]
"""


def test_end_to_end_simulation(tmp_path: Any) -> None:
    path = tmp_path / "cluster.yaml"
    path.write_text(CLUSTER)
    for seed in range(5):
        sim = Simulation(seed=seed)
        sim.load(load_manifests([str(path)]))
        result = sim.run()
        by_name = {o.name: o for o in result.outcomes}
        assert by_name["by-selector"].node in ("gpu-1", "gpu-2")
        assert by_name["by-affinity"].node == "gpu-2"
        assert by_name["preferring"].node == "cpu-1"
        nowhere = by_name["nowhere"]
        assert nowhere.status == "Unschedulable"
        assert nowhere.node is None
        assert "3 node(s) didn't match Pod's node affinity/selector" in nowhere.message
