"""DynamicResources through whole simulations, with the resourceclaim controller doing the
cluster's half: pods with claims on nodes with ResourceSlices get distinct devices and their claims
show the allocation and the reservation; a pod no device is left for is pending with upstream's
message, and explain names its claim; a device freed when its pod goes lets the next pod in; a pod
waits at PreEnqueue until the claim of its template exists; extended resources backed by a
DeviceClass are allocated through the scheduler's own claim.
"""

from __future__ import annotations

import copy
from typing import Any

from kubesched.framework.config import config_from_dict
from kubesched.framework.outcome import PodOutcome
from kubesched.plugins import default_registry
from kubesched.sim.simulation import Simulation

Obj = dict[str, Any]
DRIVER = "gpu.example.com"


def node(name: str) -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
        "status": {"allocatable": {"cpu": "8", "memory": "16Gi", "pods": "110"}},
    }


def gpu_slice(node_name: str, *devices: str) -> Obj:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": f"{node_name}-gpus"},
        "spec": {
            "driver": DRIVER,
            "nodeName": node_name,
            "pool": {"name": node_name, "generation": 1, "resourceSliceCount": 1},
            "devices": [{"name": d, "attributes": {"model": {"string": "a100"}}} for d in devices],
        },
    }


GPU_CLASS: Obj = {
    "apiVersion": "resource.k8s.io/v1",
    "kind": "DeviceClass",
    "metadata": {"name": "gpu"},
    "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{DRIVER}"'}}]},
}


def gpu_claim(name: str, **meta: Any) -> Obj:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": name, "namespace": "default", **meta},
        "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu"}}]}},
    }


def gpu_pod(name: str, claim: str, *, template: bool = False) -> Obj:
    source = {"resourceClaimTemplateName": claim} if template else {"resourceClaimName": claim}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "containers": [{"name": "c", "image": "i", "resources": {"claims": [{"name": "gpu"}]}}],
            "resourceClaims": [{"name": "gpu", **source}],
        },
    }


def simulation(*objs: Obj, explain: bool = False) -> Simulation:
    sim = Simulation(registry=default_registry(), explain=explain)
    for obj in objs:
        sim.store.create(copy.deepcopy(obj))
    return sim


def outcomes(sim: Simulation) -> dict[str, PodOutcome]:
    return {o.name: o for o in sim.run().outcomes}


def devices_of(sim: Simulation, claim: str) -> list[tuple[str, str]]:
    obj = sim.store.get("ResourceClaim", "default", claim)
    assert obj is not None
    results = obj["status"]["allocation"]["devices"]["results"]
    return [(r["pool"], r["device"]) for r in results]


def reserved_for(sim: Simulation, claim: str) -> list[str]:
    obj = sim.store.get("ResourceClaim", "default", claim)
    assert obj is not None
    return [r["name"] for r in (obj.get("status") or {}).get("reservedFor") or []]


CLUSTER = [node("n1"), node("n2"), gpu_slice("n1", "gpu-0"), gpu_slice("n2", "gpu-0"), GPU_CLASS]


def test_pods_get_distinct_devices_and_their_claims_record_allocation_and_reservation() -> None:
    pods = [gpu_pod(f"p{i}", f"c{i}") for i in range(2)]
    sim = simulation(*CLUSTER, gpu_claim("c0"), gpu_claim("c1"), *pods)
    got = outcomes(sim)
    assert {o.status for o in got.values()} == {"Scheduled"}
    assert {got["p0"].node, got["p1"].node} == {"n1", "n2"}
    for i in range(2):
        [(pool, device)] = devices_of(sim, f"c{i}")
        # A device of the node the pod went to, reserved for that pod, protected from deletion.
        assert (pool, device) == (got[f"p{i}"].node, "gpu-0")
        assert reserved_for(sim, f"c{i}") == [f"p{i}"]
        stored = sim.store.get("ResourceClaim", "default", f"c{i}")
        assert stored is not None
        assert stored["metadata"]["finalizers"] == ["resource.kubernetes.io/delete-protection"]


def test_a_pod_no_device_is_left_for_is_pending_with_upstreams_message() -> None:
    pods = [gpu_pod(f"p{i}", f"c{i}") for i in range(3)]
    sim = simulation(*CLUSTER, *(gpu_claim(f"c{i}") for i in range(3)), *pods, explain=True)
    got = outcomes(sim)
    pending = [o for o in got.values() if o.status != "Scheduled"]
    assert len(pending) == 1
    [late] = pending
    assert late.status == "Unschedulable"
    assert late.message == (
        "0/2 nodes are available: 2 cannot allocate all claims. still not schedulable, "
        "preemption: 0/2 nodes are available: 2 Preemption is not helpful for scheduling."
    )
    claim = f"c{late.name[1:]}"
    assert late.explain is not None
    assert late.explain["filter"]["n1"]["DynamicResources"] == (
        f'cannot allocate all claims (resourceclaim "default/{claim}")'
    )
    assert reserved_for(sim, claim) == []


def test_a_freed_device_goes_to_the_pod_that_waited_for_it() -> None:
    sim = simulation(node("n1"), gpu_slice("n1", "gpu-0"), GPU_CLASS, gpu_claim("c0"), gpu_pod("p0", "c0"))
    assert outcomes(sim)["p0"].status == "Scheduled"
    sim.store.create(gpu_claim("c1"))
    sim.store.create(gpu_pod("p1", "c1"))
    assert outcomes(sim)["p1"].status == "Unschedulable"

    # The resourceclaim controller releases the claim of a pod that is gone and deallocates it.
    sim.store.delete("Pod", "default", "p0")
    got = outcomes(sim)["p1"]
    assert got.status == "Scheduled" and got.node == "n1"
    assert devices_of(sim, "c1") == [("n1", "gpu-0")]
    assert reserved_for(sim, "c1") == ["p1"]
    stored = sim.store.get("ResourceClaim", "default", "c0")
    assert stored is not None and not stored.get("status", {}).get("allocation")


TEMPLATE: Obj = {
    "apiVersion": "resource.k8s.io/v1",
    "kind": "ResourceClaimTemplate",
    "metadata": {"name": "gpu-template", "namespace": "default"},
    "spec": {"spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu"}}]}}},
}


def generated_claim(sim: Simulation, pod: str) -> str:
    obj = sim.store.get("Pod", "default", pod)
    assert obj is not None
    [status] = obj["status"]["resourceClaimStatuses"]
    return str(status["resourceClaimName"])


def test_pods_of_a_template_get_claims_of_their_own_on_distinct_devices() -> None:
    pods = [gpu_pod(f"p{i}", "gpu-template", template=True) for i in range(3)]
    sim = simulation(*CLUSTER, TEMPLATE, *pods)
    got = outcomes(sim)
    scheduled = sorted(name for name, o in got.items() if o.status == "Scheduled")
    assert len(scheduled) == 2
    devices = {devices_of(sim, generated_claim(sim, name))[0] for name in scheduled}
    assert devices == {("n1", "gpu-0"), ("n2", "gpu-0")}
    for name in scheduled:
        assert reserved_for(sim, generated_claim(sim, name)) == [name]
    [late] = [o for o in got.values() if o.status != "Scheduled"]
    assert late.message.startswith("0/2 nodes are available: 2 cannot allocate all claims.")


def test_a_pod_waits_for_the_claim_of_its_template() -> None:
    sim = simulation(*CLUSTER, gpu_pod("p", "gpu-template", template=True))
    got = outcomes(sim)["p"]
    assert got.status == "Pending"
    assert got.message == 'pod "default/p": ResourceClaim not created yet'

    # With the template, the resourceclaim controller generates the pod's claim and records it in
    # the pod's status: the pod is let in and scheduled.
    sim.store.create(copy.deepcopy(TEMPLATE))
    got = outcomes(sim)["p"]
    assert got.status == "Scheduled"
    assert reserved_for(sim, generated_claim(sim, "p")) == ["p"]


def extended_resource_simulation(*objs: Obj) -> Simulation:
    config = config_from_dict(
        {
            "apiVersion": "kubescheduler.config.k8s.io/v1",
            "kind": "KubeSchedulerConfiguration",
            "featureGates": {"DRAExtendedResource": True},
        },
        default_registry(),
    )
    sim = Simulation(config, default_registry())
    for obj in objs:
        sim.store.create(copy.deepcopy(obj))
    return sim


def extended_pod(name: str, count: int) -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "containers": [{"name": "c", "image": "i", "resources": {"requests": {"example.com/gpu": count}}}]
        },
    }


GPU_CLASS_WITH_EXTENDED_RESOURCE: Obj = {
    **GPU_CLASS,
    "spec": {**GPU_CLASS["spec"], "extendedResourceName": "example.com/gpu"},
}


def test_an_extended_resource_backed_by_a_device_class_is_served_from_devices() -> None:
    sim = extended_resource_simulation(
        node("n1"), gpu_slice("n1", "gpu-0", "gpu-1"), GPU_CLASS_WITH_EXTENDED_RESOURCE, extended_pod("p", 2)
    )
    got = outcomes(sim)["p"]
    assert got.status == "Scheduled" and got.node == "n1"
    [claim] = sim.store.list("ResourceClaim")
    meta = claim["metadata"]
    assert meta["name"].startswith("p-extended-resources-")
    assert meta["annotations"] == {"resource.kubernetes.io/extended-resource-claim": "true"}
    assert meta["ownerReferences"][0]["name"] == "p"
    devices = sorted(r["device"] for r in claim["status"]["allocation"]["devices"]["results"])
    assert devices == ["gpu-0", "gpu-1"]
    assert [r["name"] for r in claim["status"]["reservedFor"]] == ["p"]
    pod = sim.store.get("Pod", "default", "p")
    assert pod is not None
    assert pod["status"]["extendedResourceClaimStatus"] == {
        "requestMappings": [
            {"containerName": "c", "resourceName": "example.com/gpu", "requestName": "container-0-request-0"}
        ],
        "resourceClaimName": meta["name"],
    }


def test_an_extended_resource_without_enough_devices_cannot_be_allocated() -> None:
    sim = extended_resource_simulation(
        node("n1"), gpu_slice("n1", "gpu-0"), GPU_CLASS_WITH_EXTENDED_RESOURCE, extended_pod("p", 2)
    )
    got = outcomes(sim)["p"]
    assert got.status == "Unschedulable"
    assert got.message.startswith("0/1 nodes are available: 1 cannot allocate all claims.")
    assert sim.store.list("ResourceClaim") == []


def test_without_the_gate_an_extended_resource_needs_the_node_to_advertise_it() -> None:
    sim = simulation(
        node("n1"), gpu_slice("n1", "gpu-0"), GPU_CLASS_WITH_EXTENDED_RESOURCE, extended_pod("p", 1)
    )
    got = outcomes(sim)["p"]
    assert got.status == "Unschedulable"
    assert got.message.startswith("0/1 nodes are available: 1 Insufficient example.com/gpu.")
