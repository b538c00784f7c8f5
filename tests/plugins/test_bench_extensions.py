"""The plugin and extender bench workloads run end to end (numbers live in docs/performance.md)."""

from __future__ import annotations

from kubesched.bench.workloads import WORKLOADS


def test_per_node_plugin_workload_places_every_pod() -> None:
    res = WORKLOADS["per-node-plugin"](nodes=5, pods=6)
    assert res.scheduled == 6 and "vectorized twin" in res.details


def test_extender_workload_places_every_pod() -> None:
    res = WORKLOADS["extender"](nodes=3, pods=4)
    assert res.scheduled == 4 and "without the extender" in res.details
