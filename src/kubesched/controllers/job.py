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
a PodGroup first (``job_workload.py``).

A failed pod is replaced only after the Job's backoff (``job_backoff.py``: 10 s, doubled for each
failure since the last success, at most ten minutes). ``activeDeadlineSeconds`` after its
``startTime`` a running Job fails (reason ``DeadlineExceeded``); ``podFailurePolicy``
(``job_pod_failure_policy.py``) may fail it on a pod's failure (reason ``PodFailurePolicy``) or
leave the failure uncounted. An Indexed Job's ``successPolicy`` ends it early once its succeeded
indexes meet a rule (reason ``SuccessPolicy``); with ``backoffLimitPerIndex`` each index counts its
own failures on its pods (``job-index-failure-count``) and backs off on its own, and an index past
its limit is failed for good (``status.failedIndexes``; the Job fails with ``FailedIndexes`` or
``MaxFailedIndexesExceeded``). Times are read from ``clock`` (the wall clock in ``serve``)."""

from __future__ import annotations

import contextlib
import copy
import time
from collections.abc import Callable, Mapping
from typing import Any

from kubesched.controllers.controller_utils import (
    Key,
    OwnerController,
    controller_uid,
    create_pod,
    generate_name,
    is_terminal,
    seconds,
    timestamp,
)
from kubesched.controllers.job_backoff import BackoffRecord, finished_time, new_backoff_record
from kubesched.controllers.job_pod_failure_policy import FAIL_INDEX, match_pod_failure_policy
from kubesched.controllers.job_workload import ensure_workload_and_pod_group, manages_workload
from kubesched.store.base import EventType, NotFound, Obj
from kubesched.store.informers import Change, InformerFactory
from kubesched.store.sqlite import SqliteStore

TRACKING_FINALIZER = "batch.kubernetes.io/job-tracking"
COMPLETION_INDEX = "batch.kubernetes.io/job-completion-index"
CONTROLLER_UID = "batch.kubernetes.io/controller-uid"
JOB_NAME = "batch.kubernetes.io/job-name"
_REPORTER = "job-controller"

COMPLETIONS_REACHED = ("CompletionsReached", "Reached expected number of succeeded pods")
BACKOFF_LIMIT_EXCEEDED = ("BackoffLimitExceeded", "Job has reached the specified backoff limit")
DEADLINE_EXCEEDED = ("DeadlineExceeded", "Job was active longer than specified deadline")
POD_FAILURE_POLICY = "PodFailurePolicy"
SUCCESS_POLICY = "SuccessPolicy"
MAX_FAILED_INDEXES_EXCEEDED = (
    "MaxFailedIndexesExceeded",
    "Job has exceeded the specified maximal number of failed indexes",
)
FAILED_INDEXES = ("FailedIndexes", "Job has failed indexes")
INDEX_FAILURE_COUNT = "batch.kubernetes.io/job-index-failure-count"
INDEX_IGNORED_FAILURE_COUNT = "batch.kubernetes.io/job-index-ignored-failure-count"


def _int(value: Any, default: int | None) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else default


def completion_index(pod: Mapping[str, Any]) -> int | None:
    value = ((pod.get("metadata") or {}).get("annotations") or {}).get(COMPLETION_INDEX)
    try:
        return int(value) if value is not None else None
    except (TypeError, ValueError):
        return None


def parse_indexes(text: Any, completions: int | None = None) -> set[int]:
    """The indexes ``completedIndexes`` names (``1,3-5``); a fragment that does not parse is
    skipped, and with ``completions`` the indexes from it on are dropped (upstream's
    ``parseIndexesFromString``)."""
    out: set[int] = set()
    for part in str(text or "").split(","):
        if not part:
            continue
        first, _, last = part.partition("-")
        try:
            lo, hi = int(first), int(last or first)
        except ValueError:
            continue
        if completions is not None:
            if lo >= completions:
                break
            hi = min(hi, completions - 1)
        out.update(range(lo, hi + 1))
    return out


def match_success_policy(policy: Any, completions: int, succeeded: set[int]) -> str | None:
    """The message of the first ``successPolicy`` rule the succeeded indexes meet (``Matched rules
    at index N``), None when none does. A rule with ``succeededIndexes`` is met when all of them
    succeeded or, with ``succeededCount``, that many of them; a rule with only ``succeededCount``
    when that many indexes succeeded."""
    if not isinstance(policy, Mapping) or not succeeded:
        return None
    for index, rule in enumerate(policy.get("rules") or []):
        if not isinstance(rule, Mapping):
            continue
        count = _int(rule.get("succeededCount"), None)
        if rule.get("succeededIndexes") is not None:
            required = parse_indexes(rule["succeededIndexes"], completions)
            if not required:
                continue
            contains = len(required & succeeded)
            if contains == len(required) or (count is not None and contains >= count):
                return f"Matched rules at index {index}"
        elif count is not None and len(succeeded) >= count:
            return f"Matched rules at index {index}"
    return None


def index_failure_counts(pod: Mapping[str, Any]) -> tuple[int, int]:
    """The pod's ``job-index-failure-count`` and ``job-index-ignored-failure-count`` annotations
    (0 when absent, unparsable, negative or past int32, as upstream reads them)."""
    annotations = (pod.get("metadata") or {}).get("annotations") or {}

    def read(key: str) -> int:
        try:
            value = int(str(annotations.get(key, "0")))
        except ValueError:
            return 0
        return value if 0 <= value <= 2**31 - 1 else 0

    return read(INDEX_FAILURE_COUNT), read(INDEX_IGNORED_FAILURE_COUNT)


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

    def __init__(
        self, store: SqliteStore, informers: InformerFactory, clock: Callable[[], float] = time.time
    ) -> None:
        #: Per Job uid, its pods removed before they were counted (by pod uid, as they were last).
        self._gone: dict[str, dict[str, Obj]] = {}
        #: Per Job uid, its failures since its last success (upstream's backoff store, in memory too).
        self._backoff: dict[str, BackoffRecord] = {}
        #: Per Job uid with ``backoffLimitPerIndex``, per index: the failure counts its next pod
        #: carries (counted, ignored) and when the index's last pod failed.
        self._index_failures: dict[str, dict[int, tuple[int, int, float]]] = {}
        #: When each Job is due again: its backoff ends or its deadline comes.
        self._next: dict[Key, float] = {}
        self.clock = clock
        super().__init__(store, informers)

    @property
    def next_due(self) -> float | None:
        return min(self._next.values()) if self._next else None

    def sync(self) -> None:
        now = self.clock()
        for key, when in list(self._next.items()):
            if when <= now:
                del self._next[key]
                self._due[key] = None
        super().sync()

    def _wake(self, job: Obj, when: float) -> None:
        key = (str(job["metadata"].get("namespace")), str(job["metadata"]["name"]))
        self._next[key] = min(when, self._next.get(key, when))

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
            self._backoff.pop(uid, None)
            self._index_failures.pop(uid, None)
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
        policy = spec.get("podFailurePolicy")
        per_index_limit = _int(spec.get("backoffLimitPerIndex"), None) if indexed else None
        failed_indexes = (
            parse_indexes(status.get("failedIndexes"), completions) if per_index_limit is not None else set()
        )
        index_failures = self._index_failures.setdefault(uid, {}) if per_index_limit is not None else {}
        now_s = self.clock()
        now = timestamp(now_s)

        # Count the pods that ended since the last pass, each once.
        gone = self._gone.get(uid, {})
        counted: list[Obj] = []
        succeeded = _int(status.get("succeeded"), 0) or 0
        failed = _int(status.get("failed"), 0) or 0
        done_indexes = parse_indexes(status.get("completedIndexes"))
        finished = [p for p in pods if TRACKING_FINALIZER in (p["metadata"].get("finalizers") or [])]
        new_succeeded: list[Obj] = []
        new_failed: list[Obj] = []
        fail_message: str | None = None
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
                new_succeeded.append(pod)
            # With a failure policy a deleted pod has failed once it is terminal (or gone), as
            # upstream waits for the phase the policy's rules read.
            elif phase == "Failed" or removed or (_deleting(pod) and policy is None):
                message, counts, action = match_pod_failure_policy(policy, pod)
                if counts:
                    failed += 1
                if message is not None and fail_message is None:
                    fail_message = message
                index = completion_index(pod)
                if per_index_limit is not None and index is not None and index < (completions or 0):
                    _count_index_failure(
                        pod,
                        index,
                        counts,
                        action == FAIL_INDEX,
                        per_index_limit,
                        failed_indexes,
                        index_failures,
                    )
                new_failed.append(pod)
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
        self._backoff[uid] = backoff = new_backoff_record(
            self._backoff.get(uid, BackoffRecord()), new_succeeded, new_failed
        )
        suspended = bool(spec.get("suspend"))
        deadline = _int(spec.get("activeDeadlineSeconds"), None)
        started = seconds(status.get("startTime"))
        if target is None and fail_message is not None:
            target = _condition("FailureTarget", "True", POD_FAILURE_POLICY, fail_message, now)
            conditions.append(target)
        elif target is None and new_failures and failed > backoff_limit:
            target = _condition("FailureTarget", "True", *BACKOFF_LIMIT_EXCEEDED, now)
            conditions.append(target)
        elif target is None and deadline is not None and started is not None and not suspended:
            if now_s - started >= deadline:
                target = _condition("FailureTarget", "True", *DEADLINE_EXCEEDED, now)
                conditions.append(target)
            else:
                self._wake(job, started + deadline)
        if target is None and per_index_limit is not None and completions is not None:
            max_failed = _int(spec.get("maxFailedIndexes"), None)
            if max_failed is not None and len(failed_indexes) > max_failed:
                target = _condition("FailureTarget", "True", *MAX_FAILED_INDEXES_EXCEEDED, now)
                conditions.append(target)
            elif failed_indexes and len(failed_indexes) + len(done_indexes) >= completions:
                target = _condition("FailureTarget", "True", *FAILED_INDEXES, now)
                conditions.append(target)
        if target is None and indexed and completions is not None:
            matched = match_success_policy(spec.get("successPolicy"), completions, done_indexes)
            if matched is not None:
                target = _condition("SuccessCriteriaMet", "True", SUCCESS_POLICY, matched, now)
                conditions.append(target)
        to_delete: list[Obj] = []
        to_create: list[int | None] = []
        if target is not None:
            # A Job that has failed, or met its success criteria, removes its running pods.
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
                pending = [
                    i
                    for i in range(completions)
                    if i not in done_indexes and i not in running and i not in failed_indexes
                ]
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
            if per_index_limit is not None:
                # Each index waits out its own backoff, from its last pod's failure.
                ready_now: list[int | None] = []
                for index in to_create:
                    last = index_failures.get(index) if index is not None else None
                    left = (
                        BackoffRecord(last[0] + last[1], last[2]).remaining(now_s)
                        if last is not None
                        else 0.0
                    )
                    if left > 0:
                        self._wake(job, now_s + left)
                    else:
                        ready_now.append(index)
                to_create = ready_now
            wait = backoff.remaining(now_s) if to_create and per_index_limit is None else 0.0
            if wait > 0:
                # Failed pods are replaced once the Job's backoff has passed (upstream's manageJob).
                to_create = []
                self._wake(job, now_s + wait)

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
                carried = index_failures.get(index, (0, 0, 0.0)) if index is not None else None
                self._create(job, index, pod_group, None if per_index_limit is None else carried)
            if not suspended:
                status.setdefault("startTime", now)
            status["active"] = len(active) - len([p for p in to_delete if p in active]) + len(to_create)
            status["ready"] = sum(1 for p in active if _ready(p) and p not in to_delete)
            status["terminating"] = len(terminating)
            status["uncountedTerminatedPods"] = {}
            status["succeeded"], status["failed"] = succeeded, failed
            if indexed:
                status["completedIndexes"] = format_indexes(done_indexes)
            if per_index_limit is not None:
                status["failedIndexes"] = format_indexes(failed_indexes)
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

    def _create(
        self,
        job: Obj,
        index: int | None,
        pod_group: str | None = None,
        failure_counts: tuple[int, int, float] | None = None,
    ) -> None:
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
            if failure_counts is not None:
                annotations[INDEX_FAILURE_COUNT] = str(failure_counts[0])
                if failure_counts[1] > 0:
                    annotations[INDEX_IGNORED_FAILURE_COUNT] = str(failure_counts[1])
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


def _count_index_failure(
    pod: Obj,
    index: int,
    counts: bool,
    fail_index: bool,
    limit: int,
    failed_indexes: set[int],
    index_failures: dict[int, tuple[int, int, float]],
) -> None:
    """A failed pod of an Indexed Job with ``backoffLimitPerIndex``: its index fails when a
    ``FailIndex`` rule matched or the pod already carried ``limit`` counted failures; otherwise the
    index's next pod carries one more failure (counted, or ignored by an ``Ignore`` rule)."""
    count, ignored = index_failure_counts(pod)
    if fail_index or (counts and count >= limit):
        failed_indexes.add(index)
        index_failures.pop(index, None)
        return
    after = (count + 1, ignored) if counts else (count, ignored + 1)
    when = finished_time(pod)
    previous = index_failures.get(index)
    # The index's latest failure decides what its replacement carries.
    if previous is None or (previous[0] + previous[1], previous[2]) <= (after[0] + after[1], when):
        index_failures[index] = (*after, when)
