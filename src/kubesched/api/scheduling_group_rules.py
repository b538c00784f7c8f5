"""The API server's rules for the workload API of ``scheduling.k8s.io`` (v1alpha2, Kubernetes 1.36):
``pkg/apis/scheduling/validation`` and the declarative tags of the v1alpha2 types, as located
causes (:mod:`kubesched.api.field_errors`) so that one 422 names every broken field.

What a disabled feature gate hides is dropped before these rules run (the registry's strategy,
as upstream's ``dropDisabled…Fields``): the rules check what is left.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Final

from kubesched.api.field_errors import (
    Cause,
    duplicate,
    immutable,
    invalid,
    not_supported,
    required,
    too_long,
    too_many,
)
from kubesched.api.resource_rules import (
    dns1123_label_errors,
    dns1123_subdomain_errors,
    qualified_name_errors,
)
from kubesched.api.scheduling_groups import (
    DISRUPTION_MODES,
    MAX_POD_GROUP_RESOURCE_CLAIMS,
    MAX_POD_GROUP_TEMPLATES,
)

#: scheduling.HighestUserDefinablePriority: the most a priority may be.
HIGHEST_USER_DEFINABLE_PRIORITY: Final = 1_000_000_000
#: metav1 condition limits.
_MAX_REASON: Final = 1024
_MAX_MESSAGE: Final = 32 * 1024
_REASON_FMT: Final = "[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?"
_REASON: Final = re.compile(_REASON_FMT)
_REASON_MESSAGE: Final = (
    "a condition reason must start with alphabetic character, optionally followed by a string of "
    "alphanumeric characters or '_,:', and must end with an alphanumeric character or '_' "
    f"(e.g. 'my_name',  or 'MY_NAME',  or 'MyName',  or 'ReasonA,ReasonB',  or 'ReasonA:ReasonB', "
    f"regex used for validation is '{_REASON_FMT}')"
)
_CONDITION_STATUSES: Final = ("True", "False", "Unknown")
_ONE_POLICY: Final = "must specify one of: `basic`, `gang`"
_MANY_POLICIES: Final = "exactly one of `basic`, `gang` is required, but multiple fields are set"


def _m(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _l(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _s(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _each(path: str, value: str, messages: list[str]) -> list[Cause]:
    return [invalid(path, value, msg) for msg in messages]


def _path_segment_errors(value: str) -> list[str]:
    """apimachinery's ``IsValidPathSegmentName``."""
    if value in (".", ".."):
        return [f"may not be '{value}'"]
    return [f"may not contain '{c}'" for c in ("/", "%") if c in value]


def _short_name(path: str, value: Any) -> list[Cause]:
    """A required DNS label (``k8s-short-name``): "" is missing."""
    if not _s(value):
        return [required(path)]
    return _each(path, value, dns1123_label_errors(value))


def _long_name(path: str, value: Any) -> list[Cause]:
    """A required DNS subdomain (``k8s-long-name``): "" is missing."""
    if not _s(value):
        return [required(path)]
    return _each(path, value, dns1123_subdomain_errors(value))


# -- shared parts ----------------------------------------------------------------------------------
def scheduling_policy_errors(data: Any, path: str) -> list[Cause]:
    """``schedulingPolicy``: exactly one of basic and gang; a gang's minCount at least 1."""
    policy = _m(data)
    basic, gang = policy.get("basic"), policy.get("gang")
    if basic is None and gang is None:
        return [invalid(path, "", _ONE_POLICY)]
    if basic is not None and gang is not None:
        return [invalid(path, "{`basic`, `gang`}", _MANY_POLICIES)]
    if gang is None:
        return []
    min_count = _m(gang).get("minCount")
    where = f"{path}.gang.minCount"
    if min_count is None or min_count == 0:
        return [required(where)]
    if isinstance(min_count, int) and min_count < 0:
        return [invalid(where, min_count, "must be greater than zero")]
    return []


def scheduling_constraints_errors(data: Any, path: str) -> list[Cause]:
    """``schedulingConstraints.topology``: at most one constraint, each with a label key."""
    topology = _l(_m(data).get("topology"))
    where = f"{path}.topology"
    if len(topology) > 1:
        return [too_many(where, len(topology), 1)]
    out: list[Cause] = []
    for i, item in enumerate(topology):
        key = _s(_m(item).get("key"))
        if not key:
            out.append(required(f"{where}[{i}].key"))
        else:
            out += _each(f"{where}[{i}].key", key, qualified_name_errors(key))
    return out


def resource_claims_errors(data: Any, path: str) -> list[Cause]:
    """``resourceClaims``: at most four, unique DNS-label names, each naming exactly one of a claim
    and a claim template."""
    claims = _l(data)
    if len(claims) > MAX_POD_GROUP_RESOURCE_CLAIMS:
        return [too_many(path, len(claims), MAX_POD_GROUP_RESOURCE_CLAIMS)]
    out: list[Cause] = []
    seen: set[str] = set()
    for i, item in enumerate(claims):
        claim, where = _m(item), f"{path}[{i}]"
        name = _s(claim.get("name"))
        out += _short_name(f"{where}.name", name)
        if name and name in seen:
            out.append(duplicate(f"{where}.name", name))
        seen.add(name)
        by_name, by_template = claim.get("resourceClaimName"), claim.get("resourceClaimTemplateName")
        if (by_name is None) == (by_template is None):
            out.append(
                invalid(
                    where,
                    "",
                    "must specify one of: `resourceClaimName`, `resourceClaimTemplateName`"
                    if by_name is None
                    else "exactly one of `resourceClaimName`, `resourceClaimTemplateName` is required, "
                    "but multiple fields are set",
                )
            )
        for key, value in (("resourceClaimName", by_name), ("resourceClaimTemplateName", by_template)):
            if value is not None:
                out += _long_name(f"{where}.{key}", value)
    return out


def _priority_errors(spec: Mapping[str, Any], path: str) -> list[Cause]:
    out: list[Cause] = []
    mode = spec.get("disruptionMode")
    if mode is not None and mode not in DISRUPTION_MODES:
        out.append(not_supported(f"{path}.disruptionMode", mode, DISRUPTION_MODES))
    name = _s(spec.get("priorityClassName"))
    if name:
        out += _each(f"{path}.priorityClassName", name, dns1123_subdomain_errors(name))
    priority = spec.get("priority")
    if isinstance(priority, int) and priority > HIGHEST_USER_DEFINABLE_PRIORITY:
        out.append(
            invalid(
                f"{path}.priority",
                priority,
                f"must be less than or equal to {HIGHEST_USER_DEFINABLE_PRIORITY}",
            )
        )
    return out


def _group_spec_errors(spec: Mapping[str, Any], path: str) -> list[Cause]:
    """What a PodGroupTemplate and a PodGroup's spec share."""
    out = scheduling_policy_errors(spec.get("schedulingPolicy"), f"{path}.schedulingPolicy")
    if spec.get("schedulingConstraints") is not None:
        out += scheduling_constraints_errors(spec["schedulingConstraints"], f"{path}.schedulingConstraints")
    if spec.get("resourceClaims") is not None:
        out += resource_claims_errors(spec["resourceClaims"], f"{path}.resourceClaims")
    return out + _priority_errors(spec, path)


# -- Workload --------------------------------------------------------------------------------------
def _controller_ref_errors(data: Any, path: str) -> list[Cause]:
    ref = _m(data)
    out: list[Cause] = []
    group = _s(ref.get("apiGroup"))
    if group:
        out += _each(f"{path}.apiGroup", group, dns1123_subdomain_errors(group))
    for key in ("kind", "name"):
        value = _s(ref.get(key))
        if not value:
            out.append(required(f"{path}.{key}"))
        else:
            out += _each(f"{path}.{key}", value, _path_segment_errors(value))
    return out


def _templates_errors(spec: Mapping[str, Any]) -> list[Cause]:
    templates = _l(spec.get("podGroupTemplates"))
    path = "spec.podGroupTemplates"
    if not templates:
        return [required(path, "must have at least one item")]
    if len(templates) > MAX_POD_GROUP_TEMPLATES:
        return [too_many(path, len(templates), MAX_POD_GROUP_TEMPLATES)]
    out: list[Cause] = []
    seen: set[str] = set()
    for i, item in enumerate(templates):
        tpl, where = _m(item), f"{path}[{i}]"
        name = _s(tpl.get("name"))
        out += _short_name(f"{where}.name", name)
        if name in seen:
            out.append(duplicate(where, name))
        seen.add(name)
        out += _group_spec_errors(tpl, where)
    return out


def workload_errors(obj: Mapping[str, Any]) -> list[Cause]:
    """``ValidateWorkload`` (the spec; metadata is checked for every kind alike)."""
    spec = _m(obj.get("spec"))
    out: list[Cause] = []
    if spec.get("controllerRef") is not None:
        out += _controller_ref_errors(spec["controllerRef"], "spec.controllerRef")
    return out + _templates_errors(spec)


def workload_update_errors(new: Mapping[str, Any], old: Mapping[str, Any]) -> list[Cause]:
    """``ValidateWorkloadUpdate``: a controllerRef, once set, and the templates may not change."""
    spec, old_spec = _m(new.get("spec")), _m(old.get("spec"))
    out: list[Cause] = []
    ref, old_ref = spec.get("controllerRef"), old_spec.get("controllerRef")
    if old_ref is not None:
        if ref != old_ref:
            out.append(immutable("spec.controllerRef", ref))
    elif ref is not None:
        out += _controller_ref_errors(ref, "spec.controllerRef")
    templates = spec.get("podGroupTemplates")
    if templates != old_spec.get("podGroupTemplates"):
        out.append(immutable("spec.podGroupTemplates", templates))
    return out


# -- PodGroup --------------------------------------------------------------------------------------
def _template_ref_errors(data: Any, path: str) -> list[Cause]:
    ref = _m(data)
    workload = ref.get("workload")
    if workload is None:
        return [invalid(path, "", "must specify one of: `workload`")]
    where = f"{path}.workload"
    w = _m(workload)
    return _long_name(f"{where}.workloadName", w.get("workloadName")) + _short_name(
        f"{where}.podGroupTemplateName", w.get("podGroupTemplateName")
    )


def pod_group_errors(obj: Mapping[str, Any]) -> list[Cause]:
    """``ValidatePodGroup`` (the spec)."""
    spec = _m(obj.get("spec"))
    out: list[Cause] = []
    if spec.get("podGroupTemplateRef") is not None:
        out += _template_ref_errors(spec["podGroupTemplateRef"], "spec.podGroupTemplateRef")
    return out + _group_spec_errors(spec, "spec")


#: The fields of a PodGroup's spec an update may not change (all of them).
_POD_GROUP_IMMUTABLE: Final = (
    "podGroupTemplateRef",
    "schedulingPolicy",
    "schedulingConstraints",
    "resourceClaims",
    "disruptionMode",
    "priorityClassName",
    "priority",
)


def pod_group_update_errors(new: Mapping[str, Any], old: Mapping[str, Any]) -> list[Cause]:
    """``ValidatePodGroupUpdate``: the spec is immutable (and still valid)."""
    spec, old_spec = _m(new.get("spec")), _m(old.get("spec"))
    out = [
        immutable(f"spec.{key}", spec.get(key))
        for key in _POD_GROUP_IMMUTABLE
        if spec.get(key) != old_spec.get(key)
    ]
    return out or pod_group_errors(new)


def conditions_errors(data: Any, path: str) -> list[Cause]:
    """apimachinery's ``ValidateConditions``: each condition complete and well formed, one per type."""
    out: list[Cause] = []
    seen: set[str] = set()
    for i, item in enumerate(_l(data)):
        cond, where = _m(item), f"{path}[{i}]"
        ctype = _s(cond.get("type"))
        if not ctype:
            out.append(required(f"{where}.type", "must be set"))
        else:
            out += _each(f"{where}.type", ctype, qualified_name_errors(ctype))
            if ctype in seen:
                out.append(duplicate(f"{where}.type", ctype))
            seen.add(ctype)
        status = _s(cond.get("status"))
        if not status:
            out.append(required(f"{where}.status", "must be set"))
        elif status not in _CONDITION_STATUSES:
            out.append(not_supported(f"{where}.status", status, _CONDITION_STATUSES))
        generation = cond.get("observedGeneration")
        if isinstance(generation, int) and generation < 0:
            out.append(
                invalid(f"{where}.observedGeneration", generation, "must be greater than or equal to zero")
            )
        if not _s(cond.get("lastTransitionTime")):
            out.append(required(f"{where}.lastTransitionTime", "must be set"))
        reason = _s(cond.get("reason"))
        if not reason:
            out.append(required(f"{where}.reason", "must be set"))
        else:
            if not _REASON.fullmatch(reason):
                out.append(invalid(f"{where}.reason", reason, _REASON_MESSAGE))
            if len(reason) > _MAX_REASON:
                out.append(too_long(f"{where}.reason", _MAX_REASON))
        if len(_s(cond.get("message"))) > _MAX_MESSAGE:
            out.append(too_long(f"{where}.message", _MAX_MESSAGE))
    return out


def pod_group_status_errors(obj: Mapping[str, Any]) -> list[Cause]:
    """``ValidatePodGroupStatusUpdate``: the conditions, and claim statuses naming the spec's claims."""
    status = _m(obj.get("status"))
    out = conditions_errors(status.get("conditions"), "status.conditions")
    claims = {_s(_m(c).get("name")) for c in _l(_m(obj.get("spec")).get("resourceClaims"))}
    for i, item in enumerate(_l(status.get("resourceClaimStatuses"))):
        name = _s(_m(item).get("name"))
        if name not in claims:
            out.append(
                invalid(
                    f"status.resourceClaimStatuses[{i}].name",
                    name,
                    "must match the name of an entry in `spec.resourceClaims`",
                )
            )
    return out
