"""A neutral workload model for replay over time: pods with arrival and lifetime, nodes, gangs, queues.

Trace importers (:mod:`kubesched.sim.traces`) parse files into a :class:`Workload`;
:func:`to_manifests` turns it into Kubernetes/Volcano object dicts that a simulation can load. Times
are float seconds from the trace start; resource amounts are the scheduler's canonical integers
(milli-CPU, bytes, counts) from :func:`kubesched.api.quantity.resource_amount`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kubesched.api.annotations import (
    ANNOTATION_ARRIVAL,
    ANNOTATION_DURATION,
    ANNOTATION_GROUP,
    ANNOTATION_QUEUE,
    VOLCANO_API,
)
from kubesched.api.durations import format_duration
from kubesched.api.quantity import format_quantity

__all__ = [
    "BadRow",
    "GroupSpec",
    "Workload",
    "WorkloadNode",
    "WorkloadPod",
    "to_manifests",
]


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
