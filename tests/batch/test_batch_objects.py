from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from kubesched.api.manifests import load_manifests
from kubesched.api.volcano import (
    SCHEDULING_VOLCANO,
    SCHEDULING_X_K8S,
    PodGroup,
    Queue,
    group_name_of,
)
from kubesched.errors import InputError

VOLCANO = "scheduling.volcano.sh/v1beta1"
X_K8S = "scheduling.x-k8s.io/v1alpha1"
EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "batch"


def pg(spec: dict[str, Any] | None = None, api: str = VOLCANO, **extra: Any) -> dict[str, Any]:
    return {
        "apiVersion": api,
        "kind": "PodGroup",
        "metadata": {"name": "g", "namespace": "ml"},
        "spec": spec or {},
        **extra,
    }


def queue(spec: dict[str, Any] | None = None, **extra: Any) -> dict[str, Any]:
    return {"apiVersion": VOLCANO, "kind": "Queue", "metadata": {"name": "q"}, "spec": spec or {}, **extra}


def test_volcano_podgroup_defaults() -> None:
    g = PodGroup.from_dict(pg())
    assert (g.api_group, g.namespace, g.name) == (SCHEDULING_VOLCANO, "ml", "g")
    assert g.min_member == 0
    assert g.queue == "default"
    assert g.phase == "Pending"
    assert g.min_resources == {}
    assert g.conditions == ()
    assert g.schedule_timeout_seconds is None


def test_volcano_podgroup_full() -> None:
    g = PodGroup.from_dict(
        pg(
            {
                "minMember": 3,
                "minTaskMember": {"ps": 1, "worker": 2},
                "queue": "research",
                "priorityClassName": "high",
                "minResources": {"cpu": "1500m", "memory": "1Gi", "nvidia.com/gpu": 2},
            },
            status={
                "phase": "Inqueue",
                "conditions": [{"type": "Unschedulable", "status": "True", "reason": "NotEnoughResources"}],
            },
        )
    )
    assert g.min_member == 3
    assert g.min_task_member == {"ps": 1, "worker": 2}
    assert g.queue == "research"
    assert g.priority_class_name == "high"
    assert g.min_resources == {"cpu": 1500, "memory": 1024**3, "nvidia.com/gpu": 2}
    assert g.phase == "Inqueue"
    assert g.conditions[0].type == "Unschedulable"
    assert g.conditions[0].reason == "NotEnoughResources"
    assert g.key == (SCHEDULING_VOLCANO, "ml", "g")


def test_x_k8s_podgroup() -> None:
    g = PodGroup.from_dict(
        pg({"minMember": 2, "scheduleTimeoutSeconds": 10, "minResources": {"cpu": 2}}, api=X_K8S)
    )
    assert g.api_group == SCHEDULING_X_K8S
    assert (g.min_member, g.schedule_timeout_seconds, g.min_resources) == (2, 10, {"cpu": 2000})
    assert g.queue == "default"


@pytest.mark.parametrize(
    ("obj", "field"),
    [
        (pg({"minMember": -1}), "spec.minMember"),
        (pg({"minMember": "3"}), "spec.minMember"),
        (pg({"minMember": True}), "spec.minMember"),
        (pg({"minMember": 2**31}), "spec.minMember"),
        (pg({"minResources": {"cpu": "lots"}}), "spec.minResources.cpu"),
        (pg({"minResources": ["cpu"]}), "spec.minResources"),
        (pg({"minTaskMember": {"w": -2}}), "spec.minTaskMember.w"),
        (pg({"queue": 7}), "spec.queue"),
        (pg(status={"phase": "Bogus"}), "status.phase"),
        (pg(status={"conditions": [{"status": "True"}]}), "status.conditions[0].type"),
        (pg(status={"conditions": "x"}), "status.conditions"),
        (pg({"scheduleTimeoutSeconds": -5}, api=X_K8S), "spec.scheduleTimeoutSeconds"),
        (pg(api="scheduling.volcano.sh/v1alpha9"), "apiVersion"),
        ({"apiVersion": VOLCANO, "kind": "PodGroup", "metadata": {}}, "metadata.name"),
        (pg("nope"), "spec"),  # type: ignore[arg-type]
    ],
)
def test_podgroup_validation(obj: dict[str, Any], field: str) -> None:
    with pytest.raises(InputError) as info:
        PodGroup.from_dict(obj)
    assert info.value.field == field


def test_queue_defaults() -> None:
    q = Queue.from_dict(queue())
    assert (q.name, q.weight, q.reclaimable, q.state, q.open) == ("q", 1, True, "Open", True)
    assert q.capability == {} and q.deserved == {} and q.guarantee == {}


def test_queue_full() -> None:
    q = Queue.from_dict(
        queue(
            {
                "weight": 3,
                "capability": {"cpu": "10", "memory": "20Gi"},
                "deserved": {"cpu": "4"},
                "guarantee": {"resource": {"cpu": "1"}},
                "reclaimable": False,
                "parent": "root",
                "priority": 5,
            },
            status={"state": "Closed"},
        )
    )
    assert q.weight == 3
    assert q.capability == {"cpu": 10000, "memory": 20 * 1024**3}
    assert q.deserved == {"cpu": 4000}
    assert q.guarantee == {"cpu": 1000}
    assert (q.reclaimable, q.state, q.open, q.parent, q.priority) == (False, "Closed", False, "root", 5)


@pytest.mark.parametrize(
    ("spec", "status", "field"),
    [
        ({"weight": -1}, None, "spec.weight"),
        ({"weight": "heavy"}, None, "spec.weight"),
        ({"capability": {"cpu": "x"}}, None, "spec.capability.cpu"),
        ({"deserved": {"memory": "1Zz"}}, None, "spec.deserved.memory"),
        ({"guarantee": {"resource": {"cpu": []}}}, None, "spec.guarantee.resource.cpu"),
        ({"guarantee": 3}, None, "spec.guarantee"),
        ({"reclaimable": "yes"}, None, "spec.reclaimable"),
        ({"priority": 1.5}, None, "spec.priority"),
        ({}, {"state": "Half-open"}, "status.state"),
    ],
)
def test_queue_validation(spec: dict[str, Any], status: dict[str, Any] | None, field: str) -> None:
    obj = queue(spec) if status is None else queue(spec, status=status)
    with pytest.raises(InputError) as info:
        Queue.from_dict(obj)
    assert info.value.field == field


@pytest.mark.parametrize(
    ("meta", "expected"),
    [
        ({"annotations": {"scheduling.k8s.io/group-name": "train"}}, (SCHEDULING_VOLCANO, "train")),
        ({"labels": {"scheduling.x-k8s.io/pod-group": "pg1"}}, (SCHEDULING_X_K8S, "pg1")),
        (
            {
                "annotations": {"scheduling.k8s.io/group-name": "v"},
                "labels": {"scheduling.x-k8s.io/pod-group": "x"},
            },
            (SCHEDULING_VOLCANO, "v"),
        ),
        ({"annotations": {"scheduling.k8s.io/group-name": ""}}, None),
        ({"labels": {"scheduling.k8s.io/group-name": "label-not-annotation"}}, None),
        ({}, None),
        (None, None),
    ],
)
def test_group_name_of(meta: Any, expected: tuple[str, str] | None) -> None:
    assert group_name_of({"metadata": meta}) == expected


def test_manifests_load_batch_kinds(tmp_path: Any) -> None:
    path = tmp_path / "batch.yaml"
    path.write_text(
        f"""
apiVersion: {VOLCANO}
kind: Queue
metadata: {{name: research}}
spec: {{weight: 2}}
---
apiVersion: {VOLCANO}
kind: PodGroup
metadata: {{name: a, namespace: ml}}
spec: {{minMember: 2, queue: research}}
---
apiVersion: {X_K8S}
kind: PodGroup
metadata: {{name: b, namespace: ml}}
spec: {{minMember: 1}}
"""
    )
    result = load_manifests([str(path)])
    assert [o.kind for o in result.objects] == ["Queue", "PodGroup", "PodGroup"]
    assert result.warnings == []


def test_manifests_report_bad_podgroup(tmp_path: Any) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(
        f"apiVersion: {VOLCANO}\nkind: PodGroup\n"
        "metadata: {name: a, namespace: ml}\nspec: {minMember: -3}\n"
    )
    with pytest.raises(InputError) as info:
        load_manifests([str(path)])
    err = info.value
    assert (err.file, err.document, err.obj, err.field) == (str(path), 1, "PodGroup ml/a", "spec.minMember")


def test_manifests_reject_queue_in_wrong_api(tmp_path: Any) -> None:
    path = tmp_path / "q.yaml"
    path.write_text(f"apiVersion: {X_K8S}\nkind: Queue\nmetadata: {{name: q}}\n")
    with pytest.raises(InputError) as info:
        load_manifests([str(path)])
    assert info.value.field == "apiVersion"


def test_example_loads() -> None:
    result = load_manifests([str(EXAMPLES)])
    kinds = sorted({o.kind for o in result.objects})
    assert kinds == ["Node", "Pod", "PodGroup", "Queue"]
    groups = [PodGroup.from_dict(o.obj) for o in result.of_kind("PodGroup")]
    assert {(g.name, g.min_member, g.queue) for g in groups} == {
        ("train", 4, "research"),
        ("serve", 2, "prod"),
    }
    members = {group_name_of(o.obj) for o in result.of_kind("Pod")}
    assert members == {(SCHEDULING_VOLCANO, "train"), (SCHEDULING_VOLCANO, "serve")}
