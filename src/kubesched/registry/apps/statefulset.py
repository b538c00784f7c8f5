"""StatefulSets: a spec whose changes bump the generation, scaled through ``/scale``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubesched.registry.strategy import AGE, NAME, Column, Resource, Row, Strategy, age, meta_of
from kubesched.store.base import Obj


class StatefulSetStrategy(Strategy):
    generation = True
    columns: tuple[Column, ...] = (NAME, ("Ready", "string", 0), AGE)

    def defaults(self, obj: dict[str, Any]) -> None:
        """Upstream's ``SetDefaults_StatefulSet`` (apps/v1)."""
        spec = obj.get("spec")
        if not isinstance(spec, dict):
            return
        spec.setdefault("replicas", 1)
        spec.setdefault("podManagementPolicy", "OrderedReady")
        strategy = spec.setdefault("updateStrategy", {})
        if isinstance(strategy, dict):
            if not strategy.get("type"):
                strategy["type"] = "RollingUpdate"
                strategy.setdefault("rollingUpdate", {})
            rolling = strategy.get("rollingUpdate")
            if strategy["type"] == "RollingUpdate" and isinstance(rolling, dict):
                rolling.setdefault("partition", 0)
        spec.setdefault("revisionHistoryLimit", 10)
        retention = spec.setdefault("persistentVolumeClaimRetentionPolicy", {})
        if isinstance(retention, dict):
            retention.setdefault("whenDeleted", "Retain")
            retention.setdefault("whenScaled", "Retain")

    def prepare_for_update(self, old: Obj, new: dict[str, Any]) -> None:
        # Every write is read with the defaults, as upstream decodes each body.
        self.defaults(new)
        super().prepare_for_update(old, new)

    def row(self, obj: Mapping[str, Any], now: float) -> Row:
        spec, status = obj.get("spec") or {}, obj.get("status") or {}
        return [
            meta_of(obj).get("name"),
            f"{status.get('readyReplicas', 0)}/{spec.get('replicas', 1)}",
            age(meta_of(obj).get("creationTimestamp"), now),
        ]


STRATEGY = StatefulSetStrategy(
    Resource(
        "apps",
        "v1",
        "statefulsets",
        "statefulset",
        "StatefulSet",
        True,
        ("sts",),
        ("status", "scale"),
        ("all",),
    )
)
