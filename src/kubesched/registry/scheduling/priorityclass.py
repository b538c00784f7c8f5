"""PriorityClasses: a value and a preemption policy at the top level, no spec."""

from __future__ import annotations

from kubesched.registry.strategy import Resource, Strategy


class PriorityClassStrategy(Strategy):
    top_fields = frozenset({"value", "globalDefault", "description", "preemptionPolicy"})


STRATEGY = PriorityClassStrategy(
    Resource("scheduling.k8s.io", "v1", "priorityclasses", "priorityclass", "PriorityClass", False, ("pc",))
)
