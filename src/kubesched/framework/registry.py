"""Plugin registry: which plugins exist, which extension points they implement, their args model.

The registry is the one piece of global state the framework has (like upstream's in-tree registry).
Out-of-tree plugins register here too, before a configuration is loaded.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from kubesched.framework.extension_points import ExtensionPoint

if TYPE_CHECKING:
    from kubesched.framework.handle import Handle

#: Where the in-tree plugins live.
IN_TREE_PACKAGE = "kubesched.plugins."


def is_in_tree(obj: object) -> bool:
    """Whether a plugin, its class or its factory comes from kubesched's own plugins (their answers
    are tested by their tables, and their side effects are store writes through the ports)."""
    return str(getattr(obj, "__module__", "")).startswith(IN_TREE_PACKAGE)


#: Builds a plugin from its args (a validated args model, or None) and the handle. The framework
#: checks what it returns against the protocol of every extension point it is configured at.
PluginFactory = Callable[[Any, "Handle"], object]


@dataclass(frozen=True, slots=True)
class PluginSpec:
    """What the configuration loader and the runtime need to know about one plugin."""

    name: str
    factory: PluginFactory
    extension_points: frozenset[ExtensionPoint]
    args_model: type[BaseModel] | None = None


#: Upstream in-tree plugin names (kube-scheduler v1.34). A name listed here but not registered is
#: "known but not implemented yet": the loader says so instead of calling it unknown.
UPSTREAM_PLUGIN_NAMES: frozenset[str] = frozenset(
    {
        "PrioritySort",
        "SchedulingGates",
        "NodeUnschedulable",
        "NodeName",
        "TaintToleration",
        "NodeAffinity",
        "NodePorts",
        "NodeResourcesFit",
        "NodeResourcesBalancedAllocation",
        "VolumeRestrictions",
        "NodeVolumeLimits",
        "VolumeBinding",
        "VolumeZone",
        "PodTopologySpread",
        "InterPodAffinity",
        "DefaultPreemption",
        "ImageLocality",
        "DefaultBinder",
        "DynamicResources",
    }
)


class Registry(Mapping[str, PluginSpec]):
    """Name → :class:`PluginSpec`."""

    def __init__(self) -> None:
        self._specs: dict[str, PluginSpec] = {}

    def register(self, spec: PluginSpec) -> None:
        if spec.name in self._specs:
            raise ValueError(f"plugin {spec.name!r} is already registered")
        self._specs[spec.name] = spec

    def __getitem__(self, name: str) -> PluginSpec:
        return self._specs[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._specs)

    def __len__(self) -> int:
        return len(self._specs)

    def is_known_upstream(self, name: str) -> bool:
        return name in UPSTREAM_PLUGIN_NAMES
