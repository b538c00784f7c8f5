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

import copy
import json
import logging
import time
from collections.abc import Callable, Mapping
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
from kubesched.batch.session import PodGroupConditionUpdate, Session
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
    ) -> None:
        """``schedule_period``: seconds between sessions (Volcano's ``--schedule-period``, 1s)."""
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

    def _on_node(self, event: WatchEvent) -> None:
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

    def _on_pod(self, event: WatchEvent) -> None:
        pod = self._parse_pod(event.obj)
        if pod is None:
            return
        uid = pod.uid
        if event.type == EventType.DELETED:
            self.pending.pop(uid, None)
            self.cache.remove_pod(pod)
            job = self._job_of_pod.pop(uid, None)
            if job is not None:
                self.members.get(job, {}).pop(uid, None)
            return
        job = self._job_of_pod.get(uid) or self._job_uid_of(pod)
        if job is not None:
            self._job_of_pod[uid] = job
            self.members.setdefault(job, {})[uid] = pod
        if pod.node_name:
            self.pending.pop(uid, None)
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
        self.pending[uid] = pod
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
        self.pod_groups[key] = PodGroup.from_dict(created)

    def _on_pod_group(self, event: WatchEvent) -> None:
        meta = event.obj.get("metadata") or {}
        key = f"{meta.get('namespace') or 'default'}/{meta.get('name')}"
        if event.type == EventType.DELETED:
            self.pod_groups.pop(key, None)
            return
        try:
            self.pod_groups[key] = PodGroup.from_dict(event.obj)
        except Exception as exc:
            log.warning("ignoring PodGroup %s: %s", key, exc)

    def _on_queue(self, event: WatchEvent) -> None:
        name = str((event.obj.get("metadata") or {}).get("name"))
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
        """The session's snapshot, and the jobs left out because their queue does not exist."""
        self.cache.update_snapshot(self.snapshot)
        queues = self._queue_objects()
        names: set[str] = set()
        for pod in self.pending.values():
            names.update(pod.requests)
        for pg in self.pod_groups.values():
            names.update(pg.min_resources)
        for q in queues.values():
            names.update(q.capability, q.guarantee, q.deserved)
        table = self._private_table(names)
        space = ResourceSpace(tuple(table.resource_names))
        infos = self.snapshot.node_infos
        ready = np.zeros(table.capacity, dtype=np.bool_)
        node_infos = {}
        for slot in table.order.tolist():
            info = infos.get(table.names[slot])
            if info is not None and info.node is not None and info.node.ready:
                ready[slot] = True
                node_infos[info.node.name] = info
        queue_infos = {
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
        jobs: dict[str, JobInfo] = {}
        missing_queue: dict[str, tuple[PodGroup, str]] = {}
        zero = space.zeros()
        requests: dict[str, _Request] = {}
        for key, pg in self.pod_groups.items():
            members = self.members.get(key)
            if pg.queue not in queue_infos:
                if members:
                    missing_queue[key] = (pg, pg.queue)
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
            for pod in (members or {}).values():
                st = self.cache.pod_state(pod.uid)
                assumed = st is not None and st.assumed and not st.binding_finished
                if pod.node_name and st is None and not pod.terminated:
                    continue  # not seen by the cache yet
                job.add_task(self._task(pod, key, space, table, assumed, requests))
            jobs[key] = job
        snap = BatchSnapshot(
            table=table,
            node_infos=node_infos,
            node_mask=ready,
            jobs=jobs,
            queues=queue_infos,
            space=space,
            now=self.now(),
            rng=self.rng,
            pod_index=self.cache.pod_index,
        )
        return snap, missing_queue

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
        snap, missing_queue = self.build_snapshot()
        snap.rng = self.rng
        ssn = open_session(snap, self.conf)
        ssn.last_processed_node_index = self.last_processed_node_index
        self._drop_invalid_jobs(ssn)
        decide_start = time.perf_counter()
        for action in self._actions:
            action.execute(ssn)
        decide = time.perf_counter() - decide_start
        self.last_processed_node_index = ssn.last_processed_node_index
        ssn.restore_pod_index()
        bound = self._apply(ssn)
        updates = close_session(ssn)
        updates.extend(job_update(ssn, job) for job in ssn.invalid_jobs_info.values())
        self._write(ssn, updates, missing_queue)
        for w in ssn.warnings:
            if w not in self._warned:
                self._warned.add(w)
                self.warnings.append(w)
        changed = any(up.job.phase != up.phase for up in updates)
        self.dirty = bool(bound or ssn.to_evict or changed)
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

    def _drop_invalid_jobs(self, ssn: Session) -> None:
        """Jobs jobValid rejects leave the session with an Unschedulable condition (Volcano)."""
        for uid, job in list(ssn.jobs.items()):
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
            self.pending.pop(t.uid, None)
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
        self.pod_groups[f"{pg.namespace}/{pg.name}"] = PodGroup.from_dict(updated)

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
        space = ssn.space
        # proportion leaves each queue's numbers on the session (deserved as a resource dict).
        shares = getattr(ssn, "queue_shares", None)
        deserved_of: dict[str, dict[str, int]] = {}
        if isinstance(shares, Mapping):
            for name, info in shares.items():
                d = info.get("deserved") if isinstance(info, Mapping) else getattr(info, "deserved", None)
                if isinstance(d, Mapping):
                    deserved_of[str(name)] = {str(k): int(v) for k, v in d.items()}
        for name, q in ssn.queues.items():
            rep = self.queue_reports.setdefault(name, QueueReport(name, q.weight))
            allocated = space.zeros()
            bound = pending = 0
            for job in list(ssn.jobs.values()) + list(ssn.invalid_jobs_info.values()):
                if job.queue != name:
                    continue
                allocated = allocated + job.allocated
                bound += sum(
                    len(job.task_status_index.get(s, ()))
                    for s in (TaskStatus.BINDING, TaskStatus.BOUND, TaskStatus.RUNNING)
                )
                pending += len(job.task_status_index.get(TaskStatus.PENDING, ()))
            rep.allocated = {k: v for k, v in space.to_dict(allocated).items() if k != "pods"}
            rep.bound, rep.pending = bound, pending
            if name in deserved_of:
                rep.deserved = {k: v for k, v in deserved_of[name].items() if k != "pods"}

    # -- reports ---------------------------------------------------------------------------------
    def job_reports(self) -> list[JobReport]:
        return sorted(self.jobs.values(), key=lambda r: (r.namespace, r.name))

    def queue_report_list(self) -> list[QueueReport]:
        return sorted(self.queue_reports.values(), key=lambda r: r.name)


__all__ = ["SCHEDULING_VOLCANO", "BatchScheduler", "JobReport", "QueueReport"]
