"""TaintToleration: Filter on NoSchedule/NoExecute taints, Score on PreferNoSchedule taints.

Nodes are grouped by taint signature (their exact taint list), so the Python work per pod is one
evaluation per distinct signature; the per-node answer is a gather over ``table.taint_sig``.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from kubesched.api.objects import Node, Pod
from kubesched.api.taints import Toleration, find_untolerated_taint
from kubesched.cache.node_table import NodeTable
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.interfaces import SignFragment
from kubesched.framework.status import Status
from kubesched.framework.types import (
    ActionType,
    BoolArray,
    ClusterEvent,
    ClusterEventWithHint,
    FilterResult,
    IntArray,
    NodeFailure,
    QueueingHint,
)
from kubesched.plugins.helper import default_normalize_score
from kubesched.plugins.helper.sign import frozen

PRE_SCORE_KEY = "PreScoreTaintToleration"
HARD_EFFECTS = frozenset({"NoSchedule", "NoExecute"})
PREFER_EFFECTS = frozenset({"PreferNoSchedule"})


#: Upstream names no taint in the Filter reason: taint keys and values may be sensitive, and the reason
#: ends up in pod status and events (kubernetes/kubernetes#134740, cherry-picked to v1.34 in #135023).
ERR_REASON_UNTOLERATED = "node(s) had untolerated taint(s)"


#: Distinct toleration lists remembered; a replay with endless variety starts over past this.
CACHE_LIMIT = 4096


def prefer_no_schedule_tolerations(tolerations: tuple[Toleration, ...]) -> tuple[Toleration, ...]:
    """Only tolerations that can match a PreferNoSchedule taint count for scoring (upstream
    ``getAllTolerationPreferNoSchedule``)."""
    return tuple(t for t in tolerations if t.effect in ("", "PreferNoSchedule"))


class TaintToleration:
    name: ClassVar[str] = "TaintToleration"

    def sign_pod(self, pod: Pod) -> tuple[tuple[SignFragment, ...], Status | None]:
        return (("TaintToleration.tolerations", frozen(pod.tolerations)),), None

    def __init__(self, args: Any = None, handle: Any = None) -> None:
        # tolerations → (number of signatures evaluated, per-signature reason or None)
        self._filter_cache: dict[tuple[Toleration, ...], list[str | None]] = {}
        self._score_cache: dict[tuple[Toleration, ...], list[int]] = {}

    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [
            ClusterEventWithHint(
                ClusterEvent("Node", ActionType.ADD | ActionType.UPDATE_NODE_TAINT),
                self.is_schedulable_after_node_change,
            ),
            ClusterEventWithHint(
                ClusterEvent("Pod", ActionType.UPDATE_POD_TOLERATION),
                self.is_schedulable_after_pod_toleration_change,
            ),
        ]

    def is_schedulable_after_node_change(self, pod: Pod, old: Node | None, new: Node) -> QueueingHint:
        """Queue only when the node went from having a taint the pod does not tolerate (an added node
        counts as having had one) to having none."""
        was_untolerated = old is None or (
            find_untolerated_taint(old.taints, pod.tolerations, HARD_EFFECTS) is not None
        )
        is_untolerated = find_untolerated_taint(new.taints, pod.tolerations, HARD_EFFECTS) is not None
        if was_untolerated and not is_untolerated:
            return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP

    def is_schedulable_after_pod_toleration_change(self, pod: Pod, old: Pod | None, new: Pod) -> QueueingHint:
        """A toleration added to the unschedulable pod itself may make it fit."""
        if new.uid == pod.uid and (old is None or old.tolerations != new.tolerations):
            return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP

    def _signature_reasons(self, pod: Pod, table: NodeTable) -> list[str | None]:
        cached = self._filter_cache.get(pod.tolerations)
        if cached is None:
            if len(self._filter_cache) >= CACHE_LIMIT:
                self._filter_cache.clear()
            cached = []
            self._filter_cache[pod.tolerations] = cached
        for taints in table.signatures[len(cached) :]:
            taint = find_untolerated_taint(taints, pod.tolerations, HARD_EFFECTS)
            cached.append(None if taint is None else ERR_REASON_UNTOLERATED)
        return cached

    def filter_nodes(self, state: CycleState, pod: Pod, table: NodeTable) -> FilterResult:
        reasons = self._signature_reasons(pod, table)
        by_reason: dict[str, list[int]] = {}
        for sid, reason in enumerate(reasons):
            if reason is not None:
                by_reason.setdefault(reason, []).append(sid)
        if not by_reason:
            return FilterResult.all_pass(table.capacity)
        failures = [
            NodeFailure(reason, np.isin(table.taint_sig, sids) & table.valid, unresolvable=True)
            for reason, sids in by_reason.items()
        ]
        failing = np.zeros(table.capacity, dtype=np.bool_)
        for f in failures:
            failing |= f.nodes
        return FilterResult(~failing, failures)

    def filter_rows(self, state: CycleState, pod: Pod, table: NodeTable, rows: IntArray) -> BoolArray | None:
        reasons = self._signature_reasons(pod, table)
        rejected = [sid for sid, reason in enumerate(reasons) if reason is not None]
        if not rejected:
            return None
        passed: BoolArray = ~np.isin(table.taint_sig[rows], rejected)
        return passed

    def pre_score(self, state: CycleState, pod: Pod, table: NodeTable, slots: IntArray) -> Status | None:
        state.write(PRE_SCORE_KEY, prefer_no_schedule_tolerations(pod.tolerations))
        return None

    def _signature_counts(self, pod: Pod, table: NodeTable, prefer: tuple[Toleration, ...]) -> list[int]:
        cached = self._score_cache.get(prefer)
        if cached is None:
            if len(self._score_cache) >= CACHE_LIMIT:
                self._score_cache.clear()
            cached = []
            self._score_cache[prefer] = cached
        for taints in table.signatures[len(cached) :]:
            count = 0
            for taint in taints:
                if taint.effect == "PreferNoSchedule" and not any(t.tolerates(taint) for t in prefer):
                    count += 1
            cached.append(count)
        return cached

    def score_nodes(self, state: CycleState, pod: Pod, table: NodeTable, slots: IntArray) -> IntArray:
        # Without PreScore (disabled at preScore) the tolerations are picked here, as upstream does.
        prefer: tuple[Toleration, ...] | None = state.get(PRE_SCORE_KEY)
        if prefer is None:
            prefer = prefer_no_schedule_tolerations(pod.tolerations)
        counts = self._signature_counts(pod, table, prefer)
        if not any(counts):
            return np.zeros(len(slots), dtype=np.int64)
        return np.asarray(counts, dtype=np.int64)[table.taint_sig[slots]]

    def normalize_scores(self, state: CycleState, pod: Pod, scores: IntArray) -> None:
        default_normalize_score(scores, reverse=True)
