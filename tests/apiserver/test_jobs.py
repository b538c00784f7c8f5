"""Jobs as kube-controller-manager's Job controller runs them: each ended pod counted once, a
finished Job never starts a pod again, the backoff limit, Indexed completions, and what kubectl
prints."""

from __future__ import annotations

import time
from typing import Any

import pytest
from tests.apiserver.kubectls import KUBECTLS, kubectl_runner, ok, until

JOBS = "/apis/batch/v1/namespaces/default/jobs"
PODS = "/api/v1/namespaces/default/pods"


def _job(name: str, duration: str | None = "200ms", **spec: Any) -> dict[str, Any]:
    template: dict[str, Any] = {
        "spec": {"containers": [{"name": "c", "image": "x"}], "restartPolicy": "Never"}
    }
    if duration is not None:
        template["metadata"] = {"annotations": {"kubesched.io/duration": duration}}
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name},
        "spec": {"template": template, **spec},
    }


def _pods(cluster, job: str) -> list[dict]:
    items = cluster.request("GET", f"{PODS}?labelSelector=batch.kubernetes.io%2Fjob-name%3D{job}")[1]["items"]
    return sorted(items, key=lambda p: p["metadata"]["creationTimestamp"])


def _status(cluster, job: str) -> dict:
    return cluster.request("GET", f"{JOBS}/{job}")[1].get("status", {})


def _conditions(cluster, job: str) -> list[tuple[str, str]]:
    return [(c["type"], c.get("reason", "")) for c in _status(cluster, job).get("conditions", [])]


def _fail(cluster, pod: dict) -> None:
    code, _, _ = cluster.request(
        "PATCH",
        f"{PODS}/{pod['metadata']['name']}/status",
        {"status": {"phase": "Failed"}},
        content_type="application/merge-patch+json",
    )
    assert code == 200


def test_a_complete_job_never_starts_a_pod_again(make_cluster):
    cluster = make_cluster(nodes=1)
    assert cluster.request("POST", JOBS, _job("once", completions=2, parallelism=1))[0] == 201
    job = cluster.request("GET", f"{JOBS}/once")[1]
    assert job["spec"]["backoffLimit"] == 6 and job["spec"]["completionMode"] == "NonIndexed"
    assert job["spec"]["podReplacementPolicy"] == "TerminatingOrFailed" and job["spec"]["suspend"] is False
    assert until(lambda: ("Complete", "CompletionsReached") in _conditions(cluster, "once"))
    status = _status(cluster, "once")
    assert status["succeeded"] == 2 and status["ready"] == 0 and status["terminating"] == 0
    assert status["uncountedTerminatedPods"] == {} and "completionTime" in status
    job = cluster.request("GET", f"{JOBS}/once")[1]
    uid = job["metadata"]["uid"]
    assert job["spec"]["selector"] == {"matchLabels": {"batch.kubernetes.io/controller-uid": uid}}
    pods = _pods(cluster, "once")
    assert len(pods) == 2
    for pod in pods:
        assert "finalizers" not in pod["metadata"]  # counted: the tracking finalizer is gone
        assert (
            pod["metadata"]["labels"]["controller-uid"] == uid
            and pod["metadata"]["labels"]["job-name"] == "once"
        )
    # Evicting and deleting its succeeded pods changes nothing.
    name = pods[0]["metadata"]["name"]
    eviction = {"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": name}}
    assert cluster.request("POST", f"{PODS}/{name}/eviction", eviction)[0] == 201
    assert cluster.request("DELETE", f"{PODS}/{pods[1]['metadata']['name']}")[0] == 200
    time.sleep(0.5)
    assert _pods(cluster, "once") == []
    assert _status(cluster, "once")["succeeded"] == 2
    events = cluster.request(
        "GET", "/api/v1/namespaces/default/events?fieldSelector=involvedObject.name%3Donce"
    )[1]
    reasons = [e["reason"] for e in events["items"]]
    assert reasons.count("SuccessfulCreate") == 2 and reasons.count("Completed") == 1


def test_a_pod_deleted_while_running_counts_as_failed_and_is_replaced(make_cluster):
    cluster = make_cluster(nodes=1)
    assert cluster.request("POST", JOBS, _job("again", duration=None))[0] == 201
    assert until(lambda: [p for p in _pods(cluster, "again") if p["status"]["phase"] == "Running"])
    (first,) = _pods(cluster, "again")
    assert first["metadata"]["finalizers"] == ["batch.kubernetes.io/job-tracking"]
    assert cluster.request("DELETE", f"{PODS}/{first['metadata']['name']}")[0] == 200
    assert until(lambda: _status(cluster, "again").get("failed") == 1)
    assert until(
        lambda: (
            [p["metadata"]["uid"] for p in _pods(cluster, "again")] not in ([], [first["metadata"]["uid"]])
        )
    )
    assert _status(cluster, "again").get("active") == 1


def test_failed_pods_beyond_the_backoff_limit_fail_the_job(make_cluster):
    cluster = make_cluster(nodes=1)
    assert cluster.request("POST", JOBS, _job("flaky", duration=None, backoffLimit=1))[0] == 201
    for failures in (1, 2):
        # The second pod comes after the Job's backoff: 10 s from when the first ended (here its
        # creation, since only its phase says it failed).
        running = until(
            lambda: [p for p in _pods(cluster, "flaky") if p["status"]["phase"] == "Running"], timeout=30
        )
        assert len(running) == 1
        _fail(cluster, running[0])
        assert until(lambda f=failures: _status(cluster, "flaky").get("failed") == f)
    assert until(lambda: ("Failed", "BackoffLimitExceeded") in _conditions(cluster, "flaky"))
    assert _conditions(cluster, "flaky") == [
        ("FailureTarget", "BackoffLimitExceeded"),
        ("Failed", "BackoffLimitExceeded"),
    ]
    failed = next(c for c in _status(cluster, "flaky")["conditions"] if c["type"] == "Failed")
    assert failed["message"] == "Job has reached the specified backoff limit"
    time.sleep(0.4)
    assert len(_pods(cluster, "flaky")) == 2 and "active" not in _status(cluster, "flaky")


def test_indexed_job_gives_each_pod_its_index(make_cluster):
    cluster = make_cluster(nodes=2)
    job = _job("idx", completions=3, parallelism=2, completionMode="Indexed")
    assert cluster.request("POST", JOBS, job)[0] == 201
    assert until(lambda: ("Complete", "CompletionsReached") in _conditions(cluster, "idx"))
    assert _status(cluster, "idx")["completedIndexes"] == "0-2"
    pods = _pods(cluster, "idx")
    indexes = sorted(p["metadata"]["annotations"]["batch.kubernetes.io/job-completion-index"] for p in pods)
    assert indexes == ["0", "1", "2"]
    for pod in pods:
        index = pod["metadata"]["labels"]["batch.kubernetes.io/job-completion-index"]
        assert (
            pod["metadata"]["name"].startswith(f"idx-{index}-") and pod["spec"]["hostname"] == f"idx-{index}"
        )
        env = pod["spec"]["containers"][0]["env"]
        assert env[0]["name"] == "JOB_COMPLETION_INDEX"


def test_a_finished_job_with_a_ttl_is_deleted_with_its_pods(make_cluster):
    cluster = make_cluster(nodes=1)
    assert cluster.request("POST", JOBS, _job("brief", ttlSecondsAfterFinished=0))[0] == 201
    assert until(lambda: cluster.request("GET", f"{JOBS}/brief")[0] == 404, timeout=20)
    assert until(lambda: _pods(cluster, "brief") == [])


def test_a_success_policy_ends_an_indexed_job_early(make_cluster):
    cluster = make_cluster(nodes=2)
    job = _job(
        "leader",
        duration=None,
        completions=3,
        parallelism=3,
        completionMode="Indexed",
        successPolicy={"rules": [{"succeededIndexes": "0"}]},
    )
    assert cluster.request("POST", JOBS, job)[0] == 201
    assert until(lambda: len([p for p in _pods(cluster, "leader") if p["status"]["phase"] == "Running"]) == 3)
    leader = next(
        p
        for p in _pods(cluster, "leader")
        if p["metadata"]["annotations"]["batch.kubernetes.io/job-completion-index"] == "0"
    )
    code, _, _ = cluster.request(
        "PATCH",
        f"{PODS}/{leader['metadata']['name']}/status",
        {"status": {"phase": "Succeeded"}},
        content_type="application/merge-patch+json",
    )
    assert code == 200
    assert until(lambda: ("Complete", "SuccessPolicy") in _conditions(cluster, "leader"), timeout=20)
    assert _conditions(cluster, "leader")[0] == ("SuccessCriteriaMet", "SuccessPolicy")
    assert _status(cluster, "leader")["completedIndexes"] == "0"


def test_a_per_index_backoff_limit_is_refused_on_a_non_indexed_job(make_cluster):
    cluster = make_cluster(nodes=1)
    code, body, _ = cluster.request("POST", JOBS, _job("plain", backoffLimitPerIndex=1))
    assert code == 422
    assert body["details"]["causes"] == [
        {
            "reason": "FieldValueInvalid",
            "message": "Invalid value: 1: requires indexed completion mode",
            "field": "spec.backoffLimitPerIndex",
        }
    ]


@pytest.mark.parametrize("binary", KUBECTLS)
def test_kubectl_get_jobs(make_cluster, binary):
    cluster = make_cluster(nodes=1)
    kubectl = kubectl_runner(binary, cluster.kubeconfig)
    assert cluster.request("POST", JOBS, _job("done", completions=2))[0] == 201
    assert cluster.request("POST", JOBS, _job("wq", duration=None, completions=None, parallelism=3))[0] == 201
    assert until(lambda: ("Complete", "CompletionsReached") in _conditions(cluster, "done"))
    out = ok(kubectl("get", "jobs"))
    rows = {line.split()[0]: line.split() for line in out.splitlines()}
    assert rows["NAME"][:4] == ["NAME", "STATUS", "COMPLETIONS", "DURATION"]
    assert rows["done"][1:3] == ["Complete", "2/2"]
    assert rows["wq"][1:3] == ["Running", "0/1"] and rows["wq"][3:5] == ["of", "3"]
    assert "job.batch/done condition met" in ok(kubectl("wait", "--for=condition=complete", "job/done"))


WORKLOAD_GATES = {"GenericWorkload": True, "WorkloadWithJob": True}
V1A2 = "/apis/scheduling.k8s.io/v1alpha2/namespaces/default"


def test_an_indexed_gang_job_gets_a_workload_and_a_pod_group(make_cluster):
    """WorkloadWithJob: one gang template of minCount = parallelism, one PodGroup from it, both
    owned by the Job; the pods name the PodGroup and the objects go with the Job."""
    cluster = make_cluster(nodes=2, feature_gates=WORKLOAD_GATES)
    job = _job("train", duration=None, completions=3, parallelism=3, completionMode="Indexed")
    _, created, _ = cluster.request("POST", JOBS, job)
    uid = created["metadata"]["uid"]
    pods = until(lambda: len(_pods(cluster, "train")) == 3 and _pods(cluster, "train"))
    [workload] = cluster.request("GET", f"{V1A2}/workloads")[1]["items"]
    [group] = cluster.request("GET", f"{V1A2}/podgroups")[1]["items"]
    wmeta = workload["metadata"]
    assert wmeta["name"].startswith("train-") and len(wmeta["name"]) > len("train-")
    assert wmeta["ownerReferences"] == [
        {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "name": "train",
            "uid": uid,
            "controller": True,
            "blockOwnerDeletion": True,
        }
    ]
    assert workload["spec"] == {
        "controllerRef": {"apiGroup": "batch", "kind": "Job", "name": "train"},
        "podGroupTemplates": [{"name": "train-pgt-0", "schedulingPolicy": {"gang": {"minCount": 3}}}],
    }
    assert group["metadata"]["name"].startswith(f"{wmeta['name']}-train-pgt-0-")
    assert group["metadata"]["ownerReferences"][1] == {
        "apiVersion": "scheduling.k8s.io/v1alpha2",
        "kind": "Workload",
        "name": wmeta["name"],
        "uid": wmeta["uid"],
    }
    assert group["spec"] == {
        "podGroupTemplateRef": {
            "workload": {"workloadName": wmeta["name"], "podGroupTemplateName": "train-pgt-0"}
        },
        "schedulingPolicy": {"gang": {"minCount": 3}},
    }
    assert {p["spec"]["schedulingGroup"]["podGroupName"] for p in pods} == {group["metadata"]["name"]}
    assert cluster.request("DELETE", f"{JOBS}/train")[0] == 200
    assert until(
        lambda: not cluster.store.list("Workload") and not cluster.store.list("PodGroup.scheduling.k8s.io")
    )


def test_only_new_indexed_gang_jobs_get_a_workload(make_cluster):
    cluster = make_cluster(nodes=2, feature_gates=WORKLOAD_GATES)
    cluster.request(
        "POST", JOBS, _job("uneven", duration=None, completions=4, parallelism=2, completionMode="Indexed")
    )
    cluster.request("POST", JOBS, _job("nonindexed", duration=None, completions=2, parallelism=2))
    cluster.request(
        "POST", JOBS, _job("single", duration=None, completions=1, parallelism=1, completionMode="Indexed")
    )
    assert until(lambda: len(cluster.request("GET", PODS)[1]["items"]) == 5)
    assert cluster.store.list("Workload") == []
    assert all("schedulingGroup" not in p["spec"] for p in cluster.request("GET", PODS)[1]["items"])


def test_without_the_gate_a_gang_job_is_scheduled_pod_by_pod(make_cluster):
    cluster = make_cluster(nodes=2, feature_gates={"GenericWorkload": True})
    cluster.request(
        "POST", JOBS, _job("train", duration=None, completions=2, parallelism=2, completionMode="Indexed")
    )
    assert until(lambda: len(_pods(cluster, "train")) == 2)
    assert cluster.store.list("Workload") == []


def test_active_deadline_seconds_fails_a_running_job(make_cluster):
    cluster = make_cluster(nodes=1)
    assert cluster.request("POST", JOBS, _job("slow", duration=None, activeDeadlineSeconds=1))[0] == 201
    assert until(lambda: ("Failed", "DeadlineExceeded") in _conditions(cluster, "slow"), timeout=30)
    assert _conditions(cluster, "slow") == [
        ("FailureTarget", "DeadlineExceeded"),
        ("Failed", "DeadlineExceeded"),
    ]
    assert until(lambda: all(p["status"]["phase"] != "Running" for p in _pods(cluster, "slow")))


def test_a_pod_failure_policy_fails_the_job_on_an_exit_code(make_cluster):
    cluster = make_cluster(nodes=1)
    policy = {"rules": [{"action": "FailJob", "onExitCodes": {"operator": "In", "values": [42]}}]}
    assert cluster.request("POST", JOBS, _job("strict", duration=None, podFailurePolicy=policy))[0] == 201
    running = until(lambda: [p for p in _pods(cluster, "strict") if p["status"]["phase"] == "Running"])
    name = running[0]["metadata"]["name"]
    terminated = {"exitCode": 42, "reason": "Error", "finishedAt": "2026-01-01T00:00:00Z"}
    status = {"phase": "Failed", "containerStatuses": [{"name": "c", "state": {"terminated": terminated}}]}
    code, _, _ = cluster.request(
        "PATCH", f"{PODS}/{name}/status", {"status": status}, content_type="application/merge-patch+json"
    )
    assert code == 200
    assert until(lambda: ("Failed", "PodFailurePolicy") in _conditions(cluster, "strict"))
    failed = next(c for c in _status(cluster, "strict")["conditions"] if c["type"] == "Failed")
    assert failed["message"] == (
        f"Container c for pod default/{name} failed with exit code 42 matching FailJob rule at index 0"
    )
