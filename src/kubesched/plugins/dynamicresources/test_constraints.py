"""``distinctAttribute`` compares values as upstream's constraint does: exactly as written, and a
value never clashes with one of another type."""

from __future__ import annotations

from kubesched.api.resource import DeviceVersion
from kubesched.plugins.dynamicresources.constraints import DistinctAttribute

DRIVER = "driver-a"
NUMA = f"{DRIVER}/numa"
VERSION = f"{DRIVER}/driverVersion"


def test_distinct_refuses_a_repeated_value_and_accepts_it_again_after_backtracking() -> None:
    constraint = DistinctAttribute(frozenset(), NUMA)
    assert constraint.add("req-0", "", {"numa": 0}, DRIVER)
    assert not constraint.add("req-1", "", {"numa": 0}, DRIVER)
    constraint.remove("req-0", "")
    assert constraint.add("req-1", "", {"numa": 0}, DRIVER)


def test_distinct_values_of_different_types_never_clash() -> None:
    constraint = DistinctAttribute(frozenset(), NUMA)
    assert constraint.add("req-0", "", {"numa": 1}, DRIVER)
    assert constraint.add("req-1", "", {"numa": "1"}, DRIVER)
    assert constraint.add("req-2", "", {"numa": True}, DRIVER)
    # A repeated value is refused, also when a value of another type came first.
    assert not constraint.add("req-3", "", {"numa": "1"}, DRIVER)


def test_distinct_versions_compare_as_written() -> None:
    constraint = DistinctAttribute(frozenset(), VERSION)
    assert constraint.add("req-0", "", {"driverVersion": DeviceVersion("1.0.0")}, DRIVER)
    assert not constraint.add("req-1", "", {"driverVersion": DeviceVersion("1.0.0")}, DRIVER)
    assert constraint.add("req-1", "", {"driverVersion": DeviceVersion("1.0.0+build.1")}, DRIVER)
    # A version and a string with the same text are values of different types.
    assert constraint.add("req-2", "", {"driverVersion": "1.0.0"}, DRIVER)
