"""VolumeRestrictions: volumes two pods cannot share on one node (upstream ``volumerestrictions``).

Two rules, in upstream's order:

* **Inline disks** (``isVolumeConflict``): a GCE PD mounted by two pods of a node conflicts unless
  both mount it read-only; an AWS EBS volume never goes to two pods; an RBD image conflicts when the
  monitors overlap, pool and image are the same and not both are read-only; an iSCSI volume when the
  IQN is the same and not both are read-only. Rejected nodes get ``node(s) had no available disk``
  (Unschedulable: evicting the other pod helps).
* **ReadWriteOncePod**: PreFilter looks every ``persistentVolumeClaim`` volume's claim up (a missing
  claim is ``persistentvolumeclaim "<name>" not found``, UnschedulableAndUnresolvable) and counts how
  many of the claims with the ReadWriteOncePod access mode a scheduled pod already uses; while any
  is, every node answers ``node has pod using PersistentVolumeClaim with the same name and
  ReadWriteOncePod access mode`` (Unschedulable, so preemption may evict that pod).

PreFilter returns Skip when the pod has no inline disk and no claim in use with that mode. It reads
the cache's :class:`~kubesched.cache.volume_index.VolumeIndex` (pods with inline disks, claim users),
so a cycle costs one check per pod that has an inline disk, never a pass over all pods, and keeps
per-slot conflict counts that ``add_pod`` / ``remove_pod`` adjust for preemption and nominated pods.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from kubesched.api.objects import Pod
from kubesched.api.storage import READ_WRITE_ONCE_POD, PersistentVolumeClaim, PodVolume
from kubesched.cache.cache import Snapshot
from kubesched.cache.node_table import NodeTable
from kubesched.cache.volume_index import INLINE_DISK_KINDS
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.interfaces import SignFragment
from kubesched.framework.status import Code, Status
from kubesched.framework.types import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    FilterResult,
    NodeFailure,
    PreFilterResult,
    QueueingHint,
)

NAME = "VolumeRestrictions"
PRE_FILTER_KEY = "PreFilter" + NAME

#: Upstream ``ErrReasonDiskConflict``.
ERR_REASON_DISK_CONFLICT = "node(s) had no available disk"
#: Upstream ``ErrReasonReadWriteOncePodConflict``.
ERR_REASON_READ_WRITE_ONCE_POD_CONFLICT = (
    "node has pod using PersistentVolumeClaim with the same name and ReadWriteOncePod access mode"
)

#: What the API server defaults an RBD volume's pool to.
_DEFAULT_RBD_POOL = "rbd"


def not_found(resource: str, name: str) -> str:
    """An informer lister's NotFound error text (``persistentvolumeclaim "x" not found``)."""
    return f'{resource} "{name}" not found'


def _str(source: Mapping[str, Any], key: str) -> str:
    value = source.get(key)
    return value if isinstance(value, str) else ""


def _read_only(source: Mapping[str, Any]) -> bool:
    return source.get("readOnly") is True


def _monitors(source: Mapping[str, Any]) -> set[str]:
    monitors = source.get("monitors")
    if not isinstance(monitors, list):
        return set()
    return {m for m in monitors if isinstance(m, str)}


def volumes_conflict(volume: PodVolume, other: PodVolume) -> bool:
    """Upstream ``isVolumeConflict`` for one pair of volumes."""
    kind = volume.source_kind
    if kind != other.source_kind:
        return False
    a, b = volume.source, other.source
    if kind == "gcePersistentDisk":
        return _str(a, "pdName") == _str(b, "pdName") and not (_read_only(a) and _read_only(b))
    if kind == "awsElasticBlockStore":
        return _str(a, "volumeID") == _str(b, "volumeID")
    if kind == "iscsi":
        return _str(a, "iqn") == _str(b, "iqn") and not (_read_only(a) and _read_only(b))
    if kind == "rbd":
        return (
            bool(_monitors(a) & _monitors(b))
            and (_str(a, "pool") or _DEFAULT_RBD_POOL) == (_str(b, "pool") or _DEFAULT_RBD_POOL)
            and _str(a, "image") == _str(b, "image")
            and not (_read_only(a) and _read_only(b))
        )
    return False


def disk_volumes(pod: Pod) -> tuple[PodVolume, ...]:
    """The pod's volumes a conflict check applies to (upstream ``needsRestrictionsCheck``)."""
    return tuple(v for v in pod.volumes if v.source_kind in INLINE_DISK_KINDS)


def conflicts_with(volumes: tuple[PodVolume, ...], other: Pod) -> bool:
    """Whether any of ``volumes`` conflicts with a volume of ``other`` (``satisfyVolumeConflicts``
    on a node holding only ``other``, negated)."""
    return any(volumes_conflict(v, ov) for v in volumes for ov in other.volumes)


@dataclass(slots=True)
class _PreFilterState:
    #: The pod's inline disk volumes.
    disks: tuple[PodVolume, ...]
    #: Slot → pods there whose volumes conflict with ``disks``.
    disk_conflicts: dict[int, int] = field(default_factory=dict)
    #: Names of the pod's claims with the ReadWriteOncePod access mode.
    rwop_claims: frozenset[str] = frozenset()
    #: How many scheduled pods use those claims (upstream ``conflictingPVCRefCount``).
    conflicting_refs: int = 0

    def clone(self) -> _PreFilterState:
        return _PreFilterState(self.disks, dict(self.disk_conflicts), self.rwop_claims, self.conflicting_refs)

    def update_with_pod(self, other: Pod, slot: int, sign: int) -> None:
        if self.disks and conflicts_with(self.disks, other):
            left = self.disk_conflicts.get(slot, 0) + sign
            if left:
                self.disk_conflicts[slot] = left
            else:
                self.disk_conflicts.pop(slot, None)
        if self.rwop_claims:
            # Upstream counts the other pod's claims by name alone.
            self.conflicting_refs += sign * sum(
                1
                for v in other.volumes
                if v.source_kind == "persistentVolumeClaim" and v.claim_name in self.rwop_claims
            )


class VolumeRestrictions:
    name: ClassVar[str] = NAME

    def __init__(self, args: Any = None, handle: Any = None) -> None:
        self.handle = handle

    # -- batching --------------------------------------------------------------------------------
    def sign_pod(self, pod: Pod) -> tuple[tuple[SignFragment, ...], Status | None]:
        """A pod with an inline disk or a claim depends on the other pods' volumes: not signed.
        Any other pod is skipped by PreFilter, so it signs nothing."""
        if pod.volumes and any(
            v.source_kind == "persistentVolumeClaim" or v.source_kind in INLINE_DISK_KINDS
            for v in pod.volumes
        ):
            return (), Status.unschedulable("pods with claims or inline disks are not signable")
        return (), None

    # -- events ----------------------------------------------------------------------------------
    def events_to_register(self) -> list[ClusterEventWithHint]:
        # Volumes are immutable, so a pod update frees nothing; any new node may fit; a claim that
        # was missing may appear.
        return [
            ClusterEventWithHint(
                ClusterEvent("Pod", ActionType.DELETE), self.is_schedulable_after_pod_deleted
            ),
            ClusterEventWithHint(ClusterEvent("Node", ActionType.ADD)),
            ClusterEventWithHint(
                ClusterEvent("PersistentVolumeClaim", ActionType.ADD),
                self.is_schedulable_after_persistent_volume_claim_added,
            ),
        ]

    def is_schedulable_after_persistent_volume_claim_added(
        self, pod: Pod, old: Any, new: Any
    ) -> QueueingHint:
        """Queue when the new claim is one of the pod's ``persistentVolumeClaim`` volumes."""
        if not isinstance(new, PersistentVolumeClaim):
            return QueueingHint.QUEUE
        if new.namespace != pod.namespace:
            return QueueingHint.QUEUE_SKIP
        for v in pod.volumes:
            if v.source_kind == "persistentVolumeClaim" and v.claim_name == new.name:
                return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP

    def is_schedulable_after_pod_deleted(self, pod: Pod, old: Any, new: Any) -> QueueingHint:
        """Queue when the deleted pod, of the pod's namespace, held a conflicting inline disk or
        used one of the pod's claims (the access mode is not looked up, as upstream)."""
        if not isinstance(old, Pod):
            return QueueingHint.QUEUE
        if old.namespace != pod.namespace:
            return QueueingHint.QUEUE_SKIP
        disks = disk_volumes(pod)
        if disks and conflicts_with(disks, old):
            return QueueingHint.QUEUE
        claims = {v.claim_name for v in pod.volumes if v.source_kind == "persistentVolumeClaim"}
        for v in old.volumes:
            if v.source_kind == "persistentVolumeClaim" and v.claim_name in claims:
                return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP

    # -- PreFilter -------------------------------------------------------------------------------
    def pre_filter(
        self, state: CycleState, pod: Pod, snapshot: Snapshot
    ) -> tuple[PreFilterResult | None, Status | None]:
        if not pod.volumes:
            return None, Status(Code.SKIP)
        disks = disk_volumes(pod)
        rwop: set[str] = set()
        claims = self.handle.informers.informer("PersistentVolumeClaim") if self.handle is not None else None
        for v in pod.volumes:
            if v.source_kind != "persistentVolumeClaim":
                continue
            claim = claims.get(pod.namespace, v.claim_name) if claims is not None else None
            if claim is None:
                return None, Status.unschedulable(
                    not_found("persistentvolumeclaim", v.claim_name), unresolvable=True
                )
            if READ_WRITE_ONCE_POD in claim.access_modes:
                rwop.add(claim.name)
        index = snapshot.volume_index
        valid = snapshot.table.valid
        conflicting = 0
        for name in rwop:
            users = index.claim_users(pod.namespace, name)
            # Only pods on nodes of the snapshot count (upstream builds the set from its node infos).
            if any(count > 0 and slot < len(valid) and valid[slot] for slot, count in users.items()):
                conflicting += 1
        if not disks and conflicting == 0:
            return None, Status(Code.SKIP)
        st = _PreFilterState(disks, rwop_claims=frozenset(rwop), conflicting_refs=conflicting)
        if disks:
            for slot, other in index.disk_pods():
                if conflicts_with(disks, other):
                    st.disk_conflicts[slot] = st.disk_conflicts.get(slot, 0) + 1
        state.write(PRE_FILTER_KEY, st)
        return None, None

    def add_pod(self, state: CycleState, pod: Pod, pod_to_add: Pod, slot: int) -> Status | None:
        st: _PreFilterState | None = state.get(PRE_FILTER_KEY)
        if st is not None:
            st.update_with_pod(pod_to_add, slot, 1)
        return None

    def remove_pod(self, state: CycleState, pod: Pod, pod_to_remove: Pod, slot: int) -> Status | None:
        st: _PreFilterState | None = state.get(PRE_FILTER_KEY)
        if st is not None:
            st.update_with_pod(pod_to_remove, slot, -1)
        return None

    # -- Filter ----------------------------------------------------------------------------------
    def filter_nodes(self, state: CycleState, pod: Pod, table: NodeTable) -> FilterResult:
        # Without its PreFilter state upstream's Filter fails the pod with an error.
        st: _PreFilterState = state.read(PRE_FILTER_KEY)
        capacity = table.capacity
        disk = np.zeros(capacity, dtype=np.bool_)
        for slot, count in st.disk_conflicts.items():
            if count > 0 and slot < capacity:
                disk[slot] = True
        failures: list[NodeFailure] = []
        if disk.any():
            failures.append(NodeFailure(ERR_REASON_DISK_CONFLICT, disk))
        failing = disk
        if st.conflicting_refs > 0:
            # A node without a disk conflict fails for the claim instead (upstream checks disks first).
            rwop = ~disk
            failures.append(NodeFailure(ERR_REASON_READ_WRITE_ONCE_POD_CONFLICT, rwop))
            failing = disk | rwop
        if not failures:
            return FilterResult.all_pass(capacity)
        return FilterResult(~failing, failures)
