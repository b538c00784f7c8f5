"""The inputs and the result of one cell of the FGD experiment: a cluster and a pod list of the
Alibaba 2023 trace, the tuned order the pods arrive in, and the allocation curves a cell records.

Both ways of running a cell (the policy kernels in :mod:`kubesched.sim.gpu_experiment` and the full
scheduler in :mod:`kubesched.sim.gpu_experiment_scheduler`) read these.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from kubesched.gpu.cards import ANNOTATION_GPU_COUNT, ANNOTATION_GPU_MILLI, ANNOTATION_GPU_SPEC, MILLI
from kubesched.gpu.cards import LABEL_GPU_MODEL as _LABEL_MODEL
from kubesched.gpu.frag import PodShape

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]

ARRIVED_POINTS = 131  # 0..130 %
TUNE_RATIO = 1.3


@dataclass(frozen=True)
class Cluster:
    names: tuple[str, ...]
    cpu: IntArray
    memory: IntArray  # MiB
    count: IntArray
    model: IntArray  # index into models
    models: tuple[str, ...]

    @property
    def gpu_milli(self) -> int:
        return int(self.count.sum()) * MILLI


@dataclass(frozen=True)
class PodList:
    name: str
    names: tuple[str, ...]
    shapes: tuple[PodShape, ...]
    memory: IntArray  # MiB


def load_cluster(path: Path) -> Cluster:
    """A node list of the Alibaba 2023 trace, through the trace importer."""
    from kubesched.sim.traces.alibaba_gpu_2023 import load_alibaba_gpu_2023

    workload = load_alibaba_gpu_2023(path, on_bad_row="fail")
    models = sorted({n.labels.get(_LABEL_MODEL, "") for n in workload.nodes})
    index = {m: i for i, m in enumerate(models)}
    return Cluster(
        names=tuple(n.name for n in workload.nodes),
        cpu=np.array([n.allocatable.get("cpu", 0) for n in workload.nodes], dtype=np.int64),
        memory=np.array([n.allocatable.get("memory", 0) >> 20 for n in workload.nodes], dtype=np.int64),
        count=np.array([n.allocatable.get("nvidia.com/gpu", 0) for n in workload.nodes], dtype=np.int64),
        model=np.array([index[n.labels.get(_LABEL_MODEL, "")] for n in workload.nodes], dtype=np.int64),
        models=tuple(models),
    )


def sample_cluster(cluster: Cluster, every: int) -> Cluster:
    """Every ``every``-th node of the cluster, in its order: a smaller cluster of the same mix, to
    which the pod list is then tuned (a run with fewer nodes and fewer pods)."""
    if every < 1:
        raise ValueError(f"every must be at least 1, not {every}")
    if every == 1:
        return cluster
    keep = np.arange(0, len(cluster.names), every)
    return Cluster(
        names=tuple(cluster.names[i] for i in keep.tolist()),
        cpu=cluster.cpu[keep],
        memory=cluster.memory[keep],
        count=cluster.count[keep],
        model=cluster.model[keep],
        models=cluster.models,
    )


def load_pod_list(path: Path) -> PodList:
    """A pod list of the Alibaba 2023 trace, through the trace importer; sorted by name."""
    from kubesched.sim.traces.alibaba_gpu_2023 import load_alibaba_gpu_2023

    workload = load_alibaba_gpu_2023(path, on_bad_row="fail")
    pods = sorted(workload.pods, key=lambda p: p.name)
    shapes = []
    for p in pods:
        count = int(p.annotations.get(ANNOTATION_GPU_COUNT, "0"))
        milli = int(p.annotations.get(ANNOTATION_GPU_MILLI, "0")) if count else 0
        spec = p.annotations.get(ANNOTATION_GPU_SPEC, "") if count else ""
        spec = "|".join(m for m in spec.split("|") if m)
        shapes.append(
            PodShape(cpu=int(p.requests.get("cpu", 0)), milli=milli, count=count if milli else 0, spec=spec)
        )
    return PodList(
        name=path.stem,
        names=tuple(p.name for p in pods),
        shapes=tuple(shapes),
        memory=np.array([p.requests.get("memory", 0) >> 20 for p in pods], dtype=np.int64),
    )


def tune_order(pods: PodList, capacity_milli: int, seed: int, ratio: float = TUNE_RATIO) -> IntArray:
    """Indexes into ``pods`` in the order they are tried: the originals shuffled, then the copies."""
    rng = np.random.default_rng(seed)
    n = len(pods.shapes)
    order = list(rng.permutation(n))
    per_card = np.array([s.milli for s in pods.shapes], dtype=np.int64)
    total_of = np.array([s.milli * s.count for s in pods.shapes], dtype=np.int64)
    total = int(total_of.sum())
    target = ratio * capacity_milli
    if total < target:
        while True:
            i = int(rng.integers(n))
            # As in the authors' code, the stop test adds the per-card share, the sum the whole request.
            if total + int(per_card[i]) > target:
                break
            total += int(total_of[i])
            order.append(i)
    else:
        while total > target and order:
            j = int(rng.integers(len(order)))
            total -= int(total_of[order.pop(j)])
    return np.array(order, dtype=np.int64)


@dataclass
class CellResult:
    pod_list: str
    policy: str
    seed: int
    pods: int
    failed: int
    seconds: float
    alloc_at: FloatArray  # (131,) allocation % at arrived 0..130 %, NaN where no pod landed
    frag_at: FloatArray  # (131,) fragmentation % of idle GPU at arrived 0..130 %
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def unallocated_at_100(self) -> float:
        return float(100.0 - self.alloc_at[100])

    @classmethod
    def from_steps(
        cls,
        cluster: Cluster,
        pods: PodList,
        policy: str,
        seed: int,
        tried: int,
        failed: int,
        seconds: float,
        steps: tuple[npt.NDArray[Any], npt.NDArray[Any], npt.NDArray[Any]],
        extra: dict[str, Any] | None = None,
    ) -> CellResult:
        """The result of a cell from what was recorded after each pod tried: the arrived, allocated
        and fragmented GPU (milli-GPU each), turned into the curves over arrived %."""
        arrived, used, frag = steps
        cap = cluster.gpu_milli
        arrived_pct = arrived / cap * 100.0
        idle = cap - used
        frag_pct = np.where(idle > 0, frag / np.maximum(idle, 1) * 100.0, 0.0)
        return cls(
            pod_list=pods.name,
            policy=policy,
            seed=seed,
            pods=tried,
            failed=failed,
            seconds=seconds,
            alloc_at=discrete(arrived_pct, used / cap * 100.0),
            frag_at=discrete(arrived_pct, frag_pct),
            extra=extra or {},
        )


def discrete(arrived_pct: FloatArray, values: FloatArray) -> FloatArray:
    """Mean of ``values`` over the steps whose arrived % rounds to each integer (±1 if none)."""
    out = np.full(ARRIVED_POINTS, np.nan)
    key = np.round(arrived_pct).astype(np.int64)
    for x in range(ARRIVED_POINTS):
        sel = key == x
        if not sel.any():
            sel = (key >= x - 1) & (key <= x + 1)
            if not sel.any():
                continue
        out[x] = float(values[sel].mean())
    return out
