"""Cluster IPs and node ports of Services, as kube-apiserver's service storage allocates them
(upstream ``pkg/registry/core/service/ipallocator`` and ``portallocator``).

What is taken is read from the Services the store holds: an address or a port is allocated while a
stored Service names it, so nothing is kept beside the Services and nothing leaks when one goes.
The service CIDRs are the ``ServiceCIDR`` objects (``networking.k8s.io/v1``; the one named
``kubernetes`` is what ``--service-cluster-ip-range`` made), or :data:`DEFAULT_SERVICE_CIDR` when
the store has none.

A dynamic allocation picks at random, from the upper part of the range first: upstream keeps the
lower part (16 addresses of a /24; ``min(max(16, size/16), 256)``) for addresses that users ask for
by value, and the first address of the first CIDR for the ``kubernetes`` Service.
"""

from __future__ import annotations

import ipaddress
import random
from collections.abc import Iterable, Mapping
from typing import Any

from kubesched.registry.errors import ApiError
from kubesched.store.base import ClusterStore

IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network

#: kube-apiserver's default ``--service-cluster-ip-range``.
DEFAULT_SERVICE_CIDR = "10.0.0.0/24"
#: kube-apiserver's default ``--service-node-port-range`` (both ends included).
NODE_PORT_RANGE = (30000, 32767)
#: The ServiceCIDR the API server makes from its flag.
DEFAULT_SERVICE_CIDR_NAME = "kubernetes"


def service_cidrs(store: ClusterStore | None) -> list[IPNetwork]:
    """The service CIDRs of the cluster, the API server's own first."""
    objs = sorted(
        store.list("ServiceCIDR") if store is not None else [],
        key=lambda o: ((o.get("metadata") or {}).get("name") != DEFAULT_SERVICE_CIDR_NAME, _name(o)),
    )
    out: list[IPNetwork] = []
    for obj in objs:
        if (obj.get("metadata") or {}).get("deletionTimestamp"):
            continue
        for text in (obj.get("spec") or {}).get("cidrs") or []:
            try:
                out.append(ipaddress.ip_network(str(text), strict=False))
            except ValueError:
                continue
    return out or [ipaddress.ip_network(DEFAULT_SERVICE_CIDR)]


def first_address(cidr: IPNetwork) -> str:
    """The first usable address of a CIDR (the ``kubernetes`` Service's)."""
    return str(cidr.network_address + 1)


def _name(obj: Mapping[str, Any]) -> str:
    return str((obj.get("metadata") or {}).get("name", ""))


def _usable(cidr: IPNetwork) -> tuple[int, int]:
    """The first usable address of ``cidr`` as an integer, and how many there are: the network
    address is never handed out, nor an IPv4 broadcast address."""
    size = cidr.num_addresses
    first = int(cidr.network_address) + 1
    count = size - 2 if cidr.version == 4 else size - 1
    return first, max(0, min(count, 2**62))


def _offset(cidr: IPNetwork) -> int:
    """The size of the band kept for addresses asked for by value (upstream ``calculateRangeOffset``)."""
    size = cidr.num_addresses
    if size <= 16:
        return 0
    return int(min(max(16, size // 16), 256))


def taken_ips(store: ClusterStore, skip_uid: str | None = None) -> set[str]:
    """Every cluster IP a stored Service holds (``skip_uid``'s own left out)."""
    out: set[str] = set()
    for svc in store.list("Service"):
        if skip_uid is not None and (svc.get("metadata") or {}).get("uid") == skip_uid:
            continue
        spec = svc.get("spec") or {}
        for ip in spec.get("clusterIPs") or [spec.get("clusterIP")]:
            if isinstance(ip, str) and ip and ip != "None":
                out.add(_canonical(ip))
    return out


def _canonical(ip: str) -> str:
    try:
        return str(ipaddress.ip_address(ip))
    except ValueError:
        return ip


def check_ip(ip: str, cidrs: Iterable[IPNetwork], taken: set[str]) -> str | None:
    """Why ``ip`` cannot be allocated (upstream's words), or None."""
    try:
        addr = ipaddress.ip_address(ip)
    except ValueError:
        return "must be a valid IP address"
    same_family = [c for c in cidrs if c.version == addr.version]
    for cidr in same_family:
        first, count = _usable(cidr)
        if first <= int(addr) < first + count:
            if str(addr) in taken:
                return "provided IP is already allocated"
            return None
    shown = ", ".join(str(c) for c in same_family) or "<none>"
    return f"provided IP is not in the valid range. The range of valid IPs is {shown}"


def allocate_ip(cidrs: Iterable[IPNetwork], family: int, taken: set[str]) -> str:
    """A free address of ``family`` (4 or 6) from the CIDRs, upper band first; a 500 when all are
    taken, as upstream's allocator answers."""
    for cidr in cidrs:
        if cidr.version != family:
            continue
        first, count = _usable(cidr)
        offset = _offset(cidr)
        for low, high in ((offset, count), (0, min(offset, count))):
            found = _random_free(first, low, high, cidr.version, taken)
            if found is not None:
                return found
    raise ApiError(
        500,
        "InternalError",
        "Internal error occurred: failed to allocate a serviceIP: range is full",
        details={"causes": [{"message": "failed to allocate a serviceIP: range is full"}]},
    )


def _random_free(first: int, low: int, high: int, version: int, taken: set[str]) -> str | None:
    if high <= low:
        return None
    make = ipaddress.IPv4Address if version == 4 else ipaddress.IPv6Address
    # A few random tries find a free address in any range that is not nearly full; then a walk
    # from a random start, as upstream's bitmap scans, finds the last ones.
    for _ in range(32):
        candidate = str(make(first + random.randrange(low, high)))
        if candidate not in taken:
            return candidate
    start = random.randrange(low, high)
    span = high - low
    for step in range(min(span, len(taken) + 1)):
        candidate = str(make(first + low + (start - low + step) % span))
        if candidate not in taken:
            return candidate
    return None


def taken_node_ports(store: ClusterStore, skip_uid: str | None = None) -> set[int]:
    """Every node port a stored Service holds (``skip_uid``'s own left out); upstream's allocator
    keeps one number per port, whatever its protocol."""
    out: set[int] = set()
    for svc in store.list("Service"):
        if skip_uid is not None and (svc.get("metadata") or {}).get("uid") == skip_uid:
            continue
        spec = svc.get("spec") or {}
        for port in spec.get("ports") or []:
            if isinstance(port, dict) and isinstance(port.get("nodePort"), int) and port["nodePort"]:
                out.add(port["nodePort"])
        hc = spec.get("healthCheckNodePort")
        if isinstance(hc, int) and hc:
            out.add(hc)
    return out


def check_node_port(port: int, taken: set[int]) -> str | None:
    low, high = NODE_PORT_RANGE
    if not low <= port <= high:
        return f"provided port is not in the valid range. The range of valid ports is {low}-{high}"
    if port in taken:
        return "provided port is already allocated"
    return None


def allocate_node_port(taken: set[int]) -> int:
    low, high = NODE_PORT_RANGE
    size = high - low + 1
    offset = int(min(max(16, size // 32), 128))
    for band_low, band_high in ((offset, size), (0, offset)):
        free = [low + i for i in range(band_low, band_high) if low + i not in taken]
        if free:
            return random.choice(free)
    raise ApiError(
        500,
        "InternalError",
        "Internal error occurred: failed to allocate a nodePort: range is full",
        details={"causes": [{"message": "failed to allocate a nodePort: range is full"}]},
    )
