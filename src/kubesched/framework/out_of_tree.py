"""Out-of-tree plugins: how a plugin class becomes a registry entry of the framework.

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

Discovery and registration (entry points, ``--plugin module:Class``, batch plugins) are in
:mod:`kubesched.runtime.plugin_loading`.
"""

from __future__ import annotations

import inspect
import logging
from typing import Any

import numpy as np
from pydantic import BaseModel

from kubesched.errors import InputError
from kubesched.framework.interfaces import extension_points_of
from kubesched.framework.registry import PluginSpec
from kubesched.framework.status import Code, Status
from kubesched.framework.types import BoolArray, FilterResult, IntArray, NodeFailure

log = logging.getLogger(__name__)

#: Entry point group out-of-tree plugin packages register their plugin classes under.
ENTRY_POINT_GROUP = "kubesched.plugins"


def has_method(cls: type, method: str) -> bool:
    return callable(getattr(cls, method, None))


def adapt(cls: type) -> type:
    """The class itself when it is vectorized; else a subclass whose ``filter_nodes`` /
    ``score_nodes`` call its per-node ``filter`` / ``score`` for every node."""
    per_node_filter = has_method(cls, "filter") and not has_method(cls, "filter_nodes")
    per_node_score = has_method(cls, "score") and not has_method(cls, "score_nodes")
    if not per_node_filter and not per_node_score:
        return cls
    namespace: dict[str, Any] = {"__module__": cls.__module__, "__doc__": cls.__doc__}
    if per_node_filter:
        namespace["filter_nodes"] = _filter_nodes
        namespace["filter_rows"] = _filter_rows
    if per_node_score:
        namespace["score_nodes"] = _score_nodes
    return type(cls.__name__, (cls,), namespace)


def _node_infos(plugin: Any) -> dict[str, Any]:
    handle = plugin.__dict__.get("_kubesched_handle")
    if handle is None:
        raise RuntimeError(f"per-node plugin {plugin.name} was built without a handle")
    infos: dict[str, Any] = handle.snapshot.node_infos
    return infos


def _verdict(self: Any, state: Any, pod: Any, info: Any, node: str) -> Status | None:
    """One node's answer from a per-node Filter: None when it passes, else the failing Status; an
    answer that is not a Status, or an Error, is raised."""
    status = self.filter(state, pod, info)
    if status is None or status.code == Code.SUCCESS:
        return None
    if not isinstance(status, Status):
        raise TypeError(f"filter returned {type(status).__name__}, not a Status or None")
    if status.code == Code.ERROR:
        raise RuntimeError(f"node {node}: {status.message}")
    return status


def _filter_nodes(self: Any, state: Any, pod: Any, table: Any) -> FilterResult:
    """Per-node Filter, vectorized: every valid node of the table, one ``filter`` call each."""
    infos = _node_infos(self)
    passed = np.zeros(table.capacity, dtype=np.bool_)
    failures: dict[tuple[str, bool], np.ndarray[Any, np.dtype[np.bool_]]] = {}
    for slot in table.order.tolist():
        info = infos.get(table.names[slot])
        if info is None:
            continue
        status = _verdict(self, state, pod, info, table.names[slot])
        if status is None:
            passed[slot] = True
            continue
        unresolvable = status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
        for reason in status.reasons or [f"node(s) didn't satisfy plugin {self.name}"]:
            mask = failures.setdefault((reason, unresolvable), np.zeros(table.capacity, dtype=np.bool_))
            mask[slot] = True
    return FilterResult(passed, [NodeFailure(r, m, u) for (r, u), m in failures.items()])


def _filter_rows(self: Any, state: Any, pod: Any, table: Any, rows: IntArray) -> BoolArray:
    """Per-node Filter on the rows a cycle's walk reaches: one ``filter`` call each, as upstream
    calls a Filter plugin only for the nodes it evaluates."""
    infos = _node_infos(self)
    passed = np.zeros(len(rows), dtype=np.bool_)
    for i, slot in enumerate(rows.tolist()):
        info = infos.get(table.names[slot])
        if info is not None and _verdict(self, state, pod, info, table.names[slot]) is None:
            passed[i] = True
    return passed


#: The per-node adapter's row judge: its verdicts are built here, so they need no check.
ADAPTED_FILTER_ROWS = _filter_rows


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


def plugin_factory(cls: type) -> Any:
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
    return PluginSpec(
        name=name, factory=plugin_factory(adapted), extension_points=points, args_model=args_model
    )
