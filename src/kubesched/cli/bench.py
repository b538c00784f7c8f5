"""``kubesched bench``: scheduling throughput on a synthetic workload, or the whole suite beside
upstream's thresholds."""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from kubesched.bench.workloads import WORKLOADS
from kubesched.cli.options import (
    EXIT_BAD_INPUT,
    EXIT_OK,
    count_flag,
    feature_gates_flag,
    positive_flag,
    seed_flag,
)
from kubesched.framework.config import parse_feature_gates


def add_parser(sub: Any) -> None:
    bench = sub.add_parser("bench", help="measure scheduling throughput on a synthetic workload")
    bench.add_argument("workload", nargs="?", default="basic", choices=(*WORKLOADS, "soak"))
    bench.add_argument(
        "--nodes", type=positive_flag, default=None, help="nodes (default: the workload's own)"
    )
    bench.add_argument(
        "--existing-pods",
        type=count_flag,
        default=None,
        help="pods placed before measuring (default: the workload's)",
    )
    bench.add_argument(
        "--pods", type=count_flag, default=None, help="pods to place (default: the workload's own)"
    )
    bench.add_argument("--seed", type=seed_flag, default=0)
    bench.add_argument(
        "--all", action="store_true", help="run every workload of the suite and print one table"
    )
    bench.add_argument("--json", action="store_true", help="print the result as one JSON line")
    bench.add_argument(
        "--decisions",
        type=Path,
        default=None,
        metavar="FILE",
        help="write each measured pod's node, status and message to FILE (tab-separated, one pod a "
        "line, in the order tried), to compare the decisions of two builds",
    )
    soak = bench.add_argument_group("soak", "memory over a long life (docs/performance.md)")
    soak.add_argument(
        "--live", type=positive_flag, default=4000, help="soak: pods kept alive while the others come and go"
    )
    soak.add_argument(
        "--sample-every", type=positive_flag, default=10_000, help="soak: pods between memory samples"
    )
    soak.add_argument("--plot", type=Path, default=None, help="soak: write the memory curve to this PNG")
    feature_gates_flag(bench)
    bench.set_defaults(func=cmd_bench)


def cmd_bench(args: argparse.Namespace) -> int:
    gates = parse_feature_gates(args.feature_gates) if args.feature_gates else {}
    if args.all:
        return _bench_all(args, gates)
    if args.workload == "soak":
        return _soak(args)
    if args.decisions is not None:
        # Checked before the run, which may take minutes: a path that cannot be written is bad input.
        try:
            args.decisions.open("w", encoding="utf-8").close()
        except OSError as exc:
            print(f"kubesched bench: --decisions {args.decisions}: {exc.strerror}", file=sys.stderr)
            return EXIT_BAD_INPUT
    fn = WORKLOADS[args.workload]
    sizes = {"nodes": args.nodes, "existing_pods": args.existing_pods, "pods": args.pods}
    res = fn(**{k: v for k, v in sizes.items() if v is not None}, seed=args.seed, feature_gates=gates)
    if args.decisions is not None:
        _write_decisions(args.decisions, res.decisions)
    if res.scheduled != res.measured_pods:
        print(f"warning: only {res.scheduled}/{res.measured_pods} pods were scheduled", file=sys.stderr)
    if args.json:
        import resource

        doc = {
            "workload": res.workload,
            "nodes": res.nodes,
            "existing_pods": res.existing_pods,
            "pods": res.measured_pods,
            "scheduled": res.scheduled,
            "seconds": res.seconds,
            "cpu_seconds": res.cpu_seconds,
            "pods_per_second": res.pods_per_second,
            "pods_per_cpu_second": res.pods_per_cpu_second,
            # Linux reports kilobytes.
            "peak_rss_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
        }
        print(json.dumps(doc))
        return EXIT_OK
    print(
        f"workload={res.workload} nodes={res.nodes} existing_pods={res.existing_pods} "
        f"pods={res.measured_pods} scheduled={res.scheduled} seconds={res.seconds:.3f} "
        f"cpu_seconds={res.cpu_seconds:.3f}"
    )
    print(f"{res.pods_per_second:.0f} pods/s ({res.pods_per_cpu_second:.0f} per CPU second)")
    if res.details:
        print(res.details)
    return EXIT_OK


def _write_decisions(path: Path, decisions: list[tuple[str, str, str, str]]) -> None:
    # A message may span lines (a preemption's reasons): escaped so that one pod stays one line.
    with path.open("w", encoding="utf-8") as out:
        for pod, node, status, message in decisions:
            text = message.replace("\\", "\\\\").replace("\n", "\\n").replace("\t", "\\t")
            out.write(f"{pod}\t{node}\t{status}\t{text}\n")


def _soak(args: argparse.Namespace) -> int:
    """``bench soak``: one line per memory sample as it is taken, then the spread after warm-up."""
    from kubesched.bench.soak import SoakSample, plot, run_soak

    def show(s: SoakSample) -> None:
        if args.json:
            print(json.dumps({"sample": dataclasses.asdict(s)}), flush=True)
        else:
            print(
                f"pods={s.pods} seconds={s.seconds:.0f} rss={s.rss_bytes / 2**20:.1f}MiB "
                f"live_pods={s.live_pods} pod_groups={s.pod_groups} events={s.events} "
                f"outcomes={s.outcomes} history={s.history} changes={s.changes} "
                f"python_blocks={s.python_blocks}",
                flush=True,
            )

    res = run_soak(
        args.nodes or 1000,
        200_000 if args.pods is None else args.pods,
        live=args.live,
        sample_every=args.sample_every,
        on_sample=show,
    )
    if args.plot is not None:
        plot(res, args.plot)
    drift = res.drift()
    median = res.median_rss()
    if args.json:
        print(
            json.dumps(
                {
                    "nodes": res.nodes,
                    "pods": res.pods,
                    "seconds": res.seconds,
                    "warm_up_pods": res.warm_up_pods,
                    "median_rss_bytes": median,
                    "drift": drift,
                }
            )
        )
    elif res.warm_up_pods is None:
        print(
            f"nodes={res.nodes} pods={res.pods} bound={res.bound} bound_batch={res.bound_batch} "
            f"seconds={res.seconds:.0f}; warm-up (the watch history full, the Events of one TTL made) "
            "did not end within the run: run more pods"
        )
    else:
        print(
            f"nodes={res.nodes} pods={res.pods} bound={res.bound} bound_batch={res.bound_batch} "
            f"seconds={res.seconds:.0f}; warm-up over at {res.warm_up_pods} pods; resident memory after it "
            f"within ±{drift:.1%} of its median ({median / 2**20:.0f} MiB): "
            + ("flat (±10 %)" if drift <= 0.10 else "not flat (±10 %)")
        )
    return EXIT_OK


def _bench_all(args: argparse.Namespace, gates: dict[str, bool]) -> int:
    """Every workload of the suite, each in a fresh interpreter (so its peak memory is its own),
    in one table beside upstream's thresholds."""
    import subprocess

    from kubesched.bench.workloads import SUITE, UPSTREAM_THRESHOLDS

    table = Table(title="kubesched bench --all")
    for col in ("workload", "nodes", "pods", "pods/s", "pods/CPU-s", "upstream", "ratio (CPU)", "peak RSS"):
        table.add_column(col, justify="left" if col == "workload" else "right")
    failed = False
    for name in SUITE:
        cmd = [sys.executable, "-m", "kubesched.cli", "bench", name, "--json", "--seed", str(args.seed)]
        if args.feature_gates:
            cmd += ["--feature-gates", args.feature_gates]
        proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            failed = True
            print(f"{name}: failed\n{proc.stderr}", file=sys.stderr)
            continue
        doc = json.loads(proc.stdout.strip().splitlines()[-1])
        threshold = UPSTREAM_THRESHOLDS.get(name)
        rate = float(doc["pods_per_second"])
        # The ratio uses CPU time: on a shared, loaded machine wall time mostly measures the load.
        cpu_rate = float(doc["pods_per_cpu_second"])
        table.add_row(
            name,
            str(doc["nodes"]),
            f"{doc['scheduled']}/{doc['pods']}",
            f"{rate:.0f}",
            f"{cpu_rate:.0f}",
            str(threshold) if threshold else "-",
            f"{cpu_rate / threshold:.2f}" if threshold else "-",
            f"{int(doc['peak_rss_bytes']) / 2**20:.0f} MiB",
        )
    Console().print(table)
    return EXIT_BAD_INPUT if failed else EXIT_OK
