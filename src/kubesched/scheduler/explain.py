"""Per-pod, per-node, per-plugin record of a scheduling attempt (``--explain``).

The shape follows kube-scheduler-simulator's result annotations: ``filter`` (node → plugin →
"passed" or the reason), ``score`` (raw), ``normalizedScore``, ``finalScore`` (times weight) and
``totalScore`` per node. Only the latest attempt of each pod is kept, plus ``postFilter`` (that
attempt's PostFilter plugin and message, when it ran) and ``preemption`` — the latest preemption the
pod made, ``{"nominatedNode": "n1", "victims": ["ns/name", ...]}``, kept across later attempts.
Recording costs Python work per evaluated node, so it happens only when explain is on.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from kubesched.api.objects import Pod
from kubesched.cache.node_table import NodeTable
from kubesched.framework.diagnosis import Diagnosis
from kubesched.framework.runtime import ScoreDetails
from kubesched.framework.status import Status
from kubesched.framework.types import BoolArray, FilterResult, IntArray

PASSED = "passed"


class ExplainRecorder:
    def __init__(self) -> None:
        self.by_pod: dict[str, dict[str, Any]] = {}
        #: Pods (uid → namespace, name) whose record changed since :meth:`take_changed`.
        self.changed: dict[str, tuple[str, str]] = {}

    def _entry(self, pod: Pod) -> dict[str, Any]:
        previous = self.by_pod.get(pod.uid)
        entry: dict[str, Any] = {
            "filter": {},
            "score": {},
            "normalizedScore": {},
            "finalScore": {},
            "totalScore": {},
            "preFilter": None,
            "postFilter": None,
            # The latest preemption this pod made stays: the attempt that binds the pod to its
            # nominated node comes after the one that evicted the victims.
            "preemption": previous.get("preemption") if previous else None,
        }
        self.by_pod[pod.uid] = entry
        self.changed[pod.uid] = (pod.namespace, pod.name)
        return entry

    def record_post_filter(self, pod: Pod, status: Status, outcome: dict[str, Any] | None) -> None:
        """What PostFilter (preemption) did for a pod that fit nowhere: ``postFilter`` holds the
        message, and ``preemption`` the nominated node and victims when preemption succeeded."""
        entry = self.by_pod.get(pod.uid) or self._entry(pod)
        self.changed[pod.uid] = (pod.namespace, pod.name)
        entry["postFilter"] = {"plugin": status.plugin, "message": status.message}
        if outcome is not None:
            entry["preemption"] = outcome

    def record_pre_filter(self, pod: Pod, status: Status) -> None:
        entry = self._entry(pod)
        entry["preFilter"] = {"plugin": status.plugin, "reason": status.message}

    def record_filters(
        self,
        pod: Pod,
        table: NodeTable,
        processed: IntArray,
        diagnosis: Diagnosis,
        results: list[FilterResult | None],
        plugin_names: list[str],
        feasible_mask: BoolArray,
    ) -> None:
        entry = self._entry(pod)
        failed_by = diagnosis.failed_by
        assert failed_by is not None
        out: dict[str, dict[str, str]] = {}
        for slot in processed.tolist():
            node = table.names[slot]
            first_fail = int(failed_by[slot])
            plugins: dict[str, str] = {}
            for i, name in enumerate(plugin_names):
                res = results[i]
                if res is None:
                    continue
                if first_fail == i:
                    plugins[name] = ", ".join(res.explained_reasons_for(slot)) or "rejected"
                    break
                plugins[name] = PASSED
            out[node] = plugins
        entry["filter"] = out

    def record_scores(
        self,
        pod: Pod,
        table: NodeTable,
        feasible: IntArray,
        totals: IntArray | None,
        details: ScoreDetails | None,
    ) -> None:
        entry = self.by_pod.get(pod.uid) or self._entry(pod)
        self.changed[pod.uid] = (pod.namespace, pod.name)
        names = [table.names[s] for s in feasible.tolist()]
        if totals is None or details is None:
            return
        for plugin, raw in details.raw.items():
            norm = details.normalized[plugin]
            weight = details.weights[plugin]
            for i, node in enumerate(names):
                entry["score"].setdefault(node, {})[plugin] = int(raw[i])
                entry["normalizedScore"].setdefault(node, {})[plugin] = int(norm[i])
                entry["finalScore"].setdefault(node, {})[plugin] = int(norm[i]) * weight
        for i, node in enumerate(names):
            entry["totalScore"][node] = int(np.asarray(totals)[i])

    def get(self, uid: str) -> dict[str, Any] | None:
        return self.by_pod.get(uid)

    def take_changed(self) -> dict[str, tuple[str, str]]:
        """The pods whose record changed since the last call (uid → namespace, name)."""
        changed, self.changed = self.changed, {}
        return changed

    def forget(self, uid: str) -> None:
        """Drop a pod's record (it is bound or gone: no later attempt will add to it)."""
        self.by_pod.pop(uid, None)
        self.changed.pop(uid, None)
