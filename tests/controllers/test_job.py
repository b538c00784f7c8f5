"""The Job controller on a clock the test moves: a failed pod is replaced after the Job's backoff,
``activeDeadlineSeconds`` fails a running Job, ``podFailurePolicy`` fails it or leaves a failure
uncounted — with upstream's conditions, reasons and messages."""

from __future__ import annotations

from typing import Any

import pytest
from tests.controllers.admitted import create

from kubesched.controllers.controller_utils import seconds, timestamp
from kubesched.controllers.job import JobController
from kubesched.store.informers import InformerFactory


class Clock:
    def __init__(self, start: float) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now


def _job(name: str = "work", **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "main", "image": "x"}]}},
            **spec,
        },
    }


@pytest.fixture
def run(store):
    """``run(job)`` creates it and returns (controller, step): ``step(to)`` moves the clock and lets
    the controller run until it has nothing more to do."""

    def start(job: dict[str, Any]):
        created = create(store, job)
        born = seconds(created["metadata"]["creationTimestamp"]) or 0.0
        clock = Clock(born)
        informers = InformerFactory(store)
        controller = JobController(store, informers, clock=clock)

        def step(to: float) -> None:
            clock.now = to
            for _ in range(4):
                informers.pump()
                controller.sync()

        step(born)
        return controller, step, born

    return start


def _pods(store) -> list[dict[str, Any]]:
    """The Job's active pods: neither ended nor being deleted."""
    return [
        p
        for p in store.list("Pod")
        if not p["metadata"].get("deletionTimestamp")
        and (p.get("status") or {}).get("phase") not in ("Succeeded", "Failed")
    ]


def _fail(store, pod: dict[str, Any], at: float, exit_code: int = 1, conditions=()) -> None:
    pod = store.get("Pod", "default", pod["metadata"]["name"])
    status = {
        "phase": "Failed",
        "conditions": [
            {"type": t, "status": "True", "lastTransitionTime": timestamp(at)} for t in conditions
        ],
        "containerStatuses": [
            {"name": "main", "state": {"terminated": {"exitCode": exit_code, "finishedAt": timestamp(at)}}}
        ],
    }
    store.update({**pod, "status": status})


def _conditions(store, name: str = "work") -> list[tuple[str, str, str]]:
    job = store.get("Job", "default", name)
    return [(c["type"], c["reason"], c["message"]) for c in (job.get("status") or {}).get("conditions") or []]


def test_a_failed_pod_is_replaced_after_the_backoff_doubling_with_each_failure(store, run) -> None:
    controller, step, born = run(_job(backoffLimit=6))
    (first,) = _pods(store)
    _fail(store, first, born + 1)
    step(born + 1)
    assert [p["metadata"]["name"] for p in _pods(store)] == []
    assert controller.next_due == born + 11
    step(born + 10.5)
    assert _pods(store) == []
    step(born + 11)
    (second,) = _pods(store)
    _fail(store, second, born + 12)
    step(born + 12)
    assert controller.next_due == born + 32  # two failures since the last success: 20 s
    step(born + 31)
    assert _pods(store) == []
    step(born + 32)
    assert len(_pods(store)) == 1
    assert store.get("Job", "default", "work")["status"]["failed"] == 2


def test_active_deadline_seconds_fails_the_job(store, run) -> None:
    controller, step, born = run(_job(activeDeadlineSeconds=30, parallelism=2))
    assert len(_pods(store)) == 2
    step(born + 1)
    assert controller.next_due == born + 30
    step(born + 29)
    assert _conditions(store) == []
    step(born + 30)
    assert _conditions(store)[0] == (
        "FailureTarget",
        "DeadlineExceeded",
        "Job was active longer than specified deadline",
    )
    assert _pods(store) == []
    step(born + 31)
    assert ("Failed", "DeadlineExceeded", "Job was active longer than specified deadline") in _conditions(
        store
    )


def test_a_fail_job_rule_fails_the_job_on_the_pods_exit_code(store, run) -> None:
    policy = {"rules": [{"action": "FailJob", "onExitCodes": {"operator": "In", "values": [42]}}]}
    _, step, born = run(_job(podFailurePolicy=policy, backoffLimit=6))
    (pod,) = _pods(store)
    _fail(store, pod, born + 1, exit_code=42)
    step(born + 1)
    step(born + 2)
    message = (
        f"Container main for pod default/{pod['metadata']['name']} failed with exit code 42 "
        "matching FailJob rule at index 0"
    )
    assert _conditions(store) == [
        ("FailureTarget", "PodFailurePolicy", message),
        ("Failed", "PodFailurePolicy", message),
    ]


def test_an_ignore_rule_leaves_the_failure_uncounted(store, run) -> None:
    policy = {"rules": [{"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget"}]}]}
    _, step, born = run(_job(podFailurePolicy=policy, backoffLimit=0))
    (pod,) = _pods(store)
    _fail(store, pod, born + 1, conditions=["DisruptionTarget"])
    step(born + 1)
    status = store.get("Job", "default", "work")["status"]
    assert "failed" not in status and not status.get("conditions")
    step(born + 11)  # an ignored failure still waits out the backoff
    assert len(_pods(store)) == 1
