"""Parsing Pod, Node and PriorityClass manifests into the scheduler's views."""

from __future__ import annotations

import copy
from dataclasses import fields
from typing import Any

import pytest

from kubesched.api.objects import (
    DEFAULT_MAX_PODS,
    DEFAULT_SCHEDULER_NAME,
    Node,
    Pod,
    PriorityClass,
    object_ref,
)
from kubesched.api.taints import Taint, Toleration
from kubesched.errors import InputError

Gi = 1024**3
Mi = 1024**2


def node(**status: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}, "status": status}


def pod(**spec: Any) -> dict[str, Any]:
    spec.setdefault("containers", [{"name": "c", "image": "x"}])
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "ns"}, "spec": spec}


# -- Node ---------------------------------------------------------------------------------------------


def test_node_allocatable_defaults_to_capacity():
    n = Node.from_dict(node(capacity={"cpu": "4", "memory": "8Gi", "pods": "30"}))
    assert n.allocatable == {"cpu": 4000, "memory": 8 * Gi, "pods": 30}


def test_node_allocatable_wins_over_capacity():
    n = Node.from_dict(
        node(
            capacity={"cpu": "4", "memory": "8Gi", "pods": "30"},
            allocatable={"cpu": "3500m", "memory": "7Gi"},
        )
    )
    assert n.allocatable["cpu"] == 3500
    assert n.allocatable["memory"] == 7 * Gi
    # allocatable without pods: the node's pods capacity still limits it
    assert n.allocatable["pods"] == 30


def test_node_pods_default_to_kubelet_max_pods():
    n = Node.from_dict(node(allocatable={"cpu": "2", "memory": "1Gi"}))
    assert n.allocatable["pods"] == DEFAULT_MAX_PODS == 110


def test_node_without_status_has_zero_cpu_and_memory():
    n = Node.from_dict({"kind": "Node", "metadata": {"name": "bare"}})
    assert n.allocatable == {"cpu": 0, "memory": 0, "pods": 110}
    assert n.taints == ()
    assert not n.unschedulable
    assert n.ready
    assert n.zone_key == ""


def test_node_extended_resources():
    n = Node.from_dict(node(allocatable={"cpu": "32", "nvidia.com/gpu": "4"}))
    assert n.allocatable["nvidia.com/gpu"] == 4


@pytest.mark.parametrize(
    ("labels", "key"),
    [
        ({"topology.kubernetes.io/zone": "z1"}, ":\x00:z1"),
        ({"topology.kubernetes.io/region": "r1"}, "r1:\x00:"),
        ({"topology.kubernetes.io/region": "r1", "topology.kubernetes.io/zone": "z1"}, "r1:\x00:z1"),
        ({"kubernetes.io/hostname": "n1"}, ""),
    ],
)
def test_node_zone_key(labels, key):
    obj = node()
    obj["metadata"]["labels"] = labels
    assert Node.from_dict(obj).zone_key == key


def test_node_taints_and_unschedulable():
    obj = node()
    obj["spec"] = {
        "unschedulable": True,
        "taints": [
            {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"},
            {"key": "maintenance", "effect": "PreferNoSchedule", "timeAdded": "2024-01-01T00:00:00Z"},
        ],
    }
    n = Node.from_dict(obj)
    assert n.unschedulable
    assert n.taints == (
        Taint("nvidia.com/gpu", "present", "NoSchedule"),
        Taint("maintenance", "", "PreferNoSchedule"),
    )
    assert str(n.taints[0]) == "nvidia.com/gpu=present:NoSchedule"


def test_node_ready_condition():
    obj = node(
        conditions=[{"type": "MemoryPressure", "status": "False"}, {"type": "Ready", "status": "False"}]
    )
    assert not Node.from_dict(obj).ready


@pytest.mark.parametrize(
    ("mutate", "field"),
    [
        (lambda o: o["metadata"].pop("name"), "metadata.name"),
        (lambda o: o["metadata"].update(name=""), "metadata.name"),
        (lambda o: o.update(metadata="n1"), "metadata"),
        (lambda o: o["metadata"].update(labels={"a": 1}), "metadata.labels.a"),
        (lambda o: o.update(spec={"unschedulable": "yes"}), "spec.unschedulable"),
        (lambda o: o.update(spec={"taints": {"key": "a"}}), "spec.taints"),
        (lambda o: o.update(spec={"taints": [{"key": "a", "effect": "Sometimes"}]}), "spec.taints[0].effect"),
        (lambda o: o.update(spec={"taints": [{"key": "a"}]}), "spec.taints[0].effect"),
        (lambda o: o.update(spec={"taints": [{"effect": "NoSchedule"}]}), "spec.taints[0].key"),
        (lambda o: o["status"].update(allocatable={"cpu": "abc"}), "status.allocatable.cpu"),
        (lambda o: o["status"].update(capacity={"memory": "1Qi"}), "status.capacity.memory"),
        (lambda o: o["status"].update(conditions="Ready"), "status.conditions"),
    ],
)
def test_node_errors_name_the_field(mutate, field):
    obj = node(allocatable={"cpu": "1"})
    mutate(obj)
    with pytest.raises(InputError) as info:
        Node.from_dict(obj)
    assert info.value.field == field


# -- Pod ----------------------------------------------------------------------------------------------


def test_pod_defaults():
    p = Pod.from_dict(pod())
    assert p.key == "ns/p"
    assert p.scheduler_name == DEFAULT_SCHEDULER_NAME
    assert p.priority == 0
    assert p.node_name == ""
    assert p.phase == "Pending"
    assert not p.terminated
    assert p.preemption_policy == "PreemptLowerPriority"
    assert p.tolerations == ()
    assert p.scheduling_gates == ()
    assert p.requests == {}
    assert (p.nonzero_cpu, p.nonzero_memory) == (100, 200 * 1024 * 1024)


def test_pod_namespace_defaults_to_default():
    obj = pod()
    del obj["metadata"]["namespace"]
    assert Pod.from_dict(obj).key == "default/p"


def test_pod_fields():
    obj = pod(
        priority=7,
        priorityClassName="high",
        schedulerName="other",
        nodeName="n1",
        nodeSelector={"disk": "ssd"},
        tolerations=[{"key": "k", "operator": "Exists", "effect": "NoSchedule"}],
        schedulingGates=[{"name": "a"}, {"name": "b"}],
        containers=[{"name": "c", "resources": {"requests": {"cpu": "250m", "memory": "1Gi"}}}],
    )
    obj["metadata"]["labels"] = {"app": "web"}
    obj["status"] = {"phase": "Succeeded"}
    p = Pod.from_dict(obj)
    assert p.priority == 7
    assert p.priority_class_name == "high"
    assert p.scheduler_name == "other"
    assert p.node_name == "n1"
    assert p.node_selector == {"disk": "ssd"}
    assert p.labels == {"app": "web"}
    assert p.tolerations == (Toleration("k", "Exists", "", "NoSchedule"),)
    assert p.scheduling_gates == ("a", "b")
    assert p.requests == {"cpu": 250, "memory": Gi}
    assert p.terminated


@pytest.mark.parametrize(
    ("mutate", "field"),
    [
        (lambda o: o["metadata"].pop("name"), "metadata.name"),
        (lambda o: o["metadata"].update(name=5), "metadata.name"),
        (lambda o: o.update(spec=[]), "spec"),
        (lambda o: o["spec"].update(containers=5), "spec.containers"),
        (lambda o: o["spec"].update(containers=[]), "spec.containers"),
        (lambda o: o["spec"].update(containers=["web"]), "spec.containers[0]"),
        (
            lambda o: o["spec"].update(containers=[{"name": "c", "resources": {"requests": {"cpu": "abc"}}}]),
            "spec.containers[0].resources.requests.cpu",
        ),
        (
            lambda o: o["spec"].update(tolerations=[{"key": "k", "operator": "Maybe"}]),
            "spec.tolerations[0].operator",
        ),
        (
            lambda o: o["spec"].update(tolerations=[{"key": "k", "operator": "Exists", "value": "v"}]),
            "spec.tolerations[0].value",
        ),
        (lambda o: o["spec"].update(tolerations={"key": "k"}), "spec.tolerations"),
        (lambda o: o["spec"].update(schedulingGates=[{}]), "spec.schedulingGates[0].name"),
        (lambda o: o["spec"].update(schedulingGates=["gate"]), "spec.schedulingGates[0]"),
        (lambda o: o["spec"].update(priority="high"), "spec.priority"),
        (lambda o: o["spec"].update(priority=True), "spec.priority"),
        (lambda o: o["spec"].update(nodeName=3), "spec.nodeName"),
        (lambda o: o["spec"].update(schedulerName=["a"]), "spec.schedulerName"),
        (lambda o: o["spec"].update(nodeSelector={"disk": True}), "spec.nodeSelector.disk"),
        (lambda o: o["spec"].update(affinity="any"), "spec.affinity"),
        (lambda o: o["metadata"].update(annotations=[]), "metadata.annotations"),
        (lambda o: o["metadata"].update(labels={"app": 1}), "metadata.labels.app"),
        (lambda o: o["metadata"].update(labels={1: "web"}), "metadata.labels"),
        (lambda o: o["metadata"].update(annotations={"note": None}), "metadata.annotations.note"),
        (lambda o: o["metadata"].update(namespace=["a"]), "metadata.namespace"),
        (lambda o: o["spec"].update(priorityClassName=["high"]), "spec.priorityClassName"),
        (lambda o: o["spec"].update(preemptionPolicy="Always"), "spec.preemptionPolicy"),
    ],
)
def test_pod_errors_name_the_field(mutate, field):
    obj = pod()
    mutate(obj)
    with pytest.raises(InputError) as info:
        Pod.from_dict(obj)
    assert info.value.field == field


def test_pods_of_one_shape_keep_their_own_requests():
    """Views of pods with the same containers share what they parsed; parsing more pods of other
    shapes (past the memo's size) changes none of the earlier views."""
    shape = [{"name": "c", "resources": {"requests": {"cpu": "100m", "memory": "200Mi"}}}]
    first, second = Pod.from_dict(pod(containers=shape)), Pod.from_dict(pod(containers=copy.deepcopy(shape)))
    for i in range(5000):
        Pod.from_dict(pod(containers=[{"name": "c", "resources": {"requests": {"cpu": f"{i + 1}m"}}}]))
    assert first.requests == second.requests == {"cpu": 100, "memory": 200 * Mi}
    assert Pod.from_dict(pod(containers=shape)).requests == {"cpu": 100, "memory": 200 * Mi}


def test_pod_parse_does_not_modify_the_manifest():
    obj = pod(containers=[{"name": "c", "resources": {"limits": {"cpu": "1"}}}])
    before = copy.deepcopy(obj)
    Pod.from_dict(obj)
    assert obj == before


# -- PriorityClass and refs ---------------------------------------------------------------------------


def test_priority_class():
    pc = PriorityClass.from_dict(
        {"kind": "PriorityClass", "metadata": {"name": "hi"}, "value": 1000, "globalDefault": True}
    )
    assert (pc.name, pc.value, pc.global_default, pc.preemption_policy) == (
        "hi",
        1000,
        True,
        "PreemptLowerPriority",
    )


@pytest.mark.parametrize(
    ("obj", "field"),
    [
        ({"metadata": {"name": "x"}}, "value"),
        ({"metadata": {"name": "x"}, "value": "10"}, "value"),
        ({"metadata": {"name": "x"}, "value": 2_000_000_000}, "value"),
        ({"metadata": {"name": "x"}, "value": 1, "globalDefault": "yes"}, "globalDefault"),
        ({"metadata": {"name": "x"}, "value": 1, "preemptionPolicy": "Sometimes"}, "preemptionPolicy"),
        ({"metadata": {}, "value": 1}, "metadata.name"),
    ],
)
def test_priority_class_errors(obj, field):
    with pytest.raises(InputError) as info:
        PriorityClass.from_dict(obj)
    assert info.value.field == field


def test_system_priority_class_may_exceed_user_limit():
    pc = PriorityClass.from_dict({"metadata": {"name": "system-node-critical"}, "value": 2000001000})
    assert pc.value == 2000001000


def test_object_ref():
    assert object_ref({"kind": "Pod", "metadata": {"name": "a", "namespace": "ns"}}) == "Pod ns/a"
    assert object_ref({"kind": "Node", "metadata": {"name": "n"}}) == "Node n"
    assert object_ref({"kind": "Pod", "metadata": "oops"}) == "Pod <no name>"
    assert object_ref({}) == "? <no name>"


def test_a_copied_pod_shares_every_field_and_is_a_pod_of_its_own():
    pod = Pod.from_dict(
        {
            "kind": "Pod",
            "metadata": {"name": "p", "labels": {"a": "b"}},
            "spec": {"containers": [{"name": "c", "ports": [{"hostPort": 80}]}], "nodeName": "n1"},
        }
    )
    twin = copy.copy(pod)
    assert twin is not pod and type(twin) is Pod
    assert all(getattr(twin, f.name) is getattr(pod, f.name) for f in fields(Pod))
    twin.node_name = "n2"
    assert pod.node_name == "n1"
