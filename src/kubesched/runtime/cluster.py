"""The composition root: one cluster as both schedulers see it, built the same way in every mode.

A :class:`Cluster` is the informers over a store, the one scheduler cache both pipelines share (fed
from those informers before either scheduler subscribes), the side-effect ports, the kube-scheduler
and, when asked for, the batch (Volcano) scheduler. ``simulate``, ``serve``, ``run``, ``bench`` and
the tests build it here and differ only in what they pass in:

- the store: a :class:`~kubesched.store.memory.MemoryStore` on a virtual clock (simulate, bench),
  a :class:`~kubesched.store.sqlite.SqliteStore` (serve), the real cluster's read-only mirror (run);
- the ports: :class:`~kubesched.store.ports.StorePorts` by default; serve buffers events and groups
  the kube-scheduler's binds; run writes through the API (:class:`~kubesched.remote.ports.RemotePorts`);
- the driver they run it with, built over ``cluster.informers`` and ``cluster.scheduler``:
  :class:`~kubesched.runtime.driver.VirtualClockDriver` or :class:`~kubesched.runtime.driver.RealTimeDriver`;
- the :class:`ClusterOptions` below (clock, seed, binding workers, the batch conf).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from kubesched.batch.conf import BATCH_SCHEDULER_NAME, BatchConf
from kubesched.batch.conf_loader import default_batch_conf
from kubesched.batch.scheduler import DEFAULT_SCHEDULE_PERIOD, BatchScheduler
from kubesched.cache.feed import CacheFeed
from kubesched.framework.config import SchedulerConfig, default_config
from kubesched.framework.registry import Registry
from kubesched.plugins import default_registry
from kubesched.scheduler.scheduler import Scheduler
from kubesched.store.base import ClusterStore
from kubesched.store.parsers import informer_factory
from kubesched.store.ports import Ports, StorePorts


@dataclass(frozen=True, slots=True)
class ClusterOptions:
    """What the modes choose differently when they build a cluster."""

    #: The kube-scheduler's profiles; None: the registry's default profile.
    config: SchedulerConfig | None = None
    #: The kube-scheduler's plugins; None: the in-tree plugins.
    registry: Registry | None = None
    #: The clock both schedulers read (a virtual one in simulations).
    now: Callable[[], float] = time.time
    #: Seeds both schedulers' tie-breaks; None draws one.
    seed: int | None = 0
    #: Record every attempt's plugin verdicts and scores for ``explain``.
    explain: bool = False
    #: Threads that run the kube-scheduler's PreBind and Bind; 0 runs them on the driver's thread.
    binding_workers: int = 0
    #: Build the batch scheduler with the cluster; otherwise :meth:`Cluster.start_batch` does when
    #: it is first needed.
    batch: bool = False
    #: The batch scheduler's conf; None: Volcano's default conf.
    batch_conf: BatchConf | None = None
    #: The schedulerNames the batch scheduler serves.
    batch_scheduler_names: tuple[str, ...] = (BATCH_SCHEDULER_NAME,)
    #: Seconds between batch sessions (Volcano's ``--schedule-period``); None: Volcano's default.
    schedule_period: float | None = None
    #: Threads that send a batch session's binds side by side; 0 sends them one after another.
    batch_bind_workers: int = 0
    #: False rebuilds every batch job each session (the reference for the incremental bookkeeping).
    batch_incremental: bool = True
    #: Keep what both schedulers report about pods and PodGroups after they are deleted (a
    #: simulation reports every pod it was given); otherwise it goes with them, so that a process
    #: that runs for weeks holds only what belongs to the objects that exist.
    keep_deleted: bool = False


class Cluster:
    """Informers, the shared scheduler cache, ports and both schedulers over one store."""

    def __init__(
        self,
        store: ClusterStore,
        options: ClusterOptions | None = None,
        *,
        ports: Ports | None = None,
        scheduler_ports: Ports | None = None,
    ) -> None:
        """``ports``: where both schedulers' side effects go (default: written to ``store``).
        ``scheduler_ports``: the kube-scheduler's own, where they differ (serve groups its binds)."""
        self.store = store
        self.options = options = options if options is not None else ClusterOptions()
        registry = options.registry or default_registry()
        self.informers = informer_factory(store)
        self.ports = ports if ports is not None else StorePorts(store).ports()
        # Subscribed before either scheduler, so that each scheduler's handlers see the cache
        # already changed, and each sees at once what the other placed.
        self.feed = CacheFeed(self.informers)
        self.scheduler = Scheduler(
            self.informers,
            scheduler_ports if scheduler_ports is not None else self.ports,
            options.config or default_config(registry),
            registry,
            now=options.now,
            seed=options.seed,
            explain=options.explain,
            feed=self.feed,
            binding_workers=options.binding_workers,
            keep_deleted=options.keep_deleted,
        )
        self.batch: BatchScheduler | None = None
        if options.batch:
            self.start_batch()

    def start_batch(self) -> BatchScheduler:
        """The batch scheduler, built on first use over the same informers, cache and ports."""
        if self.batch is None:
            options = self.options
            self.batch = BatchScheduler(
                self.informers,
                self.ports,
                options.batch_conf or default_batch_conf(),
                now=options.now,
                seed=options.seed,
                scheduler_names=options.batch_scheduler_names,
                schedule_period=(
                    DEFAULT_SCHEDULE_PERIOD if options.schedule_period is None else options.schedule_period
                ),
                incremental=options.batch_incremental,
                feed=self.feed,
                bind_workers=options.batch_bind_workers,
                keep_deleted=options.keep_deleted,
            )
            # The drivers set the kube-scheduler's wait (pumping the informers on a virtual clock,
            # polling on the wall clock); the batch scheduler runs on the same driver and waits
            # the same way, whichever driver is set later.
            scheduler = self.scheduler
            self.batch.wait_for_cluster = lambda condition, timeout: scheduler.handle.wait_for_cluster(
                condition, timeout
            )
        return self.batch

    def close(self) -> None:
        """Finish the binds in flight and stop both schedulers' binding workers."""
        self.scheduler.close()
        if self.batch is not None:
            self.batch.close()
