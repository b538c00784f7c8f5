"""TaintToleration: Filter on NoSchedule/NoExecute taints, Score on PreferNoSchedule taints.

Nodes are grouped by taint signature (their exact taint list), so the Python work per pod is one
evaluation per distinct signature; the per-node answer is a gather over ``table.taint_sig``.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from kubesched.api.objects import Pod
from kubesched.api.taints import Toleration, find_untolerated_taint
from kubesched.cache.node_table import NodeTable
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.interfaces import SignFragment
from kubesched.framework.status import Status
from kubesched.framework.types import ActionType, ClusterEvent, FilterResult, IntArray, NodeFailure
from kubesched.plugins.helper import default_normalize_score
from kubesched.plugins.helper.sign import frozen

HARD_EFFECTS = frozenset({"NoSchedule", "NoExecute"})
PREFER_EFFECTS = frozenset({"PreferNoSchedule"})


#: Upstream names no taint in the Filter reason: taint keys and values may be sensitive, and the reason
#: ends up in pod status and events (kubernetes/kubernetes#134740, cherry-picked to v1.34 in #135023).
ERR_REASON_UNTOLERATED = "node(s) had untolerated taint(s)"


#: Distinct toleration lists remembered; a replay with endless variety starts over past this.
CACHE_LIMIT = 4096


class TaintToleration:
    name: ClassVar[str] = "TaintToleration"

    def sign_pod(self, pod: Pod) -> tuple[tuple[SignFragment, ...], Status | None]:
        return (("TaintToleration.tolerations", frozen(pod.tolerations)),), None

    def __init__(self, args: Any = None, handle: Any = None) -> None:
        # tolerations → (number of signatures evaluated, per-signature reason or None)
        self._filter_cache: dict[tuple[Toleration, ...], list[str | None]] = {}
        self._score_cache: dict[tuple[Toleration, ...], list[int]] = {}

    def events_to_register(self) -> list[ClusterEvent]:
        return [ClusterEvent("Node", ActionType.ADD), ClusterEvent("Node", ActionType.UPDATE)]

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

    def _signature_counts(self, pod: Pod, table: NodeTable) -> list[int]:
        cached = self._score_cache.get(pod.tolerations)
        if cached is None:
            if len(self._score_cache) >= CACHE_LIMIT:
                self._score_cache.clear()
            cached = []
            self._score_cache[pod.tolerations] = cached
        # Only tolerations that can match PreferNoSchedule count for scoring (upstream).
        prefer = [t for t in pod.tolerations if t.effect in ("", "PreferNoSchedule")]
        for taints in table.signatures[len(cached) :]:
            count = 0
            for taint in taints:
                if taint.effect == "PreferNoSchedule" and not any(t.tolerates(taint) for t in prefer):
                    count += 1
            cached.append(count)
        return cached

    def score_nodes(self, state: CycleState, pod: Pod, table: NodeTable, slots: IntArray) -> IntArray:
        counts = np.asarray(self._signature_counts(pod, table), dtype=np.int64)
        return counts[table.taint_sig[slots]]

    def normalize_scores(self, state: CycleState, pod: Pod, scores: IntArray) -> None:
        default_normalize_score(scores, reverse=True)
