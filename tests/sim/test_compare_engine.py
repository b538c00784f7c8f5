"""Several runs of ``simulate`` (repeated --config, --sweep) as tasks of the sweep engine: the same
output, byte for byte, as running them one after the other in the command's process; one run never
starts the engine; a worker killed mid-sweep loses no run and repeats none."""

from __future__ import annotations

import os
import pickle
import signal
from pathlib import Path
from typing import Any

import pytest
import yaml
from tests.sim.sweep_helpers import LABELS, heavy_cluster, sent_to_engine, two_variants

from kubesched.api.manifests import load_manifests
from kubesched.cli import EXIT_BAD_INPUT, EXIT_OK, EXIT_UNSCHEDULABLE, main
from kubesched.cli import simulate as simulate_cli
from kubesched.cli.simulate import result_document
from kubesched.plugins import default_registry
from kubesched.sim.compare import RunResult, RunSettings, plan_runs, run_as_sweep, run_inline
from kubesched.sim.sweep_engine import SweepEngine
from kubesched.sim.sweep_runs import STATE

DATA = Path(__file__).parent / "data"
EXAMPLES = Path(__file__).parents[2] / "examples" / "gpu-sharing"


@pytest.fixture(autouse=True)
def _wide_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "250")


@pytest.fixture
def argv(tmp_path: Path) -> list[str]:
    """A trace replayed under two configs and the two variants of a sweep file: four runs."""
    sweep = two_variants(tmp_path / "sweep.yaml")
    return [
        "--trace",
        str(DATA / "alibaba_pods.csv"),
        "--nodes",
        str(DATA / "alibaba_nodes.csv"),
        "--config",
        str(EXAMPLES / "fgd.yaml"),
        "--config",
        str(EXAMPLES / "bestfit.yaml"),
        "--sweep",
        str(sweep),
    ]


def _files(directory: Path) -> dict[str, bytes]:
    """Every file under ``directory`` (each run's own files under ``runs/`` too), by relative path;
    not the runs' internal state files, pickles whose bytes depend on how objects share parts."""
    return {
        str(p.relative_to(directory)): p.read_bytes()
        for p in sorted(directory.rglob("*"))
        if p.is_file() and p.name != STATE
    }


@pytest.mark.parametrize("output", ["json", "yaml", "table"])
def test_the_engine_gives_the_inline_output_byte_for_byte(
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    argv: list[str],
    output: str,
) -> None:
    sent = sent_to_engine(monkeypatch)
    flags = [*argv, "-o", output, "--fail-on-unschedulable", "--seed", "3"]
    code = main(["simulate", *flags, "--export", str(tmp_path / "engine"), "--workers", "2"])
    engine_out, engine_err = capsys.readouterr()
    assert sent == [LABELS]
    # The same runs one after the other in this process.
    monkeypatch.setattr(simulate_cli, "ENGINE_RUNS", 1000)
    inline_code = main(["simulate", *flags, "--export", str(tmp_path / "inline")])
    inline_out, inline_err = capsys.readouterr()
    assert sent == [LABELS]
    assert (code, engine_out) == (inline_code, inline_out)
    # One pod of the trace fits no node under any config.
    assert code == EXIT_UNSCHEDULABLE
    assert engine_err.replace(str(tmp_path / "engine"), "") == inline_err.replace(
        str(tmp_path / "inline"), ""
    )
    assert _files(tmp_path / "engine") == _files(tmp_path / "inline")
    if output == "json":
        assert [yaml.safe_load(line)["run"] for line in engine_out.splitlines()] == LABELS


def test_one_run_never_starts_the_engine(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    def refuse(self: SweepEngine) -> None:
        raise AssertionError("the engine was started for one run")

    monkeypatch.setattr(SweepEngine, "start", refuse)
    code = main(
        [
            "simulate",
            "--trace",
            str(DATA / "alibaba_pods.csv"),
            "--nodes",
            str(DATA / "alibaba_nodes.csv"),
            "--config",
            str(EXAMPLES / "fgd.yaml"),
            "-o",
            "json",
            "-q",
        ]
    )
    out, _ = capsys.readouterr()
    assert code == EXIT_OK
    assert yaml.safe_load(out)["summary"]["scheduled"] == 3


def test_runs_go_to_an_existing_cluster(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, argv: list[str]
) -> None:
    monkeypatch.setattr(simulate_cli, "ENGINE_RUNS", 1000)
    assert main(["simulate", *argv, "-o", "json", "-q"]) == EXIT_OK
    inline = capsys.readouterr().out
    monkeypatch.setattr(simulate_cli, "ENGINE_RUNS", 2)
    with SweepEngine(workers=1) as cluster:
        address = cluster.client.scheduler.address
        assert main(["simulate", *argv, "-o", "json", "-q", "--cluster", address]) == EXIT_OK
        # The runs were that cluster's tasks.
        assert cluster.client.run_on_scheduler(_ran_cells)
    assert capsys.readouterr().out == inline


def _ran_cells(dask_scheduler: Any) -> bool:
    return "cell" in dask_scheduler.task_prefixes


def test_bad_input_found_by_a_run_is_the_located_error_of_the_inline_path(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    cluster = tmp_path / "cluster.yaml"
    bad = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p1", "annotations": {"kubesched.io/arrival": "banana"}},
        "spec": {"containers": [{"name": "c", "image": "x"}]},
    }
    cluster.write_text(yaml.safe_dump(bad))
    argv = ["simulate", str(cluster), *("--config", str(EXAMPLES / "fgd.yaml")) * 2, "-q"]
    assert main(argv) == EXIT_BAD_INPUT
    engine_err = capsys.readouterr().err
    monkeypatch.setattr(simulate_cli, "ENGINE_RUNS", 1000)
    assert main(argv) == EXIT_BAD_INPUT
    inline_err = capsys.readouterr().err
    assert engine_err == inline_err
    assert "metadata.annotations.kubesched.io/arrival" in engine_err
    assert "Traceback" not in engine_err


def test_workers_must_be_positive(capsys: pytest.CaptureFixture[str], argv: list[str]) -> None:
    assert main(["simulate", *argv, "--workers", "0"]) == EXIT_BAD_INPUT
    assert "--workers" in capsys.readouterr().err


def _plain(results: list[RunResult]) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    out = []
    for result, recorder in results:
        assert recorder is not None
        out.append((result_document(result, explain=False), recorder.summary()))
    return out


def test_a_worker_killed_mid_sweep_loses_no_run(tmp_path: Path) -> None:
    registry = default_registry()
    sweep = tmp_path / "sweep.yaml"
    sweep.write_text(
        yaml.safe_dump(
            {
                "variants": [
                    {"name": "least", "scoringStrategy": "LeastAllocated"},
                    {"name": "most", "scoringStrategy": "MostAllocated"},
                    {"name": "pct30", "percentageOfNodesToScore": 30},
                    {"name": "pct60", "percentageOfNodesToScore": 60},
                ]
            }
        )
    )
    runs = plan_runs([], str(sweep), registry)
    settings = RunSettings(registry=registry, metrics=True, seed=5)
    loaded = load_manifests([str(heavy_cluster(tmp_path / "cluster.yaml"))])
    killed: list[int] = []
    finished: list[int] = []
    with SweepEngine(workers=2) as engine:

        def on_done(done: int, total: int, started: float) -> None:
            finished.append(done)
            if done == 1 and not killed:
                busy = [w for w, keys in engine.client.processing().items() if keys]
                pid = engine.worker_pids()[busy[0]]
                os.kill(pid, signal.SIGKILL)
                killed.append(pid)

        got = run_as_sweep(settings, runs, loaded, engine=engine, progress=on_done)
        assert killed and killed[0] not in engine.worker_pids().values()
    # Every run reported once, in the order of the runs, as if none had been interrupted.
    assert finished == [0, 1, 2, 3, 4]
    assert _plain(got) == _plain(run_inline(settings, runs, loaded))


def test_results_travel_back_without_the_simulation() -> None:
    # A finished recorder lets its simulation go, so a worker can send it back.
    registry = default_registry()
    loaded = load_manifests([str(EXAMPLES.parent / "quickstart")])
    (result, recorder), *_ = run_inline(
        RunSettings(registry=registry, metrics=True), plan_runs([], None, registry), loaded
    )
    back = pickle.loads(pickle.dumps(recorder))
    assert back.summary() == recorder.summary()
    assert pickle.loads(pickle.dumps(result)).outcomes == result.outcomes
