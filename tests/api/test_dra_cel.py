"""DRA CEL selectors: upstream's compile_test.go table (case names verbatim), the quantity and semver
libraries, error messages, the cost limit and compilation caching."""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kubesched.api.dra_cel import (
    CEL_SELECTOR_EXPRESSION_MAX_LENGTH,
    CEL_SELECTOR_MAX_COST,
    CELDevice,
    CELError,
    DeviceVersion,
    compile_selector,
    selector_validation_error,
)
from kubesched.api.quantity import parse_quantity

MI = parse_quantity("1Mi")


@dataclass
class Case:
    expression: str
    driver: str = ""
    attributes: dict[str, Any] = field(default_factory=dict)
    capacity: dict[str, Fraction] = field(default_factory=dict)
    allow_multiple_allocations: bool = False
    expect_compile_error: str = ""
    expect_match_error: str = ""
    expect_match: bool = False
    expect_cost: int = 0


def _expensive_attributes() -> dict[str, Any]:
    attributes: dict[str, Any] = {}
    for i in range(32):
        suffix = f"-{i}"
        attributes["dra.example.com/" + "x" * (32 - len(suffix)) + suffix] = "abc"
    return attributes


_ALL = """
device.capacity["dra.example.com"].quantity.isGreaterThan(quantity("1Ki")) &&
device.attributes["dra.example.com"].bool &&
device.attributes["dra.example.com"].int > 0 &&
device.attributes["dra.example.com"].string == "fish" &&
device.attributes["dra.example.com"].version.isGreaterThan(semver("0.0.1")) &&
device.capacity["dra.example.com"]["quantity"].isGreaterThan(quantity("1Ki")) &&
device.attributes["dra.example.com"]["bool"] &&
device.attributes["dra.example.com"]["int"] > 0 &&
device.attributes["dra.example.com"]["string"] == "fish" &&
device.attributes["dra.example.com"]["version"].isGreaterThan(semver("0.0.1"))
"""

_EXPENSIVE = (
    "[1, 2, 3, 4, 5, 6, 7, 8, 9, 10].all(x, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10].all(y, "
    "[1, 2, 3, 4, 5, 6, 7, 8, 9, 10].all(z, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10].all(z2, "
    "[1, 2, 3, 4, 5, 6, 7, 8, 9, 10].all(z3, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10].all(z4, "
    "[1, 2, 3, 4, 5, 6, 7, 8, 9, 10].all(z5, int('1'.find('[0-9]*')) < 100)))))))"
)

DRA = "dra.example.com"

# Upstream's TestCEL table (staging/src/k8s.io/dynamic-resource-allocation/cel/compile_test.go),
# without the cases of the alpha list-type attributes.
UPSTREAM_CASES: dict[str, Case] = {
    "true": Case("true", expect_match=True),
    "false": Case("false", expect_match=False),
    "syntax-error": Case("?!", expect_compile_error="Syntax error"),
    "type-error": Case("1", expect_compile_error="must evaluate to bool or the unknown type, not int"),
    "runtime-error-lookup-identifier": Case(
        'device.attributes["no-such-domain"].noSuchAttr.isGreaterThan(quantity("0"))',
        expect_match_error="no such key: noSuchAttr",
        expect_cost=6,
    ),
    "runtime-error-lookup-map": Case(
        'device.attributes["no-such-domain"]["noSuchAttr"].isGreaterThan(quantity("0"))',
        expect_match_error="no such key: noSuchAttr",
        expect_cost=6,
    ),
    "domain-check-negative": Case('"no-such-domain" in device.attributes', expect_match=False, expect_cost=3),
    "domain-check-positive": Case(
        '"dra.example.com" in device.attributes',
        attributes={"dra.example.com/something": True},
        expect_match=True,
        expect_cost=3,
    ),
    "empty-driver-name": Case('device.driver == ""', expect_match=True, expect_cost=2),
    "real-driver-name": Case(
        'device.driver == "dra.example.com"', driver=DRA, expect_match=True, expect_cost=4
    ),
    "driver-name-qualifier": Case(
        'device.attributes["dra.example.com"].name',
        driver=DRA,
        attributes={"name": True},
        expect_match=True,
        expect_cost=4,
    ),
    "driver-name-qualifier-map-lookup": Case(
        'device.attributes["dra.example.com"]["name"]',
        driver=DRA,
        attributes={"name": True},
        expect_match=True,
        expect_cost=4,
    ),
    "bind": Case(
        'cel.bind(dra, device.attributes["dra.example.com"], dra.name)',
        driver=DRA,
        attributes={"name": True},
        expect_match=True,
        expect_cost=15,
    ),
    "qualified-attribute-name": Case(
        'device.attributes["other.example.com"].name',
        driver=DRA,
        attributes={"other.example.com/name": True},
        expect_match=True,
        expect_cost=4,
    ),
    "bool": Case(
        'device.attributes["dra.example.com"].name',
        driver=DRA,
        attributes={"name": True},
        expect_match=True,
        expect_cost=4,
    ),
    "int": Case(
        'device.attributes["dra.example.com"].name > 0',
        driver=DRA,
        attributes={"name": 1},
        expect_match=True,
        expect_cost=5,
    ),
    "string": Case(
        'device.attributes["dra.example.com"].name == "fish"',
        driver=DRA,
        attributes={"name": "fish"},
        expect_match=True,
        expect_cost=5,
    ),
    "attribute-access-causes-match-error": Case(
        'device.attributes["dra.example.com"].names',
        driver=DRA,
        attributes={"names": ["fish", "bird"]},
        expect_match_error="attribute names: unsupported attribute value",
        expect_cost=4,
    ),
    "version": Case(
        'device.attributes["dra.example.com"].name.isGreaterThan(semver("0.0.1"))',
        driver=DRA,
        attributes={"name": DeviceVersion("1.0.0")},
        expect_match=True,
        expect_cost=6,
    ),
    "version_v": Case(
        'device.attributes["dra.example.com"].name.isGreaterThan(semver("v0.0.1", true)) '
        '&& isSemver("v1.0.0", true)',
        driver=DRA,
        attributes={"name": DeviceVersion("1.0.0")},
        expect_match=True,
        expect_cost=7,
    ),
    "quantity": Case(
        'device.capacity["dra.example.com"].name.isGreaterThan(quantity("1Ki"))',
        driver=DRA,
        capacity={"name": MI},
        expect_match=True,
        expect_cost=6,
    ),
    "check-positive": Case(
        '"name" in device.capacity["dra.example.com"] && '
        'device.capacity["dra.example.com"].name.isGreaterThan(quantity("1Ki"))',
        driver=DRA,
        capacity={"name": MI},
        expect_match=True,
        expect_cost=10,
    ),
    "check-negative": Case(
        '!("name" in device.capacity["dra.example.com"]) || '
        'device.capacity["dra.example.com"].name.isGreaterThan(quantity("1Ki"))',
        expect_match=True,
        expect_cost=11,
    ),
    "all": Case(
        _ALL,
        driver=DRA,
        attributes={"bool": True, "int": 1, "string": "fish", "version": DeviceVersion("1.0.0")},
        capacity={"quantity": MI},
        expect_match=True,
        expect_cost=52,
    ),
    "many": Case(
        'device.attributes["dra.example.com"].a && device.attributes["dra.example.com"].b '
        '&& device.attributes["dra.example.com"].c',
        driver=DRA,
        attributes={"a": True, "b": True, "c": True},
        expect_match=True,
        expect_cost=12,
    ),
    "check_attribute_domains": Case(
        'device.attributes.exists_one(x, x == "dra.example.com")',
        driver=DRA,
        attributes={"services": "some_example_value"},
        expect_match=True,
        expect_cost=164,
    ),
    "check_attribute_ids": Case(
        'device.attributes["dra.example.com"].exists_one(x, x == "services")',
        driver=DRA,
        attributes={"services": "some_example_value"},
        expect_match=True,
        expect_cost=133,
    ),
    "split_attribute": Case(
        'device.attributes["dra.example.com"].services.split("example").size() >= 2',
        driver=DRA,
        attributes={"services": "some_example_value"},
        expect_match=True,
        expect_cost=19,
    ),
    "regexp_attribute": Case(
        'device.attributes["dra.example.com"].services.matches("[^a]?sym")',
        driver=DRA,
        attributes={"services": "asymetric"},
        expect_match=True,
        expect_cost=18,
    ),
    "check_capacity_domains": Case(
        'device.capacity.exists_one(x, x == "dra.example.com")',
        driver=DRA,
        capacity={"memory": MI},
        expect_match=True,
        expect_cost=164,
    ),
    "check_capacity_ids": Case(
        'device.capacity["dra.example.com"].exists_one(x, x == "memory")',
        driver=DRA,
        capacity={"memory": MI},
        expect_match=True,
        expect_cost=133,
    ),
    "expensive": Case(
        _EXPENSIVE,
        driver=DRA,
        attributes=_expensive_attributes(),
        expect_match_error="actual cost limit exceeded",
        expect_cost=85555551,
    ),
    "allow_multiple_allocations": Case(
        "device.allowMultipleAllocations == true",
        driver=DRA,
        allow_multiple_allocations=True,
        expect_match=True,
        expect_cost=3,
    ),
    "allow_multiple_allocations_default": Case(
        "device.allowMultipleAllocations == false", driver=DRA, expect_match=True, expect_cost=3
    ),
    "allow_multiple_allocations_false": Case(
        "device.allowMultipleAllocations == false",
        driver=DRA,
        allow_multiple_allocations=False,
        expect_match=True,
        expect_cost=3,
    ),
}


def _device(case: Case) -> CELDevice:
    return CELDevice(case.driver, case.attributes, case.capacity, case.allow_multiple_allocations)


@pytest.mark.parametrize("name", list(UPSTREAM_CASES))
def test_upstream_cel_table(name: str) -> None:
    case = UPSTREAM_CASES[name]
    if case.expect_compile_error:
        with pytest.raises(CELError, match=case.expect_compile_error):
            compile_selector(case.expression)
        return
    selector = compile_selector(case.expression)
    assert selector.max_cost == case.expect_cost
    if case.expect_match_error:
        with pytest.raises(CELError, match=case.expect_match_error):
            selector.matches(_device(case))
        return
    assert selector.matches(_device(case)) is case.expect_match


def match(expression: str, driver: str = DRA, **kwargs: Any) -> bool:
    return compile_selector(expression).matches(
        CELDevice(driver, kwargs.get("attributes", {}), kwargs.get("capacity", {}))
    )


def match_error(expression: str, driver: str = DRA, **kwargs: Any) -> str:
    with pytest.raises(CELError) as info:
        match(expression, driver, **kwargs)
    return str(info.value)


# --------------------------------------------------------------------------- compile errors


def test_compile_errors_carry_upstreams_detail_with_position() -> None:
    with pytest.raises(CELError) as info:
        compile_selector("device.driverName == ''")
    assert str(info.value) == (
        "compilation failed: ERROR: <input>:1:7: undefined field 'driverName'\n"
        " | device.driverName == ''\n"
        " | ......^"
    )
    with pytest.raises(
        CELError, match=r"^compilation failed: ERROR: <input>:1:1: undeclared reference to 'foo'"
    ):
        compile_selector("foo == 1")
    with pytest.raises(CELError, match="found no matching overload for 'isGreaterThan'"):
        compile_selector('quantity("1").isGreaterThan(1)')
    with pytest.raises(CELError, match="must evaluate to bool or the unknown type, not string"):
        compile_selector("device.driver")
    with pytest.raises(CELError, match=r"not kubernetes\.Quantity"):
        compile_selector('quantity("1")')


def test_a_local_variable_named_device_is_not_the_device() -> None:
    assert match("[{'x': true}].all(device, device.x)")


# --------------------------------------------------------------------------- evaluation


def test_attribute_names_without_a_domain_belong_to_the_driver() -> None:
    attributes = {"model": "A100", "other.example.com/model": "B"}
    assert match('device.attributes["dra.example.com"].model == "A100"', attributes=attributes)
    assert match('device.attributes["other.example.com"].model == "B"', attributes=attributes)
    assert not match('"model" in device.attributes["third.example.com"]', attributes=attributes)


def test_a_missing_attribute_is_upstreams_runtime_error() -> None:
    message = match_error('device.attributes["dra.example.com"].model == "x"', attributes={"a": 1})
    assert message == "no such key: model"


def test_non_bool_results_are_errors_naming_the_type() -> None:
    message = match_error('device.attributes["dra.example.com"].count', attributes={"count": 3})
    assert message == (
        "CEL result of type int could not be converted to bool: "
        "unsupported type conversion from 'int' to bool"
    )


def test_string_extensions_macros_sets_and_bind() -> None:
    attributes = {"name": "Fish-Tank", "tags": "a,b,c"}
    assert match(
        'device.attributes["dra.example.com"].name.lowerAscii() == "fish-tank"', attributes=attributes
    )
    assert match('device.attributes["dra.example.com"].tags.split(",").size() == 3', attributes=attributes)
    assert match('device.attributes["dra.example.com"].name.substring(5) == "Tank"', attributes=attributes)
    assert match('["a", "b"].join("-") == "a-b"')
    assert match("sets.contains([1, 2, 3], [1, 2])")
    assert match("[1, 2, 3].exists(x, x == 2) && [1, 2].all(x, x > 0) && [1, 2].map(x, x * 2) == [2, 4]")
    assert match("[1, 2].all(i, v, v > i)")
    assert match(
        'cel.bind(d, device.attributes["dra.example.com"], d.name.startsWith("Fish"))', attributes=attributes
    )
    assert match('"abc123".find("[0-9]+") == "123" && "a1b2".findAll("[0-9]") == ["1", "2"]')
    assert match("[1, 2].sum() == 3 && [1, 3].max() == 3 && [3, 1].min() == 1 && [1, 2].isSorted()")


def test_short_circuit_absorbs_errors_as_cel_does() -> None:
    assert not match('device.driver == "other" && device.attributes["dra.example.com"].missing')
    assert match('device.driver == "dra.example.com" || device.attributes["dra.example.com"].missing')


def test_a_broken_version_attribute_fails_when_the_device_is_matched() -> None:
    device = CELDevice(DRA, {"v": DeviceVersion("1.0")}, {})
    expected = r"^attribute v: parse semantic version: No Major\.Minor\.Patch elements found"
    with pytest.raises(CELError, match=expected):
        compile_selector("true").matches(device)


# --------------------------------------------------------------------------- quantity library


@pytest.mark.parametrize(
    "expression",
    [
        'isQuantity("1Gi") && !isQuantity("1GiB")',
        'quantity("1Gi") == quantity("1024Mi")',
        'quantity("1") == quantity("1000m")',
        'quantity("1Gi").compareTo(quantity("1G")) == 1',
        'quantity("500m").isLessThan(quantity("1")) && quantity("2").isGreaterThan(quantity("1999m"))',
        'quantity("1Gi").add(quantity("1Gi")) == quantity("2Gi")',
        'quantity("1").add(2) == quantity("3") && quantity("3").sub(1) == quantity("2")',
        'quantity("1").sub(quantity("2")).sign() == -1 && sign(quantity("0")) == 0',
        'quantity("1Ki").asInteger() == 1024 && quantity("1Ki").isInteger()',
        '!quantity("500m").isInteger()',
        'quantity("1.5").asApproximateFloat() == 1.5',
    ],
)
def test_quantity_library(expression: str) -> None:
    assert match(expression)


def test_quantity_errors() -> None:
    assert match_error('quantity("500m").asInteger() == 0') == "cannot convert value to integer"
    assert match_error('quantity("1GiB").sign() == 1').startswith(
        "quantities must match the regular expression"
    )


def test_capacity_is_compared_as_quantities() -> None:
    capacity = {"memory": parse_quantity("40Gi"), "example.com/cores": Fraction(108)}
    assert match(
        'device.capacity["dra.example.com"].memory.compareTo(quantity("40Gi")) == 0', capacity=capacity
    )
    assert match('device.capacity["example.com"].cores.isGreaterThan(quantity("100"))', capacity=capacity)


QUANTITY_TEXT = st.builds(
    lambda n, suffix: f"{n}{suffix}",
    st.integers(min_value=0, max_value=10**6),
    st.sampled_from(["", "m", "k", "M", "G", "Ki", "Mi", "Gi", "Ti", "u", "n"]),
)


@given(QUANTITY_TEXT, QUANTITY_TEXT)
def test_quantity_comparisons_agree_with_parse_quantity(a: str, b: str) -> None:
    expected = (parse_quantity(a) > parse_quantity(b)) - (parse_quantity(a) < parse_quantity(b))
    device = CELDevice(DRA, {}, {"a": parse_quantity(a)})
    selector = compile_selector(
        f'device.capacity["dra.example.com"].a.compareTo(quantity("{b}")) == {expected}'
    )
    assert selector.matches(device)
    equal = compile_selector(f'device.capacity["dra.example.com"].a == quantity("{b}")')
    assert equal.matches(device) is (expected == 0)


# --------------------------------------------------------------------------- semver library


@pytest.mark.parametrize(
    "expression",
    [
        'isSemver("1.2.3") && !isSemver("1.2") && !isSemver("01.2.3") && !isSemver("v1.2.3")',
        'isSemver("v1.2", true) && semver("v1.2", true) == semver("1.2.0")',
        'semver("1.2.3").major() == 1 && semver("1.2.3").minor() == 2 && semver("1.2.3").patch() == 3',
        'semver("1.2.3").compareTo(semver("1.10.0")) == -1',
        'semver("1.0.0-alpha").isLessThan(semver("1.0.0"))',
        'semver("1.0.0-alpha.1").isLessThan(semver("1.0.0-alpha.beta"))',
        'semver("1.0.0-2").isLessThan(semver("1.0.0-10"))',
        'semver("1.0.0+build.1") == semver("1.0.0+build.2")',
    ],
)
def test_semver_library(expression: str) -> None:
    assert match(expression)


def test_semver_parse_errors() -> None:
    assert match_error('semver("1.2").major() == 1') == "No Major.Minor.Patch elements found"
    assert (
        match_error('semver("1.02.3").major() == 1') == "Leading zeroes are not allowed in minor number '02'"
    )


@given(st.tuples(*[st.integers(0, 20)] * 3), st.tuples(*[st.integers(0, 20)] * 3))
def test_semver_ordering_is_numeric(a: tuple[int, int, int], b: tuple[int, int, int]) -> None:
    expected = (a > b) - (a < b)
    device = CELDevice(DRA, {"v": DeviceVersion("{}.{}.{}".format(*a))}, {})
    expression = 'device.attributes["dra.example.com"].v.compareTo(semver("{}.{}.{}")) == {}'.format(
        *b, expected
    )
    assert compile_selector(expression).matches(device)


# --------------------------------------------------------------------------- cost limit and caching


def test_validation_refuses_selectors_over_the_cost_limit_with_upstreams_message() -> None:
    assert compile_selector(_EXPENSIVE).max_cost > CEL_SELECTOR_MAX_COST
    assert selector_validation_error(_EXPENSIVE) == "too complex, exceeds cost limit"
    assert selector_validation_error('device.driver == "gpu.example.com"') is None
    assert selector_validation_error("1") == "must evaluate to bool or the unknown type, not int"
    too_long = "true || " * (CEL_SELECTOR_EXPRESSION_MAX_LENGTH // 8) + "true"
    assert (
        selector_validation_error(too_long)
        == f"may not be more than {CEL_SELECTOR_EXPRESSION_MAX_LENGTH} bytes"
    )


def test_the_estimate_bounds_comprehensions_by_the_declared_map_sizes() -> None:
    # 32 domains at most, each key at most 63 characters: the loop body costs at most 8 per domain.
    cheap = compile_selector('device.attributes.all(d, d.startsWith("a"))')
    assert cheap.max_cost < 1000
    nested = compile_selector(
        "device.attributes.all(d, device.attributes[d].all(i, "
        "device.attributes[d][i] == device.attributes[d][i]))"
    )
    assert cheap.max_cost < nested.max_cost <= CEL_SELECTOR_MAX_COST


def test_compile_selector_caches_per_expression() -> None:
    expression = 'device.driver == "cache.example.com"'
    assert compile_selector(expression) is compile_selector(expression)
    for _ in range(2):
        with pytest.raises(CELError, match="Syntax error"):
            compile_selector("device.driver ==")


def test_one_device_serves_many_selectors_and_domains() -> None:
    device = CELDevice("gpu.example.com", {"model": "A100"}, {"memory": parse_quantity("80Gi")})
    selectors = [
        compile_selector('device.driver == "gpu.example.com"'),
        compile_selector('"model" in device.attributes["nic.example.com"]'),
        compile_selector('device.capacity["gpu.example.com"].memory.isGreaterThan(quantity("40Gi"))'),
        compile_selector('"x" in device.capacity["nic.example.com"]'),
    ]
    assert [s.matches(device) for s in selectors * 2] == [True, False, True, False] * 2
