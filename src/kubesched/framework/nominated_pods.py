"""Nominated pods as the framework reads them (upstream ``framework.PodNominator``).

Preemption evicts victims on a node and *nominates* the preemptor there (``status.nominatedNodeName``)
instead of binding it at once. Filter then counts the preemptor on that node for every pod of lower
or equal priority. The scheduling queue owns the nominations (:mod:`kubesched.queue.nominator`) and
hands them to each profile's framework, which sees them through :class:`PodNominator` and keeps them
as NumPy columns (:class:`NominatedColumns`).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Protocol

import numpy as np
from numpy.typing import NDArray

from kubesched.api.objects import Pod
from kubesched.cache.node_table import NodeTable

IntArray = NDArray[np.int64]
BoolArray = NDArray[np.bool_]


class NominationListener(Protocol):
    def nominated(self, pod: Pod, node: str) -> None: ...
    def unnominated(self, uid: str) -> None: ...


def status_nominated_node(pod: Pod) -> str:
    """``status.nominatedNodeName`` of a pod as the API object says ("" when unset)."""
    status = pod.raw.get("status") or {}
    value = status.get("nominatedNodeName") or ""
    return value if isinstance(value, str) else ""


class PodNominator(Protocol):
    """What the framework reads of the nominations, and how it follows them."""

    def subscribe(self, listener: NominationListener) -> None: ...

    def __len__(self) -> int: ...

    def pods_for_node(self, node: str) -> list[Pod]: ...

    def items(self) -> Iterator[tuple[str, dict[str, Pod]]]: ...

    def node_of(self, uid: str) -> str: ...

    def delete(self, uid: str) -> None: ...


class NominatedColumns:
    """The nominated pods as NumPy columns, kept current through :meth:`Nominator.subscribe`, so that
    "which nodes have nominated pods of priority >= p, and what do they request" is a few array
    operations per cycle however many pods are nominated (a preemption wave nominates many)."""

    def __init__(self) -> None:
        self._row_of: dict[str, int] = {}
        self._free: list[int] = []
        self._pods: list[Pod | None] = []
        self._nodes: list[str] = []
        self._capacity = 0
        self._resources = 0
        self.active = np.zeros(0, dtype=np.bool_)
        self.priority = np.zeros(0, dtype=np.int64)
        self.ports = np.zeros(0, dtype=np.bool_)
        self.ready = np.zeros(0, dtype=np.bool_)
        self.requests = np.zeros((0, 0), dtype=np.int64)
        self.nonzero = np.zeros((0, 2), dtype=np.int64)
        #: Node slot per row, resolved with ``ready``; valid while the table's node order array is
        #: the one it was resolved against (the cache replaces it whenever nodes come or go).
        self.slot = np.zeros(0, dtype=np.int64)
        self._order: object = None
        #: Bumped on every change; with the pod and the table it keys the last query's answer.
        self._version = 0
        self._last: tuple[object, tuple[IntArray, IntArray, IntArray, bool]] | None = None
        self._last_order: object = None

    def _grow(self) -> None:
        cap = max(16, 2 * self._capacity)
        extra = cap - self._capacity

        def pad(a: NDArray[np.generic]) -> NDArray[np.generic]:
            return np.concatenate([a, np.zeros((extra, *a.shape[1:]), dtype=a.dtype)])

        self.active = pad(self.active)  # type: ignore[assignment]
        self.priority = pad(self.priority)  # type: ignore[assignment]
        self.ports = pad(self.ports)  # type: ignore[assignment]
        self.ready = pad(self.ready)  # type: ignore[assignment]
        self.requests = pad(self.requests)  # type: ignore[assignment]
        self.nonzero = pad(self.nonzero)  # type: ignore[assignment]
        self.slot = pad(self.slot)  # type: ignore[assignment]
        self._pods.extend([None] * extra)
        self._nodes.extend([""] * extra)
        self._free.extend(range(cap - 1, self._capacity - 1, -1))
        self._capacity = cap

    def nominated(self, pod: Pod, node: str) -> None:
        self._version += 1
        row = self._row_of.get(pod.uid)
        if row is None:
            if not self._free:
                self._grow()
            row = self._free.pop()
            self._row_of[pod.uid] = row
        self._pods[row] = pod
        self._nodes[row] = node
        self.active[row] = True
        self.priority[row] = pod.priority
        self.ports[row] = bool(pod.host_ports)
        self.nonzero[row] = (pod.nonzero_cpu, pod.nonzero_memory)
        self.ready[row] = False

    def unnominated(self, uid: str) -> None:
        self._version += 1
        row = self._row_of.pop(uid, None)
        if row is None:
            return
        self.active[row] = False
        self._pods[row] = None
        self._nodes[row] = ""
        self._free.append(row)

    def _vectorize(self, table: NodeTable) -> None:
        """Fill the request rows of new nominations (all rows, when the table gained columns)."""
        if table.num_resources != self._resources or table.order is not self._order:
            self._resources = table.num_resources
            self._order = table.order
            self.requests = np.zeros((self._capacity, self._resources), dtype=np.int64)
            self.ready[:] = False
        for row in np.flatnonzero(self.active & ~self.ready).tolist():
            pod = self._pods[row]
            assert pod is not None
            vec = table.pod_vector(pod.requests)
            if table.num_resources != self._resources:  # pod_vector added a column: start over
                self._vectorize(table)
                return
            self.requests[row] = vec
            self.slot[row] = table.slot_of.get(self._nodes[row], -1)
            self.ready[row] = True

    def query(
        self, pod: Pod, table: NodeTable, candidates: BoolArray | None = None
    ) -> tuple[IntArray, IntArray, IntArray, bool]:
        """For the nodes with nominated pods that count for ``pod`` (priority >= its own, not itself):
        (their slots in ascending order, summed requests over the table's columns with the pod count,
        summed non-zero cpu/memory, whether any of those pods binds a host port)."""
        # The order array is replaced whenever nodes come or go; holding it keeps its id unique.
        key = (pod.uid, pod.priority, self._version, id(table), table.num_resources, id(table.order))
        if self._last is None or self._last[0] != key:
            self._last = (key, self._aggregate(pod, table))
            self._last_order = table.order
        slots, req, nonzero, ports = self._last[1]
        if candidates is not None and len(slots):
            keep = candidates[slots]
            if not keep.all():
                return slots[keep], req[keep], nonzero[keep], ports
        return slots, req, nonzero, ports

    def _aggregate(self, pod: Pod, table: NodeTable) -> tuple[IntArray, IntArray, IntArray, bool]:
        rows = (
            np.flatnonzero(self.active & (self.priority >= pod.priority)) if self._row_of else self.slot[:0]
        )
        own = self._row_of.get(pod.uid)
        if own is not None:
            rows = rows[rows != own]
        if len(rows):
            self._vectorize(table)
            slots = self.slot[rows]
            keep = slots >= 0
            rows, slots = rows[keep], slots[keep]
        if not len(rows):
            empty = np.zeros(0, dtype=np.int64)
            return (
                empty,
                np.zeros((0, table.num_resources), dtype=np.int64),
                np.zeros((0, 2), dtype=np.int64),
                False,
            )
        # Sum per node slot without sorting: slots are small integers.
        cap = int(slots.max()) + 1
        unique = np.flatnonzero(np.bincount(slots, minlength=cap))
        req = np.zeros((cap, self._resources), dtype=np.int64)
        nonzero = np.zeros((cap, 2), dtype=np.int64)
        if len(unique) == len(slots):  # one nominated pod per node: no summing needed
            req[slots] = self.requests[rows]
            nonzero[slots] = self.nonzero[rows]
        else:
            np.add.at(req, slots, self.requests[rows])
            np.add.at(nonzero, slots, self.nonzero[rows])
        return unique, req[unique], nonzero[unique], bool(self.ports[rows].any())
