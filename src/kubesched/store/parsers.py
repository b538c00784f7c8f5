"""The typed view of each kind the informers follow, parsed once per stored object."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubesched.api.objects import Node, Pod, PriorityClass
from kubesched.api.pdb import PodDisruptionBudget
from kubesched.api.resource import DeviceClass, ResourceClaim, ResourceClaimTemplate, ResourceSlice
from kubesched.api.scheduling_groups import POD_GROUP_STORE_KIND, SchedulingPodGroup, Workload
from kubesched.api.storage import (
    CSIDriver,
    CSINode,
    CSIStorageCapacity,
    PersistentVolume,
    PersistentVolumeClaim,
    StorageClass,
    VolumeAttachment,
)
from kubesched.api.topology import HyperNode
from kubesched.api.volcano import PodGroup, Queue
from kubesched.api.workloads import ReplicaSet, ReplicationController, Service, StatefulSet
from kubesched.store.base import ClusterStore, Obj
from kubesched.store.informers import InformerFactory, Parser


def _same_pod(previous: Pod, obj: Obj) -> Pod | None:
    """Reuse the parsed pod when its spec's containers and its labels and annotations are the very
    objects parsed before (a bind or a status write) and its generated claims are the same: only
    nodeName and phase can differ then."""
    old = previous.raw
    spec = obj.get("spec") or {}
    if (old.get("spec") or {}).get("containers") is not spec.get("containers"):
        return None
    if previous.resource_claims and (old.get("status") or {}).get("resourceClaimStatuses") != (
        obj.get("status") or {}
    ).get("resourceClaimStatuses"):
        return None
    old_meta, meta = old.get("metadata") or {}, obj.get("metadata") or {}
    for field in ("labels", "annotations"):
        before, after = old_meta.get(field), meta.get(field)
        if before is not after and before != after:  # writes keep the very same mapping
            return None
    pod = previous.__copy__()
    pod.node_name = str(spec.get("nodeName") or "")
    pod.raw = obj
    pod.phase = str((obj.get("status") or {}).get("phase") or "Pending")
    return pod


def parse_pod(obj: Obj, previous: Any) -> Pod:
    if isinstance(previous, Pod):
        reused = _same_pod(previous, obj)
        if reused is not None:
            return reused
    return Pod.from_dict(obj)


def _plain(parse: Any) -> Parser:
    def parser(obj: Obj, _previous: Any) -> Any:
        return parse(obj)

    return parser


#: Kind → parser. Kinds not listed (Namespace, Event, …) are kept as the stored mappings.
DEFAULT_PARSERS: Mapping[str, Parser] = {
    "Pod": parse_pod,
    "Node": _plain(Node.from_dict),
    "PriorityClass": _plain(PriorityClass.from_dict),
    "PodDisruptionBudget": _plain(PodDisruptionBudget.from_dict),
    "Service": _plain(Service.from_dict),
    "ReplicationController": _plain(ReplicationController.from_dict),
    "ReplicaSet": _plain(ReplicaSet.from_dict),
    "StatefulSet": _plain(StatefulSet.from_dict),
    "PodGroup": _plain(PodGroup.from_dict),
    "Queue": _plain(Queue.from_dict),
    POD_GROUP_STORE_KIND: _plain(SchedulingPodGroup.from_dict),
    "Workload": _plain(Workload.from_dict),
    "HyperNode": _plain(HyperNode.from_dict),
    "PersistentVolume": _plain(PersistentVolume.from_dict),
    "PersistentVolumeClaim": _plain(PersistentVolumeClaim.from_dict),
    "StorageClass": _plain(StorageClass.from_dict),
    "CSINode": _plain(CSINode.from_dict),
    "CSIDriver": _plain(CSIDriver.from_dict),
    "CSIStorageCapacity": _plain(CSIStorageCapacity.from_dict),
    "VolumeAttachment": _plain(VolumeAttachment.from_dict),
    "DeviceClass": _plain(DeviceClass.from_dict),
    "ResourceClaim": _plain(ResourceClaim.from_dict),
    "ResourceClaimTemplate": _plain(ResourceClaimTemplate.from_dict),
    "ResourceSlice": _plain(ResourceSlice.from_dict),
}


def informer_factory(store: ClusterStore) -> InformerFactory:
    """Informers over ``store`` with every kind's typed view."""
    return InformerFactory(store, DEFAULT_PARSERS)
