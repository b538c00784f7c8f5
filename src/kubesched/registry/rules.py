"""The base of strategies whose defaults and rules are upstream's, kept as tables keyed by kind in
:mod:`kubesched.api` (the storage kinds, the ``resource.k8s.io`` kinds): a quantity that does not
parse is a 400, every broken rule is named in one 422, then the kind's typed view must accept the
object."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, ClassVar

from kubesched.registry.errors import invalid
from kubesched.registry.strategy import Strategy
from kubesched.store.base import Obj
from kubesched.store.parsers import DEFAULT_PARSERS

#: (cause type, field path, message): one broken rule.
Cause = tuple[str, str, str]
Rules = Callable[[Mapping[str, Any]], list[Cause]]
UpdateRules = Callable[[Mapping[str, Any], Mapping[str, Any]], list[Cause]]


class RulesStrategy(Strategy):
    """A kind validated by the rules its table holds for it."""

    #: Kind → its rules on create, and on update (new, old).
    validate_rules: ClassVar[Mapping[str, Rules]]
    update_rules: ClassVar[Mapping[str, UpdateRules]]

    def validate(self, body: dict[str, Any]) -> None:
        self.check_quantities(body)
        name = str(body["metadata"].get("name", ""))
        self.refuse(name, self.validate_rules[self.kind](body))
        parse = DEFAULT_PARSERS.get(self.store_kind)
        if parse is not None:
            self.check_parses(parse, body, name)

    def prepare_for_update(self, old: Obj, new: dict[str, Any]) -> None:
        """The write is read with the kind's defaults (as upstream decodes every body), keeps what
        the base keeps, and may change only what upstream lets an update change."""
        self.defaults(new)
        super().prepare_for_update(old, new)
        self.refuse(str(new["metadata"].get("name", "")), self.update_rules[self.kind](new, old))

    def refuse(self, name: str, causes: list[Cause]) -> None:
        if causes:
            res = self.resource
            raise invalid(res.kind, res.group, name, causes)
