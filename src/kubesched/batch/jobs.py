"""The job cache: what batch sessions work on, kept between them as Volcano's cache keeps its JobInfos.

Jobs are rebuilt from their member pods only when a watch event touched them (``stale``), and a
session undoes at close whatever it did not commit, so a session costs what changed and what waits.
Also kept here: the pods waiting for the batch scheduler, the PodGroups, Queues and priority classes
the informers delivered, per-queue sums (``totals``) and the parking of waiting jobs whose queue
alone keeps them waiting.
"""

from __future__ import annotations

import bisect
import json
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from kubesched.api.objects import Pod
from kubesched.api.volcano import DEFAULT_QUEUE, VOLCANO_API_VERSION, PodGroup, Queue, group_name_of
from kubesched.batch.conf import BatchConf
from kubesched.batch.job_info import (
    POD_PREEMPTABLE_KEY,
    TASK_SPEC_KEY,
    JobInfo,
    QueueInfo,
    TaskInfo,
    TaskStatus,
    fit_threshold_of,
)
from kubesched.batch.parked_jobs import ParkedJobs
from kubesched.batch.queue_totals import QueueTotals
from kubesched.batch.session import Session
from kubesched.batch.shares import MIN_RESOURCE, ResourceSpace, Vector
from kubesched.cache.cache import SchedulerCache
from kubesched.cache.node_table import PODS_COL, NodeTable
from kubesched.cache.pod_index import is_terminating


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


def task_status(pod: Pod, assumed: bool) -> TaskStatus:
    if pod.phase == "Succeeded":
        return TaskStatus.SUCCEEDED
    if pod.phase == "Failed":
        return TaskStatus.FAILED
    if is_terminating(pod):
        # Volcano's getTaskStatus: a pod being deleted is Releasing, never allocated again.
        return TaskStatus.RELEASING
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


class JobCache:
    def __init__(self, cache: SchedulerCache, conf: BatchConf, *, incremental: bool) -> None:
        self.cache = cache
        #: Rebuild every job and work out every job's status each session (see BatchScheduler).
        self.incremental = incremental
        #: Set by cluster changes that may let a waiting pod in; cleared by a session without effect.
        self.dirty = True
        #: Unassigned pods this scheduler serves.
        self.pending: dict[str, Pod] = {}
        #: Job uid (``namespace/name``) → member pods (any scheduler, any state).
        self.members: dict[str, dict[str, Pod]] = {}
        self.job_of_pod: dict[str, str] = {}
        self.pod_groups: dict[str, PodGroup] = {}
        self.queues: dict[str, Queue] = {}
        self.priority_classes: dict[str, int] = {}
        self.spec_keys: dict[str, str] = {}
        #: Spec key → how many of :attr:`spec_keys` have it.
        self._spec_pods: dict[str, int] = {}
        # Only jobs with member pods take part (see SessionCycle.build_snapshot).
        self.space: ResourceSpace | None = None
        self.requests: dict[str, _Request] = {}
        #: Job uid → JobInfo of every job with a PodGroup, an existing queue and at least one task.
        self.live: dict[str, JobInfo] = {}
        #: Jobs with members whose PodGroup names a queue that does not exist: uid → (group, queue).
        self.missing: dict[str, tuple[PodGroup, str]] = {}
        #: Jobs whose pending member pods name a PodGroup that does not exist: uid → group name.
        self.missing_group: dict[str, str] = {}
        #: Jobs to rebuild from their members before the next session (a member or the group changed).
        self.stale: set[str] = set()
        #: A job lost a bound member to an eviction: its PodGroup and queue rows are stale
        #: until a session recounts them.
        self.members_lost = False
        #: Jobs whose last member an eviction removed: the next session still works out their
        #: PodGroup's status (with no tasks), so it does not keep saying Running.
        self.emptied: set[str] = set()
        #: Rebuild every job (first session, resource space, node slots, priority classes changed).
        self.rebuild_all = True
        #: Jobs whose PodGroup status the next session must work out again (see run_session).
        self.changed: set[str] = set()
        #: Jobs the last session found invalid (jobValid said no).
        self.invalid: set[str] = set()
        #: Live jobs with pending tasks or a phase before Running (insertion-ordered set), split in
        #: those parked (see parkable) and the others.
        self.waiting: dict[str, None] = {}
        self.unparked: dict[str, None] = {}
        #: Queue → its parked jobs; job uid → the queue it is parked under.
        self.parked: dict[str, _Parked] = {}
        self.parked_in: dict[str, str] = {}
        self.parking_actions = set(conf.actions) <= {"enqueue", "allocate", "backfill"}
        #: Per job, (phase, job fit errors, task fit errors) as of its last job update.
        self.outcome_keys: dict[str, tuple[str, str, dict[str, str]]] = {}
        #: Per-queue sums over the live jobs (proportion's inputs, the queue report).
        self.totals: QueueTotals | None = None
        #: Check the kept sums against a fresh sum every session (tests).
        self.verify_totals = False
        self.queue_infos: dict[str, QueueInfo] | None = None
        self.ready: tuple[np.ndarray[Any, np.dtype[np.bool_]], dict[str, Any]] | None = None
        #: Resource names asked for by pending pods and PodGroups (name → how many ask).
        self.wanted_names: dict[str, int] = {}
        self.pg_names: dict[str, tuple[str, ...]] = {}

    def count_names(self, names: Any, delta: int) -> None:
        wanted = self.wanted_names
        for name in names:
            n = wanted.get(name, 0) + delta
            if n > 0:
                wanted[name] = n
            else:
                wanted.pop(name, None)

    def set_pending(self, pod: Pod) -> None:
        old = self.pending.get(pod.uid)
        if old is not None:
            self.count_names(old.requests, -1)
        self.pending[pod.uid] = pod
        self.count_names(pod.requests, +1)

    def drop_pending(self, uid: str) -> None:
        old = self.pending.pop(uid, None)
        if old is not None:
            self.count_names(old.requests, -1)

    def forget_spec(self, uid: str) -> None:
        """A pod was deleted: its spec key goes, and the request vector of its spec with the last
        pod that has it (every Job's pods have labels of their own: over weeks the specs seen are
        without end)."""
        key = self.spec_keys.pop(uid, None)
        if key is None:
            return
        left = self._spec_pods[key] - 1
        if left:
            self._spec_pods[key] = left
        else:
            del self._spec_pods[key]
            self.requests.pop(key, None)

    def set_pod_group(self, key: str, pg: PodGroup | None) -> None:
        """Record a PodGroup (``None``: deleted). A change of status alone is applied to the live job
        in place; anything else rebuilds the job."""
        old = self.pod_groups.get(key)
        if old is not None:
            self.count_names(self.pg_names.pop(key, ()), -1)
        if pg is None:
            self.pod_groups.pop(key, None)
            self.stale.add(key)
            return
        self.pod_groups[key] = pg
        names = tuple(pg.min_resources)
        self.pg_names[key] = names
        self.count_names(names, +1)
        job = self.live.get(key)
        if (
            job is not None
            and old is not None
            and key not in self.stale
            and (old.raw.get("spec") or {}) == (pg.raw.get("spec") or {})
        ):
            job.pod_group = pg
            job.phase = pg.phase
            self.changed.add(key)
            self.track(key)
        else:
            self.stale.add(key)

    def queue_objects(self) -> dict[str, Queue]:
        queues = dict(self.queues)
        if DEFAULT_QUEUE not in queues:
            # Volcano installs a `default` queue (weight 1, reclaimable).
            queues[DEFAULT_QUEUE] = Queue.from_dict(
                {"apiVersion": VOLCANO_API_VERSION, "kind": "Queue", "metadata": {"name": DEFAULT_QUEUE}}
            )
        return queues

    def refresh_jobs(self, space: ResourceSpace, table: NodeTable, queue_infos: dict[str, QueueInfo]) -> None:
        """Rebuild the jobs watch events touched (every job after a change of space, nodes, queues
        or priority classes)."""
        if self.rebuild_all or self.totals is None or self.totals.space != space:
            self.rebuild_all = False
            self.live.clear()
            self.missing.clear()
            self.missing_group.clear()
            self.waiting.clear()
            self.unparked.clear()
            self.parked.clear()
            self.parked_in.clear()
            self.totals = QueueTotals(space)
            stale = set(self.members) | self.stale
        else:
            stale = self.stale
        self.stale = set()
        if not stale:
            return
        totals = self.totals
        zero = space.zeros()
        requests = self.requests
        # In key order, not the set's (string hashing differs between runs): the live jobs keep
        # this order, sessions see their jobs in it and ties in job order fall back to it.
        stale_keys = sorted(stale)
        for key in stale_keys:
            self.live.pop(key, None)
            self.missing.pop(key, None)
            self.missing_group.pop(key, None)
            members = self.members.get(key)
            pg = self.pod_groups.get(key)
            if members and pg is None:
                named = self._named_group(members)
                if named is not None:
                    self.missing_group[key] = named
            emptied = key in self.emptied and not members
            self.emptied.discard(key)
            if pg is None or not (members or emptied):
                continue
            if pg.queue not in queue_infos:
                self.missing[key] = (pg, pg.queue)
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
                if not pod.node_name and st is None and not pod.terminated and pod.uid not in self.pending:
                    # Unassigned, and another scheduler's to place (Volcano's informer filter drops
                    # such pods): not a task until it is placed.
                    continue
                if not pod.node_name and any(name not in table.resource_col for name in pod.requests):
                    # A member of another scheduler asking for a resource no node has: nothing
                    # here can place it, and the session's space has no axis for that resource.
                    continue
                job.add_task(self.task(pod, key, space, table, assumed, requests))
            if not job.tasks and not emptied:
                continue
            self.live[key] = job
            self.changed.add(key)
            if emptied:
                # Taken out again by the next refresh, once this session has written its status.
                self.stale.add(key)
        for key in stale_keys:
            if key not in self.live:
                totals.set(key, None)
                self.outcome_keys.pop(key, None)
            self.track(key)

    def _named_group(self, members: Mapping[str, Pod]) -> str | None:
        """The group a pending member names explicitly (a pod in no group waits for the PodGroup
        the controller creates for it, which is not missing)."""
        for pod in members.values():
            if pod.uid in self.pending and not pod.node_name:
                group = group_name_of(pod.raw)
                if group is not None:
                    return group[1]
        return None

    def task(
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
        spec_key = self.spec_keys.get(pod.uid)
        if spec_key is None:
            spec_key = self.spec_keys[pod.uid] = _spec_key(pod)
            self._spec_pods[spec_key] = self._spec_pods.get(spec_key, 0) + 1
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
        status = task_status(pod, assumed)
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
            sch_gated=bool(pod.scheduling_gates),
        )

    def track(self, uid: str) -> None:
        """Keep ``_waiting`` right for one job (pending tasks, or not yet Running), and park it or
        not."""
        job = self.live.get(uid)
        queue = self.parked_in.pop(uid, None)
        if queue is not None:
            self.parked[queue].remove(uid)
            if not self.parked[queue].jobs:
                del self.parked[queue]
        if job is None or (
            TaskStatus.PENDING not in job.task_status_index and job.phase in ("Running", "Completed")
        ):
            self.waiting.pop(uid, None)
            self.unparked.pop(uid, None)
            return
        self.waiting[uid] = None
        if self.parkable(job):
            self.unparked.pop(uid, None)
            self.parked_in[uid] = job.queue
            parked = self.parked.get(job.queue)
            if parked is None:
                parked = self.parked[job.queue] = _Parked()
            parked.add(job)
        else:
            self.unparked[uid] = None

    @property
    def parking(self) -> bool:
        """Parking needs actions that only admit and place (a preempt or reclaim may move any job)."""
        return self.incremental and self.parking_actions

    def parkable(self, job: JobInfo) -> bool:
        """A waiting job is parked when only its queue can keep it waiting: the last session ended
        with no fit errors for it (its queue turned every task away, or never reached it), it is
        admitted (enqueue has nothing to do with it), it has no best-effort task (backfill has
        nothing to do with it) and it is valid. Such a job changes only by a watch event (it is
        then rebuilt and unparked) or when its queue has room again."""
        if not self.parking or job.uid in self.invalid or job.pending_best_effort:
            return False
        if job.phase in ("Pending", "") or TaskStatus.PENDING not in job.task_status_index:
            return False
        key = self.outcome_keys.get(job.uid)
        return key is not None and key[0] == job.phase and not key[1] and not key[2]

    def session_waiting(self, ssn: Session, changed: set[str]) -> dict[str, None]:
        """The jobs this session's actions look at: the waiting jobs, less the parked jobs of the
        queues that refuse every request among them.

        With monotone allocatable functions (the proportion plugin's) a queue that refuses a request
        at the start of allocate refuses it all action long. Each parked job of such a queue would
        be turned away task by task, place nothing, get no fit error and end as the last session
        left it: the actions and the status update would change nothing, so they skip it."""
        waiting = dict(self.unparked)
        for uid in changed:
            if uid in self.waiting:
                waiting[uid] = None
        monotone = bool(self.parked) and ssn.allocatable_is_monotone()
        job_key = ssn.job_order_key() if monotone else None
        for name, parked in self.parked.items():
            queue = ssn.queues.get(name)
            if monotone and queue is not None and parked.refused(ssn, queue):
                continue
            if job_key is None:
                waiting.update(parked.jobs)
                continue
            # The queue has room: allocate pulls its parked jobs in job order, only as far as it
            # gets (their keys do not change while they stay parked, so the order is kept).
            ssn.parked[name] = ParkedJobs(
                parked.ordered(job_key, self.live, waiting), [t for _, t in parked.requests.values()]
            )
        return waiting

    def recount(self, uids: set[str], jobs: Mapping[str, JobInfo] | None = None) -> QueueTotals:
        """Count the current state of the jobs ``uids`` in the kept per-queue sums. With ``jobs``
        (a session's jobs at open), check the sums cover exactly those jobs."""
        totals = self.totals
        assert totals is not None
        live = self.live
        for uid in uids:
            totals.set(uid, live.get(uid))
        if jobs is not None and (len(totals) != len(jobs) or self.verify_totals):
            fresh = QueueTotals(totals.space)
            for uid, job in jobs.items():
                fresh.set(uid, job)
            if self.verify_totals:
                _check_totals(totals, fresh)
            self.totals = totals = fresh
        return totals


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


__all__ = ["JobCache", "task_status"]
