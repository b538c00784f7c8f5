"""Queueing hints of the in-tree plugins not covered by their own upstream-mirrored tables: what each
answers for the events it registers."""

from __future__ import annotations

from typing import Any

from kubesched.api.objects import Pod
from kubesched.framework.types import QueueingHint
from kubesched.plugins.interpodaffinity import InterPodAffinity
from kubesched.plugins.nodename import NodeName
from kubesched.plugins.nodeports import NodePorts
from kubesched.plugins.nodeunschedulable import NodeUnschedulable
from kubesched.plugins.podtopologyspread import PodTopologySpread
from kubesched.plugins.schedulinggates import SchedulingGates
from kubesched.plugins.testing import make_node, pod_dict

Q, SKIP = QueueingHint.QUEUE, QueueingHint.QUEUE_SKIP


def pod(
    name: str = "p", *, labels: dict[str, str] | None = None, spec: dict[str, Any] | None = None, **kw: Any
) -> Pod:
    raw = pod_dict(name, uid=f"uid-{name}", **kw)
    raw["metadata"]["labels"] = labels or {}
    raw["spec"].update(spec or {})
    return Pod.from_dict(raw)


def test_node_unschedulable() -> None:
    pl, target = NodeUnschedulable(), pod()
    cordoned, schedulable = make_node("n", unschedulable=True), make_node("n")
    assert pl.is_schedulable_after_node_change(target, None, schedulable) == Q
    assert pl.is_schedulable_after_node_change(target, None, cordoned) == SKIP
    assert pl.is_schedulable_after_node_change(target, cordoned, schedulable) == Q
    assert pl.is_schedulable_after_node_change(target, schedulable, schedulable) == SKIP
    tolerant = pod(tolerations=[{"key": "node.kubernetes.io/unschedulable", "operator": "Exists"}])
    assert pl.is_schedulable_after_pod_toleration_change(target, target, tolerant) == Q
    assert pl.is_schedulable_after_pod_toleration_change(target, pod("other"), pod("other")) == SKIP


def test_node_name() -> None:
    pl = NodeName()
    assert pl.is_schedulable_after_node_add(pod(), None, make_node("a")) == Q
    named = pod(node_name="b")
    assert pl.is_schedulable_after_node_add(named, None, make_node("a")) == SKIP
    assert pl.is_schedulable_after_node_add(named, None, make_node("b")) == Q


def test_node_ports() -> None:
    pl = NodePorts()

    def with_port(name: str, port: int, ip: str = "", node_name: str = "") -> Pod:
        ports = [{"containerPort": 80, "hostPort": port, **({"hostIP": ip} if ip else {})}]
        raw = pod_dict(name, uid=f"uid-{name}", node_name=node_name)
        raw["spec"]["containers"][0]["ports"] = ports
        return Pod.from_dict(raw)

    target = with_port("t", 8080)
    assert pl.is_schedulable_after_pod_deleted(target, with_port("o", 8080, node_name="n"), None) == Q
    assert pl.is_schedulable_after_pod_deleted(target, with_port("o", 8080), None) == SKIP  # was pending
    assert pl.is_schedulable_after_pod_deleted(target, with_port("o", 9090, node_name="n"), None) == SKIP
    assert pl.is_schedulable_after_pod_deleted(target, pod("o", node_name="n"), None) == SKIP
    on_ip = with_port("t", 8080, ip="10.0.0.1")
    assert (
        pl.is_schedulable_after_pod_deleted(on_ip, with_port("o", 8080, ip="10.0.0.2", node_name="n"), None)
        == SKIP
    )
    assert pl.is_schedulable_after_pod_deleted(on_ip, with_port("o", 8080, node_name="n"), None) == Q


def test_scheduling_gates() -> None:
    pl, target = SchedulingGates(), pod()
    assert pl.is_schedulable_after_update_pod_scheduling_gates_eliminated(target, target, target) == Q
    assert pl.is_schedulable_after_update_pod_scheduling_gates_eliminated(target, pod("o"), pod("o")) == SKIP


SPREAD = {
    "topologySpreadConstraints": [
        {
            "maxSkew": 1,
            "topologyKey": "zone",
            "whenUnsatisfiable": "DoNotSchedule",
            "labelSelector": {"matchLabels": {"app": "web"}},
        }
    ]
}


def test_pod_topology_spread_pods() -> None:
    pl = PodTopologySpread()
    target = pod("t", labels={"app": "web"}, spec=SPREAD)
    web = pod("w", labels={"app": "web"}, node_name="n")
    db = pod("d", labels={"app": "db"}, node_name="n")
    assert pl.is_schedulable_after_pod_change(target, None, web) == Q
    assert pl.is_schedulable_after_pod_change(target, None, db) == SKIP
    assert pl.is_schedulable_after_pod_change(target, web, None) == Q
    assert pl.is_schedulable_after_pod_change(target, web, db) == Q  # relabelled out of the selector
    assert (
        pl.is_schedulable_after_pod_change(target, None, pod("w2", labels={"app": "web"})) == SKIP
    )  # pending
    other_ns = pod("x", labels={"app": "web"}, node_name="n", namespace="other")
    assert pl.is_schedulable_after_pod_change(target, None, other_ns) == SKIP


def test_pod_topology_spread_nodes() -> None:
    pl = PodTopologySpread()
    target = pod("t", labels={"app": "web"}, spec=SPREAD)
    zoned, bare = make_node("n", labels={"zone": "a"}), make_node("n")
    assert pl.is_schedulable_after_node_change(target, None, zoned) == Q
    assert pl.is_schedulable_after_node_change(target, None, bare) == SKIP
    assert pl.is_schedulable_after_node_change(target, zoned, None) == Q
    assert pl.is_schedulable_after_node_change(target, bare, zoned) == Q
    assert pl.is_schedulable_after_node_change(target, zoned, make_node("n", labels={"zone": "b"})) == Q
    relabelled = make_node("n", labels={"zone": "a", "x": "y"})
    assert pl.is_schedulable_after_node_change(target, zoned, relabelled) == SKIP


def _term(kind: str, app: str) -> dict[str, Any]:
    term = {"labelSelector": {"matchLabels": {"app": app}}, "topologyKey": "zone"}
    return {kind: {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}


def test_inter_pod_affinity() -> None:
    pl = InterPodAffinity()
    wants_db = pod("t", labels={"app": "web"}, spec={"affinity": _term("podAffinity", "db")})
    avoids_db = pod("t", labels={"app": "web"}, spec={"affinity": _term("podAntiAffinity", "db")})
    db = pod("d", labels={"app": "db"}, node_name="n")
    cache = pod("c", labels={"app": "cache"}, node_name="n")
    assert pl.is_schedulable_after_pod_change(wants_db, None, db) == Q
    assert pl.is_schedulable_after_pod_change(wants_db, None, cache) == SKIP
    assert pl.is_schedulable_after_pod_change(wants_db, cache, db) == Q  # relabelled into the term
    assert pl.is_schedulable_after_pod_change(avoids_db, db, None) == Q
    assert pl.is_schedulable_after_pod_change(avoids_db, cache, None) == SKIP
    assert pl.is_schedulable_after_pod_change(avoids_db, db, cache) == Q
    assert pl.is_schedulable_after_pod_change(wants_db, None, pod("d2", labels={"app": "db"})) == SKIP
    # An existing pod whose own anti-affinity kept the pod away leaves.
    keeps_web_away = pod(
        "k", labels={"app": "x"}, node_name="n", spec={"affinity": _term("podAntiAffinity", "web")}
    )
    assert pl.is_schedulable_after_pod_change(pod("t", labels={"app": "web"}), keeps_web_away, None) == Q
    assert pl.is_schedulable_after_node_change(wants_db, None, make_node("n", labels={"zone": "a"})) == Q
    assert pl.is_schedulable_after_node_change(wants_db, None, make_node("n")) == SKIP
