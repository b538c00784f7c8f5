"""The base of the ``resource.k8s.io`` kinds' strategies: upstream's defaults and rules, read from
:mod:`kubesched.api.resource_rules`, every broken rule named in one 422, then the typed view of
:mod:`kubesched.api.resource` must accept the object."""

from __future__ import annotations

from typing import Any

from kubesched.api.resource_rules import DEFAULTS, VALIDATE, VALIDATE_UPDATE
from kubesched.registry.rules import RulesStrategy


class ResourceStrategy(RulesStrategy):
    """A ``resource.k8s.io/v1`` kind."""

    top_fields = frozenset({"spec"})
    validate_rules = VALIDATE
    update_rules = VALIDATE_UPDATE

    def defaults(self, obj: dict[str, Any]) -> None:
        default = DEFAULTS.get(self.kind)
        if default is not None:
            default(obj)
