"""NodeResourcesFit: Filter and Score tables after upstream's fit_test.go, least_allocated_test.go and
most_allocated_test.go (kube-scheduler v1.34 semantics).

Filter cases: a node whose free room is smaller than the request rejects the pod with
``Insufficient <resource>`` (``Too many pods`` when its pod count is at the limit); when the request is
bigger than the node's whole allocatable, no preemption can help, so the node is unresolvable.

Score expectations are the upstream formulas in integer arithmetic:
LeastAllocated ``(alloc - requested) * 100 // alloc``, MostAllocated ``min(requested, alloc) * 100 //
alloc``, averaged by weight over the resources the node has; containers without a cpu / memory
request count as 100m / 200Mi when scoring.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kubesched.framework.plugin_args import NodeResourcesFitArgs, ResourceSpec, ScoringStrategy
from kubesched.framework.status import Code, Status
from kubesched.plugins.noderesources.fit import NodeResourcesFit
from kubesched.plugins.testing import (
    Quantity,
    build_snapshot,
    container,
    make_node,
    make_pod,
    run_filter,
    run_score,
)

EXT_A = "example.com/aaa"
EXT_B = "example.com/bbb"
K8S_IO_A = "kubernetes.io/something"
K8S_IO_B = "subdomain.kubernetes.io/something"
HUGE_A = "hugepages-2Mi"
EXT_RES = "abc.com/xyz"


def res(
    cpu: int = 0, mem: int = 0, extra: Mapping[str, int] | None = None, *, eph: int = 0
) -> dict[str, Quantity]:
    """Container requests in upstream's test units: milli-CPU, bytes, plain counts."""
    out: dict[str, Quantity] = {"cpu": f"{cpu}m", "memory": str(mem), "ephemeral-storage": str(eph)}
    for name, value in (extra or {}).items():
        out[name] = str(value)
    return out


def node_resources(cpu: int, mem: int, pods: int, ext_a: int, eph: int, huge_a: int) -> dict[str, Quantity]:
    return {
        "cpu": f"{cpu}m",
        "memory": str(mem),
        "pods": str(pods),
        EXT_A: str(ext_a),
        "ephemeral-storage": str(eph),
        HUGE_A: str(huge_a),
    }


def unschedulable(*reasons: str) -> Status:
    return Status(Code.UNSCHEDULABLE, list(reasons))


def unresolvable(*reasons: str) -> Status:
    return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, list(reasons))


@dataclass
class FitCase:
    name: str
    containers: Sequence[Mapping[str, Quantity] | None] = (None,)
    init_containers: Sequence[dict[str, Any]] = ()
    overhead: Mapping[str, Quantity] | None = None
    pod_requests: Mapping[str, Quantity] | None = None
    existing: Mapping[str, Quantity] | None = field(default_factory=lambda: res())
    args: NodeResourcesFitArgs | None = None
    want: Status | None = None


def inits(*requests: Mapping[str, Quantity]) -> list[dict[str, Any]]:
    return [container(r, name=f"init{i}") for i, r in enumerate(requests)]


def check_fit(case: FitCase, allocatable: Mapping[str, Quantity]) -> None:
    node = make_node("machine", allocatable)
    bound = []
    if case.existing is not None:
        bound.append(make_pod("existing", containers=[case.existing], node_name="machine"))
    snapshot = build_snapshot([node], bound)
    pod = make_pod(
        "incoming",
        containers=case.containers,
        init_containers=case.init_containers,
        overhead=case.overhead,
        pod_requests=case.pod_requests,
    )
    plugin = NodeResourcesFit(case.args)
    assert run_filter(plugin, pod, snapshot) == {"machine": case.want}


# Node: 10m cpu, 20 bytes memory, 32 pods, 5 example.com/aaa, 20 ephemeral-storage, 5 hugepages-2Mi.
ENOUGH_REQUESTS = [
    FitCase("no resources requested always fits", existing=res(10, 20)),
    FitCase(
        "too many resources fails",
        containers=[res(1, 1)],
        existing=res(10, 20),
        want=unschedulable("Insufficient cpu", "Insufficient memory"),
    ),
    FitCase(
        "too many resources fails due to init container cpu",
        containers=[res(1, 1)],
        init_containers=inits(res(3, 1)),
        existing=res(8, 19),
        want=unschedulable("Insufficient cpu"),
    ),
    FitCase(
        "too many resources fails due to highest init container cpu",
        containers=[res(1, 1)],
        init_containers=inits(res(3, 1), res(2, 1)),
        existing=res(8, 19),
        want=unschedulable("Insufficient cpu"),
    ),
    FitCase(
        "too many resources fails due to init container memory",
        containers=[res(1, 1)],
        init_containers=inits(res(1, 3)),
        existing=res(9, 19),
        want=unschedulable("Insufficient memory"),
    ),
    FitCase(
        "too many resources fails due to highest init container memory",
        containers=[res(1, 1)],
        init_containers=inits(res(1, 3), res(1, 2)),
        existing=res(9, 19),
        want=unschedulable("Insufficient memory"),
    ),
    FitCase(
        "init container fits because it's the max, not sum, of containers and init containers",
        containers=[res(1, 1)],
        init_containers=inits(res(1, 1)),
        existing=res(9, 19),
    ),
    FitCase(
        "multiple init containers fit because it's the max, not sum, of containers and init containers",
        containers=[res(1, 1)],
        init_containers=inits(res(1, 1), res(1, 1)),
        existing=res(9, 19),
    ),
    FitCase("both resources fit", containers=[res(1, 1)], existing=res(5, 5)),
    FitCase(
        "one resource memory fits",
        containers=[res(2, 1)],
        existing=res(9, 5),
        want=unschedulable("Insufficient cpu"),
    ),
    FitCase(
        "one resource cpu fits",
        containers=[res(1, 2)],
        existing=res(5, 19),
        want=unschedulable("Insufficient memory"),
    ),
    FitCase("equal edge case", containers=[res(5, 1)], existing=res(5, 19)),
    FitCase(
        "equal edge case for init container",
        containers=[res(4, 1)],
        init_containers=inits(res(5, 1)),
        existing=res(5, 19),
    ),
    FitCase("extended resource fits", containers=[res(extra={EXT_A: 1})]),
    FitCase(
        "extended resource fits for init container",
        containers=[res()],
        init_containers=inits(res(extra={EXT_A: 1})),
    ),
    FitCase(
        "extended resource capacity enforced",
        containers=[res(1, 1, {EXT_A: 10})],
        existing=res(extra={EXT_A: 0}),
        want=unresolvable(f"Insufficient {EXT_A}"),
    ),
    FitCase(
        "extended resource capacity enforced for init container",
        containers=[res()],
        init_containers=inits(res(1, 1, {EXT_A: 10})),
        existing=res(extra={EXT_A: 0}),
        want=unresolvable(f"Insufficient {EXT_A}"),
    ),
    FitCase(
        "extended resource allocatable enforced",
        containers=[res(1, 1, {EXT_A: 1})],
        existing=res(extra={EXT_A: 5}),
        want=unschedulable(f"Insufficient {EXT_A}"),
    ),
    FitCase(
        "extended resource allocatable enforced for init container",
        containers=[res()],
        init_containers=inits(res(1, 1, {EXT_A: 1})),
        existing=res(extra={EXT_A: 5}),
        want=unschedulable(f"Insufficient {EXT_A}"),
    ),
    FitCase(
        "extended resource allocatable enforced for multiple containers",
        containers=[res(1, 1, {EXT_A: 3}), res(1, 1, {EXT_A: 3})],
        existing=res(extra={EXT_A: 2}),
        want=unresolvable(f"Insufficient {EXT_A}"),
    ),
    FitCase(
        "extended resource allocatable admits multiple init containers",
        containers=[res()],
        init_containers=inits(res(1, 1, {EXT_A: 3}), res(1, 1, {EXT_A: 3})),
        existing=res(extra={EXT_A: 2}),
    ),
    FitCase(
        "extended resource allocatable enforced for multiple init containers",
        containers=[res()],
        init_containers=inits(res(1, 1, {EXT_A: 6}), res(1, 1, {EXT_A: 3})),
        existing=res(extra={EXT_A: 2}),
        want=unresolvable(f"Insufficient {EXT_A}"),
    ),
    FitCase(
        "extended resource allocatable enforced for unknown resource",
        containers=[res(1, 1, {EXT_B: 1})],
        want=unresolvable(f"Insufficient {EXT_B}"),
    ),
    FitCase(
        "extended resource allocatable enforced for unknown resource for init container",
        containers=[res()],
        init_containers=inits(res(1, 1, {EXT_B: 1})),
        want=unresolvable(f"Insufficient {EXT_B}"),
    ),
    FitCase(
        "kubernetes.io resource capacity enforced",
        containers=[res(1, 1, {K8S_IO_A: 10})],
        want=unresolvable(f"Insufficient {K8S_IO_A}"),
    ),
    FitCase(
        "kubernetes.io resource capacity enforced for init container",
        containers=[res()],
        init_containers=inits(res(1, 1, {K8S_IO_B: 10})),
        want=unresolvable(f"Insufficient {K8S_IO_B}"),
    ),
    FitCase(
        "hugepages resource capacity enforced",
        containers=[res(1, 1, {HUGE_A: 10})],
        existing=res(extra={HUGE_A: 0}),
        want=unresolvable(f"Insufficient {HUGE_A}"),
    ),
    FitCase(
        "hugepages resource capacity enforced for init container",
        containers=[res()],
        init_containers=inits(res(1, 1, {HUGE_A: 10})),
        existing=res(extra={HUGE_A: 0}),
        want=unresolvable(f"Insufficient {HUGE_A}"),
    ),
    FitCase(
        "hugepages resource allocatable enforced for multiple containers",
        containers=[res(1, 1, {HUGE_A: 3}), res(1, 1, {HUGE_A: 3})],
        existing=res(extra={HUGE_A: 2}),
        want=unresolvable(f"Insufficient {HUGE_A}"),
    ),
    FitCase(
        "skip checking ignored extended resource",
        containers=[res(1, 1, {EXT_B: 1})],
        args=NodeResourcesFitArgs(ignored_resources=[EXT_B]),
    ),
    FitCase(
        "resources + pod overhead fits",
        containers=[res(1, 1)],
        overhead={"cpu": "3m", "memory": "13"},
        existing=res(5, 5),
    ),
    FitCase(
        "requests + overhead does not fit for memory",
        containers=[res(1, 1)],
        overhead={"cpu": "1m", "memory": "15"},
        existing=res(5, 5),
        want=unschedulable("Insufficient memory"),
    ),
    FitCase(
        "skip checking ignored extended resource via resource groups",
        containers=[res(1, 1, {EXT_B: 1, K8S_IO_A: 1})],
        args=NodeResourcesFitArgs(ignored_resource_groups=["example.com"]),
        want=unresolvable(f"Insufficient {K8S_IO_A}"),
    ),
    FitCase(
        "skip checking extended resource request with quantity zero via resource groups",
        containers=[res(1, 1, {EXT_A: 0})],
        existing=res(extra={EXT_A: 6}),
    ),
    FitCase(
        "skip checking resource request with quantity zero",
        containers=[res(extra={EXT_A: 1})],
        existing=res(20, 30, {EXT_A: 1}),
    ),
    # PodLevelResources is beta and on by default in v1.34.
    FitCase(
        "both pod-level and container-level resources fit",
        containers=[res(1, 1)],
        pod_requests={"cpu": "1m", "memory": "2"},
        existing=res(5, 5),
    ),
    FitCase(
        "pod-level cpu resource not fit",
        containers=[res(1, 1)],
        pod_requests={"cpu": "7m", "memory": "2"},
        existing=res(5, 5),
        want=unschedulable("Insufficient cpu"),
    ),
    FitCase(
        "pod-level memory resource not fit",
        containers=[res(1, 1)],
        pod_requests={"cpu": "3m", "memory": "2"},
        existing=res(5, 19),
        want=unschedulable("Insufficient memory"),
    ),
    FitCase(
        "one pod-level cpu resource fits and all init and non-init containers resources fit",
        containers=[res(1, 1)],
        init_containers=inits(res(1, 1)),
        pod_requests={"cpu": "3m", "memory": "2"},
        existing=res(5, 19),
        want=unschedulable("Insufficient memory"),
    ),
]


@pytest.mark.parametrize("case", ENOUGH_REQUESTS, ids=lambda c: c.name)
def test_enough_requests(case: FitCase) -> None:
    check_fit(case, node_resources(10, 20, 32, 5, 20, 5))


# Node: 10m cpu, 20 bytes memory and room for a single pod, which is already taken.
NOT_ENOUGH_PODS = [
    FitCase(
        "even without specified resources, predicate fails when there's no space for additional pod",
        existing=res(10, 20),
        want=unschedulable("Too many pods"),
    ),
    FitCase(
        "even if both resources fit, predicate fails when there's no space for additional pod",
        containers=[res(1, 1)],
        existing=res(5, 5),
        want=unschedulable("Too many pods"),
    ),
    FitCase(
        "even for equal edge case, predicate fails when there's no space for additional pod",
        containers=[res(5, 1)],
        existing=res(5, 19),
        want=unschedulable("Too many pods"),
    ),
    FitCase(
        "even for equal edge case, predicate fails when there's no space for additional pod due to init "
        "container",
        containers=[res(5, 1)],
        init_containers=inits(res(5, 1)),
        existing=res(5, 19),
        want=unschedulable("Too many pods"),
    ),
]


@pytest.mark.parametrize("case", NOT_ENOUGH_PODS, ids=lambda c: c.name)
def test_not_enough_requests(case: FitCase) -> None:
    check_fit(case, node_resources(10, 20, 1, 0, 0, 0))


def test_too_many_pods_comes_first_and_keeps_resource_reasons() -> None:
    # fitsRequest appends "Too many pods" first and keeps checking resources; the node is unresolvable
    # because 11m cpu exceeds the node's whole 10m.
    case = FitCase("pods and cpu", containers=[res(11, 1)], existing=res(1, 1))
    case.want = unresolvable("Too many pods", "Insufficient cpu")
    check_fit(case, node_resources(10, 20, 1, 0, 0, 0))


STORAGE_REQUESTS = [
    FitCase("empty storage requested, and pod fits", containers=[res(1, 1)], existing=res(2, 10)),
    FitCase(
        "storage ephemeral local storage request exceeds allocatable",
        containers=[res(eph=25)],
        existing=res(2, 2),
        want=unresolvable("Insufficient ephemeral-storage"),
    ),
    FitCase("ephemeral local storage is sufficient", containers=[res(eph=5)], existing=res(2, 2, eph=10)),
    FitCase("pod fits", containers=[res(eph=10)], existing=res(2, 2)),
    FitCase(
        "ephemeral storage resolvable when others use it",
        containers=[res(eph=15)],
        existing=res(2, 2, eph=10),
        want=unschedulable("Insufficient ephemeral-storage"),
    ),
]


@pytest.mark.parametrize("case", STORAGE_REQUESTS, ids=lambda c: c.name)
def test_storage_requests(case: FitCase) -> None:
    check_fit(case, node_resources(10, 20, 32, 5, 20, 5))


def sidecar_pod_case(name: str, request: int | None, sidecar: int | None, want: Status | None) -> FitCase:
    regular = None if request is None else {"cpu": f"{request}m"}
    side = None if sidecar is None else {"cpu": f"{sidecar}m"}
    return FitCase(
        name,
        containers=[regular],
        init_containers=[container(side, name="restartable-init", restart_always=True)],
        existing=None,
        want=want,
    )


# Node: 2m cpu, no memory, one pod; SidecarContainers is GA, so sidecars add to the regular containers.
RESTARTABLE_INIT = [
    FitCase("allow pod without restartable init containers", existing=None),
    sidecar_pod_case("allow pod with restartable init containers", None, None, None),
    sidecar_pod_case(
        "allow pod if the total requested resources do not exceed the node's allocatable resources",
        1,
        1,
        None,
    ),
    sidecar_pod_case(
        "not allow pod if the total requested resources do exceed the node's allocatable resources",
        1,
        2,
        unresolvable("Insufficient cpu"),
    ),
]


@pytest.mark.parametrize("case", RESTARTABLE_INIT, ids=lambda c: c.name)
def test_restartable_init_containers(case: FitCase) -> None:
    check_fit(case, node_resources(2, 0, 1, 0, 0, 0))


def test_unresolvable_only_on_nodes_too_small() -> None:
    # The same request is resolvable on a big busy node and unresolvable on a small one.
    big = make_node("big", {"cpu": "4", "memory": "8Gi"})
    small = make_node("small", {"cpu": "1", "memory": "8Gi"})
    roomy = make_node("roomy", {"cpu": "4", "memory": "8Gi"})
    busy = make_pod("busy", containers=[{"cpu": "3"}], node_name="big")
    snapshot = build_snapshot([big, small, roomy], [busy])
    pod = make_pod("p", containers=[{"cpu": "2"}])
    got = run_filter(NodeResourcesFit(None), pod, snapshot)
    assert got == {
        "big": unschedulable("Insufficient cpu"),
        "small": unresolvable("Insufficient cpu"),
        "roomy": None,
    }


def test_init_container_limit_defaults_request() -> None:
    # A limit without a request defaults the request to the limit (API defaulting).
    snapshot = build_snapshot([make_node("n", {"cpu": "1", "memory": "1Gi"})])
    pod = make_pod("p", containers=[None], init_containers=[container(limits={"cpu": "2"})])
    assert run_filter(NodeResourcesFit(None), pod, snapshot) == {"n": unresolvable("Insufficient cpu")}


def test_filter_without_pre_filter_state_is_an_error() -> None:
    # Upstream TestPreFilterDisabled: Filter needs what PreFilter wrote into the cycle state.
    from kubesched.framework.cycle_state import CycleState

    snapshot = build_snapshot([make_node("n", {"cpu": "1"})])
    with pytest.raises(KeyError, match="PreFilterNodeResourcesFit"):
        NodeResourcesFit(None).filter_nodes(CycleState(), make_pod("p"), snapshot.table)


# -- Score -------------------------------------------------------------------------------------------


def strategy_args(kind: str, resources: Sequence[tuple[str, int]] | None = None) -> NodeResourcesFitArgs:
    specs = [ResourceSpec(name=n, weight=w) for n, w in (resources or [("cpu", 1), ("memory", 1)])]
    return NodeResourcesFitArgs(scoring_strategy=ScoringStrategy(type=kind, resources=specs))


@dataclass
class ScoreCase:
    name: str
    pod: Sequence[Mapping[str, Quantity] | None]
    nodes: Sequence[tuple[str, Mapping[str, Quantity] | None]]
    existing: Sequence[tuple[str, Mapping[str, Quantity] | None]]
    want: dict[str, int]
    resources: Sequence[tuple[str, int]] | None = None
    #: index into ``existing`` -> requests of a sidecar (restartable init container) of that pod
    sidecars: Mapping[int, Mapping[str, Quantity]] = field(default_factory=dict)


def cores(cpu: int | str, mem: int | str, **extra: str) -> dict[str, Quantity]:
    """Node sizes / requests the way the upstream score tables write them ("4000" cpu = 4000 cores)."""
    out: dict[str, Quantity] = {"cpu": str(cpu), "memory": str(mem)}
    out.update(extra)
    return out


EXT_4 = {EXT_RES: "4"}
EXT_10 = {EXT_RES: "10"}
# Upstream's requested pod in many cases: two containers, 1000+2000 cores and 2000+3000 bytes.
TWO_CONTAINERS: list[Mapping[str, Quantity] | None] = [cores(1000, 2000), cores(2000, 3000)]
# Upstream builds "nothing requested" pods without any container; ours always have one, so they ask
# explicitly for zero (an explicit zero is not "missing", so the 100m / 200Mi scoring default does not
# apply, exactly as for a pod with no containers).
NOTHING: list[Mapping[str, Quantity] | None] = [cores(0, 0)]
EXTENDED_SET = [("cpu", 1), ("memory", 1), (EXT_RES, 1)]


def check_score(kind: str, case: ScoreCase) -> None:
    nodes = [make_node(name, alloc) for name, alloc in case.nodes]
    bound = []
    for i, (node_name, req) in enumerate(case.existing):
        init = []
        if i in case.sidecars:
            init = [container(case.sidecars[i], name="sidecar", restart_always=True)]
        bound.append(make_pod(f"e{i}", containers=[req], init_containers=init, node_name=node_name))
    snapshot = build_snapshot(nodes, bound)
    pod = make_pod("incoming", containers=case.pod)
    plugin = NodeResourcesFit(strategy_args(kind, case.resources))
    assert run_score(plugin, pod, snapshot) == case.want


LEAST_ALLOCATED = [
    ScoreCase(
        "nothing scheduled, nothing requested",
        NOTHING,
        [("node1", cores(4000, 10000)), ("node2", cores(4000, 10000))],
        [],
        {"node1": 100, "node2": 100},
    ),
    ScoreCase(
        # node1: cpu (4000-3000)*100/4000 = 25, mem (10000-5000)*100/10000 = 50 -> 37
        # node2: cpu (6000-3000)*100/6000 = 50, mem 50 -> 50
        "nothing scheduled, resources requested, differently sized nodes",
        TWO_CONTAINERS,
        [("node1", cores(4000, 10000)), ("node2", cores(6000, 10000))],
        [],
        {"node1": 37, "node2": 50},
    ),
    ScoreCase(
        "no resources requested, pods scheduled",
        NOTHING,
        [("node1", cores(4000, 10000)), ("node2", cores(4000, 10000))],
        [("node1", cores(0, 0)), ("node1", cores(0, 0)), ("node2", cores(0, 0)), ("node2", cores(0, 0))],
        {"node1": 100, "node2": 100},
    ),
    ScoreCase(
        # node1: cpu (10000-6000)*100/10000 = 40, mem 100 -> 70
        # node2: cpu 40, mem (20000-5000)*100/20000 = 75 -> 57
        "no resources requested, pods scheduled with resources",
        NOTHING,
        [("node1", cores(10000, 20000)), ("node2", cores(10000, 20000))],
        [
            ("node1", cores(3000, 0)),
            ("node1", cores(3000, 0)),
            ("node2", cores(3000, 0)),
            ("node2", cores(3000, 5000)),
        ],
        {"node1": 70, "node2": 57},
    ),
    ScoreCase(
        # node1: cpu 40, mem (20000-5000)*100/20000 = 75 -> 57; node2: cpu 40, mem 50 -> 45
        "resources requested, pods scheduled with resources",
        TWO_CONTAINERS,
        [("node1", cores(10000, 20000)), ("node2", cores(10000, 20000))],
        [("node1", cores(3000, 0)), ("node2", cores(3000, 5000))],
        {"node1": 57, "node2": 45},
    ),
    ScoreCase(
        # node2: cpu 40, mem (50000-10000)*100/50000 = 80 -> 60
        "resources requested, pods scheduled with resources, differently sized nodes",
        TWO_CONTAINERS,
        [("node1", cores(10000, 20000)), ("node2", cores(10000, 50000))],
        [("node1", cores(3000, 0)), ("node2", cores(3000, 5000))],
        {"node1": 57, "node2": 60},
    ),
    ScoreCase(
        # cpu 6000 > 4000 scores 0; node1 mem 100 -> 50; node2 mem 50 -> 25
        "requested resources exceed node capacity",
        [cores(3000, 0)],
        [("node1", cores(4000, 10000)), ("node2", cores(4000, 10000))],
        [("node1", cores(3000, 0)), ("node2", cores(3000, 5000))],
        {"node1": 50, "node2": 25},
    ),
    ScoreCase(
        "zero node resources, pods scheduled with resources",
        NOTHING,
        [("node1", None), ("node2", None)],
        [("node1", cores(3000, 0)), ("node2", cores(3000, 5000))],
        {"node1": 0, "node2": 0},
    ),
    ScoreCase(
        # node1: (25*1 + 50*2) / 3 = 41; node2: (50*1 + 50*2) / 3 = 50
        "nothing scheduled, resources requested with different weight on CPU and memory",
        TWO_CONTAINERS,
        [("node1", cores(4000, 10000)), ("node2", cores(6000, 10000))],
        [],
        {"node1": 41, "node2": 50},
        resources=[("memory", 2), ("cpu", 1)],
    ),
    ScoreCase(
        "bypass extended resource if the pod does not request",
        TWO_CONTAINERS,
        [("node1", cores(6000, 10000)), ("node2", cores(6000, 10000, **EXT_4))],
        [],
        {"node1": 50, "node2": 50},
        resources=EXTENDED_SET,
    ),
    ScoreCase(
        # extended: node1 (4-2)*100/4 = 50, node2 (10-2)*100/10 = 80 -> (50+50+50)/3, (50+50+80)/3
        "honor extended resource if the pod requests",
        [cores(3000, 5000, **{EXT_RES: "2"})],
        [("node1", cores(6000, 10000, **EXT_4)), ("node2", cores(6000, 10000, **EXT_10))],
        [],
        {"node1": 50, "node2": 60},
        resources=EXTENDED_SET,
    ),
    ScoreCase(
        # cpu 50, mem 60 on both; the extended resource is skipped (not requested / not on the node)
        "if the node doesn't have a resource",
        [cores(3000, 4000)],
        [("node1", cores(6000, 10000)), ("node2", cores(6000, 10000, **EXT_4))],
        [],
        {"node1": 55, "node2": 55},
        resources=[(EXT_RES, 2), ("cpu", 1), ("memory", 1)],
    ),
    ScoreCase(
        # TestFitScore: node1 cpu (4000-3000)*100/4000 = 25, mem (10000-6000)*100/10000 = 40 -> 32
        # node2 cpu (6000-2000)*100/6000 = 66, mem 60 -> 63
        "fit score LeastAllocated",
        [cores(1000, 2000)],
        [("node1", cores(4000, 10000)), ("node2", cores(6000, 10000))],
        [("node1", cores(2000, 4000)), ("node2", cores(1000, 2000))],
        {"node1": 32, "node2": 63},
    ),
    ScoreCase(
        # TestFitScore with a sidecar (1000/2000) on node1's pod: node1 cpu 25, mem 40 -> 32;
        # node2 cpu (4000-2000)*100/4000 = 50, mem 60 -> 55
        "fit score LeastAllocated with sidecar container",
        [cores(1000, 2000)],
        [("node1", cores(4000, 10000)), ("node2", cores(4000, 10000))],
        [("node1", cores(1000, 2000)), ("node2", cores(1000, 2000))],
        {"node1": 32, "node2": 55},
        sidecars={0: cores(1000, 2000)},
    ),
    ScoreCase(
        # Containers without requests count 100m / 200Mi. node1 holds two such pods:
        # cpu 300m > 250m scores 0, mem (1000-600)*100/1000 = 40 -> 20;
        # node2: cpu (250-100)*100/250 = 60, mem (1000-200)*100/1000 = 80 -> 70
        "no resources requested, pods scheduled, nonzero request for resource",
        [None],
        [("node1", cores("250m", "1000Mi")), ("node2", cores("250m", "1000Mi"))],
        [("node1", None), ("node1", None)],
        {"node1": 20, "node2": 70},
    ),
]


@pytest.mark.parametrize("case", LEAST_ALLOCATED, ids=lambda c: c.name)
def test_least_allocated_score(case: ScoreCase) -> None:
    check_score("LeastAllocated", case)


MOST_ALLOCATED = [
    ScoreCase(
        "nothing scheduled, nothing requested",
        NOTHING,
        [("node1", cores(4000, 10000)), ("node2", cores(4000, 10000))],
        [],
        {"node1": 0, "node2": 0},
    ),
    ScoreCase(
        # node1: cpu 3000*100/4000 = 75, mem 5000*100/10000 = 50 -> 62; node2: 50, 50 -> 50
        "nothing scheduled, resources requested, differently sized nodes",
        TWO_CONTAINERS,
        [("node1", cores(4000, 10000)), ("node2", cores(6000, 10000))],
        [],
        {"node1": 62, "node2": 50},
    ),
    ScoreCase(
        # node1: cpu 6000*100/10000 = 60, mem 0 -> 30; node2: 60, 5000*100/20000 = 25 -> 42
        "no resources requested, pods scheduled with resources",
        NOTHING,
        [("node1", cores(10000, 20000)), ("node2", cores(10000, 20000))],
        [
            ("node1", cores(3000, 0)),
            ("node1", cores(3000, 0)),
            ("node2", cores(3000, 0)),
            ("node2", cores(3000, 5000)),
        ],
        {"node1": 30, "node2": 42},
    ),
    ScoreCase(
        # node1: 60, 25 -> 42; node2: 60, 10000*100/20000 = 50 -> 55
        "resources requested, pods scheduled with resources",
        TWO_CONTAINERS,
        [("node1", cores(10000, 20000)), ("node2", cores(10000, 20000))],
        [("node1", cores(3000, 0)), ("node2", cores(3000, 5000))],
        {"node1": 42, "node2": 55},
    ),
    ScoreCase(
        # node1: cpu 5000/5000 = 100, mem 9000*100/10000 = 90 -> 95; node2: 50, 100 -> 75
        "resources requested equal node capacity",
        [cores(2000, 4000), cores(3000, 5000)],
        [("node1", cores(5000, 10000)), ("node2", cores(10000, 9000))],
        [],
        {"node1": 95, "node2": 75},
    ),
    ScoreCase(
        # node1: (75*1 + 50*2) / 3 = 58; node2: (50 + 100) / 3 = 50
        "nothing scheduled, resources requested with different weight on CPU and memory",
        TWO_CONTAINERS,
        [("node1", cores(4000, 10000)), ("node2", cores(6000, 10000))],
        [],
        {"node1": 58, "node2": 50},
        resources=[("memory", 2), ("cpu", 1)],
    ),
    ScoreCase(
        # Non-zero defaults: node1 cpu 300m capped at 250m -> 100, mem 600Mi/1000Mi -> 60 -> 80;
        # node2: cpu 100/250 -> 40, mem 200/1000 -> 20 -> 30
        "no resources requested, pods scheduled, nonzero request for resource",
        [None],
        [("node1", cores("250m", "1000Mi")), ("node2", cores("250m", "1000Mi"))],
        [("node1", None), ("node1", None)],
        {"node1": 80, "node2": 30},
    ),
    ScoreCase(
        "bypass extended resource if the pod does not request",
        TWO_CONTAINERS,
        [("node1", cores(6000, 10000)), ("node2", cores(6000, 10000, **EXT_4))],
        [],
        {"node1": 50, "node2": 50},
        resources=EXTENDED_SET,
    ),
    ScoreCase(
        # extended: node1 2*100/4 = 50, node2 2*100/10 = 20 -> (50+50+50)/3, (50+50+20)/3
        "honor extended resource if the pod request",
        [cores(3000, 5000, **{EXT_RES: "2"})],
        [("node1", cores(6000, 10000, **EXT_4)), ("node2", cores(6000, 10000, **EXT_10))],
        [],
        {"node1": 50, "node2": 40},
        resources=EXTENDED_SET,
    ),
    ScoreCase(
        # cpu 3000*100/6000 = 50, mem 4000*100/10000 = 40 -> 45 on both
        "if the node doesn't have a resource",
        [cores(3000, 4000)],
        [("node1", cores(6000, 10000)), ("node2", cores(6000, 10000, **EXT_4))],
        [],
        {"node1": 45, "node2": 45},
        resources=[(EXT_RES, 2), ("cpu", 1), ("memory", 1)],
    ),
    ScoreCase(
        # TestFitScore: node1 cpu 3000*100/4000 = 75, mem 6000*100/10000 = 60 -> 67;
        # node2 cpu 2000*100/6000 = 33, mem 40 -> 36
        "fit score MostAllocated",
        [cores(1000, 2000)],
        [("node1", cores(4000, 10000)), ("node2", cores(6000, 10000))],
        [("node1", cores(2000, 4000)), ("node2", cores(1000, 2000))],
        {"node1": 67, "node2": 36},
    ),
    ScoreCase(
        # node1 (with sidecar): 75, 60 -> 67; node2: cpu 2000*100/4000 = 50, mem 40 -> 45
        "fit score MostAllocated with sidecar container",
        [cores(1000, 2000)],
        [("node1", cores(4000, 10000)), ("node2", cores(4000, 10000))],
        [("node1", cores(1000, 2000)), ("node2", cores(1000, 2000))],
        {"node1": 67, "node2": 45},
        sidecars={0: cores(1000, 2000)},
    ),
]


@pytest.mark.parametrize("case", MOST_ALLOCATED, ids=lambda c: c.name)
def test_most_allocated_score(case: ScoreCase) -> None:
    check_score("MostAllocated", case)


def test_default_strategy_is_least_allocated_on_cpu_and_memory() -> None:
    snapshot = build_snapshot(
        [make_node("node1", cores(4000, 10000)), make_node("node2", cores(6000, 10000))],
        [
            make_pod("a", containers=[cores(2000, 4000)], node_name="node1"),
            make_pod("b", containers=[cores(1000, 2000)], node_name="node2"),
        ],
    )
    pod = make_pod("p", containers=[cores(1000, 2000)])
    assert run_score(NodeResourcesFit(None), pod, snapshot) == {"node1": 32, "node2": 63}


def test_overhead_counts_for_scoring() -> None:
    # 1 core requested + 1 core overhead on a 4-core node: (4000-2000)*100/4000 = 50;
    # memory 1Gi + 1Gi of 8Gi: (8-2)*100/8 = 75 -> (50 + 75) / 2 = 62
    snapshot = build_snapshot([make_node("n", {"cpu": "4", "memory": "8Gi"})])
    pod = make_pod("p", containers=[{"cpu": "1", "memory": "1Gi"}], overhead={"cpu": "1", "memory": "1Gi"})
    assert run_score(NodeResourcesFit(None), pod, snapshot) == {"n": 62}


def _reference_score(
    kind: str, resources: Sequence[tuple[str, int]], alloc: Mapping[str, int], used: Mapping[str, int]
) -> int:
    """Upstream's per-node scorer in Python integers: resources the node lacks are left out, the rest
    averaged by weight."""
    total = weights = 0
    for name, weight in resources:
        a = alloc.get(name, 0)
        if a == 0:
            continue
        r = used.get(name, 0)
        score = (0 if r > a else (a - r) * 100 // a) if kind == "LeastAllocated" else min(r, a) * 100 // a
        total += score * weight
        weights += weight
    return total // weights if weights else 0


@settings(max_examples=60, deadline=None)
@given(
    st.sampled_from(["LeastAllocated", "MostAllocated"]),
    st.lists(st.tuples(st.integers(0, 8), st.integers(0, 3)), min_size=1, max_size=6),
    st.integers(1, 5),
    st.integers(1, 5),
    st.integers(1, 3),
)
def test_scores_match_the_per_node_formula(
    kind: str, nodes: list[tuple[int, int]], cpu_weight: int, memory_weight: int, want: int
) -> None:
    """Nodes with and without memory, any weights: the vectorized score is upstream's per-node one."""
    resources = [("cpu", cpu_weight), ("memory", memory_weight)]
    snapshot = build_snapshot(
        [make_node(f"n{i}", {"cpu": str(cpu), "memory": str(mem)}) for i, (cpu, mem) in enumerate(nodes)]
    )
    pod = make_pod("p", containers=[{"cpu": str(want), "memory": str(want)}])
    got = run_score(NodeResourcesFit(strategy_args(kind, resources)), pod, snapshot)
    expected = {
        f"n{i}": _reference_score(
            kind, resources, {"cpu": cpu * 1000, "memory": mem}, {"cpu": want * 1000, "memory": want}
        )
        for i, (cpu, mem) in enumerate(nodes)
    }
    assert got == expected
