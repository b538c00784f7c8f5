"""Flags, outputs and traces at their edges: a located error and exit 2, never a traceback."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from kubesched.cli import EXIT_BAD_INPUT, EXIT_OK, main
from kubesched.sim.metrics import MAX_GRID_SAMPLES

NODES = """\
apiVersion: v1
kind: Node
metadata: {name: n1}
status: {allocatable: {cpu: "8", memory: 32Gi, pods: "110", nvidia.com/gpu: "8"}}
"""


@pytest.fixture
def nodes(tmp_path: Path) -> Path:
    path = tmp_path / "nodes.yaml"
    path.write_text(NODES)
    return path


def usage_error(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    with pytest.raises(SystemExit) as info:
        main(argv)
    assert info.value.code == EXIT_BAD_INPUT
    return capsys.readouterr().err


@pytest.mark.parametrize(
    ("argv", "flag"),
    [
        (["simulate", "x.yaml", "--seed", "-1"], "--seed"),
        (["simulate", "x.yaml", "--seed", str(2**64)], "--seed"),
        (["simulate", "--trace", "t.csv", "--limit", "-3"], "--limit"),
        (["explain", "x.yaml", "--pod", "p", "--seed", "-5"], "--seed"),
        (["explain", "x.yaml", "--pod", "p", "--top", "-1"], "--top"),
        (["bench", "--nodes", "-5"], "--nodes"),
        (["bench", "--nodes", "0"], "--nodes"),
        (["bench", "--pods", "-1"], "--pods"),
        (["bench", "--existing-pods", "-1"], "--existing-pods"),
        (["bench", "--seed", "1.5"], "--seed"),
    ],
)
def test_out_of_range_flag_is_a_usage_error(
    argv: list[str], flag: str, capsys: pytest.CaptureFixture[str]
) -> None:
    err = usage_error(argv, capsys)
    assert f"argument {flag}: " in err
    assert "Traceback" not in err


@pytest.mark.parametrize("flag", ["--report", "--export"])
def test_output_dir_that_is_a_file_fails_before_running(
    tmp_path: Path, nodes: Path, flag: str, capsys: pytest.CaptureFixture[str]
) -> None:
    a_file = tmp_path / "a-file"
    a_file.write_text("")
    for target in (a_file, a_file / "below"):
        code = main(["simulate", str(nodes), flag, str(target), "-o", "json"])
        out, err = capsys.readouterr()
        assert code == EXIT_BAD_INPUT
        assert out == ""  # nothing ran, nothing printed
        assert f"field {flag}: " in err


def test_output_dir_is_created_when_missing(
    tmp_path: Path, nodes: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "new" / "dir"
    assert main(["simulate", str(nodes), "--export", str(target), "-q", "-o", "json"]) == EXIT_OK
    assert (target / "summary.json").is_file()


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return path


def test_trace_queue_and_manifest_queue_merge_with_the_manifest_spec(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    trace = write(
        tmp_path,
        "philly.csv",
        """\
        timestamp,duration,num_gpus,gpu_time,cluster
        2017-10-01 00:00:00,100,8,800,vc1
        """,
    )
    cluster = write(
        tmp_path,
        "cluster.yaml",
        NODES
        + "---\napiVersion: scheduling.volcano.sh/v1beta1\nkind: Queue\n"
        + "metadata: {name: vc1}\nspec: {weight: 5}\n",
    )
    code = main(["simulate", "--trace", str(trace), "--nodes", str(cluster), "-q", "-o", "json"])
    out, err = capsys.readouterr()
    assert code == EXIT_OK, err
    queues = {q["name"]: q for q in json.loads(out)["queues"]}
    assert queues["vc1"]["weight"] == 5
    assert queues["vc1"]["podsBound"] == 1


def test_trace_pod_also_in_a_manifest_is_a_located_error(
    tmp_path: Path, nodes: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    trace = write(tmp_path, "t.csv", "name,cpu\nweb,1\n")
    pod = write(
        tmp_path,
        "pod.yaml",
        "apiVersion: v1\nkind: Pod\nmetadata: {name: web}\nspec: {containers: [{name: a}]}\n",
    )
    code = main(["simulate", str(pod), "--trace", str(trace), "--nodes", str(nodes), "-q"])
    err = capsys.readouterr().err
    assert code == EXIT_BAD_INPUT
    assert f"{trace}: Pod default/web: defined both by the trace and in {pod} document 1" in err


def test_fine_sampling_over_a_year_is_coarsened_with_a_warning(
    tmp_path: Path, nodes: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    trace = write(tmp_path, "t.csv", "name,arrival,duration,cpu\na,0,1,1\nb,8760h,1,1\n")
    out_dir = tmp_path / "out"
    argv = ["simulate", "--trace", str(trace), "--nodes", str(nodes), "--export", str(out_dir), "-o", "json"]
    code = main([*argv, "--sample-every", "1ns"])
    err = capsys.readouterr().err
    assert code == EXIT_OK, err
    assert "warning: sampling every 1e-09s of virtual time would take more than" in err
    samples = (out_dir / "timeseries.csv").read_text().count("\n") - 1
    assert 0 < samples <= MAX_GRID_SAMPLES
    summary = json.loads((out_dir / "summary.json").read_text())
    assert "every 1e-09 " not in json.dumps(summary)
