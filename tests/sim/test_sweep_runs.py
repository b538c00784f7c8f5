"""``simulate`` with several runs and an export directory: each run's files written as it ends, and
``--resume`` keeping the runs finished from the same inputs, with the output of a sweep never
interrupted."""

from __future__ import annotations

import dataclasses
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq  # type: ignore[import-untyped]
import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st
from tests.sim.sweep_helpers import LABELS, heavy_cluster, sent_to_engine, two_variants

from kubesched.api.manifests import load_manifests
from kubesched.batch.conf_loader import default_batch_conf
from kubesched.cli import EXIT_BAD_INPUT, EXIT_OK, EXIT_UNSCHEDULABLE, main
from kubesched.cli import simulate as simulate_cli
from kubesched.controllers.dradriver import DraDriverOptions
from kubesched.framework.registry import Registry
from kubesched.plugins import default_registry
from kubesched.sim import compare, sweep_engine
from kubesched.sim.sweep_engine import path_component
from kubesched.sim.sweep_runs import RUNS, STATE, fingerprint, workload_digest

DATA = Path(__file__).parent / "data"
EXAMPLES = Path(__file__).parents[2] / "examples" / "gpu-sharing"


@pytest.fixture(autouse=True)
def _wide_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "250")


@pytest.fixture
def inline(monkeypatch: pytest.MonkeyPatch) -> None:
    """The runs one after the other in the test's process: what is kept and written does not depend
    on where runs go, and no engine starts."""
    monkeypatch.setattr(simulate_cli, "ENGINE_RUNS", 1000)


@pytest.fixture
def argv(tmp_path: Path) -> list[str]:
    """A trace replayed under two configs and the two variants of a sweep file: four runs."""
    sweep = two_variants(tmp_path / "sweep.yaml")
    fgd = tmp_path / "fgd.yaml"
    fgd.write_text((EXAMPLES / "fgd.yaml").read_text())
    return [
        "simulate",
        "--trace",
        str(DATA / "alibaba_pods.csv"),
        "--nodes",
        str(DATA / "alibaba_nodes.csv"),
        "--config",
        str(fgd),
        "--config",
        str(EXAMPLES / "bestfit.yaml"),
        "--sweep",
        str(sweep),
        "--fail-on-unschedulable",
    ]


def _combined(directory: Path) -> dict[str, bytes]:
    """The export's own files, each holding every run."""
    return {p.name: p.read_bytes() for p in sorted(directory.iterdir()) if p.is_file()}


def _state_times(directory: Path) -> dict[str, int]:
    return {p.parent.name: p.stat().st_mtime_ns for p in (directory / RUNS).glob(f"*/{STATE}")}


def _run(capsys: pytest.CaptureFixture[str], args: list[str]) -> tuple[int, str, str]:
    code = main(args)
    out, err = capsys.readouterr()
    return code, out, err


def _count_runs(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The labels of the runs simulated from now on, in this process."""
    ran: list[str] = []
    real = compare.run_one

    def spy(settings: Any, run: compare.RunSpec, *args: Any, **kw: Any) -> compare.RunResult:
        ran.append(run.label)
        return real(settings, run, *args, **kw)

    monkeypatch.setattr(compare, "run_one", spy)
    return ran


@pytest.mark.usefixtures("inline")
def test_each_run_is_on_disk_before_the_next_starts(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path, argv: list[str]
) -> None:
    out = tmp_path / "out"
    seen: list[set[str]] = []
    real = compare.run_one

    def spy(*args: Any, **kw: Any) -> compare.RunResult:
        seen.append({p.parent.name for p in (out / RUNS).glob(f"*/{STATE}")})
        return real(*args, **kw)

    monkeypatch.setattr(compare, "run_one", spy)
    assert _run(capsys, [*argv, "-o", "json", "--export", str(out)])[0] == EXIT_UNSCHEDULABLE
    assert seen == [set(LABELS[:i]) for i in range(4)]
    for label in LABELS:
        files = sorted(p.name for p in (out / RUNS / label).iterdir())
        assert files == ["pods.parquet", STATE, "summary.json", "timeseries.parquet"]


@pytest.mark.usefixtures("inline")
def test_a_runs_files_are_its_rows_of_the_combined_export(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, argv: list[str]
) -> None:
    out = tmp_path / "out"
    main([*argv, "-o", "json", "-q", "--export", str(out)])
    combined_summary = json.loads((out / "summary.json").read_text())["runs"]
    for stem in ("timeseries", "pods"):
        combined = pq.read_table(out / f"{stem}.parquet").to_pylist()
        for label in LABELS:
            own = pq.read_table(out / RUNS / label / f"{stem}.parquet").to_pylist()
            rows = [r for r in combined if r["run"] == label]
            assert own and len(own) == len(rows)
            # The combined rows have the other runs' columns too, empty in this run's rows.
            assert json.dumps(own) == json.dumps(
                [{k: r[k] for k in o} for o, r in zip(own, rows, strict=True)]
            )
    for label, entry in zip(LABELS, combined_summary, strict=True):
        own_summary = json.loads((out / RUNS / label / "summary.json").read_text())
        assert (own_summary["run"], own_summary["config"], own_summary["summary"]) == (
            entry["run"],
            entry["config"],
            entry["summary"],
        )
        assert set(own_summary["fingerprint"]) == {
            "digest",
            "config",
            "workload",
            "settings",
            "kubesched version",
        }
    capsys.readouterr()


@pytest.mark.parametrize("output", ["json", "table"])
def test_resume_runs_only_the_missing_runs_and_prints_the_uninterrupted_output(
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    argv: list[str],
    output: str,
) -> None:
    whole, cut = tmp_path / "whole", tmp_path / "cut"
    flags = [*argv, "-o", output, "--seed", "3", "--workers", "2"]
    code, out, _ = _run(capsys, [*flags, "--export", str(whole)])
    assert code == EXIT_UNSCHEDULABLE
    monkeypatch.setattr(simulate_cli, "ENGINE_RUNS", 1000)
    _run(capsys, [*flags, "--export", str(cut)])
    monkeypatch.setattr(simulate_cli, "ENGINE_RUNS", 2)
    # The sweep stopped after its first two runs: the others' files, and the combined files, missing.
    for label in LABELS[2:]:
        for p in (cut / RUNS / label).iterdir():
            p.unlink()
    for p in cut.iterdir():
        if p.is_file():
            p.unlink()
    kept = _state_times(cut)
    sent = sent_to_engine(monkeypatch)
    bar: list[tuple[int, int]] = []

    class Bar:
        def __init__(self, *args: Any) -> None:
            pass

        def __call__(self, done: int, total: int, started: float = 0.0) -> None:
            bar.append((done, total))

        def stop(self) -> None:
            pass

    monkeypatch.setattr(sweep_engine, "SweepProgress", Bar)
    # The progress bar is drawn when stderr is a terminal.
    console = simulate_cli.Console

    def terminal(*args: Any, **kw: Any) -> Any:
        return console(*args, **kw, force_terminal=True) if kw.get("stderr") else console(*args, **kw)

    monkeypatch.setattr(simulate_cli, "Console", terminal)
    resumed = _run(capsys, [*flags, "--resume", str(cut)])
    assert resumed[:2] == (code, out)
    assert f"kept 2 of 4 runs finished in {cut / RUNS}" in re.sub(r"\x1b\[[0-9;]*m", "", resumed[2])
    assert sent == [LABELS[2:]]
    # The kept runs count as done from the start.
    assert bar == [(2, 4), (3, 4), (4, 4)]
    assert _combined(cut) == _combined(whole)
    assert {k: v for k, v in _state_times(cut).items() if k in kept} == kept
    assert sorted(_state_times(cut)) == sorted(LABELS)


@pytest.mark.usefixtures("inline")
def test_resume_with_every_run_done_runs_nothing(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path, argv: list[str]
) -> None:
    out = tmp_path / "out"
    first = _run(capsys, [*argv, "-o", "yaml", "--export", str(out), "--report", str(tmp_path / "r1")])
    files = _combined(out)
    ran = _count_runs(monkeypatch)
    again = _run(capsys, [*argv, "-o", "yaml", "--resume", str(out), "--report", str(tmp_path / "r2")])
    assert ran == []
    assert again[:2] == first[:2]
    assert _combined(out) == files
    assert _combined(tmp_path / "r2") == _combined(tmp_path / "r1")


@pytest.mark.usefixtures("inline")
def test_runs_of_other_inputs_run_again_and_say_why(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path, argv: list[str]
) -> None:
    out = tmp_path / "out"
    _run(capsys, [*argv, "-o", "json", "--export", str(out)])
    # Another seed: every run is of other settings.
    fresh = _run(capsys, [*argv, "-o", "json", "--seed", "9", "--export", str(tmp_path / "fresh")])
    ran = _count_runs(monkeypatch)
    code, got, err = _run(capsys, [*argv, "-o", "json", "--seed", "9", "--resume", str(out)])
    assert (code, got) == fresh[:2]
    assert ran == LABELS
    state = out / RUNS / "most" / STATE
    assert f"most: running again: its settings changed since it ran ({state})" in err
    assert _combined(out) == _combined(tmp_path / "fresh")
    # One config file edited: that run only.
    fgd = Path(argv[argv.index("--config") + 1])
    fgd.write_text(fgd.read_text() + "\n# edited\n")
    ran.clear()
    err = _run(capsys, [*argv, "-o", "json", "--seed", "9", "--resume", str(out)])[2]
    assert ran == ["fgd.yaml"]
    assert "fgd.yaml: running again: its config changed since it ran" in err
    # Another workload (a trace limited to fewer pods): every run.
    ran.clear()
    err = _run(capsys, [*argv, "-o", "json", "--seed", "9", "--limit", "2", "--resume", str(out), "-q"])[2]
    assert ran == LABELS
    assert err == ""


@pytest.mark.usefixtures("inline")
def test_a_damaged_state_file_runs_again_and_a_foreign_one_is_an_error(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path, argv: list[str]
) -> None:
    out = tmp_path / "out"
    first = _run(capsys, [*argv, "-o", "json", "--export", str(out)])
    ran = _count_runs(monkeypatch)
    most = out / RUNS / "most" / STATE
    most.write_bytes(most.read_bytes()[:-20])
    pct = out / RUNS / "pct50" / STATE
    pct.write_bytes(pct.read_bytes().replace(b"kubesched-run-state 1", b"kubesched-run-state 0", 1))
    code, got, err = _run(capsys, [*argv, "-o", "json", "--resume", str(out)])
    assert (code, got) == first[:2]
    assert ran == ["most", "pct50"]
    assert f"most: running again: its state file is damaged ({most})" in err
    assert "pct50: running again: its state file is of another kubesched version" in err
    most.write_bytes(b"\x80\x04not ours")
    ran.clear()
    code, got, err = _run(capsys, [*argv, "-o", "json", "--resume", str(out)])
    assert code == EXIT_BAD_INPUT
    assert f"{most}: not a kubesched run state file" in err
    assert "Traceback" not in err
    assert ran == []


@pytest.mark.usefixtures("inline")
def test_a_new_sweep_removes_the_runs_a_previous_one_left(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, argv: list[str]
) -> None:
    out = tmp_path / "out"
    stale = out / RUNS / "gone"
    stale.mkdir(parents=True)
    (stale / STATE).write_bytes(b"old")
    (stale / "summary.json").write_text("{}")
    mine = out / RUNS / "notes"
    mine.mkdir()
    (mine / "todo.txt").write_text("kept")
    _run(capsys, [*argv, "-o", "json", "--export", str(out)])
    assert sorted(p.name for p in (out / RUNS).iterdir()) == sorted([*LABELS, "notes"])
    assert (mine / "todo.txt").read_text() == "kept"


@pytest.mark.usefixtures("inline")
def test_resume_flag_errors(capsys: pytest.CaptureFixture[str], tmp_path: Path, argv: list[str]) -> None:
    one = ["simulate", "--trace", str(DATA / "alibaba_pods.csv"), "--nodes", str(DATA / "alibaba_nodes.csv")]
    code, out, err = _run(capsys, [*one, "--resume", str(tmp_path / "a")])
    assert (code, out) == (EXIT_BAD_INPUT, "")
    assert "--resume" in err and "single run" in err
    code, out, err = _run(capsys, [*argv, "--resume", str(tmp_path / "a"), "--export", str(tmp_path / "b")])
    assert (code, out) == (EXIT_BAD_INPUT, "")
    assert "--export" in err
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()
    # The same directory twice is one directory; a directory never written starts the sweep.
    code, _, err = _run(
        capsys, [*argv, "-q", "--resume", str(tmp_path / "a"), "--export", str(tmp_path / "a")]
    )
    assert code == EXIT_UNSCHEDULABLE
    assert sorted(p.name for p in (tmp_path / "a" / RUNS).iterdir()) == sorted(LABELS)


def test_one_run_writes_no_run_files(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    args = ["simulate", "--trace", str(DATA / "alibaba_pods.csv"), "--nodes", str(DATA / "alibaba_nodes.csv")]
    assert main([*args, "-q", "--export", str(tmp_path / "out")]) == EXIT_OK
    assert not (tmp_path / "out" / RUNS).exists()
    capsys.readouterr()


@given(st.lists(st.text(min_size=1, max_size=300), min_size=2, max_size=2, unique=True))
def test_run_directories_are_one_plain_component_each(labels: list[str]) -> None:
    a, b = (path_component(label) for label in labels)
    assert a != b
    for name in (a, b):
        assert "/" not in name and "\0" not in name
        assert not name.startswith(".")
        assert len(name.encode()) <= 255


def test_a_sweep_killed_mid_way_resumes_to_the_uninterrupted_output(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    sweep = tmp_path / "sweep.yaml"
    variants = [
        {"name": "least", "scoringStrategy": "LeastAllocated"},
        {"name": "most", "scoringStrategy": "MostAllocated"},
        {"name": "pct30", "percentageOfNodesToScore": 30},
    ]
    sweep.write_text(yaml.safe_dump({"variants": variants}))
    args = ["simulate", str(heavy_cluster(tmp_path / "cluster.yaml")), "--sweep", str(sweep), "-o", "json"]
    killed = tmp_path / "killed"
    command = [sys.executable, "-c", "import sys; from kubesched.cli import main; sys.exit(main())"]
    # A session of its own: the kill takes the command and the engine's worker processes together.
    proc = subprocess.Popen(
        [*command, *args, "--export", str(killed), "--workers", "1", "-q"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 120
        while not list((killed / RUNS).glob(f"*/{STATE}")):
            assert proc.poll() is None, proc.communicate()[1]
            assert time.monotonic() < deadline, "no run finished"
            time.sleep(0.02)
        os.killpg(proc.pid, signal.SIGKILL)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    done = _state_times(killed)
    assert 1 <= len(done) < 3
    assert not (killed / "summary.json").exists()

    sent = sent_to_engine(monkeypatch)
    code, out, _ = _run(capsys, [*args, "--resume", str(killed), "--workers", "2"])
    assert sent == [[label for label in ("least", "most", "pct30") if label not in done]]
    assert _state_times(killed).items() >= done.items()
    # Every run once, as in a sweep never interrupted (here one run after the other: the same bytes).
    monkeypatch.setattr(simulate_cli, "ENGINE_RUNS", 1000)
    whole = _run(capsys, [*args, "--export", str(tmp_path / "whole")])
    assert (code, out) == whole[:2]
    assert [json.loads(line)["run"] for line in out.splitlines()] == ["least", "most", "pct30"]
    assert _combined(killed) == _combined(tmp_path / "whole")


def test_every_setting_of_the_runs_is_in_the_fingerprint() -> None:
    registry = default_registry()
    run = compare.RunSpec("a", None, None, "")
    base = compare.RunSettings(registry=registry)
    changed = {
        "registry": Registry(),
        "gates": {"DynamicResourceAllocation": False},
        "seed": 1,
        "explain": True,
        "batch_conf": default_batch_conf(),
        "schedule_period": 2.0,
        "dra_driver": DraDriverOptions(sharing=True),
        "metrics": True,
        "sample_every": 60.0,
        "pool_label": "pool",
    }
    # A setting added to RunSettings must be added here: a resumed run may differ in it.
    assert set(changed) == {f.name for f in dataclasses.fields(compare.RunSettings)}
    digest = fingerprint(run, "w", base).digest
    for name, value in changed.items():
        other = fingerprint(run, "w", dataclasses.replace(base, **{name: value}))
        assert other.changed(fingerprint(run, "w", base).parts) == ["settings"], name
        assert other.digest != digest
    assert fingerprint(run, "w", compare.RunSettings(registry=default_registry())).digest == digest
    text = compare.RunSpec("a", None, None, "percentageOfNodesToScore: 10\n")
    assert fingerprint(text, "w", base).changed(fingerprint(run, "w", base).parts) == ["config"]


def test_the_workload_digest_is_of_the_objects_read(tmp_path: Path) -> None:
    cluster = heavy_cluster(tmp_path / "cluster.yaml")
    digest = workload_digest(load_manifests([str(cluster)]))
    assert workload_digest(load_manifests([str(cluster)])) == digest
    cluster.write_text(cluster.read_text().replace("cpu: '16'", "cpu: '17'", 1))
    assert workload_digest(load_manifests([str(cluster)])) != digest
