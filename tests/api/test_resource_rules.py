"""Upstream's defaults and validation of the ``resource.k8s.io/v1`` kinds. Cases named as in
``pkg/apis/resource/validation/validation_*_test.go`` mirror those cases (their metadata cases are
the registry's, not these rules')."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

from kubesched.api import resource_rules as rules

GOOD = "foo"
BAD = "!@#$%^"
DRIVER = "test.example.com"

SUBDOMAIN = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and "
    "must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is "
    r"'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
)
LABEL = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start "
    "and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is "
    "'[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
)
C_IDENTIFIER = (
    "a valid C identifier must start with alphabetic character or '_', followed by a string of alphanumeric "
    "characters or '_' (e.g. 'my_name',  or 'MY_NAME',  or 'MyName', regex used for validation is "
    "'[A-Za-z_][A-Za-z0-9_]*')"
)
REQUEST_REF = (
    "must be the name of a request in the claim or the name of a request and a subrequest separated by '/'"
)


def invalid(path: str, value: str, detail: str) -> tuple[str, str]:
    return path, f"Invalid value: {value}: {detail}"


# -- ResourceSlice -------------------------------------------------------------------------------
def _slice(devices: int = 1, *, driver: str = DRIVER, node: str = GOOD) -> dict[str, Any]:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": GOOD},
        "spec": {
            "nodeName": node,
            "driver": driver,
            "pool": {"name": node, "resourceSliceCount": 1},
            "devices": [
                {
                    "name": f"device-{d}",
                    "attributes": {
                        "int": {"int": 42},
                        "string": {"string": "hello world"},
                        "version": {"version": "1.2.3"},
                        "bool": {"bool": True},
                    },
                    "capacity": {"memory": {"value": "1Gi"}},
                }
                for d in range(devices)
            ],
        },
    }


def _with(obj: dict[str, Any], change: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
    obj = copy.deepcopy(obj)
    change(obj["spec"])
    return obj


def _tainted(spec: dict[str, Any]) -> None:
    for device in spec["devices"]:
        device["taints"] = [{"key": "example.com/taint", "effect": "NoExecute"}]


def _bad_pool(spec: dict[str, Any]) -> None:
    spec["pool"] = {"name": "x/" * 126 + "xy", "resourceSliceCount": 0, "generation": -1}


def _node_selector(spec: dict[str, Any]) -> None:
    del spec["nodeName"]
    spec["nodeSelector"] = {}


def _two_selections(spec: dict[str, Any]) -> None:
    spec["nodeName"] = "worker"
    spec["nodeSelector"] = {
        "nodeSelectorTerms": [
            {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["worker"]}]}
        ]
    }


def _bad_attributes(spec: dict[str, Any]) -> None:
    devices = spec["devices"]
    devices[1]["attributes"] = {BAD: {}}
    devices[2]["attributes"] = {GOOD: {"string": "x", "version": "1.2.3"}}
    devices[3]["attributes"] = {GOOD: {"version": "x" * 65}}
    devices[4]["attributes"] = {GOOD: {"string": "x" * 65}}


SLICE_CASES: dict[str, tuple[dict[str, Any], list[tuple[str, str]]]] = {
    "good": (_slice(128), []),
    "too-large": (_slice(129, driver=GOOD), [("spec.devices", "Too many: 129: must have at most 128 items")]),
    "good-taints": (_with(_slice(64, driver=GOOD), _tainted), []),
    "too-large-taints": (
        _with(_slice(65, driver=GOOD), _tainted),
        [("spec.devices", "Too many: 65: must have at most 64 items")],
    ),
    "bad-pool": (
        _with(_slice(), _bad_pool),
        [
            ("spec.pool.name", "Too long: may not be more than 253 bytes"),
            invalid("spec.pool.resourceSliceCount", "0", "must be greater than zero"),
            invalid("spec.pool.generation", "-1", "must be greater than or equal to zero"),
        ],
    ),
    "missing-pool-name": (
        _with(_slice(), lambda spec: spec["pool"].update(name="")),
        [("spec.pool.name", "Required value")],
    ),
    "bad-empty-node-selector": (
        _with(_slice(), _node_selector),
        [
            (
                "spec.nodeSelector.nodeSelectorTerms",
                "Required value: must have at least one node selector term",
            ),
            invalid("spec.nodeSelector.nodeSelectorTerms", "[]", "must have exactly one node selector term"),
        ],
    ),
    "bad-node-selection": (
        _with(_slice(), _two_selections),
        [
            invalid(
                "spec",
                '"{`nodeName`, `nodeSelector`}"',
                "exactly one of `nodeName`, `nodeSelector`, `allNodes`, `perDeviceNodeSelection` is "
                "required, but multiple fields are set",
            )
        ],
    ),
    "bad-node-selection-all-nodes": (
        _with(_slice(), lambda spec: spec.update(nodeName="worker", allNodes=True)),
        [
            invalid(
                "spec",
                '"{`nodeName`, `allNodes`}"',
                "exactly one of `nodeName`, `nodeSelector`, `allNodes`, `perDeviceNodeSelection` is "
                "required, but multiple fields are set",
            )
        ],
    ),
    "empty-node-selection": (
        _with(_slice(), lambda spec: spec.pop("nodeName")),
        [
            (
                "spec",
                "Required value: exactly one of `nodeName`, `nodeSelector`, `allNodes`, "
                "`perDeviceNodeSelection` is required",
            )
        ],
    ),
    "bad-drivername": (_slice(driver=BAD), [invalid("spec.driver", f'"{BAD}"', SUBDOMAIN)]),
    "both-shared-counters-and-devices": (
        _with(
            _slice(),
            lambda spec: spec.update(
                sharedCounters=[{"name": "counterset", "counters": {"memory": {"value": "1Gi"}}}]
            ),
        ),
        [invalid("spec", '""', "only one of `sharedCounters` or `devices` is allowed")],
    ),
    "bad-devices": (
        _with(_slice(3, driver=GOOD), lambda spec: spec["devices"][1].update(name=BAD)),
        [invalid("spec.devices[1].name", f'"{BAD}"', LABEL)],
    ),
    "bad-attribute": (
        _with(_slice(5, driver=GOOD), _bad_attributes),
        [
            invalid("spec.devices[1].attributes", f'"{BAD}"', C_IDENTIFIER),
            invalid(f"spec.devices[1].attributes[{BAD}]", '""', "exactly one value must be specified"),
            invalid(
                "spec.devices[2].attributes[foo]",
                '{"string":"x","version":"1.2.3"}',
                "exactly one value must be specified",
            ),
            invalid(
                "spec.devices[3].attributes[foo].version",
                f'"{"x" * 65}"',
                "must be a string compatible with semver.org spec 2.0.0",
            ),
            ("spec.devices[3].attributes[foo].version", "Too long: may not be more than 64 bytes"),
            ("spec.devices[4].attributes[foo].string", "Too long: may not be more than 64 bytes"),
        ],
    ),
}


@pytest.mark.parametrize("name", list(SLICE_CASES))
def test_validate_resource_slice(name: str) -> None:
    obj, want = SLICE_CASES[name]
    assert [(path, msg) for _, path, msg in rules.validate_resource_slice(obj)] == want


def test_resource_slice_update_keeps_pool_driver_and_node() -> None:
    old = _slice()
    new = _with(old, lambda spec: spec.update(driver="other.example.com", nodeName="bar"))
    new["spec"]["pool"]["name"] = "bar"
    paths = [path for _, path, msg in rules.validate_resource_slice_update(new, old) if "immutable" in msg]
    assert paths == ["spec.pool.name", "spec.driver", "spec.nodeName"]


def test_counters_need_a_name_and_values() -> None:
    obj = _with(_slice(), lambda spec: spec.pop("devices"))
    obj["spec"]["sharedCounters"] = [
        {"name": "", "counters": {}},
        {"name": "a", "counters": {"BAD": {"value": "1"}}},
    ]
    assert [(p, m) for _, p, m in rules.validate_resource_slice(obj)] == [
        ("spec.sharedCounters[0].name", "Required value"),
        ("spec.sharedCounters[0].counters", "Required value"),
        invalid("spec.sharedCounters[1].counters", '"BAD"', LABEL),
    ]


def test_per_device_node_selection() -> None:
    obj = _with(_slice(2), lambda spec: spec.update(perDeviceNodeSelection=True))
    del obj["spec"]["nodeName"]
    obj["spec"]["devices"][0]["nodeName"] = "worker"
    assert [(p, m) for _, p, m in rules.validate_resource_slice(obj)] == [
        (
            "spec.devices[1]",
            "Required value: exactly one of `nodeName`, `nodeSelector`, or `allNodes` is required when "
            "`perDeviceNodeSelection` is set to true in the ResourceSlice spec",
        )
    ]


def test_taint_time_added_is_defaulted() -> None:
    obj = _with(_slice(), _tainted)
    rules.default_resource_slice(obj)
    assert obj["spec"]["devices"][0]["taints"][0]["timeAdded"].endswith("Z")


# -- ResourceClaim -------------------------------------------------------------------------------
def _claim(**devices: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"requests": [{"name": GOOD, "exactly": {"deviceClassName": GOOD}}]}
    body.update(devices)
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": GOOD, "namespace": "ns"},
        "spec": {"devices": body},
    }


def _exactly(**fields: Any) -> dict[str, Any]:
    return _claim(requests=[{"name": GOOD, "exactly": {"deviceClassName": GOOD, **fields}}])


#: Seven nested loops of ten: a worst-case cost above the limit of one selector.
EXPENSIVE = (
    "[1, 2, 3, 4, 5, 6, 7, 8, 9, 10].all(x, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10].all(y, "
    "[1, 2, 3, 4, 5, 6, 7, 8, 9, 10].all(z, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10].all(z2, "
    "[1, 2, 3, 4, 5, 6, 7, 8, 9, 10].all(z3, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10].all(z4, "
    "[1, 2, 3, 4, 5, 6, 7, 8, 9, 10].all(z5, int('1'.find('[0-9]*')) < 100)))))))"
)
OPAQUE = {"driver": "dra.example.com", "parameters": {"kind": "foo", "apiVersion": "dra.example.com/v1"}}

CLAIM_CASES: dict[str, tuple[dict[str, Any], list[tuple[str, str]]]] = {
    "good-claim": (_claim(), []),
    "bad-classname": (
        _exactly(deviceClassName=BAD),
        [invalid("spec.devices.requests[0].exactly.deviceClassName", f'"{BAD}"', SUBDOMAIN)],
    ),
    "missing-classname": (
        _exactly(deviceClassName=""),
        [("spec.devices.requests[0].exactly.deviceClassName", "Required value")],
    ),
    "invalid-spec": (
        _claim(
            constraints=[
                {"requests": [GOOD, BAD], "matchAttribute": "missing-domain"},
                {"matchAttribute": ""},
                {},
            ],
            config=[{"requests": [GOOD, BAD], "opaque": OPAQUE}],
        ),
        [
            invalid("spec.devices.constraints[0].requests[1]", f'"{BAD}"', LABEL),
            invalid("spec.devices.constraints[0].requests[1]", f'"{BAD}"', REQUEST_REF),
            invalid("spec.devices.constraints[0].matchAttribute", '"missing-domain"', C_IDENTIFIER),
            invalid(
                "spec.devices.constraints[0].matchAttribute",
                '"missing-domain"',
                "a fully qualified name must be a domain and a name separated by a slash",
            ),
            invalid("spec.devices.constraints[1].matchAttribute", '""', C_IDENTIFIER),
            invalid(
                "spec.devices.constraints[1].matchAttribute",
                '""',
                "a fully qualified name must be a domain and a name separated by a slash",
            ),
            ("spec.devices.constraints[2].matchAttribute", "Required value"),
            invalid("spec.devices.config[0].requests[1]", f'"{BAD}"', LABEL),
            invalid("spec.devices.config[0].requests[1]", f'"{BAD}"', REQUEST_REF),
        ],
    ),
    "allocation-mode": (
        _exactly(allocationMode="all"),
        [
            (
                "spec.devices.requests[0].exactly.allocationMode",
                'Unsupported value: "all": supported values: "All", "ExactCount"',
            )
        ],
    ),
    "count": (
        _exactly(allocationMode="ExactCount", count=-5),
        [invalid("spec.devices.requests[0].exactly.count", "-5", "must be greater than zero")],
    ),
    "all-count": (
        _exactly(allocationMode="All", count=5),
        [
            invalid(
                "spec.devices.requests[0].exactly.count",
                "5",
                "must not be specified when allocationMode is 'All'",
            )
        ],
    ),
    "missing-selector": (
        _exactly(selectors=[{}]),
        [("spec.devices.requests[0].exactly.selectors[0].cel", "Required value")],
    ),
    "too-many-selectors": (
        _exactly(selectors=[{"cel": {"expression": "true"}}] * 33),
        [("spec.devices.requests[0].exactly.selectors", "Too many: 33: must have at most 32 items")],
    ),
    "CEL-length": (
        _exactly(selectors=[{"cel": {"expression": "true" + " " * 10 * 1024}}]),
        [
            (
                "spec.devices.requests[0].exactly.selectors[0].cel.expression",
                "Too long: may not be more than 10240 bytes",
            )
        ],
    ),
    "CEL-cost": (
        _exactly(selectors=[{"cel": {"expression": EXPENSIVE}}]),
        [
            (
                "spec.devices.requests[0].exactly.selectors[0].cel.expression",
                "Forbidden: too complex, exceeds cost limit",
            )
        ],
    ),
    "prioritized-list-valid": (
        _claim(
            requests=[
                {
                    "name": GOOD,
                    "firstAvailable": [
                        {"name": "a", "deviceClassName": GOOD},
                        {"name": "b", "deviceClassName": GOOD},
                    ],
                }
            ],
            constraints=[{"requests": [f"{GOOD}/a"], "matchAttribute": "dra.example.com/model"}],
        ),
        [],
    ),
    "prioritized-list-both-exactly-and-first-available": (
        _claim(
            requests=[
                {
                    "name": GOOD,
                    "exactly": {"deviceClassName": GOOD},
                    "firstAvailable": [{"name": "a", "deviceClassName": GOOD}],
                }
            ]
        ),
        [
            invalid(
                "spec.devices.requests[0]",
                '"null"',
                "exactly one of `exactly` or `firstAvailable` is required, but multiple fields are set",
            )
        ],
    ),
    "prioritized-list-none": (
        _claim(requests=[{"name": GOOD}]),
        [
            (
                "spec.devices.requests[0]",
                "Required value: exactly one of `exactly` or `firstAvailable` is required",
            )
        ],
    ),
    "prioritized-list-duplicate-subrequest": (
        _claim(
            requests=[
                {"name": GOOD, "firstAvailable": [{"name": "a", "deviceClassName": GOOD}] * 2},
            ]
        ),
        [("spec.devices.requests[0].firstAvailable[1]", 'Duplicate value: "a"')],
    ),
    "duplicate-request": (
        _claim(requests=[{"name": GOOD, "exactly": {"deviceClassName": GOOD}}] * 2),
        [("spec.devices.requests[1]", f'Duplicate value: "{GOOD}"')],
    ),
    "configuration": (
        _claim(config=[{"opaque": {"driver": "", "parameters": [1]}}, {}]),
        [
            ("spec.devices.config[0].opaque.driver", "Required value"),
            invalid("spec.devices.config[0].opaque.driver", '""', SUBDOMAIN),
            invalid(
                "spec.devices.config[0].opaque.parameters", '"<value omitted>"', "must be a valid JSON object"
            ),
            ("spec.devices.config[1].opaque", "Required value"),
        ],
    ),
    "tolerations": (
        _exactly(
            tolerations=[
                {"key": "example.com/taint", "operator": "Exists", "value": "x"},
                {"operator": "Sometimes", "effect": "Never"},
            ]
        ),
        [
            invalid(
                "spec.devices.requests[0].exactly.tolerations[0].value",
                '"x"',
                "must be empty for operator `Exists`",
            ),
            (
                "spec.devices.requests[0].exactly.tolerations[1].operator",
                'Unsupported value: "Sometimes": supported values: "Equal", "Exists"',
            ),
            (
                "spec.devices.requests[0].exactly.tolerations[1].effect",
                'Unsupported value: "Never": supported values: "NoExecute", "NoSchedule", "None"',
            ),
        ],
    ),
}


@pytest.mark.parametrize("name", list(CLAIM_CASES))
def test_validate_claim(name: str) -> None:
    obj, want = CLAIM_CASES[name]
    assert [(path, msg) for _, path, msg in rules.validate_resource_claim(obj)] == want


def test_a_selector_that_does_not_compile_is_named() -> None:
    [(reason, path, message)] = rules.validate_resource_claim(
        _exactly(selectors=[{"cel": {"expression": "("}}])
    )
    assert (reason, path) == (
        "FieldValueInvalid",
        "spec.devices.requests[0].exactly.selectors[0].cel.expression",
    )
    assert message.startswith('Invalid value: "(": ')


def test_claim_defaults() -> None:
    obj = _claim(
        requests=[
            {"name": "a", "exactly": {"deviceClassName": GOOD, "tolerations": [{"key": "k"}]}},
            {"name": "b", "exactly": {"deviceClassName": GOOD, "allocationMode": "All"}},
            {"name": "c", "firstAvailable": [{"name": "x", "deviceClassName": GOOD}]},
        ]
    )
    rules.default_resource_claim(obj)
    requests = obj["spec"]["devices"]["requests"]
    assert requests[0]["exactly"] == {
        "deviceClassName": GOOD,
        "allocationMode": "ExactCount",
        "count": 1,
        "tolerations": [{"key": "k", "operator": "Equal"}],
    }
    assert "count" not in requests[1]["exactly"]
    assert requests[2]["firstAvailable"][0]["count"] == 1


def test_claim_spec_is_immutable() -> None:
    old = _claim()
    new = _exactly(count=2)
    [(_, path, message)] = rules.validate_resource_claim_update(new, old)
    assert path == "spec" and message.endswith(": field is immutable")
    # The same spec with its defaults written out is the same spec.
    assert rules.validate_resource_claim_update(_exactly(allocationMode="ExactCount", count=1), old) == []


ALLOCATION = {"devices": {"results": [{"request": GOOD, "driver": DRIVER, "pool": GOOD, "device": "gpu-0"}]}}


def _status(claim: dict[str, Any], **status: Any) -> dict[str, Any]:
    return {**claim, "status": status}


def test_status_update_rules() -> None:
    claim = _claim()
    consumer = {"resource": "pods", "name": "p", "uid": "1"}

    def causes(new: dict[str, Any], old: dict[str, Any]) -> list[tuple[str, str]]:
        return [(p, m) for _, p, m in rules.validate_resource_claim_status_update(new, old)]

    assert causes(_status(claim, allocation=ALLOCATION, reservedFor=[consumer]), claim) == []
    assert causes(_status(claim, reservedFor=[consumer]), claim) == [
        ("status.reservedFor", "Forbidden: may not be specified when `allocated` is not set")
    ]
    assert causes(_status(claim, allocation=ALLOCATION, reservedFor=[consumer, consumer]), claim) == [
        ("status.reservedFor[1]", 'Duplicate value: "1"')
    ]
    assert causes(_status(claim, allocation=ALLOCATION, reservedFor=[{"resource": "pods"}]), claim) == [
        ("status.reservedFor[0].name", "Required value"),
        ("status.reservedFor[0].uid", "Required value"),
    ]
    allocated = _status(claim, allocation=ALLOCATION)
    moved = copy.deepcopy(ALLOCATION)
    moved["devices"]["results"][0]["device"] = "gpu-1"
    [(path, message)] = causes(_status(claim, allocation=moved), allocated)
    assert path == "status.allocation" and message.endswith("field is immutable")
    # Deallocating is allowed.
    assert causes(_status(claim), allocated) == []
    bad = copy.deepcopy(ALLOCATION)
    bad["devices"]["results"][0]["request"] = "other"
    assert causes(_status(claim, allocation=bad), claim) == [
        invalid("status.allocation.devices.results[0].request", '"other"', REQUEST_REF)
    ]
    # A claim being deleted may lose consumers but gain none.
    deleting = copy.deepcopy(allocated)
    deleting["metadata"]["deletionTimestamp"] = "2025-01-01T00:00:00Z"
    assert causes(_status(deleting, allocation=ALLOCATION, reservedFor=[consumer]), deleting) == [
        (
            "status.reservedFor",
            "Forbidden: new entries may not be added while `deallocationRequested` or "
            "`deletionTimestamp` are set",
        )
    ]


def test_template_is_validated_under_spec_spec() -> None:
    obj = {
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": GOOD, "namespace": "ns"},
        "spec": {"metadata": {"labels": {"app": BAD}}, "spec": _exactly(deviceClassName="")["spec"]},
    }
    paths = [p for _, p, _ in rules.validate_resource_claim_template(obj)]
    assert paths == ["spec.metadata.labels", "spec.spec.devices.requests[0].exactly.deviceClassName"]


# -- DeviceClass ---------------------------------------------------------------------------------
def _class(**spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": {"name": GOOD},
        "spec": spec,
    }


def test_device_class() -> None:
    assert rules.validate_device_class(_class(selectors=[{"cel": {"expression": "true"}}])) == []
    assert rules.validate_device_class(_class(extendedResourceName="example.com/gpu")) == []
    assert [(p, m) for _, p, m in rules.validate_device_class(_class(extendedResourceName="gpu"))] == [
        invalid("spec.extendedResourceName", '"gpu"', "must be a valid extended resource name")
    ]
    assert [
        (p, m) for _, p, m in rules.validate_device_class(_class(config=[{"opaque": {"driver": DRIVER}}]))
    ] == [("spec.config[0].opaque.parameters", "Required value")]
    # Selectors stored before are not compiled again.
    old = _class(selectors=[{"cel": {"expression": "("}}])
    assert rules.validate_device_class_update(copy.deepcopy(old), old) == []
    assert rules.validate_device_class_update(_class(selectors=[{"cel": {"expression": "(("}}]), old) != []


def test_quantities_are_listed_with_their_fields() -> None:
    obj = _slice()
    obj["spec"]["devices"][0]["consumesCounters"] = [
        {"counterSet": "a", "counters": {"mem": {"value": "1x"}}}
    ]
    assert rules.resource_quantities(obj) == [
        ("spec.devices[0].capacity[memory].value", "1Gi"),
        ("spec.devices[0].consumesCounters[0].counters[mem].value", "1x"),
    ]
