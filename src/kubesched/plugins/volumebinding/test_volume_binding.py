"""VolumeBinding through its extension points: upstream ``volume_binding_test.go`` ``TestVolumeBinding``
(v1.35, case names verbatim) — PreFilter status and the claims it sorted, Filter per node, PreScore
and Score; and PreBindPreFlight, which says whether PreBind has a write to make.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest

from kubesched.api.objects import Node, Pod
from kubesched.api.storage import BINDING_IMMEDIATE, BINDING_WAIT_FOR_FIRST_CONSUMER
from kubesched.errors import InputError
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.plugin_args import UtilizationShapePoint, VolumeBindingArgs
from kubesched.framework.status import Code
from kubesched.plugins.testing import build_snapshot, node_statuses, store_handle
from kubesched.plugins.volumebinding import STATE_KEY, VolumeBinding
from kubesched.plugins.volumebinding.binder import (
    ERR_REASON_BIND_CONFLICT,
    ERR_REASON_NODE_CONFLICT,
    ERR_REASON_PV_NOT_EXIST,
)
from kubesched.plugins.volumebinding.test_utils import (
    Obj,
    capacity,
    csi_driver,
    make_node,
    make_pod,
    make_pv,
    make_pvc,
    storage_class,
)
from kubesched.store.memory import MemoryStore

IMMEDIATE_SC = "immediate-sc"
WAIT_SC = "wait-sc"
WAIT_HDD_SC = "wait-hdd-sc"
WAIT_SC_WITH_STORAGE_CAPACITY = "wait-sc-with-storage-capacity"
DRIVER_WITH_STORAGE_CAPACITY = "driver-with-storage-capacity"
NODE_LABEL_KEY = "nodeKey"
ZONE = "topology.kubernetes.io/zone"
REGION = "topology.kubernetes.io/region"
HOSTNAME = "kubernetes.io/hostname"

CLASSES = [
    storage_class(IMMEDIATE_SC, BINDING_IMMEDIATE),
    storage_class(WAIT_SC, BINDING_WAIT_FOR_FIRST_CONSUMER),
    storage_class(WAIT_HDD_SC, BINDING_WAIT_FOR_FIRST_CONSUMER),
    storage_class(
        WAIT_SC_WITH_STORAGE_CAPACITY, BINDING_WAIT_FOR_FIRST_CONSUMER, DRIVER_WITH_STORAGE_CAPACITY
    ),
]

DEFAULT_SHAPE = [
    UtilizationShapePoint(utilization=0, score=10),
    UtilizationShapePoint(utilization=100, score=0),
]


@dataclass
class State:
    bound: list[str] = field(default_factory=list)
    delayed: list[str] = field(default_factory=list)
    volumes: dict[str, list[str]] = field(default_factory=dict)


@dataclass
class Case:
    name: str
    pod: Pod
    nodes: list[Obj]
    pvcs: list[Obj] = field(default_factory=list)
    pvs: list[Obj] = field(default_factory=list)
    capacities: list[Obj] = field(default_factory=list)
    scoring: bool = False
    args: VolumeBindingArgs | None = None
    pre_filter: tuple[Code, str] | None = None
    state: State | None = None
    filter: list[tuple[str, ...] | None] = field(default_factory=list)
    scores: list[int] | None = None
    pre_score_skip: bool = False


def node(name: str, **labels: str) -> Obj:
    b = make_node(name)
    for k, v in labels.items():
        b.with_label(k, v)
    return b.obj


def zonal_node(name: str, zone: str) -> Obj:
    region = zone.replace("zone", "region")
    return make_node(name).with_label(REGION, region).with_label(ZONE, zone).obj


def local_pv(name: str, cls: str, size: str, node_name: str) -> Obj:
    return (
        make_pv(name, cls)
        .with_phase("Available")
        .with_capacity(size)
        .with_node_affinity({HOSTNAME: [node_name]})
        .obj
    )


def zonal_pv(name: str, size: str, zone: str) -> Obj:
    region = zone.replace("zone", "region")
    return (
        make_pv(name, WAIT_SC)
        .with_phase("Available")
        .with_capacity(size)
        .with_node_affinity({REGION: [region], ZONE: [zone]})
        .obj
    )


def node_capacity(node_name: str, size: str) -> Obj:
    return capacity(node_name, WAIT_SC_WITH_STORAGE_CAPACITY, {NODE_LABEL_KEY: node_name}, size)


LOCAL_PVS = [
    local_pv("pv-a-0", WAIT_SC, "200Gi", "node-a"),
    local_pv("pv-a-1", WAIT_SC, "200Gi", "node-a"),
    local_pv("pv-b-0", WAIT_SC, "100Gi", "node-b"),
    local_pv("pv-b-1", WAIT_SC, "100Gi", "node-b"),
]
ZONAL_NODES = [
    zonal_node("zone-a-node-a", "zone-a"),
    zonal_node("zone-a-node-b", "zone-a"),
    zonal_node("zone-b-node-a", "zone-b"),
    zonal_node("zone-b-node-b", "zone-b"),
    zonal_node("zone-c-node-a", "zone-c"),
    zonal_node("zone-c-node-b", "zone-c"),
]
ZONAL_PVS = [
    zonal_pv("pv-a-0", "200Gi", "zone-a"),
    zonal_pv("pv-a-1", "200Gi", "zone-a"),
    zonal_pv("pv-b-0", "100Gi", "zone-b"),
    zonal_pv("pv-b-1", "100Gi", "zone-b"),
]
ZONAL_STATE = State([], ["pvc-a"], {WAIT_SC: ["pv-a-0", "pv-a-1", "pv-b-0", "pv-b-1"]})
THREE_NODES = [node("node-a"), node("node-b"), node("node-c")]
LABELLED_NODES = [node(n, nodeKey=n) for n in ("node-a", "node-b", "node-c")]
BIND = (ERR_REASON_BIND_CONFLICT,)
UNRESOLVABLE = Code.UNSCHEDULABLE_AND_UNRESOLVABLE

CASES: list[Case] = [
    Case(
        "pod has not pvcs",
        make_pod("pod-a").pod,
        [node("node-a")],
        pre_filter=(Code.SKIP, ""),
        filter=[None],
        pre_score_skip=True,
    ),
    Case(
        "all bound",
        make_pod("pod-a").with_pvc_volume("pvc-a").pod,
        [node("node-a")],
        [make_pvc("pvc-a", WAIT_SC).with_bound_pv("pv-a").obj],
        [make_pv("pv-a", WAIT_SC).with_phase("Available").obj],
        state=State(["pvc-a"]),
        filter=[None],
        pre_score_skip=True,
    ),
    Case(
        "PVC does not exist",
        make_pod("pod-a").with_pvc_volume("pvc-a").pod,
        [node("node-a")],
        pre_filter=(UNRESOLVABLE, 'persistentvolumeclaim "pvc-a" not found'),
    ),
    Case(
        "Part of PVCs do not exist",
        make_pod("pod-a").with_pvc_volume("pvc-a").with_pvc_volume("pvc-b").pod,
        [node("node-a")],
        [make_pvc("pvc-a", WAIT_SC).with_bound_pv("pv-a").obj],
        pre_filter=(UNRESOLVABLE, 'persistentvolumeclaim "pvc-b" not found'),
    ),
    Case(
        "immediate claims not bound",
        make_pod("pod-a").with_pvc_volume("pvc-a").pod,
        [node("node-a")],
        [make_pvc("pvc-a", IMMEDIATE_SC).obj],
        pre_filter=(UNRESOLVABLE, "pod has unbound immediate PersistentVolumeClaims"),
    ),
    Case(
        "unbound claims no matches",
        make_pod("pod-a").with_pvc_volume("pvc-a").pod,
        [node("node-a")],
        [make_pvc("pvc-a", WAIT_SC).obj],
        state=State([], ["pvc-a"], {WAIT_SC: []}),
        filter=[BIND],
        pre_score_skip=True,
    ),
    Case(
        "bound and unbound unsatisfied",
        make_pod("pod-a").with_pvc_volume("pvc-a").with_pvc_volume("pvc-b").pod,
        [node("node-a", foo="barbar")],
        [make_pvc("pvc-a", WAIT_SC).with_bound_pv("pv-a").obj, make_pvc("pvc-b", WAIT_SC).obj],
        [make_pv("pv-a", WAIT_SC).with_phase("Available").with_node_affinity({"foo": ["bar"]}).obj],
        state=State(["pvc-a"], ["pvc-b"], {WAIT_SC: ["pv-a"]}),
        filter=[(ERR_REASON_NODE_CONFLICT, ERR_REASON_BIND_CONFLICT)],
        pre_score_skip=True,
    ),
    Case(
        "pv not found",
        make_pod("pod-a").with_pvc_volume("pvc-a").pod,
        [node("node-a")],
        [make_pvc("pvc-a", WAIT_SC).with_bound_pv("pv-a").obj],
        state=State(["pvc-a"]),
        filter=[(ERR_REASON_PV_NOT_EXIST,)],
        pre_score_skip=True,
    ),
    Case(
        "pv not found claim lost",
        make_pod("pod-a").with_pvc_volume("pvc-a").pod,
        [node("node-a")],
        [make_pvc("pvc-a", WAIT_SC).with_bound_pv("pv-a").with_phase("Lost").obj],
        pre_filter=(
            UNRESOLVABLE,
            'persistentvolumeclaim "pvc-a" bound to non-existent persistentvolume "pv-a"',
        ),
    ),
    Case(
        "local volumes with close capacity are preferred",
        make_pod("pod-a").with_pvc_volume("pvc-a").pod,
        THREE_NODES,
        [make_pvc("pvc-a", WAIT_SC).with_request_storage("50Gi").obj],
        LOCAL_PVS,
        scoring=True,
        state=State([], ["pvc-a"], {WAIT_SC: ["pv-a-0", "pv-a-1", "pv-b-0", "pv-b-1"]}),
        filter=[None, None, BIND],
        scores=[75, 50, 0],
    ),
    Case(
        "local volumes with close capacity are preferred (StorageCapacityScoring disabled)",
        make_pod("pod-a").with_pvc_volume("pvc-a").pod,
        THREE_NODES,
        [make_pvc("pvc-a", WAIT_SC).with_request_storage("50Gi").obj],
        LOCAL_PVS,
        state=State([], ["pvc-a"], {WAIT_SC: ["pv-a-0", "pv-a-1", "pv-b-0", "pv-b-1"]}),
        filter=[None, None, BIND],
        pre_score_skip=True,
    ),
    Case(
        "local volumes with close capacity are preferred (multiple pvcs)",
        make_pod("pod-a").with_pvc_volume("pvc-0").with_pvc_volume("pvc-1").pod,
        THREE_NODES,
        [
            make_pvc("pvc-0", WAIT_SC).with_request_storage("50Gi").obj,
            make_pvc("pvc-1", WAIT_HDD_SC).with_request_storage("100Gi").obj,
        ],
        [
            local_pv("pv-a-0", WAIT_SC, "200Gi", "node-a"),
            local_pv("pv-a-1", WAIT_SC, "200Gi", "node-a"),
            local_pv("pv-a-2", WAIT_HDD_SC, "200Gi", "node-a"),
            local_pv("pv-a-3", WAIT_HDD_SC, "200Gi", "node-a"),
            local_pv("pv-b-0", WAIT_SC, "100Gi", "node-b"),
            local_pv("pv-b-1", WAIT_SC, "100Gi", "node-b"),
            local_pv("pv-b-2", WAIT_HDD_SC, "100Gi", "node-b"),
            local_pv("pv-b-3", WAIT_HDD_SC, "100Gi", "node-b"),
        ],
        scoring=True,
        state=State(
            [],
            ["pvc-0", "pvc-1"],
            {
                WAIT_HDD_SC: ["pv-a-2", "pv-a-3", "pv-b-2", "pv-b-3"],
                WAIT_SC: ["pv-a-0", "pv-a-1", "pv-b-0", "pv-b-1"],
            },
        ),
        filter=[None, None, BIND],
        scores=[63, 25, 0],
    ),
    Case(
        "zonal volumes with close capacity are preferred",
        make_pod("pod-a").with_pvc_volume("pvc-a").pod,
        ZONAL_NODES,
        [make_pvc("pvc-a", WAIT_SC).with_request_storage("50Gi").obj],
        ZONAL_PVS,
        scoring=True,
        state=ZONAL_STATE,
        filter=[None, None, None, None, BIND, BIND],
        scores=[75, 75, 50, 50, 0, 0],
    ),
    Case(
        "zonal volumes with close capacity are preferred (StorageCapacityScoring disabled)",
        make_pod("pod-a").with_pvc_volume("pvc-a").pod,
        ZONAL_NODES,
        [make_pvc("pvc-a", WAIT_SC).with_request_storage("50Gi").obj],
        ZONAL_PVS,
        state=ZONAL_STATE,
        filter=[None, None, None, None, BIND, BIND],
        pre_score_skip=True,
    ),
    Case(
        "zonal volumes with close capacity are preferred (custom shape)",
        make_pod("pod-a").with_pvc_volume("pvc-a").pod,
        ZONAL_NODES,
        [make_pvc("pvc-a", WAIT_SC).with_request_storage("50Gi").obj],
        ZONAL_PVS,
        scoring=True,
        args=VolumeBindingArgs(
            bind_timeout_seconds=300,
            shape=[
                UtilizationShapePoint(utilization=0, score=0),
                UtilizationShapePoint(utilization=50, score=3),
                UtilizationShapePoint(utilization=100, score=5),
            ],
        ),
        state=ZONAL_STATE,
        filter=[None, None, None, None, BIND, BIND],
        scores=[15, 15, 30, 30, 0, 0],
    ),
    Case(
        "storage capacity score",
        make_pod("pod-a").with_pvc_volume("pvc-dynamic").pod,
        LABELLED_NODES,
        [make_pvc("pvc-dynamic", WAIT_SC_WITH_STORAGE_CAPACITY).with_request_storage("10Gi").obj],
        capacities=[
            node_capacity("node-a", "100Gi"),
            node_capacity("node-b", "50Gi"),
            node_capacity("node-c", "10Gi"),
        ],
        scoring=True,
        state=State([], ["pvc-dynamic"], {WAIT_SC_WITH_STORAGE_CAPACITY: []}),
        filter=[None, None, None],
        scores=[90, 80, 0],
    ),
    Case(
        "storage capacity score with static binds",
        make_pod("pod-a").with_pvc_volume("pvc-dynamic").with_pvc_volume("pvc-static").pod,
        LABELLED_NODES,
        [
            make_pvc("pvc-dynamic", WAIT_SC_WITH_STORAGE_CAPACITY).with_request_storage("10Gi").obj,
            make_pvc("pvc-static", WAIT_SC).with_request_storage("50Gi").obj,
        ],
        [
            local_pv("pv-static-a", WAIT_SC, "100Gi", "node-a"),
            local_pv("pv-static-b", WAIT_SC, "100Gi", "node-b"),
            local_pv("pv-static-c", WAIT_SC, "100Gi", "node-c"),
        ],
        capacities=[
            node_capacity("node-a", "100Gi"),
            node_capacity("node-b", "50Gi"),
            node_capacity("node-c", "10Gi"),
        ],
        scoring=True,
        state=State(
            [],
            ["pvc-dynamic", "pvc-static"],
            {WAIT_SC: ["pv-static-a", "pv-static-b", "pv-static-c"], WAIT_SC_WITH_STORAGE_CAPACITY: []},
        ),
        filter=[None, None, None],
        scores=[50, 50, 50],
    ),
    Case(
        "dynamic provisioning with multiple PVCs of the same StorageClass",
        make_pod("pod-a").with_pvc_volume("pvc-dynamic-0").with_pvc_volume("pvc-dynamic-1").pod,
        [node("node-a", nodeKey="node-a")],
        [
            make_pvc("pvc-dynamic-0", WAIT_SC_WITH_STORAGE_CAPACITY).with_request_storage("50Gi").obj,
            make_pvc("pvc-dynamic-1", WAIT_SC_WITH_STORAGE_CAPACITY).with_request_storage("50Gi").obj,
        ],
        capacities=[node_capacity("node-a", "100Gi")],
        scoring=True,
        state=State([], ["pvc-dynamic-0", "pvc-dynamic-1"], {WAIT_SC_WITH_STORAGE_CAPACITY: []}),
        filter=[None],
        scores=[0],
    ),
    Case(
        "prefer node with least allocatable",
        make_pod("pod-a").with_pvc_volume("pvc-dynamic").pod,
        LABELLED_NODES,
        [make_pvc("pvc-dynamic", WAIT_SC_WITH_STORAGE_CAPACITY).with_request_storage("10Gi").obj],
        capacities=[
            node_capacity("node-a", "100Gi"),
            node_capacity("node-b", "20Gi"),
            node_capacity("node-c", "10Gi"),
        ],
        scoring=True,
        args=VolumeBindingArgs(
            bind_timeout_seconds=300,
            shape=[
                UtilizationShapePoint(utilization=0, score=0),
                UtilizationShapePoint(utilization=100, score=10),
            ],
        ),
        state=State([], ["pvc-dynamic"], {WAIT_SC_WITH_STORAGE_CAPACITY: []}),
        filter=[None, None, None],
        scores=[10, 50, 100],
    ),
    Case(
        "prefer node with maximum allocatable",
        make_pod("pod-a").with_pvc_volume("pvc-dynamic").pod,
        LABELLED_NODES,
        [make_pvc("pvc-dynamic", WAIT_SC_WITH_STORAGE_CAPACITY).with_request_storage("10Gi").obj],
        capacities=[
            node_capacity("node-a", "100Gi"),
            node_capacity("node-b", "20Gi"),
            node_capacity("node-c", "10Gi"),
        ],
        scoring=True,
        args=VolumeBindingArgs(bind_timeout_seconds=300, shape=DEFAULT_SHAPE),
        state=State([], ["pvc-dynamic"], {WAIT_SC_WITH_STORAGE_CAPACITY: []}),
        filter=[None, None, None],
        scores=[90, 50, 0],
    ),
]


def build(case: Case) -> tuple[VolumeBinding, Any, list[str]]:
    store = MemoryStore()
    for obj in [*CLASSES, csi_driver(DRIVER_WITH_STORAGE_CAPACITY, True), *case.nodes, *case.pvcs, *case.pvs]:
        store.create(dict(obj))
    for obj in case.capacities:
        store.create(dict(obj))
    nodes = [Node.from_dict(n) for n in case.nodes]
    snapshot = build_snapshot(nodes)
    handle = store_handle(store, snapshot)
    handle.feature_gates = {"StorageCapacityScoring": case.scoring}
    args = case.args or VolumeBindingArgs(
        bind_timeout_seconds=300, shape=DEFAULT_SHAPE if case.scoring else None
    )
    return VolumeBinding(args, handle), snapshot, [n.name for n in nodes]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_volume_binding(case: Case) -> None:
    plugin, snapshot, names = build(case)
    state = CycleState()
    result, status = plugin.pre_filter(state, case.pod, snapshot)
    assert result is None  # upstream v1.35 restricts no nodes at PreFilter
    if case.pre_filter is not None:
        assert status is not None
        code, message = case.pre_filter
        assert (status.code, status.message) == (code, message)
        return
    assert status is None
    st = state.read(STATE_KEY)
    want = case.state or State()
    claims = st.claims
    assert [c.name for c in claims.bound_claims] == want.bound
    assert [c.name for c in claims.unbound_claims_delay_binding] == want.delayed
    assert {
        k: sorted(pv.name for pv in v) for k, v in claims.unbound_volumes_delay_binding.items()
    } == want.volumes

    got = node_statuses(plugin.filter_nodes(state, case.pod, snapshot.table), snapshot)
    for name, wanted in zip(names, case.filter, strict=True):
        if wanted is None:
            assert got[name] is None, name
        else:
            st_node = got[name]
            assert st_node is not None, name
            assert (st_node.code, tuple(st_node.reasons)) == (UNRESOLVABLE, wanted), name

    table = snapshot.table
    slots = np.array([table.slot_of[n] for n in names], dtype=np.int64)
    pre_score = plugin.pre_score(state, case.pod, table, slots)
    if case.pre_score_skip:
        assert pre_score is not None and pre_score.code == Code.SKIP
        return
    assert pre_score is None
    assert case.scores is not None
    assert plugin.score_nodes(state, case.pod, table, slots).tolist() == case.scores


# -- Reserve / Unreserve through the assume caches --------------------------------------------------


def _two_claims_one_volume() -> tuple[VolumeBinding, Any, Pod, Pod]:
    case = Case(
        "one volume",
        make_pod("pod-a").with_pvc_volume("pvc-a").pod,
        [node("node-a")],
        [make_pvc("pvc-a", WAIT_SC).obj, make_pvc("pvc-b", WAIT_SC).obj],
        [local_pv("pv-a", WAIT_SC, "1Gi", "node-a")],
    )
    plugin, snapshot, _ = build(case)
    return plugin, snapshot, case.pod, make_pod("pod-b").with_pvc_volume("pvc-b").pod


def _filter(plugin: VolumeBinding, pod: Pod, snapshot: Any, state: CycleState) -> dict[str, Any]:
    _, status = plugin.pre_filter(state, pod, snapshot)
    assert status is None
    return node_statuses(plugin.filter_nodes(state, pod, snapshot.table), snapshot)


def test_a_reserved_volume_is_not_offered_to_the_next_pod() -> None:
    plugin, snapshot, first, second = _two_claims_one_volume()
    state_a = CycleState()
    assert _filter(plugin, first, snapshot, state_a) == {"node-a": None}
    assert plugin.reserve(state_a, first, "node-a") is None
    # The second pod's cycle sees pv-a pre-bound to pvc-a in the cache.
    state_b = CycleState()
    got = _filter(plugin, second, snapshot, state_b)["node-a"]
    assert got is not None and got.reasons == [ERR_REASON_BIND_CONFLICT]
    # Unreserve gives it back.
    plugin.unreserve(state_a, first, "node-a")
    assert _filter(plugin, second, snapshot, CycleState()) == {"node-a": None}


def test_pre_bind_writes_the_reserved_volume_and_fails_when_nobody_binds_it() -> None:
    plugin, snapshot, first, _ = _two_claims_one_volume()
    state = CycleState()
    _filter(plugin, first, snapshot, state)
    assert plugin.reserve(state, first, "node-a") is None
    assert plugin.handle is not None
    store = plugin.handle.informers.store
    plugin.handle.informers.informer("Pod")  # the pod must exist while its volumes are bound
    store.create(copy.deepcopy(dict(first.raw)))
    plugin.handle.informers.pump()
    status = plugin.pre_bind(state, first, "node-a")
    assert status is not None and status.code == Code.ERROR
    assert status.message == "binding volumes: context deadline exceeded"
    written = store.get("PersistentVolume", None, "pv-a")
    assert written is not None and written["spec"]["claimRef"]["name"] == "pvc-a"


def test_pre_bind_pre_flight_skips_only_when_every_claim_is_bound() -> None:
    plugin, snapshot, first, _ = _two_claims_one_volume()
    # No state (PreFilter found no claims to look at): nothing to write.
    flight = plugin.pre_bind_pre_flight(CycleState(), first, "node-a")
    assert flight is not None and flight.code == Code.SKIP
    state = CycleState()
    _filter(plugin, first, snapshot, state)
    assert plugin.reserve(state, first, "node-a") is None
    # A claim to bind to the volume reserved for it: PreBind acts.
    assert plugin.pre_bind_pre_flight(state, first, "node-a") is None


def test_pods_with_claims_are_not_batched() -> None:
    plugin = VolumeBinding()
    assert plugin.sign_pod(make_pod("plain").with_empty_dir_volume().pod) == ((), None)
    _, status = plugin.sign_pod(make_pod("stateful").with_pvc_volume("data").pod)
    assert status is not None and not status.ok


def test_shape_needs_the_storage_capacity_scoring_gate() -> None:
    handle = store_handle(MemoryStore())
    args = VolumeBindingArgs(shape=DEFAULT_SHAPE)
    with pytest.raises(InputError, match="turn on the feature gate StorageCapacityScoring"):
        VolumeBinding(args, handle)
    handle.feature_gates = {"StorageCapacityScoring": True}
    assert VolumeBinding(args, handle).scorer is not None
    assert VolumeBinding(VolumeBindingArgs(), handle).scorer is not None  # the default shape
