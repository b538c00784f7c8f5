"""Property tests: whatever the cluster, the scheduler never overcommits, never ignores taints or
cordons, reports every pod, only gives up on pods that really fit nowhere, and is deterministic.

The checks are brute force over plain dicts, independent of the plugins under test.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kubesched.sim.simulation import Simulation

GPU = "example.com/gpu"
UNSCHEDULABLE_TAINT = {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}
RESOURCES = ("cpu", "memory", GPU)


@dataclass
class NodeSpec:
    name: str
    alloc: dict[str, int]  # cpu (milli), memory (Mi), gpu, pods
    taints: list[dict[str, str]]
    cordoned: bool

    def manifest(self) -> dict[str, Any]:
        allocatable = {
            "cpu": f"{self.alloc['cpu']}m",
            "memory": f"{self.alloc['memory']}Mi",
            "pods": str(self.alloc["pods"]),
        }
        if self.alloc[GPU]:
            allocatable[GPU] = str(self.alloc[GPU])
        spec: dict[str, Any] = {}
        if self.taints:
            spec["taints"] = self.taints
        if self.cordoned:
            spec["unschedulable"] = True
        return {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {
                "name": self.name,
                "labels": {"topology.kubernetes.io/zone": f"z{len(self.name) % 3}"},
            },
            "spec": spec,
            "status": {"allocatable": allocatable},
        }


@dataclass
class PodSpec:
    name: str
    req: dict[str, int]  # cpu (milli), memory (Mi), gpu; 0 = not requested
    priority: int
    tolerations: list[dict[str, str]] = field(default_factory=list)
    node_name: str = ""

    def manifest(self) -> dict[str, Any]:
        requests: dict[str, str] = {}
        if self.req["cpu"]:
            requests["cpu"] = f"{self.req['cpu']}m"
        if self.req["memory"]:
            requests["memory"] = f"{self.req['memory']}Mi"
        limits: dict[str, str] = {}
        if self.req[GPU]:
            requests[GPU] = str(self.req[GPU])
            limits[GPU] = str(self.req[GPU])
        resources: dict[str, Any] = {"requests": requests}
        if limits:
            resources["limits"] = limits
        spec: dict[str, Any] = {
            "priority": self.priority,
            "containers": [{"name": "c", "image": "pause", "resources": resources}],
        }
        if self.tolerations:
            spec["tolerations"] = self.tolerations
        if self.node_name:
            spec["nodeName"] = self.node_name
        return {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": self.name, "namespace": "default"},
            "spec": spec,
        }


taints_st = st.lists(
    st.builds(
        lambda k, v, e: {"key": k, "value": v, "effect": e},
        st.sampled_from(["a", "b"]),
        st.sampled_from(["x", "y"]),
        st.sampled_from(["NoSchedule", "NoExecute", "PreferNoSchedule"]),
    ),
    max_size=2,
    unique_by=lambda t: (t["key"], t["effect"]),
)

tolerations_st = st.lists(
    st.one_of(
        st.builds(
            lambda k, v, e: {"key": k, "operator": "Equal", "value": v, "effect": e},
            st.sampled_from(["a", "b"]),
            st.sampled_from(["x", "y"]),
            st.sampled_from(["", "NoSchedule", "NoExecute"]),
        ),
        st.builds(lambda k: {"key": k, "operator": "Exists"}, st.sampled_from(["a", "b"])),
        st.just({"operator": "Exists"}),
        st.just(dict(UNSCHEDULABLE_TAINT, operator="Exists")),
    ),
    max_size=2,
)


@st.composite
def clusters(draw: st.DrawFn) -> tuple[list[NodeSpec], list[PodSpec], list[PodSpec]]:
    n_nodes = draw(st.integers(1, 30))
    nodes = [
        NodeSpec(
            name=f"node-{i}",
            alloc={
                "cpu": draw(st.sampled_from([500, 1000, 2000, 4000])),
                "memory": draw(st.sampled_from([512, 1024, 4096])),
                GPU: draw(st.sampled_from([0, 0, 1, 2])),
                "pods": draw(st.integers(1, 8)),
            },
            taints=draw(st.one_of(st.just([]), taints_st)),
            cordoned=draw(st.integers(0, 4)) == 0,
        )
        for i in range(n_nodes)
    ]

    def pod_req() -> dict[str, int]:
        return {
            "cpu": draw(st.sampled_from([0, 100, 250, 500, 1000, 3000])),
            "memory": draw(st.sampled_from([0, 64, 256, 1024, 2048])),
            GPU: draw(st.sampled_from([0, 0, 0, 1, 2])),
        }

    # Pre-bound pods: placed only where they fit, as a running cluster would have them.
    used = {n.name: dict.fromkeys((*RESOURCES, "pods"), 0) for n in nodes}
    prebound: list[PodSpec] = []
    for i in range(draw(st.integers(0, 8))):
        node = nodes[draw(st.integers(0, n_nodes - 1))]
        req = pod_req()
        if fits_resources(req, node, used[node.name]):
            add_usage(used[node.name], req)
            prebound.append(PodSpec(f"bound-{i}", req, 0, node_name=node.name))
    pods = [
        PodSpec(
            f"pod-{i:02d}",
            pod_req(),
            draw(st.sampled_from([0, 0, 10, 100, 1000])),
            draw(st.one_of(st.just([]), tolerations_st)),
        )
        for i in range(draw(st.integers(1, 40)))
    ]
    return nodes, prebound, pods


def add_usage(used: dict[str, int], req: dict[str, int]) -> None:
    for r in RESOURCES:
        used[r] += req[r]
    used["pods"] += 1


def fits_resources(req: dict[str, int], node: NodeSpec, used: dict[str, int]) -> bool:
    if used["pods"] + 1 > node.alloc["pods"]:
        return False
    return all(used[r] + req[r] <= node.alloc[r] for r in RESOURCES if req[r] > 0)


def tolerates(tolerations: list[dict[str, str]], taint: dict[str, str]) -> bool:
    for t in tolerations:
        if t.get("effect") and t["effect"] != taint["effect"]:
            continue
        op = t.get("operator", "Equal")
        if not t.get("key"):
            if op == "Exists":
                return True
            continue
        if t["key"] != taint["key"]:
            continue
        if op == "Exists" or t.get("value", "") == taint.get("value", ""):
            return True
    return False


def allowed_on(pod: PodSpec, node: NodeSpec) -> bool:
    """Taints and cordons only (resources are checked separately)."""
    if node.cordoned and not tolerates(pod.tolerations, UNSCHEDULABLE_TAINT):
        return False
    return all(
        tolerates(pod.tolerations, t) for t in node.taints if t["effect"] in ("NoSchedule", "NoExecute")
    )


def simulate(nodes: list[NodeSpec], prebound: list[PodSpec], pods: list[PodSpec], seed: int) -> Simulation:
    sim = Simulation(seed=seed)
    for n in nodes:
        sim.store.create(n.manifest())
    for p in prebound:
        sim.store.create(p.manifest())
    for p in pods:
        sim.store.create(p.manifest())
    sim.run()
    return sim


def summary(sim: Simulation) -> list[tuple[str, str, str | None, str, int]]:
    return [(o.name, o.status, o.node, o.message, o.attempts) for o in sim.outcomes()]


SETTINGS = settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    derandomize=True,
)


@SETTINGS
@given(clusters(), st.integers(0, 2**16))
def test_scheduler_invariants(
    cluster: tuple[list[NodeSpec], list[PodSpec], list[PodSpec]], seed: int
) -> None:
    nodes, prebound, pods = cluster
    sim = simulate(nodes, prebound, pods, seed)
    by_node = {n.name: n for n in nodes}
    specs = {p.name: p for p in [*prebound, *pods]}

    # Final cluster state, from the store.
    used = {n.name: dict.fromkeys((*RESOURCES, "pods"), 0) for n in nodes}
    bound_to: dict[str, str] = {}
    for obj in sim.store.list("Pod"):
        name = obj["metadata"]["name"]
        node = (obj.get("spec") or {}).get("nodeName") or ""
        if node:
            assert node in by_node, f"{name} bound to unknown node {node}"
            bound_to[name] = node
            add_usage(used[node], specs[name].req)

    # 1. No overcommit: cpu, memory, extended resources, pod count.
    for name, node in by_node.items():
        for r in (*RESOURCES, "pods"):
            assert used[name][r] <= node.alloc[r], (name, r, used[name], node.alloc)

    # 2. Every pod is accounted for; bound exactly once, or not bound with a reason.
    outcomes = {o.name: o for o in sim.outcomes()}
    evicted = {key.split("/", 1)[1] for key in sim.evicted}
    assert set(outcomes) == {p.name for p in pods} | evicted
    assert all(outcomes[name].status == "Evicted" for name in evicted)
    scheduled_events = [e["regarding"]["name"] for e in sim.store.list("Event") if e["reason"] == "Scheduled"]
    assert len(scheduled_events) == len(set(scheduled_events))
    for p in pods:
        o = outcomes[p.name]
        if o.status == "Scheduled":
            assert o.node is not None and bound_to.get(p.name) == o.node
            assert p.name in scheduled_events
            # 3. Never on a cordoned node or past an untolerated NoSchedule/NoExecute taint.
            assert allowed_on(p, by_node[o.node]), (p, by_node[o.node])
        elif o.status == "Evicted":
            assert p.name not in bound_to
        else:
            assert o.status in ("Unschedulable", "Pending")
            assert o.message, o
            assert p.name not in bound_to
            assert p.name not in scheduled_events

    # 4. A pod given up on really fits nowhere (nothing was deleted, so the final state is the
    #    fullest it has been).
    for p in pods:
        if outcomes[p.name].status == "Unschedulable":
            fits = [n.name for n in nodes if allowed_on(p, n) and fits_resources(p.req, n, used[n.name])]
            assert not fits, (p, fits, outcomes[p.name].message)
            assert outcomes[p.name].message.startswith(f"0/{len(nodes)} nodes are available: ")


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True)
@given(clusters(), st.integers(0, 2**16))
def test_same_seed_same_outcome(
    cluster: tuple[list[NodeSpec], list[PodSpec], list[PodSpec]], seed: int
) -> None:
    nodes, prebound, pods = cluster
    first = summary(simulate(nodes, prebound, pods, seed))
    second = summary(simulate(nodes, prebound, pods, seed))
    assert first == second
