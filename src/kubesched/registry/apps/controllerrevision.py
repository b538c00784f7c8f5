"""ControllerRevisions: the snapshots of a StatefulSet's pod template that its rollouts (and
``kubectl rollout history|undo``) read; ``data`` and ``revision``, no spec or status."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubesched.registry.errors import invalid
from kubesched.registry.strategy import AGE, NAME, Column, Resource, Row, Strategy, age, meta_of
from kubesched.store.base import Obj


class ControllerRevisionStrategy(Strategy):
    top_fields = frozenset({"data", "revision"})
    columns: tuple[Column, ...] = (NAME, ("Controller", "string", 0), ("Revision", "integer", 0), AGE)

    def validate(self, body: dict[str, Any]) -> None:
        revision = body.get("revision")
        if not isinstance(revision, int) or isinstance(revision, bool) or revision < 0:
            res = self.resource
            raise invalid(
                res.kind,
                res.group,
                str(body["metadata"].get("name", "")),
                [
                    (
                        "FieldValueInvalid",
                        "revision",
                        f"Invalid value: {revision!r}: must be greater than or equal to 0",
                    )
                ],
            )

    def prepare_for_update(self, old: Obj, new: dict[str, Any]) -> None:
        super().prepare_for_update(old, new)
        if new.get("data") != old.get("data"):
            res = self.resource
            raise invalid(
                res.kind,
                res.group,
                str(new["metadata"].get("name", "")),
                [("FieldValueInvalid", "data", "Invalid value: field is immutable")],
            )

    def row(self, obj: Mapping[str, Any], now: float) -> Row:
        """Upstream ``printControllerRevision``: the controller as ``kind.group/name``."""
        meta = meta_of(obj)
        controller = "<none>"
        for ref in meta.get("ownerReferences") or []:
            if isinstance(ref, dict) and ref.get("controller"):
                group = str(ref.get("apiVersion", "")).rpartition("/")[0]
                kind = str(ref.get("kind", "")).lower()
                controller = f"{kind}.{group}/{ref.get('name')}" if group else f"{kind}/{ref.get('name')}"
        return [meta.get("name"), controller, obj.get("revision", 0), age(meta.get("creationTimestamp"), now)]


STRATEGY = ControllerRevisionStrategy(
    Resource("apps", "v1", "controllerrevisions", "controllerrevision", "ControllerRevision", True)
)
