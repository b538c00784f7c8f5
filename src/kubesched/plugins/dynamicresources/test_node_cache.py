"""The allocator's answers kept per node across cycles change nothing: over random sequences of
cluster changes (slices published, replaced and removed, in node-local, multi-host, all-node and
node-selector pools; devices allocated, released and in flight; classes and node labels edited),
the Filter's verdicts and allocations with kept answers are those of an allocator asked afresh on
every node. And kept answers are used: a second pod of the same template costs no allocation on
the nodes nothing changed on."""

from __future__ import annotations

import copy
import random
from typing import Any

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from kubesched.api.objects import Node, Pod
from kubesched.api.resource import AllocationResult, DeviceRequestAllocationResult, ResourceClaim
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.handle import Handle
from kubesched.plugins.dynamicresources import DynamicResources
from kubesched.plugins.dynamicresources.allocator import Allocator
from kubesched.plugins.dynamicresources.node_cache import NodeAnswers
from kubesched.plugins.testing import build_snapshot, node_dict
from kubesched.store.memory import MemoryStore
from kubesched.store.parsers import informer_factory
from kubesched.store.ports import StorePorts

Obj = dict[str, Any]
DRIVER = "gpu.example.com"
NODES = ("n0", "n1", "n2", "n3")
NAMESPACE = "default"
#: Pools: node-local per node, one spanning n0 and n1 (two slices), one for every node and one
#: for the nodes labelled zone=a.
POOLS = ("local", "multi", "all", "zone")


def _node(name: str, zone: str | None) -> Node:
    labels = {"kubernetes.io/hostname": name}
    if zone:
        labels["zone"] = zone
    return Node.from_dict(node_dict(name, {"cpu": "8", "pods": 110}, labels=labels))


def _devices(rng: random.Random) -> list[Obj]:
    return [
        {
            "name": f"d{i}",
            "attributes": {"model": {"string": rng.choice("ab")}, "numa": {"int": rng.randrange(2)}},
        }
        for i in range(rng.randrange(0, 4))
    ]


def _slice(rng: random.Random, pool: str, node: str, generation: int) -> Obj:
    spec: Obj = {"driver": DRIVER, "devices": _devices(rng)}
    if pool == "local":
        spec |= {"nodeName": node, "pool": {"name": f"local-{node}", "generation": generation}}
        spec["pool"]["resourceSliceCount"] = 1
    elif pool == "multi":
        spec |= {"nodeName": node, "pool": {"name": "multi", "generation": generation}}
        # Sometimes a slice is missing: the pool is incomplete until it comes.
        spec["pool"]["resourceSliceCount"] = rng.choice((2, 2, 3))
    elif pool == "all":
        spec |= {"allNodes": True, "pool": {"name": "all", "generation": generation, "resourceSliceCount": 1}}
    else:
        selector = {
            "nodeSelectorTerms": [{"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}]
        }
        spec |= {
            "nodeSelector": selector,
            "pool": {"name": "zone", "generation": generation, "resourceSliceCount": 1},
        }
    name = f"{pool}-{node}" if pool in ("local", "multi") else pool
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": name},
        "spec": spec,
    }


def _device_class(rng: random.Random) -> Obj:
    selectors = [{"cel": {"expression": f'device.driver == "{DRIVER}"'}}]
    if rng.random() < 0.3:
        selectors.append(
            {"cel": {"expression": f'device.attributes["{DRIVER}"].model == "{rng.choice("ab")}"'}}
        )
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": {"name": "gpu"},
        "spec": {"selectors": selectors},
    }


def _request(rng: random.Random, name: str) -> Obj:
    exactly: Obj = {"deviceClassName": "gpu"}
    if rng.random() < 0.2:
        exactly["allocationMode"] = "All"
    else:
        exactly["count"] = rng.choice((1, 1, 2))
    if rng.random() < 0.4:
        exactly["selectors"] = [
            {"cel": {"expression": f'device.attributes["{DRIVER}"].model == "{rng.choice("ab")}"'}}
        ]
    return {"name": name, "exactly": exactly}


def _wanted_claim(rng: random.Random, name: str) -> Obj:
    requests = [_request(rng, f"r{i}") for i in range(rng.choice((1, 1, 2)))]
    devices: Obj = {"requests": requests}
    if rng.random() < 0.3:
        devices["constraints"] = [{"matchAttribute": f"{DRIVER}/numa"}]
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": name, "namespace": NAMESPACE},
        "spec": {"devices": devices},
    }


def _holder(name: str, pool: str, device: str, node: str | None) -> Obj:
    allocation: Obj = {
        "devices": {"results": [{"request": "r", "driver": DRIVER, "pool": pool, "device": device}]}
    }
    if node:
        allocation["nodeSelector"] = {
            "nodeSelectorTerms": [
                {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node]}]}
            ]
        }
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": name, "namespace": NAMESPACE, "uid": f"uid-{name}"},
        "spec": {"devices": {"requests": [{"name": "r", "exactly": {"deviceClassName": "gpu"}}]}},
        "status": {"allocation": allocation},
    }


class Cluster:
    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.store = MemoryStore()
        self.zones = {n: self.rng.choice((None, "a")) for n in NODES}
        self.nodes = {n: _node(n, self.zones[n]) for n in NODES}
        self.store.create(_device_class(self.rng))
        self.handle = Handle(
            informer_factory(self.store),
            StorePorts(self.store).ports(),
            build_snapshot(list(self.nodes.values())),
            lambda: 0.0,
        )
        self.plugin = DynamicResources(None, self.handle)
        self.generations: dict[str, int] = {}
        self.in_flight: list[str] = []
        for _ in range(4):
            self.change_slice()
        self.handle.informers.pump()

    @property
    def manager(self) -> Any:
        return self.plugin.manager

    def _get(self, kind: str, name: str, namespace: str | None = None) -> Obj | None:
        stored = self.store.get(kind, namespace, name)
        return dict(stored) if stored is not None else None

    def _put(self, obj: Obj) -> None:
        meta = obj["metadata"]
        stored = self._get(obj["kind"], meta["name"], meta.get("namespace"))
        if stored is None:
            self.store.create(obj)
        else:
            self.store.update(
                {**obj, "metadata": {**stored["metadata"], **{k: v for k, v in meta.items() if k != "uid"}}}
            )

    def change_slice(self) -> None:
        rng = self.rng
        pool = rng.choice(POOLS)
        node = rng.choice(NODES[:2] if pool == "multi" else NODES)
        obj = _slice(rng, pool, node, 0)
        name = obj["metadata"]["name"]
        if self._get("ResourceSlice", name) is not None and rng.random() < 0.25:
            self.store.delete("ResourceSlice", None, name)
            return
        if rng.random() < 0.3:
            self.generations[obj["spec"]["pool"]["name"]] = (
                self.generations.get(obj["spec"]["pool"]["name"], 0) + 1
            )
        obj["spec"]["pool"]["generation"] = self.generations.get(obj["spec"]["pool"]["name"], 0)
        self._put(obj)

    def _some_device(self) -> tuple[str, str, str | None] | None:
        slices = self.store.list("ResourceSlice")
        if not slices:
            return None
        s = self.rng.choice(slices)["spec"]
        devices = s.get("devices") or [{"name": "gone"}]
        return s["pool"]["name"], self.rng.choice(devices)["name"], s.get("nodeName")

    def change_allocation(self) -> None:
        rng = self.rng
        name = f"holder-{rng.randrange(6)}"
        stored = self._get("ResourceClaim", name, NAMESPACE)
        roll = rng.random()
        if stored is not None and roll < 0.2:
            self.store.delete("ResourceClaim", NAMESPACE, name)
            return
        if stored is not None and roll < 0.45:
            raw = copy.deepcopy(dict(stored))
            raw["status"] = {}
            self.store.update(raw)
            return
        device = self._some_device()
        if device is not None:
            self._put(_holder(name, *device))

    def change_in_flight(self) -> None:
        manager = self.manager
        if self.in_flight and self.rng.random() < 0.5:
            manager.remove_claim_pending_allocation(
                self.in_flight.pop(self.rng.randrange(len(self.in_flight)))
            )
            return
        device = self._some_device()
        if device is None:
            return
        uid = f"flight-{self.rng.randrange(1000)}"
        claim = ResourceClaim.from_dict(
            _holder(uid, *device) | {"metadata": {"name": uid, "namespace": NAMESPACE, "uid": uid}}
        )
        manager.signal_claim_pending_allocation(uid, claim)
        self.in_flight.append(uid)

    def change_class(self) -> None:
        self._put(_device_class(self.rng))

    def change_node(self) -> None:
        name = self.rng.choice(NODES)
        self.zones[name] = None if self.zones[name] else "a"
        self.nodes[name] = _node(name, self.zones[name])
        # Unchanged nodes keep their objects, as the scheduler's cache does.
        self.handle.snapshot = build_snapshot([self.nodes[n] for n in NODES])

    def step(self) -> None:
        [
            self.change_slice,
            self.change_allocation,
            self.change_in_flight,
            self.change_class,
            self.change_node,
        ][self.rng.randrange(5)]()
        self.handle.informers.pump()

    def verdicts(self, pod: Pod, *, keep: bool) -> tuple[Any, ...]:
        state = CycleState()
        _, status = self.plugin.pre_filter(state, pod, self.handle.snapshot)
        if status is not None and not status.ok:
            return ("prefilter", status.code, status.message)
        st = state.get("DynamicResources")
        if not keep:
            st.question = None
        table = self.handle.snapshot.table
        try:
            result = self.plugin.filter_nodes(state, pod, table)
        except Exception as exc:  # an allocation error: the same either way
            return ("error", str(exc))
        reasons = {
            table.names[s]: sorted(result.reasons_for(s))
            for s in np.flatnonzero(~result.passed & table.valid).tolist()
        }
        allocations = {
            name: [(a.to_dict(), a.node_selector) for a in allocation.results]
            for name, allocation in st.node_allocations.items()
        }
        return reasons, allocations

    def fresh(self, claims: list[Obj]) -> dict[str, Any]:
        """Every node asked afresh, bypassing the plugin."""
        manager = self.manager
        views = [ResourceClaim.from_dict(c) for c in claims]
        out: dict[str, Any] = {}
        for name in NODES:
            allocator = Allocator(
                self.plugin.features,
                manager.allocated_state(),
                manager.device_classes(),
                manager.resource_slices(),
            )
            try:
                got = allocator.allocate(self.nodes[name], views)
            except Exception as exc:
                out[name] = str(exc)
                continue
            out[name] = None if got is None else [a.to_dict() for a in got]
        return out


def _pod(claims: list[str]) -> Pod:
    return Pod.from_dict(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "p", "namespace": NAMESPACE, "uid": "pod-uid"},
            "spec": {
                "containers": [{"name": "c", "image": "i"}],
                "resourceClaims": [{"name": c, "resourceClaimName": c} for c in claims],
            },
        }
    )


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(5, 25))
def test_kept_answers_are_the_answers_asked_afresh(seed: int, steps: int) -> None:
    cluster = Cluster(seed)
    rng = cluster.rng
    # A few questions asked again and again, as pods of a few templates do.
    questions = [
        [_wanted_claim(rng, f"want-{q}-{i}") for i in range(rng.choice((1, 1, 2)))] for q in range(3)
    ]
    for claims in questions:
        for claim in claims:
            cluster.store.create(copy.deepcopy(claim))
    cluster.handle.informers.pump()
    for _ in range(steps):
        cluster.step()
        for claims in rng.sample(questions, 2):
            pod = _pod([c["metadata"]["name"] for c in claims])
            # Asked twice: the second time from the kept answers.
            kept_first = cluster.verdicts(pod, keep=True)
            kept_again = cluster.verdicts(pod, keep=True)
            afresh = cluster.verdicts(pod, keep=False)
            assert kept_first == afresh
            assert kept_again == afresh
            if afresh[0] not in ("prefilter", "error"):
                _, allocations = afresh
                fresh = cluster.fresh(claims)
                for name, results in allocations.items():
                    assert [r for r, _ in results] == fresh[name]


def test_a_second_pod_of_a_template_allocates_only_where_something_changed() -> None:
    cluster = Cluster(7)
    for n in NODES:
        slice_ = _slice(random.Random(1), "local", n, 0)
        slice_["spec"]["devices"] = [{"name": f"d{i}"} for i in range(3)]
        cluster._put(slice_)
    claim = _wanted_claim(random.Random(3), "want")
    claim["spec"] = {"devices": {"requests": [{"name": "r", "exactly": {"deviceClassName": "gpu"}}]}}
    cluster.store.create(claim)
    cluster.change_class()
    cluster.handle.informers.pump()
    pod = _pod(["want"])

    calls: list[str] = []
    original = Allocator.allocate

    def counting(self: Allocator, node: Any, claims: Any) -> Any:
        calls.append(node.name)
        return original(self, node, claims)

    Allocator.allocate = counting  # type: ignore[method-assign]
    try:
        cluster.verdicts(pod, keep=True)
        assert sorted(calls) == list(NODES)
        calls.clear()
        cluster.verdicts(pod, keep=True)
        assert calls == []
        # A device of n2's pool taken: only n2 is asked again.
        cluster._put(_holder("holder", "local-n2", "d0", "n2"))
        cluster.handle.informers.pump()
        cluster.verdicts(pod, keep=True)
        assert calls == ["n2"]
    finally:
        Allocator.allocate = original  # type: ignore[method-assign]


def test_a_kept_allocation_of_a_device_share_gets_a_share_of_its_own() -> None:
    """Shares of devices that allow multiple allocations are named per allocation: a kept answer
    handed to another pod's claim names new shares, the rest as kept."""
    shared = AllocationResult(
        results=(
            DeviceRequestAllocationResult(
                request="r", driver=DRIVER, pool="p", device="d0", share_id="first"
            ),
            DeviceRequestAllocationResult(request="r", driver=DRIVER, pool="p", device="d1"),
        )
    )
    answers = NodeAnswers()
    worker = _node("n0", None)
    answers.put(worker, (0, 0), "q", ([shared], ""))
    ids = iter(("second", "third"))
    got = [answers.get(worker, (0, 0), "q", lambda: next(ids)) for _ in range(2)]
    assert [[r.share_id for r in a.results] for g in got if g is not None for a in g[0] or []] == [
        ["second", None],
        ["third", None],
    ]
    # Anything else about the node changed: nothing kept.
    assert answers.get(worker, (0, 1), "q", lambda: "x") is None
    assert answers.get(_node("n0", None), (0, 0), "q", lambda: "x") is None
