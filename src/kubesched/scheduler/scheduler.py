"""The kube-scheduler (upstream ``pkg/scheduler/scheduler.go``): one object that owns a scheduler's
profiles, queue and cache, and runs its pods through them.

The scheduler subscribes to the shared Pod and Node informers (the driver pumps them between steps)
for its queue; node and pod state is the cluster's one scheduler cache, fed from the same informers
by a :class:`~kubesched.cache.feed.CacheFeed` and shared with the batch scheduler. It writes to the
cluster only through its ports: bindings through the DefaultBinder plugin, the ``PodScheduled``
condition and nominations through the pod status writer, events through the recorder.

Its work is laid out as upstream's files, which in Go define methods of ``*Scheduler`` apart:

- :mod:`~kubesched.scheduler.eventhandlers`: what informer events do to the queue;
- :mod:`~kubesched.scheduler.schedule_one`: the scheduling cycle of one pod, and failure handling;
- :mod:`~kubesched.scheduler.binding`: the binding cycle, in place or on binding workers.

Each of those modules is a set of functions whose first parameter is the scheduler, and
:class:`Scheduler` takes them in as its methods (a function assigned in a class body is a method).
That keeps the per-pod path as it was: ``sched.schedule_one()`` is one method call, and its steps
reach the snapshot, queue and profiles as plain attributes of one object, with no collaborator to
go through and no extra call per pod; a test can still replace one step on an instance. The
functions are typed against :class:`Scheduler` itself, whose ``__init__`` sets every attribute they
read.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

import numpy as np

from kubesched.api.objects import Pod
from kubesched.cache.cache import Snapshot
from kubesched.cache.feed import CacheFeed
from kubesched.cache.node_table import NodeTable
from kubesched.framework.bind_result import BindWorkers
from kubesched.framework.config import SchedulerConfig
from kubesched.framework.extender import Extender
from kubesched.framework.handle import Handle
from kubesched.framework.outcome import PodOutcome
from kubesched.framework.registry import Registry
from kubesched.framework.runtime import Framework
from kubesched.framework.status import Status
from kubesched.framework.types import BoolArray, IntArray
from kubesched.queue.nominator import Nominator
from kubesched.queue.scheduling_queue import SchedulingQueue
from kubesched.scheduler import binding, eventhandlers, schedule_one_podgroup
from kubesched.scheduler import schedule_one as scheduling_cycle
from kubesched.scheduler.batching import OpportunisticBatch, Signature, batchable_plugins
from kubesched.scheduler.binding import BindingTask
from kubesched.scheduler.explain import ExplainRecorder
from kubesched.scheduler.extenders import build_extenders
from kubesched.store.informers import InformerFactory
from kubesched.store.ports import Ports

if TYPE_CHECKING:
    from kubesched.metrics.kube import KubeSchedulerMetrics


class Scheduler:
    """One kube-scheduler: its profiles' frameworks over one scheduling queue and the shared cache."""

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
        #: Equal scores go to the smallest node name instead of a random one: not upstream's rule,
        #: but the FGD authors' simulator's, which ``experiment fgd`` reproduces.
        self.tie_break_by_name = False
        self.feed = feed if feed is not None else CacheFeed(informers)
        self.cache = self.feed.cache
        self.snapshot = Snapshot()
        self.handle = Handle(
            informers,
            ports,
            self.snapshot,
            now,
            self.rng,
            config.parallelism,
            feature_gates=config.feature_gates,
        )
        # Every profile filters with the same nominated pods (upstream: one nominator per scheduler).
        nominator = Nominator()
        self.profiles: dict[str, Framework] = {
            p.scheduler_name: Framework(p, registry, self.handle, nominator) for p in config.profiles
        }
        #: Pods of a scheduling.k8s.io PodGroup are scheduled group by group (upstream
        #: ``genericWorkloadEnabled``).
        self.generic_workload = config.gate_enabled("GenericWorkload")
        #: Pod groups with a topology constraint are tried placement by placement.
        self.topology_aware_workloads = config.gate_enabled("TopologyAwareWorkloadScheduling")
        #: An unschedulable pod group may preempt as a whole.
        self.workload_aware_preemption = config.gate_enabled("WorkloadAwarePreemption")
        #: The node slots of the placement a pod group cycle is trying, in the table's order (None:
        #: every node).
        self.placement: IntArray | None = None
        first = next(iter(self.profiles.values()))
        profile_events = {name: fwk.events_to_register() for name, fwk in self.profiles.items()}
        self.queue = SchedulingQueue(
            first.queue_sort_key(),
            now,
            pre_enqueue=self._pre_enqueue,
            plugin_events=profile_events[first.profile_name],
            profile_events=profile_events,
            initial_backoff=config.pod_initial_backoff_seconds,
            max_backoff=config.pod_max_backoff_seconds,
            nominator=nominator,
        )
        self.handle.activate = self._activate
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
        self._binding_tasks: list[BindingTask] = []
        #: Prometheus metrics (``SchedulerMetrics.attach``); None records nothing.
        self.metrics: KubeSchedulerMetrics | None = None
        if binding_workers < 0:
            raise ValueError("binding_workers must be >= 0")
        #: Binding cycles handed to the workers, and their results (PreBind/Bind status) until the
        #: driver's thread finishes them.
        self._binds: BindWorkers[BindingTask, Status | None] = BindWorkers(binding_workers, "kubesched-bind")
        informers.informer("Node").add_handler(self._on_node)
        self._pods = informers.informer("Pod")
        self._pods.add_handler(self._on_pod)
        eventhandlers.add_resource_handlers(
            self,
            (
                e.event
                for fwk in self.profiles.values()
                for evs in fwk.events_to_register().values()
                for e in evs
            ),
        )

    # -- queue and lifecycle ----------------------------------------------------------------------
    def responsible_for(self, pod: Pod) -> bool:
        return pod.scheduler_name in self.profiles

    def _pre_enqueue(self, pod: Pod) -> Status | None:
        fwk = self.profiles.get(pod.scheduler_name)
        return fwk.run_pre_enqueue(pod) if fwk is not None else None

    def _activate(self, pods: Iterable[Pod]) -> None:
        self.queue.activate(p.uid for p in pods)

    def close(self) -> None:
        """Finish the binds in flight and stop the binding workers."""
        self.wait_for_bindings()
        self._binds.shutdown()

    def next_permit_deadline(self) -> float | None:
        return self.handle.waiting_pods.next_deadline()

    # -- binding cycles in flight ----------------------------------------------------------------
    @property
    def binding_in_flight(self) -> int:
        return len(self._binding_tasks) + self._binds.in_flight

    @property
    def on_binding_done(self) -> Callable[[], None] | None:
        """Called from a binding worker when a bind finished (a driver wakes up to finish it)."""
        return self._binds.on_done

    @on_binding_done.setter
    def on_binding_done(self, listener: Callable[[], None] | None) -> None:
        self._binds.on_done = listener

    # -- informer event handlers: eventhandlers.py -----------------------------------------------
    _invalidate_batches = eventhandlers.invalidate_batches
    _on_node = eventhandlers.on_node
    _on_pod = eventhandlers.on_pod
    _assigned_pod_updated = eventhandlers.assigned_pod_updated
    _cross_topology_check = eventhandlers.cross_topology_check

    # -- the scheduling cycle: schedule_one.py ---------------------------------------------------
    schedule_one = scheduling_cycle.schedule_one
    schedule_pod = scheduling_cycle.schedule_pod
    find_nodes_that_fit = scheduling_cycle.find_nodes_that_fit
    prioritize_nodes = scheduling_cycle.prioritize_nodes
    select_host = scheduling_cycle.select_host
    _batch_hint = scheduling_cycle.batch_hint
    _store_batch = scheduling_cycle.store_batch
    _order_mask = scheduling_cycle.order_mask
    _evaluate_nominated_node = scheduling_cycle.evaluate_nominated_node
    _run_extender_filters = scheduling_cycle.run_extender_filters
    _node_object = scheduling_cycle.node_object
    _run_post_filter = scheduling_cycle.run_post_filter
    _undo_assume = scheduling_cycle.undo_assume
    _handle_failure = scheduling_cycle.handle_failure

    # -- the pod group cycle: schedule_one_podgroup.py -------------------------------------------
    schedule_one_pod_group = schedule_one_podgroup.schedule_one_pod_group

    # -- the binding cycle: binding.py -----------------------------------------------------------
    run_binding_cycles = binding.run_binding_cycles
    wait_for_bindings = binding.wait_for_bindings
    _bind_in_worker = binding.bind_in_worker
    _finish_worker_binds = binding.finish_worker_binds
    _binding_cycle = binding.binding_cycle
    _pre_bind_and_bind = binding.pre_bind_and_bind
    _finish_binding = binding.finish_binding
    _bind = binding.bind
