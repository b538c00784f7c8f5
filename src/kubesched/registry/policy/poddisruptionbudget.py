"""PodDisruptionBudgets: a spec whose changes bump the generation, and a status subresource."""

from __future__ import annotations

from kubesched.registry.strategy import Resource, Strategy


class PodDisruptionBudgetStrategy(Strategy):
    generation = True


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
