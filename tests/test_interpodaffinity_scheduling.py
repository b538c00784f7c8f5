"""InterPodAffinity through the whole scheduler: default profile, embedded cluster, upstream messages."""

from __future__ import annotations

from collections import Counter
from typing import Any

from kubesched.sim.simulation import Simulation

HOSTNAME = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"


def node(name: str, zone: str, cpu: str = "4") -> dict[str, Any]:
    return {
        "kind": "Node",
        "metadata": {"name": name, "labels": {HOSTNAME: name, ZONE: zone}},
        "status": {"allocatable": {"cpu": cpu, "memory": "16Gi", "pods": "110"}},
    }


def pod(
    name: str,
    labels: dict[str, str],
    affinity: dict[str, Any] | None = None,
    *,
    namespace: str = "default",
    node_name: str = "",
    cpu: str = "100m",
) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}]}
    if affinity:
        spec["affinity"] = affinity
    if node_name:
        spec["nodeName"] = node_name
    return {"kind": "Pod", "metadata": {"name": name, "namespace": namespace, "labels": labels}, "spec": spec}


def required(kind: str, labels: dict[str, str], topology_key: str, **extra: Any) -> dict[str, Any]:
    term = {"labelSelector": {"matchLabels": labels}, "topologyKey": topology_key, **extra}
    return {kind: {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}


def placements(sim: Simulation) -> dict[str, str]:
    out: dict[str, str] = {}
    for obj in sim.store.list("Pod"):
        node_name = (obj.get("spec") or {}).get("nodeName")
        if node_name:
            out[obj["metadata"]["name"]] = node_name
    return out


def run(objects: list[dict[str, Any]]) -> Simulation:
    sim = Simulation(seed=1)
    for obj in objects:
        sim.store.create(obj)
    sim.run()
    return sim


def test_required_anti_affinity_spreads_one_replica_per_node() -> None:
    anti = required("podAntiAffinity", {"app": "web"}, HOSTNAME)
    nodes = [node(f"n{i}", f"z{i % 2}") for i in range(4)]
    sim = run([*nodes, *(pod(f"web-{i}", {"app": "web"}, anti) for i in range(6))])
    placed = placements(sim)
    assert len(placed) == 4
    assert sorted(placed.values()) == ["n0", "n1", "n2", "n3"]
    failed = [o for o in sim.scheduler.outcomes.values() if o.status == "Unschedulable"]
    assert len(failed) == 2
    for outcome in failed:
        assert outcome.message.startswith(
            "0/4 nodes are available: 4 node(s) didn't match pod anti-affinity rules."
        )


def test_existing_pods_anti_affinity_keeps_other_pods_away() -> None:
    guard = pod(
        "guard", {"role": "guard"}, required("podAntiAffinity", {"app": "noisy"}, ZONE), node_name="n0"
    )
    nodes = [node("n0", "z0"), node("n1", "z0"), node("n2", "z1")]
    sim = run([*nodes, guard, *(pod(f"noisy-{i}", {"app": "noisy"}) for i in range(3))])
    placed = placements(sim)
    assert {placed[f"noisy-{i}"] for i in range(3)} == {"n2"}


def test_existing_pods_anti_affinity_message() -> None:
    guard = pod(
        "guard", {"role": "guard"}, required("podAntiAffinity", {"app": "noisy"}, ZONE), node_name="n0"
    )
    sim = run([node("n0", "z0"), node("n1", "z0"), guard, pod("noisy", {"app": "noisy"})])
    outcome = next(o for o in sim.scheduler.outcomes.values() if o.name == "noisy")
    assert outcome.status == "Unschedulable"
    assert outcome.message.startswith(
        "0/2 nodes are available: 2 node(s) didn't satisfy existing pods anti-affinity rules."
    )


def test_required_affinity_follows_the_partner_into_its_zone() -> None:
    nodes = [node(f"n{i}", f"z{i % 3}") for i in range(6)]
    db = pod("db", {"app": "db"}, node_name="n4")  # zone z1
    follow = required("podAffinity", {"app": "db"}, ZONE)
    sim = run([*nodes, db, *(pod(f"web-{i}", {"app": "web"}, follow) for i in range(4))])
    placed = placements(sim)
    assert {placed[f"web-{i}"] for i in range(4)} <= {"n1", "n4"}


def test_required_affinity_without_partner_is_unresolvable() -> None:
    follow = required("podAffinity", {"app": "db"}, ZONE)
    sim = run([node("n0", "z0"), node("n1", "z1"), pod("web", {"app": "web"}, follow)])
    outcome = next(iter(sim.scheduler.outcomes.values()))
    assert outcome.status == "Unschedulable"
    assert outcome.message.startswith("0/2 nodes are available: 2 node(s) didn't match pod affinity rules.")


def test_first_pod_of_a_self_affine_group_schedules_and_the_rest_follow() -> None:
    together = required("podAffinity", {"app": "batch"}, ZONE)
    nodes = [node(f"n{i}", f"z{i % 3}") for i in range(6)]
    sim = run([*nodes, *(pod(f"b-{i}", {"app": "batch"}, together) for i in range(5))])
    placed = placements(sim)
    assert len(placed) == 5
    zones = {f"n{i}": f"z{i % 3}" for i in range(6)}
    assert len({zones[n] for n in placed.values()}) == 1


def test_preferred_affinity_outweighs_spreading() -> None:
    nodes = [node(f"n{i}", f"z{i}") for i in range(3)]
    cache = pod("cache", {"app": "cache"}, node_name="n2", cpu="1")
    near = {
        "podAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {
                    "weight": 100,
                    "podAffinityTerm": {
                        "labelSelector": {"matchLabels": {"app": "cache"}},
                        "topologyKey": HOSTNAME,
                    },
                }
            ]
        }
    }
    sim = run([*nodes, cache, pod("api", {"app": "api"}, near)])
    assert placements(sim)["api"] == "n2"


def test_namespace_selector_selects_namespaces_by_label() -> None:
    namespaces = [
        {"kind": "Namespace", "metadata": {"name": "team-a", "labels": {"team": "a"}}},
        {"kind": "Namespace", "metadata": {"name": "team-b", "labels": {"team": "b"}}},
    ]
    nodes = [node("n0", "z0"), node("n1", "z1")]
    a_pod = pod("a-db", {"app": "db"}, namespace="team-a", node_name="n0")
    b_pod = pod("b-db", {"app": "db"}, namespace="team-b", node_name="n1")
    anti = required("podAntiAffinity", {"app": "db"}, ZONE, namespaceSelector={"matchLabels": {"team": "a"}})
    sim = run([*namespaces, *nodes, a_pod, b_pod, pod("newcomer", {"app": "x"}, anti, namespace="other")])
    assert placements(sim)["newcomer"] == "n1"


def test_default_profile_runs_inter_pod_affinity_with_weight_2() -> None:
    sim = Simulation()
    profile = next(iter(sim.scheduler.profiles.values()))
    weights = {pl.name: weight for pl, weight in profile.score}
    assert weights["InterPodAffinity"] == 2
    assert "InterPodAffinity" in profile.filter_names


def test_replicas_land_on_distinct_hosts_in_a_larger_cluster() -> None:
    anti = required("podAntiAffinity", {"app": "kv"}, HOSTNAME)
    nodes = [node(f"n{i}", f"z{i % 3}") for i in range(30)]
    sim = run([*nodes, *(pod(f"kv-{i}", {"app": "kv"}, anti) for i in range(20))])
    placed = placements(sim)
    assert len(placed) == 20
    assert max(Counter(placed.values()).values()) == 1


def test_preemption_evicts_the_pod_an_anti_affinity_term_matches() -> None:
    """Preemption asks the plugin (remove_pod) whether evicting a victim makes room."""
    anti = required("podAntiAffinity", {"app": "low"}, HOSTNAME)
    low = [pod(f"low-{i}", {"app": "low"}, node_name=f"n{i}") for i in range(2)]
    high = pod("high", {"app": "high"}, anti)
    high["spec"]["priority"] = 1000
    sim = run([node("n0", "z0"), node("n1", "z1"), *low, high])
    placed = placements(sim)
    assert len(sim.evicted) == 1
    evicted = sim.evicted[0].split("/")[1]
    assert placed["high"] == f"n{evicted[-1]}"


def test_preemption_evicts_an_existing_pod_whose_anti_affinity_blocks() -> None:
    keep_away = required("podAntiAffinity", {"app": "high"}, HOSTNAME)
    low = [pod(f"low-{i}", {"app": "low"}, keep_away, node_name=f"n{i}") for i in range(2)]
    high = pod("high", {"app": "high"})
    high["spec"]["priority"] = 1000
    sim = run([node("n0", "z0"), node("n1", "z1"), *low, high])
    assert len(sim.evicted) == 1
    assert placements(sim)["high"] == f"n{sim.evicted[0][-1]}"
