"""Backfill without the predicates plugin still treats pod slots and host ports as node capacity."""

from __future__ import annotations

from typing import Any

from kubesched.batch.conf_loader import batch_conf_from_dict
from kubesched.sim.simulation import Simulation

VOLCANO = "scheduling.volcano.sh/v1beta1"
CONF = {
    "actions": "enqueue, allocate, backfill",
    "tiers": [{"plugins": [{"name": "priority"}, {"name": "gang"}]}],
}


def best_effort(name: str, ports: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    container: dict[str, Any] = {"name": "c"}
    if ports:
        container["ports"] = ports
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": "default",
            "annotations": {"scheduling.k8s.io/group-name": "g"},
        },
        "spec": {"schedulerName": "volcano", "containers": [container]},
    }


def run(pods: str, *objs: dict[str, Any]) -> dict[str, Any]:
    sim = Simulation(seed=0, batch_conf=batch_conf_from_dict(CONF))
    sim.store.create(
        {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": "n1"},
            "status": {"allocatable": {"cpu": "4", "pods": pods}},
        }
    )
    sim.store.create(
        {"apiVersion": VOLCANO, "kind": "Queue", "metadata": {"name": "default"}, "spec": {"weight": 1}}
    )
    sim.store.create(
        {
            "apiVersion": VOLCANO,
            "kind": "PodGroup",
            "metadata": {"name": "g", "namespace": "default"},
            "spec": {"minMember": 1},
        }
    )
    for obj in objs:
        sim.store.create(obj)
    sim.run()
    return {o.name: o for o in sim.outcomes()}


def test_backfill_leaves_a_node_without_free_pod_slots_alone() -> None:
    out = run("1", best_effort("a"), best_effort("b"))
    assert sorted(o.status for o in out.values()) == ["Scheduled", "Unschedulable"]
    stuck = next(o for o in out.values() if o.status == "Unschedulable")
    assert "1 node(s) pod number exceeded" in stuck.message


def test_backfill_keeps_host_ports_apart() -> None:
    port = [{"containerPort": 80, "hostPort": 8080}]
    out = run("110", best_effort("a", port), best_effort("b", port))
    assert sorted(o.status for o in out.values()) == ["Scheduled", "Unschedulable"]
    stuck = next(o for o in out.values() if o.status == "Unschedulable")
    assert "didn't have free ports" in stuck.message
