"""The batch scheduler (Volcano's ``Scheduler.runOnce``): one session every ``schedulePeriod``.

It keeps its own :class:`SchedulerCache` fed by its own store watch (the same classes the framework
scheduler uses), so binds made by either scheduler are seen by the other through the store. Each
session: snapshot (ready nodes, queues, jobs whose queue exists), open, run the configured actions,
bind what was committed, delete what was evicted, close, and write PodGroup status, events and the
pods' ``PodScheduled`` conditions back to the store.

Pods served: those whose ``spec.schedulerName`` is the batch profile's name (``volcano`` unless
configured). A pod in a PodGroup (annotation ``scheduling.k8s.io/group-name`` or label
``scheduling.x-k8s.io/pod-group``) is a task of that group's job; a batch pod in no group gets a
PodGroup of its own (``podgroup-<pod uid>``, ``minMember: 1``), as Volcano's controller creates one.
"""

from __future__ import annotations

import bisect
import copy
import itertools
import json
import logging
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from kubesched.api.objects import Node, Pod
from kubesched.batch.conf import BATCH_SCHEDULER_NAME, BatchConf
from kubesched.batch.framework import (
    BatchSnapshot,
    JobUpdate,
    close_session,
    get_action,
    job_update,
    open_session,
    unavailable,
)
from kubesched.batch.job_info import (
    POD_PREEMPTABLE_KEY,
    TASK_SPEC_KEY,
    JobInfo,
    QueueInfo,
    TaskInfo,
    TaskStatus,
    ValidateResult,
    fit_threshold_of,
)
from kubesched.batch.objects import (
    DEFAULT_QUEUE,
    SCHEDULING_VOLCANO,
    VOLCANO_API_VERSION,
    PodGroup,
    Queue,
    group_name_of,
)
from kubesched.batch.queue_totals import QueueTotals
from kubesched.batch.session import ParkedJobs, PodGroupConditionUpdate, Session
from kubesched.batch.shares import MIN_RESOURCE, ResourceSpace, Vector, capability_vector
from kubesched.cache.cache import SchedulerCache, Snapshot
from kubesched.cache.node_table import PODS_COL, NodeTable
from kubesched.scheduler.outcome import PENDING, SCHEDULED, UNSCHEDULABLE, PodOutcome
from kubesched.store.base import ClusterStore, EventType, WatchEvent

log = logging.getLogger(__name__)

#: Pod annotation naming the queue of the PodGroup created for a pod without one.
QUEUE_NAME_ANNOTATION = "scheduling.volcano.sh/queue-name"
DEFAULT_SCHEDULE_PERIOD = 1.0
QUEUE_NOT_FOUND_REASON = "QueueNotFound"


@dataclass(slots=True)
class JobReport:
    """Last known outcome of one PodGroup, for reports."""

    namespace: str
    name: str
    queue: str
    min_member: int
    phase: str = "Pending"
    bound: int = 0
    pending: int = 0
    message: str = ""
    #: Task name → why it fits no node (last session).
    fit_errors: dict[str, str] = field(default_factory=dict)


@dataclass(slots=True)
class QueueReport:
    name: str
    weight: int
    allocated: dict[str, int] = field(default_factory=dict)
    deserved: dict[str, int] | None = None
    bound: int = 0
    pending: int = 0


@dataclass(slots=True)
class SessionStats:
    #: Wall time of the whole period: snapshot, actions, binds, status writes.
    seconds: float
    pending_before: int
    bound: int
    #: Of which: the actions (the scheduling decisions).
    decide_seconds: float = 0.0
    #: CPU time of the whole period (this process), for measurements on a busy machine.
    cpu_seconds: float = 0.0
    #: Virtual time the session ran at.
    at: float = 0.0


@dataclass(slots=True, frozen=True)
class _Request:
    """A pod spec's request in the session's space, shared by the tasks of that spec."""

    vector: Vector
    best_effort: bool
    threshold: Vector
    columns: list[tuple[int, float]]


def _spec_key(pod: Pod) -> str:
    """What makes two pods schedule alike: namespace, labels and spec (without nodeName)."""
    spec = dict(pod.raw.get("spec") or {})
    spec.pop("nodeName", None)
    return json.dumps([pod.namespace, pod.labels, spec], sort_keys=True, default=str)


def _task_status(pod: Pod, assumed: bool) -> TaskStatus:
    if pod.phase == "Succeeded":
        return TaskStatus.SUCCEEDED
    if pod.phase == "Failed":
        return TaskStatus.FAILED
    if not pod.node_name:
        return TaskStatus.PENDING
    if assumed:
        return TaskStatus.BINDING
    if pod.phase == "Running":
        return TaskStatus.RUNNING
    return TaskStatus.BOUND


def _preemptable(pod: Pod) -> bool:
    for source in (pod.annotations, pod.labels):
        value = source.get(POD_PREEMPTABLE_KEY)
        if value is not None:
            return value.strip().lower() in ("true", "1", "t")
    return True


class BatchScheduler:
    def __init__(
        self,
        store: ClusterStore,
        conf: BatchConf,
        *,
        now: Callable[[], float],
        seed: int | None = 0,
        scheduler_names: tuple[str, ...] = (BATCH_SCHEDULER_NAME,),
        schedule_period: float = DEFAULT_SCHEDULE_PERIOD,
        incremental: bool = True,
    ) -> None:
        """``schedule_period``: seconds between sessions (Volcano's ``--schedule-period``, 1s).
        ``incremental=False`` rebuilds every job each session and works out every job's status
        (the reference the incremental bookkeeping must agree with; for tests and measurements)."""
        self.incremental = incremental
        self.store = store
        self.conf = conf
        self.now = now
        self.scheduler_names = frozenset(scheduler_names)
        self.schedule_period = schedule_period
        self.rng = np.random.default_rng(seed)
        self.cache = SchedulerCache()
        self.snapshot = Snapshot()
        kinds = ("PriorityClass", "Queue", "Node", "PodGroup", "Pod")
        self._watch = store.watch(frozenset(kinds))
        #: Set by cluster changes that may let a waiting pod in; cleared by a session without effect.
        self.dirty = True
        #: Unassigned pods this scheduler serves.
        self.pending: dict[str, Pod] = {}
        #: Job uid (``namespace/name``) → member pods (any scheduler, any state).
        self.members: dict[str, dict[str, Pod]] = {}
        self._job_of_pod: dict[str, str] = {}
        self.pod_groups: dict[str, PodGroup] = {}
        self.queues: dict[str, Queue] = {}
        self.priority_classes: dict[str, int] = {}
        self.outcomes: dict[str, PodOutcome] = {}
        self.jobs: dict[str, JobReport] = {}
        self.queue_reports: dict[str, QueueReport] = {}
        self.evicted: list[str] = []
        self.warnings: list[str] = [*conf.warnings, *unavailable(conf)]
        self.sessions: list[SessionStats] = []
        self.last_processed_node_index = 0
        self._actions = [a for a in (get_action(n) for n in conf.actions) if a is not None]
        self._last_events: dict[str, str] = {}
        self._spec_keys: dict[str, str] = {}
        # What sessions work on, kept between them as Volcano's cache keeps its JobInfos: jobs are
        # rebuilt from their members only when a watch event touched them, and a session undoes at
        # close whatever it did not commit. Only jobs with member pods take part (see build_snapshot).
        self._space: ResourceSpace | None = None
        self._requests: dict[str, _Request] = {}
        #: Job uid → JobInfo of every job with a PodGroup, an existing queue and at least one task.
        self._live: dict[str, JobInfo] = {}
        #: Jobs with members whose PodGroup names a queue that does not exist: uid → (group, queue).
        self._missing: dict[str, tuple[PodGroup, str]] = {}
        #: Jobs to rebuild from their members before the next session (a member or the group changed).
        self._stale: set[str] = set()
        #: Rebuild every job (first session, resource space, node slots, priority classes changed).
        self._rebuild_all = True
        #: Jobs whose PodGroup status the next session must work out again (see run_session).
        self._changed: set[str] = set()
        #: Jobs the last session found invalid (jobValid said no).
        self._invalid: set[str] = set()
        #: Live jobs with pending tasks or a phase before Running (insertion-ordered set), split in
        #: those parked (see _park) and the others.
        self._waiting: dict[str, None] = {}
        self._unparked: dict[str, None] = {}
        #: Queue → its parked jobs; job uid → the queue it is parked under.
        self._parked: dict[str, _Parked] = {}
        self._parked_in: dict[str, str] = {}
        self._parking_actions = set(conf.actions) <= {"enqueue", "allocate", "backfill"}
        #: Per job, (phase, job fit errors, task fit errors) as of its last job update.
        self._outcome_keys: dict[str, tuple[str, str, dict[str, str]]] = {}
        #: Per-queue sums over the live jobs (proportion's inputs, the queue report).
        self._totals: QueueTotals | None = None
        #: Check the kept sums against a fresh sum every session (tests).
        self.verify_totals = False
        #: The queue report's inputs as of the last session (materialized by queue_report_list).
        self._queue_state: _QueueState | None = None
        self._queue_infos: dict[str, QueueInfo] | None = None
        self._ready: tuple[np.ndarray[Any, np.dtype[np.bool_]], dict[str, Any]] | None = None
        #: Resource names asked for by pending pods and PodGroups (name → how many ask).
        self._wanted_names: dict[str, int] = {}
        self._pg_names: dict[str, tuple[str, ...]] = {}
        # Like an informer's initial list: whatever the store already holds.
        for kind in kinds:
            for obj in store.list(kind):
                self._dispatch(WatchEvent(EventType.ADDED, kind, obj))
        self._warned: set[str] = set(self.warnings)

    # -- informers -------------------------------------------------------------------------------
    def responsible_for(self, pod: Pod) -> bool:
        return pod.scheduler_name in self.scheduler_names

    def handle_events(self) -> int:
        n = 0
        for event in self._watch.drain():
            n += 1
            self._dispatch(event)
        return n

    def _dispatch(self, event: WatchEvent) -> None:
        kind = event.kind
        if kind in ("Node", "Queue", "PriorityClass") or event.type != EventType.MODIFIED:
            self.dirty = True
        elif event.old is not None:
            old_spec, new_spec = event.old.get("spec") or {}, event.obj.get("spec") or {}
            if old_spec.get("nodeName") != new_spec.get("nodeName") or (
                kind == "PodGroup" and old_spec != new_spec
            ):
                self.dirty = True
        if kind == "Node":
            self._on_node(event)
        elif kind == "Pod":
            self._on_pod(event)
        elif kind == "PodGroup":
            self._on_pod_group(event)
        elif kind == "Queue":
            self._on_queue(event)
        elif kind == "PriorityClass":
            name = str(event.obj["metadata"]["name"])
            if event.type == EventType.DELETED:
                self.priority_classes.pop(name, None)
            else:
                self.priority_classes[name] = int(event.obj.get("value") or 0)
            self._rebuild_all = True

    def _on_node(self, event: WatchEvent) -> None:
        # Tasks keep node slots, and parked jobs keep their order, which may read the cluster's
        # total resources: every job is rebuilt.
        self._ready = None
        self._rebuild_all = True
        if event.type == EventType.DELETED:
            self.cache.remove_node(str(event.obj["metadata"]["name"]))
            return
        node = Node.from_dict(event.obj)
        if event.type == EventType.ADDED:
            self.cache.add_node(node)
        else:
            self.cache.update_node(node)

    def _parse_pod(self, obj: Mapping[str, Any]) -> Pod | None:
        uid = str(obj["metadata"].get("uid"))
        known = self.pending.get(uid)
        if known is None:
            st = self.cache.pod_state(uid)
            known = st.pod if st is not None else None
        spec = obj.get("spec") or {}
        if known is not None and known.raw.get("spec", {}).get("containers") is spec.get("containers"):
            pod = copy.copy(known)
            pod.node_name = str(spec.get("nodeName") or "")
            pod.raw = obj
            pod.phase = str((obj.get("status") or {}).get("phase") or "Pending")
            return pod
        try:
            return Pod.from_dict(obj)
        except Exception as exc:  # a bad object must not stop the scheduler
            log.warning("ignoring pod %s: %s", obj.get("metadata", {}).get("name"), exc)
            return None

    def _job_uid_of(self, pod: Pod) -> str | None:
        group = group_name_of(pod.raw)
        if group is not None:
            return f"{pod.namespace}/{group[1]}"
        if self.responsible_for(pod):
            return f"{pod.namespace}/podgroup-{pod.uid}"
        return None

    def _count_names(self, names: Any, delta: int) -> None:
        wanted = self._wanted_names
        for name in names:
            n = wanted.get(name, 0) + delta
            if n > 0:
                wanted[name] = n
            else:
                wanted.pop(name, None)

    def _set_pending(self, pod: Pod) -> None:
        old = self.pending.get(pod.uid)
        if old is not None:
            self._count_names(old.requests, -1)
        self.pending[pod.uid] = pod
        self._count_names(pod.requests, +1)

    def _drop_pending(self, uid: str) -> None:
        old = self.pending.pop(uid, None)
        if old is not None:
            self._count_names(old.requests, -1)

    def _on_pod(self, event: WatchEvent) -> None:
        pod = self._parse_pod(event.obj)
        if pod is None:
            return
        uid = pod.uid
        if event.type == EventType.DELETED:
            self._drop_pending(uid)
            self.cache.remove_pod(pod)
            self._spec_keys.pop(uid, None)
            job = self._job_of_pod.pop(uid, None)
            if job is not None:
                members = self.members.get(job)
                if members is not None:
                    members.pop(uid, None)
                    if not members:
                        del self.members[job]
                self._stale.add(job)
            return
        job = self._job_of_pod.get(uid) or self._job_uid_of(pod)
        if job is not None:
            self._job_of_pod[uid] = job
            self.members.setdefault(job, {})[uid] = pod
            self._stale.add(job)
        if pod.node_name:
            self._drop_pending(uid)
            if pod.terminated:
                self.cache.remove_pod(pod)
                return
            st = self.cache.pod_state(uid)
            if st is None or st.assumed:
                self.cache.add_pod(pod)
            else:
                self.cache.update_pod(pod)
            return
        if pod.terminated or not self.responsible_for(pod):
            return
        self._set_pending(pod)
        self.outcomes.setdefault(
            uid, PodOutcome(pod.namespace, pod.name, uid, scheduler_name=pod.scheduler_name)
        )
        if group_name_of(pod.raw) is None:
            self._ensure_own_group(pod)

    def _ensure_own_group(self, pod: Pod) -> None:
        """Volcano's controller gives a batch pod without a PodGroup one of its own."""
        name = f"podgroup-{pod.uid}"
        key = f"{pod.namespace}/{name}"
        if key in self.pod_groups:
            return
        queue = pod.annotations.get(QUEUE_NAME_ANNOTATION) or DEFAULT_QUEUE
        obj: dict[str, Any] = {
            "apiVersion": VOLCANO_API_VERSION,
            "kind": "PodGroup",
            "metadata": {
                "name": name,
                "namespace": pod.namespace,
                "ownerReferences": [{"apiVersion": "v1", "kind": "Pod", "name": pod.name, "uid": pod.uid}],
            },
            "spec": {"minMember": 1, "queue": queue, "priorityClassName": pod.priority_class_name or None},
        }
        existing = self.store.get("PodGroup", pod.namespace, name)
        created = existing if existing is not None else self.store.create(obj)
        self._set_pod_group(key, PodGroup.from_dict(created))

    def _set_pod_group(self, key: str, pg: PodGroup | None) -> None:
        """Record a PodGroup (``None``: deleted). A change of status alone is applied to the live job
        in place; anything else rebuilds the job."""
        old = self.pod_groups.get(key)
        if old is not None:
            self._count_names(self._pg_names.pop(key, ()), -1)
        if pg is None:
            self.pod_groups.pop(key, None)
            self._stale.add(key)
            return
        self.pod_groups[key] = pg
        names = tuple(pg.min_resources)
        self._pg_names[key] = names
        self._count_names(names, +1)
        job = self._live.get(key)
        if (
            job is not None
            and old is not None
            and key not in self._stale
            and (old.raw.get("spec") or {}) == (pg.raw.get("spec") or {})
        ):
            job.pod_group = pg
            job.phase = pg.phase
            self._changed.add(key)
            self._track(key)
        else:
            self._stale.add(key)

    def _on_pod_group(self, event: WatchEvent) -> None:
        meta = event.obj.get("metadata") or {}
        key = f"{meta.get('namespace') or 'default'}/{meta.get('name')}"
        if event.type == EventType.DELETED:
            self._set_pod_group(key, None)
            return
        try:
            pg = PodGroup.from_dict(event.obj)
        except Exception as exc:
            log.warning("ignoring PodGroup %s: %s", key, exc)
            return
        self._set_pod_group(key, pg)

    def _on_queue(self, event: WatchEvent) -> None:
        name = str((event.obj.get("metadata") or {}).get("name"))
        self._queue_infos = None
        self._rebuild_all = True  # which jobs have a queue
        if event.type == EventType.DELETED:
            self.queues.pop(name, None)
            return
        try:
            self.queues[name] = Queue.from_dict(event.obj)
        except Exception as exc:
            log.warning("ignoring Queue %s: %s", name, exc)

    # -- state -----------------------------------------------------------------------------------
    @property
    def has_pending(self) -> bool:
        return bool(self.pending)

    @property
    def wants_session(self) -> bool:
        """Pods wait and something changed since the last session that made no progress."""
        return bool(self.pending) and self.dirty

    def _queue_objects(self) -> dict[str, Queue]:
        queues = dict(self.queues)
        if DEFAULT_QUEUE not in queues:
            # Volcano installs a `default` queue (weight 1, reclaimable).
            queues[DEFAULT_QUEUE] = Queue.from_dict(
                {"apiVersion": VOLCANO_API_VERSION, "kind": "Queue", "metadata": {"name": DEFAULT_QUEUE}}
            )
        return queues

    def _private_table(self, names: set[str]) -> NodeTable:
        """A copy of the snapshot's table the session may write to (rows it places tasks on)."""
        src = self.snapshot.table
        table = copy.copy(src)
        table.resource_names = list(src.resource_names)
        table.resource_col = dict(src.resource_col)
        table.allocatable = src.allocatable.copy()
        table.requested = src.requested.copy()
        table.nonzero_requested = src.nonzero_requested.copy()
        table.host_ports = dict(src.host_ports)
        table.host_ports_any = dict(src.host_ports_any)
        for name in sorted(names):
            table.column(name)
        return table

    # -- one session -----------------------------------------------------------------------------
    def build_snapshot(self) -> tuple[BatchSnapshot, dict[str, tuple[PodGroup, str]]]:
        """The session's snapshot, and the jobs left out because their queue does not exist.

        Jobs are those of PodGroups with at least one member pod: a PodGroup whose pods have not
        been created yet, or have all finished and been deleted, is not in the session (its status
        keeps what the last session wrote). Job and task infos are kept between sessions and rebuilt
        only for jobs a watch event touched, so a session costs what changed and what waits, not
        every job the run has seen."""
        self.cache.update_snapshot(self.snapshot)
        if self._queue_infos is None:
            queues = self._queue_objects()
        else:
            queues = {name: q.queue for name, q in self._queue_infos.items()}
        names: set[str] = set(self._wanted_names)
        for q in queues.values():
            names.update(q.capability, q.guarantee, q.deserved)
        table = self._private_table(names)
        space_names = tuple(table.resource_names)
        if self._space is None or self._space.names != space_names:
            self._space = ResourceSpace(space_names)
            self._requests = {}
            self._queue_infos = None
            self._rebuild_all = True
        space = self._space
        if self._ready is None:
            infos = self.snapshot.node_infos
            ready_mask = np.zeros(table.capacity, dtype=np.bool_)
            ready_infos = {}
            for slot in table.order.tolist():
                info = infos.get(table.names[slot])
                if info is not None and info.node is not None and info.node.ready:
                    ready_mask[slot] = True
                    ready_infos[info.node.name] = info
            self._ready = (ready_mask, ready_infos)
        ready, node_infos = self._ready
        if self._queue_infos is None:
            self._queue_infos = {
                name: QueueInfo(
                    uid=name,
                    name=name,
                    weight=q.weight,
                    queue=q,
                    capability=capability_vector(space, q.capability),
                    guarantee=space.from_dict({k: v for k, v in q.guarantee.items() if k in space.names}),
                    deserved=space.from_dict({k: v for k, v in q.deserved.items() if k in space.names}),
                    reclaimable=q.reclaimable,
                    priority=q.priority,
                )
                for name, q in queues.items()
            }
        queue_infos = dict(self._queue_infos)
        self._refresh_jobs(space, table, queue_infos)
        snap = BatchSnapshot(
            table=table,
            node_infos=dict(node_infos),
            node_mask=ready.copy(),
            jobs=dict(self._live),
            queues=queue_infos,
            space=space,
            now=self.now(),
            rng=self.rng,
            pod_index=self.cache.pod_index,
        )
        return snap, dict(self._missing)

    def _refresh_jobs(
        self, space: ResourceSpace, table: NodeTable, queue_infos: dict[str, QueueInfo]
    ) -> None:
        """Rebuild the jobs watch events touched (every job after a change of space, nodes, queues
        or priority classes)."""
        if self._rebuild_all or self._totals is None or self._totals.space != space:
            self._rebuild_all = False
            self._live.clear()
            self._missing.clear()
            self._waiting.clear()
            self._unparked.clear()
            self._parked.clear()
            self._parked_in.clear()
            self._totals = QueueTotals(space)
            stale = set(self.members) | self._stale
        else:
            stale = self._stale
        self._stale = set()
        if not stale:
            return
        totals = self._totals
        zero = space.zeros()
        requests = self._requests
        for key in stale:
            self._live.pop(key, None)
            self._missing.pop(key, None)
            members = self.members.get(key)
            pg = self.pod_groups.get(key)
            if not members or pg is None:
                continue
            if pg.queue not in queue_infos:
                self._missing[key] = (pg, pg.queue)
                continue
            job = JobInfo(
                uid=key,
                name=pg.name,
                namespace=pg.namespace,
                queue=pg.queue,
                priority=self.priority_classes.get(pg.priority_class_name, 0)
                if pg.priority_class_name
                else 0,
                min_available=pg.min_member,
                pod_group=pg,
                allocated=zero.copy(),
                total_request=zero.copy(),
                min_resources=space.from_dict(
                    {k: v for k, v in pg.min_resources.items() if k in space.names}
                ),
                creation_timestamp=pg.creation_timestamp,
                task_min_available=dict(pg.min_task_member),
                phase=pg.phase,
            )
            for pod in members.values():
                st = self.cache.pod_state(pod.uid)
                assumed = st is not None and st.assumed and not st.binding_finished
                if pod.node_name and st is None and not pod.terminated:
                    continue  # not seen by the cache yet
                if not pod.node_name and any(name not in table.resource_col for name in pod.requests):
                    # A member of another scheduler asking for a resource no node has: nothing
                    # here can place it, and the session's space has no axis for that resource.
                    continue
                job.add_task(self._task(pod, key, space, table, assumed, requests))
            if not job.tasks:
                continue
            self._live[key] = job
            self._changed.add(key)
        for key in stale:
            if key not in self._live:
                totals.set(key, None)
                self._outcome_keys.pop(key, None)
            self._track(key)

    def _task(
        self,
        pod: Pod,
        job: str,
        space: ResourceSpace,
        table: NodeTable,
        assumed: bool,
        requests: dict[str, _Request] | None = None,
    ) -> TaskInfo:
        """The task of ``pod``; ``requests`` shares request vectors between pods of one spec (never
        written to: every use of a task's request reads it)."""
        spec_key = self._spec_keys.get(pod.uid)
        if spec_key is None:
            spec_key = self._spec_keys[pod.uid] = _spec_key(pod)
        shared = requests.get(spec_key) if requests is not None else None
        if shared is None:
            req = np.zeros(len(space), dtype=np.float64)
            col = table.resource_col
            for name, value in pod.requests.items():
                req[col[name]] = value
            # Volcano counts one ``pods`` unit in every task's request (node allocatable has the pod
            # capacity in the same dimension), but a request of pods alone is still BestEffort.
            best_effort = not bool(np.any(req >= MIN_RESOURCE))
            req[PODS_COL] = 1.0
            shared = _Request(req, best_effort, *fit_threshold_of(req))
            if requests is not None:
                requests[spec_key] = shared
        req = shared.vector
        role = pod.annotations.get(TASK_SPEC_KEY) or pod.labels.get(TASK_SPEC_KEY) or ""
        status = _task_status(pod, assumed)
        return TaskInfo(
            uid=pod.uid,
            name=pod.name,
            namespace=pod.namespace,
            job=job,
            pod=pod,
            status=status,
            node_name=pod.node_name,
            priority=pod.priority,
            resreq=req,
            init_resreq=req,
            best_effort=shared.best_effort,
            preemptable=_preemptable(pod),
            creation_timestamp=pod.creation_timestamp,
            role=role,
            spec_key=spec_key,
            slot=table.slot_of.get(pod.node_name, -1) if pod.node_name else -1,
            fit_threshold=shared.threshold,
            fit_columns=shared.columns,
        )

    def run_session(self) -> Session | None:
        """One scheduling period. Returns the closed session (for tests and reports)."""
        if not self._actions and not self.conf.tiers:
            return None
        start = time.perf_counter()
        cpu_start = time.process_time()
        pending_before = len(self.pending)
        if not self.incremental:
            self._rebuild_all = True
        snap, missing_queue = self.build_snapshot()
        snap.rng = self.rng
        # Jobs a watch event changed since the last session (rebuilt, or their PodGroup's status
        # moved) and jobs found invalid last time: worked out again whatever happens.
        changed = {uid for uid in itertools.chain(self._changed, self._invalid) if uid in snap.jobs}
        self._changed = set()
        snap.queue_totals = self._recount(changed, snap.jobs)
        ssn = open_session(snap, self.conf)
        if self.incremental:
            ssn.waiting = self._session_waiting(ssn, changed)
            active = changed | ssn.waiting.keys()
        else:
            active = set(snap.jobs)
        open_phase = {uid: snap.jobs[uid].phase for uid in active}
        ssn.last_processed_node_index = self.last_processed_node_index
        self._drop_invalid_jobs(ssn, changed)
        decide_start = time.perf_counter()
        for action in self._actions:
            action.execute(ssn)
        decide = time.perf_counter() - decide_start
        touched = {t.job for t in ssn.touched}
        # Jobs whose state the session moved (and the kept sums must follow): tasks placed or
        # evicted, or a phase changed (enqueue).
        moved = touched | {uid for uid, phase in open_phase.items() if _phase_of(ssn, uid) != phase}
        active |= touched | ssn.attempted
        worked_on = set(active)
        evented = {job.uid for job, _, _, _ in ssn.pod_group_events}
        if self.incremental:
            active -= self._unchanged_outcomes(ssn, active - changed - moved - evented)
        ssn.update_jobs = active
        self.last_processed_node_index = ssn.last_processed_node_index
        ssn.restore_pod_index()
        bound = self._apply(ssn)
        updates = close_session(ssn)
        updates.extend(job_update(ssn, job) for job in ssn.invalid_jobs_info.values())
        self._recount(moved)
        self._write(ssn, updates, missing_queue)
        for up in updates:
            job = up.job
            self._outcome_keys[job.uid] = (job.phase, job.job_fit_errors, dict(job.fit_errors))
        self._invalid = set(ssn.invalid_jobs)
        self._settle(ssn, worked_on)
        # The kept sums follow the jobs as the next session will find them (unless events change
        # them before: those jobs are recounted then).
        self._recount(moved)
        for uid in worked_on:
            self._track(uid)
        for w in ssn.warnings:
            if w not in self._warned:
                self._warned.add(w)
                self.warnings.append(w)
        phase_changed = any(up.job.phase != up.phase for up in updates)
        self.dirty = bool(bound or ssn.to_evict or phase_changed)
        self.sessions.append(
            SessionStats(
                time.perf_counter() - start,
                pending_before,
                bound,
                decide,
                time.process_time() - cpu_start,
                snap.now,
            )
        )
        return ssn

    def _unchanged_outcomes(self, ssn: Session, candidates: set[str]) -> set[str]:
        """Of ``candidates`` (jobs no event changed and the session did not move), those whose
        session outcome matches the one last written: same phase, same fit errors. Their job update
        would come out as last time (same conditions and messages, so nothing to write), so it is
        left out."""
        same: set[str] = set()
        keys = self._outcome_keys
        for uid in candidates:
            job = ssn.jobs.get(uid)
            if job is None:
                continue
            key = keys.get(uid)
            if (
                key is not None
                and key[0] == job.phase
                and key[1] == job.job_fit_errors
                and key[2] == job.fit_errors
            ):
                same.add(uid)
        return same

    def _track(self, uid: str) -> None:
        """Keep ``_waiting`` right for one job (pending tasks, or not yet Running), and park it or
        not."""
        job = self._live.get(uid)
        queue = self._parked_in.pop(uid, None)
        if queue is not None:
            self._parked[queue].remove(uid)
            if not self._parked[queue].jobs:
                del self._parked[queue]
        if job is None or (
            TaskStatus.PENDING not in job.task_status_index and job.phase in ("Running", "Completed")
        ):
            self._waiting.pop(uid, None)
            self._unparked.pop(uid, None)
            return
        self._waiting[uid] = None
        if self._parkable(job):
            self._unparked.pop(uid, None)
            self._parked_in[uid] = job.queue
            parked = self._parked.get(job.queue)
            if parked is None:
                parked = self._parked[job.queue] = _Parked()
            parked.add(job)
        else:
            self._unparked[uid] = None

    @property
    def _parking(self) -> bool:
        """Parking needs actions that only admit and place (a preempt or reclaim may move any job)."""
        return self.incremental and self._parking_actions

    def _parkable(self, job: JobInfo) -> bool:
        """A waiting job is parked when only its queue can keep it waiting: the last session ended
        with no fit errors for it (its queue turned every task away, or never reached it), it is
        admitted (enqueue has nothing to do with it), it has no best-effort task (backfill has
        nothing to do with it) and it is valid. Such a job changes only by a watch event (it is
        then rebuilt and unparked) or when its queue has room again."""
        if not self._parking or job.uid in self._invalid or job.pending_best_effort:
            return False
        if job.phase in ("Pending", "") or TaskStatus.PENDING not in job.task_status_index:
            return False
        key = self._outcome_keys.get(job.uid)
        return key is not None and key[0] == job.phase and not key[1] and not key[2]

    def _session_waiting(self, ssn: Session, changed: set[str]) -> dict[str, None]:
        """The jobs this session's actions look at: the waiting jobs, less the parked jobs of the
        queues that refuse every request among them.

        With monotone allocatable functions (the proportion plugin's) a queue that refuses a request
        at the start of allocate refuses it all action long. Each parked job of such a queue would
        be turned away task by task, place nothing, get no fit error and end as the last session
        left it: the actions and the status update would change nothing, so they skip it."""
        waiting = dict(self._unparked)
        for uid in changed:
            if uid in self._waiting:
                waiting[uid] = None
        monotone = bool(self._parked) and ssn.allocatable_is_monotone()
        job_key = ssn.job_order_key() if monotone else None
        for name, parked in self._parked.items():
            queue = ssn.queues.get(name)
            if monotone and queue is not None and parked.refused(ssn, queue):
                continue
            if job_key is None:
                waiting.update(parked.jobs)
                continue
            # The queue has room: allocate pulls its parked jobs in job order, only as far as it
            # gets (their keys do not change while they stay parked, so the order is kept).
            ssn.parked[name] = ParkedJobs(
                parked.ordered(job_key, self._live, waiting), [t for _, t in parked.requests.values()]
            )
        return waiting

    def _recount(self, uids: set[str], jobs: Mapping[str, JobInfo] | None = None) -> QueueTotals:
        """Count the current state of the jobs ``uids`` in the kept per-queue sums. With ``jobs``
        (a session's jobs at open), check the sums cover exactly those jobs."""
        totals = self._totals
        assert totals is not None
        live = self._live
        for uid in uids:
            totals.set(uid, live.get(uid))
        if jobs is not None and (len(totals) != len(jobs) or self.verify_totals):
            fresh = QueueTotals(totals.space)
            for uid, job in jobs.items():
                fresh.set(uid, job)
            if self.verify_totals:
                _check_totals(totals, fresh)
            self._totals = totals = fresh
        return totals

    def _drop_invalid_jobs(self, ssn: Session, active: set[str] | None = None) -> None:
        """Jobs jobValid rejects leave the session with an Unschedulable condition (Volcano).

        Only ``active`` jobs are checked (all when ``None``): validity depends on the job's tasks
        alone, and a session puts back the tasks it does not bind or evict, so a job no watch event
        changed since the last session keeps last session's verdict (the invalid ones are
        checked again)."""
        for uid in list(ssn.jobs) if active is None else [u for u in ssn.jobs if u in active]:
            job = ssn.jobs[uid]
            vr: ValidateResult | None = ssn.job_valid(job)
            if vr is None:
                continue
            ssn.invalid_jobs[uid] = vr
            ssn.invalid_jobs_info[uid] = job
            job.job_fit_errors = vr.message
            ssn.update_pod_group_condition(
                job, PodGroupConditionUpdate("Unschedulable", "True", vr.reason, vr.message, ssn.uid)
            )
            del ssn.jobs[uid]

    def _settle(self, ssn: Session, active: set[str]) -> None:
        """Undo what the session did to the kept job infos and did not carry out: tasks go back to
        the status their pod has (a bound pod is bound, an uncommitted or pipelined placement is
        pending again), and per-session job state (phase, fit errors) is cleared."""
        slot_of = ssn.table.slot_of
        for task in ssn.touched:
            job = self._live.get(task.job)
            if job is None or job.tasks.get(task.uid) is not task:
                continue
            pod = task.pod
            st = self.cache.pod_state(task.uid)
            assumed = st is not None and st.assumed and not st.binding_finished
            job.update_task_status(task, _task_status(pod, assumed))
            task.node_name = pod.node_name
            task.slot = slot_of.get(pod.node_name, -1) if pod.node_name else -1
            task.last_node = ""
            task.last_status = None
        for uid in active:
            job = self._live.get(uid)
            if job is None:
                continue
            job.phase = job.pod_group.phase
            if job.fit_errors:
                job.fit_errors = {}
            job.job_fit_errors = ""

    def _apply(self, ssn: Session) -> int:
        """Carry out committed evictions and binds."""
        for ev in ssn.to_evict:
            t = ev.task
            try:
                # Marked first, as evictors do, so the run reports it among the evicted pods.
                self.store.update_pod_condition(
                    t.namespace,
                    t.name,
                    {
                        "type": "DisruptionTarget",
                        "status": "True",
                        "reason": "PreemptionByScheduler",
                        "message": f"volcano: {ev.reason}",
                    },
                )
                self.store.delete("Pod", t.namespace, t.name)
            except Exception as exc:  # already gone
                log.info("evicting %s: %s", t.key, exc)
                continue
            self.evicted.append(t.key)
            self.store.record_event(
                t.pod.raw, "Normal", "Evict", "Evicting", f"Pod is evicted, because of {ev.reason}", "volcano"
            )
        bound = 0
        for t in ssn.to_bind:
            node = t.node_name
            assumed = copy.copy(t.pod)
            assumed.node_name = node
            try:
                self.cache.assume_pod(assumed, node)
            except Exception:
                continue
            try:
                self.store.bind(t.namespace, t.name, t.uid, node)
            except Exception as exc:
                self.cache.forget_pod(assumed)
                outcome = self.outcomes.get(t.uid)
                if outcome is not None:
                    outcome.status = PENDING
                    outcome.message = f"binding rejected: {exc}"
                continue
            self.cache.finish_binding(assumed)
            self._drop_pending(t.uid)
            t.pod = assumed
            job = ssn.jobs.get(t.job)
            if job is not None:
                job.update_task_status(t, TaskStatus.BOUND)
            bound += 1
            outcome = self.outcomes.setdefault(
                t.uid, PodOutcome(t.namespace, t.name, t.uid, scheduler_name=t.pod.scheduler_name)
            )
            outcome.node = node
            outcome.status = SCHEDULED
            outcome.message = ""
            self.store.record_event(
                t.pod.raw,
                "Normal",
                "Scheduled",
                "Binding",
                f"Successfully assigned {t.key} to {node}",
                "volcano",
            )
        return bound

    def _write(
        self, ssn: Session, updates: list[JobUpdate], missing_queue: dict[str, tuple[PodGroup, str]]
    ) -> None:
        now = self.now()
        stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(now))
        for job, etype, reason, msg in ssn.pod_group_events:
            self._event(job.pod_group, etype, reason, msg)
        for up in updates:
            job = up.job
            pg = job.pod_group
            for c in up.conditions:
                if c.get("transitionID") == ssn.uid and not c.get("lastTransitionTime"):
                    c["lastTransitionTime"] = stamp
            if up.status_changed:
                self._write_status(pg, up.phase, up.conditions, job)
            if up.event is not None:
                self._event(pg, *up.event)
            for task, reason, message in up.task_conditions:
                self.store.update_pod_condition(
                    task.namespace,
                    task.name,
                    {"type": "PodScheduled", "status": "False", "reason": reason, "message": message},
                )
                outcome = self.outcomes.get(task.uid)
                if outcome is not None and task.status != TaskStatus.BOUND:
                    outcome.status = UNSCHEDULABLE
                    outcome.node = None
                    outcome.message = message
            self._report(job, up.phase, up.conditions)
        for key, (pg, queue) in missing_queue.items():
            msg = f"queue {queue!r} of PodGroup {key} does not exist"
            cond = {
                "type": "Unschedulable",
                "status": "True",
                "reason": QUEUE_NOT_FOUND_REASON,
                "message": msg,
                "transitionID": ssn.uid,
                "lastTransitionTime": stamp,
            }
            old = [dict(c) for c in ((pg.raw.get("status") or {}).get("conditions") or [])]
            if not any(c.get("type") == "Unschedulable" and c.get("message") == msg for c in old):
                conditions = [c for c in old if c.get("type") != "Unschedulable"] + [cond]
                self._write_status(pg, "Pending", conditions, None)
            self._event(pg, "Warning", "Unschedulable", msg)
            report = self.jobs.setdefault(key, JobReport(pg.namespace, pg.name, queue, pg.min_member))
            report.message = msg
            report.phase = "Pending"
            for pod in self.members.get(key, {}).values():
                if pod.node_name or pod.uid not in self.pending:
                    continue
                self.store.update_pod_condition(
                    pod.namespace,
                    pod.name,
                    {"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": msg},
                )
                outcome = self.outcomes.get(pod.uid)
                if outcome is not None:
                    outcome.status = UNSCHEDULABLE
                    outcome.message = msg
        self._queue_report(ssn)

    def _write_status(
        self, pg: PodGroup, phase: str, conditions: list[dict[str, str]], job: JobInfo | None
    ) -> None:
        obj = self.store.get("PodGroup", pg.namespace, pg.name)
        if obj is None:
            return
        status = dict(obj.get("status") or {})
        status["phase"] = phase
        status["conditions"] = conditions
        if job is not None:
            status["running"] = len(job.task_status_index.get(TaskStatus.RUNNING, ())) + len(
                job.task_status_index.get(TaskStatus.BOUND, ())
            )
            status["succeeded"] = len(job.task_status_index.get(TaskStatus.SUCCEEDED, ()))
            status["failed"] = len(job.task_status_index.get(TaskStatus.FAILED, ()))
        new = dict(obj)
        new["status"] = status
        meta = dict(obj.get("metadata") or {})
        meta.pop("resourceVersion", None)
        new["metadata"] = meta
        updated = self.store.update(new)
        key = f"{pg.namespace}/{pg.name}"
        group = PodGroup.from_dict(updated)
        self.pod_groups[key] = group
        if job is not None and self._live.get(key) is job:
            job.pod_group = group

    def _event(self, pg: PodGroup, etype: str, reason: str, msg: str) -> None:
        key = f"{pg.namespace}/{pg.name}/{reason}"
        if self._last_events.get(key) == msg:
            return
        self._last_events[key] = msg
        raw = dict(pg.raw)
        raw.setdefault("kind", "PodGroup")
        self.store.record_event(raw, etype, reason, "Scheduling", msg, "volcano")

    def _report(self, job: JobInfo, phase: str, conditions: list[dict[str, str]]) -> None:
        report = self.jobs.setdefault(
            job.uid, JobReport(job.namespace, job.name, job.queue, job.min_available)
        )
        report.queue = job.queue
        report.min_member = job.min_available
        report.phase = phase
        report.bound = sum(
            len(job.task_status_index.get(s, ()))
            for s in (TaskStatus.BINDING, TaskStatus.BOUND, TaskStatus.RUNNING, TaskStatus.SUCCEEDED)
        )
        report.pending = len(job.task_status_index.get(TaskStatus.PENDING, ())) + len(
            job.task_status_index.get(TaskStatus.PIPELINED, ())
        )
        unsched = next(
            (c for c in conditions if c.get("type") == "Unschedulable" and c.get("status") == "True"), None
        )
        report.message = unsched.get("message", "") if unsched is not None and report.pending else ""
        report.fit_errors = {
            job.tasks[uid].name: msg for uid, msg in job.fit_errors.items() if uid in job.tasks
        }

    def _queue_report(self, ssn: Session) -> None:
        """Keep what the queue report needs as of this session; the report itself is made when read
        (queue_report_list)."""
        totals = self._totals
        assert totals is not None
        queues: dict[str, tuple[int, Vector | None, int, int]] = {}
        for name, q in ssn.queues.items():
            qs = totals.queues.get(name)
            if qs is None:
                queues[name] = (q.weight, None, 0, 0)
            else:
                queues[name] = (q.weight, qs.allocated.copy(), qs.holding, qs.pending)
        state = _QueueState(ssn.space, queues, ssn.queue_deserved)
        last = self._queue_state
        if last is not None and not last.queues.keys() <= queues.keys():
            self._materialize(last)  # a queue went away: keep what it last showed
        self._queue_state = state

    def _materialize(self, state: _QueueState) -> None:
        space = state.space
        for name, (weight, allocated, bound, pending) in state.queues.items():
            rep = self.queue_reports.setdefault(name, QueueReport(name, weight))
            rep.weight = weight
            vec = allocated if allocated is not None else space.zeros()
            rep.allocated = {k: v for k, v in space.to_dict(vec).items() if k != "pods"}
            rep.bound, rep.pending = bound, pending
            if state.deserved is not None:
                # A queue without jobs in the session deserves nothing.
                d = state.deserved.get(name)
                rep.deserved = {} if d is None else {k: v for k, v in space.to_dict(d).items() if k != "pods"}

    # -- reports ---------------------------------------------------------------------------------
    def job_reports(self) -> list[JobReport]:
        return sorted(self.jobs.values(), key=lambda r: (r.namespace, r.name))

    def queue_report_list(self) -> list[QueueReport]:
        if self._queue_state is not None:
            self._materialize(self._queue_state)
        return sorted(self.queue_reports.values(), key=lambda r: r.name)


class _Parked:
    """The parked jobs of one queue, the distinct requests of their pending tasks, and the jobs in
    job order (sorted by key as sessions first need them)."""

    __slots__ = ("_entry", "_new", "_of", "_order", "jobs", "requests")

    def __init__(self) -> None:
        self.jobs: dict[str, None] = {}
        #: Request (bytes of the vector) → [tasks with it, one such task].
        self.requests: dict[bytes, list[Any]] = {}
        self._of: dict[str, list[bytes]] = {}
        #: (key, uid) sorted; an entry counts only while it is the job's entry in ``_entry``.
        self._order: list[tuple[Any, str]] = []
        self._entry: dict[str, tuple[Any, str]] = {}
        #: Parked since the last sort (no key yet).
        self._new: list[str] = []

    def ordered(
        self, key: Callable[[JobInfo], Any], live: Mapping[str, JobInfo], skip: Mapping[str, None]
    ) -> Iterator[tuple[Any, JobInfo]]:
        """(key, job) of the parked jobs in key order, leaving out those in ``skip``."""
        for uid in self._new:
            if uid in self.jobs and uid not in self._entry:
                entry = (key(live[uid]), uid)
                self._entry[uid] = entry
                bisect.insort(self._order, entry)
        self._new = []
        if len(self._order) > 2 * len(self._entry) + 64:
            self._order = [e for e in self._order if self._entry.get(e[1]) is e]
        return self._walk(live, skip)

    def _walk(self, live: Mapping[str, JobInfo], skip: Mapping[str, None]) -> Iterator[tuple[Any, JobInfo]]:
        entries = self._entry
        for entry in list(self._order):
            uid = entry[1]
            if entries.get(uid) is entry and uid not in skip:
                yield entry[0], live[uid]

    def add(self, job: JobInfo) -> None:
        keys: list[bytes] = []
        for task in job.task_status_index.get(TaskStatus.PENDING, {}).values():
            key = task.resreq.tobytes()
            entry = self.requests.get(key)
            if entry is None:
                self.requests[key] = [1, task]
            else:
                entry[0] += 1
            keys.append(key)
        self.jobs[job.uid] = None
        self._of[job.uid] = keys
        self._new.append(job.uid)

    def remove(self, uid: str) -> None:
        self.jobs.pop(uid, None)
        self._entry.pop(uid, None)
        for key in self._of.pop(uid, ()):
            entry = self.requests[key]
            entry[0] -= 1
            if entry[0] == 0:
                del self.requests[key]

    def refused(self, ssn: Session, queue: QueueInfo) -> bool:
        """Whether the queue refuses every request of its parked jobs (as of now)."""
        return all(not ssn.allocatable(queue, task) for _, task in self.requests.values())


def _phase_of(ssn: Session, uid: str) -> str | None:
    job = ssn.jobs.get(uid) or ssn.invalid_jobs_info.get(uid)
    return job.phase if job is not None else None


@dataclass(slots=True)
class _QueueState:
    """Per queue: weight, allocated (``None``: no jobs), tasks placed, tasks pending; and each
    queue's deserved resources (``None``: no proportion plugin)."""

    space: ResourceSpace
    queues: dict[str, tuple[int, Vector | None, int, int]]
    deserved: dict[str, Vector] | None


def _check_totals(kept: QueueTotals, fresh: QueueTotals) -> None:
    """Raise if the kept per-queue sums differ from a fresh sum (``verify_totals``)."""
    if kept.parts.keys() != fresh.parts.keys() or kept.queues.keys() != fresh.queues.keys():
        raise AssertionError(
            f"kept totals cover other jobs or queues: {sorted(kept.queues)} {sorted(fresh.queues)}"
        )
    for name, qs in fresh.queues.items():
        k = kept.queues[name]
        for attr in ("allocated", "pending_request", "elastic", "inqueue", "reserved"):
            if not np.array_equal(getattr(k, attr), getattr(qs, attr)):
                raise AssertionError(f"queue {name}: kept {attr} {getattr(k, attr)} != {getattr(qs, attr)}")
        if (k.holding, k.pending, k.jobs) != (qs.holding, qs.pending, qs.jobs):
            raise AssertionError(f"queue {name}: kept counts differ")


__all__ = ["SCHEDULING_VOLCANO", "BatchScheduler", "JobReport", "QueueReport"]
