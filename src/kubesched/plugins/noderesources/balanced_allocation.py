"""NodeResourcesBalancedAllocation: favour nodes whose resources would be used evenly.

For every configured resource the fraction ``(node requested + pod request) / allocatable`` (capped
at 1) is taken over the *actual* requests (upstream ``useRequested``: no 100m / 200Mi defaults), and
the score is ``(1 - std) * 100`` truncated, where ``std`` is the standard deviation of the fractions.
As upstream: a resource the node does not have (allocatable 0) is left out; an extended resource the
pod does not request is left out; with exactly two fractions ``std = |f1 - f2| / 2``; with fewer than
two it is 0. Pods requesting none of the configured resources (best effort) skip this plugin.

The float arithmetic follows the Go code operation by operation, so scores agree to the last digit.
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass
from typing import Any, ClassVar, Final

import numpy as np
from numpy.typing import NDArray

from kubesched.api.objects import Pod
from kubesched.api.resources import (
    CPU,
    EPHEMERAL_STORAGE,
    INT64_MAX,
    MEMORY,
    is_extended_resource,
    is_hugepages,
)
from kubesched.cache.node_table import CPU_COL, EPHEMERAL_COL, MEMORY_COL, NodeTable
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.interfaces import SignFragment
from kubesched.framework.plugin_args import NodeResourcesBalancedAllocationArgs
from kubesched.framework.status import Code, Status
from kubesched.framework.types import MAX_NODE_SCORE, IntArray
from kubesched.plugins.helper.int64 import saturating_add
from kubesched.plugins.helper.sign import frozen
from kubesched.plugins.noderesources.fit import FEW_ROWS

PRE_SCORE_KEY: Final = "PreScoreNodeResourcesBalancedAllocation"
_FIXED_COLUMNS: Final = {CPU: CPU_COL, MEMORY: MEMORY_COL, EPHEMERAL_STORAGE: EPHEMERAL_COL}

FloatArray = NDArray[np.float64]


def is_scalar_resource(name: str) -> bool:
    """Upstream ``IsScalarResourceName``: extended, hugepages, prefixed native or attachable volumes."""
    return (
        is_extended_resource(name)
        or is_hugepages(name)
        or "kubernetes.io/" in name
        or name.startswith("attachable-volumes-")
    )


def _fraction(requested: IntArray, allocatable: IntArray, has_all: bool) -> FloatArray:
    """``min(float64(requested) / float64(allocatable), 1)``; where allocatable is 0 the value is unused."""
    divisor = allocatable if has_all else np.where(allocatable != 0, allocatable, 1)
    frac: FloatArray = np.true_divide(requested, divisor)
    np.minimum(frac, 1.0, out=frac)
    return frac


def balanced_score(requested: list[IntArray], allocatable: list[IntArray]) -> IntArray:
    """Upstream ``balancedResourceScorer`` over nodes: one array per resource, in configured order.

    An entry whose allocatable is 0 is left out of that node's fractions.
    """
    n = len(requested[0]) if requested else 0
    everywhere = [np.count_nonzero(a) == n for a in allocatable]
    fractions = [
        _fraction(req, alloc, every)
        for req, alloc, every in zip(requested, allocatable, everywhere, strict=True)
    ]
    if len(fractions) == 2:
        # The common case; nodes lacking one of the two resources have fewer than two fractions.
        std = fractions[0]
        std -= fractions[1]
        std /= 2
        np.abs(std, out=std)
        if not (everywhere[0] and everywhere[1]):
            std = np.where((allocatable[0] != 0) & (allocatable[1] != 0), std, 0.0)
    else:
        present = [a != 0 for a in allocatable]
        count = np.zeros(n, dtype=np.int64)
        total = np.zeros(n, dtype=np.float64)
        first = np.zeros(n, dtype=np.float64)
        second = np.zeros(n, dtype=np.float64)
        for frac, has in zip(fractions, present, strict=True):
            first = np.where(has & (count == 0), frac, first)
            second = np.where(has & (count == 1), frac, second)
            total = np.where(has, total + frac, total)
            count += has
        mean = total / np.maximum(count, 1)
        squares = np.zeros(n, dtype=np.float64)
        for frac, has in zip(fractions, present, strict=True):
            squares = np.where(has, squares + (frac - mean) * (frac - mean), squares)
        general = np.sqrt(squares / np.maximum(count, 1))
        std = np.where(count == 2, np.abs((first - second) / 2), np.where(count > 2, general, 0.0))
    # (1 - std) * 100, truncated toward zero like Go's int64 conversion (the value is never negative).
    np.subtract(1.0, std, out=std)
    std *= float(MAX_NODE_SCORE)
    result: IntArray = std.astype(np.int64)
    return result


def _two_resources_few(table: NodeTable, slots: IntArray, scored: list[tuple[int, int]]) -> IntArray:
    """:func:`balanced_score` of two resources row by row, with the same float64 operations in
    the same order, for a few rows whose sums cannot overflow."""
    (col0, want0), (col1, want1) = scored
    allocatable, requested = table.allocatable, table.requested
    out: list[int] = []
    for slot in slots.tolist():
        alloc0, alloc1 = int(allocatable[slot, col0]), int(allocatable[slot, col1])
        if alloc0 == 0 or alloc1 == 0:
            out.append(MAX_NODE_SCORE)  # fewer than two fractions: deviation 0
            continue
        frac0 = min(float(int(requested[slot, col0]) + want0) / float(alloc0), 1.0)
        frac1 = min(float(int(requested[slot, col1]) + want1) / float(alloc1), 1.0)
        std = abs((frac0 - frac1) / 2)
        out.append(int((1.0 - std) * float(MAX_NODE_SCORE)))
    return np.array(out, dtype=np.int64)


@dataclass(frozen=True, slots=True)
class _Resource:
    name: str
    column: int | None  # fixed column, or None for one looked up in the table by name
    scalar: bool


class NodeResourcesBalancedAllocation:
    name: ClassVar[str] = "NodeResourcesBalancedAllocation"

    def sign_pod(self, pod: Pod) -> tuple[tuple[SignFragment, ...], Status | None]:
        """The score depends on the pod's requests only."""
        return (
            ("NodeResourcesBalancedAllocation.requests", frozen(pod.requests)),
            ("NodeResourcesBalancedAllocation.nonzero", (pod.nonzero_cpu, pod.nonzero_memory)),
        ), None

    def __init__(self, args: NodeResourcesBalancedAllocationArgs | None = None, handle: Any = None) -> None:
        args = args or NodeResourcesBalancedAllocationArgs()
        self.resources = [
            _Resource(r.name, _FIXED_COLUMNS.get(r.name), is_scalar_resource(r.name)) for r in args.resources
        ]

    def _pod_requests(self, pod: Pod) -> list[int]:
        return [pod.requests.get(r.name, 0) for r in self.resources]

    def pre_score(self, state: CycleState, pod: Pod, table: NodeTable, slots: IntArray) -> Status | None:
        requests = self._pod_requests(pod)
        if not any(requests):
            # Upstream skips best-effort pods so they do not all pile onto the same node.
            return Status(Code.SKIP)
        state.write(PRE_SCORE_KEY, requests)
        return None

    def row_score_key(self, state: CycleState, pod: Pod) -> Hashable | None:
        """A node's score depends on the pod's requests and that node's row only."""
        requests: list[int] | None = state.get(PRE_SCORE_KEY)
        return tuple(requests if requests is not None else self._pod_requests(pod))

    def score_nodes(self, state: CycleState, pod: Pod, table: NodeTable, slots: IntArray) -> IntArray:
        pod_requests: list[int] | None = state.get(PRE_SCORE_KEY)
        if pod_requests is None:  # PreScore disabled in this profile
            pod_requests = self._pod_requests(pod)
            if not any(pod_requests):
                return np.zeros(len(slots), dtype=np.int64)
        scored: list[tuple[int, int]] = []
        for res, want in zip(self.resources, pod_requests, strict=True):
            if want == 0 and res.scalar:
                continue  # an extended resource the pod does not ask for is not scored
            col = res.column
            if col is None:
                # Upstream reads any other resource from the node's scalar resources only.
                col = table.resource_col.get(res.name) if res.scalar else None
                if col is None:
                    continue  # allocatable 0 on every node: not scored
            scored.append((col, want))
        if not scored:
            return np.full(len(slots), MAX_NODE_SCORE, dtype=np.int64)
        ceiling = table.value_ceiling()
        if (
            len(slots) <= FEW_ROWS
            and len(scored) == 2
            and all(0 <= want <= INT64_MAX - ceiling for _, want in scored)
        ):
            return _two_resources_few(table, slots, scored)
        # The table's columns are contiguous: one gather per scored column.
        allocatable = [table.allocatable[:, col].take(slots) for col, _ in scored]
        requested = [
            saturating_add(table.requested[:, col].take(slots), want, ceiling) for col, want in scored
        ]
        return balanced_score(requested, allocatable)
