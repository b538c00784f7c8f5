"""NodeUnschedulable: cordoned nodes take only pods that tolerate the unschedulable taint."""

from __future__ import annotations

from typing import Any, ClassVar

from kubesched.api.objects import Pod
from kubesched.api.taints import Taint, tolerates_any
from kubesched.cache.node_table import NodeTable
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.types import ActionType, ClusterEvent, FilterResult

ERR_REASON_UNSCHEDULABLE = "node(s) were unschedulable"
UNSCHEDULABLE_TAINT = Taint("node.kubernetes.io/unschedulable", "", "NoSchedule")


class NodeUnschedulable:
    name: ClassVar[str] = "NodeUnschedulable"

    def __init__(self, args: Any = None, handle: Any = None) -> None:
        pass

    def events_to_register(self) -> list[ClusterEvent]:
        return [ClusterEvent("Node", ActionType.ADD), ClusterEvent("Node", ActionType.UPDATE)]

    def filter_nodes(self, state: CycleState, pod: Pod, table: NodeTable) -> FilterResult:
        if tolerates_any(pod.tolerations, UNSCHEDULABLE_TAINT):
            return FilterResult.all_pass(table.capacity)
        return FilterResult.reject(table.unschedulable.copy(), ERR_REASON_UNSCHEDULABLE, unresolvable=True)
