"""DefaultBinder: after upstream's default_binder_test.go.

Binding writes the Binding subresource (``spec.nodeName``) through the binder port (here over the
store); any API error comes back as an ``Error`` status naming the plugin, and leaves the stored pod
untouched.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest

from kubesched.api.objects import Pod
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.status import Code
from kubesched.plugins.defaultbinder import DefaultBinder
from kubesched.plugins.testing import node_dict, pod_dict, store_handle
from kubesched.store.informers import Change
from kubesched.store.memory import MemoryStore


def setup(with_node: bool = True, with_pod: bool = True) -> tuple[MemoryStore, DefaultBinder, Pod]:
    store = MemoryStore(uid_seed=1)
    if with_node:
        store.create(node_dict("node1", {"cpu": "1"}))
    manifest = pod_dict("web", namespace="ns", uid="")
    del manifest["metadata"]["uid"]
    if with_pod:
        manifest = dict(store.create(manifest))
    else:
        manifest["metadata"]["uid"] = "00000000-0000-0000-0000-000000000099"
    binder = DefaultBinder(None, store_handle(store))
    return store, binder, Pod.from_dict(manifest)


def test_bind_sets_node_name() -> None:
    store, binder, pod = setup()
    assert binder.bind(CycleState(), pod, "node1") is None
    stored = store.get("Pod", "ns", "web")
    assert stored is not None
    assert stored["spec"]["nodeName"] == "node1"
    conditions = {c["type"]: c["status"] for c in stored["status"]["conditions"]}
    assert conditions["PodScheduled"] == "True"


def test_bind_emits_a_watch_event() -> None:
    _, binder, pod = setup()
    informers = binder.handle.informers
    events: list[Change[Any]] = []
    informers.informer("Pod").add_handler(events.append, replay=False)
    assert binder.bind(CycleState(), pod, "node1") is None
    informers.pump()
    assert [(e.type.value, e.obj["spec"]["nodeName"]) for e in events] == [("MODIFIED", "node1")]


@dataclass
class FailCase:
    name: str
    prepare: Callable[[MemoryStore, Pod], Pod]
    node: str
    message: str


def _unchanged(store: MemoryStore, pod: Pod) -> Pod:
    return pod


def _bound_elsewhere(store: MemoryStore, pod: Pod) -> Pod:
    store.create(node_dict("node2", {"cpu": "1"}))
    store.bind("ns", "web", pod.uid, "node2")
    return pod


def _replaced(store: MemoryStore, pod: Pod) -> Pod:
    store.delete("Pod", "ns", "web")
    manifest = pod_dict("web", namespace="ns")
    del manifest["metadata"]["uid"]
    store.create(manifest)
    return pod  # still the old uid


FAIL_CASES = [
    FailCase("node does not exist", _unchanged, "missing-node", "node 'missing-node' not found"),
    FailCase("pod already bound", _bound_elsewhere, "node1", "already assigned to node 'node2'"),
    FailCase("pod was replaced", _replaced, "node1", "was replaced (uid changed)"),
]


@pytest.mark.parametrize("case", FAIL_CASES, ids=lambda c: c.name)
def test_bind_failure_is_an_error_status(case: FailCase) -> None:
    store, binder, pod = setup()
    pod = case.prepare(store, pod)
    before = store.get("Pod", "ns", "web")
    status = binder.bind(CycleState(), pod, case.node)
    assert status is not None
    assert status.code == Code.ERROR
    assert status.plugin == "DefaultBinder"
    assert case.message in status.message
    assert store.get("Pod", "ns", "web") == before


def test_bind_missing_pod() -> None:
    store, binder, pod = setup(with_pod=False)
    status = binder.bind(CycleState(), pod, "node1")
    assert status is not None
    assert status.code == Code.ERROR
    assert status.message == "pod ns/web not found"
    assert store.get("Pod", "ns", "web") is None
