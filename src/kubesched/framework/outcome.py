"""What happened to each pod, for reports and explain output."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

SCHEDULED = "Scheduled"
UNSCHEDULABLE = "Unschedulable"
PENDING = "Pending"


@dataclass(slots=True)
class PodOutcome:
    namespace: str
    name: str
    uid: str
    node: str | None = None
    status: str = PENDING
    message: str = ""
    attempts: int = 0
    scheduler_name: str = ""
    #: True when no profile serves ``scheduler_name``: kubesched left the pod alone.
    no_profile: bool = False
    #: Filled only when explain is on: see :mod:`kubesched.scheduler.explain`.
    explain: dict[str, Any] | None = field(default=None)

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"
