"""Binding cycles on binding workers: binds run while the next pods are scheduled.

Against an API server a bind is a round trip; the scheduler hands PreBind and Bind to a pool of
workers and finishes each binding cycle on the driver's thread. These tests drive a slow binder:
pods are still bound once each and never over a node's capacity, failed binds free what the pod held
and requeue it, a pod deleted during its bind is not requeued, a bind whose reply was lost but which
landed counts as bound, and a stopping driver lets its binds in flight finish.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable
from typing import Any, ClassVar

import pytest
from tests.metrics.conftest import sample

from kubesched.api.objects import Pod
from kubesched.framework.config import config_from_dict, default_config
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.outcome import SCHEDULED
from kubesched.framework.status import Code, Status
from kubesched.plugins import default_registry, spec_for
from kubesched.runtime.driver import RealTimeDriver
from kubesched.runtime.metrics import SchedulerMetrics
from kubesched.scheduler.scheduler import Scheduler
from kubesched.store.base import Conflict, EventType, NotFound, StoreError
from kubesched.store.memory import MemoryStore
from kubesched.store.parsers import informer_factory
from kubesched.store.ports import Ports, StorePorts

from .test_realtime_driver import milli, node, pod

API = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration"}


class SlowBinder:
    """Binds through the store after a delay; records how many binds overlapped."""

    def __init__(self, store: MemoryStore, delay: float) -> None:
        self.store = store
        self.delay = delay
        self.lock = threading.Lock()
        self.active = 0
        self.most_active = 0
        self.calls: Counter[str] = Counter()
        #: Pod name → how many more binds of it fail with Conflict before one goes through.
        self.conflicts: dict[str, int] = {}
        #: Pod name → an event the bind waits for, then fails with NotFound.
        self.hold: dict[str, threading.Event] = {}
        #: Pod names whose bind lands but whose reply is "lost" (an error is raised after the write).
        self.lose_reply: set[str] = set()

    def bind(self, namespace: str, name: str, uid: str, node_name: str) -> None:
        with self.lock:
            self.active += 1
            self.most_active = max(self.most_active, self.active)
            self.calls[name] += 1
        try:
            time.sleep(self.delay)
            held = self.hold.get(name)
            if held is not None:
                held.wait(5.0)
                raise NotFound(f"pods {name!r} not found")
            with self.lock:
                left = self.conflicts.get(name, 0)
                if left:
                    self.conflicts[name] = left - 1
            if left:
                raise Conflict(f"Operation cannot be fulfilled on pods {name!r}: the object was modified")
            self.store.bind(namespace, name, uid, node_name)
            if name in self.lose_reply:
                raise StoreError("the connection was reset before the reply arrived")
        finally:
            with self.lock:
                self.active -= 1


class BackgroundBinder(SlowBinder):
    """The same binder able to send in the background, as an API server's is: the binding cycles
    whose PreBind has nothing to do bind without a worker, each bind on a thread of its own."""

    later = 0

    def bind_later(
        self, namespace: str, name: str, uid: str, node_name: str, done: Callable[[Exception | None], None]
    ) -> None:
        self.later += 1

        def send() -> None:
            try:
                self.bind(namespace, name, uid, node_name)
            except StoreError as exc:
                done(exc)
            else:
                done(None)

        threading.Thread(target=send, daemon=True).start()


#: The two ways a binding cycle goes against an API server: PreBind and Bind on a worker, or the
#: Binding sent in the background with no worker.
MODES = pytest.mark.parametrize("background", [False, True], ids=["workers", "background"])


def _cluster(
    delay: float,
    workers: int = 8,
    nodes: int = 4,
    background: bool = False,
    pre_bind: type | None = None,
) -> tuple[MemoryStore, SlowBinder, Scheduler, RealTimeDriver]:
    store = MemoryStore(now=time.time)
    for i in range(nodes):
        store.create(node(f"n{i}"))
    store_ports = StorePorts(store)
    binder = BackgroundBinder(store, delay) if background else SlowBinder(store, delay)
    ports = Ports(binder, store_ports, store_ports, store_ports, store_ports, store_ports)
    informers = informer_factory(store)
    registry = default_registry()
    if pre_bind is None:
        config = default_config(registry)
    else:
        registry.register(spec_for(pre_bind))
        plugins = {"preBind": {"enabled": [{"name": pre_bind.name}]}}
        config = config_from_dict({**API, "profiles": [{"plugins": plugins}]}, registry)
    config.pod_initial_backoff_seconds = 1
    config.pod_max_backoff_seconds = 1
    scheduler = Scheduler(informers, ports, config, registry, now=time.time, seed=0, binding_workers=workers)
    driver = RealTimeDriver(informers, scheduler, store, max_idle=0.05)
    return store, binder, scheduler, driver


def _node_of(store: MemoryStore, name: str) -> str | None:
    obj = store.get("Pod", "default", name)
    return None if obj is None else (obj.get("spec") or {}).get("nodeName")


def _reason(store: MemoryStore, name: str) -> str | None:
    conds = (store.get("Pod", "default", name) or {}).get("status", {}).get("conditions") or []
    return next((c["reason"] for c in conds if c["type"] == "PodScheduled"), None)


def _wait(cond: Any, timeout: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cond():
            return True
        time.sleep(0.01)
    return bool(cond())


@MODES
def test_binds_overlap_and_every_pod_is_bound_once_within_capacity(background: bool) -> None:
    store, binder, scheduler, driver = _cluster(delay=0.02, background=background)
    watch = store.watch(frozenset({"Pod"}))
    driver.start()
    try:
        # 4 nodes x 4000m; 60 pods x 250m fit (15000m); 4 more of 1500m cannot all fit.
        for i in range(60):
            store.create(pod(f"p{i}", 250))
        for i in range(4):
            store.create(pod(f"big{i}", 1500))
        assert _wait(lambda: all(_node_of(store, f"p{i}") for i in range(60)))
        assert _wait(lambda: scheduler.binding_in_flight == 0)
    finally:
        driver.stop(timeout=10.0)
    assert binder.most_active > 1  # binds ran side by side
    if background:
        assert isinstance(binder, BackgroundBinder) and binder.later == binder.calls.total()
    else:
        assert binder.most_active <= 8  # never more than the workers
    used: Counter[str] = Counter()
    for obj in store.list("Pod"):
        if obj["spec"].get("nodeName"):
            requests = obj["spec"]["containers"][0]["resources"]["requests"]
            used[obj["spec"]["nodeName"]] += milli(requests["cpu"])
    assert used and max(used.values()) <= 4000
    binds: Counter[str] = Counter()
    for event in watch.drain():
        if event.type != EventType.MODIFIED or event.old is None:
            continue
        if event.obj["spec"].get("nodeName") and not event.old["spec"].get("nodeName"):
            binds[event.obj["metadata"]["name"]] += 1
    assert max(binds.values()) == 1
    assert sum(binder.calls.values()) == len(binds)


@MODES
def test_a_conflicting_bind_frees_the_node_and_requeues_the_pod(background: bool) -> None:
    # One node with room for exactly one of the two pods: "first" fails its bind once, so its
    # assumed place must be freed for "second", and "first" is retried (and stays pending, as
    # the node is then full).
    store, binder, scheduler, driver = _cluster(delay=0.01, nodes=1, background=background)
    binder.conflicts["first"] = 1
    driver.start()
    try:
        store.create(pod("first", 3000))
        assert _wait(lambda: binder.calls["first"] >= 1)
        store.create(pod("second", 3000))
        assert _wait(lambda: _node_of(store, "first") is not None or _node_of(store, "second") is not None)
        assert _wait(lambda: scheduler.binding_in_flight == 0)
        # The pod that lost is retried after its backoff and then told the node is full.
        assert _wait(lambda: _reason(store, "first") == "Unschedulable" or _node_of(store, "first"))
    finally:
        driver.stop(timeout=10.0)
    bound = [n for n in ("first", "second") if _node_of(store, n)]
    assert len(bound) == 1  # one node, room for one
    pending = "second" if bound == ["first"] else "first"
    uid = store.get("Pod", "default", pending)["metadata"]["uid"]
    assert scheduler.cache.pod_state(uid) is None  # its failed assumption was forgotten
    assert scheduler.queue.contains(uid)  # and it waits to be retried


@MODES
def test_a_failed_bind_is_reported_and_retried_until_it_lands(background: bool) -> None:
    store, binder, scheduler, driver = _cluster(delay=0.01, background=background)
    binder.conflicts["p"] = 1
    driver.start()
    try:
        store.create(pod("p", 500))
        assert _wait(lambda: _node_of(store, "p") is not None)
    finally:
        driver.stop(timeout=10.0)
    assert binder.calls["p"] == 2
    uid = store.get("Pod", "default", "p")["metadata"]["uid"]
    assert scheduler.outcomes[uid].status == SCHEDULED
    reasons = [e["reason"] for e in store.list("Event") if e["regarding"]["name"] == "p"]
    assert reasons == ["FailedScheduling", "Scheduled"]


@MODES
def test_a_pod_deleted_during_its_bind_is_not_requeued(background: bool) -> None:
    store, binder, scheduler, driver = _cluster(delay=0.0, background=background)
    release = threading.Event()
    binder.hold["gone"] = release
    driver.start()
    try:
        store.create(pod("gone", 500))
        assert _wait(lambda: binder.calls["gone"] == 1)
        store.delete("Pod", "default", "gone")
        time.sleep(0.1)  # the driver sees the deletion while the bind is in flight
        release.set()
        assert _wait(lambda: scheduler.binding_in_flight == 0)
        store.create(pod("after", 500))  # the scheduler carries on
        assert _wait(lambda: _node_of(store, "after") is not None)
    finally:
        driver.stop(timeout=10.0)
    assert binder.calls["gone"] == 1
    assert scheduler.queue.pending_pods() == []
    assert not [e for e in store.list("Event") if e["regarding"]["name"] == "gone"]


@MODES
def test_a_bind_that_landed_without_a_reply_counts_as_bound(background: bool) -> None:
    store, binder, scheduler, driver = _cluster(delay=0.05, background=background)
    binder.lose_reply.add("p")
    driver.start()
    try:
        store.create(pod("p", 500))
        assert _wait(lambda: scheduler.binding_in_flight == 0 and _node_of(store, "p") is not None)
        time.sleep(0.2)
    finally:
        driver.stop(timeout=10.0)
    uid = store.get("Pod", "default", "p")["metadata"]["uid"]
    assert scheduler.outcomes[uid].status == SCHEDULED
    assert binder.calls["p"] == 1


@MODES
def test_stopping_lets_the_binds_in_flight_finish(background: bool) -> None:
    store, binder, scheduler, driver = _cluster(delay=0.3, background=background)
    driver.start()
    for i in range(6):
        store.create(pod(f"p{i}", 250))
    assert _wait(lambda: binder.calls.total() == 6)
    driver.stop(timeout=10.0)
    assert scheduler.binding_in_flight == 0
    assert all(_node_of(store, f"p{i}") for i in range(6))
    scheduled = [e for e in store.list("Event") if e["reason"] == "Scheduled"]
    assert len(scheduled) == 6


def test_negative_binding_workers_are_refused() -> None:
    store = MemoryStore(now=time.time)
    registry = default_registry()
    with pytest.raises(ValueError, match="binding_workers"):
        Scheduler(
            informer_factory(store),
            StorePorts(store).ports(),
            default_config(registry),
            registry,
            now=time.time,
            binding_workers=-1,
        )


class Annotating:
    """A PreBind plugin with a write to make for the pods named "writes-*" only, which its
    PreBindPreFlight says."""

    name: ClassVar[str] = "Annotating"
    written: ClassVar[list[str]] = []

    def __init__(self, args: Any, handle: Any) -> None:
        self.handle = handle

    def pre_bind_pre_flight(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        return None if pod.name.startswith("writes-") else Status(Code.SKIP)

    def pre_bind(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        if pod.name.startswith("writes-"):
            # A write that blocks, as a PreBind write to an API server does.
            time.sleep(0.01)
            type(self).written.append(pod.name)
        return None


class AnnotatingBlind(Annotating):
    """The same plugin without a PreBindPreFlight: it may act on any pod."""

    name: ClassVar[str] = "AnnotatingBlind"
    pre_bind_pre_flight = None  # type: ignore[assignment]


@pytest.mark.parametrize("plugin", [Annotating, AnnotatingBlind])
def test_only_binds_whose_pre_bind_has_nothing_to_do_go_without_a_worker(plugin: type) -> None:
    Annotating.written = []
    store, binder, scheduler, driver = _cluster(delay=0.01, background=True, pre_bind=plugin)
    driver.start()
    try:
        for i in range(4):
            store.create(pod(f"writes-{i}", 250))
            store.create(pod(f"plain-{i}", 250))
        names = [f"{kind}-{i}" for kind in ("writes", "plain") for i in range(4)]
        assert _wait(lambda: all(_node_of(store, name) for name in names))
        assert _wait(lambda: scheduler.binding_in_flight == 0)
    finally:
        driver.stop(timeout=10.0)
    assert isinstance(binder, BackgroundBinder)
    assert sorted(Annotating.written) == [f"writes-{i}" for i in range(4)]  # PreBind ran before Bind
    assert binder.calls.total() == 8
    # With a PreBindPreFlight the plain pods' Binding went in the background and the others' on a
    # worker; without one every bind needs a worker.
    assert binder.later == (4 if plugin is Annotating else 0)
    scheduled = [e for e in store.list("Event") if e["reason"] == "Scheduled"]
    assert len(scheduled) == 8


@MODES
def test_the_bind_extension_point_is_timed_however_the_binding_is_sent(background: bool) -> None:
    store, binder, scheduler, driver = _cluster(delay=0.01, background=background)
    metrics = SchedulerMetrics(process=False)
    metrics.attach(scheduler)
    binder.conflicts["p"] = 1
    driver.start()
    try:
        store.create(pod("p", 500))
        assert _wait(lambda: _node_of(store, "p") is not None and scheduler.binding_in_flight == 0)
    finally:
        driver.stop(timeout=10.0)
    text = metrics.exposition()
    count = "scheduler_framework_extension_point_duration_seconds_count"
    for status in ("Success", "Error"):
        assert sample(text, count, extension_point="Bind", status=status, profile="default-scheduler") == 1
