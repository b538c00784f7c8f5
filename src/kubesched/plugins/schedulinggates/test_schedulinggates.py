"""SchedulingGates: table after upstream's scheduling_gates_test.go (TestPreEnqueue)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import pytest

from kubesched.framework.status import Code, Status
from kubesched.plugins.schedulinggates import SchedulingGates
from kubesched.plugins.testing import make_pod


@dataclass
class Case:
    name: str
    gates: Sequence[str]
    want: Status | None


CASES = [
    Case("pod does not carry scheduling gates", [], None),
    Case(
        "pod carries scheduling gates",
        ["foo", "bar"],
        Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ["waiting for scheduling gates: [foo bar]"]),
    ),
    Case(
        "a single gate",
        ["example.com/quota"],
        Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ["waiting for scheduling gates: [example.com/quota]"]),
    ),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_pre_enqueue(case: Case) -> None:
    pod = make_pod("p", scheduling_gates=case.gates)
    assert SchedulingGates().pre_enqueue(pod) == case.want


def test_message_keeps_gate_order() -> None:
    status = SchedulingGates().pre_enqueue(make_pod("p", scheduling_gates=["a", "b"]))
    assert status is not None
    assert status.message == "waiting for scheduling gates: [a b]"
    assert status.is_rejected
