"""Upstream's defaulting, merging and validation of a ``KubeSchedulerConfiguration``
(``pkg/scheduler/apis/config/validation/validation.go`` with the v1 defaulting it relies on).

:class:`ConfigValidator` turns a shape-checked document into a :class:`SchedulerConfig`: user plugin
sets merged into the defaults, ``multiPoint`` expanded through the registry, score weights resolved,
every enabled plugin's args defaulted and validated, extenders checked and ordered. Every problem is a
:class:`~kubesched.errors.ConfigError` naming the file and the full field path.
"""

from __future__ import annotations

import base64
import binascii
import difflib
from collections.abc import Mapping
from typing import Any, Final
from urllib.parse import urlsplit

from pydantic import BaseModel, ValidationError

from kubesched.api.durations import parse_duration as parse_go_duration
from kubesched.api.features import check_gate_dependencies
from kubesched.api.resources import is_extended_resource as is_extended_resource_name
from kubesched.errors import ConfigError, InputError
from kubesched.framework.config.defaults import (
    DEFAULT_EXTENDER_TIMEOUT_SECONDS,
    DEFAULT_MULTI_POINT_PLUGINS,
    DEFAULT_PARALLELISM,
    DEFAULT_POD_INITIAL_BACKOFF_SECONDS,
    DEFAULT_POD_MAX_BACKOFF_SECONDS,
    DEFAULT_SCHEDULER_NAME,
    FEATURE_GATE_DEFAULTS,
    PluginEntry,
    PluginSet,
    default_multi_point_plugins,
    merge_plugin_set,
)
from kubesched.framework.config.types import (
    API_VERSION,
    KIND,
    ExtenderConfig,
    ExtenderManagedResource,
    ExtenderTLSConfig,
    PluginRef,
    ProfileConfig,
    SchedulerConfig,
)
from kubesched.framework.config.v1 import (
    PLUGINS_FIELDS,
    ExtenderDoc,
    ExtenderManagedResourceDoc,
    ExtenderTLSConfigDoc,
    KubeSchedulerConfigurationDoc,
    PluginConfigDoc,
    PluginDoc,
    PluginsDoc,
    ProfileDoc,
    join_path,
    shape_error,
    type_name,
)
from kubesched.framework.extension_points import MULTI_POINT, ExtensionPoint
from kubesched.framework.plugin_args import (
    ARGS_MODELS,
    INT64_MAX,
    NodeResourcesFitArgs,
    parse_args,
    qualified_name_problem,
)
from kubesched.framework.registry import UPSTREAM_PLUGIN_NAMES, Registry

#: Highest score one plugin gives a node; weights multiply it, and their sum must fit in an int64.
MAX_NODE_SCORE: Final = 100

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


class ConfigValidator:
    """Defaults, merges and validates one document read from *source* against *registry*."""

    def __init__(self, registry: Registry, source: str) -> None:
        self.registry = registry
        self.source = source
        self._default_plugins = DEFAULT_MULTI_POINT_PLUGINS

    def error(self, message: str, where: str | None) -> ConfigError:
        return ConfigError(message, file=self.source, field=where or None)

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

    def check_name(self, name: str | None, where: str, *, use: str) -> str:
        """Validate a plugin name. *use* is "enable", "disable" or "configure"."""
        if not name:
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

    def check_type_meta(self, data: Any) -> None:
        """apiVersion and kind first: with the wrong ones nothing else in the document means what
        this loader would take it to mean."""
        if not isinstance(data, Mapping):
            raise self.error(f"expected a {KIND} mapping at the top level, got {type_name(data)}", None)
        api_version = data.get("apiVersion")
        if api_version != API_VERSION:
            if api_version is None:
                message = f'apiVersion is required: set it to "{API_VERSION}"'
            elif not isinstance(api_version, str):
                message = f'apiVersion must be the string "{API_VERSION}", got {type_name(api_version)}'
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
            shown = "missing" if kind is None else f'"{kind}"' if isinstance(kind, str) else type_name(kind)
            raise self.error(f'kind must be "{KIND}", got {shown}', "kind")

    def load(self, data: Any) -> SchedulerConfig:
        self.check_type_meta(data)
        try:
            doc = KubeSchedulerConfigurationDoc.model_validate(data)
        except ValidationError as exc:
            raise shape_error(exc, KubeSchedulerConfigurationDoc, self.source) from None

        parallelism = DEFAULT_PARALLELISM if doc.parallelism is None else doc.parallelism
        if parallelism <= 0:
            raise self.error(f"must be greater than 0, got {parallelism}", "parallelism")
        percentage = self.percentage(doc.percentage_of_nodes_to_score, "")
        initial = doc.pod_initial_backoff_seconds
        initial = DEFAULT_POD_INITIAL_BACKOFF_SECONDS if initial is None else initial
        if initial <= 0:
            raise self.error(f"must be greater than 0, got {initial}", "podInitialBackoffSeconds")
        maximum = doc.pod_max_backoff_seconds
        maximum = DEFAULT_POD_MAX_BACKOFF_SECONDS if maximum is None else maximum
        if maximum < initial:
            raise self.error(
                f"must be greater than or equal to podInitialBackoffSeconds ({initial}), got {maximum}",
                "podMaxBackoffSeconds",
            )

        gates = self.feature_gates(doc.feature_gates)
        self._default_plugins = default_multi_point_plugins(gates)
        raw_profiles = [p or ProfileDoc() for p in doc.profiles or [None]]
        profiles = [
            self.profile(raw, f"profiles[{i}]", single=len(raw_profiles) == 1)
            for i, raw in enumerate(raw_profiles)
        ]
        self.check_profiles(profiles)
        extenders = self.extenders(doc.extenders or [])
        ignored = [r.name for ext in extenders for r in ext.managed_resources if r.ignored_by_scheduler]
        if ignored:
            self.ignore_extender_resources(profiles, ignored)
        return SchedulerConfig(
            profiles=profiles,
            percentage_of_nodes_to_score=percentage or None,
            pod_initial_backoff_seconds=initial,
            pod_max_backoff_seconds=maximum,
            parallelism=parallelism,
            extenders=[dict(ext or {}) for ext in data.get("extenders") or []],
            extender_configs=extenders,
            feature_gates=gates,
        )

    def feature_gates(self, gates: dict[str, bool] | None) -> dict[str, bool]:
        for name in gates or {}:
            if name not in FEATURE_GATE_DEFAULTS:
                raise self.error(
                    f"unknown feature gate {name!r}; known: {', '.join(sorted(FEATURE_GATE_DEFAULTS))}",
                    join_path("featureGates", name),
                )
        try:
            check_gate_dependencies(gates or {}, "featureGates")
        except InputError as exc:
            raise self.error(exc.message, "featureGates") from None
        return dict(gates or {})

    # -- extenders ------------------------------------------------------------------------------

    def extenders(self, docs: list[ExtenderDoc | None]) -> list[ExtenderConfig]:
        """Upstream validateExtenders plus buildExtenders' ordering: ignorable extenders go last."""
        out: list[ExtenderConfig] = []
        binders: list[int] = []
        managed_first: dict[str, str] = {}
        for i, item in enumerate(docs):
            doc = item or ExtenderDoc()
            where = f"extenders[{i}]"
            weight = doc.weight or 0
            if doc.prioritize_verb and weight <= 0:
                raise self.error(
                    f"must have a positive weight applied to it, got {weight} (prioritizeVerb is set)",
                    join_path(where, "weight"),
                )
            if doc.bind_verb:
                binders.append(i)
            verbs = (doc.filter_verb, doc.prioritize_verb, doc.bind_verb, doc.preempt_verb)
            url = urlsplit(doc.url_prefix or "")
            if any(verbs) and (url.scheme not in ("http", "https") or not url.hostname):
                # Upstream would only fail at the first call; a URL nothing can reach is a config error.
                raise self.error(
                    f"must be an http:// or https:// URL with a host, got {doc.url_prefix or ''!r}",
                    join_path(where, "urlPrefix"),
                )
            managed: list[ExtenderManagedResource] = []
            for j, res in enumerate(doc.managed_resources or []):
                res = res or ExtenderManagedResourceDoc()
                res_where = f"{where}.managedResources[{j}].name"
                name = res.name or ""
                problem = qualified_name_problem(name) if name else "must not be empty"
                if problem is None and not is_extended_resource_name(name):
                    problem = (
                        "is an invalid extended resource name (needs a domain prefix outside "
                        "kubernetes.io, like example.com/gpu)"
                    )
                if problem is not None:
                    raise self.error(f"invalid resource name {name!r}: {problem}", res_where)
                if name in managed_first:
                    raise self.error(
                        f"duplicate extender managed resource name {name!r} (also at {managed_first[name]})",
                        res_where,
                    )
                managed_first[name] = res_where
                managed.append(ExtenderManagedResource(name, bool(res.ignored_by_scheduler)))
            timeout = DEFAULT_EXTENDER_TIMEOUT_SECONDS
            if doc.http_timeout is not None:
                try:
                    timeout = parse_go_duration(doc.http_timeout)
                except InputError as exc:
                    raise self.error(exc.message, join_path(where, "httpTimeout")) from None
                if timeout == 0:
                    timeout = DEFAULT_EXTENDER_TIMEOUT_SECONDS  # upstream: zero means the default
            tls = None
            if doc.tls_config is not None:
                tls = self.extender_tls(doc.tls_config, join_path(where, "tlsConfig"))
            out.append(
                ExtenderConfig(
                    url_prefix=doc.url_prefix or "",
                    filter_verb=doc.filter_verb or "",
                    preempt_verb=doc.preempt_verb or "",
                    prioritize_verb=doc.prioritize_verb or "",
                    bind_verb=doc.bind_verb or "",
                    weight=weight,
                    enable_https=bool(doc.enable_https),
                    tls_config=tls,
                    http_timeout=timeout,
                    node_cache_capable=bool(doc.node_cache_capable),
                    managed_resources=tuple(managed),
                    ignorable=bool(doc.ignorable),
                )
            )
        if len(binders) > 1:
            raise self.error(
                f"found {len(binders)} extenders implementing bind (extenders "
                f"{', '.join(str(i) for i in binders)}): only one extender can implement bind",
                "extenders",
            )
        return [e for e in out if not e.ignorable] + [e for e in out if e.ignorable]

    def extender_tls(self, doc: ExtenderTLSConfigDoc, where: str) -> ExtenderTLSConfig:
        data: dict[str, bytes] = {}
        for key, value in (("certData", doc.cert_data), ("keyData", doc.key_data), ("caData", doc.ca_data)):
            try:
                data[key] = base64.b64decode(value or "", validate=True)
            except (binascii.Error, ValueError):
                raise self.error("must be base64-encoded PEM data", join_path(where, key)) from None
        return ExtenderTLSConfig(
            insecure=bool(doc.insecure),
            server_name=doc.server_name or "",
            cert_file=doc.cert_file or "",
            key_file=doc.key_file or "",
            ca_file=doc.ca_file or "",
            cert_data=data["certData"],
            key_data=data["keyData"],
            ca_data=data["caData"],
        )

    def ignore_extender_resources(self, profiles: list[ProfileConfig], names: list[str]) -> None:
        """Resources an extender manages with ``ignoredByScheduler`` replace NodeResourcesFit's
        ``ignoredResources`` in every profile (upstream buildExtenders)."""
        for prof in profiles:
            args = prof.plugin_args.get("NodeResourcesFit")
            if isinstance(args, NodeResourcesFitArgs):
                prof.plugin_args["NodeResourcesFit"] = args.model_copy(update={"ignored_resources": names})

    def percentage(self, value: int | None, where: str) -> int | None:
        if value is not None and not 0 <= value <= 100:
            raise self.error(
                f"must be in range [0, 100] (0 means adaptive), got {value}",
                join_path(where, "percentageOfNodesToScore"),
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

    def profile(self, doc: ProfileDoc, where: str, *, single: bool) -> ProfileConfig:
        name = doc.scheduler_name
        if name is None and single:
            name = DEFAULT_SCHEDULER_NAME
        if not name:
            raise self.error(
                "schedulerName is required (every profile needs a unique, non-empty name when there "
                "are several)",
                join_path(where, "schedulerName"),
            )
        percentage = self.percentage(doc.percentage_of_nodes_to_score, where)

        plugins_where = join_path(where, "plugins")
        custom = self.plugins(doc.plugins or PluginsDoc(), plugins_where)
        defaults = {key: PluginSet() for key in PLUGINS_FIELDS}
        defaults[MULTI_POINT] = PluginSet(
            enabled=[
                PluginEntry(plugin, weight, join_path(plugins_where, MULTI_POINT))
                for plugin, weight in self._default_plugins
                if plugin in self.registry
            ]
        )
        merged = {key: merge_plugin_set(defaults[key], custom[key]) for key in PLUGINS_FIELDS}
        points = self.expand(merged, plugins_where, name)

        configured = self.plugin_config(doc.plugin_config or [], join_path(where, "pluginConfig"))
        plugin_args: dict[str, BaseModel | None] = {}
        for key in PLUGINS_FIELDS:
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

    def plugins(self, doc: PluginsDoc, where: str) -> dict[str, PluginSet]:
        result: dict[str, PluginSet] = {}
        for key in PLUGINS_FIELDS:
            set_where = join_path(where, key)
            set_doc = doc.plugin_set(key)
            plugin_set = PluginSet()
            for use, items in (("enable", set_doc.enabled), ("disable", set_doc.disabled)):
                list_where = join_path(set_where, f"{use}d")
                for i, item in enumerate(items or []):
                    plugin = item or PluginDoc()
                    item_where = f"{list_where}[{i}]"
                    name = self.check_name(plugin.name, join_path(item_where, "name"), use=use)
                    if use == "disable":
                        plugin_set.disabled.append(name)
                        continue
                    weight = plugin.weight
                    if weight is not None and weight < 0:
                        raise self.error(
                            f"must be 0 or greater, got {weight} (unset or 0 means 1; to stop a plugin "
                            "from scoring, disable it at score)",
                            join_path(item_where, "weight"),
                        )
                    plugin_set.enabled.append(PluginEntry(name, weight, item_where))
            result[key] = plugin_set
        return result

    def expand(
        self, merged: dict[str, PluginSet], where: str, profile: str
    ) -> dict[ExtensionPoint, list[PluginRef]]:
        """Place every enabled plugin at its extension points (upstream's multiPoint expansion)."""
        multi = merged[MULTI_POINT]
        seen_multi: dict[str, PluginEntry] = {}
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
                        join_path(entry.where, "name"),
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
                join_path(where, "queueSort"),
            )
        if not points[ExtensionPoint.BIND]:
            raise self.error(
                f'profile "{profile}" needs at least one bind plugin; enable DefaultBinder (or another '
                "bind plugin) at bind or multiPoint",
                join_path(where, "bind"),
            )
        return points

    def score_weights(
        self, merged: dict[str, PluginSet], score_names: list[str], where: str
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
                    join_path(where, "score"),
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

    def plugin_config(self, entries: list[PluginConfigDoc | None], where: str) -> dict[str, BaseModel | None]:
        """Validated args by plugin name (only plugins that take args or are not registered)."""
        result: dict[str, BaseModel | None] = {}
        first: dict[str, int] = {}
        for i, item in enumerate(entries):
            entry = item or PluginConfigDoc()
            item_where = f"{where}[{i}]"
            name = self.check_name(entry.name, join_path(item_where, "name"), use="configure")
            if name in first:
                raise self.error(
                    f'duplicate pluginConfig for plugin "{name}" (first at {where}[{first[name]}]); '
                    "merge the two entries",
                    join_path(item_where, "name"),
                )
            first[name] = i
            args_where = join_path(item_where, "args")
            args = self.strip_type_meta(entry.args, name, args_where)
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
                located = exc.located(file=self.source, field_prefix=args_where)
                raise ConfigError(located.message, file=located.file, field=located.field) from None
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
                f'kind must be "{name}Args" for plugin "{name}", got "{kind}"', join_path(where, "kind")
            )
        if version is not None and version != API_VERSION:
            raise self.error(
                f'apiVersion must be "{API_VERSION}", got "{version}"', join_path(where, "apiVersion")
            )
        return args
