"""Typed reads of Kubernetes object fields that fail with an :class:`InputError` naming the field.

Every parser of a Kubernetes object (core kinds in ``api.objects``, batch kinds in
``batch.objects``, manifest validation) reads its fields through these, so the same bad input gives
the same message everywhere.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubesched.errors import InputError


def as_mapping(data: Any, field: str) -> Mapping[str, Any]:
    """A mapping field; absent (None) reads as empty."""
    if type(data) is dict:  # nearly always: skips the abstract Mapping check
        return data
    if data is None:
        return {}
    if not isinstance(data, Mapping):
        raise InputError(f"expected a mapping, got {type(data).__name__}", field=field)
    return data


def as_str_map(data: Any, field: str) -> dict[str, str]:
    """A string → string mapping such as labels or annotations."""
    out: dict[str, str] = {}
    for k, v in as_mapping(data, field).items():
        if not isinstance(k, str):
            raise InputError("keys must be strings", field=field)
        if not isinstance(v, str):
            raise InputError(f"value of {k!r} must be a string, got {type(v).__name__}", field=f"{field}.{k}")
        out[k] = v
    return out


#: What :func:`str_map_view` gives for an absent map; shared, so never to be changed.
_NO_STRINGS: dict[str, str] = {}


def str_map_view(data: Any, field: str) -> dict[str, str]:
    """:func:`as_str_map` for a read-only view of a stored object: a valid map is the object's own
    dict and an absent one a shared empty dict, not copies (every pod view holds three such maps)."""
    if type(data) is dict and all(type(k) is str and type(v) is str for k, v in data.items()):
        return data
    if data is None:
        return _NO_STRINGS
    return as_str_map(data, field)


def as_list(data: Any, field: str) -> list[Any]:
    """A list field; absent (None) reads as empty."""
    if data is None:
        return []
    if not isinstance(data, list):
        raise InputError(f"expected a list, got {type(data).__name__}", field=field)
    return data


def object_name(meta: Mapping[str, Any]) -> str:
    """``metadata.name``, which every object must have."""
    name = meta.get("name")
    if not isinstance(name, str) or not name:
        raise InputError("every object needs a non-empty metadata.name", field="metadata.name")
    return name


INT32_MIN = -(2**31)
INT32_MAX = 2**31 - 1
INT64_MIN = -(2**63)
INT64_MAX = 2**63 - 1


def as_int(data: Any, field: str, *, minimum: int = INT32_MIN, maximum: int = INT32_MAX) -> int:
    """An integer field in ``[minimum, maximum]`` (int32 unless told): the range of its Go type, as the
    API server decodes it, so no later sum or array can overflow on it."""
    if isinstance(data, bool) or not isinstance(data, int):
        raise InputError(f"must be an integer, got {data!r}", field=field)
    if not minimum <= data <= maximum:
        raise InputError(f"must be in the range {minimum} to {maximum}, got {data}", field=field)
    return data
