"""NodePorts: tables after upstream's node_ports_test.go (TestNodePorts, TestGetContainerPorts),
kube-scheduler v1.34 semantics, plus the NodeTable bookkeeping behind the vectorized Filter and one
run through the simulation.

A pod without host ports makes PreFilter return Skip. A wanted port conflicts when the node already
binds the same protocol/port on the same IP, or either side binds ``0.0.0.0``; the rejection is
``Unschedulable`` with upstream's ``ErrReason``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pytest

from kubesched.api.objects import HostPort, Pod
from kubesched.cache.cache import SchedulerCache, Snapshot
from kubesched.errors import InputError
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.status import Code, Status
from kubesched.plugins import default_registry
from kubesched.plugins.nodeports import ERR_REASON, NodePorts
from kubesched.plugins.testing import build_snapshot, make_node, run_filter
from kubesched.sim.simulation import Simulation

UNSCHEDULABLE = Status(Code.UNSCHEDULABLE, [ERR_REASON])


def ports(*specs: str) -> list[dict[str, Any]]:
    """Container ports from upstream-style ``"PROTOCOL/hostIP/hostPort"`` strings."""
    out: list[dict[str, Any]] = []
    for spec in specs:
        protocol, host_ip, host_port = spec.split("/")
        port: dict[str, Any] = {"containerPort": int(host_port), "hostPort": int(host_port)}
        if protocol:
            port["protocol"] = protocol
        if host_ip:
            port["hostIP"] = host_ip
        out.append(port)
    return out


def pod_manifest(
    name: str,
    *specs: str,
    node_name: str = "",
    init_containers: Sequence[dict[str, Any]] = (),
    containers: Sequence[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    if containers is None:
        containers = [{"name": "c", "image": "pause", "ports": ports(*specs)}]
    spec: dict[str, Any] = {"containers": [dict(c) for c in containers]}
    if init_containers:
        spec["initContainers"] = [dict(c) for c in init_containers]
    if node_name:
        spec["nodeName"] = node_name
    return {
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}"},
        "spec": spec,
    }


def new_pod(name: str, *specs: str, node_name: str = "") -> Pod:
    """Upstream ``newPod(host, "PROTOCOL/hostIP/hostPort", ...)``: one container with those ports."""
    return Pod.from_dict(pod_manifest(name, *specs, node_name=node_name))


# -- TestNodePorts ---------------------------------------------------------------------------------


@dataclass
class Case:
    name: str
    pod: Sequence[str]
    existing: Sequence[str]
    want: Status | None


CASES = [
    Case("other port", ["UDP/127.0.0.1/8080"], ["UDP/127.0.0.1/9090"], None),
    Case("same udp port", ["UDP/127.0.0.1/8080"], ["UDP/127.0.0.1/8080"], UNSCHEDULABLE),
    Case("same tcp port", ["TCP/127.0.0.1/8080"], ["TCP/127.0.0.1/8080"], UNSCHEDULABLE),
    Case("different host ip", ["TCP/127.0.0.1/8080"], ["TCP/127.0.0.2/8080"], None),
    Case("different protocol", ["UDP/127.0.0.1/8080"], ["TCP/127.0.0.1/8080"], None),
    Case(
        "second udp port conflict",
        ["UDP/127.0.0.1/8000", "UDP/127.0.0.1/8080"],
        ["UDP/127.0.0.1/8080"],
        UNSCHEDULABLE,
    ),
    Case(
        "first tcp port conflict",
        ["TCP/127.0.0.1/8001", "UDP/127.0.0.1/8080"],
        ["TCP/127.0.0.1/8001", "UDP/127.0.0.1/8081"],
        UNSCHEDULABLE,
    ),
    Case(
        "first tcp port conflict due to 0.0.0.0 hostIP",
        ["TCP/0.0.0.0/8001"],
        ["TCP/127.0.0.1/8001"],
        UNSCHEDULABLE,
    ),
    Case(
        "TCP hostPort conflict due to 0.0.0.0 hostIP",
        ["TCP/10.0.10.10/8001", "TCP/0.0.0.0/8001"],
        ["TCP/127.0.0.1/8001"],
        UNSCHEDULABLE,
    ),
    Case(
        "second tcp port conflict to 0.0.0.0 hostIP",
        ["TCP/127.0.0.1/8001"],
        ["TCP/0.0.0.0/8001"],
        UNSCHEDULABLE,
    ),
    Case("second different protocol", ["UDP/127.0.0.1/8001"], ["TCP/0.0.0.0/8001"], None),
    Case(
        "UDP hostPort conflict due to 0.0.0.0 hostIP",
        ["UDP/127.0.0.1/8001"],
        ["TCP/0.0.0.0/8001", "UDP/0.0.0.0/8001"],
        UNSCHEDULABLE,
    ),
    # Defaults (upstream ``sanitize``): an empty protocol is TCP, an empty hostIP is 0.0.0.0.
    Case("empty protocol is TCP", ["/127.0.0.1/8080"], ["TCP/127.0.0.1/8080"], UNSCHEDULABLE),
    Case("empty hostIP is 0.0.0.0", ["TCP/127.0.0.1/8080"], ["TCP//8080"], UNSCHEDULABLE),
    Case("empty hostIP wants every IP", ["TCP//8080"], ["TCP/10.1.1.1/8080"], UNSCHEDULABLE),
]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_node_ports(case: Case) -> None:
    existing = new_pod("existing", *case.existing, node_name="m1")
    snapshot = build_snapshot([make_node("m1", {"cpu": "4", "memory": "8Gi"})], [existing])
    got = run_filter(NodePorts(), new_pod("p", *case.pod), snapshot)
    assert got == {"m1": case.want}


def test_skip_filter() -> None:
    # Upstream "skip filter": a pod without host ports (containerPort only) skips the plugin.
    pod = Pod.from_dict(
        pod_manifest("p", containers=[{"name": "c", "image": "pause", "ports": [{"containerPort": 80}]}])
    )
    snapshot = build_snapshot([make_node("m1")])
    state = CycleState()
    result, status = NodePorts().pre_filter(state, pod, snapshot)
    assert result is None
    assert status is not None and status.code == Code.SKIP


def test_filter_without_pre_filter_is_an_error() -> None:
    # Upstream TestPreFilterDisabled: Filter without PreFilter state fails.
    snapshot = build_snapshot([make_node("m1")])
    with pytest.raises(KeyError):
        NodePorts().filter_nodes(CycleState(), new_pod("p", "TCP//80"), snapshot.table)


# -- GetHostPorts ----------------------------------------------------------------------------------


def test_host_ports_of_containers_and_sidecars() -> None:
    # Upstream GetHostPorts: containers' ports with hostPort > 0, and those of init containers with
    # restartPolicy Always (sidecars) first; plain init containers and hostPort 0 do not count.
    pod = Pod.from_dict(
        pod_manifest(
            "p",
            init_containers=[
                {"name": "init", "image": "i", "ports": ports("TCP//7001")},
                {
                    "name": "sidecar",
                    "image": "s",
                    "restartPolicy": "Always",
                    "ports": ports("UDP/10.0.0.1/7002"),
                },
            ],
            containers=[
                {"name": "a", "image": "a", "ports": ports("TCP//8001", "TCP//8002")},
                {"name": "b", "image": "b", "ports": [*ports("SCTP//8003"), {"containerPort": 8005}]},
            ],
        )
    )
    assert pod.host_ports == (
        HostPort("10.0.0.1", "UDP", 7002),
        HostPort("0.0.0.0", "TCP", 8001),
        HostPort("0.0.0.0", "TCP", 8002),
        HostPort("0.0.0.0", "SCTP", 8003),
    )


def test_sidecar_port_conflicts() -> None:
    sidecar = {"name": "s", "image": "s", "restartPolicy": "Always", "ports": ports("TCP//9000")}
    existing = Pod.from_dict(
        pod_manifest(
            "existing", node_name="m1", init_containers=[sidecar], containers=[{"name": "c", "image": "c"}]
        )
    )
    snapshot = build_snapshot([make_node("m1"), make_node("m2")], [existing])
    assert run_filter(NodePorts(), new_pod("p", "TCP//9000"), snapshot) == {"m1": UNSCHEDULABLE, "m2": None}


@pytest.mark.parametrize(
    ("port", "message"),
    [
        ({"containerPort": 80, "hostPort": 70000}, "hostPort must be an integer from 0 to 65535"),
        ({"containerPort": 80, "hostPort": "80"}, "hostPort must be an integer from 0 to 65535"),
        ({"containerPort": 80, "hostPort": 80, "protocol": "HTTP"}, "protocol must be TCP, UDP or SCTP"),
    ],
)
def test_invalid_ports(port: dict[str, Any], message: str) -> None:
    with pytest.raises(InputError, match=message):
        Pod.from_dict(pod_manifest("p", containers=[{"name": "c", "image": "c", "ports": [port]}]))


# -- NodeTable bookkeeping -------------------------------------------------------------------------


def _filter(cache: SchedulerCache, snapshot: Snapshot, pod: Pod) -> dict[str, Status | None]:
    cache.update_snapshot(snapshot)
    return run_filter(NodePorts(), pod, snapshot)


def test_ports_follow_pods_and_nodes() -> None:
    cache = SchedulerCache()
    snapshot = Snapshot()
    cache.add_node(make_node("m1"))
    cache.add_node(make_node("m2"))
    want = new_pod("p", "TCP//8080")
    a = new_pod("a", "TCP/10.0.0.1/8080", node_name="m1")
    b = new_pod("b", "TCP/10.0.0.1/8080", node_name="m1")
    cache.add_pod(a)
    cache.add_pod(b)
    assert _filter(cache, snapshot, want) == {"m1": UNSCHEDULABLE, "m2": None}
    # Two pods bind the port: it stays in use until both are gone.
    cache.remove_pod(a)
    assert _filter(cache, snapshot, want) == {"m1": UNSCHEDULABLE, "m2": None}
    assert _filter(cache, snapshot, new_pod("q", "TCP/10.0.0.2/8080")) == {"m1": None, "m2": None}
    cache.remove_pod(b)
    assert _filter(cache, snapshot, want) == {"m1": None, "m2": None}
    # An assumed pod holds its port at once; forgetting it frees it.
    c = new_pod("c", "TCP//8080")
    cache.assume_pod(c, "m2")
    assert _filter(cache, snapshot, want) == {"m1": None, "m2": UNSCHEDULABLE}
    cache.forget_pod(c)
    assert _filter(cache, snapshot, want) == {"m1": None, "m2": None}
    # A node that goes away takes its row's ports with it; a new node reusing the slot starts clean.
    d = new_pod("d", "TCP//8080", node_name="m2")
    cache.add_pod(d)
    assert _filter(cache, snapshot, want) == {"m1": None, "m2": UNSCHEDULABLE}
    cache.remove_pod(d)
    cache.remove_node("m2")
    cache.add_node(make_node("m3"))
    assert _filter(cache, snapshot, want) == {"m1": None, "m3": None}


def test_many_nodes_grow_the_port_masks() -> None:
    cache = SchedulerCache()
    snapshot = Snapshot()
    cache.add_node(make_node("n0"))
    cache.add_pod(new_pod("a", "UDP//53", node_name="n0"))
    cache.update_snapshot(snapshot)
    for i in range(1, 150):  # past the table's initial capacity
        cache.add_node(make_node(f"n{i}"))
    cache.add_pod(new_pod("b", "UDP//53", node_name="n149"))
    got = _filter(cache, snapshot, new_pod("p", "UDP/192.168.0.1/53"))
    assert {name for name, status in got.items() if status is not None} == {"n0", "n149"}
    assert all(status == UNSCHEDULABLE for status in got.values() if status is not None)


# -- through the scheduler -------------------------------------------------------------------------


def test_second_pod_on_the_same_host_port_is_unschedulable() -> None:
    sim = Simulation(registry=default_registry())
    sim.store.create(
        {
            "kind": "Node",
            "metadata": {"name": "n1"},
            "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}},
        }
    )
    for name in ("web-1", "web-2"):
        manifest = pod_manifest(name, "TCP//8080")
        del manifest["metadata"]["uid"]
        sim.store.create(manifest)
    result = sim.run()
    by_name = {o.name: o for o in result.outcomes}
    assert by_name["web-1"].status == "Scheduled"
    assert by_name["web-1"].node == "n1"
    assert by_name["web-2"].status == "Unschedulable"
    assert by_name["web-2"].message.startswith(
        "0/1 nodes are available: 1 node(s) didn't have free ports for the requested pod ports."
    )
    # Deleting the pod that holds the port (a Pod/Delete event NodePorts registers) lets web-2 in.
    sim.store.delete("Pod", "default", "web-1")
    result = sim.run()
    assert [(o.name, o.status, o.node) for o in result.outcomes] == [("web-2", "Scheduled", "n1")]
