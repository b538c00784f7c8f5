"""Throughput workloads modelled on upstream scheduler_perf (``kubesched bench``).

Each workload builds its cluster in the embedded store, lets the scheduler place the existing pods
(not measured), then creates the measured pods and times the scheduler until every one of them has
been tried. Reported: pods scheduled per second of wall time.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

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

    @property
    def pods_per_second(self) -> float:
        return self.scheduled / self.seconds if self.seconds > 0 else float("inf")


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


def run_basic(nodes: int = 5000, existing_pods: int = 1000, pods: int = 10000, seed: int = 0) -> BenchResult:
    """SchedulingBasic: uniform nodes, uniform pods, default profile."""
    sim = Simulation(seed=seed)
    for i in range(nodes):
        sim.store.create(node_default(i))
    for i in range(existing_pods):
        sim.store.create(pod_default(f"init-{i}"))
    sim.run()
    before = sim.scheduler.outcomes.copy()
    for i in range(pods):
        sim.store.create(pod_default(f"pod-{i}"))
    start = time.perf_counter()
    sim.run()
    elapsed = time.perf_counter() - start
    scheduled = sum(
        1 for uid, o in sim.scheduler.outcomes.items() if uid not in before and o.status == "Scheduled"
    )
    return BenchResult("basic", nodes, existing_pods, pods, scheduled, elapsed)


WORKLOADS: dict[str, Callable[..., BenchResult]] = {"basic": run_basic}
