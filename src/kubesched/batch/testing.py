"""Builders and runners shared by the batch plugin and action tests (drf, proportion, preempt,
reclaim): Volcano objects as Kubernetes JSON, a plugin entry with only the named switches on, and
a batch scheduler on a fresh store that runs one session or opens one without running an action.

Like :mod:`kubesched.plugins.testing`, this module is imported only by tests and does not depend on
pytest.
"""

from __future__ import annotations

from typing import Any

from kubesched.batch.conf import SWITCHES
from kubesched.batch.conf_loader import batch_conf_from_dict
from kubesched.batch.framework import open_session
from kubesched.batch.scheduler import BatchScheduler
from kubesched.batch.session import Session
from kubesched.plugins.testing import node_dict, pod_dict
from kubesched.registry.admission import admitted
from kubesched.store.memory import MemoryStore
from kubesched.store.parsers import informer_factory
from kubesched.store.ports import StorePorts

VOLCANO = "scheduling.volcano.sh/v1beta1"

# Referenced kinds first, so that every object finds what it names when the scheduler reads the store.
_CREATE_ORDER = ("PriorityClass", "Node", "HyperNode", "Queue", "PodGroup", "Pod")


def node(name: str, cpu: str, mem: str, pods: str = "10") -> dict[str, Any]:
    return node_dict(name, {"cpu": cpu, "memory": mem, "pods": pods})


def pod(
    name: str,
    node_name: str,
    group: str,
    cpu: str | None = "1",
    mem: str | None = "1G",
    *,
    ns: str = "c1",
    preemptable: str | None = None,
    priority_class: str | None = None,
    never: bool = False,
    priority: int | None = None,
) -> dict[str, Any]:
    """A pod of PodGroup ``group`` for the volcano scheduler; running on ``node_name`` unless it is empty."""
    requests = {k: v for k, v in (("cpu", cpu), ("memory", mem)) if v is not None}
    d = pod_dict(name, namespace=ns, containers=[requests or None], node_name=node_name, priority=priority)
    d["spec"]["schedulerName"] = "volcano"
    annotations = {"scheduling.k8s.io/group-name": group}
    if preemptable is not None:
        annotations["volcano.sh/preemptable"] = preemptable
    d["metadata"]["annotations"] = annotations
    if priority_class:
        d["spec"]["priorityClassName"] = priority_class
    if never:
        d["spec"]["preemptionPolicy"] = "Never"
    if node_name:
        d["status"] = {"phase": "Running"}
    return d


def pod_group(
    name: str,
    queue: str,
    min_member: int,
    phase: str,
    priority_class: str = "",
    ns: str = "c1",
    min_task_member: dict[str, int] | None = None,
) -> dict[str, Any]:
    spec: dict[str, Any] = {"minMember": min_member, "queue": queue}
    if min_task_member:
        spec["minTaskMember"] = min_task_member
    if priority_class:
        spec["priorityClassName"] = priority_class
    return {
        "apiVersion": VOLCANO,
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": ns},
        "spec": spec,
        "status": {"phase": phase},
    }


def queue(
    name: str,
    weight: int = 1,
    *,
    priority: int = 0,
    state: str = "Open",
    reclaimable: bool = True,
    **spec: Any,
) -> dict[str, Any]:
    return {
        "apiVersion": VOLCANO,
        "kind": "Queue",
        "metadata": {"name": name},
        "spec": {"weight": weight, "priority": priority, "reclaimable": reclaimable, **spec},
        "status": {"state": state},
    }


def priority_class(name: str, value: int, never: bool = False) -> dict[str, Any]:
    pc: dict[str, Any] = {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": name},
    }
    pc["value"] = value
    if never:
        pc["preemptionPolicy"] = "Never"
    return pc


def plugin(name: str, *switches: str) -> dict[str, Any]:
    """A plugin entry with only ``switches`` on (Volcano's unit tests leave the others unset: off)."""
    out: dict[str, Any] = {"name": name}
    for key, attr, _ in SWITCHES:
        out[key] = attr in switches
    return out


def registered(plugins: list[dict[str, Any]], names: set[str] | frozenset[str]) -> list[dict[str, Any]]:
    """The entries of ``plugins`` whose plugin is among ``names``.

    Volcano's unit tests register a plugin set per case and share one tier between cases; its
    session opens only the plugins it has a builder for, so the others in the tier take no part.
    """
    return [p for p in plugins if p["name"] in names]


def one_tier(actions: str, plugins: list[dict[str, Any]]) -> dict[str, Any]:
    """A batch conf (as its YAML would parse) with ``actions`` and every plugin in one tier."""
    return {"actions": actions, "tiers": [{"plugins": plugins}]}


def store_of(objects: list[dict[str, Any]]) -> MemoryStore:
    """A store holding ``objects``. Uids follow the order of creation (kinds in ``_CREATE_ORDER``,
    then list order), so ties that fall back to the uid break the same way on every run; Volcano's
    test objects get their uid from their namespace and name, so listing a table's pods by name
    keeps its order."""
    store = MemoryStore(uid_seed=0)
    for kind in _CREATE_ORDER:
        for obj in objects:
            if obj["kind"] == kind:
                store.create(admitted(store, obj))
    return store


def scheduler_on(objects: list[dict[str, Any]], conf_dict: dict[str, Any]) -> BatchScheduler:
    """A batch scheduler on a store holding ``objects``, events handled, no session run yet."""
    store = store_of(objects)
    sched = BatchScheduler(
        informer_factory(store), StorePorts(store).ports(), batch_conf_from_dict(conf_dict), now=lambda: 0.0
    )
    sched.informers.pump()
    return sched


def run_conf(objects: list[dict[str, Any]], conf_dict: dict[str, Any]) -> BatchScheduler:
    """One session of the conf ``conf_dict`` on ``objects``."""
    sched = scheduler_on(objects, conf_dict)
    sched.run_session()
    return sched


def run(objects: list[dict[str, Any]], actions: str, plugins: list[dict[str, Any]]) -> BatchScheduler:
    """One session of ``actions`` with ``plugins`` in one tier."""
    return run_conf(objects, one_tier(actions, plugins))


def open_on(objects: list[dict[str, Any]], plugins: list[dict[str, Any]]) -> Session:
    """A session on ``objects`` with ``plugins`` open and no action run yet."""
    sched = scheduler_on(objects, one_tier("allocate", plugins))
    snap, _ = sched.build_snapshot()
    return open_session(snap, sched.conf)
