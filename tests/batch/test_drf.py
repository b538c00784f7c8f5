"""The drf plugin (Volcano ``plugins/drf``, non-hierarchical): job order by dominant resource share,
the preemptable function, and shares kept current by the statement events; then drf deciding
allocation order and preemption victims end to end.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from kubesched.batch.job_info import TaskStatus
from kubesched.batch.plugins.drf import DrfPlugin
from kubesched.batch.scheduler import BatchScheduler
from kubesched.batch.session import Session
from kubesched.batch.statement import Statement
from kubesched.batch.testing import node, open_on, pod, pod_group, queue, run, run_conf


def open_with(objects: list[dict[str, Any]], plugins: list[dict[str, Any]]) -> tuple[Session, DrfPlugin]:
    """A session on ``objects`` with ``plugins`` open and no action run yet."""
    ssn = open_on(objects, plugins)
    return ssn, ssn.plugins["drf"]


def running(job: str, n: int, cpu: str, mem: str, node_name: str = "n1") -> list[dict[str, Any]]:
    return [pod(f"{job}-{i}", node_name, job, cpu, mem) for i in range(n)]


# -- job order ---------------------------------------------------------------------------------- #


def test_jobs_ordered_by_dominant_share() -> None:
    """Cluster 10 cpu / 10Gi. a holds 4 cpu (cpu share 0.4), b holds 5Gi (memory share 0.5), c holds
    nothing: c, a, b (the uid fallback alone would give a, b, c)."""
    objects = [
        node("n1", "10", "10Gi"),
        queue("q1"),
        pod_group("a", "q1", 1, "Running"),
        pod_group("b", "q1", 1, "Running"),
        pod_group("c", "q1", 1, "Inqueue"),
        *running("a", 4, "1", "256Mi"),
        *running("b", 1, "1", "5Gi"),
        pod("c-0", "", "c"),
    ]
    ssn, drf = open_with(objects, [{"name": "drf"}])
    order = [j.name for j in sorted(ssn.jobs.values(), key=ssn.job_key)]
    assert order == ["c", "a", "b"]
    assert drf.dominant(ssn, "c1/b") == ("memory", pytest.approx(0.5))
    assert drf.dominant(ssn, "c1/a") == ("cpu", pytest.approx(0.4))
    assert drf.dominant(ssn, "c1/c") == ("", 0.0)


def test_job_order_switch_off_leaves_the_default_order() -> None:
    objects = [
        node("n1", "10", "10Gi"),
        queue("q1"),
        pod_group("a", "q1", 1, "Running"),
        pod_group("b", "q1", 1, "Inqueue"),
        *running("a", 4, "1", "1Gi"),
        pod("b-0", "", "b"),
    ]
    ssn, _ = open_with(objects, [{"name": "drf", "enableJobOrder": False}])
    # Same creation time: the uid decides (a before b) although a holds far more.
    assert [j.name for j in sorted(ssn.jobs.values(), key=ssn.job_key)] == ["a", "b"]


# -- preemptable -------------------------------------------------------------------------------- #


def test_preemptable_keeps_victims_whose_job_stays_at_or_above_the_preemptor() -> None:
    """10 cpu. big holds 6 (0.6), small holds 1 (0.1); the preemptor's job holds none and asks for
    1 (0.1 after). big may give up tasks while it stays at or above 0.1: five of its six (0.5 … 0.1);
    small would drop to 0 and keeps its task."""
    objects = [
        node("n1", "10", "10Gi"),
        queue("q1"),
        pod_group("big", "q1", 1, "Running"),
        pod_group("small", "q1", 1, "Running"),
        pod_group("new", "q1", 1, "Inqueue"),
        *running("big", 6, "1", "1Gi"),
        *running("small", 1, "1", "1Gi"),
        pod("new-0", "", "new"),
    ]
    ssn, _ = open_with(objects, [{"name": "drf"}])
    preemptor = next(iter(ssn.jobs["c1/new"].tasks.values()))
    preemptees = [*ssn.jobs["c1/big"].tasks.values(), *ssn.jobs["c1/small"].tasks.values()]
    victims = ssn.preemptable(preemptor, preemptees)
    assert len(victims) == 5
    assert all(t.name.startswith("big-") for t in victims)


def test_preemptable_stops_when_the_victim_job_would_fall_below() -> None:
    """10 cpu. big holds 6; the preemptor's job holds 3 and asks for 1 (0.4 after): big's tasks are
    victims while big stays at 0.4 or more: 0.5, 0.4 — two of them."""
    objects = [
        node("n1", "10", "10Gi"),
        queue("q1"),
        pod_group("big", "q1", 1, "Running"),
        pod_group("mid", "q1", 1, "Running"),
        *running("big", 6, "1", "1Gi"),
        *running("mid", 3, "1", "1Gi"),
        pod("mid-new", "", "mid"),
    ]
    ssn, _ = open_with(objects, [{"name": "drf"}])
    preemptor = ssn.jobs["c1/mid"].tasks[
        next(u for u, t in ssn.jobs["c1/mid"].tasks.items() if t.name == "mid-new")
    ]
    victims = ssn.preemptable(preemptor, list(ssn.jobs["c1/big"].tasks.values()))
    assert len(victims) == 2


def test_preemptable_switch_off_abstains() -> None:
    objects = [
        node("n1", "10", "10Gi"),
        queue("q1"),
        pod_group("big", "q1", 1, "Running"),
        pod_group("new", "q1", 1, "Inqueue"),
        *running("big", 2, "1", "1Gi"),
        pod("new-0", "", "new"),
    ]
    ssn, _ = open_with(objects, [{"name": "drf", "enablePreemptable": False}])
    preemptor = next(iter(ssn.jobs["c1/new"].tasks.values()))
    # No plugin with an opinion: no victims.
    assert ssn.preemptable(preemptor, list(ssn.jobs["c1/big"].tasks.values())) == []


# -- events ------------------------------------------------------------------------------------- #


def test_statement_events_keep_shares_current_and_discard_restores_them() -> None:
    objects = [
        node("n1", "4", "4Gi"),
        queue("q1"),
        pod_group("a", "q1", 1, "Running"),
        pod_group("b", "q1", 1, "Inqueue"),
        *running("a", 1, "1", "1Gi"),
        pod("b-0", "", "b", "2", "1Gi"),
        pod("b-1", "", "b", "1", "1Gi"),
    ]
    ssn, drf = open_with(objects, [{"name": "drf"}])
    a, b = ssn.jobs["c1/a"], ssn.jobs["c1/b"]
    assert [j.name for j in sorted(ssn.jobs.values(), key=ssn.job_key)] == ["b", "a"]
    stmt = Statement(ssn)
    slot = ssn.table.slot_of["n1"]
    for t in list(b.tasks.values()):
        stmt.allocate(t, slot)
    assert drf.share_of(b.uid) == pytest.approx(0.75)
    assert [j.name for j in sorted(ssn.jobs.values(), key=ssn.job_key)] == ["a", "b"]
    victim = next(iter(a.tasks.values()))
    stmt.evict(victim, "test")
    assert drf.share_of(a.uid) == 0.0
    stmt.discard()
    assert drf.share_of(b.uid) == 0.0
    assert drf.share_of(a.uid) == pytest.approx(0.25)
    assert victim.status == TaskStatus.RUNNING
    assert np.allclose(drf.allocated[b.uid], 0.0)


# -- end to end --------------------------------------------------------------------------------- #


def _bound_per_job(sched: BatchScheduler) -> dict[str, int]:
    out: dict[str, int] = {}
    for p in sched.informers.store.list("Pod"):
        if p["spec"].get("nodeName"):
            group = p["metadata"]["annotations"]["scheduling.k8s.io/group-name"]
            out[group] = out.get(group, 0) + 1
    return out


def test_allocate_in_drf_order_splits_the_cluster_evenly() -> None:
    """Two equal jobs of four 1-cpu tasks on 4 cpus: drf hands the next task to the job with the
    smaller share, so each gets two (without drf the first job would take three)."""
    objects = [
        node("n1", "4", "8Gi"),
        queue("q1"),
        pod_group("a", "q1", 1, "Inqueue"),
        pod_group("b", "q1", 1, "Inqueue"),
        *(pod(f"a-{i}", "", "a") for i in range(4)),
        *(pod(f"b-{i}", "", "b") for i in range(4)),
    ]
    with_drf = run(objects, "allocate", [{"name": "gang"}, {"name": "drf"}])
    assert _bound_per_job(with_drf) == {"a": 2, "b": 2}
    without = run(objects, "allocate", [{"name": "gang"}])
    assert _bound_per_job(without) != {"a": 2, "b": 2}


def test_drf_preemption_evens_out_equal_priority_jobs() -> None:
    """With the default tiers and equal priorities, priority has no victims, so the second tier
    (drf) decides: a holds all 4 cpus, b (gang of 2) takes two of them, then the shares are equal."""
    objects = [
        node("n1", "4", "8Gi"),
        queue("q1"),
        pod_group("a", "q1", 1, "Running"),
        pod_group("b", "q1", 2, "Inqueue"),
        *running("a", 4, "1", "1Gi"),
        pod("b-0", "", "b"),
        pod("b-1", "", "b"),
    ]
    tiers = [
        {"name": "priority"},
        {"name": "gang"},
        {"name": "conformance"},
    ]
    conf = {
        "actions": "preempt",
        "tiers": [{"plugins": tiers}, {"plugins": [{"name": "drf"}, {"name": "proportion"}]}],
    }
    sched = run_conf(objects, conf)
    assert len(sched.evicted) == 2
    assert all(k.startswith("c1/a-") for k in sched.evicted)


def test_drf_refuses_preemption_that_would_invert_shares() -> None:
    """b's gang of three would leave a (0.25) below b (0.75): drf gives no third victim, the gang
    cannot be pipelined and nothing is evicted. (gang and drf share a tier, so their victim lists
    intersect; in separate tiers gang's answer alone would decide.)"""
    objects = [
        node("n1", "4", "8Gi"),
        queue("q1"),
        pod_group("a", "q1", 1, "Running"),
        pod_group("b", "q1", 3, "Inqueue"),
        *running("a", 4, "1", "1Gi"),
        *(pod(f"b-{i}", "", "b") for i in range(3)),
    ]
    conf = {"actions": "preempt", "tiers": [{"plugins": [{"name": "gang"}, {"name": "drf"}]}]}
    assert run_conf(objects, conf).evicted == []
    # Two tasks would have been fine: a and b end at 0.5 each.
    objects[3] = pod_group("b", "q1", 2, "Inqueue")
    assert len(run_conf(objects, conf).evicted) == 2
