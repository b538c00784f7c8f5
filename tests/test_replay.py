"""Workloads over virtual time: arrivals and lifetimes from annotations."""

from __future__ import annotations

from typing import Any

import pytest

from kubesched.api.manifests import LoadResult, ManifestObject
from kubesched.errors import InputError
from kubesched.sim.simulation import Simulation


def _node(cpu: str = "1") -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": "n1"},
        "status": {"allocatable": {"cpu": cpu, "memory": "4Gi", "pods": "110"}},
    }


def _pod(name: str, arrival: str | None = None, duration: str | None = None) -> dict[str, Any]:
    annotations = {}
    if arrival is not None:
        annotations["kubesched.io/arrival"] = arrival
    if duration is not None:
        annotations["kubesched.io/duration"] = duration
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "annotations": annotations},
        "spec": {"containers": [{"name": "c", "image": "i", "resources": {"requests": {"cpu": "1"}}}]},
    }


def _load(sim: Simulation, *objs: dict[str, Any]) -> None:
    sim.load(LoadResult([ManifestObject(o["kind"], o, "test.yaml", i + 1) for i, o in enumerate(objs)]))


def _scheduled_at(sim: Simulation, name: str) -> str:
    events = [
        e for e in sim.store.list("Event") if e["reason"] == "Scheduled" and e["regarding"]["name"] == name
    ]
    assert len(events) == 1, events
    return str(events[0]["eventTime"])


def test_late_pod_waits_for_the_running_one_to_finish() -> None:
    sim = Simulation(seed=0)
    _load(sim, _node(), _pod("first", duration="1m"), _pod("second", arrival="10s"))
    result = sim.run()
    outcomes = {o.name: o for o in result.outcomes}
    assert outcomes["first"].status == "Scheduled" and outcomes["second"].status == "Scheduled"
    # second arrived at 10s, found no room, and was placed when first finished at 60s.
    assert outcomes["second"].attempts == 2
    assert _scheduled_at(sim, "first") == "2026-01-01T00:00:00Z"
    assert _scheduled_at(sim, "second") == "2026-01-01T00:01:00Z"
    assert sim.store.get("Pod", "default", "first") is None  # finished and gone
    assert result.virtual_seconds == 60


def test_pods_without_duration_run_forever() -> None:
    sim = Simulation(seed=0)
    _load(sim, _node(), _pod("forever"), _pod("late", arrival="1h"))
    outcomes = {o.name: o for o in sim.run().outcomes}
    assert outcomes["forever"].status == "Scheduled"
    assert outcomes["late"].status == "Unschedulable"
    assert outcomes["late"].message == (
        "0/1 nodes are available: 1 Insufficient cpu."
        " no new claims to deallocate,"
        " preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod."
    )
    assert sim.clock.elapsed == 3600


def test_bad_duration_annotation_names_the_field() -> None:
    sim = Simulation(seed=0)
    with pytest.raises(InputError) as err:
        _load(sim, _node(), _pod("p", duration="soon"))
    text = str(err.value)
    assert "test.yaml" in text and "Pod p" in text
    assert "metadata.annotations.kubesched.io/duration" in text


DATA = __import__("pathlib").Path(__file__).parent / "sim" / "data"


def test_cli_replays_an_alibaba_trace_with_its_node_list(capsys: pytest.CaptureFixture[str]) -> None:
    import json

    from kubesched.cli import main

    code = main(
        [
            "simulate",
            "--trace",
            str(DATA / "alibaba_pods.csv"),
            "--nodes",
            str(DATA / "alibaba_nodes.csv"),
            "-o",
            "json",
        ]
    )
    captured = capsys.readouterr()
    assert code == 0, captured.err
    doc = json.loads(captured.out)
    assert doc["summary"]["scheduled"] >= 1
    assert all(p["status"] in ("Scheduled", "Unschedulable", "Pending") for p in doc["pods"])
    # The fixture's bad row is reported with its line, and the rest still runs.
    assert "line" in captured.err and "skipped" in captured.err


def test_cli_trace_bad_row_fail_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    from kubesched.cli import main

    code = main(["simulate", "--trace", str(DATA / "generic.csv"), "--on-bad-row", "fail"])
    assert code == 2
    err = capsys.readouterr().err
    assert "generic.csv" in err and "line 5" in err


def test_cli_needs_manifests_or_a_trace(capsys: pytest.CaptureFixture[str]) -> None:
    from kubesched.cli import main

    assert main(["simulate"]) == 2
    assert "--trace" in capsys.readouterr().err
