"""findNodesThatPassExtenders with in-process fake extenders (upstream TestFindNodesThatPassExtenders,
case names verbatim)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import pytest

from kubesched.api.objects import Pod
from kubesched.framework.extender import ExtenderError, FilterReply
from kubesched.scheduler.extenders import find_nodes_that_pass_extenders

OK, UNSCHEDULABLE, UNRESOLVABLE, ERROR = "ok", "unschedulable", "unresolvable", "error"
Predicate = Callable[[str], str]


class FakeExtender:
    """Upstream's FakeExtender: a predicate per node; failed nodes get its canned messages."""

    def __init__(self, name: str, predicate: Predicate, *, ignorable: bool = False) -> None:
        self.name = name
        self.ignorable = ignorable
        self.weight = 1
        self.predicate = predicate

    def is_interested(self, pod: Pod) -> bool:
        return True

    def is_filter(self) -> bool:
        return True

    def is_prioritizer(self) -> bool:
        return False

    def is_binder(self) -> bool:
        return False

    def supports_preemption(self) -> bool:
        return False

    def filter(self, pod: Pod, nodes: Sequence[Mapping[str, Any]]) -> FilterReply:
        reply = FilterReply([])
        for obj in nodes:
            name = obj["metadata"]["name"]
            verdict = self.predicate(name)
            if verdict == ERROR:
                raise ExtenderError(self.name, "filter", "some error")
            if verdict == OK:
                reply.nodes.append(name)
            elif verdict == UNSCHEDULABLE:
                reply.failed[name] = f'FakeExtender: node "{name}" failed'
            else:
                reply.failed_and_unresolvable[name] = f'FakeExtender: node "{name}" failed and unresolvable'
        return reply


def a_ok_b_unschedulable_else_unresolvable(name: str) -> str:
    return OK if name == "a" else UNSCHEDULABLE if name == "b" else UNRESOLVABLE


CASES: list[tuple[str, list[FakeExtender], list[str], bool, list[str], dict[str, tuple[str, bool]]]] = [
    ("error", [FakeExtender("FakeExtender1", lambda n: ERROR)], ["a"], True, [], {}),
    ("success", [FakeExtender("FakeExtender1", lambda n: OK)], ["a"], False, ["a"], {}),
    (
        "unschedulable",
        [FakeExtender("FakeExtender1", lambda n: OK if n == "a" else UNSCHEDULABLE)],
        ["a", "b"],
        False,
        ["a"],
        {"b": ('FakeExtender: node "b" failed', False)},
    ),
    (
        "unschedulable and unresolvable",
        [FakeExtender("FakeExtender1", a_ok_b_unschedulable_else_unresolvable)],
        ["a", "b", "c"],
        False,
        ["a"],
        {
            "b": ('FakeExtender: node "b" failed', False),
            "c": ('FakeExtender: node "c" failed and unresolvable', True),
        },
    ),
    (
        # Node c failed an in-tree Filter plugin before: the extender only sees a and b, so the
        # plugin's status for c stays (the scheduler keeps it in its diagnosis).
        "extender does not overwrite the previous statuses",
        [FakeExtender("FakeExtender1", a_ok_b_unschedulable_else_unresolvable)],
        ["a", "b"],
        False,
        ["a"],
        {"b": ('FakeExtender: node "b" failed', False)},
    ),
    (
        "multiple extenders",
        [
            FakeExtender("FakeExtender1", a_ok_b_unschedulable_else_unresolvable),
            FakeExtender("FakeExtender1", lambda n: OK if n == "a" else UNSCHEDULABLE),
        ],
        ["a", "b", "c"],
        False,
        ["a"],
        {
            "b": ('FakeExtender: node "b" failed', False),
            "c": ('FakeExtender: node "c" failed and unresolvable', True),
        },
    ),
]


@pytest.mark.parametrize(
    ("name", "extenders", "nodes", "expects_err", "want_nodes", "want_statuses"),
    CASES,
    ids=[c[0] for c in CASES],
)
def test_find_nodes_that_pass_extenders(
    name: str,
    extenders: list[FakeExtender],
    nodes: list[str],
    expects_err: bool,
    want_nodes: list[str],
    want_statuses: dict[str, tuple[str, bool]],
) -> None:
    pod = Pod.from_dict({"metadata": {"name": "1", "uid": "1"}, "spec": {"containers": [{"name": "c"}]}})

    def node_obj(n: str) -> Mapping[str, Any]:
        return {"metadata": {"name": n}}

    if expects_err:
        with pytest.raises(ExtenderError):
            find_nodes_that_pass_extenders(extenders, pod, nodes, node_obj)
        return
    got, failures = find_nodes_that_pass_extenders(extenders, pod, nodes, node_obj)
    assert got == want_nodes
    assert {n: (msg, unres) for n, (_, msg, unres) in failures.by_node.items()} == want_statuses


def test_ignorable_extender_error_is_skipped() -> None:
    pod = Pod.from_dict({"metadata": {"name": "1"}, "spec": {"containers": [{"name": "c"}]}})
    exts = [
        FakeExtender("broken", lambda n: ERROR, ignorable=True),
        FakeExtender("ok", lambda n: OK if n == "b" else UNSCHEDULABLE),
    ]
    got, failures = find_nodes_that_pass_extenders(exts, pod, ["a", "b"], lambda n: {"metadata": {"name": n}})
    assert got == ["b"] and failures.dropped == {"a": "ok"}
