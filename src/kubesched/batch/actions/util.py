"""Pieces the batch actions share: priority queues ordered by session functions, and vectorized
node selection (predicates, resource fit, node order, best node)."""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

import numpy as np

from kubesched.batch.job_info import JobInfo, QueueInfo, TaskInfo, fit_threshold_of
from kubesched.batch.session import BoolArray, Session
from kubesched.batch.shares import Vector
from kubesched.cache.node_table import PODS_COL
from kubesched.framework.types import IntArray, NodeFailure
from kubesched.plugins.nodeports import ERR_REASON as NODE_PORTS_REASON
from kubesched.plugins.nodeports import conflicting_nodes

#: Volcano ``api.NodePodNumberExceeded``.
POD_NUMBER_EXCEEDED = "node(s) pod number exceeded"

T = TypeVar("T")


class _Item(Generic[T]):
    __slots__ = ("less", "seq", "value")

    def __init__(self, value: T, less: Callable[[T, T], bool], seq: int) -> None:
        self.value = value
        self.less = less
        self.seq = seq

    def __lt__(self, other: _Item[T]) -> bool:
        if self.less(self.value, other.value):
            return True
        if self.less(other.value, self.value):
            return False
        return self.seq < other.seq


class PriorityQueue(Generic[T]):
    """Volcano's ``util.PriorityQueue``: a heap ordered by a ``less`` function evaluated at push/pop."""

    def __init__(self, less: Callable[[T, T], bool]) -> None:
        self.less = less
        self._heap: list[_Item[T]] = []
        self._seq = 0

    def push(self, value: T) -> None:
        self._seq += 1
        heapq.heappush(self._heap, _Item(value, self.less, self._seq))

    def pop(self) -> T:
        return heapq.heappop(self._heap).value

    def empty(self) -> bool:
        return not self._heap

    def __len__(self) -> int:
        return len(self._heap)


@dataclass
class StarvingJobs:
    """The queues of the running jobs in queue order, and each queue's starving jobs in job order:
    what reclaim and the gang-aware eviction actions walk."""

    queues: PriorityQueue[QueueInfo]
    by_queue: dict[str, PriorityQueue[JobInfo]]
    jobs: list[JobInfo]


def jobs_taking_part(ssn: Session) -> Iterator[tuple[JobInfo, QueueInfo]]:
    """The jobs preemption and reclaim consider, with their queues, in the session's order: not
    those still pending (not yet enqueued), those the session's JobValid rejects, or those of an
    unknown queue."""
    for job in ssn.jobs.values():
        if job.is_pending():
            continue
        vr = ssn.job_valid(job)
        if vr is not None and not vr.passed:
            continue
        queue = ssn.queues.get(job.queue)
        if queue is not None:
            yield job, queue


def starving_jobs_by_queue(ssn: Session) -> StarvingJobs:
    """Volcano's reclaim prologue: the queue of every job taking part is visited, and its starving
    jobs are the preemptors."""
    queues: PriorityQueue[QueueInfo] = PriorityQueue(ssn.queue_order_fn)
    seen: set[str] = set()
    by_queue: dict[str, PriorityQueue[JobInfo]] = {}
    starving: list[JobInfo] = []
    for job, queue in jobs_taking_part(ssn):
        if queue.name not in seen:
            seen.add(queue.name)
            queues.push(queue)
        if ssn.job_starving(job):
            by_queue.setdefault(job.queue, PriorityQueue(ssn.job_order_fn)).push(job)
            starving.append(job)
    return StarvingJobs(queues, by_queue, starving)


class KeyedQueue(Generic[T]):
    """A heap ordered by ``key`` computed at push (for orders whose key of an item does not change
    while it waits in the queue: the same pops as :class:`PriorityQueue` with the matching
    ``less``, at a fraction of the work)."""

    def __init__(self, key: Callable[[T], Any]) -> None:
        self.key = key
        self._heap: list[tuple[Any, int, T]] = []
        self._seq = 0

    def push(self, value: T) -> None:
        self._seq += 1
        heapq.heappush(self._heap, (self.key(value), self._seq, value))

    def peek_key(self) -> Any:
        return self._heap[0][0]

    def pop(self) -> T:
        return heapq.heappop(self._heap)[2]

    def empty(self) -> bool:
        return not self._heap

    def __len__(self) -> int:
        return len(self._heap)


class SortedQueue(Generic[T]):
    """A queue popped in ``key`` order, sorted once when first popped: for orders that do not change
    while the queue is drained (task order: priority, then creation), the same sequence as a heap
    at a fraction of the comparisons."""

    def __init__(self, key: Callable[[T], Any]) -> None:
        self.key = key
        self._items: list[T] = []
        self._sorted = True

    def push(self, value: T) -> None:
        self._items.append(value)
        self._sorted = False

    def pop(self) -> T:
        if not self._sorted:
            # Reverse order so that pop() from the end is the first in line.
            self._items.sort(key=self.key, reverse=True)
            self._sorted = True
        return self._items.pop()

    def empty(self) -> bool:
        return not self._items

    def __len__(self) -> int:
        return len(self._items)

    def __iter__(self) -> Iterator[T]:
        """The items, in no particular order."""
        return iter(self._items)

    def replace(self, other: SortedQueue[T]) -> None:
        """Take ``other``'s items (what a dry run left)."""
        self._items = list(other._items)
        self._sorted = other._sorted


@dataclass(slots=True)
class NodeChoice:
    """The feasible nodes for a task, or why there are none."""

    feasible: IntArray
    #: ``0/N nodes are unavailable: …`` when ``feasible`` is empty.
    fit_error: str


def fit_error_message(num_nodes: int, counts: dict[str, int]) -> str:
    """Volcano ``FitErrors.Error``: reasons with their node counts, sorted."""
    msg = f"0/{num_nodes} nodes are unavailable"
    if not counts:
        return msg
    return f"{msg}: {', '.join(sorted(f'{v} {k}' for k, v in counts.items()))}."


def fit_threshold(task: TaskInfo) -> Vector:
    """Per resource, what a node's idle amount must exceed for ``task`` to fit.

    Volcano's ``LessEqual`` (``want < idle`` or ``|want - idle| < 0.1``) is ``idle > want - 0.1``;
    resources the task does not ask for never block it. ``pods`` is compared like any resource
    (every task asks for one pod slot)."""
    threshold = task.fit_threshold
    if threshold is None:
        threshold, task.fit_columns = fit_threshold_of(task.init_resreq)
        task.fit_threshold = threshold
    return threshold


def fit_columns(task: TaskInfo) -> list[tuple[int, float]]:
    """``(column, threshold)`` for each resource the task asks for (see :func:`fit_threshold`)."""
    columns = task.fit_columns
    if columns is None:
        fit_threshold(task)
        columns = task.fit_columns
        assert columns is not None
    return columns


def _idle(ssn: Session, future: bool) -> IntArray:
    if future and ssn.future_differs:
        return ssn.idle + ssn.releasing - ssn.pipelined
    return ssn.idle


def resource_short(ssn: Session, task: TaskInfo, *, future: bool) -> BoolArray:
    """Per slot: whether the task's requests do not fit the node's (future) idle resources."""
    idle = _idle(ssn, future)
    # Column by column: a task asks for a few resources, and a reduction over the short row axis
    # costs more than these compares.
    short: BoolArray | None = None
    for col, threshold in fit_columns(task):
        bad = idle[:, col] <= threshold
        short = bad if short is None else short | bad
    if short is None:
        return np.zeros(len(idle), dtype=np.bool_)
    return short


def resource_shortfall(ssn: Session, task: TaskInfo, *, future: bool) -> tuple[BoolArray, IntArray]:
    """:func:`resource_short`, and per slot the column of the first resource that does not fit
    (Volcano ``LessEqualWithResourcesName``, reported as ``Insufficient <resource>``)."""
    bad = _idle(ssn, future) <= fit_threshold(task)
    first: IntArray = np.argmax(bad, axis=1)
    short: BoolArray = np.logical_or.reduce(bad, axis=1)
    return short, first


def predicate_nodes(ssn: Session, task: TaskInfo, *, check_resources: bool = True) -> NodeChoice:
    """Volcano ``PredicateNodes`` with the allocate action's predicate: resources against future idle
    first (``Insufficient <resource>``), then the session's predicates; nodes are visited from where
    the last search stopped and the search ends after ``numFeasibleNodesToFind`` fits."""
    order = ssn.node_slots
    n = len(order)
    if n == 0:
        return NodeChoice(order, fit_error_message(0, {}))
    if check_resources:
        short = resource_short(ssn, task, future=True)
        if short[order].all():
            # No node has the resources: nothing is feasible whatever the predicates say, the
            # message counts only the shortages, and the search starts where it did.
            return NodeChoice(order[:0], shortage_error(ssn, task))
        passed = ssn.predicate_mask(task) & ~short
    else:
        passed = ssn.predicate_mask(task)
        for failure in capacity_failures(ssn, task):
            passed = passed & ~failure.nodes
    to_find = ssn.num_feasible_nodes_to_find
    start = ssn.last_processed_node_index % n
    rotated = np.concatenate((order[start:], order[:start])) if start else order
    hits = np.flatnonzero(passed[rotated])
    if len(hits) > to_find:
        feasible = rotated[hits[:to_find]]
        processed = int(hits[to_find - 1]) + 1
    else:
        feasible = rotated[hits]
        processed = n
    ssn.last_processed_node_index = (start + processed) % n
    if len(feasible):
        return NodeChoice(feasible, "")
    return NodeChoice(feasible, fit_error(ssn, task, check_resources=check_resources))


def capacity_failures(ssn: Session, task: TaskInfo) -> list[NodeFailure]:
    """What a node can hold whatever the conf's predicates: a free pod slot and the task's host
    ports. Without the predicates plugin Volcano's backfill checks neither and over-fills nodes (a
    kubelet would reject those pods); kubesched keeps them as node capacity, with the predicates
    plugin's reasons."""
    out: list[NodeFailure] = []
    free = ssn.idle[:, PODS_COL]
    if ssn.future_differs:
        free = free + ssn.releasing[:, PODS_COL] - ssn.pipelined[:, PODS_COL]
    exceeded = free <= 0
    if exceeded.any():
        out.append(NodeFailure(POD_NUMBER_EXCEEDED, exceeded))
    if task.pod.host_ports:
        ports = conflicting_nodes(ssn.table, task.pod.host_ports)
        if ports.any():
            out.append(NodeFailure(NODE_PORTS_REASON, ports))
    return out


def shortage_error(ssn: Session, task: TaskInfo) -> str:
    """:func:`fit_error` when every ready node lacks resources for the task: ``Insufficient
    <resource>`` per node, the first resource (in column order) that does not fit. Tasks with the
    same request get the same message until a node row changes (kept per session version)."""
    threshold = fit_threshold(task)
    key = (threshold.tobytes(), ssn.version)
    cached = ssn.fit_error_cache.get(key)
    if cached is not None:
        return cached
    order = ssn.node_slots
    bad = _idle(ssn, True)[order] <= threshold
    first = np.argmax(bad, axis=1)
    names = ssn.table.resource_names
    num = np.bincount(first, minlength=bad.shape[1])
    counts = {f"Insufficient {names[c]}": int(num[c]) for c in np.flatnonzero(num).tolist()}
    msg = fit_error_message(len(order), counts)
    ssn.fit_error_cache[key] = msg
    return msg


def fit_error(ssn: Session, task: TaskInfo, *, check_resources: bool = True) -> str:
    """Why the task fits no ready node: the reason histogram over every node (Volcano ``FitErrors``).
    A node short of resources counts under ``Insufficient <resource>`` only (the resource check runs
    before the predicates)."""
    table = ssn.table
    order = ssn.node_slots
    res = ssn.predicate(task)
    counts: dict[str, int] = {}
    evaluated = np.zeros(table.capacity, dtype=np.bool_)
    evaluated[order] = True
    rest = evaluated
    if check_resources:
        short, first = resource_shortfall(ssn, task, future=True)
        hit = short & evaluated
        if hit.any():
            cols, num = np.unique(first[hit], return_counts=True)
            for c, k in zip(cols.tolist(), num.tolist(), strict=True):
                counts[f"Insufficient {table.resource_names[c]}"] = k
        rest = evaluated & ~short
    masks: dict[str, BoolArray] = {}
    failures = res.failures if check_resources else [*res.failures, *capacity_failures(ssn, task)]
    for f in failures:
        # One reason counts a node once, also when both the predicates and the capacity give it.
        masks[f.reason] = masks[f.reason] | f.nodes if f.reason in masks else f.nodes
    for reason, nodes in masks.items():
        k = int(np.count_nonzero(nodes & rest))
        if k:
            counts[reason] = k
    return fit_error_message(len(order), counts)


def select_best(ssn: Session, task: TaskInfo, slots: IntArray) -> int:
    """Highest node-order score, ties at random (Volcano ``SelectBestNodeAndScore``)."""
    if len(slots) == 1:
        return int(slots[0])
    scores = ssn.node_order(task, slots)
    best = scores.max()
    ties = np.flatnonzero(scores == best)
    pick = ties[0] if len(ties) == 1 else ties[int(ssn.rng.integers(len(ties)))]
    return int(slots[pick])


def prioritize_nodes(ssn: Session, task: TaskInfo, feasible: IntArray) -> int | None:
    """Volcano allocate ``prioritizeNodes``: nodes where the task fits what is idle now are preferred
    over nodes where it fits only once releasing pods are gone."""
    if not ssn.future_differs:
        # Future idle is idle: every feasible node (resources checked) has room now.
        return select_best(ssn, task, feasible)
    short_now = resource_short(ssn, task, future=False)
    idle_ok = feasible[~short_now[feasible]]
    if len(idle_ok):
        return select_best(ssn, task, idle_ok)
    short_future = resource_short(ssn, task, future=True)
    future_ok = feasible[~short_future[feasible]]
    if len(future_ok):
        return select_best(ssn, task, future_ok)
    return None


def fits_idle(ssn: Session, task: TaskInfo, slot: int, *, future: bool) -> bool:
    threshold = fit_threshold(task)
    idle = ssn.idle[slot]
    if future and ssn.future_differs:
        idle = idle + ssn.releasing[slot] - ssn.pipelined[slot]
    return bool((idle > threshold).all())
