"""Throughput workloads modelled on upstream scheduler_perf (``kubesched bench``).

Each workload builds its cluster in the embedded store, lets the scheduler place the existing pods
(not measured), then creates the measured pods and times the scheduler until every one of them has
been tried. Reported: pods scheduled per second of wall time.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
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
    #: Extra lines a workload reports (the gang workload: per-session times).
    details: str = ""

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
    return _run_workload(
        "basic",
        nodes,
        existing_pods,
        pods,
        seed,
        existing=lambda i: pod_default(f"init-{i}"),
        measured=lambda i: pod_default(f"pod-{i}"),
    )


def _run_workload(
    workload: str,
    nodes: int,
    existing_pods: int,
    pods: int,
    seed: int,
    *,
    existing: Callable[[int], dict[str, Any]],
    measured: Callable[[int], dict[str, Any]],
    setup: Sequence[dict[str, Any]] = (),
) -> BenchResult:
    """The default profile on ``setup`` objects and ``nodes`` default nodes: ``existing(i)`` pods
    placed first (not timed), then the time to try every ``measured(i)`` pod, and how many of those
    were scheduled."""
    sim = Simulation(seed=seed)
    for obj in setup:
        sim.store.create(obj)
    for i in range(nodes):
        sim.store.create(node_default(i))
    for i in range(existing_pods):
        sim.store.create(existing(i))
    sim.run()
    before = sim.scheduler.outcomes.copy()
    for i in range(pods):
        sim.store.create(measured(i))
    start = time.perf_counter()
    sim.run()
    elapsed = time.perf_counter() - start
    scheduled = sum(
        1 for uid, o in sim.scheduler.outcomes.items() if uid not in before and o.status == "Scheduled"
    )
    return BenchResult(workload, nodes, existing_pods, pods, scheduled, elapsed)


def _extensions() -> Any:
    from kubesched import bench_extensions

    return bench_extensions


def pod_with_anti_affinity(name: str, namespace: str) -> dict[str, Any]:
    """scheduler_perf's pod-with-pod-anti-affinity: ``color: green`` pods that keep away from each other
    on ``kubernetes.io/hostname`` across both test namespaces."""
    pod = pod_default(name)
    pod["metadata"]["namespace"] = namespace
    pod["metadata"]["labels"] = {"color": "green"}
    term = {
        "labelSelector": {"matchLabels": {"color": "green"}},
        "topologyKey": "kubernetes.io/hostname",
        "namespaces": ["sched-0", "sched-1"],
    }
    pod["spec"]["affinity"] = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}
    return pod


def run_pod_anti_affinity(
    nodes: int = 5000, existing_pods: int = 1000, pods: int = 2000, seed: int = 0
) -> BenchResult:
    """SchedulingPodAntiAffinity (5000Nodes_2000Pods): existing pods in ``sched-0``, measured pods in
    ``sched-1``, every one with required anti-affinity to all the others on the node's hostname."""
    return _run_workload(
        "pod-anti-affinity",
        nodes,
        existing_pods,
        pods,
        seed,
        setup=[
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}
            for ns in ("sched-0", "sched-1")
        ],
        existing=lambda i: pod_with_anti_affinity(f"init-{i}", "sched-0"),
        measured=lambda i: pod_with_anti_affinity(f"pod-{i}", "sched-1"),
    )


def pod_with_topology_spreading(name: str, when: str) -> dict[str, Any]:
    """scheduler_perf's pod-with-topology-spreading / pod-with-preferred-topology-spreading shape
    (``color: blue`` pods spread over zones), with maxSkew 1 and a second constraint on hostname."""
    pod = pod_default(name)
    pod["metadata"]["labels"] = {"color": "blue"}
    selector = {"matchLabels": {"color": "blue"}}
    pod["spec"]["topologySpreadConstraints"] = [
        {"maxSkew": 1, "topologyKey": key, "whenUnsatisfiable": when, "labelSelector": selector}
        for key in ("topology.kubernetes.io/zone", "kubernetes.io/hostname")
    ]
    return pod


def run_topology_spread(
    nodes: int = 5000, existing_pods: int = 1000, pods: int = 2000, seed: int = 0, preferred: bool = False
) -> BenchResult:
    """TopologySpreading (or PreferredTopologySpreading with ``preferred``): nodes in three zones,
    plain existing pods, measured pods with zone and hostname spread constraints (maxSkew 1)."""
    when = "ScheduleAnyway" if preferred else "DoNotSchedule"
    return _run_workload(
        "topology-spread-preferred" if preferred else "topology-spread",
        nodes,
        existing_pods,
        pods,
        seed,
        existing=lambda i: pod_default(f"init-{i}"),
        measured=lambda i: pod_with_topology_spreading(f"pod-{i}", when),
    )


def _priority_class(name: str, value: int) -> dict[str, Any]:
    return {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": name},
        "value": value,
    }


def _prioritized_pod(name: str, priority_class: str, cpu: str) -> dict[str, Any]:
    pod = pod_default(name)
    pod["spec"]["priorityClassName"] = priority_class
    pod["spec"]["containers"][0]["resources"]["requests"]["cpu"] = cpu
    return pod


def run_preemption(
    nodes: int = 5000, existing_pods: int = 20000, pods: int = 5000, seed: int = 0
) -> BenchResult:
    """PreemptionBasic: 4-CPU nodes filled with low-priority pods (900m each, 4 per node), then
    high-priority pods of 3 CPU, each of which must evict three of them (DefaultPreemption) and is
    bound to its nominated node once they are gone. Counted: high-priority pods scheduled."""
    return _run_workload(
        "preemption",
        nodes,
        existing_pods,
        pods,
        seed,
        setup=[_priority_class("low", 1), _priority_class("high", 10)],
        existing=lambda i: _prioritized_pod(f"low-{i}", "low", "900m"),
        measured=lambda i: _prioritized_pod(f"high-{i}", "high", "3"),
    )


def gang_workload(groups: int, seed: int, *, min_size: int = 8, max_size: int = 64) -> list[dict[str, Any]]:
    """``groups`` Volcano PodGroups of ``min_size`` to ``max_size`` pods each (minMember = size), in three
    queues, every pod asking 500m CPU and 1Gi like a data-parallel worker."""
    import random

    rnd = random.Random(seed)
    objs: list[dict[str, Any]] = [
        {
            "apiVersion": "scheduling.volcano.sh/v1beta1",
            "kind": "Queue",
            "metadata": {"name": q},
            "spec": {"weight": w},
        }
        for q, w in (("train", 3), ("batch", 2), ("dev", 1))
    ]
    queues = ("train", "batch", "dev")
    for g in range(groups):
        size = rnd.randint(min_size, max_size)
        name = f"job-{g}"
        objs.append(
            {
                "apiVersion": "scheduling.volcano.sh/v1beta1",
                "kind": "PodGroup",
                "metadata": {"name": name, "namespace": "default"},
                "spec": {"minMember": size, "queue": queues[g % 3]},
            }
        )
        spec = {
            "schedulerName": "volcano",
            "containers": [
                {
                    "name": "worker",
                    "image": "registry.k8s.io/pause:3.10",
                    "resources": {"requests": {"cpu": "500m", "memory": "1Gi"}},
                }
            ],
        }
        for i in range(size):
            objs.append(
                {
                    "apiVersion": "v1",
                    "kind": "Pod",
                    "metadata": {
                        "name": f"{name}-{i}",
                        "namespace": "default",
                        "labels": {"job": name},
                        "annotations": {"scheduling.k8s.io/group-name": name},
                    },
                    "spec": spec,
                }
            )
    return objs


def run_gang(nodes: int = 1000, existing_pods: int = 0, pods: int = 30000, seed: int = 0) -> BenchResult:
    """Volcano gangs: ``nodes`` 32-CPU nodes, PodGroups of 8 to 64 pods until about ``pods`` pods, in
    three weighted queues, scheduled by the batch profile (Volcano's default conf). Timed: from the
    first session to the last; reported per session too."""
    from kubesched.batch.conf import default_batch_conf

    sim = Simulation(seed=seed, batch_conf=default_batch_conf())
    for i in range(nodes):
        node = node_default(i)
        node["status"]["allocatable"] = {"cpu": "32", "memory": "128Gi", "pods": "110"}
        sim.store.create(node)
    groups = max(1, round(pods / 36))
    measured = 0
    for obj in gang_workload(groups, seed):
        sim.store.create(obj)
        measured += obj["kind"] == "Pod"
    start = time.perf_counter()
    sim.run()
    elapsed = time.perf_counter() - start
    batch = sim.batch
    assert batch is not None
    scheduled = sum(1 for o in batch.outcomes.values() if o.status == "Scheduled")
    lines = [
        f"session {i + 1}: {s.pending_before} pending, {s.bound} bound, {s.seconds:.3f}s"
        f" ({s.bound / s.seconds if s.seconds else 0:.0f} pods/s; actions {s.decide_seconds:.3f}s;"
        f" cpu {s.cpu_seconds:.3f}s)"
        for i, s in enumerate(batch.sessions)
    ]
    return BenchResult("gang", nodes, existing_pods, measured, scheduled, elapsed, "\n".join(lines))


WORKLOADS: dict[str, Callable[..., BenchResult]] = {
    "per-node-plugin": lambda **kw: _extensions().run_per_node_plugin(**kw),
    "extender": lambda **kw: _extensions().run_extender(**kw),
    "gang": run_gang,
    "preemption": run_preemption,
    "basic": run_basic,
    "topology-spread": run_topology_spread,
    "topology-spread-preferred": lambda **kw: run_topology_spread(preferred=True, **kw),
    "pod-anti-affinity": run_pod_anti_affinity,
}
