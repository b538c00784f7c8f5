"""PodTopologySpread: spread matching pods evenly over topology domains (zones, nodes, ...).

**Filter** (``whenUnsatisfiable: DoNotSchedule``). PreFilter counts, per constraint and per domain
(a value of the constraint's ``topologyKey``), the pods in the incoming pod's namespace that match
the constraint's selector, over the *eligible* nodes: nodes that carry every DoNotSchedule
constraint's topology key and pass the constraint's inclusion policies (``nodeAffinityPolicy``,
Honor by default: the pod's nodeSelector and required node affinity; ``nodeTaintsPolicy``, Ignore by
default: Honor drops nodes with untolerated NoSchedule/NoExecute taints). Filter rejects a node when
``count(its domain) + (1 if the pod matches the selector) - global minimum > maxSkew`` ("node(s)
didn't match pod topology spread constraints", Unschedulable), and a node without a topology key
with "... (missing required label)" (UnschedulableAndUnresolvable). The global minimum is the
smallest count over eligible domains, or 0 while fewer than ``minDomains`` domains exist.

**Score** (``ScheduleAnyway``). Per constraint, a node scores ``count * log(domains + 2) + maxSkew -
1`` summed over constraints whose key the node has (hostname constraints count the node's own pods
and weigh by the number of scored nodes); fewer matching pods is better after normalization
``100 * (max + min - score) / max``. Nodes lacking a key are not scored (0), except under the system
default constraints, where a node without a zone label is still spread by hostname.

A pod without constraints of its own gets the plugin's default constraints (``defaultingType:
System``: hostname maxSkew 3 and zone maxSkew 5, both ScheduleAnyway; or the configured
``defaultConstraints``) with the selector of its workload (upstream ``DefaultSelector``: the
Services selecting it, and the ReplicationController / ReplicaSet / StatefulSet controlling it),
and none when that selector is empty.

Pod counts per node come from the snapshot's pod index; each step is a few NumPy operations over
the node table (``bincount`` per domain, one gather per node).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Final

import numpy as np
from numpy.typing import NDArray

from kubesched.api.objects import HOSTNAME_LABEL, ZONE_LABEL, Node, Pod
from kubesched.api.selectors import LabelSelector
from kubesched.api.taints import Toleration, find_untolerated_taint
from kubesched.api.topology_spread import (
    DO_NOT_SCHEDULE,
    HONOR,
    IGNORE,
    SCHEDULE_ANYWAY,
    TopologySpreadConstraint,
    parse_default_constraint,
    parse_topology_spread_constraints,
)
from kubesched.cache.cache import Snapshot
from kubesched.cache.label_match import match_labels_mask, terms_mask
from kubesched.cache.node_table import NodeTable
from kubesched.errors import InputError
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.interfaces import SignFragment
from kubesched.framework.plugin_args import PodTopologySpreadArgs
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
from kubesched.plugins.helper.spread import CACHE_LIMIT, workload_selectors
from kubesched.plugins.nodeaffinity import ParsedNodeAffinity, parse_pod_node_affinity
from kubesched.plugins.tainttoleration import HARD_EFFECTS

__all__ = [
    "ERR_REASON_CONSTRAINTS_NOT_MATCH",
    "ERR_REASON_NODE_LABEL_NOT_MATCH",
    "SYSTEM_DEFAULT_CONSTRAINTS",
    "PodTopologySpread",
    "PreFilterState",
    "PreScoreState",
    "SpreadConstraint",
]

ERR_REASON_CONSTRAINTS_NOT_MATCH: Final = "node(s) didn't match pod topology spread constraints"
ERR_REASON_NODE_LABEL_NOT_MATCH: Final = ERR_REASON_CONSTRAINTS_NOT_MATCH + " (missing required label)"

PRE_FILTER_KEY: Final = "PreFilterPodTopologySpread"
PRE_SCORE_KEY: Final = "PreScorePodTopologySpread"
_COUNTS_KEY: Final = "PodTopologySpread/counts"
_DEFAULT_SELECTOR_KEY: Final = "PodTopologySpread/defaultSelector"

#: Upstream ``systemDefaultConstraints`` (``defaultingType: System``).
SYSTEM_DEFAULT_CONSTRAINTS: Final = (
    TopologySpreadConstraint(3, HOSTNAME_LABEL, SCHEDULE_ANYWAY, LabelSelector.nothing()),
    TopologySpreadConstraint(5, ZONE_LABEL, SCHEDULE_ANYWAY, LabelSelector.nothing()),
)

Int32Array = NDArray[np.int32]
#: A pod's parsed constraints, or why they do not parse.
_Parsed = tuple[TopologySpreadConstraint, ...] | InputError


@dataclass(frozen=True, slots=True)
class SpreadConstraint:
    """A constraint as the plugin applies it: the selector is final (``matchLabelKeys`` merged in,
    or the workload selector for a default constraint) and ``minDomains`` is defaulted to 1."""

    max_skew: int
    topology_key: str
    selector: LabelSelector
    min_domains: int = 1
    node_affinity_policy: str = HONOR
    node_taints_policy: str = IGNORE


def _no_labels(table: NodeTable) -> Int32Array:
    return np.full(table.capacity, -1, dtype=np.int32)


def _codes(table: NodeTable, key: str) -> Int32Array:
    """The dictionary codes of a label key per slot (-1: the node lacks the label)."""
    column = table.labels.get(key)
    return column.codes if column is not None else _no_labels(table)


def _vocab_size(table: NodeTable, key: str) -> int:
    column = table.labels.get(key)
    return len(column.values) if column is not None else 0


def _keys_present(table: NodeTable, constraints: Sequence[SpreadConstraint]) -> BoolArray:
    """Nodes that carry every constraint's topology key (upstream ``nodeLabelsMatchSpreadConstraints``)."""
    mask = table.valid.copy()
    for c in constraints:
        np.logical_and(mask, _codes(table, c.topology_key) >= 0, out=mask)
    return mask


def _min_match(counts: IntArray, present: BoolArray, min_domains: int) -> int:
    """The global minimum the skew is measured against: the fewest matching pods in any eligible
    domain, or 0 while fewer than ``minDomains`` domains are eligible."""
    domains = int(np.count_nonzero(present))
    if domains < min_domains or domains == 0:
        return 0
    return int(counts[present].min())


@dataclass(slots=True, eq=False)
class PreFilterState:
    """What PreFilter computed for the DoNotSchedule constraints; Filter reads it, and preemption
    updates a :meth:`clone` of it through ``add_pod`` / ``remove_pod``."""

    constraints: tuple[SpreadConstraint, ...]
    #: Whether the incoming pod matches each constraint's selector (its own "+1").
    self_match: tuple[bool, ...]
    #: Per slot: the node carries every constraint's topology key.
    keys_present: BoolArray
    #: Per constraint, per slot: the node counts towards the constraint (keys and inclusion policies).
    eligible: tuple[BoolArray, ...]
    #: Per constraint: the topology label codes per slot (the node table's column, not a copy).
    codes: tuple[Int32Array, ...]
    #: Per constraint, per domain code: matching pods on eligible nodes.
    counts: list[IntArray]
    #: Per constraint, per domain code: whether an eligible node is in that domain.
    present: list[BoolArray]

    def min_match(self, i: int) -> int:
        return _min_match(self.counts[i], self.present[i], self.constraints[i].min_domains)

    def clone(self) -> PreFilterState:
        """An independent copy: the counts can change, the rest is shared read-only."""
        return PreFilterState(
            self.constraints,
            self.self_match,
            self.keys_present,
            self.eligible,
            self.codes,
            [c.copy() for c in self.counts],
            [p.copy() for p in self.present],
        )


@dataclass(slots=True, eq=False)
class PreScoreState:
    """What PreScore computed for the ScheduleAnyway constraints."""

    constraints: tuple[SpreadConstraint, ...]
    #: Per slot: nodes left unscored because they lack a topology key.
    ignored: BoolArray
    #: Per constraint: ``log(domains + 2)``.
    weights: tuple[float, ...]
    #: Per constraint: per slot domain index (None for hostname constraints).
    domains: tuple[IntArray | None, ...]
    #: Per constraint: matching pods per domain index (None for hostname constraints).
    domain_counts: tuple[IntArray | None, ...]
    #: Per constraint: matching pods per slot (used for hostname constraints).
    node_counts: tuple[IntArray, ...]
    #: Which positions of the last scored slots were ignored (set by Score, read by NormalizeScore).
    ignored_positions: BoolArray | None = field(default=None)

    def clone(self) -> PreScoreState:
        return self  # read-only after PreScore, as upstream


class PodTopologySpread:
    name: ClassVar[str] = "PodTopologySpread"

    def sign_pod(self, pod: Pod) -> tuple[tuple[SignFragment, ...], Status | None]:
        """Spreading is not local to one pod and one node: a pod with constraints, its own or the
        profile's defaults, cannot be signed (as upstream, whatever the pod's owners)."""
        spec = pod.raw.get("spec")
        if isinstance(spec, Mapping) and spec.get("topologySpreadConstraints"):
            return (), Status.unschedulable("pods with topology constraints are not signable")
        if self.default_constraints:
            return (), Status.unschedulable("pods with default topology constraints are not signable")
        return (), None

    def __init__(self, args: PodTopologySpreadArgs | None = None, handle: Any = None) -> None:
        args = args or PodTopologySpreadArgs()
        self.handle = handle
        self.system_defaulted = args.defaulting_type == "System"
        if self.system_defaulted:
            self.default_constraints: tuple[TopologySpreadConstraint, ...] = SYSTEM_DEFAULT_CONSTRAINTS
        else:
            self.default_constraints = tuple(
                parse_default_constraint(c, f"pluginConfig.args.defaultConstraints[{i}]")
                for i, c in enumerate(args.default_constraints)
            )
        # id(raw constraints list) -> (that list, parsed constraints or the parse error)
        self._parsed: dict[int, tuple[Any, _Parsed]] = {}
        self._parsed_by_text: dict[str, _Parsed] = {}
        self._affinity: dict[int, tuple[Mapping[str, Any], ParsedNodeAffinity]] = {}
        self._untolerated: dict[tuple[Toleration, ...], list[bool]] = {}

    def events_to_register(self) -> list[ClusterEventWithHint]:
        pod_actions = (
            ActionType.ADD
            | ActionType.UPDATE_POD_LABEL
            | ActionType.DELETE
            | ActionType.UPDATE_POD_TOLERATION
        )
        node_actions = (
            ActionType.ADD | ActionType.DELETE | ActionType.UPDATE_NODE_LABEL | ActionType.UPDATE_NODE_TAINT
        )
        return [
            ClusterEventWithHint(ClusterEvent("Pod", pod_actions), self.is_schedulable_after_pod_change),
            ClusterEventWithHint(ClusterEvent("Node", node_actions), self.is_schedulable_after_node_change),
        ]

    # -- queueing hints --------------------------------------------------------------------------
    def _hard_constraints(self, pod: Pod) -> tuple[SpreadConstraint, ...]:
        return self.constraints(None, pod, DO_NOT_SCHEDULE)

    def is_schedulable_after_pod_change(self, pod: Pod, old: Pod | None, new: Pod | None) -> QueueingHint:
        """Queue when a scheduled pod of the same namespace that the pod's hard constraints select
        arrived or left, or changed labels so that some constraint's selection of it changed; or when
        the pod itself got a toleration and a constraint honours taints."""

        def involved(other: Pod) -> bool:
            return other.uid == pod.uid or (bool(other.node_name) and other.namespace == pod.namespace)

        if (new is not None and not involved(new)) or (old is not None and not involved(old)):
            return QueueingHint.QUEUE_SKIP
        constraints = self._hard_constraints(pod)
        if new is not None and old is not None:
            if (
                pod.uid == new.uid
                and new.tolerations != old.tolerations
                and any(c.node_taints_policy == HONOR for c in constraints)
            ):
                return QueueingHint.QUEUE
            if new.labels == old.labels:
                return QueueingHint.QUEUE_SKIP
            if any(c.selector.matches(old.labels) != c.selector.matches(new.labels) for c in constraints):
                return QueueingHint.QUEUE
            return QueueingHint.QUEUE_SKIP
        changed = new if new is not None else old
        assert changed is not None
        if any(c.selector.matches(changed.labels) for c in constraints):
            return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP

    def is_schedulable_after_node_change(self, pod: Pod, old: Node | None, new: Node | None) -> QueueingHint:
        """Queue when a node carrying every hard constraint's topology key arrives or leaves, starts or
        stops carrying them, or moves to another domain or changes taints while carrying them."""
        constraints = self._hard_constraints(pod)

        def carries(node: Node | None) -> bool:
            return node is not None and all(c.topology_key in node.labels for c in constraints)

        if old is not None and new is not None:
            if carries(old) != carries(new):
                return QueueingHint.QUEUE
            if carries(new) and (
                any(old.labels.get(c.topology_key) != new.labels.get(c.topology_key) for c in constraints)
                or old.taints != new.taints
            ):
                return QueueingHint.QUEUE
            return QueueingHint.QUEUE_SKIP
        return QueueingHint.QUEUE if carries(new if new is not None else old) else QueueingHint.QUEUE_SKIP

    # -- constraints -----------------------------------------------------------------------------
    def pod_constraints(self, pod: Pod) -> tuple[TopologySpreadConstraint, ...]:
        """The pod's own ``spec.topologySpreadConstraints`` (parsed once per spec); raises
        :class:`InputError` when they are invalid."""
        spec = pod.raw.get("spec")
        raw = spec.get("topologySpreadConstraints") if isinstance(spec, Mapping) else None
        if not raw:
            return ()
        hit = self._parsed.get(id(raw))
        if hit is None or hit[0] is not raw:
            # Replicas carry equal constraints in distinct objects: share the parse by content.
            text = repr(raw)
            parsed = self._parsed_by_text.get(text)
            if parsed is None:
                try:
                    parsed = parse_topology_spread_constraints(raw)
                except InputError as exc:
                    parsed = exc
                if len(self._parsed_by_text) >= CACHE_LIMIT:
                    self._parsed_by_text.clear()
                self._parsed_by_text[text] = parsed
            if len(self._parsed) >= CACHE_LIMIT:
                self._parsed.clear()
            hit = (raw, parsed)
            self._parsed[id(raw)] = hit
        if isinstance(hit[1], InputError):
            raise hit[1]
        return hit[1]

    def _default_selector(self, state: CycleState | None, pod: Pod) -> LabelSelector:
        if state is not None:
            cached: LabelSelector | None = state.get(_DEFAULT_SELECTOR_KEY)
            if cached is not None:
                return cached
        informers = getattr(self.handle, "informers", None)
        selector = LabelSelector() if informers is None else workload_selectors(informers).selector(pod)
        if state is not None:
            state.write(_DEFAULT_SELECTOR_KEY, selector)
        return selector

    def constraints(self, state: CycleState | None, pod: Pod, action: str) -> tuple[SpreadConstraint, ...]:
        """The pod's constraints with ``whenUnsatisfiable == action``: its own, or else the default
        constraints with its workload selector (none when the pod belongs to no workload)."""
        own = self.pod_constraints(pod)
        if own:
            return tuple(
                SpreadConstraint(
                    c.max_skew,
                    c.topology_key,
                    c.selector_for(pod.labels),
                    c.min_domains if c.min_domains is not None else 1,
                    c.node_affinity_policy,
                    c.node_taints_policy,
                )
                for c in own
                if c.when_unsatisfiable == action
            )
        defaults = [c for c in self.default_constraints if c.when_unsatisfiable == action]
        if not defaults:
            return ()
        selector = self._default_selector(state, pod)
        if selector.is_empty:
            return ()
        return tuple(
            SpreadConstraint(
                c.max_skew,
                c.topology_key,
                selector,
                c.min_domains if c.min_domains is not None else 1,
                c.node_affinity_policy,
                c.node_taints_policy,
            )
            for c in defaults
        )

    # -- per-node inputs -------------------------------------------------------------------------
    def _node_counts(
        self, state: CycleState | None, snapshot: Snapshot, namespace: str, selector: LabelSelector
    ) -> IntArray:
        """Matching pods per slot (pods of ``namespace`` whose labels match ``selector``), padded to
        the table's capacity. An empty selector counts nothing, as upstream's ``countPodsMatchSelector``."""
        capacity = snapshot.table.capacity
        if selector.match_nothing or selector.is_empty:
            return np.zeros(capacity, dtype=np.int64)
        memo: dict[tuple[str, LabelSelector], IntArray] | None = None
        if state is not None:
            memo = state.get(_COUNTS_KEY)
            if memo is None:
                memo = {}
                state.write(_COUNTS_KEY, memo)
            hit = memo.get((namespace, selector))
            if hit is not None:
                return hit
        raw = snapshot.pod_index.matching_counts(frozenset((namespace,)), selector)
        if len(raw) >= capacity:
            counts = raw[:capacity]
        else:
            counts = np.zeros(capacity, dtype=np.int64)
            counts[: len(raw)] = raw
        if memo is not None:
            memo[(namespace, selector)] = counts
        return counts

    def _affinity_mask(self, pod: Pod, table: NodeTable) -> BoolArray | None:
        """Nodes matching the pod's nodeSelector and required node affinity; None: all nodes."""
        parsed: ParsedNodeAffinity | None = None
        affinity = pod.affinity
        if affinity:
            hit = self._affinity.get(id(affinity))
            if hit is not None and hit[0] is affinity:
                parsed = hit[1]
            else:
                parsed = parse_pod_node_affinity(affinity)
                if len(self._affinity) >= CACHE_LIMIT:
                    self._affinity.clear()
                self._affinity[id(affinity)] = (affinity, parsed)
        required = parsed.required if parsed is not None else None
        if not pod.node_selector and required is None:
            return None
        mask: BoolArray | None = None
        if pod.node_selector:
            mask = match_labels_mask(table, pod.node_selector)
        if required is not None:
            matched = terms_mask(table, required)
            mask = matched if mask is None else np.logical_and(mask, matched, out=mask)
        return mask

    def _tolerated_mask(self, pod: Pod, table: NodeTable) -> BoolArray:
        """Nodes without an untolerated NoSchedule/NoExecute taint, one evaluation per taint list."""
        cached = self._untolerated.get(pod.tolerations)
        if cached is None:
            if len(self._untolerated) >= CACHE_LIMIT:
                self._untolerated.clear()
            cached = []
            self._untolerated[pod.tolerations] = cached
        for taints in table.signatures[len(cached) :]:
            cached.append(find_untolerated_taint(taints, pod.tolerations, HARD_EFFECTS) is None)
        ok: BoolArray = np.asarray(cached, dtype=np.bool_)[table.taint_sig]
        return ok

    def _inclusion_masks(
        self, pod: Pod, table: NodeTable, constraints: Sequence[SpreadConstraint], base: BoolArray
    ) -> tuple[BoolArray, ...]:
        """Per constraint: ``base`` narrowed by the constraint's node inclusion policies."""
        affinity: BoolArray | None = None
        tolerated: BoolArray | None = None
        if any(c.node_affinity_policy == HONOR for c in constraints):
            affinity = self._affinity_mask(pod, table)
        if any(c.node_taints_policy == HONOR for c in constraints):
            tolerated = self._tolerated_mask(pod, table)
        out: list[BoolArray] = []
        for c in constraints:
            mask = base
            if c.node_affinity_policy == HONOR and affinity is not None:
                mask = mask & affinity
            if c.node_taints_policy == HONOR and tolerated is not None:
                mask = mask & tolerated
            out.append(mask)
        return tuple(out)

    # -- PreFilter / Filter ----------------------------------------------------------------------
    def _pre_filter_state(self, state: CycleState, pod: Pod, snapshot: Snapshot) -> PreFilterState | None:
        constraints = self.constraints(state, pod, DO_NOT_SCHEDULE)
        if not constraints:
            return None
        table = snapshot.table
        keys_present = _keys_present(table, constraints)
        eligible = self._inclusion_masks(pod, table, constraints, keys_present)
        codes: list[Int32Array] = []
        counts: list[IntArray] = []
        present: list[BoolArray] = []
        for c, mask in zip(constraints, eligible, strict=True):
            col = _codes(table, c.topology_key)
            size = _vocab_size(table, c.topology_key)
            domains = col[mask]
            node_counts = self._node_counts(state, snapshot, pod.namespace, c.selector)
            per_domain = np.bincount(domains, weights=node_counts[mask], minlength=size)
            codes.append(col)
            counts.append(per_domain.astype(np.int64))
            present.append(np.bincount(domains, minlength=size) > 0)
        self_match = tuple(c.selector.matches(pod.labels) for c in constraints)
        return PreFilterState(constraints, self_match, keys_present, eligible, tuple(codes), counts, present)

    def pre_filter(
        self, state: CycleState, pod: Pod, snapshot: Snapshot
    ) -> tuple[PreFilterResult | None, Status | None]:
        try:
            pre = self._pre_filter_state(state, pod, snapshot)
        except InputError as exc:
            return None, Status.error(
                f"get constraints from pod: obtaining pod's hard topology spread constraints: {exc}"
            )
        if pre is None:
            return None, Status(Code.SKIP)
        state.write(PRE_FILTER_KEY, pre)
        return None, None

    def filter_nodes(self, state: CycleState, pod: Pod, table: NodeTable) -> FilterResult:
        pre: PreFilterState | None = state.get(PRE_FILTER_KEY)
        if pre is None:
            # PreFilter is not enabled in this profile: compute what it would have.
            pre = self._pre_filter_state(state, pod, self.handle.snapshot)
            if pre is None:
                return FilterResult.all_pass(table.capacity)
        undecided = table.valid.copy()
        missing_label = np.zeros(table.capacity, dtype=np.bool_)
        too_skewed = np.zeros(table.capacity, dtype=np.bool_)
        for i, c in enumerate(pre.constraints):
            codes = pre.codes[i]
            missing = undecided & (codes < 0)
            # One trailing zero so that code -1 (label absent) reads a count of 0.
            counts = np.append(pre.counts[i], 0)
            skew = counts[codes] + (1 if pre.self_match[i] else 0) - pre.min_match(i)
            skewed = undecided & ~missing & (skew > c.max_skew)
            missing_label |= missing
            too_skewed |= skewed
            undecided &= ~(missing | skewed)
        failures: list[NodeFailure] = []
        if too_skewed.any():
            failures.append(NodeFailure(ERR_REASON_CONSTRAINTS_NOT_MATCH, too_skewed))
        if missing_label.any():
            failures.append(NodeFailure(ERR_REASON_NODE_LABEL_NOT_MATCH, missing_label, unresolvable=True))
        return FilterResult(undecided, failures)

    def filter_rows(self, state: CycleState, pod: Pod, table: NodeTable, rows: IntArray) -> BoolArray | None:
        pre: PreFilterState | None = state.get(PRE_FILTER_KEY)
        if pre is None:
            pre = self._pre_filter_state(state, pod, self.handle.snapshot)
            if pre is None:
                return None
        passed: BoolArray | None = None
        for i, c in enumerate(pre.constraints):
            codes = pre.codes[i][rows]
            labelled = codes >= 0
            counts = pre.counts[i]
            if not len(counts):
                ok = np.zeros(len(rows), dtype=np.bool_)
            else:
                # A row without the label fails on that alone; its code only has to index.
                skew = counts[np.maximum(codes, 0)] + (1 if pre.self_match[i] else 0) - pre.min_match(i)
                ok = labelled & (skew <= c.max_skew)
            passed = ok if passed is None else passed & ok
        return passed

    # -- PreFilter extensions (preemption) -------------------------------------------------------
    def _update_with_pod(
        self, state: CycleState, pod: Pod, other: Pod, slot: int, delta: int
    ) -> Status | None:
        pre: PreFilterState | None = state.get(PRE_FILTER_KEY)
        if pre is None or other.namespace != pod.namespace:
            return None
        if slot < 0 or slot >= len(pre.keys_present) or not pre.keys_present[slot]:
            return None
        for i, c in enumerate(pre.constraints):
            if not pre.eligible[i][slot] or not c.selector.matches(other.labels):
                continue
            code = int(pre.codes[i][slot])
            pre.counts[i][code] += delta
            pre.present[i][code] = True
        return None

    def add_pod(self, state: CycleState, pod: Pod, pod_to_add: Pod, slot: int) -> Status | None:
        """Count ``pod_to_add`` as running on ``slot`` (a nominated pod, or a victim given back)."""
        return self._update_with_pod(state, pod, pod_to_add, slot, 1)

    def remove_pod(self, state: CycleState, pod: Pod, pod_to_remove: Pod, slot: int) -> Status | None:
        """Stop counting ``pod_to_remove`` on ``slot`` (a preemption victim)."""
        return self._update_with_pod(state, pod, pod_to_remove, slot, -1)

    # -- PreScore / Score ------------------------------------------------------------------------
    def pre_score(self, state: CycleState, pod: Pod, table: NodeTable, slots: IntArray) -> Status | None:
        snapshot: Snapshot = self.handle.snapshot
        if snapshot.num_nodes == 0:
            return Status(Code.SKIP)
        try:
            constraints = self.constraints(state, pod, SCHEDULE_ANYWAY)
        except InputError as exc:
            return Status.error(
                f"calculating preScoreState: obtaining pod's soft topology spread constraints: {exc}"
            )
        if not constraints:
            return Status(Code.SKIP)
        # Only the system defaults spread nodes that lack some key (e.g. no zone label) by the keys
        # they do have.
        require_all = bool(self.pod_constraints(pod)) or not self.system_defaulted
        keys_present = _keys_present(table, constraints)
        ignored = ~keys_present if require_all else np.zeros(table.capacity, dtype=np.bool_)
        scored = slots[~ignored[slots]]
        counted_base = keys_present if require_all else table.valid
        counted = self._inclusion_masks(pod, table, constraints, counted_base)
        weights: list[float] = []
        domains: list[IntArray | None] = []
        domain_counts: list[IntArray | None] = []
        node_counts: list[IntArray] = []
        for c, mask in zip(constraints, counted, strict=True):
            per_node = self._node_counts(state, snapshot, pod.namespace, c.selector)
            node_counts.append(per_node)
            if c.topology_key == HOSTNAME_LABEL:
                weights.append(math.log(len(scored) + 2))
                domains.append(None)
                domain_counts.append(None)
                continue
            dom = self._domain_index(table, c.topology_key)
            size = _vocab_size(table, c.topology_key) + 1
            in_scored = np.zeros(size, dtype=np.bool_)
            in_scored[dom[scored]] = True
            weights.append(math.log(int(np.count_nonzero(in_scored)) + 2))
            counting = mask & in_scored[dom]
            per_domain = np.bincount(dom[counting], weights=per_node[counting], minlength=size)
            domains.append(dom)
            domain_counts.append(per_domain.astype(np.int64))
        state.write(
            PRE_SCORE_KEY,
            PreScoreState(
                constraints, ignored, tuple(weights), tuple(domains), tuple(domain_counts), tuple(node_counts)
            ),
        )
        return None

    @staticmethod
    def _domain_index(table: NodeTable, key: str) -> IntArray:
        """Per slot, the domain of a node: its label code; a node without the label is in the domain
        of the empty value (upstream reads a missing label as ""), given the last index when no node
        has the label with value ""."""
        column = table.labels.get(key)
        if column is None:
            return np.zeros(table.capacity, dtype=np.int64)
        empty = column.vocab.get("", len(column.values))
        dom = column.codes.astype(np.int64)
        dom[dom < 0] = empty
        return dom

    def score_nodes(self, state: CycleState, pod: Pod, table: NodeTable, slots: IntArray) -> IntArray:
        pre: PreScoreState | None = state.get(PRE_SCORE_KEY)
        if pre is None:
            return np.zeros(len(slots), dtype=np.int64)
        total = np.zeros(len(slots), dtype=np.float64)
        for i, c in enumerate(pre.constraints):
            has_key = _codes(table, c.topology_key)[slots] >= 0
            dom, per_domain = pre.domains[i], pre.domain_counts[i]
            # Hostname constraints count the node's own pods; others the pods of its domain.
            count = pre.node_counts[i][slots] if dom is None or per_domain is None else per_domain[dom[slots]]
            part = count * pre.weights[i] + float(c.max_skew - 1)
            total += np.where(has_key, part, 0.0)
        # Go's math.Round: halves away from zero (scores are never negative).
        rounded = np.floor(total)
        rounded += (total - rounded) >= 0.5
        scores = rounded.astype(np.int64)
        ignored = pre.ignored[slots]
        scores[ignored] = 0
        pre.ignored_positions = ignored
        return scores

    def normalize_scores(self, state: CycleState, pod: Pod, scores: IntArray) -> None:
        pre: PreScoreState | None = state.get(PRE_SCORE_KEY)
        if pre is None or len(scores) == 0:
            return
        ignored = pre.ignored_positions
        if ignored is None or len(ignored) != len(scores):
            ignored = np.zeros(len(scores), dtype=np.bool_)
        kept = ~ignored
        if kept.any():
            max_score = max(int(scores[kept].max()), 0)
            min_score = int(scores[kept].min())
            if max_score == 0:
                scores[kept] = MAX_NODE_SCORE
            else:
                scores[kept] = MAX_NODE_SCORE * (max_score + min_score - scores[kept]) // max_score
        scores[ignored] = 0
