"""Loading and validating ``KubeSchedulerConfiguration`` (``kubescheduler.config.k8s.io/v1``).

The result is a :class:`SchedulerConfig` whose profiles already carry the final, ordered plugin list
of every extension point: upstream v1 defaults, merged with the user's plugin sets, with ``multiPoint``
expanded through the registry, score weights resolved, and every enabled plugin's args defaulted and
validated. Every problem is an :class:`~kubesched.errors.InputError` naming the file and the field.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import yaml
from pydantic import BaseModel

from kubesched.api.yaml_input import BoundedSafeLoader
from kubesched.errors import InputError
from kubesched.framework.extension_points import MULTI_POINT, ExtensionPoint
from kubesched.framework.plugin_args import (
    ARGS_MODELS,
    INT32_MAX,
    INT32_MIN,
    INT64_MAX,
    INT64_MIN,
    parse_args,
)
from kubesched.framework.registry import UPSTREAM_PLUGIN_NAMES, Registry

API_VERSION: Final = "kubescheduler.config.k8s.io/v1"
KIND: Final = "KubeSchedulerConfiguration"
DEFAULT_SCHEDULER_NAME: Final = "default-scheduler"
DEFAULT_PARALLELISM: Final = 16
DEFAULT_POD_INITIAL_BACKOFF_SECONDS: Final = 1
DEFAULT_POD_MAX_BACKOFF_SECONDS: Final = 10
#: Highest score one plugin gives a node; weights multiply it, and their sum must fit in an int64.
MAX_NODE_SCORE: Final = 100

#: Upstream v1 default plugins (kube-scheduler v1.34, default feature gates), all under multiPoint, in
#: order, with their score weights (None: unset, which the framework treats as 1).
DEFAULT_MULTI_POINT_PLUGINS: Final[tuple[tuple[str, int | None], ...]] = (
    ("SchedulingGates", None),
    ("PrioritySort", None),
    ("NodeUnschedulable", None),
    ("NodeName", None),
    ("TaintToleration", 3),
    ("NodeAffinity", 2),
    ("NodePorts", None),
    ("NodeResourcesFit", 1),
    ("VolumeRestrictions", None),
    ("NodeVolumeLimits", None),
    ("VolumeBinding", None),
    ("VolumeZone", None),
    ("PodTopologySpread", 2),
    ("InterPodAffinity", 2),
    ("DynamicResources", None),
    ("DefaultPreemption", None),
    ("NodeResourcesBalancedAllocation", 1),
    ("ImageLocality", 1),
    ("DefaultBinder", None),
)

#: Plugins upstream removed; v1 rejects them when enabled or configured.
REMOVED_PLUGIN_NAMES: Final = frozenset({"AzureDiskLimits", "CinderLimits", "EBSLimits", "GCEPDLimits"})

_OLD_API_VERSIONS: Final = frozenset(
    {
        "kubescheduler.config.k8s.io/v1alpha1",
        "kubescheduler.config.k8s.io/v1alpha2",
        "kubescheduler.config.k8s.io/v1beta1",
        "kubescheduler.config.k8s.io/v1beta2",
        "kubescheduler.config.k8s.io/v1beta3",
    }
)

_TOP_LEVEL_FIELDS: Final = (
    "apiVersion",
    "kind",
    "parallelism",
    "leaderElection",
    "clientConnection",
    "enableProfiling",
    "enableContentionProfiling",
    "percentageOfNodesToScore",
    "podInitialBackoffSeconds",
    "podMaxBackoffSeconds",
    "profiles",
    "extenders",
    "delayCacheUntilActive",
)
_PROFILE_FIELDS: Final = ("schedulerName", "percentageOfNodesToScore", "plugins", "pluginConfig")
_PLUGINS_FIELDS: Final = (MULTI_POINT, *(p.value for p in ExtensionPoint))
_PLUGIN_SET_FIELDS: Final = ("enabled", "disabled")
_PLUGIN_FIELDS: Final = ("name", "weight")
_PLUGIN_CONFIG_FIELDS: Final = ("name", "args")


@dataclass(frozen=True, slots=True)
class PluginRef:
    """A plugin at one extension point. ``weight`` is set (>= 1) at ``score`` and 0 elsewhere."""

    name: str
    weight: int = 0


@dataclass(slots=True)
class ProfileConfig:
    """One scheduling profile, fully resolved."""

    scheduler_name: str
    percentage_of_nodes_to_score: int | None  # profile override; None: use the global setting
    plugins: dict[ExtensionPoint, list[PluginRef]]  # every extension point, in run order
    plugin_args: dict[str, BaseModel | None]  # every enabled plugin → its args (None: takes none)


@dataclass(slots=True)
class SchedulerConfig:
    """A loaded ``KubeSchedulerConfiguration``."""

    profiles: list[ProfileConfig]
    percentage_of_nodes_to_score: int | None = None  # None (or 0 upstream): adaptive
    pod_initial_backoff_seconds: int = DEFAULT_POD_INITIAL_BACKOFF_SECONDS
    pod_max_backoff_seconds: int = DEFAULT_POD_MAX_BACKOFF_SECONDS
    parallelism: int = DEFAULT_PARALLELISM
    extenders: list[dict[str, Any]] = field(default_factory=list)  # kept raw for now

    def profile(self, scheduler_name: str) -> ProfileConfig | None:
        """The profile with that ``schedulerName``, if any."""
        for prof in self.profiles:
            if prof.scheduler_name == scheduler_name:
                return prof
        return None


# --------------------------------------------------------------------------------------------------
# Public entry points


def default_config(registry: Registry) -> SchedulerConfig:
    """The configuration kube-scheduler runs with when given none, restricted to *registry*."""
    return config_from_dict({"apiVersion": API_VERSION, "kind": KIND}, registry, source="<defaults>")


def load_config(path: str | Path, registry: Registry) -> SchedulerConfig:
    """Read a YAML or JSON ``KubeSchedulerConfiguration`` file."""
    source = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError("file not found", file=source) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"cannot read file: {exc}", file=source) from None
    try:
        documents = [doc for doc in yaml.load_all(text, Loader=_StrictLoader) if doc is not None]
    except yaml.MarkedYAMLError as exc:
        where = f" at line {exc.problem_mark.line + 1}" if exc.problem_mark is not None else ""
        raise InputError(f"not valid YAML or JSON{where}: {exc.problem}", file=source) from None
    except yaml.YAMLError as exc:
        raise InputError(f"not valid YAML or JSON: {exc}", file=source) from None
    if not documents:
        raise InputError(f"file is empty; expected a {KIND}", file=source)
    if len(documents) > 1:
        raise InputError(
            f"expected one {KIND} document, found {len(documents)}; split the file or keep one", file=source
        )
    return config_from_dict(documents[0], registry, source=source)


def config_from_dict(
    data: Mapping[str, Any], registry: Registry, source: str = "<config>"
) -> SchedulerConfig:
    """Decode, default and validate a ``KubeSchedulerConfiguration`` given as plain data."""
    return _Loader(registry, source).load(data)


# --------------------------------------------------------------------------------------------------
# YAML


class _StrictLoader(BoundedSafeLoader):
    """SafeLoader that rejects duplicate keys (upstream decodes strictly)."""


def _construct_mapping_strict(loader: yaml.SafeLoader, node: yaml.MappingNode) -> dict[Any, Any]:
    loader.flatten_mapping(node)
    seen: set[Any] = set()
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=True)
        if key in seen:
            raise yaml.constructor.ConstructorError(
                None, None, f"duplicate key {key!r}; give each field once", key_node.start_mark
            )
        seen.add(key)
    return loader.construct_mapping(node, deep=True)


_StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping_strict)


# --------------------------------------------------------------------------------------------------
# Plugin sets, as written and as merged


@dataclass(slots=True)
class _Entry:
    name: str
    weight: int | None
    where: str  # field path of the entry, for error messages


@dataclass(slots=True)
class _PluginSet:
    enabled: list[_Entry] = field(default_factory=list)
    disabled: list[str] = field(default_factory=list)


def _merge_plugin_set(default: _PluginSet, custom: _PluginSet) -> _PluginSet:
    """Upstream's merge of a user plugin set into the default one.

    Disabled names (or ``*``) remove defaults; a default the user enables again keeps its position
    but takes the user's entry (weight included); every other user entry is appended in order.
    """
    disabled = [*custom.disabled, *default.disabled]
    disabled_names = set(disabled)
    by_name = {entry.name: index for index, entry in enumerate(custom.enabled)}  # last one wins
    replaced: set[int] = set()
    enabled: list[_Entry] = []
    if "*" not in disabled_names:
        for entry in default.enabled:
            if entry.name in disabled_names:
                continue
            index = by_name.get(entry.name)
            if index is not None:
                entry = custom.enabled[index]
                replaced.add(index)
            enabled.append(entry)
    enabled.extend(entry for index, entry in enumerate(custom.enabled) if index not in replaced)
    return _PluginSet(enabled=enabled, disabled=disabled)


# --------------------------------------------------------------------------------------------------
# The loader


def _type_name(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, Mapping):
        return "mapping"
    if isinstance(value, list | tuple):
        return "list"
    return type(value).__name__


def _join(path: str, child: str) -> str:
    return f"{path}.{child}" if path else child


class _Loader:
    def __init__(self, registry: Registry, source: str) -> None:
        self.registry = registry
        self.source = source

    # -- error helpers --------------------------------------------------------------------------

    def error(self, message: str, where: str | None) -> InputError:
        return InputError(message, file=self.source, field=where or None)

    def mapping(self, value: Any, where: str, what: str) -> Mapping[str, Any]:
        if value is None:
            return {}
        if not isinstance(value, Mapping):
            raise self.error(f"must be a mapping ({what}), got {_type_name(value)}", where)
        return value

    def sequence(self, value: Any, where: str, what: str) -> list[Any]:
        if value is None:
            return []
        if not isinstance(value, list | tuple):
            raise self.error(f"must be a list ({what}), got {_type_name(value)}", where)
        return list(value)

    def check_fields(self, data: Mapping[str, Any], allowed: Iterable[str], where: str, what: str) -> None:
        allowed = tuple(allowed)
        for key in data:
            if key not in allowed:
                hint = difflib.get_close_matches(str(key), allowed, n=1)
                suggestion = f'; did you mean "{hint[0]}"?' if hint else ""
                raise self.error(
                    f'unknown field "{key}" in {what}{suggestion} (accepted: {", ".join(allowed)})',
                    _join(where, str(key)),
                )

    def integer(
        self, data: Mapping[str, Any], key: str, where: str, *, low: int = INT32_MIN, high: int = INT32_MAX
    ) -> int | None:
        value = data.get(key)
        path = _join(where, key)
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.error(f"must be an integer, got {_type_name(value)} {value!r}", path)
        if not low <= value <= high:
            raise self.error(f"must be in range [{low}, {high}], got {value}", path)
        return value

    def boolean(self, data: Mapping[str, Any], key: str, where: str) -> None:
        value = data.get(key)
        if value is not None and not isinstance(value, bool):
            raise self.error(f"must be true or false, got {_type_name(value)} {value!r}", _join(where, key))

    # -- plugin names ---------------------------------------------------------------------------

    def _suggest(self, name: str) -> str:
        candidates = sorted(set(self.registry) | UPSTREAM_PLUGIN_NAMES)
        folded = {c.lower(): c for c in candidates}
        match = folded.get(name.lower())
        if match is None:
            close = difflib.get_close_matches(name, candidates, n=1, cutoff=0.6)
            match = close[0] if close else None
        if match is not None:
            return f'; did you mean "{match}"?'
        return f" (known plugins: {', '.join(sorted(self.registry))})"

    def check_name(self, name: Any, where: str, *, use: str) -> str:
        """Validate a plugin name. *use* is "enable", "disable" or "configure"."""
        if not isinstance(name, str) or not name:
            raise self.error("a plugin name is required", where)
        if use == "disable" and name == "*":
            return name
        if name in self.registry:
            return name
        if name in REMOVED_PLUGIN_NAMES:
            if use == "disable":
                return name
            raise self.error(
                f'plugin "{name}" was removed from kube-scheduler and is invalid in {API_VERSION}; '
                "remove it (NodeVolumeLimits covers volume limits)",
                where,
            )
        if name in UPSTREAM_PLUGIN_NAMES:
            if use == "enable":
                raise self.error(
                    f'plugin "{name}" is not implemented by kubesched yet; remove it from the enabled '
                    f"plugins (implemented: {', '.join(sorted(self.registry))})",
                    where,
                )
            return name
        raise self.error(f'unknown plugin "{name}"{self._suggest(name)}', where)

    # -- top level ------------------------------------------------------------------------------

    def load(self, data: Any) -> SchedulerConfig:
        if not isinstance(data, Mapping):
            raise self.error(f"expected a {KIND} mapping at the top level, got {_type_name(data)}", None)
        api_version = data.get("apiVersion")
        if api_version != API_VERSION:
            if api_version is None:
                message = f'apiVersion is required: set it to "{API_VERSION}"'
            elif api_version in _OLD_API_VERSIONS:
                message = (
                    f'apiVersion "{api_version}" is no longer supported by kube-scheduler v1.34; '
                    f'migrate the file to "{API_VERSION}"'
                )
            else:
                message = f'unsupported apiVersion "{api_version}"; use "{API_VERSION}"'
            raise self.error(message, "apiVersion")
        kind = data.get("kind")
        if kind != KIND:
            shown = "missing" if kind is None else f'"{kind}"'
            raise self.error(f'kind must be "{KIND}", got {shown}', "kind")
        self.check_fields(data, _TOP_LEVEL_FIELDS, "", KIND)

        parallelism = self.integer(data, "parallelism", "")
        if parallelism is None:
            parallelism = DEFAULT_PARALLELISM
        elif parallelism <= 0:
            raise self.error(f"must be greater than 0, got {parallelism}", "parallelism")

        percentage = self.percentage(data, "")
        initial = self.integer(data, "podInitialBackoffSeconds", "", low=INT64_MIN, high=INT64_MAX)
        initial = DEFAULT_POD_INITIAL_BACKOFF_SECONDS if initial is None else initial
        if initial <= 0:
            raise self.error(f"must be greater than 0, got {initial}", "podInitialBackoffSeconds")
        maximum = self.integer(data, "podMaxBackoffSeconds", "", low=INT64_MIN, high=INT64_MAX)
        maximum = DEFAULT_POD_MAX_BACKOFF_SECONDS if maximum is None else maximum
        if maximum < initial:
            raise self.error(
                f"must be greater than or equal to podInitialBackoffSeconds ({initial}), got {maximum}",
                "podMaxBackoffSeconds",
            )

        self.mapping(data.get("leaderElection"), "leaderElection", "LeaderElectionConfiguration")
        self.mapping(data.get("clientConnection"), "clientConnection", "ClientConnectionConfiguration")
        for flag in ("enableProfiling", "enableContentionProfiling", "delayCacheUntilActive"):
            self.boolean(data, flag, "")

        extenders: list[dict[str, Any]] = []
        for i, ext in enumerate(self.sequence(data.get("extenders"), "extenders", "of Extender")):
            extenders.append(dict(self.mapping(ext, f"extenders[{i}]", "an Extender")))

        raw_profiles = self.sequence(data.get("profiles"), "profiles", "of KubeSchedulerProfile")
        if not raw_profiles:
            raw_profiles = [{}]
        profiles = [
            self.profile(raw, f"profiles[{i}]", single=len(raw_profiles) == 1)
            for i, raw in enumerate(raw_profiles)
        ]
        self.check_profiles(profiles)
        return SchedulerConfig(
            profiles=profiles,
            percentage_of_nodes_to_score=percentage or None,
            pod_initial_backoff_seconds=initial,
            pod_max_backoff_seconds=maximum,
            parallelism=parallelism,
            extenders=extenders,
        )

    def percentage(self, data: Mapping[str, Any], where: str) -> int | None:
        value = self.integer(data, "percentageOfNodesToScore", where)
        if value is not None and not 0 <= value <= 100:
            raise self.error(
                f"must be in range [0, 100] (0 means adaptive), got {value}",
                _join(where, "percentageOfNodesToScore"),
            )
        return value

    def check_profiles(self, profiles: list[ProfileConfig]) -> None:
        first_by_name: dict[str, int] = {}
        for i, prof in enumerate(profiles):
            if prof.scheduler_name in first_by_name:
                raise self.error(
                    f'duplicate schedulerName "{prof.scheduler_name}" (also used by '
                    f"profiles[{first_by_name[prof.scheduler_name]}]); give every profile its own name",
                    f"profiles[{i}].schedulerName",
                )
            first_by_name[prof.scheduler_name] = i
        canon = profiles[0]
        canon_sort = canon.plugins[ExtensionPoint.QUEUE_SORT][0].name
        for i, prof in enumerate(profiles[1:], start=1):
            sort = prof.plugins[ExtensionPoint.QUEUE_SORT][0].name
            if sort != canon_sort:
                raise self.error(
                    f'all profiles must use the same queueSort plugin: profile "{prof.scheduler_name}" '
                    f'uses "{sort}" but profile "{canon.scheduler_name}" uses "{canon_sort}"',
                    f"profiles[{i}].plugins.queueSort",
                )
            if prof.plugin_args.get(sort) != canon.plugin_args.get(canon_sort):
                raise self.error(
                    f'all profiles must configure the queueSort plugin "{sort}" with the same args',
                    f"profiles[{i}].pluginConfig",
                )

    # -- profiles -------------------------------------------------------------------------------

    def profile(self, raw: Any, where: str, *, single: bool) -> ProfileConfig:
        data = self.mapping(raw, where, "a KubeSchedulerProfile")
        self.check_fields(data, _PROFILE_FIELDS, where, "a profile")
        name = data.get("schedulerName")
        if name is None and single:
            name = DEFAULT_SCHEDULER_NAME
        if not isinstance(name, str) or not name:
            raise self.error(
                "schedulerName is required (every profile needs a unique, non-empty name when there "
                "are several)",
                _join(where, "schedulerName"),
            )
        percentage = self.percentage(data, where)

        plugins_where = _join(where, "plugins")
        custom = self.plugins(self.mapping(data.get("plugins"), plugins_where, "Plugins"), plugins_where)
        defaults = {key: _PluginSet() for key in _PLUGINS_FIELDS}
        defaults[MULTI_POINT] = _PluginSet(
            enabled=[
                _Entry(plugin, weight, _join(plugins_where, MULTI_POINT))
                for plugin, weight in DEFAULT_MULTI_POINT_PLUGINS
                if plugin in self.registry
            ]
        )
        merged = {key: _merge_plugin_set(defaults[key], custom[key]) for key in _PLUGINS_FIELDS}
        points = self.expand(merged, plugins_where, name)

        configured = self.plugin_config(data.get("pluginConfig"), _join(where, "pluginConfig"))
        plugin_args: dict[str, BaseModel | None] = {}
        for key in _PLUGINS_FIELDS:
            for entry in merged[key].enabled:
                if entry.name in plugin_args:
                    continue
                if entry.name in configured:
                    plugin_args[entry.name] = configured[entry.name]
                else:
                    model = self.args_model(entry.name)
                    plugin_args[entry.name] = parse_args(model, None) if model is not None else None
        return ProfileConfig(
            scheduler_name=name,
            percentage_of_nodes_to_score=percentage,
            plugins=points,
            plugin_args=plugin_args,
        )

    def plugins(self, data: Mapping[str, Any], where: str) -> dict[str, _PluginSet]:
        self.check_fields(data, _PLUGINS_FIELDS, where, "plugins")
        result: dict[str, _PluginSet] = {}
        for key in _PLUGINS_FIELDS:
            set_where = _join(where, key)
            raw = self.mapping(data.get(key), set_where, "a PluginSet with enabled/disabled lists")
            self.check_fields(raw, _PLUGIN_SET_FIELDS, set_where, "a plugin set")
            plugin_set = _PluginSet()
            for use in ("enable", "disable"):
                list_key = f"{use}d"
                list_where = _join(set_where, list_key)
                for i, item in enumerate(self.sequence(raw.get(list_key), list_where, "of plugins")):
                    item_where = f"{list_where}[{i}]"
                    plugin = self.mapping(item, item_where, "a plugin with name and weight")
                    self.check_fields(plugin, _PLUGIN_FIELDS, item_where, "a plugin")
                    name = self.check_name(plugin.get("name"), _join(item_where, "name"), use=use)
                    weight = self.integer(plugin, "weight", item_where)
                    if use == "disable":
                        plugin_set.disabled.append(name)
                        continue
                    if weight is not None and weight < 0:
                        raise self.error(
                            f"must be 0 or greater, got {weight} (unset or 0 means 1; to stop a plugin "
                            "from scoring, disable it at score)",
                            _join(item_where, "weight"),
                        )
                    plugin_set.enabled.append(_Entry(name, weight, item_where))
            result[key] = plugin_set
        return result

    def expand(
        self, merged: dict[str, _PluginSet], where: str, profile: str
    ) -> dict[ExtensionPoint, list[PluginRef]]:
        """Place every enabled plugin at its extension points (upstream's multiPoint expansion)."""
        multi = merged[MULTI_POINT]
        seen_multi: dict[str, _Entry] = {}
        for entry in multi.enabled:
            if entry.name in seen_multi:
                raise self.error(
                    f'plugin "{entry.name}" is enabled twice under multiPoint; keep one entry', entry.where
                )
            seen_multi[entry.name] = entry

        names: dict[ExtensionPoint, list[str]] = {}
        for point in ExtensionPoint:
            specific = merged[point.value]
            order: list[str] = []
            for entry in specific.enabled:
                spec = self.registry[entry.name]
                if point not in spec.extension_points:
                    implemented = ", ".join(p.value for p in ExtensionPoint if p in spec.extension_points)
                    raise self.error(
                        f'plugin "{entry.name}" does not implement the {point.value} extension point '
                        f"(it implements: {implemented or 'none'}); move it to one of those or to multiPoint",
                        _join(entry.where, "name"),
                    )
                if entry.name in order:
                    raise self.error(
                        f'plugin "{entry.name}" is enabled twice at {point.value}; keep one entry',
                        entry.where,
                    )
                order.append(entry.name)
            disabled = set(specific.disabled)
            if "*" in disabled:
                names[point] = order
                continue
            overrides: set[str] = set()
            from_multi: list[str] = []
            for entry in multi.enabled:
                if point not in self.registry[entry.name].extension_points or entry.name in disabled:
                    continue
                if entry.name in order:
                    overrides.add(entry.name)
                else:
                    from_multi.append(entry.name)
            # Explicitly re-configured plugins first (in their specific order), then the multiPoint
            # ones, then the rest of the specific list.
            names[point] = (
                [n for n in order if n in overrides] + from_multi + [n for n in order if n not in overrides]
            )

        weights = self.score_weights(merged, names[ExtensionPoint.SCORE], where)
        points = {
            point: [PluginRef(n, weights[n] if point is ExtensionPoint.SCORE else 0) for n in plugin_names]
            for point, plugin_names in names.items()
        }
        queue_sort = points[ExtensionPoint.QUEUE_SORT]
        if len(queue_sort) != 1:
            got = ", ".join(f'"{ref.name}"' for ref in queue_sort) or "none"
            raise self.error(
                f'profile "{profile}" needs exactly one queueSort plugin, got {got}; enable one '
                "(PrioritySort is the default) and disable the others",
                _join(where, "queueSort"),
            )
        if not points[ExtensionPoint.BIND]:
            raise self.error(
                f'profile "{profile}" needs at least one bind plugin; enable DefaultBinder (or another '
                "bind plugin) at bind or multiPoint",
                _join(where, "bind"),
            )
        return points

    def score_weights(
        self, merged: dict[str, _PluginSet], score_names: list[str], where: str
    ) -> dict[str, int]:
        """Weights of score plugins: the score entry wins over multiPoint; unset or 0 means 1."""
        weights: dict[str, int] = {}
        total = 0
        for entry in (*merged[ExtensionPoint.SCORE.value].enabled, *merged[MULTI_POINT].enabled):
            if (
                ExtensionPoint.SCORE not in self.registry[entry.name].extension_points
                or entry.name in weights
            ):
                continue
            weights[entry.name] = entry.weight or 1
            total += weights[entry.name] * MAX_NODE_SCORE
            if total > INT64_MAX:
                raise self.error(
                    "the score plugins' weights are too large: their total score could overflow; "
                    "lower the weights",
                    _join(where, "score"),
                )
        missing = [n for n in score_names if n not in weights]
        assert not missing, missing  # every placed score plugin came from one of those lists
        return weights

    # -- pluginConfig ---------------------------------------------------------------------------

    def args_model(self, name: str) -> type[BaseModel] | None:
        spec = self.registry.get(name)
        if spec is not None and spec.args_model is not None:
            return spec.args_model
        return ARGS_MODELS.get(name)

    def plugin_config(self, raw: Any, where: str) -> dict[str, BaseModel | None]:
        """Validated args by plugin name (only plugins that take args or are not registered)."""
        result: dict[str, BaseModel | None] = {}
        first: dict[str, int] = {}
        for i, item in enumerate(self.sequence(raw, where, "of PluginConfig")):
            item_where = f"{where}[{i}]"
            entry = self.mapping(item, item_where, "a PluginConfig with name and args")
            self.check_fields(entry, _PLUGIN_CONFIG_FIELDS, item_where, "a pluginConfig entry")
            name = self.check_name(entry.get("name"), _join(item_where, "name"), use="configure")
            if name in first:
                raise self.error(
                    f'duplicate pluginConfig for plugin "{name}" (first at {where}[{first[name]}]); '
                    "merge the two entries",
                    _join(item_where, "name"),
                )
            first[name] = i
            args_where = _join(item_where, "args")
            args = self.strip_type_meta(entry.get("args"), name, args_where)
            model = self.args_model(name)
            if model is None:
                if name in self.registry and args:
                    raise self.error(
                        f'plugin "{name}" takes no args; remove its pluginConfig entry', args_where
                    )
                continue  # known upstream plugin kubesched does not implement: accepted, unused
            try:
                result[name] = parse_args(model, args)
            except InputError as exc:
                raise exc.located(file=self.source, field_prefix=args_where) from None
        return result

    def strip_type_meta(self, raw: Any, name: str, where: str) -> Any:
        """Drop an optional apiVersion/kind from args after checking they match the plugin."""
        if not isinstance(raw, Mapping) or ("apiVersion" not in raw and "kind" not in raw):
            return raw
        args = dict(raw)
        kind = args.pop("kind", None)
        version = args.pop("apiVersion", None)
        if kind is not None and kind != f"{name}Args":
            raise self.error(
                f'kind must be "{name}Args" for plugin "{name}", got "{kind}"', _join(where, "kind")
            )
        if version is not None and version != API_VERSION:
            raise self.error(
                f'apiVersion must be "{API_VERSION}", got "{version}"', _join(where, "apiVersion")
            )
        return args
