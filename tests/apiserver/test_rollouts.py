"""Rollouts as a kubectl user drives them (1.32 and 1.20): a Deployment's revisions, their history
with change causes, undo to the previous or a named revision, rollout status, and the history
limit; a StatefulSet's rollout status."""

from __future__ import annotations

import time

import pytest
from tests.apiserver.kubectls import KUBECTLS, kubectl_runner, ok, until

DEPLOYMENTS = "/apis/apps/v1/namespaces/default/deployments"
REPLICASETS = "/apis/apps/v1/namespaces/default/replicasets"


def _replicasets(cluster) -> dict[str, dict]:
    """Revision → ReplicaSet."""
    items = cluster.request("GET", REPLICASETS)[1]["items"]
    return {rs["metadata"]["annotations"]["deployment.kubernetes.io/revision"]: rs for rs in items}


def _available(cluster) -> int:
    deploy = cluster.request("GET", f"{DEPLOYMENTS}/web")[1]
    return int(deploy.get("status", {}).get("availableReplicas", 0))


def _image(cluster) -> str:
    deploy = cluster.request("GET", f"{DEPLOYMENTS}/web")[1]
    return str(deploy["spec"]["template"]["spec"]["containers"][0]["image"])


@pytest.mark.parametrize("binary", KUBECTLS)
def test_history_undo_and_status(make_cluster, binary):
    cluster = make_cluster(nodes=2)
    kubectl = kubectl_runner(binary, cluster.kubeconfig)
    ok(kubectl("create", "deployment", "web", "--image=nginx:1.0", "--replicas=3"))
    out = ok(kubectl("rollout", "status", "deployment/web", "--timeout=30s"))
    assert 'deployment "web" successfully rolled out' in out

    deploy = cluster.request("GET", f"{DEPLOYMENTS}/web")[1]
    assert deploy["metadata"]["annotations"]["deployment.kubernetes.io/revision"] == "1"
    assert deploy["spec"]["strategy"] == {
        "type": "RollingUpdate",
        "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": "25%"},
    }
    assert deploy["spec"]["revisionHistoryLimit"] == 10 and deploy["spec"]["progressDeadlineSeconds"] == 600
    conditions = {c["type"]: c for c in deploy["status"]["conditions"]}
    assert conditions["Available"]["reason"] == "MinimumReplicasAvailable"
    assert conditions["Progressing"]["reason"] == "NewReplicaSetAvailable"
    (rs,) = _replicasets(cluster).values()
    digest = rs["metadata"]["labels"]["pod-template-hash"]
    assert rs["metadata"]["name"] == f"web-{digest}"
    assert rs["spec"]["selector"]["matchLabels"] == {"app": "web", "pod-template-hash": digest}
    assert rs["metadata"]["annotations"]["deployment.kubernetes.io/desired-replicas"] == "3"
    assert rs["metadata"]["annotations"]["deployment.kubernetes.io/max-replicas"] == "4"

    # Two more revisions, each with its change cause.
    for image in ("nginx:2.0", "nginx:3.0"):
        ok(kubectl("set", "image", "deployment/web", f"nginx={image}"))
        ok(kubectl("annotate", "deployment/web", f"kubernetes.io/change-cause=image {image}", "--overwrite"))
        ok(kubectl("rollout", "status", "deployment/web", "--timeout=30s"))
    history = ok(kubectl("rollout", "history", "deployment/web"))
    rows = [line.split(None, 1) for line in history.splitlines()[2:] if line.strip()]
    assert [r[0] for r in rows] == ["1", "2", "3"], history
    assert rows[0][1].strip() == "<none>" and rows[2][1].strip() == "image nginx:3.0"
    assert "nginx:2.0" in ok(kubectl("rollout", "history", "deployment/web", "--revision=2"))

    # Undo goes back to revision 2's template under revision 4; its ReplicaSet is reused.
    before = _replicasets(cluster)
    assert "rolled back" in ok(kubectl("rollout", "undo", "deployment/web"))
    assert until(lambda: _image(cluster) == "nginx:2.0")
    ok(kubectl("rollout", "status", "deployment/web", "--timeout=30s"))
    assert until(lambda: sorted(_replicasets(cluster)) == ["1", "3", "4"]), sorted(_replicasets(cluster))
    after = _replicasets(cluster)
    assert after["4"]["metadata"]["name"] == before["2"]["metadata"]["name"]
    assert after["4"]["metadata"]["annotations"]["deployment.kubernetes.io/revision-history"] == "2"
    deploy = cluster.request("GET", f"{DEPLOYMENTS}/web")[1]
    assert deploy["metadata"]["annotations"]["deployment.kubernetes.io/revision"] == "4"
    assert deploy["metadata"]["annotations"]["kubernetes.io/change-cause"] == "image nginx:2.0"
    assert deploy["status"]["updatedReplicas"] == 3 and deploy["status"]["availableReplicas"] == 3
    pods = cluster.request("GET", "/api/v1/namespaces/default/pods?labelSelector=app%3Dweb")[1]["items"]
    live = [p for p in pods if not p["metadata"].get("deletionTimestamp")]
    assert {p["spec"]["containers"][0]["image"] for p in live} == {"nginx:2.0"}

    # Undo to a named revision; one that does not exist is refused by kubectl.
    ok(kubectl("rollout", "undo", "deployment/web", "--to-revision=1"))
    assert until(lambda: _image(cluster) == "nginx:1.0")
    assert until(lambda: sorted(_replicasets(cluster)) == ["3", "4", "5"]), sorted(_replicasets(cluster))
    missing = kubectl("rollout", "undo", "deployment/web", "--to-revision=9")
    assert missing.returncode != 0 and "unable to find specified revision 9" in missing.stderr

    # Only revisionHistoryLimit old ReplicaSets are kept once the rollout is complete.
    ok(kubectl("patch", "deployment/web", "-p", '{"spec":{"revisionHistoryLimit":1}}'))
    assert until(lambda: sorted(_replicasets(cluster)) == ["4", "5"]), sorted(_replicasets(cluster))


def test_recreate_waits_for_old_pods(make_cluster):
    cluster = make_cluster(nodes=2)
    deploy = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web"},
        "spec": {
            "replicas": 2,
            "strategy": {"type": "Recreate"},
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "c", "image": "a"}]},
            },
        },
    }
    assert cluster.request("POST", DEPLOYMENTS, deploy)[0] == 201
    created = cluster.request("GET", f"{DEPLOYMENTS}/web")[1]
    assert "rollingUpdate" not in created["spec"]["strategy"]
    assert until(lambda: _available(cluster) == 2)
    deploy["spec"]["template"]["spec"]["containers"][0]["image"] = "b"
    code, _, _ = cluster.request(
        "PATCH",
        f"{DEPLOYMENTS}/web",
        {"spec": {"template": deploy["spec"]["template"]}},
        content_type="application/merge-patch+json",
    )
    assert code == 200

    def images() -> set[str]:
        pods = cluster.request("GET", "/api/v1/namespaces/default/pods")[1]["items"]
        return {p["spec"]["containers"][0]["image"] for p in pods}

    seen: list[set[str]] = []
    assert until(lambda: seen.append(images()) or seen[-1] == {"b"})
    assert {"a", "b"} not in seen  # never both at once
    assert until(lambda: _available(cluster) == 2)


STATEFULSETS = "/apis/apps/v1/namespaces/default/statefulsets"


def _sts_pods(cluster) -> dict[str, dict]:
    pods = cluster.request("GET", "/api/v1/namespaces/default/pods?labelSelector=app%3Ddb")[1]["items"]
    return {p["metadata"]["name"]: p for p in pods if not p["metadata"].get("deletionTimestamp")}


@pytest.mark.parametrize("binary", KUBECTLS)
def test_statefulset_defaults_rollout_status_history_and_undo(make_cluster, binary):
    cluster = make_cluster(nodes=2)
    kubectl = kubectl_runner(binary, cluster.kubeconfig)
    sts = {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {"name": "db"},
        "spec": {
            "replicas": 3,
            "serviceName": "db",
            "selector": {"matchLabels": {"app": "db"}},
            "template": {
                "metadata": {"labels": {"app": "db"}},
                "spec": {"containers": [{"name": "c", "image": "pg:1"}]},
            },
        },
    }
    assert cluster.request("POST", STATEFULSETS, sts)[0] == 201
    spec = cluster.request("GET", f"{STATEFULSETS}/db")[1]["spec"]
    assert spec["updateStrategy"] == {"type": "RollingUpdate", "rollingUpdate": {"partition": 0}}
    assert spec["podManagementPolicy"] == "OrderedReady" and spec["revisionHistoryLimit"] == 10
    assert spec["persistentVolumeClaimRetentionPolicy"] == {"whenDeleted": "Retain", "whenScaled": "Retain"}
    out = ok(kubectl("rollout", "status", "statefulset/db", "--timeout=30s"))
    # The defaulted partition (0) makes kubectl report a partitioned rollout, as on any cluster.
    assert "partitioned roll out complete: 3 new pods have been updated" in out
    status = cluster.request("GET", f"{STATEFULSETS}/db")[1]["status"]
    first = status["currentRevision"]
    assert status["updateRevision"] == first and status["readyReplicas"] == status["updatedReplicas"] == 3
    pods = _sts_pods(cluster)
    assert sorted(pods) == ["db-0", "db-1", "db-2"]
    assert {p["metadata"]["labels"]["controller-revision-hash"] for p in pods.values()} == {first}
    assert pods["db-1"]["metadata"]["labels"]["apps.kubernetes.io/pod-index"] == "1"
    assert pods["db-1"]["spec"]["hostname"] == "db-1" and pods["db-1"]["spec"]["subdomain"] == "db"

    ok(kubectl("set", "image", "statefulset/db", "c=pg:2"))
    out = ok(kubectl("rollout", "status", "statefulset/db", "--timeout=30s"))
    assert "partitioned roll out complete: 3 new pods have been updated" in out
    status = cluster.request("GET", f"{STATEFULSETS}/db")[1]["status"]
    assert status["currentRevision"] == status["updateRevision"] != first
    assert {p["spec"]["containers"][0]["image"] for p in _sts_pods(cluster).values()} == {"pg:2"}
    history = ok(kubectl("rollout", "history", "statefulset/db"))
    assert [line.split()[0] for line in history.splitlines()[2:] if line.strip()] == ["1", "2"], history

    ok(kubectl("rollout", "undo", "statefulset/db"))
    ok(kubectl("rollout", "status", "statefulset/db", "--timeout=30s"))
    assert until(
        lambda: {p["spec"]["containers"][0]["image"] for p in _sts_pods(cluster).values()} == {"pg:1"}
    )
    status = cluster.request("GET", f"{STATEFULSETS}/db")[1]["status"]
    assert status["currentRevision"] == status["updateRevision"] == first  # the first revision again
    revisions = cluster.request("GET", "/apis/apps/v1/namespaces/default/controllerrevisions")[1]["items"]
    assert {r["metadata"]["name"]: r["revision"] for r in revisions}[first] == 3
    listing = ok(kubectl("get", "controllerrevisions"))
    assert "statefulset.apps/db" in listing and "CONTROLLER" in listing.splitlines()[0]


def test_statefulset_ordered_ready_waits_for_each_member(make_cluster):
    cluster = make_cluster(nodes=1, node_cpu="1")
    sts = {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {"name": "db"},
        "spec": {
            "replicas": 4,
            "selector": {"matchLabels": {"app": "db"}},
            "template": {
                "metadata": {"labels": {"app": "db"}},
                "spec": {
                    "containers": [{"name": "c", "image": "x", "resources": {"requests": {"cpu": "400m"}}}]
                },
            },
        },
    }
    assert cluster.request("POST", STATEFULSETS, sts)[0] == 201
    # Two fit on the node; the third cannot be scheduled, so no member after it is made.
    assert until(lambda: sorted(_sts_pods(cluster)) == ["db-0", "db-1", "db-2"])
    time.sleep(0.5)
    assert sorted(_sts_pods(cluster)) == ["db-0", "db-1", "db-2"]
    status = cluster.request("GET", f"{STATEFULSETS}/db")[1]["status"]
    assert status["readyReplicas"] == 2
    # Parallel makes them all at once.
    sts["metadata"]["name"] = "par"
    sts["spec"]["podManagementPolicy"] = "Parallel"
    sts["spec"]["replicas"] = 2
    sts["spec"]["selector"] = {"matchLabels": {"app": "par"}}
    sts["spec"]["template"]["metadata"]["labels"] = {"app": "par"}
    assert cluster.request("POST", STATEFULSETS, sts)[0] == 201
    pods = cluster.request("GET", "/api/v1/namespaces/default/pods?labelSelector=app%3Dpar")[1]["items"]
    assert until(
        lambda: (
            len(cluster.request("GET", "/api/v1/namespaces/default/pods?labelSelector=app%3Dpar")[1]["items"])
            == 2
        )
    ), pods
