"""Both schedulers inside the served cluster, run by the real-time driver on their own thread.

Both schedulers read through one set of shared informers and write through the store's ports; the
driver pumps the informers between steps, runs ``scheduleOne`` back to back while pods are ready and
a batch session every schedule period while batch work waits, and otherwise waits until the store
takes a write (from the API's thread, or the simulated kubelets').
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Callable

from kubesched.batch.conf import BatchConf
from kubesched.framework.config import SchedulerConfig, default_config
from kubesched.framework.extension_points import ExtensionPoint
from kubesched.framework.registry import Registry, is_in_tree
from kubesched.plugins import default_registry
from kubesched.runtime.batch_sessions import LoggedBatchSessions
from kubesched.runtime.batch_window import BatchWindow
from kubesched.runtime.cluster import Cluster, ClusterOptions
from kubesched.runtime.driver import RealTimeDriver
from kubesched.runtime.event_buffer import BufferedEventRecorder
from kubesched.runtime.metrics import SchedulerMetrics
from kubesched.scheduler.result_annotations import KEYS, result_annotations
from kubesched.store.base import StoreError
from kubesched.store.ports import Binder, StorePorts
from kubesched.store.sqlite import SqliteStore

log = logging.getLogger(__name__)

#: Binds in flight at once: a binding extender's round trip does not hold up the next pods.
BINDING_WORKERS = 16


def binding_workers(config: SchedulerConfig, registry: Registry) -> int:
    """The scheduler's binding workers: :data:`BINDING_WORKERS` when a binding cycle may wait on
    something outside this process (a binding extender, a PreBind or Bind plugin that is not
    in-tree), else none. An in-tree bind is a store write: run in place on the driver's thread it
    costs less than the hand-off to a worker and back, and takes no longer."""
    if any(ext.bind_verb for ext in config.extender_configs):
        return BINDING_WORKERS
    for profile in config.profiles:
        for point in (ExtensionPoint.PRE_BIND, ExtensionPoint.BIND):
            for ref in profile.plugins.get(point, []):
                spec = registry.get(ref.name)
                if spec is None or not is_in_tree(spec.factory):
                    return BINDING_WORKERS
    return 0


class GroupedBinds:
    """The binder of binds made in place on the driver's thread: a bind is made in the store's
    memory at once (a conflict is answered there) and committed together with the binds that follow
    it, when ``max_pending`` wait or when the oldest has waited ``max_delay`` seconds (checked at
    each bind and by the idle driver, :meth:`flush_due`). Watches and informers see a bind once it
    is committed, and the API answers a read that shows it only then; until then the scheduler's
    cache holds the pod as assumed, as while upstream's bind call is on its way. A bind lost with
    the process was seen by no client: the pod is scheduled again."""

    def __init__(
        self,
        store: SqliteStore,
        binder: Binder,
        *,
        max_pending: int = 32,
        max_delay: float = 0.005,
        now: Callable[[], float] = time.monotonic,
    ) -> None:
        self.store = store
        self.binder = binder
        self._window = BatchWindow(max_pending, max_delay, now)
        self._generation = 0

    def bind(self, namespace: str, name: str, uid: str, node_name: str) -> None:
        with self.store.deferring() as pending:
            self.binder.bind(namespace, name, uid, node_name)
        if not pending.generation:
            return
        self._generation = max(self._generation, pending.generation)
        if self._window.add():
            self.flush()

    def flush_due(self) -> float | None:
        """Commit the binds made if the oldest has waited ``max_delay`` seconds; returns in how
        many seconds they will be due otherwise (None: none waits)."""
        left = self._window.left()
        if left is None or left > 0:
            return left
        self.flush()
        return None

    def flush(self) -> None:
        generation, self._generation = self._generation, 0
        self._window.clear()
        if generation:
            self.store.sync(generation)


class ServedSchedulers:
    def __init__(
        self,
        store: SqliteStore,
        config: SchedulerConfig | None = None,
        batch_conf: BatchConf | None = None,
        *,
        registry: Registry | None = None,
        max_idle: float = 0.1,
        results: bool = False,
    ) -> None:
        """``results``: record every attempt of the framework scheduler and write it onto the pod as
        kube-scheduler-simulator's result annotations (:mod:`kubesched.scheduler.result_annotations`)."""
        registry = registry or default_registry()
        self.store = store
        config = config or default_config(registry)
        store_ports = StorePorts(store)
        # Events are handed over and written in batches, as upstream's broadcaster writes them
        # off the scheduling path: a commit per event cost more than the event.
        self.events = BufferedEventRecorder(store_ports, transaction=store.transaction)
        ports = dataclasses.replace(store_ports.ports(), events=self.events)
        workers = binding_workers(config, registry)
        self.binds: GroupedBinds | None = None
        scheduler_ports = ports
        if not workers:
            # Only the kube-scheduler's binds run on the driver's thread; the batch scheduler's
            # go through its bind workers, each committed as it is made.
            self.binds = GroupedBinds(store, store_ports)
            scheduler_ports = dataclasses.replace(ports, binder=self.binds)
        self.cluster = Cluster(
            store,
            ClusterOptions(
                config=config,
                registry=registry,
                now=time.time,
                seed=None,
                binding_workers=workers,
                batch=True,
                batch_conf=batch_conf,
                batch_bind_workers=BINDING_WORKERS,
                explain=results,
            ),
            ports=ports,
            scheduler_ports=scheduler_ports,
        )
        self.informers = self.cluster.informers
        self.scheduler = self.cluster.scheduler
        self.batch = self.cluster.start_batch()
        #: Both schedulers' metrics (served at ``/metrics``).
        self.metrics = SchedulerMetrics()
        self.metrics.attach(self.scheduler)
        self.metrics.attach_batch(self.batch)
        self.driver = RealTimeDriver(
            self.informers,
            self.scheduler,
            store,
            batch=LoggedBatchSessions(self.batch),
            max_idle=max_idle,
            on_idle=self.flush_due,
            on_stop=self.flush,
        )

    def flush_due(self) -> float | None:
        """What the idle driver calls: commit the grouped binds and write the kept events that are
        due; returns in how many seconds the others will be."""
        self.write_results()
        waits = [self.events.flush_due()]
        if self.binds is not None:
            waits.append(self.binds.flush_due())
        due = [w for w in waits if w is not None]
        return min(due) if due else None

    def flush(self) -> None:
        """Commit the grouped binds and write the kept events, due or not (when the driver stops)."""
        if self.binds is not None:
            self.binds.flush()
        self.write_results()
        self.events.flush()

    def write_results(self) -> None:
        """Write the attempts recorded since the last call onto their pods, as the simulator's
        result annotations; a bound pod's record is then dropped (no later attempt adds to it)."""
        recorder = self.scheduler.explain
        if recorder is None:
            return
        changed = recorder.take_changed()
        if not changed:
            return
        with self.store.transaction():
            for uid, (namespace, name) in changed.items():
                entry = recorder.get(uid)
                outcome = self.scheduler.outcomes.get(uid)
                node = outcome.node if outcome is not None and outcome.node else ""
                if node:
                    recorder.forget(uid)
                if entry is None:
                    continue
                try:
                    self._annotate(uid, namespace, name, result_annotations(entry, node))
                except StoreError as exc:
                    # Gone or changed meanwhile: the next attempt's record is written instead.
                    log.debug("scheduling results of %s/%s: %s", namespace, name, exc)

    def _annotate(self, uid: str, namespace: str, name: str, annotations: dict[str, str]) -> None:
        obj = self.store.get("Pod", namespace, name)
        if obj is None or (obj.get("metadata") or {}).get("uid") != uid:
            return
        meta = dict(obj.get("metadata") or {})
        old = meta.get("annotations") or {}
        new = {k: v for k, v in old.items() if k not in KEYS} | annotations
        if new == old:
            return
        meta.pop("resourceVersion", None)
        meta["annotations"] = new
        self.store.update({**obj, "metadata": meta})

    def start(self) -> None:
        self.driver.start()

    @property
    def running(self) -> bool:
        return not self.driver.stopped

    def stop(self) -> None:
        stopped = False
        try:
            self.driver.stop(timeout=10.0)
            stopped = True
        finally:
            try:
                if stopped:
                    # Only once the driver's thread is gone: the grouped binds are that thread's.
                    # (Otherwise the store's close commits them, and kept events are dropped.)
                    self.flush()
            finally:
                self.cluster.close()
                for extender in self.scheduler.extenders:
                    close = getattr(extender, "close", None)
                    if close is not None:
                        close()
