"""The StatefulSet controller (upstream ``pkg/controller/statefulset``): pods named
``<name>-<ordinal>`` for ordinals below ``spec.replicas``, a missing one made again under its
name, those at higher ordinals removed."""

from __future__ import annotations

import contextlib

from kubesched.controllers.controller_utils import OwnerController, create_pod, write_status
from kubesched.store.base import NotFound, Obj


class StatefulSetController(OwnerController):
    kind = "StatefulSet"

    def reconcile(self, sts: Obj, pods: list[Obj]) -> None:
        spec = sts.get("spec") or {}
        replicas = int(spec.get("replicas", 1))
        name = sts["metadata"]["name"]
        have = {p["metadata"]["name"]: p for p in pods}
        for i in range(replicas):
            pod_name = f"{name}-{i}"
            if pod_name not in have:
                create_pod(
                    self.store,
                    sts,
                    pod_name,
                    spec.get("template") or {},
                    {"statefulset.kubernetes.io/pod-name": pod_name},
                )
        for pod_name, pod in have.items():
            ordinal = pod_name.rsplit("-", 1)[-1]
            if ordinal.isdigit() and int(ordinal) >= replicas:
                with contextlib.suppress(NotFound):
                    self.store.delete("Pod", pod["metadata"].get("namespace"), pod_name)
        ready = sum(1 for p in pods if (p.get("status") or {}).get("phase") == "Running")
        write_status(
            self.store,
            sts,
            {
                "replicas": min(len(pods), replicas),
                "readyReplicas": ready,
                "currentReplicas": min(len(pods), replicas),
                "availableReplicas": ready,
                "observedGeneration": sts["metadata"].get("generation", 1),
            },
        )
