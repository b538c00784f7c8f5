"""A pod's ``spec.topologySpreadConstraints``, parsed and validated like the API server does.

Each constraint keeps what the PodTopologySpread plugin needs: ``maxSkew``, ``topologyKey``,
``whenUnsatisfiable``, the label selector (a missing selector selects no pods), ``minDomains``,
the node inclusion policies (``nodeAffinityPolicy`` defaults to Honor, ``nodeTaintsPolicy`` to
Ignore) and ``matchLabelKeys``. Problems raise :class:`~kubesched.errors.InputError` naming the
field, e.g. ``spec.topologySpreadConstraints[0].maxSkew``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from kubesched.api.fields import as_list, as_mapping
from kubesched.api.selectors import IN, LabelSelector, Requirement, qualified_name_error
from kubesched.errors import InputError

__all__ = [
    "DO_NOT_SCHEDULE",
    "FIELD",
    "HONOR",
    "IGNORE",
    "SCHEDULE_ANYWAY",
    "TopologySpreadConstraint",
    "parse_default_constraint",
    "parse_topology_spread_constraints",
]

FIELD: Final = "spec.topologySpreadConstraints"
DO_NOT_SCHEDULE: Final = "DoNotSchedule"
SCHEDULE_ANYWAY: Final = "ScheduleAnyway"
HONOR: Final = "Honor"
IGNORE: Final = "Ignore"

_ACTIONS: Final = (DO_NOT_SCHEDULE, SCHEDULE_ANYWAY)
_POLICIES: Final = (HONOR, IGNORE)
_FIELDS: Final = (
    "maxSkew",
    "topologyKey",
    "whenUnsatisfiable",
    "labelSelector",
    "minDomains",
    "nodeAffinityPolicy",
    "nodeTaintsPolicy",
    "matchLabelKeys",
)
_INT32_MAX: Final = 2**31 - 1


@dataclass(frozen=True, slots=True)
class TopologySpreadConstraint:
    """One ``v1.TopologySpreadConstraint`` with upstream's defaults applied."""

    max_skew: int
    topology_key: str
    when_unsatisfiable: str
    #: The constraint's ``labelSelector``; :meth:`LabelSelector.nothing` when it is absent.
    label_selector: LabelSelector
    #: ``minDomains``; None when unset (the plugin treats it as 1).
    min_domains: int | None = None
    node_affinity_policy: str = HONOR
    node_taints_policy: str = IGNORE
    match_label_keys: tuple[str, ...] = ()

    def selector_for(self, pod_labels: Mapping[str, str]) -> LabelSelector:
        """The selector the plugin counts with: ``labelSelector`` plus, for each ``matchLabelKeys``
        key the pod carries, ``key In (the pod's value)``. A missing selector stays one that
        selects nothing."""
        if not self.match_label_keys or self.label_selector.match_nothing:
            return self.label_selector
        extra = tuple(
            Requirement(key, IN, (pod_labels[key],)) for key in self.match_label_keys if key in pod_labels
        )
        if not extra:
            return self.label_selector
        return LabelSelector((*extra, *self.label_selector.requirements))


def _int(value: Any, field: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise InputError(f"must be an integer, got {value!r}", field=field)
    if value > _INT32_MAX:
        raise InputError(f"must be at most {_INT32_MAX}, got {value}", field=field)
    return value


def _policy(raw: Mapping[str, Any], key: str, default: str, field: str) -> str:
    value = raw.get(key)
    if value is None:
        return default
    if value not in _POLICIES:
        raise InputError(f"unsupported value {value!r}; use Honor or Ignore", field=f"{field}.{key}")
    return str(value)


def _parse_one(data: Any, field: str, *, default: bool = False) -> TopologySpreadConstraint:
    raw = as_mapping(data, field)
    for name in raw:
        if name not in _FIELDS:
            raise InputError(
                f"unknown field {name!r} (expected one of: {', '.join(_FIELDS)})", field=f"{field}.{name}"
            )
    if raw.get("maxSkew") is None:
        raise InputError("is required (an integer greater than 0)", field=f"{field}.maxSkew")
    max_skew = _int(raw.get("maxSkew"), f"{field}.maxSkew")
    if max_skew <= 0:
        raise InputError(f"must be greater than 0, got {max_skew}", field=f"{field}.maxSkew")
    key = raw.get("topologyKey")
    if not isinstance(key, str) or not key:
        raise InputError(
            "is required (a node label key such as topology.kubernetes.io/zone)", field=f"{field}.topologyKey"
        )
    if (why := qualified_name_error(key)) is not None:
        raise InputError(why, field=f"{field}.topologyKey")
    action = raw.get("whenUnsatisfiable")
    if action is None:
        raise InputError("is required: DoNotSchedule or ScheduleAnyway", field=f"{field}.whenUnsatisfiable")
    if action not in _ACTIONS:
        raise InputError(
            f"unsupported value {action!r}; use DoNotSchedule or ScheduleAnyway",
            field=f"{field}.whenUnsatisfiable",
        )
    raw_selector = raw.get("labelSelector")
    selector = LabelSelector.from_dict(
        None if raw_selector is None else as_mapping(raw_selector, f"{field}.labelSelector"),
        f"{field}.labelSelector",
    )
    min_domains: int | None = None
    if raw.get("minDomains") is not None:
        min_domains = _int(raw.get("minDomains"), f"{field}.minDomains")
        if min_domains <= 0:
            raise InputError(f"must be greater than 0, got {min_domains}", field=f"{field}.minDomains")
        if action != DO_NOT_SCHEDULE:
            raise InputError(
                f"can only be set when whenUnsatisfiable is DoNotSchedule, not {action}",
                field=f"{field}.minDomains",
            )
    keys: list[str] = []
    for i, mk in enumerate(as_list(raw.get("matchLabelKeys"), f"{field}.matchLabelKeys")):
        where = f"{field}.matchLabelKeys[{i}]"
        if not isinstance(mk, str):
            raise InputError(f"must be a string, got {type(mk).__name__}", field=where)
        if (why := qualified_name_error(mk)) is not None:
            raise InputError(why, field=where)
        keys.append(mk)
    if keys and raw_selector is None and not default:
        raise InputError("must not be set when labelSelector is not set", field=f"{field}.matchLabelKeys")
    return TopologySpreadConstraint(
        max_skew=max_skew,
        topology_key=key,
        when_unsatisfiable=str(action),
        label_selector=selector,
        min_domains=min_domains,
        node_affinity_policy=_policy(raw, "nodeAffinityPolicy", HONOR, field),
        node_taints_policy=_policy(raw, "nodeTaintsPolicy", IGNORE, field),
        match_label_keys=tuple(keys),
    )


def parse_default_constraint(raw: Any, field: str) -> TopologySpreadConstraint:
    """One of PodTopologySpreadArgs' ``defaultConstraints`` (already validated with the args): it has
    no selector of its own; the plugin gives it the pod's workload selector."""
    return _parse_one(raw, field, default=True)


def parse_topology_spread_constraints(raw: Any, field: str = FIELD) -> tuple[TopologySpreadConstraint, ...]:
    """Parse a ``topologySpreadConstraints`` list; a ``topologyKey``/``whenUnsatisfiable`` pair may
    appear only once, as the API server demands."""
    out: list[TopologySpreadConstraint] = []
    seen: set[tuple[str, str]] = set()
    for i, item in enumerate(as_list(raw, field)):
        where = f"{field}[{i}]"
        constraint = _parse_one(item, where)
        pair = (constraint.topology_key, constraint.when_unsatisfiable)
        if pair in seen:
            raise InputError(
                f"duplicate constraint for topologyKey {pair[0]!r} and whenUnsatisfiable {pair[1]!r}",
                field=f"{where}.{{topologyKey, whenUnsatisfiable}}",
            )
        seen.add(pair)
        out.append(constraint)
    return tuple(out)
