"""Nodes: a node as its kubelet would report it, and its table."""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from kubesched.registry.strategy import AGE, NAME, Column, Resource, Row, Strategy, age, meta_of
from kubesched.store.memory import format_timestamp

#: A simulated node's capacity unless its manifest says otherwise.
DEFAULT_CAPACITY = {"cpu": "32", "memory": "256Gi", "pods": "110", "ephemeral-storage": "1Ti"}


class NodeStrategy(Strategy):
    columns: tuple[Column, ...] = (
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
    )
    field_paths = frozenset({"spec.unschedulable"})

    def defaults(self, obj: dict[str, Any]) -> None:
        """A node as its kubelet would report it: Ready, with capacity and the usual labels."""
        meta = obj.setdefault("metadata", {})
        name = str(meta.get("name", ""))
        labels = meta.setdefault("labels", {})
        if isinstance(labels, dict):
            labels.setdefault("kubernetes.io/hostname", name)
            labels.setdefault("kubernetes.io/os", "linux")
            labels.setdefault("kubernetes.io/arch", "amd64")
            labels.setdefault("type", "kwok")
        status = obj.setdefault("status", {})
        if not isinstance(status, dict):
            return
        capacity = status.get("capacity") or status.get("allocatable") or dict(DEFAULT_CAPACITY)
        status.setdefault("capacity", capacity)
        status.setdefault("allocatable", capacity)
        now = format_timestamp(time.time())
        if not status.get("conditions"):
            status["conditions"] = [
                {
                    "type": t,
                    "status": "False",
                    "reason": f"KubeletHas{r}",
                    "lastHeartbeatTime": now,
                    "lastTransitionTime": now,
                }
                for t, r in (
                    ("MemoryPressure", "SufficientMemory"),
                    ("DiskPressure", "NoDiskPressure"),
                    ("PIDPressure", "SufficientPID"),
                )
            ] + [
                {
                    "type": "Ready",
                    "status": "True",
                    "reason": "KubeletReady",
                    "message": "kubelet is posting ready status",
                    "lastHeartbeatTime": now,
                    "lastTransitionTime": now,
                }
            ]
        status.setdefault(
            "nodeInfo",
            {
                "architecture": "amd64",
                "bootID": "",
                "containerRuntimeVersion": "kwok://simulated",
                "kernelVersion": "simulated",
                "kubeProxyVersion": "",
                "kubeletVersion": "v1.32.0-kwok",
                "machineID": "",
                "operatingSystem": "linux",
                "osImage": "kubesched simulated node",
                "systemUUID": "",
            },
        )
        status.setdefault("phase", "Running")

    def row(self, obj: Mapping[str, Any], now: float) -> Row:
        spec, status = obj.get("spec") or {}, obj.get("status") or {}
        ready = "Unknown"
        for cond in status.get("conditions") or []:
            if cond.get("type") == "Ready":
                ready = "Ready" if cond.get("status") == "True" else "NotReady"
        if spec.get("unschedulable"):
            ready += ",SchedulingDisabled"
        labels = meta_of(obj).get("labels") or {}
        roles = sorted(
            k.split("/", 1)[1] for k in labels if k.startswith("node-role.kubernetes.io/") and "/" in k
        )
        info = status.get("nodeInfo") or {}
        addresses = {a.get("type"): a.get("address") for a in status.get("addresses") or []}
        return [
            meta_of(obj).get("name"),
            ready,
            ",".join(roles) or "<none>",
            age(meta_of(obj).get("creationTimestamp"), now),
            info.get("kubeletVersion", ""),
            addresses.get("InternalIP", "<none>"),
            addresses.get("ExternalIP", "<none>"),
            info.get("osImage", "<unknown>"),
            info.get("kernelVersion", "<unknown>"),
            info.get("containerRuntimeVersion", "<unknown>"),
        ]


STRATEGY = NodeStrategy(Resource("", "v1", "nodes", "node", "Node", False, ("no",), ("status",)))
