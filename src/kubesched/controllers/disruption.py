"""The disruption controller (upstream ``pkg/controller/disruption``): keeps each
PodDisruptionBudget's status current from the pods it covers.

A budget is due when it changes or when a pod in its namespace does. Its status is what
:mod:`kubesched.api.pdb` works out for preemption, so eviction, preemption and ``kubectl get pdb``
agree: ``expectedPods`` (the matching pods that still count: not finished, not being deleted),
``currentHealthy`` (those bound to a node), ``desiredHealthy`` (from ``minAvailable``, or
``expectedPods - maxUnavailable``), ``disruptionsAllowed`` (their difference, never below 0), the
``DisruptionAllowed`` condition (``SufficientPods`` / ``InsufficientPods``) and the generation
observed. ``disruptedPods`` the eviction subresource recorded are kept.
"""

from __future__ import annotations

from typing import Any

from kubesched.api.pdb import PodDisruptionBudget, budget_standing
from kubesched.controllers.controller_utils import Key, timestamp, write_status
from kubesched.errors import InputError
from kubesched.store.base import Conflict, NotFound
from kubesched.store.informers import Change, InformerFactory
from kubesched.store.sqlite import SqliteStore

CONDITION = "DisruptionAllowed"
SUFFICIENT_PODS = "SufficientPods"
INSUFFICIENT_PODS = "InsufficientPods"


class DisruptionController:
    def __init__(self, store: SqliteStore, informers: InformerFactory) -> None:
        self.store = store
        self._pods = informers.informer("Pod")
        self._budgets = informers.informer("PodDisruptionBudget")
        #: Budgets due, and namespaces whose every budget is due (a pod there changed).
        self._due: set[Key] = set()
        self._due_namespaces: set[str] = set()
        self._budgets.add_handler(self._on_budget)
        self._pods.add_handler(self._on_pod)

    def _on_budget(self, change: Change[Any]) -> None:
        meta = change.obj.get("metadata") or {}
        self._due.add((str(meta.get("namespace")), str(meta.get("name"))))

    def _on_pod(self, change: Change[Any]) -> None:
        self._due_namespaces.add(str((change.obj.get("metadata") or {}).get("namespace")))

    def sync(self) -> None:
        if self._due_namespaces:
            for obj in self._budgets.list_raw():
                meta = obj.get("metadata") or {}
                if meta.get("namespace") in self._due_namespaces:
                    self._due.add((str(meta.get("namespace")), str(meta.get("name"))))
            self._due_namespaces.clear()
        due, self._due = self._due, set()
        for namespace, name in sorted(due):
            try:
                self._sync_budget(namespace, name)
            except Conflict:
                self._due.add((namespace, name))  # written meanwhile: again at the next tick
            except NotFound:
                pass

    def _sync_budget(self, namespace: str, name: str) -> None:
        obj = self.store.get("PodDisruptionBudget", namespace, name)
        if obj is None:
            return
        old = obj.get("status") or {}
        try:
            budget = PodDisruptionBudget.from_dict({**obj, "status": {}})
        except InputError:
            return  # the API server refuses such budgets; one stored before that rule is left alone
        expected = healthy = 0
        for pod in self._pods.in_namespace(namespace):
            standing = budget_standing(pod)
            if standing is not None and budget.matches(standing[0], standing[1]):
                expected += 1
                healthy += int(standing[2])
        allowed = budget.allowed_from_counts(expected, healthy)
        generation = (obj.get("metadata") or {}).get("generation", 1)
        status: dict[str, Any] = {
            "observedGeneration": generation,
            "disruptionsAllowed": allowed,
            "currentHealthy": healthy,
            "desiredHealthy": budget.desired_healthy(expected),
            "expectedPods": expected,
            "conditions": [_condition(old, allowed > 0, generation)],
        }
        if old.get("disruptedPods"):
            status["disruptedPods"] = old["disruptedPods"]
        write_status(self.store, obj, status)


def _condition(old_status: dict[str, Any], allowed: bool, generation: Any) -> dict[str, Any]:
    """The ``DisruptionAllowed`` condition, keeping its transition time while its status holds."""
    status = "True" if allowed else "False"
    before = next(
        (c for c in old_status.get("conditions") or [] if isinstance(c, dict) and c.get("type") == CONDITION),
        None,
    )
    since = before.get("lastTransitionTime") if before and before.get("status") == status else None
    return {
        "type": CONDITION,
        "status": status,
        "reason": SUFFICIENT_PODS if allowed else INSUFFICIENT_PODS,
        "message": "",
        "observedGeneration": generation,
        "lastTransitionTime": since or timestamp(),
    }
