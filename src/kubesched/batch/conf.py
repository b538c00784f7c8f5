"""The batch scheduler conf as the scheduler runs with it: Volcano's ``volcano-scheduler.conf``.

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

This module holds the resolved types (:class:`BatchConf`, :class:`Tier`, :class:`PluginOption`) and
Volcano's names and switches; reading and validating a conf file is :mod:`kubesched.batch.conf_loader`.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict

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
        # kubesched's own: per-card GPU sharing with the FGD paper's policies (docs/gpu-sharing.md).
        "gpushare",
    }
)
#: The actions and plugins within kubesched's batch scope (DESIGN §4). Others parse, flagged
#: ``supported=False``, and the runtime reports them as not implemented.
SUPPORTED_ACTIONS = frozenset(
    {"enqueue", "allocate", "backfill", "preempt", "reclaim", "gangpreempt", "gangreclaim"}
)
SUPPORTED_PLUGINS = frozenset(
    {
        "priority",
        "gang",
        "conformance",
        "drf",
        "predicates",
        "proportion",
        "capacity",
        "nodeorder",
        "binpack",
        "overcommit",
        "gpushare",
        "network-topology-aware",
    }
)


#: The ``preempt`` action's argument turning on Volcano's dry-run (topology-aware) preemption.
TOPOLOGY_AWARE_PREEMPTION = "enableTopologyAwarePreemption"


def argument_bool(arguments: dict[str, Any], key: str, default: bool) -> bool:
    """An action argument as Volcano's ``Arguments.GetBool`` reads it: a bool, or a string that
    parses as one; anything else leaves the default."""
    value = arguments.get(key)
    if isinstance(value, bool):
        return value
    if isinstance(value, str):
        text = value.strip().lower()
        if text in ("1", "t", "true"):
            return True
        if text in ("0", "f", "false"):
            return False
    return default


def argument_int(arguments: dict[str, Any], key: str, default: int) -> int:
    """An action argument as Volcano's ``Arguments.GetInt`` reads it: an integer, else the default."""
    value = arguments.get(key)
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    return default


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
        "sub_job_ready",
        "sub_job_pipelined",
        "sub_job_order",
    }
)


#: Plugins whose ``enableHierarchy`` kubesched implements (hierarchical queues).
HIERARCHY_PLUGINS = frozenset({"capacity"})


def feature_name(key: str) -> str:
    """``enableJobOrder`` and ``enabledJobOrder`` both name feature ``JobOrder``."""
    for prefix in ("enabled", "enable"):
        if key.startswith(prefix):
            return key[len(prefix) :]
    return key


#: Both spellings (enable*/enabled*) of every switch → (Volcano's spelling, attribute).
SWITCH_KEYS: dict[str, tuple[str, str]] = {}
for _key, _attr, _ in SWITCHES:
    for _prefix in ("enable", "enabled"):
        SWITCH_KEYS[_prefix + feature_name(_key)] = (_key, _attr)
# Volcano's own YAML tag for the cluster-order switch starts with a capital letter.
SWITCH_KEYS["EnabledClusterOrder"] = ("enabledClusterOrder", "cluster_order")
ATTR_TO_KEY = {attr: key for key, attr, _ in SWITCHES}
PLUGIN_KEYS = ("name", "arguments", *(key for key, _, _ in SWITCHES))
TOP_KEYS = ("actions", "tiers", "configurations", "metrics")


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
        attr = SWITCH_KEYS[switch][1] if switch in SWITCH_KEYS else switch
        if attr not in ATTR_TO_KEY:
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
    #: Volcano actions kubesched does not provide (named in ``actions``; the runtime reports them).
    unsupported_actions: list[str] = []

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
