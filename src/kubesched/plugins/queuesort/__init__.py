"""PrioritySort: higher priority first, then the pod that entered the queue earlier."""

from __future__ import annotations

from typing import Any, ClassVar

from kubesched.framework.types import QueuedPodInfo


class PrioritySort:
    name: ClassVar[str] = "PrioritySort"

    def __init__(self, args: Any = None, handle: Any = None) -> None:
        pass

    def less(self, a: QueuedPodInfo, b: QueuedPodInfo) -> bool:
        pa, pb = a.pod.priority, b.pod.priority
        return pa > pb or (pa == pb and a.timestamp < b.timestamp)

    @staticmethod
    def sort_key(q: QueuedPodInfo) -> tuple[int, float, int]:
        # Same order as ``less``; ``seq`` only makes equal timestamps deterministic.
        return (-q.pod.priority, q.timestamp, q.seq)
