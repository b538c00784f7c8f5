"""NodeResourcesFit keeps its PreFilter answer per pod requests between cycles: pods that ask
alike share it, and it must still judge every pod as computed afresh, as the node table gains
columns for new resources."""

from __future__ import annotations

from typing import Any

from kubesched.sim.simulation import Simulation


def node(name: str, cpu: str, extra: dict[str, str] | None = None) -> dict[str, Any]:
    alloc = {"cpu": cpu, "memory": "8Gi", "pods": "110", **(extra or {})}
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name}, "status": {"allocatable": alloc}}


def pod(name: str, requests: dict[str, str]) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"containers": [{"name": "c", "resources": {"requests": requests, "limits": requests}}]},
    }


def placed(sim: Simulation, name: str) -> tuple[str | None, str]:
    obj = sim.store.get("Pod", "default", name)
    assert obj is not None
    conditions = (obj.get("status") or {}).get("conditions") or []
    message = next((c.get("message", "") for c in conditions if c["type"] == "PodScheduled"), "")
    return obj["spec"].get("nodeName"), message


def test_alike_pods_and_a_new_resource_column_are_judged_as_afresh() -> None:
    sim = Simulation(seed=0)
    sim.store.create(node("small", "1"))
    sim.store.create(node("big", "2"))
    sim.run()
    # Three alike pods of 1 CPU fill both nodes.
    for i in range(3):
        sim.store.create(pod(f"a{i}", {"cpu": "1"}))
        sim.run()
    # A resource no node had: the table gains a column; no node offers it yet.
    sim.store.create(pod("gpu0", {"cpu": "100m", "example.com/gpu": "1"}))
    sim.run()
    assert placed(sim, "gpu0")[0] is None
    assert "Insufficient example.com/gpu" in placed(sim, "gpu0")[1]
    sim.store.create(node("gpu-node", "2", {"example.com/gpu": "1"}))
    sim.run()
    assert placed(sim, "gpu0")[0] == "gpu-node"
    # The first shape again, over the wider table: 1.9 CPUs are left, on "gpu-node" only...
    sim.store.create(pod("a3", {"cpu": "1"}))
    sim.run()
    assert placed(sim, "a3")[0] == "gpu-node"
    # ...and the next alike pod finds 0.9 left.
    sim.store.create(pod("a4", {"cpu": "1"}))
    sim.run()
    assert placed(sim, "a4")[0] is None
    assert "3 Insufficient cpu" in placed(sim, "a4")[1]
    assert [placed(sim, f"a{i}")[0] is not None for i in range(5)] == [True] * 4 + [False]
