"""Upstream's validation tables for the workload API (``pkg/apis/scheduling/validation``:
TestValidateWorkload, TestValidateWorkloadUpdate, TestValidatePodGroup, TestValidatePodGroupUpdate,
TestValidatePodGroupStatusUpdate), case names verbatim. Metadata cases (name, namespace) are the
API server's for every kind and live with it; here the spec and status rules."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

from kubesched.api.scheduling_group_rules import (
    pod_group_errors,
    pod_group_status_errors,
    pod_group_update_errors,
    workload_errors,
    workload_update_errors,
)

Tweak = Callable[[dict[str, Any]], None]


def mk_workload(*tweaks: Tweak) -> dict[str, Any]:
    w: dict[str, Any] = {
        "metadata": {"name": "workload", "namespace": "ns"},
        "spec": {
            "controllerRef": {"apiGroup": "group", "kind": "foo", "name": "baz"},
            "podGroupTemplates": [
                {"name": "group1", "schedulingPolicy": {"basic": {}}},
                {"name": "group2", "schedulingPolicy": {"gang": {"minCount": 2}}},
            ],
        },
    }
    for tweak in tweaks:
        tweak(w)
    return w


def mk_pod_group(*tweaks: Tweak) -> dict[str, Any]:
    pg: dict[str, Any] = {
        "metadata": {"name": "workload", "namespace": "ns"},
        "spec": {
            "podGroupTemplateRef": {"workload": {"workloadName": "w", "podGroupTemplateName": "t1"}},
            "schedulingPolicy": {"gang": {"minCount": 5}},
        },
    }
    for tweak in tweaks:
        tweak(pg)
    return pg


def tpl(w: dict[str, Any], i: int) -> dict[str, Any]:
    return w["spec"]["podGroupTemplates"][i]  # type: ignore[no-any-return]


def ref(o: dict[str, Any]) -> dict[str, Any]:
    return o["spec"]["controllerRef"]  # type: ignore[no-any-return]


def wref(o: dict[str, Any]) -> dict[str, Any]:
    return o["spec"]["podGroupTemplateRef"]["workload"]  # type: ignore[no-any-return]


def _set(target: Callable[[dict[str, Any]], dict[str, Any]], key: str, value: Any) -> Tweak:
    def tweak(o: dict[str, Any]) -> None:
        target(o)[key] = value

    return tweak


def _spec(key: str, value: Any) -> Tweak:
    return _set(lambda o: o["spec"], key, value)


WORKLOAD_SUCCESS = {
    "basic and gang policies": mk_workload(),
    "no controllerRef": mk_workload(lambda w: w["spec"].pop("controllerRef")),
    "no controllerRef apiGroup": mk_workload(_set(ref, "apiGroup", "")),
}

_TOO_MANY = [{"name": f"group-{i}", "schedulingPolicy": {"basic": {}}} for i in range(9)]

# Each case: the workload and the (reason, field) of every error it gives.
WORKLOAD_FAILURE: dict[str, tuple[dict[str, Any], list[tuple[str, str]]]] = {
    "too long controllerRef apiGroup": (
        mk_workload(_set(ref, "apiGroup", "g" * 254)),
        [("FieldValueInvalid", "spec.controllerRef.apiGroup")],
    ),
    "no pod group name": (
        mk_workload(_set(lambda w: tpl(w, 0), "name", "")),
        [("FieldValueRequired", "spec.podGroupTemplates[0].name")],
    ),
    "two policies": (
        mk_workload(_set(lambda w: tpl(w, 0)["schedulingPolicy"], "gang", {"minCount": 2})),
        [("FieldValueInvalid", "spec.podGroupTemplates[0].schedulingPolicy")],
    ),
    "zero min count in gang": (
        mk_workload(_set(lambda w: tpl(w, 1)["schedulingPolicy"]["gang"], "minCount", 0)),
        [("FieldValueRequired", "spec.podGroupTemplates[1].schedulingPolicy.gang.minCount")],
    ),
    "negative min count in gang": (
        mk_workload(_set(lambda w: tpl(w, 1)["schedulingPolicy"]["gang"], "minCount", -1)),
        [("FieldValueInvalid", "spec.podGroupTemplates[1].schedulingPolicy.gang.minCount")],
    ),
    "two pod groups with the same name": (
        mk_workload(_set(lambda w: tpl(w, 1), "name", "group1")),
        [("FieldValueDuplicate", "spec.podGroupTemplates[1]")],
    ),
    "invalid controllerRef apiGroup": (
        mk_workload(_set(ref, "apiGroup", ".group")),
        [("FieldValueInvalid", "spec.controllerRef.apiGroup")],
    ),
    "no controllerRef kind": (
        mk_workload(_set(ref, "kind", "")),
        [("FieldValueRequired", "spec.controllerRef.kind")],
    ),
    "invalid controllerRef kind": (
        mk_workload(_set(ref, "kind", "/foo")),
        [("FieldValueInvalid", "spec.controllerRef.kind")],
    ),
    "no controllerRef name": (
        mk_workload(_set(ref, "name", "")),
        [("FieldValueRequired", "spec.controllerRef.name")],
    ),
    "invalid controllerRef name": (
        mk_workload(_set(ref, "name", "/baz")),
        [("FieldValueInvalid", "spec.controllerRef.name")],
    ),
    "no pod groups": (
        mk_workload(_spec("podGroupTemplates", None)),
        [("FieldValueRequired", "spec.podGroupTemplates")],
    ),
    "too many pod group templates": (
        mk_workload(_spec("podGroupTemplates", _TOO_MANY)),
        [("FieldValueTooMany", "spec.podGroupTemplates")],
    ),
    "duplicate pod group names": (
        mk_workload(_set(lambda w: tpl(w, 1), "name", "group1")),
        [("FieldValueDuplicate", "spec.podGroupTemplates[1]")],
    ),
    "no policy set": (
        mk_workload(_set(lambda w: tpl(w, 0), "schedulingPolicy", {})),
        [("FieldValueInvalid", "spec.podGroupTemplates[0].schedulingPolicy")],
    ),
    "multiple policies set": (
        mk_workload(_set(lambda w: tpl(w, 0)["schedulingPolicy"], "gang", {"minCount": 2})),
        [("FieldValueInvalid", "spec.podGroupTemplates[0].schedulingPolicy")],
    ),
    "negative minCount in gang": (
        mk_workload(_set(lambda w: tpl(w, 1)["schedulingPolicy"]["gang"], "minCount", -1)),
        [("FieldValueInvalid", "spec.podGroupTemplates[1].schedulingPolicy.gang.minCount")],
    ),
}


@pytest.mark.parametrize("name", list(WORKLOAD_SUCCESS))
def test_validate_workload_success(name: str) -> None:
    assert workload_errors(WORKLOAD_SUCCESS[name]) == []


@pytest.mark.parametrize("name", list(WORKLOAD_FAILURE))
def test_validate_workload_failure(name: str) -> None:
    workload, expected = WORKLOAD_FAILURE[name]
    assert [(reason, field) for reason, field, _ in workload_errors(workload)] == expected


def _update(tweak: Tweak) -> dict[str, Any]:
    return mk_workload(tweak)


WORKLOAD_UPDATE_SUCCESS = {
    "no change": (mk_workload(), mk_workload()),
    "set controller ref": (mk_workload(lambda w: w["spec"].pop("controllerRef")), mk_workload()),
}

WORKLOAD_UPDATE_FAILURE = {
    "change pod group name": _update(_set(lambda w: tpl(w, 0), "name", "group1bar")),
    "add pod group": _update(
        lambda w: w["spec"]["podGroupTemplates"].append({"name": "group3", "schedulingPolicy": {"basic": {}}})
    ),
    "delete pod group": _update(lambda w: w["spec"]["podGroupTemplates"].pop()),
    "change gang min count": _update(_set(lambda w: tpl(w, 1)["schedulingPolicy"]["gang"], "minCount", 5)),
    "change controllerRef": _update(_set(ref, "kind", "foobar")),
    "delete controllerRef": _update(lambda w: w["spec"].pop("controllerRef")),
}


@pytest.mark.parametrize("name", list(WORKLOAD_UPDATE_SUCCESS))
def test_validate_workload_update_success(name: str) -> None:
    old, new = WORKLOAD_UPDATE_SUCCESS[name]
    assert workload_update_errors(new, old) == []


@pytest.mark.parametrize("name", list(WORKLOAD_UPDATE_FAILURE))
def test_validate_workload_update_failure(name: str) -> None:
    errors = workload_update_errors(WORKLOAD_UPDATE_FAILURE[name], mk_workload())
    assert errors and all(message.endswith("field is immutable") for _, _, message in errors)


POD_GROUP_SUCCESS = {
    "gang policy": mk_pod_group(),
    "basic policy": mk_pod_group(_spec("schedulingPolicy", {"basic": {}})),
    "no template ref": mk_pod_group(lambda pg: pg["spec"].pop("podGroupTemplateRef")),
    "no scheduling constraints": mk_pod_group(lambda pg: pg["spec"].pop("schedulingConstraints", None)),
}

POD_GROUP_FAILURE: dict[str, tuple[dict[str, Any], list[tuple[str, str]]]] = {
    "zero min count in gang": (
        mk_pod_group(_set(lambda pg: pg["spec"]["schedulingPolicy"]["gang"], "minCount", 0)),
        [("FieldValueRequired", "spec.schedulingPolicy.gang.minCount")],
    ),
    "negative minCount in gang": (
        mk_pod_group(_set(lambda pg: pg["spec"]["schedulingPolicy"]["gang"], "minCount", -1)),
        [("FieldValueInvalid", "spec.schedulingPolicy.gang.minCount")],
    ),
    "multiple policies set": (
        mk_pod_group(_set(lambda pg: pg["spec"]["schedulingPolicy"], "basic", {})),
        [("FieldValueInvalid", "spec.schedulingPolicy")],
    ),
    "no policy set": (
        mk_pod_group(_spec("schedulingPolicy", {})),
        [("FieldValueInvalid", "spec.schedulingPolicy")],
    ),
    "too long podGroupTemplateRef workload name": (
        mk_pod_group(_set(wref, "workloadName", "g" * 254)),
        [("FieldValueInvalid", "spec.podGroupTemplateRef.workload.workloadName")],
    ),
    "invalid podGroupTemplateRef workload name": (
        mk_pod_group(_set(wref, "workloadName", ".workload")),
        [("FieldValueInvalid", "spec.podGroupTemplateRef.workload.workloadName")],
    ),
    "no podGroupTemplateRef workload name": (
        mk_pod_group(_set(wref, "workloadName", "")),
        [("FieldValueRequired", "spec.podGroupTemplateRef.workload.workloadName")],
    ),
    "too long podGroupTemplateRef kind": (
        mk_pod_group(_set(wref, "podGroupTemplateName", "g" * 254)),
        [("FieldValueInvalid", "spec.podGroupTemplateRef.workload.podGroupTemplateName")],
    ),
    "no podGroupTemplateRef name": (
        mk_pod_group(_set(wref, "podGroupTemplateName", "")),
        [("FieldValueRequired", "spec.podGroupTemplateRef.workload.podGroupTemplateName")],
    ),
    "invalid podGroupTemplateRef name": (
        mk_pod_group(_set(wref, "podGroupTemplateName", "/baz")),
        [("FieldValueInvalid", "spec.podGroupTemplateRef.workload.podGroupTemplateName")],
    ),
}


@pytest.mark.parametrize("name", list(POD_GROUP_SUCCESS))
def test_validate_pod_group_success(name: str) -> None:
    assert pod_group_errors(POD_GROUP_SUCCESS[name]) == []


@pytest.mark.parametrize("name", list(POD_GROUP_FAILURE))
def test_validate_pod_group_failure(name: str) -> None:
    group, expected = POD_GROUP_FAILURE[name]
    assert [(reason, field) for reason, field, _ in pod_group_errors(group)] == expected


_CONDITION = {
    "type": "PodGroupScheduled",
    "status": "False",
    "reason": "Unschedulable",
    "message": "Test status condition message",
    "lastTransitionTime": "2026-01-01T00:00:00Z",
}

POD_GROUP_UPDATE_SUCCESS = {
    "no change": (mk_pod_group(), mk_pod_group()),
    "status update": (
        mk_pod_group(lambda pg: pg.setdefault("status", {"conditions": [_CONDITION]})),
        mk_pod_group(),
    ),
}

POD_GROUP_UPDATE_FAILURE = {
    "change podGroup template ref name": mk_pod_group(_set(wref, "podGroupTemplateName", "new-template")),
    "change podGroup template ref workload name": mk_pod_group(_set(wref, "workloadName", "new-workload")),
    "delete podGroup template ref": mk_pod_group(lambda pg: pg["spec"].pop("podGroupTemplateRef")),
    "change gang min count": mk_pod_group(
        _set(lambda pg: pg["spec"]["schedulingPolicy"]["gang"], "minCount", 10)
    ),
    "change scheduling policy": mk_pod_group(_spec("schedulingPolicy", {"basic": {}})),
    "multiple scheduling policies": mk_pod_group(
        _set(lambda pg: pg["spec"]["schedulingPolicy"], "basic", {})
    ),
}


@pytest.mark.parametrize("name", list(POD_GROUP_UPDATE_SUCCESS))
def test_validate_pod_group_update_success(name: str) -> None:
    old, new = POD_GROUP_UPDATE_SUCCESS[name]
    assert pod_group_update_errors(new, old) == []


@pytest.mark.parametrize("name", list(POD_GROUP_UPDATE_FAILURE))
def test_validate_pod_group_update_failure(name: str) -> None:
    assert pod_group_update_errors(POD_GROUP_UPDATE_FAILURE[name], mk_pod_group())


def _with_conditions(*conditions: dict[str, Any]) -> dict[str, Any]:
    return mk_pod_group(lambda pg: pg.__setitem__("status", {"conditions": copy.deepcopy(list(conditions))}))


POD_GROUP_STATUS_SUCCESS = {
    "no change": mk_pod_group(),
    "status update": _with_conditions(_CONDITION),
}

POD_GROUP_STATUS_FAILURE = {
    "two conditions with the same type": (
        _with_conditions(_CONDITION, _CONDITION),
        "status.conditions[1].type",
    ),
    "unrecognized condition status": (
        _with_conditions({**_CONDITION, "status": "TrueOrFalse"}),
        "status.conditions[0].status",
    ),
    "empty condition reason": (
        _with_conditions({k: v for k, v in _CONDITION.items() if k != "reason"}),
        "status.conditions[0].reason",
    ),
    "improper condition reason format": (
        _with_conditions({**_CONDITION, "reason": "Sche duled"}),
        "status.conditions[0].reason",
    ),
    "too long condition reason": (
        _with_conditions({**_CONDITION, "reason": "a" * 1025}),
        "status.conditions[0].reason",
    ),
    "too long condition message": (
        _with_conditions({**_CONDITION, "message": "a" * (32 * 1024 + 1)}),
        "status.conditions[0].message",
    ),
    "non-existent resource claim in status": (
        mk_pod_group(
            lambda pg: pg.__setitem__(
                "status",
                {"resourceClaimStatuses": [{"name": "no-such-claim", "resourceClaimName": "my-claim"}]},
            )
        ),
        "status.resourceClaimStatuses[0].name",
    ),
}


@pytest.mark.parametrize("name", list(POD_GROUP_STATUS_SUCCESS))
def test_validate_pod_group_status_update_success(name: str) -> None:
    assert pod_group_status_errors(POD_GROUP_STATUS_SUCCESS[name]) == []


@pytest.mark.parametrize("name", list(POD_GROUP_STATUS_FAILURE))
def test_validate_pod_group_status_update_failure(name: str) -> None:
    group, field = POD_GROUP_STATUS_FAILURE[name]
    assert field in [f for _, f, _ in pod_group_status_errors(group)]


# Beyond upstream's tables: the declarative rules of the v1alpha2 tags (topology, disruption mode,
# priority, claims), which upstream tests in pkg/registry/scheduling/*/declarative_validation_test.go.
@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ({"schedulingConstraints": {"topology": [{"key": "topology.kubernetes.io/rack"}]}}, []),
        (
            {"schedulingConstraints": {"topology": [{"key": "a"}, {"key": "b"}]}},
            [("FieldValueTooMany", "spec.schedulingConstraints.topology")],
        ),
        (
            {"schedulingConstraints": {"topology": [{}]}},
            [("FieldValueRequired", "spec.schedulingConstraints.topology[0].key")],
        ),
        (
            {"schedulingConstraints": {"topology": [{"key": "a/b/c"}]}},
            [("FieldValueInvalid", "spec.schedulingConstraints.topology[0].key")],
        ),
        ({"disruptionMode": "PodGroup", "priorityClassName": "high", "priority": 1000}, []),
        ({"disruptionMode": "Gang"}, [("FieldValueNotSupported", "spec.disruptionMode")]),
        ({"priority": 1_000_000_001}, [("FieldValueInvalid", "spec.priority")]),
        ({"priorityClassName": "High"}, [("FieldValueInvalid", "spec.priorityClassName")]),
        ({"resourceClaims": [{"name": "gpus", "resourceClaimTemplateName": "gpu"}]}, []),
        (
            {
                "resourceClaims": [
                    {"name": "gpus", "resourceClaimName": "a", "resourceClaimTemplateName": "b"}
                ]
            },
            [("FieldValueInvalid", "spec.resourceClaims[0]")],
        ),
        (
            {"resourceClaims": [{"name": f"c{i}", "resourceClaimName": "a"} for i in range(5)]},
            [("FieldValueTooMany", "spec.resourceClaims")],
        ),
    ],
)
def test_declarative_rules_of_the_gated_fields(spec: dict[str, Any], expected: list[tuple[str, str]]) -> None:
    group = mk_pod_group(lambda pg: pg["spec"].update(spec))
    assert [(reason, field) for reason, field, _ in pod_group_errors(group)] == expected
