"""A served cluster's StatefulSet controller with ``volumeClaimTemplates``: each member's claims,
made before it, named and labelled as upstream names them, owned as the retention policy says, and
bound (through the provisioner) within the tick that made them."""

from __future__ import annotations

from typing import Any

from tests.controllers.admitted import create

from kubesched.controllers.garbagecollector import delete_cascading
from kubesched.controllers.manager import ControllerManager
from kubesched.store.sqlite import SqliteStore


def _set(replicas: int = 2, policy: dict[str, str] | None = None, klass: str = "fast") -> dict[str, Any]:
    spec: dict[str, Any] = {
        "replicas": replicas,
        "serviceName": "db",
        # Members are made together here (with OrderedReady each waits for the one before to run).
        "podManagementPolicy": "Parallel",
        "selector": {"matchLabels": {"app": "db"}},
        "template": {
            "metadata": {"labels": {"app": "db"}},
            "spec": {
                "containers": [{"name": "c", "image": "x"}],
                # A volume named like a template is replaced by the member's claim.
                "volumes": [{"name": "data", "emptyDir": {}}, {"name": "scratch", "emptyDir": {}}],
            },
        },
        "volumeClaimTemplates": [
            {
                "metadata": {"name": "data", "labels": {"tier": "storage"}},
                "spec": {
                    "accessModes": ["ReadWriteOnce"],
                    "storageClassName": klass,
                    "resources": {"requests": {"storage": "1Gi"}},
                },
            }
        ],
    }
    if policy is not None:
        spec["persistentVolumeClaimRetentionPolicy"] = policy
    return {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {"name": "db", "namespace": "default"},
        "spec": spec,
    }


def _fast_class(store: SqliteStore) -> None:
    store.create(
        {
            "apiVersion": "storage.k8s.io/v1",
            "kind": "StorageClass",
            "metadata": {"name": "fast"},
            "provisioner": "disk.csi.example.com",
            "volumeBindingMode": "Immediate",
        }
    )


def _claims(store: SqliteStore) -> dict[str, Any]:
    return {c["metadata"]["name"]: c for c in store.list("PersistentVolumeClaim")}


def test_each_member_gets_its_claims_before_it_and_they_are_bound_in_the_same_tick(
    store: SqliteStore,
) -> None:
    _fast_class(store)
    manager = ControllerManager(store)
    create(store, _set())
    manager.tick()
    claims = _claims(store)
    assert sorted(claims) == ["data-db-0", "data-db-1"]
    for name, c in claims.items():
        assert c["metadata"]["labels"] == {"tier": "storage", "app": "db"}
        assert "ownerReferences" not in c["metadata"]  # Retain for both: nobody owns them
        assert c["status"]["phase"] == "Bound", name
        assert c["spec"]["volumeName"] == f"pvc-{c['metadata']['uid']}"
    pods = {p["metadata"]["name"]: p for p in store.list("Pod")}
    assert sorted(pods) == ["db-0", "db-1"]
    for i in range(2):
        volumes = pods[f"db-{i}"]["spec"]["volumes"]
        assert volumes == [
            {"name": "data", "persistentVolumeClaim": {"claimName": f"data-db-{i}"}},
            {"name": "scratch", "emptyDir": {}},
        ]
    notes = sorted(e["note"] for e in store.list("Event") if e["reason"] == "SuccessfulCreate")
    assert notes == [
        "create Claim data-db-0 Pod db-0 in StatefulSet db success",
        "create Claim data-db-1 Pod db-1 in StatefulSet db success",
    ]


def test_a_pending_members_lost_claim_is_made_again(store: SqliteStore) -> None:
    _fast_class(store)
    manager = ControllerManager(store)
    create(store, _set(replicas=1))
    manager.tick()
    store.delete("PersistentVolumeClaim", "default", "data-db-0")
    manager.tick()
    assert "data-db-0" in _claims(store)


def test_retained_claims_outlive_a_scale_down_and_the_set(store: SqliteStore) -> None:
    _fast_class(store)
    manager = ControllerManager(store)
    create(store, _set())
    manager.tick()
    sts = store.get("StatefulSet", "default", "db")
    store.update({**sts, "spec": {**sts["spec"], "replicas": 1}})
    manager.tick()
    assert sorted(p["metadata"]["name"] for p in store.list("Pod")) == ["db-0"]
    delete_cascading(store, "StatefulSet", "default", "db", "Background")
    assert sorted(_claims(store)) == ["data-db-0", "data-db-1"]


def test_claims_go_with_the_set_when_deleted(store: SqliteStore) -> None:
    _fast_class(store)
    manager = ControllerManager(store)
    create(store, _set(policy={"whenDeleted": "Delete", "whenScaled": "Retain"}))
    manager.tick()
    uid = store.get("StatefulSet", "default", "db")["metadata"]["uid"]
    for c in _claims(store).values():
        (ref,) = c["metadata"]["ownerReferences"]
        assert (ref["kind"], ref["name"], ref["uid"], ref["controller"]) == ("StatefulSet", "db", uid, True)
    delete_cascading(store, "StatefulSet", "default", "db", "Background")
    assert _claims(store) == {}


def test_claims_go_with_a_member_scaled_away(store: SqliteStore) -> None:
    _fast_class(store)
    manager = ControllerManager(store)
    create(store, _set(replicas=2, policy={"whenDeleted": "Retain", "whenScaled": "Delete"}))
    manager.tick()
    sts = store.get("StatefulSet", "default", "db")
    store.update({**sts, "spec": {**sts["spec"], "replicas": 1}})
    manager.tick()
    assert sorted(_claims(store)) == ["data-db-0"]
    # The released volume of the claim that went is deleted by its provisioner.
    assert len(store.list("PersistentVolume")) == 1
