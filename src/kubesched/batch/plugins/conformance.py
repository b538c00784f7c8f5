"""conformance: never evict kube-system or system-critical pods (Volcano ``plugins/conformance``)."""

from __future__ import annotations

from kubesched.batch.conf import PluginOption
from kubesched.batch.job_info import PERMIT, TaskInfo
from kubesched.batch.session import Session

CRITICAL_CLASSES = frozenset({"system-cluster-critical", "system-node-critical"})
SYSTEM_NAMESPACE = "kube-system"


def evictable(tasks: list[TaskInfo]) -> list[TaskInfo]:
    return [
        t
        for t in tasks
        if t.pod.priority_class_name not in CRITICAL_CLASSES and t.namespace != SYSTEM_NAMESPACE
    ]


class ConformancePlugin:
    name = "conformance"

    def __init__(self, option: PluginOption) -> None:
        self.option = option

    def on_session_open(self, ssn: Session) -> None:
        def fn(evictor: TaskInfo, evictees: list[TaskInfo]) -> tuple[list[TaskInfo], int]:
            return evictable(evictees), PERMIT

        ssn.add_preemptable_fn(self.name, fn)
        ssn.add_reclaimable_fn(self.name, fn)
        ssn.add_unified_evictable_fn(self.name, lambda ctx, candidates: (evictable(candidates), PERMIT))

    def on_session_close(self, ssn: Session) -> None:
        return None
