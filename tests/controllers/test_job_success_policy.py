"""A Job's ``successPolicy`` (upstream ``pkg/controller/job/success_policy_test.go``'s
``TestMatchSuccessPolicy``, its case names verbatim; the JobSuccessPolicy gate is locked on since
v1.33, so the case with it disabled has no counterpart) and the controller acting on a match."""

from __future__ import annotations

from typing import Any

import pytest
from tests.controllers.test_job import _conditions, _job, _pods, run  # noqa: F401

from kubesched.controllers.job import COMPLETION_INDEX, match_success_policy


def _ivs(*intervals: tuple[int, int]) -> set[int]:
    return {i for first, last in intervals for i in range(first, last + 1)}


def _rules(*rules: dict[str, Any]) -> dict[str, Any]:
    return {"rules": list(rules)}


CASES = [
    ("successPolicy is null", None, _ivs((0, 0)), None),
    ("any rules are nothing", _rules(), _ivs((0, 0)), None),
    (
        "rules.succeededIndexes is invalid format",
        _rules({"succeededIndexes": "invalid-form"}),
        _ivs((0, 0)),
        None,
    ),
    (
        "rules.succeededIndexes is specified; succeededIndexes matched rules",
        _rules({"succeededIndexes": "0-2"}),
        _ivs((0, 2), (4, 7)),
        "Matched rules at index 0",
    ),
    (
        "rules.succeededIndexes is specified; succeededIndexes didn't match rules",
        _rules({"succeededIndexes": "3"}),
        _ivs((0, 2)),
        None,
    ),
    (
        "rules.succeededCount is specified; succeededIndexes matched rules",
        _rules({"succeededCount": 2}),
        _ivs((0, 2)),
        "Matched rules at index 0",
    ),
    (
        "rules.succeededCount is specified; succeededIndexes didn't match rules",
        _rules({"succeededCount": 4}),
        _ivs((0, 2)),
        None,
    ),
    (
        "multiple rules; rules.succeededIndexes is specified; succeededIndexes met one of rules",
        _rules({"succeededIndexes": "9"}, {"succeededIndexes": "4,6"}),
        _ivs((0, 2), (4, 7)),
        "Matched rules at index 1",
    ),
    (
        "multiple rules; rules.succeededIndexes is specified; succeededIndexes met all rules",
        _rules({"succeededIndexes": "0,1"}, {"succeededIndexes": "5"}),
        _ivs((0, 2), (4, 7)),
        "Matched rules at index 0",
    ),
    (
        "rules.succeededIndexes and rules.succeededCount are specified; succeededIndexes met all rules",
        _rules({"succeededIndexes": "3-6", "succeededCount": 2}),
        _ivs((0, 2), (4, 7)),
        "Matched rules at index 0",
    ),
    (
        "rules.succeededIndexes and rules.succeededCount are specified; succeededIndexes didn't match rules",
        _rules({"succeededIndexes": "3-6", "succeededCount": 2}),
        _ivs((0, 2), (6, 7)),
        None,
    ),
    (
        "rules.succeededIndexes is specified; succeededIndexes are nothing",
        _rules({"succeededCount": 4}),
        set(),
        None,
    ),
    (
        "rules.succeededIndexes is specified; succeededIndexes matched rules; rules is proper subset of "
        "succeededIndexes",
        _rules({"succeededIndexes": "2-4,6-8"}),
        _ivs((1, 5), (6, 9)),
        "Matched rules at index 0",
    ),
    (
        "rules.succeededIndexes is specified; succeededIndexes matched rules; rules equals succeededIndexes",
        _rules({"succeededIndexes": "2-4,6-9"}),
        _ivs((2, 4), (6, 9)),
        "Matched rules at index 0",
    ),
    (
        "rules.succeededIndexes is specified; succeededIndexes matched rules; rules is subset of "
        "succeededIndexes",
        _rules({"succeededIndexes": "2-4,8-12"}),
        _ivs((2, 5), (7, 15)),
        "Matched rules at index 0",
    ),
    (
        "rules.succeededIndexes is specified; succeededIndexes didn't match rules; rules is an empty set",
        _rules({"succeededIndexes": ""}),
        _ivs((1, 3)),
        None,
    ),
    (
        "rules.succeededIndexes is specified; succeededIndexes didn't match rules; succeededIndexes is an "
        "empty set",
        _rules({"succeededIndexes": ""}),
        set(),
        None,
    ),
    (
        "rules.succeededIndexes is specified; succeededIndexes didn't match rules; rules and "
        "succeededIndexes are empty set",
        _rules({"succeededIndexes": ""}),
        set(),
        None,
    ),
    (
        "rules.succeededIndexes is specified; succeededIndexes didn't match rules; all elements of "
        "rules.succeededIndexes aren't included in succeededIndexes",
        _rules({"succeededIndexes": "10-12,14-16"}),
        _ivs((1, 3), (5, 7)),
        None,
    ),
    (
        "rules.succeededIndexes is specified; succeededIndexes didn't match rules; rules overlaps "
        "succeededIndexes at first",
        _rules({"succeededIndexes": "1-3,5-7"}),
        _ivs((2, 4), (6, 8)),
        None,
    ),
    (
        "rules.succeededIndexes and rules.succeededCount are specified; succeededIndexes matched rules; "
        "rules overlaps succeededIndexes at first",
        _rules({"succeededIndexes": "1-3,5-7", "succeededCount": 4}),
        _ivs((2, 4), (6, 8)),
        "Matched rules at index 0",
    ),
    (
        "rules.succeededIndexes is specified; succeededIndexes didn't match rules; rules overlaps "
        "succeededIndexes at last",
        _rules({"succeededIndexes": "2-4,6-9"}),
        _ivs((1, 3), (5, 7)),
        None,
    ),
    (
        "rules.succeededIndexes and rules.succeededCount are specified; succeededIndexes matched rules; "
        "rules overlaps succeededIndexes at last",
        _rules({"succeededIndexes": "2-4,6-9", "succeededCount": 4}),
        _ivs((1, 3), (5, 7)),
        "Matched rules at index 0",
    ),
    (
        "rules.succeededIndexes is specified; succeededIndexes didn't match rules; rules completely "
        "overlaps succeededIndexes",
        _rules({"succeededIndexes": "0-4,6-9"}),
        _ivs((1, 3), (7, 8)),
        None,
    ),
    (
        "rules.succeededIndexes and rules.succeededCount are specified; succeededIndexes matched rules; "
        "rules completely overlaps succeededIndexes",
        _rules({"succeededIndexes": "0-4,6-9", "succeededCount": 5}),
        _ivs((1, 3), (7, 8)),
        "Matched rules at index 0",
    ),
    (
        "rules.succeededIndexes is specified; succeededIndexes didn't match rules; rules overlaps multiple "
        "succeededIndexes at last",
        _rules({"succeededIndexes": "0-6,8-9"}),
        _ivs((1, 3), (5, 9)),
        None,
    ),
    (
        "rules.succeededIndexes and rules.succeededCount are specified; succeededIndexes matched rules; "
        "rules overlaps multiple succeededIndexes at last",
        _rules({"succeededIndexes": "0-6,8-9", "succeededCount": 7}),
        _ivs((1, 3), (5, 9)),
        "Matched rules at index 0",
    ),
    (
        "rules.succeededIndexes is specified; succeededIndexes didn't match rules; rules overlaps "
        "succeededIndexes at first, and rules equals succeededIndexes at last",
        _rules({"succeededIndexes": "0-5,7-9"}),
        _ivs((1, 5), (7, 10)),
        None,
    ),
    (
        "rules.succeededIndexes and rules.succeededCount are specified; succeededIndexes matched rules; "
        "rules overlaps succeededIndexes at first, and rules equals succeededIndexes at last",
        _rules({"succeededIndexes": "0-5,7-9", "succeededCount": 8}),
        _ivs((1, 5), (7, 10)),
        "Matched rules at index 0",
    ),
    (
        "rules.succeededIndexes is specified; succeededIndexes didn't match rules; the first rules overlaps "
        "succeededIndexes at first",
        _rules({"succeededIndexes": "0-3,6-9"}),
        _ivs((1, 10)),
        None,
    ),
    (
        "rules.succeededIndexes and rules.succeededCount are specified; succeededIndexes matched rules; the "
        "first rules overlaps succeededIndexes at first",
        _rules({"succeededIndexes": "0-3,6-9", "succeededCount": 7}),
        _ivs((1, 10)),
        "Matched rules at index 0",
    ),
]


@pytest.mark.parametrize(("name", "policy", "succeeded", "want"), CASES, ids=[c[0] for c in CASES])
def test_match_success_policy(name: str, policy: Any, succeeded: set[int], want: str | None) -> None:
    assert match_success_policy(policy, 10, succeeded) == want


def _succeed(store, pod: dict[str, Any]) -> None:
    pod = store.get("Pod", "default", pod["metadata"]["name"])
    store.update({**pod, "status": {"phase": "Succeeded"}})


def test_a_met_success_policy_completes_the_job_and_removes_its_other_pods(store, run) -> None:  # noqa: F811
    _, step, born = run(
        _job(
            completionMode="Indexed",
            completions=3,
            parallelism=3,
            successPolicy={"rules": [{"succeededIndexes": "0"}]},
        )
    )
    pods = {int(p["metadata"]["annotations"][COMPLETION_INDEX]): p for p in _pods(store)}
    assert sorted(pods) == [0, 1, 2]
    _succeed(store, pods[1])
    step(born + 1)
    assert _conditions(store) == []  # index 1 is not what the rule asks for
    _succeed(store, pods[0])
    step(born + 2)
    assert ("SuccessCriteriaMet", "SuccessPolicy", "Matched rules at index 0") in _conditions(store)
    assert _pods(store) == []
    step(born + 3)
    assert ("Complete", "SuccessPolicy", "Matched rules at index 0") in _conditions(store)
    job = store.get("Job", "default", "work")
    assert job["status"]["completedIndexes"] == "0,1"
    assert job["status"].get("completionTime")
