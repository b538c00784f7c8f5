"""Extension-point protocols. A plugin implements any subset; its methods decide where it runs.

In-tree plugins are vectorized: Filter and Score see the whole :class:`NodeTable` and answer with
arrays. A user plugin that prefers to look at one node at a time subclasses
:class:`PerNodeFilterPlugin` and implements ``filter(state, pod, node_info)``.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, Protocol, runtime_checkable

import numpy as np

from kubesched.framework.extension_points import ExtensionPoint
from kubesched.framework.status import Code, Status
from kubesched.framework.types import FilterResult, NodeFailure

if TYPE_CHECKING:
    from kubesched.api.objects import Pod
    from kubesched.cache.cache import Snapshot
    from kubesched.cache.node_info import NodeInfo
    from kubesched.cache.node_table import NodeTable
    from kubesched.framework.cycle_state import CycleState
    from kubesched.framework.diagnosis import Diagnosis
    from kubesched.framework.runtime import Framework
    from kubesched.framework.types import (
        BoolArray,
        ClusterEvent,
        ClusterEventWithHint,
        FilterWalk,
        IntArray,
        PreFilterResult,
        QueuedPodInfo,
    )


@runtime_checkable
class Plugin(Protocol):
    """What every plugin has: its name, as configuration and messages spell it."""

    name: ClassVar[str]


@runtime_checkable
class PreEnqueuePlugin(Plugin, Protocol):
    def pre_enqueue(self, pod: Pod) -> Status | None: ...


@runtime_checkable
class QueueSortPlugin(Plugin, Protocol):
    def less(self, a: QueuedPodInfo, b: QueuedPodInfo) -> bool: ...


@runtime_checkable
class QueueSortKey(Protocol):
    """A QueueSort plugin that can also give a sort key agreeing with ``less`` (faster to sort by)."""

    def sort_key(self, info: QueuedPodInfo) -> Any: ...


@runtime_checkable
class PreFilterPlugin(Plugin, Protocol):
    def pre_filter(
        self, state: CycleState, pod: Pod, snapshot: Snapshot
    ) -> tuple[PreFilterResult | None, Status | None]: ...


@runtime_checkable
class PreFilterExtensions(Plugin, Protocol):
    """Incremental updates of a plugin's PreFilter state (upstream ``PreFilterExtensions``).

    Preemption and nominated pods evaluate "what if this pod were (not) on that node": the framework
    clones the cycle state, changes the node's row, and calls ``add_pod`` / ``remove_pod`` of every
    PreFilter plugin that implements them (and did not return Skip) so its state matches. ``slot`` is
    the NodeTable slot of the node the pod is added to or removed from. A non-success status is an
    error.
    """

    def add_pod(self, state: CycleState, pod: Pod, pod_to_add: Pod, slot: int) -> Status | None: ...
    def remove_pod(self, state: CycleState, pod: Pod, pod_to_remove: Pod, slot: int) -> Status | None: ...


@runtime_checkable
class FrameworkAware(Protocol):
    """A plugin that needs the framework running it (upstream plugins get it as their Handle):
    ``set_framework`` is called once, after every plugin of the profile was built."""

    def set_framework(self, framework: Framework) -> None: ...


@runtime_checkable
class FilterPlugin(Plugin, Protocol):
    def filter_nodes(self, state: CycleState, pod: Pod, table: NodeTable) -> FilterResult: ...


@runtime_checkable
class RowFilterPlugin(Plugin, Protocol):
    """A Filter plugin that can also judge a few rows without looking at the others: the cycle
    evaluates Filters in chunks of rows from its rotating start and stops once it has found enough
    feasible nodes, so that a cycle costs about ``numFeasibleNodesToFind`` rows, not the whole
    table. ``filter_rows`` answers, for each of ``rows`` (node slots), whether ``filter_nodes``
    would pass it, or None when it passes all of them. Only the verdict is asked: a cycle that
    needs the reasons (no node fits, explain) runs ``filter_nodes`` over every row."""

    def filter_rows(
        self, state: CycleState, pod: Pod, table: NodeTable, rows: IntArray
    ) -> BoolArray | None: ...


@runtime_checkable
class CandidateFilterPlugin(Plugin, Protocol):
    """A Filter plugin whose verdict costs a search per node: the framework calls
    ``filter_candidates`` with the nodes that no earlier Filter plugin rejected (``candidates``)
    instead of ``filter_nodes``. Nodes outside ``candidates`` may be given any verdict; only the
    candidates' count. With a ``walk`` (the cycle's search for feasible nodes), candidates after
    the node where the walk ends need no verdict either (see :class:`FilterWalk`)."""

    def filter_candidates(
        self,
        state: CycleState,
        pod: Pod,
        table: NodeTable,
        candidates: BoolArray,
        walk: FilterWalk | None = None,
    ) -> FilterResult: ...


@runtime_checkable
class PostFilterPlugin(Plugin, Protocol):
    def post_filter(self, state: CycleState, pod: Pod, diagnosis: Diagnosis) -> tuple[str | None, Status]: ...


@runtime_checkable
class PreScorePlugin(Plugin, Protocol):
    def pre_score(self, state: CycleState, pod: Pod, table: NodeTable, slots: IntArray) -> Status | None: ...


@runtime_checkable
class ScorePlugin(Plugin, Protocol):
    def score_nodes(self, state: CycleState, pod: Pod, table: NodeTable, slots: IntArray) -> IntArray: ...


@runtime_checkable
class RowScorePlugin(Protocol):
    """A Score plugin whose raw score of a node (before NormalizeScore) is a function of a key it
    draws from the pod and of that node's row in the :class:`NodeTable` alone: not of the other
    nodes, the feasible set or anything PreScore gathers across nodes. The framework keeps such
    scores between cycles and rescores only the rows written since.

    ``row_score_key`` runs after PreScore, with the cycle's state; None: do not keep this pod's
    scores."""

    def row_score_key(self, state: CycleState, pod: Pod) -> Hashable | None: ...


@runtime_checkable
class ScoreNormalizer(Protocol):
    def normalize_scores(self, state: CycleState, pod: Pod, scores: IntArray) -> None: ...


@runtime_checkable
class ReservePlugin(Plugin, Protocol):
    def reserve(self, state: CycleState, pod: Pod, node_name: str) -> Status | None: ...
    def unreserve(self, state: CycleState, pod: Pod, node_name: str) -> None: ...


@runtime_checkable
class PermitPlugin(Plugin, Protocol):
    def permit(self, state: CycleState, pod: Pod, node_name: str) -> tuple[Status | None, float]: ...


@runtime_checkable
class PreBindPlugin(Plugin, Protocol):
    def pre_bind(self, state: CycleState, pod: Pod, node_name: str) -> Status | None: ...


@runtime_checkable
class BindPlugin(Plugin, Protocol):
    def bind(self, state: CycleState, pod: Pod, node_name: str) -> Status | None: ...


@runtime_checkable
class PostBindPlugin(Plugin, Protocol):
    def post_bind(self, state: CycleState, pod: Pod, node_name: str) -> None: ...


#: One piece of a pod's scheduling signature: a key (the plugin's own, e.g. ``NodeResourcesFit.requests``)
#: and a hashable value.
SignFragment = tuple[str, Hashable]


@runtime_checkable
class SignPlugin(Plugin, Protocol):
    """A plugin that can say which parts of a pod its PreFilter/Filter/PreScore/Score results
    depend on (upstream ``SignPlugin``, opportunistic batching). Two pods with equal fragments from
    every such plugin must get the same feasibility and scores on the same nodes.

    Returns the fragments and None, or a non-success status when the pod cannot be signed (its
    results depend on more than the pod and the node, e.g. inter-pod affinity): such a pod gets no
    signature and is never batched.
    """

    def sign_pod(self, pod: Pod) -> tuple[tuple[SignFragment, ...], Status | None]: ...


@runtime_checkable
class EnqueueExtensions(Protocol):
    """The cluster events that may make a pod this plugin rejected schedulable, each with an optional
    queueing hint deciding per pod (a bare :class:`ClusterEvent` has none: always Queue)."""

    def events_to_register(self) -> Sequence[ClusterEvent | ClusterEventWithHint]: ...


_POINT_METHODS: dict[ExtensionPoint, str] = {
    ExtensionPoint.PRE_ENQUEUE: "pre_enqueue",
    ExtensionPoint.QUEUE_SORT: "less",
    ExtensionPoint.PRE_FILTER: "pre_filter",
    ExtensionPoint.FILTER: "filter_nodes",
    ExtensionPoint.POST_FILTER: "post_filter",
    ExtensionPoint.PRE_SCORE: "pre_score",
    ExtensionPoint.SCORE: "score_nodes",
    ExtensionPoint.RESERVE: "reserve",
    ExtensionPoint.PERMIT: "permit",
    ExtensionPoint.PRE_BIND: "pre_bind",
    ExtensionPoint.BIND: "bind",
    ExtensionPoint.POST_BIND: "post_bind",
    ExtensionPoint.PLACEMENT_GENERATE: "generate_placements",
    ExtensionPoint.PLACEMENT_SCORE: "score_placement",
}


def extension_points_of(cls: type) -> frozenset[ExtensionPoint]:
    """The extension points a plugin class implements, judged by its methods."""
    return frozenset(p for p, method in _POINT_METHODS.items() if callable(getattr(cls, method, None)))


class PerNodeFilterPlugin:
    """Adapter for plugins written one node at a time: ``filter(state, pod, node_info)``.

    Slower than a vectorized plugin (one Python call per node), so in-tree plugins never use it.
    """

    name: ClassVar[str] = ""

    def __init__(self, args: Any = None, handle: Any = None) -> None:
        self.handle = handle

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        raise NotImplementedError

    def filter_nodes(self, state: CycleState, pod: Pod, table: NodeTable) -> FilterResult:
        snapshot: Snapshot = self.handle.snapshot
        passed = np.zeros(table.capacity, dtype=np.bool_)
        failures: dict[tuple[str, bool], np.ndarray[Any, np.dtype[np.bool_]]] = {}
        for slot in table.order.tolist():
            info = snapshot.node_infos.get(table.names[slot])
            if info is None:
                continue
            status = self.filter(state, pod, info)
            if status is None or status.code == Code.SUCCESS:
                passed[slot] = True
                continue
            unresolvable = status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
            for reason in status.reasons or [f"node(s) didn't satisfy plugin {self.name}"]:
                mask = failures.setdefault((reason, unresolvable), np.zeros(table.capacity, dtype=np.bool_))
                mask[slot] = True
        return FilterResult(passed, [NodeFailure(r, m, u) for (r, u), m in failures.items()])
