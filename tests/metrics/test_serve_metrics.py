"""``kubesched serve`` exposes its schedulers' metrics at /metrics, behind its bearer token."""

from __future__ import annotations

import time
from typing import Any

from tests.apiserver.conftest import pod
from tests.metrics.conftest import sample

PODS = "/api/v1/namespaces/default/pods"


def test_metrics_need_the_token_and_count_the_served_schedulers_attempts(cluster: Any) -> None:
    code, _, _ = cluster.request("GET", "/metrics", token=None)
    assert code == 401
    assert cluster.request("GET", "/metrics", token="wrong")[0] == 401

    assert cluster.request("POST", PODS, pod("web-1"))[0] == 201
    deadline = time.time() + 20
    text = ""
    while time.time() < deadline:
        code, text, headers = cluster.request("GET", "/metrics")
        assert code == 200 and headers["Content-Type"].startswith("text/plain")
        if sample(text, "scheduler_schedule_attempts_total", result="scheduled") == 1:
            break
        time.sleep(0.05)
    assert (
        sample(text, "scheduler_schedule_attempts_total", result="scheduled", profile="default-scheduler")
        == 1
    )
    assert sample(text, "scheduler_pending_pods", queue="active") == 0
    assert "volcano_e2e_scheduling_latency_milliseconds" in text


def test_readyz_lists_the_schedulers_check(cluster: Any) -> None:
    code, body, _ = cluster.request("GET", "/readyz?verbose", token=None)
    assert code == 200
    assert body == "[+]ping ok\n[+]sqlite ok\n[+]kubesched-schedulers ok\nreadyz check passed\n"
    assert cluster.request("GET", "/healthz", token=None)[:2] == (200, "ok")


def test_without_schedulers_there_are_no_metrics(make_cluster: Any) -> None:
    cluster = make_cluster(schedulers=False)
    assert cluster.request("GET", "/metrics")[0] == 404
    assert (
        cluster.request("GET", "/readyz?verbose", token=None)[1]
        == "[+]ping ok\n[+]sqlite ok\nreadyz check passed\n"
    )
