"""Trace rows whose numbers would overflow, or stand for millions of pods, are bad rows."""

from __future__ import annotations

from pathlib import Path

import pytest

from kubesched.errors import InputError
from kubesched.sim.traces import load_trace


def load(tmp_path: Path, name: str, text: str, fmt: str | None = None) -> list[str]:
    path = tmp_path / name
    path.write_text(text)
    workload = load_trace(path, fmt)
    return [row.message for row in workload.bad_rows]


def test_philly_job_gpu_count_is_bounded(tmp_path: Path) -> None:
    text = "timestamp,duration,num_gpus,gpu_time,cluster\n2017-10-01 00:00:00,100,1000000000000,0,vc\n"
    assert load(tmp_path, "p.csv", text) == ["num_gpus: must be at most 100000, got '1000000000000'"]


@pytest.mark.parametrize(
    ("column", "value", "message"),
    [
        ("group_size", "1e20", "group_size: must be at most 2147483647"),
        ("priority", "1e300", "priority: must be at most 2000000000"),
        ("priority", "-3000000000", "priority: out of range"),
    ],
)
def test_generic_integers_are_range_checked(tmp_path: Path, column: str, value: str, message: str) -> None:
    text = f"name,group,{column}\na,g,{value}\n" if column == "group_size" else f"name,{column}\na,{value}\n"
    (bad,) = load(tmp_path, "t.csv", text)
    assert bad.startswith(message)


def test_deeply_nested_jsonl_row_is_a_bad_row(tmp_path: Path) -> None:
    row = '{"name": ' + "[" * 100000 + "]" * 100000 + "}\n"
    assert load(tmp_path, "t.jsonl", row + '{"name": "ok"}\n') == ["invalid JSON: nested too deeply"]


def test_alibaba_memory_that_overflows_bytes_is_a_bad_row(tmp_path: Path) -> None:
    text = "name,cpu_milli,memory_mib,num_gpu,gpu_milli\np,1000,9000000000000000,0,0\n"
    (bad,) = load(tmp_path, "pods.csv", text)
    assert bad.startswith("memory_mib: must be at most")


def test_fail_mode_names_the_line(tmp_path: Path) -> None:
    path = tmp_path / "t.csv"
    path.write_text("name,group,group_size\na,g,99999999999\n")
    with pytest.raises(InputError, match="line 2: group_size"):
        load_trace(path, on_bad_row="fail")
