"""Typed views of the workload API of ``scheduling.k8s.io`` (KEP-4671, v1alpha2 as Kubernetes 1.36
serves it): ``Workload`` (templates of pod groups) and the runtime ``PodGroup`` a controller makes
from one template; a pod joins a group by ``spec.schedulingGroup.podGroupName``.

Not to be confused with Volcano's PodGroup (``api/volcano.py``): that one is kept under the store
kind ``PodGroup``, this one under :data:`POD_GROUP_STORE_KIND` (``api/kinds.py``).

The views read what the schedulers use and refuse a field of the wrong type with a located
:class:`InputError`; the API server's full validation (every field, immutability) is
``api/scheduling_group_rules.py``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from kubesched.api.fields import INT64_MAX, as_int, as_list, as_mapping, object_name
from kubesched.api.kinds import store_kind_in_group
from kubesched.errors import InputError

SCHEDULING_GROUP: Final = "scheduling.k8s.io"
WORKLOAD_VERSION: Final = "v1alpha2"
WORKLOAD_API_VERSION: Final = f"{SCHEDULING_GROUP}/{WORKLOAD_VERSION}"
#: The versions of the group whose Workload and PodGroup kubesched reads.
WORKLOAD_API_VERSIONS: Final = (WORKLOAD_API_VERSION,)
WORKLOAD_KIND: Final = "Workload"
POD_GROUP_KIND: Final = "PodGroup"
#: The store kind of the scheduling.k8s.io PodGroup (``api/kinds.py``): "PodGroup.scheduling.k8s.io".
POD_GROUP_STORE_KIND: Final = store_kind_in_group(SCHEDULING_GROUP, POD_GROUP_KIND)

#: Upstream's WorkloadMaxPodGroupTemplates.
MAX_POD_GROUP_TEMPLATES: Final = 8
#: Upstream's MaxPodGroupResourceClaims.
MAX_POD_GROUP_RESOURCE_CLAIMS: Final = 4

# Condition types of status.conditions.
#: Whether the group's scheduling requirement is met (True: all required pods have nodes).
POD_GROUP_SCHEDULED: Final = "PodGroupScheduled"
#: The group is about to be terminated by a disruption such as preemption.
DISRUPTION_TARGET: Final = "DisruptionTarget"

# Reasons. "Scheduled" is what kube-scheduler writes with PodGroupScheduled=True.
REASON_SCHEDULED: Final = "Scheduled"
REASON_UNSCHEDULABLE: Final = "Unschedulable"
REASON_SCHEDULER_ERROR: Final = "SchedulerError"
#: The DisruptionTarget reason when kube-scheduler preempted the group.
REASON_PREEMPTION_BY_SCHEDULER: Final = "PreemptionByScheduler"
#: The PodGroupScheduled reason early 1.36 alphas gave a preempted group, before DisruptionTarget.
REASON_PREEMPTED: Final = "Preempted"

# spec.disruptionMode.
DISRUPTION_MODE_POD: Final = "Pod"
DISRUPTION_MODE_POD_GROUP: Final = "PodGroup"
DISRUPTION_MODES: Final = (DISRUPTION_MODE_POD, DISRUPTION_MODE_POD_GROUP)


def _opt_str(data: Mapping[str, Any], key: str, where: str) -> str:
    value = data.get(key)
    if value is None:
        return ""
    if not isinstance(value, str):
        raise InputError(f"must be a string, got {type(value).__name__}", field=f"{where}.{key}")
    return value


def _opt_int(data: Mapping[str, Any], key: str, where: str) -> int | None:
    value = data.get(key)
    return None if value is None else as_int(value, f"{where}.{key}")


@dataclass(frozen=True, slots=True)
class SchedulingPolicy:
    """``schedulingPolicy``: ``gang`` with its ``minCount`` or ``basic`` (``gang_min_count`` None)."""

    gang_min_count: int | None = None

    @property
    def is_gang(self) -> bool:
        return self.gang_min_count is not None

    @classmethod
    def from_dict(cls, data: Any, where: str) -> SchedulingPolicy:
        policy = as_mapping(data, where)
        gang = policy.get("gang")
        if gang is None:
            return cls()
        gang = as_mapping(gang, f"{where}.gang")
        min_count = gang.get("minCount")
        return cls(0 if min_count is None else as_int(min_count, f"{where}.gang.minCount"))


def topology_keys(data: Any, where: str) -> tuple[str, ...]:
    """The keys of ``schedulingConstraints.topology`` (``where`` names schedulingConstraints)."""
    constraints = as_mapping(data, where)
    keys = []
    for i, item in enumerate(as_list(constraints.get("topology"), f"{where}.topology")):
        keys.append(_opt_str(as_mapping(item, f"{where}.topology[{i}]"), "key", f"{where}.topology[{i}]"))
    return tuple(keys)


@dataclass(frozen=True, slots=True)
class ControllerRef:
    """``spec.controllerRef`` of a Workload: the object (a Job, …) it was made for."""

    api_group: str
    kind: str
    name: str


def _claim_names(data: Any, where: str) -> tuple[str, ...]:
    return tuple(
        _opt_str(as_mapping(item, f"{where}[{i}]"), "name", f"{where}[{i}]")
        for i, item in enumerate(as_list(data, where))
    )


@dataclass(frozen=True, slots=True)
class PodGroupTemplate:
    """One of a Workload's ``podGroupTemplates``."""

    name: str
    policy: SchedulingPolicy
    topology_keys: tuple[str, ...] = ()
    #: ``disruptionMode`` as written (None: unset, which means Pod).
    disruption_mode: str | None = None
    priority_class_name: str = ""
    priority: int | None = None
    #: The names of its ``resourceClaims``.
    resource_claims: tuple[str, ...] = ()

    @classmethod
    def from_dict(cls, data: Any, where: str) -> PodGroupTemplate:
        tpl = as_mapping(data, where)
        return cls(
            name=_opt_str(tpl, "name", where),
            policy=SchedulingPolicy.from_dict(tpl.get("schedulingPolicy"), f"{where}.schedulingPolicy"),
            topology_keys=topology_keys(tpl.get("schedulingConstraints"), f"{where}.schedulingConstraints"),
            disruption_mode=_opt_str(tpl, "disruptionMode", where) or None,
            priority_class_name=_opt_str(tpl, "priorityClassName", where),
            priority=_opt_int(tpl, "priority", where),
            resource_claims=_claim_names(tpl.get("resourceClaims"), f"{where}.resourceClaims"),
        )


@dataclass(frozen=True, slots=True)
class Workload:
    """A ``scheduling.k8s.io`` Workload: the pod group templates of one workload."""

    namespace: str
    name: str
    uid: str
    controller_ref: ControllerRef | None
    pod_group_templates: tuple[PodGroupTemplate, ...]
    raw: Mapping[str, Any] = field(repr=False, compare=False)

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    def template(self, name: str) -> PodGroupTemplate | None:
        for tpl in self.pod_group_templates:
            if tpl.name == name:
                return tpl
        return None

    @classmethod
    def from_dict(cls, obj: Mapping[str, Any]) -> Workload:
        meta = as_mapping(obj.get("metadata"), "metadata")
        spec = as_mapping(obj.get("spec"), "spec")
        ref = spec.get("controllerRef")
        controller_ref = None
        if ref is not None:
            m = as_mapping(ref, "spec.controllerRef")
            controller_ref = ControllerRef(
                api_group=_opt_str(m, "apiGroup", "spec.controllerRef"),
                kind=_opt_str(m, "kind", "spec.controllerRef"),
                name=_opt_str(m, "name", "spec.controllerRef"),
            )
        templates = tuple(
            PodGroupTemplate.from_dict(t, f"spec.podGroupTemplates[{i}]")
            for i, t in enumerate(as_list(spec.get("podGroupTemplates"), "spec.podGroupTemplates"))
        )
        return cls(
            namespace=str(meta.get("namespace") or "default"),
            name=object_name(meta),
            uid=str(meta.get("uid") or ""),
            controller_ref=controller_ref,
            pod_group_templates=templates,
            raw=obj,
        )


@dataclass(frozen=True, slots=True)
class GroupCondition:
    """One ``metav1.Condition`` of a PodGroup's status."""

    type: str
    status: str
    reason: str = ""
    message: str = ""
    last_transition_time: str = ""
    observed_generation: int = 0

    @classmethod
    def from_dict(cls, data: Any, where: str) -> GroupCondition:
        m = as_mapping(data, where)
        generation = m.get("observedGeneration")
        return cls(
            type=_opt_str(m, "type", where),
            status=_opt_str(m, "status", where),
            reason=_opt_str(m, "reason", where),
            message=_opt_str(m, "message", where),
            last_transition_time=_opt_str(m, "lastTransitionTime", where),
            observed_generation=(
                0
                if generation is None
                else as_int(generation, f"{where}.observedGeneration", maximum=INT64_MAX)
            ),
        )


@dataclass(frozen=True, slots=True)
class SchedulingPodGroup:
    """The runtime ``scheduling.k8s.io`` PodGroup: the pods naming it in
    ``spec.schedulingGroup.podGroupName`` are scheduled by its policy."""

    namespace: str
    name: str
    uid: str
    #: ``spec.podGroupTemplateRef.workload``: (workload name, template name), or None.
    template_ref: tuple[str, str] | None
    policy: SchedulingPolicy
    topology_keys: tuple[str, ...]
    #: ``spec.disruptionMode`` (the API server defaults it to Pod while WorkloadAwarePreemption is on).
    disruption_mode: str | None
    priority_class_name: str
    #: ``spec.priority`` (None: unset).
    priority: int | None
    conditions: tuple[GroupCondition, ...]
    creation_timestamp: str
    raw: Mapping[str, Any] = field(repr=False, compare=False)

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    def condition(self, ctype: str) -> GroupCondition | None:
        for cond in self.conditions:
            if cond.type == ctype:
                return cond
        return None

    @classmethod
    def from_dict(cls, obj: Mapping[str, Any]) -> SchedulingPodGroup:
        meta = as_mapping(obj.get("metadata"), "metadata")
        spec = as_mapping(obj.get("spec"), "spec")
        status = as_mapping(obj.get("status"), "status")
        template_ref = None
        ref = spec.get("podGroupTemplateRef")
        if ref is not None:
            workload = as_mapping(ref, "spec.podGroupTemplateRef").get("workload")
            if workload is not None:
                where = "spec.podGroupTemplateRef.workload"
                w = as_mapping(workload, where)
                template_ref = (
                    _opt_str(w, "workloadName", where),
                    _opt_str(w, "podGroupTemplateName", where),
                )
        return cls(
            namespace=str(meta.get("namespace") or "default"),
            name=object_name(meta),
            uid=str(meta.get("uid") or ""),
            template_ref=template_ref,
            policy=SchedulingPolicy.from_dict(spec.get("schedulingPolicy"), "spec.schedulingPolicy"),
            topology_keys=topology_keys(spec.get("schedulingConstraints"), "spec.schedulingConstraints"),
            disruption_mode=_opt_str(spec, "disruptionMode", "spec") or None,
            priority_class_name=_opt_str(spec, "priorityClassName", "spec"),
            priority=_opt_int(spec, "priority", "spec"),
            conditions=tuple(
                GroupCondition.from_dict(c, f"status.conditions[{i}]")
                for i, c in enumerate(as_list(status.get("conditions"), "status.conditions"))
            ),
            creation_timestamp=str(meta.get("creationTimestamp") or ""),
            raw=obj,
        )


def pod_scheduling_group(spec: Mapping[str, Any]) -> str | None:
    """``spec.schedulingGroup.podGroupName`` of a pod spec that has ``schedulingGroup``."""
    group = as_mapping(spec.get("schedulingGroup"), "spec.schedulingGroup")
    name = group.get("podGroupName")
    if name is None:
        return None
    if not isinstance(name, str):
        raise InputError(
            f"must be a string, got {type(name).__name__}", field="spec.schedulingGroup.podGroupName"
        )
    return name


def with_condition(conditions: Any, condition: Mapping[str, Any], stamp: str) -> list[dict[str, Any]] | None:
    """``conditions`` with ``condition`` set as apimachinery's ``meta.SetStatusCondition`` sets it:
    the one of its type takes the new reason, message and observedGeneration, and its
    lastTransitionTime moves (to ``condition``'s own, else ``stamp``) only when the status changes;
    a new type is appended. None when nothing would change."""
    out = [dict(c) for c in conditions or () if isinstance(c, Mapping)]
    for i, cond in enumerate(out):
        if cond.get("type") != condition.get("type"):
            continue
        new = dict(cond)
        if cond.get("status") != condition.get("status"):
            new["status"] = condition.get("status")
            new["lastTransitionTime"] = condition.get("lastTransitionTime") or stamp
        for key in ("reason", "message", "observedGeneration"):
            if condition.get(key) is not None:
                new[key] = condition[key]
            else:
                new.pop(key, None)
        if new == cond:
            return None
        out[i] = new
        return out
    out.append({**condition, "lastTransitionTime": condition.get("lastTransitionTime") or stamp})
    return out
