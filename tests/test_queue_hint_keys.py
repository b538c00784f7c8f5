"""Hints with keys (DynamicResources' ResourceClaim hint names the claim an event is about) let
the queue ask only the waiting pods an event can concern, and nothing else changes: over random
sequences of pods naming claims, claims created, allocated and deallocated, pods failing for
DynamicResources or another plugin, pod updates and node events, a queue that uses the keys holds
and hands out the same pods in the same order as one that asks every waiting pod."""

from __future__ import annotations

import dataclasses
import random
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from kubesched.api.objects import Pod
from kubesched.api.resource import ResourceClaim
from kubesched.framework.handle import Handle
from kubesched.framework.status import Status
from kubesched.framework.types import ActionType, ClusterEvent, ClusterEventWithHint
from kubesched.plugins.dynamicresources import DynamicResources
from kubesched.plugins.noderesources.fit import NodeResourcesFit
from kubesched.plugins.queuesort import PrioritySort
from kubesched.plugins.testing import build_snapshot
from kubesched.queue.scheduling_queue import SchedulingQueue, pod_update_events
from kubesched.store.memory import MemoryStore
from kubesched.store.parsers import informer_factory
from kubesched.store.ports import StorePorts

NAMESPACE = "default"
CLAIM_EVENTS = {"add": ActionType.ADD, "update": ActionType.UPDATE}


def _claim(name: str, allocated: bool) -> dict[str, Any]:
    obj: dict[str, Any] = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": name, "namespace": NAMESPACE},
        "spec": {"devices": {"requests": [{"name": "r", "exactly": {"deviceClassName": "gpu"}}]}},
    }
    if allocated:
        obj["status"] = {
            "allocation": {
                "devices": {"results": [{"request": "r", "driver": "d", "pool": "p", "device": name}]}
            }
        }
    return obj


def _pod(i: int, claims: list[str], generated: dict[str, str]) -> Pod:
    sources = [
        {"name": c, "resourceClaimTemplateName": "t"}
        if c in generated or c.startswith("t")
        else {"name": c, "resourceClaimName": c}
        for c in claims
    ]
    raw: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": f"pod-{i}", "namespace": NAMESPACE, "uid": f"uid-{i}"},
        "spec": {"priority": i % 2, "containers": [{"name": "c"}], "resourceClaims": sources},
    }
    if generated:
        raw["status"] = {
            "resourceClaimStatuses": [{"name": k, "resourceClaimName": v} for k, v in generated.items()]
        }
    return Pod.from_dict(raw)


class Twins:
    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.store = MemoryStore()
        self.handle = Handle(
            informer_factory(self.store), StorePorts(self.store).ports(), build_snapshot([]), lambda: 0.0
        )
        self.plugin = DynamicResources(None, self.handle)
        self.clock = 1000.0
        events = {
            DynamicResources.name: self.plugin.events_to_register(),
            NodeResourcesFit.name: NodeResourcesFit(None).events_to_register(),
        }
        assert any(
            isinstance(e, ClusterEventWithHint) and e.keys is not None for e in events[DynamicResources.name]
        )
        stripped = {
            name: [
                dataclasses.replace(e, keys=None) if isinstance(e, ClusterEventWithHint) else e for e in regs
            ]
            for name, regs in events.items()
        }
        self.keyed = self._queue(events)
        self.plain = self._queue(stripped)
        self.pods: dict[str, Pod] = {}

    def _queue(self, events: Any) -> SchedulingQueue:
        def pre_enqueue(pod: Pod) -> Status | None:
            status = self.plugin.pre_enqueue(pod)
            if status is not None:
                status.plugin = DynamicResources.name
            return status

        return SchedulingQueue(
            PrioritySort.sort_key, lambda: self.clock, pre_enqueue=pre_enqueue, plugin_events=events
        )

    def both(self, call: str, *args: Any, **kw: Any) -> None:
        got = [getattr(q, call)(*args, **kw) for q in (self.keyed, self.plain)]
        assert got[0] == got[1], call

    def state(self, q: SchedulingQueue) -> list[tuple[str, str, frozenset[str]]]:
        return [
            (where, info.pod.name, frozenset(info.unschedulable_plugins | info.pending_plugins))
            for where, info in q.pending_pods()
        ]

    def add_pod(self) -> None:
        i = len(self.pods)
        claims = self.rng.sample(
            [f"c{k}" for k in range(4)] + [f"t{k}" for k in range(2)], self.rng.choice((1, 2))
        )
        pod = _pod(i, claims, {})
        self.pods[pod.uid] = pod
        self.both("add", pod)

    def record_generated(self) -> None:
        templated = [
            p for p in self.pods.values() if any(c.resource_claim_template_name for c in p.resource_claims)
        ]
        if not templated:
            return
        old = self.rng.choice(templated)
        claims = [c.name for c in old.resource_claims]
        generated = {c: f"gen-{c}-{old.name}" for c in claims if c.startswith("t")}
        new = _pod(int(old.name.split("-")[1]), claims, generated)
        self.pods[new.uid] = new
        self.both("update", new, old)
        for event in pod_update_events(old, new):
            self.both("move_all_to_active_or_backoff", event, old, new)

    def change_claim(self) -> None:
        names = [f"c{k}" for k in range(4)] + [
            n for p in self.pods.values() for n in (p.claim_statuses or {}).values() if n
        ]
        name = self.rng.choice(names)
        stored = self.store.get("ResourceClaim", NAMESPACE, name)
        allocated = self.rng.random() < 0.5
        if stored is None:
            self.store.create(_claim(name, allocated))
            kind = "add"
        else:
            self.store.update({**_claim(name, allocated), "metadata": dict(stored["metadata"])})
            kind = "update"
        old = ResourceClaim.from_dict(stored) if stored is not None else None
        self.handle.informers.pump()
        new = self.plugin._manager().get_claim(NAMESPACE, name)
        self.both(
            "move_all_to_active_or_backoff", ClusterEvent("ResourceClaim", CLAIM_EVENTS[kind]), old, new
        )

    def attempt(self) -> None:
        infos = [q.pop() for q in (self.keyed, self.plain)]
        if infos[0] is None or infos[1] is None:
            assert infos[0] is infos[1] is None
            return
        assert infos[0].pod.uid == infos[1].pod.uid
        rejectors = self.rng.choice(
            ({"DynamicResources"}, {"NodeResourcesFit"}, {"DynamicResources", "NodeResourcesFit"})
        )
        for q, info in zip((self.keyed, self.plain), infos, strict=True):
            info.unschedulable_plugins = set(rejectors)
            q.add_unschedulable(info)

    def other_event(self) -> None:
        self.both("move_all_to_active_or_backoff", ClusterEvent("Node", ActionType.ADD), None, None)

    def flush(self) -> None:
        self.clock += self.rng.choice((0.5, 5.0))
        self.both("flush_backoff_completed")

    def step(self) -> None:
        self.rng.choice(
            [
                self.add_pod,
                self.add_pod,
                self.record_generated,
                self.change_claim,
                self.change_claim,
                self.attempt,
                self.attempt,
                self.other_event,
                self.flush,
            ]
        )()
        assert self.state(self.keyed) == self.state(self.plain)


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(10, 60))
def test_keyed_hints_move_the_pods_asking_every_pod_moves(seed: int, steps: int) -> None:
    twins = Twins(seed)
    for _ in range(steps):
        twins.step()


def test_a_claim_event_asks_only_the_pods_naming_the_claim() -> None:
    twins = Twins(0)
    asked: list[str] = []
    hint = twins.plugin.is_schedulable_after_claim_change

    def counting(pod: Pod, old: Any, new: Any) -> Any:
        asked.append(pod.name)
        return hint(pod, old, new)

    twins.plugin.is_schedulable_after_claim_change = counting  # type: ignore[method-assign]
    events = {DynamicResources.name: twins.plugin.events_to_register()}
    queue = twins._queue(events)
    for i in range(20):
        queue.add(_pod(i, [f"claim-{i}"], {}))
    assert queue.pending_counts()["gated"] == 20
    twins.store.create(_claim("claim-7", False))
    twins.handle.informers.pump()
    new = twins.plugin._manager().get_claim(NAMESPACE, "claim-7")
    assert queue.move_all_to_active_or_backoff(ClusterEvent("ResourceClaim", ActionType.ADD), None, new) == 1
    assert asked == ["pod-7"]
    assert [info.pod.name for info in [queue.pop()] if info is not None] == ["pod-7"]


def test_a_pod_recording_its_generated_claim_is_found_by_the_claims_event() -> None:
    """The pod names its template's claim first, the claim comes after: the claim's event finds
    the pod under the name it recorded."""
    twins = Twins(0)
    queue = twins._queue({DynamicResources.name: twins.plugin.events_to_register()})
    old = _pod(1, ["t0"], {})
    queue.add(old)
    new = _pod(1, ["t0"], {"t0": "pod-1-t0"})
    queue.update(new, old)
    assert queue.pending_counts()["gated"] == 1
    twins.store.create(
        {
            **_claim("pod-1-t0", False),
            "metadata": {
                "name": "pod-1-t0",
                "namespace": NAMESPACE,
                "ownerReferences": [
                    {"apiVersion": "v1", "kind": "Pod", "name": "pod-1", "uid": "uid-1", "controller": True}
                ],
            },
        }
    )
    twins.handle.informers.pump()
    claim = twins.plugin._manager().get_claim(NAMESPACE, "pod-1-t0")
    assert (
        queue.move_all_to_active_or_backoff(ClusterEvent("ResourceClaim", ActionType.ADD), None, claim) == 1
    )
