"""The names and the candidacy rules of the Job controller's Workload and PodGroup (upstream's
``computeWorkloadName``, ``computePodGroupName``, ``IsGangSchedulingCandidate``)."""

from __future__ import annotations

from typing import Any

import pytest

from kubesched.controllers.job_workload import is_gang_candidate, is_new_job, pod_group_name, workload_name


def job(**spec: Any) -> dict[str, Any]:
    return {"metadata": {"name": "train", "uid": "0a1b"}, "spec": spec}


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ({"parallelism": 4, "completions": 4, "completionMode": "Indexed"}, True),
        ({"parallelism": 1, "completions": 1, "completionMode": "Indexed"}, False),
        ({"parallelism": 4, "completions": 8, "completionMode": "Indexed"}, False),
        ({"parallelism": 4, "completions": 4, "completionMode": "NonIndexed"}, False),
        ({"parallelism": 4, "completionMode": "Indexed"}, False),
        (
            {
                "parallelism": 4,
                "completions": 4,
                "completionMode": "Indexed",
                "template": {"spec": {"schedulingGroup": {"podGroupName": "mine"}}},
            },
            False,
        ),
    ],
)
def test_gang_candidates(spec: dict[str, Any], expected: bool) -> None:
    assert is_gang_candidate(job(**spec)) is expected


def test_a_started_job_is_not_new() -> None:
    assert is_new_job(job(), [])
    assert not is_new_job(job(), [{"metadata": {"name": "p"}}])
    assert not is_new_job({**job(), "status": {"startTime": "2026-01-01T00:00:00Z"}}, [])
    assert not is_new_job({**job(), "status": {"conditions": [{"type": "Suspended", "status": "True"}]}}, [])


def test_names_are_stable_and_fit_a_dns_subdomain() -> None:
    name = workload_name(job())
    assert name == workload_name(job()) and name.startswith("train-")
    assert workload_name({**job(), "metadata": {"name": "train", "uid": "other"}}) != name
    long = workload_name({"metadata": {"name": "j" * 300, "uid": "u"}})
    assert len(long) == 253
    group = pod_group_name(name, "train-pgt-0")
    assert group.startswith(f"{name}-train-pgt-0-")
    both_long = pod_group_name("w" * 200, "t" * 200)
    suffix = both_long.rsplit("-", 1)[1]
    room = 253 - len(suffix) - 2
    # Both too long: each gets half the room, the workload the odd character.
    assert both_long == f"{'w' * (room - room // 2)}-{'t' * (room // 2)}-{suffix}"
    short_workload = pod_group_name("w", "t" * 300)
    assert len(short_workload) == 253 and short_workload.startswith("w-ttt")
