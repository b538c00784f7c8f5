"""What the kube-scheduler knows of each scheduling.k8s.io PodGroup's pods (upstream's pod group
states in the scheduler cache, ``PodGroupState``).

Pods name their group in ``spec.schedulingGroup.podGroupName``; the scheduler's Pod handler adds
and removes them here, and the GangScheduling plugin marks the ones it reserved. Per group it keeps
every known pod, the ones bound to a node (assigned) and the ones this scheduler assumed, so each
count a plugin asks for is a length, not a walk over the pods: a 10,000-pod gang reaches Permit
10,000 times.

A pod without a scheduling group never reaches this module.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from kubesched.api.objects import Pod

#: (namespace, pod group name)
GroupKey = tuple[str, str]


@dataclass(slots=True)
class PodGroupState:
    """The pods of one PodGroup (upstream ``PodGroupState``)."""

    #: uid → pod, every pod that names the group and is not deleted, in arrival order.
    pods: dict[str, Pod] = field(default_factory=dict)
    #: pods bound to a node (``spec.nodeName`` set).
    assigned: set[str] = field(default_factory=set)
    #: pods this scheduler assumed (reserved) and has not yet seen bound.
    assumed: set[str] = field(default_factory=set)

    def all_pods_count(self) -> int:
        return len(self.pods)

    def scheduled_pods_count(self) -> int:
        """Assigned or assumed: what counts toward a gang's quorum at Permit."""
        return len(self.assigned) + len(self.assumed)

    def unscheduled_pods(self) -> list[Pod]:
        """Neither assigned nor assumed, in arrival order."""
        done_a, done_b = self.assigned, self.assumed
        return [p for uid, p in self.pods.items() if uid not in done_a and uid not in done_b]

    def assumed_pods(self) -> list[str]:
        return sorted(self.assumed)


class PodGroupStates:
    """Every PodGroup's state, by (namespace, name)."""

    def __init__(self) -> None:
        self._groups: dict[GroupKey, PodGroupState] = {}
        self._group_of: dict[str, GroupKey] = {}

    def __len__(self) -> int:
        return len(self._groups)

    def get(self, namespace: str, name: str) -> PodGroupState | None:
        return self._groups.get((namespace, name))

    def state(self, namespace: str, name: str) -> PodGroupState:
        """The group's state, empty when none of its pods is known yet."""
        return self._groups.get((namespace, name)) or PodGroupState()

    def add_pod(self, pod: Pod) -> None:
        """A pod that names a group was added or changed: known, and assigned once it has a node."""
        group = pod.scheduling_group
        if group is None:
            return
        key = (pod.namespace, group)
        st = self._groups.get(key)
        if st is None:
            st = self._groups[key] = PodGroupState()
        st.pods[pod.uid] = pod
        self._group_of[pod.uid] = key
        if pod.node_name:
            st.assigned.add(pod.uid)
            st.assumed.discard(pod.uid)

    def delete_pod(self, uid: str) -> None:
        key = self._group_of.pop(uid, None)
        if key is None:
            return
        st = self._groups[key]
        st.pods.pop(uid, None)
        st.assigned.discard(uid)
        st.assumed.discard(uid)
        if not st.pods:
            del self._groups[key]

    def assume_pod(self, pod: Pod) -> None:
        """Reserve: the pod counts toward its gang's quorum (upstream ``AssumePod``)."""
        key = self._group_of.get(pod.uid)
        if key is not None and pod.uid not in self._groups[key].assigned:
            self._groups[key].assumed.add(pod.uid)

    def forget_pod(self, pod: Pod) -> None:
        """Unreserve: the pod no longer counts (upstream ``ForgetPod``)."""
        key = self._group_of.get(pod.uid)
        if key is not None:
            self._groups[key].assumed.discard(pod.uid)
