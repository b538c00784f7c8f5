"""The cluster's PodDisruptionBudgets as preemption reads them, kept current from watch events.

Budgets are parsed once and re-parsed only when a watch event says one changed. A budget without
``status.disruptionsAllowed`` needs its pods counted (see :mod:`kubesched.api.pdb`): those counts are
taken with one pass over the pods when the set of budgets changes, and from then on adjusted by each
pod event (the event's old and new object), so a preemption costs one step per budget rather than a
pass over every pod in the cluster.

The pod watch is open only while some budget needs counts. Its events wait in the watch until the
next preemption drains them, so memory grows with the pod changes between two preemptions.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubesched.api.pdb import PodDisruptionBudget, budget_standing
from kubesched.store.base import ClusterStore, EventType, Watch, object_key

_PDB_KINDS = frozenset({"PodDisruptionBudget"})
_POD_KINDS = frozenset({"Pod"})

_Key = tuple[str, str, str]


def _parse(obj: Mapping[str, Any]) -> PodDisruptionBudget | None:
    try:
        return PodDisruptionBudget.from_dict(obj)
    except Exception:  # a budget that does not parse protects nothing (upstream: no match)
        return None


def _key(obj: Mapping[str, Any]) -> _Key:
    meta = obj.get("metadata") or {}
    return object_key("PodDisruptionBudget", meta.get("namespace"), str(meta.get("name")))


class DisruptionBudgets:
    """Parsed budgets of one store and the disruptions each allows now."""

    def __init__(self, store: ClusterStore) -> None:
        self.store = store
        self._pdb_watch = store.watch(_PDB_KINDS)
        # Same order as the store lists them: a new budget goes last, an updated one keeps its place.
        # None for a budget that does not parse (it keeps its place in case an update fixes it).
        self._by_key: dict[_Key, PodDisruptionBudget | None] = {
            _key(obj): _parse(obj) for obj in store.list("PodDisruptionBudget")
        }
        self._pod_watch: Watch | None = None
        self._pdbs: list[PodDisruptionBudget] = []
        #: Positions in ``_pdbs`` of the budgets counted from pods, by namespace.
        self._counted_by_ns: dict[str, list[int]] = {}
        self._expected: list[int] = []
        self._healthy: list[int] = []
        self._rebuild()

    def current(self) -> tuple[list[PodDisruptionBudget], list[int]]:
        """The budgets (in store order) and the disruptions each allows, as of the store's state now."""
        changed = False
        for event in self._pdb_watch.drain():
            changed = True
            key = _key(event.obj)
            if event.type == EventType.DELETED:
                self._by_key.pop(key, None)
            else:
                self._by_key[key] = _parse(event.obj)
        # A changed budget set is counted afresh; otherwise the pod changes since last time adjust it.
        pods_ok = changed or self._pod_watch is None or self._apply_pod_events(self._pod_watch)
        if changed or not pods_ok:
            self._rebuild()
        allowed = [
            pdb.status_disruptions_allowed
            if pdb.status_disruptions_allowed is not None
            else pdb.allowed_from_counts(self._expected[i], self._healthy[i])
            for i, pdb in enumerate(self._pdbs)
        ]
        return self._pdbs, allowed

    @property
    def watching_pods(self) -> bool:
        """Whether some budget is counted from pods (and so pod changes are followed)."""
        return self._pod_watch is not None

    def close(self) -> None:
        self._pdb_watch.close()
        if self._pod_watch is not None:
            self._pod_watch.close()
            self._pod_watch = None

    # -- counting pods ---------------------------------------------------------------------------
    def _rebuild(self) -> None:
        """Re-read the budget list and count every budget's pods afresh."""
        self._pdbs = [pdb for pdb in self._by_key.values() if pdb is not None]
        self._counted_by_ns = {}
        for i, pdb in enumerate(self._pdbs):
            if pdb.status_disruptions_allowed is None:
                self._counted_by_ns.setdefault(pdb.namespace, []).append(i)
        self._expected = [0] * len(self._pdbs)
        self._healthy = [0] * len(self._pdbs)
        if not self._counted_by_ns:
            if self._pod_watch is not None:
                self._pod_watch.close()
                self._pod_watch = None
            return
        if self._pod_watch is None:
            self._pod_watch = self.store.watch(_POD_KINDS)
        else:
            for _ in self._pod_watch.drain():
                pass  # the listing below already reflects these changes
        for obj in self.store.list("Pod"):
            self._account(obj, 1)

    def _apply_pod_events(self, watch: Watch) -> bool:
        """Adjust the counts by each pod change; False when an event lacks what that needs."""
        for event in watch.drain():
            if event.type == EventType.MODIFIED:
                if event.old is None:
                    return False
                self._account(event.old, -1)
            self._account(event.obj, -1 if event.type == EventType.DELETED else 1)
        return True

    def _account(self, obj: Mapping[str, Any], sign: int) -> None:
        meta = obj.get("metadata") or {}
        positions = self._counted_by_ns.get(meta.get("namespace") or "default")
        if positions is None:
            return
        standing = budget_standing(obj)
        if standing is None:
            return
        namespace, labels, healthy = standing
        for i in positions:
            if self._pdbs[i].matches(namespace, labels):
                self._expected[i] += sign
                if healthy:
                    self._healthy[i] += sign
