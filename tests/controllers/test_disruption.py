"""The disruption controller: a PodDisruptionBudget's status follows the pods it covers, tick by tick."""

from __future__ import annotations

from typing import Any

from tests.controllers.admitted import create

from kubesched.controllers.manager import ControllerManager
from kubesched.store.sqlite import SqliteStore


def _pod(name: str, app: str = "web") -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", "labels": {"app": app}},
        "spec": {"containers": [{"name": "c", "image": "x"}]},
    }


WEB = {"key": "app", "operator": "In", "values": ["web"]}
COUNTS = ("expectedPods", "currentHealthy", "desiredHealthy", "disruptionsAllowed")


def _budget(spec: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {
            "selector": {"matchExpressions": [{"key": "app", "operator": "In", "values": ["web"]}]},
            **spec,
        },
    }


def _bind(store: SqliteStore, name: str) -> None:
    pod = store.get("Pod", "default", name)
    assert pod is not None
    store.bind("default", name, pod["metadata"]["uid"], "n1")


def _status(store: SqliteStore) -> dict[str, Any]:
    obj = store.get("PodDisruptionBudget", "default", "web")
    assert obj is not None
    return dict(obj.get("status") or {})


def test_the_budget_status_counts_the_covered_pods_and_follows_them(store: SqliteStore) -> None:
    manager = ControllerManager(store)
    for name in ("a", "b", "c"):
        create(store, _pod(name))
    create(store, _pod("other", app="db"))
    _bind(store, "a")
    _bind(store, "b")
    create(store, _budget({"minAvailable": 1}))
    manager.tick()
    status = _status(store)
    assert {
        k: status[k] for k in ("expectedPods", "currentHealthy", "desiredHealthy", "disruptionsAllowed")
    } == {
        "expectedPods": 3,
        "currentHealthy": 2,
        "desiredHealthy": 1,
        "disruptionsAllowed": 1,
    }
    assert status["observedGeneration"] == 1
    [condition] = status["conditions"]
    assert (condition["type"], condition["status"], condition["reason"]) == (
        "DisruptionAllowed",
        "True",
        "SufficientPods",
    )

    store.delete("Pod", "default", "a")
    manager.tick()
    status = _status(store)
    assert (status["expectedPods"], status["currentHealthy"], status["disruptionsAllowed"]) == (2, 1, 0)
    assert status["conditions"][0]["status"] == "False"
    assert status["conditions"][0]["reason"] == "InsufficientPods"


def test_a_percentage_of_unavailable_pods_is_rounded_up_as_upstream(store: SqliteStore) -> None:
    manager = ControllerManager(store)
    for name in ("a", "b", "c", "d"):
        create(store, _pod(name))
        _bind(store, name)
    create(store, _budget({"maxUnavailable": "30%"}))
    manager.tick()
    status = _status(store)
    # 30 % of 4 rounds up to 2 pods that may be unavailable: 2 must stay healthy, 2 may go.
    assert (status["desiredHealthy"], status["disruptionsAllowed"]) == (2, 2)


def test_a_status_that_is_already_current_is_not_written_again(store: SqliteStore) -> None:
    manager = ControllerManager(store)
    create(store, _pod("a"))
    _bind(store, "a")
    create(store, _budget({"minAvailable": 0}))
    manager.tick()
    version = store.get("PodDisruptionBudget", "default", "web")["metadata"]["resourceVersion"]  # type: ignore[index]
    create(store, _pod("unrelated", app="db"))
    manager.tick()
    assert store.get("PodDisruptionBudget", "default", "web")["metadata"]["resourceVersion"] == version  # type: ignore[index]
