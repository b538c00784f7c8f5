"""Invariants of gang scheduling in the kube-scheduler pipeline, on random clusters: a gang (minCount
= its size) is bound whole or not at all, and no node holds more than it can."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from kubesched.framework.config import config_from_dict
from kubesched.plugins import default_registry
from kubesched.sim.simulation import Simulation

GATES = {"GenericWorkload": True, "GangScheduling": True}


def _node(name: str, cpu: int) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name},
        "status": {"allocatable": {"cpu": str(cpu), "memory": "64Gi", "pods": "110"}},
    }


def _pod(name: str, group: str, cpu: int) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "schedulingGroup": {"podGroupName": group},
            "containers": [{"name": "c", "image": "i", "resources": {"requests": {"cpu": str(cpu)}}}],
        },
    }


@settings(max_examples=25, deadline=None, derandomize=True)
@given(
    nodes=st.lists(st.integers(1, 6), min_size=1, max_size=4),
    groups=st.lists(st.lists(st.integers(1, 3), min_size=1, max_size=5), min_size=1, max_size=3),
)
def test_a_gang_is_bound_whole_or_not_at_all(nodes: list[int], groups: list[list[int]]) -> None:
    registry = default_registry()
    config = config_from_dict(
        {
            "apiVersion": "kubescheduler.config.k8s.io/v1",
            "kind": "KubeSchedulerConfiguration",
            "featureGates": GATES,
        },
        registry,
    )
    sim = Simulation(config, registry, seed=0)
    for i, cpu in enumerate(nodes):
        sim.store.create(_node(f"n{i}", cpu))
    for g, cpus in enumerate(groups):
        sim.store.create(
            {
                "apiVersion": "scheduling.k8s.io/v1alpha2",
                "kind": "PodGroup",
                "metadata": {"name": f"g{g}", "namespace": "default"},
                "spec": {"schedulingPolicy": {"gang": {"minCount": len(cpus)}}},
            }
        )
        for i, cpu in enumerate(cpus):
            sim.store.create(_pod(f"g{g}-{i}", f"g{g}", cpu))
    sim.run()
    used: dict[str, int] = defaultdict(int)
    for g, cpus in enumerate(groups):
        bound = 0
        for i, cpu in enumerate(cpus):
            pod = sim.store.get("Pod", "default", f"g{g}-{i}")
            assert pod is not None
            node = pod["spec"].get("nodeName")
            if node:
                bound += 1
                used[node] += cpu
        assert bound in (0, len(cpus)), (g, bound, len(cpus))
    for i, cpu in enumerate(nodes):
        assert used[f"n{i}"] <= cpu
