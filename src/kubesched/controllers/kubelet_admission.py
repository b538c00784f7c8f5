"""Pods that arrive already bound (``spec.nodeName`` in the input), as the node's kubelet sees them.

No scheduler looks at such a pod: the kubelet of the named node admits or rejects it. Admission
checks what the scheduler's Filter would (upstream ``lifecycle.predicateAdmitHandler`` over
``scheduler.AdmissionCheck``): the pod slot, every requested resource the node has, host ports.
A rejected pod is stored in phase Failed with the kubelet's reason (``OutOfcpu``, ``OutOfpods``,
``OutOf<extended resource>``, ``NodePorts``) and message, so it holds nothing on the node. A pod
naming a node that does not exist has no kubelet to run it: it stays Pending.

Only the first reason is reported, as the kubelet does. The checks run in the order of upstream
``fitsRequest`` (pods, cpu, memory, ephemeral-storage, then extended resources by name).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from kubesched.api.objects import HostPort, Node, Pod

_REASONS = {"cpu": "OutOfcpu", "memory": "OutOfmemory", "ephemeral-storage": "OutOfephemeral-storage"}
_FIRST = ("cpu", "memory", "ephemeral-storage")

#: Output status of a pod the kubelet rejected (its phase).
FAILED = "Failed"
#: Output status of a pod bound in the input and admitted by its kubelet.
BOUND = "Bound"


@dataclass(frozen=True, slots=True)
class Rejection:
    reason: str
    message: str


def _ports_conflict(a: HostPort, b: HostPort) -> bool:
    if a.port != b.port or a.protocol != b.protocol:
        return False
    return a.ip == b.ip or "0.0.0.0" in (a.ip, b.ip)


def admission_check(pod: Pod, node: Node, others: Iterable[Pod]) -> Rejection | None:
    """Why the kubelet of ``node`` would reject ``pod`` beside the admitted ``others``; None if it
    admits it."""
    running = [p for p in others if not p.terminated]
    allocatable = node.allocatable
    max_pods = allocatable.get("pods", 0)
    if len(running) + 1 > max_pods:
        return Rejection(
            "OutOfpods",
            "Node didn't have enough resource: pods, requested: 1, "
            f"used: {len(running)}, capacity: {max_pods}",
        )
    extended = sorted(n for n in pod.requests if n not in _FIRST and n != "pods")
    for name in (*_FIRST, *extended):
        requested = pod.requests.get(name, 0)
        if requested <= 0:
            continue
        if name not in _FIRST and name not in allocatable:
            continue  # the kubelet drops requests of extended resources the node does not know
        used = sum(p.requests.get(name, 0) for p in running)
        capacity = allocatable.get(name, 0)
        if used + requested > capacity:
            return Rejection(
                _REASONS.get(name, f"OutOf{name}"),
                f"Node didn't have enough resource: {name}, requested: {requested}, used: {used}, "
                f"capacity: {capacity}",
            )
    taken = [hp for p in running for hp in p.host_ports]
    if any(_ports_conflict(want, have) for want in pod.host_ports for have in taken):
        return Rejection(
            "NodePorts",
            "Predicate NodePorts failed: node(s) didn't have free ports for the requested pod ports",
        )
    return None


def rejected(obj: dict[str, Any], rejection: Rejection) -> dict[str, Any]:
    """The pod as the kubelet leaves it after refusing it: phase Failed, with reason and message."""
    status = dict(obj.get("status") or {})
    status.update(phase=FAILED, reason=rejection.reason, message=rejection.message)
    return {**obj, "status": status}
