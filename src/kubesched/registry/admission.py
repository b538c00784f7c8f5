"""The admission chain every created object passes, in ``serve``, in the simulator and in the
controllers that create pods (upstream's mutating admission plugins, run before storage).

Two steps, in upstream's order:

* :func:`apply_defaults` is the kind's defaulting (its strategy's ``defaults``): what the API server
  and a kubelet fill in (a pod's restartPolicy and dnsPolicy, a namespace's phase and finalizer, a
  node's capacity and conditions, a queue's weight and state). ``serve`` and the controllers apply
  them; the simulator stores objects as the manifests give them.
* :func:`admit` runs the admission plugins of :data:`POD_PLUGINS` over a pod: the default
  scheduler name, ``Priority`` (the pod's priority from its PriorityClass) and the Pending phase;
  and those of :data:`CLAIM_PLUGINS` over a PersistentVolumeClaim: ``DefaultStorageClass`` (a claim
  that names no class gets the default one). Every mode runs it, so an object reads the same
  whoever created it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kubesched.api.features import DEFAULT_FEATURE_GATES, WORKLOAD_AWARE_PREEMPTION
from kubesched.api.kinds import SHARED_KINDS, object_store_kind
from kubesched.api.objects import DEFAULT_SCHEDULER_NAME, SYSTEM_PRIORITY_CLASSES, object_ref
from kubesched.api.scheduling_groups import POD_GROUP_STORE_KIND
from kubesched.api.storage import BETA_STORAGE_CLASS_ANNOTATION
from kubesched.errors import InputError
from kubesched.registry.storage.storageclass import is_default_class
from kubesched.registry.table import BY_KIND
from kubesched.store.base import ClusterStore, Obj

#: One admission plugin: it reads the store and the pod, and fills in the pod's spec and status
#: (copies the chain made, which it stores in place of the pod's own).
PodPlugin = Callable[[ClusterStore, Obj, dict[str, Any], dict[str, Any]], None]
#: One admission plugin of claims: it reads the store and the claim, and fills in a copy of its spec.
ClaimPlugin = Callable[[ClusterStore, Obj, dict[str, Any]], None]


def apply_defaults(obj: dict[str, Any]) -> None:
    """Fill in the defaults of ``obj``'s kind (its strategy's), in place."""
    strategy = BY_KIND.get(object_store_kind(obj))
    if strategy is not None:
        strategy.defaults(obj)


def admit(store: ClusterStore, obj: dict[str, Any]) -> None:
    """Run the admission plugins over an object about to be created in ``store``. A pod's spec and
    status, a claim's spec, are replaced by admitted copies (the caller's own stay as they were); an
    InputError says why the object is refused."""
    kind = obj.get("kind")
    if kind in SHARED_KINDS or kind == "Workload":
        _admit_group(store, obj)
        return
    if kind == "PersistentVolumeClaim":
        claim_spec = dict(obj.get("spec") or {})
        for claim_plugin in CLAIM_PLUGINS:
            claim_plugin(store, obj, claim_spec)
        obj["spec"] = claim_spec
        return
    if kind != "Pod":
        return
    spec = dict(obj.get("spec") or {})
    status = dict(obj.get("status") or {})
    for plugin in POD_PLUGINS:
        plugin(store, obj, spec, status)
    obj["spec"] = spec
    obj["status"] = status


def admitted(store: ClusterStore, obj: Obj) -> dict[str, Any]:
    """A copy of ``obj`` with its kind's admission run, ready for ``store.create``."""
    new = dict(obj)
    admit(store, new)
    return new


def default_scheduler_name(
    _store: ClusterStore, _pod: Obj, spec: dict[str, Any], _status: dict[str, Any]
) -> None:
    """A pod that names no scheduler is the default scheduler's."""
    spec.setdefault("schedulerName", DEFAULT_SCHEDULER_NAME)


def priority(store: ClusterStore, pod: Obj, spec: dict[str, Any], _status: dict[str, Any]) -> None:
    """Upstream's Priority admission: the priority (and preemption policy) of the named class, else
    of the global default class, else 0. A pod that gives its priority keeps it."""
    if spec.get("priority") is not None:
        return
    value, policy = _resolve_priority(store, pod, spec.get("priorityClassName"))
    spec["priority"] = value
    if policy is not None:
        spec.setdefault("preemptionPolicy", policy)


def pending_phase(_store: ClusterStore, _pod: Obj, _spec: dict[str, Any], status: dict[str, Any]) -> None:
    """A new pod is Pending unless it says otherwise."""
    status.setdefault("phase", "Pending")


def _resolve_priority(store: ClusterStore, pod: Obj, class_name: Any) -> tuple[int, str | None]:
    if class_name:
        if class_name in SYSTEM_PRIORITY_CLASSES:
            return SYSTEM_PRIORITY_CLASSES[class_name], None
        pc = store.get("PriorityClass", None, str(class_name))
        if pc is None:
            meta = pod.get("metadata") or {}
            ref = object_ref(
                {
                    "kind": "Pod",
                    "metadata": {"name": meta.get("name"), "namespace": meta.get("namespace") or "default"},
                }
            )
            raise InputError(
                f"no PriorityClass with name {class_name!r} was found",
                obj=ref,
                field="spec.priorityClassName",
            )
        return int(pc.get("value", 0)), pc.get("preemptionPolicy")
    for pc in store.list("PriorityClass"):
        if pc.get("globalDefault"):
            return int(pc.get("value", 0)), pc.get("preemptionPolicy")
    return 0, None


def _admit_group(store: ClusterStore, obj: dict[str, Any]) -> None:
    """Priority admission of a scheduling.k8s.io PodGroup and a Workload's templates (while
    WorkloadAwarePreemption is on): the priority of the named class, else of the global default
    class, else 0, for each that gives none."""
    store_kind = object_store_kind(obj)
    if store_kind not in (POD_GROUP_STORE_KIND, "Workload"):
        return
    if not DEFAULT_FEATURE_GATES.enabled(WORKLOAD_AWARE_PREEMPTION):
        return
    spec = dict(obj.get("spec") or {})
    if store_kind == POD_GROUP_STORE_KIND:
        _group_priority(store, obj, spec, "spec")
    else:
        templates = [dict(t) for t in spec.get("podGroupTemplates") or [] if isinstance(t, dict)]
        for i, template in enumerate(templates):
            _group_priority(store, obj, template, f"spec.podGroupTemplates[{i}]")
        spec["podGroupTemplates"] = templates
    obj["spec"] = spec


def _group_priority(store: ClusterStore, obj: Obj, spec: dict[str, Any], where: str) -> None:
    if spec.get("priority") is not None:
        return
    name = spec.get("priorityClassName")
    if name:
        if name in SYSTEM_PRIORITY_CLASSES:
            spec["priority"] = SYSTEM_PRIORITY_CLASSES[name]
            return
        pc = store.get("PriorityClass", None, str(name))
        if pc is None:
            raise InputError(
                f"no PriorityClass with name {name!r} was found",
                obj=object_ref(obj),
                field=f"{where}.priorityClassName",
            )
        spec["priority"] = int(pc.get("value", 0))
        return
    default = next((pc for pc in store.list("PriorityClass") if pc.get("globalDefault")), None)
    if default is not None:
        spec["priorityClassName"] = default["metadata"]["name"]
        spec["priority"] = int(default.get("value", 0))
    else:
        spec["priority"] = 0


def default_storage_class(store: ClusterStore, claim: Obj, spec: dict[str, Any]) -> None:
    """Upstream's DefaultStorageClass admission: a claim that names no class (neither
    ``spec.storageClassName`` nor the beta annotation; ``""`` is a name: no class) gets the default
    class, the newest when several are marked default (by name among those made the same second);
    none when no class is."""
    annotations = (claim.get("metadata") or {}).get("annotations") or {}
    if spec.get("storageClassName") is not None or BETA_STORAGE_CLASS_ANNOTATION in annotations:
        return
    defaults = sorted(
        (c for c in store.list("StorageClass") if is_default_class(c)),
        key=lambda c: str((c.get("metadata") or {}).get("name", "")),
    )
    # Newest first; timestamps are RFC 3339 of whole seconds, which sort as text.
    defaults.sort(key=lambda c: str((c.get("metadata") or {}).get("creationTimestamp") or ""), reverse=True)
    if defaults:
        spec["storageClassName"] = defaults[0]["metadata"]["name"]


#: The admission plugins a pod passes, in order.
POD_PLUGINS: tuple[PodPlugin, ...] = (default_scheduler_name, priority, pending_phase)
#: The admission plugins a PersistentVolumeClaim passes, in order.
CLAIM_PLUGINS: tuple[ClaimPlugin, ...] = (default_storage_class,)
