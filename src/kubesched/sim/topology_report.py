"""Files for ``kubesched experiment topology --report DIR``: ``summary.csv`` (one row per arm),
``table.md`` (the side-by-side table), ``jobs.csv`` (one row per job and arm, with the nodes, leaves
and spines its pods were bound in) and three plots: how many leaves each multi-pod job spanned beside
the queueing delay of those jobs, the distributions of queueing delay and completion time of all
jobs, and the cluster over time. Plots use
matplotlib's Agg backend, as the other reports do."""

from __future__ import annotations

import csv
import math
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from kubesched.sim.gang_experiment import ArmResult, JobResult
from kubesched.sim.gang_report import delays_figure, timeline_figure
from kubesched.sim.topology_experiment import (
    ARMS,
    TOPOLOGY_COLUMNS,
    Fabric,
    domains,
    markdown_table,
    pooled_rows,
    seed_table,
    topology_rows,
)

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["write_report"]

COLORS: Final = {"none": "tab:red", "plugin": "tab:orange", "soft": "tab:blue", "hard": "tab:green"}
JOB_COLUMNS: Final = (
    "arm",
    "seed",
    "job",
    "pods",
    "gpus",
    "arrival_s",
    "duration_s",
    "start_s",
    "end_s",
    "queueing_s",
    "state",
    "leaves",
    "spines",
    "nodes",
)


def _fmt(value: Any) -> Any:
    if isinstance(value, float):
        return "" if math.isnan(value) else f"{value:.3f}"
    return "" if value is None else value


def write_csv(results: Sequence[ArmResult], fabric: Fabric, out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    rows = topology_rows(results, fabric)
    pooled = pooled_rows(rows)
    several = len(pooled) < len(rows)
    with (out / "summary.csv").open("w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(TOPOLOGY_COLUMNS)
        for row in [*rows, *pooled] if several else rows:
            values = row.as_dict()
            writer.writerow([_fmt(values[c]) for c in TOPOLOGY_COLUMNS])
    table = markdown_table(pooled)
    if several:
        table += "\n" + seed_table(rows)
    (out / "table.md").write_text(table, encoding="utf-8")
    with (out / "jobs.csv").open("w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(JOB_COLUMNS)
        for r in results:
            for j in r.jobs:
                placed = bool(j.placement)
                writer.writerow(
                    [
                        _fmt(v)
                        for v in (
                            r.arm,
                            r.seed,
                            j.name,
                            j.pods,
                            j.gpus,
                            j.arrival,
                            j.duration,
                            j.start,
                            j.end,
                            j.queueing_delay,
                            j.state,
                            domains(j, fabric.leaf_of) if placed else None,
                            domains(j, fabric.spine_of) if placed else None,
                            " ".join(j.placement),
                        )
                    ]
                )


def leaves_figure(results: Sequence[ArmResult], fabric: Fabric) -> Figure:
    """Left: share of the started multi-pod jobs per number of leaves their pods spanned. Right: the
    queueing delay of the multi-pod jobs (CDF over them all, log minutes), one series per arm, its
    seeds pooled."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(10.0, 3.8), layout="constrained")
    FigureCanvasAgg(fig)
    ax, wait = fig.subplots(1, 2)
    by_arm: dict[str, list[JobResult]] = {}
    for r in results:
        by_arm.setdefault(r.arm, []).extend(r.jobs)
    counts = [
        [domains(j, fabric.leaf_of) for j in jobs if j.placement and j.pods > 1] for jobs in by_arm.values()
    ]
    most = max((max(c, default=0) for c in counts), default=0)
    width = 0.8 / max(1, len(by_arm))
    xs = list(range(1, most + 1))
    for k, (arm, leaves) in enumerate(zip(by_arm, counts, strict=True)):
        label, color = ARMS.get(arm, arm), COLORS.get(arm, f"C{k % 10}")
        ys = [100.0 * leaves.count(x) / len(leaves) if leaves else 0.0 for x in xs]
        ax.bar([x + (k - (len(by_arm) - 1) / 2) * width for x in xs], ys, width, label=label, color=color)
        multi = [j for j in by_arm[arm] if j.pods > 1]
        waits = sorted(max(j.queueing_delay, 1.0) / 60.0 for j in multi if j.queueing_delay is not None)
        if waits:
            ys = [100.0 * (i + 1) / len(multi) for i in range(len(waits))]
            wait.step(waits, ys, where="post", label=label, color=color, linewidth=1.2)
    ax.set_xticks(xs)
    ax.set_xlabel("leaves spanned by one multi-pod job")
    ax.set_ylabel("multi-pod jobs (%)")
    ax.set_title(f"{fabric.leaves} leaves, {fabric.gpus} GPUs: leaves per job")
    wait.set_xscale("log")
    wait.set_xlabel("queueing delay of multi-pod jobs (min, ≥ 1 s)")
    wait.set_ylabel("multi-pod jobs (%)")
    wait.grid(alpha=0.3)
    wait.legend(loc="lower right", fontsize="small")
    return fig


def write_report(results: Sequence[ArmResult], fabric: Fabric, out: Path) -> list[Path]:
    """Write the CSV files, the table and the plots; returns the files written. The delays and the
    timeline plots show the first seed's runs."""
    write_csv(results, fabric, out)
    first = [r for r in results if r.seed == results[0].seed] if results else []
    written = [out / "summary.csv", out / "table.md", out / "jobs.csv"]
    for name, fig in (
        ("leaves", leaves_figure(results, fabric)),
        ("delays", delays_figure(first, ARMS, COLORS)),
        ("timeline", timeline_figure(first, ARMS, COLORS)),
    ):
        path = out / f"topology_{name}.png"
        fig.savefig(path, dpi=110)
        written.append(path)
    return written
