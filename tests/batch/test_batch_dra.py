"""DynamicResources in the batch pipeline as Volcano runs it: a gang is placed only if every
member's claims can be allocated together.

The predicates plugin runs DynamicResources' PreFilter and Filter for each task, its Reserve when
the task is allocated (the devices are in flight, so the next member, of this gang or another, sees
them taken), its Unreserve when the statement is discarded (a gang that cannot be placed whole
gives its devices back), and its PreBind (the claim's allocation and reservation written) before
the pod is bound. The simulation's resourceclaim controller makes each member's claim from its
template.
"""

from __future__ import annotations

import copy
from collections import Counter
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kubesched.batch.apply import PRE_BIND_FAILED_REASON
from kubesched.batch.conf_loader import batch_conf_from_dict
from kubesched.plugins.dynamicresources.manager import dra_manager
from kubesched.sim.simulation import Simulation, SimulationResult
from kubesched.store.base import Conflict
from kubesched.store.ports import StorePorts

Obj = dict[str, Any]
VOLCANO = "scheduling.volcano.sh/v1beta1"
HOSTNAME = "kubernetes.io/hostname"
DRIVER = "gpu.example.com"

# -- builders (each batch test file keeps its own: tests import no sibling modules) --------------- #


def node(name: str, cpu: str = "8") -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {HOSTNAME: name}},
        "status": {"allocatable": {"cpu": cpu, "memory": "64Gi", "pods": "110"}},
    }


def gpu_slice(node_name: str, devices: int) -> Obj:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": f"{node_name}-gpus"},
        "spec": {
            "driver": DRIVER,
            "nodeName": node_name,
            "pool": {"name": node_name, "generation": 1, "resourceSliceCount": 1},
            "devices": [{"name": f"gpu-{i}"} for i in range(devices)],
        },
    }


def device_class(name: str = "gpu", expression: str = f'device.driver == "{DRIVER}"') -> Obj:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": {"name": name},
        "spec": {"selectors": [{"cel": {"expression": expression}}]},
    }


def gpu_spec(count: int = 1) -> Obj:
    return {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu", "count": count}}]}}


def template(name: str = "one-gpu", count: int = 1, namespace: str = "ns") -> Obj:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"spec": gpu_spec(count)},
    }


def resource_claim(name: str, namespace: str = "ns") -> Obj:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": name, "namespace": namespace},
        "spec": gpu_spec(),
    }


def group(
    name: str, min_member: int, namespace: str = "ns", queue: str = "default", priority_class: str = ""
) -> Obj:
    spec: Obj = {"minMember": min_member, "queue": queue}
    if priority_class:
        spec["priorityClassName"] = priority_class
    return {
        "apiVersion": VOLCANO,
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": namespace},
        "spec": spec,
        "status": {"phase": "Inqueue"},
    }


def priority_class(name: str, value: int) -> Obj:
    return {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": name},
        "value": value,
    }


def queue(name: str) -> Obj:
    return {
        "apiVersion": VOLCANO,
        "kind": "Queue",
        "metadata": {"name": name},
        "spec": {"weight": 1},
    }


def pod(
    name: str,
    grp: str,
    *,
    claim_template: str | None = "one-gpu",
    claim_name: str | None = None,
    cpu: str = "1",
    namespace: str = "ns",
    priority: int | None = None,
) -> Obj:
    spec: Obj = {
        "schedulerName": "volcano",
        "containers": [{"name": "c", "image": "x", "resources": {"requests": {"cpu": cpu, "memory": "1G"}}}],
    }
    if claim_name is not None:
        spec["resourceClaims"] = [{"name": "gpu", "resourceClaimName": claim_name}]
    elif claim_template is not None:
        spec["resourceClaims"] = [{"name": "gpu", "resourceClaimTemplateName": claim_template}]
    if "resourceClaims" in spec:
        spec["containers"][0]["resources"]["claims"] = [{"name": "gpu"}]
    if priority is not None:
        spec["priority"] = priority
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "annotations": {"scheduling.k8s.io/group-name": grp},
        },
        "spec": spec,
    }


ORDER = (
    "PriorityClass",
    "Queue",
    "Node",
    "DeviceClass",
    "ResourceSlice",
    "ResourceClaimTemplate",
    "ResourceClaim",
    "PodGroup",
    "Pod",
)

CONF = """
actions: "enqueue, allocate, backfill"
tiers:
- plugins: [{name: priority}, {name: gang}]
- plugins: [{name: predicates}, {name: nodeorder}]
"""


def simulation(objs: list[Obj], conf: str = CONF) -> Simulation:
    sim = Simulation(seed=0, batch_conf=batch_conf_from_dict(yaml.safe_load(conf), "test.conf"))
    for obj in sorted(objs, key=lambda o: ORDER.index(o["kind"])):
        sim.store.create(copy.deepcopy(obj))
    return sim


def placed(result: SimulationResult) -> dict[str, str | None]:
    return {o.name: o.node for o in result.outcomes}


def stored(sim: Simulation, kind: str, name: str, namespace: str | None = "ns") -> Obj:
    obj = sim.store.get(kind, namespace, name)
    assert obj is not None
    return dict(obj)


def claim_of(sim: Simulation, pod_name: str, namespace: str = "ns") -> str | None:
    """The claim a pod uses: the one named, or the one generated from its template."""
    obj = stored(sim, "Pod", pod_name, namespace)
    entry = obj["spec"]["resourceClaims"][0]
    if entry.get("resourceClaimName"):
        return str(entry["resourceClaimName"])
    for status in (obj.get("status") or {}).get("resourceClaimStatuses") or []:
        if status.get("name") == entry["name"]:
            return str(status["resourceClaimName"])
    return None


def allocated_devices(sim: Simulation, claim_name: str, namespace: str = "ns") -> list[tuple[str, str]]:
    obj = stored(sim, "ResourceClaim", claim_name, namespace)
    allocation = (obj.get("status") or {}).get("allocation")
    if not allocation:
        return []
    return [(r["pool"], r["device"]) for r in allocation["devices"]["results"]]


def reserved_for(sim: Simulation, claim_name: str, namespace: str = "ns") -> list[str]:
    obj = stored(sim, "ResourceClaim", claim_name, namespace)
    return [r["name"] for r in (obj.get("status") or {}).get("reservedFor") or []]


def all_allocated_devices(sim: Simulation) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    for obj in sim.store.list("ResourceClaim"):
        allocation = (obj.get("status") or {}).get("allocation")
        if allocation:
            out.extend((r["pool"], r["device"]) for r in allocation["devices"]["results"])
    return out


def in_flight(sim: Simulation) -> list[str]:
    return [c.name for c in dra_manager(sim.informers).in_flight_claims()]


def gpu_cluster(nodes: int, devices: int) -> list[Obj]:
    objs: list[Obj] = [device_class(), template()]
    for i in range(1, nodes + 1):
        objs += [node(f"n{i}"), gpu_slice(f"n{i}", devices)]
    return objs


def gang(name: str, size: int, **kw: Any) -> list[Obj]:
    return [group(name, size), *(pod(f"{name}-{i}", name, **kw) for i in range(size))]


# -- Volcano's TestAllocateWithDRA (actions/allocate/allocate_test.go) ---------------------------- #

#: Volcano's test registers gang and predicates (with DRA switched on) and runs allocate alone.
VOLCANO_CONF = """
actions: "allocate"
tiers:
- plugins:
  - {name: gang}
  - {name: predicates, arguments: {predicate.DynamicResourceAllocationEnable: true}}
"""


@pytest.mark.parametrize("case", ["Allocate normal resourceClaim successfully", "claim cel runtime errors"])
def test_allocate_with_dra(case: str) -> None:
    expression = (
        "device.driver == 'gpu.example.com'"
        if case == "Allocate normal resourceClaim successfully"
        else 'device.attributes["some-driver"].healthy'
    )
    slice_ = gpu_slice("n1", 0)
    slice_["metadata"]["name"] = "n1-slice1"
    slice_["spec"]["pool"]["name"] = "gpu-worker"
    slice_["spec"]["devices"] = [{"name": "gpu-1"}]
    gpu_class = device_class("gpu.example.com", expression)
    claim = resource_claim("claim1", "c1")
    claim["spec"]["devices"]["requests"][0]["exactly"]["deviceClassName"] = "gpu.example.com"
    p1 = pod("p1", "pg1", claim_name="claim1", namespace="c1")
    sim = simulation(
        [queue("c1"), node("n1", cpu="2"), gpu_class, slice_, claim, group("pg1", 1, "c1", "c1"), p1],
        VOLCANO_CONF,
    )
    result = sim.run()
    if case == "Allocate normal resourceClaim successfully":
        assert placed(result) == {"p1": "n1"}
        assert allocated_devices(sim, "claim1", "c1") == [("gpu-worker", "gpu-1")]
        assert reserved_for(sim, "claim1", "c1") == ["p1"]
    else:
        # The selector fails at runtime on the device: the task fits nowhere, the group stays
        # Inqueue and the claim is not allocated.
        assert placed(result) == {"p1": None}
        assert [g.phase for g in result.pod_groups] == ["Inqueue"]
        assert allocated_devices(sim, "claim1", "c1") == []
        (outcome,) = result.outcomes
        assert outcome.message == (
            "0/1 nodes are unavailable: 1 class gpu.example.com: selector #0: CEL runtime error: "
            "no such key: healthy."
        )
    assert in_flight(sim) == []


# -- gangs of pods with claims -------------------------------------------------------------------- #


def test_gang_of_four_gets_four_distinct_devices_on_two_nodes() -> None:
    sim = simulation([*gpu_cluster(nodes=2, devices=2), *gang("train", 4)])
    result = sim.run()
    got = placed(result)
    assert sorted(got.values(), key=str) == ["n1", "n1", "n2", "n2"]
    devices = []
    for name, node_name in got.items():
        claim = claim_of(sim, name)
        assert claim is not None
        (device,) = allocated_devices(sim, claim)
        # The device is on the member's node, and its claim is reserved for the member.
        assert device[0] == node_name
        assert reserved_for(sim, claim) == [name]
        devices.append(device)
    assert sorted(devices) == [("n1", "gpu-0"), ("n1", "gpu-1"), ("n2", "gpu-0"), ("n2", "gpu-1")]
    assert [g.phase for g in result.pod_groups] == ["Running"]
    assert in_flight(sim) == []


def test_gang_of_five_on_four_devices_places_nobody_and_allocates_nothing() -> None:
    sim = simulation([*gpu_cluster(nodes=2, devices=2), *gang("train", 5)])
    result = sim.run()
    assert set(placed(result).values()) == {None}
    assert all_allocated_devices(sim) == []
    assert in_flight(sim) == []
    for name in placed(result):
        claim = claim_of(sim, name)
        assert claim is not None and reserved_for(sim, claim) == []
    (pg,) = result.pod_groups
    assert pg.phase == "Inqueue"
    # Four members had devices before the fifth found none: given back, so a gang of four that
    # comes next gets all of them.
    for obj in gang("next", 4):
        sim.store.create(obj)
    result = sim.run()
    got = placed(result)
    assert all(got[f"next-{i}"] is not None for i in range(4))
    assert all(got[f"train-{i}"] is None for i in range(5))
    assert len(all_allocated_devices(sim)) == 4


def test_devices_a_discarded_gang_held_go_to_the_next_job_of_the_session() -> None:
    """The large gang comes first (higher priority), holds every device for a moment and is
    discarded; the small job after it in the same session gets a device."""
    big = [group("big", 5), *(pod(f"big-{i}", "big", priority=100) for i in range(5))]
    small = [group("small", 1), pod("small-0", "small", priority=1)]
    sim = simulation([*gpu_cluster(nodes=2, devices=2), *big, *small])
    result = sim.run()
    got = placed(result)
    assert got["small-0"] is not None
    assert all(got[f"big-{i}"] is None for i in range(5))
    claim = claim_of(sim, "small-0")
    assert claim is not None
    assert len(allocated_devices(sim, claim)) == 1
    assert len(all_allocated_devices(sim)) == 1
    assert in_flight(sim) == []


def test_two_gangs_competing_for_the_devices_one_is_placed_whole_the_other_not_at_all() -> None:
    sim = simulation([*gpu_cluster(nodes=2, devices=2), *gang("a", 3), *gang("b", 3)])
    result = sim.run()
    got = placed(result)
    bound = {name.split("-")[0] for name, n in got.items() if n is not None}
    assert len(bound) == 1
    (winner,) = bound
    loser = "b" if winner == "a" else "a"
    assert all(got[f"{winner}-{i}"] is not None for i in range(3))
    assert all(got[f"{loser}-{i}"] is None for i in range(3))
    devices = all_allocated_devices(sim)
    assert len(devices) == 3 and len(set(devices)) == 3
    for i in range(3):
        claim = claim_of(sim, f"{loser}-{i}")
        assert claim is not None and allocated_devices(sim, claim) == []
    assert {g.name: g.phase for g in result.pod_groups}[winner] == "Running"
    assert in_flight(sim) == []


def test_a_gang_waits_for_devices_a_bound_gang_holds_and_gets_them_when_it_goes() -> None:
    sim = simulation([*gpu_cluster(nodes=1, devices=2), *gang("a", 2)])
    assert set(placed(sim.run()).values()) == {"n1"}
    for obj in gang("b", 2):
        sim.store.create(obj)
    result = sim.run()
    assert {placed(result)[f"b-{i}"] for i in range(2)} == {None}
    (b_outcome,) = [o for o in result.outcomes if o.name == "b-0"]
    assert b_outcome.message.startswith("0/1 nodes are unavailable: 1 cannot allocate all claims.")

    # The resourceclaim controller releases and deallocates the claims of the pods that are gone.
    for i in range(2):
        sim.store.delete("Pod", "ns", f"a-{i}")
    result = sim.run()
    assert {placed(result)[f"b-{i}"] for i in range(2)} == {"n1"}
    assert sorted(all_allocated_devices(sim)) == [("n1", "gpu-0"), ("n1", "gpu-1")]


def test_a_member_waits_until_the_claim_of_its_template_exists() -> None:
    sim = simulation([device_class(), node("n1"), gpu_slice("n1", 2), *gang("a", 2)])
    result = sim.run()
    assert set(placed(result).values()) == {None}
    (outcome, _) = result.outcomes
    assert outcome.message == (
        f'0/1 nodes are unavailable: 1 pod "ns/{outcome.name}": ResourceClaim not created yet.'
    )
    sim.store.create(template())
    assert set(placed(sim.run()).values()) == {"n1"}


def test_pre_bind_failure_leaves_the_pod_unbound_and_its_devices_free(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Every status write of a claim conflicts: PreBind gives up after its retries, the pod is not
    bound, carries Volcano's SchedulerError condition, and no allocation stays in flight; once the
    writes go through, the next session places it."""
    sim = simulation([*gpu_cluster(nodes=1, devices=1), *gang("solo", 1)])
    original = StorePorts.update_resource_claim_status

    def conflicting(self: StorePorts, obj: Obj) -> Obj:
        raise Conflict("the object has been modified; please apply your changes to the latest version")

    monkeypatch.setattr(StorePorts, "update_resource_claim_status", conflicting)
    result = sim.run()
    (outcome,) = result.outcomes
    assert outcome.node is None
    claim = claim_of(sim, "solo-0")
    assert claim is not None
    assert outcome.message == (
        f"execute preBind for pod ns/solo-0 failed: add allocation and reservation to claim ns/{claim}: "
        "the object has been modified; please apply your changes to the latest version, resync the task"
    )
    conditions = stored(sim, "Pod", "solo-0")["status"]["conditions"]
    (scheduled,) = [c for c in conditions if c["type"] == "PodScheduled"]
    assert (scheduled["status"], scheduled["reason"]) == ("False", PRE_BIND_FAILED_REASON)
    assert allocated_devices(sim, claim) == []
    assert in_flight(sim) == []

    monkeypatch.setattr(StorePorts, "update_resource_claim_status", original)
    sim.store.create(node("n2"))  # a cluster change: the batch scheduler runs a session again
    result = sim.run()
    assert placed(result) == {"solo-0": "n1"}
    assert allocated_devices(sim, claim) == [("n1", "gpu-0")]


def test_with_the_switch_off_claims_are_not_allocated() -> None:
    """``predicate.DynamicResourceAllocationEnable: false``: the predicates do not look at claims
    (the pods are placed by their other needs, their claims left unallocated)."""
    conf = """
actions: "enqueue, allocate, backfill"
tiers:
- plugins: [{name: priority}, {name: gang}]
- plugins:
  - {name: predicates, arguments: {predicate.DynamicResourceAllocationEnable: false}}
  - {name: nodeorder}
"""
    sim = simulation([*gpu_cluster(nodes=1, devices=1), *gang("a", 2)], conf)
    result = sim.run()
    assert set(placed(result).values()) == {"n1"}
    assert all_allocated_devices(sim) == []


def test_pods_without_claims_are_placed_as_before_beside_gangs_with_claims() -> None:
    plain = [group("web", 2), *(pod(f"web-{i}", "web", claim_template=None) for i in range(2))]
    sim = simulation([*gpu_cluster(nodes=2, devices=1), *gang("train", 2), *plain])
    result = sim.run()
    got = placed(result)
    assert all(n is not None for n in got.values())
    assert sorted(all_allocated_devices(sim)) == [("n1", "gpu-0"), ("n2", "gpu-0")]


PREEMPT_CONF = """
actions: "enqueue, allocate, preempt"
tiers:
- plugins: [{name: priority}, {name: gang}, {name: conformance}]
- plugins: [{name: predicates}, {name: nodeorder}]
"""


def test_a_pipelined_task_gives_its_devices_back_when_the_session_closes() -> None:
    """The preemptor fits n1 once its victim is gone: preempt pipelines it there, which holds its
    device for the rest of that session and no longer (an allocation left in flight would keep its
    claim "in the process of being allocated" for good); a later session places it."""
    victims = []
    for i in range(2):
        victim = pod(f"low-{i}", "low", claim_template=None, priority=1)
        victim["spec"]["nodeName"] = "n1"
        victim["status"] = {"phase": "Running"}
        victims.append(victim)
    cluster = [device_class(), template(), node("n1", cpu="2"), gpu_slice("n1", 1)]
    high = [group("high", 1, priority_class="high"), pod("high-0", "high", priority=100)]
    low = group("low", 1, priority_class="low")
    low["status"]["phase"] = "Running"
    objs = [*cluster, priority_class("low", 1), priority_class("high", 100), low]
    sim = simulation([*objs, *victims, *high], PREEMPT_CONF)
    result = sim.run()
    assert len(result.evicted) == 1
    assert placed(result)["high-0"] == "n1"
    claim = claim_of(sim, "high-0")
    assert claim is not None
    assert allocated_devices(sim, claim) == [("n1", "gpu-0")]
    assert reserved_for(sim, claim) == ["high-0"]
    assert in_flight(sim) == []


def test_the_batch_and_the_default_scheduler_never_share_a_device() -> None:
    """Both pipelines allocate from one DRA manager: with three devices, two default-scheduler pods
    and a gang of two cannot all be placed, and no device goes to two claims."""
    plain = []
    for i in range(2):
        p = pod(f"web-{i}", "none")
        del p["metadata"]["annotations"]
        p["spec"].pop("schedulerName")
        plain.append(p)
    sim = simulation([*gpu_cluster(nodes=1, devices=3), *plain, *gang("train", 2)])
    result = sim.run()
    got = placed(result)
    # The default scheduler's pods come first (the batch scheduler's session runs after them): the
    # gang finds one device left and waits whole.
    assert got == {"web-0": "n1", "web-1": "n1", "train-0": None, "train-1": None}
    allocated = all_allocated_devices(sim)
    assert len(allocated) == 2 and len(set(allocated)) == 2
    assert in_flight(sim) == []

    # One default-scheduler pod goes: its device and the one left make room for the gang.
    sim.store.delete("Pod", "ns", "web-0")
    got = placed(sim.run())
    assert (got["train-0"], got["train-1"]) == ("n1", "n1")
    allocated = all_allocated_devices(sim)
    assert sorted(allocated) == [("n1", "gpu-0"), ("n1", "gpu-1"), ("n1", "gpu-2")]


def test_members_sharing_a_claim_follow_the_first_one_session_later() -> None:
    """As in Volcano (the plugin's own rule): while the first member's allocation of a shared claim
    is in flight, the next member waits for it to be written. A gang that needs both at once is
    not placed; with minMember 1 the second member joins once the first is bound."""
    members = [pod(f"s-{i}", "s", claim_name="shared") for i in range(2)]
    cluster = [device_class(), node("n1"), gpu_slice("n1", 1), resource_claim("shared")]

    sim = simulation([*cluster, group("s", 2), *members])
    result = sim.run()
    assert placed(result) == {"s-0": None, "s-1": None}
    assert {o.name: o.message for o in result.outcomes}["s-1"] == (
        "0/1 nodes are unavailable: 1 resource claim ns/shared is in the process of being allocated."
    )
    assert allocated_devices(sim, "shared") == [] and in_flight(sim) == []

    sim = simulation([*cluster, group("s", 1), *members])
    result = sim.run()
    assert placed(result) == {"s-0": "n1", "s-1": "n1"}
    assert allocated_devices(sim, "shared") == [("n1", "gpu-0")]
    assert reserved_for(sim, "shared") == ["s-0", "s-1"]


# -- the property: no device twice, no partial gang ---------------------------------------------- #


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    devices=st.lists(st.integers(min_value=0, max_value=3), min_size=1, max_size=3),
    gangs=st.lists(st.integers(min_value=1, max_value=4), min_size=1, max_size=4),
    gpus_per_pod=st.integers(min_value=1, max_value=2),
)
def test_no_device_is_allocated_twice_and_no_gang_is_placed_in_part(
    devices: list[int], gangs: list[int], gpus_per_pod: int
) -> None:
    objs: list[Obj] = [device_class(), template(count=gpus_per_pod)]
    for i, count in enumerate(devices, start=1):
        objs.append(node(f"n{i}"))
        if count:
            objs.append(gpu_slice(f"n{i}", count))
    for g, size in enumerate(gangs):
        objs += gang(f"g{g}", size)
    sim = simulation(objs)
    result = sim.run()
    got = placed(result)

    # No device is allocated twice, within or across gangs.
    allocated = all_allocated_devices(sim)
    assert len(allocated) == len(set(allocated))
    # A gang is placed whole or not at all, and only its placed members hold devices, on their nodes.
    for g, size in enumerate(gangs):
        members = [f"g{g}-{i}" for i in range(size)]
        nodes = [got[m] for m in members]
        assert all(n is None for n in nodes) or all(n is not None for n in nodes)
        for member, node_name in zip(members, nodes, strict=True):
            claim = claim_of(sim, member)
            assert claim is not None
            held = allocated_devices(sim, claim)
            if node_name is None:
                assert held == [] and reserved_for(sim, claim) == []
            else:
                assert len(held) == gpus_per_pod
                assert {pool for pool, _ in held} == {node_name}
                assert reserved_for(sim, claim) == [member]
    # What is placed fits the devices, and at least one gang is placed when the smallest fits.
    per_node = Counter(pool for pool, _ in allocated)
    for i, count in enumerate(devices, start=1):
        assert per_node[f"n{i}"] <= count
    if min(gangs) * gpus_per_pod <= sum(c - c % gpus_per_pod for c in devices):
        assert any(n is not None for n in got.values())
    assert in_flight(sim) == []
