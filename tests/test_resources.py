"""Upstream pod request rules (``resourcehelper.PodRequests`` and the scheduler's non-zero requests).

Expected values are cross-checked against upstream
``staging/src/k8s.io/component-helpers/resource/helpers_test.go`` (TestPodRequestsAndLimits,
TestPodRequestsAndLimitsWithoutOverhead, TestPodResourceRequests / TestPodResourceLimits sidecar cases)
and ``pkg/scheduler/framework/types.go`` (``calculateResource``, ``getNonMissingContainerRequests``).
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kubesched.api.resources import (
    DEFAULT_MEMORY_REQUEST,
    DEFAULT_MILLI_CPU_REQUEST,
    _pod_requests,
    is_extended_resource,
    is_hugepages,
    parse_resource_list,
    pod_requests,
)
from kubesched.errors import InputError

Mi = 1024 * 1024
Gi = 1024 * Mi


def c(requests: dict[str, Any] | None = None, limits: dict[str, Any] | None = None, **extra: Any):
    resources: dict[str, Any] = {}
    if requests is not None:
        resources["requests"] = requests
    if limits is not None:
        resources["limits"] = limits
    return {"name": "c", "image": "x", "resources": resources, **extra}


def sidecar(requests: dict[str, Any]) -> dict[str, Any]:
    return c(requests, restartPolicy="Always")


def reqs(spec: dict[str, Any]) -> dict[str, int]:
    return pod_requests(spec)[0]


def nonzero(spec: dict[str, Any]) -> dict[str, int]:
    return pod_requests(spec)[1]


# -- containers, init containers, overhead -----------------------------------------------------------


def test_containers_add_up():
    # upstream "two container no overhead - should just be sum of containers"
    spec = {
        "containers": [
            c({"cpu": "1", "memory": "5"}, {"cpu": "2", "memory": "10"}),
            c({"cpu": "4", "memory": "12"}, {"cpu": "8", "memory": "24"}),
        ]
    }
    assert reqs(spec) == {"cpu": 5000, "memory": 17}


def test_extended_resources_add_up_too():
    spec = {"containers": [c({"nvidia.com/gpu": "1"}), c({"nvidia.com/gpu": "2", "cpu": "250m"})]}
    assert reqs(spec) == {"cpu": 250, "nvidia.com/gpu": 3}


@pytest.mark.parametrize(
    ("overhead", "requests", "expected"),
    [
        # upstream TestPodRequestsAndLimits
        ({"cpu": "5", "memory": "5"}, None, {"cpu": 5000, "memory": 5}),  # just-overhead
        ({"cpu": "5", "memory": "5"}, {"cpu": "1", "memory": "10"}, {"cpu": 6000, "memory": 15}),
    ],
)
def test_overhead_is_added(overhead, requests, expected):
    spec = {"overhead": overhead, "containers": [c(requests)]}
    assert reqs(spec) == expected


def test_overhead_added_after_init_max():
    # upstream "two container with overhead, massive init" (there with ExcludeOverhead: 40 / 120)
    spec = {
        "overhead": {"cpu": "3", "memory": "8"},
        "containers": [c({"cpu": "1", "memory": "5"}), c({"cpu": "4", "memory": "12"})],
        "initContainers": [c({"cpu": "1", "memory": "5"}), c({"cpu": "40", "memory": "120"})],
    }
    assert reqs(spec) == {"cpu": 43000, "memory": 128}


@pytest.mark.parametrize(
    ("init", "containers", "expected_cpu"),
    [
        ([{"cpu": "4"}], [{"cpu": "1"}], 4000),  # upstream "nil options, larger init container"
        ([{"cpu": "2"}], [{"cpu": "2"}, {"cpu": "3"}], 5000),  # "nil options, larger containers"
        ([{"cpu": "3"}, {"cpu": "1"}], [{"cpu": "1"}], 3000),  # init containers run one at a time
    ],
)
def test_init_containers_take_the_max(init, containers, expected_cpu):
    spec = {"initContainers": [c(r) for r in init], "containers": [c(r) for r in containers]}
    assert reqs(spec)["cpu"] == expected_cpu


def test_init_max_is_per_resource():
    spec = {
        "initContainers": [c({"cpu": "4", "memory": "1Gi"})],
        "containers": [c({"cpu": "1", "memory": "3Gi"})],
    }
    assert reqs(spec) == {"cpu": 4000, "memory": 3 * Gi}


# -- sidecars (restartable init containers) ----------------------------------------------------------


def test_sidecar_adds_to_containers():
    # upstream "restartable init container": 1 + 1
    spec = {"initContainers": [sidecar({"cpu": "1"})], "containers": [c({"cpu": "1"})]}
    assert reqs(spec)["cpu"] == 2000


def test_multiple_sidecars():
    # upstream "multiple restartable init containers": max(5, (3+2+1) + 1) = 7
    spec = {
        "initContainers": [
            c({"cpu": "5"}),
            sidecar({"cpu": "1"}),
            sidecar({"cpu": "2"}),
            sidecar({"cpu": "3"}),
        ],
        "containers": [c({"cpu": "1"})],
    }
    assert reqs(spec)["cpu"] == 7000


def test_sidecars_add_to_later_init_containers_only():
    # upstream "multiple restartable and regular init containers": init-2 needs 5 + (1+2) = 8;
    # the sidecar started after it does not count for it
    spec = {
        "initContainers": [
            c({"cpu": "5"}),
            sidecar({"cpu": "1"}),
            sidecar({"cpu": "2"}),
            c({"cpu": "5"}),
            sidecar({"cpu": "3"}),
        ],
        "containers": [c({"cpu": "1"})],
    }
    assert reqs(spec)["cpu"] == 8000


def test_sidecar_init_and_regular():
    # upstream "restartable-init, init and regular": max(100 + 10, 200 + 10) = 210
    spec = {
        "initContainers": [sidecar({"cpu": "10"}), c({"cpu": "200"})],
        "containers": [c({"cpu": "100"})],
    }
    assert reqs(spec)["cpu"] == 210_000


def test_quickstart_web3_shape():
    # migrate (2, 2Gi) runs before the log-shipper sidecar starts: max(0.5+0.1, 2) cpu
    spec = {
        "initContainers": [c({"cpu": "2", "memory": "2Gi"}), sidecar({"cpu": "100m", "memory": "128Mi"})],
        "containers": [c({"cpu": "500m", "memory": "1Gi"})],
    }
    assert reqs(spec) == {"cpu": 2000, "memory": 2 * Gi}


def test_restart_policy_other_than_always_is_an_ordinary_init_container():
    spec = {
        "initContainers": [c({"cpu": "1"}, restartPolicy="Never")],
        "containers": [c({"cpu": "1"})],
    }
    assert reqs(spec)["cpu"] == 1000


# -- limits defaulting, pod-level resources ----------------------------------------------------------


def test_limit_only_container_requests_its_limit():
    spec = {"containers": [c(None, {"cpu": "9", "memory": "1Gi", "nvidia.com/gpu": "1"})]}
    assert reqs(spec) == {"cpu": 9000, "memory": Gi, "nvidia.com/gpu": 1}
    # and the limit also counts for scoring
    assert nonzero(spec) == {"cpu": 9000, "memory": Gi}


def test_explicit_request_wins_over_limit():
    spec = {"containers": [c({"cpu": "1"}, {"cpu": "2", "memory": "12"})]}
    assert reqs(spec) == {"cpu": 1000, "memory": 12}


def test_pod_level_requests_override_cpu_and_memory():
    spec = {
        "resources": {"requests": {"cpu": "3", "memory": "1Gi"}},
        "containers": [c({"cpu": "1", "memory": "100Mi", "nvidia.com/gpu": "1"}), c({"cpu": "1"})],
    }
    assert reqs(spec) == {"cpu": 3000, "memory": Gi, "nvidia.com/gpu": 1}
    assert nonzero(spec) == {"cpu": 3000, "memory": Gi}


def test_pod_level_requests_for_one_resource_keep_container_aggregate_for_the_other():
    spec = {
        "resources": {"requests": {"memory": "2Gi"}},
        "overhead": {"cpu": "100m", "memory": "10Mi"},
        "containers": [c({"cpu": "1", "memory": "100Mi"}), c({"cpu": "1"})],
    }
    assert reqs(spec) == {"cpu": 2100, "memory": 2 * Gi + 10 * Mi}


def test_pod_level_requests_ignore_unsupported_resources():
    spec = {"resources": {"requests": {"nvidia.com/gpu": "4"}}, "containers": [c({"nvidia.com/gpu": "1"})]}
    assert reqs(spec)["nvidia.com/gpu"] == 1
    # not "pod-level resources set": per-container defaults still apply
    assert nonzero(spec) == {"cpu": DEFAULT_MILLI_CPU_REQUEST, "memory": DEFAULT_MEMORY_REQUEST}


def test_pod_level_bad_quantity_names_the_field():
    with pytest.raises(InputError) as info:
        pod_requests({"resources": {"requests": {"cpu": "lots"}}, "containers": [c()]})
    assert info.value.field == "spec.resources.requests.cpu"


# -- non-zero scoring requests -----------------------------------------------------------------------


def test_nonzero_defaults_per_container_lacking_the_request():
    assert reqs({"containers": [c()]}) == {}
    spec = {"containers": [c(), c({"cpu": "1"}), c({"memory": "1Gi"})]}
    assert reqs(spec) == {"cpu": 1000, "memory": Gi}
    assert nonzero(spec) == {
        "cpu": 2 * DEFAULT_MILLI_CPU_REQUEST + 1000,
        "memory": 2 * DEFAULT_MEMORY_REQUEST + Gi,
    }
    defaults = nonzero({"containers": [c()]})
    assert defaults == {"cpu": 100, "memory": 200 * Mi}  # upstream DefaultMilliCPURequest / MemoryRequest


def test_nonzero_explicit_zero_stays_zero():
    spec = {"containers": [c({"cpu": "0", "memory": "0"})]}
    assert reqs(spec) == {"cpu": 0, "memory": 0}
    assert nonzero(spec) == {"cpu": 0, "memory": 0}


def test_nonzero_follows_init_and_sidecar_rules_and_adds_overhead():
    spec = {
        "overhead": {"cpu": "50m"},
        "initContainers": [c({"cpu": "1"}), sidecar({})],
        "containers": [c()],
    }
    # containers: 100m default + sidecar 100m default = 200m; init step max(1000m) -> 1000m; + 50m
    assert nonzero(spec)["cpu"] == 1050
    # memory: 200Mi + 200Mi (sidecar); init step: 200Mi default
    assert nonzero(spec)["memory"] == 2 * DEFAULT_MEMORY_REQUEST
    assert reqs(spec) == {"cpu": 1050}


def test_nonzero_with_pod_level_requests_defaults_only_missing_resources():
    # upstream getNonMissingContainerRequests: with pod-level requests set, the 100m / 200Mi defaults
    # apply only to a resource neither the pod level nor any container requests
    spec = {
        "resources": {"requests": {"memory": "1Gi"}},
        "containers": [c({"cpu": "1"}), c()],
    }
    assert nonzero(spec) == {"cpu": 1000, "memory": Gi}
    spec = {"resources": {"requests": {"memory": "1Gi"}}, "containers": [c(), c()]}
    assert nonzero(spec) == {"cpu": 2 * DEFAULT_MILLI_CPU_REQUEST, "memory": Gi}


# -- resource lists and errors -----------------------------------------------------------------------


def test_parse_resource_list_units():
    assert parse_resource_list(
        {"cpu": "1.5", "memory": "1Gi", "pods": 110, "ephemeral-storage": "1k", "example.com/foo": 3},
        "x",
    ) == {"cpu": 1500, "memory": Gi, "pods": 110, "ephemeral-storage": 1000, "example.com/foo": 3}


@pytest.mark.parametrize(
    ("spec", "field"),
    [
        ({"containers": [c({"cpu": "abc"})]}, "spec.containers[0].resources.requests.cpu"),
        ({"containers": [c(None, {"memory": "1Xi"})]}, "spec.containers[0].resources.limits.memory"),
        ({"containers": [c(), c({"cpu": "-1"})]}, "spec.containers[1].resources.requests.cpu"),
        (
            {"containers": [c()], "initContainers": [c({"cpu": "x"})]},
            "spec.initContainers[0].resources.requests.cpu",
        ),
        ({"containers": [c()], "overhead": {"cpu": "?"}}, "spec.overhead.cpu"),
        ({"containers": [c()], "overhead": 5}, "spec.overhead"),
        ({"containers": 5}, "spec.containers"),
        ({"containers": [5]}, "spec.containers[0]"),
        ({"containers": [{"name": "c", "resources": "big"}]}, "spec.containers[0].resources"),
        ({"containers": [c([1])]}, "spec.containers[0].resources.requests"),
        ({"containers": [c()], "initContainers": {"a": 1}}, "spec.initContainers"),
    ],
)
def test_bad_resources_name_the_field(spec, field):
    with pytest.raises(InputError) as info:
        pod_requests(spec)
    assert info.value.field == field


def test_resource_name_classes():
    assert is_extended_resource("nvidia.com/gpu")
    assert not is_extended_resource("cpu")
    assert not is_extended_resource("kubernetes.io/foo")
    assert not is_extended_resource("node.kubernetes.io/foo")
    assert is_hugepages("hugepages-2Mi")
    assert not is_hugepages("memory")


# -- property ------------------------------------------------------------------------------------------

_names = st.sampled_from(["cpu", "memory", "ephemeral-storage", "nvidia.com/gpu", "example.com/fpga"])
_amounts = st.integers(min_value=0, max_value=10**6)
_requests = st.dictionaries(_names, _amounts, max_size=5)


@settings(max_examples=150, deadline=None)
@given(containers=st.lists(_requests, min_size=1, max_size=6), overhead=_requests)
def test_without_init_containers_requests_are_the_sum(containers, overhead):
    def amount(name: str, n: int) -> int:
        return n * 1000 if name == "cpu" else n

    spec: dict[str, Any] = {
        "containers": [c({k: str(v) for k, v in r.items()}) for r in containers],
        "overhead": {k: str(v) for k, v in overhead.items()},
    }
    expected: dict[str, int] = {}
    for r in [*containers, overhead]:
        for name, value in r.items():
            expected[name] = expected.get(name, 0) + amount(name, value)
    got, nz = pod_requests(spec)
    # zero extended resources may be dropped; cpu and memory keep their explicit zero
    assert {k: v for k, v in got.items() if v} == {k: v for k, v in expected.items() if v}
    for name in ("cpu", "memory"):
        if name in expected:
            assert got[name] == expected[name]
    missing_cpu = sum(1 for r in containers if "cpu" not in r)
    missing_mem = sum(1 for r in containers if "memory" not in r)
    assert nz["cpu"] == expected.get("cpu", 0) + missing_cpu * DEFAULT_MILLI_CPU_REQUEST
    assert nz["memory"] == expected.get("memory", 0) + missing_mem * DEFAULT_MEMORY_REQUEST


# -- memo ----------------------------------------------------------------------------------------------


def _answer(spec: dict[str, Any], field: str = "spec", *, afresh: bool = False) -> Any:
    """What ``pod_requests`` gives (or the field and message it fails with); ``afresh``: bypassing
    the memo."""
    try:
        return _pod_requests(spec, field) if afresh else pod_requests(spec, field)
    except InputError as exc:
        return (exc.field, str(exc))


def test_repeated_resources_give_the_same_answer_in_dicts_of_their_own():
    first, first_nz = pod_requests({"containers": [c({"cpu": "100m", "memory": "500Mi"})]})
    first["cpu"] = 7
    first_nz["memory"] = 7
    again, again_nz = pod_requests({"containers": [c({"cpu": "100m", "memory": "500Mi"})]})
    assert again == {"cpu": 100, "memory": 500 * Mi}
    assert again_nz == {"cpu": 100, "memory": 500 * Mi}


_EQUAL_VALUES = ["1", 1, 1.0, 1.5, True, "1.5"]


@pytest.mark.parametrize("value", _EQUAL_VALUES)
def test_quantities_that_compare_equal_are_not_confused(value):
    # 1 == 1.0 == True: each must give what it gives alone, whichever came first.
    for v in [value, *_EQUAL_VALUES]:
        spec = {"containers": [c({"example.com/fpga": v, "cpu": v})]}
        assert _answer(spec) == _answer(spec, afresh=True)


def test_bad_input_fails_every_time_with_the_field_it_was_read_as():
    spec = {"containers": [c({"cpu": "-1"})]}
    for field in ("spec", "template.spec", "spec"):
        with pytest.raises(InputError) as info:
            pod_requests(spec, field)
        assert info.value.field == f"{field}.containers[0].resources.requests.cpu"


@settings(max_examples=150, deadline=None)
@given(
    containers=st.lists(st.tuples(_requests, _requests), min_size=1, max_size=3),
    inits=st.lists(st.tuples(_requests, st.booleans()), max_size=3),
    level=st.one_of(st.none(), _requests),
    overhead=_requests,
)
def test_memo_answers_as_parsing_afresh(containers, inits, level, overhead):
    def q(r: dict[str, int]) -> dict[str, str]:
        return {k: str(v) for k, v in r.items()}

    spec: dict[str, Any] = {
        "containers": [c(q(requests), q(limits)) for requests, limits in containers],
        "initContainers": [c(q(r), restartPolicy="Always") if always else c(q(r)) for r, always in inits],
        "overhead": q(overhead),
    }
    if level is not None:
        spec["resources"] = {"requests": q(level)}
    want = _answer(spec, afresh=True)
    for _ in range(2):
        got = _answer(spec)
        assert got == want
        if isinstance(want[0], dict):
            assert list(got[0]) == list(want[0])  # the resources in the same order, too
