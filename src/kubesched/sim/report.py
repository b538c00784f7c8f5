"""Reports of simulation runs: PNG plots, one self-contained HTML page, and a terminal summary.

Every plot overlays the runs being compared (one line per run, labelled by its config), so a single
run and a policy comparison share one code path. Plots use matplotlib's Agg backend on ``Figure``
objects (no pyplot state); matplotlib is imported only when a report is written.
"""

from __future__ import annotations

import base64
import html
import io
import math
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import numpy as np
from rich.table import Table

from kubesched.sim.metrics import MetricsRecorder

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

__all__ = [
    "RunReport",
    "format_duration",
    "format_summary_value",
    "summary_rows",
    "summary_table",
    "write_plots",
    "write_report",
]

REPORT_FILE: Final = "report.html"
#: Most reason phrases shown in the reasons plot and table.
TOP_REASONS: Final = 12


@dataclass(slots=True)
class RunReport:
    """One simulation run as a report shows it."""

    label: str
    metrics: MetricsRecorder
    #: Where the configuration came from (a file, a sweep variant), or ``None`` for the defaults.
    config_source: str | None = None
    #: The configuration as shown in the report (YAML text).
    config_text: str = ""
    extra: dict[str, Any] = field(default_factory=dict)


# -- numbers as text -------------------------------------------------------------------------------
def format_duration(seconds: float | None) -> str:
    """``12.5s``, ``4m05s``, ``3h04m``, ``2d03h``; ``-`` for no value."""
    if seconds is None or (isinstance(seconds, float) and math.isnan(seconds)):
        return "-"
    s = float(seconds)
    if s < 60:
        return f"{s:.3g}s" if s < 10 else f"{s:.1f}s"
    if s < 3600:
        return f"{int(s // 60)}m{int(s % 60):02d}s"
    if s < 86400:
        return f"{int(s // 3600)}h{int(s % 3600 // 60):02d}m"
    return f"{int(s // 86400)}d{int(s % 86400 // 3600):02d}h"


_DURATION_KEYS: Final = frozenset(
    {"virtualSeconds", "makespan", "latencyP50", "latencyP90", "latencyP99", "latencyMean"}
    | {"jctP50", "jctP90", "jctP99"}
)


def format_summary_value(key: str, value: Any) -> str:
    if value is None:
        return "-"
    if key in _DURATION_KEYS:
        return format_duration(float(value))
    if key.startswith("allocMean."):
        return f"{100 * float(value):.1f}%"
    if isinstance(value, bool | int | str):
        return str(value)
    if isinstance(value, float):
        return f"{value:.0f}" if value == int(value) and abs(value) < 1e15 else f"{value:.3g}"
    return str(value)


_LABELS: Final = {
    "pods": "pods",
    "scheduled": "scheduled (bound at least once)",
    "neverScheduled": "never scheduled",
    "completed": "completed",
    "evicted": "evicted",
    "virtualSeconds": "virtual time",
    "makespan": "makespan",
    "latencyP50": "scheduling latency p50",
    "latencyP90": "scheduling latency p90",
    "latencyP99": "scheduling latency p99",
    "latencyMean": "scheduling latency mean",
    "jobsCompleted": "jobs completed",
    "jctP50": "job completion time p50",
    "jctP90": "job completion time p90",
    "jctP99": "job completion time p99",
    "pendingMax": "pending pods, max",
    "pendingMean": "pending pods, mean",
    "topReason": "most frequent unschedulable reason",
}


def _label(key: str) -> str:
    if key.startswith("allocMean."):
        return f"{key[len('allocMean.') :]} allocation, mean"
    if key.startswith("gpuFragMean."):
        return f"{key[len('gpuFragMean.') :]} fragmentation, mean"
    return _LABELS.get(key, key)


def summary_rows(runs: Sequence[RunReport]) -> list[tuple[str, list[str]]]:
    """(metric label, one formatted value per run), in a stable order."""
    summaries = [run.metrics.summary() for run in runs]
    keys: list[str] = []
    for s in summaries:
        keys.extend(k for k in s if k not in keys)
    return [(_label(k), [format_summary_value(k, s.get(k)) for s in summaries]) for k in keys]


def summary_table(runs: Sequence[RunReport], title: str = "simulation metrics") -> Table:
    table = Table(title=title, title_justify="left")
    table.add_column("METRIC", no_wrap=True)
    for run in runs:
        table.add_column(run.label, justify="right")
    for label, values in summary_rows(runs):
        table.add_row(label, *values)
    return table


# -- plots -----------------------------------------------------------------------------------------
def _time_unit(max_seconds: float) -> tuple[float, str]:
    for limit, div, name in ((600.0, 1.0, "s"), (3 * 3600.0, 60.0, "min"), (72 * 3600.0, 3600.0, "h")):
        if max_seconds <= limit:
            return div, name
    return 86400.0, "days"


def _figure(
    rows: int, cols: int = 1, *, height: float = 2.6, width: float = 9.0, sharex: bool = True
) -> Figure:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, max(2.8, height * rows)), layout="constrained")
    FigureCanvasAgg(fig)
    fig.subplots(rows, cols, squeeze=False, sharex=sharex)
    return fig


def _percent_axis(ax: Axes, peak: float, what: str) -> None:
    """A 0-105 % axis when the data reach half of it; else one zoomed to the data, said in the label,
    so a lightly loaded cluster (a long trace at low load) is not drawn as a flat line at 0."""
    if peak >= 50.0 or peak <= 0.0:
        ax.set_ylim(0, 105)
        ax.set_ylabel(what)
        return
    top = float(np.ceil(peak * 1.15 / 5.0) * 5.0) if peak > 5.0 else float(np.ceil(peak * 1.15 * 10) / 10)
    ax.set_ylim(0, max(top, 0.1))
    ax.set_ylabel(f"{what}\n(axis 0-{top:g} %)")


def _axes(fig: Figure) -> list[Axes]:
    return list(fig.axes)


def _colors(n: int) -> list[Any]:
    from matplotlib import colormaps

    cmap = colormaps["tab10" if n <= 10 else "tab20"]
    return [cmap(i % cmap.N) for i in range(n)]


class _Plotter:
    def __init__(self, runs: Sequence[RunReport]) -> None:
        self.runs = runs
        self.colors = _colors(len(runs))
        end = max((r.metrics.end_time for r in runs), default=0.0)
        self.div, self.unit = _time_unit(end)

    def _times(self, run: RunReport) -> np.ndarray[Any, np.dtype[np.float64]]:
        return run.metrics.series.array("time") / self.div

    def _legend(self, ax: Axes) -> None:
        if len(self.runs) > 1:
            ax.legend(fontsize="small", loc="best")

    def allocation(self) -> Figure:
        resources: list[str] = []
        for run in self.runs:
            resources.extend(r for r in run.metrics.resources() if r not in resources)
        fig = _figure(max(1, len(resources)))
        axes = _axes(fig)
        for ax, res in zip(axes, resources, strict=False):
            peak = 0.0
            for run, color in zip(self.runs, self.colors, strict=True):
                y = run.metrics.series.array(f"alloc.{res}") * 100
                ax.step(self._times(run), y, where="post", color=color, label=run.label)
                peak = max(peak, float(np.nanmax(y))) if y.size else peak
            _percent_axis(ax, peak, f"{res}\nallocated %")
            ax.grid(alpha=0.3)
            self._legend(ax)
        if not resources:
            axes[0].text(0.5, 0.5, "no nodes", ha="center", transform=axes[0].transAxes)
        axes[-1].set_xlabel(f"virtual time ({self.unit})")
        fig.suptitle("Cluster allocation (requested / allocatable)")
        return fig

    def pools(self) -> Figure | None:
        by_res: dict[str, list[str]] = {}
        for run in self.runs:
            for name in run.metrics.series.names("alloc."):
                if name.endswith("]"):
                    res, pool = name[len("alloc.") : -1].split("[", 1)
                    pools = by_res.setdefault(res, [])
                    if pool not in pools:
                        pools.append(pool)
        if not by_res:
            return None
        resources = list(by_res)
        fig = _figure(len(resources), len(self.runs), width=max(9.0, 5.0 * len(self.runs)))
        axes = fig.axes
        for i, res in enumerate(resources):
            colors = dict(zip(by_res[res], _colors(len(by_res[res])), strict=True))
            for j, run in enumerate(self.runs):
                ax = axes[i * len(self.runs) + j]
                peak = 0.0
                for pool in by_res[res]:
                    y = run.metrics.series.array(f"alloc.{res}[{pool}]") * 100
                    ax.step(self._times(run), y, where="post", color=colors[pool], label=pool)
                    peak = max(peak, float(np.nanmax(y))) if y.size else peak
                _percent_axis(ax, peak, f"{res}\nallocated %" if j == 0 else "")
                ax.grid(alpha=0.3)
                if i == 0:
                    ax.set_title(run.label, fontsize="medium")
                if j == len(self.runs) - 1:
                    ax.legend(fontsize="x-small", loc="center left", bbox_to_anchor=(1.0, 0.5))
                if i == len(resources) - 1:
                    ax.set_xlabel(f"virtual time ({self.unit})")
        label = self.runs[0].metrics.pool_label or "pool"
        fig.suptitle(f"Allocation per node pool (label {label})")
        return fig

    def _step_panels(self, panels: Sequence[tuple[str, str]], title: str) -> Figure:
        """One panel per (series name, y label), each run's series as a step line from zero up."""
        fig = _figure(len(panels))
        axes = _axes(fig)
        for ax, (name, ylabel) in zip(axes, panels, strict=True):
            for run, color in zip(self.runs, self.colors, strict=True):
                ax.step(
                    self._times(run),
                    run.metrics.series.array(name),
                    where="post",
                    color=color,
                    label=run.label,
                )
            ax.set_ylabel(ylabel)
            ax.set_ylim(bottom=0)
            ax.grid(alpha=0.3)
            self._legend(ax)
        axes[-1].set_xlabel(f"virtual time ({self.unit})")
        fig.suptitle(title)
        return fig

    def pending(self) -> Figure:
        panels = [(key, f"{key} pods") for key in ("pending", "running")]
        return self._step_panels(panels, "Pending and running pods")

    def _cdf(self, values: Callable[[RunReport], np.ndarray[Any, np.dtype[np.float64]]], what: str) -> Figure:
        fig = _figure(1, height=3.6)
        ax = fig.axes[0]
        drawn = False
        for run, color in zip(self.runs, self.colors, strict=True):
            v = np.sort(values(run))
            if v.size == 0:
                continue
            drawn = True
            y = np.arange(1, v.size + 1) / v.size
            ax.step(np.concatenate([[0.0], v]), np.concatenate([[0.0], y]), where="post", color=color)
            ax.plot([], [], color=color, label=f"{run.label} (n={v.size})")
        if drawn:
            ax.set_xscale("symlog", linthresh=1.0)
            ax.legend(fontsize="small", loc="lower right")
        else:
            ax.text(0.5, 0.5, "no values", ha="center", transform=ax.transAxes)
        ax.set_xlabel(f"{what} (virtual seconds, symlog scale)")
        ax.set_ylabel("fraction ≤ x")
        ax.set_ylim(0, 1.02)
        ax.grid(alpha=0.3)
        return fig

    def latency_cdf(self) -> Figure:
        fig = self._cdf(lambda run: run.metrics.latencies(), "scheduling latency (arrival → bind)")
        fig.suptitle("Scheduling latency, CDF")
        return fig

    def jct_cdf(self) -> Figure | None:
        if not any(run.metrics.job_completion_times().size for run in self.runs):
            return None
        fig = self._cdf(lambda run: run.metrics.job_completion_times(), "job completion time")
        fig.suptitle("Job completion time (first arrival → last completion), CDF")
        return fig

    def fragmentation(self) -> Figure | None:
        names: list[str] = []
        for run in self.runs:
            names.extend(n for n in run.metrics.series.names("gpu_frag.") if n not in names)
        if not names:
            return None
        panels = [(name, f"unusable free\n{name.removeprefix('gpu_frag.')}") for name in names]
        return self._step_panels(
            panels, "GPU fragmentation: free GPU on nodes too small for the smallest pending GPU request"
        )

    def arrived(self) -> Figure | None:
        """Per GPU resource, allocation against the GPU workload arrived so far (the x axis of the
        FGD paper's curves): the diagonal is "everything that arrived is placed"; where a run's
        line leaves it, arrived GPU demand is waiting (or was placed and has already finished)."""
        resources: list[str] = []
        for run in self.runs:
            names = run.metrics.series.names("arrived.")
            resources.extend(n[len("arrived.") :] for n in names if n[len("arrived.") :] not in resources)
        if not resources:
            return None
        # Each panel has its own arrived range: no shared x axis.
        fig = _figure(len(resources), height=3.6, sharex=False)
        axes = _axes(fig)
        for ax, res in zip(axes, resources, strict=False):
            x_peak = y_peak = 0.0
            for run, color in zip(self.runs, self.colors, strict=True):
                x = run.metrics.series.array(f"arrived.{res}") * 100
                y = run.metrics.series.array(f"alloc.{res}") * 100
                ok = np.isfinite(x) & np.isfinite(y)
                if not ok.any():
                    continue
                ax.plot(x[ok], y[ok], color=color, label=run.label, linewidth=1.2)
                x_peak = max(x_peak, float(x[ok].max()))
                y_peak = max(y_peak, float(y[ok].max()))
            # Scaled to the data like the allocation axes: a light trace arrives a few % only.
            right = float(np.ceil(x_peak * 1.05 / 5.0) * 5.0) if x_peak > 1.0 else max(x_peak * 1.1, 0.1)
            ax.plot(
                [0.0, right],
                [0.0, right],
                color="grey",
                linestyle=":",
                linewidth=1,
                label="all arrived placed",
            )
            if right >= 100.0:
                ax.axvline(100.0, color="grey", linestyle="--", linewidth=0.8)
            ax.set_xlim(0, right)
            _percent_axis(ax, y_peak, f"{res}\nallocated %")
            ax.set_xlabel(f"arrived {res} workload (% of cluster capacity)")
            ax.grid(alpha=0.3)
            ax.legend(fontsize="small", loc="upper left")
        fig.suptitle("GPU allocation vs arrived GPU workload (requests of all pods arrived so far)")
        return fig

    def reasons(self) -> Figure | None:
        total: Counter[str] = Counter()
        for run in self.runs:
            total.update(run.metrics.reasons)
        if not total:
            return None
        phrases = [p for p, _ in total.most_common(TOP_REASONS)][::-1]
        fig = _figure(1, height=max(2.8, 0.45 * len(phrases) * max(1, len(self.runs)) + 1.0), width=10.0)
        ax = fig.axes[0]
        n = len(self.runs)
        bar = 0.8 / n
        y = np.arange(len(phrases))
        for k, (run, color) in enumerate(zip(self.runs, self.colors, strict=True)):
            counts = [run.metrics.reasons.get(p, 0) for p in phrases]
            ax.barh(y + (k - (n - 1) / 2) * bar, counts, height=bar, color=color, label=run.label)
        ax.set_yticks(y, [p if len(p) <= 60 else p[:57] + "…" for p in phrases], fontsize="small")
        ax.set_xlabel("failed scheduling attempts naming the reason")
        ax.grid(alpha=0.3, axis="x")
        self._legend(ax)
        fig.suptitle("Unschedulable reasons")
        return fig

    def queue_share(self) -> Figure | None:
        queued = [run for run in self.runs if run.metrics.series.names("queue.allocated[")]
        if not queued:
            return None
        fig = _figure(len(queued), height=3.2, width=10.0)
        axes = _axes(fig)
        for ax, run in zip(axes, queued, strict=True):
            queues = [n[len("queue.allocated[") : -1] for n in run.metrics.series.names("queue.allocated[")]
            t = self._times(run)
            for q, color in zip(queues, _colors(len(queues)), strict=True):
                got = run.metrics.series.array(f"queue.allocated[{q}]") * 100
                want = run.metrics.series.array(f"queue.deserved[{q}]") * 100
                ax.step(t, want, where="post", color=color, linewidth=4.0, alpha=0.3)
                ax.step(t, got, where="post", color=color, linewidth=1.2, label=q)
            ax.set_ylabel("share of cluster %")
            ax.set_title(f"{run.label}: allocated (thin) vs deserved (wide, light)", fontsize="medium")
            ax.set_ylim(bottom=0)
            ax.grid(alpha=0.3)
            ax.legend(fontsize="x-small", loc="center left", bbox_to_anchor=(1.0, 0.5), ncol=1)
        axes[-1].set_xlabel(f"virtual time ({self.unit})")
        fig.suptitle("Queue share vs deserved share (dominant resource)")
        return fig


#: (file name, caption, plotter method) in report order.
PLOTS: Final = (
    ("allocation.png", "Cluster allocation per resource over virtual time.", "allocation"),
    ("pools.png", "Allocation per node pool.", "pools"),
    ("pending.png", "Pods waiting to be bound, and pods running.", "pending"),
    ("latency_cdf.png", "Scheduling latency (arrival to bind), cumulative distribution.", "latency_cdf"),
    ("jct_cdf.png", "Job completion time, cumulative distribution.", "jct_cdf"),
    ("gpu_fragmentation.png", "GPU capacity unusable by the pending GPU pods.", "fragmentation"),
    (
        "gpu_alloc_vs_arrived.png",
        "GPU allocation against arrived GPU workload (cumulative requests of arrived pods), per run.",
        "arrived",
    ),
    ("queue_share.png", "Per-queue allocated share vs deserved share.", "queue_share"),
    ("reasons.png", "Why scheduling attempts failed.", "reasons"),
)


def write_plots(out_dir: Path, runs: Sequence[RunReport]) -> dict[str, bytes]:
    """Write every applicable plot as a PNG into ``out_dir``; returns file name → PNG bytes."""
    plotter = _Plotter(runs)
    out: dict[str, bytes] = {}
    for name, _caption, method in PLOTS:
        fig = getattr(plotter, method)()
        if fig is None:
            continue
        buf = io.BytesIO()
        fig.savefig(buf, format="png", dpi=100)
        data = buf.getvalue()
        (out_dir / name).write_bytes(data)
        out[name] = data
    return out


# -- HTML ------------------------------------------------------------------------------------------
_STYLE: Final = """
body { font-family: system-ui, sans-serif; margin: 2em auto; max-width: 1100px; color: #222; }
h1 { font-size: 1.6em; } h2 { margin-top: 1.6em; border-bottom: 1px solid #ddd; }
table { border-collapse: collapse; margin: 0.5em 0; }
th, td { border: 1px solid #ccc; padding: 0.25em 0.6em; text-align: right; }
th:first-child, td:first-child { text-align: left; }
th { background: #f3f3f3; }
figure { margin: 1em 0; } figure img { max-width: 100%; border: 1px solid #eee; }
figcaption { color: #555; font-size: 0.9em; }
pre { background: #f7f7f7; padding: 0.8em; overflow-x: auto; font-size: 0.85em; }
.meta { color: #555; }
"""


def _table_html(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    head = "".join(f"<th>{html.escape(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in row) + "</tr>" for row in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _reasons_html(runs: Sequence[RunReport]) -> str:
    total: Counter[str] = Counter()
    for run in runs:
        total.update(run.metrics.reasons)
    if not total:
        return "<p>No scheduling attempt failed.</p>"
    finals = [run.metrics.final_reasons() for run in runs]
    header = [
        "reason",
        *(f"{run.label}: attempts" for run in runs),
        *(f"{run.label}: pods at end" for run in runs),
    ]
    rows = [
        [
            phrase,
            *(str(run.metrics.reasons.get(phrase, 0)) for run in runs),
            *(str(f.get(phrase, 0)) for f in finals),
        ]
        for phrase, _ in total.most_common()
    ]
    return _table_html(header, rows)


def render_html(
    runs: Sequence[RunReport], plots: dict[str, bytes], meta: Sequence[tuple[str, str]] = ()
) -> str:
    parts = [
        "<!doctype html>",
        '<html lang="en"><head><meta charset="utf-8">',
        "<title>kubesched simulation report</title>",
        f"<style>{_STYLE}</style></head><body>",
        "<h1>kubesched simulation report</h1>",
    ]
    if meta:
        parts.append(
            '<p class="meta">' + "<br>".join(f"{html.escape(k)}: {html.escape(v)}" for k, v in meta) + "</p>"
        )
    parts.append("<h2>Summary</h2>")
    parts.append(
        _table_html(["metric", *(run.label for run in runs)], [[k, *v] for k, v in summary_rows(runs)])
    )
    parts.append("<h2>Plots</h2>")
    for name, caption, _method in PLOTS:
        data = plots.get(name)
        if data is None:
            continue
        encoded = base64.b64encode(data).decode("ascii")
        parts.append(
            f'<figure id="{html.escape(name)}"><img alt="{html.escape(name)}" '
            f'src="data:image/png;base64,{encoded}"><figcaption>{html.escape(caption)} '
            f"({html.escape(name)})</figcaption></figure>"
        )
    parts.append("<h2>Unschedulable reasons</h2>")
    parts.append(_reasons_html(runs))
    parts.append("<h2>Configurations</h2>")
    for run in runs:
        source = run.config_source or "built-in default profile"
        parts.append(f'<h3>{html.escape(run.label)}</h3><p class="meta">{html.escape(source)}</p>')
        parts.append(f"<pre>{html.escape(run.config_text or '# defaults')}</pre>")
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"


def write_report(
    out_dir: str | Path, runs: Sequence[RunReport], meta: Sequence[tuple[str, str]] = ()
) -> list[Path]:
    """Write ``report.html`` and the PNGs into ``out_dir`` (created if needed); returns the files."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    plots = write_plots(out, runs)
    page = out / REPORT_FILE
    page.write_text(render_html(runs, plots, meta), encoding="utf-8")
    return [page, *(out / name for name in plots)]
