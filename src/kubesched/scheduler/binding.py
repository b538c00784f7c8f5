"""The binding cycle of a scheduled pod (upstream ``bindingCycle`` in ``schedule_one.go``).

A pod the scheduling cycle assumed on its node waits here until Permit lets it go; then PreBind and
Bind write it to the cluster (a binding extender that wants the pod binds it instead of the Bind
plugins), and the result is settled on the driver's thread, which alone touches the cache and the
queue: a bound pod is confirmed and reported (PostBind follows), a refused one is unreserved,
forgotten and requeued. Sending a bind and settling it are shared with the batch pipeline
(:mod:`~kubesched.framework.bind_result`).

Binding cycles run on the driver's thread by default (the embedded cluster: a bind costs nothing and
the same input gives the same decisions). Against an API server a bind is a round trip, so PreBind
and Bind can run on binding workers instead while the next pods are scheduled.

The steps are functions of the scheduler, taken in as its methods by
:class:`~kubesched.scheduler.scheduler.Scheduler`; each scheduling cycle ends by running the binding
cycles that can go.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING

from kubesched.api.objects import Pod
from kubesched.framework.bind_result import (
    already_assigned,
    binding_landed,
    forget_assumed,
    record_bound,
    rejection_message,
    send_binding,
)
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.outcome import PodOutcome
from kubesched.framework.runtime import Framework
from kubesched.framework.status import Code, Status
from kubesched.framework.types import QueuedPodInfo
from kubesched.scheduler.eventhandlers import ASSIGNED_POD_DELETE
from kubesched.scheduler.extenders import extenders_binding

if TYPE_CHECKING:
    from kubesched.scheduler.scheduler import Scheduler

log = logging.getLogger(__name__)


@dataclass(slots=True)
class BindingTask:
    """A pod between its scheduling cycle and the end of its binding cycle."""

    fwk: Framework
    state: CycleState
    info: QueuedPodInfo
    assumed: Pod
    node: str
    outcome: PodOutcome


def run_binding_cycles(sched: Scheduler) -> int:
    """Run every binding cycle that can proceed: pods not (or no longer) waiting at Permit.
    With binding workers, hand them to the workers and finish those the workers are done with.
    Returns how many finished (bound or failed)."""
    done = sched._finish_worker_binds()
    waiting = sched.handle.waiting_pods
    waiting.expire(sched.now())
    still: list[BindingTask] = []
    for task in sched._binding_tasks:
        wp = waiting.get(task.assumed.uid)
        if wp is not None and wp.pending:
            still.append(task)
            continue
        waiting.remove(task.assumed.uid)
        if wp is not None and wp.rejection is not None:
            # Upstream WaitOnPermit failure: undo the reservation; the pod waits for an event.
            sched.queue.move_all_to_active_or_backoff(ASSIGNED_POD_DELETE, task.assumed, None)
            sched._undo_assume(task, wp.rejection)
        elif sched._binds.executor is not None:
            if not bind_on_loop(sched, task):
                sched._binds.start(sched._bind_in_worker, task)
            continue
        else:
            sched._binding_cycle(task)
        done += 1
    sched._binding_tasks = still
    return done


def bind_on_loop(sched: Scheduler, task: BindingTask) -> bool:
    """A binding cycle whose only write is the Binding, started without a binding worker: every
    PreBind plugin says it has nothing to do (upstream ``RunPreBindPreFlights`` gives Skip), so
    PreBind runs here at once, and the one Bind plugin sends the Binding in the background (a
    request on the client's loop); its result comes back to the driver's thread like a worker's.
    False, with nothing done, when the cycle needs a worker: a PreBind write, an extender, a Bind
    plugin that cannot send in the background."""
    fwk = task.fwk
    if sched.extenders or not fwk.can_bind_later():
        return False
    flight = fwk.run_pre_bind_pre_flights(task.state, task.assumed, task.node)
    if flight is None or flight.code != Code.SKIP:
        return False
    report = sched._binds.begin(task)
    try:
        st = fwk.run_pre_bind(task.state, task.assumed, task.node)
    except Exception as exc:  # reported like any failed bind: the pod is requeued
        log.exception("binding cycle of pod %s failed", task.assumed.key)
        st = Status.error(str(exc))
    if st is not None:
        report(st)
    else:
        fwk.run_bind_later(task.state, task.assumed, task.node, report)
    return True


def bind_in_worker(sched: Scheduler, task: BindingTask) -> Status | None:
    """PreBind and Bind on a binding worker: these only write to the cluster through the ports."""
    try:
        return sched._pre_bind_and_bind(task)
    except Exception as exc:  # reported like any failed bind: the pod is requeued
        log.exception("binding cycle of pod %s failed", task.assumed.key)
        return Status.error(str(exc))


def finish_worker_binds(sched: Scheduler) -> int:
    done = 0
    binds = sched._binds
    while binds.done:
        task, st = binds.take()
        sched._finish_binding(task, st)
        done += 1
    return done


def wait_for_bindings(sched: Scheduler, timeout: float | None = None) -> bool:
    """Wait until every bind handed to the workers has come back, and finish them (a scheduler
    that stops lets its binds in flight complete). False when ``timeout`` passed first."""
    sched._binds.wait(timeout)
    sched._finish_worker_binds()
    return sched._binds.in_flight == 0


def binding_cycle(sched: Scheduler, task: BindingTask) -> None:
    sched._finish_binding(task, sched._pre_bind_and_bind(task))


def pre_bind_and_bind(sched: Scheduler, task: BindingTask) -> Status | None:
    """The part of a binding cycle that writes to the cluster (on a binding worker, or here)."""
    st = task.fwk.run_pre_bind(task.state, task.assumed, task.node)
    return st if st is not None else sched._bind(task.fwk, task.state, task.assumed, task.node)


def finish_binding(sched: Scheduler, task: BindingTask, st: Status | None) -> None:
    """The end of a binding cycle, on the driver's thread: confirm the assumed pod, or undo it
    and requeue the pod."""
    fwk, state, info, assumed, node, outcome = (
        task.fwk,
        task.state,
        task.info,
        task.assumed,
        task.node,
        task.outcome,
    )
    if st is not None and st.code != Code.SUCCESS and not binding_landed(sched.cache, assumed, node):
        fwk.run_unreserve(state, assumed, node)
        forget_assumed(sched.cache, assumed)
        # The resources the assumed pod held are free again.
        sched.queue.move_all_to_active_or_backoff(ASSIGNED_POD_DELETE, assumed, None)
        sched._handle_failure(fwk, info, rejection_message(st.message), None, outcome, error=True)
        return
    sched.queue.done(assumed.uid)
    if sched.metrics is not None:
        sched.metrics.pod_scheduled(fwk.profile_name, info)
    record_bound(sched.cache, sched.ports.events, outcome, assumed, node, fwk.profile_name)
    fwk.run_post_bind(state, assumed, node)


def bind(sched: Scheduler, fwk: Framework, state: CycleState, assumed: Pod, node: str) -> Status:
    """Upstream bind: an interested binding extender first, else the Bind plugins."""
    if sched.extenders:
        bound, err = extenders_binding(sched.extenders, assumed, node)
        if err is not None:
            return Status.error(str(err))
        if bound:
            # The extender posts the Binding to the API server it knows. The embedded cluster is
            # not one it can reach, so the Binding it reports is written here too; where it did
            # reach ours, the pod is already on that node and the second write is a no-op.
            refusal = send_binding(sched.ports.binder, assumed, node)
            if refusal is not None and not already_assigned(refusal, node):
                return Status.error(f"extender bound the pod but the binding failed: {refusal}")
            return Status.success()
    return fwk.run_bind(state, assumed, node)
