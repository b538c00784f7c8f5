"""What a batch session's own placements count for, as in Volcano: every task takes a pod slot (a
``pods`` unit in its request), evictions free slots, and InterPodAffinity / PodTopologySpread see the
tasks placed earlier in the same session."""

from __future__ import annotations

from typing import Any

import numpy as np
import yaml

from kubesched.batch.conf import SWITCHES
from kubesched.batch.conf_loader import batch_conf_from_dict, default_batch_conf
from kubesched.batch.framework import open_session
from kubesched.batch.plugins.drf import DrfPlugin
from kubesched.batch.statement import Statement
from kubesched.runtime.cluster import Cluster, ClusterOptions
from kubesched.sim.simulation import Simulation, SimulationResult
from kubesched.store.memory import MemoryStore

VOLCANO = "scheduling.volcano.sh/v1beta1"
HOSTNAME = "kubernetes.io/hostname"

# -- builders (each batch test file keeps its own: tests import no sibling modules) --------------- #


def node(name: str, cpu: str = "8", pods: str = "110") -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {HOSTNAME: name}},
        "status": {"allocatable": {"cpu": cpu, "memory": "64Gi", "pods": pods}},
    }


def group(name: str, min_member: int, queue: str = "default", phase: str | None = None) -> dict[str, Any]:
    obj: dict[str, Any] = {
        "apiVersion": VOLCANO,
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": "ns"},
        "spec": {"minMember": min_member, "queue": queue},
    }
    if phase:
        obj["status"] = {"phase": phase}
    return obj


def queue(name: str, weight: int = 1) -> dict[str, Any]:
    return {
        "apiVersion": VOLCANO,
        "kind": "Queue",
        "metadata": {"name": name},
        "spec": {"weight": weight, "reclaimable": True},
        "status": {"state": "Open"},
    }


def pod(
    name: str,
    grp: str | None,
    cpu: str | None = "1",
    *,
    node_name: str = "",
    labels: dict[str, str] | None = None,
    scheduler: str = "volcano",
    **spec: Any,
) -> dict[str, Any]:
    resources = {"requests": {"cpu": cpu, "memory": "1Gi"}} if cpu else {}
    meta: dict[str, Any] = {"name": name, "namespace": "ns", "labels": dict(labels or {})}
    if grp:
        meta["annotations"] = {"scheduling.k8s.io/group-name": grp}
    obj: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": meta,
        "spec": {
            "schedulerName": scheduler,
            "containers": [{"name": "c", "image": "x", "resources": resources}],
            **spec,
        },
    }
    if node_name:
        obj["spec"]["nodeName"] = node_name
        obj["status"] = {"phase": "Running"}
    return obj


def anti_affinity(labels: dict[str, str], key: str = HOSTNAME) -> dict[str, Any]:
    term = {"labelSelector": {"matchLabels": labels}, "topologyKey": key}
    return {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}


def preferred_affinity(labels: dict[str, str], key: str = HOSTNAME) -> dict[str, Any]:
    term = {"labelSelector": {"matchLabels": labels}, "topologyKey": key}
    return {
        "podAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 100, "podAffinityTerm": term}]
        }
    }


def spread(labels: dict[str, str], key: str = HOSTNAME) -> list[dict[str, Any]]:
    return [
        {
            "maxSkew": 1,
            "topologyKey": key,
            "whenUnsatisfiable": "DoNotSchedule",
            "labelSelector": {"matchLabels": labels},
        }
    ]


ORDER = {"Queue": 0, "Node": 1, "PodGroup": 2, "Pod": 3}


def simulate(objs: list[dict[str, Any]], conf: str | None = None) -> tuple[SimulationResult, Simulation]:
    bc = batch_conf_from_dict(yaml.safe_load(conf), "test.conf") if conf else default_batch_conf()
    sim = Simulation(seed=0, batch_conf=bc)
    for obj in sorted(objs, key=lambda o: ORDER[o["kind"]]):
        sim.store.create(obj)
    return sim.run(), sim


def placed(result: SimulationResult) -> dict[str, str | None]:
    return {o.name: o.node for o in result.outcomes}


def gang(name: str, size: int, **kw: Any) -> list[dict[str, Any]]:
    return [group(name, size), *(pod(f"{name}-{i}", name, **kw) for i in range(size))]


# -- pods per task --------------------------------------------------------------------------------- #


def test_each_task_takes_a_pod_slot() -> None:
    """Room for 2 pods: a gang of 2 binds, a gang of 3 binds nothing and says why."""
    result, _ = simulate([node("n1", pods="2"), *gang("two", 2)])
    assert set(placed(result).values()) == {"n1"}

    result, _ = simulate([node("n1", pods="2"), *gang("three", 3)])
    assert set(placed(result).values()) == {None}
    assert any("0/1 nodes are unavailable: 1 Insufficient pods." in o.message for o in result.outcomes)


def test_pods_of_other_schedulers_take_slots_too() -> None:
    objs = [
        node("n1", pods="3"),
        pod("web-0", None, node_name="n1", scheduler="default-scheduler"),
        pod("web-1", None, node_name="n1", scheduler="default-scheduler"),
        *gang("g", 2),
    ]
    result, _ = simulate(objs)
    assert placed(result)["g-0"] is None and placed(result)["g-1"] is None


def test_best_effort_pods_still_count_against_pod_capacity() -> None:
    """Backfill places pods without requests through the pod-count predicate."""
    objs = [node("n1", pods="2"), *(pod(f"be-{i}", None, cpu=None) for i in range(3))]
    result, _ = simulate(objs)
    nodes = list(placed(result).values())
    assert nodes.count("n1") == 2 and nodes.count(None) == 1
    assert any("node(s) pod number exceeded" in o.message for o in result.outcomes)


def test_drf_share_counts_pods() -> None:
    """Five tiny pods on a 10-slot node: the job's dominant resource is its pod count (Volcano)."""
    objs = [
        node("n1", cpu="100", pods="10"),
        group("tiny", 1, phase="Running"),
        *(pod(f"t-{i}", "tiny", cpu="10m", node_name="n1") for i in range(5)),
    ]
    store = MemoryStore()
    for obj in sorted(objs, key=lambda o: ORDER[o["kind"]]):
        store.create(obj)
    conf = batch_conf_from_dict({"actions": "allocate", "tiers": [{"plugins": [{"name": "drf"}]}]})
    sched = Cluster(store, ClusterOptions(now=lambda: 0.0, batch_conf=conf)).start_batch()
    sched.informers.pump()
    snap, _ = sched.build_snapshot()
    ssn = open_session(snap, conf)
    drf = ssn.plugins["drf"]
    assert isinstance(drf, DrfPlugin)
    assert drf.dominant(ssn, "ns/tiny") == ("pods", 0.5)


def plugin(name: str, *switches: str) -> dict[str, Any]:
    out: dict[str, Any] = {"name": name}
    for key, attr, _ in SWITCHES:
        out[key] = attr in switches
    return out


def test_reclaim_evicts_to_free_a_pod_slot() -> None:
    """The node has cpu to spare but no pod slot: q1 holds both slots, more than its share of them,
    so reclaim takes one of q1's pods for q2's task."""
    objs = [
        node("n1", cpu="4", pods="2"),
        queue("q1"),
        queue("q2"),
        group("a", 1, "q1", "Running"),
        group("b", 1, "q2", "Inqueue"),
        pod("a-0", "a", node_name="n1"),
        pod("a-1", "a", node_name="n1"),
        pod("b-0", "b"),
    ]
    store = MemoryStore()
    for obj in sorted(objs, key=lambda o: ORDER[o["kind"]]):
        store.create(obj)
    tier = [
        plugin("gang", "reclaimable", "job_starving"),
        plugin("proportion", "reclaimable", "queue_order", "preemptive"),
    ]
    conf = batch_conf_from_dict({"actions": "reclaim", "tiers": [{"plugins": tier}]})
    sched = Cluster(store, ClusterOptions(now=lambda: 0.0, batch_conf=conf)).start_batch()
    sched.informers.pump()
    sched.run_session()
    assert len(sched.evicted) == 1 and sched.evicted[0] in ("ns/a-0", "ns/a-1")


# -- inter-pod affinity and topology spread within a session ---------------------------------------- #


def test_gang_with_hostname_anti_affinity_lands_one_per_node() -> None:
    """n0 is the emptiest node for every member; anti-affinity still puts one member per node."""
    labels = {"app": "ring"}
    members = gang("ring", 4, labels=labels, affinity=anti_affinity(labels))
    result, _ = simulate([node("n0", cpu="64"), *(node(f"n{i}") for i in range(1, 4)), *members])
    nodes = placed(result)
    assert sorted(n or "" for n in nodes.values()) == ["n0", "n1", "n2", "n3"]


def test_gang_with_hostname_anti_affinity_binds_nothing_on_too_few_nodes() -> None:
    labels = {"app": "ring"}
    members = gang("ring", 4, labels=labels, affinity=anti_affinity(labels))
    result, sim = simulate([*(node(f"n{i}") for i in range(3)), *members])
    assert set(placed(result).values()) == {None}
    assert any("didn't match pod anti-affinity rules" in o.message for o in result.outcomes)
    # The session's tentative placements left the scheduler's pod index with the cache's pods only.
    assert sim.batch is not None
    assert len(sim.batch.cache.pod_index) == 0


def test_anti_affinity_to_a_running_pod() -> None:
    """n1 scores best but runs the pod ``w`` must avoid."""
    objs = [
        node("n1", cpu="64"),
        node("n2"),
        pod("db", None, node_name="n1", labels={"app": "db"}, scheduler="default-scheduler"),
        pod("w", None, affinity=anti_affinity({"app": "db"})),
    ]
    result, _ = simulate(objs)
    assert placed(result)["w"] == "n2"


def test_topology_spread_counts_tasks_placed_in_the_session() -> None:
    """The big node scores best for every member, but maxSkew 1 splits the gang 2/2."""
    labels = {"app": "spread"}
    members = gang("s", 4, labels=labels, topologySpreadConstraints=spread(labels))
    result, _ = simulate([node("big", cpu="64"), node("small", cpu="4"), *members])
    nodes = list(placed(result).values())
    assert nodes.count("big") == 2 and nodes.count("small") == 2


def test_preferred_affinity_score_sees_the_first_member() -> None:
    """Preferred affinity to its own label: the second member joins the first on its node."""
    labels = {"app": "pair"}
    members = gang("pair", 2, labels=labels, affinity=preferred_affinity(labels))
    result, _ = simulate([*(node(f"n{i}") for i in range(4)), *members])
    nodes = set(placed(result).values())
    assert len(nodes) == 1 and None not in nodes


def test_session_counts_placements_on_its_own_table_in_integers() -> None:
    """Allocating, evicting and pipelining change the session's fork only; idle is allocatable less
    requested on every row, and the releasing/pipelined columns are integers in the table's units."""
    objs = [
        node("n1", cpu="4", pods="10"),
        group("a", 1, phase="Running"),
        group("b", 1, phase="Inqueue"),
        pod("a-0", "a", node_name="n1"),
        pod("b-0", "b", cpu="2"),
    ]
    store = MemoryStore()
    for obj in sorted(objs, key=lambda o: ORDER[o["kind"]]):
        store.create(obj)
    conf = batch_conf_from_dict({"actions": "allocate", "tiers": [{"plugins": [{"name": "gang"}]}]})
    sched = Cluster(store, ClusterOptions(now=lambda: 0.0, batch_conf=conf)).start_batch()
    sched.informers.pump()
    snap, _ = sched.build_snapshot()
    base = sched.snapshot.table
    before = (base.requested.copy(), base.nonzero_requested.copy())
    ssn = open_session(snap, conf)
    assert ssn.table is not base and ssn.table.is_fork
    slot = ssn.table.slot_of["n1"]
    running = ssn.jobs["ns/a"].tasks
    pending = ssn.jobs["ns/b"].tasks
    (a0,) = running.values()
    (b0,) = pending.values()
    stmt = Statement(ssn)
    stmt.allocate(b0, slot)
    stmt.evict(a0, "test")
    assert ssn.idle.dtype == ssn.releasing.dtype == ssn.pipelined.dtype == np.int64
    r = len(ssn.space)
    assert (ssn.idle == ssn.table.allocatable[:, :r] - ssn.table.requested[:, :r]).all()
    assert ssn.idle[slot, 0] == 4000 - 1000 - 2000
    assert ssn.releasing[slot, 0] == 1000
    stmt.discard()
    assert (ssn.idle == ssn.table.allocatable[:, :r] - ssn.table.requested[:, :r]).all()
    assert ssn.idle[slot, 0] == 3000 and not ssn.releasing.any()
    assert (base.requested == before[0]).all() and (base.nonzero_requested == before[1]).all()
