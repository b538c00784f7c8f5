"""``as=Table`` responses: the columns kubectl prints, computed server-side as upstream does."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

Column = tuple[str, str, int]  # name, type, priority (1: only with -o wide)
Row = list[Any]


def _age(ts: Any, now: float) -> str:
    if not ts:
        return "<unknown>"
    try:
        then = datetime.strptime(str(ts)[:19], "%Y-%m-%dT%H:%M:%S").replace(tzinfo=UTC).timestamp()
    except ValueError:
        return "<unknown>"
    return human_duration(max(0.0, now - then))


def human_duration(seconds: float) -> str:
    """apimachinery's duration.HumanDuration."""
    s = int(seconds)
    if s < 120:
        return f"{s}s"
    m = s // 60
    if m < 10:
        return f"{m}m{s % 60}s" if s % 60 else f"{m}m"
    if m < 180:
        return f"{m}m"
    h = s // 3600
    if h < 8:
        return f"{h}h{m % 60}m" if m % 60 else f"{h}h"
    if h < 48:
        return f"{h}h"
    d = h // 24
    if h < 24 * 8:
        return f"{d}d{h % 24}h" if h % 24 else f"{d}d"
    if d < 365 * 2:
        return f"{d}d"
    return f"{d // 365}y"


def _meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    return obj.get("metadata") or {}


def _pod_row(obj: Mapping[str, Any], now: float) -> Row:
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    containers = spec.get("containers") or []
    statuses = status.get("containerStatuses") or []
    ready = sum(1 for c in statuses if c.get("ready"))
    restarts = sum(int(c.get("restartCount") or 0) for c in statuses)
    phase = status.get("reason") or status.get("phase") or "Pending"
    if _meta(obj).get("deletionTimestamp"):
        phase = "Terminating"
    elif phase == "Succeeded":
        phase = "Completed"
    return [
        _meta(obj).get("name"),
        f"{ready}/{len(containers)}",
        phase,
        restarts,
        _age(_meta(obj).get("creationTimestamp"), now),
        status.get("podIP") or "<none>",
        spec.get("nodeName") or "<none>",
        status.get("nominatedNodeName") or "<none>",
        "<none>",
    ]


def _node_row(obj: Mapping[str, Any], now: float) -> Row:
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    ready = "Unknown"
    for cond in status.get("conditions") or []:
        if cond.get("type") == "Ready":
            ready = "Ready" if cond.get("status") == "True" else "NotReady"
    if spec.get("unschedulable"):
        ready += ",SchedulingDisabled"
    labels = _meta(obj).get("labels") or {}
    roles = sorted(
        k.split("/", 1)[1] for k in labels if k.startswith("node-role.kubernetes.io/") and "/" in k
    )
    info = status.get("nodeInfo") or {}
    addresses = {a.get("type"): a.get("address") for a in status.get("addresses") or []}
    return [
        _meta(obj).get("name"),
        ready,
        ",".join(roles) or "<none>",
        _age(_meta(obj).get("creationTimestamp"), now),
        info.get("kubeletVersion", ""),
        addresses.get("InternalIP", "<none>"),
        addresses.get("ExternalIP", "<none>"),
        info.get("osImage", "<unknown>"),
        info.get("kernelVersion", "<unknown>"),
        info.get("containerRuntimeVersion", "<unknown>"),
    ]


def _event_row(obj: Mapping[str, Any], now: float) -> Row:
    involved = obj.get("involvedObject") or obj.get("regarding") or {}
    last = obj.get("lastTimestamp") or obj.get("eventTime") or _meta(obj).get("creationTimestamp")
    return [
        _age(last, now),
        obj.get("type", ""),
        obj.get("reason", ""),
        f"{str(involved.get('kind', '')).lower()}/{involved.get('name', '')}",
        obj.get("message", obj.get("note", "")),
    ]


def _podgroup_row(obj: Mapping[str, Any], now: float) -> Row:
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    return [
        _meta(obj).get("name"),
        status.get("phase", ""),
        spec.get("minMember", 0),
        status.get("running", 0),
        _age(_meta(obj).get("creationTimestamp"), now),
        spec.get("queue", "default"),
    ]


def _queue_row(obj: Mapping[str, Any], now: float) -> Row:
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    return [
        _meta(obj).get("name"),
        spec.get("weight", 1),
        status.get("state", "Open"),
        _age(_meta(obj).get("creationTimestamp"), now),
    ]


def _deployment_row(obj: Mapping[str, Any], now: float) -> Row:
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    return [
        _meta(obj).get("name"),
        f"{status.get('readyReplicas', 0)}/{spec.get('replicas', 1)}",
        status.get("updatedReplicas", 0),
        status.get("availableReplicas", 0),
        _age(_meta(obj).get("creationTimestamp"), now),
    ]


def _replicaset_row(obj: Mapping[str, Any], now: float) -> Row:
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    return [
        _meta(obj).get("name"),
        spec.get("replicas", 1),
        status.get("replicas", 0),
        status.get("readyReplicas", 0),
        _age(_meta(obj).get("creationTimestamp"), now),
    ]


def _statefulset_row(obj: Mapping[str, Any], now: float) -> Row:
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    return [
        _meta(obj).get("name"),
        f"{status.get('readyReplicas', 0)}/{spec.get('replicas', 1)}",
        _age(_meta(obj).get("creationTimestamp"), now),
    ]


def _job_row(obj: Mapping[str, Any], now: float) -> Row:
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    complete = any(c.get("type") == "Complete" for c in status.get("conditions") or [])
    return [
        _meta(obj).get("name"),
        "Complete" if complete else "Running",
        f"{status.get('succeeded', 0)}/{spec.get('completions', 1)}",
        _age(_meta(obj).get("creationTimestamp"), now),
    ]


def _namespace_row(obj: Mapping[str, Any], now: float) -> Row:
    return [
        _meta(obj).get("name"),
        (obj.get("status") or {}).get("phase", "Active"),
        _age(_meta(obj).get("creationTimestamp"), now),
    ]


def _default_row(obj: Mapping[str, Any], now: float) -> Row:
    return [_meta(obj).get("name"), _age(_meta(obj).get("creationTimestamp"), now)]


NAME = ("Name", "string", 0)
AGE = ("Age", "string", 0)

TABLES: dict[str, tuple[list[Column], Callable[[Mapping[str, Any], float], Row]]] = {
    "Pod": (
        [
            NAME,
            ("Ready", "string", 0),
            ("Status", "string", 0),
            ("Restarts", "string", 0),
            AGE,
            ("IP", "string", 1),
            ("Node", "string", 1),
            ("Nominated Node", "string", 1),
            ("Readiness Gates", "string", 1),
        ],
        _pod_row,
    ),
    "Node": (
        [
            NAME,
            ("Status", "string", 0),
            ("Roles", "string", 0),
            AGE,
            ("Version", "string", 0),
            ("Internal-IP", "string", 1),
            ("External-IP", "string", 1),
            ("OS-Image", "string", 1),
            ("Kernel-Version", "string", 1),
            ("Container-Runtime", "string", 1),
        ],
        _node_row,
    ),
    "Event": (
        [
            ("Last Seen", "string", 0),
            ("Type", "string", 0),
            ("Reason", "string", 0),
            ("Object", "string", 0),
            ("Message", "string", 0),
        ],
        _event_row,
    ),
    "PodGroup": (
        [
            NAME,
            ("Status", "string", 0),
            ("minMember", "integer", 0),
            ("RUNNINGS", "integer", 0),
            AGE,
            ("QUEUE", "string", 1),
        ],
        _podgroup_row,
    ),
    "ReplicaSet": (
        [NAME, ("Desired", "integer", 0), ("Current", "integer", 0), ("Ready", "integer", 0), AGE],
        _replicaset_row,
    ),
    "StatefulSet": ([NAME, ("Ready", "string", 0), AGE], _statefulset_row),
    "Job": ([NAME, ("Status", "string", 0), ("Completions", "string", 0), AGE], _job_row),
    "Namespace": ([NAME, ("Status", "string", 0), AGE], _namespace_row),
    "Queue": ([NAME, ("Weight", "integer", 0), ("State", "string", 0), AGE], _queue_row),
    "Deployment": (
        [NAME, ("Ready", "string", 0), ("Up-to-date", "integer", 0), ("Available", "integer", 0), AGE],
        _deployment_row,
    ),
}


def table(kind: str, objects: Sequence[Mapping[str, Any]], list_meta: Mapping[str, Any]) -> dict[str, Any]:
    columns, row = TABLES.get(kind, ([NAME, AGE], _default_row))
    now = time.time()
    return {
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": dict(list_meta),
        "columnDefinitions": [
            {"name": n, "type": t, "format": "name" if n == "Name" else "", "description": "", "priority": p}
            for n, t, p in columns
        ],
        "rows": [
            {
                "cells": row(obj, now),
                "object": {
                    "kind": "PartialObjectMetadata",
                    "apiVersion": "meta.k8s.io/v1",
                    "metadata": obj.get("metadata") or {},
                },
            }
            for obj in objects
        ],
    }
