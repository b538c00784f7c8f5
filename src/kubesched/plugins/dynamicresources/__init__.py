"""DynamicResources: a pod's ResourceClaims decide where it can run, and the scheduler allocates
their devices (upstream ``dynamicresources/dynamicresources.go``, kube-scheduler v1.35).

- **PreEnqueue** holds a pod back until every claim it names exists: a template's claim must have
  been generated (``status.resourceClaimStatuses``), must not be being deleted and must be owned by
  the pod. The claim's creation, or the pod update recording it, lets the pod in.
- **PreFilter** gathers the claims. An allocated claim that is reserved for as many consumers as
  the API allows, and not for this pod, makes it wait ("resourceclaim in use"); an allocated
  claim's ``nodeSelector`` restricts the nodes; claims to allocate need their DeviceClasses, and
  the allocator is built once for the cycle from the slices, the classes and the devices other
  claims hold (allocated, or in flight between Reserve and PreBind).
- **Filter** allocates the claims for each candidate node (``cannot allocate all claims``); an
  allocated claim whose node selector does not match is ``resourceclaim not available on the
  node``. Both are UnschedulableAndUnresolvable, as upstream: preemption cannot free a device. An
  allocator error (a CEL selector failing at runtime, a request the features do not allow) fails
  the pod's attempt with an error. Nodes no slice can serve share one allocator answer.
- **PostFilter** deallocates one allocated claim that kept the pod off every node, when no other
  pod uses it, so that the next attempt can allocate it elsewhere.
- **Reserve** records the chosen node's allocations as in flight, so that the next pod's cycle
  sees those devices taken; **Unreserve** rolls that back and drops the pod from ``reservedFor``.
- **PreBind** writes each claim through ``handle.ports.resource_claims``: the delete-protection
  finalizer, then ``status.allocation`` and ``status.reservedFor`` (a conflict reads the claim
  again and retries, as upstream's ``RetryOnConflict``), and keeps the written claim in the assume
  cache until the informer catches up.

With ``DRAExtendedResource``, extended resources backed by a DeviceClass are allocated through a
claim the scheduler creates for the pod (:mod:`.extended`).

Pods without claims cost one attribute check at PreEnqueue and PreFilter.
"""

from __future__ import annotations

import contextlib
import copy
import datetime
from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, Final

import numpy as np

from kubesched.api.objects import Pod
from kubesched.api.owners import controlled_by, controller_ref
from kubesched.api.resource import (
    EXTENDED_RESOURCE_CLAIM_ANNOTATION,
    FINALIZER,
    RESERVED_FOR_MAX_SIZE,
    AllocationResult,
    ResourceClaim,
    pod_claim_ref,
)
from kubesched.api.selectors import NodeSelector
from kubesched.cache.cache import Snapshot
from kubesched.cache.node_table import NodeTable
from kubesched.errors import InputError
from kubesched.framework.config.defaults import FEATURE_GATE_DEFAULTS
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.diagnosis import Diagnosis
from kubesched.framework.handle import Handle
from kubesched.framework.interfaces import SignFragment
from kubesched.framework.plugin_args import DynamicResourcesArgs
from kubesched.framework.status import Code, Status
from kubesched.framework.types import (
    ActionType,
    BoolArray,
    ClusterEvent,
    ClusterEventWithHint,
    FilterResult,
    FilterWalk,
    HintKeys,
    NodeFailure,
    PreFilterResult,
    QueueingHint,
)
from kubesched.plugins.dynamicresources.allocator import (
    AllocationError,
    Allocator,
    AllocatorFeatures,
    NodeAllocationFailure,
)
from kubesched.plugins.dynamicresources.claims import ClaimStore
from kubesched.plugins.dynamicresources.extended import (
    SPECIAL_CLAIM_IN_MEM_NAME,
    device_class_mapping,
    device_requests,
    dra_requests,
    request_mappings,
)
from kubesched.plugins.dynamicresources.manager import DraManager, dra_manager
from kubesched.plugins.dynamicresources.node_cache import claims_signature
from kubesched.plugins.helper.assume_cache import AssumeCacheError
from kubesched.store.base import Conflict, NotFound, Obj, StoreError
from kubesched.store.memory import format_timestamp
from kubesched.store.ports import ResourceClaimWriter

__all__ = ["DynamicResources", "node_allocations"]

NAME: Final = "DynamicResources"
STATE_KEY: Final = NAME

# Feature gates (upstream names; defaults in FEATURE_GATE_DEFAULTS).
DYNAMIC_RESOURCE_ALLOCATION: Final = "DynamicResourceAllocation"
DRA_ADMIN_ACCESS: Final = "DRAAdminAccess"
DRA_PRIORITIZED_LIST: Final = "DRAPrioritizedList"
DRA_PARTITIONABLE_DEVICES: Final = "DRAPartitionableDevices"
DRA_DEVICE_TAINTS: Final = "DRADeviceTaints"
DRA_CONSUMABLE_CAPACITY: Final = "DRAConsumableCapacity"
DRA_EXTENDED_RESOURCE: Final = "DRAExtendedResource"
DRA_DEVICE_BINDING_CONDITIONS: Final = "DRADeviceBindingConditions"
DRA_RESOURCE_CLAIM_DEVICE_STATUS: Final = "DRAResourceClaimDeviceStatus"

# Reasons and messages, as upstream words them.
ERR_CANNOT_ALLOCATE: Final = "cannot allocate all claims"
ERR_NOT_AVAILABLE: Final = "resourceclaim not available on the node"
ERR_IN_USE: Final = "resourceclaim in use"
ERR_EXTENDED_CLAIM: Final = "cannot schedule extended resource claim"
ERR_CANNOT_FIT: Final = "cannot fit resource"

#: How long PreBind waits for a created extended-resource claim to reach the informer.
ASSUME_EXTENDED_RESOURCE_TIMEOUT_SECONDS: Final = 120.0
#: client-go's ``retry.DefaultRetry``: tries of an update that meets conflicts.
UPDATE_TRIES: Final = 5


class _Unschedulable(Exception):
    """A pod claim that cannot be used now (the status message is the exception's)."""


class DynamicResourcesError(Exception):
    """An allocation error that ends the pod's attempt (the framework reports it as the plugin's
    error, upstream's Error status)."""


@dataclass(slots=True, eq=False)
class _ClaimInfo:
    #: The node selector of an allocated claim: the nodes it is available on.
    available_on: NodeSelector | None = None
    #: Set by Reserve, written by PreBind.
    allocation: AllocationResult | None = None


@dataclass(slots=True, eq=False)
class _NodeAllocation:
    #: One result per claim to allocate, in the claim store's order.
    results: list[AllocationResult]
    #: The node's variant of the extended-resource claim (None: nothing through DRA there).
    extended_claim: ResourceClaim | None = None


@dataclass(slots=True, eq=False)
class _State:
    """What one cycle knows about the pod's claims. Clones of the cycle state share it, as
    upstream's stateData (Filter runs on clones during preemption)."""

    claims: ClaimStore = field(default_factory=ClaimStore)
    infos: list[_ClaimInfo] = field(default_factory=list)
    allocator: Allocator | None = None
    #: Indices of allocated claims that were not available on some node (PostFilter's candidates).
    unavailable: set[int] = field(default_factory=set)
    node_allocations: dict[str, _NodeAllocation] = field(default_factory=dict)
    #: The allocator's answer for nodes no slice can serve: None (not asked yet), or the
    #: reason, "" when it allocated there.
    no_slice_verdict: str | None = None
    #: Names of nodes some slice serves by name; None when some slice may serve any node.
    sliced_nodes: frozenset[str] | None = None
    #: Extended resources: what the pod asks for through DRA, and resource → class.
    extended_requests: dict[str, int] = field(default_factory=dict)
    class_of: dict[str, str] = field(default_factory=dict)
    #: What the allocator is asked on every node (the features and the claims' specs), under
    #: which nodes keep their answers across cycles; None: not kept (an extended-resource
    #: claim's requests differ per node).
    question: Hashable | None = None
    #: The DRA state's version when PreFilter read it.
    stamps_version: int = -1
    #: The extended-resource claim's variant per set of resources a node leaves to DRA: nodes
    #: that advertise the same resources ask the allocator the same question.
    extended_variants: dict[frozenset[tuple[str, int]], ResourceClaim] = field(default_factory=dict)
    #: Each variant's question (by the variant's identity; the variants live as long as the cycle).
    extended_questions: dict[int, Hashable] = field(default_factory=dict)

    def clone(self) -> _State:
        return self


def node_allocations(state: CycleState, node_name: str) -> list[tuple[ResourceClaim, AllocationResult]]:
    """The pod's own claims this cycle allocates on ``node_name`` (Filter's answer, which Reserve
    makes in flight), each with its allocation; empty when none is allocated there."""
    st: _State | None = state.get(STATE_KEY)
    if st is None or st.claims.empty():
        return []
    allocations = st.node_allocations.get(node_name)
    if allocations is None:
        return []
    extended = st.claims.extended_claim()
    pending = [claim for _, claim in st.claims.to_allocate()]
    return [
        (claim, allocation)
        for claim, allocation in zip(pending, allocations.results, strict=False)
        if claim is not extended
    ]


def _is_controlled_by(claim: ResourceClaim, pod: Pod) -> bool:
    return controlled_by(claim.owner_references, pod.uid)


def _is_reserved_for_pod(pod: Pod, claim: ResourceClaim) -> bool:
    return claim.reserved_for_uid(pod.uid)


def _can_be_reserved(claim: ResourceClaim) -> bool:
    return len(claim.reserved_for) < RESERVED_FOR_MAX_SIZE


def _with_status(claim: ResourceClaim, **changes: Any) -> ResourceClaim:
    """A copy of the claim's view with status fields replaced (None removes one)."""
    raw = copy.deepcopy(dict(claim.raw))
    status = dict(raw.get("status") or {})
    for key, value in changes.items():
        if value is None:
            status.pop(key, None)
        else:
            status[key] = value
    raw["status"] = status
    return ResourceClaim.from_dict(raw)


class DynamicResources:
    name: ClassVar[str] = NAME

    def __init__(self, args: DynamicResourcesArgs | None = None, handle: Handle | None = None) -> None:
        args = args or DynamicResourcesArgs()
        #: How long PreBind waits for binding conditions.
        self.binding_timeout = args.binding_timeout_seconds

        def gate(name: str) -> bool:
            if handle is not None:
                return handle.gate_enabled(name)
            return FEATURE_GATE_DEFAULTS.get(name, False)

        self.enabled = gate(DYNAMIC_RESOURCE_ALLOCATION)
        self.enable_prioritized_list = gate(DRA_PRIORITIZED_LIST)
        self.enable_extended_resource = gate(DRA_EXTENDED_RESOURCE)
        self.enable_device_status = gate(DRA_RESOURCE_CLAIM_DEVICE_STATUS)
        self.enable_binding_conditions = gate(DRA_DEVICE_BINDING_CONDITIONS)
        self.enable_consumable_capacity = gate(DRA_CONSUMABLE_CAPACITY)
        self.features = AllocatorFeatures(
            admin_access=gate(DRA_ADMIN_ACCESS),
            prioritized_list=self.enable_prioritized_list,
            partitionable_devices=gate(DRA_PARTITIONABLE_DEVICES),
            device_taints=gate(DRA_DEVICE_TAINTS),
            device_binding_and_status=self.enable_binding_conditions and self.enable_device_status,
            consumable_capacity=self.enable_consumable_capacity,
        )
        self.handle = handle
        self.manager: DraManager | None = None
        if handle is not None and self.enabled:
            self.manager = dra_manager(handle.informers, self.enable_consumable_capacity)

    def _manager(self) -> DraManager:
        if self.manager is None:
            raise DynamicResourcesError("DynamicResources was built without a handle")
        return self.manager

    def _binding_conditions(self) -> bool:
        return self.enable_binding_conditions and self.enable_device_status

    # -- batching ---------------------------------------------------------------------------------
    def sign_pod(self, pod: Pod) -> tuple[tuple[SignFragment, ...], Status | None]:
        """A pod with claims is never batched: whether its claims fit depends on the devices the
        pods before it took. So is a pod whose extended resources a DeviceClass may back."""
        if pod.resource_claims:
            return (), Status.unschedulable("pods with resource claims are not signable")
        manager = self.manager
        if (
            self.enable_extended_resource
            and manager is not None
            and dra_requests(pod, device_class_mapping(manager.device_classes().values()))
        ):
            return (), Status.unschedulable("pods with extended resources backed by DRA are not signable")
        return (), None

    # -- queueing hints ---------------------------------------------------------------------------
    def events_to_register(self) -> list[ClusterEventWithHint]:
        if not self.enabled:
            return []
        add_update = ActionType.ADD | ActionType.UPDATE
        return [
            # A slice or a class may select nodes by label; a node may come to advertise an
            # extended resource.
            ClusterEventWithHint(
                ClusterEvent(
                    "Node", ActionType.ADD | ActionType.UPDATE_NODE_LABEL | ActionType.UPDATE_NODE_ALLOCATABLE
                )
            ),
            # Allocation is tracked in claims: their creation, allocation and release matter.
            ClusterEventWithHint(
                ClusterEvent("ResourceClaim", add_update),
                self.is_schedulable_after_claim_change,
                HintKeys(_pod_claim_keys, _claim_event_keys) if self.manager is not None else None,
            ),
            # The claim generated from a template is recorded in the pod's status.
            ClusterEventWithHint(
                ClusterEvent("Pod", ActionType.UPDATE_POD_GENERATED_RESOURCE_CLAIM),
                self.is_schedulable_after_pod_change,
            ),
            # A pod may wait for its class to be created or fixed.
            ClusterEventWithHint(ClusterEvent("DeviceClass", add_update)),
            # New or changed slices bring devices.
            ClusterEventWithHint(ClusterEvent("ResourceSlice", add_update)),
        ]

    def is_schedulable_after_claim_change(self, pod: Pod, old: Any, new: Any) -> QueueingHint:
        """A claim of the pod was created or its status changed, or any claim was deallocated
        (its devices are free for this pod). Errs on the side of trying again."""
        if not isinstance(new, ResourceClaim) or (old is not None and not isinstance(old, ResourceClaim)):
            return QueueingHint.QUEUE
        uses_claim = False

        def check(_: str, claim: ResourceClaim) -> None:
            nonlocal uses_claim
            if claim.uid == new.uid:
                uses_claim = True

        try:
            self._foreach_pod_resource_claim(pod, check)
        except _Unschedulable:
            # The pod cannot be scheduled whatever changed in this claim.
            return QueueingHint.QUEUE_SKIP
        if old is not None and old.allocation is not None and new.allocation is None:
            return QueueingHint.QUEUE
        if not uses_claim:
            return QueueingHint.QUEUE_SKIP
        if old is None:
            return QueueingHint.QUEUE
        if (old.raw.get("status") or {}) == (new.raw.get("status") or {}):
            # Something else changed (a driver added its finalizer): not what the pod waits for.
            return QueueingHint.QUEUE_SKIP
        return QueueingHint.QUEUE

    def is_schedulable_after_pod_change(self, pod: Pod, old: Any, new: Any) -> QueueingHint:
        """The pod's own update recorded the claims it waited for."""
        if not isinstance(new, Pod):
            return QueueingHint.QUEUE
        if new.uid != pod.uid:
            return QueueingHint.QUEUE_SKIP
        try:
            self._foreach_pod_resource_claim(new, None)
        except _Unschedulable:
            return QueueingHint.QUEUE_SKIP
        return QueueingHint.QUEUE

    # -- claims of a pod --------------------------------------------------------------------------
    def _foreach_pod_resource_claim(
        self, pod: Pod, callback: Callable[[str, ResourceClaim], None] | None
    ) -> None:
        """Upstream ``foreachPodResourceClaim``: every claim the pod names must exist and be
        usable; raises :class:`_Unschedulable` with upstream's message otherwise."""
        if not pod.resource_claims:
            return
        manager = self._manager()
        for pod_claim in pod.resource_claims:
            ref = pod_claim_ref(pod, pod_claim)
            if not ref.generated:
                raise _Unschedulable(f'pod "{pod.namespace}/{pod.name}": ResourceClaim not created yet')
            if ref.name is None:
                # No claim was needed for this entry.
                continue
            try:
                claim = manager.get_claim(pod.namespace, ref.name)
            except AssumeCacheError as exc:
                raise _Unschedulable(str(exc)) from None
            if claim.deleting:
                raise _Unschedulable(f'resourceclaim "{claim.name}" is being deleted')
            if ref.must_check_owner and not _is_controlled_by(claim, pod):
                raise _Unschedulable(
                    f"ResourceClaim {claim.namespace}/{claim.name} was not created for pod "
                    f"{pod.namespace}/{pod.name} (pod is not owner)"
                )
            if callback is not None:
                callback(pod_claim.name, claim)

    def _pod_resource_claims(self, pod: Pod) -> list[ResourceClaim]:
        claims: list[ResourceClaim] = []
        self._foreach_pod_resource_claim(pod, lambda _, claim: claims.append(claim))
        return claims

    # -- PreEnqueue -------------------------------------------------------------------------------
    def pre_enqueue(self, pod: Pod) -> Status | None:
        if not self.enabled or not pod.resource_claims:
            return None
        try:
            self._foreach_pod_resource_claim(pod, None)
        except _Unschedulable as exc:
            return Status.unschedulable(str(exc), unresolvable=True)
        return None

    # -- PreFilter --------------------------------------------------------------------------------
    def _pre_filter_extended(self, pod: Pod, st: _State) -> ResourceClaim | None:
        """The pod's extended-resource claim: the one a previous attempt created, or a new one in
        memory (no requests yet: Filter fills them per node). None when no extended resource the
        pod asks for is backed by a DeviceClass."""
        if not self.enable_extended_resource or not pod.requests:
            return None
        manager = self._manager()
        mapping = device_class_mapping(manager.device_classes().values())
        wanted = dra_requests(pod, mapping)
        if not wanted:
            return None
        st.extended_requests = wanted
        st.class_of = mapping
        for claim in manager.list_claims():
            # A pod owns claims of its own namespace only: the cheap test first.
            if claim.namespace != pod.namespace:
                continue
            if claim.annotations.get(EXTENDED_RESOURCE_CLAIM_ANNOTATION) != "true":
                continue
            if _is_controlled_by(claim, pod):
                return claim
        raw: dict[str, Any] = {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceClaim",
            "metadata": {
                "namespace": pod.namespace,
                "name": SPECIAL_CLAIM_IN_MEM_NAME,
                # A temporary uid under which Reserve signals the allocation.
                "uid": f"{pod.uid}-extended-resources",
                "generateName": f"{pod.name}-extended-resources-",
                "ownerReferences": [controller_ref("v1", "Pod", pod.name, pod.uid)],
                "annotations": {EXTENDED_RESOURCE_CLAIM_ANNOTATION: "true"},
            },
            "spec": {},
        }
        return _in_memory_claim(raw)

    def pre_filter(
        self, state: CycleState, pod: Pod, snapshot: Snapshot
    ) -> tuple[PreFilterResult | None, Status | None]:
        if not self.enabled:
            return None, Status(Code.SKIP)
        st = _State()
        state.write(STATE_KEY, st)
        if not pod.resource_claims and not (self.enable_extended_resource and pod.requests):
            return None, Status(Code.SKIP)
        try:
            user_claims = self._pod_resource_claims(pod)
        except _Unschedulable as exc:
            return None, Status.unschedulable(str(exc), unresolvable=True)
        extended = self._pre_filter_extended(pod, st)
        claims = ClaimStore.of(user_claims, extended)
        if claims.empty():
            return None, Status(Code.SKIP)

        manager = self._manager()
        to_allocate = 0
        st.infos = [_ClaimInfo() for _ in range(len(claims))]
        for index, claim in claims.all():
            if claim.allocation is not None:
                if not _can_be_reserved(claim) and not _is_reserved_for_pod(pod, claim):
                    return None, Status.unschedulable(ERR_IN_USE, unresolvable=True)
                try:
                    st.infos[index].available_on = claim.allocation.parsed_node_selector
                except InputError as exc:
                    return None, Status.error(str(exc))
                continue
            to_allocate += 1
            if manager.claim_has_pending_allocation(claim.uid):
                return None, Status.unschedulable(
                    f"resource claim {claim.key} is in the process of being allocated", unresolvable=True
                )
            if claim is extended:
                # Its requests are per node, made in Filter.
                continue
            status = self._validate_requests(claim)
            if status is not None:
                return None, status

        if to_allocate:
            # Read before the state the allocator starts from: answers are kept only while no
            # change came in since.
            st.stamps_version = manager.stamps.version
            if extended is None:
                st.question = (self.features, claims_signature(c for _, c in claims.to_allocate()))
            slice_index, st.sliced_nodes = manager.slice_index()
            try:
                st.allocator = Allocator(
                    self.features,
                    manager.allocated_state(),
                    manager.device_classes(),
                    slice_index,
                    cache=manager.device_cache,
                )
            except AllocationError as exc:
                return None, Status.error(str(exc))
        st.claims = claims
        return None, None

    def _validate_requests(self, claim: ResourceClaim) -> Status | None:
        """Every request names a class that exists (upstream: the pod waits for a class event)."""
        manager = self._manager()
        for request in claim.requests:
            if request.exactly is not None:
                status = self._validate_device_class(manager, request.exactly.device_class_name, request.name)
                if status is not None:
                    return status
            elif request.first_available:
                if not self.enable_prioritized_list:
                    return Status.unschedulable(
                        f"resource claim {claim.key}, request {request.name}: has subrequests, but the "
                        "DRAPrioritizedList feature is disabled",
                        unresolvable=True,
                    )
                for sub in request.first_available:
                    status = self._validate_device_class(
                        manager, sub.device_class_name, f"{request.name}/{sub.name}"
                    )
                    if status is not None:
                        return status
            else:
                return Status.unschedulable(
                    f"resource claim {claim.key}, request {request.name}: unknown request type",
                    unresolvable=True,
                )
        return None

    @staticmethod
    def _validate_device_class(manager: DraManager, class_name: str, request_name: str) -> Status | None:
        if not class_name:
            return Status.error(f"request {request_name}: unsupported request type")
        if manager.device_class(class_name) is None:
            return Status.unschedulable(
                f"request {request_name}: device class {class_name} does not exist", unresolvable=True
            )
        return None

    # -- Filter -----------------------------------------------------------------------------------
    def filter_ignores_node_pods(self, state: CycleState, pod: Pod) -> bool:
        """The verdict on a node depends on claims and slices, never on the node's pods."""
        return True

    def filter_nodes(self, state: CycleState, pod: Pod, table: NodeTable) -> FilterResult:
        return self.filter_candidates(state, pod, table, table.valid)

    def filter_candidates(
        self,
        state: CycleState,
        pod: Pod,
        table: NodeTable,
        candidates: BoolArray,
        walk: FilterWalk | None = None,
    ) -> FilterResult:
        """Filter only the nodes still in the running: each costs an allocation attempt. With the
        cycle's ``walk``, in its order and only until it has found its feasible nodes, as
        upstream evaluates no node after that."""
        st: _State | None = state.get(STATE_KEY)
        if not self.enabled or st is None or st.claims.empty():
            return FilterResult.all_pass(table.capacity)
        snapshot = self._snapshot()
        failures: dict[tuple[str, str], BoolArray] = {}
        judged = candidates & table.valid
        if walk is None:
            slots: list[int] = np.flatnonzero(judged).tolist()
            counts = None
            left = 0
        else:
            order = walk.order
            slots = order[judged[order]].tolist()
            counts = walk.counts
            left = walk.to_find
        for slot in slots:
            name = table.names[slot]
            info = snapshot.node_infos.get(name) if snapshot is not None else None
            node = info.node if info is not None else None
            if node is None:
                continue
            verdict = self._filter_node(st, pod, node)
            if verdict is None:
                if counts is not None and counts[slot]:
                    left -= 1
                    if left <= 0:
                        # The walk ends at this node: the candidates after it are never processed.
                        break
                continue
            mask = failures.get(verdict)
            if mask is None:
                mask = failures[verdict] = np.zeros(table.capacity, dtype=np.bool_)
            mask[slot] = True
        if not failures:
            return FilterResult.all_pass(table.capacity)
        failing = np.zeros(table.capacity, dtype=np.bool_)
        out: list[NodeFailure] = []
        for (reason, detail), mask in failures.items():
            failing |= mask
            out.append(NodeFailure(reason, mask, True, detail))
        return FilterResult(~failing, out)

    def _snapshot(self) -> Snapshot | None:
        return self.handle.snapshot if self.handle is not None else None

    def _filter_node(self, st: _State, pod: Pod, node: Any) -> tuple[str, str] | None:
        """None when the pod's claims can be allocated on the node, else (reason, what about)."""
        extended_claim, rejected = self._filter_extended(st, pod, node)
        if rejected is not None:
            return rejected
        if extended_claim is None and st.claims.no_user_claim():
            return None

        unavailable: list[int] = []
        for index, claim in st.claims.all():
            selector = st.infos[index].available_on
            if selector is not None and not selector.matches(node.name, node.labels):
                unavailable.append(index)
                continue
            if claim.allocation is None:
                continue
            if self._binding_conditions():
                try:
                    ready = self._is_claim_ready_for_binding(claim)
                except _Unschedulable:
                    ready, failed = False, True
                else:
                    failed = False
                # A binding that failed, or did not happen in time, frees the claim's devices for
                # another try (PostFilter deallocates it).
                if failed or (not ready and self._is_claim_timeout(claim)):
                    unavailable.append(index)

        results: list[AllocationResult] | None = None
        if st.allocator is not None:
            claims: list[ResourceClaim] = []
            ext = st.claims.extended_claim()
            for _, claim in st.claims.to_allocate():
                if claim is ext and extended_claim is not None:
                    claim = extended_claim
                claims.append(claim)
            question = st.question
            if extended_claim is not None:
                # The node's variant of the extended-resource claim is one of few (per set of
                # resources nodes leave to DRA): its answers are kept under its own question.
                question = st.extended_questions.get(id(extended_claim))
                if question is None:
                    question = st.extended_questions[id(extended_claim)] = (
                        self.features,
                        claims_signature(claims),
                    )
            results, reason = self._allocate(st, node, claims, question)
            if reason:
                return reason, _claim_list(claims)
            if results is None or len(results) != len(claims):
                return ERR_CANNOT_ALLOCATE, _claim_list(claims)

        if unavailable:
            st.unavailable.update(unavailable)
            return ERR_NOT_AVAILABLE, _claim_list(st.claims.get(i) for i in unavailable)

        if st.allocator is not None and results is not None:
            st.node_allocations[node.name] = _NodeAllocation(results, extended_claim)
        return None

    def _allocate(
        self, st: _State, node: Any, claims: list[ResourceClaim], question: Hashable | None
    ) -> tuple[list[AllocationResult] | None, str]:
        """The allocations of ``claims`` on the node, or why there are none ("" when they just
        do not fit): the node's kept answer to ``question`` when its DRA state did not change
        since."""
        allocator = st.allocator
        assert allocator is not None
        manager = self.manager
        if question is None or manager is None or manager.stamps.version != st.stamps_version:
            return self._allocate_now(st, node, claims)
        stamp = manager.stamps.stamp(node.name)
        kept = manager.node_answers.get(node, stamp, question, allocator.new_share_id)
        if kept is not None:
            return kept
        answer = self._allocate_now(st, node, claims)
        manager.node_answers.put(node, stamp, question, answer)
        return answer

    def _allocate_now(
        self, st: _State, node: Any, claims: list[ResourceClaim]
    ) -> tuple[list[AllocationResult] | None, str]:
        allocator = st.allocator
        assert allocator is not None
        sliced = st.sliced_nodes
        if sliced is not None and node.name not in sliced:
            # No slice names this node: the answer is the same for every such node, unless it
            # allocated (an allocation names its node).
            if st.no_slice_verdict is None:
                results, reason = self._run_allocator(allocator, node, claims)
                st.no_slice_verdict = "" if results is not None else (reason or ERR_CANNOT_ALLOCATE)
                return results, reason
            if st.no_slice_verdict:
                return None, st.no_slice_verdict
        return self._run_allocator(allocator, node, claims)

    @staticmethod
    def _run_allocator(
        allocator: Allocator, node: Any, claims: list[ResourceClaim]
    ) -> tuple[list[AllocationResult] | None, str]:
        try:
            return allocator.allocate(node, claims), ""
        except NodeAllocationFailure as exc:
            # Allocation failed on this node for a reason the user should see.
            return None, str(exc)
        except AllocationError as exc:
            # Something is wrong with a claim or class (a CEL selector failing at runtime): the
            # attempt ends with an error, as upstream, rather than the pod landing elsewhere.
            raise DynamicResourcesError(str(exc)) from exc

    def _filter_extended(
        self, st: _State, pod: Pod, node: Any
    ) -> tuple[ResourceClaim | None, tuple[str, str] | None]:
        """Upstream ``filterExtendedResources``: the node's variant of the extended-resource claim
        (requests for what the node does not advertise itself), or a rejection."""
        claim = st.claims.extended_claim()
        if claim is None:
            return None, None
        if claim.requests:
            # Left over from an earlier attempt: PostFilter deletes it and the pod tries anew.
            return None, (ERR_EXTENDED_CLAIM, claim.key)
        through_dra: dict[str, int] = {}
        allocatable = node.allocatable
        for resource, want in st.extended_requests.items():
            if resource in allocatable and allocatable[resource] > 0:
                # The node's device plugin serves it: NodeResourcesFit counts it.
                continue
            if resource in st.class_of:
                through_dra[resource] = want
            else:
                return None, (ERR_CANNOT_FIT, resource)
        if st.claims.no_user_claim() and not through_dra:
            return None, None
        if claim.allocation is not None:
            return None, None
        key = frozenset(through_dra.items())
        variant = st.extended_variants.get(key)
        if variant is None:
            raw = copy.deepcopy(dict(claim.raw))
            raw["spec"] = {"devices": {"requests": device_requests(pod, through_dra, st.class_of)}}
            variant = st.extended_variants[key] = _in_memory_claim(raw)
        return variant, None

    # -- PostFilter -------------------------------------------------------------------------------
    def post_filter(self, state: CycleState, pod: Pod, diagnosis: Diagnosis) -> tuple[str | None, Status]:
        """Deallocate a claim that kept the pod off the nodes, when only this pod (or no pod) uses
        it: the next attempt allocates it anew, maybe where the pod fits."""
        if not self.enabled:
            return None, Status.unschedulable("plugin disabled")
        st: _State | None = state.get(STATE_KEY)
        if st is None or st.claims.empty():
            return None, Status.unschedulable("no new claims to deallocate")
        extended = st.claims.extended_claim()
        for index in sorted(st.unavailable):
            claim = st.claims.get(index)
            if claim is extended:
                if extended.name != SPECIAL_CLAIM_IN_MEM_NAME:
                    break
                continue
            reserved = claim.reserved_for
            if not reserved or (len(reserved) == 1 and reserved[0].uid == pod.uid):
                try:
                    self._deallocate(claim)
                except StoreError as exc:
                    return None, Status.error(str(exc))
                return None, Status.unschedulable("deallocation of ResourceClaim completed")
        if extended is not None and extended.name != SPECIAL_CLAIM_IN_MEM_NAME:
            try:
                self._delete_claim(extended)
            except StoreError as exc:
                return None, Status.error(str(exc))
            return None, Status.unschedulable("deletion of ResourceClaim completed")
        return None, Status.unschedulable("still not schedulable")

    def _writer(self) -> ResourceClaimWriter:
        writer = self.handle.ports.resource_claims if self.handle is not None else None
        if writer is None:
            raise StoreError("no ResourceClaim writer: this scheduler cannot write ResourceClaims")
        return writer

    def _deallocate(self, claim: ResourceClaim) -> None:
        raw = copy.deepcopy(dict(claim.raw))
        status = dict(raw.get("status") or {})
        for key in ("reservedFor", "allocation", "devices"):
            status.pop(key, None)
        raw["status"] = status
        self._writer().update_resource_claim_status(raw)

    def _delete_claim(self, claim: ResourceClaim) -> None:
        """Drop the finalizer (conflicts read the claim again), then delete the claim."""
        writer = self._writer()
        raw: Obj = claim.raw
        for attempt in range(UPDATE_TRIES):
            if attempt:
                fresh = writer.get_resource_claim(claim.namespace, claim.name)
                if fresh is None:
                    return
                raw = fresh
            meta = dict(raw.get("metadata") or {})
            finalizers = [f for f in meta.get("finalizers") or [] if f != FINALIZER]
            meta["finalizers"] = finalizers
            try:
                writer.update_resource_claim({**raw, "metadata": meta})
                break
            except Conflict:
                if attempt == UPDATE_TRIES - 1:
                    raise
        writer.delete_resource_claim(claim.namespace, claim.name, claim.uid)

    # -- Reserve / Unreserve ----------------------------------------------------------------------
    def reserve(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        if not self.enabled:
            return None
        st: _State | None = state.get(STATE_KEY)
        if st is None or st.claims.empty():
            return None
        pending = [(i, c) for i, c in st.claims.to_allocate()]
        if not pending or st.allocator is None:
            # Allocated claims are reserved for real at PreBind; a conflict then means another pod
            # was faster.
            return None
        extended = st.claims.extended_claim()
        user_pending = any(c is not extended for _, c in pending)
        allocations = st.node_allocations.get(node_name)
        if allocations is None or not allocations.results:
            if not user_pending:
                # Only the extended-resource claim, and the node's device plugin serves it all.
                return None
            return Status.error("claim allocation not found for node")
        if len(allocations.results) != len(pending):
            return Status.error(
                f"internal error, have {len(allocations.results)} allocations, {len(pending)} claims to "
                f"allocate, want {len(pending)} claims"
            )
        manager = self._manager()
        for (index, claim), allocation in zip(pending, allocations.results, strict=True):
            st.infos[index].allocation = allocation
            if claim is extended and allocations.extended_claim is not None:
                claim = allocations.extended_claim
            raw = copy.deepcopy(dict(claim.raw))
            meta = dict(raw.get("metadata") or {})
            finalizers = list(meta.get("finalizers") or [])
            if FINALIZER not in finalizers:
                finalizers.append(FINALIZER)
            meta["finalizers"] = finalizers
            raw["metadata"] = meta
            raw["status"] = {**(raw.get("status") or {}), "allocation": allocation.to_dict()}
            manager.signal_claim_pending_allocation(claim.uid, _in_memory_claim(raw))
        return None

    def unreserve(self, state: CycleState, pod: Pod, node_name: str) -> None:
        if not self.enabled or self.manager is None:
            return
        st: _State | None = state.get(STATE_KEY)
        if st is None or st.claims.empty():
            return
        manager = self.manager
        for _, claim in st.claims.all_user_claims():
            if manager.remove_claim_pending_allocation(claim.uid):
                manager.assumed_claim_restore(claim.namespace, claim.name)
            if claim.allocation is not None and _is_reserved_for_pod(pod, claim):
                # On failure, tried again when the pod is scheduled again.
                with contextlib.suppress(StoreError):
                    self._remove_reservation(claim, pod)
        extended = st.claims.extended_claim()
        if extended is None:
            return
        if manager.remove_claim_pending_allocation(st.claims.initial_extended_claim_uid()):
            manager.assumed_claim_restore(extended.namespace, extended.name)
        if extended.name == SPECIAL_CLAIM_IN_MEM_NAME:
            return
        with contextlib.suppress(StoreError):
            self._delete_claim(extended)

    def _remove_reservation(self, claim: ResourceClaim, pod: Pod) -> None:
        """Drop the pod from the claim's ``reservedFor`` (the claim it was, not one recreated
        under its name)."""
        writer = self._writer()
        for attempt in range(UPDATE_TRIES):
            raw = writer.get_resource_claim(claim.namespace, claim.name)
            if raw is None or str((raw.get("metadata") or {}).get("uid") or "") != claim.uid:
                return
            status = dict(raw.get("status") or {})
            reserved = [r for r in status.get("reservedFor") or [] if (r or {}).get("uid") != pod.uid]
            if len(reserved) == len(status.get("reservedFor") or []):
                return
            status["reservedFor"] = reserved
            try:
                writer.update_resource_claim_status({**raw, "status": status})
                return
            except Conflict:
                if attempt == UPDATE_TRIES - 1:
                    raise

    # -- PreBind ----------------------------------------------------------------------------------
    def pre_bind_pre_flight(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        """Upstream ``PreBindPreFlight``: Skip when the plugin is off or the pod has no claims."""
        if not self.enabled:
            return Status(Code.SKIP)
        st: _State | None = state.get(STATE_KEY)
        return Status(Code.SKIP) if st is None or st.claims.empty() else None

    def pre_bind(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        if not self.enabled:
            return None
        st: _State | None = state.get(STATE_KEY)
        if st is None or st.claims.empty():
            return None
        for index, claim in st.claims.all():
            if _is_reserved_for_pod(pod, claim):
                continue
            try:
                written = self._bind_claim(st, index, pod, node_name)
            except (StoreError, DynamicResourcesError) as exc:
                return Status.error(str(exc))
            st.claims.set(index, written)
        if not self._binding_conditions() or not _has_binding_conditions(st):
            return None
        return self._wait_for_binding_conditions(st, pod, node_name)

    def _bind_claim(self, st: _State, index: int, pod: Pod, node_name: str) -> ResourceClaim:
        """Upstream ``bindClaim``: record the allocation Reserve chose (with the finalizer) and the
        pod's reservation; returns the claim as written."""
        manager = self._manager()
        writer = self._writer()
        claim = st.claims.get(index)
        allocation = st.infos[index].allocation
        is_extended = claim is st.claims.extended_claim()
        if is_extended and allocation is None and not claim.requests:
            # The node's device plugin serves all the pod's extended resources.
            return claim
        pending_uid = claim.uid
        written: ResourceClaim | None = None
        try:
            if is_extended and claim.name == SPECIAL_CLAIM_IN_MEM_NAME:
                node_allocation = st.node_allocations.get(node_name)
                if node_allocation is None or node_allocation.extended_claim is None:
                    raise DynamicResourcesError(f"extended resource claim not found for node {node_name}")
                raw = copy.deepcopy(dict(node_allocation.extended_claim.raw))
                meta = dict(raw.get("metadata") or {})
                meta.pop("name", None)
                meta.pop("uid", None)
                raw["metadata"] = meta
                raw.pop("status", None)
                try:
                    created = writer.create_resource_claim(raw)
                except StoreError as exc:
                    raise DynamicResourcesError(
                        f"create claim for extended resources {claim.namespace}/{claim.name}: {exc}"
                    ) from exc
                claim = ResourceClaim.from_dict(created)
                st.claims.update_extended_claim(claim)
            written = self._write_claim(writer, claim, allocation, pod)
        finally:
            if allocation is not None:
                if written is not None:
                    self._assume_written(manager, written, wait=is_extended)
                manager.remove_claim_pending_allocation(pending_uid)
        if is_extended:
            self._record_extended_claim(writer, pod, written)
        return written

    def _write_claim(
        self, writer: ResourceClaimWriter, claim: ResourceClaim, allocation: AllocationResult | None, pod: Pod
    ) -> ResourceClaim:
        raw: Obj = claim.raw
        key = claim.key
        for attempt in range(UPDATE_TRIES):
            if attempt:
                fresh = writer.get_resource_claim(claim.namespace, claim.name)
                if fresh is None:
                    gone = f'resourceclaims.resource.k8s.io "{claim.name}" not found'
                    raise NotFound(f"get updated claim {key} after conflict: {gone}")
                raw = fresh
            obj = copy.deepcopy(dict(raw))
            meta = dict(obj.get("metadata") or {})
            if meta.get("deletionTimestamp"):
                raise DynamicResourcesError(f"claim {key} got deleted in the meantime")
            status = dict(obj.get("status") or {})
            try:
                if allocation is not None:
                    if status.get("allocation") is not None:
                        raise DynamicResourcesError(f"claim {key} got allocated elsewhere in the meantime")
                    finalizers = list(meta.get("finalizers") or [])
                    if FINALIZER not in finalizers:
                        meta["finalizers"] = [*finalizers, FINALIZER]
                        try:
                            obj = dict(writer.update_resource_claim({**obj, "metadata": meta}))
                        except StoreError as exc:
                            raise type(exc)(f"add finalizer to claim {key}: {exc}") from exc
                        status = dict(obj.get("status") or {})
                    status["allocation"] = allocation.to_dict()
                reserved = list(status.get("reservedFor") or [])
                reserved.append({"resource": "pods", "name": pod.name, "uid": pod.uid})
                status["reservedFor"] = reserved
                if self._binding_conditions() and not status["allocation"].get("allocationTimestamp"):
                    status["allocation"] = {**status["allocation"], "allocationTimestamp": self._timestamp()}
                try:
                    updated = writer.update_resource_claim_status({**obj, "status": status})
                except StoreError as exc:
                    what = (
                        "add allocation and reservation to"
                        if allocation is not None
                        else "add reservation to"
                    )
                    raise type(exc)(f"{what} claim {key}: {exc}") from exc
                return ResourceClaim.from_dict(updated)
            except Conflict:
                if attempt == UPDATE_TRIES - 1:
                    raise
        raise AssertionError("unreachable")

    def _assume_written(self, manager: DraManager, claim: ResourceClaim, *, wait: bool) -> None:
        """Keep the written claim in the assume cache until the informer delivers it. A claim the
        scheduler just created may not have reached the informer yet: wait for it then."""
        if wait and self.handle is not None and manager.find_claim(claim.namespace, claim.name) is None:
            self.handle.wait_for_cluster(
                lambda: manager.find_claim(claim.namespace, claim.name) is not None,
                ASSUME_EXTENDED_RESOURCE_TIMEOUT_SECONDS,
            )
        # Failing: the informer has it already, or it is gone; nothing to remember then.
        with contextlib.suppress(AssumeCacheError):
            manager.assume_claim_after_api_call(claim)

    def _record_extended_claim(self, writer: ResourceClaimWriter, pod: Pod, claim: ResourceClaim) -> None:
        names = [r.name for r in claim.requests]
        status = {"requestMappings": request_mappings(pod, names), "resourceClaimName": claim.name}
        try:
            writer.set_pod_extended_resource_claim_status(pod.namespace, pod.name, status)
        except StoreError as exc:
            raise DynamicResourcesError(
                f"update pod {pod.namespace}/{pod.name} ExtendedResourceClaimStatus: {exc}"
            ) from exc

    def _timestamp(self) -> str:
        return format_timestamp(self.handle.now() if self.handle is not None else 0.0)

    # -- binding conditions -----------------------------------------------------------------------
    def _is_claim_ready_for_binding(self, claim: ResourceClaim) -> bool:
        """All binding conditions of the claim's devices are true; raises :class:`_Unschedulable`
        when a binding failure condition is."""
        if claim.allocation is None:
            return False
        statuses = claim.devices_status
        for result in claim.allocation.results:
            if not result.binding_conditions:
                continue
            device = next(
                (
                    d
                    for d in statuses
                    if d.get("driver") == result.driver
                    and d.get("pool") == result.pool
                    and d.get("device") == result.device
                ),
                None,
            )
            if device is None:
                return False
            conditions = {
                str(c.get("type")): c for c in device.get("conditions") or [] if isinstance(c, Mapping)
            }
            for failure in result.binding_failure_conditions:
                c = conditions.get(failure)
                if c is not None and c.get("status") == "True":
                    raise _Unschedulable(
                        f"claim {claim.name} binding failed: reason={c.get('reason', '')}, "
                        f'message="{c.get("message", "")}"'
                    )
            for wanted in result.binding_conditions:
                c = conditions.get(wanted)
                if c is None or c.get("status") != "True":
                    return False
        return True

    def _is_claim_timeout(self, claim: ResourceClaim) -> bool:
        if not self._binding_conditions() or claim.allocation is None:
            return False
        stamp = claim.allocation.allocation_timestamp
        if not stamp or self.handle is None:
            return False
        try:
            parsed = datetime.datetime.fromisoformat(stamp)
        except ValueError:
            return False
        if parsed.tzinfo is None:
            parsed = parsed.replace(tzinfo=datetime.UTC)
        allocated_at = parsed.timestamp()
        return any(r.binding_conditions for r in claim.allocation.results) and (
            allocated_at + self.binding_timeout < self.handle.now()
        )

    def _wait_for_binding_conditions(self, st: _State, pod: Pod, node_name: str) -> Status | None:
        handle = self.handle
        assert handle is not None
        manager = self._manager()
        handle.ports.events.record(
            pod.raw,
            "Normal",
            "BindingConditionsPending",
            "Scheduling",
            f"waiting for binding conditions for device on node {node_name}",
            "default-scheduler",
        )
        failure: list[str] = []

        def ready() -> bool:
            for index, claim in st.claims.all():
                latest = manager.find_claim(claim.namespace, claim.name)
                if latest is None:
                    failure.append(f'could not find ResourceClaim "{claim.key}"')
                    return True
                st.claims.set(index, latest)
                try:
                    ok = self._is_claim_ready_for_binding(latest)
                except _Unschedulable as exc:
                    failure.append(str(exc))
                    return True
                if not ok:
                    if self._is_claim_timeout(latest):
                        failure.append(f"claim {latest.name} binding timeout")
                        return True
                    return False
            return True

        if not handle.wait_for_cluster(ready, self.binding_timeout):
            return Status.error("device binding timeout")
        if failure:
            return Status.error(failure[0])
        return None


def _pod_claim_keys(pod: Pod) -> list[str]:
    """The claims a pod names (those generated for it so far), as ``namespace/name``."""
    keys: list[str] = []
    for pod_claim in pod.resource_claims:
        name = pod_claim_ref(pod, pod_claim).name
        if name is not None:
            keys.append(f"{pod.namespace}/{name}")
    return keys


def _claim_event_keys(old: Any, new: Any) -> list[str] | None:
    """The pods ``is_schedulable_after_claim_change`` may answer Queue for: those naming the
    claim, unless the claim was deallocated (its devices may serve any pod) or the event is not
    about claims."""
    if not isinstance(new, ResourceClaim) or (old is not None and not isinstance(old, ResourceClaim)):
        return None
    if old is not None and old.allocation is not None and new.allocation is None:
        return None
    return [f"{new.namespace}/{new.name}"]


def _in_memory_claim(raw: Mapping[str, Any]) -> ResourceClaim:
    return ResourceClaim.from_dict(raw)


def _has_binding_conditions(st: _State) -> bool:
    for _, claim in st.claims.all():
        if claim.allocation is not None and any(r.binding_conditions for r in claim.allocation.results):
            return True
    return False


def _claim_list(claims: Any) -> str:
    """What explain names next to a reason: the claims it is about (``resourceclaim "ns/name"``);
    the extended-resource claim, before it exists, stands for the pod's extended resources."""
    keys = [f'"{c.key}"' if c.name != SPECIAL_CLAIM_IN_MEM_NAME else "extended resources" for c in claims]
    if not keys:
        return ""
    return ("resourceclaims " if len(keys) > 1 else "resourceclaim ") + ", ".join(keys)
