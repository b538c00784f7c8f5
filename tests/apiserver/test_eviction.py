"""The Eviction subresource reads PodDisruptionBudgets as preemption does (``api/pdb.py``): full
label selectors, percentages, maxUnavailable, and the budget's status where it gives one."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from kubesched.apiserver.app import ApiServer
from kubesched.apiserver.handlers.eviction import evict
from kubesched.registry.errors import ApiError
from kubesched.store.sqlite import SqliteStore


@pytest.fixture
def api(tmp_path: Path) -> Any:
    store = SqliteStore(tmp_path / "cluster.db")
    yield ApiServer(store, "token")
    store.close()


def _running(store: SqliteStore, name: str, labels: dict[str, str], phase: str = "Running") -> None:
    store.create(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name, "namespace": "default", "labels": labels},
            "spec": {"nodeName": "n1", "containers": [{"name": "c", "image": "x"}]},
            "status": {"phase": phase},
        }
    )


def _budget(store: SqliteStore, spec: dict[str, Any], status: dict[str, Any] | None = None) -> None:
    obj: dict[str, Any] = {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": "db", "namespace": "default"},
        "spec": spec,
    }
    if status is not None:
        obj["status"] = status
    store.create(obj)


def _evict(api: ApiServer, name: str) -> int:
    """The status code of evicting ``name`` (201, or the refusal's)."""
    try:
        return evict(api, "default", name, {"kind": "Eviction"}).status
    except ApiError as err:
        return err.code


def test_a_budget_selecting_with_match_expressions_blocks_the_eviction(api):
    _running(api.store, "db-0", {"app": "db"})
    _budget(
        api.store,
        {
            "minAvailable": 1,
            "selector": {"matchExpressions": [{"key": "app", "operator": "In", "values": ["db"]}]},
        },
    )
    with pytest.raises(ApiError) as refused:
        evict(api, "default", "db-0", {"kind": "Eviction"})
    status = refused.value.status()
    assert refused.value.code == 429 and status["reason"] == "TooManyRequests"
    assert status["message"] == "Cannot evict pod as it would violate the pod's disruption budget."
    assert status["details"]["causes"] == [
        {"reason": "DisruptionBudget", "message": "The disruption budget db needs more healthy pods"}
    ]
    assert api.store.get("Pod", "default", "db-0") is not None


def test_a_percentage_min_available_counts_the_selected_pods(api):
    for i in range(4):
        _running(api.store, f"db-{i}", {"app": "db"})
    # 75% of 4 rounds up to 3 healthy pods: one eviction goes; of the 3 left, 75% is 3 again.
    _budget(api.store, {"minAvailable": "75%", "selector": {"matchLabels": {"app": "db"}}})
    assert [_evict(api, "db-0"), _evict(api, "db-1")] == [201, 429]


def test_max_unavailable_counts_the_pods_already_unavailable(api):
    for i in range(3):
        _running(api.store, f"db-{i}", {"app": "db"})
    _budget(api.store, {"maxUnavailable": 1, "selector": {"matchLabels": {"app": "db"}}})
    assert _evict(api, "db-0") == 201
    # A selected pod not on a node is unavailable already: the one disruption is taken.
    api.store.create(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "db-3", "namespace": "default", "labels": {"app": "db"}},
            "spec": {"containers": [{"name": "c", "image": "x"}]},
            "status": {"phase": "Pending"},
        }
    )
    assert _evict(api, "db-1") == 429


def test_a_budget_status_gives_the_disruptions_allowed_and_is_spent(api):
    for i in range(3):
        _running(api.store, f"db-{i}", {"app": "db"})
    _budget(
        api.store,
        {"minAvailable": 0, "selector": {"matchLabels": {"app": "db"}}},
        status={"disruptionsAllowed": 1},
    )
    assert [_evict(api, "db-0"), _evict(api, "db-1")] == [201, 429]
    budget = api.store.get("PodDisruptionBudget", "default", "db")
    assert budget["status"]["disruptionsAllowed"] == 0 and "db-0" in budget["status"]["disruptedPods"]


def test_pending_and_unselected_pods_are_evicted_whatever_the_budget(api):
    _running(api.store, "db-0", {"app": "db"}, phase="Pending")
    _running(api.store, "web-0", {"app": "web"})
    _budget(api.store, {"minAvailable": 5, "selector": {"matchLabels": {"app": "db"}}})
    assert _evict(api, "db-0") == 201
    assert _evict(api, "web-0") == 201


def test_a_pod_two_budgets_select_cannot_be_evicted(api):
    _running(api.store, "db-0", {"app": "db", "tier": "data"})
    _budget(api.store, {"maxUnavailable": 1, "selector": {"matchLabels": {"app": "db"}}})
    api.store.create(
        {
            "apiVersion": "policy/v1",
            "kind": "PodDisruptionBudget",
            "metadata": {"name": "data", "namespace": "default"},
            "spec": {"maxUnavailable": 1, "selector": {"matchLabels": {"tier": "data"}}},
        }
    )
    assert _evict(api, "db-0") == 500
    assert api.store.get("Pod", "default", "db-0") is not None
