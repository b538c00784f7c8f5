"""The CronJob controller on a clock the test moves: Jobs at the scheduled times, named after them,
the concurrency policies, the starting deadline, suspension and the history limits."""

from __future__ import annotations

from typing import Any

import pytest
from tests.controllers.admitted import create

from kubesched.controllers.controller_utils import seconds, timestamp
from kubesched.controllers.cronjob import CronJobController
from kubesched.store.informers import InformerFactory


def _cronjob(name: str = "tick", **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "batch/v1",
        "kind": "CronJob",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "schedule": "*/5 * * * *",
            "jobTemplate": {
                "metadata": {"labels": {"team": "a"}},
                "spec": {
                    "template": {
                        "spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "x"}]}
                    }
                },
            },
            **spec,
        },
    }


class Clock:
    def __init__(self, start: float) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def run(store):
    """``run(cronjob)``: creates it; returns (clock, step) where ``step(to)`` moves the clock to
    ``to`` and lets the controller run."""

    def start(cronjob: dict[str, Any]) -> tuple[Clock, Any, dict[str, Any]]:
        created = create(store, cronjob)
        born = seconds(created["metadata"]["creationTimestamp"])
        assert born is not None
        clock = Clock(born)
        informers = InformerFactory(store)
        controller = CronJobController(store, informers, clock=clock)

        def step(to: float) -> None:
            clock.now = to
            informers.pump()
            controller.sync()
            informers.pump()
            controller.sync()

        step(born)
        return clock, step, created

    return start


def _jobs(store) -> list[dict[str, Any]]:
    return sorted(store.list("Job"), key=lambda j: j["metadata"]["name"])


def _finish(store, job: dict[str, Any], how: str = "Complete") -> None:
    now = timestamp()
    status = {
        "conditions": [{"type": how, "status": "True", "lastTransitionTime": now}],
        "completionTime": now,
    }
    store.update({**store.get("Job", "default", job["metadata"]["name"]), "status": status})


def _boundary(after: float) -> float:
    return after - after % 300 + 300


def test_a_job_at_each_scheduled_time_named_after_it(store, run):
    clock, step, cj = run(_cronjob())
    assert _jobs(store) == []
    first = _boundary(clock.now)
    step(first - 1)
    assert _jobs(store) == []
    step(first + 2)
    (job,) = _jobs(store)
    assert job["metadata"]["name"] == f"tick-{int(first // 60)}"
    assert job["metadata"]["labels"] == {"team": "a"}
    assert job["metadata"]["annotations"]["batch.kubernetes.io/cronjob-scheduled-timestamp"] == timestamp(
        first
    )
    assert job["metadata"]["ownerReferences"][0]["uid"] == cj["metadata"]["uid"]
    status = store.get("CronJob", "default", "tick")["status"]
    assert status["lastScheduleTime"] == timestamp(first)
    assert [r["name"] for r in status["active"]] == [job["metadata"]["name"]]
    # Allow (the default): the next one starts while the first runs.
    step(first + 300)
    assert len(_jobs(store)) == 2
    _finish(store, job)
    step(first + 301)
    status = store.get("CronJob", "default", "tick")["status"]
    assert len(status["active"]) == 1 and status["lastSuccessfulTime"]


def test_forbid_waits_for_the_running_job_and_replace_replaces_it(store, run):
    clock, step, _ = run(_cronjob(concurrencyPolicy="Forbid"))
    first = _boundary(clock.now)
    step(first)
    step(first + 300)
    (job,) = _jobs(store)
    _finish(store, job)
    step(first + 310)  # the skipped run starts once the running one finished
    assert len(_jobs(store)) == 2

    store.delete("CronJob", "default", "tick")
    for j in _jobs(store):
        store.delete("Job", "default", j["metadata"]["name"])
    clock, step, _ = run(_cronjob("swap", concurrencyPolicy="Replace"))
    first = _boundary(clock.now)
    step(first)
    (old,) = _jobs(store)
    step(first + 300)
    (new,) = _jobs(store)
    assert new["metadata"]["name"] != old["metadata"]["name"]


def test_suspend_and_the_starting_deadline_skip_runs(store, run):
    clock, step, _ = run(_cronjob(suspend=True))
    step(_boundary(clock.now) + 1)
    assert _jobs(store) == []
    store.delete("CronJob", "default", "tick")
    clock, step, _ = run(_cronjob("late", startingDeadlineSeconds=10))
    first = _boundary(clock.now)
    step(first + 30)  # the controller was away past the deadline
    assert _jobs(store) == []
    step(first + 305)
    assert len(_jobs(store)) == 1


def test_history_limits_keep_the_newest_finished_jobs(store, run):
    clock, step, _ = run(_cronjob(successfulJobsHistoryLimit=1, failedJobsHistoryLimit=0))
    first = _boundary(clock.now)
    for i in range(3):
        step(first + 300 * i)
        newest = _jobs(store)[-1]
        _finish(store, newest, "Failed" if i == 2 else "Complete")
    step(first + 601)
    names = [j["metadata"]["name"] for j in _jobs(store)]
    assert names == [f"tick-{int((first + 300) // 60)}"]
