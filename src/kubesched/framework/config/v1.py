"""The ``kubescheduler.config.k8s.io/v1`` document's shape, as pydantic models.

:class:`KubeSchedulerConfigurationDoc` and the models under it check field names, types and integer
ranges of a document as written, before any defaulting; :func:`shape_error` words the first problem
pydantic finds like the validator's own messages (file, full field path, did-you-mean).
"""

from __future__ import annotations

import difflib
import types
from collections.abc import Mapping, Sequence
from typing import Annotated, Any, ClassVar, Final, Union, get_args, get_origin

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

from kubesched.errors import ConfigError
from kubesched.framework.config.types import KIND
from kubesched.framework.extension_points import MULTI_POINT, ExtensionPoint
from kubesched.framework.plugin_args import INT32_MAX, INT32_MIN, INT64_MAX, INT64_MIN, format_path

#: The keys of ``plugins``: ``multiPoint`` and every extension point.
PLUGINS_FIELDS: Final = (MULTI_POINT, *(p.value for p in ExtensionPoint))


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
    placement_generate: PluginSetDoc | None = _expects(_SET)
    placement_score: PluginSetDoc | None = _expects(_SET)

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
assert set(_FIELD_OF_KEY) == set(PLUGINS_FIELDS)


def type_name(value: Any) -> str:
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


def join_path(path: str, child: str) -> str:
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


def shape_error(exc: ValidationError, root: type[_Doc], source: str) -> ConfigError:
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
    shown = f"{type_name(given)} {given!r}"
    if kind in ("model_type", "model_attributes_type", "dict_type"):
        message = f"must be a mapping{expects}, got {type_name(given)}"
    elif kind == "list_type":
        message = f"must be a list{expects}, got {type_name(given)}"
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
