"""The preempt action, end to end through the batch scheduler: both tables of Volcano v1.15.1's
``actions/preempt/preempt_test.go`` (same pods, nodes, queues and expected victims, case names
verbatim), plus the gang guarantee.

As in Volcano's test, the tier enables only the switches the test names (every other switch off),
and only the plugins a table registers take part.
"""

from __future__ import annotations

from typing import Any

import pytest

from kubesched.batch.testing import (
    node,
    one_tier,
    plugin,
    pod,
    pod_group,
    priority_class,
    queue,
    registered,
    run,
    run_conf,
)
from kubesched.plugins.testing import node_dict

HOSTNAME = "kubernetes.io/hostname"

# -- Volcano's tables (v1.15.1 actions/preempt/preempt_test.go) -------------------------------- #

PRIORITIES = [priority_class("high-priority", 100000), priority_class("low-priority", 10)]
ALL = {"": 1}


def anti_affine(d: dict[str, Any]) -> dict[str, Any]:
    """Volcano's ``buildPodWithPodAntiAffinity``: labelled ``test: test`` and refusing any node
    that already runs a pod so labelled."""
    d["metadata"].setdefault("labels", {})["test"] = "test"
    d["spec"]["affinity"] = {
        "podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {"labelSelector": {"matchLabels": {"test": "test"}}, "topologyKey": "kubernetes.io/hostname"}
            ]
        }
    }
    return d


# The cases both of Volcano's tables share.
SHARED: list[tuple[str, list[dict[str, Any]], list[str]]] = [
    (
        "do not preempt if there are enough idle resources",
        [
            pod_group("pg1", "q1", 3, "Inqueue", min_task_member={"": 3}),
            pod("preemptee1", "n1", "pg1"),
            pod("preemptee2", "n1", "pg1"),
            pod("preemptor1", "", "pg1"),
            node("n1", "10", "10G"),
            queue("q1"),
        ],
        [],
    ),
    (
        "do not preempt if job is pipelined",
        [
            pod_group("pg1", "q1", 1, "Inqueue", min_task_member={"": 2}),
            pod_group("pg2", "q1", 1, "Inqueue", min_task_member={"": 2}),
            pod("preemptee1", "n1", "pg1"),
            pod("preemptee2", "n1", "pg1"),
            pod("preemptee3", "n1", "pg2"),
            pod("preemptor2", "", "pg2"),
            node("n1", "3", "3G"),
            queue("q1"),
        ],
        [],
    ),
    (
        "preempt one task of different job to fit both jobs on one node",
        [
            pod_group("pg1", "q1", 1, "Inqueue", "low-priority", min_task_member={"": 2}),
            pod_group("pg2", "q1", 1, "Inqueue", "high-priority", min_task_member={"": 2}),
            pod("preemptee1", "n1", "pg1", preemptable="true"),
            pod("preemptee2", "n1", "pg1", preemptable="false"),
            pod("preemptor1", "", "pg2"),
            pod("preemptor2", "", "pg2"),
            node("n1", "2", "2G"),
            queue("q1"),
        ],
        ["c1/preemptee1"],
    ),
    (
        "preempt enough tasks to fit large task of different job",
        [
            pod_group("pg1", "q1", 1, "Inqueue", "low-priority", min_task_member={"": 3}),
            pod_group("pg2", "q1", 1, "Inqueue", "high-priority", min_task_member={"": 1}),
            pod("preemptee1", "n1", "pg1", preemptable="true"),
            pod("preemptee2", "n1", "pg1", preemptable="true"),
            pod("preemptee3", "n1", "pg1", preemptable="false"),
            pod("preemptor1", "", "pg2", cpu="5", mem="5G"),
            node("n1", "6", "6G"),
            queue("q1"),
        ],
        ["c1/preemptee2", "c1/preemptee1"],
    ),
    (
        "preempt low priority job in same queue",
        [
            pod_group("pg1", "q1", 0, "Inqueue", "low-priority"),
            pod_group("pg2", "q1", 1, "Inqueue", "high-priority", min_task_member=ALL),
            pod("preemptee1", "n1", "pg1", cpu="3", mem="3G", preemptable="true"),
            pod("preemptor1", "", "pg2", cpu="3", mem="3G"),
            node("n1", "12", "12G"),
            queue("q1", capability={"cpu": "4", "memory": "4G"}),
        ],
        ["c1/preemptee1"],
    ),
    (
        "preempt low priority job in same queue: allocatable and has enough resource, don't preempt",
        [
            pod_group("pg1", "q1", 1, "Inqueue", "low-priority"),
            pod_group("pg2", "q1", 1, "Inqueue", "high-priority", min_task_member=ALL),
            pod("preemptee1", "n1", "pg1", cpu="3", mem="3G", preemptable="true"),
            pod("preemptor1", "", "pg2", cpu="3", mem="3G"),
            node("n1", "12", "12G"),
            queue("q1", capability={"cpu": "6", "memory": "6G"}),
        ],
        [],
    ),
    (
        "preempt low priority job in same queue but not pod with preemptable=false or higher priority",
        [
            pod_group("pg1", "q1", 1, "Inqueue", "low-priority"),
            pod_group("pg2", "q1", 1, "Inqueue", "high-priority", min_task_member=ALL),
            pod("preemptee1", "n1", "pg1", preemptable="false"),
            pod("preemptee2", "n1", "pg1", preemptable="true"),
            pod("preemptee3", "n1", "pg1", preemptable="true", priority=100000),
            pod("preemptor1", "", "pg2"),
            node("n1", "12", "12G"),
            queue("q1", capability={"cpu": "3", "memory": "3G"}),
        ],
        ["c1/preemptee2"],
    ),
    # Volcano counts one ``pods`` unit per task in every request, so on a node with room for one pod
    # a BestEffort pod (which asks for nothing else) must be evicted first, and its eviction frees
    # the slot.
    (
        "unBestEffort high-priority pod preempt BestEffort low-priority pod in same queue",
        [
            pod_group("pg1", "q1", 0, "Inqueue", "low-priority"),
            pod_group("pg2", "q1", 1, "Inqueue", "high-priority", min_task_member=ALL),
            pod("preemptee1", "n1", "pg1", cpu=None, mem=None, preemptable="true"),
            pod("preemptor1", "", "pg2", cpu="3", mem="3G"),
            node("n1", "12", "12G", pods="1"),
            queue("q1", capability={"cpu": "6", "memory": "6G"}),
        ],
        ["c1/preemptee1"],
    ),
    (
        "BestEffort high-priority pod preempt BestEffort low-priority pod in same queue",
        [
            pod_group("pg1", "q1", 0, "Inqueue", "low-priority"),
            pod_group("pg2", "q1", 1, "Inqueue", "high-priority", min_task_member=ALL),
            pod("preemptee1", "n1", "pg1", cpu=None, mem=None, preemptable="true"),
            pod("preemptor1", "", "pg2", cpu=None, mem=None),
            node("n1", "12", "12G", pods="1"),
            queue("q1", capability={"cpu": "6", "memory": "6G"}),
        ],
        ["c1/preemptee1"],
    ),
    (
        "can not preempt resources when task preemption policy is never",
        [
            pod_group("pg1", "q1", 0, "Inqueue", "low-priority"),
            pod_group("pg2", "q1", 1, "Inqueue", "high-priority"),
            pod("preemptee1", "n1", "pg1", preemptable="true"),
            pod("preemptor1", "", "pg2", never=True),
            node("n1", "1", "1Gi", pods="1"),
            queue("q1"),
        ],
        [],
    ),
]

# TestPreempt: the action's normal mode.
PREEMPT_TIER = [
    plugin("conformance", "preemptable"),
    plugin("gang", "preemptable", "job_pipelined", "job_starving"),
    plugin("priority", "task_order", "job_order", "preemptable", "job_pipelined", "job_starving"),
    plugin("proportion", "overused", "allocatable", "queue_order"),
]
PREEMPT_CASES = [
    *SHARED,
    (
        "rollback evictions when preemptor exceeds queue capacity after evicting victims",
        [
            pod_group("pg1", "q1", 1, "Inqueue", "low-priority", min_task_member={"": 2}),
            pod_group("pg2", "q1", 1, "Inqueue", "high-priority", min_task_member=ALL),
            pod("preemptee1", "n1", "pg1", preemptable="true"),
            pod("preemptee2", "n1", "pg1", preemptable="true"),
            pod("preemptor1", "", "pg2", cpu="4", mem="4G"),
            node("n1", "10", "10G"),
            queue("q1", capability={"cpu": "3", "memory": "3G"}),
        ],
        [],
    ),
    (
        "only commit evictions on the node where preemption succeeds",
        [
            pod_group("pg1", "q1", 0, "Inqueue", "low-priority"),
            pod_group("pg2", "q1", 1, "Inqueue", "high-priority", min_task_member=ALL),
            pod_group("pg3", "q1", 0, "Inqueue", "low-priority"),
            pod("preemptee1", "n1", "pg1", preemptable="true"),
            pod("preemptee2", "n2", "pg3", cpu="4", mem="4G", preemptable="true"),
            pod("preemptor1", "", "pg2", cpu="3", mem="3G"),
            node("n1", "3", "3G"),
            node("n2", "4", "4G"),
            queue("q1", capability={"cpu": "6", "memory": "6G"}),
        ],
        ["c1/preemptee2"],
    ),
    (
        "multi-queue: preemptorTasks must not be overwritten by intra-job preemption of another queue",
        [
            pod_group("pg1", "q1", 1, "Inqueue", min_task_member=ALL),
            pod_group("pg2", "q2", 0, "Inqueue", "low-priority"),
            pod_group("pg3", "q2", 1, "Inqueue", "high-priority", min_task_member=ALL),
            pod("q1-runner1", "n1", "pg1"),
            pod("q2-preemptee1", "n1", "pg2", preemptable="true"),
            pod("q2-preemptor1", "", "pg3"),
            node("n1", "2", "2G"),
            queue("q1"),
            queue("q2", capability={"cpu": "4", "memory": "4G"}),
        ],
        ["c1/q2-preemptee1"],
    ),
]

# TestTopologyAwarePreempt registers capacity and predicates too, so capacity and proportion sit in
# one tier; it turns on the action's topology-aware mode, which kubesched does not have (the
# action's normal mode decides these cases the same way).
TOPOLOGY_AWARE_TIER = [
    *PREEMPT_TIER[:3],
    plugin("proportion", "overused", "allocatable", "queue_order", "predicate"),
    plugin("predicates", "preemptable", "predicate"),
    plugin("capacity", "queue_order"),
]
TOPOLOGY_AWARE_CASES = [
    *SHARED,
    (
        "preempt low-priority pod when high-priority pod has PodAntiAffinity conflict",
        [
            pod_group("pg1", "q1", 0, "Inqueue", "low-priority"),
            pod_group("pg2", "q1", 0, "Inqueue", "low-priority"),
            pod_group("pg3", "q1", 1, "Inqueue", "high-priority", min_task_member=ALL),
            pod("preemptee1", "n1", "pg2", preemptable="true"),
            anti_affine(pod("preemptee2", "n1", "pg1", preemptable="true")),
            anti_affine(pod("preemptor1", "", "pg3")),
            node_dict("n1", {"cpu": "2", "memory": "2Gi", "pods": "2"}, labels={HOSTNAME: "n1"}),
            queue("q1", capability={"cpu": "2", "memory": "2G"}),
        ],
        ["c1/preemptee2"],
    ),
    (
        "preemption with priority queues",
        [
            pod_group("pg3", "q2", 1, "Running", "high-priority"),
            pod_group("pg1", "q1", 0, "Running", "low-priority"),
            pod_group("pg2", "q1", 1, "Inqueue", "high-priority"),
            pod("preemptee2", "n1", "pg3", preemptable="true"),
            pod("preemptee1", "n1", "pg1", preemptable="true"),
            pod("preemptor1", "", "pg2"),
            node("n1", "2", "2Gi", pods="2"),
            queue(
                "q1",
                priority=1,
                deserved={"cpu": "1", "memory": "1G"},
                capability={"cpu": "1", "memory": "1G"},
            ),
            queue(
                "q2",
                priority=10,
                deserved={"cpu": "1", "memory": "1G"},
                capability={"cpu": "1", "memory": "1G"},
            ),
        ],
        ["c1/preemptee1"],
    ),
]


def _preempt(objects: list[dict[str, Any]], tier: list[dict[str, Any]], topology_aware: bool) -> list[str]:
    conf = one_tier("preempt", tier)
    conf["configurations"] = [
        {"name": "preempt", "arguments": {"enableTopologyAwarePreemption": topology_aware}}
    ]
    return sorted(run_conf(PRIORITIES + objects, conf).evicted)


@pytest.mark.parametrize(
    ("objects", "evicted"), [c[1:] for c in PREEMPT_CASES], ids=[c[0] for c in PREEMPT_CASES]
)
def test_volcano_preempt(objects: list[dict[str, Any]], evicted: list[str]) -> None:
    tier = registered(PREEMPT_TIER, {"conformance", "gang", "priority", "proportion"})
    assert _preempt(objects, tier, topology_aware=False) == sorted(evicted)


@pytest.mark.parametrize(
    ("objects", "evicted"), [c[1:] for c in TOPOLOGY_AWARE_CASES], ids=[c[0] for c in TOPOLOGY_AWARE_CASES]
)
def test_volcano_topology_aware_preempt(objects: list[dict[str, Any]], evicted: list[str]) -> None:
    tier = registered(
        TOPOLOGY_AWARE_TIER, {"capacity", "conformance", "gang", "priority", "proportion", "predicates"}
    )
    assert _preempt(objects, tier, topology_aware=True) == sorted(evicted)


# -- the topology-aware mode's dry run ---------------------------------------------------------- #


def _anti_affinity_cluster(first: str, second: str) -> list[dict[str, Any]]:
    """The PodAntiAffinity case with its victims created in the given order (so ``second`` has the
    larger uid and is the first one evicted)."""
    pods = {
        "preemptee1": pod("preemptee1", "n1", "pg2", preemptable="true"),
        "preemptee2": anti_affine(pod("preemptee2", "n1", "pg1", preemptable="true")),
    }
    case = next(c for c in TOPOLOGY_AWARE_CASES if "PodAntiAffinity" in c[0])
    others = [o for o in case[1] if o["metadata"]["name"] not in pods]
    return [*others, pods[first], pods[second]]


@pytest.mark.parametrize(
    ("topology_aware", "evicted"),
    [(True, ["c1/preemptee2"]), (False, ["c1/preemptee1", "c1/preemptee2"])],
)
def test_dry_run_keeps_only_the_victims_the_placement_needs(topology_aware: bool, evicted: list[str]) -> None:
    """preemptee1 goes first but evicting it does not let the anti-affine preemptor in. The normal
    mode evicts it and then preemptee2; the dry run puts preemptee1 back, since the preemptor fits
    with preemptee2 alone gone."""
    tier = registered(TOPOLOGY_AWARE_TIER, {"conformance", "gang", "priority", "proportion", "predicates"})
    objects = _anti_affinity_cluster("preemptee2", "preemptee1")
    assert _preempt(objects, tier, topology_aware=topology_aware) == evicted


def _two_nodes_to_choose_from() -> list[dict[str, Any]]:
    """Each node is full; n1 runs a priority-50 victim, n2 a priority-20 one."""
    return [
        priority_class("mid", 50),
        priority_class("low", 20),
        node("n1", "1", "1G"),
        node("n2", "1", "1G"),
        queue("q1"),
        pod_group("mid", "q1", 0, "Running", "mid"),
        pod_group("low", "q1", 0, "Running", "low"),
        pod_group("high", "q1", 1, "Inqueue", "high-priority"),
        pod("v-mid", "n1", "mid", priority_class="mid", preemptable="true"),
        pod("v-low", "n2", "low", priority_class="low", preemptable="true"),
        pod("preemptor", "", "high", priority_class="high-priority"),
    ]


@pytest.mark.parametrize(("candidates", "evicted"), [(2, ["c1/v-low"]), (1, None)])
def test_dry_run_picks_the_node_whose_victims_matter_least(
    candidates: int, evicted: list[str] | None
) -> None:
    """With both nodes as candidates the node of the lower-priority victim wins; with one, the
    node the search starts from (at random) is taken."""
    conf = one_tier("preempt", PREEMPT_TIER)
    conf["configurations"] = [
        {
            "name": "preempt",
            "arguments": {"enableTopologyAwarePreemption": True, "minCandidateNodesAbsolute": candidates},
        }
    ]
    got = sorted(run_conf(PRIORITIES + _two_nodes_to_choose_from(), conf).evicted)
    if evicted is not None:
        assert got == evicted
    else:
        assert got in (["c1/v-low"], ["c1/v-mid"])


def test_dry_run_counts_more_victims_as_more_even_at_negative_priority() -> None:
    """Both nodes' first victim has priority 5; n1 also needs a priority -3 victim evicted. Fewer
    victims win: n2, though n1's priorities add up to less."""
    objects = [
        priority_class("five", 5),
        priority_class("minus", -3),
        node("n1", "2", "2G"),
        node("n2", "2", "2G"),
        queue("q1"),
        *(pod_group(g, "q1", 0, "Running", pc) for g, pc in (("a", "five"), ("b", "minus"), ("c", "five"))),
        pod_group("high", "q1", 1, "Inqueue", "high-priority"),
        pod("v-five", "n1", "a", priority_class="five", preemptable="true"),
        pod("v-minus", "n1", "b", priority_class="minus", preemptable="true"),
        pod("w-five", "n2", "c", cpu="2", mem="2G", priority_class="five", preemptable="true"),
        pod("preemptor", "", "high", cpu="2", mem="2G", priority_class="high-priority"),
    ]
    conf = one_tier("preempt", PREEMPT_TIER)
    conf["configurations"] = [
        {
            "name": "preempt",
            "arguments": {"enableTopologyAwarePreemption": True, "minCandidateNodesAbsolute": 2},
        }
    ]
    assert sorted(run_conf(PRIORITIES + objects, conf).evicted) == ["c1/w-five"]


def test_dry_run_checks_the_queue_only_while_it_looks_for_victims() -> None:
    """Volcano's dry run ends on the predicates alone: a preemptor its queue refuses even with every
    admissible victim gone keeps them all as victims and is placed. Here gang admits one of the two
    (its job keeps minMember); the normal mode evicts nobody."""
    case = next(c for c in PREEMPT_CASES if c[0].startswith("rollback evictions"))
    tier = registered(PREEMPT_TIER, {"conformance", "gang", "priority", "proportion"})
    assert _preempt(case[1], tier, topology_aware=False) == []
    sched = run_conf(
        PRIORITIES + case[1],
        {
            "actions": "preempt",
            "tiers": [{"plugins": tier}],
            "configurations": [{"name": "preempt", "arguments": {"enableTopologyAwarePreemption": True}}],
        },
    )
    assert len(sched.evicted) == 1


# -- guarantees --------------------------------------------------------------------------------- #

DEFAULT_TIERS = [
    {"name": "priority"},
    {"name": "gang"},
    {"name": "conformance"},
    {"name": "drf"},
    {"name": "proportion"},
]


def test_gang_victim_is_never_broken_below_min_member() -> None:
    """The low-priority gang runs exactly minMember pods: nothing may be taken from it."""
    objects = [
        *PRIORITIES,
        node("n1", "2", "2G"),
        queue("q1"),
        pod_group("low", "q1", 2, "Running", "low-priority"),
        pod_group("high", "q1", 1, "Inqueue", "high-priority"),
        pod("l1", "n1", "low"),
        pod("l2", "n1", "low"),
        pod("h1", "", "high"),
    ]
    assert run(objects, "preempt", DEFAULT_TIERS).evicted == []


def test_gang_above_min_member_gives_up_its_extra_pods() -> None:
    objects = [
        *PRIORITIES,
        node("n1", "3", "3G"),
        queue("q1"),
        pod_group("low", "q1", 2, "Running", "low-priority"),
        pod_group("high", "q1", 1, "Inqueue", "high-priority"),
        pod("l1", "n1", "low"),
        pod("l2", "n1", "low"),
        pod("l3", "n1", "low"),
        pod("h1", "", "high"),
    ]
    sched = run(objects, "preempt", DEFAULT_TIERS)
    assert len(sched.evicted) == 1
    assert sched.evicted[0].startswith("c1/l")


def test_preemptor_gang_that_cannot_be_pipelined_evicts_nothing() -> None:
    """The high-priority gang needs two pods; only one can be made room for: all evictions undone."""
    objects = [
        *PRIORITIES,
        node("n1", "2", "2G"),
        queue("q1"),
        pod_group("low", "q1", 1, "Running", "low-priority"),
        pod_group("high", "q1", 2, "Inqueue", "high-priority"),
        pod("l1", "n1", "low", preemptable="true"),
        pod("l2", "n1", "low", preemptable="false"),
        pod("h1", "", "high"),
        pod("h2", "", "high"),
    ]
    assert run(objects, "preempt", DEFAULT_TIERS).evicted == []


def test_no_preemption_across_queues() -> None:
    objects = [
        *PRIORITIES,
        node("n1", "2", "2G"),
        queue("q1"),
        queue("q2"),
        pod_group("low", "q1", 1, "Running", "low-priority"),
        pod_group("high", "q2", 1, "Inqueue", "high-priority"),
        pod("l1", "n1", "low"),
        pod("l2", "n1", "low"),
        pod("h1", "", "high"),
    ]
    assert run(objects, "preempt", DEFAULT_TIERS).evicted == []


def test_lower_priority_task_of_the_same_job_yields() -> None:
    """Preemption between tasks of one job: a pending high-priority task evicts a low-priority
    sibling beyond minMember."""
    objects = [
        *PRIORITIES,
        node("n1", "2", "2G"),
        queue("q1"),
        pod_group("job", "q1", 1, "Running"),
        pod("low-task", "n1", "job", priority=1),
        pod("low-task-2", "n1", "job", priority=1),
        pod("high-task", "", "job", priority=1000),
    ]
    # gang's starving check would end at minMember; drf would refuse (the job's own share after the
    # swap is not below the victim's): neither takes part here.
    tier = [{"name": "priority"}, {"name": "gang", "enableJobStarving": False}, {"name": "conformance"}]
    sched = run(objects, "preempt", tier)
    assert len(sched.evicted) == 1
    assert sched.evicted[0] in ("c1/low-task", "c1/low-task-2")
