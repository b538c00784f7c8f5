"""A kind's strategy: validation (its own rules, then the schedulers' parser), update rules, and the
one table every served kind is in."""

from __future__ import annotations

from typing import Any

import pytest

from kubesched.registry.apps.deployment import STRATEGY as DEPLOYMENTS
from kubesched.registry.apps.replicaset import STRATEGY as REPLICASETS
from kubesched.registry.core.namespace import STRATEGY as NAMESPACES
from kubesched.registry.core.pod import STRATEGY as PODS
from kubesched.registry.errors import ApiError
from kubesched.registry.table import BY_KIND, NAMESPACED_KINDS, STRATEGIES


def _deployment(**spec: Any) -> dict[str, Any]:
    spec.setdefault("selector", {"matchLabels": {"app": "web"}})
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"}, "spec": spec}


def _template(cpu: str = "100m", labels: dict[str, str] | None = None) -> dict[str, Any]:
    return {
        "metadata": {"labels": {"app": "web"} if labels is None else labels},
        "spec": {"containers": [{"name": "c", "image": "x", "resources": {"requests": {"cpu": cpu}}}]},
    }


def test_a_deployment_needs_a_template_and_non_negative_replicas():
    DEPLOYMENTS.validate(_deployment(replicas=2, template=_template()))
    with pytest.raises(ApiError) as missing:
        DEPLOYMENTS.validate(_deployment(replicas=2))
    assert missing.value.code == 422
    assert missing.value.status()["details"]["causes"][0]["field"] == "spec.template"
    with pytest.raises(ApiError) as negative:
        DEPLOYMENTS.validate(_deployment(replicas=-1, template=_template()))
    assert negative.value.status()["details"]["causes"][0]["field"] == "spec.replicas"


# Each message as kube-apiserver v1.20.2 answered the same body.
SELECTOR_CASES = [
    pytest.param(
        {"selector": {"matchLabels": {"app": "web"}}, "template": _template(labels={"app": "other"})},
        'Deployment.apps "web" is invalid: spec.template.metadata.labels: Invalid value: '
        'map[string]string{"app":"other"}: `selector` does not match template `labels`',
        id="selector does not match the template",
    ),
    pytest.param(
        {"selector": None, "template": _template(labels={"app": "other"})},
        'Deployment.apps "web" is invalid: [spec.selector: Required value, spec.template.metadata.labels: '
        'Invalid value: map[string]string{"app":"other"}: `selector` does not match template `labels`]',
        id="no selector",
    ),
    pytest.param(
        {"selector": {}, "template": _template(labels={"app": "other"})},
        'Deployment.apps "web" is invalid: spec.selector: Invalid value: v1.LabelSelector{MatchLabels:'
        "map[string]string(nil), MatchExpressions:[]v1.LabelSelectorRequirement(nil)}: "
        "empty selector is invalid for deployment",
        id="empty selector",
    ),
]


@pytest.mark.parametrize("spec,message", SELECTOR_CASES)
def test_a_deployments_selector_must_select_its_template(spec: dict[str, Any], message: str) -> None:
    body = _deployment(**spec)
    if body["spec"]["selector"] is None:
        del body["spec"]["selector"]
    with pytest.raises(ApiError) as refused:
        DEPLOYMENTS.validate(body)
    assert refused.value.code == 422 and refused.value.message == message


def test_a_replicasets_selector_must_select_its_template() -> None:
    body = {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {"name": "rs"},
        "spec": {"selector": {"matchLabels": {}}, "template": _template(labels={})},
    }
    with pytest.raises(ApiError) as empty:
        REPLICASETS.validate(body)
    assert empty.value.message == (
        'ReplicaSet.apps "rs" is invalid: spec.selector: Invalid value: v1.LabelSelector{MatchLabels:'
        "map[string]string{}, MatchExpressions:[]v1.LabelSelectorRequirement(nil)}: "
        "empty selector is invalid for deployment"
    )
    body["spec"]["selector"] = {
        "matchLabels": {"a": "b"},
        "matchExpressions": [{"key": "x", "operator": "In", "values": ["y"]}],
    }
    body["spec"]["template"] = _template(labels={"a": "b"})
    with pytest.raises(ApiError) as unmatched:
        REPLICASETS.validate(body)
    assert unmatched.value.message == (
        'ReplicaSet.apps "rs" is invalid: spec.template.metadata.labels: Invalid value: '
        'map[string]string{"a":"b"}: `selector` does not match template `labels`'
    )
    body["spec"]["template"] = _template(labels={"a": "b", "x": "y"})
    REPLICASETS.validate(body)


def test_a_quantity_that_does_not_parse_is_a_bad_request():
    with pytest.raises(ApiError) as refused:
        DEPLOYMENTS.validate(_deployment(template=_template(cpu="lots")))
    assert refused.value.code == 400 and "quantities must match" in refused.value.message


def test_namespaces_are_dns_labels_and_other_names_dns_subdomains():
    assert PODS.name_valid("web.v1") and not NAMESPACES.name_valid("web.v1")
    assert not PODS.name_valid("Web")


def test_a_bound_pod_keeps_its_node_and_what_admission_set():
    old = {
        "kind": "Pod",
        "metadata": {"name": "p", "uid": "u", "creationTimestamp": "t"},
        "spec": {"nodeName": "n1", "priority": 5, "containers": []},
        "status": {"phase": "Running"},
    }
    new: dict[str, Any] = {"kind": "Pod", "metadata": {"name": "p"}, "spec": {"containers": []}}
    PODS.prepare_for_update(old, new)
    assert new["spec"]["nodeName"] == "n1" and new["spec"]["priority"] == 5
    assert new["status"] == {"phase": "Running"} and new["metadata"]["uid"] == "u"
    moved: dict[str, Any] = {"kind": "Pod", "metadata": {"name": "p"}, "spec": {"nodeName": "n2"}}
    with pytest.raises(ApiError) as refused:
        PODS.prepare_for_update(old, moved)
    assert refused.value.status()["details"]["causes"][0]["field"] == "spec.nodeName"


def test_a_spec_change_bumps_the_generation_of_generation_kinds():
    old = {"metadata": {"name": "web", "generation": 3}, "spec": {"replicas": 1}}
    new: dict[str, Any] = {"metadata": {"name": "web"}, "spec": {"replicas": 2}}
    DEPLOYMENTS.prepare_for_update(old, new)
    assert new["metadata"]["generation"] == 4


def test_every_kind_is_served_once_by_default():
    # Keyed by store kind: Volcano's PodGroup and scheduling.k8s.io's are two kinds of the store.
    assert len(BY_KIND) == len({s.store_kind for s in STRATEGIES})
    assert "Pod" in NAMESPACED_KINDS and "Node" not in NAMESPACED_KINDS
    assert BY_KIND["PodGroup"].resource.group == "scheduling.volcano.sh"
    assert BY_KIND["PodGroup.scheduling.k8s.io"].resource.group == "scheduling.k8s.io"
