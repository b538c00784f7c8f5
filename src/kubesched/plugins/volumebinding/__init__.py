"""VolumeBinding: a pod's PersistentVolumeClaims decide where it can run, and the scheduler binds
the WaitForFirstConsumer ones to the node it picks (upstream ``volumebinding/volume_binding.go``).

- PreFilter skips pods without claims (persistentVolumeClaim or generic ephemeral volumes). For the
  others every claim must exist, not be Lost or being deleted, and an ephemeral volume's claim must
  belong to the pod (UnschedulableAndUnresolvable, upstream's messages); unbound claims of
  Immediate classes make the pod wait for the PV controller ("pod has unbound immediate
  PersistentVolumeClaims"). The claims are sorted into bound and to-bind.
- Filter answers for every node at once (see :mod:`.binder`): bound claims' volumes must be
  reachable ("node(s) had volume node affinity conflict", or "...bound to non-existent pv(s)"),
  every to-bind claim needs a matching available volume on the node or a class that can provision
  there — allowed topologies ("node(s) didn't find available persistent volumes to bind") and, for
  CSI drivers that report it, CSIStorageCapacity ("node(s) did not have enough free storage"). All
  rejections are UnschedulableAndUnresolvable.
- Score (feature gate StorageCapacityScoring, off by default in v1.35) rates nodes by the storage
  utilization the pod's volumes would leave (:mod:`.scorer`).
- Reserve assumes the chosen volumes and provisioning decisions in the plugin's PV and claim caches,
  so the next pod already sees them (no two pods take one volume); Unreserve restores them.
- PreBind writes them (the PV's ``claimRef``, the claim's ``volume.kubernetes.io/selected-node``)
  through ``handle.ports.volumes`` and waits, up to ``bindTimeoutSeconds``, for the PV controller to
  bind every claim.

Pods without claims cost one attribute check at PreFilter and are never looked at again.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar, Final

import numpy as np

from kubesched.api.objects import Pod
from kubesched.api.storage import (
    CLAIM_LOST,
    MIGRATED_PLUGINS_ANNOTATION,
    CSIDriver,
    CSINode,
    CSIStorageCapacity,
    PersistentVolumeClaim,
    StorageClass,
)
from kubesched.cache.cache import Snapshot
from kubesched.cache.node_table import NodeTable
from kubesched.errors import InputError
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.handle import Handle
from kubesched.framework.interfaces import SignFragment
from kubesched.framework.plugin_args import VolumeBindingArgs
from kubesched.framework.status import Code, Status
from kubesched.framework.types import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    FilterResult,
    IntArray,
    NodeFailure,
    PreFilterResult,
    QueueingHint,
)
from kubesched.plugins.volumebinding.assume_cache import PVAssumeCache, PVCAssumeCache, claim_key
from kubesched.plugins.volumebinding.binder import (
    CLAIM_SOURCES,
    ERR_REASON_PV_NOT_EXIST,
    REASONS,
    BinderError,
    PodVolumeClaims,
    PodVolumes,
    VolumeBinder,
    VolumeOutcome,
    capacity_scorer_resources,
    volume_for_pod_error,
    volume_limit,
)
from kubesched.plugins.volumebinding.scorer import DEFAULT_SHAPE, VolumeCapacityScorer, scorer_from_args

__all__ = ["VolumeBinding"]

NAME: Final = "VolumeBinding"
STATE_KEY: Final = NAME
STORAGE_CAPACITY_SCORING: Final = "StorageCapacityScoring"
ERR_UNBOUND_IMMEDIATE: Final = "pod has unbound immediate PersistentVolumeClaims"


@dataclass(slots=True)
class _State:
    """What one cycle learns about the pod's claims (shared by clones of the cycle state, as
    upstream's stateData)."""

    claims: PodVolumeClaims
    #: The latest Filter answer for every node.
    outcome: VolumeOutcome | None = None
    #: Per node, the volumes Reserve assumed (and PreBind writes, Unreserve reverts).
    by_node: dict[str, PodVolumes] = field(default_factory=dict)
    all_bound: bool = False

    def pod_volumes(self, node_name: str) -> PodVolumes | None:
        volumes = self.by_node.get(node_name)
        if volumes is None and self.outcome is not None:
            slot = self.outcome.slot_of.get(node_name)
            if slot is not None:
                volumes = self.by_node[node_name] = self.outcome.pod_volumes(slot)
        return volumes


def has_claims(pod: Pod) -> bool:
    return any(v.source_kind in CLAIM_SOURCES for v in pod.volumes)


def _describe(claim: PersistentVolumeClaim, reason: str) -> str:
    if reason == ERR_REASON_PV_NOT_EXIST:
        return f'persistentvolumeclaim "{claim_key(claim)}" bound to persistentvolume "{claim.volume_name}"'
    return f'persistentvolumeclaim "{claim_key(claim)}"'


class VolumeBinding:
    name: ClassVar[str] = NAME

    def __init__(self, args: VolumeBindingArgs | None = None, handle: Handle | None = None) -> None:
        args = args or VolumeBindingArgs()
        scoring = handle.gate_enabled(STORAGE_CAPACITY_SCORING) if handle is not None else False
        if args.shape is not None and not scoring:
            raise InputError(
                "unexpected field `shape`, remove it or turn on the feature gate StorageCapacityScoring",
                field=f"pluginConfig[{NAME}].args.shape",
            )
        #: None when StorageCapacityScoring is off: Score is skipped.
        self.scorer: VolumeCapacityScorer | None = (
            scorer_from_args(args.shape if args.shape is not None else DEFAULT_SHAPE) if scoring else None
        )
        self.handle = handle
        self.binder: VolumeBinder | None = None
        if handle is not None:
            informers = handle.informers
            self.binder = VolumeBinder(
                informers,
                handle.ports.volumes,
                PVAssumeCache(informers.informer("PersistentVolume")),
                PVCAssumeCache(informers.informer("PersistentVolumeClaim")),
                float(args.bind_timeout_seconds),
                # The driver sets the handle's wait after the plugins are built: look it up per call.
                lambda condition, timeout: handle.wait_for_cluster(condition, timeout),
            )

    def _binder(self) -> VolumeBinder:
        if self.binder is None:
            raise BinderError("VolumeBinding was built without a handle")
        return self.binder

    # -- batching ---------------------------------------------------------------------------------
    def sign_pod(self, pod: Pod) -> tuple[tuple[SignFragment, ...], Status | None]:
        """A pod with claims is never batched: where it fits depends on which volumes the pods
        before it took. Other pods' volumes do not concern this plugin."""
        if has_claims(pod):
            return (), Status.unschedulable("pods with persistent volume claims are not signable")
        return (), None

    # -- queueing hints ---------------------------------------------------------------------------
    def events_to_register(self) -> list[ClusterEventWithHint]:
        add_update = ActionType.ADD | ActionType.UPDATE
        return [
            # A missing or misconfigured class (allowedTopologies, binding mode) may be fixed.
            ClusterEventWithHint(
                ClusterEvent("StorageClass", add_update), self.is_schedulable_after_storage_class_change
            ),
            # Claims and volumes get bound, created, released.
            ClusterEventWithHint(
                ClusterEvent("PersistentVolumeClaim", add_update), self.is_schedulable_after_pvc_change
            ),
            ClusterEventWithHint(ClusterEvent("PersistentVolume", add_update)),
            # A node's labels decide volume affinities and class topologies.
            ClusterEventWithHint(ClusterEvent("Node", ActionType.ADD | ActionType.UPDATE_NODE_LABEL)),
            # CSINode says which in-tree plugins a node reads as CSI.
            ClusterEventWithHint(
                ClusterEvent("CSINode", add_update), self.is_schedulable_after_csi_node_change
            ),
            ClusterEventWithHint(
                ClusterEvent("CSIDriver", ActionType.UPDATE), self.is_schedulable_after_csi_driver_change
            ),
            ClusterEventWithHint(
                ClusterEvent("CSIStorageCapacity", add_update),
                self.is_schedulable_after_csi_storage_capacity_change,
            ),
        ]

    def is_schedulable_after_csi_node_change(self, pod: Pod, old: Any, new: Any) -> QueueingHint:
        """A new CSINode, or a change of which plugins a node migrated, may help."""
        if old is None:
            return QueueingHint.QUEUE
        if not isinstance(old, CSINode) or not isinstance(new, CSINode):
            return QueueingHint.QUEUE
        before = old.raw.get("metadata", {}).get("annotations") or {}
        after = new.raw.get("metadata", {}).get("annotations") or {}
        if before.get(MIGRATED_PLUGINS_ANNOTATION) != after.get(MIGRATED_PLUGINS_ANNOTATION):
            return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP

    def is_schedulable_after_pvc_change(self, pod: Pod, old: Any, new: Any) -> QueueingHint:
        """A claim the pod uses (by name, in its namespace) was created or changed."""
        if not isinstance(new, PersistentVolumeClaim):
            return QueueingHint.QUEUE
        if pod.namespace != new.namespace:
            return QueueingHint.QUEUE_SKIP
        for volume in pod.volumes:
            if volume.source_kind in CLAIM_SOURCES and volume.claim_name == new.name:
                return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP

    def is_schedulable_after_storage_class_change(self, pod: Pod, old: Any, new: Any) -> QueueingHint:
        """Any new class, or a class whose ``allowedTopologies`` changed (its binding mode cannot)."""
        if not isinstance(new, StorageClass) or (old is not None and not isinstance(old, StorageClass)):
            return QueueingHint.QUEUE
        if old is None or old.allowed_topologies != new.allowed_topologies:
            return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP

    def is_schedulable_after_csi_storage_capacity_change(self, pod: Pod, old: Any, new: Any) -> QueueingHint:
        """A new capacity, or a larger volume limit (``maximumVolumeSize``, else ``capacity``)."""
        if not isinstance(new, CSIStorageCapacity) or (
            old is not None and not isinstance(old, CSIStorageCapacity)
        ):
            return QueueingHint.QUEUE
        if old is None:
            return QueueingHint.QUEUE
        new_limit, old_limit = volume_limit(new), volume_limit(old)
        if new_limit is not None and (old_limit is None or new_limit > old_limit):
            return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP

    def is_schedulable_after_csi_driver_change(self, pod: Pod, old: Any, new: Any) -> QueueingHint:
        """A driver of one of the pod's inline CSI volumes stopped reporting storage capacity."""
        if not isinstance(new, CSIDriver) or not isinstance(old, CSIDriver):
            return QueueingHint.QUEUE
        for volume in pod.volumes:
            if volume.source_kind != "csi" or volume.source.get("driver") != new.name:
                continue
            if old.storage_capacity and not new.storage_capacity:
                return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP

    # -- PreFilter --------------------------------------------------------------------------------
    def _pod_claims_status(self, pod: Pod) -> Status | None:
        """Upstream ``podHasPVCs``: every claim the pod names exists and can be used."""
        claims = self._binder().informers.informer("PersistentVolumeClaim")
        for volume in pod.volumes:
            if volume.source_kind not in CLAIM_SOURCES:
                continue
            name = volume.claim_name
            claim: PersistentVolumeClaim | None = claims.get(pod.namespace, name)
            message = None
            if claim is None:
                message = (
                    f'waiting for ephemeral volume controller to create the persistentvolumeclaim "{name}"'
                    if volume.ephemeral
                    else f'persistentvolumeclaim "{name}" not found'
                )
            elif claim.phase == CLAIM_LOST:
                message = (
                    f'persistentvolumeclaim "{claim.name}" bound to non-existent persistentvolume '
                    f'"{claim.volume_name}"'
                )
            elif claim.deletion_timestamp:
                message = f'persistentvolumeclaim "{claim.name}" is being deleted'
            elif volume.ephemeral:
                message = volume_for_pod_error(pod, claim)
            if message is not None:
                return Status.unschedulable(message, unresolvable=True)
        return None

    def pre_filter(
        self, state: CycleState, pod: Pod, snapshot: Snapshot
    ) -> tuple[PreFilterResult | None, Status | None]:
        if not pod.volumes or not has_claims(pod):
            return None, Status(Code.SKIP)
        rejected = self._pod_claims_status(pod)
        if rejected is not None:
            return None, rejected
        try:
            claims = self._binder().get_pod_volume_claims(pod)
        except BinderError as exc:
            return None, Status.error(str(exc))
        if claims.unbound_claims_immediate:
            # The PV controller binds these: the pod waits for their update events.
            return None, Status.unschedulable(ERR_UNBOUND_IMMEDIATE, unresolvable=True)
        state.write(STATE_KEY, _State(claims))
        return None, None

    # -- Filter -----------------------------------------------------------------------------------
    def filter_nodes(self, state: CycleState, pod: Pod, table: NodeTable) -> FilterResult:
        st: _State | None = state.get(STATE_KEY)
        if st is None:
            if not has_claims(pod):
                return FilterResult.all_pass(table.capacity)
            # PreFilter is not enabled in this profile: sort the claims here.
            st = _State(self._binder().get_pod_volume_claims(pod))
            state.write(STATE_KEY, st)
        outcome = self._binder().find_pod_volumes(pod, st.claims, table)
        st.outcome = outcome
        st.by_node.clear()
        return _filter_result(outcome, table.capacity)

    # -- PreScore / Score -------------------------------------------------------------------------
    def pre_score(self, state: CycleState, pod: Pod, table: NodeTable, slots: IntArray) -> Status | None:
        st: _State | None = state.get(STATE_KEY)
        if self.scorer is None or st is None or st.outcome is None:
            return Status(Code.SKIP)
        return None

    def score_nodes(self, state: CycleState, pod: Pod, table: NodeTable, slots: IntArray) -> IntArray:
        scores = np.zeros(len(slots), dtype=np.int64)
        st: _State | None = state.get(STATE_KEY)
        scorer = self.scorer
        if scorer is None or st is None or st.outcome is None:
            return scores
        outcome = st.outcome
        for i, slot in enumerate(slots.tolist()):
            scores[i] = scorer(capacity_scorer_resources(outcome.pod_volumes(slot)))
        return scores

    # -- Reserve / Unreserve ----------------------------------------------------------------------
    def reserve(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        st: _State | None = state.get(STATE_KEY)
        if st is None:
            return None
        volumes = st.pod_volumes(node_name)
        if volumes is None:
            st.all_bound = True
            return None
        try:
            st.all_bound = self._binder().assume_pod_volumes(pod, node_name, volumes)
        except BinderError as exc:
            return Status.error(str(exc))
        return None

    def unreserve(self, state: CycleState, pod: Pod, node_name: str) -> None:
        st: _State | None = state.get(STATE_KEY)
        if st is None or self.binder is None:
            return
        volumes = st.by_node.get(node_name)
        if volumes is not None:
            self.binder.revert_assumed_pod_volumes(volumes)

    # -- PreBind ----------------------------------------------------------------------------------
    def pre_bind_pre_flight(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        """Upstream ``PreBindPreFlight``: Skip when every claim of the pod is bound already."""
        st: _State | None = state.get(STATE_KEY)
        return Status(Code.SKIP) if st is None or st.all_bound else None

    def pre_bind(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        st: _State | None = state.get(STATE_KEY)
        if st is None or st.all_bound:
            return None
        volumes = st.by_node.get(node_name)
        if volumes is None:
            return Status.error(f'no pod volume found for node "{node_name}"')
        try:
            self._binder().bind_pod_volumes(pod, node_name, volumes)
        except BinderError as exc:
            return Status.error(str(exc))
        return None


def _filter_result(outcome: VolumeOutcome, capacity: int) -> FilterResult:
    """Every node a reason applies to fails (UnschedulableAndUnresolvable), the reasons in
    upstream's order, each split by the claim it is about so that explain can name it."""
    failures: list[NodeFailure] = []
    for reason in REASONS:
        culprit = outcome.culprits.get(reason)
        if culprit is None:
            continue
        hit = culprit >= 0
        if not hit.any():
            continue
        for index in np.unique(culprit[hit]).tolist():
            claim = outcome.claims[index]
            failures.append(NodeFailure(reason, culprit == index, True, _describe(claim, reason)))
    if not failures:
        return FilterResult.all_pass(capacity)
    return FilterResult(~outcome.failed(), failures)
