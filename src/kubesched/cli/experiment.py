"""``kubesched experiment``: reproduce a published scheduling experiment (``fgd``: the FGD paper's
GPU-sharing experiment on the Alibaba 2023 trace)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from kubesched.cli.options import EXIT_OK
from kubesched.errors import InputError


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
    fgd.add_argument("--jobs", type=int, default=None, help="worker processes (default: all cores)")
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
    fgd.add_argument("--out", required=True, metavar="DIR", help="where the CSV files, plots and report go")
    fgd.set_defaults(func=cmd_experiment_fgd)


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
    through = "dra" if args.dra else "scheduler" if args.scheduler else "kernel"
    started = time.perf_counter()
    results = run_grid(
        Path(args.nodes),
        [Path(p) for p in args.pod_list],
        policies,
        _seeds(args.seeds),
        jobs=args.jobs,
        tie_break=args.tie_break,
        path=through,
        every=args.node_sample,
    )
    wall = time.perf_counter() - started
    out = Path(args.out)
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
