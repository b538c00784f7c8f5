"""Reading a batch scheduler conf (Volcano's ``volcano-scheduler.conf`` YAML) into a
:class:`~kubesched.batch.conf.BatchConf`.

Rules reproduced from Volcano's loader: every switch left unset counts as enabled, except
``enableHierarchy`` and ``enabledClusterOrder`` which Volcano leaves unset (off); ``drf`` with
hierarchy and ``proportion`` in the same tier conflict, the only combination of plugins Volcano
refuses (``capacity`` and ``proportion`` load together, in one tier or in several). kubesched is
stricter than Volcano where that helps users: an unknown action, plugin, switch or key is a
:class:`ConfigError` naming the file and field, with a did-you-mean hint. The document's shape
(keys, lists, mappings, switch types) is checked by pydantic models (:class:`BatchConfDoc` and the
models under it) before Volcano's rules apply. Volcano plugins and actions kubesched does not
provide are accepted and flagged (``supported=False``, :attr:`BatchConf.unsupported_actions`) so
the runtime can report them; switches for features kubesched lacks are accepted and reported in
:attr:`BatchConf.warnings`.
"""

from __future__ import annotations

import difflib
import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar

import yaml
from pydantic import BaseModel, ConfigDict, StrictBool, StrictStr, ValidationError
from pydantic import model_validator as _model_validator
from pydantic_core import PydanticCustomError

from kubesched.api.yaml_input import safe_load, yaml_nesting_problem
from kubesched.batch import factory
from kubesched.batch.conf import (
    HIERARCHY_PLUGINS,
    PLUGIN_KEYS,
    SUPPORTED_ACTIONS,
    SUPPORTED_PLUGINS,
    SWITCH_KEYS,
    TOP_KEYS,
    TOPOLOGY_AWARE_PREEMPTION,
    UNSUPPORTED_SWITCHES,
    VOLCANO_ACTIONS,
    VOLCANO_PLUGINS,
    ActionConfiguration,
    BatchConf,
    PluginOption,
    Tier,
    feature_name,
)
from kubesched.batch.plugins.args import arguments_of, get_bool, get_float, get_int
from kubesched.errors import ConfigError, InputError, yaml_error_detail
from kubesched.framework.plugin_args import parse_args

log = logging.getLogger(__name__)

#: Volcano's conf when none is given (``DefaultSchedulerConf``).
DEFAULT_BATCH_CONF_YAML = """\
actions: "enqueue, allocate, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
  - name: conformance
- plugins:
  - name: overcommit
  - name: drf
  - name: predicates
  - name: proportion
  - name: nodeorder
"""


def _hint(name: str, choices: frozenset[str] | tuple[str, ...]) -> str:
    close = difflib.get_close_matches(name, sorted(choices), n=1, cutoff=0.6)
    return f"; did you mean {close[0]!r}?" if close else f"; known: {', '.join(sorted(choices))}"


# --------------------------------------------------------------------------------------------------
# The document's shape, as pydantic models


class _Doc(BaseModel):
    """A part of the conf as written: known keys only, no type coercion."""

    model_config = ConfigDict(extra="forbid", strict=True)

    #: The keys this part accepts, for "did you mean" hints.
    keys: ClassVar[tuple[str, ...]]


class PluginDoc(_Doc):
    """One plugin of a tier: ``name``, ``arguments`` and switches in either spelling (null = unset)."""

    # The switches are the extra keys, each true, false or null; any other key is unknown.
    model_config = ConfigDict(extra="allow", strict=True)
    __pydantic_extra__: dict[str, StrictBool | None]

    keys: ClassVar[tuple[str, ...]] = PLUGIN_KEYS

    name: StrictStr | None = None
    arguments: dict[StrictStr, Any] | None = None

    @_model_validator(mode="before")
    @classmethod
    def _only_known_keys(cls, data: Any) -> Any:
        if isinstance(data, Mapping):
            for key in data:
                if key not in ("name", "arguments") and key not in SWITCH_KEYS:
                    raise PydanticCustomError("unknown_key", "unknown key {key}", {"key": key})
        return data

    def switches(self) -> list[tuple[str, bool]]:
        """The switches set (not null), in document order, under the spelling used."""
        return [(k, v) for k, v in (self.model_extra or {}).items() if v is not None]


class TierDoc(_Doc):
    keys: ClassVar[tuple[str, ...]] = ("plugins",)

    plugins: list[PluginDoc] | None = None


class ConfigurationDoc(_Doc):
    keys: ClassVar[tuple[str, ...]] = ("name", "arguments")

    name: StrictStr | None = None
    arguments: dict[StrictStr, Any] | None = None


class BatchConfDoc(_Doc):
    """A ``volcano-scheduler.conf`` document as written."""

    keys: ClassVar[tuple[str, ...]] = TOP_KEYS

    #: A comma-separated string (Volcano) or a list of names: split and checked by the parser.
    actions: Any = None
    tiers: list[TierDoc] | None = None
    configurations: list[ConfigurationDoc] | None = None
    #: Scalars only; checked by the parser.
    metrics: dict[StrictStr, Any] | None = None


def _doc_at(loc: tuple[str | int, ...]) -> type[_Doc]:
    """The document model of the object at *loc*: the model of the last named list or mapping on it."""
    model: type[_Doc] = BatchConfDoc
    for part in loc:
        if isinstance(part, str):
            model = _CHILD_DOCS.get(part, model)
    return model


_CHILD_DOCS: dict[str, type[_Doc]] = {
    "tiers": TierDoc,
    "plugins": PluginDoc,
    "configurations": ConfigurationDoc,
}


def _path(loc: tuple[str | int, ...]) -> str | None:
    out = ""
    for part in loc:
        out = f"{out}[{part}]" if isinstance(part, int) else (f"{out}.{part}" if out else part)
    return out or None


def _shape_error(exc: ValidationError, source: str) -> ConfigError:
    """The outermost shape problem (an unknown key first at its depth), in the parser's words."""
    unknown = ("extra_forbidden", "unknown_key")
    errors = sorted(exc.errors(include_url=False), key=lambda e: (len(e["loc"]), e["type"] not in unknown))
    err = errors[0]
    loc: tuple[str | int, ...] = tuple(err["loc"])
    given = err.get("input")
    kind = err["type"]
    if kind in unknown:
        if kind == "unknown_key":  # reported by the model, about one of its keys
            loc = (*loc, str((err.get("ctx") or {}).get("key")))
        key = str(loc[-1])
        return ConfigError(
            f"unknown key {key!r}{_hint(key, _doc_at(loc[:-1]).keys)}", file=source, field=_path(loc)
        )
    if kind == "invalid_key" or (loc and loc[-1] == "[key]"):
        parent = loc[:-1] if kind == "invalid_key" else loc[:-2]
        return ConfigError(f"keys must be strings, got {given!r}", file=source, field=_path(parent))
    if kind in ("dict_type", "model_type", "model_attributes_type"):
        message = f"expected a mapping, got {type(given).__name__}"
    elif kind == "list_type":
        message = f"expected a list, got {type(given).__name__}"
    elif kind == "bool_type":
        message = f"must be true or false, got {given!r}"
    elif kind == "string_type":
        message = f"must be a string, got {given!r}"
    else:
        message = str(err["msg"])
    return ConfigError(message, file=source, field=_path(loc))


# --------------------------------------------------------------------------------------------------
# Volcano's rules, over the validated document


class _Parser:
    def __init__(self, source: str) -> None:
        self.source = source
        self.warnings: list[str] = []

    def fail(self, message: str, field: str | None) -> ConfigError:
        return ConfigError(message, file=self.source, field=field)

    def name(self, name: str | None, field: str) -> str:
        if name is None or not name.strip():
            raise self.fail("a non-empty name is required", f"{field}.name")
        return name.strip()

    def actions(self, data: Any) -> list[str]:
        if data is None:
            raise self.fail('actions is required, e.g. "enqueue, allocate, backfill"', "actions")
        if isinstance(data, str):
            names = [a.strip() for a in data.split(",")]
        elif isinstance(data, list) and all(isinstance(a, str) for a in data):
            names = [a.strip() for a in data]
        else:
            raise self.fail(
                f"expected a comma-separated string of action names, got {type(data).__name__}", "actions"
            )
        for i, name in enumerate(names):
            if not name:
                raise self.fail(f"empty action name at position {i + 1}", "actions")
            known = VOLCANO_ACTIONS | _registered()[1]
            if name not in known:
                raise self.fail(f"unknown action {name!r}{_hint(name, known)}", "actions")
        return names

    def plugin(self, doc: PluginDoc, field: str) -> PluginOption:
        name = self.name(doc.name, field)
        custom = _registered()[0]
        known = VOLCANO_PLUGINS | custom
        if name not in known:
            raise self.fail(f"unknown plugin {name!r}{_hint(name, known)}", f"{field}.name")
        values: dict[str, Any] = {
            "name": name,
            "arguments": dict(doc.arguments or {}),
            "supported": name in SUPPORTED_PLUGINS or name in custom,
        }
        self.check_arguments(name, values["arguments"], f"{field}.arguments")
        seen: dict[str, str] = {}
        for key, value in doc.switches():
            volcano_key, attr = SWITCH_KEYS[key]
            if attr in seen:
                raise self.fail(f"{key} repeats {seen[attr]}; set it once", f"{field}.{key}")
            seen[attr] = key
            values[attr] = value
            if attr in UNSUPPORTED_SWITCHES and not (attr == "hierarchy" and name in HIERARCHY_PLUGINS):
                self.warnings.append(
                    f"{self.source}: {field}.{key}: kubesched has no {feature_name(volcano_key)} feature; "
                    "the switch is accepted and ignored"
                )
        option = PluginOption.model_validate(values)
        if name not in custom:
            self.read_arguments(option, field)
        return option

    def read_arguments(self, option: PluginOption, field: str) -> None:
        """Build an in-tree plugin once, as a session would, so that what its arguments hold wrong
        is told now and names this file and the argument's full path."""
        builder = factory.get_plugin_builder(option.name)
        if builder is None:
            return
        with arguments_of(self.source, field, self.warnings):
            try:
                builder(option)
            except InputError as exc:
                located = exc.located(field_prefix=field)
                raise self.fail(located.message, located.field) from None

    def tiers(self, docs: list[TierDoc]) -> list[Tier]:
        tiers: list[Tier] = []
        for i, tier in enumerate(docs):
            field = f"tiers[{i}]"
            plugins = [self.plugin(p, f"{field}.plugins[{j}]") for j, p in enumerate(tier.plugins or [])]
            names = [p.name for p in plugins]
            if "proportion" in names and any(p.name == "drf" and p.hierarchy for p in plugins):
                raise self.fail(
                    "proportion and drf with enableHierarchy conflict; use one of them", f"{field}.plugins"
                )
            tiers.append(Tier(plugins=plugins))
        return tiers

    def check_arguments(self, name: str, arguments: dict[str, Any], field: str) -> None:
        """An out-of-tree plugin with an ``Args`` model has its arguments checked now, not when a
        session opens."""
        model = factory.plugin_args_model(name)
        if model is None:
            return
        try:
            parse_args(model, arguments)
        except InputError as exc:
            located = exc.located(field_prefix=field)
            raise self.fail(located.message, located.field) from None

    def configurations(self, docs: list[ConfigurationDoc]) -> list[ActionConfiguration]:
        out: list[ActionConfiguration] = []
        for i, doc in enumerate(docs):
            field = f"configurations[{i}]"
            name = self.name(doc.name, field)
            known = VOLCANO_ACTIONS | _registered()[1]
            if name not in known:
                raise self.fail(f"unknown action {name!r}{_hint(name, known)}", f"{field}.name")
            arguments = dict(doc.arguments or {})
            self.read_action_arguments(name, arguments, field)
            out.append(ActionConfiguration(name=name, arguments=arguments))
        return out

    def read_action_arguments(self, action: str, arguments: dict[str, Any], field: str) -> None:
        """Read the arguments kubesched's actions take as they will be read, so that a value the
        action would drop for its default is told now, naming this file and the full path."""
        with arguments_of(self.source, field, self.warnings):
            for key, (kind, reader) in _ACTION_ARGUMENTS.get(action, {}).items():
                if kind is bool:
                    get_bool(arguments, key, False, plugin=reader)
                elif kind is int:
                    get_int(arguments, key, 0, plugin=reader)
                else:
                    get_float(arguments, key, 0.0, plugin=reader)

    def metrics(self, data: Mapping[str, Any]) -> dict[str, str]:
        out: dict[str, str] = {}
        for k, v in data.items():
            if isinstance(v, Mapping | list):
                raise self.fail(f"expected a scalar, got {type(v).__name__}", f"metrics.{k}")
            out[k] = "" if v is None else str(v)
        return out


#: The arguments read from ``configurations[].arguments``: per action, key → (type, who reads it;
#: the overcommit plugin reads the enqueue action's factor).
_ACTION_ARGUMENTS: dict[str, dict[str, tuple[type, str]]] = {
    "preempt": {
        TOPOLOGY_AWARE_PREEMPTION: (bool, "preempt"),
        "minCandidateNodesPercentage": (int, "preempt"),
        "minCandidateNodesAbsolute": (int, "preempt"),
        "maxCandidateNodesAbsolute": (int, "preempt"),
    },
    "enqueue": {"overcommit-factor": (float, "overcommit")},
}


def _registered() -> tuple[frozenset[str], frozenset[str]]:
    """Plugin and action names registered beyond Volcano's (out-of-tree ones)."""
    return factory.plugin_names() - VOLCANO_PLUGINS, factory.action_names() - VOLCANO_ACTIONS


def batch_conf_from_dict(data: Any, source: str = "<batch conf>") -> BatchConf:
    """Validate a parsed conf document; raises :class:`ConfigError` naming ``source`` and the field."""
    parser = _Parser(source)
    if data is None:
        data = {}
    if not isinstance(data, Mapping):
        raise parser.fail(f"expected a mapping, got {type(data).__name__}", None)
    try:
        doc = BatchConfDoc.model_validate(data)
    except ValidationError as exc:
        raise _shape_error(exc, source) from None
    actions = parser.actions(doc.actions)
    custom_actions = _registered()[1]
    conf = BatchConf(
        actions=actions,
        tiers=parser.tiers(doc.tiers or []),
        configurations=parser.configurations(doc.configurations or []),
        metrics=parser.metrics(doc.metrics or {}),
        source=source,
        warnings=parser.warnings,
        unsupported_actions=[a for a in actions if a not in SUPPORTED_ACTIONS and a not in custom_actions],
    )
    for w in conf.warnings:
        log.warning("%s", w)
    return conf


def default_batch_conf() -> BatchConf:
    """Volcano's default conf (used when no ``--batch-conf`` is given)."""
    return batch_conf_from_dict(yaml.safe_load(DEFAULT_BATCH_CONF_YAML), "<default>")


def load_batch_conf(path: str | Path | None) -> BatchConf:
    """Read a conf file; ``None`` gives the default conf."""
    if path is None:
        return default_batch_conf()
    source = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read: {exc}", file=source) from None
    return batch_conf_from_text(text, source)


def batch_conf_from_text(text: str, source: str = "<batch conf>") -> BatchConf:
    """Validate a conf given as YAML text."""
    try:
        too_deep = yaml_nesting_problem(text)
        if too_deep is not None:
            raise ConfigError(too_deep, file=source)
        data = safe_load(text)
    except yaml.YAMLError as exc:
        raise ConfigError(f"not valid YAML{yaml_error_detail(exc)}", file=source) from None
    return batch_conf_from_dict(data, source)
