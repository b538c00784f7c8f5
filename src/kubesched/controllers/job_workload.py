"""The Job controller's Workload and PodGroup (upstream ``pkg/controller/job``, WorkloadWithJob,
v1.36 alpha): a new Indexed Job whose pods must all run together (parallelism above one, equal to
completions, and a pod template that names no scheduling group) gets a Workload with one gang
template of ``minCount`` = parallelism and one PodGroup made from it; its pods name the PodGroup
in ``spec.schedulingGroup``. Both are owned by the Job and go with it.

A Job that already started (pods, a start time, counts, a Suspended condition) is left to default
scheduling, as is one whose Workload or PodGroup is ambiguous or not its own.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any, Final

from kubesched.api.features import DEFAULT_FEATURE_GATES, WORKLOAD_WITH_JOB
from kubesched.api.scheduling_groups import POD_GROUP_STORE_KIND, WORKLOAD_API_VERSION
from kubesched.controllers.controller_utils import owner_ref, safe_hash
from kubesched.store.base import AlreadyExists, ClusterStore, Obj

log = logging.getLogger(__name__)

#: apimachinery's DNS1123SubdomainMaxLength.
_MAX_NAME: Final = 253
_REPORTER: Final = "job-controller"


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def is_gang_candidate(job: Mapping[str, Any]) -> bool:
    """``IsGangSchedulingCandidate``: Indexed, parallelism above one and equal to completions, and a
    pod template without ``schedulingGroup``."""
    spec = job.get("spec") or {}
    parallelism = _int(spec.get("parallelism"))
    if parallelism is None or parallelism <= 1 or _int(spec.get("completions")) != parallelism:
        return False
    if spec.get("completionMode") != "Indexed":
        return False
    template_spec = (spec.get("template") or {}).get("spec") or {}
    return template_spec.get("schedulingGroup") is None


def manages_workload(job: Mapping[str, Any]) -> bool:
    """``shouldManageWorkloadForJob``: the gate is on and the Job is a gang candidate."""
    return DEFAULT_FEATURE_GATES.enabled(WORKLOAD_WITH_JOB) and is_gang_candidate(job)


def is_new_job(job: Mapping[str, Any], pods: list[Obj]) -> bool:
    """A Job that never started: no pods, no start time, nothing counted, never suspended."""
    status = job.get("status") or {}
    if pods or status.get("startTime") or status.get("succeeded") or status.get("failed"):
        return False
    return not any(c.get("type") == "Suspended" for c in status.get("conditions") or [])


def workload_name(job: Mapping[str, Any]) -> str:
    """``computeWorkloadName``: the Job's name (cut to fit) and a hash of its uid."""
    uid = str((job.get("metadata") or {}).get("uid") or "")
    # DeepHashObject prints a UID as Go's %#v does: quoted.
    suffix = safe_hash(f'"{uid}"'.encode())
    prefix = str(job["metadata"]["name"])[: _MAX_NAME - len(suffix) - 1]
    return f"{prefix}-{suffix}"


def pod_group_name(workload: str, template: str) -> str:
    """``computePodGroupName``: the Workload's and the template's names (cut to fit, each to half
    the room when both are long) and a hash of both."""
    suffix = safe_hash((workload + template).encode())
    room = _MAX_NAME - len(suffix) - 2
    if len(workload) + len(template) > room:
        half = room // 2
        if len(workload) <= half:
            template = template[: room - len(workload)]
        elif len(template) <= half:
            workload = workload[: room - len(template)]
        else:
            workload, template = workload[: room - half], template[:half]
    return f"{workload}-{template}-{suffix}"


def template_name(job: Mapping[str, Any]) -> str:
    """``buildPodGroupTemplates``: one template per Job, ``<job>-pgt-0``."""
    return f"{job['metadata']['name']}-pgt-0"


def _controlled_by(obj: Mapping[str, Any], job: Mapping[str, Any]) -> bool:
    uid = job["metadata"].get("uid")
    return any(
        isinstance(ref, Mapping) and ref.get("controller") and ref.get("uid") == uid
        for ref in (obj.get("metadata") or {}).get("ownerReferences") or []
    )


def _workloads_of(store: ClusterStore, job: Mapping[str, Any]) -> list[Obj]:
    namespace, name = job["metadata"].get("namespace"), job["metadata"]["name"]
    out = []
    for wl in store.list("Workload"):
        ref = (wl.get("spec") or {}).get("controllerRef") or {}
        if (wl.get("metadata") or {}).get("namespace") != namespace:
            continue
        if ref.get("apiGroup") == "batch" and ref.get("kind") == "Job" and ref.get("name") == name:
            out.append(wl)
    return out


def _pod_groups_of(store: ClusterStore, workload: Mapping[str, Any]) -> list[Obj]:
    namespace, name = workload["metadata"].get("namespace"), workload["metadata"]["name"]
    return [
        pg
        for pg in store.list(POD_GROUP_STORE_KIND)
        if (pg.get("metadata") or {}).get("namespace") == namespace
        and (((pg.get("spec") or {}).get("podGroupTemplateRef") or {}).get("workload") or {}).get(
            "workloadName"
        )
        == name
    ]


def ensure_workload_and_pod_group(store: ClusterStore, job: Obj, pods: list[Obj]) -> str | None:
    """``ensureWorkloadAndPodGroup``: the name of the PodGroup the Job's pods join (its Workload
    and PodGroup made when missing), or None for default scheduling."""
    workloads = _workloads_of(store, job)
    if not workloads:
        if not is_new_job(job, pods):
            return None
        workload = _create_workload(store, job)
    elif len(workloads) == 1:
        workload = workloads[0]
        if (
            not _controlled_by(workload, job)
            or len((workload.get("spec") or {}).get("podGroupTemplates") or []) != 1
        ):
            return None
    else:
        log.error(
            "found %d Workloads referencing Job %s/%s, falling back to default scheduling",
            len(workloads),
            job["metadata"].get("namespace"),
            job["metadata"]["name"],
        )
        return None
    groups = _pod_groups_of(store, workload)
    if not groups:
        return str(_create_pod_group(store, job, workload)["metadata"]["name"])
    if len(groups) == 1 and _controlled_by(groups[0], job):
        return str(groups[0]["metadata"]["name"])
    if len(groups) > 1:
        log.error(
            "found %d PodGroups referencing Workload %s/%s, falling back to default scheduling",
            len(groups),
            workload["metadata"].get("namespace"),
            workload["metadata"]["name"],
        )
    return None


def _create_workload(store: ClusterStore, job: Obj) -> Obj:
    spec = job.get("spec") or {}
    workload: dict[str, Any] = {
        "apiVersion": WORKLOAD_API_VERSION,
        "kind": "Workload",
        "metadata": {
            "name": workload_name(job),
            "namespace": job["metadata"].get("namespace"),
            "ownerReferences": [owner_ref(job)],
        },
        "spec": {
            "controllerRef": {"apiGroup": "batch", "kind": "Job", "name": job["metadata"]["name"]},
            "podGroupTemplates": [
                {
                    "name": template_name(job),
                    "schedulingPolicy": {"gang": {"minCount": spec["parallelism"]}},
                }
            ],
        },
    }
    try:
        created = store.create(workload)
    except AlreadyExists:
        existing = store.get("Workload", workload["metadata"]["namespace"], workload["metadata"]["name"])
        if existing is None:
            raise
        return existing
    store.record_event(
        job,
        "Normal",
        "WorkloadCreated",
        "Create",
        f"Created Workload {created['metadata']['name']} for Job {job['metadata']['name']}",
        _REPORTER,
    )
    return created


def _create_pod_group(store: ClusterStore, job: Obj, workload: Obj) -> Obj:
    template = workload["spec"]["podGroupTemplates"][0]
    wmeta = workload["metadata"]
    group: dict[str, Any] = {
        "apiVersion": WORKLOAD_API_VERSION,
        "kind": "PodGroup",
        "metadata": {
            "name": pod_group_name(str(wmeta["name"]), str(template["name"])),
            "namespace": job["metadata"].get("namespace"),
            "ownerReferences": [
                owner_ref(job),
                # Not the controller, and not blocking the Workload's deletion.
                {
                    "apiVersion": WORKLOAD_API_VERSION,
                    "kind": "Workload",
                    "name": wmeta["name"],
                    "uid": wmeta["uid"],
                },
            ],
        },
        "spec": {
            "podGroupTemplateRef": {
                "workload": {"workloadName": wmeta["name"], "podGroupTemplateName": template["name"]}
            },
            "schedulingPolicy": dict(template["schedulingPolicy"]),
        },
    }
    try:
        return store.create(group)
    except AlreadyExists:
        existing = store.get(POD_GROUP_STORE_KIND, group["metadata"]["namespace"], group["metadata"]["name"])
        if existing is None:
            raise
        return existing
