"""Opening and closing a session (Volcano ``framework``); registries: :mod:`~kubesched.batch.factory`.

``open_session`` builds a :class:`Session` on a :class:`BatchSnapshot` and calls every configured,
supported plugin's ``on_session_open`` in tier order; ``close_session`` calls ``on_session_close``
and then works out what the session changes in the cluster (Volcano's job updater): each job's
PodGroup phase and conditions, events, and the PodScheduled condition of tasks left pending, which
:mod:`~kubesched.batch.apply` writes through the ports. ``abort_session`` closes a session whose
actions or writes failed.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from kubesched.batch.conf import BatchConf
from kubesched.batch.factory import (
    BatchAction,
    BatchPlugin,
    get_action,
    get_plugin_builder,
    register_action,
    register_plugin,
)
from kubesched.batch.hypernodes import HyperNodeTree
from kubesched.batch.job_info import ALLOCATED_STATUSES, JobInfo, QueueInfo, TaskInfo, TaskStatus
from kubesched.batch.queue_totals import QueueTotals
from kubesched.batch.session import BoolArray, PodGroupConditionUpdate, Session
from kubesched.batch.shares import ResourceSpace
from kubesched.cache.node_info import NodeInfo
from kubesched.cache.node_table import NodeTable
from kubesched.cache.pod_index import PodIndex
from kubesched.framework.handle import ClusterWait
from kubesched.store.informers import InformerFactory
from kubesched.store.ports import Ports

log = logging.getLogger(__name__)


def unavailable(conf: BatchConf) -> list[str]:
    """One line per action or plugin of ``conf`` that this run cannot execute."""
    out: list[str] = []
    for a in conf.actions:
        if get_action(a) is None:
            out.append(f"{conf.source}: action {a!r} is not implemented in kubesched; skipped")
    for t in conf.tiers:
        for p in t.plugins:
            if get_plugin_builder(p.name) is None:
                out.append(f"{conf.source}: plugin {p.name!r} is not implemented in kubesched; skipped")
    return out


@dataclass(slots=True)
class BatchSnapshot:
    """What a session opens on: ready nodes, queues, and jobs whose queue exists."""

    table: NodeTable
    node_infos: dict[str, NodeInfo]
    node_mask: BoolArray
    jobs: dict[str, JobInfo]
    queues: dict[str, QueueInfo]
    space: ResourceSpace
    now: float = 0.0
    rng: np.random.Generator | None = None
    #: The scheduler cache's pod index; the session counts its own placements in it while open.
    pod_index: PodIndex | None = None
    #: Per-queue sums over ``jobs`` kept by the scheduler (``None``: plugins sum the jobs).
    queue_totals: QueueTotals | None = None
    #: The scheduler's informers and ports, handed to the plugins it runs (``None``: an empty
    #: cluster, for sessions opened on a hand-made snapshot).
    informers: InformerFactory | None = None
    ports: Ports | None = None
    #: The scheduler's wait for the cluster (see ``Session.wait_for_cluster``; None: look once).
    wait_for_cluster: ClusterWait | None = None
    #: Plugin state kept between sessions (see ``Session.kept``; None: nothing is kept).
    kept: dict[str, Any] | None = None
    #: The HyperNode tree over the snapshot's nodes (None: no HyperNodes).
    hyper_nodes: HyperNodeTree | None = None


#: Called with (plugin name, "OnSessionOpen" or "OnSessionClose", seconds) after each plugin call.
PluginTimer = Callable[[str, str, float], None]


def open_session(snapshot: BatchSnapshot, conf: BatchConf, timer: PluginTimer | None = None) -> Session:
    ssn = Session(
        conf=conf,
        table=snapshot.table,
        node_infos=snapshot.node_infos,
        node_mask=snapshot.node_mask,
        jobs=snapshot.jobs,
        queues=snapshot.queues,
        space=snapshot.space,
        now=snapshot.now,
        rng=snapshot.rng,
        pod_index=snapshot.pod_index,
    )
    ssn.queue_totals = snapshot.queue_totals
    ssn.informers = snapshot.informers
    ssn.ports = snapshot.ports
    if snapshot.wait_for_cluster is not None:
        ssn.wait_for_cluster = snapshot.wait_for_cluster
    if snapshot.kept is not None:
        ssn.kept = snapshot.kept
    if snapshot.hyper_nodes is not None and not snapshot.hyper_nodes.empty:
        ssn.hyper_nodes = snapshot.hyper_nodes
        _set_allocated_hyper_nodes(ssn)
    for tier in conf.tiers:
        for opt in tier.plugins:
            builder = get_plugin_builder(opt.name)
            if builder is None:
                continue
            plugin = builder(opt)
            ssn.plugins[opt.name] = plugin
            if timer is None:
                plugin.on_session_open(ssn)
            else:
                start = time.perf_counter()
                plugin.on_session_open(ssn)
                timer(opt.name, "OnSessionOpen", time.perf_counter() - start)
    return ssn


def _set_allocated_hyper_nodes(ssn: Session) -> None:
    """Each topology-bound job's lowest HyperNode over the leaves of its placed tasks (Volcano keeps
    it on the job; here it is worked out again from where its tasks run), and its topology as
    Volcano's session adjusts it: ``highestTierName`` becomes the tier of the HyperNodes with that
    ``tierName`` (none: left unset), and soft mode becomes hard up to the virtual top's tier."""
    tree = ssn.hyper_nodes
    assert tree is not None
    tier_names = {
        info.hyper_node.tier_name: info.tier
        for info in tree.infos.values()
        if info.hyper_node is not None and info.hyper_node.tier_name
    }
    top_tier = tree.top().tier
    for job in ssn.jobs.values():
        nt = job.network_topology
        if nt is None:
            continue
        highest = nt.highest_tier_allowed
        if highest is None and nt.highest_tier_name:
            highest = tier_names.get(nt.highest_tier_name)
        if nt.mode == "soft":
            ssn.job_topology[job.uid] = (True, top_tier)
        elif highest is not None:
            ssn.job_topology[job.uid] = (True, highest)
        allocated = ""
        for task in job.tasks.values():
            if task.node_name and task.status in ALLOCATED_STATUSES:
                allocated = tree.lca(tree.leaf_of(task.node_name), allocated)
        job.allocated_hyper_node = allocated


def _close_plugins(ssn: Session, timer: PluginTimer | None) -> None:
    for name, plugin in ssn.plugins.items():
        if timer is None:
            plugin.on_session_close(ssn)
        else:
            start = time.perf_counter()
            plugin.on_session_close(ssn)
            timer(name, "OnSessionClose", time.perf_counter() - start)


def abort_session(ssn: Session, timer: PluginTimer | None = None) -> None:
    """Close a session whose actions or writes failed: its plugins close, and the cache's pod
    index is put back as the session found it; nothing it decided is carried out."""
    ssn.restore_pod_index()
    _close_plugins(ssn, timer)


@dataclass(slots=True)
class JobUpdate:
    """What close_session decided for one job."""

    job: JobInfo
    phase: str
    conditions: list[dict[str, str]]
    status_changed: bool
    #: (task, reason, message) for the PodScheduled=False condition of tasks still waiting.
    task_conditions: list[tuple[TaskInfo, str, str]] = field(default_factory=list)
    #: Event for the PodGroup: (type, reason, message), or None.
    event: tuple[str, str, str] | None = None
    #: Task uid → the node its pod is nominated to (tasks pipelined where evictions make room).
    nominations: dict[str, str] = field(default_factory=dict)


def close_session(ssn: Session, timer: PluginTimer | None = None) -> list[JobUpdate]:
    """Run every plugin's ``on_session_close``, then compute the job updates (Volcano job updater).
    ``timer`` (open_session's too): told how long each plugin's call took."""
    _close_plugins(ssn, timer)
    only = ssn.update_jobs
    return [job_update(ssn, job) for job in ssn.jobs.values() if only is None or job.uid in only]


def pod_group_phase(job: JobInfo, unschedulable: bool) -> str:
    """Volcano ``getPodGroupPhase``."""
    if job.task_status_index.get(TaskStatus.RUNNING) and unschedulable:
        return "Unknown"
    scheduled = sum(
        len(ts)
        for st, ts in job.task_status_index.items()
        if st in (TaskStatus.BOUND, TaskStatus.RUNNING, TaskStatus.SUCCEEDED, TaskStatus.FAILED)
    )
    completed = len(job.task_status_index.get(TaskStatus.SUCCEEDED, ())) + len(
        job.task_status_index.get(TaskStatus.FAILED, ())
    )
    scheduled += sum(1 for t in job.task_status_index.get(TaskStatus.RELEASING, {}).values() if t.node_name)
    if scheduled >= job.pod_group.min_member:
        if scheduled == completed:
            return "Completed"
        return "Running"
    if job.phase != "Inqueue":
        return "Pending"
    return job.phase


def _merge_conditions(
    old: list[dict[str, str]], updates: dict[str, PodGroupConditionUpdate], now: str
) -> list[dict[str, str]]:
    out = [dict(c) for c in old]
    for cond in updates.values():
        new = {
            "type": cond.type,
            "status": cond.status,
            "reason": cond.reason,
            "message": cond.message,
            "transitionID": cond.transition_id,
            "lastTransitionTime": now,
        }
        for i, c in enumerate(out):
            if c.get("type") == cond.type:
                out[i] = new
                break
        else:
            out.append(new)
    return out


def _conditions_changed(new: list[dict[str, str]], old: list[dict[str, str]]) -> bool:
    if len(new) != len(old):
        return True
    ignore = ("lastTransitionTime", "transitionID")
    for n, o in zip(new, old, strict=True):
        if {k: v for k, v in n.items() if k not in ignore and v} != {
            k: v for k, v in o.items() if k not in ignore and v
        }:
            return True
    return False


def _old_conditions(job: JobInfo) -> list[dict[str, str]]:
    status = job.pod_group.raw.get("status") or {}
    return [dict(c) for c in (status.get("conditions") or [])]


def job_update(ssn: Session, job: JobInfo, now: str = "") -> JobUpdate:
    old_conditions = _old_conditions(job)
    conditions = _merge_conditions(old_conditions, ssn.pod_group_conditions.get(job.uid, {}), now)
    unschedulable = any(
        c.get("type") == "Unschedulable" and c.get("status") == "True" and c.get("transitionID") == ssn.uid
        for c in conditions
    )
    phase = pod_group_phase(job, unschedulable)
    old_phase = job.pod_group.phase
    changed = phase != old_phase or _conditions_changed(conditions, old_conditions)
    update = JobUpdate(job, phase, conditions, changed)
    # Volcano RecordJobStatusEvent.
    fit = job.fit_error()
    if phase in ("Unknown", "Pending", "Inqueue"):
        pending = len(job.task_status_index.get(TaskStatus.PENDING, ()))
        msg = f"{pending}/{len(job.tasks)} tasks in gang unschedulable: {fit}"
        update.event = ("Warning", "Unschedulable", msg)
    elif changed:
        update.event = ("Normal", "Scheduled", "pod group is ready")
    base = fit or "all nodes are unavailable"
    for status in (TaskStatus.ALLOCATED, TaskStatus.PENDING, TaskStatus.PIPELINED):
        for task in job.task_status_index.get(status, {}).values():
            if task.sch_gated:
                continue  # kube-apiserver gave it the SchedulingGated condition: left as is
            reason, msg = job.task_scheduling_reason(task)
            update.task_conditions.append((task, reason, msg or base))
            nominated = job.task_nominated_node(task)
            if nominated:
                update.nominations[task.uid] = nominated
    return update


__all__ = [
    "BatchAction",
    "BatchPlugin",
    "BatchSnapshot",
    "JobUpdate",
    "abort_session",
    "close_session",
    "get_action",
    "get_plugin_builder",
    "open_session",
    "register_action",
    "register_plugin",
    "unavailable",
]
