"""The batch scheduler conf: Volcano's ``volcano-scheduler.conf`` YAML.

Shape (as Volcano reads it)::

    actions: "enqueue, allocate, backfill"     # comma-separated, run in this order
    tiers:                                     # earlier tiers take precedence
    - plugins:
      - name: priority
      - name: gang
        enableJobOrder: false                  # any enable*/enabled* switch; unset = enabled
        arguments: {...}
    configurations:                            # per-action arguments
    - name: enqueue
      arguments: {overcommit-factor: 1.2}
    metrics: {...}                             # accepted, unused

Rules reproduced from Volcano's loader: every switch left unset counts as enabled, except
``enableHierarchy`` and ``enabledClusterOrder`` which Volcano leaves unset (off); ``drf`` with
hierarchy and ``proportion`` in the same tier conflict. kubesched is stricter than Volcano where that
helps users: an unknown action, plugin, switch or key is an :class:`InputError` naming the file and
field, with a did-you-mean hint. Volcano plugins and actions kubesched does not provide are accepted
and flagged (``supported=False``) so the runtime can report them; switches for features kubesched
lacks are accepted and reported in :attr:`BatchConf.warnings`.
"""

from __future__ import annotations

import difflib
import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, ValidationError

from kubesched.api.yaml_input import safe_load
from kubesched.errors import InputError, yaml_error_detail

log = logging.getLogger(__name__)

#: ``spec.schedulerName`` served by the batch profile unless configured otherwise.
BATCH_SCHEDULER_NAME = "volcano"

#: Every action Volcano registers.
VOLCANO_ACTIONS = frozenset(
    {"enqueue", "allocate", "backfill", "preempt", "reclaim", "gangpreempt", "gangreclaim", "shuffle"}
)
#: Every plugin Volcano registers.
VOLCANO_PLUGINS = frozenset(
    {
        "binpack",
        "capacity",
        "cdp",
        "conformance",
        "deviceshare",
        "drf",
        "extender",
        "gang",
        "network-topology-aware",
        "nodegroup",
        "nodeorder",
        "numa-aware",
        "overcommit",
        "pdb",
        "predicates",
        "priority",
        "proportion",
        "rescheduling",
        "resource-strategy-fit",
        "resourcequota",
        "sla",
        "task-topology",
        "tdm",
        "usage",
    }
)
#: The actions and plugins within kubesched's batch scope (DESIGN §4). Others parse, flagged
#: ``supported=False``, and the runtime reports them as not implemented.
SUPPORTED_ACTIONS = frozenset({"enqueue", "allocate", "backfill", "preempt", "reclaim"})
SUPPORTED_PLUGINS = frozenset(
    {
        "priority",
        "gang",
        "conformance",
        "drf",
        "predicates",
        "proportion",
        "nodeorder",
        "binpack",
        "overcommit",
    }
)

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

#: Switches of Volcano's ``PluginOption``: (YAML key as Volcano spells it, attribute, default).
#: Volcano defaults every switch to true except hierarchy and cluster order, which stay unset.
SWITCHES: tuple[tuple[str, str, bool], ...] = (
    ("enableJobOrder", "job_order", True),
    ("enableHierarchy", "hierarchy", False),
    ("enableJobReady", "job_ready", True),
    ("enableJobPipelined", "job_pipelined", True),
    ("enableTaskOrder", "task_order", True),
    ("enablePreemptable", "preemptable", True),
    ("enableReclaimable", "reclaimable", True),
    ("enablePreemptive", "preemptive", True),
    ("enableQueueOrder", "queue_order", True),
    ("enabledClusterOrder", "cluster_order", False),
    ("enablePredicate", "predicate", True),
    ("enableBestNode", "best_node", True),
    ("enableNodeOrder", "node_order", True),
    ("enableTargetJob", "target_job", True),
    ("enableReservedNodes", "reserved_nodes", True),
    ("enableJobEnqueued", "job_enqueued", True),
    ("enabledVictim", "victim", True),
    ("enableJobStarving", "job_starving", True),
    ("enabledOverused", "overused", True),
    ("enabledAllocatable", "allocatable", True),
    ("enabledHyperNodeOrder", "hyper_node_order", True),
    ("enabledSubJobReady", "sub_job_ready", True),
    ("enabledSubJobPipelined", "sub_job_pipelined", True),
    ("enabledSubJobOrder", "sub_job_order", True),
    ("enabledHyperNodeGradient", "hyper_node_gradient", True),
)
#: Switches of features kubesched does not have: accepted, reported, ignored.
UNSUPPORTED_SWITCHES = frozenset(
    {
        "hierarchy",
        "cluster_order",
        "best_node",
        "target_job",
        "reserved_nodes",
        "hyper_node_order",
        "sub_job_ready",
        "sub_job_pipelined",
        "sub_job_order",
        "hyper_node_gradient",
    }
)


def _feature(key: str) -> str:
    """``enableJobOrder`` and ``enabledJobOrder`` both name feature ``JobOrder``."""
    for prefix in ("enabled", "enable"):
        if key.startswith(prefix):
            return key[len(prefix) :]
    return key


#: Both spellings (enable*/enabled*) of every switch → (Volcano's spelling, attribute).
_SWITCH_KEYS: dict[str, tuple[str, str]] = {}
for _key, _attr, _ in SWITCHES:
    for _prefix in ("enable", "enabled"):
        _SWITCH_KEYS[_prefix + _feature(_key)] = (_key, _attr)
_ATTR_TO_KEY = {attr: key for key, attr, _ in SWITCHES}
_PLUGIN_KEYS = ("name", "arguments", *(key for key, _, _ in SWITCHES))
_TOP_KEYS = ("actions", "tiers", "configurations", "metrics")


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", strict=True)


class PluginOption(_Model):
    """One plugin in a tier, with every switch resolved (unset = Volcano's default)."""

    name: str
    arguments: dict[str, Any] = {}
    #: False for a Volcano plugin outside kubesched's scope: the runtime reports it.
    supported: bool = True
    job_order: bool = True
    hierarchy: bool = False
    job_ready: bool = True
    job_pipelined: bool = True
    task_order: bool = True
    preemptable: bool = True
    reclaimable: bool = True
    preemptive: bool = True
    queue_order: bool = True
    cluster_order: bool = False
    predicate: bool = True
    best_node: bool = True
    node_order: bool = True
    target_job: bool = True
    reserved_nodes: bool = True
    job_enqueued: bool = True
    victim: bool = True
    job_starving: bool = True
    overused: bool = True
    allocatable: bool = True
    hyper_node_order: bool = True
    sub_job_ready: bool = True
    sub_job_pipelined: bool = True
    sub_job_order: bool = True
    hyper_node_gradient: bool = True

    def enabled(self, switch: str) -> bool:
        """Whether a switch is on, by attribute (``job_order``) or Volcano key (``enableJobOrder``)."""
        attr = _SWITCH_KEYS[switch][1] if switch in _SWITCH_KEYS else switch
        if attr not in _ATTR_TO_KEY:
            raise KeyError(switch)
        return bool(getattr(self, attr))


class Tier(_Model):
    plugins: list[PluginOption] = []


class ActionConfiguration(_Model):
    """Arguments for one action (Volcano's ``configurations`` entry)."""

    name: str
    arguments: dict[str, Any] = {}


class BatchConf(_Model):
    actions: list[str]
    tiers: list[Tier] = []
    configurations: list[ActionConfiguration] = []
    metrics: dict[str, str] = {}
    #: Where the conf came from (a path, or ``<default>``).
    source: str = "<default>"
    #: Things accepted but ignored (switches for features kubesched lacks), one line each.
    warnings: list[str] = []

    @property
    def unsupported_actions(self) -> list[str]:
        return [a for a in self.actions if a not in SUPPORTED_ACTIONS]

    @property
    def unsupported_plugins(self) -> list[str]:
        return [p.name for t in self.tiers for p in t.plugins if not p.supported]

    def plugin_names(self) -> list[str]:
        return [p.name for t in self.tiers for p in t.plugins]

    def action_arguments(self, action: str) -> dict[str, Any]:
        """Arguments configured for ``action`` (the first matching entry), or ``{}``."""
        for c in self.configurations:
            if c.name == action:
                return c.arguments
        return {}


def _hint(name: str, choices: frozenset[str] | tuple[str, ...]) -> str:
    close = difflib.get_close_matches(name, sorted(choices), n=1, cutoff=0.6)
    return f"; did you mean {close[0]!r}?" if close else f"; known: {', '.join(sorted(choices))}"


class _Parser:
    def __init__(self, source: str) -> None:
        self.source = source
        self.warnings: list[str] = []

    def fail(self, message: str, field: str | None) -> InputError:
        return InputError(message, file=self.source, field=field)

    def mapping(self, data: Any, field: str | None) -> Mapping[str, Any]:
        if not isinstance(data, Mapping):
            raise self.fail(f"expected a mapping, got {type(data).__name__}", field)
        for k in data:
            if not isinstance(k, str):
                raise self.fail(f"keys must be strings, got {k!r}", field)
        return data

    def sequence(self, data: Any, field: str) -> list[Any]:
        if data is None:
            return []
        if not isinstance(data, list):
            raise self.fail(f"expected a list, got {type(data).__name__}", field)
        return data

    def keys(self, data: Mapping[str, Any], allowed: tuple[str, ...], field: str | None) -> None:
        for k in data:
            if k not in allowed and k not in _SWITCH_KEYS:
                where = f"{field}.{k}" if field else k
                raise self.fail(f"unknown key {k!r}{_hint(k, allowed)}", where)

    def name(self, data: Mapping[str, Any], field: str) -> str:
        name = data.get("name")
        if not isinstance(name, str) or not name.strip():
            raise self.fail("a non-empty name is required", f"{field}.name")
        return name.strip()

    def arguments(self, data: Mapping[str, Any], field: str) -> dict[str, Any]:
        args = data.get("arguments")
        if args is None:
            return {}
        return dict(self.mapping(args, f"{field}.arguments"))

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
            if name not in VOLCANO_ACTIONS:
                raise self.fail(f"unknown action {name!r}{_hint(name, VOLCANO_ACTIONS)}", "actions")
        return names

    def plugin(self, data: Any, field: str) -> PluginOption:
        m = self.mapping(data, field)
        self.keys(m, _PLUGIN_KEYS, field)
        name = self.name(m, field)
        if name not in VOLCANO_PLUGINS:
            raise self.fail(f"unknown plugin {name!r}{_hint(name, VOLCANO_PLUGINS)}", f"{field}.name")
        values: dict[str, Any] = {
            "name": name,
            "arguments": self.arguments(m, field),
            "supported": name in SUPPORTED_PLUGINS,
        }
        seen: dict[str, str] = {}
        for key, value in m.items():
            if key not in _SWITCH_KEYS or value is None:  # null = unset, as in Volcano
                continue
            volcano_key, attr = _SWITCH_KEYS[key]
            if attr in seen:
                raise self.fail(f"{key} repeats {seen[attr]}; set it once", f"{field}.{key}")
            seen[attr] = key
            if not isinstance(value, bool):
                raise self.fail(f"must be true or false, got {value!r}", f"{field}.{key}")
            values[attr] = value
            if attr in UNSUPPORTED_SWITCHES:
                self.warnings.append(
                    f"{self.source}: {field}.{key}: kubesched has no {_feature(volcano_key)} feature; "
                    "the switch is accepted and ignored"
                )
        return PluginOption.model_validate(values)

    def tiers(self, data: Any) -> list[Tier]:
        tiers: list[Tier] = []
        for i, raw in enumerate(self.sequence(data, "tiers")):
            field = f"tiers[{i}]"
            m = self.mapping(raw, field)
            self.keys(m, ("plugins",), field)
            plugins = [
                self.plugin(p, f"{field}.plugins[{j}]")
                for j, p in enumerate(self.sequence(m.get("plugins"), f"{field}.plugins"))
            ]
            names = [p.name for p in plugins]
            if "proportion" in names and any(p.name == "drf" and p.hierarchy for p in plugins):
                raise self.fail(
                    "proportion and drf with enableHierarchy conflict; use one of them", f"{field}.plugins"
                )
            tiers.append(Tier(plugins=plugins))
        return tiers

    def configurations(self, data: Any) -> list[ActionConfiguration]:
        out: list[ActionConfiguration] = []
        for i, raw in enumerate(self.sequence(data, "configurations")):
            field = f"configurations[{i}]"
            m = self.mapping(raw, field)
            self.keys(m, ("name", "arguments"), field)
            name = self.name(m, field)
            if name not in VOLCANO_ACTIONS:
                raise self.fail(f"unknown action {name!r}{_hint(name, VOLCANO_ACTIONS)}", f"{field}.name")
            out.append(ActionConfiguration(name=name, arguments=self.arguments(m, field)))
        return out

    def metrics(self, data: Any) -> dict[str, str]:
        if data is None:
            return {}
        m = self.mapping(data, "metrics")
        out: dict[str, str] = {}
        for k, v in m.items():
            if isinstance(v, Mapping | list):
                raise self.fail(f"expected a scalar, got {type(v).__name__}", f"metrics.{k}")
            out[k] = "" if v is None else str(v)
        return out


def batch_conf_from_dict(data: Any, source: str = "<batch conf>") -> BatchConf:
    """Validate a parsed conf document; raises :class:`InputError` naming ``source`` and the field."""
    parser = _Parser(source)
    if data is None:
        data = {}
    m = parser.mapping(data, None)
    parser.keys(m, _TOP_KEYS, None)
    try:
        conf = BatchConf(
            actions=parser.actions(m.get("actions")),
            tiers=parser.tiers(m.get("tiers")),
            configurations=parser.configurations(m.get("configurations")),
            metrics=parser.metrics(m.get("metrics")),
            source=source,
            warnings=parser.warnings,
        )
    except ValidationError as exc:  # pragma: no cover - the parser checks shapes first
        err = exc.errors()[0]
        loc = ".".join(str(p) for p in err["loc"])
        raise parser.fail(err["msg"], loc or None) from None
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
        raise InputError(f"cannot read: {exc}", file=source) from None
    try:
        data = safe_load(text)
    except yaml.YAMLError as exc:
        raise InputError(f"not valid YAML{yaml_error_detail(exc)}", file=source) from None
    except RecursionError:
        raise InputError("not valid YAML: nested too deeply", file=source) from None
    return batch_conf_from_dict(data, source)
