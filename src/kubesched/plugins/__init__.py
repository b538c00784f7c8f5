"""In-tree plugins, one folder each, and the registry that names them."""

from __future__ import annotations

from typing import Any

from kubesched.framework.interfaces import extension_points_of
from kubesched.framework.plugin_args import ARGS_MODELS
from kubesched.framework.registry import PluginSpec, Registry
from kubesched.plugins.defaultbinder import DefaultBinder
from kubesched.plugins.defaultpreemption import DefaultPreemption
from kubesched.plugins.dynamicresources import DynamicResources
from kubesched.plugins.gangscheduling import GangScheduling
from kubesched.plugins.gpushare import GPU_SCORE_PLUGINS, GpuShare
from kubesched.plugins.imagelocality import ImageLocality
from kubesched.plugins.interpodaffinity import InterPodAffinity
from kubesched.plugins.nodeaffinity import NodeAffinity
from kubesched.plugins.nodename import NodeName
from kubesched.plugins.nodeports import NodePorts
from kubesched.plugins.noderesources.balanced_allocation import NodeResourcesBalancedAllocation
from kubesched.plugins.noderesources.fit import NodeResourcesFit
from kubesched.plugins.nodeunschedulable import NodeUnschedulable
from kubesched.plugins.nodevolumelimits import NodeVolumeLimits
from kubesched.plugins.podgrouppodscount import PodGroupPodsCount
from kubesched.plugins.podtopologyspread import PodTopologySpread
from kubesched.plugins.queuesort import PrioritySort
from kubesched.plugins.schedulinggates import SchedulingGates
from kubesched.plugins.tainttoleration import TaintToleration
from kubesched.plugins.topologyaware import TopologyPlacementGenerator
from kubesched.plugins.volumebinding import VolumeBinding
from kubesched.plugins.volumerestrictions import VolumeRestrictions
from kubesched.plugins.volumezone import VolumeZone

IN_TREE: tuple[Any, ...] = (
    SchedulingGates,
    PrioritySort,
    NodeUnschedulable,
    NodeName,
    TaintToleration,
    NodeAffinity,
    NodePorts,
    NodeResourcesFit,
    VolumeRestrictions,
    NodeVolumeLimits,
    VolumeBinding,
    VolumeZone,
    PodTopologySpread,
    NodeResourcesBalancedAllocation,
    InterPodAffinity,
    DynamicResources,
    ImageLocality,
    DefaultPreemption,
    DefaultBinder,
    GangScheduling,
    TopologyPlacementGenerator,
    PodGroupPodsCount,
    GpuShare,
    *GPU_SCORE_PLUGINS,
)


def spec_for(cls: Any) -> PluginSpec:
    """A registry entry for a plugin class: its extension points are read off its methods."""
    return PluginSpec(
        name=cls.name,
        factory=cls,
        extension_points=extension_points_of(cls),
        args_model=ARGS_MODELS.get(cls.name),
    )


def default_registry() -> Registry:
    registry = Registry()
    for cls in IN_TREE:
        registry.register(spec_for(cls))
    return registry
