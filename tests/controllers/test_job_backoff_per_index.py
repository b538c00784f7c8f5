"""``backoffLimitPerIndex`` on an Indexed Job: each index counts its own failures in its pods'
``batch.kubernetes.io/job-index-failure-count`` annotation and waits out its own backoff; an index
past its limit (or hit by a ``FailIndex`` rule) is listed in ``status.failedIndexes`` and not run
again; the Job fails once every index ended with some failed (``FailedIndexes``), or as soon as
more than ``maxFailedIndexes`` failed (``MaxFailedIndexesExceeded``)."""

from __future__ import annotations

from typing import Any

from tests.controllers.test_job import _conditions, _fail, _job, _pods, run  # noqa: F401

from kubesched.controllers.job import COMPLETION_INDEX, INDEX_FAILURE_COUNT, INDEX_IGNORED_FAILURE_COUNT


def _by_index(store) -> dict[int, dict[str, Any]]:
    return {int(p["metadata"]["annotations"][COMPLETION_INDEX]): p for p in _pods(store)}


def _succeed(store, pod: dict[str, Any]) -> None:
    pod = store.get("Pod", "default", pod["metadata"]["name"])
    store.update({**pod, "status": {"phase": "Succeeded"}})


def test_an_index_fails_after_its_own_limit_and_the_job_fails_with_failed_indexes(store, run) -> None:  # noqa: F811
    controller, step, born = run(
        _job(completionMode="Indexed", completions=2, parallelism=2, backoffLimitPerIndex=1)
    )
    pods = _by_index(store)
    assert pods[0]["metadata"]["annotations"][INDEX_FAILURE_COUNT] == "0"
    job = store.get("Job", "default", "work")
    assert job["spec"]["backoffLimit"] == 2**31 - 1
    assert job["status"]["failedIndexes"] == ""

    _fail(store, pods[0], born + 1)
    step(born + 1)
    assert sorted(_by_index(store)) == [1]  # index 0 waits out its backoff
    assert controller.next_due == born + 11
    step(born + 11)
    again = _by_index(store)[0]
    assert again["metadata"]["annotations"][INDEX_FAILURE_COUNT] == "1"

    _fail(store, again, born + 12)
    step(born + 12)
    step(born + 100)
    assert sorted(_by_index(store)) == [1]  # index 0 is past its limit: never run again
    job = store.get("Job", "default", "work")
    assert job["status"]["failedIndexes"] == "0"
    assert job["status"]["failed"] == 2
    assert _conditions(store) == []

    _succeed(store, _by_index(store)[1])
    step(born + 101)
    assert ("FailureTarget", "FailedIndexes", "Job has failed indexes") in _conditions(store)
    step(born + 102)
    assert ("Failed", "FailedIndexes", "Job has failed indexes") in _conditions(store)
    assert store.get("Job", "default", "work")["status"]["completedIndexes"] == "1"


def test_more_failed_indexes_than_max_failed_indexes_fail_the_job_at_once(store, run) -> None:  # noqa: F811
    _, step, born = run(
        _job(
            completionMode="Indexed",
            completions=3,
            parallelism=3,
            backoffLimitPerIndex=0,
            maxFailedIndexes=0,
        )
    )
    _fail(store, _by_index(store)[2], born + 1)
    step(born + 1)
    assert _conditions(store)[0] == (
        "FailureTarget",
        "MaxFailedIndexesExceeded",
        "Job has exceeded the specified maximal number of failed indexes",
    )
    assert _pods(store) == []
    step(born + 2)
    assert store.get("Job", "default", "work")["status"]["failedIndexes"] == "2"


def test_a_fail_index_rule_fails_the_index_and_an_ignore_rule_counts_apart(store, run) -> None:  # noqa: F811
    policy = {
        "rules": [
            {"action": "FailIndex", "onExitCodes": {"operator": "In", "values": [42]}},
            {"action": "Ignore", "onExitCodes": {"operator": "In", "values": [7]}},
        ]
    }
    _, step, born = run(
        _job(
            completionMode="Indexed",
            completions=2,
            parallelism=2,
            backoffLimitPerIndex=3,
            podFailurePolicy=policy,
            podReplacementPolicy="Failed",
        )
    )
    pods = _by_index(store)
    _fail(store, pods[0], born + 1, exit_code=42)
    _fail(store, pods[1], born + 1, exit_code=7)
    step(born + 1)
    step(born + 20)
    job = store.get("Job", "default", "work")
    assert job["status"]["failedIndexes"] == "0"
    replacement = _by_index(store)[1]
    assert replacement["metadata"]["annotations"][INDEX_FAILURE_COUNT] == "0"
    assert replacement["metadata"]["annotations"][INDEX_IGNORED_FAILURE_COUNT] == "1"
