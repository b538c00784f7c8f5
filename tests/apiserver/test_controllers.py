"""The simulated kubelet and controllers of a served cluster: pods start, finish after their
duration; Jobs complete; StatefulSets replace their pods; owners take their pods with them."""

from __future__ import annotations

import time


def _wait(predicate, timeout: float = 10.0):
    deadline = time.time() + timeout
    while time.time() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError("timed out")


def _pods(cluster, selector: str = "") -> list[dict]:
    path = "/api/v1/namespaces/default/pods" + (f"?labelSelector={selector}" if selector else "")
    return cluster.request("GET", path)[1]["items"]


def test_job_pods_run_for_their_duration_then_the_job_completes(make_cluster):
    cluster = make_cluster(nodes=2)
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "short"},
        "spec": {
            "completions": 2,
            "parallelism": 2,
            "template": {
                "metadata": {"annotations": {"kubesched.io/duration": "300ms"}},
                "spec": {"containers": [{"name": "c", "image": "x"}]},
            },
        },
    }
    assert cluster.request("POST", "/apis/batch/v1/namespaces/default/jobs", job)[0] == 201
    pods = _wait(lambda: [p for p in _pods(cluster, "job-name%3Dshort") if p["status"]["phase"] == "Running"])
    assert all(p["metadata"]["ownerReferences"][0]["kind"] == "Job" for p in pods)
    _wait(
        lambda: (
            len([p for p in _pods(cluster, "job-name%3Dshort") if p["status"]["phase"] == "Succeeded"]) == 2
        )
    )
    done = _wait(
        lambda: (
            (j := cluster.request("GET", "/apis/batch/v1/namespaces/default/jobs/short")[1])
            and j["status"].get("succeeded") == 2
            and j
        )
    )
    conditions = [(c["type"], c["reason"]) for c in done["status"]["conditions"]]
    assert conditions == [("SuccessCriteriaMet", "CompletionsReached"), ("Complete", "CompletionsReached")]


def test_statefulset_replaces_a_deleted_pod_and_delete_collects_pods(make_cluster):
    cluster = make_cluster(nodes=2)
    sts = {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {"name": "db"},
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": {"app": "db"}},
            "template": {
                "metadata": {"labels": {"app": "db"}},
                "spec": {"containers": [{"name": "c", "image": "pg"}]},
            },
        },
    }
    base = "/apis/apps/v1/namespaces/default/statefulsets"
    assert cluster.request("POST", base, sts)[0] == 201
    names = lambda: sorted(p["metadata"]["name"] for p in _pods(cluster, "app%3Ddb"))  # noqa: E731
    _wait(lambda: names() == ["db-0", "db-1"])
    uid = cluster.request("GET", "/api/v1/namespaces/default/pods/db-0")[1]["metadata"]["uid"]
    cluster.request("DELETE", "/api/v1/namespaces/default/pods/db-0")
    _wait(
        lambda: (
            (p := cluster.request("GET", "/api/v1/namespaces/default/pods/db-0"))[0] == 200
            and p[1]["metadata"]["uid"] != uid
        )
    )
    code, scale, _ = cluster.request(
        "PATCH", f"{base}/db/scale", {"spec": {"replicas": 1}}, content_type="application/merge-patch+json"
    )
    assert code == 200 and scale["kind"] == "Scale" and scale["spec"]["replicas"] == 1
    _wait(lambda: names() == ["db-0"])
    assert cluster.request("DELETE", f"{base}/db")[0] == 200
    _wait(lambda: names() == [])


def test_orphaned_pods_stay(make_cluster):
    cluster = make_cluster(nodes=1)
    rs = {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {"name": "keep"},
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": {"app": "keep"}},
            "template": {
                "metadata": {"labels": {"app": "keep"}},
                "spec": {"containers": [{"name": "c", "image": "x"}]},
            },
        },
    }
    base = "/apis/apps/v1/namespaces/default/replicasets"
    cluster.request("POST", base, rs)
    _wait(lambda: len(_pods(cluster, "app%3Dkeep")) == 2)
    code, _, _ = cluster.request("DELETE", f"{base}/keep", {"propagationPolicy": "Orphan"})
    assert code == 200
    time.sleep(0.3)
    assert len(_pods(cluster, "app%3Dkeep")) == 2


def test_events_expire_after_their_ttl(make_cluster):
    cluster = make_cluster(nodes=0, schedulers=False)
    base = "/apis/events.k8s.io/v1/namespaces/default/events"
    event = {
        "metadata": {"name": "old"},
        "eventTime": "2020-01-01T00:00:00.000000Z",
        "reason": "X",
        "action": "Y",
        "reportingController": "me",
        "reportingInstance": "me-1",
        "type": "Normal",
        "regarding": {"kind": "Pod", "name": "p", "namespace": "default"},
    }
    assert cluster.request("POST", base, event)[0] == 201
    expiry = cluster.served.controllers.event_ttl
    expiry.ttl = 0.2
    time.sleep(0.3)
    expiry._next_sweep = 0.0
    _wait(lambda: cluster.request("GET", f"{base}/old")[0] == 404)
