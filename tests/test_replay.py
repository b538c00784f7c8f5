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
    assert outcomes["late"].message == "0/1 nodes are available: 1 Insufficient cpu."
    assert sim.clock.elapsed == 3600


def test_bad_duration_annotation_names_the_field() -> None:
    sim = Simulation(seed=0)
    with pytest.raises(InputError) as err:
        _load(sim, _node(), _pod("p", duration="soon"))
    text = str(err.value)
    assert "test.yaml" in text and "Pod p" in text
    assert "metadata.annotations.kubesched.io/duration" in text
