"""Reports and exports: report.html with embedded plots, PNG files, CSV/Parquet round trips, the CLI."""

from __future__ import annotations

import base64
import csv
import json
import math
import re
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
import yaml

from kubesched.cli import EXIT_BAD_INPUT, EXIT_OK, main
from kubesched.sim.export import export_runs
from kubesched.sim.metrics import MetricsRecorder
from kubesched.sim.report import RunReport, _Plotter, format_duration, write_report

from .test_metrics import node, pod, simulate, two_nodes_three_pods

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(autouse=True)
def _wide_terminal(monkeypatch):
    monkeypatch.setenv("COLUMNS", "250")


@pytest.fixture
def manifests(tmp_path: Path) -> str:
    path = tmp_path / "cluster.yaml"
    path.write_text(yaml.safe_dump_all(two_nodes_three_pods()))
    return str(path)


def recorded() -> MetricsRecorder:
    rec = MetricsRecorder()
    simulate(two_nodes_three_pods(), rec)
    return rec


def images(page: str) -> dict[str, bytes]:
    """alt → decoded PNG of every embedded image."""
    found = re.findall(r'<img alt="([^"]+)" src="data:image/png;base64,([A-Za-z0-9+/=]+)"', page)
    return {alt: base64.b64decode(data) for alt, data in found}


def test_report_embeds_every_plot_and_writes_the_pngs(tmp_path: Path) -> None:
    run = RunReport("default", recorded(), None, "")
    written = write_report(tmp_path / "out", [run], meta=[("seed", "0")])
    out = tmp_path / "out"
    page = (out / "report.html").read_text()
    embedded = images(page)
    for name in (
        "allocation.png",
        "pending.png",
        "latency_cdf.png",
        "pools.png",
        "gpu_fragmentation.png",
        "gpu_alloc_vs_arrived.png",
    ):
        png = (out / name).read_bytes()
        assert png.startswith(PNG_MAGIC)
        assert embedded[name] == png
        assert out / name in written
    assert "queue_share.png" not in embedded  # no batch queues in this workload
    assert "reasons.png" in embedded  # c failed once
    # the summary table names the run and shows the hand-computed p90 latency (32s)
    assert "<th>default</th>" in page and "32.0s" in page
    assert "Insufficient cpu" in page
    assert "built-in default profile" in page


def test_allocation_vs_arrived_plot_has_one_line_per_run_at_the_hand_computed_points() -> None:
    # two_nodes_three_pods: samples at 0, 10, 20, 60, 90, 100 s; 6 GPUs; arrivals a 3, b 2, c 2.
    arrived = [50.0, 250 / 3, 350 / 3, 350 / 3, 350 / 3, 350 / 3]
    allocated = [50.0, 250 / 3, 250 / 3, 250 / 3, 50.0, 0.0]
    fig = _Plotter([RunReport("fgd", recorded()), RunReport("bestfit", recorded())]).arrived()
    assert fig is not None
    (ax,) = fig.axes
    lines = {line.get_label(): line for line in ax.get_lines()}
    for label in ("fgd", "bestfit"):
        assert list(lines[label].get_xdata()) == pytest.approx(arrived)
        assert list(lines[label].get_ydata()) == pytest.approx(allocated)
    assert "all arrived placed" in lines  # the diagonal
    assert ax.get_xlim() == (0.0, 125.0)  # scaled to the data: 116.7 % arrived, rounded up
    assert "arrived nvidia.com/gpu" in ax.get_xlabel()


def test_no_allocation_vs_arrived_plot_without_gpus(tmp_path: Path) -> None:
    rec = MetricsRecorder()
    simulate([node("n1", "2"), pod("p", "1")], rec)
    write_report(tmp_path, [RunReport("default", rec)])
    assert not (tmp_path / "gpu_alloc_vs_arrived.png").exists()
    assert "gpu_alloc_vs_arrived.png" not in images((tmp_path / "report.html").read_text())


def test_report_with_queues_has_the_queue_share_plot(tmp_path: Path) -> None:
    objs = [
        {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": "q"}},
        node("n1", "2"),
        pod("p", "1", annotations={"scheduling.volcano.sh/queue-name": "q"}),
    ]
    rec = MetricsRecorder()
    simulate(objs, rec)
    write_report(tmp_path, [RunReport("default", rec)])
    assert (tmp_path / "queue_share.png").read_bytes().startswith(PNG_MAGIC)
    assert "queue_share.png" in images((tmp_path / "report.html").read_text())


def _number(cell: str) -> float:
    return math.nan if cell == "" else float(cell)


def test_csv_and_parquet_round_trip(tmp_path: Path) -> None:
    rec = recorded()
    export_runs(tmp_path, [RunReport("default", rec)])
    with (tmp_path / "timeseries.csv").open(newline="") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == len(rec.series)
    for name, values in rec.series.columns.items():
        assert [_number(r[name]) for r in rows] == values
    assert {r["run"] for r in rows} == {"default"}

    table = pq.read_table(tmp_path / "timeseries.parquet").to_pydict()
    for name, values in rec.series.columns.items():
        assert table[name] == values
    pods = pq.read_table(tmp_path / "pods.parquet").to_pydict()
    assert dict(zip(pods["name"], pods["latency"], strict=True)) == {"a": 0.0, "b": 0.0, "c": 40.0}
    assert pods["request.nvidia.com/gpu"] == [3, 2, 2]
    with (tmp_path / "pods.csv").open(newline="") as f:
        by_name = {r["name"]: r for r in csv.DictReader(f)}
    assert by_name["c"]["bound"] == "60.0" and by_name["c"]["completed"] == "true"
    assert by_name["c"]["lastFailure"].startswith("0/2 nodes are available")
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["runs"][0]["summary"]["makespan"] == 100.0
    with (tmp_path / "reasons.csv").open(newline="") as f:
        reasons = {r["reason"]: r for r in csv.DictReader(f)}
    assert reasons["Insufficient cpu"]["attempts"] == "1"


def test_export_of_runs_with_different_columns_fills_gaps(tmp_path: Path) -> None:
    a = recorded()
    b = MetricsRecorder(pool_label="none-such")
    simulate(two_nodes_three_pods(), b)
    export_runs(tmp_path, [RunReport("a", a), RunReport("b", b)], parquet=True)
    table = pq.read_table(tmp_path / "timeseries.parquet").to_pydict()
    rows_b = [i for i, run in enumerate(table["run"]) if run == "b"]
    assert rows_b and all(math.isnan(table["alloc.cpu[big]"][i]) for i in rows_b)


@pytest.mark.parametrize(
    ("seconds", "text"), [(0, "0s"), (32.0, "32.0s"), (125, "2m05s"), (7260, "2h01m"), (90000, "1d01h")]
)
def test_format_duration(seconds: float, text: str) -> None:
    assert format_duration(seconds) == text


# -- CLI ---------------------------------------------------------------------------------------------
def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["simulate", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_cli_report_writes_files_and_prints_the_summary(capsys, tmp_path: Path, manifests: str) -> None:
    out_dir = tmp_path / "r"
    code, out, err = run_cli(capsys, manifests, "--report", str(out_dir))
    assert code == EXIT_OK, err
    assert "simulation metrics" in out and "scheduling latency p90" in out and "32.0s" in out
    for name in ("report.html", "allocation.png", "pending.png", "latency_cdf.png", "timeseries.csv"):
        assert (out_dir / name).is_file(), name
    assert (out_dir / "timeseries.parquet").is_file()
    assert f"to {out_dir}" in err
    assert "\x1b[" not in err  # no progress bar when stderr is not a terminal


def test_cli_json_is_unchanged_by_report(capsys, tmp_path: Path, manifests: str) -> None:
    code, plain, _ = run_cli(capsys, manifests, "-o", "json")
    assert code == EXIT_OK
    code, with_report, err = run_cli(capsys, manifests, "-o", "json", "--report", str(tmp_path / "r"))
    assert code == EXIT_OK
    assert with_report == plain
    assert "simulation metrics" in err  # the summary goes to stderr, stdout stays JSON


def test_cli_export_only(capsys, tmp_path: Path, manifests: str) -> None:
    code, _out, _ = run_cli(capsys, manifests, "-q", "--export", str(tmp_path / "x"), "--sample-every", "30s")
    assert code == EXIT_OK
    with (tmp_path / "x" / "timeseries.csv").open(newline="") as f:
        times = [float(r["time"]) for r in csv.DictReader(f)]
    assert times == [0.0, 30.0, 60.0, 90.0, 100.0]
    assert not (tmp_path / "x" / "report.html").exists()


@pytest.mark.parametrize("value", ["soon", "0s", "-5"])
def test_cli_bad_sample_every(capsys, manifests: str, value: str) -> None:
    code, _, err = run_cli(capsys, manifests, "--report", "/nonexistent", f"--sample-every={value}")
    assert code == EXIT_BAD_INPUT
    assert "--sample-every" in err


def test_cli_trace_replay_with_report(capsys, tmp_path: Path) -> None:
    trace = tmp_path / "pods.csv"
    trace.write_text("name,arrival,duration,cpu,gpu\np0,0,60,1,1\np1,30,60,1,2\np2,40,10,4,\n")
    nodes = tmp_path / "nodes.yaml"
    nodes.write_text(yaml.safe_dump(node("n1", "4", gpu=2)))
    code, _out, err = run_cli(
        capsys, "--trace", str(trace), "--nodes", str(nodes), "--report", str(tmp_path / "r")
    )
    assert code == EXIT_OK, err
    rows = list(csv.DictReader((tmp_path / "r" / "pods.csv").open(newline="")))
    latency: dict[str, Any] = {r["name"]: r["latency"] for r in rows}
    # p1 (2 GPUs) waits for p0 (60s); p2 (4 CPUs) waits for both: p0 ends at 60, p1 at 120.
    assert latency == {"p0": "0.0", "p1": "30.0", "p2": "80.0"}
