"""Property test: after a simulation, no placed pod breaks a required pod (anti-)affinity term.

Random small clusters (hostnames, zones that some nodes lack) and pods with random labels, namespaces
and required affinity / anti-affinity terms. The checker below works on the plain manifests and the
order in which pods were bound, independently of the plugin:

* anti-affinity: for every pair of placed pods P ≠ Q and every required anti-affinity term of P that
  Q matches, P's and Q's nodes are not in the same domain of the term's topology key;
* affinity: when P was bound, its node had every term's topology key, and either some pod bound
  before P matched *all* of P's terms and shared each term's domain with P, or no earlier pod on a
  node with one of the keys matched them all and P matched its own terms (the first pod of a group).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kubesched.sim.simulation import Simulation
from kubesched.store.base import EventType

HOSTNAME = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"
APPS = ("a", "b", "c")
NAMESPACES = ("default", "other")


@dataclass(frozen=True)
class Term:
    app: str
    topology_key: str
    namespaces: tuple[str, ...]  # () = the pod's own namespace

    def manifest(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "labelSelector": {"matchLabels": {"app": self.app}},
            "topologyKey": self.topology_key,
        }
        if self.namespaces:
            out["namespaces"] = list(self.namespaces)
        return out


@dataclass(frozen=True)
class PodSpec:
    name: str
    namespace: str
    app: str
    affinity: tuple[Term, ...]
    anti_affinity: tuple[Term, ...]

    def manifest(self) -> dict[str, Any]:
        spec: dict[str, Any] = {"containers": [{"name": "c", "resources": {"requests": {"cpu": "10m"}}}]}
        aff: dict[str, Any] = {}
        if self.affinity:
            aff["podAffinity"] = {
                "requiredDuringSchedulingIgnoredDuringExecution": [t.manifest() for t in self.affinity]
            }
        if self.anti_affinity:
            aff["podAntiAffinity"] = {
                "requiredDuringSchedulingIgnoredDuringExecution": [t.manifest() for t in self.anti_affinity]
            }
        if aff:
            spec["affinity"] = aff
        return {
            "kind": "Pod",
            "metadata": {"name": self.name, "namespace": self.namespace, "labels": {"app": self.app}},
            "spec": spec,
        }


terms = st.builds(
    Term,
    st.sampled_from(APPS),
    st.sampled_from((HOSTNAME, ZONE)),
    st.sampled_from(((), ("default",), ("default", "other"))),
)


@st.composite
def clusters(draw: st.DrawFn) -> tuple[list[dict[str, Any]], list[PodSpec]]:
    n_nodes = draw(st.integers(1, 6))
    nodes = []
    for i in range(n_nodes):
        labels = {HOSTNAME: f"n{i}"}
        zone = draw(st.sampled_from(("z0", "z1", None)))
        if zone is not None:
            labels[ZONE] = zone
        nodes.append(
            {
                "kind": "Node",
                "metadata": {"name": f"n{i}", "labels": labels},
                "status": {"allocatable": {"cpu": "8", "memory": "8Gi", "pods": "110"}},
            }
        )
    pods = [
        PodSpec(
            f"p{i}",
            draw(st.sampled_from(NAMESPACES)),
            draw(st.sampled_from(APPS)),
            tuple(draw(st.lists(terms, max_size=2))) if draw(st.booleans()) else (),
            tuple(draw(st.lists(terms, max_size=2))),
        )
        for i in range(draw(st.integers(1, 10)))
    ]
    return nodes, pods


def _matches(term: Term, owner: PodSpec, other: PodSpec) -> bool:
    namespaces = term.namespaces or (owner.namespace,)
    return other.namespace in namespaces and other.app == term.app


def _same_domain(key: str, a: Mapping[str, str], b: Mapping[str, str]) -> bool:
    return key in a and key in b and a[key] == b[key]


def violations(
    pods: dict[str, PodSpec],
    bound_order: list[str],
    placed: dict[str, str],
    node_labels: dict[str, dict[str, str]],
) -> list[str]:
    found: list[str] = []
    for p_name, p_node in placed.items():
        p = pods[p_name]
        p_labels = node_labels[p_node]
        for q_name, q_node in placed.items():
            if q_name == p_name:
                continue
            for t in p.anti_affinity:
                if _matches(t, p, pods[q_name]) and _same_domain(
                    t.topology_key, p_labels, node_labels[q_node]
                ):
                    found.append(f"{p_name} on {p_node} and {q_name} on {q_node} break anti-affinity {t}")
        if not p.affinity:
            continue
        if any(t.topology_key not in p_labels for t in p.affinity):
            found.append(f"{p_name} on {p_node} lacks a topology key of its affinity")
            continue
        before = bound_order[: bound_order.index(p_name)]
        matching = [q for q in before if all(_matches(t, p, pods[q]) for t in p.affinity)]
        partner = any(
            all(_same_domain(t.topology_key, p_labels, node_labels[placed[q]]) for t in p.affinity)
            for q in matching
        )
        counted = [q for q in matching if any(t.topology_key in node_labels[placed[q]] for t in p.affinity)]
        first = not counted and all(_matches(t, p, p) for t in p.affinity)
        if not partner and not first:
            found.append(f"{p_name} on {p_node} has no affinity partner and is not the first of its group")
    return found


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(clusters())
def test_no_placed_pod_breaks_required_pod_affinity(
    cluster: tuple[list[dict[str, Any]], list[PodSpec]],
) -> None:
    nodes, pod_specs = cluster
    sim = Simulation(seed=0)
    watch = sim.store.watch(frozenset({"Pod"}))
    for obj in nodes:
        sim.store.create(obj)
    for spec in pod_specs:
        sim.store.create(spec.manifest())
    sim.run()
    bound_order: list[str] = []
    for event in watch.drain():
        if event.type != EventType.MODIFIED or not (event.obj.get("spec") or {}).get("nodeName"):
            continue
        if event.old is not None and (event.old.get("spec") or {}).get("nodeName"):
            continue
        bound_order.append(event.obj["metadata"]["name"])
    placed = {
        obj["metadata"]["name"]: obj["spec"]["nodeName"]
        for obj in sim.store.list("Pod")
        if (obj.get("spec") or {}).get("nodeName")
    }
    assert sorted(bound_order) == sorted(placed)
    node_labels = {n["metadata"]["name"]: n["metadata"]["labels"] for n in nodes}
    assert violations({p.name: p for p in pod_specs}, bound_order, placed, node_labels) == []


def test_checker_finds_a_planted_violation() -> None:
    """The checker itself must catch a pair that breaks anti-affinity and a lonely follower."""
    pods = {
        "x": PodSpec("x", "default", "a", (), (Term("a", HOSTNAME, ()),)),
        "y": PodSpec("y", "default", "a", (), ()),
        "z": PodSpec("z", "default", "b", (Term("c", ZONE, ()),), ()),
    }
    labels = {"n0": {HOSTNAME: "n0", ZONE: "z0"}}
    found = violations(pods, ["x", "y", "z"], {"x": "n0", "y": "n0", "z": "n0"}, labels)
    assert len(found) == 2
