"""The base of the storage kinds' strategies (PersistentVolume and PersistentVolumeClaim in the
core group, the ``storage.k8s.io`` kinds): their defaults and rules are upstream's, read from
:mod:`kubesched.api.storage_rules`, and every broken rule is named in one 422."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from kubesched.api.quantity import canonical_quantity
from kubesched.api.storage import (
    READ_ONLY_MANY,
    READ_WRITE_MANY,
    READ_WRITE_ONCE,
    READ_WRITE_ONCE_POD,
)
from kubesched.api.storage_rules import VALIDATE, VALIDATE_UPDATE
from kubesched.registry.rules import RulesStrategy

#: How ``kubectl get`` abbreviates access modes, in upstream's order.
_ACCESS_MODE_ABBREVIATIONS = (
    (READ_WRITE_ONCE, "RWO"),
    (READ_ONLY_MANY, "ROX"),
    (READ_WRITE_MANY, "RWX"),
    (READ_WRITE_ONCE_POD, "RWOP"),
)


class StorageStrategy(RulesStrategy):
    """A storage kind: upstream's defaults and rules, then the typed view must parse the object."""

    validate_rules = VALIDATE
    update_rules = VALIDATE_UPDATE
    #: The kind's defaults (``SetDefaults_<Kind>``); None when it has none.
    default: Callable[[dict[str, Any]], None] | None = None

    def defaults(self, obj: dict[str, Any]) -> None:
        if self.default is not None:
            self.default(obj)


def access_modes(modes: Any) -> str:
    """Upstream ``GetAccessModesAsString``: each mode once, abbreviated, in a fixed order."""
    given = modes if isinstance(modes, list) else []
    return ",".join(short for mode, short in _ACCESS_MODE_ABBREVIATIONS if mode in given)


def quantity_cell(value: Any) -> str:
    """A quantity as upstream's ``Quantity.String()`` prints it ("0" when absent)."""
    if value is None:
        return "0"
    try:
        return canonical_quantity(value)
    except (ValueError, TypeError):
        return str(value)


def mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}
