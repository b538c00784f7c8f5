"""The Job controller (upstream ``pkg/controller/job``).

A Job runs up to ``spec.parallelism`` pods at a time until ``spec.completions`` of them succeeded
(with no ``completions``, until one succeeded and the others ended). Each pod is made with the
``batch.kubernetes.io/job-tracking`` finalizer: a pod that ended is counted once (``succeeded`` or
``failed``) and loses the finalizer in the same commit as the count, so a pod removed afterwards
(evicted, deleted, collected) changes nothing, and a pod removed before it was counted is counted
from what it was when it went. A pod deleted before it ended counts as failed and is replaced (the
default ``podReplacementPolicy``, ``TerminatingOrFailed``).

More failed pods than ``backoffLimit`` fail the Job (``FailureTarget`` then ``Failed``, reason
``BackoffLimitExceeded``; its running pods are removed); enough successes complete it
(``SuccessCriteriaMet`` then ``Complete``, reason ``CompletionsReached``), as v1.35 writes them. A
finished Job makes no pod again. ``Indexed`` Jobs give each pod its completion index (annotation,
label, hostname and ``JOB_COMPLETION_INDEX``) and keep ``completedIndexes``. ``suspend`` removes the
running pods until the Job is resumed. Under WorkloadWithJob an Indexed gang Job gets a Workload and
a PodGroup first (``job_workload.py``)."""

from __future__ import annotations

import contextlib
import copy
from collections.abc import Mapping
from typing import Any

from kubesched.controllers.controller_utils import (
    OwnerController,
    controller_uid,
    create_pod,
    generate_name,
    is_terminal,
    timestamp,
)
from kubesched.controllers.job_workload import ensure_workload_and_pod_group, manages_workload
from kubesched.store.base import EventType, NotFound, Obj
from kubesched.store.informers import Change

TRACKING_FINALIZER = "batch.kubernetes.io/job-tracking"
COMPLETION_INDEX = "batch.kubernetes.io/job-completion-index"
CONTROLLER_UID = "batch.kubernetes.io/controller-uid"
JOB_NAME = "batch.kubernetes.io/job-name"
_REPORTER = "job-controller"

COMPLETIONS_REACHED = ("CompletionsReached", "Reached expected number of succeeded pods")
BACKOFF_LIMIT_EXCEEDED = ("BackoffLimitExceeded", "Job has reached the specified backoff limit")


def _int(value: Any, default: int | None) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else default


def completion_index(pod: Mapping[str, Any]) -> int | None:
    value = ((pod.get("metadata") or {}).get("annotations") or {}).get(COMPLETION_INDEX)
    try:
        return int(value) if value is not None else None
    except (TypeError, ValueError):
        return None


def parse_indexes(text: Any) -> set[int]:
    """The indexes ``completedIndexes`` names (``1,3-5``)."""
    out: set[int] = set()
    for part in str(text or "").split(","):
        if not part:
            continue
        first, _, last = part.partition("-")
        with contextlib.suppress(ValueError):
            out.update(range(int(first), int(last or first) + 1))
    return out


def format_indexes(indexes: set[int]) -> str:
    """Upstream's ``orderedIntervals.String``: runs of three or more as ``a-b``, two as ``a,b``."""
    parts: list[str] = []
    ordered = sorted(indexes)
    i = 0
    while i < len(ordered):
        j = i
        while j + 1 < len(ordered) and ordered[j + 1] == ordered[j] + 1:
            j += 1
        first, last = ordered[i], ordered[j]
        if last == first:
            parts.append(str(first))
        elif last == first + 1:
            parts.append(f"{first},{last}")
        else:
            parts.append(f"{first}-{last}")
        i = j + 1
    return ",".join(parts)


def _has_condition(status: Mapping[str, Any], kind: str) -> bool:
    return any(
        isinstance(c, dict) and c.get("type") == kind and c.get("status") == "True"
        for c in status.get("conditions") or []
    )


def _condition(kind: str, value: str, reason: str, message: str, now: str) -> dict[str, Any]:
    return {
        "type": kind,
        "status": value,
        "lastProbeTime": now,
        "lastTransitionTime": now,
        "reason": reason,
        "message": message,
    }


def _ready(pod: Obj) -> bool:
    for cond in (pod.get("status") or {}).get("conditions") or []:
        if isinstance(cond, dict) and cond.get("type") == "Ready":
            return cond.get("status") == "True"
    return False


def _deleting(pod: Obj) -> bool:
    return bool((pod.get("metadata") or {}).get("deletionTimestamp"))


class JobController(OwnerController):
    kind = "Job"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        #: Per Job uid, its pods removed before they were counted (by pod uid, as they were last).
        self._gone: dict[str, dict[str, Obj]] = {}
        super().__init__(*args, **kwargs)

    def _on_dependent(self, change: Change[Any]) -> None:
        obj = change.obj
        meta = obj.get("metadata") or {}
        if change.type == EventType.DELETED and TRACKING_FINALIZER in (meta.get("finalizers") or []):
            uid = controller_uid(obj)
            if uid is not None:
                self._gone.setdefault(uid, {})[str(meta.get("uid"))] = obj
        super()._on_dependent(change)

    def reconcile(self, job: Obj, pods: list[Obj]) -> None:
        meta = job["metadata"]
        uid = str(meta.get("uid"))
        status: dict[str, Any] = copy.deepcopy(job.get("status") or {})
        if _has_condition(status, "Complete") or _has_condition(status, "Failed"):
            self._gone.pop(uid, None)
            return  # a finished Job never makes or counts a pod again
        if meta.get("deletionTimestamp"):
            return
        job = self._select(job)
        # Under WorkloadWithJob a gang Job's pods join the PodGroup made for it.
        pod_group = ensure_workload_and_pod_group(self.store, job, pods) if manages_workload(job) else None
        spec = job.get("spec") or {}
        indexed = spec.get("completionMode") == "Indexed"
        completions = _int(spec.get("completions"), None)
        parallelism = _int(spec.get("parallelism"), 1) or 0
        backoff_limit = _int(spec.get("backoffLimit"), 6) or 0
        now = timestamp()

        # Count the pods that ended since the last pass, each once.
        gone = self._gone.get(uid, {})
        counted: list[Obj] = []
        succeeded = _int(status.get("succeeded"), 0) or 0
        failed = _int(status.get("failed"), 0) or 0
        done_indexes = parse_indexes(status.get("completedIndexes"))
        finished = [p for p in pods if TRACKING_FINALIZER in (p["metadata"].get("finalizers") or [])]
        for pod in [*finished, *gone.values()]:
            phase = (pod.get("status") or {}).get("phase")
            removed = pod in gone.values()
            if phase == "Succeeded":
                index = completion_index(pod)
                if indexed:
                    if index is not None and completions is not None and index < completions:
                        done_indexes.add(index)
                else:
                    succeeded += 1
            elif phase == "Failed" or _deleting(pod) or removed:
                failed += 1
            else:
                continue
            if not removed:
                counted.append(pod)
        if indexed:
            succeeded = len(done_indexes)
        new_failures = failed > (_int(status.get("failed"), 0) or 0)

        active = [p for p in pods if not is_terminal(p) and not _deleting(p)]
        terminating = [p for p in pods if not is_terminal(p) and _deleting(p)]
        conditions: list[dict[str, Any]] = list(status.get("conditions") or [])
        target = next(
            (
                c
                for c in conditions
                if c.get("type") in ("FailureTarget", "SuccessCriteriaMet") and c.get("status") == "True"
            ),
            None,
        )
        if target is None and new_failures and failed > backoff_limit:
            target = _condition("FailureTarget", "True", *BACKOFF_LIMIT_EXCEEDED, now)
            conditions.append(target)
        to_delete: list[Obj] = []
        to_create: list[int | None] = []
        suspended = bool(spec.get("suspend"))
        if target is not None and target["type"] == "FailureTarget":
            to_delete = active
        elif suspended:
            to_delete = active
            if not _has_condition({"conditions": conditions}, "Suspended"):
                conditions = [c for c in conditions if c.get("type") != "Suspended"]
                conditions.append(_condition("Suspended", "True", "JobSuspended", "Job suspended", now))
                self.store.record_event(job, "Normal", "Suspended", "Suspended", "Job suspended", _REPORTER)
        else:
            if any(c.get("type") == "Suspended" and c.get("status") == "True" for c in conditions):
                conditions = [
                    {**_condition("Suspended", "False", "JobResumed", "Job resumed", now)}
                    if c.get("type") == "Suspended"
                    else c
                    for c in conditions
                ]
                status["startTime"] = now
                self.store.record_event(job, "Normal", "Resumed", "Resumed", "Job resumed", _REPORTER)
            if completions is None:
                want = len(active) if succeeded > 0 else parallelism
            else:
                want = max(0, min(parallelism, completions - succeeded))
            if indexed and completions is not None:
                running = {completion_index(p) for p in active}
                stale = [p for p in active if completion_index(p) in done_indexes]
                to_delete = stale
                keep = [p for p in active if p not in stale]
                pending = [i for i in range(completions) if i not in done_indexes and i not in running]
                to_create = list(pending[: max(0, want - len(keep))])
                if len(keep) > want:
                    keep.sort(key=lambda p: completion_index(p) or 0)
                    to_delete += keep[want:]
            elif len(active) < want:
                to_create = [None] * (want - len(active))
            elif len(active) > want:
                to_delete = sorted(active, key=lambda p: bool((p.get("spec") or {}).get("nodeName")))[
                    : len(active) - want
                ]
            complete = (
                (succeeded > 0 if completions is None else succeeded >= completions)
                and not to_create
                and len(active) == len(to_delete)
            )
            if complete and target is None:
                target = _condition("SuccessCriteriaMet", "True", *COMPLETIONS_REACHED, now)
                conditions.append(target)

        with self.store.transaction():
            for pod in counted:
                finalizers = [f for f in pod["metadata"].get("finalizers") or [] if f != TRACKING_FINALIZER]
                pod_meta = {**pod["metadata"], "finalizers": finalizers}
                if not finalizers:
                    del pod_meta["finalizers"]
                with contextlib.suppress(NotFound):
                    self.store.update({**pod, "metadata": pod_meta})
            for pod in to_delete:
                with contextlib.suppress(NotFound):
                    self.store.delete("Pod", pod["metadata"].get("namespace"), pod["metadata"]["name"])
                self.store.record_event(
                    job,
                    "Normal",
                    "SuccessfulDelete",
                    "Delete",
                    f"Deleted pod: {pod['metadata']['name']}",
                    _REPORTER,
                )
            for index in to_create:
                self._create(job, index, pod_group)
            if not suspended:
                status.setdefault("startTime", now)
            status["active"] = len(active) - len([p for p in to_delete if p in active]) + len(to_create)
            status["ready"] = sum(1 for p in active if _ready(p) and p not in to_delete)
            status["terminating"] = len(terminating)
            status["uncountedTerminatedPods"] = {}
            status["succeeded"], status["failed"] = succeeded, failed
            if indexed:
                status["completedIndexes"] = format_indexes(done_indexes)
            if (
                target is not None
                and not terminating
                and not (target["type"] == "SuccessCriteriaMet" and active)
            ):
                # Every pod has ended: the Job's final condition.
                if target["type"] == "SuccessCriteriaMet":
                    conditions.append(
                        _condition("Complete", "True", target["reason"], target["message"], now)
                    )
                    status["completionTime"] = now
                    self.store.record_event(
                        job, "Normal", "Completed", "Completed", "Job completed", _REPORTER
                    )
                else:
                    conditions.append(_condition("Failed", "True", target["reason"], target["message"], now))
                    self.store.record_event(
                        job, "Warning", target["reason"], "Failed", target["message"], _REPORTER
                    )
            if conditions:
                status["conditions"] = conditions
            # Upstream leaves zero counts (but ready and terminating) out of what it writes.
            for key in ("active", "succeeded", "failed"):
                if status[key] == 0:
                    del status[key]
            if not status.get("completedIndexes"):
                status.pop("completedIndexes", None)
            if status != (job.get("status") or {}):
                self.store.update({**job, "status": status})
        for pod_uid in [str(p["metadata"].get("uid")) for p in gone.values()]:
            self._gone.get(uid, {}).pop(pod_uid, None)

    def _select(self, job: Obj) -> Obj:
        """What upstream's Job strategy does on create: unless ``manualSelector``, the selector is
        the Job's uid, and the template carries it and the Job's name as labels."""
        spec = job.get("spec") or {}
        if spec.get("manualSelector") or spec.get("selector"):
            return job
        meta = job["metadata"]
        labels = {
            CONTROLLER_UID: str(meta.get("uid")),
            JOB_NAME: str(meta.get("name")),
            "controller-uid": str(meta.get("uid")),
            "job-name": str(meta.get("name")),
        }
        template = copy.deepcopy(spec.get("template") or {})
        tmeta = template.setdefault("metadata", {})
        tmeta["labels"] = {**(tmeta.get("labels") or {}), **labels}
        new_spec = {
            **spec,
            "selector": {"matchLabels": {CONTROLLER_UID: str(meta.get("uid"))}},
            "template": template,
        }
        return self.store.update({**job, "spec": new_spec})

    def _create(self, job: Obj, index: int | None, pod_group: str | None = None) -> None:
        meta = job["metadata"]
        name = str(meta["name"])
        template = copy.deepcopy((job.get("spec") or {}).get("template") or {})
        pod_spec = template.setdefault("spec", {})
        pod_spec.setdefault("restartPolicy", "Never")
        if pod_group is not None:
            pod_spec["schedulingGroup"] = {"podGroupName": pod_group}
        labels = {
            CONTROLLER_UID: str(meta.get("uid")),
            JOB_NAME: name,
            "controller-uid": str(meta.get("uid")),
            "job-name": name,
        }
        annotations: dict[str, str] = {}
        base = name
        if index is not None:
            labels[COMPLETION_INDEX] = str(index)
            annotations[COMPLETION_INDEX] = str(index)
            base = f"{name}-{index}"
            pod_spec.setdefault("hostname", base)
            env = {
                "name": "JOB_COMPLETION_INDEX",
                "valueFrom": {"fieldRef": {"fieldPath": f"metadata.labels['{COMPLETION_INDEX}']"}},
            }
            for key in ("containers", "initContainers"):
                for container in pod_spec.get(key) or []:
                    if isinstance(container, dict) and not any(
                        isinstance(e, dict) and e.get("name") == "JOB_COMPLETION_INDEX"
                        for e in container.get("env") or []
                    ):
                        container["env"] = [*(container.get("env") or []), env]
        pod_name = generate_name(base)
        create_pod(
            self.store,
            job,
            pod_name,
            template,
            labels,
            extra_annotations=annotations,
            finalizers=[TRACKING_FINALIZER],
        )
        self.store.record_event(
            job, "Normal", "SuccessfulCreate", "Create", f"Created pod: {pod_name}", _REPORTER
        )
