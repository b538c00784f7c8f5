"""What one pod takes from a node, and the arithmetic that adds it to or removes it from a node.

Every holder of per-node usage counts pods through this module: :class:`NodeInfo` (a dict of
requests per node) and :class:`NodeTable` (a row per node, see ``NodeTable.add_pod`` /
``remove_pod``). The cache, the nominated-pod checks, preemption dry runs and the batch session all
go through those two, so a pod's footprint — its requests per resource, its non-zero cpu/memory for
scoring, one unit of the ``pods`` resource and its host ports — is spelled out here only.

Units are the canonical integers of :mod:`kubesched.api.resources` (milli-CPU, bytes, counts)
everywhere; tolerances such as Volcano's belong to the functions that compare, not to the counts.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol

from kubesched.api.objects import HostPort
from kubesched.api.resources import ResourceList


class PodUsage(Protocol):
    """What a pod takes from its node; :class:`~kubesched.api.objects.Pod` is one."""

    @property
    def requests(self) -> Mapping[str, int]: ...
    @property
    def nonzero_cpu(self) -> int: ...
    @property
    def nonzero_memory(self) -> int: ...
    @property
    def host_ports(self) -> tuple[HostPort, ...]: ...


def add_requests(total: ResourceList, usage: PodUsage, sign: int) -> None:
    """Add (``sign`` 1) or take away (``sign`` -1) a pod's requests to a per-resource sum."""
    for name, value in usage.requests.items():
        total[name] = total.get(name, 0) + sign * value


def count_ports(used: dict[HostPort, int], usage: PodUsage, sign: int) -> None:
    """Count a pod's host ports in or out of a per-port count (a port leaves at zero users)."""
    for hp in usage.host_ports:
        n = used.get(hp, 0) + sign
        if n > 0:
            used[hp] = n
        else:
            used.pop(hp, None)
