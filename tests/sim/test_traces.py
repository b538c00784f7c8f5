"""Trace importers: generic CSV/JSONL, Alibaba GPU 2023, Philly."""

from __future__ import annotations

import csv
import math
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kubesched.errors import InputError
from kubesched.sim.traces import detect_format, load_trace
from kubesched.sim.traces.philly import worker_gpus
from kubesched.sim.workload import to_manifests

DATA = Path(__file__).parent / "data"
TRACES = Path(__file__).resolve().parents[2].parent / "shared" / "traces"
GIB = 1 << 30


@pytest.mark.parametrize(
    ("name", "fmt"),
    [
        ("alibaba_nodes.csv", "alibaba-gpu-2023"),
        ("alibaba_pods.csv", "alibaba-gpu-2023"),
        ("alibaba_pods_multigpu.csv", "alibaba-gpu-2023"),
        ("philly.csv", "philly"),
        ("generic.csv", "generic"),
        ("generic.jsonl", "generic"),
    ],
)
def test_detect_format(name, fmt):
    assert detect_format(DATA / name) == fmt


def test_detect_format_unknown(tmp_path):
    path = tmp_path / "x.csv"
    path.write_text("foo,bar\n1,2\n")
    with pytest.raises(InputError, match="cannot tell"):
        load_trace(path)
    with pytest.raises(InputError, match="unknown trace format"):
        load_trace(DATA / "philly.csv", fmt="nope")
    with pytest.raises(InputError, match="not found"):
        load_trace(tmp_path / "missing.csv")


def test_generic_csv():
    w = load_trace(DATA / "generic.csv")
    assert [p.name for p in w.pods] == ["web-1", "train-0", "train-1"]
    web, train0, _ = w.pods
    assert web.namespace == "default"
    assert web.duration == 90.0
    assert web.requests == {"cpu": 500, "memory": GIB}
    assert web.priority == 10
    assert web.labels == {"team": "web"}
    assert train0.arrival == 60.0
    assert train0.duration == 7200.0
    assert train0.requests == {"cpu": 4000, "memory": 16 * GIB, "nvidia.com/gpu": 8}
    assert train0.scheduler_name == "volcano"
    assert train0.group_min_member == 2
    assert w.groups["train"].min_member == 2
    assert w.groups["train"].queue == "research"
    assert w.groups["train"].namespace == "ml"
    assert w.queues == ["research"]
    assert [(b.line, "arrival" in b.message) for b in w.bad_rows] == [(5, True)]


def test_generic_csv_fail_names_file_and_line():
    with pytest.raises(InputError) as info:
        load_trace(DATA / "generic.csv", on_bad_row="fail")
    assert "generic.csv" in str(info.value)
    assert "line 5" in str(info.value)


def test_generic_jsonl():
    w = load_trace(DATA / "generic.jsonl")
    assert [p.name for p in w.pods] == ["a", "b", "c"]
    assert w.pods[0].duration == 5400.0
    assert w.pods[0].labels == {"app": "a"}
    assert w.pods[1].requests == {"nvidia.com/gpu": 1}
    assert w.pods[2].arrival == 12.5
    assert w.groups["g"].min_member == 2  # no group_size: every pod of the group
    assert [b.line for b in w.bad_rows] == [4]


def test_generic_limit_and_unknown_column(tmp_path):
    assert [p.name for p in load_trace(DATA / "generic.csv", limit=2).pods] == ["web-1", "train-0"]
    path = tmp_path / "t.csv"
    path.write_text("name,arival\na,1\n")
    with pytest.raises(InputError, match="unknown column"):
        load_trace(path, fmt="generic")


def test_generic_row_problems(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text(
        "name,cpu,group,group_size,queue\n"
        "a,1,g,2,q\n"
        "a,1,,,\n"  # duplicate
        "b,lots,,,\n"  # bad quantity
        "c,1,g,3,q\n"  # size disagrees
        "d,1,g,2,other\n"  # queue disagrees
        "e,1\n"  # too few fields
        "f,1,,2,\n"  # size without group
    )
    w = load_trace(path)
    assert [p.name for p in w.pods] == ["a"]
    assert [b.line for b in w.bad_rows] == [3, 4, 5, 6, 7, 8]


def test_alibaba_nodes():
    w = load_trace(DATA / "alibaba_nodes.csv")
    assert [n.name for n in w.nodes] == ["openb-node-0000", "openb-node-1520", "openb-node-1521"]
    cpu_only, t4, _ = w.nodes
    assert cpu_only.allocatable == {"cpu": 32000, "memory": 256 * GIB, "pods": 110}
    assert t4.allocatable["nvidia.com/gpu"] == 2
    assert t4.allocatable["kubesched.io/gpu-milli"] == 2000
    assert t4.labels == {"kubesched.io/gpu-model": "T4"}
    assert [b.line for b in w.bad_rows] == [5]


def test_alibaba_pods():
    w = load_trace(DATA / "alibaba_pods.csv")
    by_name = {p.name: p for p in w.pods}
    assert list(by_name) == ["openb-pod-0000", "openb-pod-0001", "openb-pod-0002", "openb-pod-0003"]
    whole, share, multi, cpu = by_name.values()
    assert whole.arrival == 0.0  # relative to the earliest creation (100)
    assert whole.duration == 12537396.0
    assert whole.requests == {
        "cpu": 12000,
        "memory": 16 * GIB,
        "nvidia.com/gpu": 1,
        "kubesched.io/gpu-milli": 1000,
    }
    assert share.requests["kubesched.io/gpu-milli"] == 460
    assert "nvidia.com/gpu" not in share.requests
    assert share.annotations["kubesched.io/gpu-spec"] == "V100M16|V100M32"
    assert multi.requests["nvidia.com/gpu"] == 8
    assert multi.arrival == 400.0
    assert multi.duration == 1000.0
    assert cpu.duration is None  # never deleted
    assert cpu.labels["kubesched.io/qos"] == "Burstable"
    assert [b.line for b in w.bad_rows] == [6]
    with pytest.raises(InputError, match="line 6"):
        load_trace(DATA / "alibaba_pods.csv", on_bad_row="fail")


def test_alibaba_pods_without_times():
    w = load_trace(DATA / "alibaba_pods_multigpu.csv")
    assert [(p.arrival, p.duration) for p in w.pods] == [(0.0, None), (0.0, None)]
    assert w.pods[1].requests["nvidia.com/gpu"] == 4


def test_philly():
    w = load_trace(DATA / "philly.csv")
    assert [b.line for b in w.bad_rows] == [5]
    # sorted by submission; the earliest (row 2 of the file) is at 0
    assert [p.name for p in w.pods] == [
        "philly-000001-0",
        "philly-000002-0",
        "philly-000002-1",
        "philly-000000-0",
    ]
    first, big0, big1, last = w.pods
    assert first.arrival == 0.0
    assert first.duration == 193256.0
    assert first.requests == {"nvidia.com/gpu": 8}
    assert (big0.requests, big1.requests) == ({"nvidia.com/gpu": 8}, {"nvidia.com/gpu": 4})
    assert big0.group == big1.group == "philly-000002"
    # Philly jobs are batch jobs: the Volcano profile places them, gang by gang.
    assert {p.scheduler_name for p in w.pods} == {"volcano"}
    assert w.groups["philly-000002"].min_member == 2
    assert w.groups["philly-000002"].queue == "6214e9"
    assert last.arrival == (2 * 86400 + 5 * 3600 + 50 * 60 + 16)
    assert sorted(w.queues) == ["11cb48", "6214e9", "ee9e8c"]
    assert len(load_trace(DATA / "philly.csv", limit=1).groups) == 1


@pytest.mark.parametrize(
    ("gpus", "workers"), [(1, [1]), (8, [8]), (12, [8, 4]), (16, [8, 8]), (24, [8, 8, 8])]
)
def test_worker_gpus(gpus, workers):
    assert worker_gpus(gpus) == workers
    assert len(workers) == math.ceil(gpus / 8)


def test_bad_on_bad_row_value():
    with pytest.raises(InputError, match="on_bad_row"):
        load_trace(DATA / "philly.csv", on_bad_row="ignore")  # type: ignore[arg-type]


_names = st.from_regex(r"[a-z]([a-z0-9-]{0,9}[a-z0-9])?", fullmatch=True)  # DNS-1123 names
_row = st.fixed_dictionaries(
    {
        "arrival": st.integers(0, 10**6),
        "duration": st.one_of(st.none(), st.integers(0, 10**6)),
        "cpu": st.integers(0, 64000),
        "memory": st.integers(0, 1 << 40),
        "gpu": st.integers(0, 8),
        "priority": st.integers(-1000, 10**6),
        "queue": st.one_of(st.none(), _names),
        "scheduler_name": st.one_of(st.none(), _names),
    }
)


@settings(max_examples=40, suppress_health_check=[HealthCheck.function_scoped_fixture], deadline=None)
@given(rows=st.lists(_row, max_size=8))
def test_generic_csv_round_trip(tmp_path, rows):
    path = tmp_path / "rt.csv"
    with path.open("w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(
            ["name", "arrival", "duration", "cpu", "memory", "gpu", "priority", "queue", "scheduler_name"]
        )
        for i, r in enumerate(rows):
            writer.writerow(
                [
                    f"p{i}",
                    r["arrival"],
                    "" if r["duration"] is None else f"{r['duration']}s",
                    f"{r['cpu']}m",
                    r["memory"],
                    r["gpu"],
                    r["priority"],
                    r["queue"] or "",
                    r["scheduler_name"] or "",
                ]
            )
    w = load_trace(path, on_bad_row="fail")
    assert len(w.pods) == len(rows)
    for pod, r in zip(w.pods, rows, strict=True):
        assert pod.arrival == r["arrival"]
        assert pod.duration == r["duration"]
        expected = {"cpu": r["cpu"], "memory": r["memory"], "nvidia.com/gpu": r["gpu"]}
        assert pod.requests == {k: v for k, v in expected.items() if v}
        assert pod.priority == r["priority"]
        assert pod.queue == r["queue"]
        assert pod.scheduler_name == r["scheduler_name"]
    assert len(to_manifests(w)) == len(rows) + len(w.queues)


def _real(*parts: str) -> Path:
    path = TRACES.joinpath(*parts)
    if not path.is_file():
        pytest.skip(f"{path} is not available")
    return path


def test_real_alibaba_nodes_head():
    w = load_trace(_real("alibaba-gpu-2023", "openb_node_list_gpu_node.csv"), on_bad_row="fail", limit=50)
    assert len(w.nodes) == 50
    assert all(n.allocatable["nvidia.com/gpu"] >= 1 for n in w.nodes)


def test_real_alibaba_pods_head():
    w = load_trace(_real("alibaba-gpu-2023", "openb_pod_list_default.csv"), on_bad_row="fail", limit=50)
    assert len(w.pods) == 50
    assert w.pods[0].arrival == 0.0
    assert all(p.duration is None or p.duration >= 0 for p in w.pods)


def test_real_philly_head():
    w = load_trace(_real("philly-pollux", "philly.csv"), on_bad_row="fail", limit=50)
    assert len(w.groups) == 50
    assert min(p.arrival for p in w.pods) == 0.0
    assert all(p.requests["nvidia.com/gpu"] <= 8 for p in w.pods)
    assert all(w.groups[p.group].queue in w.queues for p in w.pods if p.group)
