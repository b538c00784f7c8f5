"""NodeResourcesFit: does the node have room for the pod's requests, and how full would it be.

Filter follows upstream ``fitsRequest`` exactly: "Too many pods" when the pod count is at the limit,
then "Insufficient <resource>" for every requested resource that does not fit in what is left. A node
whose total allocatable is smaller than the request is *unresolvable* (preemption cannot help).

Score uses the configured strategy (LeastAllocated by default, MostAllocated, RequestedToCapacityRatio
from ``requested_to_capacity_ratio``) over the configured resources and weights, counting cpu/memory
with the non-zero defaults (100m / 200Mi) like upstream.
"""

from __future__ import annotations

import weakref
from collections.abc import Hashable
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from kubesched.api.objects import Node, Pod
from kubesched.api.resource import DeviceClass
from kubesched.api.resources import CPU, EPHEMERAL_STORAGE, MEMORY, PODS, is_extended_resource, is_hugepages
from kubesched.cache.cache import Snapshot
from kubesched.cache.node_table import CPU_COL, MEMORY_COL, PODS_COL, NodeTable
from kubesched.errors import InputError
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.interfaces import SignFragment
from kubesched.framework.nominated_pods import status_nominated_node
from kubesched.framework.placement import PodGroupAssignments
from kubesched.framework.plugin_args import NodeResourcesFitArgs
from kubesched.framework.status import Status
from kubesched.framework.types import (
    MAX_NODE_SCORE,
    ActionType,
    BoolArray,
    ClusterEvent,
    ClusterEventWithHint,
    FilterResult,
    IntArray,
    NodeFailure,
    PreFilterResult,
    QueueingHint,
)
from kubesched.plugins.helper.extended_resources import device_class_mapping, is_dra_extended_resource_name
from kubesched.plugins.helper.int64 import INT64_MAX, saturating_add, scaled_quotient
from kubesched.plugins.helper.sign import frozen
from kubesched.plugins.noderesources.requested_to_capacity_ratio import RequestedToCapacityRatio

PRE_FILTER_KEY = "PreFilterNodeResourcesFit"
PRE_SCORE_KEY = "PreScoreNodeResourcesFit"
TOO_MANY_PODS = "Too many pods"


@dataclass(slots=True)
class _PodRequest:
    vector: IntArray  # over table columns, pods column = 1
    checked: list[tuple[int, str]]  # (column, reason) of each non-zero request the filter checks
    beyond_int64: frozenset[int] = frozenset()  # columns whose exact request exceeds 2**63 - 1
    #: Columns of extended resources a DeviceClass backs: a node that does not advertise one leaves
    #: it to DynamicResources.
    dra_backed: frozenset[int] = frozenset()


#: Distinct pod requests whose PreFilter answers are kept before they start over.
_REQUESTS_SEEN = 256

#: The feature gate of extended resources backed by DeviceClasses.
DRA_EXTENDED_RESOURCE = "DRAExtendedResource"


def insufficient_reason(resource: str) -> str:
    return f"Insufficient {resource}"


# The scorers take an optional ``ceiling``: a bound of ``abs(allocatable)`` and of ``-requested``
# (the node table's value ceiling when requested is a column plus a non-negative request). With it
# they skip the overflow guards where the bound shows none is needed; ``nonzero`` says that no
# allocatable is 0 (no guard against dividing by it). The scores are the same either way.


def least_allocated(
    requested: IntArray, allocatable: IntArray, ceiling: int | None = None, nonzero: bool = False
) -> IntArray:
    """((allocatable - requested) * 100) / allocatable, 0 when over-full (integer, like upstream)."""
    safe = allocatable if nonzero else np.where(allocatable == 0, 1, allocatable)
    free = np.maximum(allocatable - requested, 0)
    return scaled_quotient(free, safe, MAX_NODE_SCORE, None if ceiling is None else 2 * ceiling)


def most_allocated(
    requested: IntArray, allocatable: IntArray, ceiling: int | None = None, nonzero: bool = False
) -> IntArray:
    """requested * 100 / allocatable, requested capped at allocatable (non-zero defaults may exceed it)."""
    safe = allocatable if nonzero else np.where(allocatable == 0, 1, allocatable)
    return scaled_quotient(np.minimum(requested, allocatable), safe, MAX_NODE_SCORE, ceiling)


#: Values up to this bound keep ``(allocatable - requested) * 100`` and weighted sums in int64.
_PLAIN_LEAST_CEILING = INT64_MAX // (4 * MAX_NODE_SCORE)


#: Up to this many rows, a score is computed row by row in Python: fewer operations than NumPy's
#: fixed cost per array operation. Kept scores rescore a few changed rows each cycle.
FEW_ROWS = 8


def _least_cpu_memory_few(
    table: NodeTable, slots: IntArray, requests: list[int], weights: tuple[int, int]
) -> IntArray | None:
    """:meth:`NodeResourcesFit._least_cpu_memory_scores` row by row, for a few rows."""
    allocatable, nonzero = table.allocatable, table.nonzero_requested
    weight_sum = weights[0] + weights[1]
    out: list[int] = []
    for slot in slots.tolist():
        total = 0
        for col, k, want, weight in (
            (CPU_COL, 0, requests[0], weights[0]),
            (MEMORY_COL, 1, requests[1], weights[1]),
        ):
            alloc = int(allocatable[slot, col])
            if alloc == 0:
                return None
            free = alloc - int(nonzero[slot, k]) - want
            total += (free * MAX_NODE_SCORE // alloc if free > 0 else 0) * weight
        out.append(total // weight_sum if weight_sum else 0)
    return np.array(out, dtype=np.int64)


class NodeResourcesFit:
    name: ClassVar[str] = "NodeResourcesFit"

    def sign_pod(self, pod: Pod) -> tuple[tuple[SignFragment, ...], Status | None]:
        """Feasibility and score depend on the pod's requests only."""
        return (
            ("NodeResourcesFit.requests", frozen(pod.requests)),
            ("NodeResourcesFit.nonzero", (pod.nonzero_cpu, pod.nonzero_memory)),
        ), None

    def __init__(self, args: NodeResourcesFitArgs | None, handle: Any = None) -> None:
        args = args or NodeResourcesFitArgs()
        #: The informers to read DeviceClasses from, when DRAExtendedResource is on.
        self._dra_informers = (
            handle.informers if handle is not None and handle.gate_enabled(DRA_EXTENDED_RESOURCE) else None
        )
        self.ignored_resources = frozenset(args.ignored_resources)
        self.ignored_groups = frozenset(args.ignored_resource_groups)
        strategy = args.scoring_strategy
        self.strategy = strategy.type or "LeastAllocated"
        self._ratio: RequestedToCapacityRatio | None = None
        if self.strategy == "LeastAllocated":
            self._scorer = least_allocated
        elif self.strategy == "MostAllocated":
            self._scorer = most_allocated
        elif self.strategy == "RequestedToCapacityRatio" and strategy.requested_to_capacity_ratio is not None:
            self._ratio = RequestedToCapacityRatio(strategy.requested_to_capacity_ratio.shape)
            self._scorer = self._ratio.resource_score
        else:
            raise InputError(
                f"NodeResourcesFit scoring strategy {self.strategy} is not implemented by kubesched yet",
                field="pluginConfig.args.scoringStrategy.type",
            )
        self.score_resources = [(r.name, int(r.weight)) for r in strategy.resources]
        #: The snapshot placements are scored on.
        self._snapshot: Snapshot | None = handle.snapshot if handle is not None else None
        #: Weights of the usual scoring (LeastAllocated over exactly cpu and memory), which has a
        #: shorter path; None for any other strategy or resource list.
        self._least_cpu_memory: tuple[int, int] | None = None
        #: PreFilter's answer per pod requests, for pods that ask alike (a Deployment's replicas),
        #: valid for one table at one width: its columns are only ever appended to.
        self._requests_seen: dict[tuple[tuple[str, int], ...], _PodRequest] = {}
        self._seen_for: tuple[weakref.ref[NodeTable] | None, int] = (None, 0)
        if self.strategy == "LeastAllocated" and [r for r, _ in self.score_resources] == [CPU, MEMORY]:
            self._least_cpu_memory = (self.score_resources[0][1], self.score_resources[1][1])

    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [
            ClusterEventWithHint(
                ClusterEvent("Pod", ActionType.DELETE | ActionType.UPDATE_POD_SCALE_DOWN),
                self.is_schedulable_after_pod_event,
            ),
            ClusterEventWithHint(
                ClusterEvent("Node", ActionType.ADD | ActionType.UPDATE_NODE_ALLOCATABLE),
                self.is_schedulable_after_node_change,
            ),
        ]

    # -- queueing hints --------------------------------------------------------------------------
    def is_schedulable_after_pod_event(self, pod: Pod, old: Pod | None, new: Pod | None) -> QueueingHint:
        """A pod's deletion frees its requests only when it was scheduled or nominated; a scaled-down
        scheduled pod (or this pod itself, scaled down) helps when a resource this pod asks for went
        down."""
        if new is None:
            assert old is not None
            if not old.node_name and not status_nominated_node(old):
                return QueueingHint.QUEUE_SKIP
            return QueueingHint.QUEUE
        if old is None or (new.uid != pod.uid and not new.node_name):
            # Another pod that is not scheduled holds nothing this pod could get.
            return QueueingHint.QUEUE_SKIP
        for resource, want in pod.requests.items():
            if want and old.requests.get(resource, 0) > new.requests.get(resource, 0):
                return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP

    def is_schedulable_after_node_change(self, pod: Pod, old: Node | None, new: Node) -> QueueingHint:
        """Queue when the pod would fit the added node while empty, or when an updated node that it
        would fit grew a resource the pod asks for (upstream ``isFit`` and
        ``haveAnyRequestedResourcesIncreased``)."""
        if not self._fits_empty(pod, new):
            return QueueingHint.QUEUE_SKIP
        if old is None:
            return QueueingHint.QUEUE
        before, after = old.allocatable, new.allocatable
        if after.get(PODS, 0) > before.get(PODS, 0):
            return QueueingHint.QUEUE
        for resource, want in pod.requests.items():
            if want > 0 and resource != PODS and after.get(resource, 0) > before.get(resource, 0):
                return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP

    def _fits_empty(self, pod: Pod, node: Node) -> bool:
        alloc = node.allocatable
        if alloc.get(PODS, 0) < 1:
            return False
        for resource, want in pod.requests.items():
            if want <= 0 or resource == PODS or self._ignored(resource):
                continue
            if want > alloc.get(resource, 0):
                return False
        return True

    def _ignored(self, resource: str) -> bool:
        if not is_extended_resource(resource):
            return False
        if resource in self.ignored_resources:
            return True
        return resource.split("/", 1)[0] in self.ignored_groups

    # -- PreFilter / Filter ----------------------------------------------------------------------
    def pre_filter(
        self, state: CycleState, pod: Pod, snapshot: Snapshot
    ) -> tuple[PreFilterResult | None, Status | None]:
        table = snapshot.table
        requests = pod.requests
        cacheable = not table.is_fork and (
            self._dra_informers is None
            or not any(v > 0 and is_dra_extended_resource_name(r) for r, v in requests.items())
        )
        if cacheable:
            key = tuple(requests.items())
            seen_table, seen_width = self._seen_for
            current = seen_table is not None and seen_table() is table and seen_width == table.num_resources
            if current:
                seen = self._requests_seen.get(key)
                if seen is not None:
                    state.write(PRE_FILTER_KEY, seen)
                    return None, None
            answer = self._pod_request(pod, table)
            if not current or seen_width != table.num_resources:
                self._requests_seen.clear()
                self._seen_for = (weakref.ref(table), table.num_resources)
            elif len(self._requests_seen) >= _REQUESTS_SEEN:
                self._requests_seen.clear()
            self._requests_seen[key] = answer
        else:
            answer = self._pod_request(pod, table)
        state.write(PRE_FILTER_KEY, answer)
        return None, None

    def _pod_request(self, pod: Pod, table: NodeTable) -> _PodRequest:
        """What PreFilter gives the Filter (columns for the pod's resources made as needed)."""
        vector = table.pod_vector(pod.requests)
        checked: list[tuple[int, str]] = []
        for resource, value in pod.requests.items():
            if value <= 0 or self._ignored(resource):
                continue
            checked.append((table.resource_col[resource], insufficient_reason(resource)))
        # Upstream checks cpu, memory, ephemeral-storage first; the order only affects explain output.
        checked.sort(key=lambda c: c[0])
        beyond = frozenset(table.resource_col[r] for r, v in pod.requests.items() if v > INT64_MAX)
        return _PodRequest(vector, checked, beyond, self._dra_backed(pod, table))

    def _dra_backed(self, pod: Pod, table: NodeTable) -> frozenset[int]:
        """The columns of the pod's extended resources that a DeviceClass backs (upstream's fit
        check skips them on nodes with none of the resource)."""
        informers = self._dra_informers
        if informers is None or not any(
            v > 0 and is_dra_extended_resource_name(r) for r, v in pod.requests.items()
        ):
            return frozenset()
        classes = [c for c in informers.informer("DeviceClass").list() if isinstance(c, DeviceClass)]
        mapping = device_class_mapping(classes)
        return frozenset(
            table.resource_col[r]
            for r, v in pod.requests.items()
            if v > 0 and r in mapping and not self._ignored(r)
        )

    def filter_nodes(self, state: CycleState, pod: Pod, table: NodeTable) -> FilterResult:
        req: _PodRequest = state.read(PRE_FILTER_KEY)
        alloc = table.allocatable
        used = table.requested
        failures: list[NodeFailure] = []
        # Empty slots (allocatable 0) would fail every check: verdicts cover node rows only, so the
        # usual cycle, where every node fits, builds no failure at all.
        valid = table.valid
        # A request within the table's headroom bound fits every node: no row to look at.
        floor = table.headroom_floor
        failing: BoolArray | None = None  # replaced, never written: the failures keep their masks
        bound = floor(PODS_COL)
        if bound is None or bound < 1:
            # used + 1 > allocatable, for pod counts (never near int64's end)
            too_many = used[:, PODS_COL] >= alloc[:, PODS_COL]
            too_many &= valid
            if too_many.any():
                failing = too_many
                failures.append(NodeFailure(TOO_MANY_PODS, too_many, unresolvable=False))
        for col, reason in req.checked:
            if col >= alloc.shape[1]:
                continue
            want = req.vector[col]
            if col not in req.beyond_int64:
                bound = floor(col)
                if bound is not None and want <= bound:
                    continue
            a = alloc[:, col]
            # A request beyond int64 exceeds every allocatable; its saturated vector entry may not.
            beyond = col in req.beyond_int64
            if beyond:
                short = valid.copy()
            else:
                short = want > a - used[:, col]
                short &= valid
            if col in req.dra_backed:
                # Served through DRA where the node has none of it.
                short &= a > 0
            if not short.any():
                continue
            failing = short if failing is None else failing | short
            never = short if beyond else short & (want > a)
            if never.any():
                failures.append(NodeFailure(reason, never, unresolvable=True))
                short = short & ~never
                if short.any():
                    failures.append(NodeFailure(reason, short, unresolvable=False))
            else:
                failures.append(NodeFailure(reason, short, unresolvable=False))
        if failing is None:
            return FilterResult.all_pass(table.capacity)
        return FilterResult(~failing, failures)

    def filter_rows(self, state: CycleState, pod: Pod, table: NodeTable, rows: IntArray) -> BoolArray | None:
        req: _PodRequest = state.read(PRE_FILTER_KEY)
        alloc = table.allocatable
        used = table.requested
        floor = table.headroom_floor
        failing: BoolArray | None = None
        bound = floor(PODS_COL)
        if bound is None or bound < 1:
            failing = used[rows, PODS_COL] >= alloc[rows, PODS_COL]
        for col, _ in req.checked:
            if col >= alloc.shape[1]:
                continue
            if col in req.beyond_int64:
                short = np.ones(len(rows), dtype=np.bool_)
            else:
                want = req.vector[col]
                bound = floor(col)
                if bound is not None and want <= bound:
                    continue
                short = want > alloc[rows, col] - used[rows, col]
            if col in req.dra_backed:
                short &= alloc[rows, col] > 0
            failing = short if failing is None else failing | short
        return None if failing is None else ~failing

    # -- PreScore / Score ------------------------------------------------------------------------
    def score_requests(self, pod: Pod) -> list[int]:
        """The pod's request for each scored resource, cpu and memory with the non-zero defaults
        (upstream ``calculatePodResourceRequestList``)."""
        out: list[int] = []
        for resource, _ in self.score_resources:
            if resource == CPU:
                out.append(pod.nonzero_cpu)
            elif resource == MEMORY:
                out.append(pod.nonzero_memory)
            else:
                out.append(pod.requests.get(resource, 0))
        return out

    def pre_score(self, state: CycleState, pod: Pod, table: NodeTable, slots: IntArray) -> Status | None:
        state.write(PRE_SCORE_KEY, self.score_requests(pod))
        return None

    def _least_cpu_memory_scores(
        self, table: NodeTable, slots: IntArray, requests: list[int]
    ) -> IntArray | None:
        """LeastAllocated over cpu and memory where every value is small enough for plain int64
        arithmetic and every node has both: the general path's numbers with fewer array passes.
        None when a node lacks cpu or memory."""
        weights = self._least_cpu_memory
        assert weights is not None
        n = len(slots)
        if n <= FEW_ROWS:
            return _least_cpu_memory_few(table, slots, requests, weights)
        total: IntArray | None = None
        for col, k, want, weight in (
            (CPU_COL, 0, requests[0], weights[0]),
            (MEMORY_COL, 1, requests[1], weights[1]),
        ):
            alloc = table.allocatable[:, col].take(slots)
            if np.count_nonzero(alloc) != n:
                return None
            score = alloc - table.nonzero_requested[:, k].take(slots)
            score -= want
            np.maximum(score, 0, out=score)
            score *= MAX_NODE_SCORE
            score //= alloc
            if weight != 1:
                score *= weight
            if total is None:
                total = score
            else:
                total += score
        assert total is not None
        weight_sum = weights[0] + weights[1]
        if weight_sum == 0:
            return np.zeros(n, dtype=np.int64)
        total //= weight_sum
        return total

    def score_placement(self, pod_group: Any, placement: PodGroupAssignments) -> int:
        """PlacementScore (KEP-5732): the tightest fit wins. Over the placement's nodes together,
        each scored resource's requested share once the group's pods are placed (MostAllocated,
        whatever the strategy for nodes), averaged by the resources' weights: 0-100."""
        if self._snapshot is None:
            return 0
        table = self._snapshot.table
        slots = placement.placement.slots
        wanted = [0] * len(self.score_resources)
        for assignment in placement.assignments:
            for i, want in enumerate(self.score_requests(assignment.pod)):
                wanted[i] += want
        total = weights = 0
        for (resource, weight), want in zip(self.score_resources, wanted, strict=True):
            if resource == CPU:
                alloc, used = table.allocatable[slots, CPU_COL], table.nonzero_requested[slots, 0]
            elif resource == MEMORY:
                alloc, used = table.allocatable[slots, MEMORY_COL], table.nonzero_requested[slots, 1]
            elif resource in table.resource_col and want:
                col = table.resource_col[resource]
                alloc, used = table.allocatable[slots, col], table.requested[slots, col]
            else:
                continue
            capacity = int(alloc.sum())
            if capacity == 0:
                continue
            requested = min(int(used.sum()) + want, capacity)
            total += requested * MAX_NODE_SCORE // capacity * weight
            weights += weight
        return total // weights if weights else 0

    def row_score_key(self, state: CycleState, pod: Pod) -> Hashable | None:
        """A node's score depends on the pod's scored requests and that node's row only."""
        requests: list[int] | None = state.get(PRE_SCORE_KEY)
        return tuple(requests if requests is not None else self.score_requests(pod))

    def score_nodes(self, state: CycleState, pod: Pod, table: NodeTable, slots: IntArray) -> IntArray:
        # Without PreScore (disabled at preScore) the requests are computed here, as upstream does.
        requests: list[int] | None = state.get(PRE_SCORE_KEY)
        if requests is None:
            requests = self.score_requests(pod)
        n = len(slots)
        if (
            self._least_cpu_memory is not None
            and table.value_ceiling() <= _PLAIN_LEAST_CEILING
            and 0 <= min(requests) <= max(requests) <= _PLAIN_LEAST_CEILING
        ):
            plain = self._least_cpu_memory_scores(table, slots, requests)
            if plain is not None:
                return plain
        total: IntArray | None = None
        # The weight sum is one number while every scored resource is present on every node (the
        # usual case), else per node.
        weight_sum: int | IntArray = 0
        ceiling = table.value_ceiling()
        ratio = self._ratio
        for (resource, weight), want in zip(self.score_resources, requests, strict=True):
            # Gathers from whole (contiguous) columns.
            if resource == CPU:
                alloc = table.allocatable[:, CPU_COL].take(slots)
                requested = saturating_add(table.nonzero_requested[:, 0].take(slots), want, ceiling)
            elif resource == MEMORY:
                alloc = table.allocatable[:, MEMORY_COL].take(slots)
                requested = saturating_add(table.nonzero_requested[:, 1].take(slots), want, ceiling)
            else:
                scalar = resource != EPHEMERAL_STORAGE
                if (want == 0 and (scalar or is_hugepages(resource))) or resource not in table.resource_col:
                    # Upstream skips an extended resource the pod does not ask for.
                    continue
                col = table.resource_col[resource]
                alloc = table.allocatable[:, col].take(slots)
                requested = saturating_add(table.requested[:, col].take(slots), want, ceiling)
            everywhere = np.count_nonzero(alloc) == n
            score = self._scorer(requested, alloc, ceiling, everywhere)
            if ratio is None and everywhere:
                part = score if weight == 1 else score * weight
                total = part if total is None else total + part
                weight_sum = weight_sum + weight
                continue
            present = alloc != 0
            if ratio is not None:
                present &= ratio.counts(score)
            part = np.where(present, score * weight, 0)
            total = part if total is None else total + part
            weight_sum = weight_sum + np.where(present, weight, 0)
        if total is None:
            total = np.zeros(n, dtype=np.int64)
        if ratio is not None:
            return ratio.combine(total, np.broadcast_to(np.asarray(weight_sum, dtype=np.int64), (n,)))
        if isinstance(weight_sum, int):
            return total // weight_sum if weight_sum else np.zeros(n, dtype=np.int64)
        return np.where(weight_sum == 0, 0, total // np.maximum(weight_sum, 1))
