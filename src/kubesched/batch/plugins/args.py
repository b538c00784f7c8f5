"""Reading Volcano plugin arguments, which arrive as YAML scalars of any type (Volcano's
``Arguments.GetInt`` / ``GetFloat64`` / ``GetBool`` accept numbers and numeric strings)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubesched.errors import InputError


def get_int(args: Mapping[str, Any], key: str, default: int, *, plugin: str) -> int:
    value = args.get(key)
    if value is None:
        return default
    if isinstance(value, bool):
        raise InputError(f"must be an integer, got {value!r}", field=f"{plugin}.arguments.{key}")
    if isinstance(value, int):
        return value
    try:
        return int(str(value).strip())
    except ValueError:
        raise InputError(f"must be an integer, got {value!r}", field=f"{plugin}.arguments.{key}") from None


def get_float(args: Mapping[str, Any], key: str, default: float, *, plugin: str) -> float:
    value = args.get(key)
    if value is None:
        return default
    if isinstance(value, bool):
        raise InputError(f"must be a number, got {value!r}", field=f"{plugin}.arguments.{key}")
    try:
        return float(str(value).strip()) if not isinstance(value, int | float) else float(value)
    except ValueError:
        raise InputError(f"must be a number, got {value!r}", field=f"{plugin}.arguments.{key}") from None


def get_bool(args: Mapping[str, Any], key: str, default: bool, *, plugin: str) -> bool:
    value = args.get(key)
    if value is None:
        return default
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("true", "1", "t"):
        return True
    if text in ("false", "0", "f"):
        return False
    raise InputError(f"must be true or false, got {value!r}", field=f"{plugin}.arguments.{key}")
