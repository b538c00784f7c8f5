"""One batch scheduling session (Volcano ``framework.Session``): the snapshot the actions work on and
the functions the plugins registered, dispatched with Volcano's tier precedence.

Node state is columnar like the framework side: ``table`` is a fork of the scheduler's
:class:`NodeTable` (:meth:`NodeTable.fork`) on which the session counts the tasks it allocates
through the table's accounting API, so the framework Filter and Score plugins that the
``predicates`` and ``nodeorder`` plugins reuse see the session's own placements and the scheduler's
table stays as the cache left it. ``idle`` (allocatable less requested, refreshed per row from the
table), ``releasing`` and ``pipelined`` (what evicted tasks will free and what pipelined tasks wait
for: Volcano's ``NodeInfo.Idle`` / ``Releasing`` / ``Pipelined``) are int64 arrays in the table's
units (milli-CPU, bytes, counts); Volcano's tolerance applies only where they are compared.

Every change to a row bumps ``row_version[slot]``; plugins that cache per-spec results re-evaluate
only the rows whose version moved since (the predicate/score caches of issue item 6).

Tasks the session places (allocated or pipelined) are counted in the scheduler cache's
:class:`~kubesched.cache.pod_index.PodIndex` at once, and evicted tasks leave it, as Volcano's
predicates plugin adds and removes them in its node infos: InterPodAffinity and PodTopologySpread
see the session's own placements. ``pods_version`` / ``terms_version`` count those changes (all of
them / those of pods with inter-pod affinity terms), so plugins know when a cached verdict is stale.
:meth:`Session.restore_pod_index` puts the index back when the session ends.
"""

from __future__ import annotations

import contextlib
import functools
import itertools
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np
from numpy.typing import NDArray

from kubesched.batch.job_info import (
    ABSTAIN,
    JobInfo,
    QueueInfo,
    TaskInfo,
    ValidateResult,
)
from kubesched.batch.operations import Evictee, EvictionContext, SearchPurpose, VictimVerdict
from kubesched.batch.shares import ResourceSpace, Vector
from kubesched.cache.affinity_terms import NO_TERMS
from kubesched.framework.handle import ClusterWait, check_once
from kubesched.framework.node_count import num_feasible_nodes_to_find
from kubesched.framework.types import FilterResult, IntArray, NodeFailure

if TYPE_CHECKING:
    from kubesched.api.objects import Pod
    from kubesched.batch.conf import BatchConf, PluginOption, Tier
    from kubesched.batch.hypernodes import HyperNodeInfo, HyperNodeTree
    from kubesched.batch.parked_jobs import ParkedJobs
    from kubesched.batch.queue_totals import QueueTotals
    from kubesched.cache.node_info import NodeInfo
    from kubesched.cache.node_table import NodeTable
    from kubesched.cache.pod_index import PodIndex
    from kubesched.store.informers import InformerFactory
    from kubesched.store.ports import Ports

BoolArray = NDArray[np.bool_]
FloatArray = NDArray[np.float64]

CompareFn = Callable[[Any, Any], int]
EvictableFn = Callable[[TaskInfo, list[TaskInfo]], tuple[list[TaskInfo], int]]
#: A victim filter of the gang-aware actions: the candidates it allows, and a vote (abstain or not).
UnifiedEvictableFn = Callable[[EvictionContext, list[TaskInfo]], tuple[list[TaskInfo], int]]
GradientFn = Callable[[JobInfo, "HyperNodeInfo", SearchPurpose], list[list["HyperNodeInfo"]]]
PredicateFn = Callable[[TaskInfo, "NodeTable"], FilterResult]
#: A predicate's verdict alone (which slots pass), for the allocate hot path.
PredicateMaskFn = Callable[[TaskInfo, "NodeTable"], BoolArray]
NodeOrderFn = Callable[[TaskInfo, "NodeTable", IntArray], Any]

_session_ids = itertools.count(1)
#: Sessions get UUIDs as Volcano's (the PodGroup conditions' transitionID), derived from a counter
#: rather than drawn at random so that the same input gives the same output bytes.
_SESSION_UUIDS = uuid.UUID("5e55a1d0-6b1c-4c8e-9a3f-0b5c7e2d4f61")


@dataclass(slots=True)
class Event:
    """A task allocated, pipelined, evicted or unallocated inside a statement. An allocate handler
    that cannot reserve what the task needs on its node sets ``err`` (Volcano ``Event.Err``): the
    statement then undoes the placement."""

    task: TaskInfo
    err: str | None = None


class PreBinder(Protocol):
    """A plugin's work before a committed task's pod is bound (Volcano ``cache.PreBinder``)."""

    def pre_bind(self, task: TaskInfo) -> str | None:
        """Make the task's node ready for it (its volumes bound); the error, if it failed."""
        ...

    def pre_bind_rollback(self, task: TaskInfo) -> None:
        """Undo what was reserved for the task when its bind failed after ``pre_bind``."""
        ...


@dataclass(slots=True)
class EventHandler:
    allocate_func: Callable[[Event], None] | None = None
    deallocate_func: Callable[[Event], None] | None = None


@dataclass(slots=True)
class PodGroupConditionUpdate:
    """A PodGroup condition a plugin sets at session close (Volcano ``PodGroupCondition``)."""

    type: str
    status: str
    reason: str
    message: str
    transition_id: str


class Session:
    """What plugins and actions see during one scheduling period."""

    def __init__(
        self,
        *,
        conf: BatchConf,
        table: NodeTable,
        node_infos: dict[str, NodeInfo],
        node_mask: BoolArray,
        jobs: dict[str, JobInfo],
        queues: dict[str, QueueInfo],
        space: ResourceSpace,
        now: float = 0.0,
        rng: np.random.Generator | None = None,
        pod_index: PodIndex | None = None,
    ) -> None:
        self.uid = str(uuid.uuid5(_SESSION_UUIDS, str(next(_session_ids))))
        self.conf = conf
        self.tiers: list[Tier] = list(conf.tiers)
        self.space = space
        self.node_infos = node_infos
        self.jobs = jobs
        self.queues = queues
        self.now = now
        self.rng = rng if rng is not None else np.random.default_rng(0)
        self._init_node_state(table, node_mask, space, pod_index)
        self._init_results()
        self._init_plugin_functions()

    def _init_node_state(
        self, table: NodeTable, node_mask: BoolArray, space: ResourceSpace, pod_index: PodIndex | None
    ) -> None:
        """The columnar node state the session places tasks on, and the pod index it keeps current."""
        #: The session's own table: placements are counted here, never on the scheduler's.
        self.table = table if table.is_fork else table.fork()
        table = self.table
        #: Ready nodes as a mask over slots and as slots in NodeTree order.
        self.node_mask = node_mask
        self.node_slots: IntArray = table.order[node_mask[table.order]] if len(table.order) else table.order
        cap = table.capacity
        r = len(space)
        #: Allocatable of every slot in the session's space (``node_idle`` etc. build on it).
        self.node_allocatable: IntArray = table.allocatable[:, :r].copy()
        #: Idle resources per slot: allocatable less requested, refreshed on every row the session
        #: counts a task on or off (the allocate hot path reads it; treat it as read-only).
        self.idle: IntArray = self.node_allocatable - table.requested[:, :r]
        #: Tasks currently counted in ``releasing`` / ``pipelined`` (0: future idle equals idle).
        self.releasing_tasks = 0
        self.pipelined_tasks = 0
        self.releasing: IntArray = np.zeros((cap, r), dtype=np.int64)
        self.pipelined: IntArray = np.zeros((cap, r), dtype=np.int64)
        # A share-space vector (shares.py works in float64, with inf for "no limit").
        self.total_resource: Vector = self.node_allocatable[self.node_slots].sum(axis=0).astype(np.float64)
        #: Where the next node search starts (Volcano ``lastProcessedNodeIndex``).
        self.last_processed_node_index = 0
        #: How many feasible nodes a search looks for (kube-scheduler's adaptive percentage).
        self.num_feasible_nodes_to_find = num_feasible_nodes_to_find(0, len(self.node_slots))
        #: The scheduler cache's pod index (``None``: the session has none, e.g. in unit tests).
        self.pod_index = pod_index
        #: Bumped whenever the session adds a task to the pod index or removes one.
        self.pods_version = 0
        #: Bumped when that task has inter-pod affinity terms of its own.
        self.terms_version = 0
        #: Pod uid → the pod and its slot in the index before the session first changed it
        #: (``None``: it was not there).
        self._index_original: dict[str, tuple[Pod, int | None]] = {}
        #: Per slot, the value of ``version`` when the row last changed.
        self.row_version: IntArray = np.zeros(cap, dtype=np.int64)
        self.version = 0

    def _init_results(self) -> None:
        """What the session decides and records: placements, evictions, the jobs it looked at, and what
        it reports at close."""
        self.evicted: list[TaskInfo] = []
        #: Committed allocations, bound when the session closes.
        self.to_bind: list[TaskInfo] = []
        #: Every task a statement operated on (allocated, pipelined, evicted), in order; the scheduler
        #: puts what was not carried out back as it was when the session ends.
        self.touched: list[TaskInfo] = []
        #: Uids of the jobs that may have something to admit or place: pending tasks, or a phase
        #: before Running (``None``: every job). Set by the scheduler, which tracks them between
        #: sessions; the enqueue, allocate and backfill actions look at these jobs only.
        self.waiting: dict[str, None] | None = None
        #: Queue → its parked jobs (see :class:`ParkedJobs`): waiting jobs the scheduler keeps out
        #: of ``waiting`` and hands to allocate in job order, to be pulled only when reached.
        self.parked: dict[str, ParkedJobs] = {}
        #: Fit error messages of tasks no node has the resources for, by (request threshold, version).
        self.fit_error_cache: dict[tuple[bytes, int], str] = {}
        #: Uids of the jobs allocate tried to place.
        self.attempted: set[str] = set()
        #: Uids of the jobs whose PodGroup status the session works out at close (``None``: every
        #: job). The scheduler leaves out jobs for which it would come out unchanged.
        self.update_jobs: set[str] | None = None
        #: Per-queue sums over ``jobs`` as they are at open, when the scheduler keeps them between
        #: sessions (``None``: plugins sum the jobs themselves).
        self.queue_totals: QueueTotals | None = None
        #: Each queue's deserved resources, left by the proportion plugin at close (``None``: no
        #: proportion in this session).
        self.queue_deserved: dict[str, Vector] | None = None
        #: The framework ``Snapshot`` the reused kube-scheduler plugins read (see ``batch.k8s``).
        self.framework_snapshot: object | None = None
        #: The cluster the reused kube-scheduler plugins read through their handle, and the ports
        #: they write through (``None`` for a session opened without a scheduler).
        self.informers: InformerFactory | None = None
        self.ports: Ports | None = None
        #: How a plugin waits for the cluster to catch up with a write (a volume binding waiting for
        #: the PV controller): the scheduler's, which its driver sets.
        self.wait_for_cluster: ClusterWait = check_once
        #: Plugin state the scheduler keeps from one session to the next (Volcano builds its volume
        #: binder once, for its assume caches to follow the informers): name → object.
        self.kept: dict[str, Any] = {}
        #: What runs before each committed task's pod is bound, in registration order.
        self.pre_binders: list[PreBinder] = []
        #: Committed evictions, deleted when the session closes.
        self.to_evict: list[Evictee] = []
        #: How the last call of the victim functions decided, and the victims it answered.
        self._last_verdict: VictimVerdict | None = None
        self._last_victims: list[TaskInfo] = []
        #: Jobs the session dropped as invalid (jobValid said no): uid → the verdict.
        self.invalid_jobs: dict[str, ValidateResult] = {}
        #: The jobs themselves (still reported and written back at close).
        self.invalid_jobs_info: dict[str, JobInfo] = {}
        #: PodGroup conditions set by plugins at close: job uid → condition type → update.
        self.pod_group_conditions: dict[str, dict[str, PodGroupConditionUpdate]] = {}
        #: Events about PodGroups raised by plugins: (job, type, reason, message).
        self.pod_group_events: list[tuple[JobInfo, str, str, str]] = []
        self.warnings: list[str] = []
        #: The HyperNode tree (None or empty: no network topology in this cluster).
        self.hyper_nodes: HyperNodeTree | None = None
        self._hyper_node_masks: dict[str, BoolArray] = {}
        #: Job uid → (hard, highest tier) as the session reads its network topology (see
        #: :meth:`hard_topology`).
        self.job_topology: dict[str, tuple[bool, int]] = {}

    def release_plugins(self) -> None:
        """Let go of the plugins, their event handlers and every function they registered, as
        Volcano's ``closeSession`` does once the session is closed. The plugins' functions hold the
        plugins and the session, and the session holds them: reference cycles that keep every job,
        task and pod the session looked at until Python's cycle collector runs, which is seldom in
        a scheduling process (``runtime/collector.py``). Released, a closed session's memory is
        freed as soon as its last reference goes."""
        self._init_plugin_functions()
        # The sort keys built from the session's own comparisons (bound methods) are cycles too.
        for name, attr in vars(type(self)).items():
            if isinstance(attr, functools.cached_property):
                self.__dict__.pop(name, None)

    def _init_plugin_functions(self) -> None:
        """The functions plugins register, by plugin name (dispatched in tier order)."""
        self.plugins: dict[str, Any] = {}
        self.event_handlers: list[EventHandler] = []
        self._resolved: dict[tuple[int, str | None, int], list[tuple[int, Any]]] = {}
        self._options: dict[str, PluginOption] = {p.name: p for t in self.tiers for p in t.plugins}
        self.job_order_fns: dict[str, CompareFn] = {}
        self.job_order_keys: dict[str, Callable[[JobInfo], Any]] = {}
        self.queue_order_fns: dict[str, CompareFn] = {}
        self.task_order_fns: dict[str, CompareFn] = {}
        self.predicate_fns: dict[str, PredicateFn] = {}
        self.predicate_mask_fns: dict[str, PredicateMaskFn] = {}
        self.node_order_fns: dict[str, NodeOrderFn] = {}
        self.preemptable_fns: dict[str, EvictableFn] = {}
        self.reclaimable_fns: dict[str, EvictableFn] = {}
        #: The victim filters of gangpreempt and gangreclaim (Volcano ``UnifiedEvictableFn``).
        self.unified_evictable_fns: dict[str, UnifiedEvictableFn] = {}
        self.overused_fns: dict[str, Callable[[QueueInfo], bool]] = {}
        self.allocatable_fns: dict[str, Callable[[QueueInfo, TaskInfo], bool]] = {}
        #: Plugins whose allocatable function only says no more often as the queue's allocation grows.
        self.allocatable_monotone: set[str] = set()
        self.preemptive_fns: dict[str, Callable[[QueueInfo, TaskInfo], bool]] = {}
        self.job_ready_fns: dict[str, Callable[[JobInfo], bool]] = {}
        self.job_pipelined_fns: dict[str, Callable[[JobInfo], int]] = {}
        self.job_valid_fns: dict[str, Callable[[JobInfo], ValidateResult | None]] = {}
        self.job_enqueueable_fns: dict[str, Callable[[JobInfo], int]] = {}
        self.job_enqueued_fns: dict[str, Callable[[JobInfo], None]] = {}
        self.job_starving_fns: dict[str, Callable[[JobInfo], bool]] = {}
        self.victim_tasks_fns: dict[str, Callable[[list[TaskInfo]], list[TaskInfo]]] = {}
        #: Which of two victims' queues gives up a task first, given the preemptor's queue.
        #: network-topology-aware's: the HyperNodes a job may go to, by ascending tier (allocate
        #: tries them gradient by gradient; eviction the other way round), and the score of each
        #: HyperNode a job fits in.
        self.hyper_node_gradient_fns: dict[str, GradientFn] = {}
        self.hyper_node_order_fns: dict[str, Callable[[JobInfo, list[str]], dict[str, float]]] = {}
        self.victim_queue_order_fns: dict[str, Callable[[QueueInfo, QueueInfo, QueueInfo], int]] = {}

    # -- node state ------------------------------------------------------------------------------
    def used_array(self) -> IntArray:
        """Requested resources of every slot (all pods the cache knows plus this session's
        allocations), in the session's space."""
        used: IntArray = self.table.requested[:, : len(self.space)].copy()
        return used

    def future_idle_array(self) -> IntArray:
        """Idle plus what evicted tasks release minus what pipelined tasks wait for."""
        future: IntArray = self.idle + self.releasing - self.pipelined
        return future

    def node_idle(self, slot: int) -> IntArray:
        idle: IntArray = self.idle[slot].copy()
        return idle

    def node_future_idle(self, slot: int) -> IntArray:
        future: IntArray = self.idle[slot] + self.releasing[slot] - self.pipelined[slot]
        return future

    def hyper_node_mask(self, name: str) -> BoolArray:
        """The session's nodes below HyperNode ``name``, as a mask over slots."""
        mask = self._hyper_node_masks.get(name)
        if mask is None:
            mask = np.zeros(len(self.node_mask), dtype=np.bool_)
            tree = self.hyper_nodes
            if tree is not None and name in tree.infos:
                slot_of = self.table.slot_of
                slots = [slot_of[n] for n in tree.infos[name].real_nodes if n in slot_of]
                mask[np.asarray(slots, dtype=np.int64)] = True
            mask &= self.node_mask
            self._hyper_node_masks[name] = mask
        return mask

    @contextlib.contextmanager
    def confined_to(self, mask: BoolArray) -> Iterator[None]:
        """Node searches (feasible nodes, fit errors) see only the nodes of ``mask`` meanwhile, as
        Volcano's allocate hands a HyperNode's node list to them."""
        slots, to_find = self.node_slots, self.num_feasible_nodes_to_find
        self.node_slots = slots[mask[slots]]
        self.num_feasible_nodes_to_find = num_feasible_nodes_to_find(0, len(self.node_slots))
        self.fit_error_cache.clear()
        try:
            yield
        finally:
            self.node_slots, self.num_feasible_nodes_to_find = slots, to_find
            self.fit_error_cache.clear()

    def hard_topology(self, job: JobInfo) -> tuple[bool, int]:
        """Whether the job is placed HyperNode by HyperNode, and the highest tier it may span: its
        own ``hard`` mode and tier, a ``highestTierName`` translated to its tier, and soft mode as
        hard up to the virtual top's tier (Volcano's session adjusts the spec so)."""
        adjusted = self.job_topology.get(job.uid)
        return adjusted if adjusted is not None else job.hard_topology()

    def hyper_node_gradient(
        self, job: JobInfo, hyper_node: HyperNodeInfo, purpose: SearchPurpose = SearchPurpose.ALLOCATE
    ) -> list[list[HyperNodeInfo]]:
        """Volcano's ``HyperNodeGradientForJobFn``: the first enabled plugin's answer, else the
        HyperNode given, alone."""
        for _, fn in self._each(self.hyper_node_gradient_fns, "hyper_node_gradient"):
            return fn(job, hyper_node, purpose)  # type: ignore[no-any-return]
        return [[hyper_node]]

    def hyper_node_order(self, job: JobInfo, names: list[str]) -> dict[str, float]:
        """Volcano's ``HyperNodeOrderMapFn`` summed over the enabled plugins."""
        scores = dict.fromkeys(names, 0.0)
        for _, fn in self._each(self.hyper_node_order_fns, "hyper_node_order"):
            for name, score in fn(job, names).items():
                scores[name] = scores.get(name, 0.0) + score
        return scores

    def slot_of(self, node_name: str) -> int:
        return self.table.slot_of[node_name]

    @property
    def future_differs(self) -> bool:
        """Whether some node's future idle differs from its idle (evictions or pipelined tasks)."""
        return bool(self.releasing_tasks or self.pipelined_tasks)

    def touch(self, slot: int) -> None:
        """Mark a node row changed (for the per-spec caches)."""
        self.version += 1
        self.row_version[slot] = self.version

    def waiting_jobs(self) -> list[JobInfo]:
        """The jobs with something to admit or place (all jobs unless the scheduler said which)."""
        if self.waiting is None:
            return list(self.jobs.values())
        jobs = self.jobs
        return [job for uid in self.waiting if (job := jobs.get(uid)) is not None]

    def node_tasks(self, slot: int) -> list[TaskInfo]:
        """Tasks of this session's jobs placed on a node (any status with a node)."""
        name = self.table.names[slot]
        return [t for j in self.jobs.values() for t in j.tasks.values() if t.node_name == name]

    # -- registration ----------------------------------------------------------------------------
    def add_job_order_fn(self, name: str, fn: CompareFn, key: Callable[[JobInfo], Any] | None = None) -> None:
        """``key``, when given, orders jobs as ``fn`` does: ``fn(a, b)`` has the sign of comparing
        ``key(a)`` with ``key(b)`` (lets actions sort by key instead of comparing pairs)."""
        self.job_order_fns[name] = fn
        if key is not None:
            self.job_order_keys[name] = key
        else:
            self.job_order_keys.pop(name, None)
        self._resolved.clear()

    def add_queue_order_fn(self, name: str, fn: CompareFn) -> None:
        self.queue_order_fns[name] = fn
        self._resolved.clear()

    def add_task_order_fn(self, name: str, fn: CompareFn) -> None:
        self.task_order_fns[name] = fn
        self._resolved.clear()

    def add_predicate_fn(self, name: str, fn: PredicateFn, mask_fn: PredicateMaskFn | None = None) -> None:
        """``mask_fn``, when given, answers ``fn(...).passed`` without the reasons (it must agree)."""
        self.predicate_fns[name] = fn
        self.predicate_mask_fns[name] = mask_fn if mask_fn is not None else _passed_of(fn)
        self._resolved.clear()

    def add_node_order_fn(self, name: str, fn: NodeOrderFn) -> None:
        self.node_order_fns[name] = fn
        self._resolved.clear()

    def add_preemptable_fn(self, name: str, fn: EvictableFn) -> None:
        self.preemptable_fns[name] = fn
        self._resolved.clear()

    def add_reclaimable_fn(self, name: str, fn: EvictableFn) -> None:
        self.reclaimable_fns[name] = fn
        self._resolved.clear()

    def add_unified_evictable_fn(self, name: str, fn: UnifiedEvictableFn) -> None:
        self.unified_evictable_fns[name] = fn

    def add_overused_fn(self, name: str, fn: Callable[[QueueInfo], bool]) -> None:
        self.overused_fns[name] = fn
        self._resolved.clear()

    def add_allocatable_fn(
        self, name: str, fn: Callable[[QueueInfo, TaskInfo], bool], *, monotone: bool = False
    ) -> None:
        """``monotone``: once ``fn`` refuses a task, it refuses it for as long as the queue's
        allocation does not shrink (lets the allocate action skip jobs it would refuse anyway)."""
        self.allocatable_fns[name] = fn
        if monotone:
            self.allocatable_monotone.add(name)
        else:
            self.allocatable_monotone.discard(name)
        self._resolved.clear()

    def add_preemptive_fn(self, name: str, fn: Callable[[QueueInfo, TaskInfo], bool]) -> None:
        self.preemptive_fns[name] = fn
        self._resolved.clear()

    def add_job_ready_fn(self, name: str, fn: Callable[[JobInfo], bool]) -> None:
        self.job_ready_fns[name] = fn
        self._resolved.clear()

    def add_job_pipelined_fn(self, name: str, fn: Callable[[JobInfo], int]) -> None:
        self.job_pipelined_fns[name] = fn
        self._resolved.clear()

    def add_job_valid_fn(self, name: str, fn: Callable[[JobInfo], ValidateResult | None]) -> None:
        self.job_valid_fns[name] = fn
        self._resolved.clear()

    def add_job_enqueueable_fn(self, name: str, fn: Callable[[JobInfo], int]) -> None:
        self.job_enqueueable_fns[name] = fn
        self._resolved.clear()

    def add_job_enqueued_fn(self, name: str, fn: Callable[[JobInfo], None]) -> None:
        self.job_enqueued_fns[name] = fn
        self._resolved.clear()

    def add_job_starving_fn(self, name: str, fn: Callable[[JobInfo], bool]) -> None:
        self.job_starving_fns[name] = fn
        self._resolved.clear()

    def add_victim_tasks_fn(self, name: str, fn: Callable[[list[TaskInfo]], list[TaskInfo]]) -> None:
        self.victim_tasks_fns[name] = fn
        self._resolved.clear()

    def add_victim_queue_order_fn(
        self, name: str, fn: Callable[[QueueInfo, QueueInfo, QueueInfo], int]
    ) -> None:
        self.victim_queue_order_fns[name] = fn

    def victim_queue_compare(self, left: QueueInfo, right: QueueInfo, preemptor: QueueInfo) -> int:
        """Negative when ``left``'s tasks are evicted before ``right``'s (Volcano
        ``VictimQueueOrderFn``: the first plugin with an opinion, tier by tier, no switch; otherwise
        the queue last in queue order first)."""
        for tier in self.tiers:
            for opt in tier.plugins:
                fn = self.victim_queue_order_fns.get(opt.name)
                if fn is None:
                    continue
                res = fn(left, right, preemptor)
                if res != 0:
                    return -1 if res < 0 else 1
        return -self.queue_compare(left, right)

    def add_event_handler(self, handler: EventHandler) -> None:
        self.event_handlers.append(handler)

    def register_pre_binder(self, binder: PreBinder) -> None:
        """Volcano ``RegisterBinder``: ``binder`` runs before every committed task's bind."""
        self.pre_binders.append(binder)

    # -- dispatch helpers ------------------------------------------------------------------------
    def _each(self, fns: dict[str, Any], switch: str | None) -> list[tuple[int, Any]]:
        """(tier index, fn) for every enabled plugin with a registered fn, in tier order (resolved
        once per registry state: dispatch runs for every task)."""
        key = (id(fns), switch, len(fns))
        hit = self._resolved.get(key)
        if hit is not None:
            return hit
        out: list[tuple[int, Any]] = []
        for ti, tier in enumerate(self.tiers):
            for opt in tier.plugins:
                fn = fns.get(opt.name)
                if fn is None:
                    continue
                if switch is not None and not opt.enabled(switch):
                    continue
                out.append((ti, fn))
        self._resolved[key] = out
        return out

    def plugin_enabled(self, name: str, switch: str) -> bool:
        opt = self._options.get(name)
        return opt is not None and opt.enabled(switch)

    # -- orders ----------------------------------------------------------------------------------
    def _tiered_compare(
        self, fns: dict[str, Any], switch: str, left: Any, right: Any, created: Callable[[Any], str]
    ) -> int:
        """Volcano's order functions: the first enabled plugin (tier by tier) with an opinion
        decides; otherwise the older object goes first, then the smaller uid."""
        for _, fn in self._each(fns, switch):
            res = fn(left, right)
            if res != 0:
                return -1 if res < 0 else 1
        left_ts, right_ts = created(left), created(right)
        if left_ts == right_ts:
            left_uid: str = left.uid
            right_uid: str = right.uid
            return (left_uid > right_uid) - (left_uid < right_uid)
        return -1 if left_ts < right_ts else 1

    def job_compare(self, left: JobInfo, right: JobInfo) -> int:
        return self._tiered_compare(self.job_order_fns, "job_order", left, right, _created)

    def job_order_fn(self, left: JobInfo, right: JobInfo) -> bool:
        """True when ``left`` goes before ``right``."""
        return self.job_compare(left, right) < 0

    def job_order_key(self) -> Callable[[JobInfo], tuple[Any, ...]] | None:
        """A key that sorts jobs as :meth:`job_compare` does (``None`` when an enabled job order
        function has no key). Keys of distinct jobs never tie (the uid comes last)."""
        keys: list[Callable[[JobInfo], Any]] = []
        for tier in self.tiers:
            for opt in tier.plugins:
                if opt.name not in self.job_order_fns or not opt.enabled("job_order"):
                    continue
                key = self.job_order_keys.get(opt.name)
                if key is None:
                    return None
                keys.append(key)

        def job_key(job: JobInfo) -> tuple[Any, ...]:
            return (*[k(job) for k in keys], job.creation_timestamp, job.uid)

        return job_key

    def queue_compare(self, left: QueueInfo, right: QueueInfo) -> int:
        return self._tiered_compare(self.queue_order_fns, "queue_order", left, right, _queue_created)

    def queue_order_fn(self, left: QueueInfo, right: QueueInfo) -> bool:
        return self.queue_compare(left, right) < 0

    def task_compare(self, left: TaskInfo, right: TaskInfo) -> int:
        return self._tiered_compare(self.task_order_fns, "task_order", left, right, _created)

    def task_order_fn(self, left: TaskInfo, right: TaskInfo) -> bool:
        return self.task_compare(left, right) < 0

    @functools.cached_property
    def job_key(self) -> Callable[[JobInfo], Any]:
        return functools.cmp_to_key(self.job_compare)

    @functools.cached_property
    def queue_key(self) -> Callable[[QueueInfo], Any]:
        return functools.cmp_to_key(self.queue_compare)

    @functools.cached_property
    def task_key(self) -> Callable[[TaskInfo], Any]:
        return functools.cmp_to_key(self.task_compare)

    # -- nodes -----------------------------------------------------------------------------------
    def predicate(self, task: TaskInfo) -> FilterResult:
        """Every enabled predicate over all slots; a slot passes only if all plugins pass it.

        Per slot, the reasons are those of the first plugin that rejected it (Volcano's
        ``PredicateFn`` returns at the first failing plugin)."""
        passed: BoolArray = self.node_mask.copy()
        failures: list[NodeFailure] = []
        for _, fn in self._each(self.predicate_fns, "predicate"):
            res: FilterResult = fn(task, self.table)
            newly = passed & ~res.passed
            if newly.any():
                for f in res.failures:
                    hit = f.nodes & newly
                    if hit.any():
                        failures.append(NodeFailure(f.reason, hit, f.unresolvable))
                passed &= res.passed
        return FilterResult(passed, failures)

    def predicate_mask(self, task: TaskInfo) -> BoolArray:
        """The slots :meth:`predicate` passes, without collecting reasons."""
        passed: BoolArray = self.node_mask
        for _, fn in self._each(self.predicate_mask_fns, "predicate"):
            passed = passed & fn(task, self.table)
        return passed

    def node_order(self, task: TaskInfo, slots: IntArray) -> FloatArray:
        """Sum of every enabled node-order function's scores for ``slots`` (no tier precedence)."""
        total = np.zeros(len(slots), dtype=np.float64)
        for _, fn in self._each(self.node_order_fns, "node_order"):
            total += np.asarray(fn(task, self.table, slots), dtype=np.float64)
        return total

    # -- victims ---------------------------------------------------------------------------------
    def _victims(
        self, fns: dict[str, EvictableFn], switch: str, task: TaskInfo, cands: list[TaskInfo]
    ) -> list[TaskInfo]:
        def answer(opt: PluginOption) -> tuple[list[TaskInfo], int] | None:
            fn = fns.get(opt.name)
            if fn is None or not opt.enabled(switch):
                return None
            return fn(task, cands)

        return self._dispatch(answer, switch, task.key)

    def _dispatch(
        self,
        answer: Callable[[PluginOption], tuple[list[TaskInfo], int] | None],
        switch: str,
        key: str,
    ) -> list[TaskInfo]:
        """Volcano's victim dispatch: plugins of a tier intersect their answers; an empty answer ends
        the tier without a decision; the first tier with a decision wins. ``answer`` is a plugin's
        (victims, abstain), or None when it has no function here."""
        victims: list[TaskInfo] | None = None
        undecided: list[tuple[int, str]] = []
        for number, tier in enumerate(self.tiers, 1):
            deciders: list[str] = []
            emptied = ""
            for opt in tier.plugins:
                answered = answer(opt)
                if answered is None:
                    continue
                candidates, abstain = answered
                if abstain == ABSTAIN:
                    continue
                if not candidates:
                    victims = None
                    emptied = opt.name
                    break
                deciders.append(opt.name)
                if victims is None:
                    victims = list(candidates)
                else:
                    keep = {c.uid for c in candidates}
                    victims = [v for v in victims if v.uid in keep]
            if victims is not None:
                self._last_verdict = VictimVerdict(switch, key, number, tuple(deciders), tuple(undecided))
                self._last_victims = victims
                return victims
            undecided.append((number, emptied))
        self._last_verdict = None
        self._last_victims = []
        return []

    def verdict_for(self, task: TaskInfo) -> VictimVerdict | None:
        """How the last call of the victim functions chose ``task`` (None: it did not)."""
        if self._last_verdict is None or not any(v is task for v in self._last_victims):
            return None
        return self._last_verdict

    def preemptable(self, preemptor: TaskInfo, preemptees: list[TaskInfo]) -> list[TaskInfo]:
        return self._victims(self.preemptable_fns, "preemptable", preemptor, preemptees)

    def reclaimable(self, reclaimer: TaskInfo, reclaimees: list[TaskInfo]) -> list[TaskInfo]:
        return self._victims(self.reclaimable_fns, "reclaimable", reclaimer, reclaimees)

    def unified_evictable(self, ctx: EvictionContext, candidates: list[TaskInfo]) -> list[TaskInfo]:
        """Volcano ``UnifiedEvictable``: the victim dispatch of :meth:`preemptable` (a tier's plugins
        intersect, an empty answer ends the tier undecided, the first tier that decides wins) over
        the unified victim filters, which no plugin switch turns off. The verdict is kept for the
        evictions that follow, as for the other victim functions."""

        def answer(opt: PluginOption) -> tuple[list[TaskInfo], int] | None:
            fn = self.unified_evictable_fns.get(opt.name)
            return None if fn is None else fn(ctx, candidates)

        return self._dispatch(answer, ctx.kind.value, ctx.job.uid)

    def victim_tasks(self, tasks: list[TaskInfo]) -> list[TaskInfo]:
        out: dict[str, TaskInfo] = {}
        for _, fn in self._each(self.victim_tasks_fns, "victim"):
            for t in fn(tasks):
                out[t.uid] = t
        return list(out.values())

    # -- queues ----------------------------------------------------------------------------------
    def overused(self, queue: QueueInfo) -> bool:
        return any(fn(queue) for _, fn in self._each(self.overused_fns, "overused"))

    def allocatable_for(self, queue: QueueInfo, task: TaskInfo) -> bool:
        """Volcano ``Allocatable``: every enabled plugin must allow ``task`` into ``queue``."""
        return all(fn(queue, task) for _, fn in self._each(self.allocatable_fns, "allocatable"))

    def allocatable(self, queue: QueueInfo, task: TaskInfo) -> bool:
        return self.allocatable_for(queue, task)

    def allocatable_is_monotone(self) -> bool:
        """Whether every enabled allocatable function is monotone (see :meth:`add_allocatable_fn`)."""
        names = [
            opt.name
            for tier in self.tiers
            for opt in tier.plugins
            if opt.name in self.allocatable_fns and opt.enabled("allocatable")
        ]
        return bool(names) and all(n in self.allocatable_monotone for n in names)

    def preemptive(self, queue: QueueInfo, task: TaskInfo) -> bool:
        return all(fn(queue, task) for _, fn in self._each(self.preemptive_fns, "preemptive"))

    # -- jobs ------------------------------------------------------------------------------------
    def job_ready(self, job: JobInfo) -> bool:
        return all(fn(job) for _, fn in self._each(self.job_ready_fns, "job_ready"))

    def _vote(self, fns: dict[str, Callable[[JobInfo], int]], switch: str, job: JobInfo) -> bool:
        found = False
        current_tier = -1
        for ti, fn in self._each(fns, switch):
            if ti != current_tier:
                if found:
                    return True
                current_tier = ti
            res = fn(job)
            if res < 0:
                return False
            if res > 0:
                found = True
        return True

    def job_pipelined(self, job: JobInfo) -> bool:
        return self._vote(self.job_pipelined_fns, "job_pipelined", job)

    def job_enqueueable(self, job: JobInfo) -> bool:
        return self._vote(self.job_enqueueable_fns, "job_enqueued", job)

    def job_enqueued(self, job: JobInfo) -> None:
        for _, fn in self._each(self.job_enqueued_fns, "job_enqueued"):
            fn(job)

    def job_valid(self, job: JobInfo) -> ValidateResult | None:
        for _, fn in self._each(self.job_valid_fns, None):
            vr: ValidateResult | None = fn(job)
            if vr is not None and not vr.passed:
                return vr
        return None

    def job_starving(self, job: JobInfo) -> bool:
        """The first tier with a jobStarving function decides; every such plugin must agree."""
        found = False
        current = -1
        for ti, fn in self._each(self.job_starving_fns, "job_starving"):
            if ti != current and found:
                return True
            current = ti
            found = True
            if not fn(job):
                return False
        return found

    # -- statements and events -------------------------------------------------------------------
    def fire_allocate(self, task: TaskInfo) -> list[str]:
        """Run every allocate handler; the errors they reported (Volcano runs them all, then
        rolls the placement back if any failed)."""
        errors: list[str] = []
        for h in self.event_handlers:
            if h.allocate_func is not None:
                ev = Event(task)
                h.allocate_func(ev)
                if ev.err is not None:
                    errors.append(ev.err)
        return errors

    def fire_deallocate(self, task: TaskInfo) -> None:
        ev = Event(task)
        for h in self.event_handlers:
            if h.deallocate_func is not None:
                h.deallocate_func(ev)

    def record_pod_group_event(self, job: JobInfo, event_type: str, reason: str, message: str) -> None:
        self.pod_group_events.append((job, event_type, reason, message))

    def update_pod_group_condition(self, job: JobInfo, cond: PodGroupConditionUpdate) -> None:
        self.pod_group_conditions.setdefault(job.uid, {})[cond.type] = cond

    # -- task placement primitives (used by Statement) -------------------------------------------
    def place(self, task: TaskInfo, slot: int) -> None:
        """Count ``task`` on a node row (allocate)."""
        table = self.table
        table.add_pod(slot, task.pod)
        self._refresh_idle(slot)
        task.slot = slot
        task.node_name = table.names[slot]
        self.touch(slot)

    def unplace(self, task: TaskInfo) -> None:
        slot = task.slot
        if slot >= 0:
            self.table.remove_pod(slot, task.pod)
            self._refresh_idle(slot)
            self.touch(slot)
        task.slot = -1
        task.node_name = ""

    def _refresh_idle(self, slot: int) -> None:
        idle = self.idle
        np.subtract(self.node_allocatable[slot], self.table.requested[slot, : idle.shape[1]], out=idle[slot])

    def add_releasing(self, slot: int, task: TaskInfo, sign: int = 1) -> None:
        """Count (``sign`` 1) or stop counting (-1) an evicted task's request as releasing on a row."""
        self.releasing[slot] += sign * _task_vector(task)
        self.releasing_tasks += sign
        self.touch(slot)

    def add_pipelined(self, slot: int, task: TaskInfo, sign: int = 1) -> None:
        """Count (``sign`` 1) or stop counting (-1) a pipelined task's request on a row."""
        self.pipelined[slot] += sign * _task_vector(task)
        self.pipelined_tasks += sign
        self.touch(slot)

    # -- the pod index (inter-pod affinity, topology spread) -------------------------------------
    def _index_changed(self, pod: Pod) -> None:
        self.pods_version += 1
        if self.pod_index is not None and self.pod_index.terms_of(pod) is not NO_TERMS:
            self.terms_version += 1

    def index_add(self, task: TaskInfo, slot: int) -> None:
        """Count ``task`` on the node in ``slot`` for the topology plugins (allocate, pipeline,
        an eviction undone)."""
        index = self.pod_index
        if index is None or slot < 0:
            return
        pod = task.pod
        if pod.uid not in self._index_original:
            self._index_original[pod.uid] = (pod, index.slot_of(pod.uid))
        index.add(pod, slot)
        self._index_changed(pod)

    def index_remove(self, task: TaskInfo) -> None:
        """Stop counting ``task`` (evicted, or an allocation undone)."""
        index = self.pod_index
        if index is None:
            return
        pod = task.pod
        was = index.slot_of(pod.uid)
        if was is None:
            return
        if pod.uid not in self._index_original:
            self._index_original[pod.uid] = (pod, was)
        index.remove(pod)
        self._index_changed(pod)

    def restore_pod_index(self) -> None:
        """Put the pod index back as the session found it (the scheduler then assumes the pods it
        binds, and evicted pods leave when their deletion is seen)."""
        index = self.pod_index
        if index is None:
            return
        for pod, slot in self._index_original.values():
            if slot is None:
                index.remove(pod)
            else:
                index.add(pod, slot)
        self._index_original = {}


def _passed_of(fn: PredicateFn) -> PredicateMaskFn:
    def passed(task: TaskInfo, table: NodeTable) -> BoolArray:
        return fn(task, table).passed

    return passed


def _task_vector(task: TaskInfo) -> IntArray:
    """A task's request in the table's integer units (its float vector holds canonical integers)."""
    vec: IntArray = task.resreq.astype(np.int64)
    return vec


__all__ = [
    "Event",
    "EventHandler",
    "Evictee",
    "PodGroupConditionUpdate",
    "Session",
]


def _created(obj: JobInfo | TaskInfo) -> str:
    return obj.creation_timestamp


def _queue_created(queue: QueueInfo) -> str:
    return str((queue.queue.raw.get("metadata") or {}).get("creationTimestamp") or "")
