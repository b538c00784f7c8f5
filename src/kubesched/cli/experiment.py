"""``kubesched experiment``: reproduce a published scheduling experiment (``fgd``: the FGD paper's
GPU-sharing experiment on the Alibaba 2023 trace) or run one of our own (``gangs``: one gang
workload through the default profile, the Workload API's gangs and Volcano's; ``topology``: the
Philly replay on a spine/leaf fabric with and without Volcano's network-topology-aware placement)."""

from __future__ import annotations

import argparse
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.table import Table

from kubesched.cli.options import EXIT_OK, sweep_engine_flags
from kubesched.errors import InputError

if TYPE_CHECKING:
    from kubesched.sim.arm_cells import ArmCell
    from kubesched.sim.gang_experiment import ArmResult


def add_parser(sub: Any) -> None:
    experiment = sub.add_parser("experiment", help="reproduce a published scheduling experiment")
    exp_sub = experiment.add_subparsers(dest="experiment", required=True)
    fgd = exp_sub.add_parser(
        "fgd",
        help="the FGD paper's GPU-sharing experiment on the Alibaba 2023 trace (see docs/experiments.md)",
    )
    fgd.add_argument("--nodes", required=True, metavar="NODE_LIST", help="trace node list (CSV)")
    fgd.add_argument(
        "--pod-list", required=True, nargs="+", metavar="POD_LIST", help="one or more trace pod lists (CSV)"
    )
    fgd.add_argument(
        "--policies",
        metavar="P1,P2",
        help="comma list of Random, DotProd, GpuClustering, GpuPacking, BestFit, FGD (default: all)",
    )
    fgd.add_argument("--seeds", default="42-51", help="seeds, N-M or a comma list (default 42-51)")
    sweep_engine_flags(fgd, "the cells", "all cores")
    fgd.add_argument(
        "--tie-break",
        choices=("name", "random"),
        default="name",
        help="equal scores: smallest node name, as the authors' scheduler (default), or random",
    )
    through = fgd.add_mutually_exclusive_group()
    through.add_argument(
        "--dra",
        action="store_true",
        help="place the pods through the scheduler, each asking for its GPUs through a ResourceClaim "
        "(the simulated DRA driver's shared cards; docs/experiments.md)",
    )
    through.add_argument(
        "--scheduler",
        action="store_true",
        help="place the pods through the scheduler, asking by annotations (the reference for --dra)",
    )
    fgd.add_argument(
        "--node-sample",
        type=int,
        default=1,
        metavar="N",
        help="keep every N-th node of the list (the pods are tuned to that smaller cluster; default 1)",
    )
    outs = fgd.add_mutually_exclusive_group(required=True)
    outs.add_argument(
        "--out", metavar="DIR", help="where the cells (cells.parquet/), CSV files, plots and report go"
    )
    outs.add_argument(
        "--resume",
        metavar="DIR",
        help="as --out, keeping the cells already in DIR/cells.parquet/ and running only the others",
    )
    fgd.set_defaults(func=cmd_experiment_fgd)
    _add_gangs_parser(exp_sub)
    _add_topology_parser(exp_sub)


def _add_gangs_parser(exp_sub: Any) -> None:
    gangs = exp_sub.add_parser(
        "gangs",
        help="one gang workload through the default profile, the Workload API gang and Volcano's "
        "gang + proportion, on the same nodes (see docs/experiments.md)",
    )
    gangs.add_argument(
        "--workloads",
        default=None,
        metavar="W1,W2",
        help="comma list of llm (synthetic LLM-training mix) and philly (needs --philly); "
        "default: llm, and philly when --philly is given",
    )
    gangs.add_argument("--philly", metavar="CSV", help="the Philly per-job table (philly.csv)")
    gangs.add_argument(
        "--arms",
        default="default,workload-gang,volcano",
        metavar="A1,A2",
        help="comma list of default, workload-gang, volcano and workload-gang-zone (gangs held to "
        "one zone by TopologyAwareWorkloadScheduling; default: the first three)",
    )
    gangs.add_argument(
        "--scale",
        type=int,
        default=1,
        help="multiply the nodes, the jobs and their arrival rate by N (the same load; default 1)",
    )
    gangs.add_argument("--nodes", type=int, default=32, help="8-GPU nodes at scale 1 (default 32)")
    gangs.add_argument("--seed", type=int, default=1, help="seed of the synthetic mix (default 1)")
    gangs.add_argument(
        "--philly-jobs", type=int, default=250, help="Philly multi-GPU jobs at scale 1 (default 250)"
    )
    gangs.add_argument(
        "--philly-skip",
        type=int,
        default=4750,
        help="multi-GPU jobs to skip first (default 4750: a stretch with many multi-node jobs)",
    )
    gangs.add_argument(
        "--time-scale",
        type=float,
        default=60.0,
        help="divide Philly's arrivals and durations by this (default 60: a trace hour is a minute)",
    )
    gangs.add_argument("--report", metavar="DIR", help="write summary.csv, jobs.csv and plots here")
    _add_run_flags(gangs)
    gangs.set_defaults(func=cmd_experiment_gangs)


def _add_topology_parser(exp_sub: Any) -> None:
    topo = exp_sub.add_parser(
        "topology",
        help="the Philly replay on a spine/leaf fabric of HyperNodes, with and without Volcano's "
        "network-topology-aware placement (see docs/experiments.md)",
    )
    topo.add_argument("--philly", required=True, metavar="CSV", help="the Philly per-job table (philly.csv)")
    topo.add_argument(
        "--fabric",
        metavar="FILE",
        help="Nodes and HyperNodes (a manifest file or folder); default: the 64-node, 8-leaf, "
        "2-spine fabric of examples/fabric",
    )
    topo.add_argument(
        "--arms",
        default="none,soft,hard",
        metavar="A1,A2",
        help="comma list of none (default conf, no job topology), plugin (network-topology-aware, "
        "no job topology), soft and hard (network-topology-aware, multi-pod jobs with that "
        "networkTopology mode); default: none,soft,hard",
    )
    topo.add_argument("--philly-jobs", type=int, default=500, help="Philly multi-GPU jobs (default 500)")
    topo.add_argument(
        "--philly-skip",
        type=int,
        default=4750,
        help="multi-GPU jobs to skip first (default 4750, as experiment gangs)",
    )
    topo.add_argument(
        "--time-scale",
        type=float,
        default=60.0,
        help="divide Philly's arrivals and durations by this (default 60: a trace hour is a minute)",
    )
    topo.add_argument(
        "--speedup",
        type=float,
        default=None,
        help="divide arrivals once more by this (default: the fabric's GPUs / 256, the load per GPU "
        "of experiment gangs' 32 nodes)",
    )
    topo.add_argument(
        "--seeds",
        default="1",
        help="the simulations' seeds, N-M or a comma list (default 1); several: each arm once per "
        "seed, the table pooled over them and the spread per seed below it",
    )
    topo.add_argument("--report", metavar="DIR", help="write summary.csv, table.md, jobs.csv and plots here")
    _add_run_flags(topo)
    topo.set_defaults(func=cmd_experiment_topology)


def _add_run_flags(parser: argparse.ArgumentParser) -> None:
    """Where the runs go (the sweep engine) and where each finished run is written."""
    sweep_engine_flags(parser, "the runs", "one per run, at most one per core; one run stays in this process")
    outs = parser.add_mutually_exclusive_group()
    outs.add_argument(
        "--out", metavar="DIR", help="write each run to DIR/cells.parquet/ as it finishes (see --resume)"
    )
    outs.add_argument(
        "--resume",
        metavar="DIR",
        help="as --out, keeping the runs already in DIR/cells.parquet/ and running only the others",
    )


def _check_workers(args: argparse.Namespace) -> None:
    if args.workers is not None and args.workers < 1:
        raise InputError(f"must be at least 1, got {args.workers}", field="--workers")


def _run_arms(
    args: argparse.Namespace,
    fn: Callable[..., ArmResult],
    cells: Mapping[str, ArmCell],
    summary: Callable[[ArmResult], Mapping[str, Any]],
    schema: Any,
) -> list[ArmResult]:
    """The runs of ``cells`` where ``--workers``/``--cluster`` say, each written to
    ``DIR/cells.parquet/`` with ``--out DIR`` or ``--resume DIR`` (which keeps those there), with a
    progress bar when stderr is a terminal (piped to a file, it gets no bar frames)."""
    from kubesched.sim.arm_cells import run_arm_cells
    from kubesched.sim.sweep_engine import SweepProgress

    out = args.resume or args.out
    err = Console(stderr=True)
    bar = SweepProgress("runs", err) if err.is_terminal else None
    try:
        return run_arm_cells(
            fn,
            cells,
            summary=summary,
            schema=schema,
            out=Path(out) / "cells.parquet" if out else None,
            resume=args.resume is not None,
            address=args.cluster,
            workers=args.workers,
            progress=bar,
        )
    finally:
        if bar is not None:
            bar.stop()


def _seeds(text: str) -> list[int]:
    """``42-51`` or ``42,43,50``."""
    out: list[int] = []
    try:
        for part in text.split(","):
            lo, _, hi = part.strip().partition("-")
            out.extend(range(int(lo), int(hi) + 1) if hi else [int(lo)])
    except ValueError:
        raise InputError(f"--seeds: expected N, N-M or a comma list, got {text!r}") from None
    return out


def cmd_experiment_fgd(args: argparse.Namespace) -> int:
    import time

    from kubesched.gpu.policies import POLICIES
    from kubesched.sim.gpu_experiment import PAPER_UNALLOCATED, run_grid, summary, write_csv
    from kubesched.sim.gpu_report import write_report

    policies = [p.strip() for p in args.policies.split(",")] if args.policies else list(POLICIES)
    for name in policies:
        if name not in POLICIES:
            raise InputError(f"--policies: unknown policy {name!r}; known: {', '.join(POLICIES)}")
    for path in [args.nodes, *args.pod_list]:
        if not Path(path).is_file():
            raise InputError("no such file", file=str(path))
    if args.node_sample < 1:
        raise InputError(f"--node-sample: must be at least 1, got {args.node_sample}")
    if args.workers is not None and args.workers < 1:
        raise InputError(f"--workers: must be at least 1, got {args.workers}")
    through = "dra" if args.dra else "scheduler" if args.scheduler else "kernel"
    out = Path(args.resume or args.out)
    started = time.perf_counter()
    results = run_grid(
        Path(args.nodes),
        [Path(p) for p in args.pod_list],
        policies,
        _seeds(args.seeds),
        workers=args.workers,
        tie_break=args.tie_break,
        path=through,
        every=args.node_sample,
        cluster=args.cluster,
        out=out / "cells.parquet",
        resume=args.resume is not None,
    )
    wall = time.perf_counter() - started
    write_csv(results, out)
    report = write_report(out, results, wall)
    placed = {"kernel": "", "scheduler": ", through the scheduler", "dra": ", through ResourceClaims"}
    sample = f", every {args.node_sample}th node" if args.node_sample > 1 else ""
    table = Table(title=f"unallocated GPU % at 100 % arrived{placed[through]}{sample}")
    for col in ("pod list", "policy", "mean ± sd", "seeds", "paper"):
        table.add_column(col)
    for pl, pol, mean, sd, n in summary(results):
        full = args.node_sample == 1
        paper = PAPER_UNALLOCATED.get(pol) if pl == "openb_pod_list_default" and full else None
        table.add_row(pl, pol, f"{mean:.2f} ± {sd:.2f}", str(n), f"{paper:.2f}" if paper is not None else "")
    Console().print(table)
    print(f"{len(results)} cells in {wall:.0f} s; wrote {out / 'unallocated.csv'} and {report}")
    return EXIT_OK


def _positive(value: int, option: str) -> int:
    if value < 1:
        raise InputError(f"{option}: must be at least 1, got {value}")
    return value


def cmd_experiment_gangs(args: argparse.Namespace) -> int:
    import math

    from kubesched.sim.arm_cells import GANG_SCHEMA, ArmCell, Shared, gang_cell
    from kubesched.sim.gang_experiment import ARMS, GangCluster, Job, llm_mix, philly_jobs, summary_rows

    scale = _positive(args.scale, "--scale")
    nodes = _positive(args.nodes, "--nodes") * scale
    if args.time_scale <= 0:
        raise InputError(f"--time-scale: must be above 0, got {args.time_scale}")
    arms = [a.strip() for a in args.arms.split(",") if a.strip()]
    for arm in arms:
        if arm not in ARMS:
            raise InputError(f"--arms: unknown arm {arm!r}; known: {', '.join(ARMS)}")
    _check_workers(args)
    default_workloads = "llm,philly" if args.philly else "llm"
    workloads = [w.strip() for w in (args.workloads or default_workloads).split(",") if w.strip()]
    cluster = GangCluster(nodes=nodes)
    per_workload: dict[str, list[Job]] = {}
    for workload in workloads:
        if workload == "llm":
            per_workload[workload] = llm_mix(args.seed, scale=scale, cluster_gpus=cluster.gpus)
        elif workload == "philly":
            if not args.philly:
                raise InputError("--workloads philly needs --philly PATH (the Philly philly.csv)")
            if not Path(args.philly).is_file():
                raise InputError("no such file", file=str(args.philly))
            per_workload[workload] = philly_jobs(
                Path(args.philly),
                jobs=_positive(args.philly_jobs, "--philly-jobs") * scale,
                skip=max(0, args.philly_skip),
                time_scale=args.time_scale,
                max_gpus=cluster.gpus,
                speedup=scale,
            )
        else:
            raise InputError(f"--workloads: unknown workload {workload!r}; known: llm, philly")
    cells: dict[str, ArmCell] = {}
    shared_cluster = Shared(cluster)
    for workload, jobs in per_workload.items():
        shared_jobs = Shared(jobs)
        settings: dict[str, Any] = {"--nodes": args.nodes, "--scale": scale, "--seed": args.seed}
        if workload == "philly":
            settings |= {
                "--philly": Path(args.philly).name,
                "--philly-jobs": args.philly_jobs,
                "--philly-skip": max(0, args.philly_skip),
                "--time-scale": args.time_scale,
            }
        for arm in arms:
            cells[f"{workload}__{arm}"] = ArmCell(
                (arm, shared_jobs, shared_cluster, workload, args.seed), settings
            )
    results = _run_arms(args, gang_cell, cells, lambda r: summary_rows([r])[0], GANG_SCHEMA)

    def num(value: float, digits: int = 0) -> str:
        return "" if math.isnan(value) else f"{value:.{digits}f}"

    table = Table(title=f"gangs on {cluster.nodes} nodes x {cluster.gpus_per_node} GPUs (times in minutes)")
    for col in (
        "workload",
        "arm",
        "done/jobs",
        "pending",
        "JCT mean",
        "JCT p95",
        "wait mean",
        "wait p95",
        "GPU busy %",
        "partial pods peak",
        "partial GPU·h",
        "racks",
        "wall s",
    ):
        table.add_column(col, no_wrap=col in ("workload", "arm"))
    for row in summary_rows(results):
        table.add_row(
            row["workload"],
            row["arm"],
            f"{row['done']}/{row['jobs']}",
            f"{row['pending']} ({row['partial_at_end']} partial)" if row["pending"] else "0",
            num(row["jct_mean_s"] / 60, 1),
            num(row["jct_p95_s"] / 60, 1),
            num(row["queueing_mean_s"] / 60, 1),
            num(row["queueing_p95_s"] / 60, 1),
            num(row["gpu_busy_pct"], 1),
            str(row["partial_pods_peak"]),
            num(row["partial_gpu_hours"], 1),
            num(row["racks_per_multinode_job"], 2),
            num(row["wall_s"], 1),
        )
    # Thirteen columns: wider than a pipe's default 80, so that no number is cut.
    Console(width=max(Console().width, 160)).print(table)
    for r in results:
        for warning in r.warnings:
            print(f"warning: {r.workload}/{r.arm}: {warning}")
    if args.report:
        from kubesched.sim.gang_report import write_report

        written = write_report(results, Path(args.report))
        print(f"wrote {len(written)} files to {args.report}")
    return EXIT_OK


def cmd_experiment_topology(args: argparse.Namespace) -> int:
    import time

    from kubesched.sim.arm_cells import TOPOLOGY_SCHEMA, ArmCell, Shared, topology_cell
    from kubesched.sim.gang_experiment import philly_jobs
    from kubesched.sim.topology_experiment import (
        ARMS,
        load_fabric,
        markdown_table,
        pooled_rows,
        seed_table,
        topology_rows,
    )

    arms = [a.strip() for a in args.arms.split(",") if a.strip()]
    for arm in arms:
        if arm not in ARMS:
            raise InputError(f"--arms: unknown arm {arm!r}; known: {', '.join(ARMS)}")
    if args.time_scale <= 0:
        raise InputError(f"--time-scale: must be above 0, got {args.time_scale}")
    if args.speedup is not None and args.speedup <= 0:
        raise InputError(f"--speedup: must be above 0, got {args.speedup}")
    if not Path(args.philly).is_file():
        raise InputError("no such file", file=str(args.philly))
    _check_workers(args)
    fabric = load_fabric(Path(args.fabric) if args.fabric else None)
    speedup = args.speedup if args.speedup is not None else fabric.gpus / 256
    jobs = philly_jobs(
        Path(args.philly),
        jobs=_positive(args.philly_jobs, "--philly-jobs"),
        skip=max(0, args.philly_skip),
        time_scale=args.time_scale,
        max_gpus=fabric.gpus,
        speedup=speedup,
    )
    seeds = list(dict.fromkeys(_seeds(args.seeds)))
    settings = {
        "--philly": Path(args.philly).name,
        "--philly-jobs": args.philly_jobs,
        "--philly-skip": max(0, args.philly_skip),
        "--time-scale": args.time_scale,
        "--speedup": speedup,
        "--fabric": Path(args.fabric).name if args.fabric else None,
    }
    shared_jobs, shared_fabric = Shared(jobs), Shared(fabric)
    cells = {
        f"{arm}__{seed}": ArmCell((arm, shared_jobs, shared_fabric, seed), settings)
        for seed in seeds
        for arm in arms
    }
    started = time.perf_counter()
    results = _run_arms(
        args, topology_cell, cells, lambda r: topology_rows([r], fabric)[0].as_dict(), TOPOLOGY_SCHEMA
    )
    wall = time.perf_counter() - started
    multi = sum(1 for j in jobs if len(j.workers) > 1)
    pooled = f"; counts summed and numbers averaged over seeds {args.seeds}" if len(seeds) > 1 else ""
    print(
        f"Philly: {len(jobs)} multi-GPU jobs ({multi} of several pods) on {len(fabric.nodes)} nodes, "
        f"{fabric.gpus} GPUs, {fabric.leaves} leaves; times in minutes of virtual time{pooled}\n"
    )
    rows = topology_rows(results, fabric)
    print(markdown_table(pooled_rows(rows)))
    if len(seeds) > 1:
        print(seed_table(rows))
    for r in results:
        for warning in r.warnings:
            print(f"warning: {r.arm}: {warning}")
    print(f"{len(results)} runs ({len(arms)} arms x {len(seeds)} seeds) in {wall:.1f} s")
    if args.report:
        from kubesched.sim.topology_report import write_report

        written = write_report(results, fabric, Path(args.report))
        print(f"wrote {len(written)} files to {args.report}")
    return EXIT_OK
