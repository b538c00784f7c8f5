"""The PersistentVolume controller and the simulated external provisioner together, as the
simulation runs them (inside the informers' handlers): what a claim becomes, which volume is made
where, what the capacity objects show, and the events a user reads."""

from __future__ import annotations

from typing import Any

import pytest

from kubesched.api.storage import (
    BETA_STORAGE_PROVISIONER_ANNOTATION,
    BIND_COMPLETED_ANNOTATION,
    BOUND_BY_CONTROLLER_ANNOTATION,
    PROVISIONED_BY_ANNOTATION,
    SELECTED_NODE_ANNOTATION,
    STORAGE_PROVISIONER_ANNOTATION,
)
from kubesched.controllers.persistentvolume import PersistentVolumeController
from kubesched.controllers.provisioner import Provisioner
from kubesched.store.memory import MemoryStore
from kubesched.store.parsers import informer_factory

DRIVER = "zonal.csi.example.com"
ZONE = "topology.kubernetes.io/zone"


class Cluster:
    def __init__(self) -> None:
        self.store = MemoryStore(uid_seed=0)
        self.informers = informer_factory(self.store)
        self.controller = PersistentVolumeController(self.store, self.informers, synchronous=True)
        self.provisioner = Provisioner(self.store, self.informers, synchronous=True)

    def create(self, obj: dict[str, Any]) -> Any:
        created = self.store.create(obj)
        self.informers.pump()
        return created

    def claim(self, name: str) -> Any:
        return self.store.get("PersistentVolumeClaim", "default", name)

    def volume(self, name: str) -> Any:
        return self.store.get("PersistentVolume", None, name)

    def select_node(self, claim: str, node: str) -> None:
        """What the scheduler's PreBind writes on a claim to provision."""
        obj = self.claim(claim)
        annotations = {**(obj["metadata"].get("annotations") or {}), SELECTED_NODE_ANNOTATION: node}
        self.store.update({**obj, "metadata": {**obj["metadata"], "annotations": annotations}})
        self.informers.pump()

    def events(self, name: str) -> list[tuple[str, str, str]]:
        return [
            (e["type"], e["reason"], e["note"])
            for e in self.store.list("Event")
            if e["regarding"]["name"] == name
        ]

    def capacity(self, name: str) -> str:
        return str(self.store.get("CSIStorageCapacity", "kube-system", name)["capacity"])


def node(name: str, labels: dict[str, str]) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **labels}},
        "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}},
    }


def storage_class(
    name: str, provisioner: str = DRIVER, mode: str = "WaitForFirstConsumer", **extra: Any
) -> dict[str, Any]:
    return {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "StorageClass",
        "metadata": {"name": name},
        "provisioner": provisioner,
        "volumeBindingMode": mode,
        **extra,
    }


def claim(name: str, size: str = "1Gi", klass: str | None = "zonal") -> dict[str, Any]:
    spec: dict[str, Any] = {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": size}}}
    if klass is not None:
        spec["storageClassName"] = klass
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": name, "namespace": "default"},
        "spec": spec,
        "status": {"phase": "Pending"},
    }


def capacity(name: str, zone: str, amount: str, klass: str = "zonal") -> dict[str, Any]:
    return {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "CSIStorageCapacity",
        "metadata": {"name": name, "namespace": "kube-system"},
        "storageClassName": klass,
        "nodeTopology": {"matchLabels": {ZONE: zone}},
        "capacity": amount,
    }


@pytest.fixture
def cluster() -> Cluster:
    c = Cluster()
    c.create(node("node-a", {ZONE: "zone-a"}))
    c.create(node("node-b", {ZONE: "zone-b"}))
    c.create(storage_class("zonal"))
    return c


def test_an_immediate_claim_is_provisioned_and_bound_at_once(cluster: Cluster) -> None:
    cluster.create(storage_class("fast", mode="Immediate"))
    uid = cluster.create(claim("data", "5Gi", "fast"))["metadata"]["uid"]
    got = cluster.claim("data")
    assert got["status"]["phase"] == "Bound"
    assert got["spec"]["volumeName"] == f"pvc-{uid}"
    annotations = got["metadata"]["annotations"]
    assert annotations[STORAGE_PROVISIONER_ANNOTATION] == DRIVER
    assert annotations[BETA_STORAGE_PROVISIONER_ANNOTATION] == DRIVER
    assert annotations[BIND_COMPLETED_ANNOTATION] == "yes"
    assert annotations[BOUND_BY_CONTROLLER_ANNOTATION] == "yes"
    assert got["status"]["capacity"] == {"storage": "5Gi"}
    volume = cluster.volume(f"pvc-{uid}")
    assert volume["status"]["phase"] == "Bound"
    assert volume["metadata"]["annotations"] == {PROVISIONED_BY_ANNOTATION: DRIVER}
    assert volume["spec"]["claimRef"]["uid"] == uid and volume["spec"]["claimRef"]["name"] == "data"
    assert volume["spec"]["persistentVolumeReclaimPolicy"] == "Delete"
    assert volume["spec"]["storageClassName"] == "fast"
    assert volume["spec"]["csi"] == {"driver": DRIVER, "volumeHandle": f"pvc-{uid}"}
    assert "nodeAffinity" not in volume["spec"]
    assert [e[1] for e in cluster.events("data")] == [
        "ExternalProvisioning",
        "Provisioning",
        "ProvisioningSucceeded",
    ]
    assert cluster.events("data")[2][2] == f"Successfully provisioned volume pvc-{uid}"


def test_a_wait_for_first_consumer_claim_waits_for_the_scheduler_then_lives_in_its_nodes_zone(
    cluster: Cluster,
) -> None:
    uid = cluster.create(claim("data"))["metadata"]["uid"]
    assert cluster.claim("data")["status"]["phase"] == "Pending"
    assert cluster.volume(f"pvc-{uid}") is None
    assert cluster.events("data") == [
        ("Normal", "WaitForFirstConsumer", "waiting for first consumer to be created before binding")
    ]
    cluster.select_node("data", "node-b")
    assert cluster.claim("data")["status"]["phase"] == "Bound"
    affinity = cluster.volume(f"pvc-{uid}")["spec"]["nodeAffinity"]["required"]["nodeSelectorTerms"]
    assert affinity == [{"matchExpressions": [{"key": ZONE, "operator": "In", "values": ["zone-b"]}]}]


def test_the_claim_names_the_pods_waiting_for_it(cluster: Cluster) -> None:
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "db-0", "namespace": "default"},
        "spec": {
            "containers": [{"name": "c", "image": "x"}],
            "volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": "data"}}],
        },
    }
    cluster.store.create(pod)
    cluster.create(claim("data"))
    assert cluster.events("data") == [
        ("Normal", "WaitForPodScheduled", "waiting for pod db-0 to be scheduled")
    ]


def test_the_drivers_topology_keys_place_the_volume(cluster: Cluster) -> None:
    rack = "topology.example.com/rack"
    cluster.create(node("node-r", {ZONE: "zone-a", rack: "r7"}))
    cluster.create(
        {
            "apiVersion": "storage.k8s.io/v1",
            "kind": "CSINode",
            "metadata": {"name": "node-r"},
            "spec": {"drivers": [{"name": DRIVER, "nodeID": "node-r", "topologyKeys": [rack]}]},
        }
    )
    uid = cluster.create(claim("data"))["metadata"]["uid"]
    cluster.select_node("data", "node-r")
    terms = cluster.volume(f"pvc-{uid}")["spec"]["nodeAffinity"]["required"]["nodeSelectorTerms"]
    assert terms == [{"matchExpressions": [{"key": rack, "operator": "In", "values": ["r7"]}]}]


def test_a_node_without_zone_labels_pins_the_volume_to_its_hostname(cluster: Cluster) -> None:
    cluster.create(node("bare", {}))
    uid = cluster.create(claim("data"))["metadata"]["uid"]
    cluster.select_node("data", "bare")
    terms = cluster.volume(f"pvc-{uid}")["spec"]["nodeAffinity"]["required"]["nodeSelectorTerms"]
    assert terms == [
        {"matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "In", "values": ["bare"]}]}
    ]


def test_provisioning_takes_from_the_zones_capacity_and_fails_when_it_is_short(cluster: Cluster) -> None:
    cluster.create(capacity("zonal-a", "zone-a", "10Gi"))
    cluster.create(capacity("zonal-b", "zone-b", "100Gi"))
    cluster.create(claim("small", "4Gi"))
    cluster.select_node("small", "node-a")
    assert cluster.claim("small")["status"]["phase"] == "Bound"
    assert cluster.capacity("zonal-a") == "6Gi"
    assert cluster.capacity("zonal-b") == "100Gi"

    big_uid = cluster.create(claim("big", "8Gi"))["metadata"]["uid"]
    cluster.select_node("big", "node-a")
    big = cluster.claim("big")
    assert big["status"]["phase"] == "Pending"
    # The scheduler is told to place it again: the selected node is gone from the claim.
    assert SELECTED_NODE_ANNOTATION not in big["metadata"]["annotations"]
    assert cluster.volume(f"pvc-{big_uid}") is None
    assert cluster.capacity("zonal-a") == "6Gi"
    failed = [e for e in cluster.events("big") if e[1] == "ProvisioningFailed"]
    assert len(failed) == 1 and failed[0][0] == "Warning"
    assert failed[0][2].startswith(
        'failed to provision volume with StorageClass "zonal": rpc error: code = ResourceExhausted'
    )
    # In the other zone it fits.
    cluster.select_node("big", "node-b")
    assert cluster.claim("big")["status"]["phase"] == "Bound"
    assert cluster.capacity("zonal-b") == "92Gi"


def test_a_deleted_claims_volume_is_deleted_and_its_size_given_back(cluster: Cluster) -> None:
    cluster.create(capacity("zonal-a", "zone-a", "10Gi"))
    uid = cluster.create(claim("data", "4Gi"))["metadata"]["uid"]
    cluster.select_node("data", "node-a")
    assert cluster.capacity("zonal-a") == "6Gi"
    cluster.store.delete("PersistentVolumeClaim", "default", "data")
    cluster.informers.pump()
    assert cluster.volume(f"pvc-{uid}") is None
    assert cluster.capacity("zonal-a") == "10Gi"


def test_a_retained_volume_is_released_and_kept(cluster: Cluster) -> None:
    cluster.create(storage_class("keep", mode="Immediate", reclaimPolicy="Retain"))
    uid = cluster.create(claim("data", "1Gi", "keep"))["metadata"]["uid"]
    cluster.store.delete("PersistentVolumeClaim", "default", "data")
    cluster.informers.pump()
    volume = cluster.volume(f"pvc-{uid}")
    assert volume["status"]["phase"] == "Released"
    assert volume["spec"]["claimRef"]["uid"] == uid


def test_a_class_without_a_provisioner_provisions_nothing(cluster: Cluster) -> None:
    cluster.create(storage_class("local", provisioner="kubernetes.io/no-provisioner"))
    cluster.create(claim("data", "1Gi", "local"))
    cluster.select_node("data", "node-a")
    assert cluster.store.list("PersistentVolume") == []
    assert cluster.events("data")[-1] == (
        "Warning",
        "ProvisioningFailed",
        "no volume plugin matched name: kubernetes.io/no-provisioner",
    )


def test_a_claim_of_a_missing_class_says_so(cluster: Cluster) -> None:
    cluster.create(claim("data", "1Gi", "missing"))
    assert cluster.events("data") == [
        ("Warning", "ProvisioningFailed", 'storageclass.storage.k8s.io "missing" not found')
    ]
    # Once the class exists, the claim is provisioned.
    cluster.create(storage_class("missing", mode="Immediate"))
    assert cluster.claim("data")["status"]["phase"] == "Bound"


def test_a_node_outside_the_allowed_topologies_is_refused(cluster: Cluster) -> None:
    allowed = [{"matchLabelExpressions": [{"key": ZONE, "values": ["zone-a"]}]}]
    cluster.create(storage_class("only-a", allowedTopologies=allowed))
    cluster.create(claim("data", "1Gi", "only-a"))
    cluster.select_node("data", "node-b")
    got = cluster.claim("data")
    assert got["status"]["phase"] == "Pending"
    assert SELECTED_NODE_ANNOTATION not in got["metadata"]["annotations"]
    reasons = [e[1] for e in cluster.events("data")]
    # Refused, and back to waiting for the scheduler.
    assert reasons[-3:] == ["Provisioning", "ProvisioningFailed", "WaitForFirstConsumer"]


def test_an_immediate_class_with_allowed_topologies_provisions_in_the_first(cluster: Cluster) -> None:
    allowed = [{"matchLabelExpressions": [{"key": ZONE, "values": ["zone-b", "zone-a"]}]}]
    cluster.create(storage_class("somewhere", mode="Immediate", allowedTopologies=allowed))
    uid = cluster.create(claim("data", "1Gi", "somewhere"))["metadata"]["uid"]
    terms = cluster.volume(f"pvc-{uid}")["spec"]["nodeAffinity"]["required"]["nodeSelectorTerms"]
    assert terms == [{"matchExpressions": [{"key": ZONE, "operator": "In", "values": ["zone-b"]}]}]


def test_a_claim_without_a_class_gets_the_default_one(cluster: Cluster) -> None:
    cluster.create(
        storage_class(
            "standard",
            mode="Immediate",
            metadata={
                "name": "standard",
                "annotations": {"storageclass.kubernetes.io/is-default-class": "true"},
            },
        )
    )
    cluster.create(claim("data", "1Gi", None))
    got = cluster.claim("data")
    assert got["spec"]["storageClassName"] == "standard"
    assert got["status"]["phase"] == "Bound"


def test_a_migrated_in_tree_provisioner_is_served_by_its_csi_driver(cluster: Cluster) -> None:
    cluster.create(storage_class("pd", provisioner="kubernetes.io/gce-pd", mode="Immediate"))
    uid = cluster.create(claim("data", "1Gi", "pd"))["metadata"]["uid"]
    got = cluster.claim("data")
    assert got["metadata"]["annotations"][STORAGE_PROVISIONER_ANNOTATION] == "pd.csi.storage.gke.io"
    assert cluster.volume(f"pvc-{uid}")["spec"]["csi"]["driver"] == "pd.csi.storage.gke.io"


def test_a_static_volume_is_preferred_over_provisioning(cluster: Cluster) -> None:
    cluster.create(storage_class("fast", mode="Immediate"))
    cluster.create(
        {
            "apiVersion": "v1",
            "kind": "PersistentVolume",
            "metadata": {"name": "static"},
            "spec": {
                "capacity": {"storage": "2Gi"},
                "accessModes": ["ReadWriteOnce"],
                "storageClassName": "fast",
                "csi": {"driver": DRIVER, "volumeHandle": "static"},
            },
        }
    )
    cluster.create(claim("data", "1Gi", "fast"))
    assert cluster.claim("data")["spec"]["volumeName"] == "static"
    assert [v["metadata"]["name"] for v in cluster.store.list("PersistentVolume")] == ["static"]
