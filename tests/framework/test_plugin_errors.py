"""A plugin that fails is reported as a plugin error, not mistaken for an unschedulable pod.

Whether it raises or returns an Error status, the pod's ``SchedulerError`` condition and its
FailedScheduling event carry upstream's message, which names the plugin and the extension point; the
pod stays pending and is retried, and the scheduler goes on placing other pods.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np
import pytest

from kubesched.api.objects import Pod
from kubesched.errors import FrameworkError, InputError, KubeschedError, PluginError
from kubesched.framework import runtime
from kubesched.framework.config import config_from_dict
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.extension_points import ExtensionPoint
from kubesched.framework.registry import PluginSpec
from kubesched.framework.status import Code, Status
from kubesched.framework.types import FilterResult, IntArray
from kubesched.plugins import default_registry, spec_for
from kubesched.sim.simulation import Simulation
from kubesched.store.base import StoreError

API = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration"}


def make_node(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
        "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}},
    }


def make_pod(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}"},
        "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "100m"}}}]},
    }


class Broken(RuntimeError):
    pass


def _faulty(point: ExtensionPoint, *, status: bool) -> type:
    """A plugin at ``point`` that fails only for the pod named "bad": it raises, or (``status``)
    returns an Error status."""

    def fail(pod: Pod) -> Status | None:
        if pod.name != "bad":
            return None
        if status:
            return Status.error("disk on fire")
        raise Broken("disk on fire")

    class Faulty:
        name: ClassVar[str] = "Faulty"

        def __init__(self, args: Any, handle: Any) -> None:
            self.handle = handle

    if point is ExtensionPoint.PRE_FILTER:

        def pre_filter(self: Any, state: CycleState, pod: Pod, snapshot: Any) -> tuple[None, Status | None]:
            return None, fail(pod)

        Faulty.pre_filter = pre_filter  # type: ignore[attr-defined]
    elif point is ExtensionPoint.FILTER:

        def filter_nodes(self: Any, state: CycleState, pod: Pod, table: Any) -> FilterResult:
            fail(pod)
            return FilterResult(np.ones(table.capacity, dtype=np.bool_), [])

        Faulty.filter_nodes = filter_nodes  # type: ignore[attr-defined]
    elif point is ExtensionPoint.PRE_SCORE:

        def pre_score(self: Any, state: CycleState, pod: Pod, table: Any, slots: IntArray) -> Status | None:
            return fail(pod)

        Faulty.pre_score = pre_score  # type: ignore[attr-defined]
    elif point is ExtensionPoint.SCORE:

        def score_nodes(self: Any, state: CycleState, pod: Pod, table: Any, slots: IntArray) -> IntArray:
            fail(pod)
            return np.zeros(len(slots), dtype=np.int64)

        Faulty.score_nodes = score_nodes  # type: ignore[attr-defined]
    elif point is ExtensionPoint.RESERVE:

        def reserve(self: Any, state: CycleState, pod: Pod, node_name: str) -> Status | None:
            return fail(pod)

        def unreserve(self: Any, state: CycleState, pod: Pod, node_name: str) -> None:
            pass

        Faulty.reserve = reserve  # type: ignore[attr-defined]
        Faulty.unreserve = unreserve  # type: ignore[attr-defined]
    elif point is ExtensionPoint.PERMIT:

        def permit(self: Any, state: CycleState, pod: Pod, node_name: str) -> tuple[Status | None, float]:
            return fail(pod), 0.0

        Faulty.permit = permit  # type: ignore[attr-defined]
    elif point is ExtensionPoint.PRE_BIND:

        def pre_bind(self: Any, state: CycleState, pod: Pod, node_name: str) -> Status | None:
            return fail(pod)

        Faulty.pre_bind = pre_bind  # type: ignore[attr-defined]
    elif point is ExtensionPoint.BIND:

        def bind(self: Any, state: CycleState, pod: Pod, node_name: str) -> Status | None:
            st = fail(pod)
            if st is not None:
                return st
            try:
                self.handle.ports.binder.bind(pod.namespace, pod.name, pod.uid, node_name)
            except StoreError as exc:
                return Status.error(str(exc))
            return None

        Faulty.bind = bind  # type: ignore[attr-defined]
    else:  # pragma: no cover - the parametrization lists the points above
        raise AssertionError(point)
    return Faulty


def _sim(point: ExtensionPoint, *, status: bool) -> Simulation:
    registry = default_registry()
    registry.register(spec_for(_faulty(point, status=status)))
    plugins: dict[str, Any] = {point.value: {"enabled": [{"name": "Faulty"}]}}
    if point is ExtensionPoint.BIND:
        plugins["bind"]["disabled"] = [{"name": "DefaultBinder"}]
    config = config_from_dict({**API, "profiles": [{"plugins": plugins}]}, registry)
    sim = Simulation(config, registry, seed=3)
    for name in ("n0", "n1", "n2"):
        sim.store.create(make_node(name))
    return sim


#: Upstream's wording (pkg/scheduler/framework/runtime/framework.go) per extension point.
MESSAGES = {
    ExtensionPoint.PRE_FILTER: 'running PreFilter plugin "Faulty": disk on fire',
    ExtensionPoint.FILTER: 'running "Faulty" filter plugin: disk on fire',
    ExtensionPoint.PRE_SCORE: 'running PreScore plugin "Faulty": disk on fire',
    ExtensionPoint.SCORE: 'running Score plugins: plugin "Faulty" failed with: disk on fire',
    ExtensionPoint.RESERVE: 'running Reserve plugin "Faulty": disk on fire',
    ExtensionPoint.PERMIT: 'running Permit plugin "Faulty": disk on fire',
    ExtensionPoint.PRE_BIND: 'running PreBind plugin "Faulty": disk on fire',
    ExtensionPoint.BIND: 'running Bind plugin "Faulty": disk on fire',
}
#: Points where only an exception is a failure (their plugins return no status).
RAISE_ONLY = {ExtensionPoint.FILTER, ExtensionPoint.SCORE}
CASES = [(p, s) for p in MESSAGES for s in (False, True) if not (s and p in RAISE_ONLY)]


@pytest.mark.parametrize(
    ("point", "status"), CASES, ids=[f"{p.value}-{'status' if s else 'raises'}" for p, s in CASES]
)
def test_failing_plugin_is_reported_as_plugin_error(point: ExtensionPoint, status: bool) -> None:
    sim = _sim(point, status=status)
    sim.store.create(make_pod("bad"))
    sim.store.create(make_pod("good"))
    sim.run()
    outcomes = {o.name: o for o in sim.outcomes()}
    assert outcomes["good"].status == "Scheduled"
    bad = outcomes["bad"]
    assert bad.status == "Pending" and bad.node is None
    assert MESSAGES[point] in bad.message
    assert bad.attempts > 1  # backed off and retried, not parked as unschedulable
    stored = sim.store.get("Pod", "default", "bad")
    assert stored is not None and not stored["spec"].get("nodeName")
    cond = next(c for c in stored["status"]["conditions"] if c["type"] == "PodScheduled")
    assert cond["reason"] == "SchedulerError" and MESSAGES[point] in cond["message"]
    events = [e for e in sim.store.list("Event") if e["regarding"]["name"] == "bad"]
    assert events and all(e["reason"] == "FailedScheduling" for e in events)
    assert MESSAGES[point] in events[-1]["note"]


def test_plugin_error_names_plugin_and_point() -> None:
    sim = _sim(ExtensionPoint.FILTER, status=False)
    fwk = sim.scheduler.profiles["default-scheduler"]
    pod = Pod.from_dict(make_pod("bad"))
    sim.scheduler.cache.update_snapshot(sim.scheduler.snapshot)
    table = sim.scheduler.snapshot.table
    state = CycleState()
    fwk.run_pre_filter(state, pod, sim.scheduler.snapshot)
    with pytest.raises(PluginError) as info:
        fwk.run_filters(state, pod, table, np.ones(table.capacity, dtype=np.bool_))
    err = info.value
    assert (err.plugin, err.extension_point) == ("Faulty", "filter")
    assert str(err) == 'running "Faulty" filter plugin: disk on fire'
    assert isinstance(err.__cause__, Broken)
    assert isinstance(err, FrameworkError) and isinstance(err, KubeschedError)


def test_score_out_of_range_is_a_plugin_error() -> None:
    class TooHigh:
        name: ClassVar[str] = "TooHigh"

        def __init__(self, args: Any, handle: Any) -> None:
            pass

        def score_nodes(self, state: CycleState, pod: Pod, table: Any, slots: IntArray) -> IntArray:
            return np.full(len(slots), 101, dtype=np.int64)

    registry = default_registry()
    registry.register(spec_for(TooHigh))
    config = config_from_dict(
        {**API, "profiles": [{"plugins": {"score": {"enabled": [{"name": "TooHigh"}]}}}]}, registry
    )
    sim = Simulation(config, registry, seed=1)
    for name in ("n0", "n1"):
        sim.store.create(make_node(name))
    sim.store.create(make_pod("p"))
    sim.run()
    o = next(o for o in sim.outcomes() if o.name == "p")
    assert o.status == "Pending"
    assert o.message == (
        'applying score defaultWeights on Score plugins: plugin "TooHigh" returns an invalid score 101, '
        "it should in the range of [0, 100] after normalizing"
    )


def test_plugin_not_implementing_its_configured_point_is_rejected_at_construction() -> None:
    class NoFilter:
        name: ClassVar[str] = "NoFilter"

        def __init__(self, args: Any, handle: Any) -> None:
            pass

    registry = default_registry()
    # A registry entry that claims an extension point its class does not implement.
    registry.register(PluginSpec("NoFilter", NoFilter, frozenset({ExtensionPoint.FILTER})))
    config = config_from_dict(
        {**API, "profiles": [{"plugins": {"filter": {"enabled": [{"name": "NoFilter"}]}}}]}, registry
    )
    with pytest.raises(InputError, match="NoFilter is configured at filter but its class NoFilter does not"):
        Simulation(config, registry)


def test_framework_error_stays_importable_from_runtime() -> None:
    assert runtime.FrameworkError is FrameworkError
    assert runtime.PluginError is PluginError


@pytest.mark.parametrize("status", [False, True], ids=["raises", "status"])
def test_failing_pre_enqueue_gates_the_pod_with_a_plugin_error(status: bool) -> None:
    def fail(pod: Pod) -> Status | None:
        if pod.name != "bad":
            return None
        if status:
            return Status.error("disk on fire")
        raise Broken("disk on fire")

    class FaultyGate:
        name: ClassVar[str] = "FaultyGate"

        def __init__(self, args: Any, handle: Any) -> None:
            pass

        def pre_enqueue(self, pod: Pod) -> Status | None:
            return fail(pod)

    registry = default_registry()
    registry.register(spec_for(FaultyGate))
    config = config_from_dict(
        {**API, "profiles": [{"plugins": {"preEnqueue": {"enabled": [{"name": "FaultyGate"}]}}}]}, registry
    )
    sim = Simulation(config, registry, seed=1)
    sim.store.create(make_node("n0"))
    fwk = sim.scheduler.profiles["default-scheduler"]
    st = fwk.run_pre_enqueue(Pod.from_dict(make_pod("bad")))
    assert st is not None and st.code == Code.ERROR and st.plugin == "FaultyGate"
    assert st.message == 'running PreEnqueue plugin "FaultyGate": disk on fire'
    sim.store.create(make_pod("bad"))
    sim.store.create(make_pod("good"))
    sim.run()
    outcomes = {o.name: o for o in sim.outcomes()}
    assert outcomes["good"].status == "Scheduled"
    assert outcomes["bad"].node is None and outcomes["bad"].attempts == 0
