"""The Job controller (upstream ``pkg/controller/job``): up to ``spec.parallelism`` pods at a time
until ``spec.completions`` of them succeeded, then the Job is Complete."""

from __future__ import annotations

import copy
from typing import Any

from kubesched.controllers.controller_utils import (
    OwnerController,
    create_pod,
    generate_name,
    is_terminal,
    timestamp,
    write_status,
)
from kubesched.store.base import Obj


class JobController(OwnerController):
    kind = "Job"

    def reconcile(self, job: Obj, pods: list[Obj]) -> None:
        spec = job.get("spec") or {}
        completions = int(spec.get("completions", 1) if spec.get("completions") is not None else 1)
        parallelism = int(spec.get("parallelism", 1) if spec.get("parallelism") is not None else 1)
        succeeded = sum(1 for p in pods if (p.get("status") or {}).get("phase") == "Succeeded")
        failed = sum(1 for p in pods if (p.get("status") or {}).get("phase") == "Failed")
        active = [p for p in pods if not is_terminal(p)]
        want = max(0, min(parallelism - len(active), completions - succeeded - len(active)))
        template = copy.deepcopy(spec.get("template") or {})
        template.setdefault("spec", {}).setdefault("restartPolicy", "Never")
        name = job["metadata"]["name"]
        for _ in range(want):
            create_pod(self.store, job, generate_name(name), template, {"job-name": name})
        status: dict[str, Any] = dict(job.get("status") or {})
        status.setdefault("startTime", timestamp())
        status.update({"active": len(active) + want, "succeeded": succeeded, "failed": failed})
        if succeeded >= completions and not status.get("completionTime"):
            now = timestamp()
            status["completionTime"] = now
            status["conditions"] = [
                {"type": "Complete", "status": "True", "lastProbeTime": now, "lastTransitionTime": now}
            ]
        write_status(self.store, job, status)
