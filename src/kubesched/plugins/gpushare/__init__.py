"""GPU sharing for the framework: a Filter/Reserve/PreBind plugin and the FGD paper's placement
policies as Score plugins (see docs/gpu-sharing.md).

``GpuShare`` keeps a node when the pod's GPU demand (:func:`kubesched.gpu.cards.demand_of`) fits on
its cards: the model is accepted, and there is one card with the share left, or enough whole free
cards. At Reserve it picks the cards (the ones the profile's GPU score plugin preferred, else the
tightest fit) and moves the pod onto them in the cache's card state; at PreBind it writes them to
the pod as ``kubesched.io/gpu-cards``.

Score plugins, one per policy of :mod:`kubesched.gpu.policies`: ``GpuRandom``, ``GpuDotProd``,
``GpuClustering``, ``GpuPacking``, ``GpuBestFit`` and ``FGD``. Enable one (with ``GpuShare``) in a
profile. FGD's typical pod distribution is learned from the pods it scores (each pod counted once);
the experiment (:mod:`kubesched.sim.gpu_experiment`) gives it the workload's distribution up front.

A pod may ask through ResourceClaims of the class ``gpu.kubesched.io`` instead
(:mod:`kubesched.gpu.dra`): its demand comes from its claims still to be allocated, and the cards
are the devices DynamicResources allocates (the card state holds them per claim, from Reserve on);
``GpuShare`` then picks no cards of its own and writes no annotation, the claim's allocation being
the record.

Limitation: the cards are read from the cache's state; what-if evaluations (preemption dry runs,
nominated pods) see the node's aggregate ``kubesched.io/gpu-milli`` through NodeResourcesFit but not
the per-card effect of the pods they add or remove.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar, Final

import numpy as np

from kubesched.api.objects import Pod
from kubesched.api.resource import ResourceClaim, pod_claim_name
from kubesched.cache.node_table import CPU_COL, NodeTable
from kubesched.errors import InputError
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.handle import Handle
from kubesched.framework.status import Code, Status
from kubesched.framework.types import FilterResult, IntArray, NodeFailure
from kubesched.gpu.cards import (
    ANNOTATION_GPU_CARDS,
    MAX_CARDS,
    GpuCards,
    GpuDemand,
    best_fit_cards,
    demand_of,
    format_cards,
)
from kubesched.gpu.dra import allocation_cards, claims_demand, gpu_claims
from kubesched.gpu.frag import PodShape, TypicalPods, frag_of, typical_pods
from kubesched.gpu.policies import TAG_COLUMNS, NodeState, normalize, score_nodes
from kubesched.plugins.dynamicresources import node_allocations

__all__ = [
    "CARDS_KEY",
    "FGD",
    "GPU_SCORE_PLUGINS",
    "GpuBestFit",
    "GpuClustering",
    "GpuDotProd",
    "GpuPacking",
    "GpuRandom",
    "GpuShare",
]

#: CycleState key: node name -> the cards the profile's GPU score plugin would give the pod there.
CARDS_KEY: Final = "GpuShare/cards"
_CHOSEN_KEY: Final = "GpuShare/chosen"
_CLAIMS_KEY: Final = "GpuShare/claims"


def _pod_claims(handle: Handle, pod: Pod) -> list[ResourceClaim]:
    """The pod's claims that exist (DynamicResources keeps the pod back until all do)."""
    informer = handle.informers.informer("ResourceClaim")
    out = []
    for pod_claim in pod.resource_claims:
        name = pod_claim_name(pod, pod_claim)
        claim = informer.get(pod.namespace, name) if name else None
        if isinstance(claim, ResourceClaim):
            out.append(claim)
    return out


def pod_demand(handle: Handle, pod: Pod) -> tuple[GpuDemand, bool]:
    """The pod's GPU demand, and whether it asks through claims: a pod with a claim for the GPU
    class asks through its claims (:func:`kubesched.gpu.dra.claims_demand`), any other through
    its annotations or extended resources (:func:`kubesched.gpu.cards.demand_of`)."""
    if pod.resource_claims:
        claims = gpu_claims(_pod_claims(handle, pod))
        if claims:
            return claims_demand(claims), True
    return demand_of(pod.annotations, pod.requests), False


def _shape(pod: Pod, demand: GpuDemand) -> PodShape:
    return PodShape(int(pod.requests.get("cpu", 0)), demand.milli, demand.count, "|".join(demand.models))


def _cards_of(handle: Handle) -> GpuCards:
    cards: GpuCards = handle.snapshot.gpu_cards
    return cards


def node_state(cards: GpuCards, table: NodeTable, slots: IntArray, models: list[str]) -> NodeState:
    """The policies' view of ``slots``: CPU left from the table, cards and pod kinds from ``cards``;
    model ids index ``models`` (extended with any model not yet in it)."""
    n = len(slots)
    left = np.zeros((n, MAX_CARDS), dtype=np.int64)
    count = np.zeros(n, dtype=np.int64)
    model = np.zeros(n, dtype=np.int64)
    tags = np.zeros((n, TAG_COLUMNS), dtype=np.int64)
    index = {m: i for i, m in enumerate(models)}
    for i, slot in enumerate(slots.tolist()):
        name = table.names[slot]
        row = cards.left(name)
        if row is not None:
            left[i] = row
            count[i] = cards.count(name)
        m = cards.model(name)
        if m not in index:
            index[m] = len(models)
            models.append(m)
        model[i] = index[m]
        for tag, k in cards.tags(name).items():
            col = 0 if tag == "share" else min(int(tag.split("-")[0]), TAG_COLUMNS - 1)
            tags[i, col] += k
    cpu_left = table.allocatable[slots, CPU_COL] - table.requested[slots, CPU_COL]
    return NodeState(cpu_left, table.allocatable[slots, CPU_COL].copy(), left, count, model, tags)


class GpuShare:
    """Filter (cards fit), Reserve (pick the cards) and PreBind (write ``kubesched.io/gpu-cards``)."""

    name: ClassVar[str] = "GpuShare"

    def __init__(self, args: Any, handle: Handle) -> None:
        self.handle = handle

    def filter_nodes(self, state: CycleState, pod: Pod, table: NodeTable) -> FilterResult:
        try:
            demand, _ = pod_demand(self.handle, pod)
        except InputError as exc:
            return FilterResult.reject(table.valid.copy(), str(exc), unresolvable=True)
        if not demand.wants_gpu:
            return FilterResult.all_pass(table.capacity)
        cards = _cards_of(self.handle)
        passed = np.zeros(table.capacity, dtype=np.bool_)
        no_gpu = np.zeros(table.capacity, dtype=np.bool_)
        wrong_model = np.zeros(table.capacity, dtype=np.bool_)
        short = np.zeros(table.capacity, dtype=np.bool_)
        for slot in table.order.tolist():
            name = table.names[slot]
            left = cards.left(name)
            if left is None or not cards.count(name):
                no_gpu[slot] = True
            elif not demand.accepts(cards.model(name)):
                wrong_model[slot] = True
            elif int((left >= demand.milli).sum()) < demand.count:
                short[slot] = True
            else:
                passed[slot] = True
        failures = [
            NodeFailure("node(s) have no GPU", no_gpu, True),
            NodeFailure("node(s) had a GPU model the pod does not accept", wrong_model, True),
            NodeFailure("node(s) had no GPU card with enough left", short, False),
        ]
        return FilterResult(passed, [f for f in failures if f.nodes.any()])

    def reserve(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        try:
            demand, via_claims = pod_demand(self.handle, pod)
        except InputError as exc:
            return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, [str(exc)])
        if via_claims:
            return self._reserve_claims(state, node_name)
        if not demand.wants_gpu:
            return None
        cards = _cards_of(self.handle)
        left = cards.left(node_name)
        if left is None:
            return Status(Code.UNSCHEDULABLE, ["node has no GPU"])
        held = cards.cards_of(pod.uid)
        preferred: dict[str, tuple[int, ...]] = state.get(CARDS_KEY) or {}
        chosen = preferred.get(node_name)
        if chosen is None:
            # Assumed already, the cache gave it the tightest fit; else pick that fit now.
            chosen = held if held is not None else best_fit_cards(left, cards.count(node_name), demand)
        if chosen is None:
            return Status(Code.UNSCHEDULABLE, ["node(s) had no GPU card with enough left"])
        cards.reserve(pod.uid, chosen)
        state.write(_CHOSEN_KEY, chosen)
        return None

    def _reserve_claims(self, state: CycleState, node_name: str) -> Status | None:
        """The cards are the devices DynamicResources allocates on the node: they count from now
        on, before PreBind writes the claims, so that the next pod's cycle sees them taken."""
        cards = _cards_of(self.handle)
        uids: list[str] = []
        for claim, allocation in node_allocations(state, node_name):
            held = allocation_cards(allocation)
            if held is None:
                continue
            cards.claim_allocated(claim.uid, held[0], held[1], pending=True)
            uids.append(claim.uid)
        state.write(_CLAIMS_KEY, uids)
        return None

    def unreserve(self, state: CycleState, pod: Pod, node_name: str) -> None:
        # Forgetting the assumed pod releases its own cards in the cache; claims allocated in this
        # cycle and not written release theirs here.
        cards = _cards_of(self.handle)
        for uid in state.get(_CLAIMS_KEY) or ():
            cards.claim_released(uid, only_pending=True)

    def pre_bind_pre_flight(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        """Skip when the pod holds no cards: PreBind then writes nothing."""
        cards = _cards_of(self.handle).cards_of(pod.uid) or state.get(_CHOSEN_KEY)
        return None if cards else Status(Code.SKIP)

    def pre_bind(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        cards = _cards_of(self.handle).cards_of(pod.uid) or state.get(_CHOSEN_KEY)
        if not cards:
            return None
        self.handle.ports.pod_annotations.set_pod_annotations(
            pod.namespace, pod.name, {ANNOTATION_GPU_CARDS: format_cards(cards)}
        )
        return None


class _GpuScore:
    """One placement policy as a Score plugin."""

    name: ClassVar[str] = ""
    policy: ClassVar[str] = ""

    def __init__(self, args: Any, handle: Handle) -> None:
        self.handle = handle
        self._models: list[str] = []

    def _typical(self, pod: Pod, shape: PodShape) -> TypicalPods | None:
        return None

    def score_nodes(self, state: CycleState, pod: Pod, table: NodeTable, slots: IntArray) -> IntArray:
        try:
            demand, _ = pod_demand(self.handle, pod)
        except InputError:
            return np.zeros(len(slots), dtype=np.int64)
        shape = _shape(pod, demand)
        cards = _cards_of(self.handle)
        st = node_state(cards, table, slots, self._models)
        rows = np.arange(len(slots))
        tp = self._typical(pod, shape)
        frag_now = frag_of(st.cpu_left, st.cards, st.model, tp) if tp is not None else None
        scores, share_card = score_nodes(self.policy, st, rows, shape, tp, frag_now)
        preferred: dict[str, tuple[int, ...]] = {}
        if self.policy == "Random" and len(slots):
            # Random's PreScore draws one node; it alone gets the top score.
            rng: np.random.Generator = self.handle.rng
            scores = np.zeros(len(slots), dtype=np.int64)
            scores[int(rng.integers(len(slots)))] = 100
            if demand.is_share:
                for i, slot in enumerate(slots.tolist()):
                    fits = np.flatnonzero(st.cards[i, : st.count[i]] >= demand.milli)
                    if len(fits):
                        preferred[table.names[slot]] = (int(fits[rng.integers(len(fits))]),)
        for i, slot in enumerate(slots.tolist()):
            if share_card[i] >= 0:
                preferred[table.names[slot]] = (int(share_card[i]),)
        if preferred:
            state.write(CARDS_KEY, preferred)
        return np.clip(scores, 0, 100)


class GpuRandom(_GpuScore):
    name = "GpuRandom"
    policy = "Random"


class GpuDotProd(_GpuScore):
    name = "GpuDotProd"
    policy = "DotProd"


class GpuClustering(_GpuScore):
    name = "GpuClustering"
    policy = "GpuClustering"


class GpuPacking(_GpuScore):
    name = "GpuPacking"
    policy = "GpuPacking"


class GpuBestFit(_GpuScore):
    name = "GpuBestFit"
    policy = "BestFit"

    def normalize_scores(self, state: CycleState, pod: Pod, scores: IntArray) -> None:
        scores[:] = normalize(scores)


class FGD(_GpuScore):
    name = "FGD"
    policy = "FGD"

    def __init__(self, args: Any, handle: Handle) -> None:
        super().__init__(args, handle)
        self._seen: dict[str, PodShape] = {}
        self._tp: TypicalPods | None = None
        self._tp_models = 0
        self._fixed = False

    def use_typical(self, tp: TypicalPods, models: Sequence[str]) -> None:
        """Score against a fixed distribution over node models ``models`` (the experiment's, built
        from its whole pod list) instead of learning it from the pods scored."""
        self._models[:] = list(models)
        self._tp = tp
        self._tp_models = len(models)
        self._fixed = True

    def _typical(self, pod: Pod, shape: PodShape) -> TypicalPods | None:
        if self._fixed:
            return self._tp
        if pod.uid not in self._seen:
            self._seen[pod.uid] = shape
            self._tp = None
        if self._tp is None or self._tp_models != len(self._models):
            self._tp = typical_pods(list(self._seen.values()), self._models)
            self._tp_models = len(self._models)
        return self._tp


GPU_SCORE_PLUGINS: Final = (GpuRandom, GpuDotProd, GpuClustering, GpuPacking, GpuBestFit, FGD)
