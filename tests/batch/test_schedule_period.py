"""The batch scheduler runs a session every schedule period (Volcano's ``--schedule-period``),
``kubesched simulate --schedule-period DURATION``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from kubesched.api.manifests import load_manifests
from kubesched.batch.conf_loader import default_batch_conf
from kubesched.cli import EXIT_BAD_INPUT, EXIT_OK, main
from kubesched.sim.simulation import Simulation


def node() -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": "n1"},
        "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "10"}},
    }


def pod(name: str, arrival: str | None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": "default"}
    if arrival:
        meta["annotations"] = {"kubesched.io/arrival": arrival}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": meta,
        "spec": {
            "schedulerName": "volcano",
            "containers": [{"name": "c", "image": "x", "resources": {"requests": {"cpu": "1"}}}],
        },
    }


def session_times(tmp_path: Path, period: float | None) -> list[float]:
    """A pod at time 0 and one 0.2s later: the second waits for the next session."""
    path = tmp_path / "cluster.yaml"
    path.write_text(yaml.safe_dump_all([node(), pod("first", None), pod("second", "200ms")]))
    sim = Simulation(seed=0, batch_conf=default_batch_conf(), schedule_period=period)
    sim.load(load_manifests([str(path)]))
    result = sim.run()
    assert result.scheduled == 2
    assert sim.batch is not None
    times = [s.at for s in sim.batch.sessions if s.bound]
    return [t - times[0] for t in times]


def test_default_period_is_one_second(tmp_path: Path) -> None:
    assert session_times(tmp_path, None) == [0.0, 1.0]


def test_a_shorter_period_binds_sooner(tmp_path: Path) -> None:
    assert session_times(tmp_path, 0.25) == [0.0, 0.25]


def test_cli_flag(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "cluster.yaml"
    path.write_text(yaml.safe_dump_all([node(), pod("first", None)]))
    assert main(["simulate", str(path), "--schedule-period", "500ms", "-q"]) == EXIT_OK
    capsys.readouterr()
    assert main(["simulate", str(path), "--schedule-period", "0s"]) == EXIT_BAD_INPUT
    assert "--schedule-period" in capsys.readouterr().err
