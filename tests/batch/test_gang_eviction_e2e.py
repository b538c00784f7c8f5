"""Volcano v1.15's end-to-end cases of gang-aware eviction (``test/e2e/gangevict/gangevict.go``),
names verbatim, run as successive sessions of the batch scheduler on the same store with Volcano's
own scheduler conf for them (``gangEvictConfig``; its ``sla`` plugin is one kubesched does not have
and is skipped with a warning).

Each case starts where Volcano's waits for the victims to be ready: the victim gangs run, one pod
per node (the e2e clusters hold one 1-cpu pod per node, or 8-cpu kwok nodes under a two-tier
HyperNode tree); the preemptor or reclaimer gang is then pending. A pod is *ready* when it is bound
to a node and not deleted. The sub-group cases (``GP-S1``, ``GR-S1``) have no counterpart: kubesched
has no sub-jobs.
"""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from kubesched.batch.testing import node, pod, pod_group, priority_class, queue, scheduler_on
from kubesched.store.memory import MemoryStore

GANG_EVICT_CONFIG = """
actions: "allocate, backfill, gangreclaim, gangpreempt"
tiers:
- plugins:
  - name: priority
  - name: gang
    enablePreemptable: false
  - name: conformance
  - name: sla
  - name: capacity
    enableHierarchy: false
- plugins:
  - name: overcommit
  - name: drf
    enablePreemptable: false
  - name: predicates
    arguments:
      predicate.DynamicResourceAllocationEnable: true
  - name: nodeorder
  - name: binpack
  - name: network-topology-aware
"""

PRIORITIES = [
    priority_class("high", 100),
    priority_class("med", 50),
    priority_class("low", 10),
]
NS = "e2e"
NODES = [f"kwok-node-{i}" for i in range(4)]
TIER1 = {"s0": NODES[:2], "s1": NODES[2:]}


def deserved(cpus: int) -> dict[str, str]:
    return {"cpu": str(cpus), "memory": f"{cpus}Gi"}


def q(name: str, cpus: int, **spec: Any) -> dict[str, Any]:
    return queue(name, deserved=deserved(cpus), **spec)


def gang(
    name: str,
    queue_name: str,
    pri: str,
    reps: int,
    min_avail: int,
    *,
    running: bool,
    cpu: str = "1",
    roles: list[tuple[str, int, int]] | None = None,
    tier: int | None = None,
) -> list[dict[str, Any]]:
    """A Volcano job's PodGroup and pods (``createGangJob``): running ones placed one per node in
    node order, pending ones unplaced. Victims carry ``volcano.sh/preemptable: "true"``. ``roles``:
    (name, replicas, minAvailable) per role, ``reps`` then being their total."""
    group = pod_group(name, queue_name, min_avail, "Running" if running else "Inqueue", pri, ns=NS)
    if roles:
        group["spec"]["minTaskMember"] = {r: m for r, _, m in roles}
    if tier is not None:
        group["spec"]["networkTopology"] = {"mode": "hard", "highestTierAllowed": tier}
    role_of = [r for r, n, _ in roles for _ in range(n)] if roles else [""] * reps
    out = [group]
    for i, role in enumerate(role_of):
        p = pod(f"{name}-{i}", NODES[i] if running else "", name, cpu, f"{cpu}Gi", ns=NS, priority_class=pri)
        if running:
            p["metadata"]["labels"] = {"volcano.sh/preemptable": "true"}
        if role:
            p["metadata"]["annotations"]["volcano.sh/task-spec"] = role
        out.append(p)
    return out


def one_slot_nodes() -> list[dict[str, Any]]:
    """``NodesNumLimit: 4``, ``NodesResourceLimit: CPU1Mem1``: room for one 1-cpu pod per node."""
    return [node(n, "1", "1Gi") for n in NODES]


def topology() -> list[dict[str, Any]]:
    """``setupTopoHyperNodes`` over four 8-cpu kwok nodes: s0 and s1 (tier 1) under s2 (tier 2)."""

    def hyper_node(name: str, tier: int, members: list[str], kind: str) -> dict[str, Any]:
        return {
            "apiVersion": "topology.volcano.sh/v1alpha1",
            "kind": "HyperNode",
            "metadata": {"name": name},
            "spec": {
                "tier": tier,
                "members": [{"type": kind, "selector": {"exactMatch": {"name": m}}} for m in members],
            },
        }

    out = [node(n, "8", "16Gi") for n in NODES]
    out += [hyper_node(name, 1, members, "Node") for name, members in TIER1.items()]
    out.append(hyper_node("s2", 2, list(TIER1), "HyperNode"))
    return out


def settle(objects: list[dict[str, Any]], sessions: int = 4) -> MemoryStore:
    """Run ``sessions`` sessions, the cluster catching up (evicted pods gone) between them."""
    sched = scheduler_on([*PRIORITIES, *objects], yaml.safe_load(GANG_EVICT_CONFIG))
    for _ in range(sessions):
        sched.run_session()
        sched.informers.pump()
    store: MemoryStore = sched.ports.binder.store  # type: ignore[attr-defined]
    return store


def ready(store: MemoryStore, job: str) -> list[dict[str, Any]]:
    return [
        p
        for p in store.list("Pod")
        if p["metadata"]["namespace"] == NS
        and p["metadata"]["name"].rsplit("-", 1)[0] == job
        and p["spec"].get("nodeName")
    ]


def roles_ready(store: MemoryStore, job: str) -> dict[str, int]:
    counts: dict[str, int] = {}
    for p in ready(store, job):
        role = p["metadata"]["annotations"].get("volcano.sh/task-spec", "")
        counts[role] = counts.get(role, 0) + 1
    return counts


def in_one_tier1_domain(store: MemoryStore, job: str) -> bool:
    nodes = {p["spec"]["nodeName"] for p in ready(store, job)}
    return any(nodes <= set(members) for members in TIER1.values())


# -- gangpreempt -------------------------------------------------------------------------------- #


def test_gp_1() -> None:
    """GP-1: safe-bundle preemption evicts surplus tasks, victim gang survives"""
    store = settle(
        [
            *one_slot_nodes(),
            q("gp-q", 4),
            *gang("victim-gp1", "gp-q", "low", 4, 2, running=True),
            *gang("preemptor-gp1", "gp-q", "high", 2, 2, running=False),
        ]
    )
    assert len(ready(store, "preemptor-gp1")) == 2
    assert len(ready(store, "victim-gp1")) == 2


def test_gp_2() -> None:
    """GP-2: safe bundles harvested across multiple gangs, zero gangs broken"""
    victim_b = gang("victim-b-gp2", "gp-q", "low", 2, 1, running=True)
    for i, p in enumerate(victim_b[1:]):
        p["spec"]["nodeName"] = NODES[2 + i]
    store = settle(
        [
            *one_slot_nodes(),
            q("gp-q", 4),
            *gang("victim-a-gp2", "gp-q", "low", 2, 1, running=True),
            *victim_b,
            *gang("preemptor-gp2", "gp-q", "high", 2, 2, running=False),
        ]
    )
    assert len(ready(store, "preemptor-gp2")) == 2
    assert len(ready(store, "victim-a-gp2")) == 1
    assert len(ready(store, "victim-b-gp2")) == 1


def two_tight_gangs(suffix: str, queue_name: str, pri: str = "low") -> list[dict[str, Any]]:
    victim_b = gang(f"victim-b-{suffix}", queue_name, pri, 2, 2, running=True)
    for i, p in enumerate(victim_b[1:]):
        p["spec"]["nodeName"] = NODES[2 + i]
    return [*gang(f"victim-a-{suffix}", queue_name, pri, 2, 2, running=True), *victim_b]


def test_gp_3() -> None:
    """GP-3: whole-bundle eviction breaks exactly one gang when no surplus exists"""
    store = settle(
        [
            *one_slot_nodes(),
            q("gp-q", 4),
            *two_tight_gangs("gp3", "gp-q"),
            *gang("preemptor-gp3", "gp-q", "high", 2, 2, running=False),
        ]
    )
    assert len(ready(store, "preemptor-gp3")) == 2
    counts = sorted(len(ready(store, f"victim-{v}-gp3")) for v in "ab")
    assert counts == [0, 2]


def test_gp_4() -> None:
    """GP-4: whole-bundle eviction breaks both gangs for large preemptor"""
    store = settle(
        [
            *one_slot_nodes(),
            q("gp-q", 4),
            *two_tight_gangs("gp4", "gp-q"),
            *gang("preemptor-gp4", "gp-q", "high", 4, 4, running=False),
        ]
    )
    assert len(ready(store, "preemptor-gp4")) == 4


def test_gp_5() -> None:
    """GP-5: basic gang preemption of a lower-priority gang"""
    store = settle(
        [
            *one_slot_nodes(),
            q("gp-q", 4),
            *gang("victim-gp5", "gp-q", "low", 4, 4, running=True),
            *gang("preemptor-gp5", "gp-q", "high", 2, 2, running=False),
        ]
    )
    assert len(ready(store, "preemptor-gp5")) == 2


def test_gp_6() -> None:
    """GP-6: gang preemption does not cross queue boundaries"""
    store = settle(
        [
            *one_slot_nodes(),
            q("gp6-q1", 2),
            q("gp6-q2", 2, reclaimable=False),
            *gang("victim-gp6", "gp6-q2", "low", 4, 4, running=True),
            *gang("preemptor-gp6", "gp6-q1", "high", 2, 2, running=False),
        ]
    )
    assert len(ready(store, "preemptor-gp6")) < 2
    assert len(ready(store, "victim-gp6")) == 4


def test_gp_7() -> None:
    """GP-7: equal-priority gang is not preempted"""
    store = settle(
        [
            *one_slot_nodes(),
            q("gp-q", 4),
            *gang("victim-gp7", "gp-q", "med", 4, 4, running=True),
            *gang("preemptor-gp7", "gp-q", "med", 2, 2, running=False),
        ]
    )
    assert len(ready(store, "preemptor-gp7")) < 2
    assert len(ready(store, "victim-gp7")) == 4


def test_gp_8() -> None:
    """GP-8: medium-priority preemptor cannot evict high-priority victims"""
    gang_b = gang("gang-b-gp8", "gp-q", "low", 2, 2, running=True)
    for i, p in enumerate(gang_b[1:]):
        p["spec"]["nodeName"] = NODES[2 + i]
    store = settle(
        [
            *one_slot_nodes(),
            q("gp-q", 4),
            *gang("gang-a-gp8", "gp-q", "high", 2, 2, running=True),
            *gang_b,
            *gang("preemptor-c-gp8", "gp-q", "med", 4, 4, running=False),
        ]
    )
    assert len(ready(store, "preemptor-c-gp8")) < 4
    assert len(ready(store, "gang-a-gp8")) == 2


def test_gp_r1() -> None:
    """GP-R1: per-role surplus gate keeps role-tight tasks safe"""
    roles = [("ps", 1, 1), ("worker", 3, 2)]
    store = settle(
        [
            *one_slot_nodes(),
            q("gp-q", 4),
            *gang("victim-gpr1", "gp-q", "low", 4, 3, running=True, roles=roles),
            *gang("preemptor-gpr1", "gp-q", "high", 1, 1, running=False),
        ]
    )
    assert len(ready(store, "preemptor-gpr1")) == 1
    counts = roles_ready(store, "victim-gpr1")
    assert sum(counts.values()) >= 3
    assert counts["ps"] == 1 and counts["worker"] >= 2


def test_gp_t1() -> None:
    """GP-T1: hard tier-1 preemption places preemptor within one domain"""
    store = settle(
        [
            *topology(),
            q("gp-q", 4),
            *gang("victim-gpt1", "gp-q", "low", 4, 2, running=True, tier=2),
            *gang("preemptor-gpt1", "gp-q", "high", 2, 2, running=False, tier=1),
        ]
    )
    assert len(ready(store, "preemptor-gpt1")) == 2
    assert in_one_tier1_domain(store, "preemptor-gpt1")
    assert len(ready(store, "victim-gpt1")) >= 2


def test_gp_t2() -> None:
    """GP-T2: hard tier-1 preemption blocked when domain is too small"""
    store = settle(
        [
            *topology(),
            q("gp-q", 16),
            *gang("victim-gpt2", "gp-q", "low", 4, 4, running=True, tier=2),
            *gang("preemptor-gpt2", "gp-q", "high", 3, 3, running=False, cpu="5", tier=1),
        ]
    )
    assert len(ready(store, "preemptor-gpt2")) < 3
    assert len(ready(store, "victim-gpt2")) == 4


def test_gp_t3() -> None:
    """GP-T3: hard tier-2 preemption succeeds at wider domain"""
    store = settle(
        [
            *topology(),
            q("gp-q", 4),
            *gang("victim-gpt3", "gp-q", "low", 4, 2, running=True, tier=2),
            *gang("preemptor-gpt3", "gp-q", "high", 3, 3, running=False, tier=2),
        ]
    )
    assert len(ready(store, "preemptor-gpt3")) == 3


def test_gp_t4() -> None:
    """GP-T4: hard tier-2 constraint places preemptor in tier-1 domain when sufficient"""
    store = settle(
        [
            *topology(),
            q("gp-q", 4),
            *gang("victim-gpt4", "gp-q", "low", 4, 2, running=True, tier=2),
            *gang("preemptor-gpt4", "gp-q", "high", 2, 2, running=False, tier=2),
        ]
    )
    assert len(ready(store, "preemptor-gpt4")) == 2
    assert in_one_tier1_domain(store, "preemptor-gpt4")
    assert len(ready(store, "victim-gpt4")) >= 2


# -- gangreclaim -------------------------------------------------------------------------------- #


def test_gr_1() -> None:
    """GR-1: safe-bundle reclaim evicts surplus, victim gang survives"""
    store = settle(
        [
            *one_slot_nodes(),
            q("gr1-q1", 2),
            q("gr1-q2", 2),
            *gang("victim-gr1", "gr1-q2", "low", 4, 2, running=True),
            *gang("reclaimer-gr1", "gr1-q1", "low", 2, 2, running=False),
        ]
    )
    assert len(ready(store, "reclaimer-gr1")) == 2
    assert len(ready(store, "victim-gr1")) == 2


def test_gr_2() -> None:
    """GR-2: whole-bundle reclaim breaks exactly one gang when no surplus exists"""
    store = settle(
        [
            *one_slot_nodes(),
            q("gr2-q1", 2),
            q("gr2-q2", 2),
            *two_tight_gangs("gr2", "gr2-q2"),
            *gang("reclaimer-gr2", "gr2-q1", "low", 2, 2, running=False),
        ]
    )
    assert len(ready(store, "reclaimer-gr2")) == 2
    assert sorted(len(ready(store, f"victim-{v}-gr2")) for v in "ab") == [0, 2]


def test_gr_3() -> None:
    """GR-3: basic gang reclaim from overusing queue"""
    store = settle(
        [
            *one_slot_nodes(),
            q("gr3-q1", 2),
            q("gr3-q2", 2),
            *gang("victim-gr3", "gr3-q2", "low", 4, 2, running=True),
            *gang("reclaimer-gr3", "gr3-q1", "low", 2, 2, running=False),
        ]
    )
    assert len(ready(store, "reclaimer-gr3")) == 2


def test_gr_4() -> None:
    """GR-4: no reclaim from queues within their deserved"""
    job3 = gang("job-gr4-q3", "gr4-q3", "low", 2, 2, running=True)
    for i, p in enumerate(job3[1:]):
        p["spec"]["nodeName"] = NODES[2 + i]
    store = settle(
        [
            *one_slot_nodes(),
            q("gr4-q1", 2),
            q("gr4-q2", 2),
            q("gr4-q3", 2),
            *gang("job-gr4-q2", "gr4-q2", "low", 2, 2, running=True),
            *job3,
            *gang("reclaimer-gr4", "gr4-q1", "low", 2, 2, running=False),
        ]
    )
    assert len(ready(store, "reclaimer-gr4")) < 2
    assert len(ready(store, "job-gr4-q2")) == 2
    assert len(ready(store, "job-gr4-q3")) == 2


def test_gr_5() -> None:
    """GR-5: reclaim blocked when victim queue is not reclaimable"""
    store = settle(
        [
            *one_slot_nodes(),
            q("gr5-q1", 2),
            q("gr5-q2", 2, reclaimable=False),
            *gang("victim-gr5", "gr5-q2", "low", 4, 2, running=True),
            *gang("reclaimer-gr5", "gr5-q1", "low", 2, 2, running=False),
        ]
    )
    assert len(ready(store, "reclaimer-gr5")) < 2
    assert len(ready(store, "victim-gr5")) == 4


def test_gr_6() -> None:
    """GR-6: reclaim stops at guarantee boundary"""
    store = settle(
        [
            *one_slot_nodes(),
            q("gr6-q1", 4),
            q("gr6-q2", 2, guarantee={"resource": deserved(2)}),
            *gang("victim-gr6", "gr6-q2", "low", 4, 2, running=True),
            *gang("reclaimer-gr6", "gr6-q1", "low", 4, 4, running=False),
        ]
    )
    assert len(ready(store, "reclaimer-gr6")) < 4


def test_gr_7() -> None:
    """GR-7: overused queue is skipped as reclaimer"""
    job2 = gang("job-gr7-q2", "gr7-q2", "low", 2, 2, running=True)
    for i, p in enumerate(job2[1:]):
        p["spec"]["nodeName"] = NODES[2 + i]
    store = settle(
        [
            *one_slot_nodes(),
            q("gr7-q1", 1),
            q("gr7-q2", 3),
            *gang("job-gr7-q1", "gr7-q1", "low", 2, 2, running=True),
            *job2,
            *gang("reclaimer-gr7", "gr7-q1", "low", 2, 2, running=False),
        ]
    )
    assert len(ready(store, "reclaimer-gr7")) < 2


def test_gr_r1() -> None:
    """GR-R1: per-role surplus gate keeps role-tight tasks safe"""
    roles = [("ps", 1, 1), ("worker", 3, 2)]
    store = settle(
        [
            *one_slot_nodes(),
            q("grr1-q1", 1),
            q("grr1-q2", 3),
            *gang("victim-grr1", "grr1-q2", "low", 4, 3, running=True, roles=roles),
            *gang("reclaimer-grr1", "grr1-q1", "low", 1, 1, running=False),
        ]
    )
    assert len(ready(store, "reclaimer-grr1")) == 1
    counts = roles_ready(store, "victim-grr1")
    assert sum(counts.values()) >= 3
    assert counts["ps"] == 1 and counts["worker"] >= 2


# (name, reclaimer pods, highest tier, cpus per pod, victim minAvail, deserved cpus, runs, in one
# tier-1 domain)
GR_T = [
    ("GR-T1: hard tier-1 reclaim places reclaimer within one domain", 2, 1, "1", 2, 2, True, True),
    ("GR-T2: hard tier-1 reclaim blocked when domain is too small", 3, 1, "5", 4, 16, False, False),
    ("GR-T3: hard tier-2 reclaim succeeds at wider domain", 3, 2, "1", 2, 2, True, False),
    (
        "GR-T4: hard tier-2 constraint places reclaimer in tier-1 domain when sufficient",
        2,
        2,
        "1",
        2,
        2,
        True,
        True,
    ),
]


@pytest.mark.parametrize(
    ("reclaimer", "tier", "cpus", "victim_min", "deserved_cpus", "runs", "one_domain"),
    [c[1:] for c in GR_T],
    ids=[c[0] for c in GR_T],
)
def test_gr_t(
    reclaimer: int,
    tier: int,
    cpus: str,
    victim_min: int,
    deserved_cpus: int,
    runs: bool,
    one_domain: bool,
) -> None:
    store = settle(
        [
            *topology(),
            q("grt-q1", deserved_cpus),
            q("grt-q2", deserved_cpus),
            *gang("victim-grt", "grt-q2", "low", 4, victim_min, running=True, tier=2),
            *gang("reclaimer-grt", "grt-q1", "low", reclaimer, reclaimer, running=False, cpu=cpus, tier=tier),
        ]
    )
    placed = len(ready(store, "reclaimer-grt"))
    if runs:
        assert placed == reclaimer
        assert len(ready(store, "victim-grt")) >= victim_min
    else:
        assert placed < reclaimer
        assert len(ready(store, "victim-grt")) == 4
    if one_domain:
        assert in_one_tier1_domain(store, "reclaimer-grt")
