"""predicates: kube-scheduler's node filters, reused (Volcano ``plugins/predicates``).

Runs, in Volcano's order, the pod-count check (``node(s) pod number exceeded``), NodeUnschedulable,
NodeAffinity, NodePorts, TaintToleration, InterPodAffinity, NodeVolumeLimits, VolumeZone,
PodTopologySpread and VolumeBinding (each when kubesched has it), with upstream's reason strings. As
in Volcano a node collects the reasons of every failing filter up to the first *unresolvable* one.
Volcano runs no VolumeRestrictions, and neither does this plugin.

Arguments (Volcano's): ``predicate.NodeAffinityEnable``, ``predicate.NodePortsEnable``,
``predicate.TaintTolerationEnable``, ``predicate.PodAffinityEnable``,
``predicate.NodeVolumeLimitsEnable``, ``predicate.VolumeZoneEnable``,
``predicate.PodTopologySpreadEnable``, ``predicate.VolumeBindingEnable`` (all default true).

Volcano adds the tasks it allocates to its node infos (and takes evicted ones out): NodeVolumeLimits
here reads node infos of its own, copies of the session's that the allocate and deallocate events
keep in step, so a gang's members count each other's volumes.

Speed: within a session the static filters (NodeUnschedulable, NodeAffinity, TaintToleration) see
the same nodes throughout; their combined verdict is computed once per pod spec
(:attr:`TaskInfo.spec_key`). InterPodAffinity and PodTopologySpread also see the tasks the session
places (Volcano adds them to its node infos as they are allocated): their verdict is cached per
spec too, and computed again only after the session placed or evicted a pod that can change it.
The pod count and host ports are a few vector operations per task. The pod count uses the session's
accounting: pods placed or pipelined count, evicted ones do not.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from kubesched.api.topology_spread import DO_NOT_SCHEDULE
from kubesched.batch import k8s
from kubesched.batch.conf import PluginOption
from kubesched.batch.job_info import TaskInfo
from kubesched.batch.plugins.args import get_bool
from kubesched.batch.session import BoolArray, Event, EventHandler, Session
from kubesched.cache.cache import Snapshot
from kubesched.cache.node_info import NodeInfo
from kubesched.cache.node_table import PODS_COL, NodeTable
from kubesched.errors import InputError
from kubesched.framework.types import FilterResult, NodeFailure
from kubesched.plugins.nodeports import ERR_REASON as NODE_PORTS_REASON
from kubesched.plugins.nodeports import conflicting_nodes
from kubesched.plugins.nodevolumelimits import counts_volumes

#: Volcano ``api.NodePodNumberExceeded``.
POD_NUMBER_EXCEEDED = "node(s) pod number exceeded"

_SWITCHES = (
    ("NodeAffinity", "predicate.NodeAffinityEnable"),
    ("NodePorts", "predicate.NodePortsEnable"),
    ("TaintToleration", "predicate.TaintTolerationEnable"),
    ("InterPodAffinity", "predicate.PodAffinityEnable"),
    ("NodeVolumeLimits", "predicate.NodeVolumeLimitsEnable"),
    ("VolumeZone", "predicate.VolumeZoneEnable"),
    ("PodTopologySpread", "predicate.PodTopologySpreadEnable"),
    ("VolumeBinding", "predicate.VolumeBindingEnable"),
)
#: Filters before NodePorts, and after it (NodePorts itself is checked per task: ports change).
_BEFORE_PORTS = ("NodeUnschedulable", "NodeAffinity")
_AFTER_PORTS = ("TaintToleration",)
#: Filters that read other pods or the volumes (run last, after the static ones, in Volcano's order).
#: VolumeBinding (``kubesched.plugins.volumebinding``) runs here once it is registered: Volcano runs
#: its PreFilter and Filter here, its Reserve on allocate and PreBind before the bind (see
#: docs/volumes.md).
_POD_FILTERS = ("InterPodAffinity", "NodeVolumeLimits", "VolumeZone", "PodTopologySpread", "VolumeBinding")
#: Filters whose verdict changes with any task placed or evicted when the pod has volumes.
_VOLUME_FILTERS = ("NodeVolumeLimits", "VolumeBinding")

#: What a pod-reading filter's verdict for one spec depends on (see :class:`_Dynamic`).
_NOTHING, _TERMS, _PODS = 0, 1, 2


@dataclass(slots=True)
class _Static:
    """The spec-level part of the verdict: failures of the unchanging filters."""

    failing: BoolArray
    passed: BoolArray
    failures: list[NodeFailure]
    #: Nodes still evaluated when NodePorts runs (not aborted by an unresolvable failure before it).
    alive_at_ports: BoolArray
    #: Nodes still evaluated after the static filters.
    alive: BoolArray


@dataclass(slots=True)
class _Dynamic:
    """InterPodAffinity and PodTopologySpread for one spec, as of the session's pod versions."""

    failing: BoolArray | None
    failures: list[NodeFailure]
    #: ``_NOTHING``: the verdict holds all session; ``_TERMS``: until a pod with inter-pod affinity
    #: terms is placed or evicted; ``_PODS``: until any pod is.
    depends: int
    pods_version: int
    terms_version: int


class PredicatesPlugin:
    name = "predicates"

    def __init__(self, option: PluginOption) -> None:
        self.option = option
        args = option.arguments
        self.enabled = {"NodeUnschedulable": True}
        for plugin, key in _SWITCHES:
            self.enabled[plugin] = get_bool(args, key, True, plugin=self.name)
        self._cache: dict[Any, _Static] = {}
        self._dynamic_cache: dict[Any, _Dynamic] = {}
        self._filters: dict[str, Any] = {}
        self._ssn: Session | None = None
        self._volume_snapshot: Snapshot | None = None
        self._copied: set[str] = set()
        #: Task uid → the node its allocate event put it on (in ``_volume_snapshot``).
        self._placed: dict[str, str] = {}

    def on_session_open(self, ssn: Session) -> None:
        self._ssn = ssn
        self._cache = {}
        self._dynamic_cache = {}
        self._snapshot = k8s.session_snapshot(ssn)
        self._volume_snapshot = None
        self._placed = {}
        for name in (*_BEFORE_PORTS, *_AFTER_PORTS, *_POD_FILTERS):
            if self.enabled.get(name):
                handle = None
                if name == "NodeVolumeLimits":
                    handle = replace(k8s.session_handle(ssn), snapshot=self._volumes_snapshot())
                plugin = k8s.build(name, ssn, handle=handle)
                if plugin is not None:
                    self._filters[name] = plugin
        if self._volume_snapshot is not None:
            ssn.add_event_handler(EventHandler(self._on_allocate, self._on_deallocate))
        ssn.add_predicate_fn(self.name, self.predicate, self.predicate_mask)

    # -- the session's placements, for the filters that count other pods' volumes -----------------
    def _volumes_snapshot(self) -> Snapshot:
        """The session's nodes with node infos of their own, which the allocate and deallocate
        events change (the session's are the scheduler cache's)."""
        snap = Snapshot()
        snap.table = self._snapshot.table
        snap.node_infos = dict(self._snapshot.node_infos)
        snap.pod_index = self._snapshot.pod_index
        self._volume_snapshot = snap
        self._copied = set()
        return snap

    def _own_info(self, node: str) -> NodeInfo | None:
        snap = self._volume_snapshot
        assert snap is not None
        info = snap.node_infos.get(node)
        if info is None or node in self._copied:
            return info
        info = info.clone()
        snap.node_infos[node] = info
        self._copied.add(node)
        return info

    def _on_allocate(self, event: Event) -> None:
        task = event.task
        if not task.pod.volumes or not task.node_name:
            return
        info = self._own_info(task.node_name)
        if info is not None:
            info.add_pod(task.pod)
            self._placed[task.uid] = task.node_name

    def _on_deallocate(self, event: Event) -> None:
        task = event.task
        if not task.pod.volumes:
            return
        # An allocation undone has lost its node name by now; an evicted pod still has its own.
        node = self._placed.pop(task.uid, None) or task.node_name
        info = self._own_info(node) if node else None
        if info is not None:
            info.remove_pod(task.pod)

    @staticmethod
    def _key(task: TaskInfo) -> Any:
        # A generic ephemeral volume's claim is named after its pod: equal specs, different claims.
        if task.spec_key is None or any(v.ephemeral for v in task.pod.volumes):
            return task.uid
        return task.spec_key

    def _run(
        self, names: tuple[str, ...], task: TaskInfo, alive: BoolArray, failing: BoolArray
    ) -> tuple[list[NodeFailure], BoolArray]:
        """Run ``names`` in order on the nodes still ``alive``; marks ``failing`` in place. A node
        collects reasons until its first unresolvable one. Returns the failures and the nodes
        still alive after."""
        cap = len(alive)
        failures: list[NodeFailure] = []
        for name in names:
            plugin = self._filters.get(name)
            if plugin is None:
                continue
            res = k8s.run_filter(plugin, task.pod, self._snapshot)
            if res is None:
                continue
            failing |= alive & ~res.passed
            abort = np.zeros(cap, dtype=np.bool_)
            for f in res.failures:
                hit = f.nodes & alive
                if hit.any():
                    failures.append(NodeFailure(f.reason, hit, f.unresolvable))
                    if f.unresolvable:
                        abort |= hit
            alive = alive & ~abort
        return failures, alive

    def _static(self, task: TaskInfo, table: NodeTable) -> _Static:
        key = self._key(task)
        cached = self._cache.get(key)
        if cached is not None:
            return cached
        cap = table.capacity
        failing = np.zeros(cap, dtype=np.bool_)
        failures, alive_at_ports = self._run(_BEFORE_PORTS, task, np.ones(cap, dtype=np.bool_), failing)
        after, alive = self._run(_AFTER_PORTS, task, alive_at_ports, failing)
        entry = _Static(failing, ~failing, failures + after, alive_at_ports, alive)
        self._cache[key] = entry
        return entry

    def _depends(self, task: TaskInfo) -> int:
        """What the pod-reading filters' verdict for this task's spec depends on."""
        depends = _NOTHING
        pod = task.pod
        affinity = self._filters.get("InterPodAffinity")
        if affinity is not None:
            ssn = self._ssn
            index = ssn.pod_index if ssn is not None else None
            terms = index.terms_of(pod) if index is not None else None
            if terms is not None and terms.error is None:
                # Its own required terms count matching pods; else only existing pods' anti-affinity.
                own = terms.required_affinity or terms.required_anti_affinity
                depends = _PODS if own else _TERMS
        if (
            depends < _PODS
            and any(name in self._filters for name in _VOLUME_FILTERS)
            and any(counts_volumes(v) for v in pod.volumes)
        ):
            # The tasks placed count their volumes (and take the claims' volumes).
            depends = _PODS
        spread = self._filters.get("PodTopologySpread")
        if spread is not None and depends < _PODS:
            try:
                if spread.constraints(None, pod, DO_NOT_SCHEDULE):
                    depends = _PODS
            except InputError:
                pass  # rejected on every node whatever the session places
        return depends

    def _dynamic(self, task: TaskInfo, static: _Static) -> _Dynamic:
        ssn = self._ssn
        assert ssn is not None
        key = self._key(task)
        entry = self._dynamic_cache.get(key)
        if entry is not None and (
            entry.depends == _NOTHING
            or (entry.depends == _TERMS and entry.terms_version == ssn.terms_version)
            or entry.pods_version == ssn.pods_version
        ):
            return entry
        depends = entry.depends if entry is not None else self._depends(task)
        failing = np.zeros(len(static.alive), dtype=np.bool_)
        failures, _ = self._run(_POD_FILTERS, task, static.alive, failing)
        entry = _Dynamic(
            failing if failures else None, failures, depends, ssn.pods_version, ssn.terms_version
        )
        self._dynamic_cache[key] = entry
        return entry

    def _exceeded(self) -> BoolArray:
        """Nodes whose pod slots are all taken, counting the session's placements and evictions."""
        ssn = self._ssn
        assert ssn is not None
        free = ssn.idle[:, PODS_COL]
        if ssn.future_differs:
            free = free + ssn.releasing[:, PODS_COL] - ssn.pipelined[:, PODS_COL]
        exceeded: BoolArray = free <= 0
        return exceeded

    def predicate(self, task: TaskInfo, table: NodeTable) -> FilterResult:
        static = self._static(task, table)
        dynamic = self._dynamic(task, static)
        failing = static.failing.copy()
        failures = list(static.failures)
        if dynamic.failing is not None:
            failing |= dynamic.failing
            failures.extend(dynamic.failures)
        exceeded = self._exceeded()
        if exceeded.any():
            failures.append(NodeFailure(POD_NUMBER_EXCEEDED, exceeded))
            failing |= exceeded
        if task.pod.host_ports and self.enabled["NodePorts"]:
            ports = conflicting_nodes(table, task.pod.host_ports) & static.alive_at_ports
            if ports.any():
                failures.append(NodeFailure(NODE_PORTS_REASON, ports))
                failing |= ports
        return FilterResult(~failing, failures)

    def predicate_mask(self, task: TaskInfo, table: NodeTable) -> BoolArray:
        """``predicate(task, table).passed``, without the reasons (the allocate hot path)."""
        static = self._static(task, table)
        dynamic = self._dynamic(task, static)
        passed = static.passed & ~self._exceeded()
        if dynamic.failing is not None:
            passed &= ~dynamic.failing
        if task.pod.host_ports and self.enabled["NodePorts"]:
            passed &= ~(conflicting_nodes(table, task.pod.host_ports) & static.alive_at_ports)
        return passed

    def on_session_close(self, ssn: Session) -> None:
        self._cache = {}
        self._dynamic_cache = {}
        self._filters = {}
        self._ssn = None
        self._volume_snapshot = None
        self._placed = {}
