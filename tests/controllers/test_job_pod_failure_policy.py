"""Upstream's ``TestMatchPodFailurePolicy`` table (case names verbatim, the cases that do not need
per-index backoff or rule names)."""

from __future__ import annotations

from typing import Any

import pytest

from kubesched.controllers.job_pod_failure_policy import match_pod_failure_policy


def _failed(containers: list[tuple[str | None, int | None]] = (), conditions=(), init=()) -> dict[str, Any]:
    def statuses(items):
        out = []
        for name, code in items:
            cs: dict[str, Any] = {} if name is None else {"name": name}
            if code is not None:
                cs["state"] = {"terminated": {"exitCode": code}}
            out.append(cs)
        return out

    status: dict[str, Any] = {"phase": "Failed", "containerStatuses": statuses(containers)}
    if init:
        status["initContainerStatuses"] = statuses(init)
    if conditions:
        status["conditions"] = [{"type": t, "status": s} for t, s in conditions]
    return {"metadata": {"namespace": "default", "name": "mypod"}, "status": status}


def _container_message(code: int, index: int) -> str:
    return (
        f"Container main-container for pod default/mypod failed with exit code {code} "
        f"matching FailJob rule at index {index}"
    )


def _exit(action: str, operator: str, values: list[int]) -> dict[str, Any]:
    return {"action": action, "onExitCodes": {"operator": operator, "values": values}}


def _cond(action: str, status: str = "True") -> dict[str, Any]:
    return {"action": action, "onPodConditions": [{"type": "DisruptionTarget", "status": status}]}


CASES = [
    (
        "unknown action for rule matching by exit codes - skip rule with unknown action",
        [_exit("UnknownAction", "In", [1, 2]), _exit("FailJob", "In", [2, 3])],
        _failed([("main-container", 2)]),
        (
            _container_message(2, 1),
            True,
            "FailJob",
        ),
    ),
    (
        "unknown action for rule matching by pod conditions - skip rule with unknown action",
        [_cond("UnkonwnAction"), _cond("Ignore")],
        _failed(conditions=[("DisruptionTarget", "True")]),
        (None, False, "Ignore"),
    ),
    (
        "unknown operator - rule with unknown action is skipped for onExitCodes",
        [_exit("Ignore", "UnknownOperator", [1, 2]), _exit("FailJob", "In", [2, 3])],
        _failed([("main-container", 2)]),
        (
            _container_message(2, 1),
            True,
            "FailJob",
        ),
    ),
    ("no policy rules", None, _failed([(None, 2)]), (None, True, None)),
    (
        "ignore rule matched for exit codes",
        [_exit("Ignore", "In", [1, 2, 3])],
        _failed([(None, 2)]),
        (None, False, "Ignore"),
    ),
    (
        "ignore rule matched on negative exit codes - needed for Windows support",
        [_exit("Ignore", "In", [-1073741676, -1073741510])],
        _failed([(None, -1073741510)]),
        (None, False, "Ignore"),
    ),
    (
        "FailJob rule matched for exit codes",
        [_exit("FailJob", "In", [1, 2, 3])],
        _failed([("main-container", 2)]),
        (
            _container_message(2, 0),
            True,
            "FailJob",
        ),
    ),
    (
        "successful containers are skipped by the rules",
        [_exit("FailJob", "NotIn", [111])],
        _failed([("main-container", 111), ("suppport-container", 0)], init=[("init-container", 0)]),
        (None, True, None),
    ),
    (
        "FailIndex rule matched for exit codes",
        [_exit("FailIndex", "In", [1, 2, 3])],
        _failed([(None, 2)]),
        (None, True, "FailIndex"),
    ),
    (
        "pod failure policy with NotIn operator and value 0",
        [_exit("FailJob", "NotIn", [0])],
        _failed([("main-container", 1), ("suppport-container", 0)]),
        (
            _container_message(1, 0),
            True,
            "FailJob",
        ),
    ),
    (
        "second jobfail rule matched for exit codes",
        [_exit("Count", "In", [1, 2, 3]), _exit("FailJob", "In", [4, 5, 6])],
        _failed([("main-container", 6)]),
        (
            _container_message(6, 1),
            True,
            "FailJob",
        ),
    ),
    (
        "count rule matched for exit codes",
        [_exit("Count", "In", [1, 2, 3])],
        _failed([("foo", None), ("bar", 2)]),
        (None, True, "Count"),
    ),
    (
        "FailIndex rule matched for pod conditions",
        [_cond("FailIndex")],
        _failed(conditions=[("DisruptionTarget", "True")]),
        (None, True, "FailIndex"),
    ),
    (
        "ignore rule matched for pod conditions",
        [_cond("Ignore")],
        _failed(conditions=[("DisruptionTarget", "True")]),
        (None, False, "Ignore"),
    ),
    (
        "ignore rule matches by the status=False",
        [_cond("Ignore", "False")],
        _failed(conditions=[("DisruptionTarget", "False")]),
        (None, False, "Ignore"),
    ),
    (
        "ignore rule matches by the status=Unknown",
        [_cond("Ignore", "Unknown")],
        _failed(conditions=[("DisruptionTarget", "Unknown")]),
        (None, False, "Ignore"),
    ),
    (
        "ignore rule does not match when status for pattern is False, but actual True",
        [_cond("Ignore", "False")],
        _failed(conditions=[("DisruptionTarget", "True")]),
        (None, True, None),
    ),
    (
        "FailJob rule matched for pod conditions",
        [_cond("FailJob")],
        _failed(conditions=[("DisruptionTarget", "True")]),
        (
            "Pod default/mypod has condition DisruptionTarget matching FailJob rule at index 0",
            True,
            "FailJob",
        ),
    ),
]


@pytest.mark.parametrize(("name", "rules", "pod", "want"), CASES, ids=[c[0] for c in CASES])
def test_match_pod_failure_policy(name, rules, pod, want) -> None:
    policy = None if rules is None else {"rules": rules}
    assert match_pod_failure_policy(policy, pod) == want
