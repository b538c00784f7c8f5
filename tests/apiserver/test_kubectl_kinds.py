"""kubectl 1.32 and 1.20 on the kinds around workloads: node Leases in ``describe node``, Endpoints
and EndpointSlices, DaemonSets and CronJobs."""

from __future__ import annotations

import json

import pytest
from tests.apiserver.kubectls import KUBECTLS, kubectl_runner, ok, until


@pytest.mark.parametrize("binary", KUBECTLS)
def test_describe_node_shows_its_lease(cluster, binary):
    kubectl = kubectl_runner(binary, cluster.kubeconfig)
    assert until(
        lambda: (
            cluster.request("GET", "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/node-0")[0]
            == 200
        )
    )
    out = ok(kubectl("describe", "node", "node-0"))
    lease = out[out.index("Lease:") :].splitlines()[:4]
    assert lease[1].split() == ["HolderIdentity:", "node-0"]
    assert lease[2].split() == ["AcquireTime:", "<unset>"]
    assert lease[3].split()[0] == "RenewTime:" and lease[3].split()[1] != "<unset>"


@pytest.mark.parametrize("binary", KUBECTLS)
def test_describe_service_daemonset_and_cronjob(cluster, binary, tmp_path):
    kubectl = kubectl_runner(binary, cluster.kubeconfig)
    ds = {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": "agent", "namespace": "default"},
        "spec": {
            "selector": {"matchLabels": {"app": "agent"}},
            "template": {
                "metadata": {"labels": {"app": "agent"}},
                "spec": {
                    "containers": [{"name": "c", "image": "agent:1", "ports": [{"containerPort": 9000}]}]
                },
            },
        },
    }
    svc = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "agent", "namespace": "default"},
        "spec": {"selector": {"app": "agent"}, "ports": [{"port": 80, "targetPort": 9000}]},
    }
    cj = {
        "apiVersion": "batch/v1",
        "kind": "CronJob",
        "metadata": {"name": "nightly", "namespace": "default"},
        "spec": {
            "schedule": "0 3 * * *",
            "jobTemplate": {
                "spec": {
                    "template": {
                        "spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "x"}]}
                    }
                }
            },
        },
    }
    manifest = tmp_path / "all.json"
    manifest.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": [ds, svc, cj]}))
    ok(kubectl("apply", "-f", str(manifest)))

    def two_endpoints() -> bool:
        ep = cluster.request("GET", "/api/v1/namespaces/default/endpoints/agent")[1]
        return len((ep.get("subsets") or [{}])[0].get("addresses") or []) == 2

    assert until(two_endpoints)
    out = ok(kubectl("describe", "service", "agent"))
    endpoints = next(line for line in out.splitlines() if line.startswith("Endpoints:"))
    assert endpoints.count(":9000") == 2
    out = ok(kubectl("describe", "daemonset", "agent"))
    assert "Desired Number of Nodes Scheduled: 2" in out
    assert "2 Running" in out
    if binary != KUBECTLS[1].values[0]:  # kubectl 1.20 describes CronJobs through batch/v1beta1
        out = ok(kubectl("describe", "cronjob", "nightly"))
        assert "0 3 * * *" in out and "Concurrency Policy:" in out
