"""Numbers at the edges of their range: sums past int64, int32 fields, huge nodes."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kubesched.api.objects import Node, Pod, PriorityClass
from kubesched.cache.node_info import NodeInfo
from kubesched.cache.node_table import CPU_COL, MEMORY_COL, NodeTable
from kubesched.cli import EXIT_BAD_INPUT, EXIT_OK, main
from kubesched.errors import InputError
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.plugin_args import NodeResourcesFitArgs, parse_args
from kubesched.framework.types import MAX_NODE_SCORE
from kubesched.plugins.helper.int64 import INT64_MAX, saturating_add, scaled_quotient
from kubesched.plugins.noderesources.fit import PRE_SCORE_KEY as FIT_PRE_SCORE_KEY
from kubesched.plugins.noderesources.fit import NodeResourcesFit, least_allocated, most_allocated


def run(tmp_path: Path, text: str, capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, Any, str]:
    path = tmp_path / "in.yaml"
    path.write_text(textwrap.dedent(text))
    code = main(["simulate", str(path), "-o", "json", *args])
    out, err = capsys.readouterr()
    return code, json.loads(out) if code != EXIT_BAD_INPUT else None, err


def pods_by_name(doc: Any) -> dict[str, Any]:
    return {p["name"]: p for p in doc["pods"]}


@pytest.mark.parametrize("scheduler", ["default-scheduler", "volcano"])
def test_requests_summing_past_int64_fit_nowhere(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], scheduler: str
) -> None:
    code, doc, err = run(
        tmp_path,
        f"""\
        apiVersion: v1
        kind: Node
        metadata: {{name: n1}}
        status: {{allocatable: {{cpu: "8", memory: 8Ei, pods: "110"}}}}
        ---
        apiVersion: v1
        kind: Pod
        metadata: {{name: p}}
        spec:
          schedulerName: {scheduler}
          containers:
          - {{name: a, resources: {{requests: {{memory: 4Ei}}}}}}
          - {{name: b, resources: {{requests: {{memory: 4Ei}}}}}}
          - {{name: c, resources: {{requests: {{memory: 4Ei}}}}}}
        """,
        capsys,
    )
    assert code == EXIT_OK, err
    pod = pods_by_name(doc)["p"]
    assert pod["node"] is None
    assert pod["status"] == "Unschedulable"


def test_bound_pods_summing_past_int64_are_rejected_by_the_kubelet(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bound = "".join(
        textwrap.dedent(f"""\
        ---
        apiVersion: v1
        kind: Pod
        metadata: {{name: b{i}}}
        spec:
          nodeName: n1
          containers: [{{name: a, resources: {{requests: {{memory: 7Ei}}}}}}]
        """)
        for i in range(3)
    )
    code, doc, err = run(
        tmp_path,
        textwrap.dedent("""\
        apiVersion: v1
        kind: Node
        metadata: {name: n1}
        status: {allocatable: {cpu: "8", memory: 8Ei, pods: "110"}}
        ---
        apiVersion: v1
        kind: Pod
        metadata: {name: p}
        spec:
          containers: [{name: a, resources: {requests: {memory: 1Ki}}}]
        """)
        + bound,
        capsys,
    )
    assert code == EXIT_OK, err
    pods = pods_by_name(doc)
    # The kubelet admits b0 alone (two would need 14Ei of 8Ei): the rest is what p fits in.
    assert pods["b0"]["status"] == "Bound"
    for name in ("b1", "b2"):
        assert pods[name]["status"] == "Failed"
        assert pods[name]["message"].startswith("OutOfmemory: Node didn't have enough resource: memory")
    assert pods["p"]["node"] == "n1"


def test_huge_node_scores_as_the_emptier_one(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, doc, err = run(
        tmp_path,
        """\
        apiVersion: v1
        kind: Node
        metadata: {name: small}
        status: {allocatable: {cpu: "8", memory: 32Gi, pods: "110"}}
        ---
        apiVersion: v1
        kind: Node
        metadata: {name: huge}
        status: {allocatable: {cpu: "8", memory: 7Ei, pods: "110"}}
        ---
        apiVersion: v1
        kind: Pod
        metadata: {name: p}
        spec:
          containers: [{name: a, resources: {requests: {cpu: "1", memory: 1Gi}}}]
        """,
        capsys,
        "--explain",
    )
    assert code == EXIT_OK, err
    pod = pods_by_name(doc)["p"]
    fit = {node: scores["NodeResourcesFit"] for node, scores in pod["finalScore"].items()}
    assert fit["huge"] > fit["small"]
    assert pod["node"] == "huge"


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.integers(0, INT64_MAX), min_size=1, max_size=8),
    st.lists(st.integers(1, INT64_MAX), min_size=1, max_size=8),
)
def test_scores_equal_exact_integer_arithmetic(requested: list[int], allocatable: list[int]) -> None:
    n = min(len(requested), len(allocatable))
    req = np.array(requested[:n], dtype=np.int64)
    alloc = np.array(allocatable[:n], dtype=np.int64)
    least = least_allocated(req, alloc).tolist()
    most = most_allocated(req, alloc).tolist()
    for i in range(n):
        r, a = requested[i], allocatable[i]
        assert least[i] == (0 if r > a else (a - r) * 100 // a)
        assert most[i] == min(r, a) * 100 // a
        assert 0 <= least[i] <= 100 and 0 <= most[i] <= 100


@settings(max_examples=100, deadline=None)
@given(st.lists(st.integers(0, INT64_MAX), min_size=1, max_size=8), st.integers(0, 2**70))
def test_saturating_add_caps_at_int64(values: list[int], amount: int) -> None:
    got = saturating_add(np.array(values, dtype=np.int64), amount).tolist()
    assert got == [min(v + amount, INT64_MAX) for v in values]


def test_scaled_quotient_small_values_take_the_fast_path() -> None:
    got = scaled_quotient(np.array([5, 0], dtype=np.int64), np.array([7, 3], dtype=np.int64), 100)
    assert got.tolist() == [71, 0]


def pod(spec: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p"},
        "spec": {"containers": [{"name": "a"}], **spec},
    }


@pytest.mark.parametrize("priority", [2**31, -(2**31) - 1, 10**30])
def test_pod_priority_outside_int32_is_refused(priority: int) -> None:
    with pytest.raises(InputError) as info:
        Pod.from_dict(pod({"priority": priority}))
    assert info.value.field == "spec.priority"


@pytest.mark.parametrize("priority", [2**31 - 1, -(2**31)])
def test_pod_priority_at_the_int32_edges_is_accepted(priority: int) -> None:
    assert Pod.from_dict(pod({"priority": priority})).priority == priority


def test_priority_class_value_outside_int32_is_refused() -> None:
    obj = {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "x"}}
    with pytest.raises(InputError, match="range"):
        PriorityClass.from_dict({**obj, "value": -(2**40)})


def test_huge_priority_in_manifest_is_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(
        tmp_path,
        """\
        apiVersion: v1
        kind: Pod
        metadata: {name: high}
        spec:
          priority: 99999999999999999999
          containers: [{name: a}]
        """,
        capsys,
    )
    assert code == EXIT_BAD_INPUT
    assert "Pod high: field spec.priority: must be in the range" in err
    assert "Traceback" not in err


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.integers(0, INT64_MAX), min_size=1, max_size=8),
    st.lists(st.integers(1, INT64_MAX), min_size=1, max_size=8),
    st.integers(0, 2**40),
)
def test_scores_with_a_value_ceiling_equal_those_without(
    requested: list[int], allocatable: list[int], want: int
) -> None:
    n = min(len(requested), len(allocatable))
    req = np.array(requested[:n], dtype=np.int64)
    alloc = np.array(allocatable[:n], dtype=np.int64)
    ceiling = max(max(requested[:n]), max(allocatable[:n]))
    summed = saturating_add(req, want, ceiling)
    assert summed.tolist() == saturating_add(req, want).tolist()
    assert least_allocated(summed, alloc, ceiling).tolist() == least_allocated(summed, alloc).tolist()
    assert most_allocated(summed, alloc, ceiling).tolist() == most_allocated(summed, alloc).tolist()


def _table_node(name: str, memory: int) -> Node:
    return Node.from_dict(
        {
            "kind": "Node",
            "metadata": {"name": name},
            "status": {"allocatable": {"cpu": "8", "memory": str(memory), "pods": "110"}},
        }
    )


def _table_pod(i: int, memory: int) -> Pod:
    return Pod.from_dict(
        {
            "kind": "Pod",
            "metadata": {"name": f"p{i}", "namespace": "default", "uid": f"u{i}"},
            "spec": {"containers": [{"name": "c", "resources": {"requests": {"memory": str(memory)}}}]},
        }
    )


def _largest(table: NodeTable) -> int:
    arrays = (table.allocatable, table.requested, table.nonzero_requested)
    return max(max(int(a.max()), -int(a.min())) for a in arrays)


@settings(max_examples=100, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["write", "clear", "add", "remove", "usage"]),
            st.integers(0, 3),
            st.sampled_from([1, 2**30, 2**55, 2**61, INT64_MAX // 4]),
        ),
        max_size=30,
    )
)
def test_node_table_value_ceiling_bounds_every_value(ops: list[tuple[str, int, int]]) -> None:
    """Whatever is written, added or taken away, the table's value ceiling is never below a value
    in its columns (the scorers skip their overflow guards on its word)."""
    table = NodeTable(capacity=4)
    fork = table.fork()
    added: list[tuple[int, Pod]] = []
    for i, (op, slot, amount) in enumerate(ops):
        if op == "write":
            info = NodeInfo(_table_node(f"n{slot}", amount))
            info.add_pod(_table_pod(i, amount // 2))
            table.write(slot, info)
            fork = table.fork()
            added = []
        elif op == "clear":
            table.clear(slot)
            fork = table.fork()
            added = []
        elif op == "add":
            p = _table_pod(i, amount)
            fork.add_pod(slot, p)
            added.append((slot, p))
        elif op == "remove" and added:
            s, p = added.pop()
            fork.remove_pod(s, p)
        elif op == "usage":
            vector = fork.pod_vector({"memory": amount})
            fork.add_usage(np.array([slot]), vector[None, :], np.array([[0, amount]], dtype=np.int64))
        assert table.value_ceiling() >= _largest(table)
        assert fork.value_ceiling() >= _largest(fork)


def _quantity(low: int) -> st.SearchStrategy[int]:
    """Mostly everyday sizes (the plain-int64 path), sometimes ones near int64's end."""
    return st.one_of(st.integers(low, 2**40), st.integers(low, 2**62))


@settings(max_examples=150, deadline=None)
@given(
    st.lists(
        st.tuples(_quantity(1), _quantity(1), _quantity(0), _quantity(0)),
        min_size=1,
        max_size=6,
    ),
    _quantity(0),
    _quantity(0),
    st.sampled_from([(1, 1), (1, 3), (5, 2)]),
)
def test_least_allocated_short_path_scores_equal_the_exact_ones(
    nodes: list[tuple[int, int, int, int]], cpu: int, memory: int, weights: tuple[int, int]
) -> None:
    """NodeResourcesFit's LeastAllocated over cpu and memory (its plain-int64 path when the values
    are small, the guarded one otherwise) gives upstream's integer scores, computed here exactly."""
    table = NodeTable(capacity=len(nodes))
    for slot, (alloc_cpu, alloc_memory, used_cpu, used_memory) in enumerate(nodes):
        table.allocatable[slot, CPU_COL] = alloc_cpu
        table.allocatable[slot, MEMORY_COL] = alloc_memory
        table.nonzero_requested[slot, 0] = used_cpu
        table.nonzero_requested[slot, 1] = used_memory
        table.valid[slot] = True
        table._raise_ceiling(max(alloc_cpu, alloc_memory, used_cpu, used_memory))
    args = parse_args(
        NodeResourcesFitArgs,
        {
            "scoringStrategy": {
                "type": "LeastAllocated",
                "resources": [
                    {"name": "cpu", "weight": weights[0]},
                    {"name": "memory", "weight": weights[1]},
                ],
            }
        },
    )
    assert isinstance(args, NodeResourcesFitArgs)
    fit = NodeResourcesFit(args)
    state = CycleState()
    state.write(FIT_PRE_SCORE_KEY, [cpu, memory])
    slots = np.arange(len(nodes), dtype=np.int64)
    got = fit.score_nodes(state, _table_pod(0, 1), table, slots).tolist()

    def exact(alloc: int, used: int, want: int) -> int:
        requested = min(used + want, INT64_MAX)
        return 0 if requested > alloc else (alloc - requested) * MAX_NODE_SCORE // alloc

    expected = [
        (exact(a_cpu, u_cpu, cpu) * weights[0] + exact(a_mem, u_mem, memory) * weights[1]) // sum(weights)
        for a_cpu, a_mem, u_cpu, u_mem in nodes
    ]
    assert got == expected
