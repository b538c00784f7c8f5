"""examples/fabric: a hard-mode job arriving on a full two-tier fabric gets one leaf switch whole
through gangpreempt, and every job it takes from keeps its minMember; without the gang-aware
action (Volcano's default conf) it waits."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kubesched.cli import main

FABRIC = Path(__file__).resolve().parents[2] / "examples" / "fabric"


def simulate(capsys: pytest.CaptureFixture[str], *args: str) -> dict[str, Any]:
    assert main(["simulate", str(FABRIC), *args, "-o", "json"]) == 0
    doc: dict[str, Any] = json.loads(capsys.readouterr().out)
    return doc


def test_gangpreempt_frees_one_leaf_without_breaking_a_gang(capsys: pytest.CaptureFixture[str]) -> None:
    doc = simulate(capsys, "--batch-conf", str(FABRIC / "volcano-scheduler.conf"))
    nodes = {p["node"] for p in doc["pods"] if p["name"].startswith("llm-") and p["status"] == "Scheduled"}
    assert len(nodes) == 8
    leaves = {int(n.split("-")[1]) // 8 for n in nodes}  # gpu-NN sits under leaf-(NN // 8)
    assert len(leaves) == 1
    assert len(doc["evicted"]) == 8
    groups = {g["name"]: g for g in doc["podGroups"]}
    assert all(g["bound"] >= g["minMember"] for g in groups.values())


def test_without_gang_aware_eviction_the_job_waits(capsys: pytest.CaptureFixture[str]) -> None:
    doc = simulate(capsys)
    groups = {g["name"]: g for g in doc["podGroups"]}
    assert groups["llm"]["bound"] == 0 and doc["evicted"] == []
