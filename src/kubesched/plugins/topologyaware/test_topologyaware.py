"""TopologyPlacementGenerator: table after upstream's topology_placement_test.go (TestGeneratePlacements,
the cases without composite pod groups)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest

from kubesched.api.objects import Pod
from kubesched.api.scheduling_groups import SchedulingPodGroup
from kubesched.cache.cache import SchedulerCache, Snapshot
from kubesched.framework.placement import Placement
from kubesched.framework.status import Code
from kubesched.plugins.testing import make_node, pod_dict, store_handle
from kubesched.plugins.topologyaware import TopologyPlacementGenerator

INITIAL_PLACEMENT = "test-placement"


def _node(name: str, **labels: str) -> Any:
    return make_node(name, {"cpu": "4", "memory": "8Gi", "pods": "110"}, labels=labels)


def _pod_group(key: str | None) -> SchedulingPodGroup:
    spec: dict[str, Any] = {"schedulingPolicy": {"gang": {"minCount": 1}}}
    if key is not None:
        spec["schedulingConstraints"] = {"topology": [{"key": key}]}
    return SchedulingPodGroup.from_dict(
        {
            "apiVersion": "scheduling.k8s.io/v1alpha2",
            "kind": "PodGroup",
            "metadata": {"name": "pg", "namespace": "default"},
            "spec": spec,
        }
    )


@dataclass
class Case:
    name: str
    key: str | None
    placement_nodes: list[Any]
    other_nodes: list[Any] = field(default_factory=list)
    scheduled_on: list[str] = field(default_factory=list)
    want: dict[str, list[str]] | None = field(default_factory=dict)  # None: an Error status


CASES = [
    Case(
        "without constraint returns placement matching all nodes",
        None,
        [_node("node1"), _node("node2", foo="bar")],
        [_node("node3")],
        want={INITIAL_PLACEMENT: ["node1", "node2"]},
    ),
    Case(
        "with topology key constraint, returns placement for each topology domain",
        "topology1",
        [
            _node("node0", topology2="d1"),
            _node("node1", topology2="d4"),
            _node("node2", topology1="d1"),
            _node("node3", topology1="d2"),
            _node("node4", topology1="d1"),
            _node("node5", topology1="d3"),
        ],
        want={"d1": ["node2", "node4"], "d2": ["node3"], "d3": ["node5"]},
    ),
    Case(
        "without matching topology label, returns empty",
        "topology3",
        [
            _node("node0", topology2="d1"),
            _node("node1", topology2="d4"),
            _node("node2", topology1="d1"),
            _node("node3", topology1="d2"),
            _node("node4", topology1="d1"),
            _node("node5", topology1="d3"),
        ],
    ),
    Case(
        "with pods already scheduled in a single domain, returns that domain",
        "topology",
        [_node("node0", topology="d2"), _node("node1", topology="d1")],
        [_node("node2", topology="d1"), _node("node3", topology="d1")],
        scheduled_on=["node2", "node3"],
        want={"d1": ["node1"]},
    ),
    Case(
        "with pods already scheduled in a single domain not present in current placement, returns empty",
        "topology",
        [_node("node0", topology="d2")],
        [_node("node2", topology="d1"), _node("node3", topology="d1")],
        scheduled_on=["node2", "node3"],
    ),
    Case(
        "with pods already scheduled in conflicting domains, returns error",
        "topology",
        [_node("node0", topology="d2"), _node("node1", topology="d1")],
        [_node("node2", topology="d0"), _node("node3", topology="d1")],
        scheduled_on=["node2", "node3"],
        want=None,
    ),
    Case(
        "with pods already scheduled in the empty string domain, returns that domain",
        "topology",
        [_node("node0", topology="d1"), _node("node1", topology="")],
        [_node("node2", topology=""), _node("node3", topology="")],
        scheduled_on=["node2", "node3"],
        want={"": ["node1"]},
    ),
    Case(
        "with already scheduled pod on node outside of snapshot, returns error",
        "topology",
        [_node("node0", topology="d2"), _node("node1", topology="d1")],
        [_node("node2", topology="d1"), _node("node3", topology="d1")],
        scheduled_on=["node2", "node4"],
        want=None,
    ),
    Case(
        "with already scheduled pod on node without topology label, returns error",
        "topology",
        [_node("node1", topology="d2")],
        [_node("node2", foo="bar")],
        scheduled_on=["node2"],
        want=None,
    ),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_generate_placements(case: Case) -> None:
    cache = SchedulerCache()
    for node in [*case.placement_nodes, *case.other_nodes]:
        cache.add_node(node)
    snapshot = Snapshot()
    cache.update_snapshot(snapshot)
    handle = store_handle(snapshot=snapshot)
    for i, node in enumerate(case.scheduled_on):
        raw = pod_dict(f"pod{i}", uid=f"pod{i}", node_name=node)
        raw["spec"]["schedulingGroup"] = {"podGroupName": "pg"}
        handle.pod_groups.add_pod(Pod.from_dict(raw))
    table = snapshot.table
    parent = Placement(
        INITIAL_PLACEMENT, np.array([table.slot_of[n.name] for n in case.placement_nodes], dtype=np.int64)
    )
    placements, st = TopologyPlacementGenerator(None, handle).generate_placements(
        _pod_group(case.key), parent
    )
    if case.want is None:
        assert st is not None and st.code == Code.ERROR
        return
    assert st is None
    got = {p.name: sorted(table.names[s] for s in p.slots.tolist()) for p in placements}
    assert got == case.want
