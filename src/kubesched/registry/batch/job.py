"""Jobs: validated through their pod template, ``spec.parallelism`` as their replica count."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubesched.registry.podtemplate import PodTemplateStrategy
from kubesched.registry.strategy import AGE, NAME, Column, Resource, Row, age, meta_of


class JobStrategy(PodTemplateStrategy):
    replicas_field = "parallelism"
    columns: tuple[Column, ...] = (NAME, ("Status", "string", 0), ("Completions", "string", 0), AGE)

    def row(self, obj: Mapping[str, Any], now: float) -> Row:
        spec, status = obj.get("spec") or {}, obj.get("status") or {}
        complete = any(c.get("type") == "Complete" for c in status.get("conditions") or [])
        return [
            meta_of(obj).get("name"),
            "Complete" if complete else "Running",
            f"{status.get('succeeded', 0)}/{spec.get('completions', 1)}",
            age(meta_of(obj).get("creationTimestamp"), now),
        ]


STRATEGY = JobStrategy(Resource("batch", "v1", "jobs", "job", "Job", True, (), ("status",), ("all",)))
