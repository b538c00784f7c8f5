"""Queueing hints end to end: an unschedulable pod is retried only when an event may help it, as the
plugin that rejected it judges (upstream QueueingHints, GA in v1.34)."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from kubesched.api.objects import Node, Pod
from kubesched.framework.outcome import PodOutcome
from kubesched.framework.types import ActionType, ClusterEvent, QueueingHint
from kubesched.plugins.noderesources.fit import NodeResourcesFit
from kubesched.plugins.queuesort import PrioritySort
from kubesched.plugins.testing import make_node, node_dict, pod_dict
from kubesched.queue.scheduling_queue import SchedulingQueue
from kubesched.sim.simulation import Simulation


def _outcome(sim: Simulation, name: str) -> PodOutcome:
    return next(o for o in sim.outcomes() if o.name == name)


def _edit_node(sim: Simulation, name: str, **changes: Any) -> None:
    node = dict(sim.store.get("Node", None, name) or {})
    for section, value in changes.items():
        node[section] = {**(node.get(section) or {}), **value}
    sim.store.update(node)


def test_pod_rejected_for_cpu_is_not_requeued_by_unrelated_label_change() -> None:
    sim = Simulation()
    sim.store.create(node_dict("n", {"cpu": "2", "memory": "4Gi", "pods": "10"}))
    sim.store.create(pod_dict("big", containers=[{"cpu": "4"}]))
    sim.run()
    big = _outcome(sim, "big")
    assert big.status == "Unschedulable" and big.attempts == 1
    queue = sim.scheduler.queue
    assert queue.unschedulable_count == 1

    _edit_node(sim, "n", metadata={"labels": {"team": "blue"}})
    sim.run()
    assert _outcome(sim, "big").attempts == 1  # not retried: a label cannot make room for cpu
    assert queue.unschedulable_count == 1

    _edit_node(sim, "n", status={"allocatable": {"cpu": "8", "memory": "4Gi", "pods": "10"}})
    sim.run()
    big = _outcome(sim, "big")
    assert (big.status, big.node, big.attempts) == ("Scheduled", "n", 2)


def test_pod_rejected_by_taint_waits_for_that_taint_to_go() -> None:
    sim = Simulation()
    taint = {"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}
    other = {"key": "maintenance", "value": "soon", "effect": "PreferNoSchedule"}
    sim.store.create(node_dict("n", {"cpu": "2", "memory": "4Gi", "pods": "10"}, taints=[taint]))
    sim.store.create(pod_dict("p"))
    sim.run()
    assert _outcome(sim, "p").attempts == 1
    _edit_node(sim, "n", spec={"taints": [taint, other]})  # still untolerated
    sim.run()
    assert _outcome(sim, "p").attempts == 1
    _edit_node(sim, "n", spec={"taints": [other]})
    sim.run()
    p = _outcome(sim, "p")
    assert (p.status, p.node, p.attempts) == ("Scheduled", "n", 2)


def test_deleting_a_pending_pod_frees_nothing() -> None:
    sim = Simulation()
    sim.store.create(node_dict("n", {"cpu": "1", "memory": "4Gi", "pods": "10"}))
    sim.store.create(pod_dict("big", containers=[{"cpu": "2"}], priority=10))
    sim.store.create(pod_dict("also-big", containers=[{"cpu": "2"}]))
    sim.run()
    sim.store.delete("Pod", "default", "also-big")
    sim.run()
    assert _outcome(sim, "big").attempts == 1


# -- in-flight events ------------------------------------------------------------------------------


class _Clock:
    t = 100.0

    def __call__(self) -> float:
        return self.t


def _queue() -> SchedulingQueue:
    fit = NodeResourcesFit(None)
    return SchedulingQueue(
        PrioritySort.sort_key, _Clock(), plugin_events={fit.name: fit.events_to_register()}
    )


def _nodes(before_cpu: str, after_cpu: str) -> tuple[Node, Node]:
    return make_node("n", {"cpu": before_cpu, "pods": "10"}), make_node("n", {"cpu": after_cpu, "pods": "10"})


ALLOCATABLE = ClusterEvent("Node", ActionType.UPDATE_NODE_ALLOCATABLE)
LABEL = ClusterEvent("Node", ActionType.UPDATE_NODE_LABEL)


def _fail_in_flight(queue: SchedulingQueue, event: ClusterEvent, old: Node, new: Node) -> None:
    queue.add(Pod.from_dict(pod_dict("p", uid="uid-p", containers=[{"cpu": "4"}])))
    info = queue.pop()
    assert info is not None
    queue.move_all_to_active_or_backoff(event, old, new)  # while the pod is being scheduled
    info.unschedulable_plugins = {"NodeResourcesFit"}
    queue.add_unschedulable(info)


def test_in_flight_event_that_helps_sends_the_pod_to_backoff() -> None:
    queue = _queue()
    _fail_in_flight(queue, ALLOCATABLE, *_nodes("2", "8"))
    assert (queue.backoff_count, queue.unschedulable_count) == (1, 0)


def test_in_flight_event_that_cannot_help_leaves_the_pod_unschedulable() -> None:
    queue = _queue()
    _fail_in_flight(queue, ALLOCATABLE, *_nodes("1", "2"))  # grew, still too small
    assert (queue.backoff_count, queue.unschedulable_count) == (0, 1)
    queue = _queue()
    _fail_in_flight(queue, LABEL, *_nodes("8", "8"))  # Fit does not register label changes
    assert (queue.backoff_count, queue.unschedulable_count) == (0, 1)


def test_update_of_the_unschedulable_pod_itself_asks_the_hints() -> None:
    queue = _queue()
    pod = Pod.from_dict(pod_dict("p", uid="uid-p", containers=[{"cpu": "4"}]))
    queue.add(pod)
    info = queue.pop()
    assert info is not None
    info.unschedulable_plugins = {"NodeResourcesFit"}
    queue.add_unschedulable(info)
    raw = dict(pod.raw)
    raw["metadata"] = {**raw["metadata"], "labels": {"a": "b"}}
    queue.update(Pod.from_dict(raw), pod)
    assert queue.unschedulable_count == 1  # a label change of its own does not help a cpu rejection


# -- invariants ------------------------------------------------------------------------------------

_CPUS = st.sampled_from(["500m", "1", "2", "4"])
_OPS = st.lists(
    st.one_of(
        st.tuples(st.just("add"), _CPUS),
        st.tuples(st.just("pop_fail"), st.booleans()),
        st.tuples(st.just("node"), _CPUS, _CPUS),
        st.tuples(st.just("label"), st.booleans()),
        st.tuples(st.just("tick"), st.integers(0, 20)),
    ),
    max_size=40,
)


@settings(max_examples=60, deadline=None, derandomize=True)
@given(_OPS)
def test_hints_never_lose_or_duplicate_a_pod(ops: list[tuple[Any, ...]]) -> None:
    """Whatever the hints answer, every pod stays in exactly one place, and a pod the hint keeps out
    of the queues is one that could not fit the changed node."""
    clock = _Clock()
    clock.t = 100.0
    fit = NodeResourcesFit(None)
    queue = SchedulingQueue(PrioritySort.sort_key, clock, plugin_events={fit.name: fit.events_to_register()})
    added: set[str] = set()
    for op in ops:
        if op[0] == "add":
            uid = f"uid-{len(added)}"
            queue.add(Pod.from_dict(pod_dict(uid, uid=uid, containers=[{"cpu": op[1]}])))
            added.add(uid)
        elif op[0] == "pop_fail":
            info = queue.pop()
            if info is not None:
                info.unschedulable_plugins = {"NodeResourcesFit"}
                queue.add_unschedulable(info, error=op[1])
        elif op[0] == "node":
            old, new = _nodes(op[1], op[2])
            before = {i.pod.uid for i in queue.pods() if queue.unschedulable_info(i.pod.uid) is not None}
            queue.move_all_to_active_or_backoff(ALLOCATABLE, old, new)
            for uid in before:
                info = queue.unschedulable_info(uid)
                if info is None:  # moved: the pod fits the grown node
                    continue
                assert fit.is_schedulable_after_node_change(info.pod, old, new) == QueueingHint.QUEUE_SKIP
        elif op[0] == "label":
            moved = queue.move_all_to_active_or_backoff(LABEL, *_nodes("1", "1"))
            assert moved == 0
        else:
            clock.t += op[1]
            queue.flush_backoff_completed()
        places = [i.pod.uid for i in queue.pods()]
        assert len(places) == len(set(places)) == len(added) == len(queue)
