"""VolumeBinding's queueing hints: upstream ``TestIsSchedulableAfterCSINodeChange``,
``...PersistentVolumeClaimChange``, ``...StorageClassChange``, ``...CSIStorageCapacityChange`` and
``...CSIDriverChange`` (case names verbatim). Hints get parsed objects; an object of another kind
(upstream's "type conversion error" cases) is answered Queue, as upstream does with its error."""

from __future__ import annotations

from typing import Any

import pytest

from kubesched.api.objects import Pod
from kubesched.api.storage import (
    MIGRATED_PLUGINS_ANNOTATION,
    CSIDriver,
    CSINode,
    CSIStorageCapacity,
    StorageClass,
)
from kubesched.framework.types import ActionType, ClusterEvent, QueueingHint
from kubesched.plugins.volumebinding import VolumeBinding
from kubesched.plugins.volumebinding.test_utils import csi_driver, make_pod, make_pvc

Q, SKIP = QueueingHint.QUEUE, QueueingHint.QUEUE_SKIP
PLUGIN = VolumeBinding()
WRONG = object()


def csi_node(migrated: str | None) -> CSINode:
    meta: dict[str, Any] = {"name": "csinode-a"}
    if migrated is not None:
        meta["annotations"] = {MIGRATED_PLUGINS_ANNOTATION: migrated}
    return CSINode.from_dict({"kind": "CSINode", "metadata": meta, "spec": {"drivers": []}})


CSI_NODE: list[tuple[str, Any, Any, QueueingHint]] = [
    ("unexpected objects are passed", WRONG, WRONG, Q),
    ("CSINode is newly created", None, csi_node(None), Q),
    ("CSINode's migrated-plugins annotations is added", csi_node("test1"), csi_node("test1, test2"), Q),
    ("CSINode's migrated-plugins annotation is updated", csi_node("test1"), csi_node("test2"), Q),
    (
        "CSINode is updated but migrated-plugins annotation gets unchanged",
        csi_node("test1"),
        csi_node("test1"),
        SKIP,
    ),
]


@pytest.mark.parametrize(("name", "old", "new", "want"), CSI_NODE, ids=[c[0] for c in CSI_NODE])
def test_is_schedulable_after_csi_node_change(name: str, old: Any, new: Any, want: QueueingHint) -> None:
    assert PLUGIN.is_schedulable_after_csi_node_change(make_pod("pod-a").pod, old, new) == want


PVC: list[tuple[str, Pod, Any, Any, QueueingHint]] = [
    (
        "pod has no pvc or ephemeral volumes",
        make_pod("pod-a").with_empty_dir_volume().pod,
        make_pvc("pvc-b", "sc-a").pvc,
        make_pvc("pvc-b", "sc-a").pvc,
        SKIP,
    ),
    (
        "pvc with the same name as the one used by the pod in a different namespace is modified",
        make_pod("pod-a").with_namespace("ns-a").with_pvc_volume("pvc-a").with_pvc_volume("pvc-b").pod,
        None,
        make_pvc("pvc-b", "").pvc,
        SKIP,
    ),
    (
        "pod has no pvc that is being modified",
        make_pod("pod-a").with_pvc_volume("pvc-a").with_pvc_volume("pvc-c").pod,
        make_pvc("pvc-b", "").pvc,
        make_pvc("pvc-b", "").pvc,
        SKIP,
    ),
    (
        "pod has no generic ephemeral volume that is being modified",
        make_pod("pod-a")
        .with_generic_ephemeral_volume("ephemeral-a")
        .with_generic_ephemeral_volume("ephemeral-c")
        .pod,
        make_pvc("pod-a-ephemeral-b", "").pvc,
        make_pvc("pod-a-ephemeral-b", "").pvc,
        SKIP,
    ),
    (
        "pod has the pvc that is being modified",
        make_pod("pod-a").with_pvc_volume("pvc-a").with_pvc_volume("pvc-b").pod,
        make_pvc("pvc-b", "").pvc,
        make_pvc("pvc-b", "").pvc,
        Q,
    ),
    (
        "pod has the generic ephemeral volume that is being modified",
        make_pod("pod-a")
        .with_generic_ephemeral_volume("ephemeral-a")
        .with_generic_ephemeral_volume("ephemeral-b")
        .pod,
        make_pvc("pod-a-ephemeral-b", "").pvc,
        make_pvc("pod-a-ephemeral-b", "").pvc,
        Q,
    ),
    ("type conversion error", make_pod("pod-a").pod, WRONG, WRONG, Q),
]


@pytest.mark.parametrize(("name", "pod", "old", "new", "want"), PVC, ids=[c[0] for c in PVC])
def test_is_schedulable_after_persistent_volume_claim_change(
    name: str, pod: Pod, old: Any, new: Any, want: QueueingHint
) -> None:
    assert PLUGIN.is_schedulable_after_pvc_change(pod, old, new) == want


def sc(topologies: list[Any] | None = None) -> StorageClass:
    obj: dict[str, Any] = {"kind": "StorageClass", "metadata": {"name": "sc-a"}, "provisioner": "p"}
    if topologies is not None:
        obj["allowedTopologies"] = topologies
    return StorageClass.from_dict(obj)


HOSTNAME_NODE_A = [{"matchLabelExpressions": [{"key": "kubernetes.io/hostname", "values": ["node-a"]}]}]
STORAGE_CLASS: list[tuple[str, Any, Any, QueueingHint]] = [
    ("When a new StorageClass is created, it returns Queue", None, sc(), Q),
    ("When the AllowedTopologies are changed, it returns Queue", sc(), sc(HOSTNAME_NODE_A), Q),
    ("When there are no changes to the StorageClass, it returns QueueSkip", sc(), sc(), SKIP),
    ("type conversion error", WRONG, WRONG, Q),
]


@pytest.mark.parametrize(("name", "old", "new", "want"), STORAGE_CLASS, ids=[c[0] for c in STORAGE_CLASS])
def test_is_schedulable_after_storage_class_change(name: str, old: Any, new: Any, want: QueueingHint) -> None:
    assert PLUGIN.is_schedulable_after_storage_class_change(make_pod("pod-a").pod, old, new) == want


def cap(capacity: int | None = None, maximum: int | None = None) -> CSIStorageCapacity:
    obj: dict[str, Any] = {
        "kind": "CSIStorageCapacity",
        "metadata": {"name": "cap-a"},
        "storageClassName": "sc",
    }
    if capacity is not None:
        obj["capacity"] = str(capacity)
    if maximum is not None:
        obj["maximumVolumeSize"] = str(maximum)
    return CSIStorageCapacity.from_dict(obj)


CAPACITY: list[tuple[str, Any, Any, QueueingHint]] = [
    ("When a new CSIStorageCapacity is created, it returns Queue", None, cap(), Q),
    ("When the volume limit is increase(Capacity set), it returns Queue", cap(), cap(100), Q),
    (
        "When the volume limit is increase(MaximumVolumeSize set), it returns Queue",
        cap(),
        cap(maximum=100),
        Q,
    ),
    ("When the volume limit is increase(Capacity increase), it returns Queue", cap(50), cap(100), Q),
    (
        "When the volume limit is increase(MaximumVolumeSize unset), it returns Queue",
        cap(100, 50),
        cap(100),
        Q,
    ),
    (
        "When the volume limit is increase(MaximumVolumeSize increase), it returns Queue",
        cap(100, 50),
        cap(100, 60),
        Q,
    ),
    (
        "When there are no changes to the CSIStorageCapacity, it returns QueueSkip",
        cap(100, 50),
        cap(100, 50),
        SKIP,
    ),
    ("When the volume limit is equal(Capacity), it returns QueueSkip", cap(100), cap(100), SKIP),
    (
        "When the volume limit is equal(MaximumVolumeSize unset), it returns QueueSkip",
        cap(100, 50),
        cap(50),
        SKIP,
    ),
    ("When the volume limit is decrease(Capacity), it returns QueueSkip", cap(100), cap(90), SKIP),
    (
        "When the volume limit is decrease(MaximumVolumeSize), it returns QueueSkip",
        cap(maximum=100),
        cap(maximum=90),
        SKIP,
    ),
    ("type conversion error", WRONG, WRONG, Q),
]


@pytest.mark.parametrize(("name", "old", "new", "want"), CAPACITY, ids=[c[0] for c in CAPACITY])
def test_is_schedulable_after_csi_storage_capacity_change(
    name: str, old: Any, new: Any, want: QueueingHint
) -> None:
    assert PLUGIN.is_schedulable_after_csi_storage_capacity_change(make_pod("pod-a").pod, old, new) == want


def driver(name: str, storage_capacity: bool | None) -> CSIDriver:
    return CSIDriver.from_dict(csi_driver(name, storage_capacity))


CSI_DRIVER: list[tuple[str, Pod, Any, Any, QueueingHint]] = [
    ("pod has no CSIDriver", make_pod("pod-a").pod, driver("test1", None), driver("test1", True), SKIP),
    ("unexpected objects are passed", make_pod("pod-a").pod, WRONG, WRONG, Q),
    (
        "driver name in pod and csidriver name are different",
        make_pod("pod-a").with_csi("test1").pod,
        driver("test2", True),
        driver("test2", False),
        SKIP,
    ),
    (
        "original StorageCapacity is nil",
        make_pod("pod-a").with_csi("test1").pod,
        driver("test1", None),
        driver("test1", None),
        SKIP,
    ),
    (
        "original StorageCapacity is false",
        make_pod("pod-a").with_csi("test1").pod,
        driver("test1", False),
        driver("test1", False),
        SKIP,
    ),
    (
        "modified StorageCapacity is nil",
        make_pod("pod-a").with_csi("test1").pod,
        driver("test1", True),
        driver("test1", None),
        Q,
    ),
    (
        "modified StorageCapacity is true",
        make_pod("pod-a").with_csi("test1").pod,
        driver("test1", True),
        driver("test1", True),
        SKIP,
    ),
    (
        "modified StorageCapacity is false",
        make_pod("pod-a").with_csi("test1").pod,
        driver("test1", True),
        driver("test1", False),
        Q,
    ),
]


@pytest.mark.parametrize(("name", "pod", "old", "new", "want"), CSI_DRIVER, ids=[c[0] for c in CSI_DRIVER])
def test_is_schedulable_after_csi_driver_change(
    name: str, pod: Pod, old: Any, new: Any, want: QueueingHint
) -> None:
    assert PLUGIN.is_schedulable_after_csi_driver_change(pod, old, new) == want


def test_events_to_register_as_upstream() -> None:
    add_update = ActionType.ADD | ActionType.UPDATE
    got = {(r.event.resource, r.event.action, r.hint is not None) for r in PLUGIN.events_to_register()}
    assert got == {
        ("StorageClass", add_update, True),
        ("PersistentVolumeClaim", add_update, True),
        ("PersistentVolume", add_update, False),
        ("Node", ActionType.ADD | ActionType.UPDATE_NODE_LABEL, False),
        ("CSINode", add_update, True),
        ("CSIDriver", ActionType.UPDATE, True),
        ("CSIStorageCapacity", add_update, True),
    }
    # A node's taints do not concern volumes.
    node_reg = next(r for r in PLUGIN.events_to_register() if r.event.resource == "Node")
    assert not node_reg.event.matches(ClusterEvent("Node", ActionType.UPDATE_NODE_TAINT))
