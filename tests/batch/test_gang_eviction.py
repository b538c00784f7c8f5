"""Gang-aware eviction (``gangpreempt``, ``gangreclaim``): Volcano v1.15's unit tests of the two
actions, of their bundles (``actions/utils/bundle_test.go``), their dry run
(``actions/utils/simulate_test.go``, ``util_test.go``) and of the session's unified victim dispatch
(``framework/session_plugins_test.go``), names verbatim; then what a user relies on end to end.

Volcano's sub-job cases (``CreateJobBundles_SubJobGroupSlackCapsSafe`` and the other ``SubJob``
ones) have no counterpart: kubesched has no sub-jobs, every job is its own single sub-job.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests.batch.test_session import bare_session

from kubesched.batch.actions.bundle import (
    Bundle,
    BundleType,
    apply_allowed_tasks,
    create_job_bundles,
    select_bundles,
    sort_bundles_for_preempt,
    sort_bundles_for_reclaim,
)
from kubesched.batch.actions.gang_eviction import (
    DEFAULT_MAX_DOMAINS,
    TasksOnNodes,
    build_nomination_plan,
    candidate_domains,
    need_of,
    pending_tasks,
    pick_domains_from_gradients,
)
from kubesched.batch.actions.gangpreempt import GangPreemptAction
from kubesched.batch.actions.gangreclaim import GangReclaimAction
from kubesched.batch.hypernodes import CLUSTER_TOP_HYPER_NODE, HyperNodeInfo
from kubesched.batch.job_info import ABSTAIN, PERMIT, JobInfo, QueueInfo, TaskInfo, TaskStatus
from kubesched.batch.operations import EvictionContext, EvictionKind, Op
from kubesched.batch.session import Session
from kubesched.batch.statement import Statement
from kubesched.batch.testing import (
    node,
    one_tier,
    open_on,
    pod,
    pod_group,
    priority_class,
    queue,
    run_conf,
    scheduler_on,
)

# -- bundles (actions/utils/bundle_test.go) ----------------------------------------------------- #


def _task(uid: str, cpu: float = 1000, priority: int = 0, role: str = "worker", job: str = "") -> TaskInfo:
    return TaskInfo(
        uid=uid,
        name=uid,
        namespace="ns",
        job=job,
        pod=None,  # type: ignore[arg-type]
        status=TaskStatus.RUNNING,
        node_name="",
        priority=priority,
        resreq=np.array([cpu]),
        init_resreq=np.array([cpu]),
        best_effort=False,
        preemptable=True,
        creation_timestamp="",
        role=role,
    )


def _job(
    uid: str = "j",
    min_available: int = 0,
    queue_name: str = "",
    priority: int = 0,
    roles: dict[str, int] | None = None,
) -> JobInfo:
    return JobInfo(
        uid=uid,
        name=uid,
        namespace="ns",
        queue=queue_name,
        priority=priority,
        min_available=min_available,
        pod_group=None,  # type: ignore[arg-type]
        allocated=np.zeros(1),
        total_request=np.zeros(1),
        min_resources=np.zeros(1),
        creation_timestamp="",
        task_min_available=dict(roles or {}),
    )


def _bundle(kind: BundleType, job: JobInfo, uid: str, local: float, global_: float = 0.0) -> Bundle:
    return Bundle(kind, job, [_task(uid, local)], np.array([local]), np.array([global_]))


def _running(job: JobInfo, count: int) -> list[TaskInfo]:
    tasks = [_task(chr(ord("a") + i), priority=i, job=job.uid) for i in range(count)]
    for t in tasks:
        job.add_task(t)
    return tasks


def test_create_job_bundles_safe_and_whole() -> None:
    """TestCreateJobBundles_SafeAndWhole"""
    job = _job(min_available=3, roles={"worker": 3})
    local = _running(job, 5)  # ReadyTaskNum 5: surplus 2
    bundles = create_job_bundles(job, local, 1)
    assert [(b.type, len(b.tasks)) for b in bundles] == [(BundleType.SAFE, 2), (BundleType.WHOLE, 3)]


def test_apply_allowed_tasks_whole_atomic_and_safe_shrink() -> None:
    """TestApplyAllowedTasks_WholeAtomicAndSafeShrink"""
    job = _job()
    t1, t2, t3 = _task("t1"), _task("t2"), _task("t3")
    bundles = [
        Bundle(BundleType.SAFE, job, [t1, t2], np.array([2000.0]), np.zeros(1)),
        Bundle(BundleType.WHOLE, job, [t3], np.array([1000.0]), np.array([3000.0])),
    ]
    valid = apply_allowed_tasks(bundles, {"t1", "t3x"}, 1)
    assert len(valid) == 1
    assert valid[0].type is BundleType.SAFE
    assert [t.uid for t in valid[0].tasks] == ["t1"]
    assert valid[0].local.tolist() == [1000.0]


def test_select_bundles_respects_allow_whole() -> None:
    """TestSelectBundles_RespectsAllowWhole"""
    job = _job()
    safe = _bundle(BundleType.SAFE, job, "t1", 1000)
    whole = _bundle(BundleType.WHOLE, job, "t2", 2000)
    need = np.array([1500.0])
    assert [b.type for b in select_bundles([safe, whole], need, False)] == [BundleType.SAFE]
    assert len(select_bundles([safe, whole], need, True)) == 2


def test_sort_bundles_for_preempt_type_priority_and_roi() -> None:
    """TestSortBundlesForPreempt_TypePriorityAndROI"""
    low, high = _job("low", priority=1), _job("high", priority=10)
    safe = _bundle(BundleType.SAFE, high, "s1", 1000)
    whole_low_roi = _bundle(BundleType.WHOLE, low, "w1", 1000, 4000)
    whole_high_roi = _bundle(BundleType.WHOLE, low, "w2", 1000, 2000)
    bundles = [whole_low_roi, safe, whole_high_roi]
    sort_bundles_for_preempt(bundles, np.array([1000.0]), lambda left, right: left.priority < right.priority)
    assert [b.tasks[0].uid for b in bundles] == ["s1", "w2", "w1"]


def test_sort_bundles_for_reclaim_uses_queue_order_then_roi() -> None:
    """TestSortBundlesForReclaim_UsesQueueOrderThenROI"""
    queues: dict[str, QueueInfo] = {name: _queue(name) for name in ("qa", "qb", "qc", "qd")}
    a = _bundle(BundleType.WHOLE, _job("ja", queue_name="qa"), "a", 1000, 4000)
    b = _bundle(BundleType.WHOLE, _job("jb", queue_name="qb"), "b", 1000, 2000)
    bundles = [b, a]
    sort_bundles_for_reclaim(bundles, np.array([1000.0]), lambda left, right: left.name < right.name, queues)
    assert bundles[0].tasks[0].uid == "a"
    # Without a queue order, efficiency decides.
    c = _bundle(BundleType.WHOLE, _job("jc", queue_name="qc"), "c", 1000, 4000)
    d = _bundle(BundleType.WHOLE, _job("jd", queue_name="qd"), "d", 1000, 2000)
    bundles = [c, d]
    sort_bundles_for_reclaim(bundles, np.array([1000.0]), None, queues)
    assert bundles[0].tasks[0].uid == "d"


def test_sort_bundles_for_preempt_uses_victim_job_order() -> None:
    """TestSortBundlesForPreempt_UsesVictimJobOrder"""
    a = _bundle(BundleType.WHOLE, _job("ja"), "a", 1000, 2000)
    b = _bundle(BundleType.WHOLE, _job("jb"), "b", 1000, 2000)
    bundles = [a, b]
    sort_bundles_for_preempt(bundles, np.array([1000.0]), lambda left, right: left.uid > right.uid)
    assert bundles[0].tasks[0].uid == "b"


def test_sort_bundles_for_reclaim_deterministic_tie_breaker() -> None:
    """TestSortBundlesForReclaim_DeterministicTieBreaker"""
    queues = {"q": _queue("q")}
    a = _bundle(BundleType.WHOLE, _job("ja", queue_name="q"), "a", 1000, 2000)
    b = _bundle(BundleType.WHOLE, _job("jb", queue_name="q"), "b", 1000, 2000)
    bundles = [b, a]
    sort_bundles_for_reclaim(bundles, np.array([1000.0]), None, queues)
    assert [x.tasks[0].uid for x in bundles] == ["a", "b"]


def test_create_job_bundles_job_not_ready_short_circuits_all_safe() -> None:
    """TestCreateJobBundles_JobNotReadyShortCircuitsAllSafe (without its sub-job)"""
    job = _job(min_available=10)
    local = _running(job, 2)
    bundles = create_job_bundles(job, local, 1)
    assert [(b.type, len(b.tasks)) for b in bundles] == [(BundleType.SAFE, 2)]


def test_create_job_bundles_no_task_min_available_treats_all_roles_as_unconstrained() -> None:
    """TestCreateJobBundles_NoTaskMinAvailableTreatsAllRolesAsUnconstrained"""
    job = _job(min_available=2)
    local = _running(job, 4)
    bundles = create_job_bundles(job, local, 1)
    assert [(b.type, len(b.tasks)) for b in bundles] == [(BundleType.SAFE, 2), (BundleType.WHOLE, 2)]
    assert [t.uid for t in bundles[0].tasks] == ["a", "b"]  # the lowest-priority ones are safe


def test_a_role_at_its_minimum_keeps_its_tasks_out_of_the_safe_bundle() -> None:
    """minTaskMember counts per role: a job with room to spare overall but a role at its minimum
    gives up only the other role's tasks safely."""
    job = _job(min_available=3, roles={"ps": 1, "worker": 2})
    ps = _task("ps-0", priority=0, role="ps", job="j")
    workers = [_task(f"w-{i}", priority=1, role="worker", job="j") for i in range(4)]
    for t in (ps, *workers):
        job.add_task(t)
    bundles = create_job_bundles(job, [ps, *workers], 1)
    safe = next(b for b in bundles if b.type is BundleType.SAFE)
    whole = next(b for b in bundles if b.type is BundleType.WHOLE)
    assert [t.uid for t in safe.tasks] == ["w-0", "w-1"]
    assert [t.uid for t in whole.tasks] == ["ps-0", "w-2", "w-3"]


def _queue(name: str) -> QueueInfo:
    return QueueInfo(
        uid=name,
        name=name,
        weight=1,
        queue=None,  # type: ignore[arg-type]
        capability=None,
        guarantee=np.zeros(1),
        deserved=np.zeros(1),
        reclaimable=True,
        priority=0,
    )


# -- the session's unified victim dispatch (framework/session_plugins_test.go) ------------------ #


def _ctx(
    kind: EvictionKind = EvictionKind.GANG_PREEMPT, job: JobInfo | None = None, hn: str = ""
) -> EvictionContext:
    return EvictionContext(kind, job if job is not None else _job(), hn)


def test_unified_evictable_tier_walk_and_intersection() -> None:
    """TestUnifiedEvictable_TierWalkAndIntersection"""
    ssn = bare_session()
    a, b, c = _task("a"), _task("b"), _task("c")
    ssn.add_unified_evictable_fn("priority", lambda ctx, cands: ([a, b], PERMIT))
    ssn.add_unified_evictable_fn("gang", lambda ctx, cands: ([b, c], PERMIT))
    assert [t.uid for t in ssn.unified_evictable(_ctx(), [a, b, c])] == ["b"]


def test_unified_evictable_abstain_skipped() -> None:
    """TestUnifiedEvictable_AbstainSkipped"""
    ssn = bare_session()
    a = _task("a")
    ssn.add_unified_evictable_fn("priority", lambda ctx, cands: ([], ABSTAIN))
    ssn.add_unified_evictable_fn("gang", lambda ctx, cands: ([a], PERMIT))
    assert [t.uid for t in ssn.unified_evictable(_ctx(), [a])] == ["a"]


def test_unified_evictable_empty_candidates_blocks_tier() -> None:
    """TestUnifiedEvictable_EmptyCandidatesBlocksTier: an empty answer ends its tier undecided,
    the next tier decides."""
    ssn = bare_session()
    a = _task("a")
    ssn.add_unified_evictable_fn("priority", lambda ctx, cands: ([], PERMIT))
    ssn.add_unified_evictable_fn("gang", lambda ctx, cands: ([a], PERMIT))
    ssn.add_unified_evictable_fn("drf", lambda ctx, cands: ([a], PERMIT))
    assert [t.uid for t in ssn.unified_evictable(_ctx(EvictionKind.GANG_RECLAIM), [a])] == ["a"]
    verdict = ssn.verdict_for(a)
    assert verdict is not None and verdict.tier == 2 and verdict.undecided == ((1, "priority"),)


def test_unified_evictable_no_plugins_returns_nil() -> None:
    """TestUnifiedEvictable_NoPluginsReturnsNil"""
    assert bare_session().unified_evictable(_ctx(), [_task("a")]) == []


def test_unified_evictable_context_passed_through() -> None:
    """TestUnifiedEvictable_ContextPassedThrough"""
    ssn = bare_session()
    seen: list[EvictionContext] = []

    def spy(ctx: EvictionContext, cands: list[TaskInfo]) -> tuple[list[TaskInfo], int]:
        seen.append(ctx)
        return cands, PERMIT

    ssn.add_unified_evictable_fn("priority", spy)
    job = _job("job1", priority=42)
    ssn.unified_evictable(_ctx(EvictionKind.GANG_RECLAIM, job, "hn1"), [_task("a")])
    assert [(c.kind, c.job.uid, c.hyper_node) for c in seen] == [(EvictionKind.GANG_RECLAIM, "job1", "hn1")]


# -- domains and arguments (gangpreempt_test.go, gangreclaim_test.go, util_test.go) ------------- #


def test_pick_domains_from_gradients_max_domains_and_dedup() -> None:
    """TestPickDomainsFromGradients_MaxDomainsAndDedup"""
    hn = {n: HyperNodeInfo(n, 1) for n in ("d1", "d2", "d3")}
    gradients = [[hn["d1"], hn["d2"]], [hn["d2"], hn["d3"]]]
    assert pick_domains_from_gradients(gradients, 2, "") == ["d1", "d2"]
    assert pick_domains_from_gradients(gradients, 8, "") == ["d1", "d2", "d3"]


def test_pick_domains_from_gradients_fallback() -> None:
    """TestPickDomainsFromGradients_Fallback"""
    assert pick_domains_from_gradients([], 8, CLUSTER_TOP_HYPER_NODE) == [CLUSTER_TOP_HYPER_NODE]


@pytest.mark.parametrize("action", [GangPreemptAction, GangReclaimAction])
def test_parse_arguments(action: type[GangPreemptAction | GangReclaimAction]) -> None:
    """TestParseArguments"""
    ssn = _conf_session(action.name, {"maxDomains": 3, "allowWholeBundle": False})
    act = action()
    act.parse_arguments(ssn)
    assert act.max_domains == 3
    assert act.allow_whole_bundle is False


@pytest.mark.parametrize("value", [0, -1], ids=["zero", "negative"])
@pytest.mark.parametrize("action", [GangPreemptAction, GangReclaimAction])
def test_parse_arguments_invalid_max_domains_falls_back_to_default(
    action: type[GangPreemptAction | GangReclaimAction], value: int
) -> None:
    """TestParseArguments_InvalidMaxDomainsFallsBackToDefault"""
    act = action()
    act.parse_arguments(_conf_session(action.name, {"maxDomains": value}))
    assert act.max_domains == DEFAULT_MAX_DOMAINS


def _conf_session(action: str, arguments: dict[str, Any]) -> Session:
    sched = scheduler_on(
        [node("n1", "1", "1G")],
        {**one_tier(action, []), "configurations": [{"name": action, "arguments": arguments}]},
    )
    from kubesched.batch.framework import open_session

    snap, _ = sched.build_snapshot()
    return open_session(snap, sched.conf)


def _hard_group(name: str, tier: int) -> dict[str, Any]:
    pg = pod_group(name, "q1", 1, "Inqueue")
    pg["spec"]["networkTopology"] = {"mode": "hard", "highestTierAllowed": tier}
    return pg


def test_get_candidate_domains_empty_gradient_hard_topology_no_fallback() -> None:
    """TestGetCandidateDomains_EmptyGradient_HardTopologyNoFallback: no HyperNode is big enough for
    a hard-mode job, so there is nowhere to evict."""
    pg = _hard_group("pg1", 1)
    pg["spec"]["minResources"] = {"cpu": "100"}
    objects = [
        node("n1", "2", "2G"),
        _hyper_node("leaf", 1, ["n1"]),
        queue("q1"),
        pg,
        pod("p1", "", "pg1"),
    ]
    ssn = open_on(objects, [{"name": "network-topology-aware"}])
    job = next(iter(ssn.jobs.values()))
    assert candidate_domains(ssn, job, 8) == []


def test_get_candidate_domains_empty_gradient_non_hard_topology_fallback_to_root() -> None:
    """TestGetCandidateDomains_EmptyGradient_NonHardTopologyFallbackToRoot"""
    objects = [node("n1", "2", "2G"), queue("q1"), pod_group("pg1", "q1", 1, "Inqueue"), pod("p1", "", "pg1")]
    ssn = open_on(objects, [])
    job = next(iter(ssn.jobs.values()))
    assert candidate_domains(ssn, job, 8) == [CLUSTER_TOP_HYPER_NODE]


def _hyper_node(name: str, tier: int, members: list[str], kind: str = "Node") -> dict[str, Any]:
    return {
        "apiVersion": "topology.volcano.sh/v1alpha1",
        "kind": "HyperNode",
        "metadata": {"name": name},
        "spec": {
            "tier": tier,
            "members": [{"type": kind, "selector": {"exactMatch": {"name": m}}} for m in members],
        },
    }


# -- victim selection in a domain (gangpreempt_test.go, gangreclaim_test.go) -------------------- #

PRIORITIES = [priority_class("high", 100), priority_class("low", 10)]
GANG = [{"name": "gang"}]


def _victims(ssn: Session, action: GangPreemptAction | GangReclaimAction, preemptor: str) -> list[str]:
    job = ssn.jobs[preemptor]
    pending = pending_tasks(ssn, job)
    on_nodes = TasksOnNodes(ssn, action.statuses)
    bundles = action.select_domain_bundles(
        ssn, job, need_of(ssn, pending), CLUSTER_TOP_HYPER_NODE, ssn.node_mask, on_nodes
    )
    return [t.name for b in bundles for t in b.tasks]


def _one_victim_cluster(victim_group: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        *PRIORITIES,
        node("n1", "1", "1G"),
        queue("q1"),
        pod_group("preemptor", "q1", 1, "Inqueue", "high", ns="ns"),
        victim_group,
        pod("preemptor", "", "preemptor", ns="ns"),
        pod("victim", "n1", "victim", ns="ns"),
    ]


def test_select_domain_victims_respect_allow_whole_bundle() -> None:
    """TestSelectDomainVictims_RespectAllowWholeBundle: one running task at minMember 1 is a whole
    bundle only."""
    ssn = open_on(_one_victim_cluster(pod_group("victim", "q1", 1, "Running", "low", ns="ns")), GANG)
    action = GangPreemptAction()
    action.allow_whole_bundle = False
    assert _victims(ssn, action, "ns/preemptor") == []
    action.allow_whole_bundle = True
    assert _victims(ssn, action, "ns/preemptor") == ["victim"]


def test_select_domain_victims_respect_victim_job_preemptable() -> None:
    """TestSelectDomainVictims_RespectVictimJobPreemptable"""
    group = pod_group("victim", "q1", 1, "Running", "low", ns="ns")
    group["metadata"]["annotations"] = {"volcano.sh/preemptable": "false"}
    ssn = open_on(_one_victim_cluster(group), GANG)
    assert _victims(ssn, GangPreemptAction(), "ns/preemptor") == []


def test_select_domain_victims_allow_victim_job_when_preemptable_unset() -> None:
    """TestSelectDomainVictims_AllowVictimJobWhenPreemptableUnset"""
    ssn = open_on(_one_victim_cluster(pod_group("victim", "q1", 1, "Running", "low", ns="ns")), GANG)
    assert _victims(ssn, GangPreemptAction(), "ns/preemptor") == ["victim"]


def test_select_domain_victims_reclaimable_cross_queue_only() -> None:
    """TestSelectDomainVictims_ReclaimableCrossQueueOnly"""
    objects = [
        node("n1", "2", "2G"),
        queue("q1"),
        queue("q2"),
        queue("q3", reclaimable=False),
        pod_group("reclaimer", "q1", 1, "Inqueue", ns="ns"),
        pod_group("victim", "q2", 1, "Running", ns="ns"),
        pod_group("other", "q3", 1, "Running", ns="ns"),
        pod("reclaimer", "", "reclaimer", ns="ns"),
        pod("victim", "n1", "victim", ns="ns"),
        pod("other", "n1", "other", ns="ns"),
    ]
    ssn = open_on(objects, GANG)
    assert _victims(ssn, GangReclaimAction(), "ns/reclaimer") == ["victim"]


# -- the dry run (actions/utils/simulate_test.go) ----------------------------------------------- #


def _plan(ssn: Session, job: str, victims: list[str]) -> Statement | None:
    by_name = {t.name: t for j in ssn.jobs.values() for t in j.tasks.values()}
    return build_nomination_plan(
        ssn, None, ssn.jobs[job], CLUSTER_TOP_HYPER_NODE, ssn.node_mask, [by_name[v] for v in victims], "test"
    )


def test_build_nomination_plan_in_domain_success() -> None:
    """TestBuildNominationPlanInDomain_Success"""
    objects = [
        node("n1", "2", "2G"),
        queue("q1"),
        pod_group("job2", "q1", 1, "Inqueue"),
        pod("t1", "", "job2"),
    ]
    ssn = open_on(objects, GANG)
    plan = _plan(ssn, "c1/job2", [])
    assert plan is not None
    assert [o.op for o in plan.operations] == [Op.PIPELINE]


def test_build_nomination_plan_in_domain_with_victim_includes_evict_and_pipeline() -> None:
    """TestBuildNominationPlanInDomain_WithVictimIncludesEvictAndPipeline"""
    objects = [
        node("n1", "1", "1G"),
        queue("q1"),
        pod_group("job4", "q1", 1, "Inqueue"),
        pod_group("victim-job", "q1", 1, "Running"),
        pod("t1", "", "job4"),
        pod("v1", "n1", "victim-job"),
    ]
    ssn = open_on(objects, GANG)
    plan = _plan(ssn, "c1/job4", ["v1"])
    assert plan is not None
    assert [o.op for o in plan.operations] == [Op.EVICT, Op.PIPELINE]
    assert all(o.task.eviction_occurred for o in plan.operations if o.op is Op.PIPELINE)


def test_build_nomination_plan_in_domain_no_feasible_node() -> None:
    """TestBuildNominationPlanInDomain_NoFeasibleNode"""
    objects = [
        node("n1", "1", "1G"),
        queue("q1"),
        pod_group("job3", "q1", 1, "Inqueue"),
        pod_group("other", "q1", 1, "Running"),
        pod("t1", "", "job3"),
        pod("o1", "n1", "other"),
    ]
    ssn = open_on(objects, GANG)
    assert _plan(ssn, "c1/job3", []) is None


def test_build_nomination_plan_in_domain_pipeline_failure_rolls_back_eviction() -> None:
    """TestBuildNominationPlanInDomain_PipelineFailureRollsBackEviction: the victim frees too little
    for the job, so the dry run fails and leaves the victim running and the job pending."""
    objects = [
        node("n1", "2", "2G"),
        queue("q1"),
        pod_group("job", "q1", 1, "Inqueue"),
        pod_group("victim-job", "q1", 1, "Running"),
        pod("t1", "", "job", cpu="2"),
        pod("v1", "n1", "victim-job"),
        pod("v2", "n1", "victim-job"),
    ]
    ssn = open_on(objects, GANG)
    assert _plan(ssn, "c1/job", ["v1"]) is None
    statuses = {t.name: t.status for j in ssn.jobs.values() for t in j.tasks.values()}
    assert statuses == {"t1": TaskStatus.PENDING, "v1": TaskStatus.RUNNING, "v2": TaskStatus.RUNNING}
    assert not ssn.releasing.any() and not ssn.pipelined.any()


def test_build_nomination_plan_in_domain_prefers_idle_node_over_future_idle() -> None:
    """TestBuildNominationPlanInDomain_PrefersIdleNodeOverFutureIdle"""
    objects = [
        node("n-future", "2", "2G"),
        node("n-idle", "2", "2G"),
        queue("q1"),
        pod_group("job5", "q1", 1, "Inqueue"),
        pod_group("gone", "q1", 1, "Running"),
        pod("t1", "", "job5", cpu="2"),
        pod("g1", "n-future", "gone", cpu="2"),
    ]
    ssn = open_on(objects, GANG)
    gone = next(t for t in ssn.jobs["c1/gone"].tasks.values())
    Statement(ssn).evict(gone, "test")  # n-future's room is releasing
    plan = _plan(ssn, "c1/job5", [])
    assert plan is not None
    assert [o.task.node_name for o in plan.operations] == ["n-idle"]


# -- end to end --------------------------------------------------------------------------------- #

TIERS = [
    {"plugins": [{"name": "priority"}, {"name": "gang"}, {"name": "conformance"}]},
    {"plugins": [{"name": "predicates"}, {"name": "nodeorder"}]},
]


def _conf(
    actions: str, arguments: dict[str, Any] | None = None, tiers: list[Any] | None = None
) -> dict[str, Any]:
    conf: dict[str, Any] = {"actions": actions, "tiers": tiers if tiers is not None else TIERS}
    if arguments is not None:
        conf["configurations"] = [{"name": actions.split(",")[-1].strip(), "arguments": arguments}]
    return conf


def _gangs(
    low_running: int, low_min: int, high_pending: int, nodes: int = 2, cpu: str = "2"
) -> list[dict[str, Any]]:
    """``nodes`` nodes of ``cpu`` cpus, full of a low-priority gang; a high-priority gang waiting."""
    out: list[dict[str, Any]] = [*PRIORITIES, queue("q1")]
    out += [node(f"n{i}", cpu, "8G") for i in range(1, nodes + 1)]
    out += [
        pod_group("low", "q1", low_min, "Running", "low"),
        pod_group("high", "q1", high_pending, "Inqueue", "high"),
    ]
    per_node = low_running // nodes
    out += [pod(f"l{i}", f"n{i // per_node + 1}", "low", priority=10 + i) for i in range(low_running)]
    out += [pod(f"h{i}", "", "high", priority=100) for i in range(high_pending)]
    return out


def test_a_victim_gang_above_min_member_gives_up_its_surplus_only() -> None:
    """The low gang runs 4 with minMember 2: its 2 lowest-priority members make room for the high
    gang (a safe bundle), and it keeps its other 2."""
    sched = run_conf(_gangs(low_running=4, low_min=2, high_pending=2), _conf("gangpreempt"))
    assert sorted(sched.evicted) == ["c1/l0", "c1/l1"]


def test_a_victim_gang_at_min_member_is_taken_whole_or_not_at_all() -> None:
    """At minMember, any eviction breaks the gang: it is taken whole (both members), unless
    ``allowWholeBundle`` is off, when the preemptor waits."""
    objects = _gangs(low_running=2, low_min=2, high_pending=2, nodes=1)
    assert sorted(run_conf(objects, _conf("gangpreempt")).evicted) == ["c1/l0", "c1/l1"]
    assert run_conf(objects, _conf("gangpreempt", {"allowWholeBundle": False})).evicted == []


def test_a_preemptor_gang_that_cannot_be_placed_whole_evicts_nobody() -> None:
    """Even every lower-priority task gone leaves room for 2 of the 3 members the high gang needs."""
    objects = _gangs(low_running=2, low_min=1, high_pending=3, nodes=1)
    assert run_conf(objects, _conf("gangpreempt")).evicted == []


def test_no_gang_preemption_across_queues_or_of_equal_priority() -> None:
    objects = _gangs(low_running=2, low_min=1, high_pending=1, nodes=1)
    other_queue = [o for o in objects if o["kind"] != "PodGroup"] + [
        queue("q2"),
        pod_group("low", "q1", 1, "Running", "low"),
        pod_group("high", "q2", 1, "Inqueue", "high"),
    ]
    assert run_conf(other_queue, _conf("gangpreempt")).evicted == []
    same_priority = [o for o in objects if o["kind"] != "PodGroup"] + [
        pod_group("low", "q1", 1, "Running", "high"),
        pod_group("high", "q1", 1, "Inqueue", "high"),
    ]
    assert run_conf(same_priority, _conf("gangpreempt")).evicted == []


def test_evicted_room_is_nominated_and_taken_by_the_preemptor_next_session() -> None:
    objects = _gangs(low_running=4, low_min=2, high_pending=2)
    sched = scheduler_on(objects, _conf("allocate, gangpreempt"))
    sched.run_session()
    assert sorted(sched.evicted) == ["c1/l0", "c1/l1"]
    store = sched.ports.binder.store  # type: ignore[attr-defined]
    nominated = {p: store.get("Pod", "c1", p)["status"].get("nominatedNodeName") for p in ("h0", "h1")}
    assert nominated == {"h0": "n1", "h1": "n1"}
    sched.informers.pump()
    sched.run_session()
    assert {p: store.get("Pod", "c1", p)["spec"].get("nodeName") for p in ("h0", "h1")} == nominated


def _fabric() -> list[dict[str, Any]]:
    """Two leaves of two 1-cpu nodes under a spine; each node runs one low-priority job."""
    out: list[dict[str, Any]] = [*PRIORITIES, queue("q1")]
    for leaf, names in (("leaf-a", ["a1", "a2"]), ("leaf-b", ["b1", "b2"])):
        out.append(_hyper_node(leaf, 1, names))
        for n in names:
            out += [
                node(n, "1", "8G"),
                pod_group(f"low-{n}", "q1", 1, "Running", "low"),
                pod(f"l-{n}", n, f"low-{n}"),
            ]
    out.append(_hyper_node("spine", 2, ["leaf-a", "leaf-b"], "HyperNode"))
    out += [_hard_group("high", 1), pod("h0", "", "high"), pod("h1", "", "high")]
    out[-3]["spec"].update({"minMember": 2, "priorityClassName": "high"})
    return out


def test_a_hard_topology_gang_evicts_within_one_domain() -> None:
    """A hard-mode gang of 2 that may not span leaves: its victims are both in one leaf, and it is
    nominated to that leaf's two nodes."""
    tiers = [TIERS[0], {"plugins": [*TIERS[1]["plugins"], {"name": "network-topology-aware"}]}]
    sched = scheduler_on(_fabric(), _conf("gangpreempt", tiers=tiers))
    sched.run_session()
    leaves = {name[2] for name in sched.evicted}  # "c1/l-a1" → "a"
    assert len(sched.evicted) == 2 and len(leaves) == 1
    store = sched.ports.binder.store  # type: ignore[attr-defined]
    nominated = sorted(store.get("Pod", "c1", p)["status"].get("nominatedNodeName") for p in ("h0", "h1"))
    assert nominated == sorted(name.split("-")[1] for name in sched.evicted)


def _reclaim_cluster() -> list[dict[str, Any]]:
    """q2 holds all 4 cpus with a gang of 4 (minMember 2); q1's gang of 2 waits. Each deserves 2."""
    out: list[dict[str, Any]] = [
        node("n1", "2", "8G"),
        node("n2", "2", "8G"),
        queue("q1", deserved={"cpu": "2", "memory": "4G"}),
        queue("q2", deserved={"cpu": "2", "memory": "4G"}),
        pod_group("borrower", "q2", 2, "Running"),
        pod_group("owner", "q1", 2, "Inqueue"),
    ]
    out += [pod(f"b{i}", f"n{i // 2 + 1}", "borrower") for i in range(4)]
    out += [pod(f"o{i}", "", "owner") for i in range(2)]
    return out


# capacity shares the first tier with priority, gang and conformance, as in Volcano's own conf for
# these actions: the first tier that decides wins, so a filter in a later tier is never heard.
RECLAIM_TIERS = [
    {"plugins": [{"name": "priority"}, {"name": "gang"}, {"name": "conformance"}, {"name": "capacity"}]},
    {"plugins": [{"name": "predicates"}, {"name": "nodeorder"}]},
]


def test_gang_reclaim_takes_back_what_the_other_queue_holds_beyond_its_deserved() -> None:
    sched = run_conf(_reclaim_cluster(), _conf("gangreclaim", tiers=RECLAIM_TIERS))
    assert sorted(sched.evicted) == ["c1/b0", "c1/b1"]


def test_gang_reclaim_leaves_a_queue_within_its_deserved_alone() -> None:
    objects = _reclaim_cluster()
    objects[3]["spec"]["deserved"] = {"cpu": "4", "memory": "8G"}
    assert run_conf(objects, _conf("gangreclaim", tiers=RECLAIM_TIERS)).evicted == []


def test_a_later_tier_filter_is_not_heard() -> None:
    """The same cluster with capacity in the second tier: the first tier decides alone and q2
    loses its surplus although it is within its deserved."""
    objects = _reclaim_cluster()
    objects[3]["spec"]["deserved"] = {"cpu": "4", "memory": "8G"}
    tiers = [
        {"plugins": [{"name": "priority"}, {"name": "gang"}, {"name": "conformance"}]},
        {"plugins": [{"name": "capacity"}, {"name": "predicates"}, {"name": "nodeorder"}]},
    ]
    assert len(run_conf(objects, _conf("gangreclaim", tiers=tiers)).evicted) == 2


@pytest.mark.parametrize(
    ("kind", "guarantee", "deserved", "victims"),
    [
        (EvictionKind.GANG_RECLAIM, None, "2", 2),
        (EvictionKind.GANG_RECLAIM, "3", "2", 1),
        (EvictionKind.GANG_RECLAIM, None, "4", 0),
        (EvictionKind.GANG_PREEMPT, "3", "4", 4),
    ],
    ids=["down to deserved", "never below guarantee", "within deserved", "preempt: all"],
)
def test_capacity_unified_victims(
    kind: EvictionKind, guarantee: str | None, deserved: str, victims: int
) -> None:
    """capacity's unified victim filter over q2's four tasks, in order: each victim counts off
    before the next is judged."""
    objects = _reclaim_cluster()
    objects[3]["spec"]["deserved"] = {"cpu": deserved, "memory": f"{2 * int(deserved)}G"}
    if guarantee is not None:
        objects[3]["spec"]["guarantee"] = {"resource": {"cpu": guarantee}}
    ssn = open_on(objects, [{"name": "capacity"}])
    candidates = sorted(ssn.jobs["c1/borrower"].tasks.values(), key=lambda t: t.name)
    chosen = ssn.unified_evictable(
        EvictionContext(kind, ssn.jobs["c1/owner"], CLUSTER_TOP_HYPER_NODE), candidates
    )
    assert [t.name for t in chosen] == [f"b{i}" for i in range(victims)]


def test_a_gang_broken_by_a_whole_bundle_is_told_on_its_podgroup() -> None:
    """A low gang of 4 (minMember 4) spans both leaves; the hard-mode gang needs one leaf whole, so
    the low gang's two members there go as a whole bundle and its two others keep running below
    minMember, which its PodGroup says."""
    objects: list[dict[str, Any]] = [*PRIORITIES, queue("q1"), pod_group("low", "q1", 4, "Running", "low")]
    for leaf, names in (("leaf-a", ["a1", "a2"]), ("leaf-b", ["b1", "b2"])):
        objects.append(_hyper_node(leaf, 1, names))
        objects += [node(n, "1", "8G") for n in names]
        objects += [pod(f"l-{n}", n, "low") for n in names]
    objects.append(_hyper_node("spine", 2, ["leaf-a", "leaf-b"], "HyperNode"))
    high = _hard_group("high", 1)
    high["spec"].update({"minMember": 2, "priorityClassName": "high"})
    objects += [high, pod("h0", "", "high"), pod("h1", "", "high")]
    tiers = [TIERS[0], {"plugins": [*TIERS[1]["plugins"], {"name": "network-topology-aware"}]}]
    sched = scheduler_on(objects, _conf("gangpreempt", tiers=tiers))
    sched.run_session()
    assert len(sched.evicted) == 2 and len({e[4] for e in sched.evicted}) == 1  # "c1/l-a1" → "a"
    store = sched.ports.binder.store  # type: ignore[attr-defined]
    conds = store.get("PodGroup", "c1", "low")["status"].get("conditions") or []
    message = next(c["message"] for c in conds if c["type"] == "Unschedulable")
    assert "2 of minMember 4 members bound after gangpreempt evicted" in message
    assert "gangpreempt took the gang's members in one topology domain as a whole bundle" in message


# -- invariants --------------------------------------------------------------------------------- #


@st.composite
def crowded_clusters(draw: st.DrawFn) -> dict[str, Any]:
    """Nodes full of low-priority gangs (one pod per cpu), and one high-priority gang waiting."""
    nodes = draw(st.integers(1, 4))
    gangs: list[tuple[int, int, int]] = []  # (size, minMember, priority)
    free = nodes * 2
    while free > 0:
        size = draw(st.integers(1, free))
        gangs.append((size, draw(st.integers(1, size)), draw(st.integers(0, 2))))
        free -= size
    preemptor = draw(st.integers(1, nodes * 2))
    return {
        "nodes": nodes,
        "gangs": gangs,
        "preemptor": (preemptor, draw(st.integers(1, preemptor))),
        "whole": draw(st.booleans()),
    }


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(crowded_clusters())
def test_gang_preempt_keeps_gangs_whole_on_both_sides(c: dict[str, Any]) -> None:
    """Whatever the cluster: the preemptor gang has all its pending pods pipelined (each nominated
    to a node) or evicts nobody; each victim gang keeps at least minMember pods or loses all of
    them (the domain is the whole cluster); victims are of lower priority; whole bundles only when
    allowed."""
    objects: list[dict[str, Any]] = [
        *[priority_class(f"p{p}", p * 10) for p in range(4)],
        queue("q1"),
        *[node(f"n{i}", "2", "8G") for i in range(c["nodes"])],
    ]
    slots = [f"n{i}" for i in range(c["nodes"]) for _ in range(2)]
    for g, (size, min_member, prio) in enumerate(c["gangs"]):
        objects.append(pod_group(f"g{g}", "q1", min_member, "Running", f"p{prio}"))
        objects += [pod(f"g{g}-{i}", slots.pop(), f"g{g}", priority=prio * 10 + i) for i in range(size)]
    size, min_member = c["preemptor"]
    objects.append(pod_group("hi", "q1", min_member, "Inqueue", "p3"))
    objects += [pod(f"hi-{i}", "", "hi") for i in range(size)]
    sched = scheduler_on(objects, _conf("gangpreempt", {"allowWholeBundle": c["whole"]}))
    sched.run_session()
    evicted = {e.split("/")[1] for e in sched.evicted}
    store = sched.ports.binder.store  # type: ignore[attr-defined]
    nominated = [store.get("Pod", "c1", f"hi-{i}")["status"].get("nominatedNodeName") for i in range(size)]
    if evicted:
        assert all(nominated)
    for g, (gsize, gmin, prio) in enumerate(c["gangs"]):
        lost = sum(1 for i in range(gsize) if f"g{g}-{i}" in evicted)
        if lost:
            assert prio < 3
            kept = gsize - lost
            assert kept >= gmin or (kept == 0 and c["whole"])
