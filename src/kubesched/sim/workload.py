"""A neutral workload model for replay over time: pods with arrival and lifetime, nodes, gangs, queues.

Trace importers (:mod:`kubesched.sim.traces`) parse files into a :class:`Workload`;
:func:`to_manifests` turns it into Kubernetes/Volcano object dicts that a simulation can load. Times
are float seconds from the trace start; resource amounts are the scheduler's canonical integers
(milli-CPU, bytes, counts) from :func:`kubesched.api.quantity.resource_amount`.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, Final

from kubesched.api.quantity import format_quantity
from kubesched.errors import InputError

__all__ = [
    "ANNOTATION_ARRIVAL",
    "ANNOTATION_DURATION",
    "ANNOTATION_GROUP",
    "ANNOTATION_QUEUE",
    "BadRow",
    "GroupSpec",
    "Workload",
    "WorkloadNode",
    "WorkloadPod",
    "format_duration",
    "parse_duration",
    "to_manifests",
]

#: Offset of the pod's arrival from the start of the workload (a duration string).
ANNOTATION_ARRIVAL: Final = "kubesched.io/arrival"
#: How long the pod runs once bound; absent means it never finishes.
ANNOTATION_DURATION: Final = "kubesched.io/duration"
#: The PodGroup a pod belongs to (upstream coscheduling / Volcano both read this key).
ANNOTATION_GROUP: Final = "scheduling.k8s.io/group-name"
#: The Volcano queue of a pod that has no PodGroup of its own.
ANNOTATION_QUEUE: Final = "scheduling.volcano.sh/queue-name"

VOLCANO_API: Final = "scheduling.volcano.sh/v1beta1"

_UNITS: Final[dict[str, float]] = {
    "ns": 1e-9,
    "us": 1e-6,
    "µs": 1e-6,  # U+00B5 micro sign
    "μs": 1e-6,  # U+03BC greek mu
    "ms": 1e-3,
    "s": 1.0,
    "m": 60.0,
    "h": 3600.0,
}
_GO_PART: Final = re.compile(r"([0-9]*(?:\.[0-9]*)?)(ns|us|µs|μs|ms|s|m|h)")
_PLAIN: Final = re.compile(r"[0-9]+(?:\.[0-9]*)?|\.[0-9]+")
_MAX_CHARS: Final = 1000
#: Go's ``time.Duration`` is int64 nanoseconds: about 292 years. Longer arrivals and lifetimes are
#: refused, which also keeps virtual timestamps inside what a timestamp can hold.
MAX_DURATION: Final = (2**63 - 1) / 1e9


def parse_duration(text: str | int | float) -> float:
    """Seconds in ``text``: a Go duration (``90s``, ``1h30m``, ``250ms``) or plain seconds (``1.5``).

    Negative, non-finite or malformed values raise :class:`InputError`.
    """
    if isinstance(text, bool):
        raise InputError(f"invalid duration {text!r}")
    if isinstance(text, int | float):
        value = float(text)
        if not math.isfinite(value) or value < 0:
            raise InputError(f"invalid duration {text!r}: must be a finite, non-negative number of seconds")
        if value > MAX_DURATION:
            raise InputError(f"invalid duration {text!r}: longer than Go's maximum duration (2562047h47m16s)")
        return value
    if not isinstance(text, str):
        raise InputError(f"invalid duration {text!r}: must be a string or a number")
    s = text.strip()
    if not s or len(s) > _MAX_CHARS:
        raise InputError(f"invalid duration {text[:_MAX_CHARS]!r}")
    if s.startswith("+"):
        s = s[1:]
    if _PLAIN.fullmatch(s):
        return parse_duration(float(s))
    if s == "0":
        return 0.0
    total = 0.0
    pos = 0
    while pos < len(s):
        m = _GO_PART.match(s, pos)
        if m is None or m.group(1) in ("", "."):
            raise InputError(
                f"invalid duration {text!r}: use seconds (1.5) or Go form like 90s, 2h, 1h30m, 250ms"
            )
        total += float(m.group(1)) * _UNITS[m.group(2)]
        pos = m.end()
    if not math.isfinite(total) or total > MAX_DURATION:
        raise InputError(f"invalid duration {text!r}: longer than Go's maximum duration (2562047h47m16s)")
    return total


def format_duration(seconds: float) -> str:
    """``seconds`` as a duration string :func:`parse_duration` reads back exactly (``90s``, ``0.25s``)."""
    if not math.isfinite(seconds) or seconds < 0:
        raise ValueError(f"cannot format duration {seconds!r}")
    if seconds == int(seconds):
        return f"{int(seconds)}s"
    return f"{format(Decimal(repr(seconds)), 'f')}s"


@dataclass(frozen=True)
class BadRow:
    """A trace row that could not be read and was skipped."""

    source: str
    line: int
    message: str

    def __str__(self) -> str:
        return f"{self.source}: line {self.line}: {self.message}"


@dataclass
class WorkloadPod:
    name: str
    namespace: str = "default"
    arrival: float = 0.0
    duration: float | None = None
    requests: dict[str, int] = field(default_factory=dict)
    priority: int = 0
    scheduler_name: str | None = None
    group: str | None = None
    group_min_member: int | None = None
    queue: str | None = None
    labels: dict[str, str] = field(default_factory=dict)
    annotations: dict[str, str] = field(default_factory=dict)


@dataclass
class WorkloadNode:
    name: str
    allocatable: dict[str, int] = field(default_factory=dict)
    labels: dict[str, str] = field(default_factory=dict)


@dataclass
class GroupSpec:
    """A gang: at least ``min_member`` pods must be placed together."""

    name: str
    min_member: int
    queue: str | None = None
    namespace: str = "default"


@dataclass
class Workload:
    pods: list[WorkloadPod] = field(default_factory=list)
    nodes: list[WorkloadNode] = field(default_factory=list)
    groups: dict[str, GroupSpec] = field(default_factory=dict)
    queues: list[str] = field(default_factory=list)
    bad_rows: list[BadRow] = field(default_factory=list)

    def add_queue(self, name: str | None) -> None:
        if name and name not in self.queues:
            self.queues.append(name)

    def merge(self, other: Workload) -> Workload:
        """Both workloads in one (e.g. an Alibaba node list and a pod list); times are kept as they are."""
        merged = Workload(
            pods=[*self.pods, *other.pods],
            nodes=[*self.nodes, *other.nodes],
            groups={**self.groups, **other.groups},
            queues=list(self.queues),
            bad_rows=[*self.bad_rows, *other.bad_rows],
        )
        for q in other.queues:
            merged.add_queue(q)
        return merged


def _resources(amounts: dict[str, int]) -> dict[str, str]:
    return {name: format_quantity(name, amount) for name, amount in amounts.items()}


def to_manifests(workload: Workload) -> list[dict[str, Any]]:
    """Kubernetes/Volcano object dicts: Queues, Nodes, PodGroups, then Pods in arrival order.

    Pods carry ``kubesched.io/arrival`` and (when they finish) ``kubesched.io/duration`` annotations,
    and ``scheduling.k8s.io/group-name`` when they belong to a gang.
    """
    out: list[dict[str, Any]] = []
    for queue in workload.queues:
        out.append(
            {"apiVersion": VOLCANO_API, "kind": "Queue", "metadata": {"name": queue}, "spec": {"weight": 1}}
        )
    for node in workload.nodes:
        res = _resources(node.allocatable)
        node_meta: dict[str, Any] = {"name": node.name}
        if node.labels:
            node_meta["labels"] = dict(node.labels)
        out.append(
            {
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": node_meta,
                "status": {"capacity": dict(res), "allocatable": res},
            }
        )
    for group in workload.groups.values():
        spec: dict[str, Any] = {"minMember": group.min_member}
        if group.queue:
            spec["queue"] = group.queue
        out.append(
            {
                "apiVersion": VOLCANO_API,
                "kind": "PodGroup",
                "metadata": {"name": group.name, "namespace": group.namespace},
                "spec": spec,
            }
        )
    for pod in sorted(workload.pods, key=lambda p: p.arrival):
        annotations = dict(pod.annotations)
        annotations[ANNOTATION_ARRIVAL] = format_duration(pod.arrival)
        if pod.duration is not None:
            annotations[ANNOTATION_DURATION] = format_duration(pod.duration)
        if pod.group:
            annotations[ANNOTATION_GROUP] = pod.group
        elif pod.queue:
            annotations[ANNOTATION_QUEUE] = pod.queue
        pod_meta: dict[str, Any] = {"name": pod.name, "namespace": pod.namespace, "annotations": annotations}
        if pod.labels:
            pod_meta["labels"] = dict(pod.labels)
        pod_spec: dict[str, Any] = {
            "containers": [
                {
                    "name": "main",
                    "image": "registry.k8s.io/pause:3.9",
                    "resources": {"requests": _resources(pod.requests)},
                }
            ]
        }
        if pod.priority:
            pod_spec["priority"] = pod.priority
        if pod.scheduler_name:
            pod_spec["schedulerName"] = pod.scheduler_name
        out.append({"apiVersion": "v1", "kind": "Pod", "metadata": pod_meta, "spec": pod_spec})
    return out
