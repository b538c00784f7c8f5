"""GangScheduling: all-or-nothing scheduling of a scheduling.k8s.io PodGroup with a gang policy
(upstream ``pkg/scheduler/framework/plugins/gangscheduling``, v1.36).

- PreEnqueue keeps a gang's pods out of activeQ until the PodGroup exists and at least
  ``minCount`` of its pods do.
- Reserve and Unreserve count the pod as assumed in the group's state.
- Permit holds each pod (Wait, up to five minutes) until ``minCount`` pods of the gang are assumed
  or bound, then lets every waiting one through at once; a timeout rejects the pods still waiting.

A pod of a group with the basic policy, or of no group, passes every step untouched.
"""

from __future__ import annotations

from typing import Any, ClassVar

from kubesched.api.objects import Pod
from kubesched.api.scheduling_groups import POD_GROUP_STORE_KIND, SchedulingPodGroup
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.handle import Handle
from kubesched.framework.status import Code, Status
from kubesched.framework.types import (
    ASSIGNED_POD,
    UNSCHEDULED_POD,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    HintKeys,
    QueueingHint,
)

NAME = "GangScheduling"

#: How long a gang's pods wait at Permit for the quorum before they are rejected (upstream
#: ``permitTimeoutDuration``).
PERMIT_TIMEOUT_SECONDS = 5 * 60.0

WAITING_FOR_POD_GROUP = 'waiting for pods\'s pod group "{}" to appear in scheduling queue'
WAITING_FOR_MIN_COUNT = "waiting for minCount pods from a gang to appear in scheduling queue"
WAITING_ON_PERMIT = "waiting for minCount pods from a gang to be waiting on permit"


class GangScheduling:
    name: ClassVar[str] = NAME

    def __init__(self, args: Any = None, handle: Handle | None = None) -> None:
        if handle is None:
            raise ValueError("GangScheduling needs a framework handle")
        self.handle = handle
        self._pod_groups = handle.informers.informer(POD_GROUP_STORE_KIND)

    # -- queueing hints ----------------------------------------------------------------------------
    def events_to_register(self) -> list[ClusterEventWithHint]:
        # A pod's scheduling group is immutable: a pod's arrival (pending or already bound) may
        # complete a gang, an update never does.
        # Each event concerns one group's pods only: the queue asks the hints about those alone.
        # A pod's arrival concerns its siblings only once the group has minCount pods (before,
        # PreEnqueue holds them all again), so a gang arriving pod by pod is not re-asked
        # quadratically.
        pods = HintKeys(_group_key, self._added_pod_key)
        groups = HintKeys(_group_key, _added_pod_group_key)
        return [
            ClusterEventWithHint(
                ClusterEvent(UNSCHEDULED_POD, ActionType.ADD), self.is_schedulable_after_pod_added, pods
            ),
            ClusterEventWithHint(
                ClusterEvent(ASSIGNED_POD, ActionType.ADD), self.is_schedulable_after_pod_added, pods
            ),
            ClusterEventWithHint(
                ClusterEvent(POD_GROUP_STORE_KIND, ActionType.ADD),
                self.is_schedulable_after_pod_group_added,
                groups,
            ),
        ]

    def _added_pod_key(self, old: Any, new: Any) -> tuple[tuple[str, str], ...]:
        if not isinstance(new, Pod) or new.scheduling_group is None:
            return ()
        pg = self._pod_groups.get(new.namespace, new.scheduling_group)
        min_count = pg.policy.gang_min_count if pg is not None else None
        if min_count is not None:
            st = self.handle.pod_groups.state(new.namespace, new.scheduling_group)
            if st.all_pods_count() < min_count:
                return ()
        return _group_key(new)

    def is_schedulable_after_pod_added(self, pod: Pod, old: Any, new: Any) -> QueueingHint:
        """Only a pod of the same group (namespace and name) can complete the gang."""
        if not isinstance(new, Pod) or not _same_group(pod, new):
            return QueueingHint.QUEUE_SKIP
        return QueueingHint.QUEUE

    def is_schedulable_after_pod_group_added(self, pod: Pod, old: Any, new: Any) -> QueueingHint:
        if (
            not isinstance(new, SchedulingPodGroup)
            or pod.scheduling_group is None
            or pod.namespace != new.namespace
            or pod.scheduling_group != new.name
        ):
            return QueueingHint.QUEUE_SKIP
        return QueueingHint.QUEUE

    # -- PreEnqueue ----------------------------------------------------------------------------------
    def pre_enqueue(self, pod: Pod) -> Status | None:
        group = pod.scheduling_group
        if group is None:
            return None
        pg = self._pod_groups.get(pod.namespace, group)
        if pg is None:
            return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, [WAITING_FOR_POD_GROUP.format(group)])
        min_count = pg.policy.gang_min_count
        if min_count is None:
            return None  # basic policy: not a gang
        if self.handle.pod_groups.state(pod.namespace, group).all_pods_count() < min_count:
            return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, [WAITING_FOR_MIN_COUNT])
        return None

    # -- Reserve / Unreserve ----------------------------------------------------------------------
    def reserve(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        if pod.scheduling_group is not None:
            self.handle.pod_groups.assume_pod(pod)
        return None

    def unreserve(self, state: CycleState, pod: Pod, node_name: str) -> None:
        if pod.scheduling_group is not None:
            self.handle.pod_groups.forget_pod(pod)

    # -- Permit ------------------------------------------------------------------------------------
    def permit(self, state: CycleState, pod: Pod, node_name: str) -> tuple[Status | None, float]:
        group = pod.scheduling_group
        if group is None:
            return None, 0.0
        pg = self._pod_groups.get(pod.namespace, group)
        if pg is None:
            # Removed meanwhile: an error, so the pod is retried once the group is back.
            missing = f'podgroups.scheduling.k8s.io "{group}" not found'
            return Status.error(f"failed to get podGroup {pod.namespace}/{group}: {missing}"), 0.0
        min_count = pg.policy.gang_min_count
        if min_count is None:
            return None, 0.0
        st = self.handle.pod_groups.state(pod.namespace, group)
        if st.scheduled_pods_count() < min_count:
            # Its siblings that wait in the queue may be what this pod waits for.
            self.handle.activate(st.unscheduled_pods())
            return Status(Code.WAIT, [WAITING_ON_PERMIT]), PERMIT_TIMEOUT_SECONDS
        # The quorum is met: this pod and every sibling waiting at Permit go on together.
        waiting = self.handle.waiting_pods
        for uid in st.assumed_pods():
            wp = waiting.get(uid)
            if wp is not None:
                wp.allow(NAME)
        return None, 0.0


def _group_key(pod: Pod) -> tuple[tuple[str, str], ...]:
    return ((pod.namespace, pod.scheduling_group),) if pod.scheduling_group is not None else ()


def _added_pod_group_key(old: Any, new: Any) -> tuple[tuple[str, str], ...]:
    return ((new.namespace, new.name),) if isinstance(new, SchedulingPodGroup) else ()


def _same_group(a: Pod, b: Pod) -> bool:
    return (
        a.scheduling_group is not None
        and a.namespace == b.namespace
        and a.scheduling_group == b.scheduling_group
    )
