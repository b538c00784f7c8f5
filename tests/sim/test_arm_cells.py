"""``experiment gangs`` and ``experiment topology`` on the sweep engine (a local Dask cluster of two
workers): every run equals the same run made inline, each finished run is written to Parquet and
read back whole, a resumed sweep runs only the missing runs and writes the same report, a worker
killed mid-sweep loses no run and repeats none, and one run never starts the engine."""

from __future__ import annotations

import csv
import dataclasses
import filecmp
import os
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests.sim.sweep_helpers import count_shares

from kubesched.cli import EXIT_BAD_INPUT, EXIT_OK, main
from kubesched.sim.arm_cells import (
    GANG_SCHEMA,
    TOPOLOGY_SCHEMA,
    ArmCell,
    Shared,
    arm_result,
    arm_row,
    gang_cell,
    run_arm_cells,
    topology_cell,
)
from kubesched.sim.gang_experiment import (
    ArmResult,
    GangCluster,
    Job,
    JobResult,
    llm_mix,
    run_arm,
    summary_rows,
)
from kubesched.sim.sweep_engine import ParquetCells, SweepEngine
from kubesched.sim.topology_experiment import (
    Fabric,
    fabric_from_objects,
    run_topology_arm,
    topology_rows,
    two_tier_fabric,
)
from kubesched.sim.topology_report import write_report

DATA = Path(__file__).parent / "data"
TOPOLOGY_ARMS = ("none", "soft", "hard")


@pytest.fixture(scope="module")
def engine() -> Iterator[SweepEngine]:
    with SweepEngine(workers=2) as eng:
        yield eng


def _fabric() -> Fabric:
    return fabric_from_objects(two_tier_fabric(leaves=4, nodes_per_leaf=2, leaves_per_spine=2))


def _jobs(n: int) -> list[Job]:
    """Jobs of one to three 8-GPU workers arriving every 30 s: some wait, some span leaves."""
    return [Job(f"job-{i:03d}", i * 30.0, 600.0, (8,) * (1 + i % 3)) for i in range(n)]


def _topology_cells(jobs: list[Job], fabric: Fabric, seeds: list[int]) -> dict[str, ArmCell]:
    shared_jobs, shared_fabric = Shared(jobs), Shared(fabric)
    return {
        f"{arm}__{seed}": ArmCell((arm, shared_jobs, shared_fabric, seed), {"--jobs": len(jobs)})
        for seed in seeds
        for arm in TOPOLOGY_ARMS
    }


def _topology_sweep(cells: dict[str, ArmCell], fabric: Fabric, **kwargs: object) -> list[ArmResult]:
    return run_arm_cells(
        topology_cell,
        cells,
        summary=lambda r: topology_rows([r], fabric)[0].as_dict(),
        schema=TOPOLOGY_SCHEMA,
        **kwargs,  # type: ignore[arg-type]
    )


def _timeless(results: list[ArmResult]) -> list[ArmResult]:
    """The results without the wall time they took, the one thing two runs do not share."""
    return [dataclasses.replace(r, wall_seconds=0.0) for r in results]


def test_gang_runs_on_the_engine_equal_the_inline_runs(engine: SweepEngine, tmp_path: Path) -> None:
    cluster = GangCluster(nodes=4)
    llm = llm_mix(1, cluster_gpus=cluster.gpus)[:12]
    # One job larger than the cluster: it stays pending, with no start and no end.
    llm.append(Job("too-big", 60.0, 600.0, (8,) * 5))
    shared_cluster, shared_llm = Shared(cluster), Shared(llm)
    arms = ("default", "workload-gang", "volcano")
    cells = {
        f"llm__{arm}": ArmCell((arm, shared_llm, shared_cluster, "llm", 3), {"--seed": 3}) for arm in arms
    }
    out = tmp_path / "cells.parquet"
    got = run_arm_cells(
        gang_cell,
        cells,
        summary=lambda r: summary_rows([r])[0],
        schema=GANG_SCHEMA,
        out=out,
        engine=engine,
    )
    want = [run_arm(arm, llm, cluster, workload="llm", seed=3) for arm in arms]
    assert [r.arm for r in got] == list(arms)
    assert _timeless(got) == _timeless(want)
    assert any(j.start is None for j in got[0].jobs)
    # Each run is on disk whole: read back, it is the run itself.
    sink = ParquetCells(out, GANG_SCHEMA, to_row=_no_write, from_row=_result_of, resume=True)
    assert list(sink.restore(list(cells)).values()) == got
    table = pq.read_table(out).to_pylist()
    by_arm = {row["arm"]: row for row in table}
    for result in got:
        assert by_arm[result.arm]["done"] == summary_rows([result])[0]["done"]


def _no_write(key: str, result: ArmResult) -> dict[str, Any]:
    raise AssertionError("only read")


def _result_of(key: str, row: dict[str, Any]) -> ArmResult:
    return arm_result(row)


def test_a_row_gives_back_the_run_field_for_field() -> None:
    fabric = _fabric()
    result = run_topology_arm("hard", _jobs(12), fabric, seed=2)
    row = arm_row(result, {"--seed": 2}, topology_rows([result], fabric)[0].as_dict())
    assert arm_result(row) == result
    assert row["leaves_hist"] and row["seed"] == 2


_times = st.floats(min_value=0.0, max_value=1e7, allow_nan=False)
_counts = st.integers(min_value=0, max_value=10_000)
_job_results = st.builds(
    JobResult,
    name=st.text(min_size=1, max_size=20),
    arrival=_times,
    duration=_times,
    pods=_counts,
    gpus=_counts,
    start=st.none() | _times,
    end=st.none() | _times,
    bound_at_end=_counts,
    racks=_counts,
    zones=_counts,
    nodes=_counts,
    placement=st.lists(st.text(max_size=12), max_size=5).map(tuple),
)


@st.composite
def _arm_results(draw: st.DrawFn) -> ArmResult:
    steps = draw(st.integers(min_value=0, max_value=6))
    series = st.lists(_counts, min_size=steps, max_size=steps)
    return ArmResult(
        arm=draw(st.sampled_from(["default", "volcano", "hard"])),
        workload=draw(st.sampled_from(["llm", "philly"])),
        total_gpus=draw(_counts),
        jobs=draw(st.lists(_job_results, max_size=5)),
        times=draw(st.lists(_times, min_size=steps, max_size=steps)),
        allocated=draw(series),
        busy=draw(series),
        partial_pods=draw(series),
        partial_gpus=draw(series),
        virtual_seconds=draw(_times),
        wall_seconds=draw(_times),
        cycles=draw(_counts),
        warnings=draw(st.lists(st.text(max_size=30), max_size=3)),
        seed=draw(_counts),
        origin=draw(_times),
    )


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(result=_arm_results())
def test_every_run_comes_back_from_its_parquet_file_as_it_was(tmp_path: Path, result: ArmResult) -> None:
    # A resumed sweep's report is built from these: any field lost or rounded would change it.
    sink = ParquetCells(
        tmp_path / "cells",
        GANG_SCHEMA,
        to_row=lambda key, r: arm_row(r, {"--seed": 1}, {"jobs": len(r.jobs)}),
        from_row=_result_of,
    )
    sink.write("run", result)
    assert sink.restore(["run"]) == {"run": result}


def test_topology_runs_on_the_engine_equal_the_inline_runs_and_each_input_goes_once(
    engine: SweepEngine, monkeypatch: pytest.MonkeyPatch
) -> None:
    fabric, jobs = _fabric(), _jobs(20)
    shared = count_shares(engine, monkeypatch)
    got = _topology_sweep(_topology_cells(jobs, fabric, [1, 2]), fabric, engine=engine)
    want = [run_topology_arm(arm, jobs, fabric, seed=seed) for seed in (1, 2) for arm in TOPOLOGY_ARMS]
    assert _timeless(got) == _timeless(want)
    # The jobs and the fabric once each, for all six runs.
    assert sorted(shared) == ["Fabric", "list"]


def test_a_worker_killed_mid_sweep_loses_no_run_and_repeats_none(tmp_path: Path) -> None:
    fabric, jobs = _fabric(), _jobs(60)
    cells = _topology_cells(jobs, fabric, [1, 2])
    out = tmp_path / "cells.parquet"
    killed: list[int] = []
    finished: list[int] = []
    with SweepEngine(workers=2) as eng:

        def progress(done: int, total: int, started: float) -> None:
            finished.append(done)
            if done == 1 and not killed:
                busy = [w for w, keys in eng.client.processing().items() if keys]
                pid = eng.worker_pids()[busy[0]]
                os.kill(pid, signal.SIGKILL)
                killed.append(pid)

        got = _topology_sweep(cells, fabric, engine=eng, out=out, progress=progress)
        assert killed and killed[0] not in eng.worker_pids().values()
    assert finished == list(range(len(cells) + 1))
    assert [(r.arm, r.seed) for r in got] == [(a, s) for s in (1, 2) for a in TOPOLOGY_ARMS]
    assert len(list(out.glob("*.parquet"))) == len(cells)
    want = [run_topology_arm(arm, jobs, fabric, seed=seed) for seed in (1, 2) for arm in TOPOLOGY_ARMS]
    assert _timeless(got) == _timeless(want)


def _fabric_file(tmp_path: Path) -> Path:
    path = tmp_path / "fabric.yaml"
    items = two_tier_fabric(leaves=4, nodes_per_leaf=2, leaves_per_spine=2)
    path.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": items}))
    return path


def _topology_argv(tmp_path: Path) -> list[str]:
    return [
        "experiment", "topology", "--philly", str(DATA / "philly_fabric.csv"), "--philly-skip", "0",
        "--fabric", str(_fabric_file(tmp_path)), "--seeds", "1-2", "--workers", "2",
    ]  # fmt: skip


def _csv_without_wall(path: Path) -> list[list[str]]:
    rows = list(csv.reader(path.open()))
    if "wall_s" in rows[0]:
        i = rows[0].index("wall_s")
        rows = [r[:i] + r[i + 1 :] for r in rows]
    return rows


def _same_report(a: Path, b: Path) -> None:
    """The same files with the same contents, but for the wall time each run took."""
    names = sorted(p.name for p in a.iterdir())
    assert names == sorted(p.name for p in b.iterdir())
    for name in names:
        if name.endswith(".csv"):
            assert _csv_without_wall(a / name) == _csv_without_wall(b / name), name
        elif name.endswith(".md"):
            strip = [line.rsplit("|", 2)[0] for line in (a / name).read_text().splitlines()]
            assert strip == [line.rsplit("|", 2)[0] for line in (b / name).read_text().splitlines()]
        else:
            assert filecmp.cmp(a / name, b / name, shallow=False), name


def test_cli_report_is_the_inline_report_and_a_resumed_sweep_writes_it_again(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = _topology_argv(tmp_path)
    out = tmp_path / "sweep"
    assert main([*argv, "--out", str(out), "--report", str(tmp_path / "first")]) == EXIT_OK
    first_text = capsys.readouterr().out
    cells = out / "cells.parquet"
    assert sorted(p.name for p in cells.iterdir()) == [
        f"{arm}__{seed}.parquet" for arm in ("hard", "none", "soft") for seed in (1, 2)
    ]
    # Today's report: the same runs one after the other in this process.
    from kubesched.sim.gang_experiment import philly_jobs

    fabric = _fabric()
    jobs = philly_jobs(
        DATA / "philly_fabric.csv", jobs=500, skip=0, max_gpus=fabric.gpus, speedup=fabric.gpus / 256
    )
    inline = [run_topology_arm(arm, jobs, fabric, seed=s) for s in (1, 2) for arm in TOPOLOGY_ARMS]
    write_report(inline, fabric, tmp_path / "inline")
    _same_report(tmp_path / "first", tmp_path / "inline")

    (cells / "soft__2.parquet").unlink()
    kept = {p: p.stat().st_mtime_ns for p in cells.iterdir()}
    assert main([*argv, "--resume", str(out), "--report", str(tmp_path / "resumed")]) == EXIT_OK
    resumed_text = capsys.readouterr().out
    assert {p: p.stat().st_mtime_ns for p in kept} == kept
    assert (cells / "soft__2.parquet").is_file()
    _same_report(tmp_path / "first", tmp_path / "resumed")
    # The runs kept bring their own wall times back: only the sweep's total differs.
    same = [a for a, b in zip(first_text.splitlines(), resumed_text.splitlines(), strict=True) if a == b]
    assert len(same) >= len(first_text.splitlines()) - 3


def test_cli_resume_refuses_runs_of_other_options(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = _topology_argv(tmp_path)[:-4]
    out = tmp_path / "sweep"
    assert main([*argv, "--arms", "hard", "--out", str(out)]) == EXIT_OK
    capsys.readouterr()
    code = main([*argv, "--arms", "hard", "--time-scale", "30", "--resume", str(out)])
    assert code == EXIT_BAD_INPUT
    err = capsys.readouterr().err
    assert "hard__1.parquet" in err and "--time-scale" in err


def test_one_run_never_starts_the_engine(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(self: SweepEngine) -> None:
        raise AssertionError("the engine was started for one run")

    monkeypatch.setattr(SweepEngine, "start", refuse)
    argv = _topology_argv(tmp_path)[:-4]
    assert main([*argv, "--arms", "hard", "--out", str(tmp_path / "sweep")]) == EXIT_OK
    assert len(list((tmp_path / "sweep" / "cells.parquet").glob("*.parquet"))) == 1


GANGS = [
    "experiment",
    "gangs",
    "--philly",
    str(DATA / "philly.csv"),
    "--philly-skip",
    "0",
    "--workloads",
    "philly",
]


@pytest.mark.parametrize(
    ("command", "extra", "message"),
    [
        (GANGS, ["--workers", "0"], "field --workers: must be at least 1"),
        (GANGS, ["--cluster", "tcp://127.0.0.1:9"], "field --cluster: cannot reach the Dask scheduler"),
        (None, ["--workers", "0"], "field --workers: must be at least 1"),
    ],
)
def test_cli_engine_options_are_located_errors(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    command: list[str] | None,
    extra: list[str],
    message: str,
) -> None:
    argv = command or _topology_argv(tmp_path)[:-4]
    assert main([*argv, *extra]) == EXIT_BAD_INPUT
    assert message in capsys.readouterr().err


def test_cli_runs_go_to_an_existing_cluster(engine: SweepEngine, tmp_path: Path) -> None:
    argv = _topology_argv(tmp_path)[:-4]
    address = engine.client.scheduler.address
    out = tmp_path / "sweep"
    assert main([*argv, "--arms", "none,hard", "--cluster", address, "--out", str(out)]) == EXIT_OK
    assert pq.read_table(out / "cells.parquet").num_rows == 2
    # The command's client is gone; the cluster and its workers stay.
    assert engine.workers == 2
