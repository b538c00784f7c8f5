"""The one registry of feature gates kubesched knows, with upstream's defaults, shared by every
component it plays: the schedulers (``KubeSchedulerConfiguration.featureGates`` and
``--feature-gates``), the API server of ``serve`` (which kinds and fields it serves) and the
controllers (the Job controller's Workload and PodGroup).

Defaults are those of Kubernetes v1.35, and for the gates v1.36 added (the workload-aware
scheduling ones), of v1.36.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from kubesched.errors import InputError

GENERIC_WORKLOAD: Final = "GenericWorkload"
GANG_SCHEDULING: Final = "GangScheduling"
TOPOLOGY_AWARE_WORKLOAD_SCHEDULING: Final = "TopologyAwareWorkloadScheduling"
WORKLOAD_AWARE_PREEMPTION: Final = "WorkloadAwarePreemption"
WORKLOAD_WITH_JOB: Final = "WorkloadWithJob"
DRA_WORKLOAD_RESOURCE_CLAIMS: Final = "DRAWorkloadResourceClaims"

#: The feature gates kubesched knows, with their defaults.
FEATURE_GATE_DEFAULTS: Final[dict[str, bool]] = {
    # Beta and on by default since v1.35 (KEP-5598).
    "OpportunisticBatching": True,
    # Alpha (off) from v1.33 until v1.36 (KEP-4049): VolumeBinding's storage capacity score.
    "StorageCapacityScoring": False,
    # Dynamic Resource Allocation (DynamicResources and its allocator), as v1.35 sets them: the
    # core is GA, admin access and prioritized lists are beta and on, the rest alpha and off.
    "DynamicResourceAllocation": True,
    "DRAAdminAccess": True,
    "DRAPrioritizedList": True,
    "DRAResourceClaimDeviceStatus": True,
    "DRASchedulerFilterTimeout": True,
    "DRAPartitionableDevices": False,
    "DRADeviceTaints": False,
    "DRADeviceTaintRules": False,
    "DRAConsumableCapacity": False,
    "DRADeviceBindingConditions": False,
    "DRAExtendedResource": False,
    # Workload-aware scheduling (KEP-4671 and its followers), all alpha and off in v1.36: the
    # Workload and PodGroup API of scheduling.k8s.io/v1alpha2 and the pod's spec.schedulingGroup
    # (v1.35), gang scheduling in kube-scheduler (v1.35), topology constraints of a group, workload-
    # aware preemption (disruptionMode, a group's priority) and the Job controller's Workload and
    # PodGroup for Indexed Jobs (v1.36), ResourceClaims shared by a group (v1.36).
    GENERIC_WORKLOAD: False,
    GANG_SCHEDULING: False,
    TOPOLOGY_AWARE_WORKLOAD_SCHEDULING: False,
    WORKLOAD_AWARE_PREEMPTION: False,
    WORKLOAD_WITH_JOB: False,
    DRA_WORKLOAD_RESOURCE_CLAIMS: False,
}

#: Gate → the gates it needs on (upstream's feature dependencies).
FEATURE_GATE_DEPENDENCIES: Final[Mapping[str, tuple[str, ...]]] = {
    GANG_SCHEDULING: (GENERIC_WORKLOAD,),
    TOPOLOGY_AWARE_WORKLOAD_SCHEDULING: (GENERIC_WORKLOAD,),
    WORKLOAD_AWARE_PREEMPTION: (GANG_SCHEDULING,),
    WORKLOAD_WITH_JOB: (GENERIC_WORKLOAD,),
    DRA_WORKLOAD_RESOURCE_CLAIMS: (GENERIC_WORKLOAD, "DynamicResourceAllocation"),
}


def gate_enabled(gates: Mapping[str, bool], name: str) -> bool:
    """Whether ``name`` is on: as set in ``gates``, else its default."""
    return gates.get(name, FEATURE_GATE_DEFAULTS[name])


def check_gate_dependencies(gates: Mapping[str, bool], where: str = "--feature-gates") -> None:
    """Refuse a gate turned on while a gate it depends on is off."""
    for name, needs in FEATURE_GATE_DEPENDENCIES.items():
        if not gate_enabled(gates, name):
            continue
        for need in needs:
            if not gate_enabled(gates, need):
                raise InputError(f"{where}: feature gate {name} depends on {need}, which is disabled")


class FeatureGates:
    """The gates one process runs with, as kube-apiserver's ``DefaultFeatureGate``: what ``serve``
    was started with decides which kinds and fields its API serves and what its controllers make.
    Unset gates keep their defaults."""

    def __init__(self) -> None:
        self._gates: dict[str, bool] = {}
        #: Bumped by every :meth:`set_all`: what is derived from the gates is kept until it moves.
        self.generation = 0

    def enabled(self, name: str) -> bool:
        return gate_enabled(self._gates, name)

    def snapshot(self) -> dict[str, bool]:
        """The gates as set (defaults left out)."""
        return dict(self._gates)

    def set_all(self, gates: Mapping[str, bool]) -> dict[str, bool]:
        """Replace the gates set with ``gates``; returns those set before, to give back later."""
        check_gate_dependencies(gates)
        previous, self._gates = self._gates, dict(gates)
        self.generation += 1
        return previous


#: The process's feature gates (set by ``serve`` from ``--feature-gates``).
DEFAULT_FEATURE_GATES: Final = FeatureGates()
