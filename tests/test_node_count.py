"""numFeasibleNodesToFind, checked against upstream's TestNumFeasibleNodesToFind table."""

from __future__ import annotations

import pytest

from kubesched.framework.config import config_from_dict
from kubesched.framework.node_count import num_feasible_nodes_to_find
from kubesched.plugins import default_registry
from kubesched.sim.simulation import Simulation


def effective_percentage(profile: int | None, global_: int | None) -> int | None:
    """What the scheduler hands to num_feasible_nodes_to_find: the profile's value when set."""
    return profile if profile is not None else global_


# (name, global percentage, profile percentage, number of nodes, expected), as upstream.
CASES = [
    ("not set, nodes not more than 50", None, None, 10, 10),
    ("profile set, nodes not more than 50", None, 40, 10, 10),
    ("not set, nodes more than 50", None, None, 1000, 420),
    ("profile set, nodes more than 50", None, 40, 1000, 400),
    ("global and profile set, nodes more than 50", 100, 70, 1000, 700),
    ("global set, nodes more than 50", 40, None, 1000, 400),
    ("not set, nodes more than 50*125", None, None, 6000, 300),
    ("profile set, nodes more than 50*125", None, 40, 6000, 2400),
    # The floors: never fewer than 100 nodes, never below 5 percent.
    ("small percentage floors at 100 nodes", None, 1, 1000, 100),
    ("adaptive floors at 5 percent", None, None, 20000, 1000),
    ("exactly 100 nodes, adaptive", None, None, 100, 100),
    ("99 nodes: all of them", None, 5, 99, 99),
    ("profile 100 percent", 10, 100, 2000, 2000),
    # Profile 0 means adaptive even when the global setting is not.
    ("profile 0 overrides global", 10, 0, 2000, 680),
    ("global 10 percent", 10, None, 2000, 200),
    ("profile 5 percent", 10, 5, 2000, 100),
]


@pytest.mark.parametrize(
    ("global_pct", "profile_pct", "num_nodes", "want"),
    [c[1:] for c in CASES],
    ids=[c[0] for c in CASES],
)
def test_num_feasible_nodes_to_find(
    global_pct: int | None, profile_pct: int | None, num_nodes: int, want: int
) -> None:
    assert num_feasible_nodes_to_find(effective_percentage(profile_pct, global_pct), num_nodes) == want


def test_zero_nodes() -> None:
    assert num_feasible_nodes_to_find(None, 0) == 0
    assert num_feasible_nodes_to_find(50, 0) == 0


def _count_evaluated(config: dict[str, object], nodes: int) -> int:
    """Schedule one pod on a cluster of identical nodes and report how many were evaluated."""
    from kubesched.bench.base import node_default, pod_default

    registry = default_registry()
    sim = Simulation(config_from_dict(config, registry), registry, seed=1)
    for i in range(nodes):
        sim.store.create(node_default(i))
    sim.store.create(pod_default("p"))
    sched = sim.scheduler
    sched.informers.pump()
    seen: list[int] = []
    original = sched.prioritize_nodes

    def spy(fwk, state, pod, feasible, details):  # type: ignore[no-untyped-def]
        seen.append(len(feasible))
        return original(fwk, state, pod, feasible, details)

    sched.prioritize_nodes = spy  # type: ignore[method-assign]
    assert sched.schedule_one()
    assert len(seen) == 1
    return seen[0]


BASE = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration"}


@pytest.mark.parametrize(
    ("config", "want"),
    [
        (BASE, 420),
        ({**BASE, "percentageOfNodesToScore": 40}, 400),
        ({**BASE, "percentageOfNodesToScore": 100, "profiles": [{"percentageOfNodesToScore": 70}]}, 700),
        ({**BASE, "percentageOfNodesToScore": 10, "profiles": [{"percentageOfNodesToScore": 0}]}, 420),
    ],
    ids=["adaptive", "global", "profile-beats-global", "profile-zero-is-adaptive"],
)
def test_scheduler_scores_only_num_feasible_nodes(config: dict[str, object], want: int) -> None:
    assert _count_evaluated(config, 1000) == want
