"""The volume binder (upstream ``volumebinding/binder.go``): which of a pod's claims are bound,
which PersistentVolume each unbound WaitForFirstConsumer claim would take on each node, whether the
rest can be provisioned there, and — once a node is chosen — assuming those decisions in the PV and
claim caches, writing them, and waiting for the PV controller to finish the binding.

:meth:`VolumeBinder.find_pod_volumes` answers upstream's ``FindPodVolumes`` for every node of the
NodeTable at once: the node-independent checks run once per volume, node affinities and topologies
are NumPy masks (a local volume pinned by one ``In`` requirement is an index lookup, not a pass over
all nodes), and a volume taken by one claim on a node is excluded for the pod's next claim on that
node only. :class:`VolumeOutcome` holds the answer; ``pod_volumes(slot)`` and ``reasons(slot)``
give any one node's ``PodVolumes`` and reasons, as the per-node upstream call would.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from kubesched.api.objects import Pod
from kubesched.api.storage import (
    NO_PROVISIONER,
    PV_AVAILABLE,
    SELECTED_NODE_ANNOTATION,
    CSIDriver,
    CSINode,
    CSIStorageCapacity,
    PersistentVolume,
    PersistentVolumeClaim,
    StorageClass,
)
from kubesched.cache.node_table import NodeTable
from kubesched.framework.types import BoolArray, IntArray
from kubesched.plugins.helper.assume_cache import AssumeCacheError, NotFoundError
from kubesched.plugins.volumebinding.assume_cache import PVAssumeCache, PVCAssumeCache, claim_key
from kubesched.plugins.volumebinding.volume_helpers import (
    check_access_modes,
    claim_with_selected_node,
    controlled_by,
    get_bind_volume_to_claim,
    is_delay_binding_mode,
    is_pvc_fully_bound,
    is_volume_bound_to_claim,
    label_selector_mask,
    migrated_plugin,
    node_affinity_mask,
    node_affinity_matches,
    plugin_migrated_on_node,
    requests_storage,
    storage_class_spec_name,
    topology_terms_mask,
    translated_node_affinity,
    volume_attributes_class,
    volume_mode_mismatch,
)
from kubesched.store.base import StoreError
from kubesched.store.informers import InformerFactory
from kubesched.store.ports import VolumeWriter

ERR_REASON_BIND_CONFLICT = "node(s) didn't find available persistent volumes to bind"
ERR_REASON_NODE_CONFLICT = "node(s) had volume node affinity conflict"
ERR_REASON_NOT_ENOUGH_SPACE = "node(s) did not have enough free storage"
ERR_REASON_PV_NOT_EXIST = "node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s)"
#: The order upstream appends a node's reasons in.
REASONS = (
    ERR_REASON_NODE_CONFLICT,
    ERR_REASON_BIND_CONFLICT,
    ERR_REASON_NOT_ENOUGH_SPACE,
    ERR_REASON_PV_NOT_EXIST,
)

CLAIM_SOURCES = frozenset({"persistentVolumeClaim", "ephemeral"})

#: ``wait(condition, timeout)``: True once ``condition()`` holds, False when ``timeout`` passed first.
Wait = Callable[[Callable[[], bool], float], bool]


class BinderError(Exception):
    """Binding cannot go on: an error (not a node that does not fit), reported as the plugin's."""


@dataclass(slots=True)
class StorageResource:
    requested: int
    capacity: int


@dataclass(slots=True)
class BindingInfo:
    """A claim and the PV chosen for it."""

    pvc: PersistentVolumeClaim
    pv: PersistentVolume

    @property
    def storage_class_name(self) -> str:
        return storage_class_spec_name(self.pv)

    @property
    def storage_resource(self) -> StorageResource:
        return StorageResource(self.pvc.request, self.pv.capacity)


@dataclass(slots=True)
class DynamicProvision:
    """A claim to provision, and the CSIStorageCapacity that showed room for it (None when the
    driver does not report capacity)."""

    pvc: PersistentVolumeClaim
    node_capacity: CSIStorageCapacity | None = None


@dataclass(slots=True)
class PodVolumes:
    """What binding a pod's volumes on one node takes (None: nothing of that kind)."""

    static_bindings: list[BindingInfo] | None = None
    dynamic_provisions: list[DynamicProvision] | None = None


@dataclass(slots=True)
class PodVolumeClaims:
    bound_claims: list[PersistentVolumeClaim] = field(default_factory=list)
    #: Unbound claims of WaitForFirstConsumer classes: the scheduler binds or provisions them.
    unbound_claims_delay_binding: list[PersistentVolumeClaim] = field(default_factory=list)
    #: Unbound claims the PV controller should have bound already (pre-bound ones included).
    unbound_claims_immediate: list[PersistentVolumeClaim] = field(default_factory=list)
    #: Per class of the delayed claims, the PVs of that class when the cycle started.
    unbound_volumes_delay_binding: dict[str, list[PersistentVolume]] = field(default_factory=dict)


def pod_key(pod: Pod) -> str:
    return f"{pod.namespace}/{pod.name}"


def volume_for_pod_error(pod: Pod, claim: PersistentVolumeClaim) -> str | None:
    """Upstream ``ephemeral.VolumeIsForPod``: an ephemeral volume's claim must be the pod's own."""
    if pod.namespace != claim.namespace:
        return (
            f"PVC {claim.namespace}/{claim.name} was not created for pod {pod.namespace}/{pod.name} "
            "(namespace mismatch)"
        )
    if not controlled_by(claim, pod.uid):
        return (
            f"PVC {claim.namespace}/{claim.name} was not created for pod {pod.namespace}/{pod.name} "
            "(pod is not owner)"
        )
    return None


def _resource_version(obj: PersistentVolume | PersistentVolumeClaim) -> int:
    """Upstream ``CompareResourceVersion`` reads an unparsable version as 0."""
    try:
        return int(obj.resource_version or 0)
    except ValueError:
        return 0


def volume_limit(capacity: CSIStorageCapacity) -> int | None:
    """The largest volume a CSIStorageCapacity allows: ``maximumVolumeSize`` when reported, else
    ``capacity``."""
    return capacity.maximum_volume_size if capacity.maximum_volume_size is not None else capacity.capacity


class _Nodes:
    """Per-call node lookups over one table: slot index arrays of label values (for volumes pinned
    by one ``In`` requirement), CSINodes by slot."""

    def __init__(self, table: NodeTable, informers: InformerFactory, candidates: BoolArray) -> None:
        self.table = table
        self.informers = informers
        self.candidates = candidates
        self._sorted: dict[str, tuple[IntArray, Any]] = {}
        self._migrated: dict[str, BoolArray] = {}

    def slots_with(self, key: str, values: Sequence[str]) -> IntArray:
        """The slots whose label ``key`` is one of ``values``."""
        column = self.table.labels.get(key)
        if column is None:
            return np.zeros(0, dtype=np.int64)
        hit = self._sorted.get(key)
        if hit is None:
            order = np.argsort(column.codes, kind="stable").astype(np.int64)
            hit = (order, column.codes[order])
            self._sorted[key] = hit
        order, codes = hit
        parts = []
        for value in values:
            code = column.vocab.get(value)
            if code is None:
                continue
            lo, hi = np.searchsorted(codes, [code, code + 1])
            parts.append(order[lo:hi])
        if not parts:
            return np.zeros(0, dtype=np.int64)
        return parts[0] if len(parts) == 1 else np.unique(np.concatenate(parts))

    def migrated(self, plugin: str) -> BoolArray:
        """Slots whose CSINode lists ``plugin`` as migrated to CSI."""
        mask = self._migrated.get(plugin)
        if mask is None:
            mask = np.zeros(self.table.capacity, dtype=np.bool_)
            slot_of = self.table.slot_of
            for csi_node in self.informers.informer("CSINode").list():
                slot = slot_of.get(csi_node.name)
                if slot is not None and plugin in csi_node.migrated_plugins:
                    mask[slot] = True
            self._migrated[plugin] = mask
        return mask

    def affinity_mask(self, pv: PersistentVolume) -> BoolArray:
        """Where ``pv``'s node affinity holds as written (how volumes are matched to claims)."""
        return node_affinity_mask(self.table, pv.node_affinity)

    def translated_affinity_mask(self, pv: PersistentVolume) -> BoolArray | None:
        """Where a bound ``pv``'s node affinity holds, read as CSI on nodes that migrated its
        plugin (upstream translates only the volumes of bound claims); None when that is every
        node."""
        affinity = pv.node_affinity
        plugin = migrated_plugin(pv)
        translated = translated_node_affinity(pv) if plugin is not None else affinity
        if affinity is None and translated is None:
            return None
        mask = node_affinity_mask(self.table, affinity)
        if plugin is not None and translated != affinity:
            mask = np.where(self.migrated(plugin), node_affinity_mask(self.table, translated), mask)
        return mask

    def affinity_slots(self, pv: PersistentVolume) -> IntArray | None:
        """The slots a local volume (one term, one ``In`` requirement) is reachable from; None for
        any other affinity."""
        affinity = pv.node_affinity
        if affinity is None or len(affinity.terms) != 1:
            return None
        term = affinity.terms[0]
        if len(term.match_expressions) != 1:
            return None
        req = term.match_expressions[0]
        if req.operator != "In":
            return None
        return self.slots_with(req.key, req.values)


class _Culprits(dict[str, IntArray]):
    """Per reason, per slot, the index of the claim it is about (-1: the reason does not apply);
    a reason's array is made when first asked for (most pods fit everywhere)."""

    def __init__(self, capacity: int) -> None:
        super().__init__()
        self.capacity = capacity

    def __missing__(self, reason: str) -> IntArray:
        array = self[reason] = np.full(self.capacity, -1, dtype=np.int64)
        return array


@dataclass(slots=True)
class _Match:
    """One WaitForFirstConsumer claim's candidate volumes and, per slot, the one it takes (-1:
    none)."""

    claim: PersistentVolumeClaim
    volumes: list[PersistentVolume]
    chosen: IntArray


@dataclass(slots=True)
class _Provision:
    """A claim that may need provisioning: where it is needed, and per slot the CSIStorageCapacity
    that has room (-1: none needed or none reported)."""

    claim: PersistentVolumeClaim
    needed: BoolArray
    capacities: list[CSIStorageCapacity] = field(default_factory=list)
    capacity_of: IntArray | None = None


@dataclass(slots=True)
class VolumeOutcome:
    """Upstream ``FindPodVolumes`` for every slot of one table."""

    slot_of: Mapping[str, int]
    #: Per reason that applies anywhere, per slot, the index of the claim it is about (-1: the
    #: reason does not apply there).
    culprits: dict[str, IntArray]
    claims: list[PersistentVolumeClaim]
    #: Slots where a claim's selected node is another node: nothing is matched or provisioned.
    fast_failed: BoolArray
    matches: list[_Match]
    provisions: list[_Provision]
    #: Slots where provisioning the claims that need it is possible.
    provisioning_ok: BoolArray

    def failed(self) -> BoolArray:
        out = np.zeros(len(self.fast_failed), dtype=np.bool_)
        for culprit in self.culprits.values():
            np.logical_or(out, culprit >= 0, out=out)
        return out

    def reasons(self, slot: int) -> list[str]:
        return [r for r in REASONS if r in self.culprits and self.culprits[r][slot] >= 0]

    def pod_volumes(self, slot: int) -> PodVolumes:
        """The node's ``PodVolumes`` as upstream's per-node ``FindPodVolumes`` returns them."""
        if self.fast_failed[slot]:
            return PodVolumes()
        static = [
            BindingInfo(m.claim, m.volumes[int(m.chosen[slot])]) for m in self.matches if m.chosen[slot] >= 0
        ]
        dynamic: list[DynamicProvision] = []
        if self.provisioning_ok[slot]:
            for p in self.provisions:
                if not p.needed[slot]:
                    continue
                index = int(p.capacity_of[slot]) if p.capacity_of is not None else -1
                dynamic.append(DynamicProvision(p.claim, p.capacities[index] if index >= 0 else None))
        return PodVolumes(static or None, dynamic or None)


class VolumeBinder:
    def __init__(
        self,
        informers: InformerFactory,
        writer: VolumeWriter | None,
        pv_cache: PVAssumeCache,
        pvc_cache: PVCAssumeCache,
        bind_timeout: float,
        wait: Wait,
    ) -> None:
        self.informers = informers
        self.writer = writer
        self.pv_cache = pv_cache
        self.pvc_cache = pvc_cache
        self.bind_timeout = bind_timeout
        self.wait = wait

    # -- listers ----------------------------------------------------------------------------------
    def storage_class(self, name: str) -> StorageClass | None:
        view: StorageClass | None = self.informers.informer("StorageClass").get(None, name)
        return view

    def csi_node(self, name: str) -> CSINode | None:
        view: CSINode | None = self.informers.informer("CSINode").get(None, name)
        return view

    # -- claims -----------------------------------------------------------------------------------
    def _claim(self, pod: Pod, name: str, ephemeral: bool) -> PersistentVolumeClaim:
        key = f"{pod.namespace}/{name}"
        try:
            claim = self.pvc_cache.get_pvc(key)
        except AssumeCacheError as exc:
            raise BinderError(f'error getting PVC "{key}": {exc}') from None
        if ephemeral:
            problem = volume_for_pod_error(pod, claim)
            if problem is not None:
                raise BinderError(problem)
        return claim

    def get_pod_volume_claims(self, pod: Pod) -> PodVolumeClaims:
        """The pod's claims: bound, unbound WaitForFirstConsumer, unbound immediate, and the PVs
        of the delayed claims' classes (upstream ``GetPodVolumeClaims``)."""
        out = PodVolumeClaims()
        for volume in pod.volumes:
            if volume.source_kind not in CLAIM_SOURCES:
                continue
            claim = self._claim(pod, volume.claim_name, volume.ephemeral)
            if is_pvc_fully_bound(claim):
                out.bound_claims.append(claim)
            elif is_delay_binding_mode(claim, self.storage_class(claim.class_name)) and not claim.volume_name:
                out.unbound_claims_delay_binding.append(claim)
            else:
                out.unbound_claims_immediate.append(claim)
        for claim in out.unbound_claims_delay_binding:
            out.unbound_volumes_delay_binding[claim.class_name] = self.pv_cache.list_pvs(claim.class_name)
        return out

    def are_pod_volumes_bound(self, pod: Pod) -> bool:
        for volume in pod.volumes:
            if volume.source_kind not in CLAIM_SOURCES:
                continue
            try:
                claim = self._claim(pod, volume.claim_name, volume.ephemeral)
            except BinderError:
                return False
            if not is_pvc_fully_bound(claim):
                return False
        return True

    # -- FindPodVolumes over the table --------------------------------------------------------------
    def find_pod_volumes(
        self, pod: Pod, claims: PodVolumeClaims, table: NodeTable, candidates: BoolArray | None = None
    ) -> VolumeOutcome:
        """Upstream ``FindPodVolumes`` for every slot of ``table`` (or ``candidates`` of them; the
        other slots get no answer). Raises :class:`BinderError` where upstream returns an error."""
        capacity = table.capacity
        nodes = _Nodes(table, self.informers, table.valid if candidates is None else candidates)
        all_claims: list[PersistentVolumeClaim] = []
        culprits = _Culprits(capacity)

        indexes: dict[int, int] = {}

        def claim_index(claim: PersistentVolumeClaim) -> int:
            index = indexes.get(id(claim))
            if index is None:
                index = indexes[id(claim)] = len(all_claims)
                all_claims.append(claim)
            return index

        self._check_bound_claims(claims.bound_claims, nodes, culprits, claim_index)
        out = VolumeOutcome(
            slot_of=table.slot_of,
            culprits=culprits,
            claims=all_claims,
            fast_failed=np.zeros(capacity, dtype=np.bool_),
            matches=[],
            provisions=[],
            provisioning_ok=np.zeros(capacity, dtype=np.bool_),
        )
        delayed = claims.unbound_claims_delay_binding
        if not delayed:
            return out
        live = nodes.candidates.copy()
        bind_conflict = culprits[ERR_REASON_BIND_CONFLICT]
        selected: list[PersistentVolumeClaim] = []
        to_match: list[PersistentVolumeClaim] = []
        for claim in delayed:
            node = claim.annotations.get(SELECTED_NODE_ANNOTATION)
            if node is None:
                to_match.append(claim)
                continue
            selected.append(claim)
            others = live.copy()
            slot = table.slot_of.get(node)
            if slot is not None:
                others[slot] = False
            # Upstream's fast path: a node the claim was not provisioned for is out at once.
            bind_conflict[others & (bind_conflict < 0)] = claim_index(claim)
            out.fast_failed |= others
            live &= ~others
        if to_match:
            used: dict[str, BoolArray] = {}
            for claim in sorted(to_match, key=lambda c: c.request):
                volumes = claims.unbound_volumes_delay_binding.get(claim.class_name, [])
                chosen = self._find_matching_volume(claim, volumes, nodes, live, used)
                out.matches.append(_Match(claim, volumes, chosen))
        # A claim without a volume on a node goes to provisioning there, which then decides the
        # node's verdict (upstream overwrites the matching verdict with the provisioning one).
        provisions = [_Provision(c, live.copy()) for c in selected]
        provisions += [_Provision(m.claim, live & (m.chosen < 0)) for m in out.matches]
        provisions = [p for p in provisions if p.needed.any()]
        out.provisions = provisions
        needs_provisioning = np.zeros(capacity, dtype=np.bool_)
        for p in provisions:
            needs_provisioning |= p.needed
        if provisions:
            self._check_volume_provisions(provisions, nodes, culprits, claim_index)
            decided = np.zeros(capacity, dtype=np.bool_)
            for reason in (ERR_REASON_BIND_CONFLICT, ERR_REASON_NOT_ENOUGH_SPACE):
                if reason in culprits:
                    decided |= needs_provisioning & (culprits[reason] >= 0)
            out.provisioning_ok = needs_provisioning & ~decided
        return out

    def _check_bound_claims(
        self,
        bound: list[PersistentVolumeClaim],
        nodes: _Nodes,
        culprits: dict[str, IntArray],
        claim_index: Callable[[PersistentVolumeClaim], int],
    ) -> None:
        """Upstream ``checkBoundClaims``: a node fails at its first bound claim whose PV's affinity
        it does not satisfy; a claim whose PV is missing fails every node still in the running."""
        alive = nodes.candidates.copy()
        for claim in bound:
            try:
                pv = self.pv_cache.get_pv(claim.volume_name)
            except NotFoundError:
                culprits[ERR_REASON_PV_NOT_EXIST][alive] = claim_index(claim)
                return
            mask = nodes.translated_affinity_mask(pv)
            if mask is None:
                continue  # reachable from every node
            conflict = alive & ~mask
            if conflict.any():
                culprits[ERR_REASON_NODE_CONFLICT][conflict] = claim_index(claim)
                alive &= mask

    def _find_matching_volume(
        self,
        claim: PersistentVolumeClaim,
        volumes: list[PersistentVolume],
        nodes: _Nodes,
        live: BoolArray,
        used: dict[str, BoolArray],
    ) -> IntArray:
        """Upstream ``FindMatchingVolume`` (scheduler path) on every live slot: a volume pre-bound
        to the claim decides alone (taken if the node satisfies its affinity, else nothing);
        otherwise the smallest available volume of the claim's class that fits the claim, its
        selector and access modes and the node, volumes taken by earlier claims on that node
        excluded. Returns the chosen index into ``volumes`` per slot (-1: none)."""
        capacity = nodes.table.capacity
        chosen = np.full(capacity, -1, dtype=np.int64)
        prebound: list[int] = []
        free: list[int] = []
        request = claim.request
        claim_vac = volume_attributes_class(claim)
        selector = claim.selector
        wanted_class = claim.class_name
        for i, pv in enumerate(volumes):
            bound_here = False
            if pv.claim_ref is not None:
                if not is_volume_bound_to_claim(pv, claim):
                    continue
                bound_here = True
            if pv.capacity < request or volume_mode_mismatch(claim, pv):
                continue
            if volume_attributes_class(pv) != claim_vac or pv.deletion_timestamp:
                continue
            if bound_here:
                prebound.append(i)
                continue
            if pv.phase != PV_AVAILABLE:
                continue
            if selector is not None and not selector.matches(pv.labels):
                continue
            if pv.storage_class != wanted_class or not check_access_modes(claim, pv):
                continue
            free.append(i)
        undecided = live.copy()
        for i in prebound:
            excluded = used.get(volumes[i].name)
            here = undecided if excluded is None else undecided & ~excluded
            if not here.any():
                continue
            chosen[here & nodes.affinity_mask(volumes[i])] = i
            undecided &= ~here
        left = int(np.count_nonzero(undecided))
        free.sort(key=lambda i: volumes[i].capacity)
        for i in free:
            if left == 0:
                break
            pv = volumes[i]
            excluded = used.get(pv.name)
            slots = nodes.affinity_slots(pv)
            if slots is not None:
                ok = undecided[slots]
                if excluded is not None:
                    ok &= ~excluded[slots]
                picked = slots[ok]
                if len(picked):
                    chosen[picked] = i
                    undecided[picked] = False
                    left -= len(picked)
                continue
            here = undecided & nodes.affinity_mask(pv)
            if excluded is not None:
                here &= ~excluded
            n = int(np.count_nonzero(here))
            if n:
                chosen[here] = i
                undecided &= ~here
                left -= n
        for i in np.unique(chosen[chosen >= 0]).tolist():
            name = volumes[i].name
            taken = chosen == i
            previous = used.get(name)
            used[name] = taken if previous is None else previous | taken
        return chosen

    def _check_volume_provisions(
        self,
        provisions: list[_Provision],
        nodes: _Nodes,
        culprits: dict[str, IntArray],
        claim_index: Callable[[PersistentVolumeClaim], int],
    ) -> None:
        """Upstream ``checkVolumeProvisions``: in order, a node fails at its first claim whose class
        cannot provision (no provisioner, or the node outside ``allowedTopologies``: bind conflict)
        or whose CSI driver reports no capacity with room for it reachable from the node (not enough
        space)."""
        capacity = nodes.table.capacity
        decided = np.zeros(capacity, dtype=np.bool_)
        bind_conflict = culprits[ERR_REASON_BIND_CONFLICT]
        no_space = culprits[ERR_REASON_NOT_ENOUGH_SPACE]
        for p in provisions:
            reach = p.needed & ~decided
            if not reach.any():
                continue
            claim = p.claim
            class_name = claim.class_name
            if not class_name:
                raise BinderError(f'no class for claim "{claim_key(claim)}"')
            storage_class = self.storage_class(class_name)
            if storage_class is None:
                raise BinderError(f'failed to find storage class "{class_name}"')
            provisioner = storage_class.provisioner
            if not provisioner or provisioner == NO_PROVISIONER:
                bind_conflict[reach] = claim_index(claim)
                decided |= reach
                continue
            outside = reach & ~topology_terms_mask(nodes.table, storage_class.allowed_topologies)
            if outside.any():
                bind_conflict[outside] = claim_index(claim)
                decided |= outside
                reach &= ~outside
            room = self._capacity_room(p, storage_class, nodes)
            if room is not None:
                short = reach & ~room
                if short.any():
                    no_space[short] = claim_index(claim)
                    decided |= short

    def _capacity_room(self, p: _Provision, storage_class: StorageClass, nodes: _Nodes) -> BoolArray | None:
        """Where a CSIStorageCapacity of the class has room for the claim (upstream
        ``hasEnoughCapacity``, the first such object in list order), recording it per slot; None
        when capacity is not checked for this claim (no size asked, or a driver that does not
        report capacity)."""
        claim = p.claim
        if not requests_storage(claim):
            return None
        driver: CSIDriver | None = self.informers.informer("CSIDriver").get(None, storage_class.provisioner)
        if driver is None or not driver.storage_capacity:
            return None
        capacity = nodes.table.capacity
        capacity_of = np.full(capacity, -1, dtype=np.int64)
        room = np.zeros(capacity, dtype=np.bool_)
        size = claim.request
        for cap in self.informers.informer("CSIStorageCapacity").list():
            limit = volume_limit(cap)
            if cap.storage_class_name != storage_class.name or limit is None or limit < size:
                continue
            reach = label_selector_mask(nodes.table, cap.node_topology) & ~room
            if reach.any():
                capacity_of[reach] = len(p.capacities)
                p.capacities.append(cap)
                room |= reach
        p.capacity_of = capacity_of
        return room

    # -- Reserve ----------------------------------------------------------------------------------
    def assume_pod_volumes(self, pod: Pod, node_name: str, pod_volumes: PodVolumes) -> bool:
        """Upstream ``AssumePodVolumes``: each chosen PV bound to its claim and each claim to
        provision annotated with the node, in the caches only; ``pod_volumes`` then holds those
        objects. Returns True when every claim of the pod is bound already (nothing to do)."""
        if self.are_pod_volumes_bound(pod):
            return True
        new_bindings: list[BindingInfo] = []
        for binding in pod_volumes.static_bindings or []:
            new_pv, dirty = get_bind_volume_to_claim(binding.pv, binding.pvc)
            if dirty:
                try:
                    self.pv_cache.assume(new_pv)
                except AssumeCacheError as exc:
                    self.revert_assumed_pvs(new_bindings)
                    raise BinderError(str(exc)) from None
            new_bindings.append(BindingInfo(binding.pvc, new_pv))
        new_provisions: list[DynamicProvision] = []
        for provision in pod_volumes.dynamic_provisions or []:
            clone = claim_with_selected_node(provision.pvc, node_name, SELECTED_NODE_ANNOTATION)
            try:
                self.pvc_cache.assume(clone)
            except AssumeCacheError as exc:
                self.revert_assumed_pvs(new_bindings)
                self.revert_assumed_pvcs([d.pvc for d in new_provisions])
                raise BinderError(str(exc)) from None
            new_provisions.append(DynamicProvision(clone))
        pod_volumes.static_bindings = new_bindings
        pod_volumes.dynamic_provisions = new_provisions
        return False

    def revert_assumed_pod_volumes(self, pod_volumes: PodVolumes) -> None:
        self.revert_assumed_pvs(pod_volumes.static_bindings or [])
        self.revert_assumed_pvcs([d.pvc for d in pod_volumes.dynamic_provisions or []])

    def revert_assumed_pvs(self, bindings: Sequence[BindingInfo]) -> None:
        for binding in bindings:
            self.pv_cache.restore(binding.pv.name)

    def revert_assumed_pvcs(self, claims: Sequence[PersistentVolumeClaim]) -> None:
        for claim in claims:
            self.pvc_cache.restore(claim_key(claim))

    # -- PreBind ----------------------------------------------------------------------------------
    def bind_pod_volumes(self, pod: Pod, node_name: str, pod_volumes: PodVolumes) -> None:
        """Upstream ``BindPodVolumes``: write the assumed PVs and claims, then wait (``bind_timeout``)
        until the PV controller has bound every claim to the volume expected. Raises
        :class:`BinderError` when a write fails, when the binding goes wrong, or on timeout."""
        bindings = pod_volumes.static_bindings
        claims = [d.pvc for d in pod_volumes.dynamic_provisions or []]
        self.bind_api_update(pod, bindings, claims)
        failure: list[BinderError] = []

        def done() -> bool:
            try:
                return self.check_bindings(pod, node_name, bindings, claims)
            except BinderError as exc:
                failure.append(exc)
                return True

        bound = self.wait(done, self.bind_timeout)
        if failure:
            raise BinderError(f"binding volumes: {failure[0]}")
        if not bound:
            raise BinderError("binding volumes: context deadline exceeded")

    def bind_api_update(
        self,
        pod: Pod,
        bindings: list[BindingInfo] | None,
        claims: list[PersistentVolumeClaim] | None,
    ) -> None:
        """Write each PV with its ``claimRef`` and each claim with its selected node; what was not
        written is dropped from the caches again. Updates ``bindings`` and ``claims`` in place with
        the objects as written."""
        if bindings is None:
            raise BinderError(f'failed to get cached bindings for pod "{pod_key(pod)}"')
        if claims is None:
            raise BinderError(f'failed to get cached claims to provision for pod "{pod_key(pod)}"')
        done_bindings = 0
        done_claims = 0
        try:
            if (bindings or claims) and self.writer is None:
                raise BinderError("this scheduler cannot write PersistentVolumes or claims")
            writer = self.writer
            for binding in bindings:
                assert writer is not None
                try:
                    written = writer.update_persistent_volume(dict(binding.pv.raw))
                except StoreError as exc:
                    raise BinderError(str(exc)) from None
                binding.pv = PersistentVolume.from_dict(written)
                done_bindings += 1
            for i, claim in enumerate(claims):
                assert writer is not None
                try:
                    written = writer.update_persistent_volume_claim(dict(claim.raw))
                except StoreError as exc:
                    raise BinderError(str(exc)) from None
                claims[i] = PersistentVolumeClaim.from_dict(written)
                done_claims += 1
        finally:
            self.revert_assumed_pvs(bindings[done_bindings:])
            self.revert_assumed_pvcs(claims[done_claims:])

    def check_bindings(
        self,
        pod: Pod,
        node_name: str,
        bindings: list[BindingInfo] | None,
        claims: list[PersistentVolumeClaim] | None,
    ) -> bool:
        """Upstream ``checkBindings``: True once every claim written is fully bound to a volume the
        node can reach; False while the controller is not done; :class:`BinderError` when the binding
        cannot succeed any more (the pod or an object gone, a ``claimRef`` reset, provisioning
        given up: its selected-node annotation removed)."""
        if bindings is None:
            raise BinderError(f'failed to get cached bindings for pod "{pod_key(pod)}"')
        if claims is None:
            raise BinderError(f'failed to get cached claims to provision for pod "{pod_key(pod)}"')
        node = self.informers.informer("Node").get(None, node_name)
        if node is None:
            raise BinderError(f'failed to get node "{node_name}": node "{node_name}" not found')
        csi_node = self.csi_node(node_name)
        if self.informers.informer("Pod").get(pod.namespace, pod.name) is None:
            raise BinderError(f'pod does not exist any more: pod "{pod.name}" not found')
        labels: Mapping[str, str] = node.labels
        for binding in bindings:
            try:
                pv = self.pv_cache.get_api_pv(binding.pv.name)
                claim = self.pvc_cache.get_api_pvc(claim_key(binding.pvc))
            except AssumeCacheError as exc:
                raise BinderError(f"failed to check binding: {exc}") from None
            if _resource_version(binding.pv) > _resource_version(pv):
                return False  # our write has not come back through the informer yet
            if not self._reachable(pv, labels, csi_node):
                raise BinderError(
                    f'pv "{pv.name}" node affinity doesn\'t match node "{node_name}": '
                    "no matching NodeSelectorTerms"
                )
            if pv.claim_ref is None or not pv.claim_ref.uid:
                raise BinderError(f'ClaimRef got reset for pv "{pv.name}"')
            if not is_pvc_fully_bound(claim):
                return False
        for written in claims:
            try:
                claim = self.pvc_cache.get_api_pvc(claim_key(written))
            except AssumeCacheError as exc:
                raise BinderError(f"failed to check provisioning pvc: {exc}") from None
            if _resource_version(written) > _resource_version(claim):
                return False
            meta = claim.raw.get("metadata")
            if not isinstance(meta, Mapping) or meta.get("annotations") is None:
                raise BinderError(f'selectedNode annotation reset for PVC "{claim.name}"')
            if claim.annotations.get(SELECTED_NODE_ANNOTATION) != node_name:
                # A provisioner that gives up removes the annotation so that the scheduler tries again.
                raise BinderError(f'provisioning failed for PVC "{claim.name}"')
            if claim.volume_name:
                try:
                    pv = self.pv_cache.get_api_pv(claim.volume_name)
                except NotFoundError:
                    return False  # not seen yet; a deleted volume will unbind the claim
                except AssumeCacheError as exc:
                    raise BinderError(f'failed to get pv "{claim.volume_name}" from cache: {exc}') from None
                if not self._reachable(pv, labels, csi_node):
                    raise BinderError(
                        f'pv "{pv.name}" node affinity doesn\'t match node "{node_name}": '
                        "no matching NodeSelectorTerms"
                    )
            if not is_pvc_fully_bound(claim):
                return False
        return True

    @staticmethod
    def _reachable(pv: PersistentVolume, labels: Mapping[str, str], csi_node: CSINode | None) -> bool:
        plugin = migrated_plugin(pv)
        affinity = pv.node_affinity
        if plugin is not None and plugin_migrated_on_node(plugin, csi_node):
            affinity = translated_node_affinity(pv)
        return node_affinity_matches(affinity, labels)


def capacity_scorer_resources(pod_volumes: PodVolumes) -> dict[str, StorageResource]:
    """Per storage class, what the pod asks and what it gets on a node (upstream Score): the static
    bindings' claims and volumes when there are any, else the provisioned claims against the
    capacity their CSIStorageCapacity reports (one capacity per class, however many claims)."""
    out: dict[str, StorageResource] = {}
    if pod_volumes.static_bindings:
        for binding in pod_volumes.static_bindings:
            res = out.setdefault(binding.storage_class_name, StorageResource(0, 0))
            res.requested += binding.pvc.request
            res.capacity += binding.pv.capacity
        return out
    for provision in pod_volumes.dynamic_provisions or []:
        if provision.node_capacity is None:
            continue
        res = out.setdefault(storage_class_spec_name(provision.pvc), StorageResource(0, 0))
        res.capacity = provision.node_capacity.capacity or 0
        res.requested += provision.pvc.request
    return out
