"""The kube-scheduler pipeline: informer event handlers and ``scheduleOne``.

The scheduler subscribes to the shared Pod and Node informers (the driver pumps them between steps)
for its queue; node and pod state is the cluster's one scheduler cache, fed from the same informers
by a :class:`~kubesched.cache.feed.CacheFeed` and shared with the batch scheduler. It writes to the
cluster only through its ports: bindings through the DefaultBinder plugin, the
``PodScheduled`` condition and nominations through the pod status writer, events through the
recorder.

One call of :meth:`Scheduler.schedule_one` is one scheduling cycle for the pod at the head of the
queue: snapshot → PreFilter → Filter (vectorized over the NodeTable, with upstream's rotating start
index and adaptive node count) → PostFilter on failure → PreScore/Score/Normalize → selectHost (random
among ties) → assume → Reserve → Permit, then the binding cycle: PreBind → Bind → PostBind.

Binding cycles run on the driver's thread by default (the embedded cluster: a bind costs nothing and
the same input gives the same decisions). Against an API server a bind is a round trip, so the
scheduler can run PreBind and Bind on a pool of binding workers instead (upstream: a goroutine per
binding cycle), while the next pods are scheduled; the results come back to the driver's thread,
which alone touches the cache and the queue.
"""

from __future__ import annotations

import copy
import logging
import threading
from collections import deque
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from kubesched.api.objects import Node, Pod
from kubesched.cache.affinity_terms import AffinityTerm, parse_pod_affinity_terms
from kubesched.cache.cache import Snapshot
from kubesched.cache.feed import CacheFeed
from kubesched.cache.node_table import NodeTable
from kubesched.cache.pod_index import is_terminating
from kubesched.framework.config import SchedulerConfig
from kubesched.framework.cycle_state import POST_FILTER_EXPLAIN_KEY, CycleState
from kubesched.framework.diagnosis import Diagnosis, FitError, NoNodesAvailable
from kubesched.framework.extender import Extender
from kubesched.framework.handle import Handle
from kubesched.framework.node_count import num_feasible_nodes_to_find
from kubesched.framework.outcome import PENDING, SCHEDULED, UNSCHEDULABLE, PodOutcome
from kubesched.framework.registry import Registry
from kubesched.framework.runtime import Framework, FrameworkError, PluginError, ScoreDetails
from kubesched.framework.status import Code, Status
from kubesched.framework.types import (
    ASSIGNED_POD,
    ActionType,
    BoolArray,
    ClusterEvent,
    IntArray,
    QueuedPodInfo,
    none_failed,
)
from kubesched.framework.waiting_pods import WaitingPod
from kubesched.queue.nominator import Nominator
from kubesched.queue.scheduling_queue import SchedulingQueue, pod_update_events
from kubesched.scheduler.batching import OpportunisticBatch, Signature, batchable_plugins
from kubesched.scheduler.explain import ExplainRecorder
from kubesched.scheduler.extenders import (
    ExtenderFailures,
    add_extender_failures,
    build_extenders,
    extender_scores,
    extenders_binding,
    find_nodes_that_pass_extenders,
)
from kubesched.store.base import ClusterStore, EventType, StoreError
from kubesched.store.informers import Change, InformerFactory
from kubesched.store.parsers import informer_factory
from kubesched.store.ports import Ports, StorePorts

if TYPE_CHECKING:
    from kubesched.metrics.kube import KubeSchedulerMetrics

log = logging.getLogger(__name__)

NODE_ADD = ClusterEvent("Node", ActionType.ADD)
NODE_DELETE = ClusterEvent("Node", ActionType.DELETE)
ASSIGNED_POD_ADD = ClusterEvent(ASSIGNED_POD, ActionType.ADD)
ASSIGNED_POD_DELETE = ClusterEvent(ASSIGNED_POD, ActionType.DELETE)


class SchedulingError(Exception):
    """A plugin failed with Error (not a rejection): the pod backs off and is retried."""


@dataclass(slots=True)
class _BindingTask:
    fwk: Framework
    state: CycleState
    info: QueuedPodInfo
    assumed: Pod
    node: str
    outcome: PodOutcome


@dataclass(slots=True)
class ScheduleResult:
    node: str
    evaluated_nodes: int
    feasible_nodes: int


class Scheduler:
    def __init__(
        self,
        informers: InformerFactory,
        ports: Ports,
        config: SchedulerConfig,
        registry: Registry,
        *,
        now: Callable[[], float],
        seed: int | None = None,
        explain: bool = False,
        feed: CacheFeed | None = None,
        binding_workers: int = 0,
    ) -> None:
        """``feed``: the cluster's one scheduler cache and its informer feed, shared with the batch
        scheduler; without it the scheduler feeds a cache of its own from ``informers``.
        ``binding_workers``: threads that run PreBind and Bind while the next pods are scheduled (at
        most that many binds in flight); 0 runs binding cycles on the caller's thread."""
        self.informers = informers
        self.ports = ports
        self.config = config
        self.now = now
        self.rng = np.random.default_rng(seed)
        self.feed = feed if feed is not None else CacheFeed(informers)
        self.cache = self.feed.cache
        self.snapshot = Snapshot()
        self.handle = Handle(informers, ports, self.snapshot, now, self.rng, config.parallelism)
        # Every profile filters with the same nominated pods (upstream: one nominator per scheduler).
        nominator = Nominator()
        self.profiles: dict[str, Framework] = {
            p.scheduler_name: Framework(p, registry, self.handle, nominator) for p in config.profiles
        }
        first = next(iter(self.profiles.values()))
        self.queue = SchedulingQueue(
            first.queue_sort_key(),
            now,
            pre_enqueue=self._pre_enqueue,
            plugin_events=first.events_to_register(),
            profile_events={name: fwk.events_to_register() for name, fwk in self.profiles.items()},
            initial_backoff=config.pod_initial_backoff_seconds,
            max_backoff=config.pod_max_backoff_seconds,
            nominator=nominator,
        )
        #: HTTP extenders, shared by every profile (preemption reaches them through its framework).
        self.extenders: list[Extender] = build_extenders(config.extender_configs)
        for fwk in self.profiles.values():
            fwk.extenders = self.extenders
        self.next_start_node_index = 0
        # Opportunistic batching, one state per profile; upstream turns it off with extenders.
        batching_off = not config.gate_enabled("OpportunisticBatching") or bool(config.extenders)
        self.batches: dict[str, OpportunisticBatch] = {
            name: OpportunisticBatch(None if batching_off else batchable_plugins(fwk), seed=seed)
            for name, fwk in self.profiles.items()
        }
        #: Scheduling cycles started (upstream's scheduling cycle count): a batch is reused only by
        #: the very next cycle.
        self.cycle = 0
        self._hint: int | None = None
        self._signature: Signature | None = None
        self._order_masks: tuple[IntArray, NodeTable, BoolArray] | None = None
        self.outcomes: dict[str, PodOutcome] = {}
        self.explain = ExplainRecorder() if explain else None
        self._binding_tasks: list[_BindingTask] = []
        #: Prometheus metrics (``SchedulerMetrics.attach``); None records nothing.
        self.metrics: KubeSchedulerMetrics | None = None
        if binding_workers < 0:
            raise ValueError("binding_workers must be >= 0")
        self._bind_pool = (
            ThreadPoolExecutor(binding_workers, thread_name_prefix="kubesched-bind")
            if binding_workers
            else None
        )
        #: Binding cycles handed to the workers and not yet finished on the driver's thread.
        self._binds_in_flight = 0
        #: Workers' results (task, PreBind/Bind status), finished by the driver's thread.
        self._binds_done: deque[tuple[_BindingTask, Status | None]] = deque()
        self._binds_idle = threading.Condition()
        #: Called from a binding worker when a bind finished (a driver wakes up to finish it).
        self.on_binding_done: Callable[[], None] | None = None
        informers.informer("Node").add_handler(self._on_node)
        self._pods = informers.informer("Pod")
        self._pods.add_handler(self._on_pod)

    @classmethod
    def for_store(
        cls,
        store: ClusterStore,
        config: SchedulerConfig,
        registry: Registry,
        *,
        now: Callable[[], float],
        seed: int | None = None,
        explain: bool = False,
    ) -> Scheduler:
        """A scheduler with its own informers and ports over ``store`` (tests, one-off tools)."""
        return cls(
            informer_factory(store),
            StorePorts(store).ports(),
            config,
            registry,
            now=now,
            seed=seed,
            explain=explain,
        )

    # -- informers -------------------------------------------------------------------------------
    def responsible_for(self, pod: Pod) -> bool:
        return pod.scheduler_name in self.profiles

    def _pre_enqueue(self, pod: Pod) -> Status | None:
        fwk = self.profiles.get(pod.scheduler_name)
        return fwk.run_pre_enqueue(pod) if fwk is not None else None

    def _invalidate_batches(self) -> None:
        for batch in self.batches.values():
            batch.invalidate()

    def _on_node(self, change: Change[Node]) -> None:
        # The cache has the change already (its feed subscribed first): only the queue moves, and a
        # stored batch of nodes is stale.
        self._invalidate_batches()
        if change.type == EventType.DELETED:
            if change.view is not None:
                # A node leaving can even a topology spread (upstream moves on Node/Delete too).
                self.queue.move_all_to_active_or_backoff(NODE_DELETE, change.view, None)
            return
        node = change.view
        if node is None:
            return
        if change.type == EventType.ADDED:
            self.queue.move_all_to_active_or_backoff(NODE_ADD, None, node)
            return
        old = change.old_view
        if old is None or change.old is None:
            self.queue.move_all_to_active_or_backoff(ClusterEvent("Node", ActionType.UPDATE), old, node)
            return
        for event in node_update_events(change.old, change.obj):
            self.queue.move_all_to_active_or_backoff(event, old, node)

    def _on_pod(self, change: Change[Pod]) -> None:
        if (
            change.type == EventType.MODIFIED
            and change.old is not None
            and not (change.obj.get("spec") or {}).get("nodeName")
            and not _spec_or_labels_changed(change.old, change.obj)
        ):
            # A status-only change of a pending pod (mostly the scheduler's own condition and
            # nomination writes): nothing for the cache or the queue.
            return
        pod = change.view
        if pod is None:
            return  # did not parse: the informer logged it
        # The cache has the change already (its feed subscribed first); what it held before tells
        # a newly placed pod from an update of one it knew.
        before = self.feed.before(change)
        if change.type == EventType.DELETED:
            if pod.node_name or before is not None:
                self._invalidate_batches()
                self.queue.move_all_to_active_or_backoff(ASSIGNED_POD_DELETE, pod, None)
            self.queue.delete(pod.uid)
            return
        if pod.node_name:
            if pod.terminated:
                self._invalidate_batches()
                self.queue.move_all_to_active_or_backoff(ASSIGNED_POD_DELETE, pod, None)
                return
            if before is None or not before.assumed:
                # Not the confirmation of this scheduler's own binding: the nodes changed under
                # the stored batch.
                self._invalidate_batches()
            if before is None or before.assumed:
                self.queue.delete(pod.uid)
                # Upstream AssignedPodAdded: only pods a new pod could help across nodes are asked.
                self.queue.move_all_to_active_or_backoff(
                    ASSIGNED_POD_ADD, None, pod, pre_check=self._cross_topology_check(pod)
                )
            else:
                old = change.old_view
                if old is not None:
                    self._assigned_pod_updated(old, pod)
            return
        if is_terminating(pod):
            # Upstream skipPodSchedule: a pod being deleted is not scheduled.
            self.queue.delete(pod.uid)
            return
        if pod.terminated or not self.responsible_for(pod):
            return
        if change.type == EventType.ADDED:
            self.queue.add(pod)
            self.outcomes.setdefault(
                pod.uid, PodOutcome(pod.namespace, pod.name, pod.uid, scheduler_name=pod.scheduler_name)
            )
        elif change.old is not None and _spec_or_labels_changed(change.old, change.obj):
            self.queue.update(pod, change.old_view)

    def _assigned_pod_updated(self, old: Pod, pod: Pod) -> None:
        """Upstream AssignedPodUpdated, once per fine-grained event of the update: a scale-down may
        help any pod; other changes only pods the pod could help across nodes."""
        for event in pod_update_events(old, pod):
            if event.action == ActionType.UPDATE_POD_SCALE_DOWN:
                self.queue.move_all_to_active_or_backoff(event, old, pod)
            else:
                self.queue.move_all_to_active_or_backoff(
                    event, old, pod, pre_check=self._cross_topology_check(pod)
                )

    def _cross_topology_check(self, pod: Pod) -> Callable[[QueuedPodInfo], bool]:
        """Upstream ``getUnschedulablePodsWithCrossTopologyTerm``: an assigned pod's arrival or change
        is worth a look for pods PodTopologySpread rejected in its namespace, and pods with a required
        affinity term it matches."""
        namespace_labels = _namespace_labels(self.informers, pod.namespace)

        def check(info: QueuedPodInfo) -> bool:
            if "PodTopologySpread" in info.unschedulable_plugins and info.pod.namespace == pod.namespace:
                return True
            return any(
                t.matches(pod.namespace, pod.labels, namespace_labels)
                for t in required_affinity_terms(info.pod)
            )

        return check

    # -- scheduling cycle ------------------------------------------------------------------------
    def schedule_one(self) -> bool:
        """Run one scheduling cycle. Returns False when activeQ is empty."""
        info = self.queue.pop()
        if info is None:
            return False
        pod = info.pod
        fwk = self.profiles[pod.scheduler_name]
        self.cycle += 1
        if self.cache.pod_state(pod.uid) is not None:
            self.queue.done(pod.uid)  # already assumed or bound
            return True
        if self.metrics is not None:
            self.metrics.cycle_started(info)
        state = CycleState()
        self.cache.update_snapshot(self.snapshot)
        outcome = self.outcomes.get(pod.uid)
        if outcome is None:
            outcome = PodOutcome(pod.namespace, pod.name, pod.uid, scheduler_name=pod.scheduler_name)
            self.outcomes[pod.uid] = outcome
        outcome.attempts = info.attempts
        try:
            result = self.schedule_pod(fwk, state, pod)
        except FitError as fit:
            nominating = self._run_post_filter(fwk, state, pod, fit.diagnosis)
            self._handle_failure(
                fwk, info, fit.diagnosis.message(), fit.diagnosis, outcome, nominated_node=nominating
            )
            return True
        except NoNodesAvailable as exc:
            info.unschedulable_plugins = set()
            self._handle_failure(fwk, info, str(exc), None, outcome)
            return True
        except (SchedulingError, FrameworkError) as exc:
            self._handle_failure(fwk, info, str(exc), None, outcome, error=True)
            return True

        assumed = copy.copy(pod)
        assumed.node_name = result.node
        self.cache.assume_pod(assumed, result.node)
        if self.metrics is not None:
            self.metrics.assumed(pod.uid)
        # The pod holds its node now: a nomination would count it twice (upstream assume()).
        self.queue.nominator.delete(pod.uid)
        task = _BindingTask(fwk, state, info, assumed, result.node, outcome)
        st = fwk.run_reserve(state, assumed, result.node)
        if st is not None:
            self._undo_assume(task, st)
            return True
        st, waits = fwk.run_permit(state, assumed, result.node)
        if st is not None and st.code != Code.WAIT:
            self._undo_assume(task, st)
            return True
        if waits:
            now = self.now()
            self.handle.waiting_pods.add(
                WaitingPod(assumed, result.node, {p: now + t for p, t in waits.items()}, since=now)
            )
        # The binding cycle runs apart from the scheduling cycle (upstream: in its own goroutine);
        # the next pod's cycle already sees this pod assumed on its node.
        self._binding_tasks.append(task)
        # In the embedded runtime a binding cycle takes no virtual time: run the ones that can go.
        self.run_binding_cycles()
        return True

    def _undo_assume(self, task: _BindingTask, st: Status) -> None:
        """Reserve or Permit said no: unreserve, forget the assumed pod and requeue it."""
        task.fwk.run_unreserve(task.state, task.assumed, task.node)
        self.cache.forget_pod(task.assumed)
        if st.is_rejected and st.plugin:
            task.info.unschedulable_plugins = {st.plugin}
        self._handle_failure(task.fwk, task.info, st.message, None, task.outcome, error=st.code == Code.ERROR)

    # -- binding cycles ---------------------------------------------------------------------------
    @property
    def binding_in_flight(self) -> int:
        return len(self._binding_tasks) + self._binds_in_flight

    def run_binding_cycles(self) -> int:
        """Run every binding cycle that can proceed: pods not (or no longer) waiting at Permit.
        With binding workers, hand them to the workers and finish those the workers are done with.
        Returns how many finished (bound or failed)."""
        done = self._finish_worker_binds()
        waiting = self.handle.waiting_pods
        waiting.expire(self.now())
        still: list[_BindingTask] = []
        for task in self._binding_tasks:
            wp = waiting.get(task.assumed.uid)
            if wp is not None and wp.pending:
                still.append(task)
                continue
            waiting.remove(task.assumed.uid)
            if wp is not None and wp.rejection is not None:
                # Upstream WaitOnPermit failure: undo the reservation; the pod waits for an event.
                self.queue.move_all_to_active_or_backoff(ASSIGNED_POD_DELETE, task.assumed, None)
                self._undo_assume(task, wp.rejection)
            elif self._bind_pool is not None:
                self._binds_in_flight += 1
                self._bind_pool.submit(self._bind_in_worker, task)
                continue
            else:
                self._binding_cycle(task)
            done += 1
        self._binding_tasks = still
        return done

    def _bind_in_worker(self, task: _BindingTask) -> None:
        """PreBind and Bind on a binding worker: these only write to the cluster through the ports."""
        try:
            st = self._pre_bind_and_bind(task)
        except Exception as exc:  # reported like any failed bind: the pod is requeued
            log.exception("binding cycle of pod %s failed", task.assumed.key)
            st = Status.error(str(exc))
        self._binds_done.append((task, st))
        with self._binds_idle:
            self._binds_idle.notify_all()
        listener = self.on_binding_done
        if listener is not None:
            listener()

    def _finish_worker_binds(self) -> int:
        done = 0
        while self._binds_done:
            task, st = self._binds_done.popleft()
            self._binds_in_flight -= 1
            self._finish_binding(task, st)
            done += 1
        return done

    def wait_for_bindings(self, timeout: float | None = None) -> bool:
        """Wait until every bind handed to the workers has come back, and finish them (a scheduler
        that stops lets its binds in flight complete). False when ``timeout`` passed first."""
        if self._bind_pool is not None:
            with self._binds_idle:
                self._binds_idle.wait_for(lambda: len(self._binds_done) >= self._binds_in_flight, timeout)
        self._finish_worker_binds()
        return self._binds_in_flight == 0

    def close(self) -> None:
        """Finish the binds in flight and stop the binding workers."""
        self.wait_for_bindings()
        if self._bind_pool is not None:
            self._bind_pool.shutdown(wait=True)
            self._bind_pool = None

    def next_permit_deadline(self) -> float | None:
        return self.handle.waiting_pods.next_deadline()

    def schedule_pod(self, fwk: Framework, state: CycleState, pod: Pod) -> ScheduleResult:
        """Find the node for a pod (upstream ``schedulePod``)."""
        table = self.snapshot.table
        if self.snapshot.num_nodes == 0:
            raise NoNodesAvailable()
        self._hint, self._signature = None, None
        feasible, evaluated = self.find_nodes_that_fit(fwk, state, pod)
        explain = self.explain
        if len(feasible) == 1:
            if explain is not None:
                explain.record_scores(pod, table, feasible, None, None)
            self._store_batch(fwk, int(feasible[0]), None)
            return ScheduleResult(table.names[int(feasible[0])], evaluated, 1)
        details = ScoreDetails() if explain is not None else None
        scores = self.prioritize_nodes(fwk, state, pod, feasible, details)
        if explain is not None:
            explain.record_scores(pod, table, feasible, scores, details)
        slot = self.select_host(feasible, scores)
        self._store_batch(fwk, slot, (feasible, scores))
        return ScheduleResult(table.names[slot], evaluated, len(feasible))

    # -- opportunistic batching hooks --------------------------------------------------------------
    def _batch_hint(self, fwk: Framework, state: CycleState, pod: Pod) -> None:
        """After PreFilter: ask the profile's batch for a hinted node (upstream GetNodeHint)."""
        table = self.snapshot.table

        def last_node_rejects(node: str) -> bool | None:
            slot = table.slot_of.get(node)
            if slot is None or not table.valid[slot]:
                return None
            rows = np.zeros(table.capacity, dtype=np.bool_)
            rows[slot] = True
            try:
                passed, _, _ = fwk.run_filters(state, pod, table, rows)
            except (FrameworkError, KeyError, ValueError):
                return False  # an error is not a rejection (upstream IsRejected)
            return not bool(passed[slot])

        batch = self.batches[fwk.profile_name]
        self._signature = batch.sign(pod)
        self._hint = batch.node_hint(self._signature, self.cycle, self.now(), last_node_rejects)

    def _store_batch(self, fwk: Framework, slot: int, scored: tuple[IntArray, IntArray] | None) -> None:
        """After choosing a node: keep the cycle's other scored nodes (upstream StoreScheduleResults)."""
        batch = self.batches[fwk.profile_name]
        if batch.disabled:
            return
        table = self.snapshot.table
        others = None
        if scored is not None and self._signature is not None:
            feasible, scores = scored
            keep = feasible != slot
            others = (feasible[keep], scores[keep])
        hinted = table.names[self._hint] if self._hint is not None else None
        batch.store(self._signature, hinted, table.names[slot], self.cycle, self.now(), others)

    def find_nodes_that_fit(self, fwk: Framework, state: CycleState, pod: Pod) -> tuple[IntArray, int]:
        """Feasible slots in evaluation order, and how many nodes were evaluated."""
        table = self.snapshot.table
        order = table.order
        num_all = len(order)
        pre_res, st, involved = fwk.run_pre_filter(state, pod, self.snapshot)
        if st is not None:
            if st.code == Code.ERROR or not st.is_rejected:
                raise SchedulingError(f"running PreFilter plugin {st.plugin!r}: {st.message}")
            diag = Diagnosis(
                num_all,
                pre_filter_msg=st.message,
                unschedulable_plugins=involved or {st.plugin},
                pre_filter_unresolvable=st.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
            )
            if self.explain is not None:
                self.explain.record_pre_filter(pod, st)
            raise FitError(pod.key, diag)

        self._batch_hint(fwk, state, pod)
        nominated = self._evaluate_nominated_node(fwk, state, pod, self._hint)
        if nominated is not None:
            return nominated, 1

        absent_reason = ""
        nodes = order
        if pre_res is not None and pre_res.node_names is not None:
            keep = np.fromiter((table.slot_of.get(n, -1) for n in sorted(pre_res.node_names)), dtype=np.int64)
            keep = keep[keep >= 0]
            nodes = order[np.isin(order, keep)]
            absent_reason = f"node(s) didn't satisfy plugin(s) [{' '.join(sorted(involved))}]"

        if nodes is order:
            candidates = self._order_mask(table)
        else:
            candidates = np.zeros(table.capacity, dtype=np.bool_)
            candidates[nodes] = True
        try:
            feasible_mask, results, failed_by = fwk.run_filters_with_nominated_pods(
                state, pod, table, candidates
            )
        except PluginError:
            raise  # already names the plugin and the extension point
        except (FrameworkError, KeyError, ValueError) as exc:
            raise SchedulingError(f"running Filter plugins: {exc}") from exc

        n = len(nodes)
        # A profile's own percentage (0 included: "adaptive") wins over the global one.
        pct = fwk.percentage_of_nodes_to_score
        if pct is None:
            pct = self.config.percentage_of_nodes_to_score
        to_find = num_feasible_nodes_to_find(pct, n)
        if not fwk.score and not any(e.is_filter() or e.is_prioritizer() for e in self.extenders):
            # Nothing to rank the feasible nodes by and no extender to narrow them: the first one
            # found will do (upstream hasScoring, hasExtenderFilters).
            to_find = min(to_find, 1)
        start = self.next_start_node_index % n if n else 0
        # Walk the nodes from ``start`` round to ``start - 1`` and stop at the node where the
        # to_find-th feasible one was found, like the upstream loop; positions are indexes into
        # ``nodes``.
        if failed_by is none_failed(table.capacity):
            # No Filter rejected a candidate (the usual cycle): the first to_find nodes from the
            # start are the feasible ones.
            num_processed = min(to_find, n)
            end = start + num_processed
            feasible = nodes[start:end] if end <= n else np.concatenate((nodes[start:], nodes[: end - n]))
        else:
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
            feasible = nodes[chosen]
        if num_all:
            # Upstream advances modulo the number of *all* nodes, even when a PreFilterResult
            # narrowed the search to a subset.
            self.next_start_node_index = (self.next_start_node_index + num_processed) % num_all

        failures = None
        if len(feasible) and self.extenders:
            feasible, failures = self._run_extender_filters(pod, feasible)
        if len(feasible) == 0 or self.explain is not None or failures is not None:
            processed = np.roll(nodes, -start)[:num_processed]
            evaluated = np.zeros(table.capacity, dtype=np.bool_)
            evaluated[processed] = True
            diag = fwk.diagnose(num_all, results, failed_by, evaluated)
            if absent_reason:
                diag.absent_reason = absent_reason
                diag.absent_count = num_all - n
            if failures is not None:
                add_extender_failures(diag, table, failures)
            if self.explain is not None:
                self.explain.record_filters(
                    pod, table, processed, diag, diag.results, diag.plugins, feasible_mask
                )
            if len(feasible) == 0:
                raise FitError(pod.key, diag)
        return feasible, num_processed

    def _order_mask(self, table: NodeTable) -> BoolArray:
        """The candidate mask of all of ``table.order``, rebuilt only when the order changes."""
        cached = self._order_masks
        if cached is not None and cached[0] is table.order and cached[1] is table:
            return cached[2]
        mask = np.zeros(table.capacity, dtype=np.bool_)
        mask[table.order] = True
        mask.flags.writeable = False
        self._order_masks = (table.order, table, mask)
        return mask

    def _run_extender_filters(self, pod: Pod, feasible: IntArray) -> tuple[IntArray, ExtenderFailures | None]:
        """The feasible slots the filter extenders keep, and why they dropped the others (None when
        no extender dropped any)."""
        table = self.snapshot.table
        names = [table.names[s] for s in feasible.tolist()]
        kept, failures = find_nodes_that_pass_extenders(self.extenders, pod, names, self._node_object)
        if not failures.dropped and not failures.by_node:
            return (feasible if kept == names else _slots(table, kept)), None
        return _slots(table, kept), failures

    def _node_object(self, name: str) -> Mapping[str, Any]:
        info = self.snapshot.node_infos.get(name)
        node = info.node if info is not None else None
        return node.raw if node is not None else {"metadata": {"name": name}}

    def _evaluate_nominated_node(
        self, fwk: Framework, state: CycleState, pod: Pod, hint: int | None = None
    ) -> IntArray | None:
        """A pod nominated by an earlier preemption tries that node first (upstream
        evaluateNominatedNode): when it fits there, it is the only feasible node. Without a
        nomination, a batching hint is tried the same way."""
        table = self.snapshot.table
        nominated = self.queue.nominator.node_of(pod.uid)
        slot = table.slot_of.get(nominated) if nominated else hint
        if slot is None or not table.valid[slot]:
            return None
        rows = np.zeros(table.capacity, dtype=np.bool_)
        rows[slot] = True
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
        if self.extenders:
            feasible, failures = self._run_extender_filters(pod, feasible)
            if len(feasible) == 0:
                return None
        if self.explain is not None:
            diag = fwk.diagnose(len(table.order), results, failed_by, rows)
            if failures is not None:
                add_extender_failures(diag, table, failures)
            self.explain.record_filters(pod, table, feasible, diag, diag.results, diag.plugins, passed)
        return feasible

    def prioritize_nodes(
        self, fwk: Framework, state: CycleState, pod: Pod, feasible: IntArray, details: ScoreDetails | None
    ) -> IntArray:
        table = self.snapshot.table
        if not fwk.score and not self.extenders:
            return np.ones(len(feasible), dtype=np.int64)
        st = fwk.run_pre_score(state, pod, table, feasible)
        if st is not None:
            raise SchedulingError(f"running PreScore plugin {st.plugin!r}: {st.message}")
        total = fwk.run_score(state, pod, table, feasible, details)
        if self.extenders:
            names = [table.names[s] for s in feasible.tolist()]
            for name, scores in extender_scores(self.extenders, pod, names, self._node_object).items():
                total += scores
                if details is not None:
                    # Explain shows the extender's final contribution (score x weight x 10) as is.
                    details.raw[name] = scores
                    details.normalized[name] = scores
                    details.weights[name] = 1
        return total

    def select_host(self, feasible: IntArray, scores: IntArray) -> int:
        """The highest-scoring node; ties are broken uniformly at random (seeded in simulation)."""
        best = scores.max()
        ties = np.flatnonzero(scores == best)
        pick = ties[0] if len(ties) == 1 else ties[int(self.rng.integers(len(ties)))]
        return int(feasible[pick])

    def _run_post_filter(
        self, fwk: Framework, state: CycleState, pod: Pod, diagnosis: Diagnosis
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
        if self.metrics is not None:
            self.metrics.post_filter_done(fwk.post_filter, state)
        if self.explain is not None:
            self.explain.record_post_filter(pod, st, state.get(POST_FILTER_EXPLAIN_KEY))
        return nominated

    # -- binding cycle ---------------------------------------------------------------------------
    def _binding_cycle(self, task: _BindingTask) -> None:
        self._finish_binding(task, self._pre_bind_and_bind(task))

    def _pre_bind_and_bind(self, task: _BindingTask) -> Status | None:
        """The part of a binding cycle that writes to the cluster (on a binding worker, or here)."""
        st = task.fwk.run_pre_bind(task.state, task.assumed, task.node)
        return st if st is not None else self._bind(task.fwk, task.state, task.assumed, task.node)

    def _finish_binding(self, task: _BindingTask, st: Status | None) -> None:
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
        if st is not None and st.code != Code.SUCCESS:
            cached = self.cache.pod_state(assumed.uid)
            if cached is not None and not cached.assumed and cached.node_name == node:
                # The informer has already seen the pod bound there: the write did land (a reply
                # lost on the way back), so the binding cycle succeeded after all.
                st = None
        if st is not None and st.code != Code.SUCCESS:
            fwk.run_unreserve(state, assumed, node)
            cached = self.cache.pod_state(assumed.uid)
            if cached is not None and cached.assumed:
                self.cache.forget_pod(assumed)
            # The resources the assumed pod held are free again.
            self.queue.move_all_to_active_or_backoff(ASSIGNED_POD_DELETE, assumed, None)
            self._handle_failure(fwk, info, f"binding rejected: {st.message}", None, outcome, error=True)
            return
        self.cache.finish_binding(assumed)
        self.queue.done(assumed.uid)
        if self.metrics is not None:
            self.metrics.pod_scheduled(fwk.profile_name, info)
        outcome.node = node
        outcome.status = SCHEDULED
        outcome.message = ""
        self.ports.events.record(
            assumed.raw,
            "Normal",
            "Scheduled",
            "Binding",
            f"Successfully assigned {assumed.namespace}/{assumed.name} to {node}",
            fwk.profile_name,
        )
        fwk.run_post_bind(state, assumed, node)

    def _bind(self, fwk: Framework, state: CycleState, assumed: Pod, node: str) -> Status:
        """Upstream bind: an interested binding extender first, else the Bind plugins."""
        if self.extenders:
            bound, err = extenders_binding(self.extenders, assumed, node)
            if err is not None:
                return Status.error(str(err))
            if bound:
                # The extender posts the Binding to the API server it knows. The embedded cluster is
                # not one it can reach, so the Binding it reports is written here too; where it did
                # reach ours, the pod is already on that node and the second write is a no-op.
                try:
                    self.ports.binder.bind(assumed.namespace, assumed.name, assumed.uid, node)
                except StoreError as exc:
                    if f"already assigned to node {node!r}" not in str(exc):
                        return Status.error(f"extender bound the pod but the binding failed: {exc}")
                return Status.success()
        return fwk.run_bind(state, assumed, node)

    def _handle_failure(
        self,
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
        if self.metrics is not None:
            self.metrics.attempt_failed(fwk.profile_name, info, error=error)
        current = self._pods.get(pod.namespace, pod.name)
        if current is None or current.uid != pod.uid:
            # Deleted (or replaced) while it was being scheduled or bound: nothing to requeue or
            # report (upstream: "Pod doesn't exist in informer cache").
            self.queue.done(pod.uid)
            return
        if diagnosis is not None:
            info.unschedulable_plugins = set(diagnosis.unschedulable_plugins)
            info.pending_plugins = set(diagnosis.pending_plugins)
        if current.node_name:
            # Bound meanwhile (by another writer, or a bind whose answer was lost): not requeued
            # (upstream: "Pod has been assigned to node. Abort adding it back to queue.").
            self.queue.done(pod.uid)
        else:
            self.queue.add_unschedulable(info, error=error)
        if nominated_node is not None:
            if not nominated_node and not self.queue.nominator.node_of(pod.uid):
                nominated_node = None  # nothing to clear: no status write
            else:
                self.queue.nominator.add(pod, nominated_node)
        reason = "SchedulerError" if error else "Unschedulable"
        outcome.status = UNSCHEDULABLE if not error else PENDING
        outcome.message = message
        outcome.node = None
        self.ports.events.record(
            pod.raw, "Warning", "FailedScheduling", "Scheduling", message, fwk.profile_name
        )
        self.ports.pod_status.set_pod_condition(
            pod.namespace,
            pod.name,
            {"type": "PodScheduled", "status": "False", "reason": reason, "message": message},
            nominated_node=nominated_node,
        )


def _slots(table: NodeTable, names: list[str]) -> IntArray:
    return np.fromiter((table.slot_of[n] for n in names), dtype=np.int64, count=len(names))


def _spec_or_labels_changed(old: Mapping[str, Any], new: Mapping[str, Any]) -> bool:
    """Upstream ignores status-only updates of pending pods (they come from the scheduler itself)."""
    if old.get("spec") != new.get("spec"):
        return True
    om, nm = old.get("metadata") or {}, new.get("metadata") or {}
    return bool(om.get("labels") != nm.get("labels") or om.get("annotations") != nm.get("annotations"))


def node_update_events(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[ClusterEvent]:
    """The fine-grained events of a node update (upstream ``NodeSchedulingPropertiesChange``), from
    the raw objects: a node made schedulable again counts as a taint change, as upstream."""
    om, nm = old.get("metadata") or {}, new.get("metadata") or {}
    ospec, nspec = old.get("spec") or {}, new.get("spec") or {}
    ostatus, nstatus = old.get("status") or {}, new.get("status") or {}
    actions: list[ActionType] = []
    if bool(ospec.get("unschedulable")) and not nspec.get("unschedulable"):
        actions.append(ActionType.UPDATE_NODE_TAINT)
    if (ostatus.get("allocatable") or {}) != (nstatus.get("allocatable") or {}):
        actions.append(ActionType.UPDATE_NODE_ALLOCATABLE)
    if (om.get("labels") or {}) != (nm.get("labels") or {}):
        actions.append(ActionType.UPDATE_NODE_LABEL)
    if (ospec.get("taints") or []) != (nspec.get("taints") or []):
        actions.append(ActionType.UPDATE_NODE_TAINT)
    if _condition_statuses(ostatus) != _condition_statuses(nstatus):
        actions.append(ActionType.UPDATE_NODE_CONDITION)
    if (om.get("annotations") or {}) != (nm.get("annotations") or {}):
        actions.append(ActionType.UPDATE_NODE_ANNOTATION)
    return [ClusterEvent("Node", a) for a in actions]


def _condition_statuses(status: Mapping[str, Any]) -> dict[Any, Any]:
    conditions = status.get("conditions") or []
    return {c.get("type"): c.get("status") for c in conditions if isinstance(c, Mapping)}


def _namespace_labels(informers: InformerFactory, namespace: str) -> Mapping[str, str]:
    obj = informers.informer("Namespace").get_raw(None, namespace)
    labels = ((obj or {}).get("metadata") or {}).get("labels") or {}
    return labels if isinstance(labels, Mapping) else {}


#: id(affinity mapping) → (that mapping, namespace, labels, its required affinity terms); holding the
#: mapping keeps the id unique, and the terms depend on the namespace and labels too (matchLabelKeys).
_TERMS_CACHE: dict[int, tuple[Any, str, Mapping[str, str], tuple[AffinityTerm, ...]]] = {}


def required_affinity_terms(pod: Pod) -> tuple[AffinityTerm, ...]:
    """The pod's required pod-affinity terms (upstream ``PodInfo.RequiredAffinityTerms``)."""
    affinity = pod.affinity
    if not affinity or "podAffinity" not in affinity:
        return ()
    hit = _TERMS_CACHE.get(id(affinity))
    if hit is not None and hit[0] is affinity and hit[1] == pod.namespace and hit[2] == pod.labels:
        return hit[3]
    terms = parse_pod_affinity_terms(affinity, pod.namespace, pod.labels).required_affinity
    if len(_TERMS_CACHE) >= 4096:
        _TERMS_CACHE.clear()
    _TERMS_CACHE[id(affinity)] = (affinity, pod.namespace, pod.labels, terms)
    return terms
