"""The Job strategy's spec rules as upstream's ``ValidateJobSpec`` words them: the per-index
backoff and ``maxFailedIndexes`` only for Indexed Jobs, the success policy's rules and their index
lists, a ``FailIndex`` rule without a per-index limit, and the fields an update may not change."""

from __future__ import annotations

from typing import Any

import pytest

from kubesched.api.job_rules import IndexesFormatError, indexes_total
from kubesched.registry.batch.job import JobStrategy
from kubesched.registry.errors import ApiError
from kubesched.registry.table import BY_KIND

STRATEGY = BY_KIND["Job"]


def _job(**spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "work", "namespace": "default"},
        "spec": {
            "template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "x"}]}},
            **spec,
        },
    }


def _causes(body: dict[str, Any]) -> list[tuple[str, str]]:
    STRATEGY.defaults(body)
    with pytest.raises(ApiError) as refused:
        STRATEGY.validate(body)
    return [(c["field"], c["message"]) for c in refused.value.details["causes"]]  # type: ignore[index]


def test_the_job_strategy_is_served() -> None:
    assert isinstance(STRATEGY, JobStrategy)


@pytest.mark.parametrize(
    ("spec", "want"),
    [
        (
            {"backoffLimitPerIndex": 1},
            [("spec.backoffLimitPerIndex", "Invalid value: 1: requires indexed completion mode")],
        ),
        (
            {"completionMode": "Indexed", "completions": 2, "maxFailedIndexes": 1},
            [("spec.backoffLimitPerIndex", "Required value: when maxFailedIndexes is specified")],
        ),
        (
            {"completionMode": "Indexed", "completions": 2, "backoffLimitPerIndex": 1, "maxFailedIndexes": 3},
            [("spec.maxFailedIndexes", "Invalid value: 3: must be less than or equal to completions")],
        ),
        (
            {"ttlSecondsAfterFinished": -1},
            [("spec.ttlSecondsAfterFinished", "Invalid value: -1: must be greater than or equal to 0")],
        ),
        (
            {"completionMode": "Indexed", "completions": 5, "successPolicy": {"rules": []}},
            [
                (
                    "spec.successPolicy.rules",
                    "Required value: at least one rules must be specified when the successPolicy is "
                    "specified",
                )
            ],
        ),
        (
            {"completionMode": "Indexed", "completions": 5, "successPolicy": {"rules": [{}]}},
            [
                (
                    "spec.successPolicy.rules[0]",
                    "Required value: at least one of succeededCount or succeededIndexes must be specified",
                )
            ],
        ),
        (
            {
                "completionMode": "Indexed",
                "completions": 5,
                "successPolicy": {"rules": [{"succeededIndexes": "0-9"}]},
            },
            [
                (
                    "spec.successPolicy.rules[0].succeededIndexes",
                    'Invalid value: "0-9": error parsing succeededIndexes: too large index: "9"',
                )
            ],
        ),
        (
            {
                "completionMode": "Indexed",
                "completions": 5,
                "successPolicy": {"rules": [{"succeededIndexes": "1-2", "succeededCount": 3}]},
            },
            [
                (
                    "spec.successPolicy.rules[0].succeededCount",
                    "Invalid value: 3: must be less than or equal to 2 (the number of indexes in the "
                    "specified succeededIndexes field)",
                )
            ],
        ),
        (
            {
                "completionMode": "Indexed",
                "completions": 2,
                "podFailurePolicy": {
                    "rules": [{"action": "FailIndex", "onExitCodes": {"operator": "In", "values": [1]}}]
                },
            },
            [
                (
                    "spec.podFailurePolicy.rules[0].action",
                    'Invalid value: "FailIndex": requires the backoffLimitPerIndex to be set',
                )
            ],
        ),
    ],
)
def test_spec_rules(spec: dict[str, Any], want: list[tuple[str, str]]) -> None:
    assert _causes(_job(**spec)) == want


def test_a_success_policy_needs_an_indexed_job() -> None:
    ((field, message),) = _causes(_job(successPolicy={"rules": [{"succeededCount": 1}]}))
    assert field == "spec.successPolicy" and message.endswith("requires indexed completion mode")


@pytest.mark.parametrize(
    ("text", "completions", "want"),
    [
        ("", 10, 0),
        ("0,2-4,7", 10, 5),
        (
            "1-2-3",
            10,
            'the fragment "1-2-3" violates the requirement that an index interval can have at '
            "most two parts separated by '-'",
        ),
        ("a", 10, 'cannot convert string to integer for index: "a"'),
        ("3,1", 10, "non-increasing order, previous: 3, current: 1"),
        ("4-4", 10, "non-increasing order, previous: 4, current: 4"),
        ("10", 10, 'too large index: "10"'),
    ],
)
def test_indexes_format(text: str, completions: int, want: int | str) -> None:
    if isinstance(want, int):
        assert indexes_total(text, completions) == want
    else:
        with pytest.raises(IndexesFormatError) as err:
            indexes_total(text, completions)
        assert str(err.value) == want


def test_the_success_policy_and_per_index_limit_are_immutable() -> None:
    old = _job(completionMode="Indexed", completions=2, backoffLimitPerIndex=1)
    STRATEGY.defaults(old)
    new = _job(completionMode="Indexed", completions=2, backoffLimitPerIndex=2)
    STRATEGY.defaults(new)
    with pytest.raises(ApiError) as refused:
        STRATEGY.allocate(None, old, new)  # type: ignore[arg-type]
    causes = refused.value.details["causes"]  # type: ignore[index]
    assert [(c["field"], c["message"]) for c in causes] == [
        ("spec.backoffLimitPerIndex", "Invalid value: 2: field is immutable")
    ]
