"""PodDisruptionBudgets: a spec whose changes bump the generation, a status subresource (the
disruption controller's), and kubectl's columns."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubesched.registry.strategy import AGE, NAME, Column, Resource, Row, Strategy, age, meta_of


class PodDisruptionBudgetStrategy(Strategy):
    generation = True
    columns: tuple[Column, ...] = (
        NAME,
        ("Min Available", "string", 0),
        ("Max Unavailable", "string", 0),
        ("Allowed Disruptions", "integer", 0),
        AGE,
    )

    def row(self, obj: Mapping[str, Any], now: float) -> Row:
        spec, status = obj.get("spec") or {}, obj.get("status") or {}
        return [
            meta_of(obj).get("name"),
            str(spec["minAvailable"]) if spec.get("minAvailable") is not None else "N/A",
            str(spec["maxUnavailable"]) if spec.get("maxUnavailable") is not None else "N/A",
            status.get("disruptionsAllowed", 0),
            age(meta_of(obj).get("creationTimestamp"), now),
        ]


STRATEGY = PodDisruptionBudgetStrategy(
    Resource(
        "policy",
        "v1",
        "poddisruptionbudgets",
        "poddisruptionbudget",
        "PodDisruptionBudget",
        True,
        ("pdb",),
        ("status",),
    )
)
