"""One scheduler cache for both pipelines: what either assumes, the other counts.

The kube-scheduler pipeline and the batch pipeline share the cluster's one
:class:`~kubesched.cache.cache.SchedulerCache`, fed once from the shared informers. A pod held at
Permit by the first is assumed on its node, so a batch session does not hand that room to a gang;
a pod a batch session just bound is assumed too, so the next framework cycle counts it before the
bind's event arrives.
"""

from __future__ import annotations

import time
from typing import Any, ClassVar

import pytest

from kubesched.api.objects import Pod
from kubesched.api.selectors import LabelSelector
from kubesched.batch.conf_loader import batch_conf_from_dict, default_batch_conf
from kubesched.batch.factory import get_action
from kubesched.batch.session import Session
from kubesched.batch.testing import node, pod, pod_group, queue
from kubesched.cache.cache import Snapshot
from kubesched.cache.feed import CacheFeed
from kubesched.cache.node_table import NodeTable
from kubesched.cache.pod_index import PodIndex
from kubesched.framework.config import SchedulerConfig, config_from_dict
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.handle import Handle
from kubesched.framework.registry import Registry
from kubesched.framework.status import Code, Status
from kubesched.framework.types import ActionType, ClusterEvent
from kubesched.plugins import default_registry, spec_for
from kubesched.plugins.testing import pod_dict
from kubesched.runtime.cluster import Cluster, ClusterOptions
from kubesched.runtime.driver import RealTimeDriver
from kubesched.sim.simulation import Simulation
from kubesched.store.memory import MemoryStore
from kubesched.store.parsers import informer_factory

HOLD_LABEL = "example.com/hold"


class HoldAtPermit:
    """Keeps every pod labelled ``example.com/hold`` waiting at Permit (for a minute)."""

    name: ClassVar[str] = "HoldAtPermit"

    def __init__(self, args: Any, handle: Handle) -> None:
        self.handle = handle

    def events_to_register(self) -> list[ClusterEvent]:
        return [ClusterEvent("Pod", ActionType.ADD)]

    def permit(self, state: CycleState, pod: Pod, node_name: str) -> tuple[Status | None, float]:
        if HOLD_LABEL in pod.labels:
            return Status(Code.WAIT), 60.0
        return None, 0.0


def _holding_config() -> tuple[SchedulerConfig, Registry]:
    registry = default_registry()
    registry.register(spec_for(HoldAtPermit))
    config = config_from_dict(
        {
            "apiVersion": "kubescheduler.config.k8s.io/v1",
            "kind": "KubeSchedulerConfiguration",
            "profiles": [
                {
                    "schedulerName": "default-scheduler",
                    "plugins": {"permit": {"enabled": [{"name": "HoldAtPermit"}]}},
                }
            ],
        },
        registry,
    )
    return config, registry


def _held_pod(cpu: str) -> dict[str, Any]:
    d = pod_dict("held", containers=[{"cpu": cpu, "memory": "1G"}])
    d["metadata"]["labels"] = {HOLD_LABEL: "yes"}
    return d


def _gang() -> list[dict[str, Any]]:
    """A gang of two 1-CPU pods that must start together."""
    return [
        queue("default"),
        pod_group("gang", "default", 2, "Inqueue", ns="default"),
        pod("g-0", "", "gang", cpu="1", ns="default"),
        pod("g-1", "", "gang", cpu="1", ns="default"),
    ]


def _requested_cpu(cache: Any, name: str) -> int:
    return int(cache.node_infos[name].requested.get("cpu", 0))


def test_both_schedulers_of_a_simulation_share_one_cache() -> None:
    sim = Simulation(batch_conf=default_batch_conf())
    assert sim.batch is not None
    assert sim.scheduler.cache is sim.batch.cache is sim.cluster.feed.cache


def test_a_pod_held_at_permit_is_counted_by_the_next_batch_session() -> None:
    config, registry = _holding_config()
    sim = Simulation(config, registry, seed=0, batch_conf=default_batch_conf())
    batch = sim.batch
    assert batch is not None
    sim.store.create(node("n1", cpu="4", mem="8G"))
    sim.store.create(_held_pod("3"))
    sim.informers.pump()
    assert sim.scheduler.schedule_one()
    assert sim.scheduler.binding_in_flight == 1  # held at Permit, assumed on n1, not bound
    assert sim.store.get("Pod", "default", "held")["spec"].get("nodeName") is None
    for obj in _gang():
        sim.store.create(obj)
    sim.informers.pump()
    assert batch.wants_session

    batch.run_session()
    sim.informers.pump()
    # One CPU is left beside the held pod: the gang of two does not start (without the held pod
    # in the cache, both would have gone to n1, 5 CPU on a 4 CPU node).
    for name in ("g-0", "g-1"):
        assert sim.store.get("Pod", "default", name)["spec"].get("nodeName") is None
    assert _requested_cpu(sim.scheduler.cache, "n1") == 3000
    assert batch.cache.is_assumed(sim.store.get("Pod", "default", "held")["metadata"]["uid"])


def test_a_pod_a_batch_session_bound_is_counted_before_its_event_arrives() -> None:
    sim = Simulation(seed=0, batch_conf=default_batch_conf())
    batch = sim.batch
    assert batch is not None
    sim.store.create(node("n1", cpu="4", mem="8G"))
    for obj in _gang():
        sim.store.create(obj)
    sim.informers.pump()
    batch.run_session()
    uids = [sim.store.get("Pod", "default", n)["metadata"]["uid"] for n in ("g-0", "g-1")]
    assert all(sim.store.get("Pod", "default", n)["spec"]["nodeName"] == "n1" for n in ("g-0", "g-1"))
    # The binds' events are not pumped yet: the framework scheduler's view already has both pods.
    sched = sim.scheduler
    sched.cache.update_snapshot(sched.snapshot)
    assert all(sched.cache.is_assumed(uid) for uid in uids)
    slot = sched.snapshot.table.slot_of["n1"]
    assert int(sched.snapshot.table.requested[slot, sched.snapshot.table.column("cpu")]) == 2000
    sim.informers.pump()
    assert not any(sched.cache.is_assumed(uid) for uid in uids)  # confirmed by the informer
    assert _requested_cpu(sched.cache, "n1") == 2000


def test_the_real_time_driver_keeps_a_gang_off_the_room_a_held_pod_has() -> None:
    store = MemoryStore(now=time.time)
    config, registry = _holding_config()
    conf = batch_conf_from_dict({"actions": "allocate", "tiers": [{"plugins": [{"name": "gang"}]}]})
    cluster = Cluster(
        store,
        ClusterOptions(
            config=config, registry=registry, now=time.time, batch=True, batch_conf=conf, schedule_period=0.01
        ),
    )
    informers, scheduler, batch = cluster.informers, cluster.scheduler, cluster.start_batch()
    driver = RealTimeDriver(informers, scheduler, store, batch=batch, max_idle=0.02)
    store.create(node("n1", cpu="4", mem="8G"))
    driver.start()
    try:
        store.create(_held_pod("3"))
        deadline = time.monotonic() + 2.0
        while scheduler.binding_in_flight == 0 and time.monotonic() < deadline:
            time.sleep(0.005)
        assert scheduler.binding_in_flight == 1
        for obj in _gang():
            store.create(obj)
        deadline = time.monotonic() + 2.0
        while driver.sessions < 3 and time.monotonic() < deadline:
            time.sleep(0.005)
        assert driver.sessions >= 1
    finally:
        driver.stop(timeout=2.0)
    for name in ("g-0", "g-1"):
        assert (store.get("Pod", "default", name) or {})["spec"].get("nodeName") is None
    assert scheduler.cache is batch.cache
    assert _requested_cpu(scheduler.cache, "n1") == 3000


def test_each_snapshot_of_the_cache_catches_up_on_its_own() -> None:
    """Both schedulers refresh their own snapshot of the one cache, at different times: a refresh
    of one must not hide a change from the other."""
    store = MemoryStore()
    informers = informer_factory(store)
    feed = CacheFeed(informers)
    cache = feed.cache
    first, second = Snapshot(), Snapshot()
    store.create(node("a", cpu="4", mem="8G"))
    informers.pump()
    cache.update_snapshot(first)
    store.create(node("b", cpu="4", mem="8G"))
    store.create(pod_dict("p", containers=[{"cpu": "1"}], node_name="a"))
    informers.pump()
    cache.update_snapshot(first)
    cache.update_snapshot(second)  # new to the cache: gets every node
    for snap in (first, second):
        table = snap.table
        assert sorted(table.names[s] for s in table.order.tolist()) == ["a", "b"]
        assert int(table.requested[table.slot_of["a"], table.column("cpu")]) == 1000
    store.delete("Pod", "default", "p")
    store.delete("Node", None, "b")
    informers.pump()
    cache.update_snapshot(first)
    assert [first.table.names[s] for s in first.table.order.tolist()] == ["a"]
    assert int(first.table.requested[first.table.slot_of["a"], first.table.column("cpu")]) == 0
    # The second snapshot still shows what it last saw, and catches up on its next refresh.
    assert int(second.table.requested[second.table.slot_of["a"], second.table.column("cpu")]) == 1000
    cache.update_snapshot(second)
    assert [second.table.names[s] for s in second.table.order.tolist()] == ["a"]
    assert "b" not in second.node_infos
    assert int(second.table.requested[second.table.slot_of["a"], second.table.column("cpu")]) == 0


def test_the_feed_tells_a_newly_placed_pod_from_an_update() -> None:
    store = MemoryStore()
    informers = informer_factory(store)
    feed = CacheFeed(informers)
    seen: list[tuple[str, bool | None]] = []

    def later(change: Any) -> None:
        before = feed.before(change)
        seen.append((change.type.value, None if before is None else before.assumed))

    informers.informer("Pod").add_handler(later)
    store.create(node("a", cpu="4", mem="8G"))
    store.create(pod_dict("p", containers=[{"cpu": "1"}]))
    informers.pump()
    p = Pod.from_dict(store.get("Pod", "default", "p"))
    p.node_name = "a"
    feed.cache.assume_pod(p, "a")
    store.bind("default", "p", p.uid, "a")
    informers.pump()
    store.update(dict(store.get("Pod", "default", "p"), status={"phase": "Running"}))
    informers.pump()
    store.delete("Pod", "default", "p")
    informers.pump()
    # Created unplaced (unknown), confirmed (was assumed), updated (was placed), deleted (was placed).
    assert [b for _, b in seen] == [None, True, False, False]
    assert feed.cache.pod_state(p.uid) is None


def _pod_index_state(index: PodIndex, capacity: int) -> tuple[Any, ...]:
    slots = {s: sorted(p.uid for p in index.pods_on(s)) for s in range(capacity)}
    counts = index.matching_counts(None, LabelSelector.from_match_labels({"app": "web"}))
    return len(index), {s: u for s, u in slots.items() if u}, counts.tolist()


def _table_state(table: NodeTable) -> tuple[Any, ...]:
    return (
        list(table.names),
        table.order.tolist(),
        table.requested.tolist(),
        table.nonzero_requested.tolist(),
        table.allocatable.tolist(),
    )


def test_an_action_failing_mid_session_leaves_the_shared_cache_as_it_was() -> None:
    """allocate places the pending task (counted in the cache's pod index at once), then the next
    action fails: the pod index, the cache's NodeInfos and both schedulers' tables are as before."""
    objs = [
        node("n1", cpu="4", mem="8G"),
        node("n2", cpu="4", mem="8G"),
        queue("q1"),
        pod_group("run", "q1", 1, "Running"),
        pod("r", "n1", "run"),
        pod_group("pg", "q1", 1, "Inqueue"),
        pod("p", "", "pg"),
    ]
    for obj in objs:
        if obj["kind"] == "Pod":
            obj["metadata"]["labels"] = {"app": "web"}
    store = MemoryStore()
    for kind in ("Node", "Queue", "PodGroup", "Pod"):
        for obj in objs:
            if obj["kind"] == kind:
                store.create(obj)
    conf = batch_conf_from_dict(
        {"actions": "allocate", "tiers": [{"plugins": [{"name": "gang"}, {"name": "predicates"}]}]}
    )
    cluster = Cluster(store, ClusterOptions(now=lambda: 0.0, batch_conf=conf))
    informers, scheduler, batch = cluster.informers, cluster.scheduler, cluster.start_batch()
    informers.pump()
    cache = cluster.feed.cache
    allocate = get_action("allocate")
    assert allocate is not None
    placed: list[int] = []

    class FailsAfterAllocating:
        name = "fails"

        def execute(self, ssn: Session) -> None:
            assert allocate is not None
            allocate.execute(ssn)
            placed.append(len(ssn.pod_index or ()))
            raise RuntimeError("action bug")

    scheduler.cache.update_snapshot(scheduler.snapshot)
    cache.update_snapshot(batch.snapshot)
    capacity = scheduler.snapshot.table.capacity
    index_before = _pod_index_state(cache.pod_index, capacity)
    infos_before = {n: (dict(i.requested), sorted(i.pods)) for n, i in cache.node_infos.items()}
    tables_before = [_table_state(scheduler.snapshot.table), _table_state(batch.snapshot.table)]
    batch.cycle.actions = [FailsAfterAllocating()]
    with pytest.raises(RuntimeError, match="action bug"):
        batch.run_session()
    assert placed == [2]  # the session had counted its placement in the shared index
    assert _pod_index_state(cache.pod_index, capacity) == index_before
    assert {n: (dict(i.requested), sorted(i.pods)) for n, i in cache.node_infos.items()} == infos_before
    scheduler.cache.update_snapshot(scheduler.snapshot)
    cache.update_snapshot(batch.snapshot)
    assert [_table_state(scheduler.snapshot.table), _table_state(batch.snapshot.table)] == tables_before
    assert not any(st.assumed for st in cache.pods())
    assert not store.get("Pod", "c1", "p")["spec"].get("nodeName")
