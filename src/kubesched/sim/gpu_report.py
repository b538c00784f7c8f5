"""Plots and an HTML section for the FGD experiment: allocation (and fragmentation) against arrived
workload per policy, and the "unallocated GPU % at 100 % arrived" table beside the paper's.

Axes are scaled to the data: the interesting part of the curves (allocation from ~80 % to ~95 %)
would be a flat line on a fixed 0-100 % axis.
"""

from __future__ import annotations

import base64
import html
import io
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from kubesched.gpu.policies import POLICIES
from kubesched.sim.gpu_cells import ARRIVED_POINTS, CellResult
from kubesched.sim.gpu_experiment import PAPER_UNALLOCATED, summary

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["render_html", "write_plots", "write_report"]

DEFAULT_LIST = "openb_pod_list_default"


def _figure(width: float = 9.0, height: float = 4.0) -> Figure:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height), layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def _by_policy(results: Sequence[CellResult], pod_list: str) -> dict[str, list[CellResult]]:
    out: dict[str, list[CellResult]] = {}
    for r in results:
        if r.pod_list == pod_list:
            out.setdefault(r.policy, []).append(r)
    return {p: out[p] for p in POLICIES if p in out}


def curves_figure(results: Sequence[CellResult], pod_list: str, what: str = "alloc") -> Figure:
    """Median over seeds with the 25-75 % band, per policy, against arrived GPU % (0-130)."""
    from matplotlib import colormaps

    fig = _figure()
    ax = fig.add_subplot(1, 1, 1)
    x = np.arange(ARRIVED_POINTS)
    groups = _by_policy(results, pod_list)
    cmap = colormaps["tab10"]
    colors = [cmap(i) for i in range(10)]
    lo_all, hi_all = 100.0, 0.0
    for i, (policy, cells) in enumerate(groups.items()):
        if what == "alloc":
            ys = np.array([100.0 - c.alloc_at for c in cells])  # unallocated share of the cluster
        else:
            ys = np.array([c.frag_at for c in cells])
        with warnings.catch_warnings():
            # Arrived levels no pod landed on are NaN in every seed; they stay gaps in the plot.
            warnings.simplefilter("ignore", RuntimeWarning)
            med = np.nanmedian(ys, axis=0)
            q1, q3 = np.nanpercentile(ys, 25, axis=0), np.nanpercentile(ys, 75, axis=0)
        ax.plot(x, med, label=policy, color=colors[i % len(colors)], linewidth=1.4)
        ax.fill_between(x, q1, q3, color=colors[i % len(colors)], alpha=0.2, linewidth=0)
        window = med[60:131] if what == "alloc" else med[20:131]
        if np.isfinite(window).any():
            lo_all = min(lo_all, float(np.nanmin(window)))
            hi_all = max(hi_all, float(np.nanmax(window)))
    if what == "alloc":
        # Unallocated GPU against arrived: 100 - arrived until the cluster fills, then the gap
        # the policies leave; zoom on the range where they differ and say so.
        ax.set_xlim(60, 130)
        ax.set_ylim(max(0.0, lo_all - 1.0), min(45.0, hi_all + 1.0))
        ax.set_ylabel("unallocated GPU (% of cluster), zoomed")
        ax.axvline(100, color="grey", linestyle=":", linewidth=1)
    else:
        ax.set_xlim(20, 130)
        ax.set_ylim(max(0.0, lo_all - 2.0), min(100.0, hi_all + 2.0))
        ax.set_ylabel("fragmented share of idle GPU (%), zoomed")
    ax.set_xlabel("arrived workload (% of cluster GPU capacity)")
    ax.set_title(
        f"{pod_list}: median of {max((len(v) for v in groups.values()), default=0)} seeds, 25-75 % band"
    )
    ax.grid(True, alpha=0.3)
    ax.legend(loc="best", fontsize="small")
    return fig


def bars_figure(results: Sequence[CellResult]) -> Figure:
    """Unallocated GPU % at 100 % arrived, mean and sd over seeds, per pod list and policy."""
    rows = summary(results)
    lists = sorted({r[0] for r in rows})
    fig = _figure(width=min(16.0, max(6.0, 0.7 * len(lists) + 3)), height=4.2)
    ax = fig.add_subplot(1, 1, 1)
    width = 0.8 / max(1, len(POLICIES))
    for i, policy in enumerate(POLICIES):
        vals = {r[0]: (r[2], r[3]) for r in rows if r[1] == policy}
        if not vals:
            continue
        xs = [j + i * width for j, pl in enumerate(lists) if pl in vals]
        ax.bar(
            xs,
            [vals[pl][0] for pl in lists if pl in vals],
            width,
            yerr=[vals[pl][1] for pl in lists if pl in vals],
            label=policy,
        )
    ax.set_xticks([j + 0.4 - width / 2 for j in range(len(lists))])
    ax.set_xticklabels([pl.replace("openb_pod_list_", "") for pl in lists], rotation=30, ha="right")
    ax.set_ylabel("unallocated GPU % at 100 % arrived")
    ax.grid(True, axis="y", alpha=0.3)
    ax.legend(fontsize="small", ncol=3)
    return fig


def write_plots(out: Path, results: Sequence[CellResult]) -> dict[str, bytes]:
    """PNG files into ``out``; returns name -> bytes for embedding."""
    out.mkdir(parents=True, exist_ok=True)
    figs: dict[str, Any] = {"unallocated_bars.png": bars_figure(results)}
    for pl in sorted({r.pod_list for r in results}):
        figs[f"alloc_{pl}.png"] = curves_figure(results, pl, "alloc")
        figs[f"frag_{pl}.png"] = curves_figure(results, pl, "frag")
    data: dict[str, bytes] = {}
    for name, fig in figs.items():
        buf = io.BytesIO()
        fig.savefig(buf, format="png", dpi=100)
        data[name] = buf.getvalue()
        (out / name).write_bytes(data[name])
    return data


def _table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    head = "".join(f"<th>{html.escape(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in row) + "</tr>" for row in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def render_html(results: Sequence[CellResult], images: dict[str, bytes], wall_seconds: float | None) -> str:
    """A self-contained HTML section (images inlined)."""
    rows = []
    for pl, pol, mean, sd, n in sorted(summary(results), key=lambda r: (r[0], POLICIES.index(r[1]))):
        paper = PAPER_UNALLOCATED.get(pol) if pl == DEFAULT_LIST else None
        rows.append(
            [
                pl,
                pol,
                f"{mean:.2f} ± {sd:.2f}",
                str(n),
                f"{paper:.2f}" if paper is not None else "",
                f"{mean - paper:+.2f}" if paper is not None else "",
            ]
        )
    parts = [
        "<section><h2>FGD experiment: unallocated GPU at 100 % arrived workload</h2>",
        _table(["pod list", "policy", "ours (mean ± sd)", "seeds", "paper", "ours - paper"], rows),
    ]
    if wall_seconds is not None:
        parts.append(f"<p>Wall time of the grid: {wall_seconds:.0f} s.</p>")
    for name, png in images.items():
        b64 = base64.b64encode(png).decode("ascii")
        parts.append(f'<figure><img alt="{html.escape(name)}" src="data:image/png;base64,{b64}"></figure>')
    parts.append("</section>")
    return "\n".join(parts)


def write_report(out: Path, results: Sequence[CellResult], wall_seconds: float | None = None) -> Path:
    images = write_plots(out, results)
    page = (
        "<!doctype html><html><head><meta charset='utf-8'><title>kubesched FGD experiment</title>"
        "<style>body{font-family:sans-serif;max-width:1000px;margin:auto}"
        "table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:2px 6px}"
        "img{max-width:100%}</style></head><body>"
        + render_html(results, images, wall_seconds)
        + "</body></html>"
    )
    path = out / "report.html"
    path.write_text(page, encoding="utf-8")
    return path
