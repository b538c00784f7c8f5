"""Trace importers: files -> :class:`kubesched.sim.workload.Workload`.

Formats: ``generic`` (CSV or JSON Lines), ``alibaba-gpu-2023`` (node or pod list) and ``philly``.
Without ``fmt`` the format is detected from the header columns (or a JSON object first line).
"""

from __future__ import annotations

import csv
from collections.abc import Callable
from pathlib import Path
from typing import Final

from kubesched.errors import InputError
from kubesched.sim.traces import alibaba_gpu_2023, philly
from kubesched.sim.traces.generic import GENERIC_COLUMNS, OnBadRow, is_jsonl, load_generic
from kubesched.sim.workload import Workload

__all__ = ["FORMATS", "detect_format", "load_trace"]

_Loader = Callable[[Path, OnBadRow, "int | None"], Workload]

FORMATS: Final[dict[str, _Loader]] = {
    "generic": load_generic,
    "alibaba-gpu-2023": alibaba_gpu_2023.load_alibaba_gpu_2023,
    "philly": philly.load_philly,
}


def detect_format(path: Path) -> str:
    """The format of ``path``, from its header columns; :class:`InputError` if none fits."""
    source = str(path)
    try:
        if is_jsonl(path):
            return "generic"
        with path.open(encoding="utf-8", newline="") as f:
            header = next(csv.reader(f), [])
    except (OSError, UnicodeDecodeError, csv.Error) as exc:
        raise InputError(f"cannot read trace: {exc}", file=source) from None
    columns = {h.strip() for h in header}
    if columns >= alibaba_gpu_2023.NODE_COLUMNS or columns >= alibaba_gpu_2023.POD_COLUMNS:
        return "alibaba-gpu-2023"
    if columns >= philly.COLUMNS:
        return "philly"
    if columns and all(c in GENERIC_COLUMNS or c.startswith(("label.", "annotation.")) for c in columns):
        return "generic"
    raise InputError(
        f"cannot tell the trace format from the columns {header}; pass one of {', '.join(FORMATS)}",
        file=source,
    )


def load_trace(
    path: str | Path,
    fmt: str | None = None,
    on_bad_row: OnBadRow = "skip",
    limit: int | None = None,
) -> Workload:
    """Read a trace file. ``limit`` keeps only the first N pods/nodes (jobs for Philly), read streaming.

    ``on_bad_row="fail"`` raises :class:`InputError` naming the file and line of the first bad row;
    ``"skip"`` records each in ``Workload.bad_rows`` and goes on.
    """
    p = Path(path)
    if on_bad_row not in ("skip", "fail"):
        raise InputError(f"on_bad_row must be 'skip' or 'fail', got {on_bad_row!r}")
    if limit is not None and limit < 0:
        raise InputError(f"limit must be non-negative, got {limit}")
    if not p.is_file():
        raise InputError("trace file not found", file=str(p))
    name = fmt if fmt is not None else detect_format(p)
    loader = FORMATS.get(name)
    if loader is None:
        raise InputError(f"unknown trace format {name!r}; use one of {', '.join(FORMATS)}", file=str(p))
    try:
        return loader(p, on_bad_row, limit)
    except UnicodeDecodeError as exc:
        raise InputError(f"not UTF-8 text: {exc}", file=str(p)) from None
