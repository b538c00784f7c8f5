"""What the sweep engine costs per cell: the same FGD cells run inline (one after the other in this
process) and through the engine with one worker (so both run one cell at a time), alternated
``--rounds`` times; with ``--ray``, the same cells as Ray tasks on one worker too.

    OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 \
        python scripts/sweep_overhead.py --trace ../shared/traces/alibaba-gpu-2023 --rounds 3 --ray

Dask's and Ray's workers run NumPy's BLAS on one thread (a sweep has a worker per core); the
variables give the inline arm the same, or it would use every core for part of each cell.

Each cell times itself (``CellResult.seconds``), so the wall time of a round minus the time spent
inside its cells is what the engine added (submitting, shipping inputs and results, scheduling),
measured under the same load as the cells; on a machine shared with other work that is steadier
than comparing the wall times of rounds run at different moments. Engine start-up (the cluster, the
worker's import of the cell's code) is per sweep and shown apart.
"""

from __future__ import annotations

import argparse
import importlib
import statistics
import time
from pathlib import Path
from typing import Any

from kubesched.gpu.frag import typical_pods
from kubesched.sim.gpu_cells import load_cluster, load_pod_list
from kubesched.sim.gpu_experiment import _cell
from kubesched.sim.sweep_engine import SweepEngine

#: Wall time of a round's cells, the seconds spent inside them, the engine's start-up.
Round = tuple[float, float, float]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--trace", type=Path, required=True)
    ap.add_argument("--pod-list", default="openb_pod_list_default.csv")
    ap.add_argument("--policies", default="DotProd,BestFit,FGD")
    ap.add_argument("--seeds", default="42,43")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--ray", action="store_true", help="measure Ray tasks as well")
    ap.add_argument(
        "--dask-profile", action="store_true", help="and Dask with its workers' profiler on (its default)"
    )
    args = ap.parse_args()
    cluster = load_cluster(args.trace / "openb_node_list_gpu_node.csv")
    pods = load_pod_list(args.trace / args.pod_list)
    tp = typical_pods(pods.shapes, cluster.models)
    cells = [(p, int(s)) for p in args.policies.split(",") for s in args.seeds.split(",")]
    arms = [
        "inline",
        "dask",
        *(["dask-profile"] if args.dask_profile else []),
        *(["ray"] if args.ray else []),
    ]
    # Per arm and round: (wall of the cells, seconds inside them, start-up).
    runs: dict[str, list[tuple[float, float, float]]] = {a: [] for a in arms}

    for rnd in range(args.rounds):
        # The arms take turns going first: the machine's load drifts within a round.
        for arm in arms[rnd % len(arms) :] + arms[: rnd % len(arms)]:
            runs[arm].append(ROUNDS[arm](cluster, pods, tp, cells))
        print(
            f"round {rnd + 1}: "
            + ", ".join(
                f"{a} wall {w:.2f} s inside {i:.2f} s start {s:.2f} s"
                for a in arms
                for w, i, s in runs[a][-1:]
            ),
            flush=True,
        )

    n = len(cells)
    print(f"{n} cells a round, {args.rounds} rounds (medians)")
    for arm in arms:
        outside = [(w - i) / n for w, i, _ in runs[arm]]
        share = [(w - i) / i * 100 for w, i, _ in runs[arm]]
        print(
            f"{arm:6s} cell {statistics.median(i for _, i, _ in runs[arm]) / n:.2f} s, "
            f"outside the cells {statistics.median(outside) * 1000:.0f} ms a cell "
            f"({statistics.median(share):.1f} % of the cells' time), "
            f"start-up {statistics.median(s for _, _, s in runs[arm]):.2f} s"
        )


def _inline_round(
    cluster: Any, pods: Any, tp: Any, cells: list[tuple[str, int]]
) -> tuple[float, float, float]:
    t = time.perf_counter()
    inside = sum(_cell(cluster, pods, tp, policy, seed).seconds for policy, seed in cells)
    return time.perf_counter() - t, inside, 0.0


def _dask_round(
    cluster: Any, pods: Any, tp: Any, cells: list[tuple[str, int]], profile: bool = False
) -> Round:
    t = time.perf_counter()
    with SweepEngine(workers=1, profile=profile) as engine:
        # Start-up includes the worker's import of the cell's code (once per worker).
        engine.client.run(importlib.import_module, "kubesched.sim.gpu_experiment")
        start = time.perf_counter() - t
        t = time.perf_counter()
        c, p, s = engine.share(cluster), engine.share(pods), engine.share(tp)
        todo = ((f"{pol}-{seed}", (c, p, s, pol, seed)) for pol, seed in cells)
        inside = sum(r.seconds for _, r in engine.run(_cell, todo))
        return time.perf_counter() - t, inside, start


def _dask_profile_round(cluster: Any, pods: Any, tp: Any, cells: list[tuple[str, int]]) -> Round:
    return _dask_round(cluster, pods, tp, cells, profile=True)


def _ray_round(cluster: Any, pods: Any, tp: Any, cells: list[tuple[str, int]]) -> Round:
    import ray

    t = time.perf_counter()
    ray.init(num_cpus=1, include_dashboard=False, log_to_driver=False)
    remote = ray.remote(max_retries=3)(_cell)
    # Start-up includes the worker's import of the cell's code (once per worker).
    ray.get(ray.remote(importlib.import_module).remote("kubesched.sim.gpu_experiment"))
    start = time.perf_counter() - t
    t = time.perf_counter()
    c, p, s = ray.put(cluster), ray.put(pods), ray.put(tp)
    pending = [remote.remote(c, p, s, pol, seed) for pol, seed in cells]
    inside = 0.0
    while pending:
        done, pending = ray.wait(pending, num_returns=1)
        inside += ray.get(done[0]).seconds
    wall = time.perf_counter() - t
    ray.shutdown()
    return wall, inside, start


ROUNDS = {
    "inline": _inline_round,
    "dask": _dask_round,
    "dask-profile": _dask_profile_round,
    "ray": _ray_round,
}

if __name__ == "__main__":
    main()
