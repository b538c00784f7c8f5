"""``kubesched snapshot``: a served cluster's state written as manifests, read back by ``simulate``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from tests.remote.conftest import Cluster, pod

from kubesched.cli import EXIT_OK, main

PODS = "/api/v1/namespaces/default/pods"


def _create(cluster: Cluster, obj: dict[str, Any], path: str = PODS) -> None:
    code, body, _ = cluster.request("POST", path, obj)
    assert code == 201, body


def _node_names(cluster: Cluster) -> list[str]:
    return sorted(str(n["metadata"]["name"]) for n in cluster.store.list("Node"))


@pytest.fixture
def busy(cluster: Cluster) -> Cluster:
    """Two nodes; a running pod on each (one with env, command and probes), a pending pod pinned to
    the second node by hostname, a pending plain pod, and a finished pod."""
    first, second = _node_names(cluster)
    running = pod("web-0", nodeName=first)
    running["spec"]["containers"][0].update(
        {
            "env": [{"name": "PASSWORD", "value": "hunter2"}],
            "command": ["/bin/serve"],
            "livenessProbe": {"httpGet": {"path": "/", "port": 80}},
        }
    )
    running["metadata"]["annotations"] = {"kubectl.kubernetes.io/last-applied-configuration": "{...}"}
    _create(cluster, running)
    _create(cluster, pod("db-0", nodeName=second, cpu="200m"))
    _create(cluster, pod("pinned-0", nodeSelector={"kubernetes.io/hostname": second}))
    _create(cluster, pod("plain-0"))
    _create(cluster, pod("done-0", nodeName=first))
    code, body, _ = cluster.request(
        "PATCH",
        f"{PODS}/done-0/status",
        {"status": {"phase": "Succeeded"}},
        content_type="application/merge-patch+json",
    )
    assert code == 200, body
    return cluster


def _snapshot(cluster: Cluster, out: Path, *extra: str) -> None:
    assert main(["snapshot", "--kubeconfig", str(cluster.kubeconfig), "-o", str(out), *extra]) == EXIT_OK


def _loaded(out: Path, kind: str) -> list[dict[str, Any]]:
    docs: list[dict[str, Any]] = []
    for path in sorted(out.glob("*.yaml")):
        docs.extend(d for d in yaml.safe_load_all(path.read_text()) if d and d.get("kind") == kind)
    return docs


def _simulate(out: Path, capsys: pytest.CaptureFixture[str], *extra: str) -> dict[str, dict[str, Any]]:
    capsys.readouterr()
    assert main(["simulate", str(out), "-o", "json", "-q", *extra]) == EXIT_OK
    result = json.loads(capsys.readouterr().out)
    return {p["name"]: p for p in result["pods"]}


def test_snapshot_drops_what_scheduling_never_reads(busy: Cluster, tmp_path: Path) -> None:
    out = tmp_path / "snap"
    _snapshot(busy, out)
    pods = {p["metadata"]["name"]: p for p in _loaded(out, "Pod")}
    assert set(pods) == {"web-0", "db-0", "pinned-0", "plain-0"}  # the finished pod holds nothing
    web = pods["web-0"]
    container = web["spec"]["containers"][0]
    assert {"env", "command", "livenessProbe"}.isdisjoint(container)
    assert container["resources"] == {"requests": {"cpu": "100m"}}
    assert "managedFields" not in web["metadata"] and "resourceVersion" not in web["metadata"]
    assert "annotations" not in web["metadata"]
    assert "hunter2" not in "".join(p.read_text() for p in out.glob("*.yaml"))
    nodes = _loaded(out, "Node")
    assert [n["metadata"]["name"] for n in nodes] == _node_names(busy)
    assert set(nodes[0]["status"]) <= {"capacity", "allocatable", "conditions", "images"}


def test_simulate_keeps_running_pods_and_schedules_pending_ones(
    busy: Cluster, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    first, second = _node_names(busy)
    out = tmp_path / "snap"
    _snapshot(busy, out)
    pods = _simulate(out, capsys)
    assert pods["web-0"]["node"] == first and pods["db-0"]["node"] == second
    assert "bound in the input" in pods["web-0"]["message"]
    assert pods["pinned-0"]["node"] == second
    assert pods["plain-0"]["status"] == "Scheduled" and pods["plain-0"]["node"] in (first, second)
    again = _simulate(out, capsys, "--reschedule-all")
    assert "bound in the input" not in again["web-0"]["message"]
    assert again["web-0"]["status"] == "Scheduled"


def test_anonymised_snapshot_keeps_every_reference(
    busy: Cluster, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "anon"
    _snapshot(busy, out, "--anonymise-key", "k1")
    text = "".join(p.read_text() for p in out.glob("*.yaml"))
    first, second = _node_names(busy)
    for secret in ("web-0", "pinned-0", first, second, "nginx"):
        assert secret not in text
    pods = _simulate(out, capsys)
    nodes = [n["metadata"]["name"] for n in _loaded(out, "Node")]
    by_node = {p["node"] for p in pods.values() if p["node"]}
    assert by_node <= set(nodes)
    pinned = next(p for p in _loaded(out, "Pod") if p["spec"].get("nodeSelector"))
    placed = pods[pinned["metadata"]["name"]]
    # The hostname value and the node's name went through the same hash.
    assert placed["node"] == pinned["spec"]["nodeSelector"]["kubernetes.io/hostname"]
    assert placed["status"] == "Scheduled"
    # One key, one mapping: a second snapshot with the same key names everything the same.
    again = tmp_path / "anon2"
    _snapshot(busy, again, "--anonymise-key", "k1")
    assert sorted(p.name for p in again.glob("*.yaml")) == sorted(p.name for p in out.glob("*.yaml"))
    assert _loaded(again, "Node") == _loaded(out, "Node")


def test_snapshot_of_an_unreachable_server_fails_cleanly(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "c", "cluster": {"server": "http://127.0.0.1:9"}}],
                "users": [{"name": "u", "user": {"token": "t"}}],
                "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
                "current-context": "x",
            }
        )
    )
    code = main(["snapshot", "--kubeconfig", str(kubeconfig), "-o", str(tmp_path / "out")])
    assert code != EXIT_OK
    err = capsys.readouterr().err
    assert "Traceback" not in err and "snapshot failed" in err


def test_snapshot_rbac_grants_get_and_list_on_every_kind_it_lists_and_nothing_else() -> None:
    from kubesched.registry.table import BY_KIND
    from kubesched.remote.discovery import FOLLOWED_KINDS

    path = Path(__file__).resolve().parents[2] / "deploy" / "snapshot" / "rbac.yaml"
    docs = [d for d in yaml.safe_load_all(path.read_text()) if d]
    role = next(d for d in docs if d["kind"] == "ClusterRole")
    granted = {
        (group, resource, verb)
        for rule in role["rules"]
        for group in rule["apiGroups"]
        for resource in rule["resources"]
        for verb in rule["verbs"]
    }
    assert {verb for _, _, verb in granted} == {"get", "list"}
    plural = {kind: (s.resource.group, s.resource.plural) for kind, s in BY_KIND.items()}
    plural["ReplicationController"] = ("", "replicationcontrollers")  # followed, not served here
    for kind in FOLLOWED_KINDS:
        group, resource = plural[kind]
        assert (group, resource, "list") in granted, kind
    assert not any(resource in ("secrets", "configmaps") for _, resource, _ in granted)


def test_both_pod_group_kinds_and_workloads_are_snapshotted_with_their_references(
    make_cluster: Any, tmp_path: Path
) -> None:
    served = make_cluster(nodes=1, feature_gates={"GenericWorkload": True})
    v1a2 = "/apis/scheduling.k8s.io/v1alpha2/namespaces/default"
    _create(
        served,
        {
            "apiVersion": "scheduling.k8s.io/v1alpha2",
            "kind": "Workload",
            "metadata": {"name": "train"},
            "spec": {
                "controllerRef": {"apiGroup": "batch", "kind": "Job", "name": "train"},
                "podGroupTemplates": [{"name": "workers", "schedulingPolicy": {"gang": {"minCount": 2}}}],
            },
        },
        f"{v1a2}/workloads",
    )
    _create(
        served,
        {
            "apiVersion": "scheduling.k8s.io/v1alpha2",
            "kind": "PodGroup",
            "metadata": {"name": "train-workers"},
            "spec": {
                "podGroupTemplateRef": {
                    "workload": {"workloadName": "train", "podGroupTemplateName": "workers"}
                },
                "schedulingPolicy": {"gang": {"minCount": 2}},
            },
        },
        f"{v1a2}/podgroups",
    )
    _create(
        served,
        {
            "apiVersion": "scheduling.volcano.sh/v1beta1",
            "kind": "PodGroup",
            "metadata": {"name": "train-workers"},
            "spec": {"minMember": 2},
        },
        "/apis/scheduling.volcano.sh/v1beta1/namespaces/default/podgroups",
    )
    _create(served, pod("worker-0", schedulingGroup={"podGroupName": "train-workers"}))
    out = tmp_path / "snap"
    _snapshot(served, out, "--anonymise-key", "k")
    names = sorted(p.name for p in out.glob("*.yaml"))
    assert any(n.endswith("-podgroups.scheduling.k8s.io.yaml") for n in names)
    assert any(n.endswith("-podgroups.yaml") for n in names)
    k8s_group = next(g for g in _loaded(out, "PodGroup") if g["apiVersion"] == "scheduling.k8s.io/v1alpha2")
    workload = _loaded(out, "Workload")[0]
    worker = _loaded(out, "Pod")[0]
    assert (
        k8s_group["spec"]["podGroupTemplateRef"]["workload"]["workloadName"] == workload["metadata"]["name"]
    )
    assert worker["spec"]["schedulingGroup"]["podGroupName"] == k8s_group["metadata"]["name"]
    assert "train" not in "".join(p.read_text() for p in out.glob("*.yaml"))
    # simulate reads the snapshot back with both PodGroup kinds.
    assert main(["simulate", str(out), "-q", "--feature-gates", "GenericWorkload=true"]) == EXIT_OK
