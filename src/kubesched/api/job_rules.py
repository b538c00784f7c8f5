"""Upstream's ``ValidateJobSpec`` for the Job's own fields (counts, completion mode, the
per-index backoff, the success policy, the failure policy's ``FailIndex``), and the spec fields an
update may not change. The pod template is validated as a pod elsewhere."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubesched.api.field_errors import Cause, invalid, not_supported, required, too_many

NON_INDEXED = "NonIndexed"
INDEXED = "Indexed"
MAX_PARALLELISM_FOR_INDEXED_JOB = 100_000
MAX_FAILED_INDEXES_FOR_INDEXED_JOB = 100_000
COMPLETIONS_SOFT_LIMIT = 100_000
PARALLELISM_LIMIT_FOR_HIGH_COMPLETIONS = 10_000
MAX_FAILED_INDEXES_LIMIT_FOR_HIGH_COMPLETIONS = 10_000
MAX_SUCCESS_POLICY_RULES = 20
MAX_SUCCEEDED_INDEXES_LENGTH = 64 * 1024

#: Spec fields fixed once the Job is made (besides the selector and the template).
IMMUTABLE_FIELDS = (
    "completionMode",
    "podFailurePolicy",
    "backoffLimitPerIndex",
    "managedBy",
    "successPolicy",
)


class IndexesFormatError(ValueError):
    pass


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _nonnegative(path: str, value: int) -> list[Cause]:
    return [invalid(path, value, "must be greater than or equal to 0")] if value < 0 else []


def _interval(text: str, completions: int) -> tuple[int, int]:
    limits = text.split("-")
    if len(limits) > 2:
        raise IndexesFormatError(
            f'the fragment "{text}" violates the requirement that an index interval can have at '
            "most two parts separated by '-'"
        )
    first = _atoi(limits[0])
    if first >= completions:
        raise IndexesFormatError(f'too large index: "{limits[0]}"')
    if len(limits) == 1:
        return first, first
    last = _atoi(limits[1])
    if last >= completions:
        raise IndexesFormatError(f'too large index: "{limits[1]}"')
    if first >= last:
        raise IndexesFormatError(f"non-increasing order, previous: {first}, current: {last}")
    return first, last


def _atoi(text: str) -> int:
    # Go's strconv.Atoi: an optional sign and decimal digits, nothing else.
    body = text[1:] if text[:1] in ("+", "-") else text
    if not body.isascii() or not body.isdigit():
        raise IndexesFormatError(f'cannot convert string to integer for index: "{text}"')
    return int(text)


def indexes_total(text: str, completions: int) -> int:
    """How many indexes ``text`` (``1,3-5``) names; :class:`IndexesFormatError` as upstream's
    ``validateIndexesFormat`` words it when it is malformed, out of range or not increasing."""
    if not text:
        return 0
    total = 0
    last: int | None = None
    for part in text.split(","):
        first, end = _interval(part, completions)
        if last is not None and last >= first:
            raise IndexesFormatError(f"non-increasing order, previous: {last}, current: {first}")
        total += end - first + 1
        last = end
    return total


def job_spec_causes(spec: Mapping[str, Any]) -> list[Cause]:
    causes: list[Cause] = []
    for field in (
        "parallelism",
        "completions",
        "activeDeadlineSeconds",
        "backoffLimit",
        "ttlSecondsAfterFinished",
        "backoffLimitPerIndex",
    ):
        value = _int(spec.get(field))
        if value is not None:
            causes += _nonnegative(f"spec.{field}", value)
    completions = _int(spec.get("completions"))
    parallelism = _int(spec.get("parallelism"))
    per_index = _int(spec.get("backoffLimitPerIndex"))
    max_failed = _int(spec.get("maxFailedIndexes"))
    if max_failed is not None:
        causes += _nonnegative("spec.maxFailedIndexes", max_failed)
        if spec.get("backoffLimitPerIndex") is None:
            causes.append(required("spec.backoffLimitPerIndex", "when maxFailedIndexes is specified"))
    mode = spec.get("completionMode")
    if mode is not None and mode not in (NON_INDEXED, INDEXED):
        causes.append(not_supported("spec.completionMode", mode, (NON_INDEXED, INDEXED)))
    if mode == INDEXED:
        if spec.get("completions") is None:
            causes.append(required("spec.completions", f"when completion mode is {INDEXED}"))
        if parallelism is not None and parallelism > MAX_PARALLELISM_FOR_INDEXED_JOB:
            causes.append(
                invalid(
                    "spec.parallelism",
                    parallelism,
                    f"must be less than or equal to {MAX_PARALLELISM_FOR_INDEXED_JOB} when completion "
                    f"mode is {INDEXED}",
                )
            )
        if completions is not None and max_failed is not None and max_failed > completions:
            causes.append(
                invalid("spec.maxFailedIndexes", max_failed, "must be less than or equal to completions")
            )
        if max_failed is not None and max_failed > MAX_FAILED_INDEXES_FOR_INDEXED_JOB:
            causes.append(
                invalid(
                    "spec.maxFailedIndexes",
                    max_failed,
                    f"must be less than or equal to {MAX_FAILED_INDEXES_FOR_INDEXED_JOB}",
                )
            )
        if completions is not None and completions > COMPLETIONS_SOFT_LIMIT and per_index is not None:
            causes += _high_completions_causes(parallelism, max_failed)
    if mode in (None, NON_INDEXED):
        if per_index is not None:
            causes.append(invalid("spec.backoffLimitPerIndex", per_index, "requires indexed completion mode"))
        if max_failed is not None:
            causes.append(invalid("spec.maxFailedIndexes", max_failed, "requires indexed completion mode"))
    policy = spec.get("podFailurePolicy")
    if isinstance(policy, Mapping):
        for i, rule in enumerate(policy.get("rules") or []):
            if isinstance(rule, Mapping) and rule.get("action") == "FailIndex" and per_index is None:
                causes.append(
                    invalid(
                        f"spec.podFailurePolicy.rules[{i}].action",
                        "FailIndex",
                        "requires the backoffLimitPerIndex to be set",
                    )
                )
    success = spec.get("successPolicy")
    if success is not None:
        if mode != INDEXED:
            causes.append(invalid("spec.successPolicy", success, "requires indexed completion mode"))
        elif isinstance(success, Mapping):
            causes += _success_policy_causes(success, completions or 0)
    return causes


def _high_completions_causes(parallelism: int | None, max_failed: int | None) -> list[Cause]:
    causes: list[Cause] = []
    above = f"when completions are above {COMPLETIONS_SOFT_LIMIT} and used with backoff limit per index"
    if max_failed is None:
        causes.append(
            required(
                "spec.maxFailedIndexes",
                f"must be specified when completions is above {COMPLETIONS_SOFT_LIMIT}",
            )
        )
    if parallelism is not None and parallelism > PARALLELISM_LIMIT_FOR_HIGH_COMPLETIONS:
        causes.append(
            invalid(
                "spec.parallelism",
                parallelism,
                f"must be less than or equal to {PARALLELISM_LIMIT_FOR_HIGH_COMPLETIONS} {above}",
            )
        )
    if max_failed is not None and max_failed > MAX_FAILED_INDEXES_LIMIT_FOR_HIGH_COMPLETIONS:
        causes.append(
            invalid(
                "spec.maxFailedIndexes",
                max_failed,
                f"must be less than or equal to {MAX_FAILED_INDEXES_LIMIT_FOR_HIGH_COMPLETIONS} {above}",
            )
        )
    return causes


def _success_policy_causes(policy: Mapping[str, Any], completions: int) -> list[Cause]:
    causes: list[Cause] = []
    rules = policy.get("rules") or []
    path = "spec.successPolicy.rules"
    if not rules:
        causes.append(
            required(path, "at least one rules must be specified when the successPolicy is specified")
        )
    if len(rules) > MAX_SUCCESS_POLICY_RULES:
        causes.append(too_many(path, len(rules), MAX_SUCCESS_POLICY_RULES))
    for i, rule in enumerate(rules):
        if not isinstance(rule, Mapping):
            continue
        rule_path = f"{path}[{i}]"
        indexes, count = rule.get("succeededIndexes"), _int(rule.get("succeededCount"))
        if indexes is None and rule.get("succeededCount") is None:
            causes.append(
                required(rule_path, "at least one of succeededCount or succeededIndexes must be specified")
            )
        total = 0
        if isinstance(indexes, str):
            if len(indexes) > MAX_SUCCEEDED_INDEXES_LENGTH:
                causes.append(
                    (
                        "FieldValueTooLong",
                        f"{rule_path}.succeededIndexes",
                        f"Too long: may not be more than {MAX_SUCCEEDED_INDEXES_LENGTH} bytes",
                    )
                )
            try:
                total = indexes_total(indexes, completions)
            except IndexesFormatError as err:
                causes.append(
                    invalid(
                        f"{rule_path}.succeededIndexes", indexes, f"error parsing succeededIndexes: {err}"
                    )
                )
        if count is not None:
            count_path = f"{rule_path}.succeededCount"
            causes += _nonnegative(count_path, count)
            if count > completions:
                causes.append(
                    invalid(
                        count_path,
                        count,
                        f"must be less than or equal to {completions} (the number of specified completions)",
                    )
                )
            if indexes is not None and count > total:
                causes.append(
                    invalid(
                        count_path,
                        count,
                        f"must be less than or equal to {total} (the number of indexes in the specified "
                        "succeededIndexes field)",
                    )
                )
    return causes


def job_update_causes(old_spec: Mapping[str, Any], new_spec: Mapping[str, Any]) -> list[Cause]:
    """The spec fields an update changed that may not change."""
    return [
        invalid(f"spec.{field}", new_spec.get(field), "field is immutable")
        for field in IMMUTABLE_FIELDS
        if new_spec.get(field) != old_spec.get(field)
    ]
