"""One batch scheduling period (Volcano's ``Scheduler.runOnce``).

Snapshot the cluster (ready nodes, queues, jobs whose queue exists), open a session, run the
configured actions, carry out what they committed, close the session (always: an action or a write
that fails still closes the plugins and puts the cache's pod index back), write the outcome, and
undo in the kept job infos whatever the session did not carry out.
"""

from __future__ import annotations

import itertools
import time
from collections import deque
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from kubesched.api.volcano import PodGroup
from kubesched.batch.apply import SessionApplier
from kubesched.batch.conf import BatchConf
from kubesched.batch.factory import BatchAction
from kubesched.batch.framework import (
    BatchSnapshot,
    JobUpdate,
    abort_session,
    close_session,
    job_update,
    open_session,
)
from kubesched.batch.hypernodes import HyperNodeTree, build_tree
from kubesched.batch.job_info import QueueInfo, ValidateResult
from kubesched.batch.jobs import JobCache, task_status
from kubesched.batch.report import SessionStats
from kubesched.batch.session import PodGroupConditionUpdate, Session
from kubesched.batch.shares import ResourceSpace, capability_vector
from kubesched.cache.cache import SchedulerCache, Snapshot
from kubesched.cache.node_info import NodeInfo
from kubesched.cache.node_table import NodeTable
from kubesched.framework.handle import ClusterWait, check_once
from kubesched.store.informers import InformerFactory
from kubesched.store.ports import Ports

if TYPE_CHECKING:
    from kubesched.batch.metrics import VolcanoMetrics


#: How many sessions' figures :attr:`SessionCycle.sessions` keeps.
SESSIONS_KEPT = 10_000


class SessionCycle:
    def __init__(
        self,
        conf: BatchConf,
        actions: list[BatchAction],
        jobs: JobCache,
        cache: SchedulerCache,
        applier: SessionApplier,
        informers: InformerFactory,
        ports: Ports,
        *,
        now: Callable[[], float],
        rng: np.random.Generator,
    ) -> None:
        self.conf = conf
        self.actions = actions
        self.jobs = jobs
        self.cache = cache
        self.applier = applier
        self.informers = informers
        self.ports = ports
        self.now = now
        self.rng = rng
        self.snapshot = Snapshot()
        self.last_processed_node_index = 0
        #: The latest sessions' figures (a bounded record: a scheduler runs a session a second for
        #: weeks).
        self.sessions: deque[SessionStats] = deque(maxlen=SESSIONS_KEPT)
        #: Prometheus metrics (``SchedulerMetrics.attach_batch``); None records nothing.
        self.metrics: VolcanoMetrics | None = None
        #: How plugins wait for the cluster to catch up with their writes (set by whoever runs the
        #: scheduler; looking once by default).
        self.wait_for_cluster: ClusterWait = check_once
        #: Plugin state kept from one session to the next (``Session.kept``).
        self.kept: dict[str, Any] = {}
        #: The last HyperNode tree and what it was built from.
        self._tree: tuple[Any, HyperNodeTree] | None = None

    def _wait(self, condition: Callable[[], bool], timeout: float) -> bool:
        # Sessions and the plugins they keep hold this method: a wait set later still applies.
        return self.wait_for_cluster(condition, timeout)

    def _private_table(self, names: set[str]) -> NodeTable:
        """A fork of the snapshot's table the session may write to, with a column for every
        resource name the session's jobs and queues use."""
        return self.snapshot.table.fork(sorted(names))

    def build_snapshot(self) -> tuple[BatchSnapshot, dict[str, tuple[PodGroup, str]]]:
        """The session's snapshot, and the jobs left out because their queue does not exist.

        Jobs are those of PodGroups with at least one member pod: a PodGroup whose pods have not
        been created yet, or have all finished and been deleted, is not in the session (its status
        keeps what the last session wrote). Job and task infos are kept between sessions and rebuilt
        only for jobs a watch event touched, so a session costs what changed and what waits, not
        every job the run has seen."""
        self.cache.update_snapshot(self.snapshot)
        if self.jobs.queue_infos is None:
            queues = self.jobs.queue_objects()
        else:
            queues = {name: q.queue for name, q in self.jobs.queue_infos.items()}
        names: set[str] = set(self.jobs.wanted_names)
        for q in queues.values():
            names.update(q.capability, q.guarantee, q.deserved)
        table = self._private_table(names)
        space_names = tuple(table.resource_names)
        if self.jobs.space is None or self.jobs.space.names != space_names:
            self.jobs.space = ResourceSpace(space_names)
            self.jobs.requests = {}
            self.jobs.queue_infos = None
            self.jobs.rebuild_all = True
        space = self.jobs.space
        if self.jobs.ready is None:
            infos = self.snapshot.node_infos
            ready_mask = np.zeros(table.capacity, dtype=np.bool_)
            ready_infos = {}
            for slot in table.order.tolist():
                info = infos.get(table.names[slot])
                if info is not None and info.node is not None and info.node.ready:
                    ready_mask[slot] = True
                    ready_infos[info.node.name] = info
            self.jobs.ready = (ready_mask, ready_infos)
        ready, node_infos = self.jobs.ready
        if self.jobs.queue_infos is None:
            self.jobs.queue_infos = {
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
        queue_infos = dict(self.jobs.queue_infos)
        self.jobs.refresh_jobs(space, table, queue_infos)
        snap = BatchSnapshot(
            table=table,
            node_infos=dict(node_infos),
            node_mask=ready.copy(),
            jobs=dict(self.jobs.live),
            queues=queue_infos,
            space=space,
            now=self.now(),
            rng=self.rng,
            pod_index=self.cache.pod_index,
            informers=self.informers,
            ports=self.ports,
            wait_for_cluster=self._wait,
            kept=self.kept,
            hyper_nodes=self._hyper_node_tree(node_infos),
        )
        return snap, dict(self.jobs.missing)

    def _hyper_node_tree(self, node_infos: dict[str, NodeInfo]) -> HyperNodeTree | None:
        """The HyperNode tree over the ready nodes, built again only when a HyperNode or a ready
        node (its labels select members) changed."""
        if self.informers is None:
            return None
        hyper_nodes = self.informers.informer("HyperNode").list()
        if not hyper_nodes:
            self._tree = None
            return None
        nodes = {name: info.node for name, info in node_infos.items() if info.node is not None}
        key = (
            tuple(sorted((hn.name, id(hn)) for hn in hyper_nodes)),
            tuple(sorted((name, id(node)) for name, node in nodes.items())),
        )
        if self._tree is None or self._tree[0] != key:
            tree = build_tree(hyper_nodes, {name: node.labels for name, node in nodes.items()})
            self._tree = (key, tree)
        return self._tree[1]

    def run_session(self) -> Session | None:
        """One scheduling period. Returns the closed session (for tests and reports)."""
        if not self.actions and not self.conf.tiers:
            return None
        start = time.perf_counter()
        cpu_start = time.process_time()
        pending_before = len(self.jobs.pending)
        if not self.jobs.incremental:
            self.jobs.rebuild_all = True
        snap, missing_queue = self.build_snapshot()
        snap.rng = self.rng
        # Jobs a watch event changed since the last session (rebuilt, or their PodGroup's status
        # moved) and jobs found invalid last time: worked out again whatever happens.
        changed = {uid for uid in itertools.chain(self.jobs.changed, self.jobs.invalid) if uid in snap.jobs}
        self.jobs.changed = set()
        snap.queue_totals = self.jobs.recount(changed, snap.jobs)
        timer = self.metrics.plugin if self.metrics is not None else None
        ssn = open_session(snap, self.conf, timer)
        closed = False
        try:
            bound, decide, moved, worked_on, updates = self._decide_and_apply(ssn, snap, changed)
            closed = True
        finally:
            if not closed:
                # An action or a write failed: the plugins still close, and the cache's pod index
                # is put back as the session found it.
                abort_session(ssn, timer)
        self.jobs.recount(moved)
        self.applier.write(ssn, updates, missing_queue)
        for up in updates:
            job = up.job
            self.jobs.outcome_keys[job.uid] = (job.phase, job.job_fit_errors, dict(job.fit_errors))
        self.jobs.invalid = set(ssn.invalid_jobs)
        self._settle(ssn, worked_on)
        # The kept sums follow the jobs as the next session will find them (unless events change
        # them before: those jobs are recounted then).
        totals = self.jobs.recount(moved)
        self.applier.write_queue_status(totals, self.jobs.queues)
        for uid in sorted(worked_on):  # the waiting jobs' order must not depend on string hashing
            self.jobs.track(uid)
        phase_changed = any(up.job.phase != up.phase for up in updates)
        self.jobs.dirty = bool(bound or ssn.to_evict or phase_changed)
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
        if self.metrics is not None:
            self.metrics.session_closed(ssn, time.perf_counter() - start, bound, updates, self.jobs.live)
        ssn.release_plugins()
        return ssn

    def _decide_and_apply(
        self,
        ssn: Session,
        snap: BatchSnapshot,
        changed: set[str],
    ) -> tuple[int, float, set[str], set[str], list[JobUpdate]]:
        """Run the actions, carry out what they committed and close the session: (tasks bound,
        seconds deciding, jobs moved, jobs worked on, the job updates)."""
        if self.jobs.incremental:
            ssn.waiting = self.jobs.session_waiting(ssn, changed)
            active = changed | ssn.waiting.keys()
        else:
            active = set(snap.jobs)
        open_phase = {uid: snap.jobs[uid].phase for uid in active}
        ssn.last_processed_node_index = self.last_processed_node_index
        self._drop_invalid_jobs(ssn, changed)
        decide_start = time.perf_counter()
        metrics = self.metrics
        for action in self.actions:
            if metrics is None:
                action.execute(ssn)
            else:
                action_start = time.perf_counter()
                action.execute(ssn)
                metrics.action(action.name, time.perf_counter() - action_start)
        decide = time.perf_counter() - decide_start
        touched = {t.job for t in ssn.touched}
        # Jobs whose state the session moved (and the kept sums must follow): tasks placed or
        # evicted, or a phase changed (enqueue).
        moved = touched | {uid for uid, phase in open_phase.items() if _phase_of(ssn, uid) != phase}
        active |= touched | ssn.attempted
        worked_on = set(active)
        evented = {job.uid for job, _, _, _ in ssn.pod_group_events}
        if self.jobs.incremental:
            active -= self._unchanged_outcomes(ssn, active - changed - moved - evented)
        ssn.update_jobs = active
        self.last_processed_node_index = ssn.last_processed_node_index
        ssn.restore_pod_index()
        bound = self.applier.carry_out(ssn)
        updates = close_session(ssn, self.metrics.plugin if self.metrics is not None else None)
        updates.extend(job_update(ssn, job) for job in ssn.invalid_jobs_info.values())
        return bound, decide, moved, worked_on, updates

    def _unchanged_outcomes(self, ssn: Session, candidates: set[str]) -> set[str]:
        """Of ``candidates`` (jobs no event changed and the session did not move), those whose
        session outcome matches the one last written: same phase, same fit errors. Their job update
        would come out as last time (same conditions and messages, so nothing to write), so it is
        left out."""
        same: set[str] = set()
        keys = self.jobs.outcome_keys
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
            job = self.jobs.live.get(task.job)
            if job is None or job.tasks.get(task.uid) is not task:
                continue
            pod = task.pod
            st = self.cache.pod_state(task.uid)
            assumed = st is not None and st.assumed and not st.binding_finished
            job.update_task_status(task, task_status(pod, assumed))
            task.node_name = pod.node_name
            task.slot = slot_of.get(pod.node_name, -1) if pod.node_name else -1
            task.last_node = ""
            task.last_status = None
        for uid in active:
            job = self.jobs.live.get(uid)
            if job is None:
                continue
            job.phase = job.pod_group.phase
            if job.fit_errors:
                job.fit_errors = {}
            job.job_fit_errors = ""


def _phase_of(ssn: Session, uid: str) -> str | None:
    job = ssn.jobs.get(uid) or ssn.invalid_jobs_info.get(uid)
    return job.phase if job is not None else None


__all__ = ["SessionCycle"]
