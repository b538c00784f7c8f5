"""NodeUnschedulable: cordoned nodes take only pods that tolerate the unschedulable taint."""

from __future__ import annotations

from typing import Any, ClassVar

from kubesched.api.objects import Pod
from kubesched.api.taints import Taint, tolerates_any
from kubesched.cache.node_table import NodeTable
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.interfaces import SignFragment
from kubesched.framework.status import Status
from kubesched.framework.types import ActionType, ClusterEvent, FilterResult
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

    def events_to_register(self) -> list[ClusterEvent]:
        return [ClusterEvent("Node", ActionType.ADD), ClusterEvent("Node", ActionType.UPDATE)]

    def filter_nodes(self, state: CycleState, pod: Pod, table: NodeTable) -> FilterResult:
        if tolerates_any(pod.tolerations, UNSCHEDULABLE_TAINT):
            return FilterResult.all_pass(table.capacity)
        return FilterResult.reject(table.unschedulable.copy(), ERR_REASON_UNSCHEDULABLE, unresolvable=True)
