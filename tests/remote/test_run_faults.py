"""``kubesched run`` (the Runner: both schedulers, the mirror, the ports) under faults of the API
server and the network: a restart mid-burst, every watch stream cut, bindings refused with Conflict
and NotFound, a slow API, and resourceVersions that expired while the watches were away.

After each fault, what the API server stores must say: every pod bound exactly once (counted on the
served store's own watch) or pending with a ``PodScheduled=False`` condition that says why; no node
holding more than its allocatable; every gang whole or not placed at all; and the runner still
scheduling (a pod created afterwards is bound).

The plain pods run on ``node-0..2``; the Volcano gangs on ``gang-0``, a node tainted for them and
selected by them, so the two kinds never compete for capacity and the sums below stay exact.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.remote.conftest import Cluster, Proxy, pod, started_runners

from kubesched.api.quantity import resource_amount
from kubesched.remote.run import Runner
from kubesched.store.base import EventType, Watch

VOLCANO = "scheduling.volcano.sh/v1beta1"
PODS = "/api/v1/namespaces/default/pods"
PODGROUPS = f"/apis/{VOLCANO}/namespaces/default/podgroups"
QUEUES = f"/apis/{VOLCANO}/queues"
WORKERS = ("node-0", "node-1", "node-2")
GANG_NODE = "gang-0"
TAINT = {"key": "dedicated", "value": "gangs", "effect": "NoSchedule"}


# -- the cluster ------------------------------------------------------------------------------------
def _node(name: str, cpu: str, *, gangs: bool = False) -> dict[str, Any]:
    alloc = {"cpu": cpu, "memory": "64Gi", "pods": "110"}
    labels = {"kubernetes.io/hostname": name, "pool": "gangs" if gangs else "workers"}
    node: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": labels},
        "status": {
            "capacity": dict(alloc),
            "allocatable": alloc,
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }
    if gangs:
        node["spec"] = {"taints": [TAINT]}
    return node


def _objects(worker_cpu: str) -> list[dict[str, Any]]:
    queue = {
        "apiVersion": VOLCANO,
        "kind": "Queue",
        "metadata": {"name": "faults"},
        "spec": {"weight": 1, "reclaimable": True},
    }
    return [*(_node(n, worker_cpu) for n in WORKERS), _node(GANG_NODE, "4", gangs=True), queue]


@pytest.fixture
def start_cluster(make_cluster: Any) -> Callable[..., Cluster]:
    def start(worker_cpu: str = "8", **options: Any) -> Cluster:
        options.setdefault("bookmark_interval", 0.5)
        cluster: Cluster = make_cluster(nodes=0, objects=_objects(worker_cpu), **options)
        return cluster

    return start


def _gang(name: str, members: int, cpu: str) -> list[tuple[dict[str, Any], str]]:
    """A PodGroup of ``members`` pods (minMember all of them) in the ``faults`` queue, on gang-0."""
    group = {
        "apiVersion": VOLCANO,
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"minMember": members, "queue": "faults"},
    }
    out: list[tuple[dict[str, Any], str]] = [(group, PODGROUPS)]
    for i in range(members):
        p = pod(
            f"{name}-{i}",
            cpu=cpu,
            schedulerName="volcano",
            nodeSelector={"pool": "gangs"},
            tolerations=[{"key": "dedicated", "operator": "Equal", "value": "gangs", "effect": "NoSchedule"}],
        )
        p["metadata"]["annotations"] = {"scheduling.k8s.io/group-name": name}
        out.append((p, PODS))
    return out


#: gang-0 has 4 cpu: ``fits`` (3 x 1 cpu) is placed whole, ``too-big`` (3 x 2 cpu) never.
GANGS = {"fits": (3, "1"), "too-big": (3, "2")}


def _create(cluster: Cluster, obj: dict[str, Any], path: str = PODS) -> dict[str, Any]:
    code, body, _ = cluster.request("POST", path, obj)
    assert code == 201, body
    created: dict[str, Any] = body
    return created


def _create_gangs(cluster: Cluster, suffix: str = "") -> list[str]:
    names = []
    for gang, (members, cpu) in GANGS.items():
        for obj, path in _gang(f"{gang}{suffix}", members, cpu):
            _create(cluster, obj, path)
            if obj["kind"] == "Pod":
                names.append(obj["metadata"]["name"])
    return names


def _pods(cluster: Cluster) -> dict[str, dict[str, Any]]:
    return {p["metadata"]["name"]: p for p in cluster.store.list("Pod")}


def _condition(obj: dict[str, Any]) -> dict[str, Any] | None:
    conditions = (obj.get("status") or {}).get("conditions") or []
    return next((c for c in conditions if c.get("type") == "PodScheduled"), None)


def _until(check: Callable[[], Any], timeout: float = 30.0, what: Any = "") -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value or time.monotonic() > deadline:
            assert value, f"timed out waiting for {what() if callable(what) else what or check}"
            return value
        time.sleep(0.05)


# -- what the API server saw ------------------------------------------------------------------------
class Binds:
    """Every bind the served store applied (a pod's nodeName going from empty to a node), counted per
    pod uid through the store's own watch; follows the store across restarts."""

    def __init__(self, cluster: Cluster) -> None:
        self.counts: Counter[str] = Counter()
        self.moved: list[str] = []
        self._watch: Watch | None = None
        self._store: Any = None
        self.follow(cluster)

    def follow(self, cluster: Cluster) -> None:
        """Start counting on ``cluster``'s store; a pod bound there already that was not bound in the
        last store followed was bound in between (the server restarted): one bind."""
        known = {uid for uid, n in self.counts.items() if n}
        store = self._store = cluster.store
        with store.lock:
            self._watch = store.watch(frozenset({"Pod"}))
            listed = store.list("Pod")
        for p in listed:
            uid = p["metadata"]["uid"]
            if p["spec"].get("nodeName") and uid not in known:
                self.counts[uid] += 1

    def drain(self) -> Counter[str]:
        assert self._watch is not None
        # A read of the store's memory (``_pods``) may show a write whose commit, and so its watch
        # event, is still under way: counted once that commit is made, as a client would see it.
        self._store.sync(self._store.pending_generation())
        for event in self._watch.drain():
            if event.type != EventType.MODIFIED or event.old is None:
                continue
            old_node = (event.old.get("spec") or {}).get("nodeName")
            new_node = (event.obj.get("spec") or {}).get("nodeName")
            if old_node and old_node != new_node:
                self.moved.append(event.obj["metadata"]["name"])
            if new_node and not old_node:
                self.counts[event.obj["metadata"]["uid"]] += 1
        return self.counts


def _unsettled(cluster: Cluster, names: set[str]) -> dict[str, Any]:
    """The pods named that are neither bound nor pending with a PodScheduled=False condition saying
    why (with their condition)."""
    pods = _pods(cluster)
    out: dict[str, Any] = {}
    for name in names:
        p = pods.get(name)
        if p is None:
            out[name] = "missing"
            continue
        if p["spec"].get("nodeName"):
            continue
        cond = _condition(p)
        if cond is None or cond.get("status") != "False" or not cond.get("message"):
            out[name] = cond
        elif cond.get("reason") not in ("Unschedulable", "SchedulerError"):
            # ``Schedulable`` (a gang member allocated while its gang waits for minAvailable) holds
            # only until a session that sees the whole cluster again: a lost bind answer can leave
            # the gang's node looking emptier than it is for one session.
            out[name] = cond
    return out


def _settled(cluster: Cluster, names: set[str]) -> bool:
    return not _unsettled(cluster, names)


def _check(
    cluster: Cluster,
    binds: Binds,
    *,
    bound: set[str],
    pending: set[str],
    gone: set[str] = frozenset(),  # type: ignore[assignment]
) -> dict[str, dict[str, Any]]:
    """The invariants, from the API server's state alone (the caller waited for ``_settled``)."""
    pods = _pods(cluster)
    counts = binds.drain()
    assert not binds.moved, f"pods moved between nodes: {binds.moved}"
    # Every bind happened once.
    twice = [uid for uid, n in counts.items() if n > 1]
    assert not twice, f"bound more than once: {twice}"
    for name in gone:
        assert name not in pods, f"{name} was deleted and is back"
    for name in bound:
        p = pods[name]
        assert p["spec"].get("nodeName"), f"{name} is not bound: {_condition(p)}"
        assert counts[p["metadata"]["uid"]] == 1, name
    for name in pending:
        p = pods[name]
        assert not p["spec"].get("nodeName"), f"{name} should not fit anywhere: {p['spec']['nodeName']}"
        cond = _condition(p)
        assert cond is not None and cond["status"] == "False", (name, cond)
        assert cond["reason"] in ("Unschedulable", "SchedulerError"), (name, cond)
        assert cond["message"], (name, cond)
    # Every stored pod is bound once or pending with a reason.
    for name, p in pods.items():
        uid = p["metadata"]["uid"]
        if p["spec"].get("nodeName"):
            assert counts[uid] == 1, f"{name}: {counts[uid]} binds"
        else:
            cond = _condition(p)
            assert cond is not None and cond["status"] == "False" and cond["message"], (name, cond)
    # No node over-committed.
    nodes = {n["metadata"]["name"]: n for n in cluster.store.list("Node")}
    used: Counter[str] = Counter()
    count: Counter[str] = Counter()
    for p in pods.values():
        node = p["spec"].get("nodeName")
        if node:
            used[node] += _cpu(p)
            count[node] += 1
    for name, node in nodes.items():
        alloc = node["status"]["allocatable"]
        on = sorted((n, _cpu(p)) for n, p in pods.items() if p["spec"].get("nodeName") == name)
        assert used[name] <= _milli(alloc["cpu"]), f"{name} over-committed: {used[name]}m: {on}"
        assert count[name] <= int(alloc["pods"]), name
    # Gangs whole or not at all.
    for group in cluster.store.list("PodGroup"):
        gname = group["metadata"]["name"]
        members = [
            p
            for p in pods.values()
            if (p["metadata"].get("annotations") or {}).get("scheduling.k8s.io/group-name") == gname
        ]
        placed = sum(1 for p in members if p["spec"].get("nodeName"))
        assert placed == 0 or placed >= group["spec"]["minMember"], f"gang {gname}: {placed} placed"
    return pods


def _milli(cpu: str) -> int:
    return resource_amount("cpu", cpu)


def _cpu(p: dict[str, Any]) -> int:
    return sum(
        _milli(c["resources"]["requests"].get("cpu", "0"))
        for c in p["spec"]["containers"]
        if (c.get("resources") or {}).get("requests")
    )


def _cache_agrees(runner: Runner, cluster: Cluster) -> bool:
    """The scheduler's cache holds exactly the bound pods the server holds, each on its node."""
    assert runner.scheduler is not None
    cache = runner.scheduler.cache
    want = {
        p["metadata"]["uid"]: p["spec"]["nodeName"]
        for p in cluster.store.list("Pod")
        if p["spec"].get("nodeName")
    }
    try:
        have = {st.pod.uid: st.node_name for st in cache.pods()}
        requested = {name: info.requested.get("cpu", 0) for name, info in list(cache.node_infos.items())}
    except RuntimeError:  # changed under us by the driver: look again
        return False
    if have != want:
        return False
    used: Counter[str] = Counter()
    for p in cluster.store.list("Pod"):
        if p["spec"].get("nodeName"):
            used[p["spec"]["nodeName"]] += _cpu(p)
    return all(requested.get(n, 0) == used[n] for n in (*WORKERS, GANG_NODE))


def _still_schedules(cluster: Cluster, name: str = "afterwards", cpu: str = "100m") -> None:
    _create(cluster, pod(name, cpu=cpu))
    _until(lambda: _pods(cluster)[name]["spec"].get("nodeName"), what=f"{name} bound")


# -- the runner -------------------------------------------------------------------------------------
@pytest.fixture
def start_runner() -> Iterator[Callable[..., Runner]]:
    yield from started_runners(port=0, schedule_period=0.2, qps=1000.0, burst=1000)


def _via(proxy: Proxy, cluster: Cluster, tmp_path: Path) -> Path:
    """A kubeconfig for ``cluster`` that goes through ``proxy``."""
    path = tmp_path / f"kubeconfig-{proxy.port}"
    path.write_text(cluster.kubeconfig.read_text().replace(f":{cluster.port}", f":{proxy.port}"))
    return path


def _burst(cluster: Cluster, prefix: str, n: int, cpu: str = "250m") -> list[str]:
    names = [f"{prefix}-{i:02d}" for i in range(n)]
    for name in names:
        _create(cluster, pod(name, cpu=cpu))
    return names


def _bound_count(cluster: Cluster, prefix: str) -> int:
    return sum(1 for n, p in _pods(cluster).items() if n.startswith(prefix) and p["spec"].get("nodeName"))


class Writer(threading.Thread):
    """Creates pods in the background (a burst the fault lands in the middle of)."""

    def __init__(self, cluster: Cluster, prefix: str, n: int, cpu: str = "250m") -> None:
        super().__init__(daemon=True)
        self.cluster, self.prefix, self.n, self.cpu = cluster, prefix, n, cpu
        self.names: list[str] = []
        self.errors: list[BaseException] = []
        self.start()

    def run(self) -> None:
        try:
            for i in range(self.n):
                name = f"{self.prefix}-{i:02d}"
                _create(self.cluster, pod(name, cpu=self.cpu))
                self.names.append(name)
        except BaseException as exc:
            self.errors.append(exc)

    def finish(self) -> list[str]:
        self.join(30)
        assert not self.is_alive() and not self.errors, self.errors
        return self.names


HUGE = ("huge-a", "huge-b")


def _gang_sets(suffix: str = "") -> tuple[set[str], set[str]]:
    fits = {f"fits{suffix}-{i}" for i in range(GANGS["fits"][0])}
    too_big = {f"too-big{suffix}-{i}" for i in range(GANGS["too-big"][0])}
    return fits, too_big


# -- the faults -------------------------------------------------------------------------------------
def test_the_api_server_restarted_mid_burst(
    start_cluster: Callable[..., Cluster], make_cluster: Any, start_runner: Callable[..., Runner]
) -> None:
    cluster = start_cluster()
    port, data_dir = cluster.port, cluster.options.data_dir
    binds = Binds(cluster)
    runner = start_runner(cluster.kubeconfig)
    kubeconfig = cluster.kubeconfig.read_text()

    before = _burst(cluster, "before", 30)
    gangs = _create_gangs(cluster)
    for name in HUGE:
        _create(cluster, pod(name, cpu="64"))
    _until(lambda: _bound_count(cluster, "before-") >= 5, what="the burst under way")
    # Down in the middle of the burst: binds in flight lose their answers, watches their streams.
    binds.drain()
    cluster.stop()
    time.sleep(0.5)
    restarted = start_cluster(port=port, data_dir=data_dir)
    assert restarted.kubeconfig.read_text() == kubeconfig  # same server, same credentials
    binds.follow(restarted)
    after = _burst(restarted, "after", 20)

    fits, too_big = _gang_sets()
    names = {*before, *after, *gangs, *HUGE}
    _until(
        lambda: _settled(restarted, names) and _bound_count(restarted, "") >= 53,
        60,
        lambda: (_unsettled(restarted, names), _bound_count(restarted, "")),
    )
    _check(restarted, binds, bound={*before, *after, *fits}, pending={*HUGE, *too_big})
    assert runner.reflectors is not None
    assert runner.reflectors.reflectors["Pod"].stats.backoffs > 0  # the watches did see the fault
    _until(lambda: _cache_agrees(runner, restarted), what="the cache to follow the server")
    # The PodGroup statuses lost while the server was down are written by a later session.
    _until(lambda: _phase(restarted, "fits") == "Running", what=lambda: _phase(restarted, "fits"))
    _still_schedules(restarted)


def _phase(cluster: Cluster, group: str) -> str | None:
    code, body, _ = cluster.request("GET", f"{PODGROUPS}/{group}")
    assert code == 200, body
    phase: str | None = (body.get("status") or {}).get("phase")
    return phase


def test_every_watch_stream_cut_mid_burst(
    start_cluster: Callable[..., Cluster],
    make_proxy: Callable[..., Proxy],
    start_runner: Callable[..., Runner],
    tmp_path: Path,
) -> None:
    cluster = start_cluster()
    proxy = make_proxy(cluster)
    binds = Binds(cluster)
    runner = start_runner(_via(proxy, cluster, tmp_path))
    gangs = _create_gangs(cluster)
    for name in HUGE:
        _create(cluster, pod(name, cpu="64"))
    writer = Writer(cluster, "burst", 60)
    _until(lambda: _bound_count(cluster, "burst-") >= 10, what="the burst under way")
    proxy.cut()  # every stream and bind in flight dropped; reconnects refused ...
    time.sleep(1.0)  # ... for a second, while pods keep coming
    proxy.resume()
    burst = writer.finish()
    fits, too_big = _gang_sets()
    _until(lambda: _settled(cluster, {*burst, *gangs, *HUGE}) and _bound_count(cluster, "burst-") == 60, 60)
    _check(cluster, binds, bound={*burst, *fits}, pending={*HUGE, *too_big})
    assert runner.reflectors is not None
    assert runner.reflectors.reflectors["Pod"].stats.backoffs > 0  # the watches did see the fault
    _until(lambda: _cache_agrees(runner, cluster), what="the cache to follow the server")
    _still_schedules(cluster)


class HeldBinds:
    """Wraps a runner's bind port: binds of the pods named wait until released (each is counted as
    it arrives); every refusal is recorded."""

    def __init__(self, runner: Runner, held: set[str]) -> None:
        assert runner.ports is not None
        self.real = runner.ports.bind
        self.held = held
        self.entered: dict[str, str] = {}
        self.release = threading.Event()
        self.errors: dict[str, BaseException] = {}
        self.calls: Counter[str] = Counter()
        self._lock = threading.Lock()
        runner.ports.bind = self.bind  # type: ignore[method-assign]
        # A pod whose PreBind has nothing to do has its Binding sent in the background.
        self.real_later = runner.ports.bind_later
        runner.ports.bind_later = self.bind_later  # type: ignore[method-assign]

    def bind(self, namespace: str, name: str, uid: str, node_name: str) -> None:
        with self._lock:
            self.calls[name] += 1
        if name in self.held and self.calls[name] == 1:
            with self._lock:
                self.entered[name] = node_name
            self.release.wait(30)
        try:
            self.real(namespace, name, uid, node_name)
        except BaseException as exc:
            with self._lock:
                self.errors[name] = exc
            raise

    def bind_later(self, namespace: str, name: str, uid: str, node_name: str, done: Any) -> None:
        with self._lock:
            self.calls[name] += 1
            hold = name in self.held and self.calls[name] == 1

        def report(refusal: Exception | None) -> None:
            if refusal is not None:
                with self._lock:
                    self.errors[name] = refusal
            done(refusal)

        def send() -> None:
            if hold:
                with self._lock:
                    self.entered[name] = node_name
                self.release.wait(30)
            self.real_later(namespace, name, uid, node_name, report)

        threading.Thread(target=send, daemon=True).start()


def _bind(cluster: Cluster, name: str, node: str) -> None:
    binding = {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": name}, "target": {"name": node}}
    code, body, _ = cluster.request("POST", f"{PODS}/{name}/binding", binding)
    assert code == 201, body


def test_conflicts_and_not_found_on_bind(
    start_cluster: Callable[..., Cluster], start_runner: Callable[..., Runner]
) -> None:
    # Three workers of 4 cpu; every plain pod asks for 1 cpu, so the workers hold exactly 12.
    cluster = start_cluster(worker_cpu="4")
    binds = Binds(cluster)
    runner = start_runner(cluster.kubeconfig)
    contested = {f"contested-{i}" for i in range(4)}
    doomed = {f"doomed-{i}" for i in range(2)}
    member = "fits-1"  # of a gang the batch scheduler binds
    held = HeldBinds(runner, contested | doomed | {member})
    for name in sorted(contested | doomed):
        _create(cluster, pod(name, cpu="1"))
    gangs = _create_gangs(cluster)
    fits, too_big = _gang_sets()
    _until(lambda: set(held.entered) == contested | doomed | {member}, what="every bind held")
    # Another writer binds the contested pods first, all to node-0 (which they fill), and the gang
    # member to the gang's node; the doomed pods are deleted while their binds are on the way.
    for name in sorted(contested):
        _bind(cluster, name, "node-0")
    _bind(cluster, member, GANG_NODE)
    for name in sorted(doomed):
        code, _, _ = cluster.request("DELETE", f"{PODS}/{name}")
        assert code == 200
    held.release.set()
    _until(lambda: set(held.errors) == contested | doomed | {member}, what="every held bind refused")
    for name in contested | {member}:
        assert type(held.errors[name]).__name__ == "RemoteConflict", held.errors[name]
    for name in doomed:
        assert type(held.errors[name]).__name__ == "RemoteNotFound", held.errors[name]

    # The burst: 8 cpu left on node-1 and node-2 and nine 1-cpu pods. Had the scheduler kept its own
    # assumption of a contested pod, one of the eight that fit would stay pending; had it not counted
    # the contested pods on node-0, one would land there.
    burst = _burst(cluster, "burst", 9, cpu="1")
    _until(lambda: _settled(cluster, {*burst, *gangs}) and _bound_count(cluster, "burst-") >= 8, 30)
    pods = _check(cluster, binds, bound={*contested, *fits}, pending=too_big, gone=doomed)
    assert {pods[n]["spec"]["nodeName"] for n in contested} == {"node-0"}
    waiting = [n for n in burst if not pods[n]["spec"].get("nodeName")]
    assert len(waiting) == 1, waiting
    cond = _condition(pods[waiting[0]])
    assert cond is not None and "Insufficient cpu" in cond["message"], cond
    assert all(pods[n]["spec"]["nodeName"] != "node-0" for n in burst if n not in waiting)
    # None of the pods refused was tried again.
    assert all(held.calls[n] == 1 for n in contested | doomed | {member}), held.calls
    _until(lambda: _cache_agrees(runner, cluster), what="the cache to follow the server")
    assert runner.scheduler is not None
    for name in doomed:
        assert not any(st.pod.name == name for st in runner.scheduler.cache.pods())
    # The pods bound by the other writer are not waiting in the scheduler's queue either.
    for name in contested:
        assert not runner.scheduler.queue.contains(pods[name]["metadata"]["uid"]), name

    # Still scheduling: a contested pod goes away and the pod left waiting takes its place.
    code, _, _ = cluster.request("DELETE", f"{PODS}/contested-0")
    assert code == 200
    _until(
        lambda: _pods(cluster)[waiting[0]]["spec"].get("nodeName") == "node-0", what="the waiting pod bound"
    )
    _check(cluster, binds, bound={*contested - {"contested-0"}, *burst, *fits}, pending=too_big)


@pytest.mark.parametrize("delay", [0.02, 0.05])
def test_a_slow_api(
    start_cluster: Callable[..., Cluster],
    make_proxy: Callable[..., Proxy],
    start_runner: Callable[..., Runner],
    tmp_path: Path,
    delay: float,
) -> None:
    cluster = start_cluster()
    proxy = make_proxy(cluster, delay)
    binds = Binds(cluster)
    runner = start_runner(_via(proxy, cluster, tmp_path))
    gangs = _create_gangs(cluster)
    for name in HUGE:
        _create(cluster, pod(name, cpu="64"))
    burst = _burst(cluster, "burst", 40)
    fits, too_big = _gang_sets()
    _until(lambda: _settled(cluster, {*burst, *gangs, *HUGE}) and _bound_count(cluster, "burst-") == 40, 60)
    _check(cluster, binds, bound={*burst, *fits}, pending={*HUGE, *too_big})
    _until(lambda: _cache_agrees(runner, cluster), what="the cache to follow the server")
    _still_schedules(cluster)


def test_expired_resource_versions_relist(
    start_cluster: Callable[..., Cluster],
    make_proxy: Callable[..., Proxy],
    start_runner: Callable[..., Runner],
    tmp_path: Path,
) -> None:
    # Three workers of 4 cpu, 1-cpu pods; the server keeps only the last 5 changes.
    cluster = start_cluster(worker_cpu="4", history=5)
    proxy = make_proxy(cluster)
    binds = Binds(cluster)
    runner = start_runner(_via(proxy, cluster, tmp_path))
    assert runner.scheduler is not None and runner.reflectors is not None
    scheduler = runner.scheduler
    first = _burst(cluster, "first", 6, cpu="1")
    # Two pods no worker matches: pending, with their reason.
    for name in ("picky-0", "picky-1"):
        _create(cluster, pod(name, cpu="2", nodeSelector={"disk": "nvme"}))
    gangs = _create_gangs(cluster)
    fits, too_big = _gang_sets()
    _until(lambda: _settled(cluster, {*first, "picky-0", "picky-1", *gangs}), what="the first pods settled")
    _until(lambda: _bound_count(cluster, "first-") == 6 and _bound_count(cluster, "fits-") == 3)
    _until(lambda: _cache_agrees(runner, cluster), what="the cache to follow the server")
    uids = {n: p["metadata"]["uid"] for n, p in _pods(cluster).items()}
    assert scheduler.queue.contains(uids["picky-1"])
    relists = runner.reflectors.reflectors["Pod"].stats.relists

    proxy.cut()
    # While the watches are away, far more changes than the server keeps:
    for name in ("first-00", "first-01"):  # two bound pods deleted (2 cpu freed) ...
        assert cluster.request("DELETE", f"{PODS}/{name}")[0] == 200
    assert cluster.request("DELETE", f"{PODS}/picky-1")[0] == 200  # ... a pending one deleted ...
    # (a bound pod's deletion completes after its grace period)
    _until(lambda: not {"first-00", "first-01", "picky-1"} & set(_pods(cluster)), what="the deletions")
    pods = _pods(cluster)
    used: Counter[str] = Counter()
    for p in pods.values():
        if p["spec"].get("nodeName") in WORKERS:
            used[p["spec"]["nodeName"]] += _cpu(p)
    roomiest = min(WORKERS, key=lambda n: used[n])
    _bind(cluster, "picky-0", roomiest)  # ... a pending one bound by someone else (2 cpu) ...
    gap = _burst(cluster, "gap", 3, cpu="1")
    _bind(cluster, "gap-00", roomiest)  # ... a new one bound by someone else too ...
    for i in range(6):  # ... and pods that came and went unseen.
        _create(cluster, pod(f"brief-{i}"))
        assert cluster.request("DELETE", f"{PODS}/brief-{i}")[0] == 200
    time.sleep(0.3)
    proxy.resume()

    # The relist's differences reach the cache and the queue.
    _until(
        lambda: runner.reflectors is not None and runner.reflectors.reflectors["Pod"].stats.relists > relists
    )
    _until(lambda: _cache_agrees(runner, cluster), what="the cache to follow the relist")
    for name in ("first-00", "first-01", "picky-1"):
        assert scheduler.cache.pod_state(uids[name]) is None, name
        assert not scheduler.queue.contains(uids[name]), name
    state = scheduler.cache.pod_state(uids["picky-0"])
    assert state is not None and state.node_name == roomiest and not state.assumed

    # Fill the workers: 12 cpu, of which 4 (first) + 2 (picky-0) + 1 (gap-00) are held; gap-01 and
    # gap-02 take 2 more, so 3 of the 4 fill pods fit and the last waits.
    fill = _burst(cluster, "fill", 4, cpu="1")
    names = {*gap, *fill}
    _until(lambda: _settled(cluster, names) and _bound_count(cluster, "fill-") >= 3, 30, "filled")
    pods = _check(
        cluster,
        binds,
        bound={*first[2:], "picky-0", *gap, *fits},
        pending=too_big,
        gone={"first-00", "first-01", "picky-1"},
    )
    waiting = [n for n in fill if not pods[n]["spec"].get("nodeName")]
    assert len(waiting) == 1, waiting
    cond = _condition(pods[waiting[0]])
    assert cond is not None and "Insufficient cpu" in cond["message"], cond
    _until(lambda: _cache_agrees(runner, cluster), what="the cache to follow the server")
    # Still scheduling.
    assert cluster.request("DELETE", f"{PODS}/first-02")[0] == 200
    _until(lambda: _pods(cluster)[waiting[0]]["spec"].get("nodeName"), what="the waiting pod bound")


# -- the condition writes a fault lost --------------------------------------------------------------
def test_a_condition_write_the_server_did_not_answer_is_written_later(
    cluster: Cluster, make_proxy: Callable[..., Proxy], connect: Any, loop_thread: Any
) -> None:
    from kubesched.remote.ports import RemotePorts

    proxy = make_proxy(cluster)
    client = connect(proxy.config(cluster))
    ports = RemotePorts(client, loop_thread, current=cluster.store.get, retry_interval=(0.05, 0.2))
    try:
        for name in ("waits", "bound-meanwhile", "replaced", "deleted"):
            _create(cluster, pod(name))
        unschedulable = {"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}
        proxy.cut()
        for name in ("waits", "bound-meanwhile", "replaced", "deleted"):
            assert ports.set_pod_condition("default", name, {**unschedulable, "message": "first"}) is None
        time.sleep(0.3)  # a few tries refused
        # Meanwhile one pod is bound and one deleted; a newer condition replaces another's.
        _bind(cluster, "bound-meanwhile", "node-0")
        assert cluster.request("DELETE", f"{PODS}/deleted")[0] == 200
        proxy.resume()
        written = ports.set_pod_condition("default", "replaced", {**unschedulable, "message": "second"})
        assert written is not None
        _until(lambda: (_condition(_pods(cluster)["waits"]) or {}).get("message") == "first", 10)
        time.sleep(0.5)  # the background writer has nothing left to write
        pods = _pods(cluster)
        assert (_condition(pods["replaced"]) or {}).get("message") == "second"
        assert (_condition(pods["bound-meanwhile"]) or {}).get("status") == "True"  # set by the binding
        assert "deleted" not in pods
    finally:
        ports.close()
