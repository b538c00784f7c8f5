"""SchedulingGates queueing hint: upstream ``Test_isSchedulableAfterPodChange`` (case names verbatim;
the wrong-object cases have no counterpart here: hints get parsed objects)."""

from __future__ import annotations

import pytest

from kubesched.api.objects import Pod
from kubesched.framework.types import QueueingHint
from kubesched.plugins.schedulinggates import SchedulingGates
from kubesched.plugins.testing import make_pod

Q, SKIP = QueueingHint.QUEUE, QueueingHint.QUEUE_SKIP

CASES: list[tuple[str, Pod, Pod, Pod, QueueingHint]] = [
    (
        "skip-queue-on-other-pod-updated",
        make_pod("p", uid="uid0", scheduling_gates=["foo", "bar"]),
        make_pod("p1", uid="uid1", scheduling_gates=["foo", "bar"]),
        make_pod("p1", uid="uid1", scheduling_gates=["foo"]),
        SKIP,
    ),
    (
        "queue-on-the-unsched-pod-updated",
        make_pod("p", uid="p", scheduling_gates=["foo"]),
        make_pod("p", uid="p", scheduling_gates=["foo"]),
        make_pod("p", uid="p"),
        Q,
    ),
]


@pytest.mark.parametrize(("name", "pod", "old", "new", "want"), CASES, ids=[c[0] for c in CASES])
def test_is_schedulable_after_update_pod_scheduling_gates_eliminated(
    name: str, pod: Pod, old: Pod, new: Pod, want: QueueingHint
) -> None:
    hint = SchedulingGates().is_schedulable_after_update_pod_scheduling_gates_eliminated(pod, old, new)
    assert hint == want
