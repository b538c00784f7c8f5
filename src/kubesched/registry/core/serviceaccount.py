"""ServiceAccounts: secrets and image pull secrets without a spec or a status."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubesched.registry.errors import bad_request
from kubesched.registry.strategy import AGE, NAME, Column, Resource, Row, Strategy, age, meta_of

#: Each top-level field and the Go type upstream's decoder wants it to be.
_SHAPES: dict[str, tuple[type, str]] = {
    "secrets": (list, "[]v1.ObjectReference"),
    "imagePullSecrets": (list, "[]v1.LocalObjectReference"),
    "automountServiceAccountToken": (bool, "bool"),
}


#: JSON's names of the value types, as Go's decoder words its complaint.
_JSON_TYPES = {bool: "bool", int: "number", float: "number", str: "string", dict: "object", list: "array"}


class ServiceAccountStrategy(Strategy):
    top_fields = frozenset(_SHAPES)
    columns: tuple[Column, ...] = (NAME, ("Secrets", "integer", 0), AGE)

    def validate(self, body: dict[str, Any]) -> None:
        """A field of the wrong JSON type is refused as upstream's decoder refuses it (400)."""
        for field, (want, go_type) in _SHAPES.items():
            value = body.get(field)
            bad = value is not None and not isinstance(value, want)
            if isinstance(value, list):
                bad = any(not isinstance(ref, dict) for ref in value)
            if bad:
                raise bad_request(
                    'ServiceAccount in version "v1" cannot be handled as a ServiceAccount: '
                    f"json: cannot unmarshal {_JSON_TYPES.get(type(value), 'value')} into Go struct field "
                    f"ServiceAccount.{field} of type {go_type}"
                )
        super().validate(body)

    def row(self, obj: Mapping[str, Any], now: float) -> Row:
        secrets = obj.get("secrets")
        return [
            meta_of(obj).get("name"),
            len(secrets) if isinstance(secrets, list) else 0,
            age(meta_of(obj).get("creationTimestamp"), now),
        ]


STRATEGY = ServiceAccountStrategy(
    Resource("", "v1", "serviceaccounts", "serviceaccount", "ServiceAccount", True, ("sa",))
)
