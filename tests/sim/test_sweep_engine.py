"""The FGD grid through the sweep engine (Dask distributed, a local cluster of two workers): the same
cells as running each inline, every cell written to Parquet as it finishes, a killed worker's cells
run again elsewhere, and a resumed sweep runs only what is missing."""

from __future__ import annotations

import os
import signal
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from tests.sim.sweep_helpers import count_shares

from kubesched.cli import main
from kubesched.errors import InputError
from kubesched.sim.gpu_cells import CellResult, load_cluster, load_pod_list
from kubesched.sim.gpu_experiment import run_cell, run_grid
from kubesched.sim.sweep_engine import ParquetCells, SweepEngine

MODELS = ("T4", "P100", "V100M16", "A10")
POLICIES = ["Random", "BestFit", "FGD"]


def _write_trace(tmp_path: Path, nodes: int, pods: int, name: str = "pods") -> tuple[Path, Path]:
    """A node list and a pod list of the Alibaba 2023 trace's columns, with its mix of whole-card,
    shared-card, CPU-only and model-constrained pods."""
    rng = np.random.default_rng(7)
    node_csv = tmp_path / "nodes.csv"
    lines = ["sn,cpu_milli,memory_mib,gpu,model"]
    for i in range(nodes):
        cpu, cards, model = rng.choice([32, 64, 96]), rng.choice([1, 2, 4, 8]), rng.choice(MODELS)
        lines.append(f"node-{i:04d},{cpu}000,262144,{cards},{model}")
    node_csv.write_text("\n".join(lines) + "\n")
    pod_csv = tmp_path / f"{name}.csv"
    lines = ["name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec"]
    for i in range(pods):
        kind = rng.integers(4)
        if kind == 0:
            gpu, milli = 0, 0
        elif kind == 1:
            gpu, milli = 1, int(rng.choice([250, 500, 300]))
        else:
            gpu, milli = int(rng.choice([1, 2, 4])), 1000
        spec = str(rng.choice(MODELS)) if gpu and rng.integers(5) == 0 else ""
        lines.append(f"pod-{i:05d},{rng.choice([2, 4, 8])}000,8192,{gpu},{milli},{spec}")
    pod_csv.write_text("\n".join(lines) + "\n")
    return node_csv, pod_csv


@pytest.fixture(scope="module")
def engine() -> Iterator[SweepEngine]:
    with SweepEngine(workers=2) as eng:
        yield eng


def _same(a: CellResult, b: CellResult) -> None:
    assert (a.pod_list, a.policy, a.seed) == (b.pod_list, b.policy, b.seed)
    assert (a.pods, a.failed) == (b.pods, b.failed)
    np.testing.assert_array_equal(a.alloc_at, b.alloc_at)
    np.testing.assert_array_equal(a.frag_at, b.frag_at)


def _inline(nodes: Path, pods: Path, seeds: list[int]) -> list[CellResult]:
    cluster, pod_list = load_cluster(nodes), load_pod_list(pods)
    return [run_cell(cluster, pod_list, p, s) for p in POLICIES for s in seeds]


def test_the_engine_gives_the_inline_table_cell_for_cell(engine: SweepEngine, tmp_path: Path) -> None:
    nodes, pods = _write_trace(tmp_path, 40, 300)
    out = tmp_path / "cells.parquet"
    got = run_grid(nodes, [pods], POLICIES, [1, 2], engine=engine, out=out, progress=lambda d, t, s: None)
    want = _inline(nodes, pods, [1, 2])
    assert len(got) == len(want) == 6
    for a, b in zip(got, want, strict=True):
        _same(a, b)
    # The Parquet output holds the same cells, read back.
    table = pq.read_table(out).to_pylist()
    assert sorted((r["policy"], r["seed"]) for r in table) == sorted((p, s) for p in POLICIES for s in (1, 2))
    for row in table:
        cell = next(r for r in want if (r.policy, r.seed) == (row["policy"], row["seed"]))
        np.testing.assert_array_equal(np.array(row["alloc_pct"]), cell.alloc_at)
        assert row["unallocated_gpu_pct_at_100"] == cell.unallocated_at_100


def test_cells_are_written_as_they_finish(engine: SweepEngine, tmp_path: Path) -> None:
    nodes, pods = _write_trace(tmp_path, 40, 300)
    out = tmp_path / "cells.parquet"
    seen: list[int] = []

    def progress(done: int, total: int, started: float) -> None:
        # Every report comes after the cell it counts is on disk.
        seen.append(len(list(out.glob("*.parquet"))) - done)

    run_grid(nodes, [pods], POLICIES, [1, 2], engine=engine, out=out, progress=progress)
    assert seen and all(x == 0 for x in seen)


def test_a_worker_killed_mid_sweep_loses_no_cell(engine: SweepEngine, tmp_path: Path) -> None:
    nodes, pods = _write_trace(tmp_path, 300, 3000)
    out = tmp_path / "cells.parquet"
    seeds = [1, 2, 3, 4]
    killed: list[int] = []
    interrupted: list[str] = []

    def progress(done: int, total: int, started: float) -> None:
        if done == 1 and not killed:
            # A worker in the middle of a cell.
            busy = {w: keys for w, keys in engine.client.processing().items() if keys}
            worker = next(iter(busy))
            pid = engine.worker_pids()[worker]
            os.kill(pid, signal.SIGKILL)
            killed.append(pid)
            interrupted.extend(busy[worker])

    got = run_grid(nodes, [pods], POLICIES, seeds, engine=engine, out=out, progress=progress)
    assert killed and interrupted
    # The nanny replaced the worker; the killed process is no worker any more.
    assert killed[0] not in engine.worker_pids().values()
    keys = [(r.policy, r.seed) for r in got]
    assert sorted(keys) == sorted({(p, s) for p in POLICIES for s in seeds})
    assert len(list(out.glob("*.parquet"))) == len(keys)
    for a, b in zip(got, _inline(nodes, pods, seeds), strict=True):
        _same(a, b)


def test_the_only_worker_killed_mid_sweep_loses_no_cell(tmp_path: Path) -> None:
    nodes, pods = _write_trace(tmp_path, 300, 3000)
    seeds = [1, 2]
    killed: list[int] = []
    with SweepEngine(workers=1) as alone:

        def progress(done: int, total: int, started: float) -> None:
            if done == 1 and not killed:
                killed.extend(alone.worker_pids().values())
                os.kill(killed[0], signal.SIGKILL)

        # The inputs the worker held went with it; they are made again for the new worker.
        got = run_grid(nodes, [pods], POLICIES, seeds, engine=alone, progress=progress)
    assert killed
    for a, b in zip(got, _inline(nodes, pods, seeds), strict=True):
        _same(a, b)


def test_resume_runs_only_the_missing_cells(engine: SweepEngine, tmp_path: Path) -> None:
    nodes, pods = _write_trace(tmp_path, 40, 300)
    out = tmp_path / "cells.parquet"
    first = run_grid(nodes, [pods], POLICIES, [1, 2], engine=engine, out=out, progress=lambda d, t, s: None)
    gone = out / "pods__FGD__2.parquet"
    gone.unlink()
    kept = {p: p.stat().st_mtime_ns for p in out.glob("*.parquet")}
    counts: list[tuple[int, int]] = []
    again = run_grid(
        nodes,
        [pods],
        POLICIES,
        [1, 2],
        engine=engine,
        out=out,
        resume=True,
        progress=lambda d, t, s: counts.append((d, t)),
    )
    # Five cells were on disk and untouched; only the sixth ran.
    assert counts == [(5, 6), (6, 6)]
    assert {p: p.stat().st_mtime_ns for p in kept} == kept
    assert gone.is_file()
    for a, b in zip(again, first, strict=True):
        _same(a, b)


def test_resume_refuses_cells_of_other_settings(engine: SweepEngine, tmp_path: Path) -> None:
    nodes, pods = _write_trace(tmp_path, 40, 300)
    out = tmp_path / "cells.parquet"
    run_grid(nodes, [pods], ["FGD"], [1], engine=engine, out=out, progress=lambda d, t, s: None)
    with pytest.raises(InputError, match="tie_break") as err:
        run_grid(
            nodes, [pods], ["FGD"], [1], tie_break="random", engine=engine, out=out, resume=True,
            progress=lambda d, t, s: None,
        )  # fmt: skip
    assert err.value.field == "--tie-break"


def test_cli_sweep_resume_and_workers(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    nodes, pods = _write_trace(tmp_path, 40, 300)
    out = tmp_path / "fgd"
    args = ["experiment", "fgd", "--nodes", str(nodes), "--pod-list", str(pods)]
    args += ["--policies", "BestFit,FGD", "--seeds", "1-2", "--workers", "1"]
    assert main([*args, "--out", str(out)]) == 0
    table = pq.read_table(out / "cells.parquet")
    assert table.num_rows == 4
    (out / "cells.parquet" / "pods__BestFit__1.parquet").unlink()
    capsys.readouterr()
    assert main([*args, "--resume", str(out)]) == 0
    assert "4 cells" in capsys.readouterr().out
    assert pq.read_table(out / "cells.parquet").num_rows == 4


def test_cli_unreachable_cluster_is_a_located_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    nodes, pods = _write_trace(tmp_path, 4, 10)
    code = main(
        ["experiment", "fgd", "--nodes", str(nodes), "--pod-list", str(pods), "--seeds", "1",
         "--cluster", "tcp://127.0.0.1:9", "--out", str(tmp_path / "o")]
    )  # fmt: skip
    assert code == 2
    assert "--cluster" in capsys.readouterr().err


def test_local_workers_keep_mallocs_dynamic_mmap_threshold(engine: SweepEngine) -> None:
    # Dask's default MALLOC_TRIM_THRESHOLD_ makes every large NumPy temporary a fresh mmap.
    assert set(engine.client.run(os.environ.get, "MALLOC_TRIM_THRESHOLD_").values()) == {None}


def test_cli_on_an_existing_cluster(engine: SweepEngine, tmp_path: Path) -> None:
    nodes, pods = _write_trace(tmp_path, 40, 300)
    out = tmp_path / "fgd"
    address = engine.client.scheduler.address
    args = ["experiment", "fgd", "--nodes", str(nodes), "--pod-list", str(pods), "--policies", "FGD"]
    assert main([*args, "--seeds", "1-2", "--cluster", address, "--out", str(out)]) == 0
    assert pq.read_table(out / "cells.parquet").num_rows == 2
    # The sweep's client is gone; the cluster and its workers stay.
    assert engine.workers == 2


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(keys=st.sets(st.text(min_size=1, max_size=40), min_size=1, max_size=6))
# Percent-encoded, a key of 4-byte characters is three times too long for a file name.
@example(keys={"\U00010000" * 40, ".hidden"})
def test_parquet_cells_keep_one_file_per_key(tmp_path: Path, keys: set[str]) -> None:
    schema = pa.schema([("key", pa.string()), ("value", pa.int64())])
    directory = tmp_path / f"cells-{uuid.uuid4().hex}"
    rows: dict[str, Any] = {
        "to_row": lambda key, value: {"key": key, "value": value},
        "from_row": lambda key, row: (row["key"], row["value"]),
    }
    cells = ParquetCells[tuple[str, int]](directory, schema, **rows)
    written = {key: i for i, key in enumerate(sorted(keys))}
    for key, i in written.items():
        cells.write(key, i)
    assert len(list(directory.glob("*.parquet"))) == len(keys)
    want = {key: (key, i) for key, i in written.items()}
    assert cells.restore([*keys, "not written"]) == want
    # A new sweep in the same directory starts empty; a resumed one keeps them.
    assert ParquetCells(directory, schema, resume=True, **rows).restore(list(keys)) == want
    assert ParquetCells(directory, schema, **rows).restore(list(keys)) == {}


def test_inputs_are_shipped_once_not_per_cell(
    engine: SweepEngine, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    nodes, pods = _write_trace(tmp_path, 40, 300)
    _, other = _write_trace(tmp_path, 40, 200, name="other")
    shared = count_shares(engine, monkeypatch)
    got = run_grid(nodes, [pods, other], POLICIES, [1, 2, 3], engine=engine, progress=lambda d, t, s: None)
    assert len(got) == 18
    # The cluster once, and each pod list with its typical pods once, for all 18 cells.
    assert sorted(shared) == ["Cluster", "PodList", "PodList", "TypicalPods", "TypicalPods"]
