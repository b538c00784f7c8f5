"""Builders for the VolumeBinding tests (upstream ``volumebinding/test_utils.go``): nodes, PVs, claims
and pods as manifests, with the same defaults as upstream's (a node labelled with its hostname, a
claim in ``default``, a pod without volumes), parsed into kubesched's views on demand."""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import Any

from kubesched.api.objects import Node, Pod
from kubesched.api.storage import BIND_COMPLETED_ANNOTATION, PersistentVolume, PersistentVolumeClaim

HOSTNAME = "kubernetes.io/hostname"
NAMESPACE_DEFAULT = "default"

Obj = dict[str, Any]


class NodeBuilder:
    def __init__(self, name: str) -> None:
        self.obj: Obj = {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": name, "labels": {HOSTNAME: name}},
            "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}},
        }

    def with_label(self, key: str, value: str) -> NodeBuilder:
        self.obj["metadata"]["labels"][key] = value
        return self

    @property
    def node(self) -> Node:
        return Node.from_dict(copy.deepcopy(self.obj))


def make_node(name: str) -> NodeBuilder:
    return NodeBuilder(name)


class PVBuilder:
    def __init__(self, name: str, class_name: str) -> None:
        self.obj: Obj = {
            "apiVersion": "v1",
            "kind": "PersistentVolume",
            "metadata": {"name": name},
            "spec": {"storageClassName": class_name},
        }

    def with_node_affinity(self, key_values: Mapping[str, Sequence[str]]) -> PVBuilder:
        """One node selector term: each key ``In`` its values."""
        expressions = [{"key": k, "operator": "In", "values": list(v)} for k, v in key_values.items()]
        self.obj["spec"]["nodeAffinity"] = {
            "required": {"nodeSelectorTerms": [{"matchExpressions": expressions}]}
        }
        return self

    def with_version(self, version: str) -> PVBuilder:
        self.obj["metadata"]["resourceVersion"] = version
        return self

    def with_capacity(self, capacity: str) -> PVBuilder:
        self.obj["spec"]["capacity"] = {"storage": capacity}
        return self

    def with_phase(self, phase: str) -> PVBuilder:
        self.obj["status"] = {"phase": phase}
        return self

    @property
    def pv(self) -> PersistentVolume:
        return PersistentVolume.from_dict(copy.deepcopy(self.obj))


def make_pv(name: str, class_name: str) -> PVBuilder:
    return PVBuilder(name, class_name)


class PVCBuilder:
    def __init__(self, name: str, class_name: str) -> None:
        self.obj: Obj = {
            "apiVersion": "v1",
            "kind": "PersistentVolumeClaim",
            "metadata": {"name": name, "namespace": NAMESPACE_DEFAULT},
            "spec": {"storageClassName": class_name},
        }

    def with_bound_pv(self, pv_name: str) -> PVCBuilder:
        self.obj["spec"]["volumeName"] = pv_name
        self.obj["metadata"].setdefault("annotations", {})[BIND_COMPLETED_ANNOTATION] = "true"
        return self

    def with_request_storage(self, request: str) -> PVCBuilder:
        self.obj["spec"]["resources"] = {"requests": {"storage": request}}
        return self

    def with_phase(self, phase: str) -> PVCBuilder:
        self.obj["status"] = {"phase": phase}
        return self

    @property
    def pvc(self) -> PersistentVolumeClaim:
        return PersistentVolumeClaim.from_dict(copy.deepcopy(self.obj))


def make_pvc(name: str, class_name: str) -> PVCBuilder:
    return PVCBuilder(name, class_name)


class PodBuilder:
    def __init__(self, name: str) -> None:
        self.obj: Obj = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name, "namespace": NAMESPACE_DEFAULT, "uid": f"uid-{name}"},
            "spec": {"containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10"}], "volumes": []},
        }

    def _add(self, volume: Obj) -> PodBuilder:
        volumes: list[Obj] = self.obj["spec"]["volumes"]
        if not volume.get("name"):
            # Upstream's unit tests leave names empty; the API server (and kubesched) need one.
            volume["name"] = f"volume-{len(volumes)}"
        volumes.append(volume)
        return self

    def with_node_name(self, name: str) -> PodBuilder:
        self.obj["spec"]["nodeName"] = name
        return self

    def with_namespace(self, namespace: str) -> PodBuilder:
        self.obj["metadata"]["namespace"] = namespace
        return self

    def with_uid(self, uid: str) -> PodBuilder:
        self.obj["metadata"]["uid"] = uid
        return self

    def with_pvc_volume(self, pvc_name: str, name: str = "") -> PodBuilder:
        return self._add({"name": name, "persistentVolumeClaim": {"claimName": pvc_name}})

    def with_pvcs_volume(self, pvcs: Sequence[PersistentVolumeClaim]) -> PodBuilder:
        for i, pvc in enumerate(pvcs):
            self.with_pvc_volume(pvc.name, f"vol{i}")
        return self

    def with_empty_dir_volume(self) -> PodBuilder:
        return self._add({"name": "", "emptyDir": {}})

    def with_generic_ephemeral_volume(self, name: str) -> PodBuilder:
        return self._add({"name": name, "ephemeral": {}})

    def with_csi(self, driver: str) -> PodBuilder:
        return self._add({"name": "", "csi": {"driver": driver}})

    @property
    def pod(self) -> Pod:
        return Pod.from_dict(copy.deepcopy(self.obj))


def make_pod(name: str) -> PodBuilder:
    return PodBuilder(name)


def storage_class(
    name: str, mode: str, provisioner: str = "kubernetes.io/no-provisioner", **extra: Any
) -> Obj:
    """A StorageClass manifest (the API server requires a provisioner; upstream's unit tests leave
    it empty, which reads as no provisioner too)."""
    return {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "StorageClass",
        "metadata": {"name": name},
        "provisioner": provisioner,
        "volumeBindingMode": mode,
        **extra,
    }


def csi_driver(name: str, storage_capacity: bool | None) -> Obj:
    spec: Obj = {}
    if storage_capacity is not None:
        spec["storageCapacity"] = storage_capacity
    return {"apiVersion": "storage.k8s.io/v1", "kind": "CSIDriver", "metadata": {"name": name}, "spec": spec}


def capacity(
    name: str,
    class_name: str,
    topology: Mapping[str, str] | None,
    capacity: str = "",
    maximum_volume_size: str = "",
    namespace: str = NAMESPACE_DEFAULT,
) -> Obj:
    """A CSIStorageCapacity reachable from the nodes with the ``topology`` labels (None: every node,
    the empty selector)."""
    obj: Obj = {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "CSIStorageCapacity",
        "metadata": {"name": name, "namespace": namespace},
        "storageClassName": class_name,
        "nodeTopology": {"matchLabels": dict(topology)} if topology else {},
    }
    if capacity:
        obj["capacity"] = capacity
    if maximum_volume_size:
        obj["maximumVolumeSize"] = maximum_volume_size
    return obj
