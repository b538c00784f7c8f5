"""Pods parked at Permit (upstream ``waitingPod`` / ``waitingPodsMap``).

A Permit plugin that answers Wait keeps the pod assumed on its node until every waiting plugin
allows it, one of them rejects it, or a plugin's timeout passes (the timeout rejects it in that
plugin's name). Plugins reach waiting pods through the framework handle, e.g. a co-scheduling
plugin allows the whole group once its last member arrived.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

from kubesched.api.objects import Pod
from kubesched.framework.status import Code, Status

#: Upstream caps a Permit plugin's wait at 15 minutes.
MAX_PERMIT_TIMEOUT = 15 * 60.0


@dataclass(slots=True, eq=False)
class WaitingPod:
    pod: Pod
    node_name: str
    #: plugin → virtual/wall time at which that plugin's wait times out
    deadlines: dict[str, float]
    since: float
    rejection: Status | None = field(default=None)

    @property
    def pending(self) -> bool:
        return self.rejection is None and bool(self.deadlines)

    @property
    def pending_plugins(self) -> list[str]:
        return sorted(self.deadlines)

    def allow(self, plugin: str) -> None:
        self.deadlines.pop(plugin, None)

    def reject(self, plugin: str, message: str) -> None:
        if self.rejection is None:
            self.rejection = Status(Code.UNSCHEDULABLE, [message], plugin)
        self.deadlines.clear()

    def expire(self, now: float) -> None:
        """Reject in the name of the first plugin whose timeout has passed."""
        due = sorted((t, p) for p, t in self.deadlines.items() if t <= now)
        if due:
            deadline, plugin = due[0]
            waited = deadline - self.since
            self.reject(plugin, f"rejected due to timeout after waiting {waited:g}s at plugin {plugin}")


class WaitingPods:
    def __init__(self) -> None:
        self._pods: dict[str, WaitingPod] = {}

    def __len__(self) -> int:
        return len(self._pods)

    def __iter__(self) -> Iterator[WaitingPod]:
        return iter(list(self._pods.values()))

    def add(self, wp: WaitingPod) -> None:
        self._pods[wp.pod.uid] = wp

    def get(self, uid: str) -> WaitingPod | None:
        return self._pods.get(uid)

    def remove(self, uid: str) -> None:
        self._pods.pop(uid, None)

    def next_deadline(self) -> float | None:
        times = [t for wp in self._pods.values() if wp.pending for t in wp.deadlines.values()]
        return min(times) if times else None

    def expire(self, now: float) -> None:
        for wp in self._pods.values():
            if wp.pending:
                wp.expire(now)
