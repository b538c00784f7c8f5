"""The Runner against a served cluster (its own schedulers off): what ``kubesched run`` does to a
cluster, checked on what the API server stores."""

from __future__ import annotations

import copy
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from tests.remote.conftest import Cluster, pod, started_runners

from kubesched.api.manifests import LoadResult, ManifestObject
from kubesched.framework.config import config_from_dict
from kubesched.plugins import default_registry
from kubesched.remote.run import RunError, Runner, RunOptions
from kubesched.sim.simulation import Simulation

from .refcp import RefCluster, needs_refcp, refcp

__all__ = ["refcp"]

VOLCANO = "scheduling.volcano.sh/v1beta1"
PODS = "/api/v1/namespaces/default/pods"


def _until(check: Callable[[], Any], timeout: float = 30.0) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value or time.monotonic() > deadline:
            return value
        time.sleep(0.05)


@pytest.fixture
def start_runner() -> Iterator[Callable[..., Runner]]:
    """``start_runner(cluster, **RunOptions)``: a started Runner (no leader election, seed 0)."""
    yield from started_runners()


def _create(cluster: Cluster, obj: dict[str, Any], path: str = PODS) -> dict[str, Any]:
    code, body, _ = cluster.request("POST", path, obj)
    assert code == 201, body
    created: dict[str, Any] = body
    return created


def _pods(cluster: Cluster) -> dict[str, Any]:
    return {p["metadata"]["name"]: p for p in cluster.store.list("Pod")}


def _scheduled_events(cluster: Cluster) -> Counter[str]:
    return Counter(
        e["regarding"]["name"]
        for e in cluster.store.list("Event")
        if e.get("reason") == "Scheduled" and (e.get("regarding") or {}).get("kind") == "Pod"
    )


def _condition(obj: dict[str, Any], kind: str = "PodScheduled") -> dict[str, Any] | None:
    return next((c for c in (obj.get("status") or {}).get("conditions") or [] if c["type"] == kind), None)


def test_a_burst_of_pods_is_bound_once_each(make_cluster: Any, start_runner: Callable[..., Runner]) -> None:
    cluster = make_cluster(nodes=3, node_cpu="4")
    runner = start_runner(cluster)
    for i in range(40):
        _create(cluster, pod(f"web-{i:02d}", cpu="250m"))
    # Three nodes of 4 cpu hold 48 such pods; these two fit nowhere.
    for name in ("huge-a", "huge-b"):
        _create(cluster, pod(name, cpu="64"))

    def settled() -> bool:
        pods = _pods(cluster)
        bound = sum(1 for p in pods.values() if p["spec"].get("nodeName"))
        huge = [_condition(pods[n]) for n in ("huge-a", "huge-b")]
        return bound == 40 and all(c is not None and c["status"] == "False" for c in huge)

    assert _until(settled)
    pods = _pods(cluster)
    for i in range(40):
        p = pods[f"web-{i:02d}"]
        assert p["spec"]["nodeName"] in ("node-0", "node-1", "node-2")
        cond = _condition(p)
        assert cond is not None and cond["status"] == "True"
    for name in ("huge-a", "huge-b"):
        cond = _condition(pods[name])
        assert cond is not None
        assert cond["reason"] == "Unschedulable"
        assert cond["message"].startswith("0/3 nodes are available: 3 Insufficient cpu.")
        assert not pods[name]["spec"].get("nodeName")
    # Every pod was bound once: one Scheduled event each, no refused binding.
    assert _until(lambda: len(_scheduled_events(cluster)) == 40)
    assert set(_scheduled_events(cluster).values()) == {1}
    failed = [e for e in cluster.store.list("Event") if "binding rejected" in str(e.get("note"))]
    assert failed == []
    assert runner.health_checks["informer-sync"]()
    assert runner.health_checks["scheduler"]()


def test_pods_of_other_schedulers_are_left_alone(
    cluster: Cluster, start_runner: Callable[..., Runner]
) -> None:
    config = config_from_dict(
        {
            "apiVersion": "kubescheduler.config.k8s.io/v1",
            "kind": "KubeSchedulerConfiguration",
            "profiles": [{"schedulerName": "kubesched"}],
        },
        default_registry(),
    )
    start_runner(cluster, config=config)
    _create(cluster, pod("theirs"))
    _create(cluster, pod("ours", schedulerName="kubesched"))
    assert _until(lambda: _pods(cluster)["ours"]["spec"].get("nodeName"))

    def ours() -> list[dict[str, Any]]:
        return [e for e in cluster.store.list("Event") if e["regarding"]["name"] == "ours"]

    # The Scheduled event is written after the bind, by the recorder's own worker.
    assert _until(ours)
    assert {e["reportingController"] for e in ours()} == {"kubesched"}
    time.sleep(0.5)
    theirs = _pods(cluster)["theirs"]
    assert not theirs["spec"].get("nodeName") and _condition(theirs) is None


def _gang(name: str, members: int, min_member: int, cpu: str) -> list[tuple[dict[str, Any], str]]:
    group = {
        "apiVersion": VOLCANO,
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"minMember": min_member, "queue": "default"},
    }
    out = [(group, f"/apis/{VOLCANO}/namespaces/default/podgroups")]
    for i in range(members):
        p = pod(f"{name}-{i}", cpu=cpu, schedulerName="volcano")
        p["metadata"]["annotations"] = {"scheduling.k8s.io/group-name": name}
        out.append((p, PODS))
    return out


def test_a_gang_is_placed_all_or_nothing(make_cluster: Any, start_runner: Callable[..., Runner]) -> None:
    cluster = make_cluster(nodes=2, node_cpu="4")
    start_runner(cluster)
    # 2 nodes x 4 cpu: a gang of three 2-cpu pods fits; a gang of five 2-cpu pods (minMember 5) does not.
    for obj, path in [*_gang("small", 3, 3, "2"), *_gang("large", 5, 5, "2")]:
        _create(cluster, obj, path)

    def small_bound() -> bool:
        pods = _pods(cluster)
        return all(pods[f"small-{i}"]["spec"].get("nodeName") for i in range(3))

    assert _until(small_bound)

    def large_refused() -> bool:
        code, pg, _ = cluster.request("GET", f"/apis/{VOLCANO}/namespaces/default/podgroups/large")
        conditions = (pg.get("status") or {}).get("conditions") or []
        return code == 200 and any(c.get("type") == "Unschedulable" for c in conditions)

    assert _until(large_refused)
    pods = _pods(cluster)
    assert not any(pods[f"large-{i}"]["spec"].get("nodeName") for i in range(5))

    def small_running() -> bool:
        code, pg, _ = cluster.request("GET", f"/apis/{VOLCANO}/namespaces/default/podgroups/small")
        return code == 200 and (pg.get("status") or {}).get("phase") == "Running"

    assert _until(small_running)


def test_the_batch_scheduler_takes_the_names_it_is_given(
    make_cluster: Any, start_runner: Callable[..., Runner]
) -> None:
    cluster = make_cluster(nodes=2, node_cpu="4")
    start_runner(cluster, batch_scheduler_names=("kube-batch",))
    for obj, path in _gang("theirs", 2, 2, "1"):
        _create(cluster, obj, path)
    for obj, path in _gang("ours", 2, 2, "1"):
        if obj["kind"] == "Pod":
            obj["spec"]["schedulerName"] = "kube-batch"
        _create(cluster, obj, path)
    assert _until(lambda: all(_pods(cluster)[f"ours-{i}"]["spec"].get("nodeName") for i in range(2)))
    time.sleep(1.5)  # a batch session later
    theirs = _pods(cluster)
    assert not any(theirs[f"theirs-{i}"]["spec"].get("nodeName") for i in range(2))


# -- the same decisions as simulate ----------------------------------------------------------------
def _decision_cluster() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Nodes of different sizes, zones, labels and a taint; pods whose placement depends on scoring
    (spread, preferred affinity, balance) and ties, with a few that fit nowhere. No pod's verdict can
    change while others are placed (equal priorities, only resource-bound refusals)."""
    nodes = []
    for i in range(8):
        cpu = ("4", "8", "16")[i % 3]
        node: dict[str, Any] = {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {
                "name": f"n-{i:02d}",
                "labels": {
                    "kubernetes.io/hostname": f"n-{i:02d}",
                    "topology.kubernetes.io/zone": f"zone-{i % 3}",
                    "disk": "ssd" if i % 2 else "hdd",
                },
            },
            "status": {
                "capacity": {"cpu": cpu, "memory": f"{int(cpu) * 4}Gi", "pods": "110"},
                "allocatable": {"cpu": cpu, "memory": f"{int(cpu) * 4}Gi", "pods": "110"},
            },
        }
        if i == 5:
            node["spec"] = {"taints": [{"key": "dedicated", "value": "db", "effect": "NoSchedule"}]}
        nodes.append(node)
    pods = []
    for i in range(60):
        app = ("web", "api", "db", "cache")[i % 4]
        cpu = ("100m", "500m", "1", "2")[(i * 7) % 4]
        p = pod(f"p-{i:03d}", cpu=cpu)
        p["metadata"]["labels"] = {"app": app}
        containers = p["spec"]["containers"]
        containers[0]["resources"]["requests"]["memory"] = ("256Mi", "1Gi", "2Gi")[i % 3]
        if app == "web":
            p["spec"]["topologySpreadConstraints"] = [
                {
                    "maxSkew": 1,
                    "topologyKey": "topology.kubernetes.io/zone",
                    "whenUnsatisfiable": "ScheduleAnyway",
                    "labelSelector": {"matchLabels": {"app": "web"}},
                }
            ]
        if app == "api":
            p["spec"]["affinity"] = {
                "nodeAffinity": {
                    "preferredDuringSchedulingIgnoredDuringExecution": [
                        {
                            "weight": 50,
                            "preference": {
                                "matchExpressions": [{"key": "disk", "operator": "In", "values": ["ssd"]}]
                            },
                        }
                    ]
                }
            }
        if app == "db":
            p["spec"]["tolerations"] = [
                {"key": "dedicated", "operator": "Equal", "value": "db", "effect": "NoSchedule"}
            ]
        pods.append(p)
    for i in range(3):
        pods.append(pod(f"zz-huge-{i}", cpu="32"))
    return nodes, pods


def _simulate(nodes: list[dict[str, Any]], pods: list[dict[str, Any]], seed: int) -> dict[str, str | None]:
    loaded = LoadResult()
    for i, obj in enumerate([*nodes, *pods]):
        loaded.objects.append(ManifestObject(obj["kind"], copy.deepcopy(obj), "cluster", i))
    sim = Simulation(seed=seed)
    sim.load(loaded)
    result = sim.run()
    return {o.name: o.node for o in result.outcomes}


@pytest.mark.parametrize("seed", [0, 7])
def test_the_same_decisions_as_simulate(
    make_cluster: Any, start_runner: Callable[..., Runner], seed: int
) -> None:
    nodes, pods = _decision_cluster()
    # Two Volcano gangs: one that fits, one that cannot (four 12-cpu pods, one untainted 16-cpu node).
    batch = [*_gang("fits", 3, 3, "1"), *_gang("too-big", 4, 4, "12")]
    cluster = make_cluster(nodes=0)
    stored = [_create(cluster, n, "/api/v1/nodes") for n in nodes]
    stored += [_manifest(q) for q in cluster.store.list("Queue")]
    for obj, path in batch:
        created = _create(cluster, obj, path)
        if obj["kind"] == "PodGroup":
            stored.append(created)
    for p in pods:
        _create(cluster, p)
    batch_pods = [obj for obj, _ in batch if obj["kind"] == "Pod"]
    expected = _simulate([_manifest(o) for o in stored], [*pods, *batch_pods], seed)
    assert sum(1 for v in expected.values() if v) >= 50
    assert all(expected[f"fits-{i}"] for i in range(3))
    assert not any(expected[f"too-big-{i}"] for i in range(4))

    start_runner(cluster, seed=seed)

    def settled() -> bool:
        got = _pods(cluster)
        return all(
            (got[name]["spec"].get("nodeName") if node else _condition(got[name]) is not None)
            for name, node in expected.items()
        )

    assert _until(settled)
    got = {name: p["spec"].get("nodeName") for name, p in _pods(cluster).items()}
    # Volcano orders a gang's equal tasks by creation time, then uid (random on a server, seeded in
    # a simulation): which member lands where may differ, the nodes a gang takes may not.
    for gang in ("fits", "too-big"):
        members = sorted(n for n in expected if n.startswith(f"{gang}-"))
        assert sorted(map(str, (got.pop(n) for n in members))) == sorted(
            map(str, (expected.pop(n) for n in members))
        )
    assert got == expected


def _manifest(stored: dict[str, Any]) -> dict[str, Any]:
    """A stored object as a manifest again (what the server added to metadata dropped)."""
    out = copy.deepcopy(stored)
    meta = out["metadata"]
    for key in ("uid", "resourceVersion", "creationTimestamp", "generation", "managedFields"):
        meta.pop(key, None)
    return out


# -- starting and stopping -------------------------------------------------------------------------
def test_stop_finishes_the_binding_under_way(cluster: Cluster, start_runner: Callable[..., Runner]) -> None:
    runner = start_runner(cluster)
    assert runner.ports is not None
    ports = runner.ports
    entered = threading.Event()
    release = threading.Event()
    real_bind_later = ports.bind_later

    # The pod's PreBind has nothing to do, so its Binding is sent in the background: held here.
    def slow_bind_later(namespace: str, name: str, uid: str, node_name: str, done: Any) -> None:
        entered.set()

        def send() -> None:
            release.wait(10)
            real_bind_later(namespace, name, uid, node_name, done)

        threading.Thread(target=send, daemon=True).start()

    ports.bind_later = slow_bind_later  # type: ignore[method-assign]
    _create(cluster, pod("in-flight"))
    assert entered.wait(30)
    stopper = threading.Thread(target=runner.stop)
    stopper.start()
    time.sleep(0.2)
    assert stopper.is_alive()  # waiting for the bind
    release.set()
    stopper.join(30)
    assert not stopper.is_alive()
    assert _pods(cluster)["in-flight"]["spec"].get("nodeName")
    # Stopped: a pod created now stays pending.
    _create(cluster, pod("after-stop"))
    time.sleep(0.3)
    assert not _pods(cluster)["after-stop"]["spec"].get("nodeName")


def test_an_unreachable_cluster_is_a_clear_error(cluster: Cluster, tmp_path: Any) -> None:
    text = cluster.kubeconfig.read_text().replace(f":{cluster.port}", ":1")
    bad = tmp_path / "kubeconfig"
    bad.write_text(text)
    runner = Runner(RunOptions(kubeconfig=str(bad), leader_elect=False, sync_timeout=1.0))
    with pytest.raises(RunError, match=r"127\.0\.0\.1:1\b"):
        runner.start()


def test_with_leader_election_nothing_is_scheduled_until_leading(
    cluster: Cluster, start_runner: Callable[..., Runner]
) -> None:
    runner = start_runner(cluster, leader_elect=True)
    _create(cluster, pod("waiting"))
    time.sleep(0.3)
    assert not _pods(cluster)["waiting"]["spec"].get("nodeName")
    runner.on_started_leading()
    assert _until(lambda: _pods(cluster)["waiting"]["spec"].get("nodeName"))
    runner.on_stopped_leading()
    assert not runner.leading
    _create(cluster, pod("later"))
    runner.on_started_leading()  # a runner that stopped leading does not lead again
    time.sleep(0.3)
    assert not _pods(cluster)["later"]["spec"].get("nodeName")


# -- refused bindings, end to end ------------------------------------------------------------------
class _HeldBinds:
    """Wraps a runner's bind port: the first bind waits until released; every call is counted."""

    def __init__(self, runner: Runner) -> None:
        assert runner.ports is not None
        self.real = runner.ports.bind
        self.calls: list[tuple[str, str]] = []
        self.entered = threading.Event()
        self.release = threading.Event()
        self.errors: list[BaseException] = []
        runner.ports.bind = self.bind  # type: ignore[method-assign]
        # A pod whose PreBind has nothing to do has its Binding sent in the background.
        self.real_later = runner.ports.bind_later
        runner.ports.bind_later = self.bind_later  # type: ignore[method-assign]

    def bind(self, namespace: str, name: str, uid: str, node_name: str) -> None:
        self.calls.append((name, node_name))
        if len(self.calls) == 1:
            self.entered.set()
            self.release.wait(30)
        try:
            self.real(namespace, name, uid, node_name)
        except BaseException as exc:
            self.errors.append(exc)
            raise

    def bind_later(self, namespace: str, name: str, uid: str, node_name: str, done: Any) -> None:
        self.calls.append((name, node_name))
        first = len(self.calls) == 1

        def report(refusal: Exception | None) -> None:
            if refusal is not None:
                self.errors.append(refusal)
            done(refusal)

        def send() -> None:
            if first:
                self.entered.set()
                self.release.wait(30)
            self.real_later(namespace, name, uid, node_name, report)

        threading.Thread(target=send, daemon=True).start()


def test_a_pod_deleted_while_binding_is_dropped(
    cluster: Cluster, start_runner: Callable[..., Runner]
) -> None:
    runner = start_runner(cluster)
    held = _HeldBinds(runner)
    uid = _create(cluster, pod("doomed"))["metadata"]["uid"]
    assert held.entered.wait(30)
    code, _, _ = cluster.request("DELETE", f"{PODS}/doomed")
    assert code == 200
    held.release.set()
    assert _until(lambda: held.errors)
    assert type(held.errors[0]).__name__ == "RemoteNotFound"
    # The scheduler forgot the pod and, once the deletion reached it, dropped it from its queue:
    # no second attempt, and scheduling goes on.
    _create(cluster, pod("next"))
    assert _until(lambda: _pods(cluster)["next"]["spec"].get("nodeName"))
    assert runner.scheduler is not None
    assert runner.scheduler.cache.pod_state(uid) is None
    assert not runner.scheduler.queue.contains(uid)
    assert [name for name, _ in held.calls] == ["doomed", "next"]
    assert runner.health_checks["scheduler"]()


def test_a_pod_bound_by_someone_else_meanwhile_is_a_conflict(
    make_cluster: Any, start_runner: Callable[..., Runner]
) -> None:
    cluster = make_cluster(nodes=2, node_cpu="2")
    runner = start_runner(cluster)
    held = _HeldBinds(runner)
    uid = _create(cluster, pod("contested", cpu="1500m"))["metadata"]["uid"]
    assert held.entered.wait(30)
    ours = held.calls[0][1]
    theirs = "node-1" if ours == "node-0" else "node-0"
    binding = {
        "apiVersion": "v1",
        "kind": "Binding",
        "metadata": {"name": "contested"},
        "target": {"name": theirs},
    }
    code, body, _ = cluster.request("POST", f"{PODS}/contested/binding", binding)
    assert code == 201, body
    held.release.set()
    assert _until(lambda: held.errors)
    assert type(held.errors[0]).__name__ == "RemoteConflict"
    # The pod stays where the other binder put it, and the scheduler counts it there: a pod that
    # only fits beside it goes to the other node.
    assert runner.scheduler is not None
    assert _until(lambda: (runner.scheduler.cache.pod_state(uid) or None) is not None)
    _create(cluster, pod("second", cpu="1500m"))
    assert _until(lambda: _pods(cluster)["second"]["spec"].get("nodeName"))
    pods = _pods(cluster)
    assert pods["contested"]["spec"]["nodeName"] == theirs
    assert pods["second"]["spec"]["nodeName"] == ours
    assert [name for name, _ in held.calls] == ["contested", "second"]


@needs_refcp
def test_against_kube_apiserver(refcp: RefCluster, start_runner: Callable[..., Runner]) -> None:
    runner = start_runner(refcp)
    assert runner.loop is not None and runner.client is not None
    client, loop = runner.client, runner.loop

    def call(method: str, path: str, **kw: Any) -> Any:
        return loop.run(client.request(method, path, **kw))

    for i in range(3):
        cap = {"cpu": "4", "memory": "16Gi", "pods": "110"}
        labels = {"kubernetes.io/hostname": f"node-{i}"}
        node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": f"node-{i}", "labels": labels}}
        call("POST", "/api/v1/nodes", body={**node, "status": {"capacity": cap, "allocatable": cap}})
    for i in range(12):
        call("POST", PODS, body=pod(f"web-{i:02d}", cpu="500m"))
    call("POST", PODS, body=pod("huge", cpu="64"))

    def listed() -> dict[str, Any]:
        return {p["metadata"]["name"]: p for p in call("GET", PODS)["items"]}

    assert _until(lambda: all(p["spec"].get("nodeName") for n, p in listed().items() if n != "huge"))
    assert _until(lambda: _condition(listed()["huge"]) is not None)
    pods = listed()
    assert Counter(p["spec"]["nodeName"] for n, p in pods.items() if n != "huge") == {
        "node-0": 4,
        "node-1": 4,
        "node-2": 4,
    }
    huge = _condition(pods["huge"])
    assert huge is not None and huge["message"].startswith("0/3 nodes are available: 3 Insufficient cpu.")
    assert runner.ports is not None
    runner.ports.close()  # sends what is queued
    events = call("GET", "/api/v1/namespaces/default/events")["items"]
    assert Counter(e["reason"] for e in events) == {"Scheduled": 12, "FailedScheduling": 1}


@needs_refcp
def test_a_kind_it_may_not_list_is_a_clear_error(refcp: RefCluster) -> None:
    # v1.20's system:kube-scheduler role may not list Namespaces or PriorityClasses.
    kubeconfig = refcp.root / "run" / "scheduler.kubeconfig"
    runner = Runner(RunOptions(kubeconfig=str(kubeconfig), leader_elect=False, sync_timeout=3.0))
    with pytest.raises(RunError, match=r"not listed within 3s; still listing: .*Namespace \(.*403 Forbidden"):
        runner.start()
    assert runner.loop is None  # nothing left running
