"""Files for ``kubesched experiment gangs --report DIR``: ``summary.csv`` (one row per workload and
arm), ``jobs.csv`` (one row per job and arm) and per workload three plots: the cluster over time
(busy GPUs, partial placements held), the distributions of completion time and queueing delay,
and the topology domains (racks) each multi-node job was spread over. Plots use matplotlib's Agg
backend on ``Figure`` objects, as the other reports do."""

from __future__ import annotations

import csv
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kubesched.sim.gang_experiment import ARMS, SUMMARY_COLUMNS, ArmResult, summary_rows

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

__all__ = ["write_report"]

JOB_COLUMNS = (
    "workload",
    "arm",
    "job",
    "pods",
    "gpus",
    "arrival_s",
    "duration_s",
    "start_s",
    "end_s",
    "queueing_s",
    "completion_s",
    "state",
    "bound_at_end",
    "nodes",
    "racks",
    "zones",
)
_COLORS = {
    "default": "tab:red",
    "workload-gang": "tab:blue",
    "volcano": "tab:green",
    "workload-gang-zone": "tab:purple",
}


def _figure(width: float, height: float) -> Figure:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height), layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def _fmt(value: Any) -> Any:
    if isinstance(value, float):
        return "" if math.isnan(value) else f"{value:.3f}"
    return "" if value is None else value


def write_csv(results: Sequence[ArmResult], out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    with (out / "summary.csv").open("w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(SUMMARY_COLUMNS)
        for row in summary_rows(results):
            writer.writerow([_fmt(row[c]) for c in SUMMARY_COLUMNS])
    with (out / "jobs.csv").open("w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(JOB_COLUMNS)
        for r in results:
            for j in r.jobs:
                writer.writerow(
                    [
                        _fmt(v)
                        for v in (
                            r.workload,
                            r.arm,
                            j.name,
                            j.pods,
                            j.gpus,
                            j.arrival,
                            j.duration,
                            j.start,
                            j.end,
                            j.queueing_delay,
                            j.completion_time,
                            j.state,
                            j.bound_at_end,
                            j.nodes,
                            j.racks,
                            j.zones,
                        )
                    ]
                )


def _steps(
    ax: Axes, r: ArmResult, series: Sequence[int], scale: float, labels: Mapping[str, str], color: str | None
) -> None:
    hours = [t / 3600.0 for t in r.times]
    ax.step(
        hours,
        [v * scale for v in series],
        where="post",
        label=labels.get(r.arm, r.arm),
        color=color,
        linewidth=1.1,
    )


def _color(r: ArmResult, k: int, colors: Mapping[str, str] | None) -> str:
    """The arm's colour: the gang arms' own, else the k-th of matplotlib's cycle."""
    return (colors or _COLORS).get(r.arm) or f"C{k % 10}"


def timeline_figure(
    results: Sequence[ArmResult], labels: Mapping[str, str] = ARMS, colors: Mapping[str, str] | None = None
) -> Figure:
    """Busy GPUs (% of the cluster, in started jobs) and pods of unstarted jobs holding GPUs."""
    fig = _figure(9.0, 5.5)
    busy, partial = fig.subplots(2, 1, sharex=True)
    for k, r in enumerate(results):
        _steps(busy, r, r.busy, 100.0 / r.total_gpus, labels, _color(r, k, colors))
        _steps(partial, r, r.partial_pods, 1.0, labels, _color(r, k, colors))
    busy.set_ylabel("GPUs busy in running jobs (%)")
    busy.set_ylim(0, 105)
    busy.legend(loc="lower right", fontsize="small")
    partial.set_ylabel("pods bound, gang incomplete")
    partial.set_xlabel("virtual time (h)")
    if results:
        busy.set_title(f"{results[0].workload}: the cluster over time")
    return fig


def _cdf(ax: Axes, values: Sequence[float], r: ArmResult, label: str, color: str) -> None:
    xs = sorted(v / 60.0 for v in values)
    if not xs:
        return
    ys = [100.0 * (i + 1) / len(r.jobs) for i in range(len(xs))]
    ax.step(xs, ys, where="post", label=label, color=color, linewidth=1.2)


def delays_figure(
    results: Sequence[ArmResult], labels: Mapping[str, str] = ARMS, colors: Mapping[str, str] | None = None
) -> Figure:
    """CDFs (of all jobs: a job that never ended keeps its curve below 100 %) of completion time and
    queueing delay, log-scaled minutes."""
    fig = _figure(9.0, 3.8)
    jct, wait = fig.subplots(1, 2, sharey=True)
    for k, r in enumerate(results):
        label, color = labels.get(r.arm, r.arm), _color(r, k, colors)
        _cdf(jct, [j.completion_time for j in r.jobs if j.completion_time is not None], r, label, color)
        waits = [max(j.queueing_delay, 1.0) for j in r.jobs if j.queueing_delay is not None]
        _cdf(wait, waits, r, label, color)
    for ax, what in ((jct, "job completion time (min)"), (wait, "queueing delay (min, ≥ 1 s)")):
        ax.set_xscale("log")
        ax.set_xlabel(what)
        ax.grid(alpha=0.3)
    jct.set_ylabel("jobs (%)")
    wait.legend(loc="lower right", fontsize="small")
    if results:
        fig.suptitle(results[0].workload)
    return fig


def topology_figure(results: Sequence[ArmResult]) -> Figure:
    """How many racks each started multi-node job was spread over, per arm."""
    fig = _figure(7.0, 3.6)
    ax = fig.add_subplot(1, 1, 1)
    counts = [[j.racks for j in r.jobs if j.start is not None and j.nodes > 1] for r in results]
    most = max((max(c, default=0) for c in counts), default=0)
    width = 0.8 / max(1, len(results))
    for k, (r, racks) in enumerate(zip(results, counts, strict=True)):
        xs = list(range(1, most + 1))
        ys = [100.0 * racks.count(x) / len(racks) if racks else 0.0 for x in xs]
        ax.bar(
            [x + (k - (len(results) - 1) / 2) * width for x in xs],
            ys,
            width,
            label=ARMS[r.arm],
            color=_COLORS.get(r.arm),
        )
    ax.set_xlabel("racks used by one multi-node job")
    ax.set_ylabel("multi-node jobs (%)")
    ax.legend(fontsize="small")
    if results:
        ax.set_title(f"{results[0].workload}: topology domains per job")
    return fig


def write_report(results: Sequence[ArmResult], out: Path) -> list[Path]:
    """Write the CSV files and the plots; returns the files written."""
    write_csv(results, out)
    written = [out / "summary.csv", out / "jobs.csv"]
    for workload in dict.fromkeys(r.workload for r in results):
        arms = [r for r in results if r.workload == workload]
        for name, fig in (
            ("timeline", timeline_figure(arms)),
            ("delays", delays_figure(arms)),
            ("topology", topology_figure(arms)),
        ):
            path = out / f"{workload}_{name}.png"
            fig.savefig(path, dpi=110)
            written.append(path)
    return written
