"""The runs of ``kubesched experiment gangs`` and ``experiment topology`` as cells of a sweep: each run
of one arm (one workload, one seed) a task of the sweep engine, its inputs (the jobs, the nodes)
shipped once per worker, and each finished run written as one Parquet row from which its
:class:`~kubesched.sim.gang_experiment.ArmResult` is rebuilt whole, so that a resumed sweep's
tables, CSV files and plots are those of a sweep run at once.

A row (:func:`arm_schema`) holds the run's key columns (``workload``, ``arm``, ``seed``), the
options it ran with (``settings``, JSON: a resumed sweep refuses a run of other options), the
experiment's summary numbers as plain columns (the table's row for that run, to read the
directory as a table), and the whole result: its counters, its warnings, the cluster's step
series over virtual time and one struct per job (``job_results``).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa  # type: ignore[import-untyped]

from kubesched.errors import InputError
from kubesched.sim.gang_experiment import SUMMARY_COLUMNS, ArmResult, ClusterShape, Job, JobResult, run_arm
from kubesched.sim.sweep_engine import CellRunner, ParquetCells, SweepEngine, cell_task, run_sweep
from kubesched.sim.topology_experiment import TOPOLOGY_COLUMNS, Fabric, run_topology_arm

__all__ = [
    "GANG_SCHEMA",
    "TOPOLOGY_SCHEMA",
    "ArmCell",
    "Shared",
    "arm_result",
    "arm_row",
    "arm_schema",
    "gang_cell",
    "run_arm_cells",
    "topology_cell",
]

_JOB = pa.struct(
    [
        ("name", pa.string()),
        ("arrival", pa.float64()),
        ("duration", pa.float64()),
        ("pods", pa.int64()),
        ("gpus", pa.int64()),
        ("start", pa.float64()),
        ("end", pa.float64()),
        ("bound_at_end", pa.int64()),
        ("racks", pa.int64()),
        ("zones", pa.int64()),
        ("nodes", pa.int64()),
        ("placement", pa.list_(pa.string())),
    ]
)
_SERIES = ("allocated", "busy", "partial_pods", "partial_gpus")
_KEY_COLUMNS = ("workload", "arm", "seed")


def arm_schema(summary: Sequence[tuple[str, pa.DataType]]) -> pa.Schema:
    """The row of one run: the key, ``settings``, the ``summary`` columns, then the result."""
    own = [
        ("workload", pa.string()),
        ("arm", pa.string()),
        ("seed", pa.int64()),
        ("settings", pa.string()),
    ]
    names = {name for name, _ in own}
    return pa.schema(
        [
            *own,
            *((name, kind) for name, kind in summary if name not in names),
            ("total_gpus", pa.int64()),
            ("virtual_seconds", pa.float64()),
            ("wall_seconds", pa.float64()),
            ("cycles", pa.int64()),
            ("origin", pa.float64()),
            ("warnings", pa.list_(pa.string())),
            ("times", pa.list_(pa.float64())),
            *((name, pa.list_(pa.int64())) for name in _SERIES),
            ("job_results", pa.list_(_JOB)),
        ]
    )


def _summary_types(
    columns: Sequence[str], ints: Collection[str], strings: Collection[str] = ()
) -> list[tuple[str, pa.DataType]]:
    return [
        (c, pa.int64() if c in ints else pa.string() if c in strings else pa.float64())
        for c in columns
        if c not in _KEY_COLUMNS
    ]


#: A run of ``experiment gangs``: its columns of ``summary.csv`` and its result.
GANG_SCHEMA = arm_schema(
    _summary_types(
        SUMMARY_COLUMNS, {"jobs", "done", "running", "pending", "partial_at_end", "partial_pods_peak"}
    )
)
#: A run of ``experiment topology``: its row of ``summary.csv`` (one seed) and its result.
TOPOLOGY_SCHEMA = arm_schema(
    _summary_types(TOPOLOGY_COLUMNS, {"jobs", "done", "pending", "multi_pod_jobs"}, {"seeds", "leaves_hist"})
)


def arm_row(result: ArmResult, settings: Mapping[str, Any], summary: Mapping[str, Any]) -> dict[str, Any]:
    """The Parquet row of one run (:func:`arm_schema`)."""
    return {
        **{k: v for k, v in summary.items() if k not in _KEY_COLUMNS},
        "workload": result.workload,
        "arm": result.arm,
        "seed": result.seed,
        "settings": json.dumps(dict(settings), sort_keys=True),
        "total_gpus": result.total_gpus,
        "virtual_seconds": result.virtual_seconds,
        "wall_seconds": result.wall_seconds,
        "cycles": result.cycles,
        "origin": result.origin,
        "warnings": list(result.warnings),
        "times": list(result.times),
        **{name: list(getattr(result, name)) for name in _SERIES},
        "job_results": [
            {
                "name": j.name,
                "arrival": j.arrival,
                "duration": j.duration,
                "pods": j.pods,
                "gpus": j.gpus,
                "start": j.start,
                "end": j.end,
                "bound_at_end": j.bound_at_end,
                "racks": j.racks,
                "zones": j.zones,
                "nodes": j.nodes,
                "placement": list(j.placement),
            }
            for j in result.jobs
        ],
    }


def arm_result(row: Mapping[str, Any]) -> ArmResult:
    """The run a row was written from, equal to it field for field (no simulation kept)."""
    return ArmResult(
        arm=row["arm"],
        workload=row["workload"],
        total_gpus=row["total_gpus"],
        jobs=[
            JobResult(
                name=j["name"],
                arrival=j["arrival"],
                duration=j["duration"],
                pods=j["pods"],
                gpus=j["gpus"],
                start=j["start"],
                end=j["end"],
                bound_at_end=j["bound_at_end"],
                racks=j["racks"],
                zones=j["zones"],
                nodes=j["nodes"],
                placement=tuple(j["placement"]),
            )
            for j in row["job_results"]
        ],
        times=list(row["times"]),
        allocated=list(row["allocated"]),
        busy=list(row["busy"]),
        partial_pods=list(row["partial_pods"]),
        partial_gpus=list(row["partial_gpus"]),
        virtual_seconds=row["virtual_seconds"],
        wall_seconds=row["wall_seconds"],
        cycles=row["cycles"],
        warnings=list(row["warnings"]),
        seed=row["seed"],
        origin=row["origin"],
    )


@dataclass(frozen=True, eq=False)
class Shared:
    """An input of several cells: the same object named in several cells' arguments travels to
    each worker once (:meth:`SweepEngine.share`), not with every cell."""

    value: Any


@dataclass(frozen=True)
class ArmCell:
    """One run: the cell function's arguments (``Shared`` ones shipped once) and the options that
    shaped its inputs, by the command's flag (a resumed sweep names the one that differs)."""

    args: tuple[Any, ...]
    settings: Mapping[str, Any]


def gang_cell(arm: str, jobs: Sequence[Job], cluster: ClusterShape, workload: str, seed: int) -> ArmResult:
    """One arm of ``experiment gangs`` on one workload."""
    return run_arm(arm, jobs, cluster, workload=workload, seed=seed)


def topology_cell(arm: str, jobs: Sequence[Job], fabric: Fabric, seed: int) -> ArmResult:
    """One arm of ``experiment topology`` with one seed."""
    return run_topology_arm(arm, jobs, fabric, seed=seed)


def run_arm_cells(
    fn: Callable[..., ArmResult],
    cells: Mapping[str, ArmCell],
    *,
    summary: Callable[[ArmResult], Mapping[str, Any]],
    schema: pa.Schema,
    out: Path | None = None,
    resume: bool = False,
    engine: SweepEngine | None = None,
    address: str | None = None,
    workers: int | None = None,
    progress: Callable[[int, int, float], None] | None = None,
) -> list[ArmResult]:
    """``fn(*cell.args)`` for every cell, in the order of ``cells``: on ``engine``, or on one started
    for the sweep (the Dask scheduler at ``address``, or a local cluster of ``workers`` processes,
    one per cell up to one per core); a sweep with one cell to run and no ``address`` runs it in
    this process. With ``out`` (a directory) every finished run is written there as it finishes
    (``schema``, its ``summary`` row among the columns), and ``resume`` takes the runs already
    there, of the same settings, instead of running them again."""

    def restore(key: str, row: dict[str, Any]) -> ArmResult:
        ran = json.loads(row["settings"])
        asked = dict(cells[key].settings)
        for flag in sorted(set(ran) | set(asked)):
            if ran.get(flag) != asked.get(flag):
                raise InputError(
                    f"this run was made with {flag} {ran.get(flag)!r}, the sweep asks {asked.get(flag)!r}",
                    field=flag,
                )
        return arm_result(row)

    sink = (
        ParquetCells(
            out,
            schema,
            to_row=lambda key, r: arm_row(r, cells[key].settings, summary(r)),
            from_row=restore,
            resume=resume,
        )
        if out is not None
        else None
    )

    def args_of(runner: CellRunner, todo: Sequence[str]) -> Iterator[tuple[str, tuple[Any, ...]]]:
        shared: dict[int, Any] = {}
        for key in todo:
            args = []
            for arg in cells[key].args:
                if isinstance(arg, Shared):
                    if id(arg) not in shared:
                        shared[id(arg)] = runner.share(arg.value)
                    arg = shared[id(arg)]
                args.append(arg)
            yield key, (fn, *args)

    keys = list(cells)
    n_workers = workers
    if n_workers is None and address is None:
        n_workers = max(1, min(len(keys), os.cpu_count() or 1))
    done = run_sweep(
        cell_task,
        keys,
        args_of,
        sink=sink,
        engine=engine,
        address=address,
        workers=n_workers,
        progress=progress,
        inline_one=True,
    )
    return list(done.values())
