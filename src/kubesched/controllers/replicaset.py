"""The ReplicaSet controller (upstream ``pkg/controller/replicaset``): a ReplicaSet keeps
``spec.replicas`` live pods from its template, removing the surplus unscheduled and newest first."""

from __future__ import annotations

import contextlib

from kubesched.controllers.controller_utils import (
    OwnerController,
    create_pod,
    generate_name,
    is_terminal,
    write_status,
)
from kubesched.store.base import NotFound, Obj


class ReplicaSetController(OwnerController):
    kind = "ReplicaSet"

    def reconcile(self, rs: Obj, pods: list[Obj]) -> None:
        spec = rs.get("spec") or {}
        replicas = int(spec.get("replicas", 1))
        # Upstream's FilterActivePods: neither finished nor on its way out.
        live = [p for p in pods if not is_terminal(p) and not p["metadata"].get("deletionTimestamp")]
        name = rs["metadata"]["name"]
        for _ in range(replicas - len(live)):
            create_pod(self.store, rs, generate_name(name), spec.get("template") or {}, {})
        if len(live) > replicas:
            # Unscheduled pods go first, then the newest, as the ReplicaSet controller ranks them.
            ranked = sorted(
                live,
                key=lambda p: (
                    bool((p.get("spec") or {}).get("nodeName")),
                    str(p["metadata"].get("creationTimestamp")),
                ),
            )
            for pod in ranked[: len(live) - replicas]:
                with contextlib.suppress(NotFound):
                    self.store.delete("Pod", pod["metadata"].get("namespace"), pod["metadata"]["name"])
        if len(live) > replicas:
            live = [p for p in live if p not in ranked[: len(live) - replicas]]
        ready = sum(1 for p in live if _ready(p))
        status = {
            "replicas": len(live),
            "fullyLabeledReplicas": len(live),
            "readyReplicas": ready,
            "availableReplicas": ready,
            "observedGeneration": rs["metadata"].get("generation", 1),
        }
        write_status(self.store, rs, status)


def _ready(pod: Obj) -> bool:
    """The pod's Ready condition is True (a Running pod the kubelet has not reported on counts)."""
    status = pod.get("status") or {}
    for cond in status.get("conditions") or []:
        if isinstance(cond, dict) and cond.get("type") == "Ready":
            return cond.get("status") == "True"
    return status.get("phase") == "Running"
