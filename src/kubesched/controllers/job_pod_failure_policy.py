"""A Job's ``podFailurePolicy`` (upstream ``pkg/controller/job/pod_failure_policy.go``): the first
rule that matches a failed pod, by a container's non-zero exit code or by a pod condition, decides
what the failure means. ``FailJob`` fails the Job at once (reason ``PodFailurePolicy``), ``Ignore``
leaves the failure out of ``status.failed`` and the backoff limit, ``Count`` counts it as usual,
and ``FailIndex`` counts it and fails the pod's index of a Job with ``backoffLimitPerIndex``. A rule
with an unknown action or operator matches nothing."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

FAIL_JOB, IGNORE, COUNT, FAIL_INDEX = "FailJob", "Ignore", "Count", "FailIndex"
_ACTIONS = (FAIL_JOB, IGNORE, COUNT, FAIL_INDEX)


def match_pod_failure_policy(
    policy: Mapping[str, Any] | None, pod: Mapping[str, Any]
) -> tuple[str | None, bool, str | None]:
    """(the Job's failure message for a ``FailJob`` match, whether the failure counts, the action
    of the matching rule), as upstream's ``matchPodFailurePolicy``."""
    if not isinstance(policy, Mapping):
        return None, True, None
    meta = pod.get("metadata") or {}
    status = pod.get("status") or {}
    where = f"{meta.get('namespace')}/{meta.get('name')}"
    for index, rule in enumerate(policy.get("rules") or []):
        if not isinstance(rule, Mapping):
            continue
        action = rule.get("action")
        if action not in _ACTIONS:
            continue
        if rule.get("onExitCodes") is not None:
            container = _match_exit_codes(status, rule["onExitCodes"])
            if container is None:
                continue
            if action == FAIL_JOB:
                code = container["state"]["terminated"].get("exitCode")
                return (
                    f"Container {container.get('name', '')} for pod {where} failed with exit code {code} "
                    f"matching {action} rule at index {index}",
                    True,
                    action,
                )
        elif rule.get("onPodConditions") is not None:
            condition = _match_conditions(status, rule["onPodConditions"])
            if condition is None:
                continue
            if action == FAIL_JOB:
                kind = condition.get("type")
                return (
                    f"Pod {where} has condition {kind} matching {action} rule at index {index}",
                    True,
                    action,
                )
        else:
            continue
        return None, action != IGNORE, action
    return None, True, None


def _match_exit_codes(status: Mapping[str, Any], requirement: Any) -> dict[str, Any] | None:
    if not isinstance(requirement, Mapping):
        return None
    for key in ("containerStatuses", "initContainerStatuses"):
        found = _matching_container(status.get(key) or [], requirement)
        if found is not None:
            return found
    return None


def _matching_container(statuses: Sequence[Any], requirement: Mapping[str, Any]) -> dict[str, Any] | None:
    name = requirement.get("containerName")
    for cs in statuses:
        if not isinstance(cs, dict):
            continue
        terminated = (cs.get("state") or {}).get("terminated")
        if not isinstance(terminated, dict):
            continue  # still terminating: no exit code to match
        if name is not None and name != cs.get("name"):
            continue
        code = terminated.get("exitCode", 0)
        if code != 0 and _operator_matches(code, requirement):
            return cs
    return None


def _operator_matches(code: Any, requirement: Mapping[str, Any]) -> bool:
    values = requirement.get("values") or []
    if requirement.get("operator") == "In":
        return code in values
    if requirement.get("operator") == "NotIn":
        return code not in values
    return False


def _match_conditions(status: Mapping[str, Any], patterns: Any) -> dict[str, Any] | None:
    for cond in status.get("conditions") or []:
        if not isinstance(cond, dict):
            continue
        for pattern in patterns or []:
            # The API defaults a pattern's status to True.
            if (
                isinstance(pattern, Mapping)
                and cond.get("type") == pattern.get("type")
                and cond.get("status") == pattern.get("status", "True")
            ):
                return cond
    return None
