"""Gangs through the kube-scheduler pipeline: scheduling.k8s.io PodGroups with a gang policy,
scheduled by the default profile with ``GenericWorkload`` and ``GangScheduling`` on (the pod group
cycle and the GangScheduling plugin), on the same nodes and pod shapes as the Volcano ``gang``
workload, so the two pipelines can be timed on the same pods."""

from __future__ import annotations

import random
import time
from typing import Any

from kubesched.bench.base import BenchResult, node_default, run_workload
from kubesched.framework.config import config_from_dict
from kubesched.plugins import default_registry
from kubesched.registry.admission import admitted
from kubesched.sim.simulation import Simulation

GATES = {"GenericWorkload": True, "GangScheduling": True}


def pod_group_gang_workload(
    groups: int, seed: int, *, min_size: int = 8, max_size: int = 64
) -> list[dict[str, Any]]:
    """``groups`` PodGroups of ``min_size`` to ``max_size`` pods (gang minCount = size) and their
    pods, each asking 500m CPU and 1Gi: the sizes the Volcano gang workload draws for the same seed."""
    rnd = random.Random(seed)
    objs: list[dict[str, Any]] = []
    for g in range(groups):
        size = rnd.randint(min_size, max_size)
        name = f"job-{g}"
        objs.append(
            {
                "apiVersion": "scheduling.k8s.io/v1alpha2",
                "kind": "PodGroup",
                "metadata": {"name": name, "namespace": "default"},
                "spec": {"schedulingPolicy": {"gang": {"minCount": size}}},
            }
        )
        spec = {
            "schedulingGroup": {"podGroupName": name},
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
                    "metadata": {"name": f"{name}-{i}", "namespace": "default", "labels": {"job": name}},
                    "spec": spec,
                }
            )
    return objs


def run_pod_group_gang(
    nodes: int = 1000,
    existing_pods: int = 0,
    pods: int = 10000,
    seed: int = 0,
    feature_gates: dict[str, bool] | None = None,
) -> BenchResult:
    """``nodes`` 32-CPU nodes, PodGroups of 8 to 64 pods until about ``pods`` pods, scheduled by
    the kube-scheduler's pod group cycle. Timed: from the first cycle until every pod was tried."""
    registry = default_registry()
    config = config_from_dict(
        {
            "apiVersion": "kubescheduler.config.k8s.io/v1",
            "kind": "KubeSchedulerConfiguration",
            "featureGates": {**GATES, **(feature_gates or {})},
        },
        registry,
    )
    sim = Simulation(config, registry, seed=seed)
    for i in range(nodes):
        node = node_default(i)
        node["status"]["allocatable"] = {"cpu": "32", "memory": "128Gi", "pods": "110"}
        sim.store.create(admitted(sim.store, node))
    measured = 0
    for obj in pod_group_gang_workload(max(1, round(pods / 36)), seed):
        sim.store.create(admitted(sim.store, obj))
        measured += obj["kind"] == "Pod"
    start = time.perf_counter()
    cpu_start = time.process_time()
    sim.run()
    elapsed = time.perf_counter() - start
    cpu = time.process_time() - cpu_start
    scheduled = sum(1 for o in sim.scheduler.outcomes.values() if o.status == "Scheduled")
    return BenchResult("podgroup-gang", nodes, existing_pods, measured, scheduled, elapsed, cpu_seconds=cpu)


def gang_pod(index: int, per_group: int, namespace: str = "gang-ns-0") -> dict[str, Any]:
    """scheduler_perf's podgroup/gangscheduling gang-pod: 100m CPU, 100Mi, in gang-<index // n>."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": f"test-gang-scheduling-{index}", "namespace": namespace},
        "spec": {
            "schedulingGroup": {"podGroupName": f"gang-{index // per_group}"},
            "containers": [
                {
                    "name": "pause",
                    "image": "registry.k8s.io/pause:3.10.1",
                    "resources": {"requests": {"cpu": "100m", "memory": "100Mi"}},
                }
            ],
        },
    }


def gang_pod_group(index: int, per_group: int, namespace: str = "gang-ns-0") -> dict[str, Any]:
    """scheduler_perf's podgroup/gangscheduling podgroup: gang-<index>, minCount = its pods."""
    return {
        "apiVersion": "scheduling.k8s.io/v1alpha2",
        "kind": "PodGroup",
        "metadata": {"name": f"gang-{index}", "namespace": namespace},
        "spec": {"schedulingPolicy": {"gang": {"minCount": per_group}}},
    }


def run_gang_scheduling(
    nodes: int = 5000,
    existing_pods: int = 0,
    pods: int = 3000,
    seed: int = 0,
    feature_gates: dict[str, bool] | None = None,
    *,
    per_group: int = 3,
    workload: str = "gangscheduling",
) -> BenchResult:
    """Upstream scheduler_perf ``podgroup/gangscheduling`` (GangScheduling, e.g.
    5000Nodes_1000Gangs_3000Pods): node-default nodes, ``pods / per_group`` gangs of ``per_group``
    pods each; the pod groups exist before the measured pods are created."""
    groups = max(1, pods // per_group)
    return run_workload(
        workload,
        nodes,
        0,
        groups * per_group,
        seed,
        setup=[
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "gang-ns-0"}},
            *(gang_pod_group(g, per_group) for g in range(groups)),
        ],
        existing=lambda i: gang_pod(i, per_group),
        measured=lambda i: gang_pod(i, per_group),
        feature_gates={**GATES, **(feature_gates or {})},
    )


def run_gang_scheduling_1000_per_group(**kw: Any) -> BenchResult:
    """Upstream 5000Nodes_3Gangs_3000Pods_1000PerGroup: three gangs of 1000."""
    return run_gang_scheduling(per_group=1000, workload="gangscheduling-1000pergroup", **kw)


def tas_node(index: int, nodes_per_rack: int) -> dict[str, Any]:
    """scheduler_perf's podgroup/tas node: 4 CPU, 32Gi, in zone-<i // 100> and rack-<i // n>."""
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": f"node-{index}",
            "labels": {
                "kubernetes.io/hostname": f"node-{index}",
                "topology.kubernetes.io/zone": f"zone-{index // 100}",
                "topology.kubernetes.io/rack": f"rack-{index // nodes_per_rack}",
            },
        },
        "status": {
            "capacity": {"cpu": "4", "memory": "32Gi", "pods": "110"},
            "allocatable": {"cpu": "4", "memory": "32Gi", "pods": "110"},
        },
    }


def run_topology_aware_scheduling(
    nodes: int = 5000,
    existing_pods: int = 0,
    pods: int = 3000,
    seed: int = 0,
    feature_gates: dict[str, bool] | None = None,
    *,
    per_group: int = 4,
    nodes_per_rack: int = 100,
) -> BenchResult:
    """Upstream scheduler_perf ``podgroup/tas`` (TopologyAwareScheduling/5000Nodes_750Gangs_3000Pods):
    gangs of ``per_group`` pods, each constrained to one ``topology.kubernetes.io/rack``; every rack
    is a placement the group is tried on. Upstream leaves ``nodesPerRack`` to the run; 100 here."""
    groups = max(1, pods // per_group)
    rack_group = {"topology": [{"key": "topology.kubernetes.io/rack"}]}
    return run_workload(
        "tas",
        nodes,
        0,
        groups * per_group,
        seed,
        setup=[
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "gang-ns-0"}},
            *(
                {**pg, "spec": {**pg["spec"], "schedulingConstraints": rack_group}}
                for pg in (gang_pod_group(g, per_group) for g in range(groups))
            ),
        ],
        node=lambda i: tas_node(i, nodes_per_rack),
        existing=lambda i: gang_pod(i, per_group),
        measured=lambda i: gang_pod(i, per_group),
        feature_gates={**GATES, "TopologyAwareWorkloadScheduling": True, **(feature_gates or {})},
    )
