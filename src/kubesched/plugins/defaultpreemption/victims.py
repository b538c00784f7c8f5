"""Which pods preemption would rather keep, and the per-node pod columns the fast dry run reads.

Importance (upstream ``MoreImportantPod``): higher priority first, then the pod that started earlier.
A pod's start time is ``status.startTime``; pods without one (the embedded cluster has no kubelet)
count from the moment they were bound (the ``PodScheduled`` condition), and a pod with neither counts
as started "now", i.e. after every other pod, as upstream treats pods that have not started.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from operator import attrgetter
from typing import Any

import numpy as np
from numpy.typing import NDArray

from kubesched.api.objects import Pod
from kubesched.api.pdb import PodDisruptionBudget
from kubesched.cache.node_info import NodeInfo
from kubesched.cache.node_table import NodeTable

NOT_STARTED = float("inf")

_GENERATION = attrgetter("generation")


#: uid → (the status mapping it was read from, start time): parsing timestamps is not free.
_start_cache: dict[str, tuple[object, float]] = {}


def _parse_time(value: Any) -> float | None:
    if not isinstance(value, str) or not value:
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def start_time(pod: Pod) -> float:
    """Seconds since the epoch the pod started, or :data:`NOT_STARTED`."""
    status = pod.raw.get("status") or {}
    hit = _start_cache.get(pod.uid)
    if hit is not None and hit[0] is status:
        return hit[1]
    if len(_start_cache) > 1_000_000:
        _start_cache.clear()
    value = _start_time(status)
    _start_cache[pod.uid] = (status, value)
    return value


def _start_time(status: Mapping[str, Any]) -> float:
    started = _parse_time(status.get("startTime"))
    if started is not None:
        return started
    for cond in status.get("conditions") or ():
        if cond.get("type") == "PodScheduled" and cond.get("status") == "True":
            bound = _parse_time(cond.get("lastTransitionTime"))
            if bound is not None:
                return bound
    return NOT_STARTED


def importance_key(pod: Pod) -> tuple[int, float]:
    """Sort key: most important first (higher priority, then earlier start)."""
    return (-pod.priority, start_time(pod))


def by_importance(pods: Sequence[Pod]) -> list[Pod]:
    """Pods most important first; a stable sort, so ties keep the node's pod order."""
    return sorted(pods, key=importance_key)


def pdb_violations(
    pods: Sequence[Pod], pdbs: Sequence[PodDisruptionBudget], allowed: Sequence[int]
) -> list[bool]:
    """Upstream ``filterPodsWithPDBViolation`` for one node: walking ``pods`` in order, each matching
    budget gives up one disruption (unless the pod is already in its ``disruptedPods``); a pod whose
    eviction takes any of its budgets below zero is *violating*."""
    if not pdbs:
        return [False] * len(pods)
    left = list(allowed)
    out: list[bool] = []
    for pod in pods:
        violated = False
        if pod.labels:
            for i, pdb in enumerate(pdbs):
                if not pdb.matches(pod.namespace, pod.labels) or pod.name in pdb.disrupted_pods:
                    continue
                left[i] -= 1
                if left[i] < 0:
                    violated = True
        out.append(violated)
    return out


class NodePodColumns:
    """Per node slot, its pods most important first, as padded NumPy rows.

    ``priority[slot, j]``, ``start[slot, j]`` and ``requests[slot, j, :]`` (over the NodeTable's
    resource columns, with 1 in the pods column) describe the node's j-th most important pod;
    ``count[slot]`` says how many there are. A row is rebuilt only when its node's generation
    changed since it was built, so a dry run over hundreds of nodes gathers its inputs with a few
    fancy-indexing operations.
    """

    def __init__(self) -> None:
        self._capacity = 0
        self._width = 0
        self._resources = 0
        self.generation = np.zeros(0, dtype=np.int64)
        self.count = np.zeros(0, dtype=np.int64)
        self.priority = np.zeros((0, 0), dtype=np.int64)
        self.start = np.zeros((0, 0), dtype=np.float64)
        self.requests = np.zeros((0, 0, 0), dtype=np.int64)
        self.pods: list[list[Pod]] = []
        #: NodeInfo per slot, valid while the table's node order array is ``_order``.
        self._info_at: list[NodeInfo | None] = []
        self._order: object = None

    def _reshape(self, capacity: int, width: int, resources: int) -> None:
        """Grow (never shrink) the arrays; a change of resource columns invalidates every row."""
        if resources != self._resources:
            self._capacity = self._width = 0
            self.generation = np.zeros(0, dtype=np.int64)
            self.count = np.zeros(0, dtype=np.int64)
            self.priority = np.zeros((0, 0), dtype=np.int64)
            self.start = np.zeros((0, 0), dtype=np.float64)
            self.requests = np.zeros((0, 0, resources), dtype=np.int64)
            self.pods = []
            self._resources = resources
        cap, wid = max(capacity, self._capacity), max(width, self._width)
        if (cap, wid) == (self._capacity, self._width):
            return
        generation = np.full(cap, -1, dtype=np.int64)
        generation[: self._capacity] = self.generation
        count = np.zeros(cap, dtype=np.int64)
        count[: self._capacity] = self.count
        priority = np.zeros((cap, wid), dtype=np.int64)
        priority[: self._capacity, : self._width] = self.priority
        start = np.full((cap, wid), NOT_STARTED, dtype=np.float64)
        start[: self._capacity, : self._width] = self.start
        requests = np.zeros((cap, wid, resources), dtype=np.int64)
        requests[: self._capacity, : self._width] = self.requests
        self.generation, self.count, self.priority, self.start, self.requests = (
            generation,
            count,
            priority,
            start,
            requests,
        )
        self.pods.extend([] for _ in range(cap - self._capacity))
        self._capacity, self._width = cap, wid

    def refresh(self, table: NodeTable, infos: Mapping[str, NodeInfo], slots: NDArray[np.int64]) -> None:
        """Make the rows of ``slots`` current."""
        names = table.names
        self._reshape(table.capacity, 1, table.num_resources)
        # Generations come from one counter for all nodes, so a row built for another node (its
        # slot reused) never matches either.
        if table.order is not self._order:  # nodes came or went: look the NodeInfos up again
            self._order = table.order
            self._info_at = [infos.get(n) if n else None for n in names]
        slot_list = slots.tolist()
        try:
            current = np.fromiter(
                map(_GENERATION, map(self._info_at.__getitem__, slot_list)), dtype=np.int64, count=len(slots)
            )
        except (AttributeError, IndexError):  # a slot written since: look everything up again
            self._info_at = [infos.get(n) if n else None for n in names]
            current = np.fromiter(
                (infos[names[s]].generation for s in slot_list), dtype=np.int64, count=len(slots)
            )
        stale = slots[current != self.generation[slots]].tolist()
        if not stale:
            return
        widest = max(len(infos[names[s]].pods) for s in stale)
        if widest > self._width:
            self._reshape(table.capacity, max(widest, 2 * self._width), table.num_resources)
        for s in stale:
            info = infos[names[s]]
            pods = by_importance(list(info.pods.values()))
            n = len(pods)
            self.pods[s] = pods
            self.generation[s] = info.generation
            self.count[s] = n
            self.priority[s, :n] = [p.priority for p in pods]
            self.start[s, :n] = [start_time(p) for p in pods]
            self.start[s, n:] = NOT_STARTED
            row = self.requests[s]
            row[n:] = 0
            for j, p in enumerate(pods):
                table.fill_pod_vector(p.requests, row[j])
