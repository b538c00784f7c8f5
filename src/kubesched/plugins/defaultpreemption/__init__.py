"""DefaultPreemption: when a pod fits nowhere, evict lower-priority pods to make room (PostFilter).

Follows upstream ``Evaluator.Preempt``:

1. The pod must be eligible: not ``preemptionPolicy: Never``, and no victim of an earlier preemption
   still terminating on its nominated node (unless that node is now unresolvable for it).
2. Potential nodes are the ones the filters rejected as ``Unschedulable`` (not
   ``UnschedulableAndUnresolvable``: removing pods cannot fix a taint or a node selector).
3. A dry run from a random offset over the potential nodes finds candidates — nodes where evicting
   some lower-priority pods makes the pod fit — until it has ``numCandidates`` of them
   (``max(minCandidateNodesAbsolute, minCandidateNodesPercentage% of the potential nodes)``, at most
   all of them) including one that violates no PodDisruptionBudget. See :mod:`.dry_run`.
   Members of a running PodGroup are never evicted so as to leave it partially bound: a gang loses
   members only within its slack above ``minMember``, or all of them together (:mod:`.gangs`).
4. ``pickOneNodeForPreemption`` chooses one (:func:`.candidates.pick_one_node`).
5. The victims get a ``DisruptionTarget`` condition, a ``Preempted`` event and are deleted (a victim
   waiting at Permit is rejected instead; one already being deleted is left alone); pods of lower
   priority nominated to that node lose their nomination. The pod is nominated to the node and
   retried once the victims are gone.

When no node can be made to fit, the status is ``preemption: `` followed by the dry run's own
``0/N nodes are available: …`` summary, which the scheduler appends to the FitError message.
"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np
from numpy.typing import NDArray

from kubesched.api.objects import Pod
from kubesched.api.pdb import PodDisruptionBudget
from kubesched.cache.node_table import NodeTable
from kubesched.framework.cycle_state import POST_FILTER_EXPLAIN_KEY, CycleState
from kubesched.framework.diagnosis import NO_NODE_AVAILABLE_MSG, Diagnosis
from kubesched.framework.extender import ExtenderError, Victims, call_preemption_extenders
from kubesched.framework.plugin_args import DefaultPreemptionArgs
from kubesched.framework.status import Status
from kubesched.framework.types import ClusterEvent
from kubesched.plugins.defaultpreemption.budgets import DisruptionBudgets
from kubesched.plugins.defaultpreemption.candidates import Candidates, pick_one_node
from kubesched.plugins.defaultpreemption.dry_run import (
    DryRunInput,
    DryRunResult,
    dry_run_fast,
    dry_run_generic,
    fast_path_applies,
)
from kubesched.plugins.defaultpreemption.gangs import GangGuard
from kubesched.plugins.defaultpreemption.victims import NodePodColumns, start_time

if TYPE_CHECKING:
    from kubesched.framework.runtime import Framework

#: Status of the nodes preemption did not examine because removing pods cannot help there.
NOT_HELPFUL = "Preemption is not helpful for scheduling"
NOT_ELIGIBLE_NEVER = "not eligible due to preemptionPolicy=Never."
NOT_ELIGIBLE_TERMINATING = "not eligible due to a terminating pod on the nominated node."


def num_candidates(args: DefaultPreemptionArgs, num_nodes: int) -> int:
    """Upstream ``calculateNumCandidates``."""
    n = num_nodes * args.min_candidate_nodes_percentage // 100
    n = max(n, args.min_candidate_nodes_absolute)
    return min(n, num_nodes)


def fit_error_message(num_all: int, reasons: Counter[str], explicit: int) -> str:
    """Upstream ``FitError.Error()`` for the dry run's statuses; nodes without one count as
    "Preemption is not helpful for scheduling"."""
    counts = Counter(reasons)
    if num_all > explicit:
        counts[NOT_HELPFUL] += num_all - explicit
    msg = NO_NODE_AVAILABLE_MSG.format(num_all) + ":"
    parts = sorted(f"{n} {reason}" for reason, n in counts.items() if n)
    if parts:
        msg += f" {', '.join(parts)}."
    return msg


def terminating_by_preemption(pod: Pod) -> bool:
    """Upstream ``podTerminatingByPreemption``: being deleted, with the scheduler's DisruptionTarget."""
    if not (pod.raw.get("metadata") or {}).get("deletionTimestamp"):
        return False
    for cond in (pod.raw.get("status") or {}).get("conditions") or ():
        if cond.get("type") == "DisruptionTarget":
            return bool(cond.get("status") == "True" and cond.get("reason") == "PreemptionByScheduler")
    return False


def potential_nodes(diagnosis: Diagnosis, table: NodeTable) -> NDArray[np.int64]:
    """Slots (in node order) whose status is Unschedulable: where removing pods might help."""
    order = table.order
    if diagnosis.pre_filter_msg:
        return order if not diagnosis.pre_filter_unresolvable else order[:0]
    if diagnosis.failed_by is None:
        return order[:0]
    mask = diagnosis.failed_by >= 0
    if diagnosis.evaluated is not None:
        mask = mask & diagnosis.evaluated
    if diagnosis.unresolvable is not None:
        mask = mask & ~diagnosis.unresolvable
    return order[mask[order]]


def _node_unresolvable(diagnosis: Diagnosis, slot: int | None) -> bool:
    """Is the node's status in the diagnosis UnschedulableAndUnresolvable? Nodes without a status
    (not evaluated, or gone) read as unresolvable, like upstream's absent-node status."""
    if slot is None:
        return True
    if diagnosis.pre_filter_msg:
        return diagnosis.pre_filter_unresolvable
    if diagnosis.failed_by is None or diagnosis.failed_by[slot] < 0:
        return True
    if diagnosis.evaluated is not None and not diagnosis.evaluated[slot]:
        return True
    return bool(diagnosis.unresolvable is not None and diagnosis.unresolvable[slot])


class DefaultPreemption:
    name: ClassVar[str] = "DefaultPreemption"

    def __init__(self, args: DefaultPreemptionArgs | None, handle: Any) -> None:
        self.args = args or DefaultPreemptionArgs()
        self.handle = handle
        self.fwk: Framework | None = None
        self.columns = NodePodColumns()
        #: Tests set this to compare the vectorized dry run with the literal one.
        self.force_generic = False
        #: Which dry run the latest preemption used ("fast", "generic"; "" before any).
        self.last_dry_run = ""
        #: Opened at the first preemption: until then nothing needs the budgets.
        self._budgets: DisruptionBudgets | None = None

    def set_framework(self, framework: Any) -> None:
        self.fwk = framework

    def pre_enqueue(self, pod: Pod) -> Status | None:
        # Upstream holds a pod back while its asynchronous preemption is still evicting victims.
        # Here preemption finishes inside the pod's own cycle, so no pod is ever waiting for one.
        return None

    def events_to_register(self) -> list[ClusterEvent]:
        # PostFilter never rejects a pod itself; the Filter plugins that did name the events (upstream
        # registers pod deletions with a hint that always answers QueueSkip, to the same effect).
        return []

    # -- PostFilter ------------------------------------------------------------------------------
    def post_filter(self, state: CycleState, pod: Pod, diagnosis: Diagnosis) -> tuple[str | None, Status]:
        nominated, status = self._preempt(state, pod, diagnosis)
        if status.message:
            status = Status(status.code, [f"preemption: {status.message}"], self.name)
        status.plugin = self.name
        return nominated, status

    def _preempt(self, state: CycleState, pod: Pod, diagnosis: Diagnosis) -> tuple[str | None, Status]:
        fwk = self.fwk
        if fwk is None:
            return None, Status.error("DefaultPreemption was not given its framework")
        snapshot = self.handle.snapshot
        table: NodeTable = snapshot.table
        ok, why = self.eligible(pod, diagnosis)
        if not ok:
            return None, Status.unschedulable(why)
        num_all = len(table.order)
        potential = potential_nodes(diagnosis, table)
        if len(potential) == 0:
            result = None
        else:
            pdbs, allowed = self.disruption_budgets()
            offset = int(self.handle.rng.integers(len(potential)))
            rotated = np.concatenate([potential[offset:], potential[:offset]])
            inp = DryRunInput(
                fwk,
                state,
                pod,
                diagnosis,
                rotated,
                num_candidates(self.args, len(potential)),
                pdbs,
                allowed,
                GangGuard.build(self.handle.informers.informer("PodGroup").list(), snapshot.node_infos),
            )
            result = self.dry_run(inp)
        if result is None or len(result.candidates) == 0:
            if result is not None and result.errors:
                return None, Status.error(result.errors[0])
            reasons = result.reasons if result is not None else Counter()
            explicit = result.failed_nodes if result is not None else 0
            # Clear any earlier nomination: the pod cannot run anywhere even with preemption.
            return "", Status.unschedulable(fit_error_message(num_all, reasons, explicit))
        candidates = result.candidates
        if fwk.extenders:
            try:
                candidates = self.call_extenders(fwk, pod, candidates, table)
            except ExtenderError as exc:
                return None, Status.error(str(exc))
            if len(candidates) == 0:
                return None, Status.unschedulable("no candidate node for preemption")
        best = pick_one_node(candidates)
        slot = int(candidates.slots[best])
        node = table.names[slot]
        victims = candidates.victims_of(best)
        self.prepare_candidate(fwk, pod, node, victims)
        state.write(
            POST_FILTER_EXPLAIN_KEY,
            {"nominatedNode": node, "victims": [f"{v.namespace}/{v.name}" for v in victims]},
        )
        return node, Status.success()

    def call_extenders(
        self, fwk: Framework, pod: Pod, candidates: Candidates, table: NodeTable
    ) -> Candidates:
        """Upstream callExtenders: preempting extenders may drop candidates or change their victims.
        Candidates keep their order; a victim list is ordered most important pod first."""
        if not any(e.supports_preemption() and e.is_interested(pod) for e in fwk.extenders):
            return candidates
        order = [table.names[int(s)] for s in candidates.slots]
        victims = {
            name: Victims(candidates.victims_of(i), int(candidates.pdb_violations[i]))
            for i, name in enumerate(order)
        }
        result = call_preemption_extenders(fwk.extenders, pod, victims, _SnapshotPods(self.handle.snapshot))
        names = [n for n in order if n in result] + sorted(n for n in result if n not in victims)
        return Candidates.from_lists(
            [
                (
                    table.slot_of[n],
                    sorted(result[n].pods, key=lambda p: (-p.priority, start_time(p))),
                    result[n].num_pdb_violations,
                )
                for n in names
                if n in table.slot_of
            ]
        )

    def dry_run(self, inp: DryRunInput) -> DryRunResult:
        # The vectorized put-back loop moves one pod at a time: gangs that must stay whole take the
        # literal path.
        if (
            inp.gangs is None
            and not self.force_generic
            and fast_path_applies(inp.fwk, inp.state, inp.pod, inp.diagnosis)
        ):
            self.last_dry_run = "fast"
            return dry_run_fast(inp, self.columns)
        self.last_dry_run = "generic"
        return dry_run_generic(inp)

    # -- eligibility -----------------------------------------------------------------------------
    def eligible(self, pod: Pod, diagnosis: Diagnosis) -> tuple[bool, str]:
        """Upstream ``PodEligibleToPreemptOthers``."""
        if pod.preemption_policy == "Never":
            return False, NOT_ELIGIBLE_NEVER
        assert self.fwk is not None
        nominated = self.fwk.nominator.node_of(pod.uid)
        if nominated:
            table: NodeTable = self.handle.snapshot.table
            if _node_unresolvable(diagnosis, table.slot_of.get(nominated)):
                return True, ""
            info = self.handle.snapshot.node_infos.get(nominated)
            if info is not None:
                for p in info.pods.values():
                    if p.priority < pod.priority and terminating_by_preemption(p):
                        return False, NOT_ELIGIBLE_TERMINATING
        return True, ""

    # -- PodDisruptionBudgets --------------------------------------------------------------------
    def disruption_budgets(self) -> tuple[list[PodDisruptionBudget], list[int]]:
        """The budgets and the disruptions each allows now (kept from one preemption to the next)."""
        informers = self.handle.informers
        budgets = self._budgets
        if budgets is None or budgets.informers is not informers:
            if budgets is not None:
                budgets.close()
            budgets = self._budgets = DisruptionBudgets(informers)
        return budgets.current()

    # -- acting on the choice --------------------------------------------------------------------
    def evict_for_pod_group(self, fwk: Framework, pg: Any, victims: list[Pod]) -> None:
        """Evict the victims workload-aware preemption chose for a pod group, as for a pod."""
        ports = self.handle.ports
        for victim in victims:
            if (victim.raw.get("metadata") or {}).get("deletionTimestamp"):
                continue
            evicted = ports.evictor.evict(
                victim.namespace,
                victim.name,
                "PreemptionByScheduler",
                f"{fwk.profile_name}: preempting to accommodate a higher priority pod group",
            )
            if evicted:
                ports.events.record(
                    victim.raw,
                    "Normal",
                    "Preempted",
                    "Preempting",
                    f"Preempted by pod group {pg.namespace}/{pg.name}",
                    fwk.profile_name,
                )

    def prepare_candidate(self, fwk: Framework, pod: Pod, node: str, victims: list[Pod]) -> None:
        """Upstream ``prepareCandidate``: evict the victims, then drop the nominations of
        lower-priority pods on the node (they may no longer fit there)."""
        ports = self.handle.ports
        for victim in victims:
            if (victim.raw.get("metadata") or {}).get("deletionTimestamp"):
                continue  # graceful deletion already under way: no second call, no event (upstream)
            waiting = self.handle.waiting_pods.get(victim.uid)
            if waiting is not None:
                waiting.reject(self.name, "preempted")
            else:
                evicted = ports.evictor.evict(
                    victim.namespace,
                    victim.name,
                    "PreemptionByScheduler",
                    f"{pod.scheduler_name}: preempting to accommodate a higher priority pod",
                )
                if not evicted:
                    continue  # already gone: nothing to evict, and upstream records no event
            ports.events.record(
                victim.raw,
                "Normal",
                "Preempted",
                "Preempting",
                f"Preempted by pod {pod.uid} on node {node}",
                fwk.profile_name,
            )
        for other in fwk.nominator.pods_for_node(node):
            if other.priority < pod.priority:
                fwk.nominator.delete(other.uid)
                cleared = {"type": "PodScheduled", "status": "False"}
                ports.pod_status.set_pod_condition(other.namespace, other.name, cleared, nominated_node="")


class _SnapshotPods:
    """Pods on a node of the cycle's snapshot, for turning an extender's victim UIDs into pods."""

    def __init__(self, snapshot: Any) -> None:
        self.snapshot = snapshot

    def pods_on(self, node: str) -> dict[str, Pod] | None:
        info = self.snapshot.node_infos.get(node)
        return None if info is None else info.pods


__all__ = ["Candidates", "DefaultPreemption", "num_candidates"]
