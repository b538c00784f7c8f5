"""Invariant: no pod is placed where it violates one of its DoNotSchedule topology spread constraints.

Random small clusters and pods run through the simulation; a brute-force checker, written from the
API's definition and sharing no code with the plugin, replays the binds in order and checks each
placed pod against the pods placed before it (existing pods included).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kubesched.api.objects import HOSTNAME_LABEL
from kubesched.sim.simulation import Simulation
from kubesched.store.base import EventType

ZONE = "zone"
ZONES = ("z1", "z2", "z3")


@st.composite
def clusters(draw: st.DrawFn) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[dict[str, Any]]]:
    n_nodes = draw(st.integers(2, 7))
    nodes = []
    for i in range(n_nodes):
        labels = {HOSTNAME_LABEL: f"n{i}"}
        zone = draw(st.sampled_from((*ZONES, None)))
        if zone is not None:
            labels[ZONE] = zone
        pods_cap = draw(st.integers(1, 5))
        nodes.append(
            {
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {"name": f"n{i}", "labels": labels},
                "status": {"allocatable": {"cpu": "8", "memory": "16Gi", "pods": str(pods_cap)}},
            }
        )

    def a_pod(name: str, node_name: str | None) -> dict[str, Any]:
        spec: dict[str, Any] = {"containers": [{"name": "c", "image": "pause"}]}
        if node_name is not None:
            spec["nodeName"] = node_name
        else:
            keys = draw(st.lists(st.sampled_from((ZONE, HOSTNAME_LABEL)), max_size=2, unique=True))
            constraints = []
            for key in keys:
                c: dict[str, Any] = {
                    "maxSkew": draw(st.integers(1, 2)),
                    "topologyKey": key,
                    "whenUnsatisfiable": draw(
                        st.sampled_from(("DoNotSchedule", "DoNotSchedule", "ScheduleAnyway"))
                    ),
                    "labelSelector": {"matchLabels": {"app": draw(st.sampled_from(("a", "b")))}},
                }
                if c["whenUnsatisfiable"] == "DoNotSchedule" and draw(st.booleans()):
                    c["minDomains"] = draw(st.integers(1, 4))
                constraints.append(c)
            if constraints:
                spec["topologySpreadConstraints"] = constraints
            if draw(st.integers(0, 4)) == 0:
                spec["nodeSelector"] = {ZONE: draw(st.sampled_from(ZONES))}
        return {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": name,
                "namespace": draw(st.sampled_from(("default", "default", "other"))),
                "labels": {"app": draw(st.sampled_from(("a", "b")))},
            },
            "spec": spec,
        }

    existing = [
        a_pod(f"e{i}", f"n{draw(st.integers(0, n_nodes - 1))}") for i in range(draw(st.integers(0, 4)))
    ]
    pending = [a_pod(f"p{i}", None) for i in range(draw(st.integers(1, 10)))]
    return nodes, existing, pending


def _matches(selector: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    return all(labels.get(k) == v for k, v in selector.get("matchLabels", {}).items())


def violations(
    pod: Mapping[str, Any],
    node_name: str,
    nodes: Mapping[str, Mapping[str, str]],
    placed: list[tuple[Mapping[str, Any], str]],
) -> list[str]:
    """Why placing ``pod`` on ``node_name`` (after ``placed``) breaks a DoNotSchedule constraint."""
    spec, meta = pod["spec"], pod["metadata"]
    hard = [c for c in spec.get("topologySpreadConstraints", []) if c["whenUnsatisfiable"] == "DoNotSchedule"]
    node_selector = spec.get("nodeSelector", {})
    keys = [c["topologyKey"] for c in hard]
    eligible = {
        name
        for name, labels in nodes.items()
        if all(k in labels for k in keys) and all(labels.get(k) == v for k, v in node_selector.items())
    }
    out = []
    for c in hard:
        key = c["topologyKey"]
        target = nodes[node_name]
        if key not in target:
            out.append(f"{node_name} lacks {key}")
            continue
        counts = {nodes[n][key]: 0 for n in eligible}
        for other, where in placed:
            om = other["metadata"]
            if (
                where in eligible
                and om["namespace"] == meta["namespace"]
                and _matches(c["labelSelector"], om["labels"])
            ):
                counts[nodes[where][key]] += 1
        minimum = min(counts.values()) if len(counts) >= c.get("minDomains", 1) else 0
        self_match = 1 if _matches(c["labelSelector"], meta["labels"]) else 0
        skew = counts.get(target[key], 0) + self_match - minimum
        if skew > c["maxSkew"]:
            out.append(f"{key}: skew {skew} > {c['maxSkew']} on {node_name}")
    return out


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(clusters())
def test_no_placement_violates_a_hard_spread_constraint(
    cluster: tuple[list[dict[str, Any]], list[dict[str, Any]], list[dict[str, Any]]],
) -> None:
    nodes, existing, pending = cluster
    sim = Simulation(seed=0)
    watch = sim.store.watch(frozenset({"Pod"}))
    for obj in (*nodes, *existing, *pending):
        sim.store.create(obj)
    sim.run()
    node_labels = {n["metadata"]["name"]: n["metadata"]["labels"] for n in nodes}
    placed: list[tuple[Mapping[str, Any], str]] = [(p, p["spec"]["nodeName"]) for p in existing]
    checked = 0
    for event in watch.drain():
        if event.type != EventType.MODIFIED or event.old is None:
            continue
        new_node = (event.obj.get("spec") or {}).get("nodeName")
        if not new_node or (event.old.get("spec") or {}).get("nodeName"):
            continue
        assert violations(event.obj, new_node, node_labels, placed) == [], event.obj["metadata"]["name"]
        placed.append((event.obj, new_node))
        checked += 1
    assert checked == sum(1 for o in sim.outcomes() if o.status == "Scheduled")
