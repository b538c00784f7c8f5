"""Pod CIDRs of nodes (upstream ``pkg/controller/nodeipam``'s range allocator, as
kube-controller-manager runs it with ``--allocate-node-cidrs``): a node without ``spec.podCIDR``
gets the first free /24 of the cluster CIDR, from which its kubelet gives pods their IPs.

The cluster CIDR is 10.128.0.0/9: 32,768 nodes of 254 pod addresses each, away from the service
CIDR (10.0.0.0/24) and the simulated nodes' addresses (172.18.0.0/16)."""

from __future__ import annotations

import contextlib
import ipaddress
from typing import Any

from kubesched.store.base import Conflict, EventType, NotFound
from kubesched.store.informers import Change, InformerFactory
from kubesched.store.sqlite import SqliteStore

CLUSTER_CIDR = ipaddress.ip_network("10.128.0.0/9")
#: kube-controller-manager's ``--node-cidr-mask-size`` for IPv4.
NODE_MASK = 24
_SUBNETS = 2 ** (NODE_MASK - CLUSTER_CIDR.prefixlen)


def pod_cidr(index: int) -> str | None:
    """The ``index``-th /24 of the cluster CIDR; None past its end."""
    if not 0 <= index < _SUBNETS:
        return None
    base = int(CLUSTER_CIDR.network_address) + (index << (32 - NODE_MASK))
    return f"{ipaddress.IPv4Address(base)}/{NODE_MASK}"


def _index_of(cidr: Any) -> int | None:
    try:
        net = ipaddress.ip_network(str(cidr), strict=False)
    except ValueError:
        return None
    if net.version != 4 or not net.subnet_of(CLUSTER_CIDR):  # type: ignore[arg-type]
        return None
    return (int(net.network_address) - int(CLUSTER_CIDR.network_address)) >> (32 - NODE_MASK)


class NodeIpamController:
    """Gives each node without a pod CIDR the lowest free one."""

    def __init__(self, store: SqliteStore, informers: InformerFactory) -> None:
        self.store = store
        self._used: dict[int, str] = {}  # subnet index → node
        self._due: dict[str, None] = {}
        informers.informer("Node").add_handler(self._on_node)

    def _on_node(self, change: Change[Any]) -> None:
        name = str(change.obj["metadata"]["name"])
        cidrs = (change.obj.get("spec") or {}).get("podCIDRs") or [
            (change.obj.get("spec") or {}).get("podCIDR")
        ]
        if change.type == EventType.DELETED:
            for index, owner in list(self._used.items()):
                if owner == name:
                    del self._used[index]
            self._due.pop(name, None)
            return
        indexes = [i for i in (_index_of(c) for c in cidrs if c) if i is not None]
        for index in indexes:
            self._used[index] = name
        if not any(cidrs):
            self._due[name] = None

    def sync(self) -> None:
        due, self._due = self._due, {}
        free = 0
        for name in due:
            node = self.store.get("Node", None, name)
            spec = (node or {}).get("spec") or {}
            if node is None or spec.get("podCIDR") or spec.get("podCIDRs"):
                continue
            while free in self._used:
                free += 1
            cidr = pod_cidr(free)
            if cidr is None:
                return  # the cluster CIDR is used up: nodes go without, as upstream's
            with contextlib.suppress(Conflict, NotFound):
                self.store.update({**node, "spec": {**spec, "podCIDR": cidr, "podCIDRs": [cidr]}})
                self._used[free] = name
