"""CronJobs served: upstream's defaults and refusals, Jobs on the wall clock, kubectl's
``create cronjob``, ``create job --from=cronjob/…`` and columns."""

from __future__ import annotations

import json
from typing import Any

import pytest
from tests.apiserver.kubectls import KUBECTLS, kubectl_runner, ok, until

CJS = "/apis/batch/v1/namespaces/default/cronjobs"
JOBS = "/apis/batch/v1/namespaces/default/jobs"


def _cronjob(name: str = "tick", **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "batch/v1",
        "kind": "CronJob",
        "metadata": {"name": name},
        "spec": {
            "schedule": "*/5 * * * *",
            "jobTemplate": {
                "spec": {
                    "template": {
                        "metadata": {"annotations": {"kubesched.io/duration": "200ms"}},
                        "spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "x"}]},
                    }
                }
            },
            **spec,
        },
    }


def _causes(body: dict[str, Any]) -> list[tuple[str, str]]:
    return [(c["field"], c["message"]) for c in body["details"]["causes"]]


def test_defaults_and_refusals(cluster):
    code, cj, _ = cluster.request("POST", CJS, _cronjob())
    assert code == 201, cj
    spec = cj["spec"]
    assert (spec["concurrencyPolicy"], spec["suspend"]) == ("Allow", False)
    assert (spec["successfulJobsHistoryLimit"], spec["failedJobsHistoryLimit"]) == (3, 1)
    bad = _cronjob("x" * 53, schedule="61 * * * *", timeZone="Mars/Olympus", concurrencyPolicy="Sometimes")
    bad["spec"]["jobTemplate"]["spec"]["template"]["spec"]["restartPolicy"] = "Always"
    code, body, _ = cluster.request("POST", CJS, bad)
    assert code == 422
    assert [f for f, _ in _causes(body)] == [
        "metadata.name",
        "spec.schedule",
        "spec.timeZone",
        "spec.concurrencyPolicy",
        "spec.jobTemplate.spec.template.spec.restartPolicy",
    ]
    code, body, _ = cluster.request("POST", CJS, _cronjob("tz", schedule="TZ=UTC 0 * * * *"))
    assert code == 422
    assert _causes(body) == [
        (
            "spec.schedule",
            'Invalid value: "TZ=UTC 0 * * * *": '
            "cannot use TZ or CRON_TZ in schedule, use timeZone field instead",
        )
    ]
    for schedule in ("@hourly", "0 0 * * 1-5", "@every 1h30m"):
        assert cluster.request("POST", CJS, _cronjob(f"ok-{len(schedule)}", schedule=schedule))[0] == 201
    assert cluster.request("POST", CJS, _cronjob("six", schedule="0 0 0 * * *"))[0] == 422


def test_jobs_run_on_the_wall_clock_and_the_history_is_kept_short(cluster):
    code, _, _ = cluster.request("POST", CJS, _cronjob(schedule="@every 1s", successfulJobsHistoryLimit=1))
    assert code == 201

    def succeeded() -> Any:
        cj = cluster.request("GET", f"{CJS}/tick")[1]
        return cj if (cj.get("status") or {}).get("lastSuccessfulTime") else None

    cj = until(succeeded, timeout=20)
    assert cj, cluster.request("GET", f"{CJS}/tick")[1]
    assert cj["status"]["lastScheduleTime"]
    # Jobs keep coming; at most one finished one stays (plus those still running).
    assert until(lambda: len(cluster.request("GET", JOBS)[1]["items"]) >= 1)
    cluster.request(
        "PATCH", f"{CJS}/tick", {"spec": {"suspend": True}}, content_type="application/merge-patch+json"
    )

    def settled() -> Any:
        jobs = cluster.request("GET", JOBS)[1]["items"]
        done = [
            j
            for j in jobs
            if any(c["type"] == "Complete" for c in (j.get("status") or {}).get("conditions") or [])
        ]
        return len(jobs) == len(done) == 1

    assert until(settled, timeout=20)
    (job,) = cluster.request("GET", JOBS)[1]["items"]
    assert job["metadata"]["ownerReferences"][0]["kind"] == "CronJob"
    # Deleting the CronJob takes its Jobs.
    assert cluster.request("DELETE", f"{CJS}/tick")[0] == 200
    assert until(lambda: not cluster.request("GET", JOBS)[1]["items"])


@pytest.mark.parametrize("binary", KUBECTLS)
def test_kubectl_lists_cronjobs(cluster, binary, tmp_path):
    kubectl = kubectl_runner(binary, cluster.kubeconfig)
    manifest = tmp_path / "cj.json"
    manifest.write_text(json.dumps(_cronjob("nightly", schedule="@daily", timeZone="Europe/Paris")))
    ok(kubectl("apply", "-f", str(manifest)))
    out = ok(kubectl("get", "cronjobs", "-o", "wide"))
    header, row = out.splitlines()
    assert header.split() == [
        "NAME",
        "SCHEDULE",
        "TIMEZONE",
        "SUSPEND",
        "ACTIVE",
        "LAST",
        "SCHEDULE",
        "AGE",
        "CONTAINERS",
        "IMAGES",
        "SELECTOR",
    ]
    cells = row.split()
    assert cells[:6] == ["nightly", "@daily", "Europe/Paris", "False", "0", "<none>"]
    assert cells[7:] == ["c", "x", "<none>"]


def test_kubectl_creates_and_instantiates_cronjobs(cluster):
    # kubectl 1.20 creates CronJobs in batch/v1beta1, which kube-apiserver no longer serves.
    kubectl = kubectl_runner(KUBECTLS[0].values[0], cluster.kubeconfig)
    ok(kubectl("create", "cronjob", "nightly", "--image=busybox", "--schedule=0 3 * * *"))
    cj = cluster.request("GET", f"{CJS}/nightly")[1]
    assert cj["spec"]["schedule"] == "0 3 * * *"
    pod = cj["spec"]["jobTemplate"]["spec"]["template"]["spec"]
    assert pod["containers"][0]["image"] == "busybox" and pod["restartPolicy"] == "OnFailure"
    ok(kubectl("create", "job", "manual", "--from=cronjob/nightly"))
    job = cluster.request("GET", f"{JOBS}/manual")[1]
    assert job["metadata"]["annotations"]["cronjob.kubernetes.io/instantiate"] == "manual"
    assert job["metadata"]["ownerReferences"][0]["name"] == "nightly"
    assert job["spec"]["template"]["spec"]["containers"][0]["image"] == "busybox"
