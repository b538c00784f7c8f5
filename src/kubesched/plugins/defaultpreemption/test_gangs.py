"""DefaultPreemption keeps PodGroups whole: a gang member is evicted only within the gang's slack
above ``minMember``, or together with every other bound member."""

from __future__ import annotations

from collections import Counter
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kubesched.plugins.defaultpreemption.gangs import GANG_KEPT
from kubesched.plugins.defaultpreemption.test_defaultpreemption import Attempt, node, pod
from kubesched.sim.simulation import Simulation

VOLCANO = "scheduling.volcano.sh/v1beta1"


def preempt_once(objects: list[dict[str, Any]], preemptor: dict[str, Any], seed: int = 0) -> Attempt:
    """Create the cluster, then run exactly one default-scheduler cycle for ``preemptor``."""
    sim = Simulation(seed=seed, explain=True)
    for obj in sorted(objects, key=lambda o: o["kind"] != "Node"):
        sim.store.create(obj)
    sched = sim.scheduler
    sched.informers.pump()
    created = sim.store.create(preemptor)
    sched.informers.pump()
    assert sched.schedule_one()
    uid = created["metadata"]["uid"]
    pre = ((sched.explain.get(uid) if sched.explain else None) or {}).get("preemption") or {}
    stored = sim.store.get("Pod", "default", preemptor["metadata"]["name"]) or {}
    nominated = (stored.get("status") or {}).get("nominatedNodeName")
    return Attempt(sim, sched.outcomes[uid], nominated, sorted(pre.get("victims") or []))


def pod_group(name: str, min_member: int) -> dict[str, Any]:
    return {
        "apiVersion": VOLCANO,
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"minMember": min_member},
    }


def member(group: str, name: str, cpu: str, priority: int, node_name: str) -> dict[str, Any]:
    obj = pod(name, cpu, priority, node_name)
    obj["metadata"]["annotations"] = {"scheduling.k8s.io/group-name": group}
    obj["spec"]["schedulerName"] = "volcano"
    return obj


def gang_on_n1(min_member: int = 2, size: int = 2) -> list[dict[str, Any]]:
    objs = [node("n1", cpu=str(size)), pod_group("g", min_member)]
    objs += [member("g", f"g-{i}", "1", 1, "n1") for i in range(size)]
    return objs


def test_a_member_of_a_running_gang_goes_only_with_the_whole_gang() -> None:
    # One member's cpu would do, but one member alone cannot run: the gang goes whole.
    attempt = preempt_once(gang_on_n1(), pod("p", "1", 10))
    assert attempt.nominated == "n1"
    assert attempt.victims == ["default/g-0", "default/g-1"]


def test_the_whole_gang_goes_when_the_preemptor_needs_all_of_it() -> None:
    attempt = preempt_once(gang_on_n1(), pod("p", "2", 10))
    assert attempt.nominated == "n1"
    assert attempt.victims == ["default/g-0", "default/g-1"]


def test_members_above_min_member_are_ordinary_victims() -> None:
    attempt = preempt_once(gang_on_n1(min_member=2, size=3), pod("p", "1", 10))
    assert attempt.nominated == "n1"
    assert len(attempt.victims) == 1


def test_a_gang_spread_over_nodes_keeps_its_members() -> None:
    objs = [node("n1", cpu="2"), node("n2", cpu="2"), pod_group("g", 2)]
    objs += [member("g", "g-0", "2", 1, "n1"), member("g", "g-1", "2", 1, "n2")]
    objs += [pod("other", "1", 1, "n2")]
    attempt = preempt_once(objs, pod("p", "2", 10))
    assert attempt.victims == []
    assert attempt.nominated is None
    assert attempt.outcome.status == "Unschedulable"
    message = attempt.outcome.message
    assert "preemption: 0/2 nodes are available" in message
    assert f"1 {GANG_KEPT}" in message
    assert "1 Insufficient cpu" in message


def test_other_victims_are_chosen_over_a_gang() -> None:
    objs = [node("n1", cpu="2"), node("n2", cpu="2"), pod_group("g", 2)]
    objs += [member("g", "g-0", "1", 1, "n1"), member("g", "g-1", "1", 1, "n2")]
    objs += [pod("solo", "1", 5, "n1"), pod("other", "1", 5, "n2")]
    attempt = preempt_once(objs, pod("p", "2", 10))
    assert attempt.victims == []  # each node would need a gang member gone with a lone partner
    objs2 = [node("n1", cpu="2"), node("n2", cpu="2"), pod_group("g", 2)]
    objs2 += [member("g", "g-0", "1", 1, "n1"), member("g", "g-1", "1", 1, "n1")]
    objs2 += [pod("a", "1", 5, "n2"), pod("b", "1", 5, "n2")]
    attempt2 = preempt_once(objs2, pod("p", "2", 10))
    # Both nodes are candidates; n1's victims (the whole gang) have the lower top priority.
    assert attempt2.nominated == "n1"
    assert attempt2.victims == ["default/g-0", "default/g-1"]


@settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    nodes=st.integers(1, 3),
    gangs=st.lists(st.tuples(st.integers(1, 4), st.integers(1, 4)), min_size=1, max_size=3),
    loners=st.lists(st.tuples(st.integers(0, 2), st.integers(1, 2), st.integers(0, 20)), max_size=4),
    spots=st.lists(st.integers(0, 2), min_size=12, max_size=12),
    want=st.integers(1, 4),
    seed=st.integers(0, 3),
)
def test_no_eviction_leaves_a_gang_partially_bound(
    nodes: int,
    gangs: list[tuple[int, int]],
    loners: list[tuple[int, int, int]],
    spots: list[int],
    want: int,
    seed: int,
) -> None:
    objs: list[dict[str, Any]] = [node(f"n{i}", cpu="4") for i in range(nodes)]
    used: Counter[str] = Counter()
    bound: Counter[str] = Counter()
    min_member: dict[str, int] = {}
    k = 0
    for g, (size, min_m) in enumerate(gangs):
        min_member[f"g{g}"] = min(min_m, size)
        objs.append(pod_group(f"g{g}", min_member[f"g{g}"]))
        for i in range(size):
            where = f"n{spots[k % len(spots)] % nodes}"
            k += 1
            if used[where] < 4:
                used[where] += 1
                bound[f"g{g}"] += 1
                objs.append(member(f"g{g}", f"g{g}-{i}", "1", 1 + g, where))
    for i, (at, cpu, prio) in enumerate(loners):
        where = f"n{at % nodes}"
        if used[where] + cpu <= 4:
            used[where] += cpu
            objs.append(pod(f"solo{i}", str(cpu), prio, where))
    attempt = preempt_once(objs, pod("p", str(want), 10), seed=seed)
    lost = Counter(v.split("/")[1].split("-")[0] for v in attempt.victims if v.startswith("default/g"))
    for group, n in lost.items():
        left = bound[group] - n
        assert left == 0 or left >= min_member[group], (group, bound[group], n, attempt.victims)
