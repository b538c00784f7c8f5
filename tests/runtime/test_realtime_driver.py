"""The real-time driver: scheduling while other threads write to the embedded store.

Writers create nodes and pods (some too big for any node), delete pods and cordon nodes while the
driver's thread pumps the informers and schedules. Afterwards the store alone must show a consistent
cluster: no node holds more than it can, every pod was bound at most once and stayed where it was
bound, every pod left pending says why, and the driver stopped when told.
"""

from __future__ import annotations

import random
import threading
import time
from collections import Counter
from typing import Any

from kubesched.framework.config import default_config
from kubesched.plugins import default_registry
from kubesched.runtime.cluster import Cluster, ClusterOptions
from kubesched.runtime.driver import RealTimeDriver
from kubesched.scheduler.scheduler import Scheduler
from kubesched.store.base import Conflict, EventType
from kubesched.store.memory import MemoryStore
from kubesched.store.parsers import informer_factory
from kubesched.store.ports import Ports, StorePorts

NODE_CPU_MILLI = 4000
WRITE_SECONDS = 1.5


class CountingBinder:
    """The store's binder, counting the conflicts the store answers with."""

    def __init__(self, store_ports: StorePorts) -> None:
        self.inner = store_ports
        self.conflicts: list[str] = []
        self.lock = threading.Lock()

    def bind(self, namespace: str, name: str, uid: str, node_name: str) -> None:
        try:
            self.inner.bind(namespace, name, uid, node_name)
        except Conflict as exc:
            with self.lock:
                self.conflicts.append(str(exc))
            raise


def node(name: str) -> dict[str, Any]:
    alloc = {"cpu": f"{NODE_CPU_MILLI}m", "memory": "16Gi", "pods": "110"}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
        "status": {"capacity": alloc, "allocatable": alloc},
    }


def pod(name: str, cpu_milli: int) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "containers": [
                {"name": "c", "image": "pause", "resources": {"requests": {"cpu": f"{cpu_milli}m"}}}
            ]
        },
    }


def milli(cpu: str) -> int:
    return int(cpu[:-1]) if cpu.endswith("m") else int(float(cpu) * 1000)


def _writers(
    store: MemoryStore, stop: threading.Event, errors: list[BaseException]
) -> list[threading.Thread]:
    def guarded(fn: Any) -> Any:
        def run() -> None:
            try:
                fn()
            except BaseException as exc:  # surfaced by the test
                errors.append(exc)

        return run

    def nodes() -> None:
        i = 0
        while not stop.is_set() and i < 12:
            store.create(node(f"n{i}"))
            i += 1
            time.sleep(0.05)

    def pods(prefix: str, seed: int) -> Any:
        def run() -> None:
            rng = random.Random(seed)
            i = 0
            while not stop.is_set():
                # One in ten asks for more than any node has: it stays pending.
                cpu = 64000 if rng.random() < 0.1 else rng.choice([250, 500, 1000, 1500])
                store.create(pod(f"{prefix}-{i}", cpu))
                i += 1
                time.sleep(rng.uniform(0.003, 0.012))

        return run

    def deleter() -> None:
        rng = random.Random(3)
        while not stop.is_set():
            pods_now = store.list("Pod")
            if pods_now:
                victim = rng.choice(pods_now)["metadata"]
                store.delete("Pod", victim["namespace"], victim["name"])  # the only deleter
            time.sleep(0.02)

    def cordoner() -> None:
        rng = random.Random(4)
        cordoned = 0
        while not stop.is_set() and cordoned < 3:
            time.sleep(0.3)
            nodes_now = [n for n in store.list("Node") if not (n.get("spec") or {}).get("unschedulable")]
            if nodes_now:
                target = rng.choice(nodes_now)
                store.update({**target, "spec": {**(target.get("spec") or {}), "unschedulable": True}})
                cordoned += 1

    return [
        threading.Thread(target=guarded(f), daemon=True)
        for f in (nodes, pods("a", 1), pods("b", 2), deleter, cordoner)
    ]


def _settled(store: MemoryStore) -> bool:
    """Every pod is bound, or has been tried and says why it is pending."""
    for obj in store.list("Pod"):
        if (obj.get("spec") or {}).get("nodeName"):
            continue
        conds = [c for c in (obj.get("status") or {}).get("conditions") or [] if c["type"] == "PodScheduled"]
        if not conds or conds[0]["status"] != "False":
            return False
    return True


def test_concurrent_writers_leave_a_consistent_cluster() -> None:
    store = MemoryStore(now=time.time)
    watch = store.watch(frozenset({"Pod"}))  # the test's own record of every pod change
    store_ports = StorePorts(store)
    binder = CountingBinder(store_ports)
    ports = Ports(binder, store_ports, store_ports, store_ports, store_ports, store_ports)
    informers = informer_factory(store)
    registry = default_registry()
    config = default_config(registry)
    # Short backoffs: pods that failed for want of a node are retried within the test.
    config.pod_initial_backoff_seconds = 1
    config.pod_max_backoff_seconds = 1
    scheduler = Scheduler(informers, ports, config, registry, now=time.time, seed=0)
    driver = RealTimeDriver(informers, scheduler, store, max_idle=0.05)

    # The scheduler's DefaultBinder must bind through the counting binder.
    assert scheduler.handle.ports.binder is binder

    driver.start()
    stop = threading.Event()
    errors: list[BaseException] = []
    writers = _writers(store, stop, errors)
    for t in writers:
        t.start()
    time.sleep(WRITE_SECONDS)
    stop.set()
    for t in writers:
        t.join(2.0)
    assert not errors, errors

    deadline = time.monotonic() + 3.0
    while not _settled(store) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert _settled(store)
    started = time.monotonic()
    driver.stop(timeout=2.0)
    assert time.monotonic() - started < 2.0
    assert driver.stopped
    assert driver.cycles > 0

    # No node over-committed, from the store alone.
    used: Counter[str] = Counter()
    for obj in store.list("Pod"):
        node_name = (obj.get("spec") or {}).get("nodeName")
        if node_name:
            used[node_name] += sum(
                milli(c["resources"]["requests"]["cpu"]) for c in obj["spec"]["containers"]
            )
    for obj in store.list("Node"):
        name = obj["metadata"]["name"]
        assert used[name] <= milli(obj["status"]["allocatable"]["cpu"]), name
    assert sum(used.values()) > 0

    # Every pod bound at most once, and never moved.
    assert binder.conflicts == []
    binds: Counter[str] = Counter()
    for event in watch.drain():
        if event.type != EventType.MODIFIED or event.old is None:
            continue
        old_node = (event.old.get("spec") or {}).get("nodeName")
        new_node = (event.obj.get("spec") or {}).get("nodeName")
        assert not old_node or old_node == new_node, event.obj["metadata"]["name"]
        if new_node and not old_node:
            binds[event.obj["metadata"]["uid"]] += 1
    assert binds and max(binds.values()) == 1

    # Every pod still pending was tried and says why.
    pending = [obj for obj in store.list("Pod") if not (obj.get("spec") or {}).get("nodeName")]
    assert pending  # the oversized ones at least
    for obj in pending:
        cond = next(c for c in obj["status"]["conditions"] if c["type"] == "PodScheduled")
        assert cond["status"] == "False"
        assert cond["reason"] in ("Unschedulable", "SchedulerError")
        assert cond["message"]


def test_a_write_wakes_an_idle_driver() -> None:
    """With a long idle cap, a pod created while the driver waits is bound long before the cap: the
    write itself wakes the driver."""
    store = MemoryStore(now=time.time)
    registry = default_registry()
    scheduler = Cluster(store, ClusterOptions(registry=registry, now=time.time)).scheduler
    driver = RealTimeDriver(scheduler.informers, scheduler, store, max_idle=5.0)
    driver.start()
    try:
        store.create(node("n0"))
        # Idle waits double from 1 ms: at 0.6 s the driver is in the wait that runs from about
        # 0.51 s to 1.02 s, so a bind within 0.15 s can only come from the write waking it.
        time.sleep(0.6)
        store.create(pod("p", 500))
        deadline = time.monotonic() + 0.15
        while time.monotonic() < deadline:
            if (store.get("Pod", "default", "p") or {}).get("spec", {}).get("nodeName"):
                break
            time.sleep(0.005)
        assert (store.get("Pod", "default", "p") or {})["spec"].get("nodeName") == "n0"
    finally:
        driver.stop(timeout=1.0)
    assert driver.stopped


class CountingSessions:
    """A batch scheduler stand-in: always has work, counts its sessions."""

    schedule_period = 0.05
    wants_session = True

    def __init__(self) -> None:
        self.times: list[float] = []

    def run_session(self) -> None:
        self.times.append(time.monotonic())


def test_batch_sessions_run_every_schedule_period() -> None:
    store = MemoryStore(now=time.time)
    informers = informer_factory(store)
    registry = default_registry()
    scheduler = Scheduler(
        informers, StorePorts(store).ports(), default_config(registry), registry, now=time.time, seed=0
    )
    sessions = CountingSessions()
    driver = RealTimeDriver(informers, scheduler, store, batch=sessions, max_idle=1.0)
    driver.start()
    time.sleep(0.4)
    driver.stop(timeout=1.0)
    gaps = [b - a for a, b in zip(sessions.times, sessions.times[1:], strict=False)]
    assert 4 <= len(sessions.times) <= 10
    assert min(gaps) >= CountingSessions.schedule_period * 0.9
    assert driver.sessions == len(sessions.times)
