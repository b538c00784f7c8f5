"""Export of simulation metrics as files: time series and per-pod tables (CSV and Parquet), summary.

Several runs go into the same files, one block of rows per run, told apart by the ``run`` column;
a column one run lacks (a node pool, a queue) is empty (CSV) or null/NaN (Parquet) in the others.
"""

from __future__ import annotations

import csv
import json
import math
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, Final

from kubesched.sim.report import RunReport

__all__ = ["export_runs", "pod_table", "timeseries_table"]

TIMESERIES: Final = "timeseries"
PODS: Final = "pods"
REASONS: Final = "reasons.csv"
SUMMARY: Final = "summary.json"

Columns = dict[str, list[Any]]


def timeseries_table(runs: Sequence[RunReport]) -> Columns:
    """``run``, ``time`` and every metric column, rows of all runs stacked."""
    names: list[str] = []
    for run in runs:
        names.extend(n for n in run.metrics.series.columns if n not in names)
    out: Columns = {"run": [], **{n: [] for n in names}}
    for run in runs:
        series = run.metrics.series
        out["run"].extend([run.label] * len(series))
        for n in names:
            col = series.columns.get(n)
            out[n].extend(col if col is not None else [math.nan] * len(series))
    return out


def pod_table(runs: Sequence[RunReport]) -> Columns:
    """``run`` and one row per pod of each run (see :meth:`MetricsRecorder.pod_rows`)."""
    rows: list[tuple[str, dict[str, Any]]] = []
    names: list[str] = []
    for run in runs:
        for row in run.metrics.pod_rows():
            rows.append((run.label, row))
            if len(names) < len(row) or any(k not in names for k in row):
                names.extend(k for k in row if k not in names)
    out: Columns = {"run": [label for label, _ in rows]}
    for n in names:
        default = 0 if n.startswith("request.") else None
        out[n] = [row.get(n, default) for _, row in rows]
    return out


def _csv_cell(value: Any) -> str:
    if value.__class__ is float:
        return repr(value) if value == value else ""  # NaN is the only value unequal to itself
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def write_csv(path: Path, columns: Columns) -> None:
    """Floats as ``repr`` (they read back exactly), None and NaN as empty cells, bools as true/false."""
    cells = [[_csv_cell(v) for v in values] for values in columns.values()]
    with path.open("w", encoding="utf-8", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(list(columns))
        writer.writerows(zip(*cells, strict=True))


def write_parquet(path: Path, columns: Columns, *, float_columns: Iterable[str] = ()) -> None:
    import pyarrow as pa  # type: ignore[import-untyped]
    import pyarrow.parquet as pq  # type: ignore[import-untyped]

    floats = set(float_columns)
    arrays = {}
    for name, values in columns.items():
        if name in floats:
            arrays[name] = pa.array(values, type=pa.float64())
        else:
            arrays[name] = pa.array(values)
    pq.write_table(pa.table(arrays), path)


def export_runs(
    out_dir: str | Path,
    runs: Sequence[RunReport],
    *,
    parquet: bool = True,
    meta: dict[str, Any] | None = None,
) -> list[Path]:
    """Write ``timeseries.csv``, ``pods.csv``, ``reasons.csv``, ``summary.json`` (and the two tables as
    ``.parquet``) into ``out_dir``; returns the paths written."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    series = timeseries_table(runs)
    pods = pod_table(runs)
    for stem, table, floats in (
        (TIMESERIES, series, [n for n in series if n != "run"]),
        (
            PODS,
            pods,
            [n for n in ("arrival", "bound", "finished", "deleted", "latency", "duration") if n in pods],
        ),
    ):
        path = out / f"{stem}.csv"
        write_csv(path, table)
        written.append(path)
        if parquet:
            path = out / f"{stem}.parquet"
            write_parquet(path, table, float_columns=floats)
            written.append(path)

    reasons: Columns = {"run": [], "reason": [], "attempts": [], "podsAtEnd": []}
    for run in runs:
        final = run.metrics.final_reasons()
        for phrase, count in run.metrics.reasons.most_common():
            reasons["run"].append(run.label)
            reasons["reason"].append(phrase)
            reasons["attempts"].append(count)
            reasons["podsAtEnd"].append(final.get(phrase, 0))
    path = out / REASONS
    write_csv(path, reasons)
    written.append(path)

    doc = {
        **(meta or {}),
        "runs": [
            {"run": run.label, "config": run.config_source, "summary": run.metrics.summary()} for run in runs
        ],
    }
    path = out / SUMMARY
    path.write_text(json.dumps(doc, indent=2, allow_nan=False) + "\n", encoding="utf-8")
    written.append(path)
    return written
