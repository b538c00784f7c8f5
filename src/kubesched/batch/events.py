"""Informer handlers of the batch scheduler: cluster changes into the job cache.

Subscribed to the Pod, Node, PodGroup, Queue and PriorityClass informers, and to the DRA kinds
(DeviceClass, ResourceSlice, ResourceClaim), whose changes only say that a session may now place
what it could not: a claim created or released, a pod's claim generated, devices published. Nodes
and placed pods are
the scheduler cache's business: the cluster's one :class:`~kubesched.cache.cache.SchedulerCache`,
shared with the framework scheduler and fed by its :class:`~kubesched.cache.feed.CacheFeed`, which
subscribed first, so the cache already reflects a change when it arrives here. Pods, PodGroups,
Queues and priority classes go to the :class:`JobCache`, marking the jobs they touch for a rebuild.

Pods served: those whose ``spec.schedulerName`` is one of the batch profile's names (``volcano``
unless configured). A pod in a PodGroup (annotation ``scheduling.k8s.io/group-name`` or label
``scheduling.x-k8s.io/pod-group``) is a task of that group's job; a batch pod in no group gets a
PodGroup of its own from the :class:`PodGroupController`.
"""

from __future__ import annotations

from typing import Any

from kubesched.api.objects import Pod
from kubesched.api.volcano import PodGroup, Queue, group_name_of
from kubesched.batch.apply import SessionApplier
from kubesched.batch.controller import PodGroupController
from kubesched.batch.jobs import JobCache
from kubesched.framework.outcome import PodOutcome
from kubesched.store.base import EventType
from kubesched.store.informers import Change, InformerFactory
from kubesched.store.ports import DISRUPTION_TARGET

#: The kinds the batch scheduler follows, in the order their handlers are subscribed: each handler
#: first gets what its informer already holds, so queues and priority classes come before the jobs
#: that name them, and PodGroups before their pods.
KINDS = ("PriorityClass", "Queue", "Node", "PodGroup", "Pod")
#: Kinds whose changes can let a task's claims be allocated (the predicates' DynamicResources).
DRA_KINDS = ("DeviceClass", "ResourceSlice", "ResourceClaim")


class ClusterEvents:
    def __init__(
        self,
        jobs: JobCache,
        controller: PodGroupController,
        applier: SessionApplier,
        scheduler_names: frozenset[str],
    ) -> None:
        self.jobs = jobs
        self.controller = controller
        self.applier = applier
        self.outcomes: dict[str, PodOutcome] = applier.outcomes
        self.scheduler_names = scheduler_names

    def subscribe(self, informers: InformerFactory) -> None:
        for kind in KINDS:
            informers.informer(kind).add_handler(self.dispatch)
        for kind in DRA_KINDS:
            informers.informer(kind).add_handler(self.on_devices)

    def responsible_for(self, pod: Pod) -> bool:
        return pod.scheduler_name in self.scheduler_names

    def dispatch(self, event: Change[Any]) -> None:
        kind = event.kind
        if kind == "Queue" and _status_only(event):
            # The scheduler's own ``status.allocated`` write (or the controller's counts): nothing
            # a session decides on changed.
            if isinstance(event.view, Queue):
                self.jobs.queues[event.view.name] = event.view
            return
        if kind in ("Node", "Queue", "PriorityClass") or event.type != EventType.MODIFIED:
            self.jobs.dirty = True
        elif event.old is not None:
            old_spec, new_spec = event.old.get("spec") or {}, event.obj.get("spec") or {}
            if (
                old_spec.get("nodeName") != new_spec.get("nodeName")
                or (kind == "PodGroup" and old_spec != new_spec)
                or (kind == "Pod" and _claim_statuses(event.old) != _claim_statuses(event.obj))
                or (kind == "Pod" and old_spec.get("schedulingGates") != new_spec.get("schedulingGates"))
            ):
                # A pod's claims generated from its templates let its PreFilter through; a pod
                # whose gates were removed may be placed now.
                self.jobs.dirty = True
        if kind == "Node":
            self.on_node()
        elif kind == "Pod":
            self.on_pod(event)
        elif kind == "PodGroup":
            self.on_pod_group(event)
        elif kind == "Queue":
            self.on_queue(event)
        elif kind == "PriorityClass":
            name = str(event.obj["metadata"]["name"])
            if event.type == EventType.DELETED:
                self.jobs.priority_classes.pop(name, None)
            else:
                self.jobs.priority_classes[name] = int(event.obj.get("value") or 0)
            self.jobs.rebuild_all = True

    def on_devices(self, event: Change[Any]) -> None:
        """A DRA object changed: classes and slices always matter; a claim when it comes or goes
        or its status moves (allocated, released), not for its metadata alone (a finalizer)."""
        old = event.old if event.type == EventType.MODIFIED else None
        if (
            event.kind == "ResourceClaim"
            and old is not None
            and (old.get("status") or {}) == (event.obj.get("status") or {})
        ):
            return
        self.jobs.dirty = True

    def on_node(self) -> None:
        # Tasks keep node slots, and parked jobs keep their order, which may read the cluster's
        # total resources: every job is rebuilt.
        self.jobs.ready = None
        self.jobs.rebuild_all = True

    def job_uid_of(self, pod: Pod) -> str | None:
        group = group_name_of(pod.raw)
        if group is not None:
            return f"{pod.namespace}/{group[1]}"
        if self.responsible_for(pod):
            return f"{pod.namespace}/podgroup-{pod.uid}"
        return None

    def on_pod(self, event: Change[Any]) -> None:
        pod = event.view
        if not isinstance(pod, Pod):
            return
        uid = pod.uid
        if event.type == EventType.DELETED:
            self.applier.forget_pod(uid)
            self.controller.refused.discard(uid)
            self.jobs.drop_pending(uid)
            self.jobs.forget_spec(uid)
            job = self.jobs.job_of_pod.pop(uid, None)
            if job is not None:
                members = self.jobs.members.get(job)
                evicted = bool(pod.node_name) and _evicted(event.obj)
                if members is not None:
                    members.pop(uid, None)
                    if not members:
                        del self.jobs.members[job]
                        if evicted:
                            self.jobs.emptied.add(job)
                self.jobs.stale.add(job)
                if evicted:
                    self.jobs.members_lost = True
            return
        job = self.jobs.job_of_pod.get(uid) or self.job_uid_of(pod)
        if job is not None:
            self.jobs.job_of_pod[uid] = job
            self.jobs.members.setdefault(job, {})[uid] = pod
            self.jobs.stale.add(job)
        if pod.node_name:
            self.jobs.drop_pending(uid)
            return
        if pod.terminated or not self.responsible_for(pod):
            return
        self.jobs.set_pending(pod)
        self.outcomes.setdefault(
            uid, PodOutcome(pod.namespace, pod.name, uid, scheduler_name=pod.scheduler_name)
        )
        if group_name_of(pod.raw) is None:
            self.controller.ensure_own_group(pod)

    def on_pod_group(self, event: Change[Any]) -> None:
        meta = event.obj.get("metadata") or {}
        key = f"{meta.get('namespace') or 'default'}/{meta.get('name')}"
        if event.type == EventType.DELETED:
            self.jobs.set_pod_group(key, None)
            self.applier.forget_pod_group(key)
            return
        if isinstance(event.view, PodGroup):  # else: not parsed (the informer logged why)
            self.jobs.set_pod_group(key, event.view)

    def on_queue(self, event: Change[Any]) -> None:
        name = str((event.obj.get("metadata") or {}).get("name"))
        self.jobs.queue_infos = None
        self.jobs.rebuild_all = True  # which jobs have a queue
        if event.type == EventType.DELETED:
            self.jobs.queues.pop(name, None)
            return
        if isinstance(event.view, Queue):  # else: not parsed (the informer logged why)
            self.jobs.queues[name] = event.view


__all__ = ["DRA_KINDS", "KINDS", "ClusterEvents"]


def _claim_statuses(obj: Any) -> Any:
    return (obj.get("status") or {}).get("resourceClaimStatuses")


def _status_only(event: Change[Any]) -> bool:
    """A Queue change that leaves its spec and state as they were."""
    if event.type != EventType.MODIFIED or event.old is None:
        return False
    old, new = event.old, event.obj
    return bool(
        old.get("spec") == new.get("spec")
        and (old.get("status") or {}).get("state") == (new.get("status") or {}).get("state")
        and (old.get("metadata") or {}).get("labels") == (new.get("metadata") or {}).get("labels")
    )


def _evicted(obj: Any) -> bool:
    """Deleted as an eviction: the evictor marked it a disruption target first."""
    for cond in (obj.get("status") or {}).get("conditions") or []:
        if cond.get("type") == DISRUPTION_TARGET and cond.get("status") == "True":
            return True
    return False
