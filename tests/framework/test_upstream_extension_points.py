"""Every in-tree plugin implements exactly the extension points its upstream counterpart does.

So a ``KubeSchedulerConfiguration`` that current kube-scheduler loads (say NodeResourcesFit enabled
under ``preScore``) loads here too, and schedules as the default profile does: enabling a default
plugin again at one of its own points changes nothing.
"""

from __future__ import annotations

from typing import Any

import pytest

from kubesched.framework.config import config_from_dict
from kubesched.framework.extension_points import ExtensionPoint as EP
from kubesched.framework.interfaces import EnqueueExtensions
from kubesched.plugins import default_registry
from kubesched.sim.simulation import Simulation

API = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration"}

#: Extension points of the upstream in-tree plugins kubesched implements (v1.34; the workload-aware
#: ones and NodeResourcesFit's placementScore as v1.36).
UPSTREAM: dict[str, tuple[EP, ...]] = {
    "SchedulingGates": (EP.PRE_ENQUEUE,),
    "PrioritySort": (EP.QUEUE_SORT,),
    "NodeUnschedulable": (EP.FILTER,),
    "NodeName": (EP.FILTER,),
    "TaintToleration": (EP.FILTER, EP.PRE_SCORE, EP.SCORE),
    "NodeAffinity": (EP.PRE_FILTER, EP.FILTER, EP.PRE_SCORE, EP.SCORE),
    "NodePorts": (EP.PRE_FILTER, EP.FILTER),
    "NodeResourcesFit": (EP.PRE_FILTER, EP.FILTER, EP.PRE_SCORE, EP.SCORE, EP.PLACEMENT_SCORE),
    "PodTopologySpread": (EP.PRE_FILTER, EP.FILTER, EP.PRE_SCORE, EP.SCORE),
    "InterPodAffinity": (EP.PRE_FILTER, EP.FILTER, EP.PRE_SCORE, EP.SCORE),
    "DefaultPreemption": (EP.PRE_ENQUEUE, EP.POST_FILTER),
    "NodeResourcesBalancedAllocation": (EP.PRE_SCORE, EP.SCORE),
    "ImageLocality": (EP.SCORE,),
    "DefaultBinder": (EP.BIND,),
    "GangScheduling": (EP.PRE_ENQUEUE, EP.RESERVE, EP.PERMIT),
    "TopologyPlacementGenerator": (EP.PLACEMENT_GENERATE,),
    "PodGroupPodsCount": (EP.PLACEMENT_SCORE,),
}
#: Upstream plugins that implement EnqueueExtensions (EventsToRegister with queueing hints).
UPSTREAM_ENQUEUE_EXTENSIONS = {
    "SchedulingGates",
    "NodeUnschedulable",
    "NodeName",
    "TaintToleration",
    "NodeAffinity",
    "NodePorts",
    "NodeResourcesFit",
    "PodTopologySpread",
    "InterPodAffinity",
    "DefaultPreemption",
    "GangScheduling",
}


def test_in_tree_plugins_implement_upstream_points_exactly() -> None:
    registry = default_registry()
    for name, points in UPSTREAM.items():
        assert registry[name].extension_points == frozenset(points), name
        assert isinstance(registry[name].factory, type)
        has_events = issubclass(registry[name].factory, EnqueueExtensions)
        assert has_events == (name in UPSTREAM_ENQUEUE_EXTENSIONS), name


def _node(name: str, cpu: str, taints: list[dict[str, str]] | None = None) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, "zone": name[-1]}},
        "spec": {"taints": taints or []},
        "status": {"allocatable": {"cpu": cpu, "memory": "8Gi", "pods": "110"}},
    }


def _pod(name: str, cpu: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", "labels": {"app": "web"}},
        "spec": {"containers": [{"name": "c", "image": "nginx", "resources": {"requests": {"cpu": cpu}}}]},
    }


def _placements(plugins: dict[str, Any] | None) -> dict[str, str | None]:
    registry = default_registry()
    profile: dict[str, Any] = {"plugins": plugins} if plugins is not None else {}
    sim = Simulation(config_from_dict({**API, "profiles": [profile]}, registry), registry, seed=5)
    sim.store.create(_node("node-a", "4"))
    sim.store.create(_node("node-b", "8", [{"key": "soft", "value": "x", "effect": "PreferNoSchedule"}]))
    sim.store.create(_node("node-c", "2"))
    for i, cpu in enumerate(["1", "500m", "3", "2", "250m"]):
        sim.store.create(_pod(f"p{i}", cpu))
    sim.run()
    return {o.name: o.node for o in sim.outcomes()}


CASES = [(name, point) for name, points in UPSTREAM.items() for point in points]


@pytest.mark.parametrize(("plugin", "point"), CASES, ids=[f"{n}-{p.value}" for n, p in CASES])
def test_config_enabling_plugin_at_upstream_point_loads_with_same_result(plugin: str, point: EP) -> None:
    registry = default_registry()
    plugins = {point.value: {"enabled": [{"name": plugin}]}}
    config = config_from_dict({**API, "profiles": [{"plugins": plugins}]}, registry)
    assert plugin in [ref.name for ref in config.profiles[0].plugins[point]]
    assert _placements(plugins) == _placements(None)


def test_fit_and_taint_at_pre_score_was_the_reported_config() -> None:
    plugins = {"preScore": {"enabled": [{"name": "NodeResourcesFit"}, {"name": "TaintToleration"}]}}
    config = config_from_dict({**API, "profiles": [{"plugins": plugins}]}, default_registry())
    names = [ref.name for ref in config.profiles[0].plugins[EP.PRE_SCORE]]
    assert names.count("NodeResourcesFit") == 1 and names.count("TaintToleration") == 1
