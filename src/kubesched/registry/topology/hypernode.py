"""Volcano HyperNodes (cluster-scoped): a network domain's spec and the columns of Volcano's CRD
(``Tier``, ``TierName``, ``NodeCount``, ``Age``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubesched.registry.strategy import AGE, NAME, Column, Resource, Row, Strategy, age, meta_of


class HyperNodeStrategy(Strategy):
    generation = True
    columns: tuple[Column, ...] = (
        NAME,
        ("Tier", "string", 0),
        ("TierName", "string", 0),
        ("NodeCount", "integer", 0),
        AGE,
    )

    def row(self, obj: Mapping[str, Any], now: float) -> Row:
        spec, status = obj.get("spec") or {}, obj.get("status") or {}
        tier = spec.get("tier")
        return [
            meta_of(obj).get("name"),
            "" if tier is None else str(tier),
            spec.get("tierName", ""),
            status.get("nodeCount"),
            age(meta_of(obj).get("creationTimestamp"), now),
        ]


STRATEGY = HyperNodeStrategy(
    Resource(
        "topology.volcano.sh",
        "v1alpha1",
        "hypernodes",
        "hypernode",
        "HyperNode",
        False,
        ("hn",),
        ("status",),
    )
)
