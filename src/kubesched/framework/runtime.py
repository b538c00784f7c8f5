"""A framework profile: the configured plugins of one schedulerName, run extension point by point."""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable, Hashable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, TypeVar

import numpy as np

from kubesched.api.objects import Pod
from kubesched.cache.cache import Snapshot
from kubesched.cache.node_info import NodeInfo
from kubesched.cache.node_table import NodeTable
from kubesched.errors import ConfigError, FrameworkError, InputError, PluginError
from kubesched.framework.config import ProfileConfig
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.diagnosis import Diagnosis
from kubesched.framework.extender import Extender
from kubesched.framework.extension_points import ExtensionPoint
from kubesched.framework.handle import Handle
from kubesched.framework.interfaces import (
    BindPlugin,
    CandidateFilterPlugin,
    EnqueueExtensions,
    FilterPlugin,
    FrameworkAware,
    PermitPlugin,
    Plugin,
    PostBindPlugin,
    PostFilterPlugin,
    PreBindPlugin,
    PreEnqueuePlugin,
    PreFilterExtensions,
    PreFilterPlugin,
    PreScorePlugin,
    QueueSortKey,
    QueueSortPlugin,
    ReservePlugin,
    RowFilterPlugin,
    RowScorePlugin,
    ScoreNormalizer,
    ScorePlugin,
)
from kubesched.framework.kept_scores import KeptScores
from kubesched.framework.nominated_pods import NominatedColumns, PodNominator
from kubesched.framework.out_of_tree import ADAPTED_FILTER_ROWS
from kubesched.framework.plugin_instances import build_plugins
from kubesched.framework.registry import Registry, is_in_tree
from kubesched.framework.status import Code, Status
from kubesched.framework.types import (
    MAX_NODE_SCORE,
    MIN_NODE_SCORE,
    WILDCARD,
    ActionType,
    BoolArray,
    ClusterEvent,
    ClusterEventWithHint,
    FilterResult,
    FilterWalk,
    IntArray,
    NodeFailure,
    PreFilterResult,
    QueuedPodInfo,
    all_true,
    none_failed,
)
from kubesched.framework.waiting_pods import MAX_PERMIT_TIMEOUT

__all__ = ["ALL_EVENTS", "Framework", "FrameworkError", "PluginError", "ScoreDetails"]

log = logging.getLogger(__name__)

#: In-tree Filter plugins that read only NodeTable columns (resources, labels, taints, ports) —
#: their verdict on a node with extra pods follows from adjusting that node's row.
TABLE_ONLY_FILTERS = frozenset(
    {
        "NodeUnschedulable",
        "NodeName",
        "TaintToleration",
        "NodeAffinity",
        "NodePorts",
        "NodeResourcesFit",
        # Their answers depend on the node's labels and on volumes, never on the pods on the node.
        "VolumeBinding",
        "VolumeZone",
    }
)

#: What a plugin without ``events_to_register`` is registered for: any change to anything.
ALL_EVENTS = ClusterEvent(WILDCARD, ActionType.ALL)


@dataclass(slots=True)
class ScoreDetails:
    """Per-plugin scores of one cycle, kept only when explain is on."""

    raw: dict[str, IntArray] = field(default_factory=dict)
    normalized: dict[str, IntArray] = field(default_factory=dict)
    weights: dict[str, int] = field(default_factory=dict)


_P = TypeVar("_P")


def _quoted(name: str) -> str:
    """A plugin name as upstream's ``%q`` prints it."""
    return f'"{name}"'


def _bind_status(pl: Plugin, st: Status | None) -> Status:
    """What the Bind extension point reports of a plugin that bound the pod or refused to."""
    if st is None or st.code == Code.SUCCESS:
        return Status.success()
    if not st.is_rejected:
        return Status.error(f"running Bind plugin {_quoted(pl.name)}: {st.message}", pl.name)
    st.plugin = pl.name
    return st


def _plugin_error(pl: Plugin, point: ExtensionPoint, message: str) -> PluginError:
    return PluginError(pl.name, point.value, message)


def _score_error(pl: Plugin, exc: Exception) -> PluginError:
    """A Score plugin's failure, worded as upstream's RunScorePlugins words it."""
    return _plugin_error(
        pl, ExtensionPoint.SCORE, f"running Score plugins: plugin {_quoted(pl.name)} failed with: {exc}"
    )


def _scores_of(
    pl: ScorePlugin, state: CycleState, pod: Pod, table: NodeTable, slots: IntArray, check: bool
) -> IntArray:
    raw = np.asarray(pl.score_nodes(state, pod, table, slots), dtype=np.int64)
    if check and raw.shape != slots.shape:
        raise ValueError(f"returned scores of shape {raw.shape}, expected {slots.shape} (one per node)")
    return raw


#: The key of the kept weighted sum, beside the plugins' own names.
_WEIGHTED_SUM = ""


def _row_score_key(pl: ScorePlugin, state: CycleState, pod: Pod) -> Hashable | None:
    key: Hashable | None = pl.row_score_key(state, pod)  # type: ignore[attr-defined]
    return key


def _weighted_sum(
    summed: list[tuple[ScorePlugin, int, Hashable]],
    state: CycleState,
    pod: Pod,
    table: NodeTable,
    rows: IntArray,
) -> IntArray:
    total: IntArray | None = None
    for pl, weight, _ in summed:
        try:
            raw = _scores_of(pl, state, pod, table, rows, check=False)
        except Exception as exc:
            raise _score_error(pl, exc) from exc
        part = raw * weight if weight != 1 else raw
        total = part.copy() if total is None else total + part
    assert total is not None
    return total


def _checked_and_normalizers(
    filters: list[FilterPlugin], score: list[tuple[ScorePlugin, int]]
) -> tuple[frozenset[str], dict[str, Callable[[CycleState, Pod, IntArray], None]]]:
    """Names of the plugins whose answers are checked, and each score plugin's normalizer."""
    # Plugins whose answers are checked (mask shape, score shape and range) on every call: all
    # but the in-tree ones, whose tables test exactly that; the checks cost a few array
    # reductions per plugin per cycle, a measurable share of a cycle.
    checked = frozenset(pl.name for pl in [*filters, *(p for p, _ in score)] if not is_in_tree(type(pl)))
    # Resolved once: a runtime Protocol check per plugin per cycle is measurably slow.
    normalizers: dict[str, Callable[[CycleState, Pod, IntArray], None]] = {
        pl.name: pl.normalize_scores for pl, _ in score if isinstance(pl, ScoreNormalizer)
    }
    return checked, normalizers


class Framework:
    def __init__(
        self, profile: ProfileConfig, registry: Registry, handle: Handle, nominator: PodNominator
    ) -> None:
        self.profile = profile
        self.profile_name = profile.scheduler_name
        self.handle = handle
        self.percentage_of_nodes_to_score = profile.percentage_of_nodes_to_score
        instances, placed = build_plugins(profile, registry, handle)

        def conforming(p: ExtensionPoint, typed: list[_P], protocol: type) -> list[_P]:
            """``typed`` (the plugins at ``p`` that satisfy the protocol), or an error naming the
            first plugin configured at ``p`` that does not."""
            if len(typed) != len(placed[p]):
                bad = next(pl for pl in placed[p] if not isinstance(pl, protocol))
                raise ConfigError(
                    f"plugin {getattr(bad, 'name', type(bad).__name__)} is configured at {p.value} but its "
                    f"class {type(bad).__name__} does not implement {protocol.__name__}",
                    field=f"profiles[{profile.scheduler_name}].plugins.{p.value}",
                )
            return typed

        ep = ExtensionPoint
        self.pre_enqueue = conforming(
            ep.PRE_ENQUEUE,
            [pl for pl in placed[ep.PRE_ENQUEUE] if isinstance(pl, PreEnqueuePlugin)],
            PreEnqueuePlugin,
        )
        sorters = conforming(
            ep.QUEUE_SORT,
            [pl for pl in placed[ep.QUEUE_SORT] if isinstance(pl, QueueSortPlugin)],
            QueueSortPlugin,
        )
        if len(sorters) != 1:
            raise InputError(f"profile {self.profile_name!r} needs exactly one queueSort plugin")
        self.queue_sort = sorters[0]
        self.pre_filter = conforming(
            ep.PRE_FILTER,
            [pl for pl in placed[ep.PRE_FILTER] if isinstance(pl, PreFilterPlugin)],
            PreFilterPlugin,
        )
        self.filter = conforming(
            ep.FILTER, [pl for pl in placed[ep.FILTER] if isinstance(pl, FilterPlugin)], FilterPlugin
        )
        self.filter_names = [p.name for p in self.filter]
        #: Filter plugins that judge only the nodes still in the running (each node costs them a
        #: search, as DynamicResources' allocation): name → their ``filter_candidates``.
        self._candidate_filters = {
            pl.name: pl.filter_candidates for pl in self.filter if isinstance(pl, CandidateFilterPlugin)
        }
        #: Filter plugins that can judge a few rows alone: in-tree ones, and per-node ones through
        #: their adapter (a vectorized out-of-tree plugin's answers are checked, which needs its
        #: whole-table result). Their ``filter_rows`` is looked up per call, as the metrics' timers
        #: replace it in sampled cycles.
        self._row_filters = frozenset(
            pl.name
            for pl in self.filter
            if isinstance(pl, RowFilterPlugin)
            and (is_in_tree(type(pl)) or getattr(type(pl), "filter_rows", None) is ADAPTED_FILTER_ROWS)
        )
        #: Their positions among the Filters, last first.
        self._candidate_filter_indices = [
            i for i in range(len(self.filter) - 1, -1, -1) if self.filter[i].name in self._candidate_filters
        ]
        self.post_filter = conforming(
            ep.POST_FILTER,
            [pl for pl in placed[ep.POST_FILTER] if isinstance(pl, PostFilterPlugin)],
            PostFilterPlugin,
        )
        self.pre_score = conforming(
            ep.PRE_SCORE,
            [pl for pl in placed[ep.PRE_SCORE] if isinstance(pl, PreScorePlugin)],
            PreScorePlugin,
        )
        scorers = conforming(
            ep.SCORE, [pl for pl in placed[ep.SCORE] if isinstance(pl, ScorePlugin)], ScorePlugin
        )
        weights = [ref.weight or 1 for ref in profile.plugins.get(ep.SCORE, [])]
        self.score: list[tuple[ScorePlugin, int]] = list(zip(scorers, weights, strict=True))
        self._checked, self._normalizers = _checked_and_normalizers(self.filter, self.score)
        #: Raw scores kept between cycles for the Score plugins that score each row alone; turned
        #: off (``keep_scores = False``) every row is scored every cycle.
        self.kept_scores = KeptScores()
        self.keep_scores = True
        #: Set while cycles are sampled for plugin metrics: every Score plugin then runs over every
        #: row, as upstream's durations measure it.
        self.kept_scores_paused = False
        self._row_scorers = frozenset(pl.name for pl, _ in self.score if isinstance(pl, RowScorePlugin))
        self._summable = self._row_scorers - self._checked - set(self._normalizers)
        self.reserve = conforming(
            ep.RESERVE, [pl for pl in placed[ep.RESERVE] if isinstance(pl, ReservePlugin)], ReservePlugin
        )
        self.permit = conforming(
            ep.PERMIT, [pl for pl in placed[ep.PERMIT] if isinstance(pl, PermitPlugin)], PermitPlugin
        )
        self.pre_bind = conforming(
            ep.PRE_BIND, [pl for pl in placed[ep.PRE_BIND] if isinstance(pl, PreBindPlugin)], PreBindPlugin
        )
        self.bind = conforming(
            ep.BIND, [pl for pl in placed[ep.BIND] if isinstance(pl, BindPlugin)], BindPlugin
        )
        self.post_bind = conforming(
            ep.POST_BIND,
            [pl for pl in placed[ep.POST_BIND] if isinstance(pl, PostBindPlugin)],
            PostBindPlugin,
        )
        self.plugins: dict[str, object] = instances
        #: PreFilter plugins that keep their state current when a pod is added to / removed from a
        #: node in a "what if" evaluation (upstream PreFilterExtensions).
        self.pre_filter_extensions: list[PreFilterExtensions] = [
            pl for pl in self.pre_filter if isinstance(pl, PreFilterExtensions)
        ]
        #: Nominated pods: the scheduling queue's, shared by every profile of a scheduler.
        self._nominator = nominator
        self.nominated_columns = NominatedColumns()
        nominator.subscribe(self.nominated_columns)
        #: The scheduler's HTTP extenders (preemption asks them about its candidates).
        self.extenders: Sequence[Extender] = ()
        for pl in instances.values():
            if isinstance(pl, FrameworkAware):
                pl.set_framework(self)

    # -- queue -----------------------------------------------------------------------------------
    def queue_sort_key(self) -> Callable[[QueuedPodInfo], Any]:
        if isinstance(self.queue_sort, QueueSortKey):
            return self.queue_sort.sort_key
        less = self.queue_sort.less
        return functools.cmp_to_key(lambda a, b: -1 if less(a, b) else (1 if less(b, a) else 0))

    def run_pre_enqueue(self, pod: Pod) -> Status | None:
        for pl in self.pre_enqueue:
            try:
                st = pl.pre_enqueue(pod)
            except Exception as exc:
                log.exception("PreEnqueue plugin %s failed on pod %s", pl.name, pod.key)
                return Status.error(f"running PreEnqueue plugin {_quoted(pl.name)}: {exc}", pl.name)
            if st is not None and st.code != Code.SUCCESS:
                if st.code == Code.ERROR:
                    return Status.error(
                        f"running PreEnqueue plugin {_quoted(pl.name)}: {st.message}", pl.name
                    )
                st.plugin = pl.name
                return st
        return None

    def events_to_register(self) -> dict[str, list[ClusterEventWithHint]]:
        """Plugin name → the cluster events that may make a pod it rejected schedulable, with their
        queueing hints (upstream's queueingHintMap of this profile).

        Like upstream, a plugin that does not implement ``events_to_register`` is assumed to care
        about every event (we cannot know better); one that registers an empty list is moved only by
        the unschedulable timeout.
        """
        out: dict[str, list[ClusterEventWithHint]] = {}
        for name, pl in self.plugins.items():
            if not isinstance(pl, EnqueueExtensions):
                out[name] = [ClusterEventWithHint(ALL_EVENTS)]
                continue
            out[name] = [
                e if isinstance(e, ClusterEventWithHint) else ClusterEventWithHint(e)
                for e in pl.events_to_register()
            ]
        return out

    # -- scheduling cycle ------------------------------------------------------------------------
    def run_pre_filter(
        self, state: CycleState, pod: Pod, snapshot: Snapshot
    ) -> tuple[PreFilterResult | None, Status | None, set[str]]:
        """Run PreFilter plugins; returns the merged node restriction, a failure status, and the
        plugins that restricted or rejected (upstream's unschedulable plugins)."""
        result: PreFilterResult | None = None
        involved: set[str] = set()
        for pl in self.pre_filter:
            try:
                res, st = pl.pre_filter(state, pod, snapshot)
            except Exception as exc:
                raise self._pre_filter_error(pl, exc) from exc
            if st is not None and st.code == Code.SKIP:
                state.skip_filter_plugins.add(pl.name)
                continue
            if st is not None and st.code != Code.SUCCESS:
                if not st.is_rejected:
                    raise self._pre_filter_error(pl, st.message)
                st.plugin = pl.name
                involved.add(pl.name)
                return None, st, involved
            if res is not None and res.node_names is not None:
                involved.add(pl.name)
                if result is None or result.node_names is None:
                    result = PreFilterResult(set(res.node_names))
                else:
                    result.node_names &= res.node_names
                if not result.node_names:
                    names = sorted(involved)
                    if len(names) == 1:
                        msg = f"node(s) didn't satisfy plugin {names[0]}"
                    else:
                        msg = f"node(s) didn't satisfy plugin(s) [{' '.join(names)}] simultaneously"
                    return result, Status.unschedulable(msg, unresolvable=True, plugin=pl.name), involved
        return result, None, involved

    @staticmethod
    def _pre_filter_error(pl: Plugin, err: object) -> PluginError:
        return _plugin_error(
            pl, ExtensionPoint.PRE_FILTER, f"running PreFilter plugin {_quoted(pl.name)}: {err}"
        )

    def run_filters(
        self,
        state: CycleState,
        pod: Pod,
        table: NodeTable,
        candidates: BoolArray,
        walk: FilterWalk | None = None,
    ) -> tuple[BoolArray, list[FilterResult | None], np.ndarray[Any, np.dtype[np.int16]]]:
        """Run every Filter plugin over all candidate slots at once.

        Returns the feasible mask, each plugin's result (None when skipped) and, per slot, the index of
        the first plugin that rejected it (-1 if none) — upstream stops at a node's first failure.

        With ``walk`` (the cycle's search for feasible nodes), the last Filter that searches per
        node judges only the candidates the walk reaches; the Filters after it run first, so that
        it knows which of its passes make a node feasible.
        """
        remaining = candidates.copy()
        capacity = table.capacity
        passes_all = all_true(capacity)
        # Allocated at the first rejection: most cycles reject no candidate.
        failed_by: np.ndarray[Any, np.dtype[np.int16]] | None = None
        results: list[FilterResult | None] = []
        checked = self._checked
        candidate_filters = self._candidate_filters
        filters = self.filter
        limited = self._walk_limited_filter(state) if walk is not None and candidate_filters else -1
        early: dict[int, FilterResult] = {}
        for i, pl in enumerate(filters):
            if pl.name in state.skip_filter_plugins:
                results.append(None)
                continue
            res = early.pop(i, None) if early else None
            if res is not None:
                pass
            elif i == limited and walk is not None:
                counts = remaining & walk.counts
                for j in range(i + 1, len(filters)):
                    if filters[j].name in state.skip_filter_plugins:
                        continue
                    later = early[j] = self._run_filter(filters[j], state, pod, table, remaining)
                    if later.passed is not passes_all:
                        counts &= later.passed
                plugin_walk = FilterWalk(walk.nodes, walk.start, walk.to_find, counts)
                res = self._run_filter(pl, state, pod, table, remaining, plugin_walk)
            else:
                try:
                    within = candidate_filters.get(pl.name)
                    res = (
                        within(state, pod, table, remaining)
                        if within is not None
                        else pl.filter_nodes(state, pod, table)
                    )
                    if pl.name in checked:
                        _check_filter_result(res, capacity)
                except Exception as exc:
                    raise _plugin_error(
                        pl, ExtensionPoint.FILTER, f"running {_quoted(pl.name)} filter plugin: {exc}"
                    ) from exc
            results.append(res)
            passed = res.passed
            if passed is passes_all:
                continue
            newly_failed = remaining > passed
            if newly_failed.any():
                if failed_by is None:
                    failed_by = np.full(capacity, -1, dtype=np.int16)
                failed_by[newly_failed] = i
                remaining &= passed
        if failed_by is None:
            failed_by = none_failed(capacity)
        return remaining, results, failed_by

    def _run_filter(
        self,
        pl: FilterPlugin,
        state: CycleState,
        pod: Pod,
        table: NodeTable,
        remaining: BoolArray,
        walk: FilterWalk | None = None,
    ) -> FilterResult:
        try:
            within = self._candidate_filters.get(pl.name)
            if within is None:
                res = pl.filter_nodes(state, pod, table)
            elif walk is None:
                res = within(state, pod, table, remaining)
            else:
                res = within(state, pod, table, remaining, walk)
            if pl.name in self._checked:
                _check_filter_result(res, table.capacity)
        except Exception as exc:
            raise _plugin_error(
                pl, ExtensionPoint.FILTER, f"running {_quoted(pl.name)} filter plugin: {exc}"
            ) from exc
        return res

    def rows_walk_possible(self, state: CycleState) -> bool:
        """Whether :meth:`run_filters_on_rows` gives this cycle's verdicts: not while pods are
        nominated (a node with nominated pods is judged twice, over every row), nor while a
        Filter that searches per node is active (it stops along the cycle's walk itself)."""
        return not len(self._nominator) and (
            not self._candidate_filters or self._walk_limited_filter(state) < 0
        )

    def run_filters_on_rows(
        self,
        state: CycleState,
        pod: Pod,
        table: NodeTable,
        rows: IntArray,
        candidates: BoolArray,
        whole: dict[int, BoolArray],
    ) -> BoolArray | None:
        """Whether each of ``rows`` passes every Filter (None: all of them do), as
        :meth:`run_filters` would judge it. A plugin that cannot judge rows alone runs over every
        candidate once per cycle; ``whole`` keeps those verdicts (filter index → mask) for the
        cycle's next chunk."""
        ok: BoolArray | None = None
        row_filters = self._row_filters
        skipped = state.skip_filter_plugins
        for i, pl in enumerate(self.filter):
            if pl.name in skipped:
                continue
            verdict: BoolArray | None
            if pl.name in row_filters:
                try:
                    verdict = pl.filter_rows(state, pod, table, rows)  # type: ignore[attr-defined]
                except Exception as exc:
                    raise _plugin_error(
                        pl, ExtensionPoint.FILTER, f"running {_quoted(pl.name)} filter plugin: {exc}"
                    ) from exc
            else:
                passed = whole.get(i)
                if passed is None:
                    passed = whole[i] = self._run_filter(pl, state, pod, table, candidates).passed
                verdict = None if passed is all_true(table.capacity) else passed[rows]
            if verdict is not None:
                ok = verdict if ok is None else np.logical_and(ok, verdict)
        return ok

    def _walk_limited_filter(self, state: CycleState) -> int:
        """The index of the Filter that may stop at the end of the cycle's walk (-1: none): the
        last active one that searches per node. The Filters after it judge every candidate
        cheaply, so it can tell which nodes are feasible; an earlier per-node Filter could not,
        as a later one's verdict would not be known yet."""
        for i in self._candidate_filter_indices:
            if self.filter[i].name not in state.skip_filter_plugins:
                return i
        return -1

    # -- "what if" evaluations: nominated pods, preemption ------------------------------------------
    def active_pre_filter_extensions(self, state: CycleState) -> list[Any]:
        """PreFilter extensions of plugins whose PreFilter did not return Skip this cycle."""
        return [pl for pl in self.pre_filter_extensions if pl.name not in state.skip_filter_plugins]

    def run_pre_filter_extension_add_pod(
        self, state: CycleState, pod: Pod, pod_to_add: Pod, slot: int
    ) -> None:
        for pl in self.pre_filter_extensions:
            if pl.name in state.skip_filter_plugins:
                continue
            st: Status | None = pl.add_pod(state, pod, pod_to_add, slot)
            if st is not None and st.code != Code.SUCCESS:
                raise FrameworkError(f"running AddPod on PreFilter plugin {pl.name!r}: {st.message}")

    def run_pre_filter_extension_remove_pod(
        self, state: CycleState, pod: Pod, pod_to_remove: Pod, slot: int
    ) -> None:
        for pl in self.pre_filter_extensions:
            if pl.name in state.skip_filter_plugins:
                continue
            st: Status | None = pl.remove_pod(state, pod, pod_to_remove, slot)
            if st is not None and st.code != Code.SUCCESS:
                raise FrameworkError(f"running RemovePod on PreFilter plugin {pl.name!r}: {st.message}")

    def nominated_pods_for(
        self, pod: Pod, table: NodeTable, slots: BoolArray | None = None
    ) -> dict[int, list[Pod]]:
        """Slot → pods nominated there with priority >= the pod's (the pod itself excluded), for the
        nodes upstream's RunFilterPluginsWithNominatedPods would add them to."""
        out: dict[int, list[Pod]] = {}
        if not len(self._nominator):
            return out
        slot_of = table.slot_of
        for node, pods in self._nominator.items():
            slot = slot_of.get(node)
            if slot is None or (slots is not None and not slots[slot]):
                continue
            keep = [p for p in pods.values() if p.priority >= pod.priority and p.uid != pod.uid]
            if keep:
                out[slot] = keep
        return out

    def table_only_filters(self, state: CycleState, pod: Pod) -> bool:
        """True when every active Filter plugin reads only NodeTable columns (no NodeInfo, no
        PreFilter state that follows the node's pods), or says that for this pod it judges by the
        node alone (``filter_ignores_node_pods``)."""
        if self.active_pre_filter_extensions(state):
            return False
        return all(
            name in TABLE_ONLY_FILTERS
            or name in state.skip_filter_plugins
            or self.filter_ignores_node_pods(state, pod, name)
            for name in self.filter_names
        )

    def filter_ignores_node_pods(self, state: CycleState, pod: Pod, name: str) -> bool:
        """Whether the Filter plugin ``name`` says that for ``pod`` its verdict on a node does not
        depend on the node's pods (its ``filter_ignores_node_pods``; False for a plugin without one)."""
        check = getattr(self.plugins.get(name), "filter_ignores_node_pods", None)
        return bool(check is not None and check(state, pod))

    @property
    def nominator(self) -> PodNominator:
        return self._nominator

    @contextmanager
    def node_overlay(self, slots_infos: dict[int, NodeInfo]) -> Iterator[NodeTable]:
        """A fork of the snapshot's table whose rows at the given slots count the pods of the given
        NodeInfos, and those NodeInfos standing in for the nodes' snapshot entries, until the block
        ends (NodeInfo-reading plugins look nodes up in the snapshot). The snapshot's table is never
        written; its NodeInfo entries come back however the block ends."""
        snapshot = self.handle.snapshot
        infos = snapshot.node_infos
        saved: list[tuple[str, NodeInfo | None]] = []
        try:
            with snapshot.table.what_if() as table:
                for slot, info in slots_infos.items():
                    name = table.names[slot]
                    saved.append((name, infos.get(name)))
                    table.set_usage(slot, info)
                    infos[name] = info
                yield table
        finally:
            for name, original in reversed(saved):
                if original is None:
                    infos.pop(name, None)
                else:
                    infos[name] = original

    def run_filters_with_nominated_pods(
        self,
        state: CycleState,
        pod: Pod,
        table: NodeTable,
        candidates: BoolArray,
        walk: FilterWalk | None = None,
    ) -> tuple[BoolArray, list[FilterResult | None], np.ndarray[Any, np.dtype[np.int16]]]:
        """:meth:`run_filters`, counting nominated pods like upstream RunFilterPluginsWithNominatedPods.

        On a node with nominated pods of priority >= the pod's, the filters run twice: with those
        pods added (a cloned state, their PreFilter extensions' ``add_pod``) and without them; the
        node passes only if both pass, and a failure of the first run is the node's status. Nodes
        without such pods — nearly all — keep the one vectorized run.

        ``walk``: the cycle's search for feasible nodes (see :meth:`run_filters`); a node with
        nominated pods never counts toward its end, as the second run may still reject it.
        """
        if walk is not None and len(self._nominator):
            counts = walk.counts.copy()
            slot_of = table.slot_of
            for node, _ in self._nominator.items():
                slot = slot_of.get(node)
                if slot is not None:
                    counts[slot] = False
            walk = FilterWalk(walk.nodes, walk.start, walk.to_find, counts)
        passed, results, failed_by = self.run_filters(state, pod, table, candidates, walk)
        if not len(self._nominator):
            return passed, results, failed_by
        if self.table_only_filters(state, pod):
            # The common case: add the nominated pods to their rows' resource columns and run the
            # filters once over all those nodes.
            slots, requests, nonzero, ports = self.nominated_columns.query(pod, table, candidates)
            if not len(slots):
                return passed, results, failed_by
            if not ports:
                rows = np.zeros(table.capacity, dtype=np.bool_)
                rows[slots] = True
                with table.what_if() as with_nominated:
                    with_nominated.add_usage(slots, requests, nonzero)
                    w_passed, w_results, w_failed_by = self.run_filters(state, pod, with_nominated, rows)
                return _merge_with_pass(passed, results, failed_by, rows, w_passed, w_results, w_failed_by)
        nominated = self.nominated_pods_for(pod, table, candidates)
        if not nominated:
            return passed, results, failed_by
        snapshot = self.handle.snapshot
        extensions = self.active_pre_filter_extensions(state)
        # Without PreFilter extensions the cycle state does not change with the added pods, so all
        # nodes can be evaluated in one run; with them, each node needs its own state (upstream).
        groups = [nominated] if not extensions else [{slot: pods} for slot, pods in nominated.items()]
        for group in groups:
            overlays: dict[int, NodeInfo] = {}
            with_state = state.clone() if extensions else state
            for slot, pods in group.items():
                info = snapshot.node_infos[table.names[slot]].clone()
                for p in pods:
                    info.add_pod(p)
                    if extensions:
                        self.run_pre_filter_extension_add_pod(with_state, pod, p, slot)
                overlays[slot] = info
            rows = np.zeros(table.capacity, dtype=np.bool_)
            rows[list(group)] = True
            with self.node_overlay(overlays) as overlay:
                w_passed, w_results, w_failed_by = self.run_filters(with_state, pod, overlay, rows)
            passed, results, failed_by = _merge_with_pass(
                passed, results, failed_by, rows, w_passed, w_results, w_failed_by
            )
        return passed, results, failed_by

    def filter_status_on(
        self, state: CycleState, pod: Pod, slot: int, info: NodeInfo, *, with_nominated: bool = True
    ) -> Status | None:
        """Upstream RunFilterPluginsWithNominatedPods for one node whose pods are ``info``'s (a
        "what if" copy): None when the pod fits, else the first failing plugin's status."""
        table = self.handle.snapshot.table
        rows = np.zeros(table.capacity, dtype=np.bool_)
        rows[slot] = True
        nominated: list[Pod] = []
        if with_nominated and len(self._nominator):
            # One node: look its nominations up directly rather than walking every nominated node
            # (the generic dry run asks this once per victim put back).
            nominated = [
                p
                for p in self._nominator.pods_for_node(table.names[slot])
                if p.priority >= pod.priority and p.uid != pod.uid
            ]
        if nominated:
            with_info = info.clone()
            with_state = state.clone()
            for p in nominated:
                with_info.add_pod(p)
                self.run_pre_filter_extension_add_pod(with_state, pod, p, slot)
            st = self._node_status(with_state, pod, slot, with_info, rows)
            if st is not None:
                return st
        return self._node_status(state, pod, slot, info, rows)

    def _node_status(
        self, state: CycleState, pod: Pod, slot: int, info: NodeInfo, rows: BoolArray
    ) -> Status | None:
        with self.node_overlay({slot: info}) as overlay:
            passed, results, failed_by = self.run_filters(state, pod, overlay, rows)
        if passed[slot]:
            return None
        idx = int(failed_by[slot])
        res = results[idx]
        assert res is not None
        failures = [f for f in res.failures if f.nodes[slot]]
        unresolvable = any(f.unresolvable for f in failures)
        st = Status.unschedulable(
            *[f.reason for f in failures], unresolvable=unresolvable, plugin=self.filter_names[idx]
        )
        return st

    def diagnose(
        self,
        num_all_nodes: int,
        results: list[FilterResult | None],
        failed_by: np.ndarray[Any, np.dtype[np.int16]],
        evaluated: BoolArray,
    ) -> Diagnosis:
        """Build the reason histogram over the nodes that were actually evaluated."""
        diag = Diagnosis(num_all_nodes, list(self.filter_names), results, failed_by, evaluated=evaluated)
        unresolvable = np.zeros(len(failed_by), dtype=np.bool_)
        for i, res in enumerate(results):
            if res is None:
                continue
            mine = (failed_by == i) & evaluated
            if not mine.any():
                continue
            diag.unschedulable_plugins.add(self.filter_names[i])
            for failure in res.failures:
                hit = failure.nodes & mine
                n = int(np.count_nonzero(hit))
                if n:
                    diag.reason_counts[failure.reason] += n
                    if failure.unresolvable:
                        unresolvable |= hit
        diag.unresolvable = unresolvable
        return diag

    def run_post_filter(self, state: CycleState, pod: Pod, diagnosis: Diagnosis) -> tuple[str | None, Status]:
        """Upstream RunPostFilterPlugins: the first success wins; an unresolvable status ends the run
        with its plugin's nominating decision; after Unschedulable ones, the last decision that was
        not "leave it" (None) stands — DefaultPreemption's "" (clear the nomination) when no node
        can be made to fit."""
        if not self.post_filter:
            return None, Status(Code.UNSCHEDULABLE)
        result: str | None = None
        reasons: list[str] = []
        rejector = ""
        for pl in self.post_filter:
            try:
                nominated, st = pl.post_filter(state, pod, diagnosis)
            except PluginError as exc:
                # Another plugin failed inside this one (preemption runs the filters): its message
                # already names it.
                return None, Status.error(exc.message, exc.plugin)
            except Exception as exc:
                log.exception("PostFilter plugin %s failed on pod %s", pl.name, pod.key)
                return None, Status.error(f"running PostFilter plugin {_quoted(pl.name)}: {exc}", pl.name)
            if st.code == Code.SUCCESS:
                return nominated, st
            if st.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
                st.plugin = st.plugin or pl.name
                return nominated, st
            if st.code != Code.UNSCHEDULABLE:
                st.plugin = st.plugin or pl.name
                return None, st
            if nominated is not None:
                result = nominated
            reasons.extend(st.reasons)
            rejector = rejector or pl.name
        return result, Status(Code.UNSCHEDULABLE, reasons, rejector)

    def run_pre_score(self, state: CycleState, pod: Pod, table: NodeTable, slots: IntArray) -> Status | None:
        for pl in self.pre_score:
            try:
                st = pl.pre_score(state, pod, table, slots)
            except Exception as exc:
                raise _plugin_error(
                    pl, ExtensionPoint.PRE_SCORE, f"running PreScore plugin {_quoted(pl.name)}: {exc}"
                ) from exc
            if st is None or st.code == Code.SUCCESS:
                continue
            if st.code == Code.SKIP:
                state.skip_score_plugins.add(pl.name)
                continue
            # PreScore has no rejection: any other status is an error (upstream).
            raise _plugin_error(
                pl, ExtensionPoint.PRE_SCORE, f"running PreScore plugin {_quoted(pl.name)}: {st.message}"
            )
        return None

    def run_score(
        self, state: CycleState, pod: Pod, table: NodeTable, slots: IntArray, details: ScoreDetails | None
    ) -> IntArray:
        """Score, normalize and weight; returns the total per candidate slot."""
        total: IntArray | None = None
        checked = self._checked
        row_scorers = self._row_scorers
        # A fork's rows differ from its base's under the same stamps.
        keep = self.keep_scores and not self.kept_scores_paused and not table.is_fork
        summed: list[tuple[ScorePlugin, int, Hashable]] = []
        if keep and details is None and self._summable:
            # The plugins whose scores are used as they come (no NormalizeScore, no checks) are
            # kept as one weighted sum per row: one lookup per cycle instead of one per plugin.
            for pl, weight in self.score:
                if pl.name in self._summable and pl.name not in state.skip_score_plugins:
                    key = _row_score_key(pl, state, pod)
                    if key is not None:
                        summed.append((pl, weight, key))
            if summed:
                total = self.kept_scores.raw_scores(
                    _WEIGHTED_SUM,
                    tuple((pl.name, weight, key) for pl, weight, key in summed),
                    table,
                    slots,
                    functools.partial(_weighted_sum, summed, state, pod, table),
                    # In-tree scorers only: they score any valid row.
                    eager=True,
                )
        skip = (
            state.skip_score_plugins.union(pl.name for pl, _, _ in summed)
            if summed
            else state.skip_score_plugins
        )
        for pl, weight in self.score:
            if pl.name in skip:
                continue
            check = pl.name in checked
            try:
                key = _row_score_key(pl, state, pod) if pl.name in row_scorers and keep else None
                if key is None:
                    raw = _scores_of(pl, state, pod, table, slots, check)
                else:
                    raw = self.kept_scores.raw_scores(
                        pl.name,
                        key,
                        table,
                        slots,
                        functools.partial(_scores_of, pl, state, pod, table, check=check),
                    )
            except Exception as exc:
                raise _score_error(pl, exc) from exc
            scores = raw.copy() if details is not None else raw
            normalize = self._normalizers.get(pl.name)
            if normalize is not None:
                try:
                    normalize(state, pod, scores)
                except Exception as exc:
                    raise _plugin_error(
                        pl,
                        ExtensionPoint.SCORE,
                        f"running Normalize on Score plugins: plugin {_quoted(pl.name)} failed with: {exc}",
                    ) from exc
            if check and len(scores) and (scores.max() > MAX_NODE_SCORE or scores.min() < MIN_NODE_SCORE):
                bad = int(scores.max() if scores.max() > MAX_NODE_SCORE else scores.min())
                raise _plugin_error(
                    pl,
                    ExtensionPoint.SCORE,
                    f"applying score defaultWeights on Score plugins: plugin {_quoted(pl.name)} returns an "
                    f"invalid score {bad}, it should in the range of [{MIN_NODE_SCORE}, {MAX_NODE_SCORE}] "
                    "after normalizing",
                )
            if total is None:
                total = scores * weight
            elif weight == 1:
                total += scores
            else:
                total += scores * weight
            if details is not None:
                details.raw[pl.name] = raw
                details.normalized[pl.name] = scores
                details.weights[pl.name] = weight
        if total is None:
            return np.zeros(len(slots), dtype=np.int64)
        return total

    # -- reserve / permit / binding cycle ---------------------------------------------------------
    # These run after the pod was assumed: a failing plugin must not escape, so its exception (or an
    # Error status) becomes an Error status worded like upstream, and the scheduler undoes the
    # assumption and reports it on the pod.
    def run_reserve(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        for pl in self.reserve:
            try:
                st = pl.reserve(state, pod, node_name)
            except Exception as exc:
                log.exception("Reserve plugin %s failed on pod %s", pl.name, pod.key)
                return Status.error(f"running Reserve plugin {_quoted(pl.name)}: {exc}", pl.name)
            if st is not None and st.code != Code.SUCCESS:
                if not st.is_rejected:
                    return Status.error(f"running Reserve plugin {_quoted(pl.name)}: {st.message}", pl.name)
                st.plugin = pl.name
                return st
        return None

    def run_unreserve(self, state: CycleState, pod: Pod, node_name: str) -> None:
        # Upstream calls Unreserve in reverse order of Reserve; Unreserve cannot fail, so a plugin
        # that raises is logged and the others still run.
        for pl in reversed(self.reserve):
            try:
                pl.unreserve(state, pod, node_name)
            except Exception:
                log.exception("Unreserve of plugin %s failed on pod %s", pl.name, pod.key)

    def run_permit(
        self, state: CycleState, pod: Pod, node_name: str
    ) -> tuple[Status | None, dict[str, float]]:
        """Run Permit plugins: a rejection, or Wait with each waiting plugin's timeout (seconds)."""
        waits: dict[str, float] = {}
        for pl in self.permit:
            try:
                st, timeout = pl.permit(state, pod, node_name)
            except Exception as exc:
                log.exception("Permit plugin %s failed on pod %s", pl.name, pod.key)
                return Status.error(f"running Permit plugin {_quoted(pl.name)}: {exc}", pl.name), {}
            if st is None or st.code == Code.SUCCESS:
                continue
            if st.code == Code.WAIT:
                waits[pl.name] = min(max(float(timeout), 0.0), MAX_PERMIT_TIMEOUT)
                continue
            if not st.is_rejected:
                return Status.error(f"running Permit plugin {_quoted(pl.name)}: {st.message}", pl.name), {}
            st.plugin = pl.name
            return st, {}
        if waits:
            return Status(
                Code.WAIT, [f'one or more plugins asked to wait and no plugin rejected pod "{pod.name}"']
            ), waits
        return None, {}

    def run_pre_bind(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        for pl in self.pre_bind:
            try:
                st = pl.pre_bind(state, pod, node_name)
            except Exception as exc:
                log.exception("PreBind plugin %s failed on pod %s", pl.name, pod.key)
                return Status.error(f"running PreBind plugin {_quoted(pl.name)}: {exc}", pl.name)
            if st is not None and st.code not in (Code.SUCCESS, Code.SKIP):
                if not st.is_rejected:
                    return Status.error(f"running PreBind plugin {_quoted(pl.name)}: {st.message}", pl.name)
                st.plugin = pl.name
                return st
        return None

    def run_pre_bind_pre_flights(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        """Upstream ``RunPreBindPreFlights``: Skip when every PreBind plugin says it has nothing to
        do for this pod on this node, None (success) when one will act, an error when one failed.
        A PreBind plugin without ``pre_bind_pre_flight`` is taken to act."""
        acting = False
        for pl in self.pre_bind:
            flight = getattr(pl, "pre_bind_pre_flight", None)
            if flight is None:
                acting = True
                continue
            try:
                st = flight(state, pod, node_name)
            except Exception as exc:
                log.exception("PreBindPreFlight of plugin %s failed on pod %s", pl.name, pod.key)
                return Status.error(f"running PreBindPreFlight {_quoted(pl.name)}: {exc}", pl.name)
            if st is None or st.code == Code.SUCCESS:
                acting = True
            elif st.code != Code.SKIP:
                return Status.error(f"running PreBindPreFlight {_quoted(pl.name)}: {st.message}", pl.name)
        return None if acting else Status(Code.SKIP)

    def run_bind(self, state: CycleState, pod: Pod, node_name: str) -> Status:
        for pl in self.bind:
            try:
                st = pl.bind(state, pod, node_name)
            except Exception as exc:
                log.exception("Bind plugin %s failed on pod %s", pl.name, pod.key)
                return Status.error(f"running Bind plugin {_quoted(pl.name)}: {exc}", pl.name)
            if st is not None and st.code == Code.SKIP:
                continue
            return _bind_status(pl, st)
        return Status(Code.SKIP, ["no bind plugin bound the pod"])

    def can_bind_later(self) -> bool:
        """Whether :meth:`run_bind_later` can start this framework's Bind: its one Bind plugin can
        send the Binding in the background."""
        return len(self.bind) == 1 and bool(getattr(self.bind[0], "binds_later", False))

    def run_bind_later(
        self, state: CycleState, pod: Pod, node_name: str, done: Callable[[Status], None]
    ) -> None:
        """The Bind extension point without waiting for its write (:meth:`can_bind_later` must
        hold): ``done`` is called, from any thread, with what :meth:`run_bind` would have
        returned. Against an API server this saves a thread the wait on the round trip; the
        binding cycle around it is the same."""
        pl = self.bind[0]

        def finished(st: Status | None) -> None:
            if st is not None and st.code == Code.SKIP:
                done(Status(Code.SKIP, ["no bind plugin bound the pod"]))
            else:
                done(_bind_status(pl, st))

        try:
            pl.bind_later(state, pod, node_name, finished)  # type: ignore[attr-defined]
        except Exception as exc:
            log.exception("Bind plugin %s failed on pod %s", pl.name, pod.key)
            done(Status.error(f"running Bind plugin {_quoted(pl.name)}: {exc}", pl.name))

    def run_post_bind(self, state: CycleState, pod: Pod, node_name: str) -> None:
        # PostBind is informational (upstream returns nothing): a failure is logged, not reported.
        for pl in self.post_bind:
            try:
                pl.post_bind(state, pod, node_name)
            except Exception:
                log.exception("PostBind plugin %s failed on pod %s", pl.name, pod.key)


def _check_filter_result(res: object, capacity: int) -> None:
    """A Filter plugin's answer must cover every table slot: a wrong shape would silently pass or
    reject the wrong nodes."""
    if not isinstance(res, FilterResult):
        raise TypeError(f"returned {type(res).__name__}, not a FilterResult")
    passed = res.passed
    if not isinstance(passed, np.ndarray) or passed.dtype != np.bool_ or passed.shape != (capacity,):
        shape = getattr(passed, "shape", None)
        dtype = getattr(passed, "dtype", type(passed).__name__)
        raise ValueError(
            f"returned a FilterResult whose passed mask has shape {shape} and dtype {dtype}, expected a "
            f"bool array of shape ({capacity},) (one entry per NodeTable slot)"
        )
    for failure in res.failures:
        if getattr(failure.nodes, "shape", None) != (capacity,):
            raise ValueError(
                f"returned a failure {failure.reason!r} whose node mask is not of shape ({capacity},)"
            )


def _merge_with_pass(
    passed: BoolArray,
    results: list[FilterResult | None],
    failed_by: np.ndarray[Any, np.dtype[np.int16]],
    rows: BoolArray,
    w_passed: BoolArray,
    w_results: list[FilterResult | None],
    w_failed_by: np.ndarray[Any, np.dtype[np.int16]],
) -> tuple[BoolArray, list[FilterResult | None], np.ndarray[Any, np.dtype[np.int16]]]:
    """A node of ``rows`` passes only if it passed both runs; where the run with nominated pods
    failed, its verdict and reasons are the node's."""
    w_failed = rows & ~w_passed
    if not w_failed.any():
        return passed, results, failed_by
    failed_by = np.where(w_failed, w_failed_by, failed_by).astype(np.int16)
    merged = [_overlay_result(r, w, w_failed) for r, w in zip(results, w_results, strict=True)]
    return passed & ~w_failed, merged, failed_by


def _overlay_result(
    base: FilterResult | None, other: FilterResult | None, rows: BoolArray
) -> FilterResult | None:
    """``other``'s verdicts and reasons on ``rows``, ``base``'s elsewhere."""
    if base is None or other is None:
        return base if other is None else other
    keep = ~rows
    failures = [NodeFailure(f.reason, f.nodes & keep, f.unresolvable, f.detail) for f in base.failures]
    failures += [NodeFailure(f.reason, f.nodes & rows, f.unresolvable, f.detail) for f in other.failures]
    return FilterResult(np.where(rows, other.passed, base.passed), [f for f in failures if f.nodes.any()])
