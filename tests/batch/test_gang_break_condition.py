"""When Volcano's own preempt or reclaim rules take a running gang below minMember, kubesched keeps
the decision and says so in the PodGroup's Unschedulable condition: which action evicted which
members for which task, and which tier rule chose them."""

from __future__ import annotations

from typing import Any

import pytest
from tests.test_invariants_both_pipelines import CONF, KNOWN_GANG_BREAKS, cluster

from kubesched.api.manifests import LoadResult, ManifestObject
from kubesched.batch.conf_loader import batch_conf_from_dict
from kubesched.batch.scheduler import BatchScheduler
from kubesched.batch.testing import node, pod, pod_group, priority_class, queue, store_of
from kubesched.runtime.cluster import Cluster, ClusterOptions
from kubesched.sim.simulation import Simulation
from kubesched.store.memory import MemoryStore

NOTE = "Gang below minMember by Volcano's preemption rules"
TIERS = [
    {"plugins": [{"name": "priority"}, {"name": "gang"}, {"name": "conformance"}]},
    {"plugins": [{"name": "drf"}, {"name": "predicates"}, {"name": "proportion"}, {"name": "nodeorder"}]},
]


def scheduler(objects: list[dict[str, Any]], actions: str) -> tuple[BatchScheduler, MemoryStore]:
    store = store_of(objects)
    conf = batch_conf_from_dict({"actions": actions, "tiers": TIERS})
    sched = Cluster(store, ClusterOptions(now=lambda: 0.0, batch_conf=conf)).start_batch()
    sched.informers.pump()
    return sched, store


def unschedulable(store: MemoryStore, name: str, ns: str = "c1") -> dict[str, Any] | None:
    status = store.get("PodGroup", ns, name).get("status") or {}
    for cond in status.get("conditions") or []:
        if cond["type"] == "Unschedulable":
            return dict(cond)
    return None


def same_priority_gangs(members: int) -> list[dict[str, Any]]:
    """A running gang of ``members`` pods (minMember 2) filling its node, and a waiting one-pod gang
    of the same priority in the same queue: ``priority`` finds no lower-priority victim, so tier 1
    decides nothing and ``drf`` in tier 2 picks victims alone."""
    objects = [
        node("n1", str(members), f"{members}G"),
        queue("q1"),
        pod_group("big", "q1", 2, "Running"),
        pod_group("small", "q1", 1, "Inqueue"),
        pod("s1", "", "small"),
    ]
    objects += [pod(f"b{i}", "n1", "big") for i in range(1, members + 1)]
    return objects


def test_preempt_by_a_later_tier_is_told_on_the_podgroup() -> None:
    sched, store = scheduler(same_priority_gangs(2), "preempt")
    sched.run_session()
    assert len(sched.evicted) == 1
    (victim,) = sched.evicted
    cond = unschedulable(store, "big")
    assert cond is not None
    assert (cond["status"], cond["reason"]) == ("True", "NotEnoughResources")
    assert cond["message"] == (
        f"{NOTE}: 1 of minMember 2 members bound after preempt evicted {victim} for c1/s1: tier 1 "
        "decided nothing (priority answered no victims), then tier 2 (drf) chose the victims without "
        "gang's minMember check."
    )
    # Volcano's phase is kept: the evicted member still counts while it is released.
    assert store.get("PodGroup", "c1", "big")["status"]["phase"] == "Running"
    # Next session: the member is gone and gang writes its own Unschedulable condition; the note
    # stays in it while the gang is below minMember.
    sched.informers.pump()
    sched.run_session()
    cond = unschedulable(store, "big")
    assert cond is not None and cond["transitionID"] != "session-1"
    assert cond["message"].endswith(
        f"{NOTE}: 1 of minMember 2 members bound after preempt evicted {victim} for c1/s1: tier 1 "
        "decided nothing (priority answered no victims), then tier 2 (drf) chose the victims without "
        "gang's minMember check."
    )
    assert not cond["message"].startswith(NOTE)


def test_evictions_that_keep_the_gang_at_minmember_add_nothing() -> None:
    # Three members, minMember 2: one can go without breaking the gang.
    sched, store = scheduler(same_priority_gangs(3), "preempt")
    sched.run_session()
    assert len(sched.evicted) == 1
    cond = unschedulable(store, "big")
    assert cond is None or NOTE not in cond["message"]


def test_reclaim_when_gang_answers_no_victims_is_told_on_the_podgroup() -> None:
    """q1 holds the whole node with a gang at exactly minMember; q2 reclaims. gang answers no
    victims (it would break the gang), so tier 1 decides nothing and proportion picks in tier 2."""
    objects = [
        node("n1", "2", "2G"),
        queue("q1"),
        queue("q2"),
        pod_group("big", "q1", 2, "Running"),
        pod_group("other", "q2", 1, "Inqueue"),
        pod("b1", "n1", "big"),
        pod("b2", "n1", "big"),
        pod("o1", "", "other"),
    ]
    sched, store = scheduler(objects, "reclaim")
    sched.run_session()
    assert len(sched.evicted) == 1
    (victim,) = sched.evicted
    cond = unschedulable(store, "big")
    assert cond is not None
    assert cond["message"] == (
        f"{NOTE}: 1 of minMember 2 members bound after reclaim evicted {victim} for c1/o1: tier 1 "
        "decided nothing (gang answered no victims), then tier 2 (proportion) chose the victims "
        "without gang's minMember check."
    )


def test_preempt_allowed_by_gangs_ready_count_is_told_on_the_podgroup() -> None:
    """gang counts a completed member as ready: with one succeeded and two running members of a
    minMember 2 gang it allows a victim, and one member is left running."""
    finished = pod("b3", "n1", "big")
    finished["status"] = {"phase": "Succeeded"}
    objects = [
        priority_class("high", 1000),
        priority_class("low", 10),
        node("n1", "2", "2G"),
        queue("q1"),
        pod_group("big", "q1", 2, "Running", "low"),
        pod_group("urgent", "q1", 1, "Inqueue", "high"),
        pod("b1", "n1", "big", priority_class="low"),
        pod("b2", "n1", "big", priority_class="low"),
        finished,
        pod("u1", "", "urgent", priority_class="high"),
    ]
    sched, store = scheduler(objects, "preempt")
    sched.run_session()
    assert len(sched.evicted) == 1
    (victim,) = sched.evicted
    cond = unschedulable(store, "big")
    assert cond is not None
    assert cond["message"] == (
        f"{NOTE}: 1 of minMember 2 members bound after preempt evicted {victim} for c1/u1: tier 1 "
        "(priority, gang, conformance) chose the victims with gang counting best-effort and completed "
        "members as ready."
    )


# -- the random clusters of the both-pipelines invariant suite where this happens --------------- #


@pytest.mark.parametrize(
    ("seed", "group", "expected"),
    [
        (
            88,
            "g1",
            "1 of minMember 2 members bound after preempt evicted ml/g1-1 for ml/g2-0: tier 1 decided "
            "nothing (priority answered no victims), then tier 2 (drf) chose the victims without gang's "
            "minMember check.",
        ),
        (
            116,
            "g2",
            "2 of minMember 3 members bound after preempt evicted ml/g2-1, ml/g2-0 for ml/g1-0: tier 1 "
            "decided nothing (priority answered no victims), then tier 2 (drf) chose the victims without "
            "gang's minMember check.",
        ),
    ],
)
def test_known_gang_breaks_are_told_on_the_podgroup(seed: int, group: str, expected: str) -> None:
    assert f"PodGroup {group}:" in KNOWN_GANG_BREAKS[seed][0]
    loaded = LoadResult()
    for i, obj in enumerate(cluster(seed)):
        loaded.objects.append(ManifestObject(obj["kind"], obj, "cluster.yaml", i + 1))
    sim = Simulation(seed=seed, batch_conf=batch_conf_from_dict(CONF))
    sim.load(loaded)
    sim.run()
    cond = unschedulable(sim.store, group, "ml")  # type: ignore[arg-type]
    assert (
        cond is not None
        and cond["status"] == "True"
        and cond["reason"]
        in (
            "NotEnoughResources",
            "NotEnoughTasks",
        )
    )
    assert cond["message"].endswith(f"{NOTE}: {expected}")
