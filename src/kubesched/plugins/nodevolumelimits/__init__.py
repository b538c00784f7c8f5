"""NodeVolumeLimits: at most a CSINode's ``allocatable.count`` volumes of each CSI driver per node
(upstream ``nodevolumelimits``, the CSI plugin ``CSILimits``).

Volumes are counted by unique name ``<driver>/<volumeHandle>``, so a volume shared by several pods of a
node counts once:

* a ``persistentVolumeClaim`` or generic ``ephemeral`` volume (whose claim ``<pod>-<volume>`` must be
  controlled by the pod) counts with its bound PV's CSI driver and handle; a PV of an in-tree source
  whose CSI migration is on for the node counts under the CSI driver it migrates to, with the
  handle csi-translation-lib gives it; a claim not bound yet (or bound to a missing PV) counts under
  its StorageClass's provisioner with a handle of its own; a claim without class, or of a missing
  class, does not count;
* an inline in-tree volume counts when its migration is on for the node
  (:func:`~.translation.migrated_plugins`);
* VolumeAttachments of the node (``spec.nodeName``) of a CSI PV count for their attacher, unless a
  pod of the node already counted that volume.

A node rejects the pod when, for a driver it has a limit for, the volumes already counted plus the
pod's new ones exceed the limit: ``node(s) exceed max volume count`` (Unschedulable). A missing claim
of the pod is ``looking up PVC <ns>/<name>: persistentvolumeclaim "<name>" not found``
(UnschedulableAndUnresolvable, every node); an ephemeral claim the pod does not own, or an inline
volume that cannot be translated, fails the cycle with an error, as upstream.

Speed: PreFilter returns Skip for a pod with no claim, ephemeral or migratable inline volume. Filter
looks only at nodes whose CSINode limits a driver the pod uses (an index of the CSINode informer);
what a node's pods already count is kept per node and recomputed only when the node's pods, or the
claims, volumes and classes, changed.
"""

from __future__ import annotations

import secrets
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Final

import numpy as np
from numpy.typing import NDArray

from kubesched.api.objects import Pod
from kubesched.api.storage import (
    IN_TREE_CSI_DRIVERS,
    IN_TREE_PLUGIN_NAMES,
    CSINode,
    PersistentVolume,
    PersistentVolumeClaim,
    PodVolume,
    StorageClass,
    VolumeAttachment,
)
from kubesched.cache.cache import Snapshot
from kubesched.cache.node_info import NodeInfo
from kubesched.cache.node_table import NodeTable
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.interfaces import SignFragment
from kubesched.framework.status import Code, Status
from kubesched.framework.types import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    FilterResult,
    PreFilterResult,
    QueueingHint,
)
from kubesched.plugins.nodevolumelimits.translation import (
    ALWAYS_MIGRATED,
    PORTWORX_PLUGIN,
    TranslationError,
    inline_volume_handle,
    kind_of_plugin,
    migrated_plugins,
    pv_volume_handle,
)
from kubesched.store.informers import Change, Informer, InformerFactory

NAME = "NodeVolumeLimits"

#: Upstream ``ErrReasonMaxVolumeCountExceeded``.
ERR_REASON_MAX_VOLUME_COUNT_EXCEEDED = "node(s) exceed max volume count"

#: CSINode informer index: the drivers a node has a count limit for.
LIMITED_DRIVERS_INDEX: Final = "kubesched.io/limited-csi-drivers"
#: VolumeAttachment informer index: the node the volume is attached to (upstream ``va.spec.nodename``).
ATTACHMENT_NODE_INDEX: Final = "spec.nodeName"

#: The migration states a node can be in (see :func:`migrated_plugins`).
_NO_CSINODE: Final[frozenset[str]] = frozenset()
_WITH_PORTWORX: Final = ALWAYS_MIGRATED | {PORTWORX_PLUGIN}

#: Volume name → CSI driver, as upstream's ``filterAttachableVolumes`` fills its map.
Volumes = dict[str, str]


class ClaimNotFound(Exception):
    """A claim of the pod being scheduled is missing (UnschedulableAndUnresolvable)."""


class VolumeError(Exception):
    """A volume that makes the Filter fail with an error, as upstream's ``AsStatus(err)``."""


def counts_volumes(volume: PodVolume) -> bool:
    """Whether a volume may count against a limit (what upstream's PreFilter looks for)."""
    kind = volume.source_kind
    return kind in ("persistentVolumeClaim", "ephemeral") or kind in IN_TREE_PLUGIN_NAMES


def unique_name(driver: str, handle: str) -> str:
    return f"{driver}/{handle}"


def _limited_drivers(csinode: CSINode) -> Iterable[str]:
    return [name for name, d in csinode.drivers.items() if d.allocatable_count is not None]


def _attachment_node(va: VolumeAttachment) -> Iterable[str]:
    return [va.node_name]


class _StorageWatch:
    """Per informer factory: the listers NodeVolumeLimits reads, indexed, and a counter bumped on
    every change of a claim, volume or class (what a node's counted volumes depend on). Shared by
    every instance of the plugin over that factory, so a batch session building one does not
    subscribe again."""

    def __init__(self, informers: InformerFactory) -> None:
        self.version = 0
        #: Bumped on every change of a CSINode or a VolumeAttachment (a node's limits and attachments).
        self.topology = 0
        self.claims: Informer[PersistentVolumeClaim] = informers.informer("PersistentVolumeClaim")
        self.volumes: Informer[PersistentVolume] = informers.informer("PersistentVolume")
        self.classes: Informer[StorageClass] = informers.informer("StorageClass")
        self.csinodes: Informer[CSINode] = informers.informer("CSINode")
        self.attachments: Informer[VolumeAttachment] = informers.informer("VolumeAttachment")
        self.csinodes.add_index(LIMITED_DRIVERS_INDEX, _limited_drivers)
        self.attachments.add_index(ATTACHMENT_NODE_INDEX, _attachment_node)
        for informer in (self.claims, self.volumes, self.classes):
            informer.add_handler(self._changed, replay=False)
        self.csinodes.add_handler(self._topology_changed, replay=False)
        self.attachments.add_handler(self._topology_changed, replay=False)

    def _changed(self, change: Change[Any]) -> None:
        self.version += 1

    def _topology_changed(self, change: Change[Any]) -> None:
        self.topology += 1


def storage_watch(informers: InformerFactory) -> _StorageWatch:
    return informers.shared(_StorageWatch, lambda: _StorageWatch(informers))


@dataclass(slots=True)
class _Counted:
    """What the pods of one node count, and what it was computed from."""

    uids: frozenset[str]
    migrated: frozenset[str]
    version: int
    volumes: Volumes


@dataclass(slots=True)
class _Columns:
    """Per node slot of one table, what Filter compares: each limited driver's limit (-1: none) and
    the volumes the node's pods and attachments already count against it, with the volumes each
    node's pods use (a pod's volume already there costs nothing more). Rows are recounted only when
    the table stamps them changed; the whole is rebuilt when storage objects or the nodes change."""

    table: NodeTable
    capacity: int
    version: int
    topology: int
    node_count: int
    #: Slots of nodes whose CSINode limits some driver, and each one's migration state.
    slots: NDArray[np.int64]
    migrated: dict[int, frozenset[str]]
    #: Migration state → mask of the slots in it.
    state_masks: dict[frozenset[str], NDArray[np.bool_]]
    limits: dict[str, NDArray[np.int64]]
    used: dict[str, NDArray[np.int64]]
    attached: dict[int, Volumes]
    #: Volume name → the slots whose pods use it.
    holders: dict[str, set[int]]
    stamp: NDArray[np.int64]
    #: The NodeInfo each slot of ``slots`` was counted from (one put in its place is counted again).
    infos: list[NodeInfo | None]


class NodeVolumeLimits:
    name: ClassVar[str] = NAME

    def __init__(self, args: Any = None, handle: Any = None) -> None:
        self.handle = handle
        #: Unbound claims count under this prefix, so they never match a real volume handle.
        self.random_volume_id_prefix = secrets.token_hex(16)
        self._watch: _StorageWatch | None = None
        self._counted: dict[str, _Counted] = {}
        self._columns: _Columns | None = None

    @property
    def watch(self) -> _StorageWatch:
        if self._watch is None:
            self._watch = storage_watch(self.handle.informers)
        return self._watch

    # -- batching --------------------------------------------------------------------------------
    def sign_pod(self, pod: Pod) -> tuple[tuple[SignFragment, ...], Status | None]:
        """A pod with volumes that may count depends on the other pods' volumes: not signed. Any
        other pod is skipped by PreFilter, so it signs nothing."""
        if pod.volumes and any(counts_volumes(v) for v in pod.volumes):
            return (), Status.unschedulable("pods with attachable volumes are not signable")
        return (), None

    # -- events ----------------------------------------------------------------------------------
    def events_to_register(self) -> list[ClusterEventWithHint]:
        # Any new CSINode may have room; a larger limit, a deleted pod or attachment with volumes may
        # free some; a missing claim may appear.
        return [
            ClusterEventWithHint(ClusterEvent("CSINode", ActionType.ADD)),
            ClusterEventWithHint(
                ClusterEvent("CSINode", ActionType.UPDATE), self.is_schedulable_after_csi_node_updated
            ),
            ClusterEventWithHint(
                ClusterEvent("Pod", ActionType.DELETE), self.is_schedulable_after_pod_deleted
            ),
            ClusterEventWithHint(
                ClusterEvent("PersistentVolumeClaim", ActionType.ADD), self.is_schedulable_after_pvc_added
            ),
            ClusterEventWithHint(
                ClusterEvent("VolumeAttachment", ActionType.DELETE),
                self.is_schedulable_after_volume_attachment_deleted,
            ),
        ]

    def is_schedulable_after_pod_deleted(self, pod: Pod, old: Any, new: Any) -> QueueingHint:
        """Queue when the deleted pod was on a node and had a volume that may count."""
        if not isinstance(old, Pod):
            return QueueingHint.QUEUE
        if not old.volumes or not old.node_name:
            return QueueingHint.QUEUE_SKIP
        if any(counts_volumes(v) for v in old.volumes):
            return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP

    def is_schedulable_after_pvc_added(self, pod: Pod, old: Any, new: Any) -> QueueingHint:
        """Queue when the new claim is one the pod's claim or ephemeral volumes name."""
        if not isinstance(new, PersistentVolumeClaim):
            return QueueingHint.QUEUE
        if new.namespace != pod.namespace:
            return QueueingHint.QUEUE_SKIP
        for v in pod.volumes:
            if v.source_kind in ("persistentVolumeClaim", "ephemeral") and v.claim_name == new.name:
                return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP

    def is_schedulable_after_volume_attachment_deleted(self, pod: Pod, old: Any, new: Any) -> QueueingHint:
        """Queue when the attachment was of the PV one of the pod's claims is bound to, or of an
        inline volume of the CSI driver one of the pod's inline volumes migrates to."""
        if not isinstance(old, VolumeAttachment):
            return QueueingHint.QUEUE
        claims = self.watch.claims if self.handle is not None else None
        for v in pod.volumes:
            if v.source_kind == "persistentVolumeClaim" and claims is not None and old.pv_name:
                claim = claims.get(pod.namespace, v.claim_name)
                if claim is not None and claim.volume_name == old.pv_name:
                    return QueueingHint.QUEUE
            driver = IN_TREE_CSI_DRIVERS.get(v.source_kind)
            if driver is not None and old.inline_driver == driver:
                return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP

    def is_schedulable_after_csi_node_updated(self, pod: Pod, old: Any, new: Any) -> QueueingHint:
        """Queue when a driver's limit went up or away, or the migrated plugins changed."""
        if not isinstance(old, CSINode) or not isinstance(new, CSINode):
            return QueueingHint.QUEUE
        if old.migrated_plugins != new.migrated_plugins:
            return QueueingHint.QUEUE
        for name, before in old.drivers.items():
            if before.allocatable_count is None:
                continue
            after = new.drivers.get(name)
            if after is None or after.allocatable_count is None:
                return QueueingHint.QUEUE
            if after.allocatable_count > before.allocatable_count:
                return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP

    # -- PreFilter -------------------------------------------------------------------------------
    def pre_filter(
        self, state: CycleState, pod: Pod, snapshot: Snapshot
    ) -> tuple[PreFilterResult | None, Status | None]:
        if pod.volumes and any(counts_volumes(v) for v in pod.volumes):
            return None, None
        return None, Status(Code.SKIP)

    # -- counting --------------------------------------------------------------------------------
    def attachable_volumes(self, pod: Pod, migrated: frozenset[str], new_pod: bool, out: Volumes) -> None:
        """Upstream ``filterAttachableVolumes``: add the pod's volumes that count to ``out``.
        ``migrated`` are the in-tree plugins whose migration is on for the node. For the pod being
        scheduled a missing claim raises :class:`ClaimNotFound`; for a pod already on the node it
        does not count."""
        watch = self.watch
        for v in pod.volumes:
            kind = v.source_kind
            if kind not in ("persistentVolumeClaim", "ephemeral"):
                self._inline(v, migrated, out)
                continue
            name = v.claim_name
            if not name:
                raise VolumeError("PersistentVolumeClaim had no name")
            claim = watch.claims.get(pod.namespace, name)
            if claim is None:
                if new_pod:
                    raise ClaimNotFound(
                        f'looking up PVC {pod.namespace}/{name}: persistentvolumeclaim "{name}" not found'
                    )
                continue
            if kind == "ephemeral":
                owner = claim.controller_uid
                if claim.namespace != pod.namespace or not owner or owner != pod.uid:
                    raise VolumeError(
                        f"PVC {claim.namespace}/{claim.name} was not created for pod "
                        f"{pod.namespace}/{pod.name} (pod is not owner)"
                    )
            driver, handle = self._driver_info(claim, migrated)
            if driver and handle:
                out[unique_name(driver, handle)] = driver

    def _inline(self, volume: PodVolume, migrated: frozenset[str], out: Volumes) -> None:
        """Upstream ``checkAttachableInlineVolume``."""
        kind = volume.source_kind
        plugin = IN_TREE_PLUGIN_NAMES.get(kind)
        if plugin is None or plugin not in migrated:
            return
        try:
            handle = inline_volume_handle(kind, volume.source)
        except TranslationError as exc:
            raise VolumeError(f"converting volume({volume.name}) from inline to csi: {exc}") from None
        driver = IN_TREE_CSI_DRIVERS[kind]
        out[unique_name(driver, handle)] = driver

    def _driver_info(self, claim: PersistentVolumeClaim, migrated: frozenset[str]) -> tuple[str, str]:
        """Upstream ``getCSIDriverInfo``: the driver and handle of the claim's volume."""
        if not claim.volume_name:
            return self._driver_info_from_class(claim, migrated)
        pv = self.watch.volumes.get(None, claim.volume_name)
        if pv is None:
            # Deleted, or the claim is pre-bound to a PV not created yet: count by class.
            return self._driver_info_from_class(claim, migrated)
        if pv.source_kind == "csi":
            driver, handle = pv.source.get("driver"), pv.source.get("volumeHandle")
            return (driver if isinstance(driver, str) else "", handle if isinstance(handle, str) else "")
        plugin = IN_TREE_PLUGIN_NAMES.get(pv.source_kind)
        if plugin is None or plugin not in migrated:
            return "", ""
        try:
            return IN_TREE_CSI_DRIVERS[pv.source_kind], pv_volume_handle(pv)
        except TranslationError:
            return "", ""

    def _driver_info_from_class(
        self, claim: PersistentVolumeClaim, migrated: frozenset[str]
    ) -> tuple[str, str]:
        """Upstream ``getCSIDriverInfoFromSC``: the class's provisioner and a handle of the claim's own."""
        class_name = claim.class_name
        if not class_name:
            # Immediate binding then, so the claim is bound before any pod using it is scheduled.
            return "", ""
        sc = self.watch.classes.get(None, class_name)
        if sc is None:
            return "", ""
        handle = f"{self.random_volume_id_prefix}-{claim.namespace}/{claim.name}"
        kind = kind_of_plugin(sc.provisioner)
        if kind is not None:
            if sc.provisioner not in migrated:
                return "", ""
            return IN_TREE_CSI_DRIVERS[kind], handle
        return sc.provisioner, handle

    def _node_volumes(self, name: str, info: NodeInfo, migrated: frozenset[str]) -> Volumes:
        """What the pods of a node count (cached while its pods and the storage objects stay)."""
        version = self.watch.version
        counted = self._counted.get(name)
        if (
            counted is not None
            and counted.migrated == migrated
            and counted.version == version
            and counted.uids == info.pods.keys()
        ):
            return counted.volumes
        volumes: Volumes = {}
        for p in info.pods.values():
            if p.volumes:
                self.attachable_volumes(p, migrated, False, volumes)
        self._counted[name] = _Counted(frozenset(info.pods), migrated, version, volumes)
        return volumes

    def _attachments(self, node: str) -> Volumes:
        """Upstream ``getNodeVolumeAttachmentInfo``: volumes of CSI PVs attached to the node."""
        out: Volumes = {}
        watch = self.watch
        for va in watch.attachments.by_index(ATTACHMENT_NODE_INDEX, node):
            if not va.attacher or not va.pv_name:
                continue
            pv = watch.volumes.get(None, va.pv_name)
            if pv is None or pv.source_kind != "csi":
                continue
            handle = pv.source.get("volumeHandle")
            out[unique_name(va.attacher, handle if isinstance(handle, str) else "")] = va.attacher
        return out

    # -- Filter ----------------------------------------------------------------------------------
    def filter_nodes(self, state: CycleState, pod: Pod, table: NodeTable) -> FilterResult:
        capacity = table.capacity
        if not pod.volumes:
            return FilterResult.all_pass(capacity)
        try:
            # The pod's own claims are looked up whatever the node: a missing one fails everywhere.
            self.attachable_volumes(pod, _NO_CSINODE, True, {})
        except ClaimNotFound as exc:
            return FilterResult.reject(np.ones(capacity, dtype=np.bool_), str(exc), unresolvable=True)
        watch = self.watch
        new_by_state = self._new_volumes_by_state(pod)
        drivers = {d for volumes in new_by_state.values() for d in volumes.values()}
        if not drivers:
            return FilterResult.all_pass(capacity)
        csinodes: dict[str, CSINode] = {}
        for driver in drivers:
            for csinode in watch.csinodes.by_index(LIMITED_DRIVERS_INDEX, driver):
                csinodes[csinode.name] = csinode
        if not csinodes:
            return FilterResult.all_pass(capacity)
        snapshot = self.handle.snapshot
        if table is snapshot.table and not table.is_fork:
            failing = self._failing_by_columns(table, snapshot.node_infos, new_by_state)
            if not failing.any():
                return FilterResult.all_pass(capacity)
            return FilterResult.reject(failing, ERR_REASON_MAX_VOLUME_COUNT_EXCEEDED)
        # A fork (preemption's and nominated pods' what-if nodes, a batch session's placements):
        # judged node by node from the node infos standing in for its rows.
        infos = snapshot.node_infos
        failing = np.zeros(capacity, dtype=np.bool_)
        for name, csinode in csinodes.items():
            slot = table.slot_of.get(name)
            info = infos.get(name)
            if slot is None or slot >= capacity or not table.valid[slot] or info is None:
                continue
            migrated = migrated_plugins(csinode)
            if self._exceeds(name, info, csinode, migrated, dict(new_by_state[migrated])):
                failing[slot] = True
        if not failing.any():
            return FilterResult.all_pass(capacity)
        return FilterResult.reject(failing, ERR_REASON_MAX_VOLUME_COUNT_EXCEEDED)

    def _new_volumes_by_state(self, pod: Pod) -> dict[frozenset[str], Volumes]:
        """The pod's volumes that count against limits, under each migration state a node can be in."""
        out: dict[frozenset[str], Volumes] = {}
        for migrated in (ALWAYS_MIGRATED, _WITH_PORTWORX):
            volumes: Volumes = {}
            try:
                self.attachable_volumes(pod, migrated, True, volumes)
            except VolumeError:
                # Upstream meets this error on the first node with a CSINode; without any, no node
                # turns migration on and the volume is never translated.
                if len(self.watch.csinodes):
                    raise
            out[migrated] = volumes
        return out

    def filter_ignores_node_pods(self, state: CycleState, pod: Pod) -> bool:
        """Whether Filter judges ``pod`` by the node alone: no CSINode limits a driver its volumes
        count against, so no node's pods can make it fail (preemption may then take its fast path)."""
        try:
            new_by_state = self._new_volumes_by_state(pod)
        except (ClaimNotFound, VolumeError):
            return False
        drivers = {d for volumes in new_by_state.values() for d in volumes.values()}
        csinodes = self.watch.csinodes
        return not any(csinodes.by_index(LIMITED_DRIVERS_INDEX, driver) for driver in drivers)

    # -- Filter over the snapshot's table: counts kept per slot ----------------------------------
    def _failing_by_columns(
        self, table: NodeTable, infos: Mapping[str, NodeInfo], new_by_state: Mapping[frozenset[str], Volumes]
    ) -> NDArray[np.bool_]:
        """The slots whose limits the pod's new volumes would exceed: :meth:`_exceeds` for every
        limited node at once, from per-slot counts."""
        cols = self._columns_of(table, infos)
        failing = np.zeros(table.capacity, dtype=np.bool_)
        for state, mask in cols.state_masks.items():
            per_driver: dict[str, list[str]] = {}
            for volume, driver in new_by_state[state].items():
                if driver in cols.limits:
                    per_driver.setdefault(driver, []).append(volume)
            for driver, volumes in per_driver.items():
                wanted = np.full(table.capacity, len(volumes), dtype=np.int64)
                for volume in volumes:
                    for slot in cols.holders.get(volume, ()):
                        wanted[slot] -= 1  # a volume the node's pods use costs nothing more
                limit = cols.limits[driver]
                # Only volumes new to the node are checked: one already over its limit takes a pod
                # whose volumes of that driver are all there.
                failing |= mask & (limit >= 0) & (wanted > 0) & (cols.used[driver] + wanted > limit)
        return failing

    def _columns_of(self, table: NodeTable, infos: Mapping[str, NodeInfo]) -> _Columns:
        watch = self.watch
        cols = self._columns
        if (
            cols is None
            or cols.table is not table
            or cols.capacity != table.capacity
            or cols.version != watch.version
            or cols.topology != watch.topology
            or cols.node_count != len(table.slot_of)
        ):
            cols = self._columns = self._build_columns(table, infos)
            return cols
        slots = cols.slots
        names = table.names
        current = [infos.get(names[slot]) for slot in slots.tolist()]
        stale = set(slots[table.row_stamp[slots] != cols.stamp[slots]].tolist())
        stale.update(
            slot
            for slot, now, then in zip(slots.tolist(), current, cols.infos, strict=True)
            if now is not then
        )
        if stale:
            for i, slot in enumerate(slots.tolist()):
                if slot in stale:
                    self._recount(cols, slot, current[i])
            cols.infos = current
            rows = np.fromiter(stale, dtype=np.int64, count=len(stale))
            cols.stamp[rows] = table.row_stamp[rows]
        return cols

    def _build_columns(self, table: NodeTable, infos: Mapping[str, NodeInfo]) -> _Columns:
        watch = self.watch
        capacity = table.capacity
        cols = _Columns(
            table=table,
            capacity=capacity,
            version=watch.version,
            topology=watch.topology,
            node_count=len(table.slot_of),
            slots=np.zeros(0, dtype=np.int64),
            migrated={},
            state_masks={},
            limits={},
            used={},
            attached={},
            holders={},
            stamp=table.row_stamp.copy(),
            infos=[],
        )
        slots: list[int] = []
        for csinode in watch.csinodes.list():
            limits = {
                d: c.allocatable_count for d, c in csinode.drivers.items() if c.allocatable_count is not None
            }
            slot = table.slot_of.get(csinode.name)
            if not limits or slot is None or slot >= capacity or not table.valid[slot]:
                continue
            info = infos.get(csinode.name)
            if info is None:
                continue
            slots.append(slot)
            state = migrated_plugins(csinode)
            cols.migrated[slot] = state
            mask = cols.state_masks.get(state)
            if mask is None:
                mask = cols.state_masks[state] = np.zeros(capacity, dtype=np.bool_)
            mask[slot] = True
            for driver, limit in limits.items():
                column = cols.limits.get(driver)
                if column is None:
                    column = cols.limits[driver] = np.full(capacity, -1, dtype=np.int64)
                    cols.used[driver] = np.zeros(capacity, dtype=np.int64)
                column[slot] = limit
            self._recount(cols, slot, info)
            cols.infos.append(info)
        cols.slots = np.asarray(slots, dtype=np.int64)
        return cols

    def _recount(self, cols: _Columns, slot: int, info: NodeInfo | None) -> None:
        """Count again what one node's pods and attachments use of each limited driver (nothing
        while the node has no NodeInfo)."""
        for volume in cols.attached.pop(slot, {}):
            holders = cols.holders.get(volume)
            if holders is not None:
                holders.discard(slot)
                if not holders:
                    del cols.holders[volume]
        for counts in cols.used.values():
            counts[slot] = 0
        if info is None:
            return
        name = info.name
        attached = self._node_volumes(name, info, cols.migrated[slot])
        cols.attached[slot] = attached
        for volume, driver in attached.items():
            cols.holders.setdefault(volume, set()).add(slot)
            used = cols.used.get(driver)
            if used is not None:
                used[slot] += 1
        for volume, driver in self._attachments(name).items():
            counted = cols.used.get(driver)
            if counted is not None and volume not in attached:
                counted[slot] += 1

    def _exceeds(
        self, name: str, info: NodeInfo, csinode: CSINode, migrated: frozenset[str], new: Volumes
    ) -> bool:
        """Whether the node's limits are exceeded with the pod's new volumes ``new``."""
        limits = {
            d: c.allocatable_count for d, c in csinode.drivers.items() if c.allocatable_count is not None
        }
        if not new or not any(driver in limits for driver in new.values()):
            return False
        attached = self._node_volumes(name, info, migrated)
        used: Counter[str] = Counter()
        for volume, driver in attached.items():
            # A volume the node's pods already use costs nothing more.
            new.pop(volume, None)
            used[driver] += 1
        for volume, driver in self._attachments(name).items():
            if volume not in attached:
                used[driver] += 1
        for driver, count in Counter(new.values()).items():
            limit = limits.get(driver)
            if limit is not None and used[driver] + count > limit:
                return True
        return False
