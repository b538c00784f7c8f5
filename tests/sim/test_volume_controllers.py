"""The simulation's cluster side of volume binding: the PersistentVolume controller and the
provisioner answer within the informers' pumps (what a scheduler waiting in PreBind drives), and a
StatefulSet's pods given in the input get the claims of its volume claim templates."""

from __future__ import annotations

from typing import Any

from kubesched.api.manifests import LoadResult, ManifestObject
from kubesched.api.storage import (
    BIND_COMPLETED_ANNOTATION,
    BOUND_BY_CONTROLLER_ANNOTATION,
    SELECTED_NODE_ANNOTATION,
)
from kubesched.sim.simulation import Simulation

ZONE = "topology.kubernetes.io/zone"


def _load(sim: Simulation, *objects: dict[str, Any]) -> None:
    sim.load(LoadResult([ManifestObject(o["kind"], o, "test.yaml", i) for i, o in enumerate(objects)]))


def node(name: str, zone: str) -> dict[str, Any]:
    labels = {"kubernetes.io/hostname": name, ZONE: zone}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": labels},
        "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}},
    }


def storage_class(name: str, provisioner: str, mode: str) -> dict[str, Any]:
    return {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "StorageClass",
        "metadata": {"name": name},
        "provisioner": provisioner,
        "volumeBindingMode": mode,
    }


def local_volume(name: str, node_name: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": {"name": name},
        "spec": {
            "capacity": {"storage": "10Gi"},
            "accessModes": ["ReadWriteOnce"],
            "storageClassName": "local",
            "local": {"path": "/mnt/disks/ssd1"},
            "nodeAffinity": {
                "required": {
                    "nodeSelectorTerms": [
                        {
                            "matchExpressions": [
                                {"key": "kubernetes.io/hostname", "operator": "In", "values": [node_name]}
                            ]
                        }
                    ]
                }
            },
        },
    }


def claim(name: str, klass: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "accessModes": ["ReadWriteOnce"],
            "storageClassName": klass,
            "resources": {"requests": {"storage": "1Gi"}},
        },
    }


def statefulset(klass: str = "local") -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {"name": "db", "namespace": "default"},
        "spec": {
            "replicas": 2,
            "serviceName": "db",
            "selector": {"matchLabels": {"app": "db"}},
            "template": {
                "metadata": {"labels": {"app": "db"}},
                "spec": {"containers": [{"name": "c", "image": "x"}]},
            },
            "volumeClaimTemplates": [
                {
                    "metadata": {"name": "data"},
                    "spec": {
                        "accessModes": ["ReadWriteOnce"],
                        "storageClassName": klass,
                        "resources": {"requests": {"storage": "1Gi"}},
                    },
                },
                {
                    "metadata": {"name": "logs"},
                    "spec": {
                        "accessModes": ["ReadWriteOnce"],
                        "storageClassName": klass,
                        "resources": {"requests": {"storage": "1Gi"}},
                    },
                },
            ],
        },
    }


def member(ordinal: int, claims: tuple[str, ...] = ("data",)) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": f"db-{ordinal}",
            "namespace": "default",
            "labels": {"app": "db"},
            "ownerReferences": [
                {
                    "apiVersion": "apps/v1",
                    "kind": "StatefulSet",
                    "name": "db",
                    "uid": "from-the-input",
                    "controller": True,
                }
            ],
        },
        "spec": {
            "containers": [{"name": "c", "image": "x", "resources": {"requests": {"cpu": "100m"}}}],
            "volumes": [
                {"name": c, "persistentVolumeClaim": {"claimName": f"{c}-db-{ordinal}"}} for c in claims
            ],
        },
    }


def _claims(sim: Simulation) -> dict[str, Any]:
    return {c["metadata"]["name"]: c for c in sim.store.list("PersistentVolumeClaim")}


def test_a_statefulsets_pods_get_the_claims_their_volumes_name() -> None:
    sim = Simulation()
    _load(
        sim, node("n1", "a"), storage_class("local", "kubernetes.io/no-provisioner", "WaitForFirstConsumer")
    )
    # db-1's data claim exists already (as in a cluster's dump): it is kept as it is.
    kept = claim("data-db-1", "local")
    kept["metadata"]["labels"] = {"mine": "yes"}
    _load(sim, kept)
    _load(sim, statefulset(), member(0, ("data", "logs")), member(1, ("data",)))
    claims = _claims(sim)
    assert sorted(claims) == ["data-db-0", "data-db-1", "logs-db-0"]
    assert claims["data-db-0"]["metadata"]["labels"] == {"app": "db"}
    assert claims["data-db-1"]["metadata"]["labels"] == {"mine": "yes"}
    notes = [e["note"] for e in sim.store.list("Event") if e["reason"] == "SuccessfulCreate"]
    assert notes == [
        "create Claim data-db-0 Pod db-0 in StatefulSet db success",
        "create Claim logs-db-0 Pod db-0 in StatefulSet db success",
    ]
    sim.run()
    # Without a consumer placed by the scheduler's volume binding, the claims wait and say for whom.
    waiting = [
        e["note"]
        for e in sim.store.list("Event")
        if e["reason"] == "WaitForPodScheduled" and e["regarding"]["name"] == "data-db-0"
    ]
    assert waiting == ["waiting for pod db-0 to be scheduled"]


def test_a_pod_of_no_statefulset_gets_no_claims() -> None:
    sim = Simulation()
    pod = member(0)
    pod["metadata"]["ownerReferences"][0]["kind"] = "ReplicaSet"
    _load(sim, node("n1", "a"), pod)
    assert _claims(sim) == {}


def test_immediate_claims_are_bound_before_the_first_scheduling_cycle() -> None:
    sim = Simulation()
    _load(
        sim,
        node("n1", "a"),
        storage_class("fast", "disk.csi.example.com", "Immediate"),
        claim("ready", "fast"),
    )
    sim.informers.pump()
    got = _claims(sim)["ready"]
    assert got["status"]["phase"] == "Bound"
    assert sim.store.get("PersistentVolume", None, got["spec"]["volumeName"])["status"]["phase"] == "Bound"


def test_a_prebind_wait_sees_a_provisioned_claim_bound() -> None:
    sim = Simulation()
    _load(
        sim,
        node("n1", "a"),
        node("n2", "b"),
        storage_class("zonal", "disk.csi.example.com", "WaitForFirstConsumer"),
        claim("data", "zonal"),
    )
    sim.informers.pump()
    claims = sim.informers.informer("PersistentVolumeClaim")
    assert claims.get("default", "data").phase == "Pending"
    # The scheduler's PreBind: the selected node on the claim, then a wait for the claim to be bound.
    obj = sim.store.get("PersistentVolumeClaim", "default", "data")
    meta = {**obj["metadata"], "annotations": {SELECTED_NODE_ANNOTATION: "n2"}}
    sim.store.update({**obj, "metadata": meta})
    assert sim.driver.wait_for_cluster(lambda: claims.get("default", "data").phase == "Bound", 600)
    volume = sim.informers.informer("PersistentVolume").get(None, claims.get("default", "data").volume_name)
    assert volume.node_affinity is not None and volume.node_affinity.matches("n2", {ZONE: "b"})
    assert not volume.node_affinity.matches("n1", {ZONE: "a"})


def test_a_prebind_wait_sees_a_volume_it_chose_bound() -> None:
    sim = Simulation()
    _load(
        sim,
        node("n1", "a"),
        storage_class("local", "kubernetes.io/no-provisioner", "WaitForFirstConsumer"),
        local_volume("pv-n1", "n1"),
        claim("data", "local"),
    )
    sim.informers.pump()
    claims = sim.informers.informer("PersistentVolumeClaim")
    assert claims.get("default", "data").phase == "Pending"
    assert sim.store.get("PersistentVolume", None, "pv-n1")["status"]["phase"] == "Available"
    # The scheduler's PreBind for a static volume: the volume's claimRef, bound by a controller.
    pv = sim.store.get("PersistentVolume", None, "pv-n1")
    uid = sim.store.get("PersistentVolumeClaim", "default", "data")["metadata"]["uid"]
    ref = {
        "kind": "PersistentVolumeClaim",
        "apiVersion": "v1",
        "namespace": "default",
        "name": "data",
        "uid": uid,
    }
    sim.store.update(
        {
            **pv,
            "metadata": {**pv["metadata"], "annotations": {BOUND_BY_CONTROLLER_ANNOTATION: "yes"}},
            "spec": {**pv["spec"], "claimRef": ref},
        }
    )
    assert sim.driver.wait_for_cluster(lambda: claims.get("default", "data").phase == "Bound", 600)
    assert claims.get("default", "data").volume_name == "pv-n1"
    assert sim.store.get("PersistentVolume", None, "pv-n1")["status"]["phase"] == "Bound"


def test_without_volume_controllers_nothing_is_bound() -> None:
    sim = Simulation(volume_controllers=False)
    _load(
        sim,
        node("n1", "a"),
        storage_class("fast", "disk.csi.example.com", "Immediate"),
        claim("ready", "fast"),
    )
    sim.informers.pump()
    assert "status" not in _claims(sim)["ready"]
    assert sim.store.list("PersistentVolume") == []


def test_malformed_templates_make_no_claims_and_no_traceback() -> None:
    sim = Simulation()
    sts = statefulset()
    sts["spec"]["replicas"] = "three"
    sts["spec"]["volumeClaimTemplates"] = [{"spec": {}}, "data", {"metadata": {"name": 7}}]
    sts["spec"]["persistentVolumeClaimRetentionPolicy"] = "Delete"
    _load(sim, node("n1", "a"), sts, member(0))
    assert _claims(sim) == {}
    sim.run()


def test_a_clusters_dump_of_a_bound_claim_stays_bound() -> None:
    sim = Simulation()
    pv = local_volume("pv-n1", "n1")
    pv["spec"]["claimRef"] = {
        "kind": "PersistentVolumeClaim",
        "apiVersion": "v1",
        "namespace": "default",
        "name": "data",
        "uid": "1f0a3c4e-0000-4000-8000-00000000d474",
    }
    pv["metadata"]["annotations"] = {BOUND_BY_CONTROLLER_ANNOTATION: "yes"}
    pv["status"] = {"phase": "Bound"}
    bound = claim("data", "local")
    bound["metadata"]["uid"] = "1f0a3c4e-0000-4000-8000-00000000d474"
    bound["metadata"]["annotations"] = {
        BIND_COMPLETED_ANNOTATION: "yes",
        BOUND_BY_CONTROLLER_ANNOTATION: "yes",
    }
    bound["spec"]["volumeName"] = "pv-n1"
    bound["status"] = {"phase": "Bound"}
    _load(
        sim,
        node("n1", "a"),
        storage_class("local", "kubernetes.io/no-provisioner", "WaitForFirstConsumer"),
        pv,
        bound,
    )
    sim.run()
    got = _claims(sim)["data"]
    volume = sim.store.get("PersistentVolume", None, "pv-n1")
    # Every object got a new uid; the volume's reference followed its claim's.
    assert volume["spec"]["claimRef"]["uid"] == got["metadata"]["uid"] != bound["metadata"]["uid"]
    assert (got["status"]["phase"], volume["status"]["phase"]) == ("Bound", "Bound")
    assert [e["reason"] for e in sim.store.list("Event")] == []
