"""The controller manager over a store, tick by tick: what each controller makes of the changes it
is handed, and when."""

from __future__ import annotations

import time
from typing import Any

from tests.controllers.admitted import create

from kubesched.controllers.manager import ControllerManager
from kubesched.store.base import Conflict
from kubesched.store.sqlite import SqliteStore

STAMP = "2020-01-01T00:00:00Z"


def _workload(kind: str, name: str, spec: dict[str, Any], app: str | None = None) -> dict[str, Any]:
    api = "batch/v1" if kind == "Job" else "apps/v1"
    template = {
        "metadata": {"labels": {"app": app or name}},
        "spec": {"containers": [{"name": "c", "image": "x"}]},
    }
    return {
        "apiVersion": api,
        "kind": kind,
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"selector": {"matchLabels": {"app": name}}, "template": template, **spec},
    }


def _bind_all(store: SqliteStore) -> None:
    for p in store.list("Pod"):
        if not p["spec"].get("nodeName"):
            store.bind("default", p["metadata"]["name"], p["metadata"]["uid"], "n1")


def _pods(store: SqliteStore, prefix: str) -> list[Any]:
    return [p for p in store.list("Pod") if p["metadata"]["name"].startswith(prefix)]


def test_a_deployment_gets_its_replicaset_and_pods_in_one_tick_and_its_status_in_the_next(store):
    manager = ControllerManager(store)
    create(store, _workload("Deployment", "web", {"replicas": 2}))
    manager.tick()
    (rs,) = store.list("ReplicaSet")
    assert rs["spec"]["replicas"] == 2 and len(_pods(store, "web-")) == 2
    _bind_all(store)
    manager.tick()  # the pods start; the ReplicaSet sees them Running
    assert store.get("ReplicaSet", "default", rs["metadata"]["name"])["status"]["readyReplicas"] == 2
    manager.tick()
    assert store.get("Deployment", "default", "web")["status"]["readyReplicas"] == 2
    rv = store.resource_version
    manager.tick()
    assert store.resource_version == rv  # nothing left to do


def test_a_new_template_rolls_out_within_surge_and_unavailability(store):
    manager = ControllerManager(store)
    create(store, _workload("Deployment", "web", {"replicas": 2}))
    manager.tick()
    deploy = store.get("Deployment", "default", "web")
    template = {**deploy["spec"]["template"], "spec": {"containers": [{"name": "c", "image": "y"}]}}
    store.update({**deploy, "spec": {**deploy["spec"], "template": template}})
    for _ in range(3):
        manager.tick()
    # 25% of 2: one pod of surge, none unavailable; no pod is running yet, so no old one goes.
    replicas = sorted(rs["spec"]["replicas"] for rs in store.list("ReplicaSet"))
    assert replicas == [1, 2] and len(_pods(store, "web-")) == 3
    for _ in range(8):
        _bind_all(store)
        manager.tick()
    replicas = sorted(rs["spec"]["replicas"] for rs in store.list("ReplicaSet"))
    live = [p for p in _pods(store, "web-") if not p["metadata"].get("deletionTimestamp")]
    assert replicas == [0, 2] and len(live) == 2


def test_a_pod_that_loses_its_owner_is_replaced(store):
    manager = ControllerManager(store)
    create(store, _workload("ReplicaSet", "keep", {"replicas": 2}))
    manager.tick()
    pod = _pods(store, "keep-")[0]
    store.update({**pod, "metadata": {**pod["metadata"], "ownerReferences": []}})
    manager.tick()
    assert len(_pods(store, "keep-")) == 3
    manager.tick()
    rs = store.get("ReplicaSet", "default", "keep")
    assert rs["status"]["fullyLabeledReplicas"] == 2


def test_a_pass_that_conflicts_is_retried_once_something_changed(store, monkeypatch):
    manager = ControllerManager(store)
    create(store, _workload("StatefulSet", "db", {"replicas": 0}))
    update, create_ = store.update, store.create

    def conflict(obj: Any) -> Any:
        raise Conflict("changed under us")

    monkeypatch.setattr(store, "update", conflict)
    monkeypatch.setattr(store, "create", conflict)
    manager.tick()
    monkeypatch.setattr(store, "update", update)
    monkeypatch.setattr(store, "create", create_)
    manager.tick()  # nothing changed since: nothing to retry
    assert "status" not in store.get("StatefulSet", "default", "db")
    create(store, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "other"}})
    manager.tick()
    assert store.get("StatefulSet", "default", "db")["status"]["replicas"] == 0


def test_a_restarted_manager_finishes_what_the_last_run_left(store):
    bare = {"apiVersion": "v1", "kind": "Pod", "metadata": {"namespace": "default"}, "spec": {}}
    create(store, {**bare, "metadata": {**bare["metadata"], "name": "bound"}, "spec": {"nodeName": "n1"}})
    create(
        store,
        {**bare, "metadata": {**bare["metadata"], "name": "going", "deletionTimestamp": STAMP}},
    )
    create(store, _workload("Job", "batch", {"completions": 1}))
    manager = ControllerManager(store)
    manager.tick()
    assert store.get("Pod", "default", "bound")["status"]["phase"] == "Running"
    assert store.get("Pod", "default", "going") is None
    assert len(_pods(store, "batch-")) == 1


def test_a_pod_with_a_duration_succeeds_when_it_is_due(store):
    manager = ControllerManager(store)
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": "short",
            "namespace": "default",
            "annotations": {"kubesched.io/duration": "100ms"},
        },
        "spec": {"nodeName": "n1", "containers": [{"name": "c"}]},
    }
    create(store, pod)
    manager.tick()
    due = manager.next_due
    assert due is not None and store.get("Pod", "default", "short")["status"]["phase"] == "Running"
    time.sleep(max(0.0, due - time.time()) + 0.01)
    manager.tick()
    assert store.get("Pod", "default", "short")["status"]["phase"] == "Succeeded"
    assert manager.next_due is None


def test_events_past_their_ttl_go_at_the_next_sweep(store):
    manager = ControllerManager(store, event_ttl=3600.0)
    pod = create(
        store,
        {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "default"}},
    )
    store.record_event(pod, "Normal", "Scheduled", "Binding", "ok", "me")
    manager.tick()
    assert len(store.list("Event")) == 1
    manager.event_ttl.ttl = 0.0
    time.sleep(1.1)  # creation times have whole seconds
    manager.tick()
    assert len(store.list("Event")) == 1  # not swept again within the minute
    manager.event_ttl._next_sweep = 0.0
    manager.tick()
    assert store.list("Event") == []
