"""Finding and registering out-of-tree plugins for both pipelines.

Discovery: :data:`~kubesched.framework.out_of_tree.ENTRY_POINT_GROUP` entry points
(``[project.entry-points."kubesched.plugins"]`` in a package's pyproject) each name a plugin class, or a
callable returning a list of them; the command line adds more with ``--plugin module:Class``.

A kube-scheduler plugin joins a framework :class:`Registry` (see :mod:`kubesched.framework.out_of_tree`);
batch (Volcano-style) session plugins (``on_session_open`` / ``on_session_close``) and actions
(``execute``) are registered in :mod:`kubesched.batch.factory` the same way, and named in a batch conf.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterable, Sequence
from importlib.metadata import entry_points
from typing import Any

from pydantic import BaseModel

from kubesched.batch import factory
from kubesched.batch.out_of_tree import GuardedAction, GuardedPlugin
from kubesched.errors import InputError
from kubesched.framework.out_of_tree import ENTRY_POINT_GROUP, has_method, plugin_factory, plugin_spec
from kubesched.framework.plugin_args import parse_args
from kubesched.framework.registry import Registry
from kubesched.plugins import default_registry


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
    if isinstance(cls, type) and (has_method(cls, "on_session_open") or has_method(cls, "execute")):
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
    where = f" ({source})" if source else ""
    name = getattr(cls, "name", None)
    if not isinstance(name, str) or not name:
        qualified = f"{cls.__module__}.{cls.__qualname__}"
        raise InputError(f"batch class {qualified}{where} needs a non-empty str `name`")
    is_plugin = has_method(cls, "on_session_open")
    known = factory.plugin_names() if is_plugin else factory.action_names()
    if name in known:
        if _BATCH_CLASSES.get((is_plugin, name)) is cls:
            return name
        raise InputError(
            f"batch {'plugin' if is_plugin else 'action'} {name!r}{where} is already registered; "
            "out-of-tree plugins and actions need names of their own"
        )
    builds = plugin_factory(cls)
    if is_plugin:
        if not has_method(cls, "on_session_close"):
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
        base = default_registry()
    if use_entry_points:
        register_entry_points(base)
    for ref in references:
        for cls in _classes(load_reference(ref)):
            register(base, cls, source=ref)
    return base
