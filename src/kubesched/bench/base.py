"""What every ``kubesched bench`` workload shares: upstream scheduler_perf's node and pod templates,
the simulation a workload runs in, and the result it reports."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kubesched.framework.config import API_VERSION, KIND, config_from_dict
from kubesched.plugins import default_registry
from kubesched.sim.simulation import Simulation

ZONES = ("zone-a", "zone-b", "zone-c")


@dataclass(slots=True)
class BenchResult:
    workload: str
    nodes: int
    existing_pods: int
    measured_pods: int
    scheduled: int
    seconds: float
    #: CPU time of this process over the measured phase.
    cpu_seconds: float = 0.0
    #: Extra lines a workload reports (the gang workload: per-session times).
    details: str = ""

    @property
    def pods_per_second(self) -> float:
        return self.scheduled / self.seconds if self.seconds > 0 else float("inf")

    @property
    def pods_per_cpu_second(self) -> float:
        return self.scheduled / self.cpu_seconds if self.cpu_seconds > 0 else float("inf")


def simulation(feature_gates: dict[str, bool] | None, *, no_topology: bool = False, **kw: Any) -> Simulation:
    """A simulation with the default configuration and ``feature_gates`` set; ``no_topology``: without
    PodTopologySpread's default constraints (upstream's scheduler-config-no-topology for batching)."""
    registry = default_registry()
    doc: dict[str, Any] = {"apiVersion": API_VERSION, "kind": KIND}
    if no_topology:
        doc["profiles"] = [{"plugins": {"multiPoint": {"disabled": [{"name": "PodTopologySpread"}]}}}]
    config = config_from_dict(doc, registry, source="<bench>")
    config.feature_gates.update(feature_gates or {})
    return Simulation(config, registry, **kw)


def node_default(i: int) -> dict[str, Any]:
    """scheduler_perf's node-default: 4 CPU, 32Gi, 110 pods."""
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": f"node-{i}",
            "labels": {
                "kubernetes.io/hostname": f"node-{i}",
                "topology.kubernetes.io/zone": ZONES[i % len(ZONES)],
            },
        },
        "status": {"allocatable": {"cpu": "4", "memory": "32Gi", "pods": "110"}},
    }


def pod_default(name: str) -> dict[str, Any]:
    """scheduler_perf's pod-default: one pause container asking 100m CPU and 500Mi memory."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", "labels": {"app": "bench"}},
        "spec": {
            "containers": [
                {
                    "name": "pause",
                    "image": "registry.k8s.io/pause:3.10",
                    "resources": {"requests": {"cpu": "100m", "memory": "500Mi"}},
                }
            ]
        },
    }
