"""The resourceclaim controller as the simulation runs it (inside the informers' handlers): claims
made from a pod's templates and recorded in its status, reservations of pods that are gone or done
released, claims deallocated when their last consumer leaves, generated claims removed with their
pod; and the simulated DRA driver's slices for GPU nodes."""

from __future__ import annotations

import random
from typing import Any

from kubesched.api.resource import FINALIZER, POD_RESOURCE_CLAIM_ANNOTATION, ResourceSlice
from kubesched.api.resource_rules import validate_resource_slice
from kubesched.controllers.dradriver import DRIVER, DraDriverOptions, SimulatedDraDriver
from kubesched.controllers.resourceclaim import ResourceClaimController, generated_name_base
from kubesched.store.memory import MemoryStore
from kubesched.store.parsers import informer_factory

SPEC = {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu.example.com"}}]}}


class Cluster:
    def __init__(self, driver: DraDriverOptions | None = None) -> None:
        self.store = MemoryStore(uid_seed=0)
        self.informers = informer_factory(self.store)
        self.controller = ResourceClaimController(
            self.store, self.informers, synchronous=True, rng=random.Random(0)
        )
        if driver is not None:
            SimulatedDraDriver(self.store, self.informers, driver, synchronous=True)

    def create(self, obj: dict[str, Any]) -> Any:
        created = self.store.create(obj)
        self.informers.pump()
        return created

    def update(self, obj: dict[str, Any]) -> Any:
        updated = self.store.update(obj)
        self.informers.pump()
        return updated

    def delete(self, kind: str, namespace: str | None, name: str) -> None:
        self.store.delete(kind, namespace, name)
        self.informers.pump()

    def pod(self, name: str) -> Any:
        return self.store.get("Pod", "default", name)

    def claims(self) -> list[Any]:
        return self.store.list("ResourceClaim")

    def claim(self, name: str) -> Any:
        return self.store.get("ResourceClaim", "default", name)


def _template(name: str = "gpu-template", labels: dict[str, str] | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"annotations": {"team": "ml"}}
    if labels:
        meta["labels"] = labels
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"metadata": meta, "spec": SPEC},
    }


def _pod(name: str, *claims: dict[str, str], node: str = "") -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [{"name": "c", "image": "x"}], "resourceClaims": list(claims)}
    if node:
        spec["nodeName"] = node
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default"},
        "spec": spec,
    }


def _claim(name: str, **status: Any) -> dict[str, Any]:
    obj: dict[str, Any] = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": name, "namespace": "default"},
        "spec": SPEC,
    }
    if status:
        obj["status"] = status
    return obj


ALLOCATION = {
    "devices": {"results": [{"request": "gpu", "driver": DRIVER, "pool": "node-a", "device": "gpu-0"}]}
}


def test_a_claim_is_made_from_the_template_owned_by_the_pod_and_recorded_in_its_status() -> None:
    cluster = Cluster()
    cluster.create(_template(labels={"app": "train"}))
    pod = cluster.create(_pod("trainer", {"name": "gpu", "resourceClaimTemplateName": "gpu-template"}))
    [claim] = cluster.claims()
    meta = claim["metadata"]
    assert meta["name"].startswith("trainer-gpu-") and len(meta["name"]) == len("trainer-gpu-") + 5
    assert meta["annotations"] == {"team": "ml", POD_RESOURCE_CLAIM_ANNOTATION: "gpu"}
    assert meta["labels"] == {"app": "train"}
    assert meta["ownerReferences"] == [
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "name": "trainer",
            "uid": pod["metadata"]["uid"],
            "controller": True,
            "blockOwnerDeletion": True,
        }
    ]
    assert claim["spec"] == SPEC
    assert cluster.pod("trainer")["status"]["resourceClaimStatuses"] == [
        {"name": "gpu", "resourceClaimName": meta["name"]}
    ]
    # Syncing again makes no second claim.
    cluster.update(
        {**cluster.pod("trainer"), "metadata": {**cluster.pod("trainer")["metadata"], "labels": {"x": "y"}}}
    )
    assert len(cluster.claims()) == 1


def test_long_names_keep_both_parts() -> None:
    base = generated_name_base("p" * 60, "claim-name")
    assert len(base) <= 57 and base.endswith("-claim-nam"[: len(base.split("-", 1)[1]) + 1])
    assert base.split("-")[1].startswith("claim")


def test_a_missing_template_is_an_event_and_the_claim_is_made_once_the_template_arrives() -> None:
    cluster = Cluster()
    cluster.create(_pod("trainer", {"name": "gpu", "resourceClaimTemplateName": "gpu-template"}))
    assert cluster.claims() == []
    events = [(e["reason"], e["note"]) for e in cluster.store.list("Event")]
    assert events == [
        (
            "FailedResourceClaimCreation",
            'PodResourceClaim gpu: resource claim template "gpu-template": '
            'resourceclaimtemplate.resource.k8s.io "gpu-template" not found',
        )
    ]
    cluster.create(_template())
    assert len(cluster.claims()) == 1
    assert cluster.pod("trainer")["status"]["resourceClaimStatuses"][0]["name"] == "gpu"


def test_generated_claims_go_with_their_pod() -> None:
    cluster = Cluster()
    cluster.create(_template())
    cluster.create(_claim("shared"))
    cluster.create(
        _pod(
            "trainer",
            {"name": "gpu", "resourceClaimTemplateName": "gpu-template"},
            {"name": "shared", "resourceClaimName": "shared"},
        )
    )
    assert len(cluster.claims()) == 2
    cluster.delete("Pod", "default", "trainer")
    # The claim named by the pod is the user's: it stays.
    assert [c["metadata"]["name"] for c in cluster.claims()] == ["shared"]


def test_reservations_of_deleted_pods_are_released_and_the_claim_deallocated() -> None:
    cluster = Cluster()
    a = cluster.create(_pod("a", {"name": "gpu", "resourceClaimName": "shared"}, node="node-a"))
    b = cluster.create(_pod("b", {"name": "gpu", "resourceClaimName": "shared"}, node="node-a"))
    reserved = [
        {"resource": "pods", "name": "a", "uid": a["metadata"]["uid"]},
        {"resource": "pods", "name": "b", "uid": b["metadata"]["uid"]},
    ]
    claim = _claim("shared", allocation=ALLOCATION, reservedFor=reserved)
    claim["metadata"]["finalizers"] = [FINALIZER]
    cluster.create(claim)
    cluster.delete("Pod", "default", "a")
    status = cluster.claim("shared")["status"]
    assert status["reservedFor"] == reserved[1:] and status["allocation"] == ALLOCATION
    cluster.delete("Pod", "default", "b")
    claim = cluster.claim("shared")
    assert claim["status"] == {}
    assert "finalizers" not in claim["metadata"]


def test_a_finished_pods_generated_claim_is_released_and_removed() -> None:
    cluster = Cluster()
    cluster.create(_template())
    pod = cluster.create(_pod("job", {"name": "gpu", "resourceClaimTemplateName": "gpu-template"}))
    [claim] = cluster.claims()
    entry = {"resource": "pods", "name": "job", "uid": pod["metadata"]["uid"]}
    claim = {
        **claim,
        "metadata": {**claim["metadata"], "finalizers": [FINALIZER]},
        "status": {"allocation": ALLOCATION, "reservedFor": [entry]},
    }
    cluster.update(claim)
    pod = cluster.pod("job")
    cluster.update({**pod, "status": {**pod["status"], "phase": "Succeeded"}})
    assert cluster.claims() == []


def test_an_allocation_without_the_finalizer_is_left_as_it_is() -> None:
    """Only claims the scheduler allocated (it sets the finalizer) are deallocated here."""
    cluster = Cluster()
    cluster.create(
        _claim(
            "driver-owned",
            allocation=ALLOCATION,
            reservedFor=[{"resource": "pods", "name": "gone", "uid": "x"}],
        )
    )
    status = cluster.claim("driver-owned")["status"]
    assert "reservedFor" not in status and status["allocation"] == ALLOCATION


def test_a_pod_bound_by_something_else_reserves_its_allocated_claim() -> None:
    cluster = Cluster()
    cluster.create(_claim("shared", allocation=ALLOCATION))
    pod = cluster.create(_pod("a", {"name": "gpu", "resourceClaimName": "shared"}, node="node-a"))
    assert cluster.claim("shared")["status"]["reservedFor"] == [
        {"resource": "pods", "name": "a", "uid": pod["metadata"]["uid"]}
    ]


def _gpu_node(name: str, gpus: int, model: str = "A100") -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubesched.io/gpu-model": model}},
        "status": {"allocatable": {"cpu": "8", "memory": "64Gi", "nvidia.com/gpu": str(gpus)}},
    }


def test_the_driver_publishes_a_slice_per_gpu_node() -> None:
    cluster = Cluster(DraDriverOptions())
    cluster.create(_gpu_node("gpu-a", 2))
    cluster.create(
        {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": "cpu-a"},
            "status": {"allocatable": {"cpu": "8"}},
        }
    )
    [obj] = cluster.store.list("ResourceSlice")
    assert validate_resource_slice(obj) == []
    view = ResourceSlice.from_dict(obj)
    assert (view.driver, view.node_name, view.pool.name, view.pool.generation) == (
        DRIVER,
        "gpu-a",
        "gpu-a",
        0,
    )
    assert [d.name for d in view.devices] == ["gpu-0", "gpu-1"]
    gpu1 = view.devices[1]
    assert gpu1.attributes["model"] == "A100" and gpu1.attributes["index"] == 1
    assert str(gpu1.attributes["driverVersion"]) == "1.0.0"
    assert str(gpu1.attributes["uuid"]).startswith("GPU-")
    assert obj["spec"]["devices"][0]["capacity"] == {"memory": {"value": "80Gi"}}


def test_the_driver_follows_its_nodes() -> None:
    cluster = Cluster(DraDriverOptions())
    node = cluster.create(_gpu_node("gpu-a", 2, model="T4"))
    cluster.update(
        {**node, "status": {"allocatable": {**node["status"]["allocatable"], "nvidia.com/gpu": "4"}}}
    )
    [obj] = cluster.store.list("ResourceSlice")
    assert obj["spec"]["pool"]["generation"] == 1
    assert len(obj["spec"]["devices"]) == 4
    assert obj["spec"]["devices"][0]["capacity"]["memory"]["value"] == "16Gi"
    cluster.delete("Node", None, "gpu-a")
    assert cluster.store.list("ResourceSlice") == []


def test_partitions_share_each_cards_counters_in_a_slice_of_their_own() -> None:
    cluster = Cluster(DraDriverOptions(partitions=True))
    cluster.create(_gpu_node("gpu-a", 1))
    slices = {s["metadata"]["name"]: s for s in cluster.store.list("ResourceSlice")}
    assert set(slices) == {f"gpu-a-{DRIVER}", f"gpu-a-{DRIVER}-counters"}
    for obj in slices.values():
        assert validate_resource_slice(obj) == []
        assert obj["spec"]["pool"] == {"name": "gpu-a", "resourceSliceCount": 2, "generation": 0}
    counters = slices[f"gpu-a-{DRIVER}-counters"]["spec"]["sharedCounters"]
    assert counters == [{"name": "gpu-0-counters", "counters": {"memory": {"value": "80Gi"}}}]
    devices = {d["name"]: d for d in slices[f"gpu-a-{DRIVER}"]["spec"]["devices"]}
    assert set(devices) == {"gpu-0", "gpu-0-half-0", "gpu-0-half-1"}
    assert devices["gpu-0"]["consumesCounters"][0]["counters"] == {"memory": {"value": "80Gi"}}
    assert devices["gpu-0-half-1"]["consumesCounters"][0]["counters"] == {"memory": {"value": "40Gi"}}
    assert devices["gpu-0-half-1"]["attributes"]["partition"] == {"string": "half"}
