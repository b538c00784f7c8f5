"""scheduler_perf's volume workloads (``test/integration/scheduler_perf/volumes``): every pod comes
with its own claim, pre-bound to its own PersistentVolume, as upstream's
``CreatePodWithPersistentVolume`` makes them (claim first, then the volume, then the pod).

- SchedulingInTreePVs: AWS EBS volumes, nodes without a CSINode;
- SchedulingMigratedInTreePVs: the same volumes on nodes whose CSINode lists the EBS CSI driver with
  39 attachable volumes and ``kubernetes.io/aws-ebs`` as migrated, so NodeVolumeLimits counts the
  in-tree volumes against the CSI driver's limit;
- SchedulingCSIPVs: CSI volumes of that driver on the same nodes;
- PreemptionPVs: nodes filled with low-priority pods, then high-priority pods with volumes that
  must preempt.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kubesched.bench.base import (
    BenchResult,
    Obj,
    node_default,
    pod_default,
    prioritized_pod,
    priority_class,
    run_workload,
)

EBS_CSI_DRIVER = "ebs.csi.aws.com"
#: scheduler_perf's nodeAllocatableStrategy for these workloads.
EBS_ATTACHABLE = 39
NAMESPACE = "default"


def _claim(i: int, volume: str) -> Obj:
    """upstream templates/pvc.yaml: 1Gi ReadOnlyMany, bound (``bindVolume``) to its volume."""
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {
            "name": f"pvc-{i}",
            "namespace": NAMESPACE,
            "annotations": {"pv.kubernetes.io/bind-completed": "true"},
        },
        "spec": {
            "accessModes": ["ReadOnlyMany"],
            "resources": {"requests": {"storage": "1Gi"}},
            "volumeName": volume,
        },
        "status": {"phase": "Bound"},
    }


def _volume(i: int, source: str) -> Obj:
    """upstream templates/pv-aws.yaml or pv-csi.yaml, named ``<namespace>-vol-<i>``, its volume ID
    or handle the same, bound to ``pvc-<i>``."""
    name = f"{NAMESPACE}-vol-{i}"
    spec: dict[str, Any] = {
        "accessModes": ["ReadOnlyMany"],
        "capacity": {"storage": "1Gi"},
        "persistentVolumeReclaimPolicy": "Retain",
        "claimRef": {
            "kind": "PersistentVolumeClaim",
            "apiVersion": "v1",
            "namespace": NAMESPACE,
            "name": f"pvc-{i}",
        },
    }
    if source == "csi":
        spec["csi"] = {"driver": EBS_CSI_DRIVER, "volumeHandle": name}
    else:
        spec["awsElasticBlockStore"] = {"volumeID": name}
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": {"name": name},
        "spec": spec,
        "status": {"phase": "Bound"},
    }


def _with_volume(pod: Obj, i: int, source: str) -> list[Obj]:
    """The claim, its volume, and ``pod`` using the claim."""
    pod["spec"]["volumes"] = [{"name": "vol", "persistentVolumeClaim": {"claimName": f"pvc-{i}"}}]
    volume = _volume(i, source)
    return [_claim(i, volume["metadata"]["name"]), volume, pod]


def _pod_with_volume(prefix: str, source: str) -> Callable[[int], list[Obj]]:
    def make(i: int) -> list[Obj]:
        # Claims are numbered across the existing and measured pods so that none is shared.
        return _with_volume(pod_default(f"{prefix}-{i}"), i if prefix == "init" else 1_000_000 + i, source)

    return make


def _csi_node(i: int, *, migrated: bool) -> list[Obj]:
    """node-default with the EBS driver's attachable volumes, and its CSINode."""
    node = node_default(i)
    node["status"]["allocatable"][f"attachable-volumes-csi-{EBS_CSI_DRIVER}"] = str(EBS_ATTACHABLE)
    meta: dict[str, Any] = {"name": node["metadata"]["name"]}
    if migrated:
        meta["annotations"] = {"storage.alpha.kubernetes.io/migrated-plugins": "kubernetes.io/aws-ebs"}
    csi_node = {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "CSINode",
        "metadata": meta,
        "spec": {
            "drivers": [
                {
                    "name": EBS_CSI_DRIVER,
                    "nodeID": node["metadata"]["name"],
                    "allocatable": {"count": EBS_ATTACHABLE},
                }
            ]
        },
    }
    return [node, csi_node]


def run_in_tree_pvs(
    nodes: int = 5000,
    existing_pods: int = 1000,
    pods: int = 2000,
    seed: int = 0,
    feature_gates: dict[str, bool] | None = None,
) -> BenchResult:
    """SchedulingInTreePVs (5000Nodes_2000Pods)."""
    return run_workload(
        "in-tree-pvs",
        nodes,
        existing_pods,
        pods,
        seed,
        existing=_pod_with_volume("init", "aws"),
        measured=_pod_with_volume("pod", "aws"),
        feature_gates=feature_gates,
    )


def run_migrated_in_tree_pvs(
    nodes: int = 5000,
    existing_pods: int = 5000,
    pods: int = 5000,
    seed: int = 0,
    feature_gates: dict[str, bool] | None = None,
) -> BenchResult:
    """SchedulingMigratedInTreePVs (5000Nodes_5000Pods)."""
    return run_workload(
        "migrated-in-tree-pvs",
        nodes,
        existing_pods,
        pods,
        seed,
        node=lambda i: _csi_node(i, migrated=True),
        existing=_pod_with_volume("init", "aws"),
        measured=_pod_with_volume("pod", "aws"),
        feature_gates=feature_gates,
    )


def run_csi_pvs(
    nodes: int = 5000,
    existing_pods: int = 5000,
    pods: int = 5000,
    seed: int = 0,
    feature_gates: dict[str, bool] | None = None,
) -> BenchResult:
    """SchedulingCSIPVs (5000Nodes_5000Pods)."""
    return run_workload(
        "csi-pvs",
        nodes,
        existing_pods,
        pods,
        seed,
        node=lambda i: _csi_node(i, migrated=False),
        existing=_pod_with_volume("init", "csi"),
        measured=_pod_with_volume("pod", "csi"),
        feature_gates=feature_gates,
    )


def _low_priority_pod(i: int) -> Obj:
    """templates/pod-low-priority.yaml: 900m CPU, priority class ``low-priority`` (4 fill a node)."""
    return prioritized_pod(f"low-{i}", "low-priority", "900m")


def _high_priority_pod(i: int) -> list[Obj]:
    """templates/pod-high-priority.yaml: 3 CPU, priority class ``high-priority``, with a volume."""
    return _with_volume(prioritized_pod(f"high-{i}", "high-priority", "3"), i, "aws")


def run_preemption_pvs(
    nodes: int = 1000,
    existing_pods: int = 4000,
    pods: int = 1000,
    seed: int = 0,
    feature_gates: dict[str, bool] | None = None,
) -> BenchResult:
    """PreemptionPVs (1000Nodes): counted, the high-priority pods scheduled after preempting."""
    return run_workload(
        "preemption-pvs",
        nodes,
        existing_pods,
        pods,
        seed,
        setup=[priority_class("low-priority", 1), priority_class("high-priority", 10)],
        existing=_low_priority_pod,
        measured=_high_priority_pod,
        feature_gates=feature_gates,
    )
