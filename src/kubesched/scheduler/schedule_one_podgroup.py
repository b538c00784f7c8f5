"""The pod group scheduling cycle (upstream ``pkg/scheduler/schedule_one_podgroup.go``, v1.36).

With the ``GenericWorkload`` gate on, a popped pod that names a scheduling.k8s.io PodGroup brings
its whole group into one cycle: every other unscheduled pod of the group is taken out of the queue
with it, the pods are ordered by priority (highest first), then by their first attempt, and each
runs the ordinary algorithm (Filter, Score, PostFilter) on the one snapshot in turn, assumed and
reserved where it fits so that the next pod sees it placed, then through Permit. When one pod's
Permit succeeds (for a gang: once ``minCount`` pods are placed) the group is schedulable.

Every placement of the cycle is then undone. A schedulable group's placed pods are assumed again
and go to their binding cycles (GangScheduling's Permit lets them through together); the pods that
found no node are requeued with their own reasons. An unschedulable group's pods are all requeued:
the placed ones told that Permit made them wait, the others why they found no node. The PodGroup's
``PodGroupScheduled`` condition says how the cycle ended (it never goes back from True to False).
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from kubesched.api.objects import Pod
from kubesched.api.scheduling_groups import (
    POD_GROUP_SCHEDULED,
    POD_GROUP_STORE_KIND,
    REASON_SCHEDULED,
    REASON_SCHEDULER_ERROR,
    REASON_UNSCHEDULABLE,
    SchedulingPodGroup,
)
from kubesched.cache.pod_index import is_terminating
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.diagnosis import Diagnosis, FitError, NoNodesAvailable
from kubesched.framework.extension_points import ExtensionPoint
from kubesched.framework.outcome import PodOutcome
from kubesched.framework.placement import Placement, PodGroupAssignments, ProposedAssignment
from kubesched.framework.runtime import Framework, FrameworkError
from kubesched.framework.status import Code, Status
from kubesched.framework.types import QueuedPodInfo
from kubesched.framework.waiting_pods import WaitingPod
from kubesched.plugins.defaultpreemption import DefaultPreemption
from kubesched.plugins.defaultpreemption.podgroup import GroupTrial, select_victims
from kubesched.scheduler.binding import BindingTask
from kubesched.scheduler.schedule_one import SchedulingError

if TYPE_CHECKING:
    from kubesched.scheduler.scheduler import Scheduler

#: Upstream ``errPodGroupUnschedulable``: the error of a group's Unschedulable status, which comes
#: first in its message (``Status.WithError``), before any reason.
POD_GROUP_UNSCHEDULABLE = "pod group is unschedulable"
WAITING_FOR_PREEMPTION = "pod group is waiting for preemption to complete"


@dataclass(slots=True)
class _PodResult:
    """One pod's attempt in the group's cycle (upstream ``algorithmResult``)."""

    info: QueuedPodInfo
    state: CycleState
    outcome: PodOutcome
    node: str = ""
    #: why it was not placed (empty when it was)
    message: str = ""
    diagnosis: Diagnosis | None = None
    error: bool = False
    #: the node an earlier preemption nominated it to, when it only fits there after preemption
    nominated: str | None = ""
    requires_preemption: bool = False
    permit: Status | None = None
    #: the nomination the pod had before this cycle assumed it (given back when undone)
    held_nomination: str | None = None

    @property
    def placed(self) -> bool:
        return bool(self.node) and not self.message


def schedule_one_pod_group(sched: Scheduler, info: QueuedPodInfo) -> None:
    """Schedule the group of the popped pod ``info`` as a unit (upstream ``scheduleOnePodGroup``)."""
    pod = info.pod
    group = pod.scheduling_group
    assert group is not None
    infos = _take_group(sched, info, group)
    names = {i.pod.scheduler_name for i in infos}
    if len(names) > 1:
        a, b = sorted(names)[:2]
        message = (
            "all pods in a single pod group should have the same .spec.schedulerName set, "
            f'got: "{a}" and "{b}"'
        )
        for qi in infos:
            fwk = sched.profiles.get(qi.pod.scheduler_name)
            if fwk is None:
                sched.queue.done(qi.pod.uid)
                continue
            sched._handle_failure(fwk, qi, message, None, _outcome(sched, qi), error=True)
        return
    fwk = sched.profiles[pod.scheduler_name]
    kept = []
    for qi in infos:
        if sched.cache.pod_state(qi.pod.uid) is not None or is_terminating(qi.pod):
            sched.queue.done(qi.pod.uid)  # already assumed or bound, or being deleted
        else:
            kept.append(qi)
    if not kept:
        return
    pg = sched.informers.informer(POD_GROUP_STORE_KIND).get(pod.namespace, group)
    if sched.topology_aware_workloads and pg is not None:
        results, status = _placement_algorithm(sched, fwk, kept, pg)
    else:
        # With workload-aware preemption the group preempts as a unit, not pod by pod.
        results, status = _pod_group_algorithm(
            sched, fwk, kept, post_filters=not sched.workload_aware_preemption
        )
    if (
        sched.workload_aware_preemption
        and pg is not None
        and status is not None
        and status.code == Code.UNSCHEDULABLE
        and status.plugin != "preemption"
    ):
        status = _workload_aware_preemption(sched, fwk, kept, pg, status)
    _submit(sched, fwk, namespace=pod.namespace, name=group, results=results, infos=kept, status=status)


def _take_group(sched: Scheduler, info: QueuedPodInfo, group: str) -> list[QueuedPodInfo]:
    """The popped pod and every other unscheduled pod of its group the queue holds, highest
    priority first, then by first attempt (upstream ``podGroupInfoForPod``)."""
    pod = info.pod
    infos = [info]
    for other in sched.handle.pod_groups.state(pod.namespace, group).unscheduled_pods():
        if other.uid == pod.uid:
            continue
        taken = sched.queue.pop_specific(other.uid)
        if taken is not None:
            infos.append(taken)
    infos.sort(key=lambda i: (-i.pod.priority, i.initial_attempt_timestamp or 0.0, i.seq))
    return infos


def _outcome(sched: Scheduler, info: QueuedPodInfo) -> PodOutcome:
    pod = info.pod
    outcome = sched.outcomes.get(pod.uid)
    if outcome is None:
        outcome = PodOutcome(pod.namespace, pod.name, pod.uid, scheduler_name=pod.scheduler_name)
        sched.outcomes[pod.uid] = outcome
    outcome.attempts = info.attempts
    return outcome


def _pod_group_algorithm(
    sched: Scheduler, fwk: Framework, infos: list[QueuedPodInfo], *, post_filters: bool = True
) -> tuple[list[_PodResult], Status | None]:
    """Try every pod in order on one snapshot (upstream ``podGroupSchedulingDefaultAlgorithm``);
    returns each pod's result and the group's status: None (schedulable), Unschedulable or Error.
    Every placement made here is undone before it returns."""
    results: list[_PodResult] = []
    placed: list[_PodResult] = []
    status: Status | None = Status(Code.UNSCHEDULABLE, [POD_GROUP_UNSCHEDULABLE])
    waiting_on_preemption = False
    requires_preemption = False
    try:
        for qi in infos:
            if sched.metrics is not None and post_filters:
                sched.metrics.cycle_started(qi)
            res = _schedule_member(sched, fwk, qi, post_filters=post_filters)
            results.append(res)
            if res.error:
                # An error, not a rejection: no pod of the group is scheduled this time.
                status = Status.error(f"failed to schedule other pod from a pod group: {res.message}")
                waiting_on_preemption = False
                break
            if not res.node:
                continue  # rejected: the group may still be schedulable without it
            placed.append(res)
            requires_preemption = requires_preemption or res.requires_preemption
            if res.permit is None:
                if requires_preemption:
                    status = Status(Code.UNSCHEDULABLE, [POD_GROUP_UNSCHEDULABLE, WAITING_FOR_PREEMPTION])
                    waiting_on_preemption = True
                else:
                    status = None
    finally:
        for res in reversed(placed):
            _revert(sched, fwk, res)
    if waiting_on_preemption and status is not None:
        status.plugin = "preemption"
    return results, status


def _workload_aware_preemption(
    sched: Scheduler, fwk: Framework, infos: list[QueuedPodInfo], pg: SchedulingPodGroup, status: Status
) -> Status:
    """Preempt for the whole group (upstream ``runWorkloadAwarePreemption``): on success the group
    waits for its victims to go, else the group's status says why preemption did not help too."""
    preemption = fwk.plugins.get("DefaultPreemption")
    if not isinstance(preemption, DefaultPreemption):
        reason = "default preemption plugin is not registered, workload aware preemption is disabled"
        return Status(Code.UNSCHEDULABLE, [*status.reasons, reason])
    if pg.topology_keys:
        reason = "workload aware preemption is not supported for pod groups with scheduling constraints"
        return Status(Code.UNSCHEDULABLE, [*status.reasons, reason])

    def run() -> tuple[int, Status | None]:
        results, st = _pod_group_algorithm(sched, fwk, infos, post_filters=False)
        return sum(1 for r in results if r.node), st

    def remove(pods: Sequence[Pod]) -> None:
        for p in pods:
            sched.cache.remove_pod(p)

    def restore(pods: Sequence[Pod]) -> None:
        for p in pods:
            sched.cache.add_pod(p)

    bound = [st.pod for st in sched.cache.pods() if not st.assumed]
    pods = [i.pod for i in infos]
    nominator = sched.queue.nominator
    nominated = [n for n in (nominator.node_of(p.uid) for p in pods) if n]
    victims, st = select_victims(
        sched.handle,
        pg,
        pods,
        bound,
        GroupTrial(run, remove, restore),
        nominated,
        preemption.disruption_budgets(),
    )
    sched.cache.update_snapshot(sched.snapshot)
    if st is not None:
        if st.code == Code.ERROR:
            return st
        return Status(Code.UNSCHEDULABLE, [*status.reasons, st.message])
    preemption.evict_for_pod_group(fwk, pg, victims)
    # The group keeps its status and waits for the victims to go (upstream waitingOnPreemption).
    return Status(Code.UNSCHEDULABLE, list(status.reasons), "preemption")


def _placement_algorithm(
    sched: Scheduler, fwk: Framework, infos: list[QueuedPodInfo], pg: SchedulingPodGroup
) -> tuple[list[_PodResult], Status | None]:
    """Try the group on each placement the PlacementGenerate plugins give and keep the best
    feasible one by the PlacementScore plugins (upstream ``podGroupSchedulingPlacementAlgorithm``)."""
    table = sched.snapshot.table
    sched.cache.update_snapshot(sched.snapshot)
    placements = [Placement("", table.order)]
    for plugin in _plugins_at(fwk, ExtensionPoint.PLACEMENT_GENERATE):
        generated: list[Placement] = []
        for parent in placements:
            got, st = plugin.generate_placements(pg, parent)
            if st is not None:
                return [], Status.error(f"running PlacementGenerate plugin {plugin.name!r}: {st.message}")
            generated.extend(got)
        placements = generated
    first: tuple[list[_PodResult], Status | None] | None = None
    feasible: list[tuple[Placement, list[_PodResult], Status | None]] = []
    try:
        for placement in placements:
            # The placement's nodes in the table's order, once for all its pods.
            sched.placement = table.order[np.isin(table.order, placement.slots)]
            results, status = _pod_group_algorithm(sched, fwk, infos)
            if status is not None and status.code == Code.ERROR:
                return results, status
            if first is None:
                first = (results, status)
            if status is None or status.plugin == "preemption":
                feasible.append((placement, results, status))
    finally:
        sched.placement = None
    if not feasible:
        first_status = first[1].message if first is not None and first[1] is not None else ""
        message = f"0/{len(placements)} placements are available, first placement status: {first_status}"
        return (first[0] if first is not None else []), Status(Code.UNSCHEDULABLE, [message])
    if len(feasible) == 1:
        return feasible[0][1], feasible[0][2]
    best = _best_placement(sched, fwk, pg, feasible)
    return feasible[best][1], feasible[best][2]


def _plugins_at(fwk: Framework, point: ExtensionPoint) -> list[Any]:
    return [fwk.plugins[ref.name] for ref in fwk.profile.plugins.get(point, [])]


def _best_placement(
    sched: Scheduler,
    fwk: Framework,
    pg: SchedulingPodGroup,
    feasible: list[tuple[Placement, list[_PodResult], Status | None]],
) -> int:
    """The index of the best-scored feasible placement, ties broken at random (upstream
    ``findBestPlacement``): each PlacementScore plugin's scores, normalized where it can, times
    its weight in the profile."""
    assignments = [
        PodGroupAssignments(placement, [ProposedAssignment(r.info.pod, r.node) for r in results if r.node])
        for placement, results, _ in feasible
    ]
    totals = [0] * len(feasible)
    for ref in fwk.profile.plugins.get(ExtensionPoint.PLACEMENT_SCORE, []):
        plugin: Any = fwk.plugins[ref.name]
        scores = [int(plugin.score_placement(pg, a)) for a in assignments]
        normalize = getattr(plugin, "normalize_placement_scores", None)
        if normalize is not None:
            st = normalize(pg, scores)
            if st is not None:
                continue
        for i, score in enumerate(scores):
            totals[i] += score * (ref.weight or 1)
    best = max(totals)
    ties = [i for i, total in enumerate(totals) if total == best]
    return ties[0] if len(ties) == 1 else ties[int(sched.rng.integers(len(ties)))]


def _schedule_member(
    sched: Scheduler, fwk: Framework, info: QueuedPodInfo, *, post_filters: bool = True
) -> _PodResult:
    """One pod of the group: the scheduling algorithm, then assume, Reserve and Permit (upstream
    ``podGroupPodSchedulingAlgorithm``)."""
    pod = info.pod
    state = CycleState()
    res = _PodResult(info, state, _outcome(sched, info))
    # One scheduling cycle per pod, as each was popped (opportunistic batching reuses the last
    # pod's ranking for the next alike pod, which a gang of identical pods is).
    sched.cycle += 1
    sched.cache.update_snapshot(sched.snapshot)
    try:
        node = sched.schedule_pod(fwk, state, pod).node
    except FitError as fit:
        # Inside a placement no pod preempts (upstream: topology does not trigger preemption).
        nominated = (
            sched._run_post_filter(fwk, state, pod, fit.diagnosis)
            if post_filters and sched.placement is None
            else None
        )
        res.message, res.diagnosis, res.nominated = fit.diagnosis.message(), fit.diagnosis, nominated
        if not nominated:
            return res
        # Preemption made room: the pod counts as placed on its nominated node for the pods after
        # it, and the group waits for the victims to go.
        node, res.requires_preemption = nominated, True
    except NoNodesAvailable as exc:
        info.unschedulable_plugins = set()
        res.message = str(exc)
        return res
    except (SchedulingError, FrameworkError) as exc:
        res.message, res.error = str(exc), True
        return res
    assumed = copy.copy(pod)
    assumed.node_name = node
    sched.cache.assume_pod(assumed, node)
    # Assumed, the pod holds its node: its nomination would count it twice for the pods after it.
    res.held_nomination = sched.queue.nominator.node_of(pod.uid)
    if res.held_nomination:
        sched.queue.nominator.delete(pod.uid)
    res.node = node
    st = fwk.run_reserve(state, assumed, node)
    if st is not None:
        _revert(sched, fwk, res)
        res.node = ""
        res.message, res.error = st.message, st.code == Code.ERROR
        return res
    st, _ = fwk.run_permit(state, assumed, node)
    if st is not None and st.code != Code.WAIT:
        _revert(sched, fwk, res)
        res.node = ""
        res.message, res.error = st.message, st.code == Code.ERROR
        if st.is_rejected and st.plugin:
            info.unschedulable_plugins = {st.plugin}
        return res
    res.permit = st
    if not res.requires_preemption:
        res.message = ""
    return res


def _revert(sched: Scheduler, fwk: Framework, res: _PodResult) -> None:
    """Undo a pod's placement in this cycle: Unreserve and forget."""
    pod = res.info.pod
    assumed = copy.copy(pod)
    assumed.node_name = res.node
    fwk.run_unreserve(res.state, assumed, res.node)
    sched.cache.forget_pod(assumed)
    if res.held_nomination:
        sched.queue.nominator.add(pod, res.held_nomination)


def _submit(
    sched: Scheduler,
    fwk: Framework,
    *,
    namespace: str,
    name: str,
    results: list[_PodResult],
    infos: list[QueuedPodInfo],
    status: Status | None,
) -> None:
    """Act on the group's result (upstream ``submitPodGroupAlgorithmResult``), then write the
    PodGroup's condition."""
    by_uid = {r.info.pod.uid: r for r in results}
    waiting_on_preemption = status is not None and status.plugin == "preemption"
    for qi in infos:
        res = by_uid.get(qi.pod.uid)
        if res is None or (status is not None and status.code == Code.ERROR):
            message = status.message if status is not None else ""
            if res is not None and res.error:
                message = res.message
            sched._handle_failure(fwk, qi, message, None, _outcome(sched, qi), error=True)
            continue
        if res.placed and not res.requires_preemption:
            if status is None:
                _to_binding(sched, fwk, res)
            elif waiting_on_preemption:
                sched._handle_failure(fwk, qi, status.message, None, res.outcome, nominated_node=res.node)
            else:
                _reject(sched, fwk, res, _permit_message(res))
        elif res.requires_preemption and not waiting_on_preemption:
            _reject(sched, fwk, res, _permit_message(res))
        else:
            sched._handle_failure(
                fwk, qi, res.message, res.diagnosis, res.outcome, nominated_node=res.nominated
            )
    condition: dict[str, Any]
    if status is None:
        condition = {"type": POD_GROUP_SCHEDULED, "status": "True", "reason": REASON_SCHEDULED, "message": ""}
    elif status.code == Code.ERROR:
        condition = {
            "type": POD_GROUP_SCHEDULED,
            "status": "False",
            "reason": REASON_SCHEDULER_ERROR,
            "message": status.message,
        }
    else:
        condition = {
            "type": POD_GROUP_SCHEDULED,
            "status": "False",
            "reason": REASON_UNSCHEDULABLE,
            "message": status.message,
        }
    _set_condition(sched, namespace, name, condition)


def _permit_message(res: _PodResult) -> str:
    """A placed pod of an unschedulable group: the group's error, then why Permit held it."""
    permit = res.permit.message if res.permit is not None else ""
    return f"{POD_GROUP_UNSCHEDULABLE}, {permit}" if permit else POD_GROUP_UNSCHEDULABLE


def _reject(sched: Scheduler, fwk: Framework, res: _PodResult, message: str) -> None:
    """A pod that fits but whose group does not: requeued with no plugin to wait for, so it backs
    off and the group is tried again (upstream: an Unschedulable status with no plugin)."""
    res.info.unschedulable_plugins = set()
    res.info.pending_plugins = set()
    sched._handle_failure(fwk, res.info, message, None, res.outcome)


def _to_binding(sched: Scheduler, fwk: Framework, res: _PodResult) -> None:
    """Place the pod again for real and hand it to its binding cycle; Permit parks it until the
    gang is complete (upstream ``prepareForBindingCycle``)."""
    info, state = res.info, CycleState()
    pod = info.pod
    assumed = copy.copy(pod)
    assumed.node_name = res.node
    sched.cache.assume_pod(assumed, res.node)
    if sched.metrics is not None:
        sched.metrics.assumed(pod.uid)
    sched.queue.nominator.delete(pod.uid)
    task = BindingTask(fwk, state, info, assumed, res.node, res.outcome)
    st = fwk.run_reserve(state, assumed, res.node)
    if st is not None:
        sched._undo_assume(task, st)
        return
    st, waits = fwk.run_permit(state, assumed, res.node)
    if st is not None and st.code != Code.WAIT:
        sched._undo_assume(task, st)
        return
    if waits:
        now = sched.now()
        sched.handle.waiting_pods.add(
            WaitingPod(assumed, res.node, {p: now + t for p, t in waits.items()}, since=now)
        )
    sched._binding_tasks.append(task)


def _set_condition(sched: Scheduler, namespace: str, name: str, condition: dict[str, Any]) -> None:
    """Write the PodGroup's condition through the status port, unless it would take a True back
    to False (a later cycle for pods added to a scheduled group) or changes nothing."""
    writer = sched.ports.pod_group_conditions
    pg = sched.informers.informer(POD_GROUP_STORE_KIND).get(namespace, name)
    if writer is None or pg is None:
        return
    current = pg.condition(POD_GROUP_SCHEDULED)
    if current is not None and current.status == "True" and condition["status"] != "True":
        return
    generation = (pg.raw.get("metadata") or {}).get("generation") or 0
    if current is not None and (
        current.status,
        current.reason,
        current.message,
        current.observed_generation,
    ) == (condition["status"], condition["reason"], condition["message"], generation):
        return
    writer.set_pod_group_condition(namespace, name, {**condition, "observedGeneration": generation})
