"""GangScheduling: tables after upstream's gangscheduling_test.go (v1.36: TestGangSchedulingFlow,
Test_isSchedulableAfterPodAdded, Test_isSchedulableAfterPodGroupAdded)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import pytest

from kubesched.api.objects import Pod
from kubesched.api.scheduling_groups import SchedulingPodGroup
from kubesched.framework.status import Code, Status
from kubesched.framework.types import QueueingHint
from kubesched.framework.waiting_pods import WaitingPod
from kubesched.plugins.gangscheduling import PERMIT_TIMEOUT_SECONDS, GangScheduling
from kubesched.plugins.testing import pod_dict, store_handle
from kubesched.store.memory import MemoryStore


def _pod(name: str, group: str | None, namespace: str = "ns1") -> Pod:
    raw = pod_dict(name, namespace=namespace, uid=name)
    if group is not None:
        raw["spec"]["schedulingGroup"] = {"podGroupName": group}
    return Pod.from_dict(raw)


def _pod_group(name: str, min_count: int | None, namespace: str = "ns1") -> dict[str, Any]:
    policy: dict[str, Any] = {"gang": {"minCount": min_count}} if min_count is not None else {"basic": {}}
    return {
        "apiVersion": "scheduling.k8s.io/v1alpha2",
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"schedulingPolicy": policy},
    }


GANG_POD_GROUP_1 = _pod_group("pg1", 3)
GANG_POD_GROUP_2 = _pod_group("pg2", 4)
BASIC_POD_GROUP = _pod_group("pg3", None)

P1, P2, P3 = (_pod(n, "pg1") for n in ("p1", "p2", "p3"))
P4, P5 = (_pod(n, "pg2") for n in ("p4", "p5"))
BASIC_POLICY_POD = _pod("basic-pod", "pg3")
NON_GANG_POD = _pod("non-gang", None)


@dataclass
class FlowCase:
    name: str
    pod: Pod
    initial_pods: list[Pod] = field(default_factory=list)
    initial_pod_groups: list[dict[str, Any]] = field(default_factory=list)
    pods_waiting_on_permit: list[Pod] = field(default_factory=list)
    want_pre_enqueue_status: Status | None = None
    want_permit_status: Status | None = None
    want_activated_pods: list[str] = field(default_factory=list)
    want_allowed_pods: list[str] = field(default_factory=list)


FLOW_CASES = [
    FlowCase(
        "non-gang pod succeeds immediately",
        NON_GANG_POD,
        initial_pod_groups=[GANG_POD_GROUP_1, GANG_POD_GROUP_2, BASIC_POD_GROUP],
    ),
    FlowCase(
        "basic policy pod succeeds immediately",
        BASIC_POLICY_POD,
        initial_pod_groups=[GANG_POD_GROUP_1, GANG_POD_GROUP_2, BASIC_POD_GROUP],
    ),
    FlowCase(
        "gang pod fails PreEnqueue when pod group is not yet created",
        P1,
        initial_pods=[P2, P3, P4, P5],
        want_pre_enqueue_status=Status(
            Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
            ['waiting for pods\'s pod group "pg1" to appear in scheduling queue'],
        ),
    ),
    FlowCase(
        "gang pod fails PreEnqueue when quorum is not met",
        P1,
        initial_pods=[P2, P4, P5],  # only p1 and p2 of their gang exist; minCount is 3
        initial_pod_groups=[GANG_POD_GROUP_1, GANG_POD_GROUP_2],
        want_pre_enqueue_status=Status(
            Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
            ["waiting for minCount pods from a gang to appear in scheduling queue"],
        ),
    ),
    FlowCase(
        "gang pod passes PreEnqueue, but waits at Permit",
        P1,
        initial_pods=[P2, P3, P4, P5],
        initial_pod_groups=[GANG_POD_GROUP_1, GANG_POD_GROUP_2],
        pods_waiting_on_permit=[P2, P4, P5],
        want_activated_pods=["p3"],
        # p1 is the second of its gang assumed; the quorum is 3, so it waits.
        want_permit_status=Status(
            Code.WAIT, ["waiting for minCount pods from a gang to be waiting on permit"]
        ),
    ),
    FlowCase(
        "final gang pod arrives at Permit and allows all waiting pods from a gang",
        P1,
        initial_pods=[P2, P3, P4, P5],
        initial_pod_groups=[GANG_POD_GROUP_1, GANG_POD_GROUP_2],
        pods_waiting_on_permit=[P2, P3, P4, P5],
        want_allowed_pods=["p1", "p2", "p3"],
    ),
]


@pytest.mark.parametrize("case", FLOW_CASES, ids=lambda c: c.name)
def test_gang_scheduling_flow(case: FlowCase) -> None:
    store = MemoryStore()
    for pg in case.initial_pod_groups:
        store.create(pg)
    handle = store_handle(store)
    activated: list[str] = []

    def activate(pods: Iterable[Pod]) -> None:
        activated.extend(p.name for p in pods)

    handle.activate = activate
    for p in [*case.initial_pods, case.pod]:
        handle.pod_groups.add_pod(p)
    pl = GangScheduling(None, handle)
    handle.informers.pump()

    got = pl.pre_enqueue(case.pod)
    assert got == case.want_pre_enqueue_status
    if got is not None:
        return
    for p in case.pods_waiting_on_permit:
        assert pl.reserve(None, p, "some-node") is None  # type: ignore[arg-type]
        st, timeout = pl.permit(None, p, "some-node")  # type: ignore[arg-type]
        assert st is not None and st.code == Code.WAIT, p.name
        assert timeout == PERMIT_TIMEOUT_SECONDS
        handle.waiting_pods.add(WaitingPod(p, "some-node", {pl.name: timeout}, since=0.0))
    assert pl.reserve(None, case.pod, "some-node") is None  # type: ignore[arg-type]
    activated.clear()
    st, _ = pl.permit(None, case.pod, "some-node")  # type: ignore[arg-type]
    assert st == case.want_permit_status
    if st is not None and st.code == Code.WAIT:
        assert activated == case.want_activated_pods
        pl.unreserve(None, case.pod, "some-node")  # type: ignore[arg-type]
        return
    for uid in case.want_allowed_pods:
        wp = handle.waiting_pods.get(uid)
        assert wp is None or not wp.pending, uid


HINT_POD = _pod("p", "pg", namespace="default")


@pytest.mark.parametrize(
    ("name", "pod", "new_pod", "want"),
    [
        (
            "add a newPod which matches the pod's scheduling group",
            HINT_POD,
            _pod("new", "pg", namespace="default"),
            QueueingHint.QUEUE,
        ),
        (
            "add a newPod which doesn't match the pod's namespace",
            HINT_POD,
            _pod("new", "pg", namespace="foo"),
            QueueingHint.QUEUE_SKIP,
        ),
        (
            "add a newPod which doesn't match the pod's pod group name",
            _pod("p", "pg1", namespace="default"),
            _pod("new", "pg2", namespace="default"),
            QueueingHint.QUEUE_SKIP,
        ),
    ],
    ids=lambda v: v if isinstance(v, str) else "",
)
def test_is_schedulable_after_pod_added(name: str, pod: Pod, new_pod: Pod, want: QueueingHint) -> None:
    assert GangScheduling(None, store_handle()).is_schedulable_after_pod_added(pod, None, new_pod) == want


@pytest.mark.parametrize(
    ("name", "pod", "new_pod_group", "want"),
    [
        (
            "add a pod group which matches the pod's pod group name",
            _pod("p", "pg", namespace="default"),
            _pod_group("pg", 1, namespace="default"),
            QueueingHint.QUEUE,
        ),
        (
            "add a pod group which doesn't match the pod's scheduling group name",
            _pod("p", "pg1", namespace="default"),
            _pod_group("pg2", 1, namespace="default"),
            QueueingHint.QUEUE_SKIP,
        ),
        (
            "add a pod group which doesn't match the pod's scheduling group namespace",
            _pod("p", "pg", namespace="ns1"),
            _pod_group("pg", 1, namespace="ns2"),
            QueueingHint.QUEUE_SKIP,
        ),
    ],
    ids=lambda v: v if isinstance(v, str) else "",
)
def test_is_schedulable_after_pod_group_added(
    name: str, pod: Pod, new_pod_group: dict[str, Any], want: QueueingHint
) -> None:
    view = SchedulingPodGroup.from_dict(new_pod_group)
    assert GangScheduling(None, store_handle()).is_schedulable_after_pod_group_added(pod, None, view) == want
