"""The scheduling.k8s.io Workload and PodGroup views, the pod's scheduling group and the store kind
that keeps the two PodGroup APIs apart."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kubesched.api.kinds import object_store_kind, store_kind, wire_kind
from kubesched.api.objects import Pod
from kubesched.api.scheduling_groups import (
    POD_GROUP_STORE_KIND,
    SchedulingPodGroup,
    SchedulingPolicy,
    Workload,
    with_condition,
)
from kubesched.errors import InputError
from kubesched.store.memory import MemoryStore
from kubesched.store.parsers import informer_factory
from kubesched.store.ports import StorePorts


def pod_group(name: str = "pg", **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "scheduling.k8s.io/v1alpha2",
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": "ml"},
        "spec": {"schedulingPolicy": {"gang": {"minCount": 4}}, **spec},
    }


def volcano_group(name: str = "pg") -> dict[str, Any]:
    return {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": "ml"},
        "spec": {"minMember": 2},
    }


def test_store_kind_keeps_the_two_pod_groups_apart() -> None:
    assert store_kind("scheduling.k8s.io/v1alpha2", "PodGroup") == POD_GROUP_STORE_KIND
    assert store_kind("scheduling.volcano.sh/v1beta1", "PodGroup") == "PodGroup"
    assert store_kind("scheduling.x-k8s.io/v1alpha1", "PodGroup") == "PodGroup"
    assert store_kind("v1", "Pod") == "Pod"
    assert store_kind("scheduling.k8s.io/v1", "PriorityClass") == "PriorityClass"
    assert object_store_kind(pod_group()) == POD_GROUP_STORE_KIND
    assert wire_kind(POD_GROUP_STORE_KIND) == "PodGroup"
    assert wire_kind("PodGroup") == "PodGroup"


def test_both_pod_groups_of_one_name_live_side_by_side_in_the_store() -> None:
    store = MemoryStore()
    informers = informer_factory(store)
    k8s = informers.informer(POD_GROUP_STORE_KIND)
    volcano = informers.informer("PodGroup")
    store.create(pod_group())
    store.create(volcano_group())
    informers.pump()
    assert [g.policy.gang_min_count for g in k8s.list()] == [4]
    assert [g.min_member for g in volcano.list()] == [2]
    store.delete(POD_GROUP_STORE_KIND, "ml", "pg")
    informers.pump()
    assert k8s.list() == []
    assert len(volcano.list()) == 1


def test_pod_group_view() -> None:
    group = SchedulingPodGroup.from_dict(
        pod_group(
            podGroupTemplateRef={"workload": {"workloadName": "job", "podGroupTemplateName": "workers"}},
            schedulingConstraints={"topology": [{"key": "topology.kubernetes.io/rack"}]},
            disruptionMode="PodGroup",
            priorityClassName="high",
            priority=1000,
        )
        | {
            "status": {
                "conditions": [{"type": "PodGroupScheduled", "status": "False", "reason": "Unschedulable"}]
            }
        }
    )
    assert group.template_ref == ("job", "workers")
    assert group.policy == SchedulingPolicy(4) and group.policy.is_gang
    assert group.topology_keys == ("topology.kubernetes.io/rack",)
    assert (group.disruption_mode, group.priority_class_name, group.priority) == ("PodGroup", "high", 1000)
    cond = group.condition("PodGroupScheduled")
    assert cond is not None and cond.reason == "Unschedulable"
    basic = SchedulingPodGroup.from_dict(pod_group(schedulingPolicy={"basic": {}}))
    assert basic.policy.gang_min_count is None and not basic.policy.is_gang


def test_workload_view() -> None:
    workload = Workload.from_dict(
        {
            "apiVersion": "scheduling.k8s.io/v1alpha2",
            "kind": "Workload",
            "metadata": {"name": "job", "namespace": "ml"},
            "spec": {
                "controllerRef": {"apiGroup": "batch", "kind": "Job", "name": "job"},
                "podGroupTemplates": [
                    {"name": "workers", "schedulingPolicy": {"gang": {"minCount": 8}}},
                    {"name": "driver", "schedulingPolicy": {"basic": {}}},
                ],
            },
        }
    )
    assert workload.controller_ref is not None and workload.controller_ref.kind == "Job"
    assert [t.name for t in workload.pod_group_templates] == ["workers", "driver"]
    tpl = workload.template("workers")
    assert tpl is not None and tpl.policy.gang_min_count == 8
    assert workload.template("missing") is None


def test_a_field_of_the_wrong_type_is_located() -> None:
    with pytest.raises(InputError) as err:
        SchedulingPodGroup.from_dict(pod_group(schedulingPolicy={"gang": {"minCount": "many"}}))
    assert err.value.field == "spec.schedulingPolicy.gang.minCount"


def test_pod_scheduling_group() -> None:
    spec: dict[str, Any] = {"containers": [{"name": "c"}]}
    assert Pod.from_dict({"metadata": {"name": "a"}, "spec": spec}).scheduling_group is None
    spec["schedulingGroup"] = {"podGroupName": "workers-0"}
    assert Pod.from_dict({"metadata": {"name": "a"}, "spec": spec}).scheduling_group == "workers-0"
    spec["schedulingGroup"] = {"podGroupName": 3}
    with pytest.raises(InputError) as err:
        Pod.from_dict({"metadata": {"name": "a"}, "spec": spec})
    assert err.value.field == "spec.schedulingGroup.podGroupName"


def test_store_ports_set_the_pod_group_condition_as_set_status_condition() -> None:
    clock = [1_700_000_000.0]
    store = MemoryStore(now=lambda: clock[0])
    ports = StorePorts(store).ports()
    writer = ports.pod_group_conditions
    assert writer is not None
    store.create(pod_group())
    store.create(volcano_group())
    unschedulable = {
        "type": "PodGroupScheduled",
        "status": "False",
        "reason": "Unschedulable",
        "message": "m",
    }
    first = writer.set_pod_group_condition("ml", "pg", unschedulable)
    assert first is not None
    [cond] = first["status"]["conditions"]
    assert cond["lastTransitionTime"] == "2023-11-14T22:13:20Z"
    clock[0] += 60
    # The same status again: no write; a new message: written, the transition time kept.
    assert writer.set_pod_group_condition("ml", "pg", unschedulable) is first
    again = writer.set_pod_group_condition("ml", "pg", {**unschedulable, "message": "n"})
    assert (
        again is not None
        and again["status"]["conditions"][0]["lastTransitionTime"] == cond["lastTransitionTime"]
    )
    scheduled = writer.set_pod_group_condition(
        "ml", "pg", {"type": "PodGroupScheduled", "status": "True", "reason": "Scheduled"}
    )
    assert scheduled is not None
    [cond] = scheduled["status"]["conditions"]
    assert (cond["status"], cond["reason"], cond["lastTransitionTime"]) == (
        "True",
        "Scheduled",
        "2023-11-14T22:14:20Z",
    )
    assert "message" not in cond
    # Volcano's PodGroup of the same name is untouched, a missing group is None.
    assert "status" not in (store.get("PodGroup", "ml", "pg") or {})
    assert writer.set_pod_group_condition("ml", "gone", unschedulable) is None


_CONDITIONS = st.fixed_dictionaries(
    {
        "type": st.sampled_from(["PodGroupScheduled", "DisruptionTarget"]),
        "status": st.sampled_from(["True", "False", "Unknown"]),
        "reason": st.sampled_from(["Scheduled", "Unschedulable", "SchedulerError"]),
        "message": st.text(max_size=5),
    }
)


@given(writes=st.lists(_CONDITIONS, max_size=8))
def test_setting_conditions_keeps_one_per_type_and_moves_the_time_only_on_a_status_change(
    writes: list[dict[str, Any]],
) -> None:
    conditions: list[dict[str, Any]] = []
    for step, condition in enumerate(writes):
        stamp = f"2026-01-01T00:00:{step:02d}Z"
        before = {c["type"]: c for c in conditions}
        result = with_condition(conditions, condition, stamp)
        if result is None:
            old = before[condition["type"]]
            assert all(old.get(k) == condition.get(k) for k in ("status", "reason", "message"))
            continue
        assert len({c["type"] for c in result}) == len(result)
        [new] = [c for c in result if c["type"] == condition["type"]]
        old = before.get(condition["type"])
        moved = old is None or old["status"] != condition["status"]
        assert new["lastTransitionTime"] == (stamp if moved else old["lastTransitionTime"])
        assert with_condition(result, condition, "later") is None  # setting it again changes nothing
        conditions = result
