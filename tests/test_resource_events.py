"""Plugins that register events for kinds other than pods and nodes (claims, volumes, config maps…)
get pods they rejected requeued when such an object changes, and only then, as upstream's event
handlers subscribe to every kind the profile's plugins name."""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from kubesched.api.objects import Pod
from kubesched.cache.node_table import NodeTable
from kubesched.framework.config import config_from_dict
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.handle import Handle
from kubesched.framework.types import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    FilterResult,
    QueueingHint,
)
from kubesched.plugins import default_registry, spec_for
from kubesched.scheduler.eventhandlers import followed_kinds
from kubesched.sim.simulation import Simulation

REASON = "node(s) wait for config map 'go'"


class WaitForConfigMap:
    """Rejects every node until a ConfigMap named ``go`` exists in the pod's namespace."""

    name: ClassVar[str] = "WaitForConfigMap"

    def __init__(self, args: Any, handle: Handle) -> None:
        self.handle = handle
        self.hinted: list[str] = []

    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [ClusterEventWithHint(ClusterEvent("ConfigMap", ActionType.ADD), self._hint)]

    def _hint(self, pod: Pod, old: Any, new: Any) -> QueueingHint:
        name = (new.get("metadata") or {}).get("name")
        self.hinted.append(str(name))
        return QueueingHint.QUEUE if name == "go" else QueueingHint.QUEUE_SKIP

    def filter_nodes(self, state: CycleState, pod: Pod, table: NodeTable) -> FilterResult:
        if self.handle.informers.informer("ConfigMap").get(pod.namespace, "go") is not None:
            return FilterResult.all_pass(table.capacity)
        return FilterResult.reject(np.ones(table.capacity, dtype=np.bool_), REASON)


def _sim() -> tuple[Simulation, WaitForConfigMap]:
    registry = default_registry()
    registry.register(spec_for(WaitForConfigMap))
    config = config_from_dict(
        {
            "apiVersion": "kubescheduler.config.k8s.io/v1",
            "kind": "KubeSchedulerConfiguration",
            "profiles": [{"plugins": {"filter": {"enabled": [{"name": "WaitForConfigMap"}]}}}],
        },
        registry,
    )
    sim = Simulation(config, registry, seed=0)
    sim.store.create(
        {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": "n1"},
            "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}},
        }
    )
    plugin = sim.scheduler.profiles["default-scheduler"].plugins["WaitForConfigMap"]
    assert isinstance(plugin, WaitForConfigMap)
    return sim, plugin


def _config_map(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": "default"}}


def test_a_new_object_of_a_registered_kind_requeues_the_pod_its_hint_accepts() -> None:
    sim, plugin = _sim()
    sim.store.create(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "p"},
            "spec": {"containers": [{"name": "c"}]},
        }
    )
    [outcome] = sim.run().outcomes
    assert outcome.status == "Unschedulable" and REASON in outcome.message

    sim.store.create(_config_map("other"))
    [outcome] = sim.run().outcomes
    assert outcome.status == "Unschedulable"
    assert plugin.hinted == ["other"]

    sim.store.create(_config_map("go"))
    [outcome] = sim.run().outcomes
    assert outcome.status == "Scheduled"
    assert plugin.hinted == ["other", "go"]


def test_only_named_kinds_beyond_pods_and_nodes_are_followed() -> None:
    events = [
        ClusterEvent("Pod", ActionType.ADD),
        ClusterEvent("Node", ActionType.ALL),
        ClusterEvent("*", ActionType.ALL),
        ClusterEvent("PersistentVolumeClaim", ActionType.ADD),
        ClusterEvent("PersistentVolumeClaim", ActionType.UPDATE),
        ClusterEvent("StorageClass", ActionType.ADD),
    ]
    assert followed_kinds(events) == ["PersistentVolumeClaim", "StorageClass"]
