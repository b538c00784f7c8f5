"""Parsed views of the batch objects: PodGroup (Volcano and scheduler-plugins) and Queue.

Two PodGroup APIs exist in the wild and kubesched reads both:

* Volcano ``scheduling.volcano.sh/v1beta1``: ``minMember``, ``minTaskMember``, ``minResources``,
  ``queue``, ``priorityClassName``; pods join with the annotation ``scheduling.k8s.io/group-name``.
* scheduler-plugins ``scheduling.x-k8s.io/v1alpha1`` (coscheduling): ``minMember``,
  ``minResources``, ``scheduleTimeoutSeconds``; pods join with the label
  ``scheduling.x-k8s.io/pod-group``.

Defaults follow what Volcano's admission webhook fills in: a PodGroup without a queue goes to the
``default`` queue, a Queue without a weight weighs 1 and is reclaimable and Open.
"""

from __future__ import annotations

from collections.abc import Container, Mapping
from dataclasses import dataclass, field
from typing import Any

from kubesched.api.fields import as_int, as_mapping, object_name
from kubesched.api.resources import ResourceList, parse_resource_list
from kubesched.errors import InputError

SCHEDULING_VOLCANO = "scheduling.volcano.sh"
SCHEDULING_X_K8S = "scheduling.x-k8s.io"
VOLCANO_API_VERSION = f"{SCHEDULING_VOLCANO}/v1beta1"
X_K8S_API_VERSION = f"{SCHEDULING_X_K8S}/v1alpha1"
POD_GROUP_API_VERSIONS = (VOLCANO_API_VERSION, X_K8S_API_VERSION)
QUEUE_API_VERSIONS = (VOLCANO_API_VERSION,)

#: Annotation by which a pod joins a Volcano PodGroup.
GROUP_NAME_ANNOTATION = "scheduling.k8s.io/group-name"
#: Label by which a pod joins a scheduler-plugins PodGroup.
POD_GROUP_LABEL = "scheduling.x-k8s.io/pod-group"

DEFAULT_QUEUE = "default"
#: The queue at the top of a hierarchy (Volcano's capacity plugin): it counts every queue below it.
ROOT_QUEUE = "root"
DEFAULT_QUEUE_WEIGHT = 1

VOLCANO_PHASES = ("Pending", "Inqueue", "Running", "Unknown", "Completed")
QUEUE_STATES = ("Open", "Closed", "Closing", "Unknown")

_INT32_MAX = 2**31 - 1


def _opt_str(data: Mapping[str, Any], key: str, field: str, default: str = "") -> str:
    value = data.get(key)
    if value is None or value == "":
        return default
    if not isinstance(value, str):
        raise InputError(f"must be a string, got {type(value).__name__}", field=field)
    return value


def _count(value: Any, field: str, *, minimum: int = 0) -> int:
    """An int32 field that must be at least ``minimum``; ``None`` means 0 (Go's zero value)."""
    if value is None:
        value = 0
    if not isinstance(value, int) or isinstance(value, bool):
        raise InputError(f"must be an integer, got {value!r}", field=field)
    if value < minimum:
        raise InputError(f"must be >= {minimum}, got {value}", field=field)
    if value > _INT32_MAX:
        raise InputError(f"must fit in 32 bits, got {value}", field=field)
    return value


NETWORK_TOPOLOGY_MODES = ("hard", "soft")


@dataclass(slots=True, frozen=True)
class NetworkTopology:
    """``spec.networkTopology``: ``hard`` keeps the gang within one HyperNode of a tier at most
    ``highest_tier_allowed``; ``soft`` only prefers it. The mode defaults to hard (Volcano's CRD)."""

    mode: str = "hard"
    highest_tier_allowed: int | None = None
    highest_tier_name: str = ""

    @classmethod
    def from_dict(cls, data: Any, where: str) -> NetworkTopology:
        spec = as_mapping(data, where)
        mode = _opt_str(spec, "mode", f"{where}.mode", "hard")
        if mode not in NETWORK_TOPOLOGY_MODES:
            raise InputError(
                f'Unsupported value: {mode!r}: supported values: "hard", "soft"', field=f"{where}.mode"
            )
        tier = spec.get("highestTierAllowed")
        highest = None if tier is None else _count(tier, f"{where}.highestTierAllowed")
        tier_name = _opt_str(spec, "highestTierName", f"{where}.highestTierName")
        if highest is not None and tier_name:
            raise InputError(
                "highestTierAllowed and highestTierName cannot be set simultaneously",
                field=f"{where}.highestTierName",
            )
        return cls(mode=mode, highest_tier_allowed=highest, highest_tier_name=tier_name)


@dataclass(slots=True, frozen=True)
class PodGroupCondition:
    type: str
    status: str
    reason: str = ""
    message: str = ""
    transition_id: str = ""
    last_transition_time: str = ""

    @classmethod
    def from_dict(cls, data: Any, field: str) -> PodGroupCondition:
        m = as_mapping(data, field)
        ctype = _opt_str(m, "type", f"{field}.type")
        if not ctype:
            raise InputError("a condition needs a type", field=f"{field}.type")
        return cls(
            type=ctype,
            status=_opt_str(m, "status", f"{field}.status"),
            reason=_opt_str(m, "reason", f"{field}.reason"),
            message=_opt_str(m, "message", f"{field}.message"),
            transition_id=_opt_str(m, "transitionID", f"{field}.transitionID"),
            last_transition_time=_opt_str(m, "lastTransitionTime", f"{field}.lastTransitionTime"),
        )


@dataclass(slots=True, eq=False)
class PodGroup:
    """A gang: at least ``min_member`` of its pods run together or none do."""

    #: ``scheduling.volcano.sh`` or ``scheduling.x-k8s.io``: which API (and which pod membership
    #: key) this group belongs to.
    api_group: str
    namespace: str
    name: str
    uid: str
    min_member: int
    min_resources: ResourceList
    #: Volcano only: minimum members per task (role) name.
    min_task_member: dict[str, int]
    queue: str
    priority_class_name: str
    #: scheduler-plugins only: seconds a gang may wait at Permit; ``None`` when unset.
    schedule_timeout_seconds: int | None
    phase: str
    conditions: tuple[PodGroupCondition, ...]
    creation_timestamp: str
    raw: Mapping[str, Any] = field(repr=False)
    #: Volcano only: the network-topology constraint of the whole gang (None: unconstrained).
    network_topology: NetworkTopology | None = None

    @property
    def key(self) -> tuple[str, str, str]:
        """``(api group, namespace, name)``: the identity pods refer to via :func:`group_name_of`."""
        return (self.api_group, self.namespace, self.name)

    @classmethod
    def from_dict(cls, obj: Mapping[str, Any]) -> PodGroup:
        api_version = obj.get("apiVersion")
        if api_version not in POD_GROUP_API_VERSIONS:
            raise InputError(
                f"apiVersion {api_version!r} is not supported for PodGroup; "
                f"use {' or '.join(POD_GROUP_API_VERSIONS)}",
                field="apiVersion",
            )
        volcano = api_version == VOLCANO_API_VERSION
        meta = as_mapping(obj.get("metadata"), "metadata")
        spec = as_mapping(obj.get("spec"), "spec")
        status = as_mapping(obj.get("status"), "status")
        name = object_name(meta)
        min_member = _count(spec.get("minMember"), "spec.minMember")
        min_resources = parse_resource_list(spec.get("minResources"), "spec.minResources")

        min_task_member: dict[str, int] = {}
        timeout: int | None = None
        network_topology: NetworkTopology | None = None
        if volcano:
            if spec.get("networkTopology") is not None:
                network_topology = NetworkTopology.from_dict(spec["networkTopology"], "spec.networkTopology")
            for task, n in as_mapping(spec.get("minTaskMember"), "spec.minTaskMember").items():
                if not isinstance(task, str):
                    raise InputError("task names must be strings", field="spec.minTaskMember")
                min_task_member[task] = _count(n, f"spec.minTaskMember.{task}")
            queue = _opt_str(spec, "queue", "spec.queue", DEFAULT_QUEUE)
            priority_class_name = _opt_str(spec, "priorityClassName", "spec.priorityClassName")
            phase = _opt_str(status, "phase", "status.phase", "Pending")
            if phase not in VOLCANO_PHASES:
                raise InputError(
                    f"phase must be one of {', '.join(VOLCANO_PHASES)}, got {phase!r}", field="status.phase"
                )
        else:
            raw_timeout = spec.get("scheduleTimeoutSeconds")
            if raw_timeout is not None:
                timeout = _count(raw_timeout, "spec.scheduleTimeoutSeconds")
            queue = DEFAULT_QUEUE
            priority_class_name = ""
            phase = _opt_str(status, "phase", "status.phase", "Pending")

        raw_conditions = status.get("conditions") or []
        if not isinstance(raw_conditions, list):
            raise InputError(
                f"expected a list, got {type(raw_conditions).__name__}", field="status.conditions"
            )
        conditions = tuple(
            PodGroupCondition.from_dict(c, f"status.conditions[{i}]") for i, c in enumerate(raw_conditions)
        )
        return cls(
            api_group=SCHEDULING_VOLCANO if volcano else SCHEDULING_X_K8S,
            namespace=_opt_str(meta, "namespace", "metadata.namespace", "default"),
            name=name,
            uid=_opt_str(meta, "uid", "metadata.uid"),
            min_member=min_member,
            min_resources=min_resources,
            min_task_member=min_task_member,
            queue=queue,
            priority_class_name=priority_class_name,
            schedule_timeout_seconds=timeout,
            phase=phase,
            conditions=conditions,
            creation_timestamp=_opt_str(meta, "creationTimestamp", "metadata.creationTimestamp"),
            raw=obj,
            network_topology=network_topology,
        )


@dataclass(slots=True, eq=False)
class Queue:
    """A Volcano Queue (cluster-scoped): a weighted share of the cluster for its PodGroups."""

    name: str
    uid: str
    weight: int
    capability: ResourceList
    deserved: ResourceList
    guarantee: ResourceList
    reclaimable: bool
    state: str
    parent: str
    priority: int
    raw: Mapping[str, Any] = field(repr=False)

    @property
    def open(self) -> bool:
        return self.state == "Open"

    @classmethod
    def from_dict(cls, obj: Mapping[str, Any]) -> Queue:
        meta = as_mapping(obj.get("metadata"), "metadata")
        spec = as_mapping(obj.get("spec"), "spec")
        status = as_mapping(obj.get("status"), "status")
        name = object_name(meta)
        raw_weight = spec.get("weight")
        # An unset (or zero, Go's omitted value) weight is defaulted to 1 by Volcano's webhook.
        weight = _count(raw_weight, "spec.weight") or DEFAULT_QUEUE_WEIGHT
        guarantee = as_mapping(spec.get("guarantee"), "spec.guarantee")
        reclaimable = spec.get("reclaimable")
        if reclaimable is None:
            reclaimable = True
        if not isinstance(reclaimable, bool):
            raise InputError(f"must be true or false, got {reclaimable!r}", field="spec.reclaimable")
        state = _opt_str(status, "state", "status.state", "Open")
        if state not in QUEUE_STATES:
            raise InputError(
                f"state must be one of {', '.join(QUEUE_STATES)}, got {state!r}", field="status.state"
            )
        priority = spec.get("priority", 0)
        priority = as_int(priority, "spec.priority")
        return cls(
            name=name,
            uid=_opt_str(meta, "uid", "metadata.uid"),
            weight=weight,
            capability=parse_resource_list(spec.get("capability"), "spec.capability"),
            deserved=parse_resource_list(spec.get("deserved"), "spec.deserved"),
            guarantee=parse_resource_list(guarantee.get("resource"), "spec.guarantee.resource"),
            reclaimable=reclaimable,
            state=state,
            parent=_opt_str(spec, "parent", "spec.parent"),
            priority=priority,
            raw=obj,
        )


def group_name_of(pod_raw: Mapping[str, Any]) -> tuple[str, str] | None:
    """The PodGroup a pod belongs to, as ``(api group, name)`` in the pod's namespace, or ``None``.

    The Volcano annotation wins when a pod carries both keys. Empty values mean no group.
    """
    meta = pod_raw.get("metadata")
    if not isinstance(meta, Mapping):
        return None
    annotations = meta.get("annotations")
    if isinstance(annotations, Mapping):
        name = annotations.get(GROUP_NAME_ANNOTATION)
        if isinstance(name, str) and name:
            return (SCHEDULING_VOLCANO, name)
    labels = meta.get("labels")
    if isinstance(labels, Mapping):
        name = labels.get(POD_GROUP_LABEL)
        if isinstance(name, str) and name:
            return (SCHEDULING_X_K8S, name)
    return None


def queue_ancestors(name: str, parents: Mapping[str, str], known: Container[str]) -> list[str]:
    """The known queues above ``name``, nearest first (a cycle of parents stops where it closes)."""
    out: list[str] = []
    seen = {name}
    cur = parents.get(name, "")
    while cur and cur in known and cur not in seen:
        out.append(cur)
        seen.add(cur)
        cur = parents.get(cur, "")
    return out
