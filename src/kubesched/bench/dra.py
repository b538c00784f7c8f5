"""scheduler_perf's DRA workloads (``test/integration/scheduler_perf/dra``): nodes named
``scheduler-perf-dra-<i>`` each publish one ResourceSlice of ``maxClaimsPerNode`` devices of the
driver ``test-driver.cdi.k8s.io`` (upstream's ``createResourceDriver``), the DeviceClass
``test-class`` selects that driver, and every pod asks for one device through the
ResourceClaimTemplate ``test-claim-template`` (or, with ``firstAvailable``, through its prioritized
variant).

- SchedulingWithResourceClaimTemplate: ``existing`` pods fill half the devices, the measured pods
  the other half; the resourceclaim controller makes each pod's claim from the template.
- SteadyStateClusterResourceClaimTemplate: ``init_claims`` claims already allocated (upstream's
  ``allocResourceClaims``: one at a time, each on a random node with a free device), then pods in
  steps of ten, each step deleted once it is scheduled so the cluster stays at the same level.
- ExtendedResource_25Classes / _50Classes and ImplicitExtendedResource_25Classes
  (``dra/extendedresource``, ``DRAExtendedResource``): no claims in the pods at all; pod ``i`` asks
  for one ``example.com/gpu-<i mod classes>`` (or the class's implicit
  ``deviceclass.resource.kubernetes.io/test-class-<i mod classes>``), which no node advertises, so
  DynamicResources serves it from a device of the class that backs the name.

Upstream's other DRA workloads are left out of the suite. Partitionable and
PartitionableBacktracking (``DRAPartitionableDevices``), ConsumableCapacity, DeviceTaintToleration
and FirstAvailable carry no ``threshold``: in v1.35/v1.36 only their small shapes run, none labelled
``performance``. ExtendedResourceScoring has thresholds (120 and 70 pods/s) but what it measures is
NodeResourcesFit scoring DRA-backed extended resources (the class's devices on a node as the
resource's allocatable), which our NodeResourcesFit does not do, so it would not be the same
workload. ListAttributes (``DRAListTypeAttributes``), CompatibilityGroups
(``DRADeviceCompatibilityGroups``) and the pod-group claims of ``workloadresourceclaims`` (the
Workload API, ``GenericWorkload``) need features we do not have, and have no threshold either.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from kubesched.api.resource import RESOURCE_DEVICE_CLASS_PREFIX
from kubesched.bench.base import BenchResult, Obj, pod_default, run_workload
from kubesched.sim.simulation import Simulation

DRIVER = "test-driver.cdi.k8s.io"
DEVICE_CLASS = "test-class"
#: templates/deviceclass-no-devices.yaml: a class no device matches (the first choice that fails).
NO_DEVICES_CLASS = "no-devices-class"
CLAIM_TEMPLATE = "test-claim-template"
NODE_PREFIX = "scheduler-perf-dra-"
#: Pods of one steady-state step (upstream's ``count: 10``).
STEADY_STEP = 10


def dra_node(i: int, devices: int) -> list[Obj]:
    """templates/node-with-dra-test-driver.yaml and its ResourceSlice (``resourceSlice`` in
    scheduler_perf's dra.go: one pool per node, devices ``instance-<k>``)."""
    name = f"{NODE_PREFIX}{i}"
    node: Obj = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
        "status": {
            "capacity": {"pods": "110", "cpu": "4", "memory": "32Gi"},
            "allocatable": {"pods": "110", "cpu": "4", "memory": "32Gi"},
            "conditions": [{"type": "Ready", "status": "True"}],
            "phase": "Running",
        },
    }
    slice_: Obj = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": name},
        "spec": {
            "driver": DRIVER,
            "nodeName": name,
            "pool": {"name": name, "generation": 0, "resourceSliceCount": 1},
            "devices": [
                {
                    "name": f"instance-{k}",
                    "attributes": {
                        "model": {"string": "A100"},
                        "family": {"string": "GPU"},
                        "driverVersion": {"version": "1.2.3"},
                        "dra.example.com/numa": {"int": k},
                    },
                    "capacity": {"memory": {"value": "1Gi"}},
                }
                for k in range(devices)
            ],
        },
    }
    return [node, slice_]


def device_class(name: str = DEVICE_CLASS, driver: str = DRIVER) -> Obj:
    """templates/deviceclass.yaml (or deviceclass-no-devices.yaml)."""
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": {"name": name},
        "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{driver}"'}}]},
    }


def claim_template(namespace: str, *, first_available: bool = False) -> Obj:
    """templates/resourceclaimtemplate.yaml (one request ``req-0``), or
    resourceclaimtemplate-first-available.yaml (a class without devices first, then ``test-class``)."""
    request: dict[str, Any]
    if first_available:
        request = {
            "name": "req-0",
            "firstAvailable": [
                {"name": "sub-0", "deviceClassName": NO_DEVICES_CLASS},
                {"name": "sub-1", "deviceClassName": DEVICE_CLASS},
            ],
        }
    else:
        request = {"name": "req-0", "exactly": {"deviceClassName": DEVICE_CLASS}}
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": CLAIM_TEMPLATE, "namespace": namespace},
        "spec": {"spec": {"devices": {"requests": [request]}}},
    }


def pod_with_claim_template(name: str, namespace: str) -> Obj:
    """templates/pod-with-claim-template.yaml (with pod-default's requests)."""
    pod = pod_default(name)
    pod["metadata"]["namespace"] = namespace
    pod["spec"]["containers"][0]["resources"]["claims"] = [{"name": "resource"}]
    pod["spec"]["resourceClaims"] = [{"name": "resource", "resourceClaimTemplateName": CLAIM_TEMPLATE}]
    return pod


def namespace(name: str) -> Obj:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}


def allocated_claims(count: int, nodes: int, devices: int, seed: int) -> list[Obj]:
    """``count`` claims of templates/resourceclaim.yaml in ``init``, each already allocated one free
    device of a random node with room (upstream's ``allocResourceClaims`` shuffles the nodes for
    every claim and takes the first that fits)."""
    rng = np.random.default_rng(seed)
    used = np.zeros(nodes, dtype=np.int64)
    claims: list[Obj] = []
    for i in range(count):
        free = np.flatnonzero(used < devices)
        if free.size == 0:
            raise ValueError(f"cannot allocate claim {i} out of {count}: every device is taken")
        n = int(rng.choice(free))
        device = int(used[n])
        used[n] += 1
        node = f"{NODE_PREFIX}{n}"
        claims.append(
            {
                "apiVersion": "resource.k8s.io/v1",
                "kind": "ResourceClaim",
                "metadata": {"name": f"test-claim-{i}", "namespace": "init"},
                "spec": {
                    "devices": {"requests": [{"name": "req-0", "exactly": {"deviceClassName": DEVICE_CLASS}}]}
                },
                "status": {
                    "allocation": {
                        "devices": {
                            "results": [
                                {
                                    "request": "req-0",
                                    "driver": DRIVER,
                                    "pool": node,
                                    "device": f"instance-{device}",
                                }
                            ]
                        },
                        "nodeSelector": {
                            "nodeSelectorTerms": [
                                {
                                    "matchFields": [
                                        {"key": "metadata.name", "operator": "In", "values": [node]}
                                    ]
                                }
                            ]
                        },
                    }
                },
            }
        )
    return claims


def _setup(first_available: bool) -> list[Obj]:
    return [
        namespace("init"),
        namespace("test"),
        device_class(),
        device_class(NO_DEVICES_CLASS, "no-such-driver.cdi.k8s.io"),
        claim_template("init"),
        claim_template("test", first_available=first_available),
    ]


def run_claim_template(
    nodes: int = 500,
    existing_pods: int = 2500,
    pods: int = 2500,
    seed: int = 0,
    feature_gates: dict[str, bool] | None = None,
    devices_per_node: int = 10,
) -> BenchResult:
    """SchedulingWithResourceClaimTemplate (5000pods_500nodes)."""
    return run_workload(
        "dra-claim-template",
        nodes,
        existing_pods,
        pods,
        seed,
        setup=_setup(False),
        node=lambda i: dra_node(i, devices_per_node),
        existing=lambda i: pod_with_claim_template(f"init-{i}", "init"),
        measured=lambda i: pod_with_claim_template(f"test-{i}", "test"),
        feature_gates=feature_gates,
    )


def _delete_step(step: int) -> Callable[[Simulation, int], None]:
    """Churn for the steady state: before each step, delete the pods of the step before it."""

    def churn(sim: Simulation, k: int) -> None:
        if k == 0:
            return
        for i in range((k - 1) * step, k * step):
            if sim.store.get("Pod", "test", f"test-{i}") is not None:
                sim.store.delete("Pod", "test", f"test-{i}")

    return churn


def run_steady_state(
    nodes: int = 500,
    fill: str = "empty",
    pods: int = 1000,
    seed: int = 0,
    feature_gates: dict[str, bool] | None = None,
    devices_per_node: int = 10,
    first_available: bool = False,
    name: str = "dra-steady-state",
) -> BenchResult:
    """SteadyStateClusterResourceClaimTemplate: devices taken up front by allocated claims (``fill``:
    ``empty`` none, ``half`` half of them, ``full`` all but ten, as upstream's ``initClaims`` on 500
    nodes), then ``pods`` pods in steps of ten, each step deleted before the next is created.
    Upstream runs steps for a fixed duration; here a fixed number of pods."""
    devices = nodes * devices_per_node
    init_claims = {"empty": 0, "half": devices // 2, "full": max(devices - STEADY_STEP, 0)}[fill]
    claims = allocated_claims(init_claims, nodes, devices_per_node, seed)
    return run_workload(
        name,
        nodes,
        0,
        pods,
        seed,
        setup=[*_setup(first_available), *claims],
        node=lambda i: dra_node(i, devices_per_node),
        existing=lambda i: [],
        measured=lambda i: pod_with_claim_template(f"test-{i}", "test"),
        feature_gates=feature_gates,
        churn=_delete_step(STEADY_STEP),
        churn_every=STEADY_STEP,
    )


def extended_resource_class(i: int, *, implicit: bool = False) -> Obj:
    """templates/deviceclass-extended-resource.yaml (``test-class-<i>`` backing
    ``example.com/gpu-<i>``), or deviceclass-implicit-extended-resource.yaml (no
    ``extendedResourceName``: only the implicit name)."""
    obj = device_class(f"test-class-{i}")
    if not implicit:
        obj["spec"]["extendedResourceName"] = f"example.com/gpu-{i}"
    return obj


def pod_with_extended_resource(name: str, namespace: str, resource: str) -> Obj:
    """templates/pod-with-extended-resource-mod25.yaml (and its mod50 and implicit variants): one
    pause container asking for one ``resource``, requests and limits, nothing else."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "containers": [
                {
                    "name": "pause",
                    "image": "registry.k8s.io/pause:3.9",
                    "resources": {"requests": {resource: "1"}, "limits": {resource: "1"}},
                }
            ]
        },
    }


#: The feature gate the extended-resource workloads turn on (upstream's ``featureGates``).
DRA_EXTENDED_RESOURCE = "DRAExtendedResource"


def run_extended_resource(
    nodes: int = 500,
    existing_pods: int = 2500,
    pods: int = 2500,
    seed: int = 0,
    feature_gates: dict[str, bool] | None = None,
    devices_per_node: int = 10,
    classes: int = 25,
    implicit: bool = False,
    name: str = "dra-extended-resource-25classes",
) -> BenchResult:
    """ExtendedResource_<classes>Classes/5000pods_500nodes (or ImplicitExtendedResource_25Classes):
    ``classes`` DeviceClasses, each selecting every device of the driver; pod ``i`` asks for one
    device through the extended resource of class ``i mod classes``. 2500 + 2500 pods fill the
    5000 devices exactly."""

    def resource(i: int) -> str:
        k = i % classes
        return f"{RESOURCE_DEVICE_CLASS_PREFIX}test-class-{k}" if implicit else f"example.com/gpu-{k}"

    return run_workload(
        name,
        nodes,
        existing_pods,
        pods,
        seed,
        setup=[
            namespace("init"),
            namespace("test"),
            *(extended_resource_class(i, implicit=implicit) for i in range(classes)),
        ],
        node=lambda i: dra_node(i, devices_per_node),
        existing=lambda i: pod_with_extended_resource(f"init-{i}", "init", resource(i)),
        measured=lambda i: pod_with_extended_resource(f"test-{i}", "test", resource(i)),
        feature_gates={DRA_EXTENDED_RESOURCE: True, **(feature_gates or {})},
    )


def run_extended_resource_25(**kw: Any) -> BenchResult:
    """ExtendedResource_25Classes/5000pods_500nodes."""
    return run_extended_resource(classes=25, name="dra-extended-resource-25classes", **kw)


def run_extended_resource_50(**kw: Any) -> BenchResult:
    """ExtendedResource_50Classes/5000pods_500nodes."""
    return run_extended_resource(classes=50, name="dra-extended-resource-50classes", **kw)


def run_implicit_extended_resource_25(**kw: Any) -> BenchResult:
    """ImplicitExtendedResource_25Classes/5000pods_500nodes: the classes' implicit names."""
    return run_extended_resource(
        classes=25, implicit=True, name="dra-implicit-extended-resource-25classes", **kw
    )


def run_steady_empty(**kw: Any) -> BenchResult:
    """SteadyStateClusterResourceClaimTemplate/empty_500nodes."""
    return run_steady_state(fill="empty", name="dra-steady-empty", **kw)


def run_steady_half(**kw: Any) -> BenchResult:
    """SteadyStateClusterResourceClaimTemplate/half_500nodes."""
    return run_steady_state(fill="half", name="dra-steady-half", **kw)


def run_steady_full(**kw: Any) -> BenchResult:
    """SteadyStateClusterResourceClaimTemplate/full_500nodes: room for exactly ten more pods."""
    return run_steady_state(fill="full", name="dra-steady-full", **kw)


def run_steady_first_available(**kw: Any) -> BenchResult:
    """SteadyStateClusterResourceClaimTemplateFirstAvailable, half full."""
    return run_steady_state(fill="half", first_available=True, name="dra-steady-first-available", **kw)
