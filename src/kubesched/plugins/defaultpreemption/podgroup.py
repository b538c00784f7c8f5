"""Workload-aware preemption (upstream ``PodGroupEvaluator``, KEP-4671, v1.36): DefaultPreemption's
PodGroupPostFilter, where the preemptor is a whole pod group and the domain the whole cluster.

Victims are units: a pod, or every bound pod of a PodGroup whose ``disruptionMode`` is ``PodGroup``
(evicted together or not at all), each with its priority (a PodGroup's own ``priority`` when set).
Every unit of lower priority than the preemptor is taken off the cluster and the group's algorithm
run again; if even that fails, nothing is preempted. Otherwise units are given back one by one,
those whose eviction would break a PodDisruptionBudget first, each kind most important first
(higher priority, then pod groups before pods, then larger groups, then the earlier started), and
kept as victims only when the group no longer fits, or fits fewer of its pods, without them.
The victims are then evicted and the group waits for them to go.

The scheduler owns the cluster state the trial runs on: it hands in how to take a unit's pods off
and put them back, and how to run the group's algorithm (how many pods it placed, whether the
group is schedulable).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from kubesched.api.objects import Pod
from kubesched.api.pdb import PodDisruptionBudget
from kubesched.api.scheduling_groups import (
    DISRUPTION_MODE_POD_GROUP,
    POD_GROUP_STORE_KIND,
    SchedulingPodGroup,
)
from kubesched.cache.pod_index import is_terminating
from kubesched.framework.handle import Handle
from kubesched.framework.status import Code, Status
from kubesched.plugins.defaultpreemption.victims import NOT_STARTED, pdb_violations, start_time

NO_VICTIMS = "No preemption victims found for incoming preemptor"


@dataclass(slots=True)
class Victim:
    """A preemption unit: one pod, or a whole PodGroup's bound pods."""

    pods: list[Pod]
    priority: int
    is_pod_group: bool = False
    #: when its earliest pod started (``victims.start_time``)
    start: float = field(default=NOT_STARTED)

    def key(self) -> tuple[int, int, int, float]:
        """Sort key, most important first."""
        size = len(self.pods) if self.is_pod_group else 0
        return (-self.priority, 0 if self.is_pod_group else 1, -size, self.start)


@dataclass(slots=True)
class GroupTrial:
    """What the scheduler lends the evaluator: the group's algorithm on the current state (how
    many pods it placed, and None when the group is schedulable), and taking pods off the cluster
    and back."""

    run: Callable[[], tuple[int, Status | None]]
    remove: Callable[[Sequence[Pod]], None]
    restore: Callable[[Sequence[Pod]], None]


def pod_group_priority(pg: SchedulingPodGroup, pods: Sequence[Pod]) -> int:
    """The PodGroup's ``priority`` when set, else its pods' highest."""
    if pg.priority is not None:
        return pg.priority
    return max((p.priority for p in pods), default=0)


def select_victims(
    handle: Handle,
    pg: SchedulingPodGroup,
    pods: Sequence[Pod],
    bound: Sequence[Pod],
    trial: GroupTrial,
    nominated_nodes: Sequence[str] = (),
    budgets: tuple[Sequence[PodDisruptionBudget], Sequence[int]] = ((), ()),
) -> tuple[list[Pod], Status | None]:
    """The pods to evict so that the group fits (upstream ``selectVictimsOnDomain``), or why none
    will do. ``nominated_nodes``: where the group's pods were nominated by an earlier preemption;
    ``budgets``: the PodDisruptionBudgets and the disruptions each allows now. The cluster is as
    it was when this returns."""
    preemptor = pod_group_priority(pg, pods)
    if pods and all(p.preemption_policy == "Never" for p in pods):
        return [], Status(Code.UNSCHEDULABLE, ["not eligible due to preemptionPolicy=Never."])
    for node in sorted(set(nominated_nodes)):
        info = handle.snapshot.node_infos.get(node)
        if info is not None and any(is_terminating(p) and p.priority < preemptor for p in info.pods.values()):
            # An earlier preemption's victims are still going: wait for them, take no more.
            return [], Status(
                Code.UNSCHEDULABLE, ["not eligible due to a terminating pod on the nominated node."]
            )
    candidates = [v for v in _victims(handle, bound) if v.priority < preemptor]
    if not candidates:
        return [], Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, [NO_VICTIMS])
    removed: list[Victim] = []
    try:
        for v in candidates:
            trial.remove(v.pods)
            removed.append(v)
        best, st = trial.run()
        if st is not None:
            return [], st
        candidates.sort(key=Victim.key)
        # Units whose eviction would break a budget are reprieved first (upstream
        # filterVictimsWithPDBViolation), each group of units most important first.
        flags = iter(pdb_violations([p for v in candidates for p in v.pods], *budgets))
        violating = [any([next(flags) for _ in v.pods]) for v in candidates]
        ordered = [v for v, bad in zip(candidates, violating, strict=True) if bad]
        ordered += [v for v, bad in zip(candidates, violating, strict=True) if not bad]
        chosen: list[Victim] = []
        for v in ordered:
            trial.restore(v.pods)
            removed.remove(v)
            placed, st = trial.run()
            best = max(best, placed)
            if st is not None or placed < best:
                trial.remove(v.pods)
                removed.append(v)
                chosen.append(v)
    finally:
        for v in removed:
            trial.restore(v.pods)
    chosen.sort(key=Victim.key)
    return [p for v in chosen for p in v.pods], None


def _victims(handle: Handle, bound: Sequence[Pod]) -> list[Victim]:
    """Every bound pod as a unit, except that the pods of a PodGroup disrupted as a whole make one."""
    groups = handle.informers.informer(POD_GROUP_STORE_KIND)
    units: list[Victim] = []
    seen_groups: set[tuple[str, str]] = set()
    for pod in bound:
        if is_terminating(pod):
            continue
        group = pod.scheduling_group
        pg = groups.get(pod.namespace, group) if group is not None else None
        if pg is not None and pg.disruption_mode == DISRUPTION_MODE_POD_GROUP:
            key = (pod.namespace, pg.name)
            if key in seen_groups:
                continue
            seen_groups.add(key)
            st = handle.pod_groups.state(pod.namespace, pg.name)
            members = [
                st.pods[u] for u in sorted(st.assigned) if u in st.pods and not is_terminating(st.pods[u])
            ]
            units.append(
                Victim(
                    members,
                    pod_group_priority(pg, members),
                    True,
                    min((start_time(p) for p in members), default=NOT_STARTED),
                )
            )
        else:
            units.append(Victim([pod], pod.priority, False, start_time(pod)))
    return units
