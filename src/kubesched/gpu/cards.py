"""GPUs modelled per card: what a pod asks for, what each card of a node has left, which cards a pod gets.

A node has ``count`` cards of one ``model``; each card has 1000 milli-GPU. A pod asks for either
``count`` whole cards of one node (``milli == 1000``) or a share of a single card (``count == 1``,
``milli < 1000``), optionally restricted to some models. A share never spans cards, so a 0.5 and a
0.6 request can never sit on the same card.

Where the demand comes from (``serve``/``run`` read the same keys, see docs/gpu-sharing.md):

* annotations ``kubesched.io/gpu-count`` and ``kubesched.io/gpu-milli-per-gpu`` (the trace importer
  writes these), ``kubesched.io/gpu-spec`` (accepted models, ``|``-separated);
* otherwise the extended resources: ``nvidia.com/gpu: N`` asks for N whole cards and
  ``kubesched.io/gpu-milli: M`` with no ``nvidia.com/gpu`` asks for a share of M milli of one card.

The chosen cards are written back as ``kubesched.io/gpu-cards`` (card indexes joined by ``-``, the
form a device plugin reads to pin the container to its cards).

A pod may instead ask through ResourceClaims (:mod:`kubesched.gpu.dra`): the cards its claims were
allocated are held per claim (:meth:`GpuCards.claim_allocated`), beside the pods' own.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

import numpy as np
import numpy.typing as npt

from kubesched.api.objects import Node, Pod
from kubesched.errors import InputError

__all__ = [
    "ANNOTATION_GPU_CARDS",
    "ANNOTATION_GPU_COUNT",
    "ANNOTATION_GPU_MILLI",
    "ANNOTATION_GPU_SPEC",
    "GPU_MILLI_RESOURCE",
    "GPU_RESOURCE",
    "LABEL_GPU_MODEL",
    "MAX_CARDS",
    "MILLI",
    "GpuCards",
    "GpuDemand",
    "best_fit_cards",
    "demand_of",
    "first_free_cards",
    "format_cards",
    "parse_cards",
]

MILLI: Final = 1000
#: Widest node modelled; nodes are padded with empty (0 milli) cards up to this width.
MAX_CARDS: Final = 8

ANNOTATION_GPU_COUNT: Final = "kubesched.io/gpu-count"
ANNOTATION_GPU_MILLI: Final = "kubesched.io/gpu-milli-per-gpu"
ANNOTATION_GPU_SPEC: Final = "kubesched.io/gpu-spec"
ANNOTATION_GPU_CARDS: Final = "kubesched.io/gpu-cards"
LABEL_GPU_MODEL: Final = "kubesched.io/gpu-model"
GPU_RESOURCE: Final = "nvidia.com/gpu"
GPU_MILLI_RESOURCE: Final = "kubesched.io/gpu-milli"

IntArray = npt.NDArray[np.int64]


@dataclass(frozen=True, slots=True)
class GpuDemand:
    """``count`` cards with ``milli`` each (1000: whole) on a node of one of ``models`` (any if none)."""

    count: int = 0
    milli: int = 0
    models: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.count < 0 or not 0 <= self.milli <= MILLI:
            raise InputError(f"GPU demand out of range: {self.count} x {self.milli} milli")
        if (self.count == 0) != (self.milli == 0):
            raise InputError(f"GPU demand: count {self.count} and milli {self.milli} disagree")
        if self.count > 1 and self.milli != MILLI:
            raise InputError(
                f"GPU demand: {self.count} cards must be whole cards, not {self.milli} milli each"
            )

    @property
    def wants_gpu(self) -> bool:
        return self.count > 0

    @property
    def is_share(self) -> bool:
        return self.count == 1 and self.milli < MILLI

    @property
    def total_milli(self) -> int:
        return self.count * self.milli

    @property
    def tag(self) -> str:
        """The kind of GPU use, as GpuClustering groups pods: ``share``, ``N-gpu``, or empty."""
        if not self.count:
            return ""
        return "share" if self.is_share else f"{self.count}-gpu"

    def accepts(self, model: str) -> bool:
        if not self.models:
            return True
        return model in self.models


NO_GPU: Final = GpuDemand()


def _int(value: str, key: str) -> int:
    try:
        return int(value.strip())
    except ValueError:
        raise InputError(f"annotation {key}: not an integer: {value!r}") from None


def demand_of(annotations: Mapping[str, str], requests: Mapping[str, int]) -> GpuDemand:
    """A pod's GPU demand from its annotations, or else from its extended resources (module doc)."""
    spec = annotations.get(ANNOTATION_GPU_SPEC, "")
    models = tuple(m for m in (s.strip() for s in spec.split("|")) if m)
    if ANNOTATION_GPU_COUNT in annotations or ANNOTATION_GPU_MILLI in annotations:
        count = _int(annotations.get(ANNOTATION_GPU_COUNT, "1"), ANNOTATION_GPU_COUNT)
        milli = _int(annotations.get(ANNOTATION_GPU_MILLI, str(MILLI)), ANNOTATION_GPU_MILLI)
        if count == 0 or milli == 0:
            return NO_GPU
        return GpuDemand(count, milli, models)
    whole = int(requests.get(GPU_RESOURCE, 0))
    if whole:
        return GpuDemand(whole, MILLI, models)
    share = int(requests.get(GPU_MILLI_RESOURCE, 0))
    if share:
        if share >= MILLI:
            if share % MILLI:
                raise InputError(f"{GPU_MILLI_RESOURCE}: {share} is more than one card but not whole cards")
            return GpuDemand(share // MILLI, MILLI, models)
        return GpuDemand(1, share, models)
    return NO_GPU


def format_cards(cards: tuple[int, ...] | list[int]) -> str:
    return "-".join(str(c) for c in cards)


def parse_cards(text: str) -> tuple[int, ...]:
    try:
        return tuple(int(p) for p in text.split("-") if p != "")
    except ValueError:
        raise InputError(f"annotation {ANNOTATION_GPU_CARDS}: not card indexes: {text!r}") from None


def best_fit_cards(left: IntArray, count: int, demand: GpuDemand) -> tuple[int, ...] | None:
    """The authors' default card choice ("best"): a share goes to the card with the least milli left
    that still fits it (lowest index on ties); whole cards are the first free ones by index."""
    if demand.is_share:
        fits = np.flatnonzero(left[:count] >= demand.milli)
        if not len(fits):
            return None
        return (int(fits[np.argmin(left[fits])]),)
    return first_free_cards(left, count, demand)


def first_free_cards(left: IntArray, count: int, demand: GpuDemand) -> tuple[int, ...] | None:
    free = np.flatnonzero(left[:count] >= demand.milli)[: demand.count]
    if len(free) < demand.count:
        return None
    return tuple(int(i) for i in free)


class GpuCards:
    """Per-card state of every GPU node, kept current as pods are added to and removed from nodes.

    The scheduler cache calls :meth:`sync` whenever a node or the pods on it change (binding,
    assuming, forgetting, deleting); plugins read :meth:`left` and :meth:`model`. The cards a pod
    holds come from its ``kubesched.io/gpu-cards`` annotation when it has one (a bound pod) or from
    the reservation the GPU plugin made for it (an assumed pod); otherwise they are chosen best-fit,
    which is what the cards would be for a pod bound by another scheduler.
    """

    def __init__(self) -> None:
        self._left: dict[str, IntArray] = {}
        self._count: dict[str, int] = {}
        self._model: dict[str, str] = {}
        self._held: dict[str, tuple[str, tuple[int, ...], int]] = {}  # uid -> (node, cards, milli)
        self._reserved: dict[str, tuple[int, ...]] = {}  # uid -> cards picked before binding
        self._on_node: dict[str, set[str]] = {}  # node -> uids holding cards there
        # claim uid -> (node, (card, milli taken) pairs, allocated in flight rather than written)
        self._claims: dict[str, tuple[str, tuple[tuple[int, int], ...], bool]] = {}
        self._claims_on: dict[str, set[str]] = {}  # node -> claim uids holding cards there

    def sync(self, name: str, node: Node | None, pods: Mapping[str, Pod]) -> None:
        """Bring ``name``'s cards in line with the node and pods (uid → pod) the cache holds for it."""
        if node is None:
            for uid in list(self._on_node.get(name, ())):
                self.pod_removed(uid)
            self.node_removed(name)
            return
        if name not in self._left and not (
            node.allocatable.get(GPU_RESOURCE, 0) or node.allocatable.get(GPU_MILLI_RESOURCE, 0)
        ):
            return  # a node without GPUs: nothing to track
        self.node_added(name, node.allocatable, node.labels)
        held = self._on_node.get(name, set())
        for uid in [u for u in held if u not in pods]:
            self.pod_removed(uid)
        for uid, pod in pods.items():
            if uid in held:
                continue
            try:
                demand = demand_of(pod.annotations, pod.requests)
            except InputError:
                continue  # a malformed GPU annotation: the GPU filter rejects such pods
            self.pod_added(uid, name, pod.annotations, demand)

    def node_added(self, name: str, allocatable: Mapping[str, int], labels: Mapping[str, str]) -> None:
        count = int(allocatable.get(GPU_RESOURCE, 0))
        if not count:
            count = int(allocatable.get(GPU_MILLI_RESOURCE, 0)) // MILLI
        count = min(count, MAX_CARDS)
        if name in self._left and self._count[name] == count:
            self._model[name] = labels.get(LABEL_GPU_MODEL, "")
            return
        left = np.zeros(MAX_CARDS, dtype=np.int64)
        left[:count] = MILLI
        for _uid, (node, cards, milli) in self._held.items():
            if node == name:
                for c in cards:
                    if c < count:
                        left[c] -= milli
        for uid, (node, held, pending) in list(self._claims.items()):
            if node == name:
                self._claims[uid] = (node, _take(left, count, held), pending)
        self._left[name] = left
        self._count[name] = count
        self._model[name] = labels.get(LABEL_GPU_MODEL, "")

    def node_removed(self, name: str) -> None:
        self._left.pop(name, None)
        self._count.pop(name, None)
        self._model.pop(name, None)

    def reserve(self, uid: str, cards: tuple[int, ...]) -> None:
        """The cards a placement policy chose for a pod: moves the pod onto them if it already
        holds others (it was assumed first), else remembers them for when it is added."""
        held = self._held.get(uid)
        if held is None:
            self._reserved[uid] = cards
            return
        node, old, milli = held
        left = self._left[node]
        for c in old:
            left[c] += milli
        if all(0 <= c < self._count[node] and left[c] >= milli for c in cards) and len(cards) == len(old):
            old = cards
        for c in old:
            left[c] -= milli
        self._held[uid] = (node, old, milli)

    def pod_added(self, uid: str, node: str, annotations: Mapping[str, str], demand: GpuDemand) -> None:
        if not demand.wants_gpu or uid in self._held or node not in self._left:
            return
        left = self._left[node]
        cards: tuple[int, ...] | None
        if ANNOTATION_GPU_CARDS in annotations:
            cards = parse_cards(annotations[ANNOTATION_GPU_CARDS])
        else:
            cards = self._reserved.pop(uid, None)
        if cards is None or len(cards) != demand.count or any(left[c] < demand.milli for c in cards):
            cards = best_fit_cards(left, self._count[node], demand)
        if cards is None:
            # Over-committed by someone else: hold nothing rather than go negative.
            return
        for c in cards:
            left[c] -= demand.milli
        self._held[uid] = (node, cards, demand.milli)
        self._on_node.setdefault(node, set()).add(uid)

    def pod_removed(self, uid: str) -> None:
        self._reserved.pop(uid, None)
        held = self._held.pop(uid, None)
        if held is None:
            return
        node, cards, milli = held
        self._on_node.get(node, set()).discard(uid)
        left = self._left.get(node)
        if left is not None:
            for c in cards:
                left[c] += milli

    # -- cards held through DRA claims ----------------------------------------------------------
    def claim_allocated(
        self, uid: str, node: str, held: tuple[tuple[int, int], ...], *, pending: bool = False
    ) -> None:
        """A claim holds ``held`` ((card, milli) pairs) on ``node``: written in its status, or
        (``pending``) allocated by the scheduler and not written yet. Replaces what it held."""
        self.claim_released(uid)
        left = self._left.get(node)
        if left is not None:
            held = _take(left, self._count[node], held)
        self._claims[uid] = (node, held, pending)
        self._claims_on.setdefault(node, set()).add(uid)

    def claim_released(self, uid: str, *, only_pending: bool = False) -> None:
        """The claim holds no card any more (deallocated, deleted; ``only_pending``: an in-flight
        allocation that was dropped, unless the claim's written allocation replaced it)."""
        entry = self._claims.get(uid)
        if entry is None or (only_pending and not entry[2]):
            return
        del self._claims[uid]
        node, held, _ = entry
        self._claims_on.get(node, set()).discard(uid)
        left = self._left.get(node)
        if left is not None:
            for card, milli in held:
                left[card] += milli

    def claim_cards(self, uid: str) -> tuple[int, ...] | None:
        entry = self._claims.get(uid)
        return tuple(c for c, _ in entry[1]) if entry else None

    def cards_of(self, uid: str) -> tuple[int, ...] | None:
        held = self._held.get(uid)
        return held[1] if held else None

    def left(self, node: str) -> IntArray | None:
        """Milli-GPU left on each card of ``node`` (padded with zeros to :data:`MAX_CARDS`)."""
        return self._left.get(node)

    def count(self, node: str) -> int:
        return self._count.get(node, 0)

    def model(self, node: str) -> str:
        return self._model.get(node, "")

    def tags(self, node: str) -> dict[str, int]:
        """How many pods of each GPU kind (:attr:`GpuDemand.tag`) hold cards on ``node``."""
        out: dict[str, int] = {}
        for uid in self._on_node.get(node, ()):
            _, cards, milli = self._held[uid]
            tag = "share" if milli < MILLI else f"{len(cards)}-gpu"
            out[tag] = out.get(tag, 0) + 1
        for uid in self._claims_on.get(node, ()):
            held = self._claims[uid][1]
            if held:
                tag = "share" if len(held) == 1 and held[0][1] < MILLI else f"{len(held)}-gpu"
                out[tag] = out.get(tag, 0) + 1
        return out


def _take(left: IntArray, count: int, held: tuple[tuple[int, int], ...]) -> tuple[tuple[int, int], ...]:
    """Take ``held`` from the cards' ``left``; what was taken. A card past the node's count, or
    asked beyond what it has left (written by someone who over-committed), gives what it has, so
    that no card goes below zero and a release gives back exactly what was taken."""
    taken: list[tuple[int, int]] = []
    for card, milli in held:
        if not 0 <= card < count:
            continue
        amount = max(0, min(milli, int(left[card])))
        left[card] -= amount
        taken.append((card, amount))
    return tuple(taken)
