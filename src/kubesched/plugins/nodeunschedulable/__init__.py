"""NodeUnschedulable: cordoned nodes take only pods that tolerate the unschedulable taint."""

from __future__ import annotations

from typing import Any, ClassVar

from kubesched.api.objects import Node, Pod
from kubesched.api.taints import Taint, tolerates_any
from kubesched.cache.node_table import NodeTable
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.interfaces import SignFragment
from kubesched.framework.status import Status
from kubesched.framework.types import (
    ActionType,
    BoolArray,
    ClusterEvent,
    ClusterEventWithHint,
    FilterResult,
    IntArray,
    QueueingHint,
)
from kubesched.plugins.helper.sign import frozen

ERR_REASON_UNSCHEDULABLE = "node(s) were unschedulable"
UNSCHEDULABLE_TAINT = Taint("node.kubernetes.io/unschedulable", "", "NoSchedule")


class NodeUnschedulable:
    name: ClassVar[str] = "NodeUnschedulable"

    def sign_pod(self, pod: Pod) -> tuple[tuple[SignFragment, ...], Status | None]:
        """Whether the pod tolerates the unschedulable taint follows from its tolerations."""
        return (("NodeUnschedulable.tolerations", frozen(pod.tolerations)),), None

    def __init__(self, args: Any = None, handle: Any = None) -> None:
        pass

    def events_to_register(self) -> list[ClusterEventWithHint]:
        # A node made schedulable again arrives as UpdateNodeTaint (upstream has no action of its own).
        return [
            ClusterEventWithHint(
                ClusterEvent("Node", ActionType.ADD | ActionType.UPDATE_NODE_TAINT),
                self.is_schedulable_after_node_change,
            ),
            ClusterEventWithHint(
                ClusterEvent("Pod", ActionType.UPDATE_POD_TOLERATION),
                self.is_schedulable_after_pod_toleration_change,
            ),
        ]

    def is_schedulable_after_node_change(self, pod: Pod, old: Node | None, new: Node) -> QueueingHint:
        """Queue when a schedulable node is added, or a node goes from unschedulable to schedulable."""
        if (old is None or old.unschedulable) and not new.unschedulable:
            return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP

    def is_schedulable_after_pod_toleration_change(self, pod: Pod, old: Pod | None, new: Pod) -> QueueingHint:
        """Queue when the unschedulable pod itself now tolerates the unschedulable taint."""
        if new.uid == pod.uid and tolerates_any(new.tolerations, UNSCHEDULABLE_TAINT):
            return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP

    def filter_nodes(self, state: CycleState, pod: Pod, table: NodeTable) -> FilterResult:
        if tolerates_any(pod.tolerations, UNSCHEDULABLE_TAINT):
            return FilterResult.all_pass(table.capacity)
        return FilterResult.reject(table.unschedulable.copy(), ERR_REASON_UNSCHEDULABLE, unresolvable=True)

    def filter_rows(self, state: CycleState, pod: Pod, table: NodeTable, rows: IntArray) -> BoolArray | None:
        if not table.cordoned or tolerates_any(pod.tolerations, UNSCHEDULABLE_TAINT):
            return None
        cordoned = table.unschedulable[rows]
        if not cordoned.any():
            return None
        passed: BoolArray = ~cordoned
        return passed
