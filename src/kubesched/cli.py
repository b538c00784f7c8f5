"""``kubesched`` command line."""

from __future__ import annotations

import argparse
import dataclasses
import json
import logging
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import yaml
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from kubesched import __version__
from kubesched.api.durations import parse_duration
from kubesched.api.manifests import KINDS, LoadResult, ManifestObject, load_manifests
from kubesched.api.objects import object_ref
from kubesched.batch.conf import BATCH_SCHEDULER_NAME, load_batch_conf
from kubesched.bench.workloads import WORKLOADS
from kubesched.errors import InputError
from kubesched.framework.config import SchedulerConfig, default_config, load_config, parse_feature_gates
from kubesched.framework.outcome import PodOutcome
from kubesched.framework.registry import Registry
from kubesched.metrics.logs import configure_logging
from kubesched.runtime.collector import tune_collector
from kubesched.runtime.plugin_loading import plugin_registry
from kubesched.sim.batch_output import batch_document, explain_batch_pod, print_batch_tables
from kubesched.sim.compare import RunSpec, plan_runs
from kubesched.sim.export import export_runs
from kubesched.sim.metrics import MetricsRecorder
from kubesched.sim.progress import ReplayProgress
from kubesched.sim.report import RunReport, summary_table, write_report
from kubesched.sim.simulation import Simulation, SimulationResult
from kubesched.sim.traces import FORMATS as TRACE_FORMAT_LOADERS
from kubesched.sim.traces import load_trace
from kubesched.sim.workload import Workload, to_manifests

EXIT_OK = 0
EXIT_UNSCHEDULABLE = 1
EXIT_BAD_INPUT = 2
#: ``kubesched run`` could not reach or list the cluster, or scheduling stopped on an error.
EXIT_RUN_FAILED = 1
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
        # The latest preemption the pod made: {"nominatedNode": ..., "victims": ["ns/name", ...]}.
        out["preemption"] = ex.get("preemption")
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
        **batch_document(result, explain),
    }


def _print_table(result: SimulationResult, console: Console) -> None:
    table = Table(title="kubesched simulation", title_justify="left")
    table.add_column("POD")
    table.add_column("NODE")
    table.add_column("STATUS")
    table.add_column("MESSAGE", overflow="fold")
    styles = {
        "Scheduled": "green",
        "Bound": "green",
        "Succeeded": "green",
        "Unschedulable": "red",
        "Failed": "red",
        "Pending": "yellow",
        "Evicted": "yellow",
    }
    for o in result.outcomes:
        style = styles.get(o.status)
        status = f"[{style}]{escape(o.status)}[/]" if style else escape(o.status)
        table.add_row(escape(o.key), o.node or "-", status, escape(o.message))
    console.print(table)
    console.print(
        f"{result.scheduled} scheduled, {result.unschedulable} unschedulable, {result.pending} pending"
        f"{f' ({result.no_profile} for schedulers without a profile)' if result.no_profile else ''} "
        f"({result.cycles} scheduling cycles, {result.virtual_seconds:.0f}s virtual time)"
    )
    if result.evicted:
        console.print(f"{len(result.evicted)} evicted: {escape(', '.join(result.evicted))}", soft_wrap=True)
    print_batch_tables(result, console)


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
        _add_trace_objects(loaded, to_manifests(workload), args.trace)
    return loaded


def _registry(args: argparse.Namespace) -> Registry:
    """In-tree plugins, the installed ``kubesched.plugins`` entry points and every ``--plugin``."""
    return plugin_registry(args.plugin or ())


def _add_trace_objects(loaded: LoadResult, objects: list[dict[str, Any]], trace: str) -> None:
    """Add a trace's objects to the manifests'. A queue the trace names and a manifest defines is one
    queue, with the manifest's spec; any other object both define is an input error."""
    defined: dict[tuple[str, str, str], ManifestObject] = {}
    for mo in loaded.objects:
        defined[_object_key(mo.kind, mo.obj)] = mo
    for i, obj in enumerate(objects, start=1):
        kind = str(obj["kind"])
        first = defined.get(_object_key(kind, obj))
        if first is not None:
            if kind == "Queue":
                continue
            raise InputError(
                f"defined both by the trace and in {first.source} document {first.document}",
                file=trace,
                obj=object_ref(obj),
            )
        loaded.objects.append(ManifestObject(kind, obj, trace, i))


def _object_key(kind: str, obj: dict[str, Any]) -> tuple[str, str, str]:
    meta = obj.get("metadata") or {}
    namespace = (meta.get("namespace") or "default") if KINDS[kind].namespaced else ""
    return kind, namespace, str(meta.get("name"))


def _check_output_dir(value: str | None, flag: str) -> None:
    """Refuse an output directory that cannot be written before anything runs: a report written after
    a long replay must not be the step that fails."""
    if value is None:
        return
    path = Path(value)
    if path.exists() and not path.is_dir():
        raise InputError(f"{value!r} exists and is not a directory", field=flag)
    existing = path
    while not existing.exists():
        if existing.parent == existing:
            break
        existing = existing.parent
    if not existing.is_dir():
        raise InputError(f"cannot create {value!r}: {str(existing)!r} is not a directory", field=flag)
    if not os.access(existing, os.W_OK | os.X_OK):
        raise InputError(f"cannot write to {str(existing)!r}: permission denied", field=flag)


def cmd_simulate(args: argparse.Namespace) -> int:
    _check_output_dir(args.report, "--report")
    _check_output_dir(args.export, "--export")
    registry = _registry(args)
    runs = plan_runs(args.config or [], args.sweep, registry)
    gates = parse_feature_gates(args.feature_gates) if args.feature_gates else {}
    sample_every = _positive_duration(args.sample_every, "--sample-every")
    # --schedule-period: Volcano's flag of that name.
    schedule_period = _positive_duration(args.schedule_period, "--schedule-period")
    loaded = load_inputs(args)
    err = Console(stderr=True)
    # A trace replay on a terminal shows its progress; metrics are recorded when anything uses them.
    show_progress = bool(args.trace) and not args.quiet and err.is_terminal
    want_metrics = bool(args.report or args.export or len(runs) > 1 or show_progress)
    done: list[tuple[RunSpec, SimulationResult, MetricsRecorder | None]] = []
    for run in runs:
        recorder = (
            MetricsRecorder(sample_every=sample_every, pool_label=args.pool_label) if want_metrics else None
        )
        sim = Simulation(
            _gated(run.config, gates, registry),
            registry,
            seed=args.seed,
            explain=args.explain,
            metrics=recorder,
            batch_conf=load_batch_conf(args.batch_conf) if args.batch_conf else None,
            schedule_period=schedule_period,
        )
        sim.load(loaded)
        if show_progress and recorder is not None:
            with ReplayProgress(run.label, err) as progress:
                recorder.progress = progress.update
                result = sim.run()
        else:
            result = sim.run()
        done.append((run, result, recorder))
    if not args.quiet:
        warnings = [
            w
            for _, result, recorder in done
            for w in (*result.warnings, *(recorder.warnings if recorder else ()))
        ]
        for w in dict.fromkeys(warnings):
            err.print(f"[yellow]warning:[/] {escape(w)}", soft_wrap=True)
    reports = [
        RunReport(run.label, recorder, run.source, run.text)
        for run, _, recorder in done
        if recorder is not None
    ]
    if len(done) == 1:
        result = done[0][1]
        if args.output == "json":
            print(json.dumps(result_document(result, args.explain), indent=2))
        elif args.output == "yaml":
            print(yaml.safe_dump(result_document(result, args.explain), sort_keys=False), end="")
        else:
            _print_table(result, Console())
        if args.report or args.export:
            summary_console = Console() if args.output == "table" else err
            if args.output == "table" or not args.quiet:
                summary_console.print(summary_table(reports))
    else:
        _print_runs(done, args, reports)
    _write_outputs(args, reports, err, sample_every)
    if args.fail_on_unschedulable and any(r.unschedulable or r.pending for _, r, _ in done):
        return EXIT_UNSCHEDULABLE
    return EXIT_OK


def _gated(
    config: SchedulerConfig | None, gates: dict[str, bool], registry: Registry
) -> SchedulerConfig | None:
    """``config`` (or the default one) with ``--feature-gates`` over its ``featureGates``."""
    if not gates:
        return config
    base = config or default_config(registry)
    return dataclasses.replace(base, feature_gates={**base.feature_gates, **gates})


def _positive_duration(value: str | None, flag: str) -> float | None:
    """The seconds in ``value``, a positive Go duration given as ``flag``; None when it is not given."""
    if value is None:
        return None
    try:
        seconds = parse_duration(value)
    except InputError as exc:
        raise InputError(exc.message, field=flag) from None
    if seconds <= 0:
        raise InputError(f"must be a positive duration, got {value!r}", field=flag)
    return seconds


def _print_runs(
    done: list[tuple[RunSpec, SimulationResult, MetricsRecorder | None]],
    args: argparse.Namespace,
    reports: list[RunReport],
) -> None:
    """Several configs: one JSON line / YAML document per run, or one side-by-side table."""
    docs = []
    for (run, result, recorder), report in zip(done, reports, strict=True):
        doc = {"run": run.label, "config": run.source, **result_document(result, args.explain)}
        if recorder is not None:
            doc["metrics"] = report.metrics.summary()
        docs.append(doc)
    if args.output == "json":
        for doc in docs:
            print(json.dumps(doc))
    elif args.output == "yaml":
        print(yaml.safe_dump_all(docs, sort_keys=False), end="")
    else:
        console = Console()
        for run, result, _ in done:
            console.print(
                f"{escape(run.label)}: {result.scheduled} scheduled, {result.unschedulable} unschedulable, "
                f"{result.pending} pending ({result.cycles} scheduling cycles)"
            )
        console.print(summary_table(reports, title="policy comparison"))


def _write_outputs(
    args: argparse.Namespace, reports: list[RunReport], err: Console, sample_every: float | None
) -> None:
    if not (args.report or args.export):
        return
    inputs = [*args.paths, *([args.trace] if args.trace else []), *(args.nodes or [])]
    # The grid actually sampled: a run may have coarsened it to bound the sample count.
    sample_every = max((r.metrics.sample_every or 0.0 for r in reports), default=sample_every) or sample_every
    meta = [
        ("inputs", " ".join(inputs)),
        ("seed", str(args.seed)),
        ("sampling", f"every {sample_every:g} virtual seconds" if sample_every else "every change"),
    ]
    written: list[Path] = []
    flag = "--report"
    try:
        if args.report:
            written += write_report(args.report, reports, meta)
            written += export_runs(args.report, reports, meta=dict(meta))
        flag = "--export"
        if args.export:
            written += export_runs(args.export, reports, meta=dict(meta))
    except OSError as exc:
        raise InputError(f"cannot write: {exc}", field=flag) from None
    if not args.quiet:
        where = sorted({str(p.parent) for p in written})
        err.print(f"wrote {len(written)} files to {', '.join(where)}", soft_wrap=True)


def cmd_explain(args: argparse.Namespace) -> int:
    """Run the simulation with explain on, then show one pod's latest attempt."""
    from kubesched.scheduler.explain_view import render_explain

    registry = _registry(args)
    config = load_config(args.config, registry) if args.config else None
    if args.feature_gates:
        config = _gated(config, parse_feature_gates(args.feature_gates), registry)
    loaded = load_manifests(args.paths)
    batch_conf = load_batch_conf(args.batch_conf) if args.batch_conf else None
    sim = Simulation(config, registry, seed=args.seed, explain=True, batch_conf=batch_conf)
    sim.load(loaded)
    result = sim.run()
    key = args.pod if "/" in args.pod else f"default/{args.pod}"
    outcome = next((o for o in result.outcomes if o.key == key), None)
    if outcome is None:
        known = ", ".join(o.key for o in result.outcomes[:10])
        raise InputError(
            f"no pending pod {key} in the input (pods: {known}{', …' if len(result.outcomes) > 10 else ''})"
        )
    console = Console()
    if outcome.explain is None and explain_batch_pod(result, outcome.namespace, outcome.name, console):
        console.print(f"{escape(outcome.key)}: {outcome.status} {escape(outcome.message)}", soft_wrap=True)
        return EXIT_OK
    render_explain(outcome, console, top=args.top)
    return EXIT_OK


def cmd_bench(args: argparse.Namespace) -> int:
    gates = parse_feature_gates(args.feature_gates) if args.feature_gates else {}
    if args.all:
        return _bench_all(args, gates)
    fn = WORKLOADS[args.workload]
    sizes = {"nodes": args.nodes, "existing_pods": args.existing_pods, "pods": args.pods}
    res = fn(**{k: v for k, v in sizes.items() if v is not None}, seed=args.seed, feature_gates=gates)
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


def _plugin_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--plugin",
        action="append",
        metavar="MODULE:CLASS",
        help="register an out-of-tree plugin class (repeatable); enable it by name in --config. "
        "Installed packages' kubesched.plugins entry points are registered too",
    )


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
    started = time.perf_counter()
    results = run_grid(
        Path(args.nodes),
        [Path(p) for p in args.pod_list],
        policies,
        _seeds(args.seeds),
        jobs=args.jobs,
        tie_break=args.tie_break,
    )
    wall = time.perf_counter() - started
    out = Path(args.out)
    write_csv(results, out)
    report = write_report(out, results, wall)
    table = Table(title="unallocated GPU % at 100 % arrived")
    for col in ("pod list", "policy", "mean ± sd", "seeds", "paper"):
        table.add_column(col)
    for pl, pol, mean, sd, n in summary(results):
        paper = PAPER_UNALLOCATED.get(pol) if pl == "openb_pod_list_default" else None
        table.add_row(pl, pol, f"{mean:.2f} ± {sd:.2f}", str(n), f"{paper:.2f}" if paper is not None else "")
    Console().print(table)
    print(f"{len(results)} cells in {wall:.0f} s; wrote {out / 'unallocated.csv'} and {report}")
    return EXIT_OK


def _int_flag(minimum: int, maximum: int | None = None) -> Callable[[str], int]:
    """An argparse type for integers in ``[minimum, maximum]``; out of range is a usage error (exit 2)."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
        if value < minimum or (maximum is not None and value > maximum):
            upper = f" and at most {maximum}" if maximum is not None else ""
            raise argparse.ArgumentTypeError(f"must be at least {minimum}{upper}, got {value}")
        return value

    return parse


_count = _int_flag(0)
_positive = _int_flag(1)
#: Seeds are unsigned 64-bit numbers, what NumPy's generators take.
_seed = _int_flag(0, 2**64 - 1)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="kubesched", description="A Kubernetes scheduler in Python.")
    parser.add_argument("--version", action="version", version=f"kubesched {__version__}")
    parser.add_argument("-v", "--verbose", action="count", default=0, help="more logging (-vv for debug)")
    parser.add_argument(
        "--logging-format",
        choices=("text", "json"),
        default="text",
        help="log lines as text, or as one JSON object each (as Kubernetes components' json format)",
    )
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
    sim.add_argument(
        "--limit", type=_count, metavar="N", help="read only the first N pods (jobs) of the trace"
    )
    sim.add_argument(
        "--config",
        action="append",
        help="KubeSchedulerConfiguration (kubescheduler.config.k8s.io/v1) file; repeat to compare configs",
    )
    sim.add_argument("--sweep", metavar="FILE", help="compare the configs and variants a sweep file lists")
    sim.add_argument("--report", metavar="DIR", help="write report.html, plots and metrics files into DIR")
    sim.add_argument("--export", metavar="DIR", help="write the metrics as CSV and Parquet files into DIR")
    sim.add_argument(
        "--sample-every",
        metavar="DURATION",
        help="sample metrics every DURATION of virtual time (60s, 5m) instead of at every change",
    )
    sim.add_argument(
        "--pool-label", metavar="KEY", help="node label that names node pools (default: see docs/reports.md)"
    )
    sim.add_argument("-o", "--output", choices=("table", "json", "yaml"), default="table")
    sim.add_argument(
        "--explain", action="store_true", help="record per-node, per-plugin filter and score results"
    )
    sim.add_argument("--seed", type=_seed, default=0, help="seed for random tie-breaks (default 0)")
    sim.add_argument(
        "--batch-conf",
        metavar="FILE",
        help="Volcano scheduler conf for the batch profile (pods of schedulerName volcano)",
    )
    sim.add_argument(
        "--schedule-period",
        metavar="DURATION",
        help="virtual time between batch (Volcano) sessions, e.g. 1s or 500ms (default 1s)",
    )
    sim.add_argument(
        "--fail-on-unschedulable",
        action="store_true",
        help="exit 1 if any pod is left unschedulable or pending",
    )
    sim.add_argument("-q", "--quiet", action="store_true", help="no warnings or progress bar on stderr")
    _plugin_flag(sim)
    sim.add_argument(
        "--feature-gates",
        metavar="NAME=BOOL,...",
        help="feature gates, as kube-scheduler takes them (e.g. OpportunisticBatching=false)",
    )
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
    explain.add_argument("--seed", type=_seed, default=0, help="seed for random tie-breaks (default 0)")
    explain.add_argument("--batch-conf", metavar="FILE", help="Volcano scheduler conf for the batch profile")
    explain.add_argument(
        "--feature-gates",
        metavar="NAME=BOOL,...",
        help="feature gates, as kube-scheduler takes them (e.g. OpportunisticBatching=false)",
    )
    explain.add_argument(
        "--top", type=_count, default=5, help="how many top-scored nodes to show (default 5)"
    )
    _plugin_flag(explain)
    explain.set_defaults(func=cmd_explain)

    bench = sub.add_parser("bench", help="measure scheduling throughput on a synthetic workload")
    bench.add_argument("workload", nargs="?", default="basic", choices=tuple(WORKLOADS))
    bench.add_argument("--nodes", type=_positive, default=None, help="nodes (default: the workload's own)")
    bench.add_argument(
        "--existing-pods",
        type=_count,
        default=None,
        help="pods placed before measuring (default: the workload's)",
    )
    bench.add_argument(
        "--pods", type=_count, default=None, help="pods to place (default: the workload's own)"
    )
    bench.add_argument("--seed", type=_seed, default=0)
    bench.add_argument(
        "--all", action="store_true", help="run every workload of the suite and print one table"
    )
    bench.add_argument("--json", action="store_true", help="print the result as one JSON line")
    bench.add_argument(
        "--feature-gates",
        metavar="NAME=BOOL,...",
        help="feature gates, as kube-scheduler takes them (e.g. OpportunisticBatching=false)",
    )
    bench.set_defaults(func=cmd_bench)

    serve = sub.add_parser(
        "serve", help="run a one-process cluster (API server, both schedulers, simulated nodes) for kubectl"
    )
    serve.add_argument("paths", nargs="*", metavar="FILE_OR_DIR", help="manifests to create at start")
    serve.add_argument("--nodes", type=int, default=0, help="simulated nodes to create (node-0 …)")
    serve.add_argument("--node-cpu", default="32", help="each simulated node's CPU (default 32)")
    serve.add_argument("--node-memory", default="256Gi", help="each simulated node's memory (default 256Gi)")
    serve.add_argument("--node-pods", default="110", help="each simulated node's pod capacity (default 110)")
    serve.add_argument("--zones", type=int, default=3, help="zones the simulated nodes are spread over")
    serve.add_argument("--data-dir", default=".kubesched", help="state, certificates and kubeconfig")
    serve.add_argument("--address", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    serve.add_argument("--port", type=int, default=6443, help="port to listen on (0: any free one)")
    serve.add_argument("--config", help="KubeSchedulerConfiguration (kubescheduler.config.k8s.io/v1) file")
    serve.add_argument("--batch-conf", metavar="FILE", help="Volcano scheduler conf for the batch profile")
    serve.add_argument(
        "--no-auto-namespaces",
        action="store_true",
        help="refuse objects in missing namespaces (404, as kube-apiserver) instead of creating them",
    )
    serve.add_argument(
        "--no-schedulers",
        action="store_true",
        help="serve the API and the simulated nodes only; schedule with another scheduler (kubesched run)",
    )
    _plugin_flag(serve)
    serve.set_defaults(func=cmd_serve)

    _run_parser(sub)

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
    fgd.add_argument("--out", required=True, metavar="DIR", help="where the CSV files, plots and report go")
    fgd.set_defaults(func=cmd_experiment_fgd)
    return parser


def cmd_serve(args: argparse.Namespace) -> int:
    from kubesched.apiserver.server import ServeOptions, serve
    from kubesched.store.sqlite import StoreLocked

    if args.nodes < 0 or not 0 <= args.port <= 65535 or args.zones < 1:
        raise InputError("--nodes must be >= 0, --zones >= 1 and --port within 0..65535")
    registry = _registry(args)
    config = load_config(args.config, registry) if args.config else None
    batch_conf = load_batch_conf(args.batch_conf) if args.batch_conf else None
    objects = [dict(mo.obj) for mo in load_manifests(args.paths).objects] if args.paths else []
    options = ServeOptions(
        data_dir=Path(args.data_dir),
        address=args.address,
        port=args.port,
        nodes=args.nodes,
        node_cpu=args.node_cpu,
        node_memory=args.node_memory,
        node_pods=args.node_pods,
        zones=args.zones,
        objects=objects,
        config=config,
        batch_conf=batch_conf,
        auto_create_namespaces=not args.no_auto_namespaces,
        registry=registry,
        schedulers=not args.no_schedulers,
    )
    try:
        serve(options)
    except StoreLocked as exc:
        print(f"error: --data-dir {args.data_dir}: {exc}", file=sys.stderr)
        return EXIT_RUN_FAILED
    return EXIT_OK


def _bool_flag(text: str) -> bool:
    """A Go-style boolean flag value (``--leader-elect=false``)."""
    value = text.strip().lower()
    if value in ("1", "t", "true", "yes", "on"):
        return True
    if value in ("0", "f", "false", "no", "off"):
        return False
    raise argparse.ArgumentTypeError(f"expected true or false, got {text!r}")


def _duration_flag(text: str) -> float:
    """A Go duration (``15s``, ``1m30s``) or seconds; a usage error (exit 2) when malformed."""
    try:
        return parse_duration(text)
    except InputError as exc:
        raise argparse.ArgumentTypeError(exc.message) from None


def _qps_flag(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"must be a positive number, got {text!r}")
    return value


def _run_parser(sub: Any) -> None:
    run = sub.add_parser(
        "run",
        help="schedule the pods of a real cluster (kubeconfig, or in-cluster when run in a pod)",
        description="Run both schedulers against a Kubernetes cluster. Flags are kube-scheduler's where "
        "it has them. Pods are taken by spec.schedulerName: the profiles of --config (default-scheduler "
        "unless it names others) and volcano for the batch scheduler.",
    )
    run.add_argument(
        "--kubeconfig",
        metavar="FILE",
        help="kubeconfig file (default: KUBECONFIG, ~/.kube/config, or the pod's service account)",
    )
    run.add_argument("--context", help="kubeconfig context to use (default: its current-context)")
    run.add_argument(
        "--config", metavar="FILE", help="KubeSchedulerConfiguration (kubescheduler.config.k8s.io/v1)"
    )
    run.add_argument("--batch-conf", metavar="FILE", help="Volcano scheduler conf for the batch scheduler")
    run.add_argument(
        "--batch-scheduler-name",
        action="append",
        metavar="NAME",
        help="spec.schedulerName of the pods the batch scheduler takes, as Volcano's --scheduler-name "
        "(repeatable; default volcano)",
    )
    run.add_argument(
        "--feature-gates",
        metavar="NAME=BOOL,...",
        help="feature gates, as kube-scheduler takes them (e.g. OpportunisticBatching=false)",
    )
    _plugin_flag(run)
    run.add_argument(
        "--leader-elect",
        nargs="?",
        const=True,
        default=True,
        type=_bool_flag,
        metavar="BOOL",
        help="elect a leader among replicas before scheduling (default true)",
    )
    run.add_argument(
        "--no-leader-elect", dest="leader_elect", action="store_false", help="same as --leader-elect=false"
    )
    run.add_argument(
        "--leader-elect-resource-name", default="kubesched", metavar="NAME", help="the Lease's name"
    )
    run.add_argument(
        "--leader-elect-resource-namespace", default="kube-system", metavar="NS", help="the Lease's namespace"
    )
    for flag, default, what in (
        (
            "--leader-elect-lease-duration",
            "15s",
            "how long a standby waits before taking over a silent lease",
        ),
        ("--leader-elect-renew-deadline", "10s", "how long the leader tries to renew before it gives up"),
        ("--leader-elect-retry-period", "2s", "the wait between tries to acquire or renew"),
    ):
        run.add_argument(
            flag, default=default, type=_duration_flag, metavar="DURATION", help=f"{what} (default {default})"
        )
    run.add_argument(
        "--kube-api-qps",
        type=_qps_flag,
        default=50.0,
        metavar="QPS",
        help="requests per second to the API server (default 50)",
    )
    run.add_argument(
        "--kube-api-burst",
        type=_positive,
        default=100,
        metavar="N",
        help="requests allowed in a burst (default 100)",
    )
    run.add_argument(
        "--bind-address",
        default="0.0.0.0",
        metavar="IP",
        help="address of the health and metrics endpoint (default 0.0.0.0)",
    )
    run.add_argument(
        "--secure-port",
        "--port",
        dest="port",
        type=_int_flag(0, 65535),
        default=10259,
        metavar="PORT",
        help="port of the health and metrics endpoint, plain HTTP; 0 for none (default 10259)",
    )
    run.add_argument(
        "-v",
        "--v",
        dest="log_level",
        type=_int_flag(0, 10),
        default=None,
        metavar="N",
        help="log level: 0-3 info, 4 and more debug (default 0)",
    )
    run.add_argument("--seed", type=_seed, default=None, help="seed for random tie-breaks (default: random)")
    run.set_defaults(func=cmd_run)


def cmd_run(args: argparse.Namespace) -> int:
    import signal
    import threading

    from kubesched.remote.run import RunError, Runner, RunOptions

    level = logging.DEBUG if (args.log_level or 0) >= 4 or args.verbose >= 2 else logging.INFO
    logging.getLogger().setLevel(level)
    registry = _registry(args)
    gates = parse_feature_gates(args.feature_gates) if args.feature_gates else {}
    config = load_config(args.config, registry) if args.config else None
    options = RunOptions(
        kubeconfig=args.kubeconfig,
        context=args.context,
        config=_gated(config, gates, registry),
        batch_conf=load_batch_conf(args.batch_conf) if args.batch_conf else None,
        batch_scheduler_names=tuple(args.batch_scheduler_name or (BATCH_SCHEDULER_NAME,)),
        registry=registry,
        qps=args.kube_api_qps,
        burst=args.kube_api_burst,
        leader_elect=args.leader_elect,
        lease_name=args.leader_elect_resource_name,
        lease_namespace=args.leader_elect_resource_namespace,
        lease_duration=args.leader_elect_lease_duration,
        renew_deadline=args.leader_elect_renew_deadline,
        retry_period=args.leader_elect_retry_period,
        bind_address=args.bind_address,
        port=args.port,
        seed=args.seed,
    )
    options.validate()
    stop = threading.Event()

    def on_signal(signum: int, _frame: Any) -> None:
        logging.getLogger(__name__).info("received %s: stopping", signal.Signals(signum).name)
        stop.set()

    previous = {sig: signal.signal(sig, on_signal) for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        return Runner(options).run(stop)
    except RunError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_RUN_FAILED
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    configure_logging(logging.WARNING - 10 * min(args.verbose, 2), args.logging_format)
    try:
        code: int = args.func(args)
        return code
    except InputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except BrokenPipeError:
        return EXIT_OK


def entry() -> None:
    """The ``kubesched`` command: the process's collector tuned for scheduling, then :func:`main`."""
    tune_collector()
    sys.exit(main())


if __name__ == "__main__":
    entry()
