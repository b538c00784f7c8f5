"""``kubesched simulate``: schedule the pending pods of manifests, or replay a trace, on an embedded
cluster, and print, report or export what happened."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any, TextIO

import yaml
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from kubesched.api.durations import parse_duration
from kubesched.api.features import DEFAULT_FEATURE_GATES
from kubesched.api.manifests import KINDS, LoadResult, ManifestObject, load_manifests
from kubesched.api.objects import object_ref
from kubesched.api.sharing import share_equal_parts
from kubesched.batch.conf_loader import load_batch_conf
from kubesched.cli.options import (
    EXIT_OK,
    EXIT_UNSCHEDULABLE,
    count_flag,
    dra_driver_flags,
    dra_driver_of,
    feature_gates_flag,
    gated,
    plugin_flag,
    plugin_registry_of,
    seed_flag,
    sweep_engine_flags,
)
from kubesched.errors import InputError
from kubesched.framework.config import parse_feature_gates
from kubesched.framework.outcome import PodOutcome
from kubesched.sim.batch_output import batch_document, print_batch_tables
from kubesched.sim.compare import RunResult, RunSettings, RunSpec, plan_runs, run_as_sweep, run_inline
from kubesched.sim.export import export_runs
from kubesched.sim.metrics import MetricsRecorder
from kubesched.sim.report import RunReport, summary_table, write_report
from kubesched.sim.simulation import SimulationResult
from kubesched.sim.traces import FORMATS as TRACE_FORMAT_LOADERS
from kubesched.sim.traces import load_trace
from kubesched.sim.workload import Workload, to_manifests

TRACE_FORMATS = tuple(TRACE_FORMAT_LOADERS)

TRACE_SUFFIXES = (".csv", ".jsonl")


def add_parser(sub: Any) -> None:
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
        "--limit", type=count_flag, metavar="N", help="read only the first N pods (jobs) of the trace"
    )
    sim.add_argument(
        "--config",
        action="append",
        help="KubeSchedulerConfiguration (kubescheduler.config.k8s.io/v1) file; repeat to compare configs",
    )
    sim.add_argument("--sweep", metavar="FILE", help="compare the configs and variants a sweep file lists")
    sim.add_argument("--report", metavar="DIR", help="write report.html, plots and metrics files into DIR")
    sim.add_argument(
        "--export",
        metavar="DIR",
        help="write the metrics as CSV and Parquet files into DIR; with several runs, each run's own "
        "files go to DIR/runs/LABEL/ the moment it ends",
    )
    sim.add_argument(
        "--resume",
        metavar="DIR",
        help="as --export DIR for several runs, keeping the runs already finished in DIR/runs/ (from "
        "the same inputs) and running only the others",
    )
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
    sim.add_argument("--seed", type=seed_flag, default=0, help="seed for random tie-breaks (default 0)")
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
    sim.add_argument(
        "--reschedule-all",
        action="store_true",
        help="schedule every pod afresh, the bound ones too (a snapshot's running pods stay put without it)",
    )
    sweep_engine_flags(sim, "several runs (--config, --sweep)", "one per run, at most one per core")
    dra_driver_flags(sim)
    sim.add_argument("-q", "--quiet", action="store_true", help="no warnings or progress bar on stderr")
    plugin_flag(sim)
    feature_gates_flag(sim)
    sim.set_defaults(func=cmd_simulate)


#: Runs from this many on are tasks of the sweep engine; fewer run inline, without starting it.
ENGINE_RUNS = 2


def cmd_simulate(args: argparse.Namespace) -> int:
    _check_output_dir(args.report, "--report")
    _check_output_dir(args.export, "--export")
    _check_output_dir(args.resume, "--resume")
    if args.resume is not None:
        if args.export is not None and Path(args.export).resolve() != Path(args.resume).resolve():
            raise InputError(
                f"--resume {args.resume!r} writes the export there; --export names another directory",
                field="--export",
            )
        args.export = args.resume
    registry = plugin_registry_of(args)
    runs = plan_runs(args.config or [], args.sweep, registry)
    gates = parse_feature_gates(args.feature_gates) if args.feature_gates else {}
    # The simulated cluster's own gates (admission, the API's fields) are the flag's.
    DEFAULT_FEATURE_GATES.set_all(gates)
    runs = [RunSpec(r.label, gated(r.config, gates, registry), r.source, r.text) for r in runs]
    sample_every = _positive_duration(args.sample_every, "--sample-every")
    # --schedule-period: Volcano's flag of that name.
    schedule_period = _positive_duration(args.schedule_period, "--schedule-period")
    if args.workers is not None and args.workers < 1:
        raise InputError(f"must be at least 1, got {args.workers}", field="--workers")
    if args.resume is not None and len(runs) < 2:
        raise InputError(
            "resumes a sweep of several runs (--config repeated, --sweep); this one has a single run",
            field="--resume",
        )
    loaded = load_inputs(args)
    err = Console(stderr=True)
    on_engine = len(runs) >= ENGINE_RUNS
    # A trace replay on a terminal shows its progress; metrics are recorded when anything uses them.
    show_progress = not args.quiet and err.is_terminal and (bool(args.trace) or on_engine)
    settings = RunSettings(
        registry=registry,
        gates=gates,
        seed=args.seed,
        explain=args.explain,
        batch_conf=load_batch_conf(args.batch_conf) if args.batch_conf else None,
        schedule_period=schedule_period,
        dra_driver=dra_driver_of(args),
        metrics=bool(args.report or args.export or len(runs) > 1 or show_progress),
        sample_every=sample_every,
        pool_label=args.pool_label,
    )
    if on_engine or (len(runs) > 1 and args.export):
        results = _run_sweep(args, settings, runs, loaded, err, show_progress, on_engine)
    else:
        results = run_inline(settings, runs, loaded, err if show_progress else None)
    done = [(run, result, recorder) for run, (result, recorder) in zip(runs, results, strict=True)]
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
            write_json(result_document(result, args.explain), sys.stdout, indent=2)
        elif args.output == "yaml":
            yaml.safe_dump(result_document(result, args.explain), sys.stdout, sort_keys=False)
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


def _run_sweep(
    args: argparse.Namespace,
    settings: RunSettings,
    runs: list[RunSpec],
    loaded: LoadResult,
    err: Console,
    show_progress: bool,
    on_engine: bool,
) -> list[RunResult]:
    """Several runs as one sweep: ``on_engine``, tasks of the sweep engine (a local Dask cluster of
    one worker per run to run, at most one per core, or the one at ``--cluster``), else one after
    the other in this process. With an export directory each run's files are written as it ends
    (kubesched.sim.sweep_runs), and with ``--resume`` the runs already there are kept, not run
    again."""
    # Imported here: only several runs pay for the engine's import.
    from kubesched.sim.sweep_engine import InlineCells, SweepProgress

    sink = None
    if len(runs) > 1 and args.export:
        from kubesched.sim.sweep_runs import RunStore, fingerprint, workload_digest

        def note(text: str) -> None:
            if not args.quiet:
                err.print(escape(text), soft_wrap=True)

        workload = workload_digest(loaded)
        sink = RunStore(
            Path(args.export),
            runs,
            [fingerprint(run, workload, settings) for run in runs],
            flag="--resume" if args.resume is not None else "--export",
            resume=args.resume is not None,
            note=note,
        )
    bar = SweepProgress("runs", err) if show_progress else None
    try:
        return run_as_sweep(
            settings,
            runs,
            loaded,
            sink=sink,
            engine=None if on_engine else InlineCells(),
            address=args.cluster,
            workers=args.workers,
            progress=bar,
        )
    finally:
        if bar is not None:
            bar.stop()


def write_json(doc: Any, out: TextIO, indent: int | None = None) -> None:
    """``print(json.dumps(doc, indent=indent))`` without the whole text in memory at once.

    With an indent, ``json.dumps`` joins a list of every token of the document (a few dozen small
    strings for each pod), which for a large cluster weighs more than the text; the tokens are
    written out a batch at a time instead."""
    batch: list[str] = []
    for chunk in json.JSONEncoder(indent=indent).iterencode(doc):
        batch.append(chunk)
        if len(batch) >= _JSON_BATCH:
            out.write("".join(batch))
            batch.clear()
    batch.append("\n")
    out.write("".join(batch))


#: Tokens of JSON output joined per write.
_JSON_BATCH = 8192


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
    if args.reschedule_all:
        unbind(loaded)
    # A cluster's pods repeat their workloads' containers, requests and labels: the store keeps
    # one of each for all of them.
    share_equal_parts(mo.obj for mo in loaded.objects)
    return loaded


#: Static pods are the kubelet's own; their API objects (mirror pods) stay on their node.
_MIRROR = "kubernetes.io/config.mirror"


def unbind(loaded: LoadResult) -> None:
    """Make every running pod pending again (mirror pods of static pods excepted): its node is the
    scheduler's to choose."""
    for mo in loaded.of_kind("Pod"):
        obj = mo.obj
        spec = obj.get("spec") or {}
        if not spec.get("nodeName") or _MIRROR in ((obj.get("metadata") or {}).get("annotations") or {}):
            continue
        obj["spec"] = {k: v for k, v in spec.items() if k != "nodeName"}
        obj.pop("status", None)


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
