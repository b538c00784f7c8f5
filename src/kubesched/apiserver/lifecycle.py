"""Node defaults: a node as its kubelet would report it."""

from __future__ import annotations

import time
from typing import Any

from kubesched.store.memory import format_timestamp

#: A simulated node's capacity unless its manifest says otherwise.
DEFAULT_CAPACITY = {"cpu": "32", "memory": "256Gi", "pods": "110", "ephemeral-storage": "1Ti"}


def _timestamp(seconds: float | None = None) -> str:
    return format_timestamp(time.time() if seconds is None else seconds)


def node_defaults(obj: dict[str, Any]) -> None:
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
    now = _timestamp()
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
