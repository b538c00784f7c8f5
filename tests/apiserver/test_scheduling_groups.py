"""The workload API of scheduling.k8s.io in ``serve``: Workloads and PodGroups served only while
GenericWorkload is on, beside Volcano's PodGroups of the same name, validated as upstream, the
PodGroup's status through its subresource, and kubectl on both PodGroup kinds."""

from __future__ import annotations

import json
from typing import Any

import pytest
import yaml
from tests.apiserver.kubectls import KUBECTLS, kubectl_runner, ok

from kubesched.api.features import DEFAULT_FEATURE_GATES
from kubesched.apiserver.manifests import load_start_manifests
from kubesched.cli import main
from kubesched.cli.options import EXIT_BAD_INPUT

GATES = {"GenericWorkload": True}
V1A2 = "/apis/scheduling.k8s.io/v1alpha2"
VOLCANO = "/apis/scheduling.volcano.sh/v1beta1"


def k8s_group(name: str = "workers", min_count: int = 4, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "scheduling.k8s.io/v1alpha2",
        "kind": "PodGroup",
        "metadata": {"name": name},
        "spec": {"schedulingPolicy": {"gang": {"minCount": min_count}}, **spec},
    }


def volcano_group(name: str = "workers") -> dict[str, Any]:
    return {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": name},
        "spec": {"minMember": 2},
    }


def workload(name: str = "train") -> dict[str, Any]:
    return {
        "apiVersion": "scheduling.k8s.io/v1alpha2",
        "kind": "Workload",
        "metadata": {"name": name},
        "spec": {
            "controllerRef": {"apiGroup": "batch", "kind": "Job", "name": name},
            "podGroupTemplates": [{"name": "workers", "schedulingPolicy": {"gang": {"minCount": 4}}}],
        },
    }


@pytest.fixture
def gated(make_cluster: Any) -> Any:
    return make_cluster(nodes=2, feature_gates=GATES)


def test_the_group_version_is_served_only_while_generic_workload_is_on(make_cluster):
    off = make_cluster(nodes=0)
    code, _, _ = off.request("GET", f"{V1A2}/namespaces/default/podgroups")
    assert code == 404
    _, group, _ = off.request("GET", "/apis/scheduling.k8s.io")
    assert [v["version"] for v in group["versions"]] == ["v1"]
    # The pod's field is dropped with it, as dropDisabledPodFields does.
    pod = {"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "i"}]}}
    pod["spec"]["schedulingGroup"] = {"podGroupName": "workers"}
    code, created, _ = off.request("POST", "/api/v1/namespaces/default/pods", pod)
    assert code == 201 and "schedulingGroup" not in created["spec"]
    off.stop()
    on = make_cluster(nodes=0, feature_gates=GATES, data_dir=off.options.data_dir.parent / "on")
    _, group, _ = on.request("GET", "/apis/scheduling.k8s.io")
    assert [v["version"] for v in group["versions"]] == ["v1", "v1alpha2"]
    _, resources, _ = on.request("GET", V1A2)
    names = {r["name"]: r["kind"] for r in resources["resources"]}
    assert names == {"workloads": "Workload", "podgroups": "PodGroup", "podgroups/status": "PodGroup"}


def test_both_pod_groups_of_one_name_live_side_by_side(gated):
    ns = "namespaces/default"
    assert gated.request("POST", f"{V1A2}/{ns}/podgroups", k8s_group())[0] == 201
    assert gated.request("POST", f"{VOLCANO}/{ns}/podgroups", volcano_group())[0] == 201
    _, k8s, _ = gated.request("GET", f"{V1A2}/{ns}/podgroups")
    _, volcano, _ = gated.request("GET", f"{VOLCANO}/{ns}/podgroups")
    assert [i["apiVersion"] for i in k8s["items"]] == ["scheduling.k8s.io/v1alpha2"]
    assert [i["apiVersion"] for i in volcano["items"]] == ["scheduling.volcano.sh/v1beta1"]
    assert gated.store.get("PodGroup.scheduling.k8s.io", "default", "workers")["spec"]["schedulingPolicy"]
    # A watch of one resource sees its own kind's events only.
    resp = gated.stream(f"{V1A2}/{ns}/podgroups?watch=1&resourceVersion={k8s['metadata']['resourceVersion']}")
    assert gated.request("DELETE", f"{VOLCANO}/{ns}/podgroups/workers")[0] == 200
    assert gated.request("DELETE", f"{V1A2}/{ns}/podgroups/workers")[0] == 200
    event = json.loads(resp.readline())
    resp.close()
    assert (event["type"], event["object"]["apiVersion"]) == ("DELETED", "scheduling.k8s.io/v1alpha2")
    assert gated.store.get("PodGroup", "default", "workers") is None
    assert gated.store.get("PodGroup.scheduling.k8s.io", "default", "workers") is None


def test_a_namespace_takes_both_kinds_with_it(gated):
    gated.request("POST", "/api/v1/namespaces", {"metadata": {"name": "ml"}})
    gated.request("POST", f"{V1A2}/namespaces/ml/podgroups", k8s_group())
    gated.request("POST", f"{V1A2}/namespaces/ml/workloads", workload())
    gated.request("POST", f"{VOLCANO}/namespaces/ml/podgroups", volcano_group())
    assert gated.request("DELETE", "/api/v1/namespaces/ml")[0] == 200
    for kind in ("PodGroup", "PodGroup.scheduling.k8s.io", "Workload"):
        assert gated.store.list(kind) == []


def test_every_broken_field_is_named_in_one_422(gated):
    body = k8s_group(
        podGroupTemplateRef={"workload": {"workloadName": ".w", "podGroupTemplateName": ""}},
        schedulingPolicy={"basic": {}, "gang": {"minCount": 2}},
    )
    code, status, _ = gated.request("POST", f"{V1A2}/namespaces/default/podgroups", body)
    assert code == 422 and status["reason"] == "Invalid"
    fields = [c["field"] for c in status["details"]["causes"]]
    assert fields == [
        "spec.podGroupTemplateRef.workload.workloadName",
        "spec.podGroupTemplateRef.workload.podGroupTemplateName",
        "spec.schedulingPolicy",
    ]
    code, status, _ = gated.request(
        "POST", f"{V1A2}/namespaces/default/workloads", {**workload(), "spec": {"podGroupTemplates": []}}
    )
    assert code == 422
    assert status["details"]["causes"][0] == {
        "reason": "FieldValueRequired",
        "message": "Required value: must have at least one item",
        "field": "spec.podGroupTemplates",
    }


def test_the_spec_is_immutable_and_the_status_its_own(gated):
    path = f"{V1A2}/namespaces/default/podgroups/workers"
    _, created, _ = gated.request("POST", f"{V1A2}/namespaces/default/podgroups", k8s_group())
    changed = {**created, "spec": {"schedulingPolicy": {"gang": {"minCount": 5}}}}
    code, status, _ = gated.request("PUT", path, changed)
    assert code == 422
    assert status["details"]["causes"][0]["field"] == "spec.schedulingPolicy"
    assert "field is immutable" in status["details"]["causes"][0]["message"]
    condition = {
        "type": "PodGroupScheduled",
        "status": "False",
        "reason": "Unschedulable",
        "message": "0/2 nodes are available",
        "lastTransitionTime": "2026-01-01T00:00:00Z",
    }
    code, status, _ = gated.request(
        "PUT", f"{path}/status", {**created, "status": {"conditions": [{**condition, "reason": "Not ok"}]}}
    )
    assert code == 422 and status["details"]["causes"][0]["field"] == "status.conditions[0].reason"
    code, updated, _ = gated.request(
        "PUT",
        f"{path}/status",
        {**created, "spec": {"schedulingPolicy": {"basic": {}}}, "status": {"conditions": [condition]}},
    )
    assert code == 200
    assert updated["status"]["conditions"] == [condition]
    assert updated["spec"]["schedulingPolicy"] == {"gang": {"minCount": 4}}  # the status write keeps it


def test_gated_fields_are_dropped_while_their_gate_is_off(gated):
    body = k8s_group(
        schedulingConstraints={"topology": [{"key": "topology.kubernetes.io/rack"}]},
        disruptionMode="PodGroup",
        priority=10,
    )
    _, created, _ = gated.request("POST", f"{V1A2}/namespaces/default/podgroups", body)
    assert set(created["spec"]) == {"schedulingPolicy"}


def test_topology_and_preemption_fields_with_their_gates_on(make_cluster):
    c = make_cluster(
        nodes=0,
        feature_gates={
            **GATES,
            "GangScheduling": True,
            "TopologyAwareWorkloadScheduling": True,
            "WorkloadAwarePreemption": True,
        },
    )
    body = k8s_group(schedulingConstraints={"topology": [{"key": "topology.kubernetes.io/rack"}]})
    code, created, _ = c.request("POST", f"{V1A2}/namespaces/default/podgroups", body)
    assert code == 201
    assert created["spec"]["schedulingConstraints"] == body["spec"]["schedulingConstraints"]
    assert created["spec"]["disruptionMode"] == "Pod"  # +default="Pod"
    body = k8s_group(
        "two-keys",
        schedulingConstraints={"topology": [{"key": "a"}, {"key": "b"}]},
        disruptionMode="Gang",
        priority=2_000_000_000,
    )
    code, status, _ = c.request("POST", f"{V1A2}/namespaces/default/podgroups", body)
    assert code == 422
    assert [c["reason"] for c in status["details"]["causes"]] == [
        "FieldValueTooMany",
        "FieldValueNotSupported",
        "FieldValueInvalid",
    ]


def test_a_pod_names_its_group_once(gated):
    pod = {
        "metadata": {"name": "p"},
        "spec": {"containers": [{"name": "c", "image": "i"}], "schedulingGroup": {"podGroupName": "w-0"}},
    }
    code, created, _ = gated.request("POST", "/api/v1/namespaces/default/pods", pod)
    assert code == 201 and created["spec"]["schedulingGroup"] == {"podGroupName": "w-0"}
    meta = {k: v for k, v in created["metadata"].items() if k != "resourceVersion"}
    spec = {**created["spec"], "schedulingGroup": {"podGroupName": "w-1"}}
    moved = {**created, "metadata": meta, "spec": spec}
    code, status, _ = gated.request("PUT", "/api/v1/namespaces/default/pods/p", moved)
    assert code == 422 and status["details"]["causes"][0]["field"] == "spec.schedulingGroup"
    spec = {**pod["spec"], "schedulingGroup": {"podGroupName": "W_0"}}
    bad = {**pod, "metadata": {"name": "q"}, "spec": spec}
    code, status, _ = gated.request("POST", "/api/v1/namespaces/default/pods", bad)
    assert code == 422 and status["details"]["causes"][0]["field"] == "spec.schedulingGroup.podGroupName"


@pytest.mark.parametrize("binary", KUBECTLS[:1])
def test_kubectl_creates_lists_and_describes_both_kinds(gated, binary, tmp_path):
    kubectl = kubectl_runner(binary, gated.kubeconfig)
    manifest = tmp_path / "groups.yaml"
    manifest.write_text(yaml.safe_dump_all([k8s_group(), volcano_group(), workload()]), encoding="utf-8")
    ok(kubectl("create", "-f", str(manifest)))
    out = ok(kubectl("get", "podgroups.scheduling.k8s.io"))
    assert out.split("\n")[0].split() == ["NAME", "AGE"] and "workers" in out
    out = ok(kubectl("get", "podgroups.scheduling.volcano.sh"))
    assert out.split("\n")[0].split()[:3] == ["NAME", "STATUS", "MINMEMBER"]
    out = ok(kubectl("get", "workloads", "-o", "jsonpath={.items[*].spec.podGroupTemplates[0].name}"))
    assert out == "workers"
    out = ok(kubectl("describe", "podgroups.scheduling.k8s.io", "workers"))
    assert "Min Count:  4" in out and "scheduling.k8s.io/v1alpha2" in out
    out = ok(kubectl("describe", "workload", "train"))
    assert "Pod Group Templates:" in out
    out = ok(kubectl("describe", "podgroups.scheduling.volcano.sh", "workers"))
    assert "Min Member:  2" in out and "scheduling.volcano.sh/v1beta1" in out


def test_start_manifests_of_the_workload_api_follow_the_gate(tmp_path):
    path = tmp_path / "w.yaml"
    path.write_text(yaml.safe_dump_all([workload(), k8s_group()]), encoding="utf-8")
    previous = DEFAULT_FEATURE_GATES.set_all({})
    try:
        objects, skipped = load_start_manifests([str(path)])
        assert objects == [] and len(skipped) == 2 and 'no matches for kind "Workload"' in skipped[0]
        DEFAULT_FEATURE_GATES.set_all(GATES)
        objects, skipped = load_start_manifests([str(path)])
        assert [o["kind"] for o in objects] == ["Workload", "PodGroup"] and skipped == []
    finally:
        DEFAULT_FEATURE_GATES.set_all(previous)


def test_a_gate_on_without_the_gate_it_needs_is_a_located_error(tmp_path, capsys):
    args = [
        "serve",
        "--port",
        "0",
        "--data-dir",
        str(tmp_path / "d"),
        "--feature-gates",
        "GangScheduling=true",
    ]
    assert main(args) == EXIT_BAD_INPUT
    err = capsys.readouterr().err
    assert "feature gate GangScheduling depends on GenericWorkload, which is disabled" in err
    assert not (tmp_path / "d").exists()


def test_priority_admission_resolves_a_groups_priority(make_cluster):
    c = make_cluster(
        nodes=0,
        feature_gates={**GATES, "GangScheduling": True, "WorkloadAwarePreemption": True},
    )
    high = {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": "high"},
        "value": 1000,
    }
    c.request("POST", "/apis/scheduling.k8s.io/v1/priorityclasses", high)
    _, created, _ = c.request(
        "POST", f"{V1A2}/namespaces/default/podgroups", k8s_group(priorityClassName="high")
    )
    assert (created["spec"]["priority"], created["spec"]["disruptionMode"]) == (1000, "Pod")
    _, plain, _ = c.request("POST", f"{V1A2}/namespaces/default/podgroups", k8s_group("plain"))
    assert plain["spec"]["priority"] == 0
    template = {"name": "t", "schedulingPolicy": {"basic": {}}, "priorityClassName": "high"}
    body = {**workload(), "spec": {"podGroupTemplates": [template]}}
    _, made, _ = c.request("POST", f"{V1A2}/namespaces/default/workloads", body)
    assert made["spec"]["podGroupTemplates"][0]["priority"] == 1000
    code, status, _ = c.request(
        "POST", f"{V1A2}/namespaces/default/podgroups", k8s_group("lost", priorityClassName="nope")
    )
    assert code == 403 and "no PriorityClass with name 'nope' was found" in status["message"]
