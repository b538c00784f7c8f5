"""Claim constraints: ``matchAttribute`` (every device the same value) and ``distinctAttribute``
(every device a different one), checked as each device is tentatively added and undone on
backtracking (upstream ``constraint.go`` and ``matchAttributeConstraint``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol

from kubesched.api.resource import DeviceAttributeValue, DeviceVersion


def lookup_attribute(
    attributes: Mapping[str, DeviceAttributeValue], driver: str, name: str
) -> DeviceAttributeValue | None:
    """A fully-qualified attribute name: as written, or without the domain when the domain is the
    device's driver."""
    value = attributes.get(name)
    if value is not None:
        return value
    domain, sep, ident = name.partition("/")
    if not sep or domain != driver:
        return None
    return attributes.get(ident)


def _kind(value: DeviceAttributeValue) -> str:
    # bool before int (a Python bool is an int); a version before a string (it is one).
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, DeviceVersion):
        return "version"
    return "string"


def _applies(names: frozenset[str], request: str, sub_request: str) -> bool:
    if not names:
        return True
    if not sub_request:
        return request in names
    return request in names or f"{request}/{sub_request}" in names


class Constraint(Protocol):
    def add(
        self, request: str, sub_request: str, attributes: Mapping[str, DeviceAttributeValue], driver: str
    ) -> bool: ...

    def remove(self, request: str, sub_request: str) -> None: ...


class MatchAttribute:
    __slots__ = ("attribute", "count", "names", "value")

    def __init__(self, names: frozenset[str], attribute: str) -> None:
        self.names = names
        self.attribute = attribute
        self.value: tuple[str, object] | None = None
        self.count = 0

    def add(
        self, request: str, sub_request: str, attributes: Mapping[str, DeviceAttributeValue], driver: str
    ) -> bool:
        if not _applies(self.names, request, sub_request):
            return True
        value = lookup_attribute(attributes, driver, self.attribute)
        if value is None:
            return False
        key = (_kind(value), str(value) if isinstance(value, str) else value)
        if self.count == 0:
            self.value = key
            self.count = 1
            return True
        if key != self.value:
            return False
        self.count += 1
        return True

    def remove(self, request: str, sub_request: str) -> None:
        if _applies(self.names, request, sub_request):
            self.count -= 1


class DistinctAttribute:
    __slots__ = ("attribute", "names", "values")

    def __init__(self, names: frozenset[str], attribute: str) -> None:
        self.names = names
        self.attribute = attribute
        self.values: list[tuple[str, object]] = []

    def add(
        self, request: str, sub_request: str, attributes: Mapping[str, DeviceAttributeValue], driver: str
    ) -> bool:
        if not _applies(self.names, request, sub_request):
            return True
        value = lookup_attribute(attributes, driver, self.attribute)
        if value is None:
            return False
        # Values of different types never clash. Versions are compared as written: semantic
        # versions are required in their minimal form, so equal versions are equal strings.
        candidate = (_kind(value), str(value) if isinstance(value, str) else value)
        if candidate in self.values:
            return False
        self.values.append(candidate)
        return True

    def remove(self, request: str, sub_request: str) -> None:
        if _applies(self.names, request, sub_request):
            self.values.pop()
