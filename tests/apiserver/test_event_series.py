"""A pod that stays unschedulable gets one FailedScheduling Event whose series counts the
attempts, as client-go's events broadcaster records them, in both API versions and in kubectl."""

from __future__ import annotations

import pytest
from tests.apiserver.conftest import pod
from tests.apiserver.kubectls import KUBECTLS, kubectl_runner, ok, until

from kubesched.controllers.kubelet import simulated_node

EVENTS_V1 = "/apis/events.k8s.io/v1/namespaces/default/events?fieldSelector=regarding.name%3Dbig"
CORE = "/api/v1/namespaces/default/events?fieldSelector=involvedObject.name%3Dbig"


@pytest.mark.parametrize("binary", KUBECTLS)
def test_failed_scheduling_events_form_a_series(make_cluster, binary):
    cluster = make_cluster(nodes=1, node_cpu="1")
    kubectl = kubectl_runner(binary, cluster.kubeconfig)
    assert cluster.request("POST", "/api/v1/namespaces/default/pods", pod("big", cpu="4"))[0] == 201
    assert until(lambda: cluster.request("GET", EVENTS_V1)[1]["items"])
    # Each new node with room (but a taint the pod does not tolerate) is another attempt.
    for i in (1, 2, 3):
        node = simulated_node(i, cpu="8", memory="8Gi", pods="110", zones=1)
        node["spec"] = {"taints": [{"key": "dedicated", "value": "x", "effect": "NoSchedule"}]}
        assert cluster.request("POST", "/api/v1/nodes", node)[0] == 201
        assert until(
            lambda i=i: (
                (cluster.request("GET", EVENTS_V1)[1]["items"][0].get("series") or {}).get("count", 1)
                >= i + 1
            )
        )
    (event,) = cluster.request("GET", EVENTS_V1)[1]["items"]
    assert event["reason"] == "FailedScheduling" and event["series"]["count"] >= 4
    (core,) = cluster.request("GET", CORE)[1]["items"]
    assert core["count"] == event["series"]["count"] and core["lastTimestamp"] >= core["firstTimestamp"]
    rows = [r for r in ok(kubectl("get", "events", "--sort-by=.lastTimestamp")).splitlines() if "big" in r]
    assert len(rows) == 1 and "FailedScheduling" in rows[0]
    assert f"(x{event['series']['count']} over" in ok(kubectl("describe", "pod", "big"))
