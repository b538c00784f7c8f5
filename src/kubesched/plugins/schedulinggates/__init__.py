"""SchedulingGates (PreEnqueue): a pod with gates stays out of the active queue."""

from __future__ import annotations

from typing import Any, ClassVar

from kubesched.api.objects import Pod
from kubesched.framework.status import Code, Status
from kubesched.framework.types import ActionType, ClusterEvent, ClusterEventWithHint, QueueingHint


class SchedulingGates:
    name: ClassVar[str] = "SchedulingGates"

    def __init__(self, args: Any = None, handle: Any = None) -> None:
        pass

    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [
            ClusterEventWithHint(
                ClusterEvent("Pod", ActionType.UPDATE_POD_SCHEDULING_GATES_ELIMINATED),
                self.is_schedulable_after_update_pod_scheduling_gates_eliminated,
            )
        ]

    def is_schedulable_after_update_pod_scheduling_gates_eliminated(
        self, pod: Pod, old: Pod | None, new: Pod
    ) -> QueueingHint:
        """Only the gated pod's own gates matter to it."""
        return QueueingHint.QUEUE if new.uid == pod.uid else QueueingHint.QUEUE_SKIP

    def pre_enqueue(self, pod: Pod) -> Status | None:
        if not pod.scheduling_gates:
            return None
        gates = "[" + " ".join(pod.scheduling_gates) + "]"
        return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, [f"waiting for scheduling gates: {gates}"])
