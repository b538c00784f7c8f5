"""VolumeZone: a pod goes where its bound volumes' zones and regions are (upstream ``volumezone``).

PreFilter follows each ``persistentVolumeClaim`` volume to its claim and the claim to its bound
PersistentVolume, and keeps the PV's topology labels: ``failure-domain.beta.kubernetes.io/zone``,
``…/region``, ``topology.kubernetes.io/zone`` and ``…/region``, each value a ``__``-separated set of
zones (a value with an empty element is ignored, as upstream's ``LabelZonesToSet`` fails on it). A
claim not bound yet is skipped when its class binds WaitForFirstConsumer; otherwise it is an
UnschedulableAndUnresolvable error worded as upstream (``PersistentVolumeClaim had no pv name and
storageClass name``, ``VolumeBindingMode not set for StorageClass "x"``, ``PersistentVolume had no
name``, or a lister's ``persistentvolumeclaim "x" not found``). No topology at all: Skip.

Filter lets every node without any of the four labels through (a single-zone cluster), and rejects a
labelled node when one of the PV's labels is missing on it or has a value outside the PV's set; a PV's
beta label falls back to the node's GA label. The check is vectorized over the NodeTable's
dictionary-encoded label columns: one ``isin`` of label codes per PV label. The rejection is
``node(s) had no available volume zone``, UnschedulableAndUnresolvable.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, Final

import numpy as np

from kubesched.api.objects import BETA_REGION_LABEL, BETA_ZONE_LABEL, REGION_LABEL, ZONE_LABEL, Pod
from kubesched.api.storage import (
    BINDING_WAIT_FOR_FIRST_CONSUMER,
    PersistentVolume,
    PersistentVolumeClaim,
    StorageClass,
)
from kubesched.cache.cache import Snapshot
from kubesched.cache.node_table import BoolArray, NodeTable
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

NAME = "VolumeZone"
PRE_FILTER_KEY = "PreFilter" + NAME

#: Upstream ``ErrReasonConflict``.
ERR_REASON_CONFLICT = "node(s) had no available volume zone"

#: Upstream ``topologyLabels``, in its order.
TOPOLOGY_LABELS: Final = (BETA_ZONE_LABEL, BETA_REGION_LABEL, ZONE_LABEL, REGION_LABEL)
_GA_LABEL: Final = {BETA_ZONE_LABEL: ZONE_LABEL, BETA_REGION_LABEL: REGION_LABEL}
#: Upstream ``LabelMultiZoneDelimiter``.
MULTI_ZONE_DELIMITER: Final = "__"


def label_zones(value: str) -> frozenset[str] | None:
    """Upstream ``LabelZonesToSet``: the ``__``-separated values, trimmed; None when one is empty."""
    zones: set[str] = set()
    for zone in value.split(MULTI_ZONE_DELIMITER):
        trimmed = zone.strip()
        if not trimmed:
            return None
        zones.add(trimmed)
    return frozenset(zones)


@dataclass(frozen=True, slots=True)
class PVTopology:
    """One topology label of a bound PV: its key and the set of values a node may have."""

    pv_name: str
    key: str
    values: frozenset[str]


def topology_changed(old: PersistentVolume, new: PersistentVolume) -> bool:
    """Whether a PV update changed one of the topology labels."""
    return any(old.labels.get(k) != new.labels.get(k) for k in TOPOLOGY_LABELS)


def claim_names(pod: Pod) -> list[str]:
    """Upstream ``getPersistentVolumeClaimNameFromPod``: the ``persistentVolumeClaim`` volumes' claims."""
    return [v.claim_name for v in pod.volumes if v.source_kind == "persistentVolumeClaim"]


def _unresolvable(message: str) -> Status:
    return Status.unschedulable(message, unresolvable=True)


class VolumeZone:
    name: ClassVar[str] = NAME

    def __init__(self, args: Any = None, handle: Any = None) -> None:
        self.handle = handle

    # -- batching --------------------------------------------------------------------------------
    def sign_pod(self, pod: Pod) -> tuple[tuple[SignFragment, ...], Status | None]:
        """A pod with claims depends on their volumes' labels: not signed. Any other pod is skipped
        by PreFilter, so it signs nothing."""
        if pod.volumes and claim_names(pod):
            return (), Status.unschedulable("pods with claims are not signable")
        return (), None

    # -- events ----------------------------------------------------------------------------------
    def events_to_register(self) -> list[ClusterEventWithHint]:
        # A class's binding mode is immutable: only new classes matter. A new node, or new labels on
        # one, may match a volume's zone. A claim that appears or gets bound, and a volume that
        # appears or changes its labels, may too.
        return [
            ClusterEventWithHint(
                ClusterEvent("StorageClass", ActionType.ADD), self.is_schedulable_after_storage_class_added
            ),
            ClusterEventWithHint(ClusterEvent("Node", ActionType.ADD | ActionType.UPDATE_NODE_LABEL)),
            ClusterEventWithHint(
                ClusterEvent("PersistentVolumeClaim", ActionType.ADD | ActionType.UPDATE),
                self.is_schedulable_after_persistent_volume_claim_change,
            ),
            ClusterEventWithHint(
                ClusterEvent("PersistentVolume", ActionType.ADD | ActionType.UPDATE),
                self.is_schedulable_after_persistent_volume_change,
            ),
        ]

    def is_schedulable_after_persistent_volume_claim_change(
        self, pod: Pod, old: Any, new: Any
    ) -> QueueingHint:
        """Queue when the claim added or changed is one of the pod's (``IsPVCRequestedFromPod``)."""
        if not isinstance(new, PersistentVolumeClaim):
            return QueueingHint.QUEUE
        if new.namespace == pod.namespace and new.name in claim_names(pod):
            return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP

    def is_schedulable_after_storage_class_added(self, pod: Pod, old: Any, new: Any) -> QueueingHint:
        """Queue for a new WaitForFirstConsumer class (the pod's unbound claims then pass)."""
        if not isinstance(new, StorageClass):
            return QueueingHint.QUEUE
        if _binding_mode(new) == BINDING_WAIT_FOR_FIRST_CONSUMER:
            return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP

    def is_schedulable_after_persistent_volume_change(self, pod: Pod, old: Any, new: Any) -> QueueingHint:
        """Queue for a new PV, and for a PV whose topology labels changed."""
        if not isinstance(new, PersistentVolume) or (
            old is not None and not isinstance(old, PersistentVolume)
        ):
            return QueueingHint.QUEUE
        if old is None or topology_changed(old, new):
            return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP

    # -- PreFilter -------------------------------------------------------------------------------
    def pod_topologies(self, pod: Pod) -> tuple[list[PVTopology], Status | None]:
        """Upstream ``getPVbyPod``: the topology labels of the pod's bound volumes, or the status
        that rejects the pod."""
        topologies: list[PVTopology] = []
        names = claim_names(pod)
        if not names:
            return topologies, None
        informers = self.handle.informers
        claims = informers.informer("PersistentVolumeClaim")
        volumes = informers.informer("PersistentVolume")
        classes = informers.informer("StorageClass")
        for claim_name in names:
            if not claim_name:
                return [], _unresolvable("PersistentVolumeClaim had no name")
            claim: PersistentVolumeClaim | None = claims.get(pod.namespace, claim_name)
            if claim is None:
                return [], _unresolvable(f'persistentvolumeclaim "{claim_name}" not found')
            pv_name = claim.volume_name
            if not pv_name:
                class_name = claim.class_name
                if not class_name:
                    return [], _unresolvable("PersistentVolumeClaim had no pv name and storageClass name")
                sc: StorageClass | None = classes.get(None, class_name)
                if sc is None:
                    return [], _unresolvable(f'storageclass.storage.k8s.io "{class_name}" not found')
                mode = _binding_mode(sc)
                if mode is None:
                    return [], _unresolvable(f'VolumeBindingMode not set for StorageClass "{class_name}"')
                if mode == BINDING_WAIT_FOR_FIRST_CONSUMER:
                    continue
                return [], _unresolvable("PersistentVolume had no name")
            pv: PersistentVolume | None = volumes.get(None, pv_name)
            if pv is None:
                return [], _unresolvable(f'persistentvolume "{pv_name}" not found')
            for key in TOPOLOGY_LABELS:
                value = pv.labels.get(key)
                if value is None:
                    continue
                zones = label_zones(value)
                if zones is not None:
                    topologies.append(PVTopology(pv.name, key, zones))
        return topologies, None

    def pre_filter(
        self, state: CycleState, pod: Pod, snapshot: Snapshot
    ) -> tuple[PreFilterResult | None, Status | None]:
        if not pod.volumes:
            return None, Status(Code.SKIP)
        topologies, status = self.pod_topologies(pod)
        if status is not None:
            return None, status
        if not topologies:
            return None, Status(Code.SKIP)
        state.write(PRE_FILTER_KEY, topologies)
        return None, None

    # -- Filter ----------------------------------------------------------------------------------
    def filter_nodes(self, state: CycleState, pod: Pod, table: NodeTable) -> FilterResult:
        capacity = table.capacity
        if not pod.volumes:
            return FilterResult.all_pass(capacity)
        topologies: list[PVTopology] | None = state.get(PRE_FILTER_KEY)
        if topologies is None:
            # Run without PreFilter (enabled at Filter alone, or by Volcano's predicates): upstream
            # computes the volumes' topology here.
            topologies, status = self.pod_topologies(pod)
            if status is not None:
                return FilterResult.reject(
                    np.ones(capacity, dtype=np.bool_),
                    status.message,
                    unresolvable=status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
                )
        if not topologies:
            return FilterResult.all_pass(capacity)
        constrained = np.zeros(capacity, dtype=np.bool_)
        for key in TOPOLOGY_LABELS:
            column = table.labels.get(key)
            if column is not None:
                constrained |= column.codes[:capacity] >= 0
        if not constrained.any():
            return FilterResult.all_pass(capacity)
        failing = np.zeros(capacity, dtype=np.bool_)
        for topology in topologies:
            failing |= ~_label_in(table, topology.key, topology.values, capacity)
        failing &= constrained
        if not failing.any():
            return FilterResult.all_pass(capacity)
        return FilterResult.reject(failing, ERR_REASON_CONFLICT, unresolvable=True)


def _binding_mode(sc: StorageClass) -> str | None:
    """The class's ``volumeBindingMode`` as written (None when unset: the API server would have
    defaulted it, an object that was not defaulted has none)."""
    mode = sc.raw.get("volumeBindingMode")
    return mode if isinstance(mode, str) and mode else None


def _codes_in(
    table: NodeTable, key: str, values: frozenset[str], capacity: int
) -> tuple[BoolArray, BoolArray]:
    """Per slot: whether the node has label ``key``, and whether its value is in ``values``."""
    column = table.labels.get(key)
    if column is None:
        none = np.zeros(capacity, dtype=np.bool_)
        return none, none
    codes = column.codes[:capacity]
    allowed = [column.vocab[v] for v in values if v in column.vocab]
    present: BoolArray = codes >= 0
    matches: BoolArray = np.isin(codes, allowed) if allowed else np.zeros(capacity, dtype=np.bool_)
    return present, matches


def _label_in(table: NodeTable, key: str, values: frozenset[str], capacity: int) -> BoolArray:
    """Per slot: the node's value for ``key`` — or, for a beta key the node lacks, its GA key — is in
    ``values``."""
    present, matches = _codes_in(table, key, values, capacity)
    ga = _GA_LABEL.get(key)
    if ga is None:
        return matches
    _, ga_matches = _codes_in(table, ga, values, capacity)
    result: BoolArray = np.where(present, matches, ga_matches)
    return result
