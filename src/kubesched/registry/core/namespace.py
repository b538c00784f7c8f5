"""Namespaces: named by DNS labels, Active with the ``kubernetes`` finalizer from the start."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from kubesched.registry.strategy import AGE, NAME, Column, Resource, Row, Strategy, age, meta_of

_DNS_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")


class NamespaceStrategy(Strategy):
    columns: tuple[Column, ...] = (NAME, ("Status", "string", 0), AGE)
    field_paths = frozenset({"status.phase"})

    def name_valid(self, name: str) -> bool:
        return len(name) <= 253 and _DNS_LABEL.fullmatch(name) is not None

    def defaults(self, obj: dict[str, Any]) -> None:
        obj.setdefault("status", {})
        if isinstance(obj["status"], dict):
            obj["status"].setdefault("phase", "Active")
        obj.setdefault("spec", {"finalizers": ["kubernetes"]})

    def row(self, obj: Mapping[str, Any], now: float) -> Row:
        return [
            meta_of(obj).get("name"),
            (obj.get("status") or {}).get("phase", "Active"),
            age(meta_of(obj).get("creationTimestamp"), now),
        ]


STRATEGY = NamespaceStrategy(
    Resource("", "v1", "namespaces", "namespace", "Namespace", False, ("ns",), ("status",))
)
