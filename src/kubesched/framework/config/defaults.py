"""Upstream's v1 defaults (``pkg/scheduler/apis/config/v1/{defaults,default_plugins}.go``): the
default values of the top-level fields, the default plugins, the feature gates' defaults, and the merge
of a user's plugin set into the default one.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Final

# The feature gates' defaults live with the API types, so that the API server reads the same table.
from kubesched.api.features import FEATURE_GATE_DEFAULTS as FEATURE_GATE_DEFAULTS
from kubesched.api.features import GANG_SCHEDULING, TOPOLOGY_AWARE_WORKLOAD_SCHEDULING, gate_enabled

DEFAULT_SCHEDULER_NAME: Final = "default-scheduler"
DEFAULT_PARALLELISM: Final = 16
DEFAULT_POD_INITIAL_BACKOFF_SECONDS: Final = 1
DEFAULT_POD_MAX_BACKOFF_SECONDS: Final = 10

#: Upstream DefaultExtenderTimeout: an extender call given no httpTimeout gives up after this long.
DEFAULT_EXTENDER_TIMEOUT_SECONDS: Final = 5.0


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


def default_multi_point_plugins(gates: dict[str, bool]) -> tuple[tuple[str, int | None], ...]:
    """The default plugins with the ones feature gates add (upstream ``applyFeatureGates``), last:
    GangScheduling, then TopologyPlacementGenerator and PodGroupPodsCount (weight 1)."""
    plugins = DEFAULT_MULTI_POINT_PLUGINS
    if gate_enabled(gates, GANG_SCHEDULING):
        plugins = (*plugins, ("GangScheduling", None))
    if gate_enabled(gates, TOPOLOGY_AWARE_WORKLOAD_SCHEDULING):
        plugins = (*plugins, ("TopologyPlacementGenerator", None), ("PodGroupPodsCount", 1))
    return plugins


@dataclass(slots=True)
class PluginEntry:
    name: str
    weight: int | None
    where: str  # field path of the entry, for error messages


@dataclass(slots=True)
class PluginSet:
    enabled: list[PluginEntry] = field(default_factory=list)
    disabled: list[str] = field(default_factory=list)


def merge_plugin_set(default: PluginSet, custom: PluginSet) -> PluginSet:
    """Upstream's merge of a user plugin set into the default one.

    Disabled names (or ``*``) remove defaults; a default the user enables again keeps its position
    but takes the user's entry (weight included); every other user entry is appended in order.
    """
    disabled = [*custom.disabled, *default.disabled]
    disabled_names = set(disabled)
    by_name = {entry.name: index for index, entry in enumerate(custom.enabled)}  # last one wins
    replaced: set[int] = set()
    enabled: list[PluginEntry] = []
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
    return PluginSet(enabled=enabled, disabled=disabled)
