"""predicates: kube-scheduler's node filters, reused (Volcano ``plugins/predicates``).

Runs, in Volcano's order, the pod-count check (``node(s) pod number exceeded``), NodeUnschedulable,
NodeAffinity, NodePorts, TaintToleration, InterPodAffinity, NodeVolumeLimits, VolumeZone,
PodTopologySpread, VolumeBinding and DynamicResources, with upstream's reason strings. As
in Volcano a node collects the reasons of every failing filter up to the first *unresolvable* one.
Volcano runs no VolumeRestrictions, and neither does this plugin.

Arguments (Volcano's): ``predicate.NodeAffinityEnable``, ``predicate.NodePortsEnable``,
``predicate.TaintTolerationEnable``, ``predicate.PodAffinityEnable``,
``predicate.NodeVolumeLimitsEnable``, ``predicate.VolumeZoneEnable``,
``predicate.PodTopologySpreadEnable``, ``predicate.VolumeBindingEnable`` (all default true), and
``predicate.DynamicResourceAllocationEnable`` (default: the ``DynamicResourceAllocation`` feature
gate, on) with ``dynamicresources.filterTimeoutSeconds`` (default 10).

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

DynamicResources runs the same way, after VolumeBinding at each step: the allocate event runs its
Reserve (the devices its Filter chose on the task's node are in flight in the scheduler's DRA
manager, so the next task's allocation, of this gang or another, counts them as taken), the
deallocate event its Unreserve (a gang that cannot be placed whole gives its devices back when its
statement is discarded), and PreBind writes the claims' allocation and reservation before the pod
is bound. A placement the session keeps without binding it (a pipelined task) gives its devices
back when the session closes, as does a task whose PreBind failed: no allocation stays in flight
past its session. The plugin is built each session (as Volcano's); what it keeps between sessions
lives in the DRA manager, which the kube-scheduler profiles share, so neither pipeline hands out a
device the other holds. A task's PreFilter and Filter run again whenever a task of the session
reserves or gives back devices.

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
from kubesched.framework.config.defaults import FEATURE_GATE_DEFAULTS
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.status import Code
from kubesched.framework.types import FilterResult, IntArray, NodeFailure
from kubesched.plugins.dynamicresources import DynamicResourcesError
from kubesched.plugins.dynamicresources.extended import device_class_mapping, dra_requests
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
DYNAMIC_RESOURCES = "DynamicResources"
#: Volcano's switch for DynamicResources and its one argument, with Volcano's default.
DYNAMIC_RESOURCES_SWITCH = "predicate.DynamicResourceAllocationEnable"
DRA_FILTER_TIMEOUT = "dynamicresources.filterTimeoutSeconds"
DEFAULT_DRA_FILTER_TIMEOUT_SECONDS = 10

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
#: Filters that read other pods, the volumes or the devices (run last, after the static ones, in
#: Volcano's order). VolumeBinding's and DynamicResources' PreFilter and Filter run here; their
#: Reserve runs on allocate and their PreBind before the bind (see the module docstring).
_POD_FILTERS = (
    "InterPodAffinity",
    "NodeVolumeLimits",
    "VolumeZone",
    "PodTopologySpread",
    VOLUME_BINDING,
    DYNAMIC_RESOURCES,
)
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
        # Volcano follows the DynamicResourceAllocation gate unless the switch says otherwise.
        self.enabled[DYNAMIC_RESOURCES] = get_bool(
            args,
            DYNAMIC_RESOURCES_SWITCH,
            FEATURE_GATE_DEFAULTS.get("DynamicResourceAllocation", False),
            plugin=self.name,
        )
        self._dra_filter_timeout = get_int(
            args, DRA_FILTER_TIMEOUT, DEFAULT_DRA_FILTER_TIMEOUT_SECONDS, plugin=self.name
        )
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
        #: Task uid → DynamicResources' cycle state for the task (its last PreFilter and Filter),
        #: which its Reserve, Unreserve and PreBind read.
        self._device_states: dict[str, CycleState] = {}
        #: Task uid → (task, node) whose DynamicResources Reserve ran and whose PreBind has not.
        self._devices_reserved: dict[str, tuple[TaskInfo, str]] = {}
        #: Task uid → (task, node) whose DynamicResources PreBind wrote the claims.
        self._devices_bound: dict[str, tuple[TaskInfo, str]] = {}
        #: Task uid → whether DynamicResources has anything to allocate for the task.
        self._uses_devices: dict[str, bool] = {}
        #: Extended resource → DeviceClass backing it (with DRAExtendedResource), per session.
        self._extended_classes: dict[str, str] | None = None
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
        self._reset_devices()
        for name in (*_BEFORE_PORTS, *_AFTER_PORTS, *_POD_FILTERS):
            if self.enabled.get(name):
                handle = None
                if name == "NodeVolumeLimits":
                    handle = replace(k8s.session_handle(ssn), snapshot=self._volumes_snapshot())
                if name == VOLUME_BINDING:
                    plugin = self._volume_binding(ssn)
                elif name == DYNAMIC_RESOURCES:
                    plugin = self._dynamic_resources(ssn)
                else:
                    plugin = k8s.build(name, ssn, handle=handle)
                if plugin is not None:
                    self._filters[name] = plugin
        reserves = VOLUME_BINDING in self._filters or DYNAMIC_RESOURCES in self._filters
        if self._volume_snapshot is not None or reserves:
            ssn.add_event_handler(EventHandler(self._on_allocate, self._on_deallocate))
        ssn.add_predicate_fn(self.name, self.predicate, self.predicate_mask)
        if reserves:
            ssn.register_pre_binder(self)
        volume_binding = self._filters.get(VOLUME_BINDING)
        if volume_binding is not None and volume_binding.scorer is not None:
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

    def _dynamic_resources(self, ssn: Session) -> Any | None:
        """The DynamicResources instance of this session (Volcano builds one per session); None
        when the DynamicResourceAllocation gate is off. Its wait for the cluster is the
        session's."""
        handle = replace(k8s.session_handle(ssn), wait_for_cluster=ssn.wait_for_cluster)
        if not handle.gate_enabled("DynamicResourceAllocation"):
            return None
        timeout = self._dra_filter_timeout
        if timeout < 0:
            # Volcano keeps its default for a negative value.
            timeout = DEFAULT_DRA_FILTER_TIMEOUT_SECONDS
        return k8s.build(DYNAMIC_RESOURCES, ssn, {"filterTimeout": f"{timeout}s"}, handle=handle)

    def _uses_dra(self, task: TaskInfo) -> bool:
        """Whether DynamicResources has claims to look at for the task: the pod's own, or (with
        DRAExtendedResource) extended resources a DeviceClass backs. Pods without either are
        filtered by spec as before, and no device event touches them."""
        plugin = self._filters.get(DYNAMIC_RESOURCES)
        if plugin is None:
            return False
        pod = task.pod
        if pod.resource_claims:
            return True
        if not plugin.enable_extended_resource or not pod.requests:
            return False
        uses = self._uses_devices.get(task.uid)
        if uses is None:
            if self._extended_classes is None:
                manager = plugin.manager
                classes = manager.device_classes().values() if manager is not None else ()
                self._extended_classes = device_class_mapping(classes)
            uses = self._uses_devices[task.uid] = bool(dra_requests(pod, self._extended_classes))
        return uses

    def _reset_devices(self) -> None:
        self._device_states = {}
        self._devices_reserved = {}
        self._devices_bound = {}
        self._uses_devices = {}
        self._extended_classes = None

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
        if not task.node_name:
            return
        volumes = bool(task.pod.volumes)
        # Volcano's Reserve plugins run first, in order (VolumeBinding, DynamicResources), up to
        # the first that fails; a failure leaves the node infos untouched and the statement undoes
        # the placement (whose deallocate event runs every Unreserve).
        state = self._volume_states.get(task.uid) if volumes else None
        if state is not None:
            st = self._filters[VOLUME_BINDING].reserve(state, task.pod, task.node_name)
            self._reserved[task.uid] = task.node_name
            self._changed()
            if st is not None and st.code != Code.SUCCESS:
                event.err = st.message
                return
        devices = self._device_states.get(task.uid)
        if devices is not None:
            st = self._filters[DYNAMIC_RESOURCES].reserve(devices, task.pod, task.node_name)
            self._devices_reserved[task.uid] = (task, task.node_name)
            self._changed()
            if st is not None and st.code != Code.SUCCESS:
                event.err = st.message or "reserving devices failed"
                return
        if not volumes or self._volume_snapshot is None:
            return
        info = self._own_info(task.node_name)
        if info is not None:
            info.add_pod(task.pod)
            self._placed[task.uid] = task.node_name

    def _on_deallocate(self, event: Event) -> None:
        task = event.task
        # Unreserve in the reverse order of Reserve.
        self._unreserve_devices(task.uid)
        if not task.pod.volumes:
            return
        reserved = self._reserved.pop(task.uid, None)
        if reserved is not None:
            self._filters[VOLUME_BINDING].unreserve(self._volume_states[task.uid], task.pod, reserved)
            self._changed()
        if self._volume_snapshot is None:
            return
        # An allocation undone has lost its node name by now; an evicted pod still has its own.
        node = self._placed.pop(task.uid, None) or task.node_name
        info = self._own_info(node) if node else None
        if info is not None:
            info.remove_pod(task.pod)

    def _unreserve_devices(self, uid: str) -> None:
        """DynamicResources' Unreserve for a task whose Reserve ran: its in-flight allocations
        dropped (and its reservations, had PreBind written them)."""
        held = self._devices_reserved.pop(uid, None) or self._devices_bound.pop(uid, None)
        if held is None:
            return
        task, node = held
        self._filters[DYNAMIC_RESOURCES].unreserve(self._device_states[uid], task.pod, node)
        self._changed()

    def _changed(self) -> None:
        """The binder's caches or the devices in flight moved: verdicts of tasks with volume or
        resource claims are stale (the session's own placements already say so where it keeps a
        pod index)."""
        ssn = self._ssn
        if ssn is not None:
            ssn.pods_version += 1

    # -- PreBind (the session's pre-binder) --------------------------------------------------------
    def pre_bind(self, task: TaskInfo) -> str | None:
        """The PreBind of VolumeBinding (the claims' bindings written and waited for), then of
        DynamicResources (the claims' allocation and reservation written) for a committed task.
        The error, if one failed."""
        state = self._volume_states.get(task.uid)
        if state is not None and task.uid in self._reserved:
            st = self._filters[VOLUME_BINDING].pre_bind(state, task.pod, task.node_name)
            if st is not None and st.code != Code.SUCCESS:
                return st.message or "binding volumes failed"
        held = self._devices_reserved.get(task.uid)
        if held is None:
            return None
        _, node = held
        st = self._filters[DYNAMIC_RESOURCES].pre_bind(self._device_states[task.uid], task.pod, node)
        if st is not None and st.code != Code.SUCCESS:
            # Its claims not yet written stay in flight otherwise, taking their devices from every
            # later pod: given back now, as kube-scheduler's Unreserve after a failed PreBind.
            self._unreserve_devices(task.uid)
            return st.message or "binding devices failed"
        self._devices_bound[task.uid] = self._devices_reserved.pop(task.uid)
        return None

    def pre_bind_rollback(self, task: TaskInfo) -> None:
        """The pod's bind failed after PreBind: the Unreserve of DynamicResources (the pod leaves
        its claims' ``reservedFor``), then of VolumeBinding."""
        self._unreserve_devices(task.uid)
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
        if self._uses_dra(task):
            # A template's claim is the pod's own, and DynamicResources keeps a cycle state per
            # task, which its Reserve and PreBind read.
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
            if name == DYNAMIC_RESOURCES:
                if not self._uses_dra(task):
                    continue
                res = self._filter_devices(plugin, task, alive)
            else:
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

    def _filter_devices(self, plugin: Any, task: TaskInfo, alive: BoolArray) -> FilterResult | None:
        """DynamicResources' PreFilter and Filter, in a cycle state of the task's own; an
        allocation costs a search per node, so only the nodes still alive are searched. An
        allocator error (a CEL selector failing on a device) rejects them all with its message,
        as Volcano's Filter error status."""
        state = CycleState()
        if task.uid not in self._devices_reserved and task.uid not in self._devices_bound:
            # A reserved task keeps the state its Reserve read, for its Unreserve and PreBind.
            self._device_states[task.uid] = state
        try:
            return k8s.run_filter(plugin, task.pod, self._snapshot, state, alive)
        except DynamicResourcesError as exc:
            return FilterResult.reject(alive.copy(), str(exc), unresolvable=True)

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
        if depends < _PODS and self._uses_dra(task):
            # The tasks placed take devices.
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
        # Placements the session did not bind (pipelined, or their PreBind failed) give their
        # devices back: an allocation in flight would outlive the session that chose it.
        for uid in list(self._devices_reserved):
            self._unreserve_devices(uid)
        self._reset_devices()
        self._cache = {}
        self._dynamic_cache = {}
        self._filters = {}
        self._ssn = None
        self._volume_snapshot = None
        self._placed = {}
        self._volume_states = {}
        self._reserved = {}
