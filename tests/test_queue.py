"""SchedulingQueue: ordering, backoff, event-driven moves, gates, in-flight events (upstream semantics)."""

from __future__ import annotations

from typing import Any

import pytest

from kubesched.api.objects import Pod
from kubesched.framework.status import Status
from kubesched.framework.types import ActionType, ClusterEvent, QueuedPodInfo
from kubesched.plugins.noderesources.fit import NodeResourcesFit
from kubesched.plugins.nodeunschedulable import NodeUnschedulable
from kubesched.plugins.queuesort import PrioritySort
from kubesched.plugins.schedulinggates import SchedulingGates
from kubesched.plugins.tainttoleration import TaintToleration
from kubesched.queue.scheduling_queue import SchedulingQueue

NODE_ADD = ClusterEvent("Node", ActionType.ADD)
NODE_UPDATE = ClusterEvent("Node", ActionType.UPDATE)
POD_DELETE = ClusterEvent("Pod", ActionType.DELETE)
POD_ADD = ClusterEvent("Pod", ActionType.ADD)


class Clock:
    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


def make_pod(name: str, priority: int = 0, gates: tuple[str, ...] = ()) -> Pod:
    spec: dict[str, Any] = {"priority": priority, "containers": [{"name": "c"}]}
    if gates:
        spec["schedulingGates"] = [{"name": g} for g in gates]
    return Pod.from_dict({"kind": "Pod", "metadata": {"name": name, "uid": f"uid-{name}"}, "spec": spec})


def plugin_events() -> dict[str, list[ClusterEvent]]:
    return {
        NodeResourcesFit.name: NodeResourcesFit(None).events_to_register(),
        TaintToleration.name: TaintToleration().events_to_register(),
        NodeUnschedulable.name: NodeUnschedulable().events_to_register(),
        SchedulingGates.name: SchedulingGates().events_to_register(),
    }


def make_queue(clock: Clock, **kw: Any) -> SchedulingQueue:
    gates = SchedulingGates()

    def pre_enqueue(pod: Pod) -> Status | None:
        st = gates.pre_enqueue(pod)
        if st is not None:
            st.plugin = gates.name  # as Framework.run_pre_enqueue does
        return st

    return SchedulingQueue(
        PrioritySort.sort_key,
        clock,
        pre_enqueue=pre_enqueue,
        plugin_events=plugin_events(),
        **kw,
    )


def fail(q: SchedulingQueue, info: QueuedPodInfo, *plugins: str, error: bool = False) -> None:
    info.unschedulable_plugins = set(plugins)
    q.add_unschedulable(info, error=error)


def where(q: SchedulingQueue, uid: str) -> str | None:
    for kind, info in q.pending_pods():
        if info.pod.uid == uid:
            return kind
    return None


def test_priority_sort_orders_by_priority_then_arrival() -> None:
    clock = Clock()
    q = make_queue(clock)
    for name, prio in [
        ("low-early", 0),
        ("high-late", 100),
        ("mid", 50),
        ("low-late", 0),
        ("high-later", 100),
    ]:
        q.add(make_pod(name, prio))
        clock.t += 1
    order = []
    while (info := q.pop()) is not None:
        order.append(info.pod.name)
    assert order == ["high-late", "high-later", "mid", "low-early", "low-late"]


def test_priority_sort_less_matches_key() -> None:
    a = QueuedPodInfo(make_pod("a", 10), 5.0)
    b = QueuedPodInfo(make_pod("b", 10), 6.0)
    c = QueuedPodInfo(make_pod("c", 20), 7.0)
    sort = PrioritySort()
    assert sort.less(a, b) and not sort.less(b, a)
    assert sort.less(c, a) and not sort.less(a, c)


def test_backoff_doubles_and_caps() -> None:
    clock = Clock()
    q = make_queue(clock, initial_backoff=1.0, max_backoff=10.0)
    info = QueuedPodInfo(make_pod("p"), clock.t)
    got = []
    for attempts in range(1, 8):
        info.attempts = attempts
        got.append(q.backoff_duration(info))
    assert got == [1, 2, 4, 8, 10, 10, 10]


def test_backoff_with_custom_initial_and_max() -> None:
    q = make_queue(Clock(), initial_backoff=3.0, max_backoff=20.0)
    info = QueuedPodInfo(make_pod("p"), 0.0)
    got = []
    for attempts in range(1, 6):
        info.attempts = attempts
        got.append(q.backoff_duration(info))
    assert got == [3, 6, 12, 20, 20]


def test_backoff_queue_flushes_when_expired() -> None:
    clock = Clock()
    q = make_queue(clock)
    q.add(make_pod("p"))
    for expected_wait in (1, 2, 4, 8, 10, 10):
        info = q.pop()
        assert info is not None
        fail(q, info, error=True)  # an error always backs off
        assert where(q, "uid-p") == "backoff"
        assert q.next_backoff_expiry() == pytest.approx(clock.t + expected_wait)
        clock.t += expected_wait - 0.5
        assert q.flush_backoff_completed() == 0
        assert q.pop() is None
        clock.t += 0.5
        assert q.flush_backoff_completed() == 1
        assert where(q, "uid-p") == "active"


def test_unschedulable_moves_only_on_registered_events() -> None:
    clock = Clock()
    q = make_queue(clock)
    q.add(make_pod("fit"))
    q.add(make_pod("taint"))
    infos = {i.pod.name: i for i in (q.pop(), q.pop()) if i is not None}
    fail(q, infos["fit"], "NodeResourcesFit")
    fail(q, infos["taint"], "TaintToleration")
    assert where(q, "uid-fit") == "unschedulable"
    assert where(q, "uid-taint") == "unschedulable"
    clock.t += 60  # past any backoff

    # An assigned pod was added: no rejecting plugin registered for it.
    assert q.move_all_to_active_or_backoff(POD_ADD) == 0
    # A pod was deleted: frees resources (NodeResourcesFit), cannot remove a taint.
    assert q.move_all_to_active_or_backoff(POD_DELETE) == 1
    assert where(q, "uid-fit") == "active"
    assert where(q, "uid-taint") == "unschedulable"
    # A node update can remove a taint.
    assert q.move_all_to_active_or_backoff(NODE_UPDATE) == 1
    assert where(q, "uid-taint") == "active"


def test_node_add_moves_pods_of_every_node_plugin() -> None:
    clock = Clock()
    q = make_queue(clock)
    for name in ("a", "b", "c"):
        q.add(make_pod(name))
    infos = [q.pop(), q.pop(), q.pop()]
    for info, plugin in zip(infos, ["NodeResourcesFit", "TaintToleration", "NodeUnschedulable"], strict=True):
        assert info is not None
        fail(q, info, plugin)
    clock.t += 60
    assert q.move_all_to_active_or_backoff(NODE_ADD) == 3
    assert q.active_count == 3


def test_event_while_backing_off_sends_pod_to_backoff_queue() -> None:
    clock = Clock()
    q = make_queue(clock)
    q.add(make_pod("p"))
    info = q.pop()
    assert info is not None
    fail(q, info, "NodeResourcesFit")
    clock.t += 0.5  # backoff for attempt 1 is 1s
    q.move_all_to_active_or_backoff(NODE_ADD)
    assert where(q, "uid-p") == "backoff"
    clock.t += 0.5
    q.flush_backoff_completed()
    assert where(q, "uid-p") == "active"


def test_leftover_unschedulable_pods_flushed_after_five_minutes() -> None:
    clock = Clock()
    q = make_queue(clock)
    q.add(make_pod("p"))
    info = q.pop()
    assert info is not None
    fail(q, info, "TaintToleration")
    clock.t += 299
    assert q.flush_unschedulable_leftover() == 0
    assert where(q, "uid-p") == "unschedulable"
    clock.t += 2
    assert q.flush_unschedulable_leftover() == 1
    assert where(q, "uid-p") == "active"


def test_gated_pod_stays_out_until_gate_removed() -> None:
    clock = Clock()
    q = make_queue(clock)
    q.add(make_pod("g", gates=("example.com/wait", "example.com/other")))
    assert q.pop() is None
    assert where(q, "uid-g") == "gated"
    assert q.unschedulable_info("uid-g").gated_by == "SchedulingGates"  # type: ignore[union-attr]
    # Neither cluster events nor the 5 minute flush release a gated pod.
    clock.t += 600
    for event in (NODE_ADD, NODE_UPDATE, POD_DELETE):
        q.move_all_to_active_or_backoff(event)
    assert q.flush_unschedulable_leftover() == 0
    assert where(q, "uid-g") == "gated"
    # Removing one of two gates is not enough.
    q.update(make_pod("g", gates=("example.com/wait",)))
    assert where(q, "uid-g") == "gated"
    q.update(make_pod("g"))
    assert where(q, "uid-g") == "active"  # never tried: no backoff
    info = q.pop()
    assert info is not None and info.pod.name == "g" and info.attempts == 1


def test_event_during_in_flight_sends_pod_to_backoff() -> None:
    clock = Clock()
    q = make_queue(clock)
    q.add(make_pod("p"))
    info = q.pop()
    assert info is not None
    q.move_all_to_active_or_backoff(NODE_ADD)  # happens while the pod is being scheduled
    fail(q, info, "NodeResourcesFit")
    assert where(q, "uid-p") == "backoff"


def test_irrelevant_event_during_in_flight_keeps_pod_unschedulable() -> None:
    clock = Clock()
    q = make_queue(clock)
    q.add(make_pod("p"))
    info = q.pop()
    assert info is not None
    q.move_all_to_active_or_backoff(POD_DELETE)  # TaintToleration does not care
    fail(q, info, "TaintToleration")
    assert where(q, "uid-p") == "unschedulable"


def test_in_flight_events_are_forgotten_after_done() -> None:
    clock = Clock()
    q = make_queue(clock)
    q.add(make_pod("p"))
    info = q.pop()
    assert info is not None
    q.move_all_to_active_or_backoff(NODE_ADD)
    fail(q, info, "NodeResourcesFit")  # → backoff (event seen while in flight)
    clock.t += 1
    q.flush_backoff_completed()
    info = q.pop()
    assert info is not None and info.attempts == 2
    fail(q, info, "NodeResourcesFit")  # no event during this attempt
    assert where(q, "uid-p") == "unschedulable"


def test_failure_without_plugins_backs_off() -> None:
    clock = Clock()
    q = make_queue(clock)
    q.add(make_pod("p"))
    info = q.pop()
    assert info is not None
    fail(q, info)  # e.g. no nodes at all: any event may help, upstream sends it to backoff
    assert where(q, "uid-p") == "backoff"


def test_delete_removes_from_every_subqueue() -> None:
    clock = Clock()
    q = make_queue(clock)
    q.add(make_pod("a"))
    q.add(make_pod("g", gates=("x",)))
    q.add(make_pod("b"))
    info = q.pop()
    assert info is not None
    fail(q, info, "TaintToleration")
    for uid in ("uid-a", "uid-b", "uid-g"):
        q.delete(uid)
    assert q.pending_pods() == []
    assert q.pop() is None


def test_update_of_active_pod_keeps_single_entry() -> None:
    clock = Clock()
    q = make_queue(clock)
    q.add(make_pod("a"))
    q.update(make_pod("a", priority=5))
    assert q.active_count == 1
    info = q.pop()
    assert info is not None and info.pod.priority == 5
    assert q.pop() is None


def test_events_move_failed_pods_in_order_and_leave_gated_ones() -> None:
    clock = Clock()
    q = make_queue(clock)
    for i in range(50):
        q.add(make_pod(f"g{i}", gates=("example.com/wait",)))
    failed = []
    for name in ("a", "b", "c"):
        q.add(make_pod(name))
        info = q.pop()
        assert info is not None
        fail(q, info, NodeResourcesFit.name)
        failed.append(info.pod.uid)
    clock.t += 100  # past backoff
    assert q.move_all_to_active_or_backoff(NODE_ADD) == 3
    popped = [q.pop() for _ in range(3)]
    assert [p.pod.uid for p in popped if p is not None] == failed
    assert all(where(q, f"uid-g{i}") == "gated" for i in range(50))
    clock.t += 10_000
    assert q.flush_unschedulable_leftover() == 0
