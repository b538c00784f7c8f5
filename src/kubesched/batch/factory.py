"""Every batch plugin and action kubesched provides, registered by name (Volcano's ``factory.go``).

The registrations are explicit: a built-in whose module fails to import fails the import of this
module, instead of quietly disappearing from the run. A name Volcano knows but kubesched does not
implement has no builder (the scheduler warns and skips it); any other name is an input error.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable
from typing import Protocol

from pydantic import BaseModel

from kubesched.batch.actions.allocate import AllocateAction
from kubesched.batch.actions.backfill import BackfillAction
from kubesched.batch.actions.enqueue import EnqueueAction
from kubesched.batch.actions.gangpreempt import GangPreemptAction
from kubesched.batch.actions.gangreclaim import GangReclaimAction
from kubesched.batch.actions.preempt import PreemptAction
from kubesched.batch.actions.reclaim import ReclaimAction
from kubesched.batch.conf import VOLCANO_ACTIONS, VOLCANO_PLUGINS, PluginOption
from kubesched.batch.plugins.binpack import BinpackPlugin
from kubesched.batch.plugins.capacity import CapacityPlugin
from kubesched.batch.plugins.conformance import ConformancePlugin
from kubesched.batch.plugins.drf import DrfPlugin
from kubesched.batch.plugins.gang import GangPlugin
from kubesched.batch.plugins.gpushare import GpuSharePlugin
from kubesched.batch.plugins.network_topology_aware import NetworkTopologyAwarePlugin
from kubesched.batch.plugins.nodeorder import NodeOrderPlugin
from kubesched.batch.plugins.overcommit import OvercommitPlugin
from kubesched.batch.plugins.predicates import PredicatesPlugin
from kubesched.batch.plugins.priority import PriorityPlugin
from kubesched.batch.plugins.proportion import ProportionPlugin
from kubesched.batch.session import Session
from kubesched.errors import InputError


class BatchPlugin(Protocol):
    name: str

    def on_session_open(self, ssn: Session) -> None: ...
    def on_session_close(self, ssn: Session) -> None: ...


class BatchAction(Protocol):
    name: str

    def execute(self, ssn: Session) -> None: ...


PluginBuilder = Callable[[PluginOption], BatchPlugin]
ActionBuilder = Callable[[], BatchAction]

_plugin_builders: dict[str, PluginBuilder] = {}
_action_builders: dict[str, ActionBuilder] = {}
#: Out-of-tree plugins' argument models: the conf loader checks their ``arguments`` with them.
_plugin_args_models: dict[str, type[BaseModel]] = {}


def register_plugin(name: str, builder: PluginBuilder, args_model: type[BaseModel] | None = None) -> None:
    _plugin_builders[name] = builder
    if args_model is not None:
        _plugin_args_models[name] = args_model


def plugin_args_model(name: str) -> type[BaseModel] | None:
    return _plugin_args_models.get(name)


def register_action(name: str, builder: ActionBuilder) -> None:
    _action_builders[name] = builder


def plugin_names() -> frozenset[str]:
    return frozenset(_plugin_builders)


def action_names() -> frozenset[str]:
    return frozenset(_action_builders)


def _unknown(what: str, name: str, choices: frozenset[str]) -> InputError:
    close = difflib.get_close_matches(name, sorted(choices), n=1, cutoff=0.6)
    hint = f"; did you mean {close[0]!r}?" if close else f"; known: {', '.join(sorted(choices))}"
    return InputError(f"unknown batch {what} {name!r}{hint}")


def get_plugin_builder(name: str) -> PluginBuilder | None:
    """The builder of plugin ``name``; None for a Volcano plugin kubesched does not implement."""
    builder = _plugin_builders.get(name)
    if builder is None and name not in VOLCANO_PLUGINS:
        raise _unknown("plugin", name, VOLCANO_PLUGINS | _plugin_builders.keys())
    return builder


def get_action(name: str) -> BatchAction | None:
    """A new instance of action ``name``; None for a Volcano action kubesched does not implement."""
    builder = _action_builders.get(name)
    if builder is None:
        if name not in VOLCANO_ACTIONS:
            raise _unknown("action", name, VOLCANO_ACTIONS | _action_builders.keys())
        return None
    return builder()


register_plugin(PriorityPlugin.name, PriorityPlugin)
register_plugin(GangPlugin.name, GangPlugin)
register_plugin(ConformancePlugin.name, ConformancePlugin)
register_plugin(OvercommitPlugin.name, OvercommitPlugin)
register_plugin(PredicatesPlugin.name, PredicatesPlugin)
register_plugin(NodeOrderPlugin.name, NodeOrderPlugin)
register_plugin(BinpackPlugin.name, BinpackPlugin)
register_plugin(DrfPlugin.name, DrfPlugin)
register_plugin(ProportionPlugin.name, ProportionPlugin)
register_plugin(CapacityPlugin.name, CapacityPlugin)
register_plugin(GpuSharePlugin.name, GpuSharePlugin)
register_plugin(NetworkTopologyAwarePlugin.name, NetworkTopologyAwarePlugin)

register_action(EnqueueAction.name, EnqueueAction)
register_action(AllocateAction.name, AllocateAction)
register_action(BackfillAction.name, BackfillAction)
register_action(PreemptAction.name, PreemptAction)
register_action(ReclaimAction.name, ReclaimAction)
register_action(GangPreemptAction.name, GangPreemptAction)
register_action(GangReclaimAction.name, GangReclaimAction)


__all__ = [
    "ActionBuilder",
    "BatchAction",
    "BatchPlugin",
    "PluginBuilder",
    "action_names",
    "get_action",
    "get_plugin_builder",
    "plugin_names",
    "register_action",
    "register_plugin",
]
