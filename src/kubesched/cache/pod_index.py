"""Counts of pods per node slot, kept up to date by the cache, so topology plugins never scan all pods.

The scheduler cache tells the index about every pod it adds, assumes, confirms, updates, removes or
forgets. The index keeps two kinds of aggregate, both indexed by node slot (the cache's slots, which
are the NodeTable's):

* **Selector counts** — for a (namespaces, label selector) pair, how many pods on each node match.
  The first request for a pair scans every pod once; from then on each pod change adjusts the counts
  of the pairs it matches. Pairs unused for long are dropped (at most :data:`MAX_SELECTOR_KEYS` are
  kept), so memory stays bounded however many selectors the workload uses.
* **Term groups** — existing pods' inter-pod affinity terms, grouped by identical term: for each
  distinct required anti-affinity term (and required affinity, preferred affinity and preferred
  anti-affinity term) the number of pods carrying it on each node (for preferred terms: the sum of
  their weights). A scheduling cycle then costs one match per *distinct* term plus array work over
  the nodes, never a pass over all pods.

Arrays handed out are the index's own and are updated in place on the next pod change: read them
within the cycle, never write to them. They may be shorter than ``NodeTable.capacity`` (slots past
the end count zero).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable
from dataclasses import dataclass, field
from enum import Enum
from typing import Final

import numpy as np
from numpy.typing import NDArray

from kubesched.api.objects import Pod
from kubesched.api.selectors import LabelSelector
from kubesched.cache.affinity_terms import (
    NO_TERMS,
    AffinityTerm,
    PodAffinityTerms,
    canonical_selector,
    parse_pod_affinity_terms,
)

__all__ = ["MAX_SELECTOR_KEYS", "Clause", "PodIndex", "TermGroup", "TermKind", "is_terminating"]

IntArray = NDArray[np.int64]

#: Selector-count keys kept at most; the least recently used one is dropped beyond it.
MAX_SELECTOR_KEYS: Final = 256
#: Term groups whose dense per-slot array is kept between cycles; beyond it the oldest are dropped
#: (their sparse counts stay, the array is rebuilt on next use).
MAX_DENSE_GROUPS: Final = 256

#: One condition a counted pod must meet: its namespace is in the set (None: any namespace) and its
#: labels match the selector.
Clause = tuple[frozenset[str] | None, LabelSelector]


def is_terminating(pod: Pod) -> bool:
    """The pod has ``metadata.deletionTimestamp`` (it is being deleted)."""
    meta = pod.raw.get("metadata")
    return bool(meta.get("deletionTimestamp")) if meta is not None else False


class TermKind(Enum):
    REQUIRED_AFFINITY = "requiredAffinity"
    REQUIRED_ANTI_AFFINITY = "requiredAntiAffinity"
    PREFERRED_AFFINITY = "preferredAffinity"
    PREFERRED_ANTI_AFFINITY = "preferredAntiAffinity"


@dataclass(slots=True, eq=False)
class TermGroup:
    """Existing pods carrying one distinct term: per slot, how many (or, for preferred terms, the sum
    of their weights)."""

    term: AffinityTerm
    per_slot: dict[int, int] = field(default_factory=dict)
    dense: IntArray | None = None
    last_used: int = 0

    def add(self, slot: int, amount: int) -> None:
        value = self.per_slot.get(slot, 0) + amount
        if value:
            self.per_slot[slot] = value
        else:
            del self.per_slot[slot]
        dense = self.dense
        if dense is not None:
            if slot < len(dense):
                dense[slot] += amount
            else:
                self.dense = None


@dataclass(slots=True, eq=False)
class _Counter:
    clauses: tuple[Clause, ...]
    include_terminating: bool
    counts: IntArray
    last_used: int


@dataclass(slots=True, eq=False)
class _Entry:
    pod: Pod
    slot: int
    terminating: bool
    terms: PodAffinityTerms


_CountKey = tuple[tuple[Clause, ...], bool]


def _clause_matches(clauses: tuple[Clause, ...], pod: Pod) -> bool:
    for namespaces, selector in clauses:
        if namespaces is not None and pod.namespace not in namespaces:
            return False
        if not selector.matches(pod.labels):
            return False
    return True


def _namespace_scope(clauses: tuple[Clause, ...]) -> frozenset[str] | None:
    """The namespaces a pod must be in to satisfy every clause (None: no restriction)."""
    scope: frozenset[str] | None = None
    for namespaces, _ in clauses:
        if namespaces is not None:
            scope = namespaces if scope is None else scope & namespaces
    return scope


def _term_amounts(terms: PodAffinityTerms) -> Iterable[tuple[TermKind, AffinityTerm, int]]:
    for t in terms.required_affinity:
        yield TermKind.REQUIRED_AFFINITY, t, 1
    for t in terms.required_anti_affinity:
        yield TermKind.REQUIRED_ANTI_AFFINITY, t, 1
    for w in terms.preferred_affinity:
        yield TermKind.PREFERRED_AFFINITY, w.term, w.weight
    for w in terms.preferred_anti_affinity:
        yield TermKind.PREFERRED_ANTI_AFFINITY, w.term, w.weight


class PodIndex:
    """Per-slot pod aggregates maintained incrementally by :class:`~kubesched.cache.cache.SchedulerCache`."""

    def __init__(self) -> None:
        self._entries: dict[str, _Entry] = {}
        self._by_slot: dict[int, dict[str, Pod]] = {}
        self._capacity = 64
        self._counters: dict[_CountKey, _Counter] = {}
        self._counters_by_ns: dict[str, list[_Counter]] = {}
        self._counters_any_ns: list[_Counter] = []
        self._groups: dict[TermKind, dict[AffinityTerm, TermGroup]] = {k: {} for k in TermKind}
        self._dense_groups: list[TermGroup] = []
        self._tick = itertools.count(1)
        #: Parsed affinity terms by (id(affinity), namespace, labels); holds the mapping to keep ids unique.
        self._parsed: dict[tuple[int, str, tuple[tuple[str, str], ...]], tuple[object, PodAffinityTerms]] = {}

    # -- pod changes (called by the cache) ---------------------------------------------------------
    def __len__(self) -> int:
        return len(self._entries)

    def add(self, pod: Pod, slot: int) -> None:
        if pod.uid in self._entries:
            self.remove(pod)
        if slot >= self._capacity:
            self._grow(slot + 1)
        entry = _Entry(pod, slot, is_terminating(pod), self.terms_of(pod))
        self._entries[pod.uid] = entry
        self._by_slot.setdefault(slot, {})[pod.uid] = pod
        self._account(entry, 1)

    def remove(self, pod: Pod) -> None:
        entry = self._entries.pop(pod.uid, None)
        if entry is None:
            return
        on_slot = self._by_slot.get(entry.slot)
        if on_slot is not None:
            on_slot.pop(pod.uid, None)
            if not on_slot:
                del self._by_slot[entry.slot]
        self._account(entry, -1)

    def update(self, pod: Pod, slot: int) -> None:
        """The pod changed (or was confirmed) on the same node."""
        entry = self._entries.get(pod.uid)
        if (
            entry is not None
            and entry.slot == slot
            and entry.pod.affinity is pod.affinity
            and entry.pod.namespace == pod.namespace
            and entry.pod.labels == pod.labels
            and entry.terminating == is_terminating(pod)
        ):
            # Nothing any count depends on changed (the usual confirm after bind): swap the object.
            entry.pod = pod
            self._by_slot[slot][pod.uid] = pod
            return
        self.add(pod, slot)

    def _account(self, entry: _Entry, sign: int) -> None:
        pod, slot = entry.pod, entry.slot
        for counter in itertools.chain(self._counters_by_ns.get(pod.namespace, ()), self._counters_any_ns):
            if (counter.include_terminating or not entry.terminating) and _clause_matches(
                counter.clauses, pod
            ):
                counter.counts[slot] += sign
        if entry.terms is NO_TERMS:
            return
        for kind, term, amount in _term_amounts(entry.terms):
            groups = self._groups[kind]
            group = groups.get(term)
            if group is None:
                if sign < 0:
                    continue
                group = groups[term] = TermGroup(term)
            group.add(slot, sign * amount)
            if not group.per_slot:
                del groups[term]
                group.dense = None

    def _grow(self, need: int) -> None:
        new_cap = max(need, self._capacity * 2)
        for counter in self._counters.values():
            counter.counts = np.concatenate(
                [counter.counts, np.zeros(new_cap - len(counter.counts), dtype=np.int64)]
            )
        self._capacity = new_cap

    # -- parsed terms ----------------------------------------------------------------------------
    def terms_of(self, pod: Pod) -> PodAffinityTerms:
        """The pod's parsed inter-pod affinity terms (cached while its affinity mapping is the same)."""
        affinity = pod.affinity
        if not affinity or ("podAffinity" not in affinity and "podAntiAffinity" not in affinity):
            return NO_TERMS
        key = (id(affinity), pod.namespace, tuple(pod.labels.items()))
        hit = self._parsed.get(key)
        if hit is not None and hit[0] is affinity:
            return hit[1]
        terms = parse_pod_affinity_terms(affinity, pod.namespace, pod.labels)
        if len(self._parsed) >= 8192:
            self._parsed.clear()
        self._parsed[key] = (affinity, terms)
        return terms

    # -- queries ---------------------------------------------------------------------------------
    def matching_counts(self, namespaces: frozenset[str] | None, selector: LabelSelector) -> IntArray:
        """Per node slot, how many pods on that node (assumed or bound; pods with
        metadata.deletionTimestamp excluded) have a namespace in ``namespaces`` (None = any namespace)
        and labels matching ``selector``.

        The first call for a (namespaces, selector) key scans all pods once; after that the counts are
        maintained incrementally on every pod change. The returned array may be shorter than
        ``table.capacity`` (pad with zeros) and must not be mutated by callers."""
        return self.matching_all_counts(((namespaces, selector),), include_terminating=False)

    def matching_all_counts(self, clauses: tuple[Clause, ...], *, include_terminating: bool) -> IntArray:
        """Per slot, the pods that satisfy *every* clause (InterPodAffinity's "matches all terms");
        ``include_terminating`` counts pods being deleted too (upstream InterPodAffinity does)."""
        clauses = tuple((ns, canonical_selector(sel)) for ns, sel in clauses)
        key = (clauses, include_terminating)
        counter = self._counters.get(key)
        if counter is None:
            counter = self._register(clauses, include_terminating)
        counter.last_used = next(self._tick)
        return counter.counts

    def _register(self, clauses: tuple[Clause, ...], include_terminating: bool) -> _Counter:
        if len(self._counters) >= MAX_SELECTOR_KEYS:
            self._drop(min(self._counters.values(), key=lambda c: c.last_used))
        counts = np.zeros(self._capacity, dtype=np.int64)
        for entry in self._entries.values():
            if (include_terminating or not entry.terminating) and _clause_matches(clauses, entry.pod):
                counts[entry.slot] += 1
        counter = _Counter(clauses, include_terminating, counts, 0)
        self._counters[(clauses, include_terminating)] = counter
        scope = _namespace_scope(clauses)
        if scope is None:
            self._counters_any_ns.append(counter)
        else:
            for ns in scope:
                self._counters_by_ns.setdefault(ns, []).append(counter)
        return counter

    def _drop(self, counter: _Counter) -> None:
        del self._counters[(counter.clauses, counter.include_terminating)]
        scope = _namespace_scope(counter.clauses)
        if scope is None:
            self._counters_any_ns.remove(counter)
            return
        for ns in scope:
            bucket = self._counters_by_ns[ns]
            bucket.remove(counter)
            if not bucket:
                del self._counters_by_ns[ns]

    @property
    def num_selector_keys(self) -> int:
        return len(self._counters)

    def has_terms(self, kind: TermKind) -> bool:
        return bool(self._groups[kind])

    def term_groups(self, kind: TermKind) -> Iterable[TermGroup]:
        """Existing pods' distinct terms of one kind (read-only)."""
        return self._groups[kind].values()

    def group_counts(self, group: TermGroup) -> IntArray:
        """The group's per-slot counts as a dense array (cached; read-only)."""
        group.last_used = next(self._tick)
        dense = group.dense
        if dense is None:
            dense = np.zeros(self._capacity, dtype=np.int64)
            if group.per_slot:
                slots = np.fromiter(group.per_slot.keys(), dtype=np.int64, count=len(group.per_slot))
                values = np.fromiter(group.per_slot.values(), dtype=np.int64, count=len(group.per_slot))
                dense[slots] = values
            group.dense = dense
            self._dense_groups.append(group)
            if len(self._dense_groups) > MAX_DENSE_GROUPS:
                self._dense_groups.sort(key=lambda g: g.last_used)
                cut = len(self._dense_groups) // 2
                for old in self._dense_groups[:cut]:
                    old.dense = None
                self._dense_groups = [g for g in self._dense_groups[cut:] if g.dense is not None]
        return dense

    def pods_on(self, slot: int) -> list[Pod]:
        """The pods (assumed or bound) the cache has on the node in ``slot``."""
        return list(self._by_slot.get(slot, {}).values())

    def slot_of(self, uid: str) -> int | None:
        entry = self._entries.get(uid)
        return entry.slot if entry is not None else None
