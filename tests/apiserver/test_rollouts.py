"""Rollouts as a kubectl user drives them (1.32 and 1.20): a Deployment's revisions, their history
with change causes, undo to the previous or a named revision, rollout status, and the history
limit; a StatefulSet's rollout status."""

from __future__ import annotations

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
