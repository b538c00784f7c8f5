"""Loading and validating ``KubeSchedulerConfiguration`` (``kubescheduler.config.k8s.io/v1``).

The result is a :class:`SchedulerConfig` whose profiles already carry the final, ordered plugin list
of every extension point: upstream v1 defaults, merged with the user's plugin sets, with ``multiPoint``
expanded through the registry, score weights resolved, and every enabled plugin's args defaulted and
validated.

The document is read in two steps: pydantic models (:class:`KubeSchedulerConfigurationDoc` and the
models under it) check its shape — field names, types, integer ranges — and then the loader applies
upstream's defaulting, merging and validation to those models. Every problem is a
:class:`~kubesched.errors.ConfigError` naming the file and the full field path, with a did-you-mean
hint for misspelt fields and plugin names.
"""

from __future__ import annotations

import base64
import binascii
import difflib
import types
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, ClassVar, Final, Union, get_args, get_origin
from urllib.parse import urlsplit

import yaml
from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    StrictInt,
    StrictStr,
    ValidationError,
)
from pydantic.alias_generators import to_camel
from pydantic.fields import FieldInfo
from pydantic_core import PydanticCustomError

from kubesched.api.durations import parse_duration as parse_go_duration
from kubesched.api.resources import is_extended_resource as is_extended_resource_name
from kubesched.api.yaml_input import BoundedSafeLoader, yaml_nesting_problem
from kubesched.errors import ConfigError, InputError
from kubesched.framework.extension_points import MULTI_POINT, ExtensionPoint
from kubesched.framework.plugin_args import (
    ARGS_MODELS,
    INT32_MAX,
    INT32_MIN,
    INT64_MAX,
    INT64_MIN,
    NodeResourcesFitArgs,
    format_path,
    parse_args,
    qualified_name_problem,
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

#: The feature gates kubesched knows, with their defaults (upstream v1.35).
FEATURE_GATE_DEFAULTS: Final[dict[str, bool]] = {
    # Beta and on by default since v1.35 (KEP-5598).
    "OpportunisticBatching": True,
}

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

_PLUGINS_FIELDS: Final = (MULTI_POINT, *(p.value for p in ExtensionPoint))


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


#: Upstream DefaultExtenderTimeout: an extender call given no httpTimeout gives up after this long.
DEFAULT_EXTENDER_TIMEOUT_SECONDS: Final = 5.0


@dataclass(frozen=True, slots=True)
class ExtenderTLSConfig:
    """``tlsConfig`` of an extender (upstream ``ExtenderTLSConfig``); the ``*Data`` fields hold PEM
    text (base64 in the document, as upstream's ``[]byte`` fields)."""

    insecure: bool = False
    server_name: str = ""
    cert_file: str = ""
    key_file: str = ""
    ca_file: str = ""
    cert_data: bytes = b""
    key_data: bytes = b""
    ca_data: bytes = b""


@dataclass(frozen=True, slots=True)
class ExtenderManagedResource:
    name: str
    ignored_by_scheduler: bool = False


@dataclass(frozen=True, slots=True)
class ExtenderConfig:
    """One HTTP extender (upstream ``config.Extender``), validated and defaulted."""

    url_prefix: str
    filter_verb: str = ""
    preempt_verb: str = ""
    prioritize_verb: str = ""
    bind_verb: str = ""
    weight: int = 0
    enable_https: bool = False
    tls_config: ExtenderTLSConfig | None = None
    http_timeout: float = DEFAULT_EXTENDER_TIMEOUT_SECONDS
    node_cache_capable: bool = False
    managed_resources: tuple[ExtenderManagedResource, ...] = ()
    ignorable: bool = False


@dataclass(slots=True)
class SchedulerConfig:
    """A loaded ``KubeSchedulerConfiguration``."""

    profiles: list[ProfileConfig]
    percentage_of_nodes_to_score: int | None = None  # None (or 0 upstream): adaptive
    pod_initial_backoff_seconds: int = DEFAULT_POD_INITIAL_BACKOFF_SECONDS
    pod_max_backoff_seconds: int = DEFAULT_POD_MAX_BACKOFF_SECONDS
    parallelism: int = DEFAULT_PARALLELISM
    #: The ``extenders`` entries as written (null items as empty mappings).
    extenders: list[dict[str, Any]] = field(default_factory=list)
    #: The same entries validated and defaulted, ignorable ones last (upstream buildExtenders).
    extender_configs: list[ExtenderConfig] = field(default_factory=list)
    #: Feature gates set explicitly (``featureGates`` or ``--feature-gates``); see :func:`gate_enabled`.
    feature_gates: dict[str, bool] = field(default_factory=dict)

    def gate_enabled(self, name: str) -> bool:
        """Whether a feature gate is on: as set, else its default."""
        return self.feature_gates.get(name, FEATURE_GATE_DEFAULTS[name])

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
        raise ConfigError("file not found", file=source) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read file: {exc}", file=source) from None
    try:
        too_deep = yaml_nesting_problem(text)
        if too_deep is not None:
            raise ConfigError(too_deep, file=source)
        documents = [doc for doc in yaml.load_all(text, Loader=_StrictLoader) if doc is not None]
    except yaml.MarkedYAMLError as exc:
        where = f" at line {exc.problem_mark.line + 1}" if exc.problem_mark is not None else ""
        raise ConfigError(f"not valid YAML or JSON{where}: {exc.problem}", file=source) from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"not valid YAML or JSON: {exc}", file=source) from None
    if not documents:
        raise ConfigError(f"file is empty; expected a {KIND}", file=source)
    if len(documents) > 1:
        raise ConfigError(
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
# The document's shape, as pydantic models


def _int_range(low: int, high: int) -> AfterValidator:
    def check(value: int) -> int:
        if not low <= value <= high:
            raise PydanticCustomError(
                "int_range",
                "must be in range [{low}, {high}], got {value}",
                {"low": low, "high": high, "value": value},
            )
        return value

    return AfterValidator(check)


Int32 = Annotated[StrictInt, _int_range(INT32_MIN, INT32_MAX)]
Int64 = Annotated[StrictInt, _int_range(INT64_MIN, INT64_MAX)]


def _expects(what: str, item: str | None = None) -> Any:
    """Field metadata for messages: what the field holds (``a PluginSet ...``, ``of plugins``) and,
    for a list, what each item is."""
    return Field(default=None, description=what, json_schema_extra={"item": item} if item else None)


class _Doc(BaseModel):
    """A part of the document: camelCase keys only, no unknown keys, no type coercion. A null list
    item stands for an empty object, as it always has."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True, alias_generator=to_camel)

    #: How "unknown field" messages name this part.
    what: ClassVar[str]


class PluginDoc(_Doc):
    what: ClassVar[str] = "a plugin"

    name: StrictStr | None = None
    weight: Int32 | None = None


class PluginSetDoc(_Doc):
    what: ClassVar[str] = "a plugin set"

    enabled: list[PluginDoc | None] | None = _expects("of plugins", "a plugin with name and weight")
    disabled: list[PluginDoc | None] | None = _expects("of plugins", "a plugin with name and weight")


_SET = "a PluginSet with enabled/disabled lists"


class PluginsDoc(_Doc):
    what: ClassVar[str] = "plugins"

    multi_point: PluginSetDoc | None = _expects(_SET)
    pre_enqueue: PluginSetDoc | None = _expects(_SET)
    queue_sort: PluginSetDoc | None = _expects(_SET)
    pre_filter: PluginSetDoc | None = _expects(_SET)
    filter: PluginSetDoc | None = _expects(_SET)
    post_filter: PluginSetDoc | None = _expects(_SET)
    pre_score: PluginSetDoc | None = _expects(_SET)
    score: PluginSetDoc | None = _expects(_SET)
    reserve: PluginSetDoc | None = _expects(_SET)
    permit: PluginSetDoc | None = _expects(_SET)
    pre_bind: PluginSetDoc | None = _expects(_SET)
    bind: PluginSetDoc | None = _expects(_SET)
    post_bind: PluginSetDoc | None = _expects(_SET)

    def plugin_set(self, key: str) -> PluginSetDoc:
        """The set under config key *key* (``multiPoint``, ``filter``, ...); empty when not given."""
        value = getattr(self, _FIELD_OF_KEY[key])
        return value if isinstance(value, PluginSetDoc) else PluginSetDoc()


class PluginConfigDoc(_Doc):
    what: ClassVar[str] = "a pluginConfig entry"

    name: StrictStr | None = None
    #: Checked against the plugin's own args model once the plugin is known.
    args: Any = None


class ProfileDoc(_Doc):
    what: ClassVar[str] = "a profile"

    scheduler_name: StrictStr | None = None
    percentage_of_nodes_to_score: Int32 | None = None
    plugins: PluginsDoc | None = _expects("Plugins")
    plugin_config: list[PluginConfigDoc | None] | None = _expects(
        "of PluginConfig", "a PluginConfig with name and args"
    )


class ExtenderTLSConfigDoc(_Doc):
    what: ClassVar[str] = "an ExtenderTLSConfig"

    insecure: StrictBool | None = None
    server_name: StrictStr | None = None
    cert_file: StrictStr | None = None
    key_file: StrictStr | None = None
    ca_file: StrictStr | None = Field(default=None, alias="caFile")
    cert_data: StrictStr | None = None
    key_data: StrictStr | None = None
    ca_data: StrictStr | None = Field(default=None, alias="caData")


class ExtenderManagedResourceDoc(_Doc):
    what: ClassVar[str] = "an ExtenderManagedResource"

    name: StrictStr | None = None
    ignored_by_scheduler: StrictBool | None = None


class ExtenderDoc(_Doc):
    what: ClassVar[str] = "an Extender"

    url_prefix: StrictStr | None = None
    filter_verb: StrictStr | None = None
    preempt_verb: StrictStr | None = None
    prioritize_verb: StrictStr | None = None
    weight: Int64 | None = None
    bind_verb: StrictStr | None = None
    # Upstream spells these two with capitals the alias generator would not produce.
    enable_https: StrictBool | None = Field(default=None, alias="enableHTTPS")
    tls_config: ExtenderTLSConfigDoc | None = _expects("an ExtenderTLSConfig")
    http_timeout: StrictStr | None = Field(default=None, alias="httpTimeout")
    node_cache_capable: StrictBool | None = None
    managed_resources: list[ExtenderManagedResourceDoc | None] | None = _expects(
        "of ExtenderManagedResource", "an ExtenderManagedResource with name and ignoredByScheduler"
    )
    ignorable: StrictBool | None = None


class KubeSchedulerConfigurationDoc(_Doc):
    """A ``KubeSchedulerConfiguration`` document as written (before defaulting)."""

    what: ClassVar[str] = KIND

    api_version: StrictStr
    kind: StrictStr
    parallelism: Int32 | None = None
    leader_election: dict[str, Any] | None = _expects("LeaderElectionConfiguration")
    client_connection: dict[str, Any] | None = _expects("ClientConnectionConfiguration")
    enable_profiling: StrictBool | None = None
    enable_contention_profiling: StrictBool | None = None
    percentage_of_nodes_to_score: Int32 | None = None
    pod_initial_backoff_seconds: Int64 | None = None
    pod_max_backoff_seconds: Int64 | None = None
    profiles: list[ProfileDoc | None] | None = _expects("of KubeSchedulerProfile", "a KubeSchedulerProfile")
    extenders: list[ExtenderDoc | None] | None = _expects("of Extender", "an Extender")
    delay_cache_until_active: StrictBool | None = None
    #: kube-scheduler takes these as ``--feature-gates``; kubesched also reads them from the document.
    feature_gates: dict[StrictStr, StrictBool] | None = None


_FIELD_OF_KEY: Final = {to_camel(name): name for name in PluginsDoc.model_fields}
assert set(_FIELD_OF_KEY) == set(_PLUGINS_FIELDS)


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


def _did_you_mean(key: str, allowed: Sequence[str]) -> str:
    hint = difflib.get_close_matches(key, allowed, n=1)
    return f'; did you mean "{hint[0]}"?' if hint else ""


def _model_in(annotation: Any) -> type[_Doc] | None:
    """The document model an annotation holds (``X | None`` → ``X``), if any."""
    if isinstance(annotation, type) and issubclass(annotation, _Doc):
        return annotation
    if get_origin(annotation) in (Union, types.UnionType):
        for arg in get_args(annotation):
            found = _model_in(arg)
            if found is not None:
                return found
    return None


def _item_type(annotation: Any) -> Any:
    """The item type of a ``list[X] | None`` annotation."""
    for arg in (annotation, *get_args(annotation)):
        if get_origin(arg) is list:
            return get_args(arg)[0]
    return Any


def _field_at(root: type[_Doc], loc: Sequence[str | int]) -> tuple[type[_Doc] | None, FieldInfo | None, bool]:
    """Follow a pydantic error location from *root*: the model the location ends in (or whose field
    it ends at), that field, and whether the location is a list item of the field."""
    model: type[_Doc] | None = root
    info: FieldInfo | None = None
    annotation: Any = root
    item = False
    for part in loc:
        if isinstance(part, int):
            annotation = _item_type(annotation)
            item = True
            continue
        model = _model_in(annotation)
        if model is None:
            return None, None, False
        info = next((f for n, f in model.model_fields.items() if f.alias == part or n == part), None)
        if info is None:
            return model, None, False
        annotation = info.annotation
        item = False
    return model, info, item


def _model_at(root: type[_Doc], loc: Sequence[str | int]) -> type[_Doc] | None:
    """The document model of the object at *loc* (the root for ``()``)."""
    if not loc:
        return root
    _, info, item = _field_at(root, loc)
    if info is None:
        return None
    return _model_in(_item_type(info.annotation) if item else info.annotation)


def _shape_error(exc: ValidationError, root: type[_Doc], source: str) -> ConfigError:
    """The first shape problem pydantic found, worded and located like the loader's own messages.

    Problems are reported outermost first, and at one depth an unknown field before a bad value (a
    misspelt field usually explains the rest).
    """
    errors = sorted(
        exc.errors(include_url=False), key=lambda e: (len(e["loc"]), e["type"] != "extra_forbidden")
    )
    err = errors[0]
    loc: tuple[str | int, ...] = tuple(err["loc"])
    where = format_path(loc) or None
    given = err.get("input")
    kind = err["type"]
    if kind == "extra_forbidden":
        parent = _model_at(root, loc[:-1])
        allowed = [str(f.alias) for f in parent.model_fields.values()] if parent is not None else []
        what = parent.what if parent is not None else "this object"
        key = str(loc[-1])
        return ConfigError(
            f'unknown field "{key}" in {what}{_did_you_mean(key, allowed)} (accepted: {", ".join(allowed)})',
            file=source,
            field=where,
        )
    _, info, item = _field_at(root, loc)
    expects = ""
    if info is not None:
        extra = info.json_schema_extra if isinstance(info.json_schema_extra, dict) else {}
        described = extra.get("item") if item else info.description
        expects = f" ({described})" if described else ""
    shown = f"{_type_name(given)} {given!r}"
    if kind in ("model_type", "model_attributes_type", "dict_type"):
        message = f"must be a mapping{expects}, got {_type_name(given)}"
    elif kind == "list_type":
        message = f"must be a list{expects}, got {_type_name(given)}"
    elif kind == "int_type":
        message = f"must be an integer, got {shown}"
    elif kind == "bool_type":
        message = f"must be true or false, got {shown}"
    elif kind == "string_type":
        message = f"must be a string, got {shown}"
    elif kind == "missing":
        message = "is required"
    else:
        message = str(err["msg"])
    return ConfigError(message, file=source, field=where)


# --------------------------------------------------------------------------------------------------
# The loader


class _Loader:
    def __init__(self, registry: Registry, source: str) -> None:
        self.registry = registry
        self.source = source

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
            raise self.error(f"expected a {KIND} mapping at the top level, got {_type_name(data)}", None)
        api_version = data.get("apiVersion")
        if api_version != API_VERSION:
            if api_version is None:
                message = f'apiVersion is required: set it to "{API_VERSION}"'
            elif not isinstance(api_version, str):
                message = f'apiVersion must be the string "{API_VERSION}", got {_type_name(api_version)}'
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
            shown = "missing" if kind is None else f'"{kind}"' if isinstance(kind, str) else _type_name(kind)
            raise self.error(f'kind must be "{KIND}", got {shown}', "kind")

    def load(self, data: Any) -> SchedulerConfig:
        self.check_type_meta(data)
        try:
            doc = KubeSchedulerConfigurationDoc.model_validate(data)
        except ValidationError as exc:
            raise _shape_error(exc, KubeSchedulerConfigurationDoc, self.source) from None

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
            feature_gates=self.feature_gates(doc.feature_gates),
        )

    def feature_gates(self, gates: dict[str, bool] | None) -> dict[str, bool]:
        for name in gates or {}:
            if name not in FEATURE_GATE_DEFAULTS:
                raise self.error(
                    f"unknown feature gate {name!r}; known: {', '.join(sorted(FEATURE_GATE_DEFAULTS))}",
                    _join("featureGates", name),
                )
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
                    _join(where, "weight"),
                )
            if doc.bind_verb:
                binders.append(i)
            verbs = (doc.filter_verb, doc.prioritize_verb, doc.bind_verb, doc.preempt_verb)
            url = urlsplit(doc.url_prefix or "")
            if any(verbs) and (url.scheme not in ("http", "https") or not url.hostname):
                # Upstream would only fail at the first call; a URL nothing can reach is a config error.
                raise self.error(
                    f"must be an http:// or https:// URL with a host, got {doc.url_prefix or ''!r}",
                    _join(where, "urlPrefix"),
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
                    raise self.error(exc.message, _join(where, "httpTimeout")) from None
                if timeout == 0:
                    timeout = DEFAULT_EXTENDER_TIMEOUT_SECONDS  # upstream: zero means the default
            tls = None
            if doc.tls_config is not None:
                tls = self.extender_tls(doc.tls_config, _join(where, "tlsConfig"))
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
                raise self.error("must be base64-encoded PEM data", _join(where, key)) from None
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

    def profile(self, doc: ProfileDoc, where: str, *, single: bool) -> ProfileConfig:
        name = doc.scheduler_name
        if name is None and single:
            name = DEFAULT_SCHEDULER_NAME
        if not name:
            raise self.error(
                "schedulerName is required (every profile needs a unique, non-empty name when there "
                "are several)",
                _join(where, "schedulerName"),
            )
        percentage = self.percentage(doc.percentage_of_nodes_to_score, where)

        plugins_where = _join(where, "plugins")
        custom = self.plugins(doc.plugins or PluginsDoc(), plugins_where)
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

        configured = self.plugin_config(doc.plugin_config or [], _join(where, "pluginConfig"))
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

    def plugins(self, doc: PluginsDoc, where: str) -> dict[str, _PluginSet]:
        result: dict[str, _PluginSet] = {}
        for key in _PLUGINS_FIELDS:
            set_where = _join(where, key)
            set_doc = doc.plugin_set(key)
            plugin_set = _PluginSet()
            for use, items in (("enable", set_doc.enabled), ("disable", set_doc.disabled)):
                list_where = _join(set_where, f"{use}d")
                for i, item in enumerate(items or []):
                    plugin = item or PluginDoc()
                    item_where = f"{list_where}[{i}]"
                    name = self.check_name(plugin.name, _join(item_where, "name"), use=use)
                    if use == "disable":
                        plugin_set.disabled.append(name)
                        continue
                    weight = plugin.weight
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

    def plugin_config(self, entries: list[PluginConfigDoc | None], where: str) -> dict[str, BaseModel | None]:
        """Validated args by plugin name (only plugins that take args or are not registered)."""
        result: dict[str, BaseModel | None] = {}
        first: dict[str, int] = {}
        for i, item in enumerate(entries):
            entry = item or PluginConfigDoc()
            item_where = f"{where}[{i}]"
            name = self.check_name(entry.name, _join(item_where, "name"), use="configure")
            if name in first:
                raise self.error(
                    f'duplicate pluginConfig for plugin "{name}" (first at {where}[{first[name]}]); '
                    "merge the two entries",
                    _join(item_where, "name"),
                )
            first[name] = i
            args_where = _join(item_where, "args")
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
                f'kind must be "{name}Args" for plugin "{name}", got "{kind}"', _join(where, "kind")
            )
        if version is not None and version != API_VERSION:
            raise self.error(
                f'apiVersion must be "{API_VERSION}", got "{version}"', _join(where, "apiVersion")
            )
        return args


def parse_feature_gates(text: str) -> dict[str, bool]:
    """``--feature-gates`` as kube-scheduler takes it: ``Name=true,Other=false``."""
    gates: dict[str, bool] = {}
    for part in text.split(","):
        part = part.strip()
        if not part:
            continue
        name, sep, value = part.partition("=")
        name, value = name.strip(), value.strip().lower()
        if not sep or value not in ("true", "false"):
            raise InputError(f"--feature-gates: expected Name=true|false, got {part!r}")
        if name not in FEATURE_GATE_DEFAULTS:
            known = ", ".join(sorted(FEATURE_GATE_DEFAULTS))
            raise InputError(f"--feature-gates: unknown feature gate {name!r}; known: {known}")
        gates[name] = value == "true"
    return gates
