"""Which extended resources DeviceClasses back (KEP-5004, ``DRAExtendedResource``): read by
DynamicResources, which allocates them, and by NodeResourcesFit, which leaves them to it on nodes
that do not advertise them (upstream ``dynamicresources/extended``)."""

from __future__ import annotations

from collections.abc import Iterable

from kubesched.api.resource import RESOURCE_DEVICE_CLASS_PREFIX, DeviceClass
from kubesched.api.resources import is_extended_resource


def is_dra_extended_resource_name(name: str) -> bool:
    """A name a DeviceClass can back: an extended resource, or a class's implicit name."""
    return is_extended_resource(name) or (
        name.startswith(RESOURCE_DEVICE_CLASS_PREFIX) and len(name) > len(RESOURCE_DEVICE_CLASS_PREFIX)
    )


def device_class_mapping(classes: Iterable[DeviceClass]) -> dict[str, str]:
    """Extended resource name → the DeviceClass that backs it. Every class backs its implicit name;
    of several classes naming one ``extendedResourceName``, the newest wins (then the first name)."""
    mapping: dict[str, str] = {}
    explicit: dict[str, DeviceClass] = {}
    for cls in classes:
        mapping[RESOURCE_DEVICE_CLASS_PREFIX + cls.name] = cls.name
        name = cls.extended_resource_name
        if not name:
            continue
        held = explicit.get(name)
        if held is None or (cls.creation_timestamp, _neg(cls.name)) > (
            held.creation_timestamp,
            _neg(held.name),
        ):
            explicit[name] = cls
    for name, cls in explicit.items():
        mapping[name] = cls.name
    return mapping


def _neg(name: str) -> tuple[int, ...]:
    """A key ordering names backwards (so that max() prefers the first name)."""
    return tuple(-ord(ch) for ch in name)
