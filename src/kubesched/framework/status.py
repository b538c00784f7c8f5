"""Plugin status codes, as in the upstream scheduling framework."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import IntEnum


class Code(IntEnum):
    SUCCESS = 0
    ERROR = 1
    UNSCHEDULABLE = 2
    UNSCHEDULABLE_AND_UNRESOLVABLE = 3
    WAIT = 4
    SKIP = 5
    PENDING = 6


@dataclass(slots=True)
class Status:
    """Result of one plugin call. ``None`` and ``Status(SUCCESS)`` both mean success."""

    code: Code = Code.SUCCESS
    reasons: list[str] = field(default_factory=list)
    plugin: str = ""

    @classmethod
    def success(cls) -> Status:
        return cls(Code.SUCCESS)

    @classmethod
    def unschedulable(cls, *reasons: str, unresolvable: bool = False, plugin: str = "") -> Status:
        code = Code.UNSCHEDULABLE_AND_UNRESOLVABLE if unresolvable else Code.UNSCHEDULABLE
        return cls(code, list(reasons), plugin)

    @classmethod
    def error(cls, message: str, plugin: str = "") -> Status:
        return cls(Code.ERROR, [message], plugin)

    @property
    def ok(self) -> bool:
        return self.code == Code.SUCCESS

    @property
    def is_rejected(self) -> bool:
        return self.code in (Code.UNSCHEDULABLE, Code.UNSCHEDULABLE_AND_UNRESOLVABLE, Code.PENDING)

    @property
    def message(self) -> str:
        return ", ".join(self.reasons)


def is_success(status: Status | None) -> bool:
    return status is None or status.code == Code.SUCCESS
