"""ResourceClaims: a request for devices, allocated by the scheduler (``status.allocation``) and
reserved for the pods that use it (``status.reservedFor``). The spec is fixed once made; the
status is written through its own subresource, under upstream's rules for it. ``kubectl get``
shows each claim's state: ``pending``, ``allocated``, ``allocated,reserved``, with ``deleted`` in
front while it is being deleted."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubesched.api.resource_rules import validate_resource_claim_status_update
from kubesched.registry.resource.common import ResourceStrategy
from kubesched.registry.strategy import AGE, NAME, Column, Resource, Row, age, meta_of
from kubesched.store.base import Obj


def claim_state(obj: Mapping[str, Any]) -> str:
    """kubectl's ``resourceClaimState``."""
    deleted = bool(meta_of(obj).get("deletionTimestamp"))
    status = obj.get("status") or {}
    states = ["deleted"] if deleted else []
    if not isinstance(status, Mapping) or status.get("allocation") is None:
        if not deleted:
            states.append("pending")
    else:
        states.append("allocated")
        if status.get("reservedFor"):
            states.append("reserved")
    return ",".join(states)


class ResourceClaimStrategy(ResourceStrategy):
    top_fields = frozenset({"spec", "status"})
    columns: tuple[Column, ...] = (NAME, ("State", "string", 0), AGE)

    def prepare_for_create(self, obj: dict[str, Any]) -> None:
        # The status is the scheduler's and the drivers' to write, through the subresource.
        super().prepare_for_create(obj)
        obj.pop("status", None)

    def prepare_for_status_update(self, old: Obj, new: dict[str, Any]) -> None:
        self.defaults(new)
        self.refuse(str(new["metadata"].get("name", "")), validate_resource_claim_status_update(new, old))

    def row(self, obj: Mapping[str, Any], now: float) -> Row:
        meta = meta_of(obj)
        return [meta.get("name"), claim_state(obj), age(meta.get("creationTimestamp"), now)]


STRATEGY = ResourceClaimStrategy(
    Resource(
        "resource.k8s.io",
        "v1",
        "resourceclaims",
        "resourceclaim",
        "ResourceClaim",
        True,
        subresources=("status",),
    )
)
