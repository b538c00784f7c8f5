"""The FGD paper's experiment: GPU allocation against arrived workload, per policy, seed and pod list.

The procedure is the authors' (``shared/traces/alibaba-gpu-2023/README.md``):

1. the cluster is a node list (the paper uses the 1,213 GPU nodes);
2. the pods are sorted by name and shuffled with the seed; creation and deletion times are unused,
   so pods arrive and never leave;
3. the workload is tuned to 130 % of the cluster's GPU capacity: copies of pods drawn at random
   (with replacement, from the name-sorted originals) go after the shuffled originals until the
   next copy would pass the target (pods are removed at random when the list is above it);
4. each pod is tried once, in order: the filter (CPU, memory, GPU model, cards) keeps the nodes it
   fits, the one policy scores them, the highest score wins, and a pod that fits nowhere is failed
   for good. Ties go to the node with the smallest name: the authors' scheduler (their fork of
   Kubernetes 1.20) replaced the random tie-break with that, "for reproducibility"; Random draws
   its node uniformly among the feasible ones;
5. after every pod the allocated GPU and the arrived GPU (the sum of the requests of the pods tried
   so far) are recorded; the allocation at X % arrived is the mean allocation over the pods at which
   the arrived GPU rounds to X % of capacity.

This runs the per-card model and the policy kernels of :mod:`kubesched.gpu.policies` directly, one
pod at a time, without the queue/cache/binding machinery of the full scheduler: that machinery
adds nothing to a run where every pod is tried once and never leaves, and the grid must fit in
minutes. Scores are cached per (pod shape, node) and recomputed only for nodes that changed since.
"""

from __future__ import annotations

import csv
import json
import os
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa  # type: ignore[import-untyped]

from kubesched.errors import InputError
from kubesched.gpu.frag import PodShape, TypicalPods, frag_of, typical_pods
from kubesched.gpu.policies import POLICIES, NodeState, choose_cards, normalize, score_nodes, tag_column
from kubesched.sim.gpu_cells import (
    ARRIVED_POINTS,
    CellResult,
    Cluster,
    IntArray,
    PodList,
    load_cluster,
    load_pod_list,
    sample_cluster,
    tune_order,
)
from kubesched.sim.sweep_engine import CellRunner, ParquetCells, SweepEngine, SweepProgress, run_sweep

__all__ = [
    "CELL_SCHEMA",
    "PAPER_UNALLOCATED",
    "PATHS",
    "cell_key",
    "run_cell",
    "run_grid",
    "summary",
    "write_csv",
]

#: The paper's "unallocated GPU % at 100 % arrived" for the default pod list (mean of 10 seeds).
PAPER_UNALLOCATED: dict[str, float] = {
    "Random": 13.70,
    "DotProd": 9.38,
    "GpuClustering": 8.35,
    "GpuPacking": 8.22,
    "BestFit": 7.14,
    "FGD": 4.77,
}


def _pod_classes(
    cluster: Cluster, pods: PodList
) -> tuple[IntArray, list[tuple[PodShape, int]], npt.NDArray[np.bool_]]:
    """Pod classes: the same shape and memory filter and score the same on the same node state.
    (class of each pod, each class's shape and memory, which GPU models each class accepts)."""
    keys: dict[tuple[PodShape, int], int] = {}
    cls_of = np.empty(len(pods.shapes), dtype=np.int64)
    for i, (shape, mem) in enumerate(zip(pods.shapes, pods.memory.tolist(), strict=True)):
        cls_of[i] = keys.setdefault((shape, mem), len(keys))
    classes = list(keys)
    access = np.zeros((len(classes), len(cluster.models)), dtype=np.bool_)
    for c, (shape, _mem) in enumerate(classes):
        access[c] = [shape.accepts(m) for m in cluster.models]
    return cls_of, classes, access


def _pick_node(
    policy: str,
    tie_break: str,
    cand: npt.NDArray[np.intp],
    s: IntArray,
    rank: npt.NDArray[np.intp],
    rng: np.random.Generator,
) -> int:
    """The feasible node *cand* the policy places the pod on, given their scores *s*."""
    if policy == "BestFit":
        s = normalize(s)
    if policy == "Random":
        # Random's PreScore draws one feasible node; it alone gets the top score.
        return int(cand[rng.integers(len(cand))])
    ties = cand[s == s.max()]
    if tie_break == "random":
        return int(ties[rng.integers(len(ties))]) if len(ties) > 1 else int(ties[0])
    # The authors' scheduler breaks ties by the smallest node name, for reproducibility.
    return int(ties[np.argmin(rank[ties])])


def run_cell(
    cluster: Cluster,
    pods: PodList,
    policy: str,
    seed: int,
    tp: TypicalPods | None = None,
    tie_break: str = "name",
) -> CellResult:
    """One policy on one shuffled, tuned pod list (module doc); ``tp`` defaults to the list's own.
    ``tie_break``: ``name`` (the authors') or ``random`` (upstream Kubernetes)."""
    if tie_break not in ("name", "random"):
        raise ValueError(f"tie_break must be name or random, not {tie_break!r}")
    if policy not in POLICIES:
        raise ValueError(f"unknown policy {policy!r}; known: {', '.join(POLICIES)}")
    started = time.perf_counter()
    if tp is None:
        tp = typical_pods(pods.shapes, cluster.models)
    rng = np.random.default_rng(seed)
    order = tune_order(pods, cluster.gpu_milli, seed)
    width = max(1, int(cluster.count.max()))
    st = NodeState.empty(cluster.cpu, cluster.count, cluster.model, width)
    mem_left = cluster.memory.copy()
    n = len(cluster.names)
    rank = np.argsort(np.argsort(np.array(cluster.names)))

    cls_of, classes, access = _pod_classes(cluster, pods)
    n_cls = len(classes)
    feasible = np.zeros((n_cls, n), dtype=np.bool_)
    scores = np.zeros((n_cls, n), dtype=np.int64)
    fgd_card = np.full((n_cls, n), -1, dtype=np.int64)
    stale = np.ones((n_cls, n), dtype=np.bool_)

    frag_now = frag_of(st.cpu_left, st.cards, st.model, tp)
    arrived = np.zeros(len(order), dtype=np.int64)
    used = np.zeros(len(order), dtype=np.int64)
    frag = np.zeros(len(order), dtype=np.float64)
    arrived_milli = used_milli = failed = 0
    frag_sum = float(frag_now.sum())

    for k, p in enumerate(order.tolist()):
        c = int(cls_of[p])
        shape, mem = classes[c]
        arrived_milli += shape.count * shape.milli
        if stale[c].any():
            rows = np.flatnonzero(stale[c])
            ok = (st.cpu_left[rows] >= shape.cpu) & (mem_left[rows] >= mem)
            if shape.count:
                ok &= (
                    access[c][st.model[rows]]
                    & (st.count[rows] > 0)
                    & ((st.cards[rows] >= shape.milli).sum(axis=1) >= shape.count)
                )
            feasible[c, rows] = ok
            good = rows[ok]
            if len(good):
                s, card = score_nodes(policy, st, good, shape, tp, frag_now)
                scores[c, good] = s
                fgd_card[c, good] = card
            stale[c, rows] = False
        cand = np.flatnonzero(feasible[c])
        if not len(cand):
            failed += 1
        else:
            node = _pick_node(policy, tie_break, cand, scores[c, cand], rank, rng)
            cards = choose_cards(
                policy, st.cards[node], int(st.count[node]), shape, int(fgd_card[c, node]), rng
            )
            st.cpu_left[node] -= shape.cpu
            mem_left[node] -= mem
            for idx in cards:
                st.cards[node, idx] -= shape.milli
            col = tag_column(shape)
            if col >= 0:
                st.tags[node, col] += 1
            used_milli += shape.count * shape.milli
            stale[:, node] = True
            one = np.array([node])
            new = float(frag_of(st.cpu_left[one], st.cards[one], st.model[one], tp)[0])
            frag_sum += new - float(frag_now[node])
            frag_now[node] = new
        arrived[k] = arrived_milli
        used[k] = used_milli
        frag[k] = frag_sum

    return CellResult.from_steps(
        cluster,
        pods,
        policy,
        seed,
        len(order),
        failed,
        time.perf_counter() - started,
        (arrived, used, frag),
    )


# -- the grid ---------------------------------------------------------------------------------------

#: How a cell places its pods: the policies' kernels on the card state (the default), the
#: scheduler with annotated pods, or the scheduler with pods asking through ResourceClaims
#: (:mod:`kubesched.sim.gpu_experiment_scheduler`).
PATHS = ("kernel", "scheduler", "dra")

#: One row per cell of the sweep's Parquet output (``cells.parquet/``): the cell, the settings it ran
#: with (a resumed sweep must not mix settings), its counts and its two curves over arrived 0..130 %
#: (NaN where no pod landed).
CELL_SCHEMA = pa.schema(
    [
        ("pod_list", pa.string()),
        ("policy", pa.string()),
        ("seed", pa.int64()),
        ("nodes", pa.string()),
        ("path", pa.string()),
        ("tie_break", pa.string()),
        ("node_sample", pa.int64()),
        ("pods_tried", pa.int64()),
        ("pods_failed", pa.int64()),
        ("seconds", pa.float64()),
        ("unallocated_gpu_pct_at_100", pa.float64()),
        ("alloc_pct", pa.list_(pa.float64())),
        ("frag_pct", pa.list_(pa.float64())),
        ("extra", pa.string()),
    ]
)

#: The columns a resumed sweep's cells must share with the sweep, and the option that sets each.
_SETTINGS = {
    "nodes": "--nodes",
    "path": "--scheduler/--dra",
    "tie_break": "--tie-break",
    "node_sample": "--node-sample",
}


def cell_key(pod_list: str, policy: str, seed: int) -> str:
    return f"{pod_list}__{policy}__{seed}"


def _row(r: CellResult, settings: dict[str, Any]) -> dict[str, Any]:
    return {
        "pod_list": r.pod_list,
        "policy": r.policy,
        "seed": r.seed,
        **settings,
        "pods_tried": r.pods,
        "pods_failed": r.failed,
        "seconds": r.seconds,
        "unallocated_gpu_pct_at_100": r.unallocated_at_100,
        "alloc_pct": r.alloc_at.tolist(),
        "frag_pct": r.frag_at.tolist(),
        "extra": json.dumps(r.extra, sort_keys=True),
    }


def _result(row: dict[str, Any]) -> CellResult:
    return CellResult(
        pod_list=row["pod_list"],
        policy=row["policy"],
        seed=row["seed"],
        pods=row["pods_tried"],
        failed=row["pods_failed"],
        seconds=row["seconds"],
        alloc_at=np.array(row["alloc_pct"], dtype=np.float64),
        frag_at=np.array(row["frag_pct"], dtype=np.float64),
        extra=json.loads(row["extra"]),
    )


def _cell(
    cluster: Cluster,
    pods: PodList,
    tp: TypicalPods,
    policy: str,
    seed: int,
    tie_break: str = "name",
    path: str = "kernel",
) -> CellResult:
    """One cell, as a task of the sweep engine; the cluster, the pod list and its typical pods are the
    engine's shared inputs."""
    if path == "kernel":
        return run_cell(cluster, pods, policy, seed, tp, tie_break)
    # The scheduler's stack is loaded only by workers that place pods through it.
    from kubesched.sim.gpu_experiment_scheduler import run_cell_scheduled

    return run_cell_scheduled(cluster, pods, policy, seed, tp, tie_break, claims=path == "dra")


def run_grid(
    node_list: Path,
    pod_lists: Sequence[Path],
    policies: Sequence[str],
    seeds: Sequence[int],
    workers: int | None = None,
    progress: Callable[[int, int, float], None] | None = None,
    tie_break: str = "name",
    path: str = "kernel",
    every: int = 1,
    *,
    engine: SweepEngine | None = None,
    cluster: str | None = None,
    out: Path | None = None,
    resume: bool = False,
) -> list[CellResult]:
    """Every (pod list, policy, seed) cell, as tasks of the sweep engine: ``engine`` when given, else
    one started for this grid (on the Dask scheduler at ``cluster``, or a local cluster of
    ``workers`` processes, one per core by default). ``path`` (:data:`PATHS`) says how pods are
    placed, ``every`` keeps every n-th node. With ``out`` each cell is written to that Parquet
    directory as it finishes (:data:`CELL_SCHEMA`), and ``resume`` takes the cells already there
    instead of running them again."""
    if path not in PATHS:
        raise ValueError(f"unknown path {path!r}; known: {', '.join(PATHS)}")
    for policy in policies:
        if policy not in POLICIES:
            raise ValueError(f"unknown policy {policy!r}; known: {', '.join(POLICIES)}")
    stems: dict[str, Path] = {}
    for pl in pod_lists:
        if pl.stem in stems and stems[pl.stem] != pl:
            raise InputError(
                f"two pod lists named {pl.stem!r}: {stems[pl.stem]} and {pl}", field="--pod-list"
            )
        stems[pl.stem] = pl
    settings: dict[str, Any] = {
        "nodes": node_list.name,
        "path": path,
        "tie_break": tie_break,
        "node_sample": every,
    }
    keys = {
        cell_key(pl.stem, pol, s): (pl, pol, s) for pl in stems.values() for pol in policies for s in seeds
    }

    def restore(key: str, row: dict[str, Any]) -> CellResult:
        for col, flag in _SETTINGS.items():
            if row[col] != settings[col]:
                raise InputError(
                    f"this cell was run with {col} {row[col]!r}, the sweep asks {settings[col]!r}",
                    field=flag,
                )
        return _result(row)

    sink = (
        ParquetCells(
            out, CELL_SCHEMA, to_row=lambda key, r: _row(r, settings), from_row=restore, resume=resume
        )
        if out is not None
        else None
    )

    bar = SweepProgress() if progress is None else None
    try:
        results = run_sweep(
            _cell,
            list(keys),
            lambda runner, todo: _cells(runner, node_list, every, todo, keys, tie_break, path),
            sink=sink,
            engine=engine,
            address=cluster,
            # All cores, however few cells are left to run.
            workers=workers if workers is not None else os.cpu_count() or 1,
            progress=progress or bar,
            priority=_fgd_first(keys),
        )
    finally:
        if bar is not None:
            bar.stop()
    order = {p: i for i, p in enumerate(POLICIES)}
    return sorted(results.values(), key=lambda r: (r.pod_list, order[r.policy], r.seed))


def _fgd_first(keys: dict[str, tuple[Path, str, int]]) -> Callable[[str], int]:
    # FGD cells are the slowest: start them first so the workers end evenly.
    return lambda key: 1 if keys[key][1] == "FGD" else 0


def _cells(
    engine: CellRunner,
    node_list: Path,
    every: int,
    todo: Sequence[str],
    keys: dict[str, tuple[Path, str, int]],
    tie_break: str,
    path: str,
) -> Iterator[tuple[str, tuple[Any, ...]]]:
    """The arguments of each cell to run. The inputs are read here, once, and shared with every
    worker; a pod list is read when its first cell is submitted, so the workers start on the first
    list while the next ones load."""
    cluster = sample_cluster(load_cluster(node_list), every)
    cluster_f = engine.share(cluster)
    shared: dict[Path, tuple[Any, Any]] = {}
    for key in todo:
        pl, policy, seed = keys[key]
        if pl not in shared:
            pods = load_pod_list(pl)
            shared[pl] = (engine.share(pods), engine.share(typical_pods(pods.shapes, cluster.models)))
        pods_f, tp_f = shared[pl]
        yield key, (cluster_f, pods_f, tp_f, policy, seed, tie_break, path)


def write_csv(results: Sequence[CellResult], out: Path) -> None:
    """``unallocated.csv`` (the table) and ``curves.csv`` (allocation and fragmentation vs arrived)."""
    out.mkdir(parents=True, exist_ok=True)
    with (out / "unallocated.csv").open("w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(["pod_list", "policy", "seed", "unallocated_gpu_pct_at_100"])
        for r in results:
            w.writerow([r.pod_list, r.policy, r.seed, f"{r.unallocated_at_100:.4f}"])
    with (out / "curves.csv").open("w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(["pod_list", "policy", "seed", "arrived_pct", "alloc_pct", "frag_pct"])
        for r in results:
            for x in range(ARRIVED_POINTS):
                if not np.isnan(r.alloc_at[x]):
                    w.writerow(
                        [r.pod_list, r.policy, r.seed, x, f"{r.alloc_at[x]:.4f}", f"{r.frag_at[x]:.4f}"]
                    )
    with (out / "cells.csv").open("w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(["pod_list", "policy", "seed", "pods_tried", "pods_failed", "seconds"])
        for r in results:
            w.writerow([r.pod_list, r.policy, r.seed, r.pods, r.failed, f"{r.seconds:.2f}"])


def summary(results: Sequence[CellResult]) -> list[tuple[str, str, float, float, int]]:
    """(pod list, policy, mean, sd, seeds) of the unallocated GPU % at 100 % arrived."""
    groups: dict[tuple[str, str], list[float]] = {}
    for r in results:
        groups.setdefault((r.pod_list, r.policy), []).append(r.unallocated_at_100)
    out = []
    for (pl, pol), vals in groups.items():
        a = np.array(vals)
        out.append((pl, pol, float(a.mean()), float(a.std(ddof=1)) if len(a) > 1 else 0.0, len(a)))
    return out
