"""PodGroupPodsCount: the placement holding more of the group's pods scores higher, scaled to the
best placement's count."""

from __future__ import annotations

import numpy as np

from kubesched.api.objects import Pod
from kubesched.api.scheduling_groups import SchedulingPodGroup
from kubesched.framework.placement import Placement, PodGroupAssignments, ProposedAssignment
from kubesched.framework.status import Code
from kubesched.plugins.podgrouppodscount import PodGroupPodsCount
from kubesched.plugins.testing import make_pod, pod_dict, store_handle

PG = SchedulingPodGroup.from_dict(
    {
        "apiVersion": "scheduling.k8s.io/v1alpha2",
        "kind": "PodGroup",
        "metadata": {"name": "pg", "namespace": "default"},
        "spec": {"schedulingPolicy": {"gang": {"minCount": 2}}},
    }
)


def _assignments(n: int) -> PodGroupAssignments:
    empty = np.array([], dtype=np.int64)
    return PodGroupAssignments(
        Placement("p", empty), [ProposedAssignment(make_pod(f"p{i}"), "n") for i in range(n)]
    )


def test_scores_count_scheduled_and_proposed_pods_then_normalize_to_the_best() -> None:
    handle = store_handle()
    raw = pod_dict("bound", uid="bound", node_name="n0")
    raw["spec"]["schedulingGroup"] = {"podGroupName": "pg"}
    handle.pod_groups.add_pod(Pod.from_dict(raw))
    pl = PodGroupPodsCount(None, handle)
    scores = [pl.score_placement(PG, _assignments(n)) for n in (3, 1, 0)]
    assert scores == [4, 2, 1]
    assert pl.normalize_placement_scores(PG, scores) is None
    assert scores == [100, 50, 25]


def test_no_pod_on_any_placement_is_an_error() -> None:
    scores = [0, 0]
    st = PodGroupPodsCount(None, store_handle()).normalize_placement_scores(PG, scores)
    assert st is not None and st.code == Code.ERROR
