"""GPU fragmentation as the FGD paper defines it, vectorized over node states.

A *typical pod distribution* is the set of pod shapes (CPU, milli-GPU per card, card count,
accepted models) that make up most of the workload, each with its share of pods. For one pod shape
``m`` and one node, the node's unallocated GPU is a fragment when ``m`` cannot use it:

* ``m`` asks for no GPU, or cannot run on the node's model, or the node lacks CPU or enough cards
  with ``milli(m)`` left: every milli-GPU left on the node is a fragment;
* otherwise only the cards with less than ``milli(m)`` left are fragments.

The node's fragmentation is the expectation over the distribution:
``F(n) = sum_m p(m) * frag(n, m)`` (milli-GPU). FGD places a pod where ``F`` grows least.

The distribution is built as the authors' simulator builds it: shapes counted over the original
pod list (CPU-only pods included), sorted by count, and the most popular kept until they cover
95 % of the pods, then renormalized.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from kubesched.gpu.cards import MILLI

__all__ = ["PodShape", "TypicalPods", "frag_of", "typical_pods"]

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]
BoolArray = npt.NDArray[np.bool_]


@dataclass(frozen=True, slots=True, order=True)
class PodShape:
    """What a pod asks for, as fragmentation sees it (``spec``: accepted models joined by ``|``)."""

    cpu: int
    milli: int
    count: int
    spec: str = ""

    @property
    def models(self) -> tuple[str, ...]:
        return tuple(m for m in self.spec.split("|") if m)

    def accepts(self, model: str) -> bool:
        models = self.models
        if not models:
            return True
        return bool(model) and model in models


@dataclass(frozen=True)
class TypicalPods:
    """The distribution, as arrays over its ``T`` shapes, with access resolved per node model."""

    shapes: tuple[PodShape, ...]
    freq: FloatArray  # (T,) sums to 1
    cpu: IntArray  # (T,)
    milli: IntArray  # (T,)
    count: IntArray  # (T,)
    access: BoolArray  # (n_models, T): shape may run on a node of that model (and asks for a GPU)
    milli_levels: IntArray  # (U,) distinct milli values of GPU shapes
    level_of: IntArray  # (T,) index into milli_levels (0 for CPU-only shapes)

    @classmethod
    def build(cls, weighted: Sequence[tuple[PodShape, float]], models: Sequence[str]) -> TypicalPods:
        shapes = tuple(s for s, _ in weighted)
        freq = np.array([w for _, w in weighted], dtype=np.float64)
        milli = np.array([s.milli for s in shapes], dtype=np.int64)
        access = np.zeros((len(models), len(shapes)), dtype=np.bool_)
        for j, s in enumerate(shapes):
            if s.milli > 0:
                for i, m in enumerate(models):
                    access[i, j] = s.accepts(m)
        levels = np.unique(milli[milli > 0]) if (milli > 0).any() else np.array([MILLI], dtype=np.int64)
        level_of = np.searchsorted(levels, np.maximum(milli, levels[0])).astype(np.int64)
        return cls(
            shapes=shapes,
            freq=freq,
            cpu=np.array([s.cpu for s in shapes], dtype=np.int64),
            milli=milli,
            count=np.array([s.count for s in shapes], dtype=np.int64),
            access=access,
            milli_levels=levels.astype(np.int64),
            level_of=level_of,
        )


def typical_pods(
    shapes: Sequence[PodShape], models: Sequence[str], popularity: float = 95.0, include_cpu: bool = True
) -> TypicalPods:
    """The most popular shapes of ``shapes`` covering ``popularity`` % of the pods (module doc)."""
    counts: dict[PodShape, int] = {}
    for s in shapes:
        if not include_cpu and s.count == 0:
            continue
        counts[s] = counts.get(s, 0) + 1
    total = sum(counts.values())
    # Most popular first; equal counts in descending shape order, as the authors' reverse sort gives.
    ordered = sorted(counts.items(), key=lambda kv: (kv[1], kv[0]), reverse=True)
    need = popularity * total / 100.0
    kept: list[tuple[PodShape, int]] = []
    covered = 0
    for shape, n in ordered:
        if covered >= need:
            break
        kept.append((shape, n))
        covered += n
    return TypicalPods.build([(s, n / covered) for s, n in kept], models)


def frag_of(cpu_left: IntArray, cards: IntArray, model: IntArray, tp: TypicalPods) -> FloatArray:
    """``F`` of ``S`` node states: CPU left ``(S,)``, milli left per card ``(S, C)``, model id ``(S,)``."""
    total = cards.sum(axis=1)
    ge = cards[:, :, None] >= tp.milli_levels[None, None, :]  # (S, C, U)
    n_ge = ge.sum(axis=1)  # (S, U)
    lt_sum = np.where(ge, 0, cards[:, :, None]).sum(axis=1)  # (S, U)
    fits = (
        tp.access[model]
        & (n_ge[:, tp.level_of] >= tp.count[None, :])
        & (cpu_left[:, None] >= tp.cpu[None, :])
    )  # (S, T): the shape runs here, so only the too-small cards are fragments
    per_shape = np.where(fits, lt_sum[:, tp.level_of], total[:, None])
    out: FloatArray = per_shape.astype(np.float64) @ tp.freq
    return out
