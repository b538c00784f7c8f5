"""Side-effect ports: every write a scheduler makes to the cluster goes through one of these.

Both pipelines (and plugins, through their handle) bind, evict, write pod and PodGroup status and
record events only through these protocols, so the same scheduler objects run against the embedded
store, the API server kubesched serves, or a real cluster: each of those places supplies its own
implementation. :class:`StorePorts` implements all of them over a :class:`ClusterStore`.
"""

from __future__ import annotations

import contextlib
import random
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from kubesched.api.scheduling_groups import POD_GROUP_STORE_KIND, with_condition
from kubesched.store.base import ClusterStore, NotFound, Obj
from kubesched.store.memory import format_timestamp

#: The condition an evictor puts on a pod before deleting it (upstream ``DisruptionTarget``).
DISRUPTION_TARGET = "DisruptionTarget"


class Binder(Protocol):
    def bind(self, namespace: str, name: str, uid: str, node_name: str) -> None:
        """Write the Binding subresource; raises ``StoreError`` (Conflict, NotFound) when refused."""
        ...


class BackgroundBinder(Binder, Protocol):
    """A binder that can also send the Binding without the caller waiting (an API server's: the
    write is a request on the client's event loop)."""

    def bind_later(
        self, namespace: str, name: str, uid: str, node_name: str, done: Callable[[Exception | None], None]
    ) -> None:
        """Send the Binding and return at once; ``done`` is called, from any thread, with None
        when it was written or the ``StoreError`` that refused it."""
        ...


class Evictor(Protocol):
    def evict(self, namespace: str, name: str, reason: str, message: str) -> bool:
        """Mark the pod a ``DisruptionTarget`` (reason, message) and delete it. False when the pod
        was already gone (nothing evicted)."""
        ...


class PodStatusWriter(Protocol):
    def set_pod_condition(
        self,
        namespace: str,
        name: str,
        condition: Mapping[str, Any],
        nominated_node: str | None = None,
    ) -> Obj | None:
        """Set one pod condition; ``nominated_node``: a node to nominate, "" to clear the nomination,
        None to leave it. Returns the stored pod, or None when it is gone."""
        ...


class PodGroupStatusWriter(Protocol):
    def update_pod_group_status(self, namespace: str, name: str, status: Mapping[str, Any]) -> Obj | None:
        """Replace a PodGroup's status; returns the stored object, or None when it is gone."""
        ...

    def create_pod_group(self, obj: Obj) -> Obj:
        """Create a PodGroup (Volcano's controller does this for pods that name none); an existing one
        of that name is returned as it is."""
        ...


class PodGroupConditionWriter(Protocol):
    def set_pod_group_condition(self, namespace: str, name: str, condition: Mapping[str, Any]) -> Obj | None:
        """Set one condition (``PodGroupScheduled``, ``DisruptionTarget``) of a scheduling.k8s.io
        PodGroup's status, as ``meta.SetStatusCondition``: lastTransitionTime moves only when the
        status changes. Returns the stored object, or None when it is gone."""
        ...


class QueueStatusWriter(Protocol):
    def update_queue_status(self, name: str, status: Mapping[str, Any]) -> Obj | None:
        """Set the given fields of a Queue's status (the batch scheduler owns ``allocated``; the
        other fields belong to the queue controller and are kept). None when the queue is gone."""
        ...


class PodAnnotationWriter(Protocol):
    def set_pod_annotations(self, namespace: str, name: str, annotations: Mapping[str, str]) -> Obj | None:
        """Merge ``annotations`` into the pod's (GPU cards chosen at PreBind); None when it is gone."""
        ...


class VolumeWriter(Protocol):
    """Writes the volume binder sends at PreBind (upstream ``bindAPIUpdate``): a PersistentVolume
    with its ``claimRef`` set, a claim annotated with the node chosen for provisioning. Each
    replaces the whole object and carries the resourceVersion read: a stale one is refused with
    :class:`~kubesched.store.base.Conflict`, a missing object with
    :class:`~kubesched.store.base.NotFound`. Returns the object as written."""

    def update_persistent_volume(self, obj: Obj) -> Obj: ...

    def update_persistent_volume_claim(self, obj: Obj) -> Obj: ...


class ResourceClaimWriter(Protocol):
    """What DynamicResources writes to ResourceClaims (``resource.k8s.io/v1``): the delete-protection
    finalizer (an update of the object), the allocation and ``reservedFor`` (an update of the status
    subresource), the claim for extended resources backed by a DeviceClass (a create) and its
    removal. Updates replace the object (or its status) and carry the resourceVersion read: a stale
    one is refused with :class:`~kubesched.store.base.Conflict`, a missing object with
    :class:`~kubesched.store.base.NotFound`. Each returns the object as written."""

    def get_resource_claim(self, namespace: str, name: str) -> Obj | None:
        """The claim as the cluster has it now (read again after a conflict); None when gone."""
        ...

    def update_resource_claim(self, obj: Obj) -> Obj:
        """Replace the claim's metadata and spec; its status stays as stored."""
        ...

    def update_resource_claim_status(self, obj: Obj) -> Obj:
        """Replace the claim's status; the rest stays as stored."""
        ...

    def create_resource_claim(self, obj: Obj) -> Obj:
        """Create a claim (``metadata.generateName`` gives it a unique name)."""
        ...

    def delete_resource_claim(self, namespace: str, name: str, uid: str) -> None:
        """Delete the claim if it still is the one with ``uid`` (gone already: nothing happens)."""
        ...

    def set_pod_extended_resource_claim_status(
        self, namespace: str, name: str, status: Mapping[str, Any]
    ) -> Obj | None:
        """Record in the pod's ``status.extendedResourceClaimStatus`` the claim made for its
        extended resources; None when the pod is gone."""
        ...


class EventRecorder(Protocol):
    def record(
        self, regarding: Obj, event_type: str, reason: str, action: str, note: str, reporter: str
    ) -> None:
        """Record an ``events.k8s.io/v1`` Event about ``regarding``."""
        ...


@dataclass(slots=True)
class Ports:
    """The full set of side-effect ports a scheduler is given."""

    binder: Binder
    evictor: Evictor
    pod_status: PodStatusWriter
    pod_group_status: PodGroupStatusWriter
    events: EventRecorder
    pod_annotations: PodAnnotationWriter
    #: None: Queue status is not written (a cluster without Volcano's Queue kind).
    queue_status: QueueStatusWriter | None = None
    #: None: volumes are not bound by the scheduler (PreBind of a pod with claims to bind fails).
    volumes: VolumeWriter | None = None
    #: None: ResourceClaims are not written (PreBind of a pod whose claims need a write fails).
    resource_claims: ResourceClaimWriter | None = None
    #: None: scheduling.k8s.io PodGroup conditions are not written (a cluster without the group).
    pod_group_conditions: PodGroupConditionWriter | None = None


class StorePorts:
    """Every port, written straight to a :class:`ClusterStore` (the embedded cluster)."""

    def __init__(self, store: ClusterStore, now: Callable[[], float] | None = None) -> None:
        self.store = store
        #: The clock condition writes are stamped with: the store's own where it keeps one.
        self._now: Callable[[], float] = now or getattr(store, "now", None) or time.time

    def bind(self, namespace: str, name: str, uid: str, node_name: str) -> None:
        self.store.bind(namespace, name, uid, node_name)

    def evict(self, namespace: str, name: str, reason: str, message: str) -> bool:
        condition = {"type": DISRUPTION_TARGET, "status": "True", "reason": reason, "message": message}
        if self.store.update_pod_condition(namespace, name, condition) is None:
            return False
        try:
            self.store.delete("Pod", namespace, name)
        except NotFound:
            return False
        return True

    def set_pod_condition(
        self,
        namespace: str,
        name: str,
        condition: Mapping[str, Any],
        nominated_node: str | None = None,
    ) -> Obj | None:
        return self.store.update_pod_condition(namespace, name, condition, nominated_node=nominated_node)

    def update_pod_group_status(self, namespace: str, name: str, status: Mapping[str, Any]) -> Obj | None:
        obj = self.store.get("PodGroup", namespace, name)
        if obj is None:
            return None
        meta = dict(obj.get("metadata") or {})
        meta.pop("resourceVersion", None)
        return self.store.update({**obj, "metadata": meta, "status": dict(status)})

    def set_pod_group_condition(self, namespace: str, name: str, condition: Mapping[str, Any]) -> Obj | None:
        obj = self.store.get(POD_GROUP_STORE_KIND, namespace, name)
        if obj is None:
            return None
        status = obj.get("status") or {}
        conditions = with_condition(status.get("conditions"), condition, format_timestamp(self._now()))
        if conditions is None:
            return obj
        meta = dict(obj.get("metadata") or {})
        meta.pop("resourceVersion", None)
        try:
            return self.store.update(
                {**obj, "metadata": meta, "status": {**status, "conditions": conditions}}
            )
        except NotFound:
            return None

    def create_pod_group(self, obj: Obj) -> Obj:
        meta = obj.get("metadata") or {}
        existing = self.store.get("PodGroup", meta.get("namespace"), str(meta.get("name")))
        return existing if existing is not None else self.store.create(obj)

    def record(
        self, regarding: Obj, event_type: str, reason: str, action: str, note: str, reporter: str
    ) -> None:
        self.store.record_event(regarding, event_type, reason, action, note, reporter)

    def update_queue_status(self, name: str, status: Mapping[str, Any]) -> Obj | None:
        obj = self.store.get("Queue", None, name)
        if obj is None:
            return None
        meta = dict(obj.get("metadata") or {})
        meta.pop("resourceVersion", None)
        return self.store.update({**obj, "metadata": meta, "status": {**(obj.get("status") or {}), **status}})

    def set_pod_annotations(self, namespace: str, name: str, annotations: Mapping[str, str]) -> Obj | None:
        obj = self.store.get("Pod", namespace, name)
        if obj is None:
            return None
        meta = dict(obj.get("metadata") or {})
        meta.pop("resourceVersion", None)
        meta["annotations"] = {**(meta.get("annotations") or {}), **annotations}
        return self.store.update({**obj, "metadata": meta})

    def update_persistent_volume(self, obj: Obj) -> Obj:
        return self.store.update(obj)

    def update_persistent_volume_claim(self, obj: Obj) -> Obj:
        return self.store.update(obj)

    def get_resource_claim(self, namespace: str, name: str) -> Obj | None:
        return self.store.get("ResourceClaim", namespace, name)

    def _stored_claim(self, obj: Obj) -> Obj:
        meta = obj.get("metadata") or {}
        stored = self.store.get("ResourceClaim", meta.get("namespace"), str(meta.get("name") or ""))
        if stored is None:
            raise NotFound(f'resourceclaims.resource.k8s.io "{meta.get("name")}" not found')
        return stored

    def update_resource_claim(self, obj: Obj) -> Obj:
        stored = self._stored_claim(obj)
        new = {**obj, "status": stored.get("status")} if "status" in stored else dict(obj)
        if "status" not in stored:
            new.pop("status", None)
        return self.store.update(new)

    def update_resource_claim_status(self, obj: Obj) -> Obj:
        stored = self._stored_claim(obj)
        meta = {**(stored.get("metadata") or {})}
        # The status carries the resourceVersion it was read at, as the status subresource checks.
        meta["resourceVersion"] = (obj.get("metadata") or {}).get("resourceVersion")
        return self.store.update({**stored, "metadata": meta, "status": obj.get("status") or {}})

    def create_resource_claim(self, obj: Obj) -> Obj:
        meta = dict(obj.get("metadata") or {})
        if not meta.get("name") and meta.get("generateName"):
            meta["name"] = _generated_name(self.store, meta)
        return self.store.create({**obj, "metadata": meta})

    def delete_resource_claim(self, namespace: str, name: str, uid: str) -> None:
        stored = self.store.get("ResourceClaim", namespace, name)
        if stored is None or (uid and (stored.get("metadata") or {}).get("uid") != uid):
            return
        with contextlib.suppress(NotFound):
            self.store.delete("ResourceClaim", namespace, name)

    def set_pod_extended_resource_claim_status(
        self, namespace: str, name: str, status: Mapping[str, Any]
    ) -> Obj | None:
        obj = self.store.get("Pod", namespace, name)
        if obj is None:
            return None
        meta = dict(obj.get("metadata") or {})
        meta.pop("resourceVersion", None)
        pod_status = {**(obj.get("status") or {}), "extendedResourceClaimStatus": dict(status)}
        return self.store.update({**obj, "metadata": meta, "status": pod_status})

    def ports(self) -> Ports:
        return Ports(
            self, self, self, self, self, self, self, self, resource_claims=self, pod_group_conditions=self
        )


def _generated_name(store: ClusterStore, meta: Mapping[str, Any]) -> str:
    """The API server's generateName: the prefix (cut to leave room) and five random characters,
    drawn again while the name is taken. The draws are seeded by the prefix, so that a simulation
    names its claims the same way every run."""
    base = str(meta.get("generateName"))[:58]
    namespace = meta.get("namespace")
    rng = random.Random(f"{namespace}/{base}")
    while True:
        name = base + "".join(rng.choice(_NAME_CHARS) for _ in range(5))
        if store.get("ResourceClaim", namespace, name) is None:
            return name


#: The characters of a generated name's suffix (upstream ``utilrand.String``: no vowels, no 0/1/3).
_NAME_CHARS = "bcdfghjklmnpqrstvwxz2456789"
