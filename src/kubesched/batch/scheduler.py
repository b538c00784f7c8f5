"""The batch scheduler (Volcano's scheduler): one session every ``schedulePeriod``.

A façade over the parts, each in its own module:

- :mod:`~kubesched.batch.events`: informer handlers feeding the job cache (node and pod state is the
  cluster's one scheduler cache, shared with the framework scheduler);
- :mod:`~kubesched.batch.controller`: the PodGroup controller (a group for pods that name none);
- :mod:`~kubesched.batch.jobs`: the job cache kept between sessions, and the parking of jobs;
- :mod:`~kubesched.batch.cycle`: one period (snapshot, open, actions, close);
- :mod:`~kubesched.batch.apply`: binds, evictions, statuses and events through the ports;
- :mod:`~kubesched.batch.report`: the per-PodGroup and per-queue reports.

The scheduler reads the cluster only through the shared informers it is given and writes only
through its ports, so the same object runs on the embedded store, an API server or a real cluster.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable

import numpy as np

from kubesched.api.objects import Pod
from kubesched.api.volcano import SCHEDULING_VOLCANO, PodGroup
from kubesched.batch.apply import QUEUE_NOT_FOUND_REASON, SessionApplier
from kubesched.batch.conf import BATCH_SCHEDULER_NAME, BatchConf
from kubesched.batch.controller import QUEUE_NAME_ANNOTATION, PodGroupController
from kubesched.batch.cycle import SessionCycle
from kubesched.batch.events import ClusterEvents
from kubesched.batch.factory import get_action
from kubesched.batch.framework import BatchSnapshot, unavailable
from kubesched.batch.jobs import JobCache
from kubesched.batch.report import BatchReports, JobReport, QueueReport, SessionStats
from kubesched.batch.session import Session
from kubesched.cache.cache import Snapshot
from kubesched.cache.feed import CacheFeed
from kubesched.framework.bind_result import BindWorkers
from kubesched.framework.handle import ClusterWait
from kubesched.framework.outcome import PodOutcome
from kubesched.store.base import StoreError
from kubesched.store.informers import InformerFactory
from kubesched.store.ports import Ports

DEFAULT_SCHEDULE_PERIOD = 1.0


class BatchScheduler:
    def __init__(
        self,
        informers: InformerFactory,
        ports: Ports,
        conf: BatchConf,
        *,
        now: Callable[[], float],
        seed: int | None = 0,
        scheduler_names: tuple[str, ...] = (BATCH_SCHEDULER_NAME,),
        schedule_period: float = DEFAULT_SCHEDULE_PERIOD,
        incremental: bool = True,
        feed: CacheFeed | None = None,
        bind_workers: int = 0,
        keep_deleted: bool = False,
    ) -> None:
        """``feed``: the cluster's one scheduler cache and its informer feed, shared with the
        framework scheduler; without it the scheduler feeds a cache of its own from ``informers``.
        ``schedule_period``: seconds between sessions (Volcano's ``--schedule-period``, 1s).
        ``incremental=False`` rebuilds every job each session and works out every job's status
        (the reference the incremental bookkeeping must agree with; for tests and measurements).
        ``bind_workers``: threads that send a session's binds side by side (against an API server a
        bind is a round trip); 0 sends them one after another. ``keep_deleted``: keep the outcomes
        of deleted pods, the evicted list and deleted PodGroups' reports (a simulation reports them
        all); otherwise they go with their objects, as Volcano's cache forgets deleted jobs."""
        self.informers = informers
        self.ports = ports
        self.conf = conf
        self.now = now
        self.schedule_period = schedule_period
        self.rng = np.random.default_rng(seed)
        self.feed = feed if feed is not None else CacheFeed(informers)
        self.cache = self.feed.cache
        self.outcomes: dict[str, PodOutcome] = {}
        self.warnings: list[str] = [*conf.warnings, *unavailable(conf)]
        self.reports = BatchReports()
        self.jobs = JobCache(self.cache, conf, incremental=incremental)
        self.controller = PodGroupController(ports.pod_group_status, self.jobs)
        if bind_workers < 0:
            raise ValueError("bind_workers must be >= 0")
        self._bind_pool: BindWorkers[Pod, StoreError | None] = BindWorkers(bind_workers, "volcano-bind")
        self.applier = SessionApplier(
            ports,
            self.cache,
            self.jobs,
            self.reports,
            self.outcomes,
            now=now,
            bind_pool=self._bind_pool,
            keep_deleted=keep_deleted,
        )
        actions = [a for a in (get_action(n) for n in conf.actions) if a is not None]
        self.cycle = SessionCycle(
            conf, actions, self.jobs, self.cache, self.applier, informers, ports, now=now, rng=self.rng
        )
        self.events = ClusterEvents(self.jobs, self.controller, self.applier, frozenset(scheduler_names))
        self.events.subscribe(informers)
        self._warned: set[str] = set(self.warnings)

    # -- informers -------------------------------------------------------------------------------
    def responsible_for(self, pod: Pod) -> bool:
        return self.events.responsible_for(pod)

    # -- state -----------------------------------------------------------------------------------
    @property
    def wants_session(self) -> bool:
        """Pods wait and something changed since the last session that made no progress, or a job
        lost a bound member to an eviction (its PodGroup and queue rows need recounting)."""
        return (bool(self.jobs.pending) and self.jobs.dirty) or self.jobs.members_lost

    @property
    def wait_for_cluster(self) -> ClusterWait:
        """How a session's plugins wait for the cluster (a PreBind waiting for its volumes to be
        bound); whoever runs the scheduler sets it, as its driver sets the kube-scheduler's."""
        return self.cycle.wait_for_cluster

    @wait_for_cluster.setter
    def wait_for_cluster(self, wait: ClusterWait) -> None:
        self.cycle.wait_for_cluster = wait

    @property
    def incremental(self) -> bool:
        return self.jobs.incremental

    @incremental.setter
    def incremental(self, value: bool) -> None:
        self.jobs.incremental = value

    @property
    def verify_totals(self) -> bool:
        return self.jobs.verify_totals

    @verify_totals.setter
    def verify_totals(self, value: bool) -> None:
        self.jobs.verify_totals = value

    @property
    def evicted(self) -> list[str]:
        return self.applier.evicted

    @property
    def sessions(self) -> deque[SessionStats]:
        return self.cycle.sessions

    @property
    def snapshot(self) -> Snapshot:
        return self.cycle.snapshot

    # -- one session -----------------------------------------------------------------------------
    def build_snapshot(self) -> tuple[BatchSnapshot, dict[str, tuple[PodGroup, str]]]:
        return self.cycle.build_snapshot()

    def run_session(self) -> Session | None:
        """One scheduling period. Returns the closed session (for tests and reports)."""
        self.jobs.members_lost = False
        ssn = self.cycle.run_session()
        if ssn is not None:
            for w in ssn.warnings:
                if w not in self._warned:
                    self._warned.add(w)
                    self.warnings.append(w)
        return ssn

    # -- reports ---------------------------------------------------------------------------------
    def close(self) -> None:
        """Stop the bind workers (a session in progress has already waited for its binds)."""
        self._bind_pool.shutdown()

    def job_reports(self) -> list[JobReport]:
        return self.reports.job_reports()

    def queue_report_list(self) -> list[QueueReport]:
        return self.reports.queue_report_list()


__all__ = [
    "QUEUE_NAME_ANNOTATION",
    "QUEUE_NOT_FOUND_REASON",
    "SCHEDULING_VOLCANO",
    "BatchScheduler",
    "JobReport",
    "QueueReport",
    "SessionStats",
]
