"""The garbage collector (upstream ``pkg/controller/garbagecollector``), run inline with each
delete: what an object owns goes with it unless the delete orphans it, and a deleted namespace takes
its objects with it."""

from __future__ import annotations

from kubesched.api.scheduling_groups import POD_GROUP_STORE_KIND
from kubesched.registry.table import NAMESPACED_KINDS
from kubesched.store.base import ClusterStore, NotFound, Obj

#: Kind → the kinds whose objects it may own.
OWNED: dict[str, tuple[str, ...]] = {
    "Deployment": ("ReplicaSet",),
    "ReplicaSet": ("Pod",),
    "StatefulSet": ("Pod", "PersistentVolumeClaim", "ControllerRevision"),
    # An Indexed Job's Workload and PodGroup under WorkloadWithJob.
    "Job": ("Pod", "Workload", POD_GROUP_STORE_KIND),
    "DaemonSet": ("Pod", "ControllerRevision"),
    "CronJob": ("Job",),
    "PodGroup": ("Pod",),
    "ReplicationController": ("Pod",),
    # A generic ephemeral volume's claim, a StatefulSet member's claim under a whenScaled: Delete
    # retention policy, the ResourceClaims made from the pod's ResourceClaimTemplates, the PodGroup
    # Volcano's controller made for a batch pod that named none.
    "Pod": ("PersistentVolumeClaim", "ResourceClaim", "PodGroup"),
    # A node's heartbeat Lease.
    "Node": ("Lease",),
    "Service": ("EndpointSlice",),
}


def delete_cascading(
    store: ClusterStore, kind: str, namespace: str | None, name: str, policy: str
) -> Obj | None:
    """Delete an object and (unless ``policy`` is Orphan) its dependents; None when it was not
    there."""
    try:
        gone_obj = store.delete(kind, namespace, name)
    except NotFound:
        return None
    uid = (gone_obj.get("metadata") or {}).get("uid")
    if policy == "Orphan" or not uid:
        return gone_obj
    if kind == "Namespace":
        for child_kind in NAMESPACED_KINDS:
            for obj in store.list(child_kind):
                if (obj.get("metadata") or {}).get("namespace") == name:
                    delete_cascading(store, child_kind, name, obj["metadata"]["name"], policy)
        return gone_obj
    for child_kind in OWNED.get(kind, ()):
        for obj in store.list(child_kind):
            meta = obj.get("metadata") or {}
            if any(
                ref.get("uid") == uid for ref in meta.get("ownerReferences") or [] if isinstance(ref, dict)
            ):
                delete_cascading(store, child_kind, meta.get("namespace"), meta["name"], policy)
    return gone_obj
