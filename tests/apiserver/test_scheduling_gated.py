"""A pod held by scheduling gates reads as upstream's: PodScheduled False with reason
SchedulingGated from its creation, STATUS SchedulingGated in kubectl, Running once the gates go."""

from __future__ import annotations

import pytest
from tests.apiserver.conftest import pod
from tests.apiserver.kubectls import KUBECTLS, kubectl_runner, ok, until

PODS = "/api/v1/namespaces/default/pods"


def _status_column(kubectl, name: str) -> str:
    rows = ok(kubectl("get", "pods", name)).splitlines()
    return rows[1].split()[2]


@pytest.mark.parametrize("binary", KUBECTLS)
def test_gated_pod_shows_scheduling_gated_until_its_gates_go(make_cluster, binary):
    cluster = make_cluster(nodes=1)
    kubectl = kubectl_runner(binary, cluster.kubeconfig)
    gated = pod("held", schedulingGates=[{"name": "example.com/quota"}])
    code, created, _ = cluster.request("POST", PODS, gated)
    assert code == 201
    (cond,) = created["status"]["conditions"]
    assert cond["type"] == "PodScheduled" and cond["status"] == "False"
    assert cond["reason"] == "SchedulingGated"
    assert cond["message"] == "Scheduling is blocked due to non-empty scheduling gates"
    assert _status_column(kubectl, "held") == "SchedulingGated"
    ok(
        kubectl(
            "patch", "pod", "held", "--type=json", "-p", '[{"op":"remove","path":"/spec/schedulingGates"}]'
        )
    )
    assert until(lambda: _status_column(kubectl, "held") == "Running")
    scheduled = cluster.request("GET", f"{PODS}/held")[1]["status"]["conditions"]
    assert {"type": "PodScheduled", "status": "True"}.items() <= next(
        c for c in scheduled if c["type"] == "PodScheduled"
    ).items()
    assert all(c.get("reason") != "SchedulingGated" for c in scheduled)
