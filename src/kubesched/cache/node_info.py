"""Per-node aggregate of the pods the scheduler believes are on a node (bound or assumed)."""

from __future__ import annotations

from kubesched.api.objects import HostPort, Node, Pod
from kubesched.api.resources import ResourceList
from kubesched.cache.accounting import add_requests, count_ports


class NodeInfo:
    """A node and the sum of its pods' requests. ``node`` is None while only pods refer to it."""

    __slots__ = ("generation", "node", "nonzero_cpu", "nonzero_memory", "pods", "requested", "used_ports")

    def __init__(self, node: Node | None = None) -> None:
        self.node = node
        self.pods: dict[str, Pod] = {}
        self.requested: ResourceList = {}
        self.nonzero_cpu = 0
        self.nonzero_memory = 0
        self.generation = 0
        #: Host ports in use (upstream ``UsedPorts``), counted per pod using them.
        self.used_ports: dict[HostPort, int] = {}

    @property
    def name(self) -> str:
        return self.node.name if self.node is not None else ""

    def add_pod(self, pod: Pod) -> None:
        self.pods[pod.uid] = pod
        self._account(pod, 1)

    def remove_pod(self, pod: Pod) -> bool:
        existing = self.pods.pop(pod.uid, None)
        if existing is None:
            return False
        self._account(existing, -1)
        return True

    def clone(self) -> NodeInfo:
        """A copy that can be changed without touching this one (upstream ``NodeInfo.Snapshot``)."""
        out = NodeInfo(self.node)
        out.pods = dict(self.pods)
        out.requested = dict(self.requested)
        out.nonzero_cpu = self.nonzero_cpu
        out.nonzero_memory = self.nonzero_memory
        out.used_ports = dict(self.used_ports)
        out.generation = self.generation
        return out

    def _account(self, pod: Pod, sign: int) -> None:
        add_requests(self.requested, pod, sign)
        self.nonzero_cpu += sign * pod.nonzero_cpu
        self.nonzero_memory += sign * pod.nonzero_memory
        if pod.host_ports:
            count_ports(self.used_ports, pod, sign)
