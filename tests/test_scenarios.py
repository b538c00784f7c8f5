"""Scenario suite: manifests + config + hand-derived expectations, run through the CLI."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest
import yaml

from kubesched.cli import main

SCENARIOS = Path(__file__).parent / "scenarios"
CASES = sorted(p for p in SCENARIOS.iterdir() if (p / "expected.yaml").is_file())


def _run(case: Path, capsys: pytest.CaptureFixture[str]) -> dict:
    args = ["simulate", str(case / "cluster.yaml"), "-o", "json", "--seed", "7"]
    if (case / "config.yaml").is_file():
        args += ["--config", str(case / "config.yaml")]
    code = main(args)
    out = capsys.readouterr().out
    assert code == 0, out
    return json.loads(out)


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_scenario(case: Path, capsys: pytest.CaptureFixture[str]) -> None:
    expected = yaml.safe_load((case / "expected.yaml").read_text())
    result = _run(case, capsys)
    by_key = {f"{p['namespace']}/{p['name']}": p for p in result["pods"]}
    for key, want in expected.get("pods", {}).items():
        assert key in by_key, f"{key} missing from output"
        got = by_key[key]
        assert got["status"] == want["status"], (key, got)
        if "node" in want:
            assert got["node"] == want["node"], (key, got)
        if "message" in want:
            assert got["message"] == want["message"], (key, got)
        for part in want.get("messageContains", []):
            assert part in got["message"], (key, got)
        if want["status"] == "Scheduled":
            assert got["node"], key
        else:
            assert got["node"] is None and got["message"], key
    if "nodePodCounts" in expected:
        counts = Counter(p["node"] for p in result["pods"] if p["node"])
        for node, n in expected["nodePodCounts"].items():
            assert counts.get(node, 0) == n, (node, dict(counts))


def test_every_scenario_has_a_cluster() -> None:
    assert CASES, "no scenarios found"
    for case in CASES:
        assert (case / "cluster.yaml").is_file(), case
