"""The TTL-after-finished controller: upstream ``ttlafterfinished_controller_test.go``'s
``TestTimeLeft`` (case names verbatim), and a finished Job deleted with its pods once its TTL ran
out, not before, and not when its TTL was removed meanwhile."""

from __future__ import annotations

from typing import Any

import pytest
from tests.controllers.admitted import create
from tests.controllers.test_job import Clock

from kubesched.controllers.controller_utils import timestamp
from kubesched.controllers.ttl_after_finished import NotCleanable, TTLAfterFinishedController, time_left
from kubesched.store.informers import InformerFactory

NOW = 1_800_000_000.0


def _job(
    completed: float | None = None, failed: float | None = None, ttl: int | None = None
) -> dict[str, Any]:
    conditions = []
    if completed is not None:
        conditions.append({"type": "Complete", "status": "True", "lastTransitionTime": timestamp(completed)})
    if failed is not None:
        conditions.append({"type": "Failed", "status": "True", "lastTransitionTime": timestamp(failed)})
    spec: dict[str, Any] = {"template": {"spec": {"containers": [{"name": "c", "image": "foo/bar"}]}}}
    if ttl is not None:
        spec["ttlSecondsAfterFinished"] = ttl
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "foobar", "namespace": "default"},
        "spec": spec,
        "status": {"conditions": conditions},
    }


TIME_LEFT = [
    ("Error case: Job unfinished", _job(ttl=100), "should not be cleaned up", None),
    ("Error case: Job completed now, no TTL", _job(completed=NOW), "should not be cleaned up", None),
    ("Job completed now, 0s TTL", _job(completed=NOW, ttl=0), None, (0, NOW)),
    ("Job completed now, 10s TTL", _job(completed=NOW, ttl=10), None, (10, NOW + 10)),
    ("Job completed 10s ago, 15s TTL", _job(completed=NOW - 10, ttl=15), None, (5, NOW + 5)),
    ("Error case: Job failed now, no TTL", _job(failed=NOW), "should not be cleaned up", None),
    ("Job failed now, 0s TTL", _job(failed=NOW, ttl=0), None, (0, NOW)),
    ("Job failed now, 10s TTL", _job(failed=NOW, ttl=10), None, (10, NOW + 10)),
    ("Job failed 10s ago, 15s TTL", _job(failed=NOW - 10, ttl=15), None, (5, NOW + 5)),
]


@pytest.mark.parametrize(("name", "job", "error", "want"), TIME_LEFT, ids=[c[0] for c in TIME_LEFT])
def test_time_left(
    name: str, job: dict[str, Any], error: str | None, want: tuple[float, float] | None
) -> None:
    if error is not None:
        with pytest.raises(NotCleanable, match=error):
            time_left(job, NOW)
    else:
        assert time_left(job, NOW) == want


def _finished_job_with_a_pod(store, finished: float, ttl: int | None) -> None:
    job = create(store, _job(completed=finished, ttl=ttl))
    uid = job["metadata"]["uid"]
    create(
        store,
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": "foobar-abcde",
                "namespace": "default",
                "ownerReferences": [
                    {
                        "apiVersion": "batch/v1",
                        "kind": "Job",
                        "name": "foobar",
                        "uid": uid,
                        "controller": True,
                    }
                ],
            },
            "spec": {"containers": [{"name": "c", "image": "foo/bar"}]},
            "status": {"phase": "Succeeded"},
        },
    )


def test_a_finished_job_goes_with_its_pods_when_its_ttl_runs_out(store) -> None:
    clock = Clock(NOW)
    informers = InformerFactory(store)
    controller = TTLAfterFinishedController(store, informers, clock=clock)
    _finished_job_with_a_pod(store, NOW, ttl=30)
    informers.pump()
    controller.sync()
    assert controller.next_due == NOW + 30
    clock.now = NOW + 29
    controller.sync()
    assert store.get("Job", "default", "foobar") is not None
    clock.now = NOW + 30
    controller.sync()
    assert store.get("Job", "default", "foobar") is None
    assert store.get("Pod", "default", "foobar-abcde") is None


def test_a_ttl_removed_before_it_ran_out_keeps_the_job(store) -> None:
    clock = Clock(NOW)
    informers = InformerFactory(store)
    controller = TTLAfterFinishedController(store, informers, clock=clock)
    _finished_job_with_a_pod(store, NOW, ttl=30)
    informers.pump()
    job = store.get("Job", "default", "foobar")
    store.update({**job, "spec": {k: v for k, v in job["spec"].items() if k != "ttlSecondsAfterFinished"}})
    informers.pump()
    clock.now = NOW + 60
    controller.sync()
    assert store.get("Job", "default", "foobar") is not None
