"""Pods: kubelet-ish defaults, the fields an update may not change, and their table."""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from kubesched.api.features import DEFAULT_FEATURE_GATES, GENERIC_WORKLOAD
from kubesched.api.field_errors import immutable
from kubesched.api.field_errors import invalid as invalid_cause
from kubesched.api.resource_rules import dns1123_subdomain_errors
from kubesched.registry.errors import invalid
from kubesched.registry.strategy import AGE, NAME, Column, Resource, Row, Strategy, age, meta_of
from kubesched.store.base import Obj
from kubesched.store.memory import format_timestamp

POD_UPDATE_FORBIDDEN = (
    "Forbidden: pod updates may not change fields other than `spec.containers[*].image`, "
    "`spec.initContainers[*].image`, `spec.activeDeadlineSeconds`, `spec.tolerations` (only additions to "
    "existing tolerations), `spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was "
    "previously negative)"
)

#: Spec fields set by the server (binding, admission) that an update leaving them out keeps.
_KEPT_ON_UPDATE = ("nodeName", "schedulerName", "priority", "preemptionPolicy")


class PodStrategy(Strategy):
    columns: tuple[Column, ...] = (
        NAME,
        ("Ready", "string", 0),
        ("Status", "string", 0),
        ("Restarts", "string", 0),
        AGE,
        ("IP", "string", 1),
        ("Node", "string", 1),
        ("Nominated Node", "string", 1),
        ("Readiness Gates", "string", 1),
    )
    field_paths = frozenset(
        {
            "spec.nodeName",
            "spec.schedulerName",
            "status.phase",
            "spec.restartPolicy",
            "spec.serviceAccountName",
            "status.podIP",
            "status.nominatedNodeName",
        }
    )

    def decode(self, body: dict[str, Any]) -> None:
        # spec.schedulingGroup is dropped while GenericWorkload is off (dropDisabledPodFields).
        spec = body.get("spec")
        if (
            isinstance(spec, dict)
            and "schedulingGroup" in spec
            and not DEFAULT_FEATURE_GATES.enabled(GENERIC_WORKLOAD)
        ):
            del spec["schedulingGroup"]

    def validate(self, body: dict[str, Any]) -> None:
        spec = body.get("spec")
        group = spec.get("schedulingGroup") if isinstance(spec, dict) else None
        if isinstance(group, dict):
            name = group.get("podGroupName")
            causes = (
                [
                    invalid_cause("spec.schedulingGroup.podGroupName", name, msg)
                    for msg in dns1123_subdomain_errors(name)
                ]
                if isinstance(name, str)
                else []
            )
            if causes:
                raise invalid("Pod", "", str(body["metadata"].get("name", "")), causes)
        super().validate(body)

    def defaults(self, obj: dict[str, Any]) -> None:
        spec = obj.setdefault("spec", {})
        if isinstance(spec, dict):
            spec.setdefault("restartPolicy", "Always")
            spec.setdefault("terminationGracePeriodSeconds", 30)
            spec.setdefault("dnsPolicy", "ClusterFirst")
            spec.setdefault("enableServiceLinks", True)

    def prepare_for_create(self, obj: dict[str, Any]) -> None:
        """Upstream's ``applySchedulingGatedCondition``: a pod created with scheduling gates says so
        in its PodScheduled condition (False, ``SchedulingGated``)."""
        super().prepare_for_create(obj)
        spec = obj.get("spec")
        gates = spec.get("schedulingGates") if isinstance(spec, dict) else None
        if not (isinstance(gates, list) and gates):
            return
        status = obj.get("status")
        status = dict(status) if isinstance(status, dict) else {}
        conditions = [c for c in status.get("conditions") or [] if isinstance(c, dict)]
        if any(c.get("type") == "PodScheduled" for c in conditions):
            return
        conditions.append(
            {
                "type": "PodScheduled",
                "status": "False",
                "lastProbeTime": None,
                "lastTransitionTime": format_timestamp(time.time()),
                "reason": "SchedulingGated",
                "message": "Scheduling is blocked due to non-empty scheduling gates",
            }
        )
        status["conditions"] = conditions
        obj["status"] = status

    def prepare_for_update(self, old: Obj, new: dict[str, Any]) -> None:
        """A bound pod stays on its node; what binding and admission set survives an update that
        leaves it out."""
        super().prepare_for_update(old, new)
        old_spec, spec = old.get("spec") or {}, dict(new.get("spec") or {})
        if old_spec.get("nodeName") and spec.get("nodeName") not in (None, old_spec["nodeName"]):
            raise invalid(
                "Pod",
                "",
                old["metadata"]["name"],
                [("FieldValueForbidden", "spec.nodeName", POD_UPDATE_FORBIDDEN)],
            )
        for key in _KEPT_ON_UPDATE:
            if key in old_spec and key not in spec:
                spec[key] = old_spec[key]
        if spec.get("schedulingGroup") != old_spec.get("schedulingGroup"):
            raise invalid(
                "Pod",
                "",
                old["metadata"]["name"],
                [immutable("spec.schedulingGroup", spec.get("schedulingGroup"))],
            )
        new["spec"] = spec

    def row(self, obj: Mapping[str, Any], now: float) -> Row:
        spec, status = obj.get("spec") or {}, obj.get("status") or {}
        containers = spec.get("containers") or []
        statuses = status.get("containerStatuses") or []
        ready = sum(1 for c in statuses if c.get("ready"))
        restarts = sum(int(c.get("restartCount") or 0) for c in statuses)
        phase = status.get("reason") or status.get("phase") or "Pending"
        if any(
            isinstance(c, dict) and c.get("type") == "PodScheduled" and c.get("reason") == "SchedulingGated"
            for c in status.get("conditions") or []
        ):
            phase = "SchedulingGated"
        if meta_of(obj).get("deletionTimestamp"):
            phase = "Terminating"
        elif phase == "Succeeded":
            phase = "Completed"
        return [
            meta_of(obj).get("name"),
            f"{ready}/{len(containers)}",
            phase,
            restarts,
            age(meta_of(obj).get("creationTimestamp"), now),
            status.get("podIP") or "<none>",
            spec.get("nodeName") or "<none>",
            status.get("nominatedNodeName") or "<none>",
            "<none>",
        ]


STRATEGY = PodStrategy(
    Resource(
        "",
        "v1",
        "pods",
        "pod",
        "Pod",
        True,
        ("po",),
        ("status", "binding", "eviction", "attach", "exec", "log", "portforward"),
        ("all",),
    )
)
