"""The NodeTable's headroom bound: after any sequence of node writes, removals and pod accounting it
never exceeds the true smallest ``allocatable - requested`` over node rows, and NodeResourcesFit's
verdict (which skips the rows when a request is within the bound) is the one the rows give."""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from kubesched.api.objects import Node, Pod
from kubesched.cache.node_info import NodeInfo
from kubesched.cache.node_table import CPU_COL, MEMORY_COL, PODS_COL, NodeTable
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.types import all_true
from kubesched.plugins.noderesources.fit import NodeResourcesFit


def node(name: str, cpu_milli: int, pods: int) -> Node:
    return Node.from_dict(
        {
            "kind": "Node",
            "metadata": {"name": name},
            "status": {"allocatable": {"cpu": f"{cpu_milli}m", "memory": "1Gi", "pods": str(pods)}},
        }
    )


def pod(name: str, cpu_milli: int) -> Pod:
    return Pod.from_dict(
        {
            "kind": "Pod",
            "metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}"},
            "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": f"{cpu_milli}m"}}}]},
        }
    )


def true_floor(table: NodeTable, col: int) -> int:
    free = table.allocatable[:, col] - table.requested[:, col]
    return int(free[table.valid].min(initial=2**63 - 1))


op = st.one_of(
    st.tuples(st.just("write"), st.integers(0, 5), st.integers(0, 3000), st.integers(0, 4)),
    st.tuples(st.just("clear"), st.integers(0, 5), st.just(0), st.just(0)),
    st.tuples(st.just("add"), st.integers(0, 5), st.integers(0, 2000), st.just(0)),
    st.tuples(st.just("remove"), st.integers(0, 5), st.just(0), st.just(0)),
    st.tuples(st.just("query"), st.sampled_from([CPU_COL, MEMORY_COL, PODS_COL]), st.just(0), st.just(0)),
)


@settings(max_examples=200, deadline=None)
@given(ops=st.lists(op, max_size=60), request=st.integers(0, 3500))
def test_headroom_bound_never_above_the_rows_and_fit_verdict_unchanged(
    ops: list[tuple[str, int, int, int]], request: int
) -> None:
    table = NodeTable(capacity=4)  # grows while writing
    infos: dict[int, NodeInfo] = {}
    counted: dict[int, list[Pod]] = {}
    for i, (kind, slot, a, b) in enumerate(ops):
        if kind == "write":
            info = NodeInfo(node(f"n{slot}", a, b))
            for p in counted.get(slot, []):
                info.add_pod(p)
            infos[slot] = info
            table.write(slot, info)
        elif kind == "clear" and slot in infos:
            table.clear(slot)
            del infos[slot]
            counted.pop(slot, None)
        elif kind == "add" and slot in infos:
            p = pod(f"p{i}", a)
            infos[slot].add_pod(p)
            table.add_pod(slot, p)
            counted.setdefault(slot, []).append(p)
        elif kind == "remove" and counted.get(slot):
            p = counted[slot].pop()
            infos[slot].remove_pod(p)
            table.remove_pod(slot, p)
        elif kind == "query":
            bound = table.headroom_floor(slot)
            assert bound is not None and bound <= true_floor(table, slot)
    for col in (CPU_COL, MEMORY_COL, PODS_COL):
        bound = table.headroom_floor(col)
        assert bound is not None and bound <= true_floor(table, col)

    # The filter's verdict equals the rows' own answer, whether or not the bound let it skip them.
    incoming = pod("incoming", request)
    fit = NodeResourcesFit(None)
    state = CycleState()
    fit.pre_filter(state, incoming, _snapshot_of(table))
    result = fit.filter_nodes(state, incoming, table)
    rows = table.valid
    expected = rows.copy()
    if request > 0:  # a resource the pod does not ask for is not checked (over-committed nodes pass)
        expected &= table.allocatable[:, CPU_COL] - table.requested[:, CPU_COL] >= request
    expected &= table.requested[:, PODS_COL] < table.allocatable[:, PODS_COL]
    assert np.array_equal(result.passed & rows, expected)
    if result.passed is all_true(table.capacity):
        assert expected.sum() == rows.sum()


def _snapshot_of(table: NodeTable) -> Any:
    class _Snap:
        pass

    snap = _Snap()
    snap.table = table  # type: ignore[attr-defined]
    return snap
