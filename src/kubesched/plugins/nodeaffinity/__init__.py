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

from kubesched.api.objects import Node, Pod
from kubesched.api.selectors import NodeSelectorTerm
from kubesched.cache.cache import Snapshot
from kubesched.cache.label_match import match_labels_mask, term_mask, terms_mask
from kubesched.cache.node_table import NodeTable
from kubesched.errors import InputError
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.interfaces import SignFragment
from kubesched.framework.plugin_args import INT32_MAX, NodeAffinityArgs
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

REQUIRED: Final = "requiredDuringSchedulingIgnoredDuringExecution"
PREFERRED: Final = "preferredDuringSchedulingIgnoredDuringExecution"
_NODE_AFFINITY_FIELDS: Final = (REQUIRED, PREFERRED)
_ARGS_FIELD: Final = "pluginConfig.args.addedAffinity"
_POD_FIELD: Final = "spec.affinity.nodeAffinity"
#: Parsed affinities kept at most; the cache starts over beyond it (pods come and go).
_CACHE_LIMIT: Final = 8192

WeightedTerm = tuple[int, NodeSelectorTerm]


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


def _join(path: str, child: str | int) -> str:
    return f"{path}[{child}]" if isinstance(child, int) else f"{path}.{child}"


def _items(value: object) -> Sequence[object] | None:
    """A list field, or None when it is not one."""
    if isinstance(value, Sequence) and not isinstance(value, str | bytes):
        return value
    return None


def _pinned_names(raw_terms: Sequence[object]) -> frozenset[str] | None:
    """Upstream PreFilter: the union over terms of the names each term pins with ``metadata.name In``;
    None as soon as one term pins nothing (terms are ORed, so every node stays possible)."""
    if not raw_terms:
        return None
    union: set[str] = set()
    for raw in raw_terms:
        term_names: set[str] | None = None
        fields = _items(raw.get("matchFields")) if isinstance(raw, Mapping) else None
        for req in fields or ():
            if not isinstance(req, Mapping):
                continue
            if req.get("key") != "metadata.name" or req.get("operator") != "In":
                continue
            names = {v for v in _items(req.get("values")) or () if isinstance(v, str)}
            term_names = names if term_names is None else term_names & names
        if term_names is None:
            return None
        union |= term_names
    return frozenset(union)


def _required_terms(raw: object) -> tuple[tuple[NodeSelectorTerm, ...], frozenset[str] | None]:
    """Parse required terms leniently, like upstream's lazy-error node selector."""
    if not isinstance(raw, Mapping):
        return (), None
    raw_terms = _items(raw.get("nodeSelectorTerms")) or ()
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


def _weight(raw: object, field: str) -> int:
    if isinstance(raw, bool) or not isinstance(raw, int):
        raise InputError(f"must be an integer, got {raw!r}", field=field)
    if not 0 <= raw <= INT32_MAX:
        raise InputError(f"must be in range [0, {INT32_MAX}], got {raw}", field=field)
    return raw


def parse_preferred_terms(raw: object, field: str) -> tuple[WeightedTerm, ...]:
    """Parse ``preferredDuringSchedulingIgnoredDuringExecution``; weight-0 and empty terms are dropped
    (upstream ``NewPreferredSchedulingTerms``). Raises :class:`InputError` naming the bad field."""
    items = _items(raw)
    if items is None:
        raise InputError(f"must be a list, got {type(raw).__name__}", field=field)
    out: list[WeightedTerm] = []
    for i, item in enumerate(items):
        item_field = _join(field, i)
        if not isinstance(item, Mapping):
            raise InputError(f"must be a mapping, got {type(item).__name__}", field=item_field)
        unknown = sorted(str(k) for k in item if k not in ("weight", "preference"))
        if unknown:
            raise InputError(
                "unknown field; expected weight and preference", field=_join(item_field, unknown[0])
            )
        weight = _weight(item.get("weight", 0), _join(item_field, "weight"))
        preference = item.get("preference")
        pref_field = _join(item_field, "preference")
        if preference is None:
            continue
        if not isinstance(preference, Mapping):
            raise InputError(f"must be a mapping, got {type(preference).__name__}", field=pref_field)
        term = NodeSelectorTerm.from_dict(preference, pref_field)
        if weight == 0 or term.is_empty:
            continue
        out.append((weight, term))
    return tuple(out)


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
            preferred = parse_preferred_terms(raw_preferred, _join(_POD_FIELD, PREFERRED))
        except InputError as exc:
            error = str(exc)
    return ParsedNodeAffinity(required, pinned, preferred, error)


def _parse_added_affinity(
    raw: Mapping[str, Any],
) -> tuple[tuple[NodeSelectorTerm, ...] | None, tuple[WeightedTerm, ...]]:
    """Validate ``addedAffinity`` strictly (a bad config is an error, unlike a pod's lazy terms)."""
    for key in raw:
        if key not in _NODE_AFFINITY_FIELDS:
            raise InputError(
                "unknown field; a NodeAffinity has: " + ", ".join(_NODE_AFFINITY_FIELDS),
                field=_join(_ARGS_FIELD, str(key)),
            )
    required: tuple[NodeSelectorTerm, ...] | None = None
    raw_required = raw.get(REQUIRED)
    if raw_required is not None:
        req_field = _join(_ARGS_FIELD, REQUIRED)
        if not isinstance(raw_required, Mapping):
            raise InputError(f"must be a mapping, got {type(raw_required).__name__}", field=req_field)
        for key in raw_required:
            if key != "nodeSelectorTerms":
                raise InputError(
                    "unknown field; a NodeSelector has: nodeSelectorTerms", field=_join(req_field, str(key))
                )
        terms_field = _join(req_field, "nodeSelectorTerms")
        raw_terms = raw_required.get("nodeSelectorTerms")
        items = _items(raw_terms) if raw_terms is not None else ()
        if items is None:
            raise InputError(f"must be a list, got {type(raw_terms).__name__}", field=terms_field)
        parsed: list[NodeSelectorTerm] = []
        for i, raw_term in enumerate(items):
            term_field = _join(terms_field, i)
            if not isinstance(raw_term, Mapping):
                raise InputError(f"must be a mapping, got {type(raw_term).__name__}", field=term_field)
            term = NodeSelectorTerm.from_dict(raw_term, term_field)
            if not term.is_empty:
                parsed.append(term)
        required = tuple(parsed)
    preferred: tuple[WeightedTerm, ...] = ()
    raw_preferred = raw.get(PREFERRED)
    if raw_preferred is not None:
        preferred = parse_preferred_terms(raw_preferred, _join(_ARGS_FIELD, PREFERRED))
    return required, preferred


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
            self.added_required, self.added_preferred = _parse_added_affinity(args.added_affinity)
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
