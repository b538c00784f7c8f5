"""Gang scheduling in ``serve``: a PodGroup of 8 pods with minCount 8 on a cluster with room for 7
binds none of them and says why on the PodGroup; a node more and all 8 are bound together. The same
for an Indexed Job of 8 under WorkloadWithJob."""

from __future__ import annotations

import time
from typing import Any

from tests.apiserver.kubectls import until

from kubesched.controllers.kubelet import simulated_node

GATES = {"GenericWorkload": True, "GangScheduling": True}
V1A2 = "/apis/scheduling.k8s.io/v1alpha2/namespaces/default"
PODS = "/api/v1/namespaces/default/pods"


def _pod(name: str) -> dict[str, Any]:
    return {
        "metadata": {"name": name},
        "spec": {
            "schedulingGroup": {"podGroupName": "train"},
            "containers": [{"name": "c", "image": "i", "resources": {"requests": {"cpu": "1"}}}],
        },
    }


def _condition(cluster: Any, name: str = "train") -> dict[str, Any] | None:
    _, group, _ = cluster.request("GET", f"{V1A2}/podgroups/{name}")
    for cond in (group.get("status") or {}).get("conditions") or []:
        if cond["type"] == "PodGroupScheduled":
            return dict(cond)
    return None


def _bound(cluster: Any) -> dict[str, str]:
    _, pods, _ = cluster.request("GET", PODS)
    return {p["metadata"]["name"]: p["spec"].get("nodeName", "") for p in pods["items"]}


def test_a_gang_binds_all_or_nothing(make_cluster: Any) -> None:
    # One node of 7 CPUs: room for 7 of the 8 one-CPU pods.
    cluster = make_cluster(nodes=1, node_cpu="7", feature_gates=GATES)
    group = {
        "apiVersion": "scheduling.k8s.io/v1alpha2",
        "kind": "PodGroup",
        "metadata": {"name": "train"},
        "spec": {"schedulingPolicy": {"gang": {"minCount": 8}}},
    }
    assert cluster.request("POST", f"{V1A2}/podgroups", group)[0] == 201
    for i in range(8):
        assert cluster.request("POST", PODS, _pod(f"train-{i}"))[0] == 201
    cond = until(lambda: _condition(cluster), timeout=20)
    assert cond is not None
    assert (cond["status"], cond["reason"], cond["message"]) == (
        "False",
        "Unschedulable",
        "pod group is unschedulable",
    )
    time.sleep(0.5)
    assert not any(_bound(cluster).values())

    node = simulated_node(1, cpu="7", memory="64Gi", pods="110", zones=1)
    assert cluster.request("POST", "/api/v1/nodes", node)[0] == 201
    bound = until(lambda: all((b := _bound(cluster)).values()) and b, timeout=30)
    assert bound and len(bound) == 8
    assert until(lambda: (c := _condition(cluster)) is not None and c["status"] == "True")


def test_an_indexed_job_is_a_gang(make_cluster: Any) -> None:
    gates = {**GATES, "WorkloadWithJob": True}
    cluster = make_cluster(nodes=1, node_cpu="7", feature_gates=gates)
    template = {
        "spec": {
            "restartPolicy": "Never",
            "containers": [{"name": "c", "image": "i", "resources": {"requests": {"cpu": "1"}}}],
        }
    }
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "train"},
        "spec": {"completions": 8, "parallelism": 8, "completionMode": "Indexed", "template": template},
    }
    assert cluster.request("POST", "/apis/batch/v1/namespaces/default/jobs", job)[0] == 201
    group = until(lambda: (items := cluster.request("GET", f"{V1A2}/podgroups")[1]["items"]) and items[0])
    assert group["spec"]["schedulingPolicy"] == {"gang": {"minCount": 8}}
    name = group["metadata"]["name"]
    cond = until(lambda: _condition(cluster, name), timeout=20)
    assert cond is not None and (cond["status"], cond["reason"]) == ("False", "Unschedulable")
    assert len(_bound(cluster)) == 8 and not any(_bound(cluster).values())

    node = simulated_node(1, cpu="7", memory="64Gi", pods="110", zones=1)
    assert cluster.request("POST", "/api/v1/nodes", node)[0] == 201
    assert until(lambda: all((b := _bound(cluster)).values()) and len(b) == 8, timeout=30)
    assert until(lambda: (c := _condition(cluster, name)) is not None and c["status"] == "True")
