""" "What if" filter runs (a node with other pods, nominated pods) work on table forks: the snapshot's
table is never written and its NodeInfo entries come back, however the run ends."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from kubesched.api.objects import Pod
from kubesched.framework.cycle_state import CycleState
from kubesched.sim.simulation import Simulation


def node(name: str, cpu: str = "4") -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
        "status": {"allocatable": {"cpu": cpu, "memory": "32Gi", "pods": "110"}},
    }


def pod(name: str, cpu: str, node_name: str = "", port: int = 0) -> dict[str, Any]:
    container: dict[str, Any] = {"name": "c", "resources": {"requests": {"cpu": cpu}}}
    if port:
        container["ports"] = [{"containerPort": port, "hostPort": port}]
    spec: dict[str, Any] = {"containers": [container]}
    if node_name:
        spec["nodeName"] = node_name
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default"},
        "spec": spec,
    }


def cluster() -> Simulation:
    sim = Simulation(seed=0)
    for obj in (node("n1"), node("n2"), pod("a", "1", "n1", port=80), pod("b", "3", "n2")):
        sim.store.create(obj)
    sim.informers.pump()
    sim.scheduler.cache.update_snapshot(sim.scheduler.snapshot)
    return sim


def table_state(sim: Simulation) -> tuple[Any, ...]:
    t = sim.scheduler.snapshot.table
    return (
        t.requested.copy(),
        t.nonzero_requested.copy(),
        {k: m.copy() for k, m in t.host_ports.items()},
        dict(sim.scheduler.snapshot.node_infos),
    )


def assert_same(a: tuple[Any, ...], b: tuple[Any, ...]) -> None:
    assert np.array_equal(a[0], b[0]) and np.array_equal(a[1], b[1])
    assert a[2].keys() == b[2].keys() and all(np.array_equal(a[2][k], b[2][k]) for k in a[2])
    assert a[3].keys() == b[3].keys() and all(a[3][k] is b[3][k] for k in a[3])


def test_filter_status_on_a_changed_node_leaves_the_snapshot_alone() -> None:
    sim = cluster()
    fwk = next(iter(sim.scheduler.profiles.values()))
    snap = sim.scheduler.snapshot
    before = table_state(sim)
    incoming = Pod.from_dict(
        pod("p", "2", port=80) | {"metadata": {"name": "p", "namespace": "default", "uid": "p"}}
    )
    state = CycleState()
    _, st, _ = fwk.run_pre_filter(state, incoming, snap)
    assert st is None
    slot = snap.table.slot_of["n1"]
    emptied = snap.node_infos["n1"].clone()
    for p in list(emptied.pods.values()):
        emptied.remove_pod(p)
    assert fwk.filter_status_on(state, incoming, slot, emptied) is None  # fits once "a" is gone
    assert fwk.filter_status_on(state, incoming, slot, snap.node_infos["n1"]) is not None  # port 80
    assert_same(table_state(sim), before)


def test_node_overlay_puts_the_node_infos_back_when_the_block_fails() -> None:
    sim = cluster()
    fwk = next(iter(sim.scheduler.profiles.values()))
    snap = sim.scheduler.snapshot
    before = table_state(sim)
    slot = snap.table.slot_of["n2"]
    emptied = snap.node_infos["n2"].clone()
    for p in list(emptied.pods.values()):
        emptied.remove_pod(p)
    with pytest.raises(RuntimeError), fwk.node_overlay({slot: emptied}) as overlay:
        assert overlay is not snap.table
        assert overlay.requested[slot].sum() == 0
        assert snap.node_infos["n2"] is emptied
        raise RuntimeError("a plugin failed")
    assert_same(table_state(sim), before)
