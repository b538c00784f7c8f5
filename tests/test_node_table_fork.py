"""The NodeTable accounting API and forks: a fork changes only itself, and a row counted pod by pod
equals the row copied from the NodeInfo holding the same pods."""

from __future__ import annotations

import copy
from typing import Any

import numpy as np
import pytest

from kubesched.api.objects import HostPort, Node, Pod
from kubesched.cache.cache import SchedulerCache, Snapshot
from kubesched.cache.node_info import NodeInfo
from kubesched.cache.node_table import CPU_COL, MEMORY_COL, PODS_COL, NodeTable


def node(name: str) -> Node:
    return Node.from_dict(
        {
            "kind": "Node",
            "metadata": {"name": name, "labels": {"zone": "a"}},
            "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110", "example.com/gpu": "2"}},
        }
    )


def pod(name: str, cpu: str = "100m", memory: str = "100Mi", port: int = 0, gpu: int = 0) -> Pod:
    container: dict[str, Any] = {"name": "c", "resources": {"requests": {"cpu": cpu, "memory": memory}}}
    if gpu:
        container["resources"]["requests"]["example.com/gpu"] = str(gpu)
    if port:
        container["ports"] = [{"containerPort": port, "hostPort": port}]
    return Pod.from_dict(
        {
            "kind": "Pod",
            "metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}"},
            "spec": {"containers": [container]},
        }
    )


def snapshot_of(pods_on_n1: list[Pod]) -> Snapshot:
    cache = SchedulerCache()
    for n in ("n1", "n2"):
        cache.add_node(node(n))
    for p in pods_on_n1:
        p.node_name = "n1"
        cache.add_pod(p)
    snap = Snapshot()
    cache.update_snapshot(snap)
    return snap


def state(table: NodeTable) -> tuple[Any, ...]:
    return (
        table.requested.copy(),
        table.nonzero_requested.copy(),
        table.allocatable.copy(),
        {k: m.copy() for k, m in table.host_ports.items()},
        {k: m.copy() for k, m in table.host_ports_any.items()},
        list(table.resource_names),
    )


def same(a: tuple[Any, ...], b: tuple[Any, ...]) -> bool:
    req, nz, alloc, ports, ports_any, names = a
    req2, nz2, alloc2, ports2, ports_any2, names2 = b
    return (
        np.array_equal(req, req2)
        and np.array_equal(nz, nz2)
        and np.array_equal(alloc, alloc2)
        and ports.keys() == ports2.keys()
        and all(np.array_equal(ports[k], ports2[k]) for k in ports)
        and ports_any.keys() == ports_any2.keys()
        and all(np.array_equal(ports_any[k], ports_any2[k]) for k in ports_any)
        and names == names2
    )


def test_add_pod_on_a_fork_leaves_the_base_table_alone() -> None:
    snap = snapshot_of([pod("a", port=8080)])
    base = snap.table
    before = state(base)
    fork = base.fork()
    slot = base.slot_of["n2"]
    p = pod("b", cpu="500m", memory="1Gi", port=8080, gpu=1)
    fork.add_pod(slot, p)
    assert same(state(base), before)
    assert fork.requested[slot, CPU_COL] == 500
    assert fork.requested[slot, MEMORY_COL] == 1 << 30
    assert fork.requested[slot, PODS_COL] == 1
    assert fork.requested[slot, fork.resource_col["example.com/gpu"]] == 1
    assert fork.nonzero_requested[slot].tolist() == [500, 1 << 30]
    assert fork.host_ports[HostPort("0.0.0.0", "TCP", 8080)][slot]
    assert fork.host_ports_any[("TCP", 8080)][slot]
    fork.remove_pod(slot, p)
    assert same(state(fork), before)
    assert same(state(base), before)


def test_a_copy_of_a_table_is_a_fork() -> None:
    snap = snapshot_of([])
    base = snap.table
    before = state(base)
    private = copy.copy(base)
    assert private.is_fork and not base.is_fork
    private.add_pod(base.slot_of["n1"], pod("b", port=9090, gpu=2))
    assert same(state(base), before)


def test_a_fork_gets_new_resource_columns_of_its_own() -> None:
    snap = snapshot_of([])
    base = snap.table
    names = list(base.resource_names)
    fork = base.fork(["z.example/fpga", "a.example/nic"])
    assert fork.resource_names == [*names, "z.example/fpga", "a.example/nic"]
    assert base.resource_names == names
    assert fork.allocatable.shape[1] == len(names) + 2
    assert base.allocatable.shape[1] == len(names)


def test_rows_of_a_fork_cannot_be_rewritten() -> None:
    snap = snapshot_of([])
    fork = snap.table.fork()
    info = snap.node_infos["n1"]
    with pytest.raises(ValueError):
        fork.write(0, info)
    with pytest.raises(ValueError):
        fork.clear(0)


def test_set_usage_counts_what_add_pod_counts() -> None:
    pods = [pod("a", port=80), pod("b", cpu="1", memory="2Gi", gpu=1), pod("c", cpu="0", memory="0")]
    snap = snapshot_of([])
    slot = snap.table.slot_of["n1"]
    by_pod = snap.table.fork()
    info = snap.node_infos["n1"].clone()
    for p in pods:
        by_pod.add_pod(slot, p)
        info.add_pod(p)
    from_info = snap.table.fork()
    from_info.set_usage(slot, info)
    assert np.array_equal(by_pod.requested, from_info.requested)
    assert np.array_equal(by_pod.nonzero_requested, from_info.nonzero_requested)
    for key, mask in by_pod.host_ports.items():
        assert np.array_equal(mask, from_info.host_ports[key])
    # The cache's own table, written from the cache's NodeInfo, agrees too.
    cached = snapshot_of(pods).table
    assert np.array_equal(cached.requested[slot], from_info.requested[slot])
    assert np.array_equal(cached.nonzero_requested[slot], from_info.nonzero_requested[slot])


def test_set_usage_on_a_fork_leaves_the_base_ports_alone() -> None:
    snap = snapshot_of([pod("a", port=8080)])
    base = snap.table
    before = state(base)
    slot = base.slot_of["n1"]
    fork = base.fork()
    fork.set_usage(slot, NodeInfo(snap.node_infos["n1"].node))
    assert not fork.host_ports[HostPort("0.0.0.0", "TCP", 8080)][slot]
    assert fork.requested[slot, PODS_COL] == 0
    assert same(state(base), before)


def test_add_usage_adds_summed_rows() -> None:
    snap = snapshot_of([])
    base = snap.table
    before = state(base)
    fork = base.fork()
    slots = np.array([base.slot_of["n1"], base.slot_of["n2"]], dtype=np.int64)
    vec = base.pod_vector(pod("x", cpu="250m").requests)
    fork.add_usage(slots, np.stack([vec, 2 * vec]), np.array([[1, 2], [3, 4]], dtype=np.int64))
    assert fork.requested[slots, CPU_COL].tolist() == [250, 500]
    assert fork.requested[slots, PODS_COL].tolist() == [1, 2]
    assert fork.nonzero_requested[slots].tolist() == [[1, 2], [3, 4]]
    assert same(state(base), before)


def test_a_reused_fork_starts_from_the_base_again() -> None:
    """what_if forks reuse the previous fork's arrays: rows it changed and rows the base rewrote
    since are copied again, so every check starts from the base table as it is now."""
    cache = SchedulerCache()
    for n in ("n1", "n2", "n3"):
        cache.add_node(node(n))
    snap = Snapshot()
    cache.update_snapshot(snap)
    base = snap.table
    s1, s2, s3 = (base.slot_of[n] for n in ("n1", "n2", "n3"))
    with base.what_if() as first:
        first.add_pod(s1, pod("x", cpu="1"))
        first.add_usage(
            np.array([s2], dtype=np.int64),
            np.ones((1, base.num_resources), dtype=np.int64),
            np.ones((1, 2), dtype=np.int64),
        )
        first_arrays = first.requested
    assert base.requested[[s1, s2]].sum() == 0
    bound = pod("y", cpu="2")
    bound.node_name = "n3"
    cache.add_pod(bound)
    cache.update_snapshot(snap)  # rewrites n3's row in the base
    with base.what_if() as second:
        assert second.requested is first_arrays  # reused, not copied
        assert np.array_equal(second.requested, base.requested)
        assert np.array_equal(second.nonzero_requested, base.nonzero_requested)
        assert second.requested[s3, CPU_COL] == 2000
        # A check nested in this one gets arrays of its own.
        with base.what_if() as nested:
            assert nested.requested is not second.requested
            nested.add_pod(s1, pod("z", cpu="3"))
        assert second.requested[s1, CPU_COL] == 0
    assert base.requested[s1, CPU_COL] == 0


def test_a_reused_fork_after_the_base_grew_is_a_fresh_fork() -> None:
    snap = snapshot_of([])
    base = snap.table
    with base.what_if() as first:
        first.add_pod(0, pod("x", gpu=1))
    base.column("example.org/new")
    with base.what_if() as second:
        assert second.requested is not first.requested
        assert second.requested.shape == base.requested.shape
        assert np.array_equal(second.requested, base.requested)


def test_resource_columns_stay_contiguous_as_tables_grow_and_fork() -> None:
    """Plugins read whole resource columns: the matrices stay column-major through row growth,
    new resource columns and forks (a row-major copy would give the same numbers, several times
    slower to read a column of)."""
    cache = SchedulerCache()
    for i in range(100):  # past the initial capacity: the rows grow
        cache.add_node(node(f"n{i}"))
    snap = Snapshot()
    cache.update_snapshot(snap)
    base = snap.table
    base.column("b.example/new")
    fork = base.fork(["c.example/fork-only"])
    refork = base.refork(base.refork(None))
    for table in (base, fork, refork):
        for matrix in (table.allocatable, table.requested, table.nonzero_requested):
            assert matrix[:, 0].flags.c_contiguous
