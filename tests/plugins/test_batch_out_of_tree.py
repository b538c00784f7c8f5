"""Out-of-tree batch (Volcano-style) session plugins and actions: registered like scheduler plugins,
named in a batch conf, their arguments checked by their own model when the conf is loaded."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, ClassVar

import numpy as np
import pytest

from kubesched.batch import factory
from kubesched.batch.conf_loader import batch_conf_from_dict
from kubesched.batch.testing import node, pod, pod_group, queue
from kubesched.errors import ConfigError, InputError
from kubesched.framework.types import FilterResult
from kubesched.plugins import api
from kubesched.runtime.plugin_loading import plugin_registry, register
from kubesched.sim.simulation import Simulation


@pytest.fixture(autouse=True)
def fresh_factory(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Registrations here must not leak into other tests (the batch registry is per process)."""
    monkeypatch.setattr(factory, "_plugin_builders", dict(factory._plugin_builders))
    monkeypatch.setattr(factory, "_action_builders", dict(factory._action_builders))
    monkeypatch.setattr(factory, "_plugin_args_models", dict(factory._plugin_args_models))
    yield


class AvoidNode:
    """A session plugin: a predicate that keeps tasks off one node, by name."""

    name = "avoid-node"

    class Args(api.PluginArgs):
        node: str

    def __init__(self, args: AvoidNode.Args) -> None:
        self.node = args.node

    def on_session_open(self, ssn: Any) -> None:
        def predicate(task: Any, table: api.NodeTable) -> FilterResult:
            slot = table.slot_of.get(self.node)
            bad = np.zeros(table.capacity, dtype=np.bool_)
            if slot is not None:
                bad[slot] = True
            return FilterResult.reject(bad, f"node(s) are {self.node}")

        ssn.add_predicate_fn(self.name, predicate)

    def on_session_close(self, ssn: Any) -> None:
        return None


class CountSessions:
    """A custom action: counts the sessions it ran in."""

    name = "count-sessions"
    runs: ClassVar[int] = 0

    def execute(self, ssn: Any) -> None:
        CountSessions.runs += 1


CONF = {
    "actions": "enqueue, allocate, count-sessions",
    "tiers": [
        {"plugins": [{"name": "priority"}, {"name": "gang"}]},
        {"plugins": [{"name": "predicates"}, {"name": "avoid-node", "arguments": {"node": "n1"}}]},
    ],
}


def test_custom_session_plugin_and_action_change_a_session() -> None:
    registry = plugin_registry(use_entry_points=False)
    assert register(registry, AvoidNode) == "avoid-node"
    assert register(registry, CountSessions) == "count-sessions"
    assert "avoid-node" not in registry  # batch classes go to the batch factory
    CountSessions.runs = 0
    sim = Simulation(seed=0, batch_conf=batch_conf_from_dict(CONF, "test.conf"))
    for obj in (
        queue("default"),
        node("n1", "8", "8G"),
        node("n2", "2", "8G"),
        pod_group("pg1", "default", 1, "Inqueue"),
        pod("p1", "", "pg1"),
    ):
        sim.store.create(obj)
    result = sim.run()
    assert {o.name: o.node for o in result.outcomes} == {"p1": "n2"}  # n1 has more room, but is avoided
    assert CountSessions.runs >= 1


def test_custom_plugin_arguments_are_checked_when_the_conf_is_loaded() -> None:
    register(plugin_registry(use_entry_points=False), AvoidNode)
    bad = {
        "actions": "allocate",
        "tiers": [{"plugins": [{"name": "avoid-node", "arguments": {"nod": "n1"}}]}],
    }
    with pytest.raises(ConfigError) as info:
        batch_conf_from_dict(bad, "test.conf")
    assert info.value.field == "tiers[0].plugins[0].arguments.node"


def test_unregistered_custom_names_are_still_unknown() -> None:
    with pytest.raises(ConfigError, match="unknown action 'count-sessions'"):
        batch_conf_from_dict(CONF, "test.conf")
    with pytest.raises(ConfigError, match="unknown plugin 'avoid-node'"):
        batch_conf_from_dict({**CONF, "actions": "allocate"}, "test.conf")


def test_registering_twice_is_a_no_op_but_a_name_clash_is_an_error() -> None:
    registry = plugin_registry(use_entry_points=False)
    register(registry, CountSessions)
    register(registry, CountSessions)

    class Allocate:
        name = "allocate"

        def execute(self, ssn: Any) -> None: ...

    with pytest.raises(InputError, match="already registered"):
        register(registry, Allocate)


class Broken:
    """A session plugin whose predicate fails for pods named "bad", and an order function that
    always fails."""

    name = "broken"

    def __init__(self, option: Any) -> None:
        pass

    def on_session_open(self, ssn: Any) -> None:
        def predicate(task: Any, table: api.NodeTable) -> FilterResult:
            if task.name == "bad":
                raise RuntimeError("disk on fire")
            return FilterResult.all_pass(table.capacity)

        def order(a: Any, b: Any) -> int:
            raise ValueError("cannot compare")

        ssn.add_predicate_fn(self.name, predicate)
        ssn.add_job_order_fn(self.name, order)

    def on_session_close(self, ssn: Any) -> None:
        return None


class Exploding:
    name = "exploding"

    def execute(self, ssn: Any) -> None:
        raise RuntimeError("boom")


def test_a_failing_batch_plugin_or_action_holds_only_its_pods_back() -> None:
    registry = plugin_registry(use_entry_points=False)
    register(registry, Broken)
    register(registry, Exploding)
    conf = {
        "actions": "enqueue, exploding, allocate",
        "tiers": [{"plugins": [{"name": "priority"}, {"name": "gang"}, {"name": "broken"}]}],
    }
    sim = Simulation(seed=0, batch_conf=batch_conf_from_dict(conf, "test.conf"))
    for obj in (
        queue("default"),
        node("n1", "8", "8G"),
        pod_group("pg-bad", "default", 1, "Inqueue"),
        pod_group("pg-good", "default", 1, "Inqueue"),
        pod("bad", "", "pg-bad"),
        pod("good", "", "pg-good"),
    ):
        sim.store.create(obj)
    result = sim.run()
    out = {o.name: o for o in result.outcomes}
    assert out["good"].node == "n1"
    assert out["bad"].node is None and "batch plugin broken failed: disk on fire" in out["bad"].message
    assert any("batch plugin exploding failed in execute: RuntimeError: boom" in w for w in result.warnings)
    assert any("batch plugin broken failed in its job_order function" in w for w in result.warnings)
