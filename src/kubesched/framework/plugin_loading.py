"""Out-of-tree plugins: found by entry point or named ``module:Class``, registered like in-tree ones.

A plugin is a class with a ``name`` and the methods of the extension points it implements (see
:mod:`kubesched.plugins.api`). Two styles:

- *vectorized*, like every in-tree plugin: ``filter_nodes(state, pod, table) -> FilterResult`` and
  ``score_nodes(state, pod, table, slots) -> IntArray`` see the whole :class:`NodeTable` at once;
- *per node*: ``filter(state, pod, node_info) -> Status | None`` and
  ``score(state, pod, node_info) -> int``; :func:`adapt` turns them into the vectorized methods (one
  Python call per node, so slower, but the easiest to write).

Args: a class attribute ``Args`` (a pydantic model) makes the configuration loader validate the
plugin's ``pluginConfig`` args with it, with the same field paths and messages as in-tree args; the
plugin is constructed with the validated model (or None when it has no ``Args``).

Batch (Volcano-style) session plugins (``on_session_open`` / ``on_session_close``) and actions
(``execute``) are registered in :mod:`kubesched.batch.factory` the same way, and named in a batch conf.

Discovery: :data:`ENTRY_POINT_GROUP` entry points (``[project.entry-points."kubesched.plugins"]`` in a
package's pyproject) each name a plugin class, or a callable returning a list of them; the command
line adds more with ``--plugin module:Class``.
"""

from __future__ import annotations

import importlib
import inspect
import logging
from collections.abc import Iterable, Sequence
from importlib.metadata import entry_points
from typing import Any

import numpy as np
from pydantic import BaseModel

from kubesched.errors import InputError
from kubesched.framework.interfaces import extension_points_of
from kubesched.framework.registry import PluginSpec, Registry
from kubesched.framework.status import Code, Status
from kubesched.framework.types import FilterResult, IntArray, NodeFailure

log = logging.getLogger(__name__)

#: Entry point group out-of-tree plugin packages register their plugin classes under.
ENTRY_POINT_GROUP = "kubesched.plugins"


def _has(cls: type, method: str) -> bool:
    return callable(getattr(cls, method, None))


def adapt(cls: type) -> type:
    """The class itself when it is vectorized; else a subclass whose ``filter_nodes`` /
    ``score_nodes`` call its per-node ``filter`` / ``score`` for every node."""
    per_node_filter = _has(cls, "filter") and not _has(cls, "filter_nodes")
    per_node_score = _has(cls, "score") and not _has(cls, "score_nodes")
    if not per_node_filter and not per_node_score:
        return cls
    namespace: dict[str, Any] = {"__module__": cls.__module__, "__doc__": cls.__doc__}
    if per_node_filter:
        namespace["filter_nodes"] = _filter_nodes
    if per_node_score:
        namespace["score_nodes"] = _score_nodes
    return type(cls.__name__, (cls,), namespace)


def _node_infos(plugin: Any) -> dict[str, Any]:
    handle = plugin.__dict__.get("_kubesched_handle")
    if handle is None:
        raise RuntimeError(f"per-node plugin {plugin.name} was built without a handle")
    infos: dict[str, Any] = handle.snapshot.node_infos
    return infos


def _filter_nodes(self: Any, state: Any, pod: Any, table: Any) -> FilterResult:
    """Per-node Filter, vectorized: every valid node of the table, one ``filter`` call each."""
    infos = _node_infos(self)
    passed = np.zeros(table.capacity, dtype=np.bool_)
    failures: dict[tuple[str, bool], np.ndarray[Any, np.dtype[np.bool_]]] = {}
    for slot in table.order.tolist():
        info = infos.get(table.names[slot])
        if info is None:
            continue
        status = self.filter(state, pod, info)
        if status is None or status.code == Code.SUCCESS:
            passed[slot] = True
            continue
        if not isinstance(status, Status):
            raise TypeError(f"filter returned {type(status).__name__}, not a Status or None")
        if status.code == Code.ERROR:
            raise RuntimeError(f"node {table.names[slot]}: {status.message}")
        unresolvable = status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
        for reason in status.reasons or [f"node(s) didn't satisfy plugin {self.name}"]:
            mask = failures.setdefault((reason, unresolvable), np.zeros(table.capacity, dtype=np.bool_))
            mask[slot] = True
    return FilterResult(passed, [NodeFailure(r, m, u) for (r, u), m in failures.items()])


def _score_nodes(self: Any, state: Any, pod: Any, table: Any, slots: IntArray) -> IntArray:
    """Per-node Score, vectorized: one ``score`` call per candidate slot."""
    infos = _node_infos(self)
    out = np.zeros(len(slots), dtype=np.int64)
    for i, slot in enumerate(slots.tolist()):
        value = self.score(state, pod, infos[table.names[slot]])
        if isinstance(value, tuple):  # (score, status), as upstream's Score returns
            value, status = value
            if status is not None and status.code != Code.SUCCESS:
                raise RuntimeError(f"node {table.names[slot]}: {status.message}")
        if isinstance(value, bool) or not isinstance(value, int | np.integer):
            raise TypeError(f"score for node {table.names[slot]} is {value!r}, not an integer")
        out[i] = int(value)
    return out


def _factory(cls: type) -> Any:
    """Build instances of ``cls`` the way its constructor asks: ``(args, handle)``, ``(args)`` or
    ``()``. A per-node plugin keeps the handle to reach the snapshot's NodeInfos."""
    try:
        params = [
            p
            for p in inspect.signature(cls).parameters.values()
            if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
        ]
    except (TypeError, ValueError):
        params = []
    takes = min(len(params), 2)

    def build(args: Any, handle: Any) -> object:
        obj = cls(*(args, handle)[:takes])
        if hasattr(obj, "__dict__"):
            obj.__dict__.setdefault("_kubesched_handle", handle)
        return obj

    return build


def plugin_spec(cls: Any, *, source: str = "") -> PluginSpec:
    """A registry entry for an out-of-tree plugin class."""
    where = f" ({source})" if source else ""
    if not isinstance(cls, type):
        raise InputError(f"{cls!r}{where} is not a plugin class")
    name = getattr(cls, "name", None)
    if not isinstance(name, str) or not name:
        raise InputError(
            f"plugin class {cls.__module__}.{cls.__qualname__}{where} needs a non-empty str `name`"
        )
    adapted = adapt(cls)
    points = extension_points_of(adapted)
    if not points:
        raise InputError(
            f"plugin {name}{where} implements no extension point (methods such as filter, score, "
            "filter_nodes, score_nodes, pre_filter, reserve, permit, bind)"
        )
    args_model = getattr(cls, "Args", None)
    if args_model is not None and not (isinstance(args_model, type) and issubclass(args_model, BaseModel)):
        raise InputError(f"plugin {name}{where}: Args must be a pydantic model class")
    return PluginSpec(name=name, factory=_factory(adapted), extension_points=points, args_model=args_model)


def load_reference(ref: str) -> Any:
    """The object a ``module:attribute`` reference names."""
    module_name, sep, attr = ref.partition(":")
    if not sep or not module_name or not attr:
        raise InputError(f"plugin reference {ref!r} must look like module:Class", field="--plugin")
    try:
        obj: Any = importlib.import_module(module_name)
    except ImportError as exc:
        raise InputError(f"cannot import module {module_name!r}: {exc}", field="--plugin") from None
    for part in attr.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise InputError(f"module {module_name!r} has no attribute {attr!r}", field="--plugin") from None
    return obj


def _classes(obj: Any) -> list[Any]:
    """An entry point's target: a plugin class, or a callable returning plugin classes."""
    if isinstance(obj, type):
        return [obj]
    if callable(obj):
        found = obj()
        return list(found) if isinstance(found, Iterable) else [found]
    return [obj]


def register(registry: Registry, cls: Any, *, source: str = "") -> str:
    """Register an out-of-tree class where its methods say it belongs: a batch session plugin
    (``on_session_open``) or action (``execute``) in the batch factory, any other plugin in
    ``registry``. Returns its name."""
    if isinstance(cls, type) and (_has(cls, "on_session_open") or _has(cls, "execute")):
        return register_batch(cls, source=source)
    spec = plugin_spec(cls, source=source)
    if spec.name in registry:
        raise InputError(
            f"plugin {spec.name!r}{f' ({source})' if source else ''} is already registered; "
            "out-of-tree plugins need names of their own"
        )
    registry.register(spec)
    return spec.name


#: (is a plugin, name) → the out-of-tree batch class registered under that name.
_BATCH_CLASSES: dict[tuple[bool, str], type] = {}


def _is_model(value: Any) -> bool:
    return isinstance(value, type) and issubclass(value, BaseModel)


def register_batch(cls: type, *, source: str = "") -> str:
    """Register a batch (Volcano-style) session plugin or action under its ``name``.

    A plugin is built for every session from its conf entry: with its ``Args`` model validated from
    the entry's ``arguments`` when it has one (the conf loader checks them up front), else with the
    whole entry (a ``PluginOption``: name, arguments, switches). An action is built with no
    arguments. Registering the same class again is a no-op (the batch registry is per process).
    """
    from kubesched.batch import factory
    from kubesched.batch.out_of_tree import GuardedAction, GuardedPlugin
    from kubesched.framework.plugin_args import parse_args

    where = f" ({source})" if source else ""
    name = getattr(cls, "name", None)
    if not isinstance(name, str) or not name:
        qualified = f"{cls.__module__}.{cls.__qualname__}"
        raise InputError(f"batch class {qualified}{where} needs a non-empty str `name`")
    is_plugin = _has(cls, "on_session_open")
    known = factory.plugin_names() if is_plugin else factory.action_names()
    if name in known:
        if _BATCH_CLASSES.get((is_plugin, name)) is cls:
            return name
        raise InputError(
            f"batch {'plugin' if is_plugin else 'action'} {name!r}{where} is already registered; "
            "out-of-tree plugins and actions need names of their own"
        )
    builds = _factory(cls)
    if is_plugin:
        if not _has(cls, "on_session_close"):
            raise InputError(f"batch plugin {name}{where} needs on_session_close as well as on_session_open")
        args_model = getattr(cls, "Args", None)
        if args_model is not None and not _is_model(args_model):
            raise InputError(f"batch plugin {name}{where}: Args must be a pydantic model class")

        def build_plugin(option: Any) -> Any:
            args = parse_args(args_model, option.arguments) if args_model is not None else option
            return GuardedPlugin(builds(args, None))

        factory.register_plugin(name, build_plugin, args_model)
    else:
        factory.register_action(name, lambda: GuardedAction(builds(None, None)))
    _BATCH_CLASSES[(is_plugin, name)] = cls
    return name


def register_entry_points(registry: Registry, group: str = ENTRY_POINT_GROUP) -> list[str]:
    """Register every plugin the installed packages declare under ``group``; returns their names."""
    names: list[str] = []
    for ep in sorted(entry_points(group=group), key=lambda e: e.name):
        source = f"entry point {ep.name} = {ep.value}"
        try:
            target = ep.load()
        except Exception as exc:
            raise InputError(f"cannot load {source}: {exc}") from None
        for cls in _classes(target):
            names.append(register(registry, cls, source=source))
    return names


def plugin_registry(
    references: Sequence[str] = (), *, use_entry_points: bool = True, base: Registry | None = None
) -> Registry:
    """The in-tree registry plus installed (entry point) plugins and ``module:Class`` references."""
    if base is None:
        from kubesched.plugins import default_registry

        base = default_registry()
    if use_entry_points:
        register_entry_points(base)
    for ref in references:
        for cls in _classes(load_reference(ref)):
            register(base, cls, source=ref)
    return base
