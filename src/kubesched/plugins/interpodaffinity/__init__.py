"""InterPodAffinity: required and preferred pod affinity and anti-affinity, as upstream kube-scheduler.

**Filter** rejects a node, in this order, when

1. the pod's required affinity is not met: some term's topology key is missing on the node, or no
   existing pod matching *all* the pod's affinity terms sits in the node's domain of some term —
   unless no pod anywhere matches and the pod matches its own terms (the first pod of a group) —
   "node(s) didn't match pod affinity rules" (UnschedulableAndUnresolvable);
2. an existing pod matching one of the pod's required anti-affinity terms sits in that term's domain
   of the node: "node(s) didn't match pod anti-affinity rules" (Unschedulable);
3. an existing pod whose required anti-affinity term matches the pod sits in that term's domain of the
   node: "node(s) didn't satisfy existing pods anti-affinity rules" (Unschedulable).

**Score** sums, per topology domain, the weights of the pod's preferred affinity terms matched by
existing pods (minus those of its preferred anti-affinity terms), ``hardPodAffinityWeight`` for every
existing pod whose *required* affinity term the pod matches, and the weights of existing pods'
preferred affinity (plus) and anti-affinity (minus) terms the pod matches. Each node gets the sum of
its domains; NormalizeScore maps min..max to 0..100.

Nothing here walks pods: PreFilter and PreScore read per-slot counts from the cache's
:class:`~kubesched.cache.pod_index.PodIndex` (pods matching a selector; existing pods' terms grouped
by identical term) and fold them into per-domain counts with one ``bincount`` per distinct term;
Filter and Score are gathers over the NodeTable's label codes.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any, ClassVar, Final

import numpy as np

from kubesched.api.objects import Node, Pod
from kubesched.api.selectors import LabelSelector
from kubesched.cache.affinity_terms import AffinityTerm, PodAffinityTerms, parse_pod_affinity_terms
from kubesched.cache.cache import Snapshot
from kubesched.cache.node_table import NodeTable
from kubesched.cache.pod_index import Clause, PodIndex, TermKind
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.interfaces import SignFragment
from kubesched.framework.plugin_args import InterPodAffinityArgs
from kubesched.framework.status import Code, Status
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
from kubesched.plugins.helper.sign import frozen
from kubesched.plugins.interpodaffinity.topology import DomainCounts, add_at_slot, fold_into_domains, per_node
from kubesched.store.informers import Change, Informer, InformerFactory

__all__ = [
    "ERR_REASON_AFFINITY",
    "ERR_REASON_ANTI_AFFINITY",
    "ERR_REASON_EXISTING_ANTI_AFFINITY",
    "InterPodAffinity",
]

ERR_REASON_EXISTING_ANTI_AFFINITY: Final = "node(s) didn't satisfy existing pods anti-affinity rules"
ERR_REASON_AFFINITY: Final = "node(s) didn't match pod affinity rules"
ERR_REASON_ANTI_AFFINITY: Final = "node(s) didn't match pod anti-affinity rules"

PRE_FILTER_KEY: Final = "PreFilterInterPodAffinity"
PRE_SCORE_KEY: Final = "PreScoreInterPodAffinity"

_NO_LABELS: Final[Mapping[str, str]] = {}
#: Merged terms kept at most; the cache starts over beyond it.
_MERGED_LIMIT: Final = 4096


@dataclass(slots=True)
class _PreFilterState:
    """Per-domain counts for one pod (upstream ``preFilterState``); ``clone`` copies the counts."""

    #: The pod's required terms with their namespaceSelector folded into the namespaces.
    affinity_terms: tuple[AffinityTerm, ...]
    anti_affinity_terms: tuple[AffinityTerm, ...]
    namespace_labels: Mapping[str, str]
    table: NodeTable
    index: PodIndex
    #: Existing pods with a required anti-affinity term matching the pod, per domain.
    existing_anti: DomainCounts
    #: Existing pods matching all the pod's affinity terms, per domain (once per term).
    affinity: DomainCounts
    #: Existing pods matching one of the pod's anti-affinity terms, per domain (once per term).
    anti: DomainCounts
    #: The pod matches all its own affinity terms (the first-pod-of-a-group exception applies).
    matches_own_affinity: bool

    def clone(self) -> _PreFilterState:
        return replace(
            self,
            existing_anti={k: v.copy() for k, v in self.existing_anti.items()},
            affinity={k: v.copy() for k, v in self.affinity.items()},
            anti={k: v.copy() for k, v in self.anti.items()},
        )


class MergedTerms:
    """Terms with their namespaceSelector unrolled into the namespaces it selects, remembered until the
    Namespace informer reports a change to some Namespace (a pass over every Namespace per term and
    cycle otherwise)."""

    def __init__(self, informers: InformerFactory) -> None:
        self.informers = informers
        self._namespaces: Informer[Any] = informers.informer("Namespace")
        self._terms: dict[AffinityTerm, AffinityTerm] = {}
        self._namespaces.add_handler(self._on_namespace, replay=False)

    def _on_namespace(self, _change: Change[Any]) -> None:
        self._terms.clear()

    def get(self, term: AffinityTerm) -> AffinityTerm:
        merged = self._terms.get(term)
        if merged is None:
            selector = term.namespace_selector
            names = set(term.namespaces)
            for obj in self._namespaces.list_raw():
                meta = obj.get("metadata") or {}
                labels = meta.get("labels") or {}
                if selector.matches(labels if isinstance(labels, Mapping) else _NO_LABELS):
                    names.add(str(meta.get("name")))
            merged = AffinityTerm(frozenset(names), term.selector, term.topology_key, LabelSelector.nothing())
            if len(self._terms) >= _MERGED_LIMIT:
                self._terms.clear()
            self._terms[term] = merged
        return merged

    def close(self) -> None:
        self._namespaces.remove_handler(self._on_namespace)


def _merged_clause(term: AffinityTerm) -> Clause:
    """The pod-index clause of an incoming pod's term whose namespaceSelector is already merged:
    an empty (match-all) namespace selector means any namespace."""
    if term.namespace_selector.is_empty:
        return (None, term.selector)
    return (term.namespaces, term.selector)


def _matches_merged(term: AffinityTerm, pod: Pod) -> bool:
    # Merged terms' namespace selector is nothing or everything, so no namespace labels are needed.
    return term.matches(pod.namespace, pod.labels, _NO_LABELS)


_HintTerms = tuple[tuple[AffinityTerm, ...], tuple[AffinityTerm, ...]]


def _matches_all(terms: tuple[AffinityTerm, ...], pod: Pod) -> bool:
    """Upstream ``podMatchesAllAffinityTerms``: no terms match nothing. Namespace selectors are
    matched against no labels, as upstream's hint does."""
    return bool(terms) and all(t.matches(pod.namespace, pod.labels, _NO_LABELS) for t in terms)


def _any_positive(counts: DomainCounts) -> bool:
    return any(bool((v > 0).any()) for v in counts.values())


class InterPodAffinity:
    name: ClassVar[str] = "InterPodAffinity"

    def sign_pod(self, pod: Pod) -> tuple[tuple[SignFragment, ...], Status | None]:
        """A pod with affinity or anti-affinity terms of its own cannot be signed. Otherwise existing
        pods' terms decide by the pod's namespace and labels, which go into the signature."""
        if pod.affinity.get("podAffinity") or pod.affinity.get("podAntiAffinity"):
            return (), Status.unschedulable("pods with inter-pod affinity are not signable")
        return (
            ("InterPodAffinity.namespace", pod.namespace),
            ("InterPodAffinity.labels", frozen(pod.labels)),
        ), None

    def __init__(self, args: InterPodAffinityArgs | None = None, handle: Any = None) -> None:
        args = args or InterPodAffinityArgs()
        self.hard_pod_affinity_weight = args.hard_pod_affinity_weight
        self.ignore_preferred_terms_of_existing_pods = args.ignore_preferred_terms_of_existing_pods
        self.handle = handle
        #: Opened at the first term with a namespaceSelector.
        self._merged: MergedTerms | None = None
        #: id(affinity mapping) → (mapping, namespace, labels, (required affinity, anti-affinity)).
        self._hint_cache: dict[int, tuple[Any, str, Mapping[str, str], _HintTerms]] = {}

    def events_to_register(self) -> list[ClusterEventWithHint]:
        # A scheduled pod arriving (a partner for affinity), leaving or relabelled (room for
        # anti-affinity); a node added or relabelled can bring a topology domain. Upstream keeps
        # UpdateNodeTaint too, for nodes whose Add an old pre-check filtered out.
        return [
            ClusterEventWithHint(
                ClusterEvent("Pod", ActionType.ADD | ActionType.UPDATE_POD_LABEL | ActionType.DELETE),
                self.is_schedulable_after_pod_change,
            ),
            ClusterEventWithHint(
                ClusterEvent(
                    "Node", ActionType.ADD | ActionType.UPDATE_NODE_LABEL | ActionType.UPDATE_NODE_TAINT
                ),
                self.is_schedulable_after_node_change,
            ),
        ]

    # -- queueing hints --------------------------------------------------------------------------
    def _hint_terms(self, pod: Pod) -> tuple[tuple[AffinityTerm, ...], tuple[AffinityTerm, ...]]:
        """The pod's required affinity and anti-affinity terms, parsed once per affinity mapping
        (hints run for every unschedulable pod on every event)."""
        affinity = pod.affinity
        if not affinity:
            return (), ()
        hit = self._hint_cache.get(id(affinity))
        if hit is not None and hit[0] is affinity and hit[1] == pod.namespace and hit[2] == pod.labels:
            return hit[3]
        terms = parse_pod_affinity_terms(affinity, pod.namespace, pod.labels)
        parsed = (terms.required_affinity, terms.required_anti_affinity)
        if len(self._hint_cache) >= _MERGED_LIMIT:
            self._hint_cache.clear()
        self._hint_cache[id(affinity)] = (affinity, pod.namespace, pod.labels, parsed)
        return parsed

    def is_schedulable_after_pod_change(self, pod: Pod, old: Pod | None, new: Pod | None) -> QueueingHint:
        """Queue when the pod itself changed; when a scheduled pod now matches all the pod's affinity
        terms (added, or relabelled into them) or no longer matches all its anti-affinity terms
        (deleted, or relabelled out); or when a deleted scheduled pod's own required anti-affinity
        matched the pod."""
        if new is not None and new.uid == pod.uid:
            return QueueingHint.QUEUE
        if (new is not None and not new.node_name) or (old is not None and not old.node_name):
            return QueueingHint.QUEUE_SKIP
        terms, anti_terms = self._hint_terms(pod)
        if new is not None and old is not None:
            if not _matches_all(terms, old) and _matches_all(terms, new):
                return QueueingHint.QUEUE
            if _matches_all(anti_terms, old) and not _matches_all(anti_terms, new):
                return QueueingHint.QUEUE
            return QueueingHint.QUEUE_SKIP
        if new is not None:
            return QueueingHint.QUEUE if _matches_all(terms, new) else QueueingHint.QUEUE_SKIP
        assert old is not None
        if _matches_all(anti_terms, old):
            return QueueingHint.QUEUE
        namespace_labels = self._namespace_labels(pod.namespace)
        if any(t.matches(pod.namespace, pod.labels, namespace_labels) for t in self._hint_terms(old)[1]):
            return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP

    def is_schedulable_after_node_change(self, pod: Pod, old: Node | None, new: Node) -> QueueingHint:
        """Queue when a node brings an affinity domain (added with, or given, a term's topology key, or
        moved to another value of it) or may leave an anti-affinity domain (added, or losing or
        changing a term's topology key)."""
        terms, anti_terms = self._hint_terms(pod)
        for t in terms:
            key = t.topology_key
            if key in new.labels and (old is None or old.labels.get(key) != new.labels[key]):
                return QueueingHint.QUEUE
        for t in anti_terms:
            key = t.topology_key
            if old is None or (key in old.labels and old.labels[key] != new.labels.get(key)):
                return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP

    # -- namespaces ------------------------------------------------------------------------------
    def _namespace_labels(self, namespace: str) -> Mapping[str, str]:
        """Labels of the pod's Namespace object; none when it does not exist (as upstream)."""
        informers = getattr(self.handle, "informers", None)
        if informers is None:
            return _NO_LABELS
        obj = informers.informer("Namespace").get_raw(None, namespace)
        if obj is None:
            return _NO_LABELS
        labels = (obj.get("metadata") or {}).get("labels") or {}
        return labels if isinstance(labels, Mapping) else _NO_LABELS

    def _merge_namespaces(self, term: AffinityTerm) -> AffinityTerm:
        """Upstream ``mergeAffinityTermNamespacesIfNotEmpty``: unroll a non-empty namespaceSelector of
        the incoming pod's term into the namespaces it selects now."""
        selector = term.namespace_selector
        if selector.is_empty or selector.match_nothing:
            return term
        informers = getattr(self.handle, "informers", None)
        if informers is None:
            return AffinityTerm(term.namespaces, term.selector, term.topology_key, LabelSelector.nothing())
        merged = self._merged
        if merged is None or merged.informers is not informers:
            if merged is not None:
                merged.close()
            merged = self._merged = MergedTerms(informers)
        return merged.get(term)

    def _index(self) -> PodIndex:
        snapshot: Snapshot = self.handle.snapshot
        return snapshot.pod_index

    # -- PreFilter / Filter ----------------------------------------------------------------------
    def pre_filter(
        self, state: CycleState, pod: Pod, snapshot: Snapshot
    ) -> tuple[PreFilterResult | None, Status | None]:
        index = snapshot.pod_index
        terms = index.terms_of(pod)
        if (
            terms.error is None
            and not terms.required_affinity
            and not terms.required_anti_affinity
            and not index.has_terms(TermKind.REQUIRED_ANTI_AFFINITY)
        ):
            return None, Status(Code.SKIP)  # nothing can constrain this pod: skip the bookkeeping
        built = self._build_pre_filter_state(pod, snapshot.table, index)
        if isinstance(built, Status):
            return None, built
        if not built.existing_anti and not built.affinity_terms and not built.anti_affinity_terms:
            return None, Status(Code.SKIP)
        state.write(PRE_FILTER_KEY, built)
        return None, None

    def _build_pre_filter_state(
        self, pod: Pod, table: NodeTable, index: PodIndex
    ) -> _PreFilterState | Status:
        terms = index.terms_of(pod)
        if terms.error is not None:
            return Status.unschedulable(f"parsing pod: {terms.error}", unresolvable=True)
        namespace_labels = self._namespace_labels(pod.namespace)
        affinity_terms = tuple(self._merge_namespaces(t) for t in terms.required_affinity)
        anti_terms = tuple(self._merge_namespaces(t) for t in terms.required_anti_affinity)

        existing_anti: DomainCounts = {}
        for group in index.term_groups(TermKind.REQUIRED_ANTI_AFFINITY):
            term = group.term
            if term.matches(pod.namespace, pod.labels, namespace_labels):
                fold_into_domains(existing_anti, table, term.topology_key, index.group_counts(group))

        affinity: DomainCounts = {}
        if affinity_terms:
            matching_all = index.matching_all_counts(
                tuple(_merged_clause(t) for t in affinity_terms), include_terminating=True
            )
            for term in affinity_terms:
                fold_into_domains(affinity, table, term.topology_key, matching_all)

        anti: DomainCounts = {}
        for term in anti_terms:
            matching = index.matching_all_counts((_merged_clause(term),), include_terminating=True)
            fold_into_domains(anti, table, term.topology_key, matching)

        return _PreFilterState(
            affinity_terms=affinity_terms,
            anti_affinity_terms=anti_terms,
            namespace_labels=namespace_labels,
            table=table,
            index=index,
            existing_anti=existing_anti,
            affinity=affinity,
            anti=anti,
            matches_own_affinity=bool(affinity_terms)
            and all(_matches_merged(t, pod) for t in affinity_terms),
        )

    def filter_nodes(self, state: CycleState, pod: Pod, table: NodeTable) -> FilterResult:
        pre: _PreFilterState | None = state.get(PRE_FILTER_KEY)
        if pre is None:  # PreFilter disabled in this profile: compute what it would have
            built = self._build_pre_filter_state(pod, table, self._index())
            if isinstance(built, Status):
                return FilterResult.reject(
                    np.ones(table.capacity, dtype=np.bool_), built.message, unresolvable=True
                )
            pre = built
        capacity = table.capacity
        failures: list[NodeFailure] = []

        affinity_fail = np.zeros(capacity, dtype=np.bool_)
        if pre.affinity_terms:
            missing_key = np.zeros(capacity, dtype=np.bool_)
            no_partner = np.zeros(capacity, dtype=np.bool_)
            for term in pre.affinity_terms:
                column = table.labels.get(term.topology_key)
                if column is None:
                    missing_key[:] = True
                    continue
                missing_key |= column.codes < 0
                counts = pre.affinity.get(term.topology_key)
                if counts is None:
                    no_partner[:] = True
                else:
                    no_partner |= per_node(table, term.topology_key, counts) <= 0
            # The first pod of a group that has affinity to itself may go anywhere the keys exist.
            if not (pre.matches_own_affinity and not _any_positive(pre.affinity)):
                missing_key |= no_partner
            affinity_fail = missing_key
            if affinity_fail.any():
                failures.append(NodeFailure(ERR_REASON_AFFINITY, affinity_fail, unresolvable=True))

        anti_fail = np.zeros(capacity, dtype=np.bool_)
        if pre.anti:
            for term in pre.anti_affinity_terms:
                counts = pre.anti.get(term.topology_key)
                if counts is not None:
                    anti_fail |= per_node(table, term.topology_key, counts) > 0
            anti_fail &= ~affinity_fail
            if anti_fail.any():
                failures.append(NodeFailure(ERR_REASON_ANTI_AFFINITY, anti_fail))

        existing_fail = np.zeros(capacity, dtype=np.bool_)
        if pre.existing_anti:
            for key, counts in pre.existing_anti.items():
                existing_fail |= per_node(table, key, counts) > 0
            existing_fail &= ~(affinity_fail | anti_fail)
            if existing_fail.any():
                failures.append(NodeFailure(ERR_REASON_EXISTING_ANTI_AFFINITY, existing_fail))

        if not failures:
            return FilterResult.all_pass(capacity)
        passed: BoolArray = ~(affinity_fail | anti_fail | existing_fail)
        return FilterResult(passed, failures)

    # -- PreFilter extensions (preemption's what-if) ----------------------------------------------
    def add_pod(self, state: CycleState, pod: Pod, pod_to_add: Pod, slot: int) -> Status | None:
        """Count ``pod_to_add`` as if it ran on the node in ``slot`` (upstream ``AddPod``)."""
        return self._update_with_pod(state, pod, pod_to_add, slot, 1)

    def remove_pod(self, state: CycleState, pod: Pod, pod_to_remove: Pod, slot: int) -> Status | None:
        """Stop counting ``pod_to_remove`` on the node in ``slot`` (upstream ``RemovePod``)."""
        return self._update_with_pod(state, pod, pod_to_remove, slot, -1)

    def _update_with_pod(
        self, state: CycleState, pod: Pod, other: Pod, slot: int, sign: int
    ) -> Status | None:
        pre: _PreFilterState | None = state.get(PRE_FILTER_KEY)
        if pre is None:
            return None
        table = pre.table
        for term in pre.index.terms_of(other).required_anti_affinity:
            if term.matches(pod.namespace, pod.labels, pre.namespace_labels):
                add_at_slot(pre.existing_anti, table, term.topology_key, slot, sign)
        if pre.affinity_terms and all(_matches_merged(t, other) for t in pre.affinity_terms):
            for term in pre.affinity_terms:
                add_at_slot(pre.affinity, table, term.topology_key, slot, sign)
        for term in pre.anti_affinity_terms:
            if _matches_merged(term, other):
                add_at_slot(pre.anti, table, term.topology_key, slot, sign)
        return None

    # -- PreScore / Score ------------------------------------------------------------------------
    def pre_score(self, state: CycleState, pod: Pod, table: NodeTable, slots: IntArray) -> Status | None:
        index = self._index()
        terms: PodAffinityTerms = index.terms_of(pod)
        if terms.error is not None:
            return Status.error(f"failed to parse pod: {terms.error}")
        if self.ignore_preferred_terms_of_existing_pods and not terms.has_preferred:
            return Status(Code.SKIP)
        if len(slots) == 0:
            return Status(Code.SKIP)
        if not (
            terms.preferred_affinity
            or terms.preferred_anti_affinity
            or index.has_terms(TermKind.PREFERRED_AFFINITY)
            or index.has_terms(TermKind.PREFERRED_ANTI_AFFINITY)
            or (self.hard_pod_affinity_weight > 0 and index.has_terms(TermKind.REQUIRED_AFFINITY))
        ):
            return Status(Code.SKIP)  # no term anywhere could score
        namespace_labels = self._namespace_labels(pod.namespace)
        scores: DomainCounts = {}
        counted = False
        for weighted, sign in (
            *((w, 1) for w in terms.preferred_affinity),
            *((w, -1) for w in terms.preferred_anti_affinity),
        ):
            term = self._merge_namespaces(weighted.term)
            matching = index.matching_all_counts((_merged_clause(term),), include_terminating=True)
            counted |= fold_into_domains(scores, table, term.topology_key, matching, sign * weighted.weight)
        existing: list[tuple[TermKind, int]] = [
            (TermKind.PREFERRED_AFFINITY, 1),
            (TermKind.PREFERRED_ANTI_AFFINITY, -1),
        ]
        if self.hard_pod_affinity_weight > 0:
            existing.insert(0, (TermKind.REQUIRED_AFFINITY, self.hard_pod_affinity_weight))
        for kind, factor in existing:
            for group in index.term_groups(kind):
                term = group.term
                if term.matches(pod.namespace, pod.labels, namespace_labels):
                    counts = index.group_counts(group)
                    counted |= fold_into_domains(scores, table, term.topology_key, counts, factor)
        if not counted:
            return Status(Code.SKIP)
        state.write(PRE_SCORE_KEY, scores)
        return None

    def score_nodes(self, state: CycleState, pod: Pod, table: NodeTable, slots: IntArray) -> IntArray:
        scores_by_domain: DomainCounts | None = state.get(PRE_SCORE_KEY)
        total = np.zeros(len(slots), dtype=np.int64)
        for key, domains in (scores_by_domain or {}).items():
            total += per_node(table, key, domains, slots)
        return total

    def normalize_scores(self, state: CycleState, pod: Pod, scores: IntArray) -> None:
        """Upstream NormalizeScore: ``int64(100 * (score - min) / (max - min))`` in float64."""
        if not state.get(PRE_SCORE_KEY) or len(scores) == 0:
            return
        low = int(scores.min())
        spread = int(scores.max()) - low
        if spread <= 0:
            scores[:] = 0
            return
        scaled = float(MAX_NODE_SCORE) * ((scores - low).astype(np.float64) / float(spread))
        scores[:] = scaled.astype(np.int64)
