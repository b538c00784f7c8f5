"""A cycle judges Filters in chunks of rows from its rotating start and stops once it has found
enough feasible nodes; it must find exactly what judging every row finds (upstream's loop over
the nodes from ``nextStartNodeIndex``): the same feasible nodes in the same order, the same number
of nodes processed (so the same next start index), and when too few fit, the same message counted
over every node."""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kubesched.api.objects import Pod
from kubesched.framework.config import config_from_dict
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.diagnosis import FitError
from kubesched.framework.interfaces import RowFilterPlugin
from kubesched.framework.runtime import Framework
from kubesched.framework.status import Status
from kubesched.runtime.plugin_loading import plugin_registry, register
from kubesched.sim.simulation import Simulation

API = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration"}
ZONE = "topology.kubernetes.io/zone"
TAINT = {"key": "dedicated", "value": "infra", "effect": "NoSchedule"}


def node(i: int, cpu: str, *, cordoned: bool, tainted: bool, ssd: bool) -> dict[str, Any]:
    labels = {"kubernetes.io/hostname": f"n{i}", ZONE: f"zone-{i % 3}"}
    if ssd:
        labels["disk"] = "ssd"
    spec: dict[str, Any] = {}
    if cordoned:
        spec["unschedulable"] = True
    if tainted:
        spec["taints"] = [TAINT]
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": f"n{i}", "labels": labels},
        "spec": spec,
        "status": {"allocatable": {"cpu": cpu, "memory": "8Gi", "pods": "110"}},
    }


def pod(cpu: str, *, ssd: bool, tolerate: bool, pinned: list[str] | None, spread: bool) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}]}
    if ssd:
        spec["nodeSelector"] = {"disk": "ssd"}
    if tolerate:
        spec["tolerations"] = [{"key": "dedicated", "operator": "Exists", "effect": "NoSchedule"}]
    if pinned is not None:
        # A PreFilterResult: NodeAffinity narrows the search to these nodes.
        field = {"key": "metadata.name", "operator": "In", "values": pinned}
        spec["affinity"] = {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [{"matchFields": [field]}]
                }
            }
        }
    if spread:
        spec["topologySpreadConstraints"] = [
            {
                "maxSkew": 1,
                "topologyKey": ZONE,
                "whenUnsatisfiable": "DoNotSchedule",
                "labelSelector": {"matchLabels": {"app": "walk"}},
            }
        ]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "namespace": "default", "uid": "uid-p", "labels": {"app": "walk"}},
        "spec": spec,
    }


@st.composite
def cycles(draw: st.DrawFn) -> tuple[list[dict[str, Any]], list[dict[str, Any]], dict[str, Any], int]:
    n = draw(st.integers(101, 400))
    cordon_rate = draw(st.sampled_from([0.0, 0.1, 0.6, 0.97, 1.0]))
    taint_rate = draw(st.sampled_from([0.0, 0.3, 0.95]))
    ssd_rate = draw(st.sampled_from([0.0, 0.05, 0.5, 1.0]))
    flags = st.tuples(st.sampled_from(["1", "2", "4"]), st.floats(0, 1), st.floats(0, 1), st.floats(0, 1))
    rows = draw(st.lists(flags, min_size=n, max_size=n))
    nodes = [
        node(i, cpu, cordoned=c < cordon_rate, tainted=t < taint_rate, ssd=s < ssd_rate)
        for i, (cpu, c, t, s) in enumerate(rows)
    ]
    # Pods already running in one zone: a spread constraint then rejects that zone's nodes.
    placed = [
        {
            **pod("100m", ssd=False, tolerate=True, pinned=None, spread=False),
            "metadata": {
                "name": f"e{k}",
                "namespace": "default",
                "uid": f"uid-e{k}",
                "labels": {"app": "walk"},
            },
        }
        for k in range(draw(st.integers(0, 2)))
    ]
    for k, existing in enumerate(placed):
        existing["spec"]["nodeName"] = f"n{3 * k}"
    pinned = None
    if draw(st.booleans()):
        pinned = sorted(draw(st.sets(st.sampled_from([f"n{i}" for i in range(n)]), min_size=1, max_size=n)))
    the_pod = pod(
        draw(st.sampled_from(["100m", "1500m", "3", "5"])),
        ssd=draw(st.booleans()),
        tolerate=draw(st.booleans()),
        pinned=pinned,
        spread=draw(st.booleans()),
    )
    return nodes, placed, the_pod, draw(st.integers(0, 10_000))


def find(sim: Simulation, obj: dict[str, Any], start: int, *, every_row: bool) -> tuple[Any, ...]:
    """One cycle's search: the feasible node names, nodes processed and the next start index, or
    the FitError's message."""
    sched = sim.scheduler
    fwk = sched.profiles["default-scheduler"]
    sched.next_start_node_index = start
    if every_row:
        fwk.rows_walk_possible = lambda state: False  # type: ignore[method-assign]
    try:
        feasible, processed = sched.find_nodes_that_fit(fwk, CycleState(), Pod.from_dict(obj))
    except FitError as fit:
        return ("FitError", fit.diagnosis.message(), sched.next_start_node_index)
    finally:
        fwk.__dict__.pop("rows_walk_possible", None)
    names = sched.snapshot.table.names
    return ([names[s] for s in feasible.tolist()], processed, sched.next_start_node_index)


def cluster(nodes: list[dict[str, Any]], placed: list[dict[str, Any]]) -> Simulation:
    sim = Simulation(seed=0)
    for obj in [*nodes, *placed]:
        sim.store.create(obj)
    sched = sim.scheduler
    sched.informers.pump()
    sched.cache.update_snapshot(sched.snapshot)
    return sim


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large]
)
@given(cycles())
def test_chunked_walk_finds_what_every_row_finds(
    case: tuple[list[dict[str, Any]], list[dict[str, Any]], dict[str, Any], int],
) -> None:
    nodes, placed, obj, start = case
    sim = cluster(nodes, placed)
    assert find(sim, obj, start, every_row=False) == find(sim, obj, start, every_row=True)


def spy_rows(fwk: Framework) -> tuple[list[int], list[int]]:
    """How many rows each chunk judged, and how many whole-table Filter runs the cycle made."""
    chunks: list[int] = []
    whole: list[int] = []
    on_rows, run_filters = fwk.run_filters_on_rows, fwk.run_filters

    def rows_spy(state: Any, pod: Any, table: Any, rows: Any, *rest: Any) -> Any:
        chunks.append(len(rows))
        return on_rows(state, pod, table, rows, *rest)

    def all_spy(*args: Any, **kw: Any) -> Any:
        whole.append(1)
        return run_filters(*args, **kw)

    fwk.run_filters_on_rows = rows_spy  # type: ignore[method-assign]
    fwk.run_filters = all_spy  # type: ignore[method-assign]
    return chunks, whole


def test_a_cycle_judges_about_the_nodes_it_needs() -> None:
    # 2,000 nodes, every one fits: upstream looks at 50 - 2000/125 = 34% of them, 680 nodes.
    sim = cluster([node(i, "4", cordoned=False, tainted=False, ssd=False) for i in range(2000)], [])
    fwk = sim.scheduler.profiles["default-scheduler"]
    chunks, whole = spy_rows(fwk)
    found = find(
        sim, pod("100m", ssd=False, tolerate=False, pinned=None, spread=False), 1990, every_row=False
    )
    assert len(found[0]) == 680
    assert found[1:] == (680, (1990 + 680) % 2000)
    assert whole == []
    assert sum(chunks) < 2000 // 2


def test_a_cycle_where_few_nodes_fit_judges_every_row_for_its_message() -> None:
    # 1,000 nodes, one of them free of the taint: the walk cannot end early, and the message counts
    # every node.
    nodes = [node(i, "4", cordoned=False, tainted=i != 500, ssd=False) for i in range(1000)]
    sim = cluster(nodes, [])
    fwk = sim.scheduler.profiles["default-scheduler"]
    _, whole = spy_rows(fwk)
    found = find(sim, pod("100m", ssd=False, tolerate=False, pinned=None, spread=False), 7, every_row=False)
    assert found == (["n500"], 1000, 7)
    assert whole == [1]
    cordoned = cluster([node(i, "4", cordoned=True, tainted=False, ssd=False) for i in range(300)], [])
    assert find(
        cordoned, pod("100m", ssd=False, tolerate=False, pinned=None, spread=False), 3, every_row=False
    ) == (
        "FitError",
        "0/300 nodes are available: 300 node(s) were unschedulable.",
        3,
    )


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large]
)
@given(cycles(), st.randoms(use_true_random=False))
def test_each_filter_judges_rows_as_it_judges_the_whole_table(
    case: tuple[list[dict[str, Any]], list[dict[str, Any]], dict[str, Any], int], rng: Any
) -> None:
    nodes, placed, obj, _ = case
    sim = cluster(nodes, placed)
    sched = sim.scheduler
    fwk = sched.profiles["default-scheduler"]
    table = sched.snapshot.table
    state = CycleState()
    the_pod = Pod.from_dict(obj)
    _, status, _ = fwk.run_pre_filter(state, the_pod, sched.snapshot)
    if status is not None:
        return
    order = table.order.tolist()
    rows = np.array(rng.sample(order, rng.randint(1, len(order))), dtype=np.int64)
    judged = 0
    for pl in fwk.filter:
        if pl.name in state.skip_filter_plugins or not isinstance(pl, RowFilterPlugin):
            continue
        whole = pl.filter_nodes(state, the_pod, table).passed[rows]
        verdict = pl.filter_rows(state, the_pod, table, rows)
        assert whole.all() if verdict is None else verdict.tolist() == whole.tolist(), pl.name
        judged += 1
    assert judged >= 2  # NodeUnschedulable and NodeResourcesFit at least


class OddOut:
    """A Filter written one node at a time (adapted by kubesched): odd-numbered nodes fail."""

    name: ClassVar[str] = "OddOut"
    calls: ClassVar[list[str]] = []

    def filter(self, state: Any, pod: Any, info: Any) -> Status | None:
        OddOut.calls.append(info.node.name)
        return None if int(info.node.name[1:]) % 2 == 0 else Status.unschedulable("node(s) are odd")


def test_a_per_node_filter_is_called_only_for_the_nodes_the_walk_reaches() -> None:
    registry = plugin_registry(use_entry_points=False)
    register(registry, OddOut)
    profile = {"schedulerName": "default-scheduler", "plugins": {"filter": {"enabled": [{"name": "OddOut"}]}}}
    config = config_from_dict({**API, "profiles": [profile]}, registry)
    sim = Simulation(config, registry)
    for i in range(2000):
        sim.store.create(node(i, "4", cordoned=False, tainted=False, ssd=False))
    sched = sim.scheduler
    sched.informers.pump()
    sched.cache.update_snapshot(sched.snapshot)
    the_pod = pod("100m", ssd=False, tolerate=False, pinned=None, spread=False)
    OddOut.calls.clear()
    walked = find(sim, the_pod, 11, every_row=False)
    reached = len(OddOut.calls)
    OddOut.calls.clear()
    assert walked == find(sim, the_pod, 11, every_row=True)
    # Upstream calls a Filter plugin for the nodes it evaluates: 680 of every other node wanted.
    assert len(walked[0]) == 680
    assert reached < 2000 == len(OddOut.calls)
