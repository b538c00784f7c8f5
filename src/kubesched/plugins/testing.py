"""Builders and runners shared by the in-tree plugin tests (each plugin's tests live beside it).

Objects are built as Kubernetes JSON and parsed with ``Node.from_dict`` / ``Pod.from_dict``, so a
test exercises the same request rules (init containers, sidecars, overhead, pod-level resources) as
the scheduler does. :func:`build_snapshot` goes through the real ``SchedulerCache`` and ``Snapshot``,
and the ``run_*`` helpers call a plugin the way the framework does, returning per-node answers keyed
by node name so that tables can be written without knowing table slots.

This module is imported only by tests; it does not depend on pytest.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from kubesched.api.objects import Node, Pod
from kubesched.cache.cache import SchedulerCache, Snapshot
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.handle import Handle
from kubesched.framework.interfaces import FilterPlugin, PreFilterPlugin, ScoreNormalizer, ScorePlugin
from kubesched.framework.status import Code, Status
from kubesched.framework.types import FilterResult
from kubesched.store.base import ClusterStore
from kubesched.store.memory import MemoryStore
from kubesched.store.parsers import informer_factory
from kubesched.store.ports import StorePorts

Quantity = str | int
ResourceMap = Mapping[str, Quantity]

_uids = itertools.count(1)


def _resources(values: ResourceMap | None) -> dict[str, Quantity]:
    return dict(values) if values else {}


def container(
    requests: ResourceMap | None = None,
    *,
    name: str = "c",
    limits: ResourceMap | None = None,
    restart_always: bool = False,
) -> dict[str, Any]:
    """One container (or init container) spec; ``restart_always`` makes an init container a sidecar."""
    out: dict[str, Any] = {"name": name, "image": "registry.k8s.io/pause:3.10"}
    resources: dict[str, Any] = {}
    if requests is not None:
        resources["requests"] = _resources(requests)
    if limits is not None:
        resources["limits"] = _resources(limits)
    if resources:
        out["resources"] = resources
    if restart_always:
        out["restartPolicy"] = "Always"
    return out


def pod_dict(
    name: str = "pod",
    *,
    namespace: str = "default",
    uid: str | None = None,
    containers: Sequence[ResourceMap | None] = (None,),
    init_containers: Sequence[dict[str, Any]] = (),
    overhead: ResourceMap | None = None,
    pod_requests: ResourceMap | None = None,
    tolerations: Sequence[Mapping[str, Any]] = (),
    node_name: str = "",
    priority: int | None = None,
    scheduling_gates: Sequence[str] = (),
) -> dict[str, Any]:
    """A Pod manifest. Each entry of ``containers`` is one container's requests (``None``: no
    resources at all, so the scoring defaults 100m / 200Mi apply to it)."""
    spec: dict[str, Any] = {
        "containers": [container(req, name=f"c{i}") for i, req in enumerate(containers)],
    }
    if init_containers:
        spec["initContainers"] = [dict(c) for c in init_containers]
    if overhead is not None:
        spec["overhead"] = _resources(overhead)
    if pod_requests is not None:
        spec["resources"] = {"requests": _resources(pod_requests)}
    if tolerations:
        spec["tolerations"] = [dict(t) for t in tolerations]
    if node_name:
        spec["nodeName"] = node_name
    if priority is not None:
        spec["priority"] = priority
    if scheduling_gates:
        spec["schedulingGates"] = [{"name": g} for g in scheduling_gates]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "uid": uid or f"uid-{name}-{next(_uids)}"},
        "spec": spec,
    }


def make_pod(name: str = "pod", **kwargs: Any) -> Pod:
    """:func:`pod_dict` parsed into a :class:`Pod`."""
    return Pod.from_dict(pod_dict(name, **kwargs))


def node_dict(
    name: str,
    allocatable: ResourceMap | None = None,
    *,
    taints: Sequence[Mapping[str, Any]] = (),
    unschedulable: bool = False,
    labels: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """A Node manifest; ``allocatable`` is reported as both capacity and allocatable."""
    spec: dict[str, Any] = {}
    if taints:
        spec["taints"] = [dict(t) for t in taints]
    if unschedulable:
        spec["unschedulable"] = True
    obj: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": dict(labels or {})},
        "spec": spec,
    }
    if allocatable is not None:
        obj["status"] = {"capacity": _resources(allocatable), "allocatable": _resources(allocatable)}
    return obj


def make_node(name: str, allocatable: ResourceMap | None = None, **kwargs: Any) -> Node:
    """:func:`node_dict` parsed into a :class:`Node`."""
    return Node.from_dict(node_dict(name, allocatable, **kwargs))


def build_snapshot(nodes: Sequence[Node], pods: Sequence[Pod] = ()) -> Snapshot:
    """A snapshot of ``nodes`` with ``pods`` bound to them (each pod names its node)."""
    cache = SchedulerCache()
    for node in nodes:
        cache.add_node(node)
    for pod in pods:
        if not pod.node_name:
            raise ValueError(f"pod {pod.key} is not bound to a node")
        cache.add_pod(pod)
    snapshot = Snapshot()
    cache.update_snapshot(snapshot)
    return snapshot


def store_handle(
    store: ClusterStore | None = None,
    snapshot: Snapshot | None = None,
    now: Callable[[], float] = lambda: 0.0,
) -> Handle:
    """A plugin handle over ``store`` (a fresh embedded store when None): informers that list it now
    and the store ports. After writing to the store, a test applies the changes to the listers with
    ``handle.informers.pump()``, as the driver does between scheduling steps."""
    store = store if store is not None else MemoryStore()
    return Handle(informer_factory(store), StorePorts(store).ports(), snapshot or Snapshot(), now)


def node_statuses(result: FilterResult, snapshot: Snapshot) -> dict[str, Status | None]:
    """Per node name: ``None`` when the node passed, else the status upstream's per-node Filter
    would return (all reasons in order; unresolvable if any reason for that node is)."""
    table = snapshot.table
    out: dict[str, Status | None] = {}
    for slot in table.order.tolist():
        name = table.names[slot]
        covering = [f for f in result.failures if bool(f.nodes[slot])]
        if bool(result.passed[slot]):
            if covering:
                raise AssertionError(f"node {name} passed but has failure reasons {covering}")
            out[name] = None
            continue
        if not covering:
            raise AssertionError(f"node {name} failed without a reason")
        unresolvable = any(f.unresolvable for f in covering)
        code = Code.UNSCHEDULABLE_AND_UNRESOLVABLE if unresolvable else Code.UNSCHEDULABLE
        out[name] = Status(code, [f.reason for f in covering])
    return out


def run_filter(
    plugin: FilterPlugin, pod: Pod, snapshot: Snapshot, state: CycleState | None = None
) -> dict[str, Status | None]:
    """PreFilter (when the plugin has one, and it must succeed) then Filter over every node."""
    state = state if state is not None else CycleState()
    if isinstance(plugin, PreFilterPlugin):
        _, status = plugin.pre_filter(state, pod, snapshot)
        if status is not None and not status.ok:
            raise AssertionError(f"pre_filter failed: {status}")
    return node_statuses(plugin.filter_nodes(state, pod, snapshot.table), snapshot)


def run_score(
    plugin: ScorePlugin, pod: Pod, snapshot: Snapshot, state: CycleState | None = None
) -> dict[str, int]:
    """Score every node, then NormalizeScore when the plugin has it; scores keyed by node name."""
    state = state if state is not None else CycleState()
    table = snapshot.table
    slots = np.asarray(table.order, dtype=np.int64)
    scores = np.asarray(plugin.score_nodes(state, pod, table, slots), dtype=np.int64).copy()
    if isinstance(plugin, ScoreNormalizer):
        plugin.normalize_scores(state, pod, scores)
    return {table.names[int(slot)]: int(score) for slot, score in zip(slots, scores, strict=True)}
