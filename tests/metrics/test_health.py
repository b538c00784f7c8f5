"""The health endpoints and the plain-HTTP metrics server, as kube-scheduler answers them."""

from __future__ import annotations

import http.client
from collections.abc import Iterator

import pytest

from kubesched.metrics.health import health_response, with_ping
from kubesched.runtime.health_server import HealthServer, start_health_server
from kubesched.runtime.metrics import SchedulerMetrics


def get(server: HealthServer, path: str) -> tuple[int, str, dict[str, str]]:
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
    conn.request("GET", path)
    resp = conn.getresponse()
    body = resp.read().decode()
    conn.close()
    return resp.status, body, dict(resp.getheaders())


def test_all_checks_passing() -> None:
    checks = with_ping({"sched-handler-sync": lambda: True})
    assert health_response("readyz", checks) == (200, "ok")
    assert health_response("readyz", checks, verbose=True) == (
        200,
        "[+]ping ok\n[+]sched-handler-sync ok\nreadyz check passed\n",
    )


def test_a_failing_or_raising_check_fails_the_endpoint_and_is_named() -> None:
    def broken() -> bool:
        raise RuntimeError("boom")

    checks = with_ping({"leaderElection": lambda: False, "shutdown": broken, "log": lambda: True})
    code, body = health_response("healthz", checks)
    assert code == 500
    assert body == (
        "[+]ping ok\n"
        "[-]leaderElection failed: reason withheld\n"
        "[-]shutdown failed: reason withheld\n"
        "[+]log ok\n"
        "healthz check failed\n"
    )
    code, body = health_response("healthz", checks, exclude=["leaderElection", "shutdown", "nope"])
    assert code == 200 and body == "ok"
    _, body = health_response("healthz", checks, exclude=["leaderElection", "shutdown"], verbose=True)
    assert "[+]leaderElection excluded: ok\n" in body


def test_one_check_by_its_path() -> None:
    checks = with_ping({"bad": lambda: False})
    assert health_response("livez", checks, check="ping") == (200, "ok")
    assert health_response("livez", checks, check="bad") == (500, "internal server error: bad check failed\n")
    assert health_response("livez", checks, check="missing")[0] == 404


@pytest.fixture
def ready() -> dict[str, bool]:
    return {"synced": True}


@pytest.fixture
def server(ready: dict[str, bool]) -> Iterator[HealthServer]:
    metrics = SchedulerMetrics(process=False)
    metrics.kube.schedule_attempts.labels("scheduled", "default-scheduler").inc()
    srv = start_health_server(
        "127.0.0.1",
        0,
        metrics,
        {"sched-handler-sync": lambda: ready["synced"]},
        ready_checks={"shutdown": lambda: True},
    )
    yield srv
    srv.stop()


def test_server_answers_metrics_and_health(server: HealthServer, ready: dict[str, bool]) -> None:
    code, body, headers = get(server, "/metrics")
    assert code == 200 and headers["Content-Type"].startswith("text/plain; version=0.0.4")
    assert 'scheduler_schedule_attempts_total{profile="default-scheduler",result="scheduled"} 1.0' in body
    assert get(server, "/healthz")[:2] == (200, "ok")
    code, body, _ = get(server, "/readyz?verbose")
    assert code == 200
    assert body == "[+]ping ok\n[+]sched-handler-sync ok\n[+]shutdown ok\nreadyz check passed\n"
    assert get(server, "/livez/shutdown")[0] == 404  # a readyz-only check

    ready["synced"] = False
    code, body, _ = get(server, "/readyz")
    assert code == 500 and "[-]sched-handler-sync failed: reason withheld\n" in body
    assert get(server, "/readyz/sched-handler-sync")[0] == 500
    assert get(server, "/readyz/shutdown")[:2] == (200, "ok")


def test_server_stops_and_frees_its_port(server: HealthServer) -> None:
    port = server.port
    server.stop()
    again = start_health_server("127.0.0.1", port, None, {})
    try:
        assert get(again, "/healthz")[:2] == (200, "ok")
        assert get(again, "/metrics")[0] == 404
    finally:
        again.stop()


def test_a_port_in_use_is_an_error(server: HealthServer) -> None:
    with pytest.raises(OSError):
        start_health_server("127.0.0.1", server.port, None, {})
