"""DaemonSets served and run: upstream's defaults and refusals, one pod per eligible node placed by
the scheduler through the node-name affinity, rolling updates, status and kubectl's columns and
``rollout status``."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from tests.apiserver.kubectls import KUBECTLS, kubectl_runner, ok, until

DSS = "/apis/apps/v1/namespaces/default/daemonsets"
PODS = "/api/v1/namespaces/default/pods"
MERGE = "application/merge-patch+json"


def _ds(name: str = "agent", **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": name},
        "spec": {
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "c", "image": "agent:1"}]},
            },
            **spec,
        },
    }


def _pods(cluster, app: str = "agent") -> list[dict[str, Any]]:
    return cluster.request("GET", f"{PODS}?labelSelector=app%3D{app}")[1]["items"]


def _settled(cluster, name: str = "agent") -> dict[str, Any] | None:
    ds = cluster.request("GET", f"{DSS}/{name}")[1]
    status = ds.get("status") or {}
    desired = status.get("desiredNumberScheduled")
    if (
        status.get("observedGeneration") == ds["metadata"]["generation"]
        and desired is not None
        and status.get("updatedNumberScheduled") == desired
        and status.get("numberAvailable") == desired
        and len([p for p in _pods(cluster, name) if not p["metadata"].get("deletionTimestamp")]) == desired
    ):
        return ds
    return None


def test_defaults_and_refusals(cluster):
    code, ds, _ = cluster.request("POST", DSS, _ds())
    assert code == 201, ds
    assert ds["spec"]["updateStrategy"] == {
        "type": "RollingUpdate",
        "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 0},
    }
    assert ds["spec"]["revisionHistoryLimit"] == 10
    assert ds["metadata"]["generation"] == 1
    bad = _ds("bad", updateStrategy={"type": "Sometimes"})
    bad["spec"]["template"]["spec"]["restartPolicy"] = "Never"
    bad["spec"]["selector"] = {"matchLabels": {"app": "other"}}
    code, status, _ = cluster.request("POST", DSS, bad)
    assert code == 422
    assert [(c["field"], c["message"]) for c in status["details"]["causes"]] == [
        (
            "spec.template.metadata.labels",
            'Invalid value: map[string]string{"app":"bad"}: `selector` does not match template `labels`',
        ),
        ("spec.template.spec.restartPolicy", 'Unsupported value: "Never": supported values: "Always"'),
        (
            "spec.updateStrategy",
            'Unsupported value: apps.DaemonSetUpdateStrategy{Type:"Sometimes", '
            "RollingUpdate:(*apps.RollingUpdateDaemonSet)(nil)}: "
            'supported values: "RollingUpdate", "OnDelete"',
        ),
    ]
    zero = _ds("zero", updateStrategy={"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 0}})
    code, status, _ = cluster.request("POST", DSS, zero)
    assert (
        code == 422
        and status["details"]["causes"][0]["field"] == "spec.updateStrategy.rollingUpdate.maxUnavailable"
    )


def test_one_pod_per_eligible_node_placed_by_the_scheduler(make_cluster):
    cluster = make_cluster(nodes=3)
    # node-2 is tainted; node-1 cordoned (daemon pods tolerate that, as upstream's).
    assert (
        cluster.request(
            "PATCH",
            "/api/v1/nodes/node-2",
            {"spec": {"taints": [{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}]}},
            content_type=MERGE,
        )[0]
        == 200
    )
    assert (
        cluster.request(
            "PATCH", "/api/v1/nodes/node-1", {"spec": {"unschedulable": True}}, content_type=MERGE
        )[0]
        == 200
    )
    assert cluster.request("POST", DSS, _ds())[0] == 201
    ds = until(lambda: _settled(cluster))
    assert ds, cluster.request("GET", f"{DSS}/agent")[1]
    assert ds["status"]["desiredNumberScheduled"] == 2 and ds["status"]["numberMisscheduled"] == 0
    pods = _pods(cluster)
    assert sorted(p["spec"]["nodeName"] for p in pods) == ["node-0", "node-1"]
    for p in pods:
        terms = p["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
        assert terms == {
            "nodeSelectorTerms": [
                {
                    "matchFields": [
                        {"key": "metadata.name", "operator": "In", "values": [p["spec"]["nodeName"]]}
                    ]
                }
            ]
        }
        keys = {(t["key"], t["effect"]) for t in p["spec"]["tolerations"]}
        assert ("node.kubernetes.io/unschedulable", "NoSchedule") in keys
        assert ("node.kubernetes.io/not-ready", "NoExecute") in keys
        assert p["metadata"]["labels"]["pod-template-generation"] == "1"
        assert p["metadata"]["ownerReferences"][0]["kind"] == "DaemonSet"
    # A toleration makes the tainted node eligible; a new node gets its pod.
    tolerate = {"spec": {"template": {"spec": {"tolerations": [{"key": "dedicated", "operator": "Exists"}]}}}}
    assert cluster.request("PATCH", f"{DSS}/agent", tolerate, content_type=MERGE)[0] == 200
    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "late"}}
    assert cluster.request("POST", "/api/v1/nodes", node)[0] == 201
    ds = until(
        lambda: (d := _settled(cluster)) and d["status"]["desiredNumberScheduled"] == 4 and d, timeout=30
    )
    assert ds, cluster.request("GET", f"{DSS}/agent")[1]
    assert sorted(p["spec"]["nodeName"] for p in _pods(cluster)) == ["late", "node-0", "node-1", "node-2"]
    # Deleting the DaemonSet takes its pods.
    assert cluster.request("DELETE", f"{DSS}/agent")[0] == 200
    assert until(lambda: not _pods(cluster))


@pytest.mark.parametrize("binary", KUBECTLS)
def test_kubectl_apply_rollout_status_and_columns(make_cluster, binary, tmp_path):
    cluster = make_cluster(nodes=3)
    kubectl = kubectl_runner(binary, cluster.kubeconfig)
    manifest = tmp_path / "ds.json"
    body = _ds()
    body["spec"]["template"]["spec"]["nodeSelector"] = {"kubernetes.io/os": "linux"}
    for i in range(3):
        cluster.request(
            "PATCH",
            f"/api/v1/nodes/node-{i}",
            {"metadata": {"labels": {"kubernetes.io/os": "linux"}}},
            content_type=MERGE,
        )

    manifest.write_text(json.dumps(body))
    ok(kubectl("apply", "-f", str(manifest)))
    ok(kubectl("rollout", "status", "ds/agent", "--timeout=60s", timeout=90))
    out = ok(kubectl("get", "ds", "-o", "wide"))
    header, row = out.splitlines()
    assert header.split() == [
        "NAME",
        "DESIRED",
        "CURRENT",
        "READY",
        "UP-TO-DATE",
        "AVAILABLE",
        "NODE",
        "SELECTOR",
        "AGE",
        "CONTAINERS",
        "IMAGES",
        "SELECTOR",
    ]
    cells = row.split()
    assert cells[:7] == ["agent", "3", "3", "3", "3", "3", "kubernetes.io/os=linux"]
    assert cells[8:] == ["c", "agent:1", "app=agent"]
    before = {p["metadata"]["name"] for p in _pods(cluster)}
    updated = copy.deepcopy(body)
    updated["spec"]["template"]["spec"]["containers"][0]["image"] = "agent:2"
    manifest.write_text(json.dumps(updated))
    ok(kubectl("apply", "-f", str(manifest)))
    ok(kubectl("rollout", "status", "ds/agent", "--timeout=60s", timeout=90))
    pods = [p for p in _pods(cluster) if not p["metadata"].get("deletionTimestamp")]
    assert len(pods) == 3 and not before & {p["metadata"]["name"] for p in pods}
    assert {p["spec"]["containers"][0]["image"] for p in pods} == {"agent:2"}
    assert {p["metadata"]["labels"]["pod-template-generation"] for p in pods} == {"2"}
    # Each template is a ControllerRevision: history lists both, undo brings the first back.
    out = ok(kubectl("rollout", "history", "ds/agent"))
    assert [line.split()[0] for line in out.splitlines()[2:] if line.strip()] == ["1", "2"]
    revisions = cluster.request("GET", "/apis/apps/v1/namespaces/default/controllerrevisions")[1]["items"]
    by_revision = {r["revision"]: r for r in revisions}
    assert by_revision[1]["data"]["spec"]["template"]["spec"]["containers"][0]["image"] == "agent:1"
    assert by_revision[1]["data"]["spec"]["template"]["$patch"] == "replace"
    assert {p["metadata"]["labels"]["controller-revision-hash"] for p in pods} == {
        by_revision[2]["metadata"]["labels"]["controller-revision-hash"]
    }
    ok(kubectl("rollout", "undo", "ds/agent"))
    ok(kubectl("rollout", "status", "ds/agent", "--timeout=60s", timeout=90))
    pods = [p for p in _pods(cluster) if not p["metadata"].get("deletionTimestamp")]
    assert {p["spec"]["containers"][0]["image"] for p in pods} == {"agent:1"}
    assert {p["metadata"]["labels"]["controller-revision-hash"] for p in pods} == {
        by_revision[1]["metadata"]["labels"]["controller-revision-hash"]
    }
    out = ok(kubectl("rollout", "history", "ds/agent"))
    assert [line.split()[0] for line in out.splitlines()[2:] if line.strip()] == ["2", "3"]
