"""The runtime PodGroups of ``scheduling.k8s.io/v1alpha2`` (served while GenericWorkload is on; not
Volcano's, ``registry/volcano/podgroup.py``): a spec fixed once made, a status written through its
own subresource by the scheduler (upstream ``pkg/registry/scheduling/podgroup``)."""

from __future__ import annotations

from typing import Any

from kubesched.api.features import DEFAULT_FEATURE_GATES, GENERIC_WORKLOAD, WORKLOAD_AWARE_PREEMPTION
from kubesched.api.scheduling_group_rules import (
    pod_group_errors,
    pod_group_status_errors,
    pod_group_update_errors,
)
from kubesched.api.scheduling_groups import DISRUPTION_MODE_POD
from kubesched.registry.errors import invalid
from kubesched.registry.scheduling.gated import drop_disabled_group_fields
from kubesched.registry.strategy import Resource, Strategy
from kubesched.store.base import Obj


class PodGroupStrategy(Strategy):
    feature_gate = GENERIC_WORKLOAD

    def decode(self, body: dict[str, Any]) -> None:
        spec = body.get("spec")
        if isinstance(spec, dict):
            drop_disabled_group_fields(spec)

    def defaults(self, obj: dict[str, Any]) -> None:
        spec = obj.get("spec")
        if isinstance(spec, dict) and DEFAULT_FEATURE_GATES.enabled(WORKLOAD_AWARE_PREEMPTION):
            spec.setdefault("disruptionMode", DISRUPTION_MODE_POD)

    def validate(self, body: dict[str, Any]) -> None:
        self.refuse(body, pod_group_errors(body))
        super().validate(body)

    def prepare_for_create(self, obj: dict[str, Any]) -> None:
        # The status is the scheduler's to write, through the subresource.
        super().prepare_for_create(obj)
        obj.pop("status", None)

    def prepare_for_update(self, old: Obj, new: dict[str, Any]) -> None:
        super().prepare_for_update(old, new)
        self.defaults(new)
        self.refuse(new, pod_group_update_errors(new, old))

    def prepare_for_status_update(self, old: Obj, new: dict[str, Any]) -> None:
        self.refuse(new, pod_group_status_errors(new))

    def refuse(self, body: dict[str, Any], causes: list[tuple[str, str, str]]) -> None:
        if causes:
            res = self.resource
            raise invalid(res.kind, res.group, str(body["metadata"].get("name", "")), causes)


STRATEGY = PodGroupStrategy(
    Resource(
        "scheduling.k8s.io",
        "v1alpha2",
        "podgroups",
        "podgroup",
        "PodGroup",
        True,
        subresources=("status",),
    )
)
