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
        live = [p for p in pods if not is_terminal(p)]
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
        ready = sum(1 for p in live if (p.get("status") or {}).get("phase") == "Running")
        status = {
            "replicas": min(len(live), replicas) if len(live) > replicas else len(live),
            "fullyLabeledReplicas": len(live),
            "readyReplicas": ready,
            "availableReplicas": ready,
            "observedGeneration": rs["metadata"].get("generation", 1),
        }
        write_status(self.store, rs, status)
