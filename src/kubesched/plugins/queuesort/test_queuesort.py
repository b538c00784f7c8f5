"""PrioritySort: table after upstream's priority_sort_test.go (TestLess).

Higher priority first; at equal priority the pod that entered the queue earlier goes first.
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from kubesched.framework.types import QueuedPodInfo
from kubesched.plugins.queuesort import PrioritySort
from kubesched.plugins.testing import make_pod

LOW, HIGH = 10, 100
T1 = 1000.0
T2 = T1 + 1.0


def queued(priority: int, timestamp: float = 0.0, seq: int = 0) -> QueuedPodInfo:
    return QueuedPodInfo(
        pod=make_pod(f"p{priority}-{timestamp}", priority=priority), timestamp=timestamp, seq=seq
    )


@dataclass
class Case:
    name: str
    p1: QueuedPodInfo
    p2: QueuedPodInfo
    expected: bool


CASES = [
    Case("p1.priority less than p2.priority", queued(LOW), queued(HIGH), False),
    Case("p1.priority greater than p2.priority", queued(HIGH), queued(LOW), True),
    Case(
        "equal priority. p1 is added to schedulingQ earlier than p2", queued(HIGH, T1), queued(HIGH, T2), True
    ),
    Case(
        "equal priority. p2 is added to schedulingQ earlier than p1",
        queued(HIGH, T2),
        queued(HIGH, T1),
        False,
    ),
    Case("higher priority wins even when it came later", queued(HIGH, T2), queued(LOW, T1), True),
    Case("negative priorities order below zero", queued(-5), queued(0), False),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_less(case: Case) -> None:
    assert PrioritySort().less(case.p1, case.p2) is case.expected


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_sort_key_agrees_with_less(case: Case) -> None:
    key = PrioritySort.sort_key
    assert (key(case.p1) < key(case.p2)) is case.expected


def test_queue_order() -> None:
    pods = [
        queued(0, T1, seq=1),
        queued(HIGH, T2, seq=2),
        queued(LOW, T1, seq=3),
        queued(HIGH, T1, seq=4),
        queued(0, T1, seq=5),
    ]
    ordered = sorted(pods, key=PrioritySort.sort_key)
    assert [(q.pod.priority, q.timestamp, q.seq) for q in ordered] == [
        (HIGH, T1, 4),
        (HIGH, T2, 2),
        (LOW, T1, 3),
        (0, T1, 1),
        (0, T1, 5),
    ]
