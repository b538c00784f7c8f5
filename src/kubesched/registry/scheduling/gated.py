"""What a disabled feature gate hides of a PodGroup's spec or a Workload's pod group template:
dropped from a write, as upstream's ``dropDisabled…Fields``, unless the stored object already uses
it (a gate turned off keeps what was made while it was on)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubesched.api.features import (
    DEFAULT_FEATURE_GATES,
    DRA_WORKLOAD_RESOURCE_CLAIMS,
    TOPOLOGY_AWARE_WORKLOAD_SCHEDULING,
    WORKLOAD_AWARE_PREEMPTION,
)

#: Gate → the fields of a group's spec it hides when off.
_GATED_FIELDS: tuple[tuple[str, tuple[str, ...]], ...] = (
    (TOPOLOGY_AWARE_WORKLOAD_SCHEDULING, ("schedulingConstraints",)),
    (DRA_WORKLOAD_RESOURCE_CLAIMS, ("resourceClaims",)),
    (WORKLOAD_AWARE_PREEMPTION, ("disruptionMode", "priorityClassName", "priority")),
)


def drop_disabled_group_fields(spec: dict[str, Any], old: Mapping[str, Any] | None = None) -> None:
    """Drop from ``spec`` the fields whose gate is off, unless ``old`` (the stored spec) has them."""
    for gate, fields in _GATED_FIELDS:
        if DEFAULT_FEATURE_GATES.enabled(gate):
            continue
        for key in fields:
            if old is None or not old.get(key):
                spec.pop(key, None)
