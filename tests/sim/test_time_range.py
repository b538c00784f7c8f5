"""Arrivals, lifetimes and virtual time beyond what a duration or a timestamp can hold."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from kubesched.api.durations import MAX_DURATION, parse_duration
from kubesched.cli import EXIT_BAD_INPUT, EXIT_OK, main
from kubesched.errors import InputError

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


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return path


@pytest.mark.parametrize("text", ["2562047h47m16s", 9223372036, "9223372036.85"])
def test_go_maximum_duration_is_accepted(text: str | int) -> None:
    assert parse_duration(text) <= MAX_DURATION


@pytest.mark.parametrize("text", ["2562047h47m17s", 9223372037, "9223372037", 1e300, "99999999999999999h"])
def test_beyond_go_maximum_duration_is_refused(text: str | float) -> None:
    with pytest.raises(InputError, match="maximum duration"):
        parse_duration(text)


PHILLY_FAR = """\
timestamp,duration,num_gpus,gpu_time,cluster
2017-10-01 00:00:00,100,8,800,vc1
9999-12-31 23:59:59,100,8,800,vc1
"""


def test_philly_row_beyond_the_duration_range_is_a_bad_row(
    tmp_path: Path, nodes: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    trace = write(tmp_path, "philly.csv", PHILLY_FAR)
    code = main(["simulate", "--trace", str(trace), "--nodes", str(nodes), "-o", "json"])
    out, err = capsys.readouterr()
    assert code == EXIT_OK, err
    assert f"{trace}: line 3: skipped: timestamp: 9999-12-31 23:59:59" in err
    assert json.loads(out)["summary"]["scheduled"] == 1
    code = main(["simulate", "--trace", str(trace), "--nodes", str(nodes), "--on-bad-row", "fail"])
    err = capsys.readouterr().err
    assert code == EXIT_BAD_INPUT
    assert f"{trace}: line 3: timestamp:" in err


@pytest.mark.parametrize("value", ["9300000000", "2562048h", "1e400"])
def test_generic_trace_durations_beyond_go_range_are_bad_rows(
    tmp_path: Path, nodes: Path, value: str, capsys: pytest.CaptureFixture[str]
) -> None:
    trace = write(tmp_path, "t.csv", f"name,arrival,cpu\nfar,{value},1\nnear,0,1\n")
    code = main(["simulate", "--trace", str(trace), "--nodes", str(nodes), "-o", "json"])
    out, err = capsys.readouterr()
    assert code == EXIT_OK, err
    assert "line 2: skipped: arrival: invalid duration" in err
    assert [p["name"] for p in json.loads(out)["pods"]] == ["near"]


def test_virtual_time_past_year_9999_does_not_crash(
    tmp_path: Path, nodes: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # 30 back-to-back pods of ~285 years each on one node: the run ends after year 10000.
    rows = "".join(f"p{i},0,9000000000,8\n" for i in range(30))
    trace = write(tmp_path, "t.csv", "name,arrival,duration,cpu\n" + rows)
    code = main(["simulate", "--trace", str(trace), "--nodes", str(nodes), "-q", "-o", "json"])
    out, err = capsys.readouterr()
    assert code == EXIT_OK, err
    assert json.loads(out)["summary"]["scheduled"] == 30
