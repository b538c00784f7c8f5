"""The cluster's PodDisruptionBudgets as preemption reads them, kept current from informer events.

Budgets come parsed from the PodDisruptionBudget informer and change only when it reports a change. A
budget without ``status.disruptionsAllowed`` needs its pods counted (see :mod:`kubesched.api.pdb`):
those counts are taken with one pass over the Pod lister when the set of budgets changes, and from
then on adjusted by each pod change the Pod informer delivers (its old and new object), so a
preemption costs one step per budget rather than a pass over every pod in the cluster. While no
budget is counted, a pod change costs one dictionary lookup.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubesched.api.pdb import PodDisruptionBudget, budget_standing
from kubesched.store.base import EventType, object_key
from kubesched.store.informers import Change, Informer, InformerFactory

_Key = tuple[str, str, str]


def _key(obj: Mapping[str, Any]) -> _Key:
    meta = obj.get("metadata") or {}
    return object_key("PodDisruptionBudget", meta.get("namespace"), str(meta.get("name")))


class DisruptionBudgets:
    """Parsed budgets of one cluster and the disruptions each allows now."""

    def __init__(self, informers: InformerFactory) -> None:
        self.informers = informers
        self._pdb_informer: Informer[PodDisruptionBudget] = informers.informer("PodDisruptionBudget")
        self._pod_informer: Informer[Any] = informers.informer("Pod")
        # Same order as the lister gives them: a new budget goes last, an updated one keeps its place.
        # None for a budget that does not parse (it keeps its place in case an update fixes it).
        self._by_key: dict[_Key, PodDisruptionBudget | None] = {}
        for obj in self._pdb_informer.list_raw():
            meta = obj.get("metadata") or {}
            self._by_key[_key(obj)] = self._pdb_informer.get(meta.get("namespace"), str(meta.get("name")))
        self._changed = False
        #: A pod change could not be applied to the counts (no old object): count afresh.
        self._recount = False
        self._pdbs: list[PodDisruptionBudget] = []
        #: Positions in ``_pdbs`` of the budgets counted from pods, by namespace.
        self._counted_by_ns: dict[str, list[int]] = {}
        self._expected: list[int] = []
        self._healthy: list[int] = []
        self._rebuild()
        self._pdb_informer.add_handler(self._on_pdb, replay=False)
        self._pod_informer.add_handler(self._on_pod, replay=False)

    def current(self) -> tuple[list[PodDisruptionBudget], list[int]]:
        """The budgets (in lister order) and the disruptions each allows, as of the listers' state."""
        # A changed budget set is counted afresh; otherwise the pod changes so far have adjusted it.
        if self._changed or self._recount:
            self._changed = self._recount = False
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
        return bool(self._counted_by_ns)

    def close(self) -> None:
        self._pdb_informer.remove_handler(self._on_pdb)
        self._pod_informer.remove_handler(self._on_pod)

    # -- informer events -------------------------------------------------------------------------
    def _on_pdb(self, change: Change[PodDisruptionBudget]) -> None:
        self._changed = True
        key = _key(change.obj)
        if change.type == EventType.DELETED:
            self._by_key.pop(key, None)
        else:
            self._by_key[key] = change.view

    def _on_pod(self, change: Change[Any]) -> None:
        """Adjust the counts by one pod change (nothing to do while no budget is counted, or while a
        recount is due anyway)."""
        if not self._counted_by_ns or self._changed or self._recount:
            return
        if change.type == EventType.MODIFIED:
            if change.old is None:
                self._recount = True
                return
            self._account(change.old, -1)
        self._account(change.obj, -1 if change.type == EventType.DELETED else 1)

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
            return
        for obj in self._pod_informer.list_raw():
            self._account(obj, 1)

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
