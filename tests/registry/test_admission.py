"""The admission chain every created pod passes (serve, the simulator, the controllers): one test
per plugin, on what a user relies on, plus the kinds' defaults that serve applies."""

from __future__ import annotations

from typing import Any

import pytest

from kubesched.errors import InputError
from kubesched.registry.admission import admit, admitted, apply_defaults
from kubesched.store.memory import MemoryStore


def _pod(**spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "namespace": "team"},
        "spec": {"containers": [{"name": "c", "image": "x"}], **spec},
    }


def _priority_class(name: str, value: int, **fields: Any) -> dict[str, Any]:
    return {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": name},
        "value": value,
        **fields,
    }


def test_a_pod_without_a_scheduler_name_is_the_default_schedulers():
    store = MemoryStore()
    assert admitted(store, _pod())["spec"]["schedulerName"] == "default-scheduler"
    assert admitted(store, _pod(schedulerName="volcano"))["spec"]["schedulerName"] == "volcano"


def test_priority_comes_from_the_named_class_with_its_preemption_policy():
    store = MemoryStore()
    store.create(_priority_class("high", 1000, preemptionPolicy="Never"))
    spec = admitted(store, _pod(priorityClassName="high"))["spec"]
    assert (spec["priority"], spec["preemptionPolicy"]) == (1000, "Never")


def test_priority_falls_back_to_the_global_default_then_zero():
    store = MemoryStore()
    assert admitted(store, _pod())["spec"]["priority"] == 0
    store.create(_priority_class("normal", 7, globalDefault=True))
    assert admitted(store, _pod())["spec"]["priority"] == 7


def test_system_priority_classes_need_no_object_and_a_given_priority_is_kept():
    store = MemoryStore()
    assert admitted(store, _pod(priorityClassName="system-node-critical"))["spec"]["priority"] == 2000001000
    assert admitted(store, _pod(priorityClassName="missing", priority=3))["spec"]["priority"] == 3


def test_an_unknown_priority_class_is_refused_with_the_pod_and_the_field():
    with pytest.raises(InputError) as refused:
        admitted(MemoryStore(), _pod(priorityClassName="missing"))
    assert refused.value.message == "no PriorityClass with name 'missing' was found"
    assert refused.value.field == "spec.priorityClassName"
    assert refused.value.obj == "Pod team/p"


def test_a_new_pod_is_pending_unless_it_says_otherwise():
    store = MemoryStore()
    assert admitted(store, _pod())["status"] == {"phase": "Pending"}
    given = {**_pod(), "status": {"phase": "Running"}}
    assert admitted(store, given)["status"]["phase"] == "Running"


def test_admission_leaves_the_callers_spec_alone_and_other_kinds_untouched():
    pod = _pod()
    admit(MemoryStore(), pod)
    assert "schedulerName" in pod["spec"]
    original = _pod()
    admitted(MemoryStore(), original)
    assert "schedulerName" not in original["spec"] and "status" not in original
    node: dict[str, Any] = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n"}}
    assert admitted(MemoryStore(), node) == node


def test_kind_defaults_are_what_serve_stores():
    pod = _pod()
    apply_defaults(pod)
    assert {k: pod["spec"][k] for k in ("restartPolicy", "terminationGracePeriodSeconds", "dnsPolicy")} == {
        "restartPolicy": "Always",
        "terminationGracePeriodSeconds": 30,
        "dnsPolicy": "ClusterFirst",
    }
    namespace: dict[str, Any] = {"kind": "Namespace", "metadata": {"name": "team"}}
    apply_defaults(namespace)
    assert namespace["status"] == {"phase": "Active"} and namespace["spec"] == {"finalizers": ["kubernetes"]}
    queue: dict[str, Any] = {"kind": "Queue", "metadata": {"name": "q"}}
    apply_defaults(queue)
    assert (queue["spec"]["weight"], queue["status"]["state"]) == (1, "Open")
    node: dict[str, Any] = {"kind": "Node", "metadata": {"name": "n"}}
    apply_defaults(node)
    assert node["status"]["allocatable"]["cpu"] == "32"
    assert [c["type"] for c in node["status"]["conditions"]][-1] == "Ready"
