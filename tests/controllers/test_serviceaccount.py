"""The service accounts controller: a ``default`` ServiceAccount in every active namespace."""

from __future__ import annotations

from kubesched.controllers.manager import ControllerManager
from kubesched.registry.admission import apply_defaults


def _namespace(store, name: str) -> None:
    ns = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}
    apply_defaults(ns)
    store.create(ns)


def test_every_namespace_gets_a_default_service_account_again_after_a_delete(store):
    _namespace(store, "default")
    manager = ControllerManager(store)
    manager.tick()
    assert store.get("ServiceAccount", "default", "default") is not None
    _namespace(store, "team")
    manager.tick()
    assert store.get("ServiceAccount", "team", "default") is not None
    store.delete("ServiceAccount", "team", "default")
    manager.tick()
    assert store.get("ServiceAccount", "team", "default") is not None
    other = {
        "apiVersion": "v1",
        "kind": "ServiceAccount",
        "metadata": {"name": "builder", "namespace": "team"},
    }
    store.create(other)
    store.delete("ServiceAccount", "team", "builder")
    manager.tick()
    assert store.get("ServiceAccount", "team", "builder") is None


def test_a_terminating_namespace_gets_none(store):
    ns = {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": "going"},
        "status": {"phase": "Terminating"},
    }
    store.create(ns)
    ControllerManager(store).tick()
    assert store.get("ServiceAccount", "going", "default") is None
