"""The one scheduler cache of a cluster, fed once from the shared Node and Pod informers.

Both schedulers (the kube-scheduler pipeline and the batch one) work on the same
:class:`SchedulerCache`: each assumes into it the pods it places, so a pod one of them holds
(waiting at Permit, mid-bind, or bound by a session whose events are not pumped yet) already counts
when the other one looks at the node. The feed subscribes to the informers before either scheduler
does, so by the time a scheduler's own handler sees a change the cache already reflects it: nodes
come and go, bound pods are added or updated (the informer's bound pod confirms an assumed one),
terminated and deleted pods leave.

A scheduler handler that must know what the cache held *before* the change (was the pod new to it,
or only assumed?) asks :meth:`CacheFeed.before`; a change the feed did not apply (replayed to a
handler subscribed later, when the cache already holds its object) reads as new, as it would to a
scheduler with a cache of its own.

The feed also follows ResourceClaims: the GPU cards an allocated claim holds
(:func:`kubesched.gpu.dra.allocated_cards`) count in the cache's per-card state, so a GPU taken
through DRA is taken for the GPU-sharing plugins too.
"""

from __future__ import annotations

from typing import Any

from kubesched.api.objects import Node, Pod
from kubesched.api.resource import ResourceClaim
from kubesched.cache.cache import PodState, SchedulerCache
from kubesched.gpu.dra import allocated_cards
from kubesched.store.base import EventType
from kubesched.store.informers import Change, InformerFactory


class CacheFeed:
    def __init__(self, informers: InformerFactory, cache: SchedulerCache | None = None) -> None:
        self.cache = cache if cache is not None else SchedulerCache()
        # The pod change being delivered and the cache's record of that pod before it; a copy,
        # since applying the change mutates the record in place.
        self._change: Change[Any] | None = None
        self._before: PodState | None = None
        # Nodes first: pods already bound when the feed starts find their nodes in the cache.
        informers.informer("Node").add_handler(self._on_node)
        informers.informer("Pod").add_handler(self._on_pod)
        informers.informer("ResourceClaim").add_handler(self._on_claim)

    def before(self, change: Change[Any]) -> PodState | None:
        """The cache's record of the change's pod before the change was applied (None: the cache
        did not hold it)."""
        return self._before if change is self._change else None

    def _on_node(self, change: Change[Node]) -> None:
        cache = self.cache
        if change.type == EventType.DELETED:
            cache.remove_node(str(change.obj["metadata"]["name"]))
            return
        node = change.view
        if node is None:
            return  # did not parse: the informer logged it
        if change.type == EventType.ADDED:
            cache.add_node(node)
        else:
            cache.update_node(node)

    def _on_pod(self, change: Change[Pod]) -> None:
        pod = change.view
        self._change = change
        self._before = None
        if pod is None:
            return  # did not parse: the informer logged it
        cache = self.cache
        st = cache.pod_state(pod.uid)
        if st is not None:
            self._before = PodState(st.pod, st.node_name, st.assumed, st.binding_finished)
        if change.type == EventType.DELETED or (pod.node_name and pod.terminated):
            cache.remove_pod(pod)
        elif pod.node_name:
            if st is None or st.assumed:
                cache.add_pod(pod)
            else:
                cache.update_pod(pod)

    def _on_claim(self, change: Change[ResourceClaim]) -> None:
        cards = self.cache.gpu_cards
        claim = change.view
        uid = str((change.obj.get("metadata") or {}).get("uid") or "")
        held = allocated_cards(claim) if claim is not None and change.type != EventType.DELETED else None
        if held is None:
            cards.claim_released(uid)
        else:
            cards.claim_allocated(uid, *held)


__all__ = ["CacheFeed"]
