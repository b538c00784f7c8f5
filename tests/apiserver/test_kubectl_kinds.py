"""kubectl 1.32 and 1.20 on the kinds around workloads: node Leases in ``describe node``, Endpoints
and EndpointSlices, DaemonSets and CronJobs."""

from __future__ import annotations

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
