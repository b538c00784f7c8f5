"""NodeName: a pod that names a node fits only that node."""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from kubesched.api.objects import Node, Pod
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

ERR_REASON = "node(s) didn't match the requested node name"


class NodeName:
    name: ClassVar[str] = "NodeName"

    def sign_pod(self, pod: Pod) -> tuple[tuple[SignFragment, ...], Status | None]:
        return (("NodeName.nodeName", pod.node_name),), None

    def __init__(self, args: Any = None, handle: Any = None) -> None:
        pass

    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [
            ClusterEventWithHint(ClusterEvent("Node", ActionType.ADD), self.is_schedulable_after_node_add)
        ]

    def is_schedulable_after_node_add(self, pod: Pod, old: Node | None, new: Node) -> QueueingHint:
        """Queue when the added node is the one the pod names (or it names none)."""
        if not pod.node_name or pod.node_name == new.name:
            return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP

    def filter_nodes(self, state: CycleState, pod: Pod, table: NodeTable) -> FilterResult:
        if not pod.node_name:
            return FilterResult.all_pass(table.capacity)
        failing = np.ones(table.capacity, dtype=np.bool_)
        slot = table.slot_of.get(pod.node_name)
        if slot is not None:
            failing[slot] = False
        return FilterResult.reject(failing, ERR_REASON, unresolvable=True)

    def filter_rows(self, state: CycleState, pod: Pod, table: NodeTable, rows: IntArray) -> BoolArray | None:
        if not pod.node_name:
            return None
        slot = table.slot_of.get(pod.node_name)
        if slot is None:
            return np.zeros(len(rows), dtype=np.bool_)
        passed: BoolArray = rows == slot
        return passed
