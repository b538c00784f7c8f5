"""``kubesched`` command line."""

from __future__ import annotations

import argparse
import json
import logging
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from kubesched import __version__
from kubesched.api.manifests import LoadResult, ManifestObject, load_manifests
from kubesched.errors import InputError
from kubesched.framework.config import load_config
from kubesched.plugins import default_registry
from kubesched.scheduler.outcome import PodOutcome
from kubesched.sim.simulation import Simulation, SimulationResult
from kubesched.sim.traces import FORMATS as TRACE_FORMAT_LOADERS
from kubesched.sim.traces import load_trace
from kubesched.sim.workload import Workload, to_manifests

EXIT_OK = 0
EXIT_UNSCHEDULABLE = 1
EXIT_BAD_INPUT = 2
TRACE_FORMATS = tuple(TRACE_FORMAT_LOADERS)


def _pod_json(o: PodOutcome, explain: bool) -> dict[str, Any]:
    out: dict[str, Any] = {
        "namespace": o.namespace,
        "name": o.name,
        "node": o.node,
        "status": o.status,
        "message": o.message,
    }
    if explain:
        ex = o.explain or {}
        for key in ("filter", "score", "normalizedScore", "finalScore", "totalScore"):
            out[key] = ex.get(key, {})
    return out


def result_document(result: SimulationResult, explain: bool) -> dict[str, Any]:
    return {
        "pods": [_pod_json(o, explain) for o in result.outcomes],
        "evicted": list(result.evicted),
        "summary": {
            "scheduled": result.scheduled,
            "unschedulable": result.unschedulable,
            "pending": result.pending,
            "noSchedulerProfile": result.no_profile,
        },
    }


def _print_table(result: SimulationResult, console: Console) -> None:
    table = Table(title="kubesched simulation", title_justify="left")
    table.add_column("POD")
    table.add_column("NODE")
    table.add_column("STATUS")
    table.add_column("MESSAGE", overflow="fold")
    styles = {"Scheduled": "green", "Unschedulable": "red", "Pending": "yellow"}
    for o in result.outcomes:
        table.add_row(
            escape(o.key), o.node or "-", f"[{styles.get(o.status, '')}]{o.status}", escape(o.message)
        )
    console.print(table)
    console.print(
        f"{result.scheduled} scheduled, {result.unschedulable} unschedulable, {result.pending} pending"
        f"{f' ({result.no_profile} for schedulers without a profile)' if result.no_profile else ''} "
        f"({result.cycles} scheduling cycles, {result.virtual_seconds:.0f}s virtual time)"
    )


TRACE_SUFFIXES = (".csv", ".jsonl")


def load_inputs(args: argparse.Namespace) -> LoadResult:
    """Manifests from the paths, plus the trace and its node lists turned into manifests."""
    if not args.paths and not args.trace:
        raise InputError("give manifest files/directories, or --trace FILE")
    manifest_paths = list(args.paths)
    workload: Workload | None = None
    if args.trace:
        workload = load_trace(args.trace, args.trace_format, args.on_bad_row, args.limit)
        for nodes in args.nodes or []:
            if Path(nodes).suffix in TRACE_SUFFIXES:
                workload = workload.merge(load_trace(nodes, args.trace_format, args.on_bad_row))
            else:
                manifest_paths.append(nodes)
    loaded = load_manifests(manifest_paths) if manifest_paths else LoadResult()
    if workload is not None:
        for row in workload.bad_rows:
            loaded.warnings.append(f"{row.source}: line {row.line}: skipped: {row.message}")
        for i, obj in enumerate(to_manifests(workload), start=1):
            loaded.objects.append(ManifestObject(str(obj["kind"]), obj, args.trace, i))
    return loaded


def cmd_simulate(args: argparse.Namespace) -> int:
    registry = default_registry()
    config = load_config(args.config, registry) if args.config else None
    loaded = load_inputs(args)
    sim = Simulation(config, registry, seed=args.seed, explain=args.explain)
    sim.load(loaded)
    result = sim.run()
    err = Console(stderr=True)
    if not args.quiet:
        for w in result.warnings:
            err.print(f"[yellow]warning:[/] {escape(w)}", soft_wrap=True)
    if args.output == "json":
        print(json.dumps(result_document(result, args.explain), indent=2))
    elif args.output == "yaml":
        print(yaml.safe_dump(result_document(result, args.explain), sort_keys=False), end="")
    else:
        _print_table(result, Console())
    if args.fail_on_unschedulable and (result.unschedulable or result.pending):
        return EXIT_UNSCHEDULABLE
    return EXIT_OK


def cmd_explain(args: argparse.Namespace) -> int:
    """Run the simulation with explain on, then show one pod's latest attempt."""
    from kubesched.scheduler.explain_view import render_explain

    registry = default_registry()
    config = load_config(args.config, registry) if args.config else None
    loaded = load_manifests(args.paths)
    sim = Simulation(config, registry, seed=args.seed, explain=True)
    sim.load(loaded)
    result = sim.run()
    key = args.pod if "/" in args.pod else f"default/{args.pod}"
    outcome = next((o for o in result.outcomes if o.key == key), None)
    if outcome is None:
        known = ", ".join(o.key for o in result.outcomes[:10])
        raise InputError(
            f"no pending pod {key} in the input (pods: {known}{', …' if len(result.outcomes) > 10 else ''})"
        )
    render_explain(outcome, Console(), top=args.top)
    return EXIT_OK


def cmd_bench(args: argparse.Namespace) -> int:
    from kubesched.bench import WORKLOADS

    fn = WORKLOADS[args.workload]
    res = fn(nodes=args.nodes, existing_pods=args.existing_pods, pods=args.pods, seed=args.seed)
    if res.scheduled != res.measured_pods:
        print(f"warning: only {res.scheduled}/{res.measured_pods} pods were scheduled", file=sys.stderr)
    print(
        f"workload={res.workload} nodes={res.nodes} existing_pods={res.existing_pods} "
        f"pods={res.measured_pods} scheduled={res.scheduled} seconds={res.seconds:.3f}"
    )
    print(f"{res.pods_per_second:.0f} pods/s")
    return EXIT_OK


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="kubesched", description="A Kubernetes scheduler in Python.")
    parser.add_argument("--version", action="version", version=f"kubesched {__version__}")
    parser.add_argument("-v", "--verbose", action="count", default=0, help="more logging (-vv for debug)")
    sub = parser.add_subparsers(dest="command", required=True)

    sim = sub.add_parser(
        "simulate", help="schedule the pending pods of some manifests on an embedded cluster"
    )
    sim.add_argument(
        "paths", nargs="*", metavar="FILE_OR_DIR", help="manifest files or directories; - for stdin"
    )
    sim.add_argument("--trace", metavar="POD_FILE", help="replay a trace (CSV/JSONL) over virtual time")
    sim.add_argument(
        "--nodes",
        action="append",
        metavar="NODE_FILE_OR_MANIFESTS",
        help="with --trace: the cluster, as a trace node list (.csv/.jsonl) or manifests (repeatable)",
    )
    sim.add_argument(
        "--trace-format", choices=TRACE_FORMATS, help="trace format (default: detected from columns)"
    )
    sim.add_argument(
        "--on-bad-row", choices=("skip", "fail"), default="skip", help="skip bad trace rows (default) or stop"
    )
    sim.add_argument("--limit", type=int, metavar="N", help="read only the first N pods (jobs) of the trace")
    sim.add_argument("--config", help="KubeSchedulerConfiguration (kubescheduler.config.k8s.io/v1) file")
    sim.add_argument("-o", "--output", choices=("table", "json", "yaml"), default="table")
    sim.add_argument(
        "--explain", action="store_true", help="record per-node, per-plugin filter and score results"
    )
    sim.add_argument("--seed", type=int, default=0, help="seed for random tie-breaks (default 0)")
    sim.add_argument(
        "--fail-on-unschedulable",
        action="store_true",
        help="exit 1 if any pod is left unschedulable or pending",
    )
    sim.add_argument("-q", "--quiet", action="store_true", help="no warnings on stderr")
    sim.set_defaults(func=cmd_simulate)

    explain = sub.add_parser(
        "explain", help="simulate, then show why one pod went where it went (or nowhere)"
    )
    explain.add_argument(
        "paths", nargs="+", metavar="FILE_OR_DIR", help="manifest files or directories; - for stdin"
    )
    explain.add_argument(
        "--pod", required=True, metavar="NS/NAME", help="the pod to explain (namespace default if omitted)"
    )
    explain.add_argument("--config", help="KubeSchedulerConfiguration (kubescheduler.config.k8s.io/v1) file")
    explain.add_argument("--seed", type=int, default=0, help="seed for random tie-breaks (default 0)")
    explain.add_argument("--top", type=int, default=5, help="how many top-scored nodes to show (default 5)")
    explain.set_defaults(func=cmd_explain)

    bench = sub.add_parser("bench", help="measure scheduling throughput on a synthetic workload")
    bench.add_argument("workload", nargs="?", default="basic", choices=("basic",))
    bench.add_argument("--nodes", type=int, default=5000)
    bench.add_argument("--existing-pods", type=int, default=1000)
    bench.add_argument("--pods", type=int, default=10000)
    bench.add_argument("--seed", type=int, default=0)
    bench.set_defaults(func=cmd_bench)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    level = logging.WARNING - 10 * min(args.verbose, 2)
    logging.basicConfig(level=level, format="%(levelname)s %(name)s: %(message)s")
    try:
        code: int = args.func(args)
        return code
    except InputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except BrokenPipeError:
        return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
