"""PodGroupPodsCount (upstream ``plugins/podgrouppodscount``, KEP-5732): a PlacementScore plugin
that favours the placement holding more of the group's pods (those already assumed or bound, plus
the ones the placement's trial placed), normalized to 0-100 by the best placement's count."""

from __future__ import annotations

from typing import Any, ClassVar

from kubesched.api.scheduling_groups import SchedulingPodGroup
from kubesched.framework.handle import Handle
from kubesched.framework.placement import MAX_SCORE, MIN_SCORE, PodGroupAssignments
from kubesched.framework.status import Status

NAME = "PodGroupPodsCount"


class PodGroupPodsCount:
    name: ClassVar[str] = NAME

    def __init__(self, args: Any = None, handle: Handle | None = None) -> None:
        if handle is None:
            raise ValueError("PodGroupPodsCount needs a framework handle")
        self.handle = handle

    def score_placement(self, pod_group: SchedulingPodGroup, placement: PodGroupAssignments) -> int:
        st = self.handle.pod_groups.state(pod_group.namespace, pod_group.name)
        return st.scheduled_pods_count() + len(placement.assignments)

    def normalize_placement_scores(self, pod_group: SchedulingPodGroup, scores: list[int]) -> Status | None:
        best = max(scores, default=0)
        if best == 0:
            return Status.error("no pods from pod group are assigned to any of the candidate placements")
        for i, score in enumerate(scores):
            scores[i] = MIN_SCORE + score * (MAX_SCORE - MIN_SCORE) // best
        return None
