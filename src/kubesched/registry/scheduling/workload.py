"""Workloads (``scheduling.k8s.io/v1alpha2``, served while GenericWorkload is on): the pod group
templates of one workload, fixed once made (upstream ``pkg/registry/scheduling/workload``)."""

from __future__ import annotations

from typing import Any

from kubesched.api.features import GENERIC_WORKLOAD
from kubesched.api.scheduling_group_rules import workload_errors, workload_update_errors
from kubesched.registry.errors import invalid
from kubesched.registry.scheduling.gated import drop_disabled_group_fields
from kubesched.registry.strategy import Resource, Strategy
from kubesched.store.base import Obj


class WorkloadStrategy(Strategy):
    top_fields = frozenset({"spec"})
    feature_gate = GENERIC_WORKLOAD

    def decode(self, body: dict[str, Any]) -> None:
        for tpl in (body.get("spec") or {}).get("podGroupTemplates") or ():
            if isinstance(tpl, dict):
                drop_disabled_group_fields(tpl)

    def validate(self, body: dict[str, Any]) -> None:
        self.refuse(body, workload_errors(body))
        super().validate(body)

    def prepare_for_update(self, old: Obj, new: dict[str, Any]) -> None:
        super().prepare_for_update(old, new)
        self.refuse(new, workload_update_errors(new, old))

    def refuse(self, body: dict[str, Any], causes: list[tuple[str, str, str]]) -> None:
        if causes:
            res = self.resource
            raise invalid(res.kind, res.group, str(body["metadata"].get("name", "")), causes)


STRATEGY = WorkloadStrategy(
    Resource("scheduling.k8s.io", "v1alpha2", "workloads", "workload", "Workload", True)
)
