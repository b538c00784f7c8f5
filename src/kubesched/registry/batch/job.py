"""Jobs: validated through their pod template, ``spec.parallelism`` as their replica count."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from kubesched.api.job_rules import job_spec_causes, job_update_causes
from kubesched.registry.errors import invalid
from kubesched.registry.podtemplate import PodTemplateStrategy
from kubesched.registry.strategy import AGE, NAME, Column, Resource, Row, age, human_duration, meta_of
from kubesched.store.base import ClusterStore, Obj

#: Upstream ``printJob``'s STATUS: the first of these conditions that is True.
_STATUS_ORDER = (
    ("Complete", "Complete"),
    ("Failed", "Failed"),
    ("Suspended", "Suspended"),
    ("FailureTarget", "FailureTarget"),
    ("SuccessCriteriaMet", "SuccessCriteriaMet"),
)


def _true(status: Mapping[str, Any], kind: str) -> bool:
    return any(
        isinstance(c, dict) and c.get("type") == kind and c.get("status") == "True"
        for c in status.get("conditions") or []
    )


class JobStrategy(PodTemplateStrategy):
    replicas_field = "parallelism"
    columns: tuple[Column, ...] = (
        NAME,
        ("Status", "string", 0),
        ("Completions", "string", 0),
        ("Duration", "string", 0),
        AGE,
    )

    def defaults(self, obj: dict[str, Any]) -> None:
        """Upstream's ``SetDefaults_Job`` (batch/v1)."""
        spec = obj.get("spec")
        if not isinstance(spec, dict):
            return
        if spec.get("completions") is None and spec.get("parallelism") is None:
            spec["completions"] = 1
            spec["parallelism"] = 1
        spec.setdefault("parallelism", 1)
        if spec.get("backoffLimit") is None:
            spec["backoffLimit"] = 2**31 - 1 if spec.get("backoffLimitPerIndex") is not None else 6
        spec.setdefault("completionMode", "NonIndexed")
        spec.setdefault("suspend", False)
        if spec.get("podReplacementPolicy") is None:
            spec["podReplacementPolicy"] = "Failed" if spec.get("podFailurePolicy") else "TerminatingOrFailed"

    def prepare_for_update(self, old: Obj, new: dict[str, Any]) -> None:
        # Every write is read with the defaults, as upstream decodes each body.
        self.defaults(new)
        super().prepare_for_update(old, new)

    def validate(self, body: dict[str, Any]) -> None:
        spec = body.get("spec")
        causes = job_spec_causes(spec) if isinstance(spec, dict) else []
        if causes:
            raise invalid("Job", "batch", str(body["metadata"].get("name", "")), causes)
        super().validate(body)

    def allocate(self, store: ClusterStore, old: Obj | None, new: dict[str, Any]) -> None:
        if old is None:
            return
        causes = job_update_causes(old.get("spec") or {}, new.get("spec") or {})
        if causes:
            raise invalid("Job", "batch", str(new["metadata"].get("name", "")), causes)

    def row(self, obj: Mapping[str, Any], now: float) -> Row:
        """Upstream ``printJob``."""
        spec, status = obj.get("spec") or {}, obj.get("status") or {}
        state = next((name for kind, name in _STATUS_ORDER[:2] if _true(status, kind)), None)
        if state is None and meta_of(obj).get("deletionTimestamp"):
            state = "Terminating"
        if state is None:
            state = next((name for kind, name in _STATUS_ORDER[2:] if _true(status, kind)), "Running")
        succeeded = status.get("succeeded", 0)
        if spec.get("completions") is not None:
            completions = f"{succeeded}/{spec['completions']}"
        else:
            parallelism = spec.get("parallelism") or 0
            completions = f"{succeeded}/1 of {parallelism}" if parallelism > 1 else f"{succeeded}/1"
        return [
            meta_of(obj).get("name"),
            state,
            completions,
            _duration(status, now),
            age(meta_of(obj).get("creationTimestamp"), now),
        ]


def _duration(status: Mapping[str, Any], now: float) -> str:
    start = _seconds(status.get("startTime"))
    if start is None:
        return ""
    end = _seconds(status.get("completionTime"))
    return human_duration(max(0.0, (now if end is None else end) - start))


def _seconds(stamp: Any) -> float | None:
    if not stamp:
        return None
    try:
        return datetime.strptime(str(stamp)[:19], "%Y-%m-%dT%H:%M:%S").replace(tzinfo=UTC).timestamp()
    except ValueError:
        return None


STRATEGY = JobStrategy(Resource("batch", "v1", "jobs", "job", "Job", True, (), ("status",), ("all",)))
