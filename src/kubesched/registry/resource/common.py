"""The base of the ``resource.k8s.io`` kinds' strategies: upstream's defaults and rules, read from
:mod:`kubesched.api.resource_rules`, every broken rule named in one 422, then the typed view of
:mod:`kubesched.api.resource` must accept the object."""

from __future__ import annotations

from typing import Any

from kubesched.api.resource_rules import DEFAULTS, VALIDATE, VALIDATE_UPDATE, Cause
from kubesched.registry.errors import invalid
from kubesched.registry.strategy import Strategy
from kubesched.store.base import Obj
from kubesched.store.parsers import DEFAULT_PARSERS


class ResourceStrategy(Strategy):
    """A ``resource.k8s.io/v1`` kind."""

    top_fields = frozenset({"spec"})

    def defaults(self, obj: dict[str, Any]) -> None:
        default = DEFAULTS.get(self.kind)
        if default is not None:
            default(obj)

    def validate(self, body: dict[str, Any]) -> None:
        """A quantity that does not parse is a 400; every broken rule is named in one 422; the
        typed view then refuses what is of the wrong type."""
        self.check_quantities(body)
        name = str(body["metadata"].get("name", ""))
        self.refuse(name, VALIDATE[self.kind](body))
        parse = DEFAULT_PARSERS.get(self.kind)
        if parse is not None:
            self.check_parses(parse, body, name)

    def prepare_for_update(self, old: Obj, new: dict[str, Any]) -> None:
        """The write is read with the kind's defaults (as upstream decodes every body), keeps what
        the base keeps, and may change only what upstream lets an update change."""
        self.defaults(new)
        super().prepare_for_update(old, new)
        self.refuse(str(new["metadata"].get("name", "")), VALIDATE_UPDATE[self.kind](new, old))

    def refuse(self, name: str, causes: list[Cause]) -> None:
        if causes:
            res = self.resource
            raise invalid(res.kind, res.group, name, causes)
