"""NodeAffinity: a pod's ``nodeSelector`` and node affinity, plus the scheduler-enforced ``addedAffinity``.

Filter keeps the nodes that satisfy, in this order, the profile's ``addedAffinity`` required selector
(failing nodes get "node(s) didn't match scheduler-enforced node affinity"), then the pod's
``nodeSelector`` AND its ``requiredDuringSchedulingIgnoredDuringExecution`` terms ("node(s) didn't
match Pod's node affinity/selector"); both are UnschedulableAndUnresolvable. PreFilter narrows the
nodes to those named when every required term pins ``metadata.name`` with ``In``. Score adds the
weights of the matching preferred terms (the pod's and ``addedAffinity``'s), normalized to 0..100.

As upstream, a required term that does not parse (an invalid value, say) matches no node rather than
failing the pod, while a preferred term that does not parse is an error at PreScore.

A pod's affinity is parsed once and cached by the identity of its ``affinity`` mapping; every
per-cycle step is a handful of NumPy operations over the node table (see :mod:`kubesched.cache.label_match`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Final

import numpy as np

from kubesched.api.node_affinity_terms import (
    PREFERRED,
    REQUIRED,
    WeightedTerm,
    join_field,
    list_items,
    parse_added_affinity,
    parse_preferred_terms,
)
from kubesched.api.objects import Node, Pod
from kubesched.api.selectors import NodeSelectorTerm
from kubesched.cache.cache import Snapshot
from kubesched.cache.label_match import match_labels_mask, term_mask, terms_mask
from kubesched.cache.node_table import NodeTable
from kubesched.errors import InputError
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.interfaces import SignFragment
from kubesched.framework.plugin_args import NodeAffinityArgs
from kubesched.framework.status import Code, Status
from kubesched.framework.types import (
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
from kubesched.plugins.helper import default_normalize_score
from kubesched.plugins.helper.sign import frozen

ERR_REASON_POD: Final = "node(s) didn't match Pod's node affinity/selector"
ERR_REASON_ENFORCED: Final = "node(s) didn't match scheduler-enforced node affinity"
ERR_REASON_CONFLICT: Final = "pod affinity terms conflict"

PRE_FILTER_KEY: Final = "PreFilterNodeAffinity"
PRE_SCORE_KEY: Final = "PreScoreNodeAffinity"

_POD_FIELD: Final = "spec.affinity.nodeAffinity"
#: Parsed affinities kept at most; the cache starts over beyond it (pods come and go).
_CACHE_LIMIT: Final = 8192


@dataclass(frozen=True, slots=True)
class ParsedNodeAffinity:
    """What a pod's ``spec.affinity.nodeAffinity`` means to the scheduler."""

    #: Required terms that can match (empty and unparsable ones match nothing and are left out);
    #: None when the pod has no required node affinity at all.
    required: tuple[NodeSelectorTerm, ...] | None = None
    #: PreFilter's node-name restriction: None for no restriction; empty when the terms conflict.
    pinned_names: frozenset[str] | None = None
    #: Preferred terms with a weight and a non-empty preference; None when the pod has none.
    preferred: tuple[WeightedTerm, ...] | None = None
    #: Why the preferred terms do not parse (upstream fails PreScore with it).
    preferred_error: str | None = None


_NO_AFFINITY: Final = ParsedNodeAffinity()


def _pinned_names(raw_terms: Sequence[object]) -> frozenset[str] | None:
    """Upstream PreFilter: the union over terms of the names each term pins with ``metadata.name In``;
    None as soon as one term pins nothing (terms are ORed, so every node stays possible)."""
    if not raw_terms:
        return None
    union: set[str] = set()
    for raw in raw_terms:
        term_names: set[str] | None = None
        fields = list_items(raw.get("matchFields")) if isinstance(raw, Mapping) else None
        for req in fields or ():
            if not isinstance(req, Mapping):
                continue
            if req.get("key") != "metadata.name" or req.get("operator") != "In":
                continue
            names = {v for v in list_items(req.get("values")) or () if isinstance(v, str)}
            term_names = names if term_names is None else term_names & names
        if term_names is None:
            return None
        union |= term_names
    return frozenset(union)


def _required_terms(raw: object) -> tuple[tuple[NodeSelectorTerm, ...], frozenset[str] | None]:
    """Parse required terms leniently, like upstream's lazy-error node selector."""
    if not isinstance(raw, Mapping):
        return (), None
    raw_terms = list_items(raw.get("nodeSelectorTerms")) or ()
    terms: list[NodeSelectorTerm] = []
    for i, raw_term in enumerate(raw_terms):
        if not isinstance(raw_term, Mapping):
            continue
        try:
            term = NodeSelectorTerm.from_dict(raw_term, f"{_POD_FIELD}.{REQUIRED}.nodeSelectorTerms[{i}]")
        except InputError:
            continue  # an unparsable term matches no node
        if not term.is_empty:
            terms.append(term)
    return tuple(terms), _pinned_names(raw_terms)


def parse_pod_node_affinity(affinity: Mapping[str, Any]) -> ParsedNodeAffinity:
    """Parse the ``nodeAffinity`` part of a pod's ``spec.affinity`` (raw mapping)."""
    node_affinity = affinity.get("nodeAffinity")
    if node_affinity is None:
        return _NO_AFFINITY
    if not isinstance(node_affinity, Mapping):
        # Not an object at all: nothing can satisfy it, nothing to prefer.
        return ParsedNodeAffinity(required=())
    required: tuple[NodeSelectorTerm, ...] | None = None
    pinned: frozenset[str] | None = None
    raw_required = node_affinity.get(REQUIRED)
    if raw_required is not None:
        required, pinned = _required_terms(raw_required)
    preferred: tuple[WeightedTerm, ...] | None = None
    error: str | None = None
    raw_preferred = node_affinity.get(PREFERRED)
    if raw_preferred is not None and raw_preferred != []:
        try:
            preferred = parse_preferred_terms(raw_preferred, join_field(_POD_FIELD, PREFERRED))
        except InputError as exc:
            error = str(exc)
    return ParsedNodeAffinity(required, pinned, preferred, error)


@dataclass(frozen=True, slots=True)
class _PreFilterState:
    node_selector: dict[str, str]
    required: tuple[NodeSelectorTerm, ...] | None


class NodeAffinity:
    name: ClassVar[str] = "NodeAffinity"

    def sign_pod(self, pod: Pod) -> tuple[tuple[SignFragment, ...], Status | None]:
        """The pod's nodeSelector and node affinity (the profile's added affinity is the same for all)."""
        return (
            ("NodeAffinity.nodeSelector", frozen(pod.node_selector)),
            ("NodeAffinity.nodeAffinity", frozen(pod.affinity.get("nodeAffinity"))),
        ), None

    def __init__(self, args: NodeAffinityArgs | None = None, handle: Any = None) -> None:
        args = args or NodeAffinityArgs()
        self.added_required: tuple[NodeSelectorTerm, ...] | None = None
        self.added_preferred: tuple[WeightedTerm, ...] = ()
        if args.added_affinity is not None:
            self.added_required, self.added_preferred = parse_added_affinity(args.added_affinity)
        # id(affinity mapping) -> (that mapping, its parse); holding the mapping keeps the id unique.
        self._parsed: dict[int, tuple[Mapping[str, Any], ParsedNodeAffinity]] = {}

    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [
            ClusterEventWithHint(
                ClusterEvent("Node", ActionType.ADD | ActionType.UPDATE_NODE_LABEL),
                self.is_schedulable_after_node_change,
            )
        ]

    def _required_match(self, pod: Pod, node: Node) -> bool:
        """The pod's nodeSelector and required node affinity match ``node`` (upstream
        ``GetRequiredNodeAffinity(pod).Match``)."""
        labels = node.labels
        if any(labels.get(k) != v for k, v in pod.node_selector.items()):
            return False
        required = self.parsed(pod).required
        return required is None or any(t.matches(node.name, labels) for t in required)

    def is_schedulable_after_node_change(self, pod: Pod, old: Node | None, new: Node) -> QueueingHint:
        """Queue when an added node matches the pod's required affinity, or an updated one went from
        not matching to matching; never for a node the scheduler-enforced affinity excludes."""
        if self.added_required is not None and not any(
            t.matches(new.name, new.labels) for t in self.added_required
        ):
            return QueueingHint.QUEUE_SKIP
        if not self._required_match(pod, new):
            return QueueingHint.QUEUE_SKIP
        if old is None:
            return QueueingHint.QUEUE
        if self._required_match(pod, old):
            return QueueingHint.QUEUE_SKIP
        return QueueingHint.QUEUE

    def parsed(self, pod: Pod) -> ParsedNodeAffinity:
        """The pod's parsed node affinity, cached while its ``affinity`` mapping is the same object."""
        affinity = pod.affinity
        if not affinity:
            return _NO_AFFINITY
        hit = self._parsed.get(id(affinity))
        if hit is not None and hit[0] is affinity:
            return hit[1]
        result = parse_pod_node_affinity(affinity)
        if len(self._parsed) >= _CACHE_LIMIT:
            self._parsed.clear()
        self._parsed[id(affinity)] = (affinity, result)
        return result

    # -- PreFilter / Filter ----------------------------------------------------------------------
    def pre_filter(
        self, state: CycleState, pod: Pod, snapshot: Snapshot
    ) -> tuple[PreFilterResult | None, Status | None]:
        parsed = self.parsed(pod)
        if parsed.required is None and self.added_required is None and not pod.node_selector:
            return None, Status(Code.SKIP)
        state.write(PRE_FILTER_KEY, _PreFilterState(pod.node_selector, parsed.required))
        pinned = parsed.pinned_names
        if pinned is None:
            return None, None
        if not pinned:
            return None, Status.unschedulable(ERR_REASON_CONFLICT, unresolvable=True)
        return PreFilterResult(set(pinned)), None

    def filter_nodes(self, state: CycleState, pod: Pod, table: NodeTable) -> FilterResult:
        pre: _PreFilterState | None = state.get(PRE_FILTER_KEY)
        if pre is None:  # PreFilter disabled in this profile
            pre = _PreFilterState(pod.node_selector, self.parsed(pod).required)
        failures: list[NodeFailure] = []
        passed: BoolArray | None = None
        if self.added_required is not None:
            passed = terms_mask(table, self.added_required)
            if not passed.all():
                failures.append(NodeFailure(ERR_REASON_ENFORCED, ~passed, unresolvable=True))
        pod_ok: BoolArray | None = None
        if pre.node_selector:
            pod_ok = match_labels_mask(table, pre.node_selector)
        if pre.required is not None:
            matched = terms_mask(table, pre.required)
            pod_ok = matched if pod_ok is None else np.logical_and(pod_ok, matched, out=pod_ok)
        if pod_ok is not None:
            # A node already rejected by the enforced affinity reports only that reason (upstream
            # returns at the first failure).
            pod_failing = ~pod_ok if passed is None else passed & ~pod_ok
            if pod_failing.any():
                failures.append(NodeFailure(ERR_REASON_POD, pod_failing, unresolvable=True))
            passed = pod_ok if passed is None else np.logical_and(passed, pod_ok, out=passed)
        if passed is None:
            return FilterResult.all_pass(table.capacity)
        return FilterResult(passed, failures)

    # -- PreScore / Score ------------------------------------------------------------------------
    def pre_score(self, state: CycleState, pod: Pod, table: NodeTable, slots: IntArray) -> Status | None:
        parsed = self.parsed(pod)
        if parsed.preferred_error is not None:
            return Status.error(parsed.preferred_error)
        if parsed.preferred is None and not self.added_preferred:
            return Status(Code.SKIP)
        state.write(PRE_SCORE_KEY, parsed.preferred or ())
        return None

    def score_nodes(self, state: CycleState, pod: Pod, table: NodeTable, slots: IntArray) -> IntArray:
        preferred: tuple[WeightedTerm, ...] | None = state.get(PRE_SCORE_KEY)
        if preferred is None:  # PreScore disabled in this profile
            parsed = self.parsed(pod)
            if parsed.preferred_error is not None:
                raise ValueError(parsed.preferred_error)
            preferred = parsed.preferred or ()
        scores = np.zeros(len(slots), dtype=np.int64)
        for weight, term in (*self.added_preferred, *preferred):
            scores += term_mask(table, term, slots) * np.int64(weight)
        return scores

    def normalize_scores(self, state: CycleState, pod: Pod, scores: IntArray) -> None:
        default_normalize_score(scores, reverse=False)
