"""The simulated kubelets' node Leases: made for each node, renewed every 10 seconds, gone with the
node."""

from __future__ import annotations

from kubesched.controllers.garbagecollector import delete_cascading
from kubesched.controllers.nodelease import NodeLeaseController, micro_time, spread
from kubesched.store.informers import InformerFactory


def test_each_node_gets_a_lease_renewed_every_ten_seconds(store):
    now = [1_700_000_000.0]
    informers = InformerFactory(store)
    leases = NodeLeaseController(store, informers, clock=lambda: now[0])
    informers.pump()
    leases.sync()
    lease = store.get("Lease", "kube-node-lease", "n1")
    assert lease["spec"] == {
        "holderIdentity": "n1",
        "leaseDurationSeconds": 40,
        "renewTime": "2023-11-14T22:13:20.000000Z",
    }
    node = store.get("Node", None, "n1")
    assert lease["metadata"]["ownerReferences"] == [
        {"apiVersion": "v1", "kind": "Node", "name": "n1", "uid": node["metadata"]["uid"]}
    ]
    # The first renewal comes within 5 to 10 seconds (the node's own part), then every 10.
    first = 1_700_000_000.0 + 10 * (0.5 + 0.5 * spread("n1"))
    assert leases.next_due == first
    rv = store.resource_version
    now[0] = first - 0.1
    leases.sync()
    assert store.resource_version == rv  # not due yet
    now[0] = first
    leases.sync()
    assert store.get("Lease", "kube-node-lease", "n1")["spec"]["renewTime"] == micro_time(first)
    assert leases.next_due == first + 10
    # The lease goes with its node, and is not renewed again.
    delete_cascading(store, "Node", None, "n1", "Background")
    assert store.get("Lease", "kube-node-lease", "n1") is None
    informers.pump()
    now[0] += 10
    leases.sync()
    assert store.get("Lease", "kube-node-lease", "n1") is None
