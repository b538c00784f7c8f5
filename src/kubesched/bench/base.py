"""What every ``kubesched bench`` workload shares: upstream scheduler_perf's node and pod templates,
the simulation a workload runs in, and the result it reports."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from kubesched.framework.config import API_VERSION, KIND, config_from_dict
from kubesched.plugins import default_registry
from kubesched.registry.admission import admitted
from kubesched.sim.simulation import DEFAULT_HORIZON, Simulation

Obj = dict[str, Any]

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
    #: Each measured pod tried, in the order first tried: (namespace/name, node or "", status,
    #: message) — what ``--decisions`` writes, to compare two builds' decisions.
    decisions: list[tuple[str, str, str, str]] = field(default_factory=list)

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
    doc["featureGates"] = dict(feature_gates or {})
    config = config_from_dict(doc, registry, source="<bench>")
    # scheduler_perf runs the scheduler alone: no controller binds or provisions its volumes.
    kw.setdefault("volume_controllers", False)
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


def priority_class(name: str, value: int) -> Obj:
    return {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": name},
        "value": value,
    }


def prioritized_pod(name: str, class_name: str, cpu: str) -> Obj:
    """pod-default asking ``cpu``, in priority class ``class_name``."""
    pod = pod_default(name)
    pod["spec"]["priorityClassName"] = class_name
    pod["spec"]["containers"][0]["resources"]["requests"]["cpu"] = cpu
    return pod


def _create_all(sim: Simulation, made: Obj | list[Obj]) -> Obj:
    """Create one object, or each of a list in order; the last one created."""
    objs = made if isinstance(made, list) else [made]
    for obj in objs:
        sim.store.create(admitted(sim.store, obj))
    return objs[-1]


def run_workload(
    workload: str,
    nodes: int,
    existing_pods: int,
    pods: int,
    seed: int,
    *,
    existing: Callable[[int], Obj | list[Obj]],
    measured: Callable[[int], Obj | list[Obj]],
    setup: Sequence[dict[str, Any]] = (),
    node: Callable[[int], Obj | list[Obj]] = node_default,
    feature_gates: dict[str, bool] | None = None,
    churn: Callable[[Simulation, int], None] | None = None,
    churn_every: int = 0,
    no_topology: bool = False,
) -> BenchResult:
    """The default profile on ``setup`` objects and ``nodes`` nodes (``node(i)``): ``existing(i)``
    pods placed first (not timed), then the time to try every ``measured(i)`` pod, and how many of
    those were scheduled. ``node``, ``existing`` and ``measured`` may give a list of objects, created
    in order, for what belongs with each (a node's CSINode, a pod's claim and volume): the pod last.
    With ``churn``, ``churn(sim, step)`` runs before every ``churn_every`` measured pods (the pods of
    one step are created, then scheduled)."""
    sim = simulation(feature_gates, no_topology=no_topology, seed=seed)
    for obj in setup:
        sim.store.create(admitted(sim.store, obj))
    for i in range(nodes):
        _create_all(sim, node(i))
    for i in range(existing_pods):
        _create_all(sim, existing(i))
    sim.run()
    before = set(sim.scheduler.outcomes)
    step = churn_every if churn is not None and churn_every > 0 else max(pods, 1)
    names: set[tuple[str, str]] = set()
    start = time.perf_counter()
    cpu_start = time.process_time()
    for k, first in enumerate(range(0, pods, step)):
        if churn is not None:
            churn(sim, k)
        for i in range(first, min(first + step, pods)):
            obj = _create_all(sim, measured(i))
            names.add((obj["metadata"].get("namespace", "default"), obj["metadata"]["name"]))
        # The driver alone: Simulation.run also builds a result over every pod, which is reporting,
        # not scheduling, and would make churn steps cost O(pods) each.
        sim.driver.run(DEFAULT_HORIZON)
    elapsed = time.perf_counter() - start
    cpu = time.process_time() - cpu_start
    tried = [
        o for uid, o in sim.scheduler.outcomes.items() if uid not in before and (o.namespace, o.name) in names
    ]
    scheduled = sum(1 for o in tried if o.status == "Scheduled")
    decisions = [(f"{o.namespace}/{o.name}", o.node or "", o.status, o.message) for o in tried]
    return BenchResult(
        workload, nodes, existing_pods, pods, scheduled, elapsed, cpu_seconds=cpu, decisions=decisions
    )
