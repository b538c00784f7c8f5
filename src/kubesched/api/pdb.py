"""PodDisruptionBudget (``policy/v1``) as preemption reads it.

Preemption tries not to evict pods whose budget has no disruptions left. A budget's
``status.disruptionsAllowed`` is used when the manifest gives it (a budget exported from a live
cluster); otherwise it is computed the way the disruption controller does, from the budget's pods in
the embedded cluster: ``currentHealthy - desiredHealthy`` (never below 0), where healthy pods are the
matching pods bound to a node and still running, and desiredHealthy comes from ``minAvailable`` or
``expectedCount - maxUnavailable``. The controller takes ``expectedCount`` for percentages and
``maxUnavailable`` from the pods' controllers' scale; kubesched counts the matching pods (bound or
pending) instead. ``kubesched serve``'s disruption controller (:mod:`kubesched.controllers.disruption`)
writes the same numbers into each budget's status.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from kubesched.api.fields import as_int, as_mapping, object_name
from kubesched.api.selectors import LabelSelector
from kubesched.errors import InputError

API_VERSIONS = ("policy/v1",)

_PERCENT = re.compile(r"^(\d+)%$")

IntOrPercent = int | str


def _int_or_percent(value: Any, field: str) -> IntOrPercent | None:
    if value is None:
        return None
    if isinstance(value, bool):
        raise InputError(f"must be an integer or a percentage, got {value!r}", field=field)
    if isinstance(value, int):
        if value < 0:
            raise InputError(f"must be greater than or equal to 0, got {value}", field=field)
        return as_int(value, field)
    if isinstance(value, str):
        m = _PERCENT.match(value)
        if m is None:
            raise InputError(f"must be an integer or a percentage like '50%', got {value!r}", field=field)
        if int(m.group(1)) > 100:
            raise InputError(f"must not be greater than 100%, got {value!r}", field=field)
        return value
    raise InputError(f"must be an integer or a percentage, got {type(value).__name__}", field=field)


def scaled_value(value: IntOrPercent, total: int) -> int:
    """Upstream ``intstr.GetScaledValueFromIntOrPercent(value, total, roundUp=true)``."""
    if isinstance(value, int):
        return value
    return math.ceil(int(value[:-1]) * total / 100)


@dataclass(frozen=True, slots=True)
class PodDisruptionBudget:
    namespace: str
    name: str
    #: ``spec.selector``; a missing or empty selector matches no pod (as preemption treats it).
    selector: LabelSelector
    min_available: IntOrPercent | None
    max_unavailable: IntOrPercent | None
    #: ``status.disruptionsAllowed`` when the manifest gives it.
    status_disruptions_allowed: int | None
    #: ``status.disruptedPods``: pods the API server already counted as disrupted.
    disrupted_pods: frozenset[str]

    @classmethod
    def from_dict(cls, obj: Mapping[str, Any]) -> PodDisruptionBudget:
        meta = as_mapping(obj.get("metadata"), "metadata")
        spec = as_mapping(obj.get("spec"), "spec")
        status = as_mapping(obj.get("status"), "status")
        name = object_name(meta)
        namespace = meta.get("namespace") or "default"
        if not isinstance(namespace, str):
            raise InputError("namespace must be a string", field="metadata.namespace")
        raw_selector = spec.get("selector")
        selector = None
        if raw_selector is not None:
            selector = LabelSelector.from_dict(raw_selector, "spec.selector")
        min_available = _int_or_percent(spec.get("minAvailable"), "spec.minAvailable")
        max_unavailable = _int_or_percent(spec.get("maxUnavailable"), "spec.maxUnavailable")
        if min_available is not None and max_unavailable is not None:
            raise InputError("minAvailable and maxUnavailable cannot be both set", field="spec")
        if min_available is None and max_unavailable is None:
            min_available = 1  # API defaulting
        allowed = status.get("disruptionsAllowed")
        if allowed is not None:
            allowed = as_int(allowed, "status.disruptionsAllowed")
        disrupted = as_mapping(status.get("disruptedPods"), "status.disruptedPods")
        return cls(
            namespace=namespace,
            name=name,
            selector=selector if selector is not None and not selector.is_empty else LabelSelector.nothing(),
            min_available=min_available,
            max_unavailable=max_unavailable,
            status_disruptions_allowed=allowed,
            disrupted_pods=frozenset(str(k) for k in disrupted),
        )

    def matches(self, namespace: str, labels: Mapping[str, str]) -> bool:
        """Does the budget cover a pod with these labels? (A pod without labels never matches.)"""
        return namespace == self.namespace and bool(labels) and self.selector.matches(labels)

    def disruptions_allowed(self, pods: Iterable[Mapping[str, Any]]) -> int:
        """``status.disruptionsAllowed`` if given, else computed from the cluster's pods (API objects)."""
        if self.status_disruptions_allowed is not None:
            return self.status_disruptions_allowed
        expected = 0
        healthy = 0
        for obj in pods:
            standing = budget_standing(obj)
            if standing is None or not self.matches(standing[0], standing[1]):
                continue
            expected += 1
            healthy += int(standing[2])
        return self.allowed_from_counts(expected, healthy)

    def desired_healthy(self, expected: int) -> int:
        """How many of ``expected`` counted pods must stay healthy (the disruption controller's
        ``desiredHealthy``)."""
        if self.max_unavailable is not None:
            return max(expected - scaled_value(self.max_unavailable, expected), 0)
        assert self.min_available is not None
        return scaled_value(self.min_available, expected)

    def allowed_from_counts(self, expected: int, healthy: int) -> int:
        """Disruptions allowed with ``expected`` counted pods of which ``healthy`` are bound (the
        disruption controller's ``currentHealthy - desiredHealthy``, never below 0)."""
        allowed = healthy - self.desired_healthy(expected)
        return allowed if expected > 0 and allowed > 0 else 0


def budget_standing(obj: Mapping[str, Any]) -> tuple[str, Mapping[str, str], bool] | None:
    """How a pod (API object) counts towards the budgets that cover it: ``(namespace, labels, healthy)``
    where healthy means bound to a node; None for a pod that counts nowhere (finished or being
    deleted)."""
    meta = obj.get("metadata") or {}
    phase = (obj.get("status") or {}).get("phase")
    if phase in ("Succeeded", "Failed") or meta.get("deletionTimestamp"):
        return None
    healthy = bool((obj.get("spec") or {}).get("nodeName"))
    return meta.get("namespace") or "default", meta.get("labels") or {}, healthy
