"""How upstream words a broken rule: apimachinery's ``field.Error`` as the causes of a 422
``Status``. Each cause is (reason, field path, message); the rule modules of the kinds
(:mod:`kubesched.api.storage_rules`, :mod:`kubesched.api.resource_rules`) build them here."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

#: One broken rule: (reason, field path, message), the reason as a ``Status`` cause names it.
Cause = tuple[str, str, str]


def go_value(value: Any) -> str:
    """A bad value as ``field.Error`` prints it: strings quoted, numbers and booleans bare, a nil
    value as the quoted string ``"null"``; structures as JSON (upstream prints Go's own syntax)."""
    if value is None:
        return '"null"'
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)


def required(path: str, detail: str = "") -> Cause:
    return ("FieldValueRequired", path, f"Required value: {detail}" if detail else "Required value")


def invalid(path: str, value: Any, detail: str) -> Cause:
    return ("FieldValueInvalid", path, f"Invalid value: {go_value(value)}: {detail}")


def not_supported(path: str, value: Any, supported: Iterable[str]) -> Cause:
    listed = ", ".join(f'"{s}"' for s in supported)
    return (
        "FieldValueNotSupported",
        path,
        f"Unsupported value: {go_value(value)}: supported values: {listed}",
    )


def forbidden(path: str, detail: str) -> Cause:
    return ("FieldValueForbidden", path, f"Forbidden: {detail}")


def duplicate(path: str, value: Any) -> Cause:
    return ("FieldValueDuplicate", path, f"Duplicate value: {go_value(value)}")


def too_long(path: str, limit: int, unit: str = "bytes") -> Cause:
    return ("FieldValueTooLong", path, f"Too long: may not be more than {limit} {unit}")


def too_many(path: str, actual: int, limit: int) -> Cause:
    items = "item" if limit == 1 else "items"
    return ("FieldValueTooMany", path, f"Too many: {actual}: must have at most {limit} {items}")


def immutable(path: str, value: Any) -> Cause:
    return invalid(path, value, "field is immutable")
