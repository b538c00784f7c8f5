"""A simulated external provisioner (as sig-storage's external-provisioner with a CSI driver, or
the local path provisioner): it makes the PersistentVolume of every claim the PersistentVolume
controller handed to a provisioner (``volume.kubernetes.io/storage-provisioner``), for any
provisioner but ``kubernetes.io/no-provisioner``.

- A claim of a ``WaitForFirstConsumer`` class is provisioned once the scheduler selected its node
  (``volume.kubernetes.io/selected-node``), in that node's topology: the segment the node's CSINode
  gives for the driver (its ``topologyKeys`` with the node's values), else the node's zone and
  region labels, else its hostname. A claim of an ``Immediate`` class is provisioned at once, in
  the first segment the class's ``allowedTopologies`` allows (anywhere when it names none).
- The volume (``pvc-<claim uid>``) has the claim's size, access modes and volume mode, the class's
  reclaim policy and mount options, a CSI source of the driver, ``pv.kubernetes.io/provisioned-by``,
  the topology as its node affinity, and a ``claimRef`` to the claim: the PersistentVolume
  controller completes the binding.
- The CSIStorageCapacity objects of the class whose topology holds the segment stand for the
  driver's free space there: provisioning takes the size from the first that has room and fails
  (a ``ProvisioningFailed`` event; the selected node is removed, so the scheduler tries again) when
  none has. A volume it made that is released under the ``Delete`` policy is deleted, and its size
  given back.

``synchronous`` provisions from the informer handlers themselves, as the simulation needs; otherwise
``sync`` runs what is due.
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Mapping
from typing import Any

from kubesched.api.objects import Node
from kubesched.api.quantity import format_quantity
from kubesched.api.storage import (
    BINDING_WAIT_FOR_FIRST_CONSUMER,
    NO_PROVISIONER,
    PROVISIONED_BY_ANNOTATION,
    PV_RELEASED,
    SELECTED_NODE_ANNOTATION,
    STORAGE,
    CSINode,
    CSIStorageCapacity,
    PersistentVolume,
    PersistentVolumeClaim,
    StorageClass,
)
from kubesched.controllers.controller_utils import sync_guarded
from kubesched.controllers.persistentvolume import (
    RECLAIM_DELETE,
    claim_provisioner,
    claim_ref,
    csi_provisioner_name,
    reclaim_policy,
    storage_class_of,
)
from kubesched.errors import InputError
from kubesched.store.base import ClusterStore, Conflict, EventType, NotFound, Obj
from kubesched.store.informers import Change, InformerFactory

log = logging.getLogger(__name__)


ZONE_LABELS = ("topology.kubernetes.io/zone", "failure-domain.beta.kubernetes.io/zone")
REGION_LABELS = ("topology.kubernetes.io/region", "failure-domain.beta.kubernetes.io/region")
HOSTNAME_LABEL = "kubernetes.io/hostname"

#: A topology segment: label key → value.
Segment = dict[str, str]


class ProvisioningError(Exception):
    """Why a volume could not be made; ``reschedule`` when the scheduler should pick another node."""

    def __init__(self, message: str, *, reschedule: bool = False) -> None:
        super().__init__(message)
        self.reschedule = reschedule


def volume_name_for(claim: PersistentVolumeClaim) -> str:
    """The provisioned volume's name (``pvc-<claim uid>``), one per claim whatever happens."""
    return f"pvc-{claim.uid}"


def node_segment(node: Node, csi_node: CSINode | None, driver: str) -> Segment:
    """The topology segment a volume made for ``node`` lives in."""
    if csi_node is not None and driver in csi_node.drivers:
        keys = csi_node.drivers[driver].topology_keys
        if keys:
            return {k: node.labels[k] for k in keys if k in node.labels}
    segment: Segment = {}
    for labels in (ZONE_LABELS, REGION_LABELS):
        key = next((k for k in labels if k in node.labels), None)
        if key is not None:
            segment[key] = node.labels[key]
    if segment:
        return segment
    return {HOSTNAME_LABEL: node.labels.get(HOSTNAME_LABEL, node.name)}


def allowed(storage_class: StorageClass, labels: Mapping[str, str]) -> bool:
    """The class's ``allowedTopologies`` admit a place with these labels (no terms: anywhere)."""
    if not storage_class.allowed_topologies:
        return True
    return any(
        all(labels.get(key) in values for key, values in term) for term in storage_class.allowed_topologies
    )


def node_affinity(segment: Segment) -> dict[str, Any]:
    return {
        "required": {
            "nodeSelectorTerms": [
                {
                    "matchExpressions": [
                        {"key": key, "operator": "In", "values": [value]}
                        for key, value in sorted(segment.items())
                    ]
                }
            ]
        }
    }


class Provisioner:
    """Makes the volumes of the claims handed to a provisioner, deletes those released."""

    def __init__(self, store: ClusterStore, informers: InformerFactory, *, synchronous: bool = False) -> None:
        self.store = store
        self.informers = informers
        self.synchronous = synchronous
        self._due_claims: dict[tuple[str, str], None] = {}
        self._due_volumes: dict[str, None] = {}
        #: Volume name → the CSIStorageCapacity (namespace, name) its size was taken from.
        self._taken: dict[str, tuple[str, str]] = {}
        #: Claims whose provisioning failed: tried again when the tracked capacity changes.
        self._failed: dict[tuple[str, str], None] = {}
        self._syncing = False
        informers.informer("PersistentVolumeClaim").add_handler(self._on_claim)
        informers.informer("PersistentVolume").add_handler(self._on_volume)
        informers.informer("CSIStorageCapacity").add_handler(self._on_capacity, replay=False)

    def _on_capacity(self, _change: Change[Any]) -> None:
        if self._failed:
            self._due_claims.update(self._failed)
            self._failed.clear()
            self._maybe_sync()

    def _on_claim(self, change: Change[Any]) -> None:
        if change.type == EventType.DELETED:
            return
        meta = change.obj.get("metadata") or {}
        annotations = meta.get("annotations") or {}
        if not annotations or (change.obj.get("spec") or {}).get("volumeName"):
            return
        self._due_claims[(str(meta.get("namespace") or "default"), str(meta.get("name")))] = None
        self._maybe_sync()

    def _on_volume(self, change: Change[Any]) -> None:
        obj = change.obj
        if change.type == EventType.DELETED:
            self._give_back(str((obj.get("metadata") or {}).get("name")), obj)
            return
        if (obj.get("status") or {}).get("phase") == PV_RELEASED and (
            (obj.get("metadata") or {}).get("annotations") or {}
        ).get(PROVISIONED_BY_ANNOTATION):
            self._due_volumes[str(obj["metadata"]["name"])] = None
            self._maybe_sync()

    def _maybe_sync(self) -> None:
        if self.synchronous and not self._syncing:
            self.sync()

    def sync(self) -> None:
        if self._syncing:
            return
        self._syncing = True
        try:
            while self._due_volumes or self._due_claims:
                if self._due_volumes:
                    name = next(iter(self._due_volumes))
                    del self._due_volumes[name]
                    sync_guarded(self._delete_released, name, log, "simulated provisioner")
                else:
                    key = next(iter(self._due_claims))
                    del self._due_claims[key]
                    sync_guarded(self._provision, key, log, "simulated provisioner")
        finally:
            self._syncing = False

    # -- provisioning ----------------------------------------------------------------------------
    def _provision(self, key: tuple[str, str]) -> None:
        obj = self.store.get("PersistentVolumeClaim", *key)
        self._failed.pop(key, None)
        if obj is None:
            return
        try:
            claim = PersistentVolumeClaim.from_dict(obj)
        except InputError:
            return
        provisioner = claim_provisioner(claim)
        if not provisioner or provisioner == NO_PROVISIONER or claim.volume_name or claim.deletion_timestamp:
            return
        storage_class = storage_class_of(self.informers, claim.class_name) if claim.class_name else None
        if storage_class is None or csi_provisioner_name(storage_class.provisioner) != provisioner:
            return  # another provisioner's claim, or one whose class changed
        selected = claim.annotations.get(SELECTED_NODE_ANNOTATION)
        if storage_class.volume_binding_mode == BINDING_WAIT_FOR_FIRST_CONSUMER and not selected:
            return  # the scheduler has not chosen a node yet
        name = volume_name_for(claim)
        if self.store.get("PersistentVolume", None, name) is not None:
            return  # made already; the PersistentVolume controller binds it
        reporter = f"{provisioner}_kubesched"
        self._event(
            claim,
            "Normal",
            "Provisioning",
            f'External provisioner is provisioning volume for claim "{claim.key}"',
            reporter,
        )
        try:
            segment, place = self._segment(storage_class, provisioner, selected)
            capacity = self._take_capacity(storage_class, segment, place, claim.request, name)
        except ProvisioningError as exc:
            self._failed[key] = None
            self._event(
                claim,
                "Warning",
                "ProvisioningFailed",
                f'failed to provision volume with StorageClass "{storage_class.name}": {exc}',
                reporter,
            )
            if exc.reschedule and selected:
                self._reschedule(claim)
            return
        try:
            self.store.create(self._volume(claim, storage_class, provisioner, name, segment))
        except Exception:
            if capacity is not None:
                self._give_back_to(capacity, claim.request)
            raise
        if capacity is not None:
            self._taken[name] = capacity
        self._event(
            claim, "Normal", "ProvisioningSucceeded", f"Successfully provisioned volume {name}", reporter
        )

    def _segment(
        self, storage_class: StorageClass, driver: str, selected: str | None
    ) -> tuple[Segment | None, Mapping[str, str] | None]:
        """Where the volume goes — the selected node's segment, or the class's first allowed one —
        and the labels a CSIStorageCapacity's topology must match there (the node's, as the
        scheduler matched them)."""
        if selected:
            node_obj = self.store.get("Node", None, selected)
            if node_obj is None:
                raise ProvisioningError(
                    f'failed to get target node: node "{selected}" not found', reschedule=True
                )
            node = Node.from_dict(node_obj)
            csi_obj = self.store.get("CSINode", None, selected)
            csi_node = _parsed(CSINode, csi_obj)
            segment = node_segment(node, csi_node, driver)
            if not allowed(storage_class, node.labels):
                raise ProvisioningError(
                    f"error generating accessibility requirements: selected node '{selected}' topology "
                    f"'{segment}' is not in allowed topologies",
                    reschedule=True,
                )
            return segment, node.labels
        if storage_class.allowed_topologies:
            segment = {key: values[0] for key, values in storage_class.allowed_topologies[0]}
            return segment, segment
        return None, None

    def _take_capacity(
        self,
        storage_class: StorageClass,
        segment: Segment | None,
        place: Mapping[str, str] | None,
        size: int,
        volume: str,
    ) -> tuple[str, str] | None:
        """Take ``size`` from the first CSIStorageCapacity of the class whose topology holds
        ``place`` and has room for it; which one, or None when no capacity is tracked there."""
        if place is None:
            return None
        candidates: list[CSIStorageCapacity] = []
        for obj in self.store.list("CSIStorageCapacity"):
            capacity = _parsed(CSIStorageCapacity, obj)
            if (
                capacity is None
                or capacity.storage_class_name != storage_class.name
                or capacity.capacity is None
                or not capacity.node_topology.matches(place)
            ):
                continue
            candidates.append(capacity)
        if not candidates:
            return None
        candidates.sort(key=lambda c: (c.namespace, c.name))
        for capacity in candidates:
            assert capacity.capacity is not None
            fits = capacity.capacity >= size and (
                capacity.maximum_volume_size is None or capacity.maximum_volume_size >= size
            )
            if fits:
                self.store.update(
                    {**capacity.raw, "capacity": format_quantity(STORAGE, capacity.capacity - size)}
                )
                return (capacity.namespace, capacity.name)
        free = max(c.capacity or 0 for c in candidates)
        raise ProvisioningError(
            f"rpc error: code = ResourceExhausted desc = not enough free storage for volume {volume} in "
            f"topology {segment}: requested {format_quantity(STORAGE, size)}, "
            f"available {format_quantity(STORAGE, free)}",
            reschedule=True,
        )

    def _volume(
        self,
        claim: PersistentVolumeClaim,
        storage_class: StorageClass,
        provisioner: str,
        name: str,
        segment: Segment | None,
    ) -> dict[str, Any]:
        claim_spec = claim.raw.get("spec") or {}
        request = ((claim_spec.get("resources") or {}).get("requests") or {}).get(STORAGE)
        spec: dict[str, Any] = {
            "accessModes": list(claim.access_modes),
            "capacity": {
                STORAGE: request if request is not None else format_quantity(STORAGE, claim.request)
            },
            "claimRef": claim_ref(claim),
            "persistentVolumeReclaimPolicy": storage_class.raw.get("reclaimPolicy") or RECLAIM_DELETE,
            "storageClassName": storage_class.name,
            "volumeMode": claim.volume_mode,
            "csi": {"driver": provisioner, "volumeHandle": name},
        }
        if storage_class.raw.get("mountOptions"):
            spec["mountOptions"] = list(storage_class.raw["mountOptions"])
        if segment:
            spec["nodeAffinity"] = node_affinity(segment)
        return {
            "apiVersion": "v1",
            "kind": "PersistentVolume",
            "metadata": {"name": name, "annotations": {PROVISIONED_BY_ANNOTATION: provisioner}},
            "spec": spec,
        }

    def _reschedule(self, claim: PersistentVolumeClaim) -> None:
        """Drop the selected node, so that the scheduler places the pod (and its volume) again."""
        obj = copy.deepcopy(dict(claim.raw))
        meta = obj.setdefault("metadata", {})
        annotations = {
            k: v for k, v in (meta.get("annotations") or {}).items() if k != SELECTED_NODE_ANNOTATION
        }
        meta["annotations"] = annotations
        self.store.update(obj)

    # -- deletion --------------------------------------------------------------------------------
    def _delete_released(self, name: str) -> None:
        obj = self.store.get("PersistentVolume", None, name)
        volume = _parsed(PersistentVolume, obj)
        if volume is None or volume.phase != PV_RELEASED or reclaim_policy(volume) != RECLAIM_DELETE:
            return
        provisioner = volume.annotations.get(PROVISIONED_BY_ANNOTATION, "")
        if not provisioner or provisioner == NO_PROVISIONER or provisioner.startswith("kubernetes.io/"):
            return
        self.store.delete("PersistentVolume", None, name)

    def _give_back(self, name: str, obj: Obj) -> None:
        taken = self._taken.pop(name, None)
        if taken is None:
            return
        volume = _parsed(PersistentVolume, obj)
        if volume is not None:
            self._give_back_to(taken, volume.capacity)

    def _give_back_to(self, key: tuple[str, str], size: int) -> None:
        obj = self.store.get("CSIStorageCapacity", *key)
        capacity = _parsed(CSIStorageCapacity, obj)
        if capacity is None or capacity.capacity is None:
            return
        try:
            self.store.update(
                {**capacity.raw, "capacity": format_quantity(STORAGE, capacity.capacity + size)}
            )
        except (Conflict, NotFound):
            log.warning("simulated provisioner: could not give %d bytes back to %s/%s", size, *key)

    def _event(
        self, claim: PersistentVolumeClaim, event_type: str, reason: str, note: str, reporter: str
    ) -> None:
        self.store.record_event(claim.raw, event_type, reason, reason, note, reporter)


def _parsed(cls: Any, obj: Obj | None) -> Any:
    if obj is None:
        return None
    try:
        return cls.from_dict(obj)
    except (InputError, KeyError, TypeError, ValueError):
        return None
