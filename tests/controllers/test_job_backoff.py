"""Upstream's ``backoff_utils_test.go`` tables (case names verbatim): the backoff record after new
finished pods, when a pod finished, and the time left before the next pod."""

from __future__ import annotations

from typing import Any

import pytest

from kubesched.controllers.controller_utils import seconds, timestamp
from kubesched.controllers.job_backoff import BackoffRecord, finished_time, new_backoff_record

T = seconds("2009-11-10T23:00:00Z") or 0.0
#: The tables step finish times by milliseconds; stamps on the wire keep whole seconds, so the same
#: order is kept a second apart.
MS = 1.0


def _pod(phase: str, finished: float) -> dict[str, Any]:
    return {
        "status": {
            "phase": phase,
            "containerStatuses": [{"state": {"terminated": {"finishedAt": timestamp(finished)}}}],
        }
    }


@pytest.mark.parametrize(
    ("name", "initial", "succeeded", "failed", "want"),
    [
        ("Empty backoff store and one new failure", BackoffRecord(), [], [T], BackoffRecord(1, T)),
        ("Empty backoff store and two new failures", BackoffRecord(), [], [T, T - MS], BackoffRecord(2, T)),
        (
            "Empty backoff store, two failures followed by success",
            BackoffRecord(),
            [T],
            [T - 2 * MS, T - MS],
            BackoffRecord(0, None),
        ),
        (
            "Empty backoff store, two failures, one success and two more failures",
            BackoffRecord(),
            [T - 2 * MS],
            [T, T - 4 * MS, T - 3 * MS, T - MS],
            BackoffRecord(2, T),
        ),
        (
            "Backoff store having failure count 2 and one new failure",
            BackoffRecord(2, None),
            [],
            [T],
            BackoffRecord(3, T),
        ),
        (
            "Empty backoff store with success and failure at same timestamp",
            BackoffRecord(),
            [T],
            [T],
            BackoffRecord(0, None),
        ),
        ("Empty backoff store with no success/failure", BackoffRecord(), [], [], BackoffRecord(0, None)),
        ("Empty backoff store with one success", BackoffRecord(), [T], [], BackoffRecord(0, None)),
    ],
)
def test_new_backoff_record(name, initial, succeeded, failed, want) -> None:
    got = new_backoff_record(
        initial, [_pod("Succeeded", t) for t in succeeded], [_pod("Failed", t) for t in failed]
    )
    assert got == want, name


def _stamp(t: float) -> str:
    return timestamp(t)


@pytest.mark.parametrize(
    ("name", "pod", "want"),
    [
        (
            "Pod with multiple containers and all containers terminated",
            {
                "status": {
                    "containerStatuses": [
                        {"state": {"terminated": {"finishedAt": _stamp(T - 1)}}},
                        {"state": {"terminated": {"finishedAt": _stamp(T)}}},
                        {"state": {"terminated": {"finishedAt": _stamp(T - 2)}}},
                    ]
                }
            },
            T,
        ),
        (
            "Pod with multiple containers; two containers in terminated state and one in running state; "
            "fallback to deletionTimestamp",
            {
                "metadata": {"deletionTimestamp": _stamp(T)},
                "status": {
                    "containerStatuses": [
                        {"state": {"terminated": {"finishedAt": _stamp(T - 1)}}},
                        {"state": {"running": {}}},
                        {"state": {"terminated": {"finishedAt": _stamp(T - 2)}}},
                    ]
                },
            },
            T,
        ),
        (
            "fallback to deletionTimestamp",
            {
                "metadata": {"deletionTimestamp": _stamp(T)},
                "status": {"containerStatuses": [{"state": {"running": {}}}]},
            },
            T,
        ),
        (
            "fallback to deletionTimestamp, decremented by grace period",
            {
                "metadata": {"deletionTimestamp": _stamp(T), "deletionGracePeriodSeconds": 30},
                "status": {"containerStatuses": [{"state": {"running": {}}}]},
            },
            T - 30,
        ),
        (
            "fallback to PodReady.LastTransitionTime when status of the condition is False",
            {
                "status": {
                    "containerStatuses": [{"state": {"terminated": {}}}],
                    "conditions": [
                        {
                            "type": "Ready",
                            "status": "False",
                            "reason": "PodFailed",
                            "lastTransitionTime": _stamp(T),
                        }
                    ],
                }
            },
            T,
        ),
        (
            "skip fallback to PodReady.LastTransitionTime when status of the condition is True",
            {
                "metadata": {"deletionTimestamp": _stamp(T)},
                "status": {
                    "containerStatuses": [{"state": {"terminated": {}}}],
                    "conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": _stamp(T - 30)}],
                },
            },
            T,
        ),
        (
            "fallback to creationTimestamp",
            {
                "metadata": {"creationTimestamp": _stamp(T)},
                "status": {"containerStatuses": [{"state": {"terminated": {}}}]},
            },
            T,
        ),
        (
            "Pod with sidecar container and all containers terminated",
            {
                "spec": {"initContainers": [{"name": "sidecar", "restartPolicy": "Always"}]},
                "status": {
                    "containerStatuses": [{"state": {"terminated": {"finishedAt": _stamp(T - 1)}}}],
                    "initContainerStatuses": [
                        {"name": "sidecar", "state": {"terminated": {"finishedAt": _stamp(T)}}}
                    ],
                },
            },
            T,
        ),
    ],
)
def test_get_finished_time(name, pod, want) -> None:
    assert finished_time(pod) == want, name


@pytest.mark.parametrize(
    ("name", "record", "now", "want"),
    [
        ("no failures", BackoffRecord(0, None), T, 0),
        ("one failure; current time and failure time are same", BackoffRecord(1, T), T, 5),
        ("one failure; current time == 1 second + failure time", BackoffRecord(1, T), T + 1, 4),
        ("one failure; current time == expected backoff time", BackoffRecord(1, T), T + 5, 0),
        ("one failure; current time == expected backoff time + 1 Second", BackoffRecord(1, T), T + 6, 0),
        ("three failures; current time and failure time are same", BackoffRecord(3, T), T, 20),
        (
            "eight failures; current time and failure time are same; backoff not exceeding maxBackoff",
            BackoffRecord(8, T),
            T,
            640,
        ),
        (
            "nine failures; current time and failure time are same; backoff exceeding maxBackoff",
            BackoffRecord(9, T),
            T,
            700,
        ),
    ],
)
def test_get_remaining_backoff_time(name, record, now, want) -> None:
    assert record.remaining(now, default=5, maximum=700) == want, name
