"""Served schedulers bind in place unless a bind may wait on something outside the process."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kubesched.apiserver.schedulers import BINDING_WORKERS, GroupedBinds, ServedSchedulers, binding_workers
from kubesched.framework.config import API_VERSION, KIND, config_from_dict, default_config
from kubesched.framework.extension_points import ExtensionPoint
from kubesched.framework.registry import PluginSpec
from kubesched.plugins import default_registry
from kubesched.store.sqlite import SqliteStore


class SlowBinder:
    name = "SlowBinder"

    def __init__(self, args: Any, handle: Any) -> None:
        self.handle = handle

    def bind(self, state: Any, pod: Any, node_name: str) -> None:
        return None


def test_default_plugins_bind_in_place() -> None:
    registry = default_registry()
    assert binding_workers(default_config(registry), registry) == 0


def test_an_out_of_tree_bind_plugin_gets_workers() -> None:
    registry = default_registry()
    registry.register(PluginSpec("SlowBinder", SlowBinder, frozenset({ExtensionPoint.BIND})))
    doc = {
        "apiVersion": API_VERSION,
        "kind": KIND,
        "profiles": [
            {"plugins": {"bind": {"enabled": [{"name": "SlowBinder"}], "disabled": [{"name": "*"}]}}}
        ],
    }
    config = config_from_dict(doc, registry, source="<test>")
    assert binding_workers(config, registry) == BINDING_WORKERS


def test_a_binding_extender_gets_workers() -> None:
    registry = default_registry()
    doc = {
        "apiVersion": API_VERSION,
        "kind": KIND,
        "extenders": [{"urlPrefix": "http://127.0.0.1:1/x", "bindVerb": "bind"}],
    }
    config = config_from_dict(doc, registry, source="<test>")
    assert binding_workers(config, registry) == BINDING_WORKERS


def test_in_place_binds_are_grouped_and_the_batch_schedulers_are_not(tmp_path: Path) -> None:
    """Grouped binds are for the driver's thread alone: the batch scheduler's bind workers commit
    each bind as they make it."""
    store = SqliteStore(tmp_path / "cluster.db")
    served = ServedSchedulers(store)
    try:
        assert isinstance(served.scheduler.ports.binder, GroupedBinds)
        assert served.scheduler.ports.binder is served.binds
        assert not isinstance(served.batch.ports.binder, GroupedBinds)
    finally:
        served.scheduler.close()
        served.batch.close()
        store.close()
