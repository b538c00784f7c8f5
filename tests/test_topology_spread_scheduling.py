"""PodTopologySpread through the whole scheduler: hard constraints even out replicas, surplus replicas
get upstream's reasons, and the default (system) spreading acts on pods that belong to a workload."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from kubesched.api.objects import HOSTNAME_LABEL, ZONE_LABEL
from kubesched.sim.simulation import Simulation

ZONE_SPREAD = {
    "maxSkew": 1,
    "topologyKey": ZONE_LABEL,
    "whenUnsatisfiable": "DoNotSchedule",
    "labelSelector": {"matchLabels": {"app": "web"}},
}


def node(name: str, zone: str | None, cpu: str = "4", pods: str = "110") -> dict[str, Any]:
    labels = {HOSTNAME_LABEL: name}
    if zone is not None:
        labels[ZONE_LABEL] = zone
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": labels},
        "status": {"allocatable": {"cpu": cpu, "memory": "32Gi", "pods": pods}},
    }


def pod(
    name: str,
    labels: dict[str, str],
    *,
    constraints: list[dict[str, Any]] | None = None,
    owner: str | None = None,
    node_name: str = "",
    cpu: str = "100m",
) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": "default", "labels": labels}
    if owner is not None:
        meta["ownerReferences"] = [
            {
                "apiVersion": "apps/v1",
                "kind": "ReplicaSet",
                "name": owner,
                "uid": "rs-uid",
                "controller": True,
            }
        ]
    spec: dict[str, Any] = {
        "containers": [{"name": "c", "image": "pause", "resources": {"requests": {"cpu": cpu}}}]
    }
    if constraints:
        spec["topologySpreadConstraints"] = constraints
    if node_name:
        spec["nodeName"] = node_name
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}


def placements(sim: Simulation) -> dict[str, str | None]:
    return {o.name: o.node for o in sim.outcomes()}


def zone_of(node_name: str | None) -> str:
    assert node_name is not None
    return node_name.split("-")[0]


def test_six_replicas_over_three_zones_end_two_per_zone() -> None:
    """Zone a's nodes are eight times larger, so resource scoring alone would pack zone a; the hard
    zone constraint (maxSkew 1) keeps the replicas 2/2/2."""
    sim = Simulation()
    for zone, cpu in (("a", "32"), ("b", "4"), ("c", "4")):
        for i in range(2):
            sim.store.create(node(f"{zone}-{i}", f"zone-{zone}", cpu=cpu))
    for i in range(6):
        sim.store.create(pod(f"web-{i}", {"app": "web"}, constraints=[ZONE_SPREAD], cpu="1"))
    result = sim.run()
    assert result.scheduled == 6
    assert Counter(zone_of(n) for n in placements(sim).values()) == {"a": 2, "b": 2, "c": 2}


def test_surplus_replica_gets_the_spread_reason() -> None:
    """Zone b's only node fits one pod: after 2/1, the fourth replica may go neither to zone b (full) nor
    to zone a (2 + 1 - 1 > maxSkew 1)."""
    sim = Simulation()
    sim.store.create(node("a-0", "zone-a"))
    sim.store.create(node("b-0", "zone-b", pods="1"))
    for i in range(4):
        sim.store.create(pod(f"web-{i}", {"app": "web"}, constraints=[ZONE_SPREAD]))
    sim.run()
    outcomes = {o.name: o for o in sim.outcomes()}
    assert Counter(o.status for o in outcomes.values()) == {"Scheduled": 3, "Unschedulable": 1}
    (stuck,) = (o for o in outcomes.values() if o.status == "Unschedulable")
    assert stuck.message.startswith(
        "0/2 nodes are available: 1 Too many pods, 1 node(s) didn't match pod topology spread constraints."
    )


def test_nodes_without_the_topology_label_are_rejected_with_missing_label() -> None:
    sim = Simulation()
    sim.store.create(node("nolabel", None))
    sim.store.create(pod("web-0", {"app": "web"}, constraints=[ZONE_SPREAD]))
    sim.run()
    (o,) = sim.outcomes()
    assert o.status == "Unschedulable"
    assert o.message.startswith(
        "0/1 nodes are available: "
        "1 node(s) didn't match pod topology spread constraints (missing required label)."
    )


def test_unschedulable_replica_is_placed_once_a_matching_pod_goes_away() -> None:
    sim = Simulation()
    sim.store.create(node("a-0", "zone-a"))
    sim.store.create(node("b-0", "zone-b", pods="1"))
    sim.store.create(pod("blocker", {"app": "other"}, node_name="b-0"))
    for i in range(2):
        sim.store.create(pod(f"web-{i}", {"app": "web"}, constraints=[ZONE_SPREAD]))
    sim.run()
    assert Counter(o.status for o in sim.outcomes()) == {"Scheduled": 1, "Unschedulable": 1}
    sim.store.delete("Pod", "default", "blocker")
    sim.run()
    assert sorted(zone_of(n) for n in placements(sim).values()) == ["a", "b"]


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_system_default_spreading_moves_replica_set_pods_apart(seed: int) -> None:
    """Both nodes carry three pods with the same requests, so resource scores tie; the ReplicaSet's
    pods are on n1, so the system default hostname/zone spreading sends its new pod to n2."""
    sim = Simulation(seed=seed)
    sim.store.create(node("n1", "zone-a"))
    sim.store.create(node("n2", "zone-b"))
    sim.store.create(
        {
            "apiVersion": "apps/v1",
            "kind": "ReplicaSet",
            "metadata": {"name": "web", "namespace": "default"},
            "spec": {"selector": {"matchLabels": {"app": "web"}}},
        }
    )
    for i in range(3):
        sim.store.create(pod(f"old-{i}", {"app": "web"}, owner="web", node_name="n1"))
        sim.store.create(pod(f"other-{i}", {"app": "other"}, node_name="n2"))
    sim.store.create(pod("new", {"app": "web"}, owner="web"))
    sim.run()
    assert placements(sim)["new"] == "n2"
