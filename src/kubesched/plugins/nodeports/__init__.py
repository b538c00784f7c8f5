"""NodePorts: does the node have the host ports the pod wants free (upstream ``nodeports``).

PreFilter collects the pod's host ports (upstream ``GetHostPorts``: containers and sidecar init
containers, ``hostPort > 0``) and returns Skip when there are none. Filter applies upstream
``HostPortInfo.CheckConflict`` to every wanted port: a wanted ``0.0.0.0`` port conflicts with the same
protocol/port bound on any IP of the node; a wanted specific IP conflicts with that IP or ``0.0.0.0``.
The NodeTable keeps one slot mask per used port, so the check is a few mask operations per wanted
port. The rejection is ``Unschedulable`` (preemption may free the port).
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from kubesched.api.objects import DEFAULT_BIND_ALL_HOST_IP, HostPort, Pod
from kubesched.cache.cache import Snapshot
from kubesched.cache.node_table import BoolArray, NodeTable
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.interfaces import SignFragment
from kubesched.framework.nominated_pods import status_nominated_node
from kubesched.framework.status import Code, Status
from kubesched.framework.types import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    FilterResult,
    PreFilterResult,
    QueueingHint,
)
from kubesched.plugins.helper.sign import frozen

PRE_FILTER_KEY = "PreFilterNodePorts"

#: Upstream ``nodeports.ErrReason``.
ERR_REASON = "node(s) didn't have free ports for the requested pod ports"


def conflicting_nodes(table: NodeTable, wanted: tuple[HostPort, ...]) -> BoolArray:
    """Slots where at least one wanted port conflicts with a port in use (``CheckConflict``)."""
    failing = np.zeros(table.capacity, dtype=np.bool_)
    for ip, protocol, port in wanted:
        if ip == DEFAULT_BIND_ALL_HOST_IP:
            used = table.host_ports_any.get((protocol, port))
            if used is not None:
                failing |= used
            continue
        for key in (HostPort(DEFAULT_BIND_ALL_HOST_IP, protocol, port), HostPort(ip, protocol, port)):
            used = table.host_ports.get(key)
            if used is not None:
                failing |= used
    return failing


class NodePorts:
    name: ClassVar[str] = "NodePorts"

    def sign_pod(self, pod: Pod) -> tuple[tuple[SignFragment, ...], Status | None]:
        return (("NodePorts.hostPorts", frozen(pod.host_ports)),), None

    def __init__(self, args: Any = None, handle: Any = None) -> None:
        pass

    def events_to_register(self) -> list[ClusterEventWithHint]:
        # Container ports are immutable, so a pod update cannot free a port (upstream). A new node
        # needs no hint: it always has every port free.
        return [
            ClusterEventWithHint(
                ClusterEvent("Pod", ActionType.DELETE), self.is_schedulable_after_pod_deleted
            ),
            ClusterEventWithHint(ClusterEvent("Node", ActionType.ADD)),
        ]

    def is_schedulable_after_pod_deleted(self, pod: Pod, old: Pod | None, new: Pod | None) -> QueueingHint:
        """Queue when the deleted pod was scheduled (or nominated) and held a host port this pod
        wants (upstream ``fitsPorts`` against the deleted pod's ports)."""
        if old is None:
            return QueueingHint.QUEUE
        if not old.node_name and not status_nominated_node(old):
            return QueueingHint.QUEUE_SKIP
        if not old.host_ports:
            return QueueingHint.QUEUE_SKIP
        for ip, protocol, port in pod.host_ports:
            for used_ip, used_protocol, used_port in old.host_ports:
                if protocol != used_protocol or port != used_port:
                    continue
                if DEFAULT_BIND_ALL_HOST_IP in (ip, used_ip) or ip == used_ip:
                    return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP

    def pre_filter(
        self, state: CycleState, pod: Pod, snapshot: Snapshot
    ) -> tuple[PreFilterResult | None, Status | None]:
        if not pod.host_ports:
            return None, Status(Code.SKIP)
        state.write(PRE_FILTER_KEY, pod.host_ports)
        return None, None

    def filter_nodes(self, state: CycleState, pod: Pod, table: NodeTable) -> FilterResult:
        wanted: tuple[HostPort, ...] = state.read(PRE_FILTER_KEY)
        failing = conflicting_nodes(table, wanted)
        if not failing.any():
            return FilterResult.all_pass(table.capacity)
        return FilterResult.reject(failing, ERR_REASON)
