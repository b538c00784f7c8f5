"""The scheduling cycle of one pod (upstream ``pkg/scheduler/schedule_one.go``, up to the binding
cycle).

One call of :func:`schedule_one` takes the pod at the head of the queue: snapshot →
PreFilter → Filter (vectorized over the NodeTable, with upstream's rotating start index and adaptive
node count) → PostFilter on failure → PreScore/Score/Normalize → selectHost (random among ties) →
assume → Reserve → Permit, and hands the pod to its binding cycle
(:mod:`~kubesched.scheduler.binding`). A pod that finds no node, or whose plugins fail, is requeued
and told why (:func:`handle_failure`).

The steps are functions of the scheduler, taken in as its methods by
:class:`~kubesched.scheduler.scheduler.Scheduler`: a step calls the next through the scheduler
(``sched.prioritize_nodes(...)``), so a test can replace one step on an instance.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from kubesched.api.objects import Pod
from kubesched.cache.node_table import NodeTable
from kubesched.framework.cycle_state import POST_FILTER_EXPLAIN_KEY, CycleState
from kubesched.framework.diagnosis import Diagnosis, FitError, NoNodesAvailable
from kubesched.framework.node_count import num_feasible_nodes_to_find
from kubesched.framework.outcome import PENDING, UNSCHEDULABLE, PodOutcome
from kubesched.framework.runtime import Framework, FrameworkError, PluginError, ScoreDetails
from kubesched.framework.status import Code, Status
from kubesched.framework.types import BoolArray, FilterWalk, IntArray, QueuedPodInfo, all_true, none_failed
from kubesched.framework.waiting_pods import WaitingPod
from kubesched.scheduler.binding import BindingTask
from kubesched.scheduler.extenders import (
    ExtenderFailures,
    add_extender_failures,
    extender_scores,
    find_nodes_that_pass_extenders,
)

if TYPE_CHECKING:
    from kubesched.scheduler.scheduler import Scheduler


class SchedulingError(Exception):
    """A plugin failed with Error (not a rejection): the pod backs off and is retried."""


@dataclass(slots=True)
class ScheduleResult:
    node: str
    evaluated_nodes: int
    feasible_nodes: int


def schedule_one(sched: Scheduler) -> bool:
    """Run one scheduling cycle. Returns False when activeQ is empty."""
    info = sched.queue.pop()
    if info is None:
        return False
    pod = info.pod
    if pod.scheduling_group is not None and sched.generic_workload:
        sched.schedule_one_pod_group(info)
        sched.run_binding_cycles()
        return True
    fwk = sched.profiles[pod.scheduler_name]
    sched.cycle += 1
    if sched.cache.pod_state(pod.uid) is not None:
        sched.queue.done(pod.uid)  # already assumed or bound
        return True
    if sched.metrics is not None:
        sched.metrics.cycle_started(info)
    state = CycleState()
    sched.cache.update_snapshot(sched.snapshot)
    outcome = sched.outcomes.get(pod.uid)
    if outcome is None:
        outcome = PodOutcome(pod.namespace, pod.name, pod.uid, scheduler_name=pod.scheduler_name)
        sched.outcomes[pod.uid] = outcome
    outcome.attempts = info.attempts
    try:
        result = sched.schedule_pod(fwk, state, pod)
    except FitError as fit:
        nominating = sched._run_post_filter(fwk, state, pod, fit.diagnosis)
        sched._handle_failure(
            fwk, info, fit.diagnosis.message(), fit.diagnosis, outcome, nominated_node=nominating
        )
        return True
    except NoNodesAvailable as exc:
        info.unschedulable_plugins = set()
        sched._handle_failure(fwk, info, str(exc), None, outcome)
        return True
    except (SchedulingError, FrameworkError) as exc:
        sched._handle_failure(fwk, info, str(exc), None, outcome, error=True)
        return True

    assumed = copy.copy(pod)
    assumed.node_name = result.node
    sched.cache.assume_pod(assumed, result.node)
    if sched.metrics is not None:
        sched.metrics.assumed(pod.uid)
    # The pod holds its node now: a nomination would count it twice (upstream assume()).
    sched.queue.nominator.delete(pod.uid)
    task = BindingTask(fwk, state, info, assumed, result.node, outcome)
    st = fwk.run_reserve(state, assumed, result.node)
    if st is not None:
        sched._undo_assume(task, st)
        return True
    st, waits = fwk.run_permit(state, assumed, result.node)
    if st is not None and st.code != Code.WAIT:
        sched._undo_assume(task, st)
        return True
    if waits:
        now = sched.now()
        sched.handle.waiting_pods.add(
            WaitingPod(assumed, result.node, {p: now + t for p, t in waits.items()}, since=now)
        )
    # The binding cycle runs apart from the scheduling cycle (upstream: in its own goroutine);
    # the next pod's cycle already sees this pod assumed on its node.
    sched._binding_tasks.append(task)
    # In the embedded runtime a binding cycle takes no virtual time: run the ones that can go.
    sched.run_binding_cycles()
    return True


def undo_assume(sched: Scheduler, task: BindingTask, st: Status) -> None:
    """Reserve or Permit said no: unreserve, forget the assumed pod and requeue it."""
    task.fwk.run_unreserve(task.state, task.assumed, task.node)
    sched.cache.forget_pod(task.assumed)
    if st.is_rejected and st.plugin:
        task.info.unschedulable_plugins = {st.plugin}
    sched._handle_failure(task.fwk, task.info, st.message, None, task.outcome, error=st.code == Code.ERROR)


def schedule_pod(sched: Scheduler, fwk: Framework, state: CycleState, pod: Pod) -> ScheduleResult:
    """Find the node for a pod (upstream ``schedulePod``)."""
    table = sched.snapshot.table
    if sched.snapshot.num_nodes == 0:
        raise NoNodesAvailable()
    sched._hint, sched._signature = None, None
    feasible, evaluated = sched.find_nodes_that_fit(fwk, state, pod)
    explain = sched.explain
    if len(feasible) == 1:
        if explain is not None:
            explain.record_scores(pod, table, feasible, None, None)
        sched._store_batch(fwk, int(feasible[0]), None)
        return ScheduleResult(table.names[int(feasible[0])], evaluated, 1)
    details = ScoreDetails() if explain is not None else None
    scores = sched.prioritize_nodes(fwk, state, pod, feasible, details)
    if explain is not None:
        explain.record_scores(pod, table, feasible, scores, details)
    slot = sched.select_host(feasible, scores)
    sched._store_batch(fwk, slot, (feasible, scores))
    return ScheduleResult(table.names[slot], evaluated, len(feasible))


# -- opportunistic batching hooks --------------------------------------------------------------
def batch_hint(sched: Scheduler, fwk: Framework, state: CycleState, pod: Pod) -> None:
    """After PreFilter: ask the profile's batch for a hinted node (upstream GetNodeHint)."""
    table = sched.snapshot.table

    def last_node_rejects(node: str) -> bool | None:
        slot = table.slot_of.get(node)
        if slot is None or not table.valid[slot]:
            return None
        rows = np.zeros(table.capacity, dtype=np.bool_)
        rows[slot] = True
        try:
            if fwk.rows_walk_possible(state):
                # One row's verdict: the Filters that can judge it alone need not read the others.
                ok = fwk.run_filters_on_rows(state, pod, table, np.array([slot], dtype=np.int64), rows, {})
                return ok is not None and not bool(ok[0])
            passed, _, _ = fwk.run_filters(state, pod, table, rows)
        except (FrameworkError, KeyError, ValueError):
            return False  # an error is not a rejection (upstream IsRejected)
        return not bool(passed[slot])

    batch = sched.batches[fwk.profile_name]
    sched._signature = batch.sign(pod)
    sched._hint = batch.node_hint(sched._signature, sched.cycle, sched.now(), last_node_rejects)


def store_batch(
    sched: Scheduler, fwk: Framework, slot: int, scored: tuple[IntArray, IntArray] | None
) -> None:
    """After choosing a node: keep the cycle's other scored nodes (upstream StoreScheduleResults)."""
    batch = sched.batches[fwk.profile_name]
    if batch.disabled:
        return
    table = sched.snapshot.table
    others = None
    if scored is not None and sched._signature is not None:
        feasible, scores = scored
        keep = feasible != slot
        others = (feasible[keep], scores[keep])
    hinted = table.names[sched._hint] if sched._hint is not None else None
    batch.store(sched._signature, hinted, table.names[slot], sched.cycle, sched.now(), others)


def find_nodes_that_fit(
    sched: Scheduler, fwk: Framework, state: CycleState, pod: Pod
) -> tuple[IntArray, int]:
    """Feasible slots in evaluation order, and how many nodes were evaluated."""
    table = sched.snapshot.table
    order = table.order
    if sched.placement is not None:
        # A pod group cycle trying one placement: only its nodes exist for this pod (in the
        # table's order, as the cycle set them).
        order = sched.placement
    num_all = len(order)
    pre_res, st, involved = fwk.run_pre_filter(state, pod, sched.snapshot)
    if st is not None:
        raise _pre_filter_failure(sched, pod, st, involved, num_all)

    sched._batch_hint(fwk, state, pod)
    nominated = sched._evaluate_nominated_node(fwk, state, pod, sched._hint)
    if nominated is not None:
        return nominated, 1

    absent_reason = ""
    nodes = order
    if pre_res is not None and pre_res.node_names is not None:
        keep = np.fromiter((table.slot_of.get(n, -1) for n in sorted(pre_res.node_names)), dtype=np.int64)
        keep = keep[keep >= 0]
        nodes = order[np.isin(order, keep)]
        absent_reason = f"node(s) didn't satisfy plugin(s) [{' '.join(sorted(involved))}]"

    if nodes is table.order:
        candidates = sched._order_mask(table)
    else:
        candidates = np.zeros(table.capacity, dtype=np.bool_)
        candidates[nodes] = True

    n = len(nodes)
    # A profile's own percentage (0 included: "adaptive") wins over the global one.
    pct = fwk.percentage_of_nodes_to_score
    if pct is None:
        pct = sched.config.percentage_of_nodes_to_score
    to_find = num_feasible_nodes_to_find(pct, n)
    if not fwk.score and not any(e.is_filter() or e.is_prioritizer() for e in sched.extenders):
        # Nothing to rank the feasible nodes by and no extender to narrow them: the first one
        # found will do (upstream hasScoring, hasExtenderFilters).
        to_find = min(to_find, 1)
    start = sched.next_start_node_index % n if n else 0
    if to_find < n and sched.explain is None and not sched.extenders and fwk.rows_walk_possible(state):
        # Most cycles find their nodes near the start: judge rows in chunks along the walk and
        # stop there. Only a cycle that would walk every row (too few nodes fit; the diagnosis
        # then needs every row's reasons) falls through to the evaluation of all rows.
        try:
            walked = _walk_in_chunks(fwk, state, pod, table, candidates, nodes, start, to_find)
        except PluginError:
            raise
        except (FrameworkError, KeyError, ValueError) as exc:
            raise SchedulingError(f"running Filter plugins: {exc}") from exc
        if walked is not None:
            feasible, num_processed = walked
            sched.next_start_node_index = (sched.next_start_node_index + num_processed) % num_all
            return feasible, num_processed
    # Filters that search per node stop where the walk below will stop, as upstream's
    # stops evaluating nodes once it has found enough feasible ones.
    walk = FilterWalk(nodes, start, to_find, all_true(table.capacity)) if to_find < n else None
    try:
        feasible_mask, results, failed_by = fwk.run_filters_with_nominated_pods(
            state, pod, table, candidates, walk
        )
    except PluginError:
        raise  # already names the plugin and the extension point
    except (FrameworkError, KeyError, ValueError) as exc:
        raise SchedulingError(f"running Filter plugins: {exc}") from exc

    all_passed = failed_by is none_failed(table.capacity)
    feasible, num_processed = _walk_from_start(nodes, None if all_passed else feasible_mask, start, to_find)
    if num_all:
        # Upstream advances modulo the number of *all* nodes, even when a PreFilterResult
        # narrowed the search to a subset.
        sched.next_start_node_index = (sched.next_start_node_index + num_processed) % num_all

    failures = None
    if len(feasible) and sched.extenders:
        feasible, failures = sched._run_extender_filters(pod, feasible)
    if len(feasible) == 0 or sched.explain is not None or failures is not None:
        processed = np.roll(nodes, -start)[:num_processed]
        evaluated = np.zeros(table.capacity, dtype=np.bool_)
        evaluated[processed] = True
        diag = fwk.diagnose(num_all, results, failed_by, evaluated)
        if absent_reason:
            diag.absent_reason = absent_reason
            diag.absent_count = num_all - n
        if failures is not None:
            add_extender_failures(diag, table, failures)
        if sched.explain is not None:
            sched.explain.record_filters(
                pod, table, processed, diag, diag.results, diag.plugins, feasible_mask
            )
        if len(feasible) == 0:
            raise FitError(pod.key, diag)
    return feasible, num_processed


def order_mask(sched: Scheduler, table: NodeTable) -> BoolArray:
    """The candidate mask of all of ``table.order``, rebuilt only when the order changes."""
    cached = sched._order_masks
    if cached is not None and cached[0] is table.order and cached[1] is table:
        return cached[2]
    mask = np.zeros(table.capacity, dtype=np.bool_)
    mask[table.order] = True
    mask.flags.writeable = False
    sched._order_masks = (table.order, table, mask)
    return mask


def run_extender_filters(
    sched: Scheduler, pod: Pod, feasible: IntArray
) -> tuple[IntArray, ExtenderFailures | None]:
    """The feasible slots the filter extenders keep, and why they dropped the others (None when
    no extender dropped any)."""
    table = sched.snapshot.table
    names = [table.names[s] for s in feasible.tolist()]
    kept, failures = find_nodes_that_pass_extenders(sched.extenders, pod, names, sched._node_object)
    if not failures.dropped and not failures.by_node:
        return (feasible if kept == names else _slots(table, kept)), None
    return _slots(table, kept), failures


def node_object(sched: Scheduler, name: str) -> Mapping[str, Any]:
    info = sched.snapshot.node_infos.get(name)
    node = info.node if info is not None else None
    return node.raw if node is not None else {"metadata": {"name": name}}


def evaluate_nominated_node(
    sched: Scheduler, fwk: Framework, state: CycleState, pod: Pod, hint: int | None = None
) -> IntArray | None:
    """A pod nominated by an earlier preemption tries that node first (upstream
    evaluateNominatedNode): when it fits there, it is the only feasible node. Without a
    nomination, a batching hint is tried the same way."""
    table = sched.snapshot.table
    nominated = sched.queue.nominator.node_of(pod.uid)
    slot = table.slot_of.get(nominated) if nominated else hint
    if slot is None or not table.valid[slot]:
        return None
    rows = np.zeros(table.capacity, dtype=np.bool_)
    rows[slot] = True
    if sched.explain is None and not sched.extenders and fwk.rows_walk_possible(state):
        # Only the verdict counts here: the Filters that can judge the one row alone need not look
        # at the others (no nominated pod to add, no explain detail to record).
        try:
            ok = fwk.run_filters_on_rows(state, pod, table, np.array([slot], dtype=np.int64), rows, {})
        except PluginError:
            raise
        except (FrameworkError, KeyError, ValueError) as exc:
            raise SchedulingError(f"running Filter plugins: {exc}") from exc
        return np.array([slot], dtype=np.int64) if ok is None or ok[0] else None
    try:
        passed, results, failed_by = fwk.run_filters_with_nominated_pods(state, pod, table, rows)
    except PluginError:
        raise  # already names the plugin and the extension point
    except (FrameworkError, KeyError, ValueError) as exc:
        raise SchedulingError(f"running Filter plugins: {exc}") from exc
    if not passed[slot]:
        return None
    feasible = np.array([slot], dtype=np.int64)
    failures = None
    if sched.extenders:
        feasible, failures = sched._run_extender_filters(pod, feasible)
        if len(feasible) == 0:
            return None
    if sched.explain is not None:
        diag = fwk.diagnose(len(table.order), results, failed_by, rows)
        if failures is not None:
            add_extender_failures(diag, table, failures)
        sched.explain.record_filters(pod, table, feasible, diag, diag.results, diag.plugins, passed)
    return feasible


def prioritize_nodes(
    sched: Scheduler,
    fwk: Framework,
    state: CycleState,
    pod: Pod,
    feasible: IntArray,
    details: ScoreDetails | None,
) -> IntArray:
    table = sched.snapshot.table
    if not fwk.score and not sched.extenders:
        return np.ones(len(feasible), dtype=np.int64)
    st = fwk.run_pre_score(state, pod, table, feasible)
    if st is not None:
        raise SchedulingError(f"running PreScore plugin {st.plugin!r}: {st.message}")
    total = fwk.run_score(state, pod, table, feasible, details)
    if sched.extenders:
        names = [table.names[s] for s in feasible.tolist()]
        for name, scores in extender_scores(sched.extenders, pod, names, sched._node_object).items():
            total += scores
            if details is not None:
                # Explain shows the extender's final contribution (score x weight x 10) as is.
                details.raw[name] = scores
                details.normalized[name] = scores
                details.weights[name] = 1
    return total


def select_host(sched: Scheduler, feasible: IntArray, scores: IntArray) -> int:
    """The highest-scoring node; ties are broken uniformly at random (seeded in simulation), or by
    the smallest node name where the scheduler is told to (``tie_break_by_name``)."""
    best = scores.max()
    is_best = scores == best
    num_ties = int(np.count_nonzero(is_best))
    if num_ties == 1:
        return int(feasible[int(is_best.argmax())])
    if sched.tie_break_by_name:
        names = sched.snapshot.table.names
        return min((int(feasible[t]) for t in np.flatnonzero(is_best)), key=lambda slot: names[slot])
    tie = int(sched.rng.integers(num_ties))
    # Where every node ties (a uniform cluster) the tie's index is the node's: no index array.
    pick = tie if num_ties == len(scores) else int(np.flatnonzero(is_best)[tie])
    return int(feasible[pick])


def run_post_filter(
    sched: Scheduler, fwk: Framework, state: CycleState, pod: Pod, diagnosis: Diagnosis
) -> str | None:
    """Run PostFilter (preemption); returns the nominating decision: a node name to nominate the
    pod to, "" to clear its nomination, None to leave it as it is."""
    if not fwk.post_filter:
        # Upstream returns no nominating info here: an earlier nomination stays as it is.
        return None
    try:
        nominated, st = fwk.run_post_filter(state, pod, diagnosis)
    except (FrameworkError, KeyError, ValueError) as exc:
        nominated, st = None, Status.error(f"running PostFilter plugins: {exc}")
    diagnosis.post_filter_msg = st.message
    if sched.metrics is not None:
        sched.metrics.post_filter_done(fwk.post_filter, state)
    if sched.explain is not None:
        sched.explain.record_post_filter(pod, st, state.get(POST_FILTER_EXPLAIN_KEY))
    return nominated


def handle_failure(
    sched: Scheduler,
    fwk: Framework,
    info: QueuedPodInfo,
    message: str,
    diagnosis: Diagnosis | None,
    outcome: PodOutcome,
    *,
    error: bool = False,
    nominated_node: str | None = "",
) -> None:
    """Requeue the pod, and tell the user why (event + PodScheduled condition), like upstream.

    ``nominated_node``: a node to nominate the pod to, "" to clear its nomination (the default,
    upstream clearNominatedNode), None to leave it unchanged.
    """
    pod = info.pod
    if sched.metrics is not None:
        sched.metrics.attempt_failed(fwk.profile_name, info, error=error)
    current = sched._pods.get(pod.namespace, pod.name)
    if current is None or current.uid != pod.uid:
        # Deleted (or replaced) while it was being scheduled or bound: nothing to requeue or
        # report (upstream: "Pod doesn't exist in informer cache").
        sched.queue.done(pod.uid)
        return
    if diagnosis is not None:
        info.unschedulable_plugins = set(diagnosis.unschedulable_plugins)
        info.pending_plugins = set(diagnosis.pending_plugins)
    if current.node_name:
        # Bound meanwhile (by another writer, or a bind whose answer was lost): not requeued
        # (upstream: "Pod has been assigned to node. Abort adding it back to queue.").
        sched.queue.done(pod.uid)
    else:
        sched.queue.add_unschedulable(info, error=error)
    if nominated_node is not None:
        if not nominated_node and not sched.queue.nominator.node_of(pod.uid):
            nominated_node = None  # nothing to clear: no status write
        else:
            sched.queue.nominator.add(pod, nominated_node)
    reason = "SchedulerError" if error else "Unschedulable"
    outcome.status = UNSCHEDULABLE if not error else PENDING
    outcome.message = message
    outcome.node = None
    sched.ports.events.record(pod.raw, "Warning", "FailedScheduling", "Scheduling", message, fwk.profile_name)
    sched.ports.pod_status.set_pod_condition(
        pod.namespace,
        pod.name,
        {"type": "PodScheduled", "status": "False", "reason": reason, "message": message},
        nominated_node=nominated_node,
    )


def _pre_filter_failure(sched: Scheduler, pod: Pod, st: Status, involved: set[str], num_all: int) -> FitError:
    """PreFilter rejected the pod: the FitError that says why (an Error is no rejection: the pod
    backs off instead)."""
    if st.code == Code.ERROR or not st.is_rejected:
        raise SchedulingError(f"running PreFilter plugin {st.plugin!r}: {st.message}")
    diag = Diagnosis(
        num_all,
        pre_filter_msg=st.message,
        unschedulable_plugins=involved or {st.plugin},
        pre_filter_unresolvable=st.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
    )
    if sched.explain is not None:
        sched.explain.record_pre_filter(pod, st)
    return FitError(pod.key, diag)


def _walk_from_start(
    nodes: IntArray, feasible_mask: BoolArray | None, start: int, to_find: int
) -> tuple[IntArray, int]:
    """The feasible slots found walking ``nodes`` from ``start`` round to ``start - 1``, stopping
    at the node where the ``to_find``-th one was found, like the upstream loop; and how many nodes
    the walk processed. ``feasible_mask`` None: no Filter rejected a candidate."""
    n = len(nodes)
    if feasible_mask is None:
        # The usual cycle: the first to_find nodes from the start are the feasible ones.
        num_processed = min(to_find, n)
        end = start + num_processed
        feasible = nodes[start:end] if end <= n else np.concatenate((nodes[start:], nodes[: end - n]))
        return feasible, num_processed
    # Positions are indexes into ``nodes``.
    positions = np.flatnonzero(feasible_mask[nodes])
    split = int(np.searchsorted(positions, start))
    after = len(positions) - split
    if after >= to_find:
        chosen = positions[split : split + to_find]
    elif len(positions) > to_find:
        chosen = np.concatenate((positions[split:], positions[: to_find - after]))
    else:
        chosen = np.concatenate((positions[split:], positions[:split])) if split else positions
    num_processed = (int(chosen[-1]) - start) % n + 1 if len(positions) > to_find else n
    return nodes[chosen], num_processed


#: Rows judged beyond the expected need, so that a chunk is seldom a few rows short.
_CHUNK_SLACK = 16


def _walk_in_chunks(
    fwk: Framework,
    state: CycleState,
    pod: Pod,
    table: NodeTable,
    candidates: BoolArray,
    nodes: IntArray,
    start: int,
    to_find: int,
) -> tuple[IntArray, int] | None:
    """What :func:`_walk_from_start` finds over the Filters' verdicts on every row, judging only
    the rows the walk reaches: chunks of ``nodes`` from ``start`` (wrapping round), each sized by
    the share of rows that passed so far, until one feasible node beyond ``to_find`` is seen (the
    walk then stopped at the ``to_find``-th). None when the walk would process every node (too
    few pass), or looks like it will: the caller evaluates every row then, as its diagnosis needs."""
    n = len(nodes)
    need = to_find + 1
    whole: dict[int, BoolArray] = {}
    found: list[IntArray] = []
    count = 0
    pos = 0
    size = need + need // 8 + _CHUNK_SLACK
    while pos < n:
        size = min(size, n - pos)
        lo = start + pos if start + pos < n else start + pos - n
        hi = lo + size
        rows = nodes[lo:hi] if hi <= n else np.concatenate((nodes[lo:], nodes[: hi - n]))
        ok = fwk.run_filters_on_rows(state, pod, table, rows, candidates, whole)
        if ok is None and not pos and size >= need:
            # Every row of the first chunk passed (the usual cycle): the feasible nodes are the
            # first to_find from the start, as the all-rows walk finds them.
            return _walk_from_start(nodes, None, start, to_find)
        hits = np.arange(pos, pos + size) if ok is None else np.flatnonzero(ok) + pos
        if len(hits):
            found.append(hits)
            count += len(hits)
        pos += size
        if count >= need:
            positions = (found[0] if len(found) == 1 else np.concatenate(found))[:to_find]
            chosen = positions + start
            chosen[chosen >= n] -= n
            return nodes[chosen], int(positions[-1]) + 1
        if count:
            # Rows still to judge at the share that passed so far.
            ahead = (need - count) * pos // count
            if pos + ahead >= n:
                return None
            size = ahead + ahead // 4 + _CHUNK_SLACK
        elif 2 * pos >= n:
            return None
        else:
            size *= 4
    return None


def _slots(table: NodeTable, names: list[str]) -> IntArray:
    return np.fromiter((table.slot_of[n] for n in names), dtype=np.int64, count=len(names))
