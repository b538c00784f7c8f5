"""Replaying the Philly job table: its jobs are Volcano gangs, placed by the batch profile on the
shipped 64 x 8-GPU cluster (examples/traces/philly-64x8gpu.yaml)."""

from __future__ import annotations

import json
from pathlib import Path

from kubesched.api.manifests import load_manifests
from kubesched.cli import EXIT_OK, main

ROOT = Path(__file__).resolve().parents[2]
DATA = Path(__file__).parent / "data"
CLUSTER = ROOT / "examples" / "traces" / "philly-64x8gpu.yaml"


def test_shipped_cluster_has_64_nodes_of_8_gpus() -> None:
    nodes = load_manifests([str(CLUSTER)]).of_kind("Node")
    assert len(nodes) == 64
    assert len({n.obj["metadata"]["name"] for n in nodes}) == 64
    for n in nodes:
        assert n.obj["status"]["allocatable"]["nvidia.com/gpu"] == "8"


def test_philly_jobs_replay_as_gangs_with_the_batch_profile(capsys) -> None:
    code = main(
        ["simulate", "--trace", str(DATA / "philly.csv"), "--nodes", str(CLUSTER), "-q", "-o", "json"]
    )
    assert code == EXIT_OK
    doc = json.loads(capsys.readouterr().out)
    pods = {p["name"]: p for p in doc["pods"]}
    # Every worker is placed, by the batch scheduler (it alone reports PodGroups); the 12-GPU job
    # is one gang of an 8-GPU and a 4-GPU worker on two nodes.
    assert {p["status"] for p in pods.values()} == {"Scheduled"}
    assert pods["philly-000002-0"]["node"] != pods["philly-000002-1"]["node"]
    groups = {g["name"]: g for g in doc["podGroups"]}
    assert sorted(groups) == ["philly-000000", "philly-000001", "philly-000002"]
    assert {g["phase"] for g in groups.values()} == {"Running"}
    assert groups["philly-000002"]["minMember"] == 2
    assert groups["philly-000002"]["bound"] == 2
    assert groups["philly-000002"]["queue"] == "6214e9"
    assert {q["name"] for q in doc["queues"]} >= {"11cb48", "6214e9", "ee9e8c"}
