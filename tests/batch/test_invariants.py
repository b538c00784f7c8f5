"""Properties of every batch run: gangs are bound whole, nodes never over-committed, queues never
past their capability (proportion, in Volcano's default conf, caps what a queue deserves)."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kubesched.api.quantity import parse_quantity
from kubesched.batch.conf_loader import default_batch_conf
from kubesched.sim.simulation import Simulation

VOLCANO = "scheduling.volcano.sh/v1beta1"


@st.composite
def clusters(draw: st.DrawFn) -> dict[str, Any]:
    nodes = draw(st.lists(st.integers(1, 8), min_size=1, max_size=4))
    queues = draw(st.lists(st.one_of(st.none(), st.integers(1, 8)), min_size=1, max_size=3))
    gangs = draw(
        st.lists(
            st.tuples(
                st.integers(1, 5),  # size
                st.integers(0, 5),  # minMember (capped at size below; 0 = every pod may run alone)
                st.integers(1, 3),  # cpu per pod
                st.integers(0, len(queues) - 1),
                st.integers(0, 2),  # priority class
            ),
            min_size=1,
            max_size=5,
        )
    )
    return {"nodes": nodes, "queues": queues, "gangs": gangs}


def build(c: dict[str, Any]) -> Simulation:
    sim = Simulation(seed=0, batch_conf=default_batch_conf())
    create = sim.store.create
    for p in range(3):
        create(
            {
                "apiVersion": "scheduling.k8s.io/v1",
                "kind": "PriorityClass",
                "metadata": {"name": f"p{p}"},
                "value": p,
            }
        )
    for i, cpu in enumerate(c["nodes"]):
        create(
            {
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {"name": f"n{i}"},
                "status": {"allocatable": {"cpu": str(cpu), "memory": "64Gi", "pods": "110"}},
            }
        )
    for i, cap in enumerate(c["queues"]):
        spec: dict[str, Any] = {"weight": i + 1}
        if cap is not None:
            spec["capability"] = {"cpu": str(cap)}
        create({"apiVersion": VOLCANO, "kind": "Queue", "metadata": {"name": f"q{i}"}, "spec": spec})
    for g, (size, min_member, cpu, q, prio) in enumerate(c["gangs"]):
        create(
            {
                "apiVersion": VOLCANO,
                "kind": "PodGroup",
                "metadata": {"name": f"g{g}", "namespace": "ns"},
                "spec": {
                    "minMember": min(min_member, size),
                    "queue": f"q{q}",
                    "priorityClassName": f"p{prio}",
                },
            }
        )
        for i in range(size):
            create(
                {
                    "apiVersion": "v1",
                    "kind": "Pod",
                    "metadata": {
                        "name": f"g{g}-{i}",
                        "namespace": "ns",
                        "annotations": {"scheduling.k8s.io/group-name": f"g{g}"},
                    },
                    "spec": {
                        "schedulerName": "volcano",
                        "priorityClassName": f"p{prio}",
                        "containers": [
                            {"name": "c", "image": "x", "resources": {"requests": {"cpu": str(cpu)}}}
                        ],
                    },
                }
            )
    return sim


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(clusters())
def test_gangs_whole_nodes_and_queues_within_limits(c: dict[str, Any]) -> None:
    sim = build(c)
    sim.run()
    pods = [p for p in sim.store.list("Pod") if (p.get("spec") or {}).get("nodeName")]
    bound_per_gang: dict[str, int] = {}
    cpu_per_node: dict[str, int] = {}
    cpu_per_queue: dict[str, int] = {}
    for p in pods:
        gang = p["metadata"]["annotations"]["scheduling.k8s.io/group-name"]
        g = int(gang[1:])
        cpu = int(parse_quantity(p["spec"]["containers"][0]["resources"]["requests"]["cpu"]) * 1000)
        bound_per_gang[gang] = bound_per_gang.get(gang, 0) + 1
        cpu_per_node[p["spec"]["nodeName"]] = cpu_per_node.get(p["spec"]["nodeName"], 0) + cpu
        q = f"q{c['gangs'][g][3]}"
        cpu_per_queue[q] = cpu_per_queue.get(q, 0) + cpu
    for g, (size, min_member, *_rest) in enumerate(c["gangs"]):
        bound = bound_per_gang.get(f"g{g}", 0)
        assert bound == 0 or bound >= min(min_member, size), f"gang g{g} partially bound: {bound}"
    for i, cap in enumerate(c["nodes"]):
        assert cpu_per_node.get(f"n{i}", 0) <= cap * 1000
    for i, cap in enumerate(c["queues"]):
        if cap is not None:
            assert cpu_per_queue.get(f"q{i}", 0) <= cap * 1000, f"queue q{i} past its capability"
