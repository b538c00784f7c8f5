"""A framework profile: the configured plugins of one schedulerName, run extension point by point."""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from kubesched.api.objects import Pod
from kubesched.cache.cache import Snapshot
from kubesched.cache.node_table import NodeTable
from kubesched.errors import InputError
from kubesched.framework.config import ProfileConfig
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.diagnosis import Diagnosis
from kubesched.framework.extension_points import ExtensionPoint
from kubesched.framework.handle import Handle
from kubesched.framework.interfaces import ScoreNormalizer
from kubesched.framework.registry import Registry
from kubesched.framework.status import Code, Status
from kubesched.framework.types import (
    MAX_NODE_SCORE,
    MIN_NODE_SCORE,
    BoolArray,
    ClusterEvent,
    FilterResult,
    IntArray,
    PreFilterResult,
    QueuedPodInfo,
)
from kubesched.framework.waiting_pods import MAX_PERMIT_TIMEOUT

#: What a plugin without ``events_to_register`` is registered for: any change to anything.
ALL_EVENTS = ClusterEvent("*", "*")


class FrameworkError(Exception):
    """A plugin returned Error or broke a framework contract."""


@dataclass(slots=True)
class ScoreDetails:
    """Per-plugin scores of one cycle, kept only when explain is on."""

    raw: dict[str, IntArray] = field(default_factory=dict)
    normalized: dict[str, IntArray] = field(default_factory=dict)
    weights: dict[str, int] = field(default_factory=dict)


class Framework:
    def __init__(self, profile: ProfileConfig, registry: Registry, handle: Handle) -> None:
        self.profile = profile
        self.profile_name = profile.scheduler_name
        self.handle = handle
        self.percentage_of_nodes_to_score = profile.percentage_of_nodes_to_score
        instances: dict[str, Any] = {}

        def get(name: str) -> Any:
            if name not in instances:
                spec = registry[name]
                try:
                    instances[name] = spec.factory(profile.plugin_args.get(name), handle)
                except InputError:
                    raise
                except (ValueError, TypeError) as exc:
                    raise InputError(
                        f"cannot build plugin {name}: {exc}", field=f"profiles[{profile.scheduler_name}]"
                    ) from exc
            return instances[name]

        def point(p: ExtensionPoint) -> list[Any]:
            return [get(ref.name) for ref in profile.plugins.get(p, [])]

        self.pre_enqueue = point(ExtensionPoint.PRE_ENQUEUE)
        sorters = point(ExtensionPoint.QUEUE_SORT)
        if len(sorters) != 1:
            raise InputError(f"profile {self.profile_name!r} needs exactly one queueSort plugin")
        self.queue_sort = sorters[0]
        self.pre_filter = point(ExtensionPoint.PRE_FILTER)
        self.filter = point(ExtensionPoint.FILTER)
        self.filter_names = [p.name for p in self.filter]
        self.post_filter = point(ExtensionPoint.POST_FILTER)
        self.pre_score = point(ExtensionPoint.PRE_SCORE)
        self.score = [
            (get(ref.name), ref.weight or 1) for ref in profile.plugins.get(ExtensionPoint.SCORE, [])
        ]
        # Resolved once: a runtime Protocol check per plugin per cycle is measurably slow.
        self._normalizers = {
            name: pl.normalize_scores
            for name, pl in ((str(p.name), p) for p, _ in self.score)
            if isinstance(pl, ScoreNormalizer)
        }
        self.reserve = point(ExtensionPoint.RESERVE)
        self.permit = point(ExtensionPoint.PERMIT)
        self.pre_bind = point(ExtensionPoint.PRE_BIND)
        self.bind = point(ExtensionPoint.BIND)
        self.post_bind = point(ExtensionPoint.POST_BIND)
        self.plugins = instances

    # -- queue -----------------------------------------------------------------------------------
    def queue_sort_key(self) -> Callable[[QueuedPodInfo], Any]:
        key = getattr(self.queue_sort, "sort_key", None)
        if callable(key):
            return key  # type: ignore[no-any-return]
        less = self.queue_sort.less
        return functools.cmp_to_key(lambda a, b: -1 if less(a, b) else (1 if less(b, a) else 0))

    def run_pre_enqueue(self, pod: Pod) -> Status | None:
        for pl in self.pre_enqueue:
            st: Status | None = pl.pre_enqueue(pod)
            if st is not None and st.code != Code.SUCCESS:
                st.plugin = pl.name
                return st
        return None

    def events_to_register(self) -> dict[str, list[ClusterEvent]]:
        """Plugin name → the cluster events that may make a pod it rejected schedulable.

        Like upstream, a plugin that does not implement ``events_to_register`` is assumed to care
        about every event (we cannot know better); one that registers an empty list is moved only by
        the unschedulable timeout.
        """
        out: dict[str, list[ClusterEvent]] = {}
        for name, pl in self.plugins.items():
            fn = getattr(pl, "events_to_register", None)
            out[name] = list(fn()) if callable(fn) else [ALL_EVENTS]
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
            res, st = pl.pre_filter(state, pod, snapshot)
            if st is not None and st.code == Code.SKIP:
                state.skip_filter_plugins.add(pl.name)
                continue
            if st is not None and st.code != Code.SUCCESS:
                st.plugin = pl.name
                if st.is_rejected:
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

    def run_filters(
        self, state: CycleState, pod: Pod, table: NodeTable, candidates: BoolArray
    ) -> tuple[BoolArray, list[FilterResult | None], np.ndarray[Any, np.dtype[np.int16]]]:
        """Run every Filter plugin over all candidate slots at once.

        Returns the feasible mask, each plugin's result (None when skipped) and, per slot, the index of
        the first plugin that rejected it (-1 if none) — upstream stops at a node's first failure.
        """
        remaining = candidates.copy()
        failed_by = np.full(table.capacity, -1, dtype=np.int16)
        results: list[FilterResult | None] = []
        for i, pl in enumerate(self.filter):
            if pl.name in state.skip_filter_plugins:
                results.append(None)
                continue
            res = pl.filter_nodes(state, pod, table)
            results.append(res)
            newly_failed = remaining & ~res.passed
            if newly_failed.any():
                failed_by[newly_failed] = i
                remaining &= res.passed
        return remaining, results, failed_by

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
        if not self.post_filter:
            return None, Status(Code.UNSCHEDULABLE)
        last = Status(Code.UNSCHEDULABLE)
        for pl in self.post_filter:
            nominated, st = pl.post_filter(state, pod, diagnosis)
            if st.code == Code.SUCCESS:
                return nominated, st
            if st.code != Code.UNSCHEDULABLE:
                return None, st
            last = st
        return None, last

    def run_pre_score(self, state: CycleState, pod: Pod, table: NodeTable, slots: IntArray) -> Status | None:
        for pl in self.pre_score:
            st: Status | None = pl.pre_score(state, pod, table, slots)
            if st is None or st.code == Code.SUCCESS:
                continue
            if st.code == Code.SKIP:
                state.skip_score_plugins.add(pl.name)
                continue
            st.plugin = pl.name
            return st
        return None

    def run_score(
        self, state: CycleState, pod: Pod, table: NodeTable, slots: IntArray, details: ScoreDetails | None
    ) -> IntArray:
        """Score, normalize and weight; returns the total per candidate slot."""
        total = np.zeros(len(slots), dtype=np.int64)
        for pl, weight in self.score:
            if pl.name in state.skip_score_plugins:
                continue
            raw = np.asarray(pl.score_nodes(state, pod, table, slots), dtype=np.int64)
            scores = raw.copy() if details is not None else raw
            normalize = self._normalizers.get(pl.name)
            if normalize is not None:
                normalize(state, pod, scores)
            if len(scores) and (scores.max() > MAX_NODE_SCORE or scores.min() < MIN_NODE_SCORE):
                raise FrameworkError(
                    f"plugin {pl.name} returned a score outside [{MIN_NODE_SCORE}, {MAX_NODE_SCORE}]"
                )
            total += scores * weight
            if details is not None:
                details.raw[pl.name] = raw
                details.normalized[pl.name] = scores
                details.weights[pl.name] = weight
        return total

    # -- reserve / permit / binding cycle ---------------------------------------------------------
    def run_reserve(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        for pl in self.reserve:
            st: Status | None = pl.reserve(state, pod, node_name)
            if st is not None and st.code != Code.SUCCESS:
                st.plugin = pl.name
                return st
        return None

    def run_unreserve(self, state: CycleState, pod: Pod, node_name: str) -> None:
        # Upstream calls Unreserve in reverse order of Reserve.
        for pl in reversed(self.reserve):
            pl.unreserve(state, pod, node_name)

    def run_permit(
        self, state: CycleState, pod: Pod, node_name: str
    ) -> tuple[Status | None, dict[str, float]]:
        """Run Permit plugins: a rejection, or Wait with each waiting plugin's timeout (seconds)."""
        waits: dict[str, float] = {}
        for pl in self.permit:
            st, timeout = pl.permit(state, pod, node_name)
            if st is None or st.code == Code.SUCCESS:
                continue
            if st.code == Code.WAIT:
                waits[pl.name] = min(max(float(timeout), 0.0), MAX_PERMIT_TIMEOUT)
                continue
            st.plugin = pl.name
            return st, {}
        return (Status(Code.WAIT), waits) if waits else (None, {})

    def run_pre_bind(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        for pl in self.pre_bind:
            st: Status | None = pl.pre_bind(state, pod, node_name)
            if st is not None and st.code not in (Code.SUCCESS, Code.SKIP):
                st.plugin = pl.name
                return st
        return None

    def run_bind(self, state: CycleState, pod: Pod, node_name: str) -> Status:
        for pl in self.bind:
            st: Status | None = pl.bind(state, pod, node_name)
            if st is not None and st.code == Code.SKIP:
                continue
            if st is None or st.code == Code.SUCCESS:
                return Status.success()
            st.plugin = pl.name
            return st
        return Status(Code.SKIP, ["no bind plugin bound the pod"])

    def run_post_bind(self, state: CycleState, pod: Pod, node_name: str) -> None:
        for pl in self.post_bind:
            pl.post_bind(state, pod, node_name)
