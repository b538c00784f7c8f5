"""predicates: kube-scheduler's node filters, reused (Volcano ``plugins/predicates``).

Runs, in Volcano's order, the pod-count check (``node(s) pod number exceeded``), NodeUnschedulable,
NodeAffinity, NodePorts, TaintToleration, InterPodAffinity, NodeVolumeLimits, VolumeZone,
PodTopologySpread and VolumeBinding, with upstream's reason strings. As
in Volcano a node collects the reasons of every failing filter up to the first *unresolvable* one.
Volcano runs no VolumeRestrictions, and neither does this plugin.

Arguments (Volcano's): ``predicate.NodeAffinityEnable``, ``predicate.NodePortsEnable``,
``predicate.TaintTolerationEnable``, ``predicate.PodAffinityEnable``,
``predicate.NodeVolumeLimitsEnable``, ``predicate.VolumeZoneEnable``,
``predicate.PodTopologySpreadEnable``, ``predicate.VolumeBindingEnable`` (all default true).

Volcano adds the tasks it allocates to its node infos (and takes evicted ones out): NodeVolumeLimits
here reads node infos of its own, copies of the session's that the allocate and deallocate events
keep in step, so a gang's members count each other's volumes.

VolumeBinding goes further, as in Volcano: the allocate event runs its Reserve (the chosen volumes
and provisioning decisions are assumed in the binder's caches, so the next task, of this job or
another, does not take the same volume), a failed Reserve undoes the placement, the deallocate
event (a statement discarded, an allocation undone) its Unreserve, and the plugin registers as the
session's pre-binder: PreBind writes the claims' bindings and waits for them to be Bound before the
pod is bound, and a bind that fails after it runs Unreserve. The plugin instance, with its assume
caches over the informers, is built once and kept from session to session (Volcano builds it once;
its arguments ``volumebinding.bindTimeoutSeconds`` and ``volumebinding.weight`` are read then).
With the StorageCapacityScoring gate on, its Score joins the node order with
``volumebinding.weight`` (default 1); with the gate off (the default) it scores nothing, as
Volcano's.

Speed: within a session the static filters (NodeUnschedulable, NodeAffinity, TaintToleration) see
the same nodes throughout; their combined verdict is computed once per pod spec
(:attr:`TaskInfo.spec_key`). InterPodAffinity and PodTopologySpread also see the tasks the session
places (Volcano adds them to its node infos as they are allocated): their verdict is cached per
spec too, and computed again only after the session placed or evicted a pod that can change it.
The pod count and host ports are a few vector operations per task. The pod count uses the session's
accounting: pods placed or pipelined count, evicted ones do not.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from kubesched.api.topology_spread import DO_NOT_SCHEDULE
from kubesched.batch import k8s
from kubesched.batch.conf import PluginOption
from kubesched.batch.job_info import TaskInfo
from kubesched.batch.plugins.args import get_bool, get_int
from kubesched.batch.session import BoolArray, Event, EventHandler, Session
from kubesched.cache.cache import Snapshot
from kubesched.cache.node_info import NodeInfo
from kubesched.cache.node_table import PODS_COL, NodeTable
from kubesched.errors import InputError
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.status import Code
from kubesched.framework.types import FilterResult, IntArray, NodeFailure
from kubesched.plugins.nodeports import ERR_REASON as NODE_PORTS_REASON
from kubesched.plugins.nodeports import conflicting_nodes
from kubesched.plugins.nodevolumelimits import counts_volumes
from kubesched.plugins.volumebinding import has_claims

log = logging.getLogger(__name__)

#: Volcano ``api.NodePodNumberExceeded``.
POD_NUMBER_EXCEEDED = "node(s) pod number exceeded"
VOLUME_BINDING = "VolumeBinding"
#: Where the VolumeBinding instance is kept between sessions (``Session.kept``).
_KEPT_VOLUME_BINDING = "predicates/VolumeBinding"
#: Volcano's VolumeBinding arguments of the predicates plugin, and their defaults.
VOLUME_BINDING_WEIGHT = "volumebinding.weight"
VOLUME_BINDING_TIMEOUT = "volumebinding.bindTimeoutSeconds"
DEFAULT_BIND_TIMEOUT_SECONDS = 600

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
#: VolumeBinding's PreFilter and Filter run here; its Reserve runs on allocate and its PreBind
#: before the bind (see the module docstring).
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
        #: Task uid → the cycle state of VolumeBinding's last PreFilter and Filter for the task
        #: (Volcano's per-task cycle state), which its Reserve, Unreserve and PreBind read.
        self._volume_states: dict[str, CycleState] = {}
        #: Task uid → the node VolumeBinding's Reserve ran for.
        self._reserved: dict[str, str] = {}
        self._volume_weight = get_int(args, VOLUME_BINDING_WEIGHT, 1, plugin=self.name)

    def on_session_open(self, ssn: Session) -> None:
        self._ssn = ssn
        self._cache = {}
        self._dynamic_cache = {}
        self._snapshot = k8s.session_snapshot(ssn)
        self._volume_snapshot = None
        self._placed = {}
        self._volume_states = {}
        self._reserved = {}
        for name in (*_BEFORE_PORTS, *_AFTER_PORTS, *_POD_FILTERS):
            if self.enabled.get(name):
                handle = None
                if name == "NodeVolumeLimits":
                    handle = replace(k8s.session_handle(ssn), snapshot=self._volumes_snapshot())
                plugin = (
                    self._volume_binding(ssn)
                    if name == VOLUME_BINDING
                    else k8s.build(name, ssn, handle=handle)
                )
                if plugin is not None:
                    self._filters[name] = plugin
        if self._volume_snapshot is not None or VOLUME_BINDING in self._filters:
            ssn.add_event_handler(EventHandler(self._on_allocate, self._on_deallocate))
        ssn.add_predicate_fn(self.name, self.predicate, self.predicate_mask)
        volume_binding = self._filters.get(VOLUME_BINDING)
        if volume_binding is not None:
            ssn.register_pre_binder(self)
            if volume_binding.scorer is not None:
                ssn.add_node_order_fn(self.name, self.volume_binding_score)

    def _volume_binding(self, ssn: Session) -> Any | None:
        """The VolumeBinding instance: built on the first session and kept (its assume caches
        follow the informers; built every session they would each subscribe again). Its wait for
        the cluster is the session's, the scheduler's driver's."""
        plugin = ssn.kept.get(_KEPT_VOLUME_BINDING)
        if plugin is not None:
            return plugin
        timeout = get_int(
            self.option.arguments, VOLUME_BINDING_TIMEOUT, DEFAULT_BIND_TIMEOUT_SECONDS, plugin=self.name
        )
        if timeout < 0:
            log.warning(
                "%s.arguments.%s: %d is negative; the default is kept",
                self.name,
                VOLUME_BINDING_TIMEOUT,
                timeout,
            )
            timeout = DEFAULT_BIND_TIMEOUT_SECONDS
        handle = replace(k8s.session_handle(ssn), wait_for_cluster=ssn.wait_for_cluster)
        plugin = k8s.build(VOLUME_BINDING, ssn, {"bindTimeoutSeconds": timeout}, handle=handle)
        if plugin is not None:
            ssn.kept[_KEPT_VOLUME_BINDING] = plugin
        return plugin

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
        state = self._volume_states.get(task.uid)
        if state is not None:
            # Volcano's Reserve plugins run first; a failure leaves the node infos untouched and
            # the statement undoes the placement.
            st = self._filters[VOLUME_BINDING].reserve(state, task.pod, task.node_name)
            self._reserved[task.uid] = task.node_name
            self._volumes_changed()
            if st is not None and st.code != Code.SUCCESS:
                event.err = st.message
                return
        if self._volume_snapshot is None:
            return
        info = self._own_info(task.node_name)
        if info is not None:
            info.add_pod(task.pod)
            self._placed[task.uid] = task.node_name

    def _on_deallocate(self, event: Event) -> None:
        task = event.task
        if not task.pod.volumes:
            return
        reserved = self._reserved.pop(task.uid, None)
        if reserved is not None:
            self._filters[VOLUME_BINDING].unreserve(self._volume_states[task.uid], task.pod, reserved)
            self._volumes_changed()
        if self._volume_snapshot is None:
            return
        # An allocation undone has lost its node name by now; an evicted pod still has its own.
        node = self._placed.pop(task.uid, None) or task.node_name
        info = self._own_info(node) if node else None
        if info is not None:
            info.remove_pod(task.pod)

    def _volumes_changed(self) -> None:
        """The binder's caches moved: verdicts of tasks with claims are stale (the session's own
        placements already say so where it keeps a pod index)."""
        ssn = self._ssn
        if ssn is not None:
            ssn.pods_version += 1

    # -- PreBind (the session's pre-binder) --------------------------------------------------------
    def pre_bind(self, task: TaskInfo) -> str | None:
        """VolumeBinding's PreBind for a committed task: the claims' bindings written and waited
        for. The error, if it failed."""
        state = self._volume_states.get(task.uid)
        if state is None or task.uid not in self._reserved:
            return None
        st = self._filters[VOLUME_BINDING].pre_bind(state, task.pod, task.node_name)
        if st is not None and st.code != Code.SUCCESS:
            return st.message or "binding volumes failed"
        return None

    def pre_bind_rollback(self, task: TaskInfo) -> None:
        """The pod's bind failed after PreBind: VolumeBinding's Unreserve."""
        node = self._reserved.pop(task.uid, None)
        if node is not None:
            self._filters[VOLUME_BINDING].unreserve(self._volume_states[task.uid], task.pod, node)

    # -- Score -------------------------------------------------------------------------------------
    def volume_binding_score(self, task: TaskInfo, table: NodeTable, slots: IntArray) -> IntArray:
        """VolumeBinding's Score times ``volumebinding.weight`` (Volcano's batch node order: no
        normalization); nothing when PreScore says Skip."""
        zeros = np.zeros(len(slots), dtype=np.int64)
        state = self._volume_states.get(task.uid)
        plugin = self._filters[VOLUME_BINDING]
        if state is None:
            return zeros
        st = plugin.pre_score(state, task.pod, table, slots)
        if st is not None and st.code == Code.SKIP:
            return zeros
        scores: IntArray = np.asarray(plugin.score_nodes(state, task.pod, table, slots), dtype=np.int64)
        return scores * self._volume_weight

    def _key(self, task: TaskInfo) -> Any:
        # A generic ephemeral volume's claim is named after its pod: equal specs, different claims.
        if task.spec_key is None or any(v.ephemeral for v in task.pod.volumes):
            return task.uid
        if task.pod.volumes and VOLUME_BINDING in self._filters and has_claims(task.pod):
            # VolumeBinding keeps a cycle state per task, which its Reserve and PreBind read.
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
            state = None
            if name == VOLUME_BINDING and task.uid not in self._reserved:
                state = self._volume_states[task.uid] = CycleState()
            res = k8s.run_filter(plugin, task.pod, self._snapshot, state)
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
        self._volume_states = {}
        self._reserved = {}
