"""The six GPU placement policies of the FGD paper, as vectorized node scores.

Each policy scores every candidate node for one pod from the node's per-card state, exactly as the
authors' simulator does (kubernetes-scheduler-simulator, ``pkg/simulator/plugin``), integer
truncations included, because those truncations decide ties and ties are broken at random:

* ``Random``: every node scores the same; the tie-break picks one at random.
* ``DotProd`` (Tetris): ``100 * (1 - <free, request> / 2)`` with both vectors ``[CPU, GPU]``
  normalized by the largest machine (128 cores, 8 GPUs); higher alignment scores lower.
* ``GpuClustering``: nodes already running pods of the same GPU kind first (only that kind: 75-100,
  mixed: 50-75), then idle nodes (25-50), then nodes with other kinds (0-25); within a band, fewer
  GPUs left scores higher.
* ``GpuPacking``: a share that fits on a partly used card (50-100), then whole free cards on a used
  node (33-50), then a fully idle node (0-33).
* ``BestFit``: ``100 * (1 - sum_i w_i (free_i - request_i) / max_i)`` over CPU and GPU with
  ``w = 0.5``, then min-max normalized over the candidates.
* ``FGD``: ``100 * sigmoid((F(before) - F(after)) / 1000)`` where ``F`` is the node's expected
  fragmentation (:mod:`kubesched.gpu.frag`); a share is tried on each card that fits and the best
  card is kept.

A policy also picks the cards: FGD the card its score chose, Random a random fitting card, the others
the best-fitting card (least left that still fits); whole cards are always the first free ones.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

import numpy as np
import numpy.typing as npt

from kubesched.gpu.cards import MILLI
from kubesched.gpu.frag import PodShape, TypicalPods, frag_of

__all__ = [
    "MAX_SPEC_CPU",
    "MAX_SPEC_GPU",
    "POLICIES",
    "TAG_COLUMNS",
    "NodeState",
    "choose_cards",
    "normalize",
    "score_nodes",
    "tag_column",
]

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]

POLICIES: Final = ("Random", "DotProd", "GpuClustering", "GpuPacking", "BestFit", "FGD")
MAX_SPEC_CPU: Final = 128_000
MAX_SPEC_GPU: Final = 8_000
MAX_SCORE: Final = 100
#: Columns of :attr:`NodeState.tags`: 0 counts share pods, k counts k-card pods.
TAG_COLUMNS: Final = 9


def tag_column(shape: PodShape) -> int:
    """The :attr:`NodeState.tags` column of a pod's GPU kind; -1 for a pod without GPU."""
    if shape.count == 0 or shape.milli == 0:
        return -1
    if shape.count == 1 and shape.milli < MILLI:
        return 0
    return min(shape.count, TAG_COLUMNS - 1)


@dataclass
class NodeState:
    """Per-node arrays the policies read. ``cards`` is padded with 0-milli cards past ``count``."""

    cpu_left: IntArray  # (n,)
    cpu_cap: IntArray  # (n,)
    cards: IntArray  # (n, C) milli left per card
    count: IntArray  # (n,)
    model: IntArray  # (n,) index into the model list of the typical pods' access matrix
    tags: IntArray  # (n, TAG_COLUMNS) pods holding cards, by kind

    @classmethod
    def empty(cls, cpu_cap: IntArray, count: IntArray, model: IntArray, width: int) -> NodeState:
        n = len(cpu_cap)
        cards = np.zeros((n, width), dtype=np.int64)
        cards[np.arange(width)[None, :] < count[:, None]] = MILLI
        return cls(
            cpu_left=cpu_cap.astype(np.int64).copy(),
            cpu_cap=cpu_cap.astype(np.int64).copy(),
            cards=cards,
            count=count.astype(np.int64).copy(),
            model=model.astype(np.int64).copy(),
            tags=np.zeros((n, TAG_COLUMNS), dtype=np.int64),
        )


def _sigmoid(x: FloatArray) -> FloatArray:
    out: FloatArray = 1.0 / (1.0 + np.exp(-x))
    return out


def _trunc(x: FloatArray) -> IntArray:
    # Go's int64(float) truncates toward zero.
    return np.trunc(x).astype(np.int64)


def _dot_prod(st: NodeState, rows: IntArray, pod: PodShape) -> IntArray:
    cpu_left = st.cpu_left[rows]
    gpu_left = st.cards[rows].sum(axis=1)
    node_cpu = cpu_left / MAX_SPEC_CPU
    node_gpu = gpu_left / MAX_SPEC_GPU
    dot = node_cpu * (pod.cpu / MAX_SPEC_CPU) + node_gpu * (pod.count * pod.milli / MAX_SPEC_GPU)
    score = _trunc(MAX_SCORE * (1 - dot / 2))
    score[cpu_left < pod.cpu] = 0
    return score


def _best_fit(st: NodeState, rows: IntArray, pod: PodShape) -> IntArray:
    cpu_free = (st.cpu_left[rows] - pod.cpu) / MAX_SPEC_CPU * 0.5
    gpu_free = (st.cards[rows].sum(axis=1) - pod.count * pod.milli) / MAX_SPEC_GPU * 0.5
    raw = (0.0 + cpu_free) + gpu_free
    return _trunc((1.0 - raw) * MAX_SCORE)


def _gpu_clustering(st: NodeState, rows: IntArray, pod: PodShape) -> IntArray:
    col = tag_column(pod)
    if col < 0:
        return np.zeros(len(rows), dtype=np.int64)
    tags = st.tags[rows]
    kinds = (tags > 0).sum(axis=1)
    has = tags[:, col] > 0
    band = np.where(has, np.where(kinds == 1, 75, 50), np.where(kinds == 0, 25, 0))
    used = MAX_SPEC_GPU - st.cards[rows].sum(axis=1)
    return np.asarray((MAX_SCORE // 4) * used // MAX_SPEC_GPU + band, dtype=np.int64)


def _gpu_packing(st: NodeState, rows: IntArray, pod: PodShape) -> IntArray:
    if pod.count == 0 or pod.milli == 0:
        return np.zeros(len(rows), dtype=np.int64)
    cards = st.cards[rows]
    free = (cards == MILLI).sum(axis=1)
    idle = free == st.count[rows]
    score = np.maximum(MAX_SCORE // 3 - free, free)  # a fully idle node
    if pod.milli < MILLI:
        # The tightest card that fits: a partly used one keeps the node in the top band.
        tight = np.where(cards >= pod.milli, cards, MILLI + 1).min(axis=1)
        shared = np.maximum(MAX_SCORE - (tight * 100 // MILLI) // 10, MAX_SCORE // 2)
        whole = np.full(len(rows), max(MAX_SCORE // 2 - 1, MAX_SCORE // 3), dtype=np.int64)
        busy = np.where(tight < MILLI, shared, whole)
    else:
        busy = np.full(len(rows), max(MAX_SCORE // 2 - pod.count, MAX_SCORE // 3), dtype=np.int64)
    return np.asarray(np.where(idle, score, busy), dtype=np.int64)


def _after(st: NodeState, rows: IntArray, pod: PodShape) -> IntArray:
    """Cards after placing a whole-card (or no-GPU) pod: the first free cards by index are taken."""
    cards = st.cards[rows]
    if pod.count == 0 or pod.milli == 0:
        return cards
    fits = cards >= pod.milli
    take = fits & (np.cumsum(fits, axis=1) <= pod.count)
    return np.asarray(np.where(take, cards - pod.milli, cards), dtype=np.int64)


def _fgd(
    st: NodeState, rows: IntArray, pod: PodShape, tp: TypicalPods, frag_now: FloatArray
) -> tuple[IntArray, IntArray]:
    before = frag_now[rows]
    if pod.count == 1 and 0 < pod.milli < MILLI:
        cards = st.cards[rows]
        r, c = np.nonzero(cards >= pod.milli)
        after_cards = cards[r].copy()
        after_cards[np.arange(len(r)), c] -= pod.milli
        after = frag_of(st.cpu_left[rows][r] - pod.cpu, after_cards, st.model[rows][r], tp)
        per_card = np.full(cards.shape, -1, dtype=np.int64)
        per_card[r, c] = _trunc(_sigmoid((before[r] - after) / 1000) * MAX_SCORE)
        best = np.argmax(per_card, axis=1)  # first card on ties, as the authors' strict ">" keeps
        score = per_card[np.arange(len(rows)), best]
        return np.maximum(score, 0), np.where(score >= 0, best, -1).astype(np.int64)
    after = frag_of(st.cpu_left[rows] - pod.cpu, _after(st, rows, pod), st.model[rows], tp)
    score = _trunc(_sigmoid((before - after) / 1000) * MAX_SCORE)
    return score, np.full(len(rows), -1, dtype=np.int64)


def score_nodes(
    policy: str,
    st: NodeState,
    rows: IntArray,
    pod: PodShape,
    tp: TypicalPods | None = None,
    frag_now: FloatArray | None = None,
) -> tuple[IntArray, IntArray]:
    """Raw scores of ``rows`` (feasible nodes) for ``pod``, and for FGD the card a share would take
    on each (-1 elsewhere). BestFit's scores still need :func:`normalize` over all candidates."""
    none = np.full(len(rows), -1, dtype=np.int64)
    if policy == "Random":
        return np.zeros(len(rows), dtype=np.int64), none
    if policy == "DotProd":
        return _dot_prod(st, rows, pod), none
    if policy == "GpuClustering":
        return _gpu_clustering(st, rows, pod), none
    if policy == "GpuPacking":
        return _gpu_packing(st, rows, pod), none
    if policy == "BestFit":
        return _best_fit(st, rows, pod), none
    if policy == "FGD":
        if tp is None or frag_now is None:
            raise ValueError("FGD needs the typical pods and the nodes' current fragmentation")
        return _fgd(st, rows, pod, tp, frag_now)
    raise ValueError(f"unknown GPU placement policy {policy!r}; known: {', '.join(POLICIES)}")


def normalize(scores: IntArray) -> IntArray:
    """Min-max to 0..100 in integers (the authors' NormalizeScore); all 0 when every score is equal."""
    if not len(scores):
        return scores
    lo, hi = int(scores.min()), int(scores.max())
    if hi == lo:
        return np.zeros_like(scores)
    return (scores - lo) * MAX_SCORE // (hi - lo)


def choose_cards(
    policy: str, cards: IntArray, count: int, pod: PodShape, fgd_card: int, rng: np.random.Generator
) -> tuple[int, ...]:
    """The cards of one node (``cards[:count]`` milli left) that ``pod`` gets under ``policy``."""
    if pod.count == 0 or pod.milli == 0:
        return ()
    real = cards[:count]
    if pod.count == 1 and pod.milli < MILLI:
        fits = np.flatnonzero(real >= pod.milli)
        if policy == "FGD" and fgd_card >= 0:
            return (fgd_card,)
        if policy == "Random":
            return (int(fits[rng.integers(len(fits))]),)
        return (int(fits[np.argmin(real[fits])]),)
    free = np.flatnonzero(real >= pod.milli)[: pod.count]
    return tuple(int(i) for i in free)
