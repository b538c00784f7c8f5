"""Throughput workloads modelled on upstream scheduler_perf (``kubesched bench``).

Each workload builds its cluster in the embedded store, lets the scheduler place the existing pods
(not measured), then creates the measured pods and times the scheduler until every one of them has
been tried. Reported: pods scheduled per second of wall time, and of the process's CPU time (steadier
on a loaded machine).

Upstream's churn operations run on a wall-clock interval ("one object every 200 ms"). Here they are
tied to the measured pods instead: one churn step per ``interval * upstream threshold`` measured
pods, the rate upstream's churn has when the scheduler runs exactly at its threshold. That keeps the
runs deterministic and the churn share no lighter than upstream's at the bar.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from kubesched.bench.base import (
    BenchResult,
    node_default,
    pod_default,
    prioritized_pod,
    priority_class,
    run_workload,
)
from kubesched.bench.dra import (
    run_claim_template,
    run_extended_resource_25,
    run_extended_resource_50,
    run_implicit_extended_resource_25,
    run_steady_empty,
    run_steady_first_available,
    run_steady_full,
    run_steady_half,
)
from kubesched.bench.extensions import run_extender, run_per_node_plugin
from kubesched.bench.podgroups import (
    run_gang_scheduling,
    run_gang_scheduling_1000_per_group,
    run_pod_group_gang,
    run_topology_aware_scheduling,
)
from kubesched.bench.volumes import run_csi_pvs, run_in_tree_pvs, run_migrated_in_tree_pvs, run_preemption_pvs
from kubesched.registry.admission import admitted
from kubesched.sim.simulation import Simulation


def run_basic(
    nodes: int = 5000,
    existing_pods: int = 1000,
    pods: int = 10000,
    seed: int = 0,
    feature_gates: dict[str, bool] | None = None,
) -> BenchResult:
    """SchedulingBasic: uniform nodes, uniform pods, default profile."""
    return run_workload(
        "basic",
        nodes,
        existing_pods,
        pods,
        seed,
        existing=lambda i: pod_default(f"init-{i}"),
        measured=lambda i: pod_default(f"pod-{i}"),
        feature_gates=feature_gates,
    )


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
    nodes: int = 5000,
    existing_pods: int = 1000,
    pods: int = 2000,
    seed: int = 0,
    feature_gates: dict[str, bool] | None = None,
) -> BenchResult:
    """SchedulingPodAntiAffinity (5000Nodes_2000Pods): existing pods in ``sched-0``, measured pods in
    ``sched-1``, every one with required anti-affinity to all the others on the node's hostname."""
    return run_workload(
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
        feature_gates=feature_gates,
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
    nodes: int = 5000,
    existing_pods: int = 1000,
    pods: int = 2000,
    seed: int = 0,
    preferred: bool = False,
    feature_gates: dict[str, bool] | None = None,
) -> BenchResult:
    """TopologySpreading (or PreferredTopologySpreading with ``preferred``): nodes in three zones,
    plain existing pods, measured pods with zone and hostname spread constraints (maxSkew 1)."""
    when = "ScheduleAnyway" if preferred else "DoNotSchedule"
    return run_workload(
        "topology-spread-preferred" if preferred else "topology-spread",
        nodes,
        existing_pods,
        pods,
        seed,
        existing=lambda i: pod_default(f"init-{i}"),
        measured=lambda i: pod_with_topology_spreading(f"pod-{i}", when),
        feature_gates=feature_gates,
    )


def run_preemption(
    nodes: int = 5000,
    existing_pods: int = 20000,
    pods: int = 5000,
    seed: int = 0,
    feature_gates: dict[str, bool] | None = None,
) -> BenchResult:
    """PreemptionBasic: 4-CPU nodes filled with low-priority pods (900m each, 4 per node), then
    high-priority pods of 3 CPU, each of which must evict three of them (DefaultPreemption) and is
    bound to its nominated node once they are gone. Counted: high-priority pods scheduled."""
    return run_workload(
        "preemption",
        nodes,
        existing_pods,
        pods,
        seed,
        setup=[priority_class("low", 1), priority_class("high", 10)],
        existing=lambda i: prioritized_pod(f"low-{i}", "low", "900m"),
        measured=lambda i: prioritized_pod(f"high-{i}", "high", "3"),
        feature_gates=feature_gates,
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


def run_gang(
    nodes: int = 1000,
    existing_pods: int = 0,
    pods: int = 30000,
    seed: int = 0,
    feature_gates: dict[str, bool] | None = None,
) -> BenchResult:
    """Volcano gangs: ``nodes`` 32-CPU nodes, PodGroups of 8 to 64 pods until about ``pods`` pods, in
    three weighted queues, scheduled by the batch profile (Volcano's default conf). Timed: from the
    first session to the last; reported per session too."""
    from kubesched.batch.conf_loader import default_batch_conf

    sim = Simulation(seed=seed, batch_conf=default_batch_conf())
    for i in range(nodes):
        node = node_default(i)
        node["status"]["allocatable"] = {"cpu": "32", "memory": "128Gi", "pods": "110"}
        sim.store.create(admitted(sim.store, node))
    groups = max(1, round(pods / 36))
    measured = 0
    for obj in gang_workload(groups, seed):
        sim.store.create(admitted(sim.store, obj))
        measured += obj["kind"] == "Pod"
    start = time.perf_counter()
    cpu_start = time.process_time()
    sim.run()
    elapsed = time.perf_counter() - start
    cpu = time.process_time() - cpu_start
    batch = sim.batch
    assert batch is not None
    scheduled = sum(1 for o in batch.outcomes.values() if o.status == "Scheduled")
    lines = [
        f"session {i + 1}: {s.pending_before} pending, {s.bound} bound, {s.seconds:.3f}s"
        f" ({s.bound / s.seconds if s.seconds else 0:.0f} pods/s; actions {s.decide_seconds:.3f}s;"
        f" cpu {s.cpu_seconds:.3f}s)"
        for i, s in enumerate(batch.sessions)
    ]
    return BenchResult(
        "gang", nodes, existing_pods, measured, scheduled, elapsed, cpu_seconds=cpu, details="\n".join(lines)
    )


PERF_NODE = "scheduler-perf-node"


def node_with_name(name: str = PERF_NODE) -> dict[str, Any]:
    """scheduler_perf's node-with-name: one node that holds up to 90000 pods."""
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
        "status": {"allocatable": {"cpu": "4", "memory": "32Gi", "pods": "90000"}},
    }


def daemonset_pod(name: str) -> dict[str, Any]:
    """scheduler_perf's daemonset-pod: no requests, required node affinity on the node's name."""
    term = {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [PERF_NODE]}]}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "affinity": {
                "nodeAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}
                }
            },
            "containers": [{"name": "pause", "image": "registry.k8s.io/pause:3.10"}],
        },
    }


def light_pod(name: str, namespace: str = "default", gated: bool = False) -> dict[str, Any]:
    """scheduler_perf's light-pod (no requests); ``gated``: its gated-pod, held by a scheduling gate."""
    pod: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "containers": [{"name": "pause", "image": "registry.k8s.io/pause:3.10"}],
            "terminationGracePeriodSeconds": 0,
        },
    }
    if gated:
        pod["spec"]["schedulingGates"] = [{"name": "test.k8s.io/hold"}]
    return pod


def _churn_every(interval_s: float, threshold: int) -> int:
    """Measured pods per churn step: upstream's interval at upstream's threshold rate."""
    return max(1, round(interval_s * threshold))


def _namespace(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}


def run_basic_50k(
    nodes: int = 5000,
    existing_pods: int = 5000,
    pods: int = 50000,
    seed: int = 0,
    feature_gates: dict[str, bool] | None = None,
) -> BenchResult:
    """SchedulingBasic 5000Nodes_50000Pods."""
    res = run_basic(nodes, existing_pods, pods, seed, feature_gates)
    res.workload = "basic-50k"
    return res


def run_daemonset(
    nodes: int = 15000,
    existing_pods: int = 0,
    pods: int = 30000,
    seed: int = 0,
    feature_gates: dict[str, bool] | None = None,
) -> BenchResult:
    """SchedulingDaemonset: ``scheduler-perf-node`` plus ``nodes`` default nodes; every measured pod
    is pinned to that one node by required node affinity on ``metadata.name`` (NodeAffinity's
    PreFilterResult narrows the search to it)."""
    return run_workload(
        "daemonset",
        nodes,
        existing_pods,
        pods,
        seed,
        setup=[node_with_name()],
        existing=lambda i: daemonset_pod(f"init-{i}"),
        measured=lambda i: daemonset_pod(f"pod-{i}"),
        feature_gates=feature_gates,
    )


def _high_priority_large_cpu(name: str) -> dict[str, Any]:
    """scheduler_perf's pod-high-priority-large-cpu: 9 CPU, fits no 4-CPU node, not even by preempting."""
    return prioritized_pod(name, "high", "9")


def run_unschedulable(
    nodes: int = 5000,
    existing_pods: int = 20000,
    pods: int = 10000,
    seed: int = 0,
    feature_gates: dict[str, bool] | None = None,
) -> BenchResult:
    """Unschedulable (5kNodes/20kInit/10kPods): default pods, interleaved with high-priority 9-CPU
    pods that fit nowhere (created every 200 ms upstream; each one runs preemption in vain)."""

    def churn(sim: Simulation, k: int) -> None:
        sim.store.create(admitted(sim.store, _high_priority_large_cpu(f"unschedulable-{k}")))

    return run_workload(
        "unschedulable",
        nodes,
        existing_pods,
        pods,
        seed,
        setup=[priority_class("high", 10)],
        existing=lambda i: pod_default(f"init-{i}"),
        measured=lambda i: pod_default(f"pod-{i}"),
        feature_gates=feature_gates,
        churn=churn,
        churn_every=_churn_every(0.2, UPSTREAM_THRESHOLDS["unschedulable"]),
    )


def run_mixed_churn(
    nodes: int = 5000,
    existing_pods: int = 0,
    pods: int = 10000,
    seed: int = 0,
    feature_gates: dict[str, bool] | None = None,
) -> BenchResult:
    """SchedulingWithMixedChurn (5000Nodes_10000Pods): default pods while a node, an unschedulable
    high-priority pod and a service are deleted and created again every second upstream."""

    def churn(sim: Simulation, k: int) -> None:
        if k:
            prev = k - 1
            sim.store.delete("Node", None, f"churn-node-{prev}")
            sim.store.delete("Pod", "default", f"churn-pod-{prev}")
            sim.store.delete("Service", "default", f"churn-svc-{prev}")
        node = node_default(0)
        node["metadata"]["name"] = node["metadata"]["labels"]["kubernetes.io/hostname"] = f"churn-node-{k}"
        sim.store.create(admitted(sim.store, node))
        sim.store.create(admitted(sim.store, _high_priority_large_cpu(f"churn-pod-{k}")))
        sim.store.create(
            admitted(
                sim.store,
                {
                    "apiVersion": "v1",
                    "kind": "Service",
                    "metadata": {"name": f"churn-svc-{k}", "namespace": "default"},
                    "spec": {"selector": {"app": "churn"}, "ports": [{"port": 80}]},
                },
            )
        )

    return run_workload(
        "mixed-churn",
        nodes,
        existing_pods,
        pods,
        seed,
        setup=[priority_class("high", 10)],
        existing=lambda i: pod_default(f"init-{i}"),
        measured=lambda i: pod_default(f"pod-{i}"),
        feature_gates=feature_gates,
        churn=churn,
        churn_every=_churn_every(1.0, UPSTREAM_THRESHOLDS["mixed-churn"]),
    )


def run_while_gated(
    nodes: int = 1,
    existing_pods: int = 30000,
    pods: int = 20000,
    seed: int = 0,
    feature_gates: dict[str, bool] | None = None,
) -> BenchResult:
    """SchedulingWhileGated (1Node_10000GatedPods): one big node; a third of the existing pods stay
    gated to the end, the rest are scheduled first and then deleted at 50/s upstream while the
    measured pods are scheduled (every deletion is an AssignedPodDelete event for the queue).
    ``nodes`` is ignored: the workload has its one node."""
    gated = existing_pods // 3
    deleting = existing_pods - gated
    deleted = [0]
    every = _churn_every(1 / 50, UPSTREAM_THRESHOLDS["while-gated"])

    def churn(sim: Simulation, k: int) -> None:
        if k and deleted[0] < deleting:
            sim.store.delete("Pod", "namespace-3", f"deleting-{deleted[0]}")
            deleted[0] += 1

    def existing(i: int) -> dict[str, Any]:
        if i < gated:
            return light_pod(f"gated-{i}", gated=True)
        return light_pod(f"deleting-{i - gated}", "namespace-3")

    res = run_workload(
        "while-gated",
        0,
        existing_pods,
        pods,
        seed,
        setup=[_namespace("namespace-3"), node_with_name()],
        existing=existing,
        measured=lambda i: light_pod(f"pod-{i}"),
        feature_gates=feature_gates,
        churn=churn,
        churn_every=every,
    )
    res.nodes = 1
    return res


def run_extended_resource(
    nodes: int = 5000,
    existing_pods: int = 0,
    pods: int = 5000,
    seed: int = 0,
    feature_gates: dict[str, bool] | None = None,
) -> BenchResult:
    """SchedulingWithExtendedResource (5000pods_5000nodes): node i offers one ``foo.com/bar-i`` and
    pod i asks for it, so each pod fits exactly one node."""

    def node(i: int) -> dict[str, Any]:
        obj = node_default(i)
        obj["metadata"]["labels"]["node-with-extended-resource"] = "true"
        obj["status"]["allocatable"][f"foo.com/bar-{i}"] = "1"
        return obj

    def pod(i: int) -> dict[str, Any]:
        obj = pod_default(f"pod-{i}")
        obj["metadata"]["namespace"] = "test"
        res = {f"foo.com/bar-{i}": "1"}
        obj["spec"]["containers"][0]["resources"] = {"requests": res, "limits": dict(res)}
        return obj

    return run_workload(
        "extended-resource",
        nodes,
        existing_pods,
        pods,
        seed,
        setup=[_namespace("test")],
        node=node,
        existing=lambda i: pod_default(f"init-{i}"),
        measured=pod,
        feature_gates=feature_gates,
    )


def run_preemption_async(
    nodes: int = 5000,
    existing_pods: int = 20000,
    pods: int = 5000,
    seed: int = 0,
    feature_gates: dict[str, bool] | None = None,
) -> BenchResult:
    """PreemptionAsync (5000Nodes): nodes filled by four 900m low-priority pods each; default pods
    (always schedulable) are measured while 3-CPU high-priority pods, each preempting three victims,
    arrive every 200 ms upstream."""

    def churn(sim: Simulation, k: int) -> None:
        sim.store.create(admitted(sim.store, prioritized_pod(f"preemptor-{k}", "high", "3")))

    return run_workload(
        "preemption-async",
        nodes,
        existing_pods,
        pods,
        seed,
        setup=[priority_class("low", 1), priority_class("high", 10)],
        existing=lambda i: prioritized_pod(f"low-{i}", "low", "900m"),
        measured=lambda i: pod_default(f"pod-{i}"),
        feature_gates=feature_gates,
        churn=churn,
        churn_every=_churn_every(0.2, UPSTREAM_THRESHOLDS["preemption-async"]),
    )


def run_resource_saturation(
    nodes: int = 5000,
    existing_pods: int = 0,
    pods: int = 5000,
    seed: int = 0,
    feature_gates: dict[str, bool] | None = None,
) -> BenchResult:
    """Upstream's batching/ResourceSaturation shape (20000 nodes there): 3-CPU pods on 4-CPU nodes,
    one per node, PodTopologySpread disabled; the best case for opportunistic batching."""
    return run_workload(
        "resource-saturation",
        nodes,
        existing_pods,
        pods,
        seed,
        existing=lambda i: _saturating_pod(f"init-{i}"),
        measured=lambda i: _saturating_pod(f"pod-{i}"),
        feature_gates=feature_gates,
        no_topology=True,
    )


def _saturating_pod(name: str) -> dict[str, Any]:
    pod = pod_default(name)
    pod["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "3"
    return pod


#: Upstream scheduler_perf's thresholds (pods/s) for the workload shapes above
#: (``test/integration/scheduler_perf/misc/performance-config.yaml``).
UPSTREAM_THRESHOLDS: dict[str, int] = {
    "basic": 680,
    "basic-50k": 810,
    "daemonset": 1100,
    "unschedulable": 600,
    "mixed-churn": 710,
    "while-gated": 910,
    "extended-resource": 180,
    "preemption-async": 570,
    "in-tree-pvs": 290,
    "migrated-in-tree-pvs": 100,
    "csi-pvs": 100,
    # test/integration/scheduler_perf/dra/performance-config.yaml (the QueueingHints variants').
    "dra-claim-template": 56,
    "dra-steady-empty": 64,
    "dra-steady-half": 60,
    "dra-steady-full": 60,
    # test/integration/scheduler_perf/dra/extendedresource/performance-config.yaml.
    "dra-extended-resource-25classes": 120,
    "dra-extended-resource-50classes": 130,
    "dra-implicit-extended-resource-25classes": 130,
}

#: ``kubesched bench --all``: upstream's CI-gated workloads, then our gang workload.
SUITE: tuple[str, ...] = (
    "basic",
    "basic-50k",
    "daemonset",
    "unschedulable",
    "mixed-churn",
    "while-gated",
    "extended-resource",
    "preemption-async",
    "in-tree-pvs",
    "migrated-in-tree-pvs",
    "csi-pvs",
    "dra-claim-template",
    "dra-steady-empty",
    "dra-steady-half",
    "dra-steady-full",
    "dra-extended-resource-25classes",
    "dra-extended-resource-50classes",
    "dra-implicit-extended-resource-25classes",
    "gang",
    "podgroup-gang",
    "gangscheduling",
    "gangscheduling-1000pergroup",
)

WORKLOADS: dict[str, Callable[..., BenchResult]] = {
    "per-node-plugin": run_per_node_plugin,
    "extender": run_extender,
    "gang": run_gang,
    "podgroup-gang": run_pod_group_gang,
    "gangscheduling": run_gang_scheduling,
    "gangscheduling-1000pergroup": run_gang_scheduling_1000_per_group,
    "tas": run_topology_aware_scheduling,
    "resource-saturation": run_resource_saturation,
    "basic-50k": run_basic_50k,
    "daemonset": run_daemonset,
    "unschedulable": run_unschedulable,
    "mixed-churn": run_mixed_churn,
    "while-gated": run_while_gated,
    "extended-resource": run_extended_resource,
    "preemption-async": run_preemption_async,
    "preemption": run_preemption,
    "basic": run_basic,
    "topology-spread": run_topology_spread,
    "topology-spread-preferred": lambda **kw: run_topology_spread(preferred=True, **kw),
    "pod-anti-affinity": run_pod_anti_affinity,
    "in-tree-pvs": run_in_tree_pvs,
    "migrated-in-tree-pvs": run_migrated_in_tree_pvs,
    "csi-pvs": run_csi_pvs,
    "preemption-pvs": run_preemption_pvs,
    "dra-claim-template": run_claim_template,
    "dra-steady-empty": run_steady_empty,
    "dra-steady-half": run_steady_half,
    "dra-steady-full": run_steady_full,
    "dra-steady-first-available": run_steady_first_available,
    "dra-extended-resource-25classes": run_extended_resource_25,
    "dra-extended-resource-50classes": run_extended_resource_50,
    "dra-implicit-extended-resource-25classes": run_implicit_extended_resource_25,
}
