"""What the informers' Pod and Node events do to the kube-scheduler's queue (upstream
``pkg/scheduler/eventhandlers.go``).

The scheduler cache has every change already when these handlers run (its feed subscribed to the
informers first, and is shared with the batch scheduler), so they only move pods in the scheduling
queue: a new pending pod is added, a node or an assigned pod that changed moves the pods it may help
out of unschedulablePods, and a stored opportunistic batch goes stale when the nodes change under it.

The handlers are functions of the scheduler, taken in as its methods by
:class:`~kubesched.scheduler.scheduler.Scheduler` and registered on the informers once.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

from kubesched.api.objects import Node, Pod
from kubesched.cache.affinity_terms import AffinityTerm, parse_pod_affinity_terms
from kubesched.cache.pod_index import is_terminating
from kubesched.framework.outcome import PodOutcome
from kubesched.framework.types import (
    ASSIGNED_POD,
    UNSCHEDULED_POD,
    WILDCARD,
    ActionType,
    ClusterEvent,
    QueuedPodInfo,
)
from kubesched.queue.scheduling_queue import pod_update_events
from kubesched.store.base import EventType
from kubesched.store.informers import Change, InformerFactory

if TYPE_CHECKING:
    from kubesched.scheduler.scheduler import Scheduler

NODE_ADD = ClusterEvent("Node", ActionType.ADD)
NODE_DELETE = ClusterEvent("Node", ActionType.DELETE)
ASSIGNED_POD_ADD = ClusterEvent(ASSIGNED_POD, ActionType.ADD)
ASSIGNED_POD_DELETE = ClusterEvent(ASSIGNED_POD, ActionType.DELETE)
UNSCHEDULED_POD_ADD = ClusterEvent(UNSCHEDULED_POD, ActionType.ADD)


#: Resources the scheduler follows through its own Pod and Node handlers, or that name no kind.
_HANDLED_RESOURCES = frozenset({"Pod", "Node", ASSIGNED_POD, UNSCHEDULED_POD, WILDCARD})

_ACTIONS = {
    EventType.ADDED: ActionType.ADD,
    EventType.MODIFIED: ActionType.UPDATE,
    EventType.DELETED: ActionType.DELETE,
}


def followed_kinds(events: Iterable[ClusterEvent]) -> list[str]:
    """The kinds other than pods and nodes that plugins registered events for (upstream
    ``unionedGVKs``): the scheduler subscribes to each so that a change requeues the pods it may
    help. A wildcard registration names no kind, as upstream."""
    kinds: list[str] = []
    for event in events:
        if event.resource not in _HANDLED_RESOURCES and event.resource not in kinds:
            kinds.append(event.resource)
    return kinds


def add_resource_handlers(sched: Scheduler, events: Iterable[ClusterEvent]) -> None:
    """Subscribe to every kind plugins registered events for beyond pods and nodes (claims,
    volumes, storage classes, CSI objects, …): each add, update or delete is that kind's
    cluster event, and the queue's hints decide which pods it moves."""
    for kind in followed_kinds(events):

        def on_change(change: Change[Any], kind: str = kind) -> None:
            # Plugins may sign pods by what such objects say; a stored batch no longer holds.
            sched._invalidate_batches()
            event = ClusterEvent(kind, _ACTIONS[change.type])
            old = change.old_view if change.type != EventType.DELETED else change.view
            new = change.view if change.type != EventType.DELETED else None
            sched.queue.move_all_to_active_or_backoff(event, old, new)

        sched.informers.informer(kind).add_handler(on_change, replay=False)


def invalidate_batches(sched: Scheduler) -> None:
    for batch in sched.batches.values():
        batch.invalidate()


def on_node(sched: Scheduler, change: Change[Node]) -> None:
    # The cache has the change already (its feed subscribed first): only the queue moves, and a
    # stored batch of nodes is stale.
    sched._invalidate_batches()
    if change.type == EventType.DELETED:
        if change.view is not None:
            # A node leaving can even a topology spread (upstream moves on Node/Delete too).
            sched.queue.move_all_to_active_or_backoff(NODE_DELETE, change.view, None)
        return
    node = change.view
    if node is None:
        return
    if change.type == EventType.ADDED:
        sched.queue.move_all_to_active_or_backoff(NODE_ADD, None, node)
        return
    old = change.old_view
    if old is None or change.old is None:
        sched.queue.move_all_to_active_or_backoff(ClusterEvent("Node", ActionType.UPDATE), old, node)
        return
    for event in node_update_events(change.old, change.obj):
        sched.queue.move_all_to_active_or_backoff(event, old, node)


def on_pod(sched: Scheduler, change: Change[Pod]) -> None:
    if (
        change.type == EventType.MODIFIED
        and change.old is not None
        and not (change.obj.get("spec") or {}).get("nodeName")
        and not _spec_or_labels_changed(change.old, change.obj)
    ):
        # A status-only change of a pending pod (mostly the scheduler's own condition and
        # nomination writes): nothing for the cache or the queue.
        return
    pod = change.view
    if pod is None:
        return  # did not parse: the informer logged it
    # The cache has the change already (its feed subscribed first); what it held before tells
    # a newly placed pod from an update of one it knew.
    before = sched.feed.before(change)
    if pod.scheduling_group is not None:
        # Before the queue hears of it: GangScheduling's PreEnqueue counts the group's pods.
        if change.type == EventType.DELETED:
            sched.handle.pod_groups.delete_pod(pod.uid)
        else:
            sched.handle.pod_groups.add_pod(pod)
    if change.type == EventType.DELETED:
        if pod.node_name or before is not None:
            sched._invalidate_batches()
            sched.queue.move_all_to_active_or_backoff(ASSIGNED_POD_DELETE, pod, None)
        sched.queue.delete(pod.uid)
        return
    if pod.node_name:
        if pod.terminated:
            sched._invalidate_batches()
            sched.queue.move_all_to_active_or_backoff(ASSIGNED_POD_DELETE, pod, None)
            return
        if before is None or not before.assumed:
            # Not the confirmation of this scheduler's own binding: the nodes changed under
            # the stored batch.
            sched._invalidate_batches()
        if before is None or before.assumed:
            sched.queue.delete(pod.uid)
            # Upstream AssignedPodAdded: only pods a new pod could help across nodes are asked.
            sched.queue.move_all_to_active_or_backoff(
                ASSIGNED_POD_ADD, None, pod, pre_check=sched._cross_topology_check(pod)
            )
        else:
            old = change.old_view
            if old is not None:
                sched._assigned_pod_updated(old, pod)
        return
    if is_terminating(pod):
        # Upstream skipPodSchedule: a pod being deleted is not scheduled.
        sched.queue.delete(pod.uid)
        return
    if pod.terminated or not sched.responsible_for(pod):
        return
    if change.type == EventType.ADDED:
        sched.queue.add(pod)
        if pod.scheduling_group is not None:
            # A gang's pods held at PreEnqueue may have their quorum now (upstream, with the
            # GangScheduling gate on, moves pods on every unscheduled pod's arrival).
            sched.queue.move_all_to_active_or_backoff(UNSCHEDULED_POD_ADD, None, pod)
        sched.outcomes.setdefault(
            pod.uid, PodOutcome(pod.namespace, pod.name, pod.uid, scheduler_name=pod.scheduler_name)
        )
    elif change.old is not None and _spec_or_labels_changed(change.old, change.obj):
        sched.queue.update(pod, change.old_view)


def assigned_pod_updated(sched: Scheduler, old: Pod, pod: Pod) -> None:
    """Upstream AssignedPodUpdated, once per fine-grained event of the update: a scale-down may
    help any pod; other changes only pods the pod could help across nodes."""
    for event in pod_update_events(old, pod):
        if event.action == ActionType.UPDATE_POD_SCALE_DOWN:
            sched.queue.move_all_to_active_or_backoff(event, old, pod)
        else:
            sched.queue.move_all_to_active_or_backoff(
                event, old, pod, pre_check=sched._cross_topology_check(pod)
            )


def cross_topology_check(sched: Scheduler, pod: Pod) -> Callable[[QueuedPodInfo], bool]:
    """Upstream ``getUnschedulablePodsWithCrossTopologyTerm``: an assigned pod's arrival or change
    is worth a look for pods PodTopologySpread rejected in its namespace, and pods with a required
    affinity term it matches."""
    namespace_labels = _namespace_labels(sched.informers, pod.namespace)

    def check(info: QueuedPodInfo) -> bool:
        if "PodTopologySpread" in info.unschedulable_plugins and info.pod.namespace == pod.namespace:
            return True
        return any(
            t.matches(pod.namespace, pod.labels, namespace_labels) for t in required_affinity_terms(info.pod)
        )

    return check


def _spec_or_labels_changed(old: Mapping[str, Any], new: Mapping[str, Any]) -> bool:
    """Upstream ignores status-only updates of pending pods (they come from the scheduler itself)."""
    if old.get("spec") != new.get("spec"):
        return True
    om, nm = old.get("metadata") or {}, new.get("metadata") or {}
    if om.get("labels") != nm.get("labels") or om.get("annotations") != nm.get("annotations"):
        return True
    # Except the claims generated for the pod, which it may be waiting for (upstream keeps
    # ``resourceClaimStatuses`` when it compares pod updates).
    os, ns = old.get("status") or {}, new.get("status") or {}
    return bool(
        os.get("resourceClaimStatuses") != ns.get("resourceClaimStatuses")
        or os.get("extendedResourceClaimStatus") != ns.get("extendedResourceClaimStatus")
    )


def node_update_events(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[ClusterEvent]:
    """The fine-grained events of a node update (upstream ``NodeSchedulingPropertiesChange``), from
    the raw objects: a node made schedulable again counts as a taint change, as upstream."""
    om, nm = old.get("metadata") or {}, new.get("metadata") or {}
    ospec, nspec = old.get("spec") or {}, new.get("spec") or {}
    ostatus, nstatus = old.get("status") or {}, new.get("status") or {}
    actions: list[ActionType] = []
    if bool(ospec.get("unschedulable")) and not nspec.get("unschedulable"):
        actions.append(ActionType.UPDATE_NODE_TAINT)
    if (ostatus.get("allocatable") or {}) != (nstatus.get("allocatable") or {}):
        actions.append(ActionType.UPDATE_NODE_ALLOCATABLE)
    if (om.get("labels") or {}) != (nm.get("labels") or {}):
        actions.append(ActionType.UPDATE_NODE_LABEL)
    if (ospec.get("taints") or []) != (nspec.get("taints") or []):
        actions.append(ActionType.UPDATE_NODE_TAINT)
    if _condition_statuses(ostatus) != _condition_statuses(nstatus):
        actions.append(ActionType.UPDATE_NODE_CONDITION)
    if (om.get("annotations") or {}) != (nm.get("annotations") or {}):
        actions.append(ActionType.UPDATE_NODE_ANNOTATION)
    return [ClusterEvent("Node", a) for a in actions]


def _condition_statuses(status: Mapping[str, Any]) -> dict[Any, Any]:
    conditions = status.get("conditions") or []
    return {c.get("type"): c.get("status") for c in conditions if isinstance(c, Mapping)}


def _namespace_labels(informers: InformerFactory, namespace: str) -> Mapping[str, str]:
    obj = informers.informer("Namespace").get_raw(None, namespace)
    labels = ((obj or {}).get("metadata") or {}).get("labels") or {}
    return labels if isinstance(labels, Mapping) else {}


#: id(affinity mapping) → (that mapping, namespace, labels, its required affinity terms); holding the
#: mapping keeps the id unique, and the terms depend on the namespace and labels too (matchLabelKeys).
_TERMS_CACHE: dict[int, tuple[Any, str, Mapping[str, str], tuple[AffinityTerm, ...]]] = {}


def required_affinity_terms(pod: Pod) -> tuple[AffinityTerm, ...]:
    """The pod's required pod-affinity terms (upstream ``PodInfo.RequiredAffinityTerms``)."""
    affinity = pod.affinity
    if not affinity or "podAffinity" not in affinity:
        return ()
    hit = _TERMS_CACHE.get(id(affinity))
    if hit is not None and hit[0] is affinity and hit[1] == pod.namespace and hit[2] == pod.labels:
        return hit[3]
    terms = parse_pod_affinity_terms(affinity, pod.namespace, pod.labels).required_affinity
    if len(_TERMS_CACHE) >= 4096:
        _TERMS_CACHE.clear()
    _TERMS_CACHE[id(affinity)] = (affinity, pod.namespace, pod.labels, terms)
    return terms
