"""``kubesched run`` under faults of a real control plane (kube-apiserver v1.20.2 and etcd from
``../shared/refcp``; skipped when it is not built): etcd restarted under load, kube-apiserver killed
with ``-9`` in the middle of a burst, and the leader cut from the API while a bind is in flight, its
Lease expiring and a standby taking over.

After each, what the API server stores must say: every pod bound once (a poller sees no pod change
node) or pending with a ``PodScheduled=False`` condition saying why; no node holding more than its
allocatable; every gang whole or not placed at all; and scheduling going on afterwards. The cluster
is the one of ``test_run_faults.py``: plain pods on ``node-0..2``, Volcano gangs on ``gang-0``.
"""

from __future__ import annotations

import contextlib
import http.client
import os
import shlex
import signal
import subprocess
import threading
import time
import urllib.request
from collections import defaultdict
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from tests.remote.conftest import Proxy, pod
from tests.remote.test_run_faults import (
    GANG_NODE,
    GANGS,
    HUGE,
    PODGROUPS,
    PODS,
    QUEUES,
    WORKERS,
    HeldBinds,
    _condition,
    _cpu,
    _gang,
    _gang_sets,
    _milli,
    _objects,
)

from kubesched.remote.run import Runner, RunOptions

from .refcp import RefCluster, needs_refcp, volcano_crd

pytestmark = needs_refcp

CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
NODES = "/api/v1/nodes"


# -- the control plane ------------------------------------------------------------------------------
class ControlPlane(RefCluster):
    """refcp with its components restartable: a component is stopped (by the PID refcp recorded)
    and started again with the same command line, log and PID file."""

    def pid(self, name: str) -> int:
        return int((self.root / "run" / f"{name}.pid").read_text().strip())

    def restart(self, name: str, sig: signal.Signals, down: float = 1.0) -> None:
        pid = self.pid(name)
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().rstrip(b"\0").split(b"\0")
        os.kill(pid, sig)
        deadline = time.monotonic() + 30
        while Path(f"/proc/{pid}").exists() and time.monotonic() < deadline:
            with contextlib.suppress(OSError):
                # A zombie of ours (started by an earlier restart) is reaped here.
                os.waitpid(pid, os.WNOHANG)
            time.sleep(0.05)
        time.sleep(down)
        with (self.root / "run" / f"{name}.log").open("ab") as log:
            proc = subprocess.Popen(
                [a.decode() for a in argv],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        (self.root / "run" / f"{name}.pid").write_text(f"{proc.pid}\n")
        self._children.append(proc)
        self.wait_ready()

    def wait_ready(self, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with contextlib.suppress(Exception):
                if self.request("GET", "/api/v1/namespaces/default")[0] == 200:
                    return
            time.sleep(0.1)
        raise AssertionError("kube-apiserver did not come back")

    def etcd_healthy(self) -> bool:
        values = {
            key: shlex.split(value)[0] if value else ""
            for key, _, value in (
                line[len("export ") :].partition("=")
                for line in (self.root / "env.sh").read_text().splitlines()
                if line.startswith("export ")
            )
        }
        with (
            contextlib.suppress(Exception),
            urllib.request.urlopen(f"{values['REF_ETCD_URL']}/health", timeout=2) as r,
        ):
            return bool(r.status == 200)
        return False

    def call(self, method: str, path: str, body: Any = None, *, retry: float = 60.0) -> tuple[int, Any]:
        """A request as the admin, tried again while the control plane is down."""
        deadline = time.monotonic() + retry
        while True:
            try:
                code, answer = self.request(method, path, body)
            except (OSError, ValueError, http.client.HTTPException):
                # Down, or answering while it starts (a body that is not JSON): not an answer.
                code, answer = 0, None
            if code not in (0, 500, 503, 504) or time.monotonic() > deadline:
                return code, answer
            time.sleep(0.1)

    def stop(self) -> None:
        super().stop()
        for proc in self._children:
            with contextlib.suppress(Exception):
                proc.wait(10)


@pytest.fixture
def ref(tmp_path: Path) -> Iterator[ControlPlane]:
    cp = ControlPlane.__new__(ControlPlane)
    cp._children = []
    RefCluster.__init__(cp, tmp_path / "refcp")
    try:
        _setup(cp)
        yield cp
    finally:
        cp.stop()


def _setup(ref: ControlPlane) -> None:
    for crd in (
        volcano_crd("podgroups", "PodGroup", "Namespaced"),
        volcano_crd("queues", "Queue", "Cluster"),
    ):
        assert ref.call("POST", CRDS, crd)[0] == 201
    _until(
        lambda: ref.call("GET", QUEUES)[0] == 200 and ref.call("GET", PODGROUPS)[0] == 200, 30, "CRDs served"
    )
    for obj in _objects("8"):
        path = NODES if obj["kind"] == "Node" else QUEUES
        code, body = ref.call("POST", path, obj)
        assert code == 201, body


def _until(check: Callable[[], Any], timeout: float = 60.0, what: Any = "") -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value or time.monotonic() > deadline:
            assert value, f"timed out waiting for {what() if callable(what) else what or check}"
            return value
        time.sleep(0.1)


# -- what the API server holds ----------------------------------------------------------------------
def _pods(ref: ControlPlane) -> dict[str, dict[str, Any]]:
    code, body = ref.call("GET", PODS)
    assert code == 200, body
    return {p["metadata"]["name"]: p for p in body["items"]}


def _create(ref: ControlPlane, obj: dict[str, Any], path: str = PODS) -> None:
    code, body = ref.call("POST", path, obj)
    # A create whose answer was lost in the fault was made: AlreadyExists on the second try.
    assert code in (201, 409), body


class Placements(threading.Thread):
    """Polls the pods and records every node each pod (by uid) was seen on: a pod bound twice
    would show two."""

    def __init__(self, ref: ControlPlane) -> None:
        super().__init__(daemon=True)
        self.ref = ref
        self.nodes: dict[str, set[str]] = defaultdict(set)
        self.names: dict[str, str] = {}
        self._stop_event = threading.Event()
        self.start()

    def run(self) -> None:
        while not self._stop_event.wait(0.1):
            with contextlib.suppress(Exception):
                code, body = self.ref.request("GET", PODS)
                if code != 200:
                    continue
                for p in body["items"]:
                    node = p["spec"].get("nodeName")
                    if node:
                        self.nodes[p["metadata"]["uid"]].add(node)
                        self.names[p["metadata"]["uid"]] = p["metadata"]["name"]

    def moved(self) -> list[str]:
        self._stop_event.set()
        self.join(5)
        return [self.names[uid] for uid, nodes in self.nodes.items() if len(nodes) > 1]


def _waiting(p: dict[str, Any]) -> bool:
    cond = _condition(p)
    return cond is not None and cond.get("status") == "False" and bool(cond.get("message"))


def _unsettled(ref: ControlPlane, names: set[str]) -> dict[str, Any]:
    pods = _pods(ref)
    return {
        n: (_condition(pods[n]) if n in pods else "missing")
        for n in names
        if n not in pods or not (pods[n]["spec"].get("nodeName") or _waiting(pods[n]))
    }


#: The reasons of a pod that cannot be placed. A gang member may say ``Schedulable`` for a while
#: (Volcano: it fitted in a session that could not place the whole gang) until a later session
#: finds no room for it at all.
REFUSED = ("Unschedulable", "SchedulerError")


def _refused(ref: ControlPlane, names: set[str]) -> bool:
    pods = _pods(ref)
    return all(n in pods and (_condition(pods[n]) or {}).get("reason") in REFUSED for n in names)


def _bound(ref: ControlPlane, names: set[str]) -> int:
    pods = _pods(ref)
    return sum(1 for n in names if n in pods and pods[n]["spec"].get("nodeName"))


def _check(ref: ControlPlane, placements: Placements, *, bound: set[str], pending: set[str]) -> None:
    pods = _pods(ref)
    assert placements.moved() == [], "pods bound to two nodes"
    for name in bound:
        assert pods[name]["spec"].get("nodeName"), f"{name} is not bound: {_condition(pods[name])}"
    for name in pending:
        assert not pods[name]["spec"].get("nodeName"), name
        cond = _condition(pods[name])
        assert cond is not None and cond["reason"] in REFUSED, (name, cond)
    for name, p in pods.items():
        assert p["spec"].get("nodeName") or _waiting(p), (name, _condition(p))
    code, nodes = ref.call("GET", NODES)
    assert code == 200
    for node in nodes["items"]:
        name = node["metadata"]["name"]
        on = [p for p in pods.values() if p["spec"].get("nodeName") == name]
        used = sum(_cpu(p) for p in on)
        alloc = node["status"]["allocatable"]
        assert used <= _milli(alloc["cpu"]), (
            f"{name} over-committed: {sorted(p['metadata']['name'] for p in on)}"
        )
        assert len(on) <= int(alloc["pods"]), name
    code, groups = ref.call("GET", PODGROUPS)
    assert code == 200
    for group in groups["items"]:
        gname = group["metadata"]["name"]
        members = [
            p
            for p in pods.values()
            if (p["metadata"].get("annotations") or {}).get("scheduling.k8s.io/group-name") == gname
        ]
        placed = sum(1 for p in members if p["spec"].get("nodeName"))
        assert placed == 0 or placed >= group["spec"]["minMember"], f"gang {gname}: {placed} placed"


def _still_schedules(ref: ControlPlane, name: str = "afterwards", **spec: Any) -> None:
    _create(ref, pod(name, cpu="100m", **spec))
    _until(lambda: _pods(ref)[name]["spec"].get("nodeName"), 60, f"{name} bound")


# -- the scheduler ----------------------------------------------------------------------------------
@pytest.fixture
def runners() -> Iterator[list[Runner]]:
    started: list[Runner] = []
    yield started
    for runner in started:
        runner.stop()


def _runner(runners: list[Runner], kubeconfig: Path, **options: Any) -> Runner:
    defaults: dict[str, Any] = {
        "leader_elect": False,
        "seed": 0,
        "port": 0,
        "schedule_period": 0.2,
        "qps": 1000.0,
        "burst": 1000,
        "sync_timeout": 60.0,
    }
    runner = Runner(RunOptions(kubeconfig=str(kubeconfig), **{**defaults, **options}))
    runners.append(runner)
    runner.start()
    if runner.options.leader_elect:
        runner.elect()
    else:
        runner.on_started_leading()
    return runner


class Burst(threading.Thread):
    """Creates ``n`` pods in the background, trying each again while the control plane is down."""

    def __init__(self, ref: ControlPlane, prefix: str, n: int, cpu: str = "250m") -> None:
        super().__init__(daemon=True)
        self.ref, self.cpu = ref, cpu
        self.names = [f"{prefix}-{i:02d}" for i in range(n)]
        self.errors: list[BaseException] = []
        self.start()

    def run(self) -> None:
        try:
            for name in self.names:
                _create(self.ref, pod(name, cpu=self.cpu))
        except BaseException as exc:
            self.errors.append(exc)

    def finish(self) -> set[str]:
        self.join(120)
        assert not self.is_alive() and not self.errors, self.errors
        return set(self.names)


def _create_gangs(ref: ControlPlane) -> set[str]:
    names = set()
    for gang, (members, cpu) in GANGS.items():
        for obj, path in _gang(gang, members, cpu):
            _create(ref, obj, path)
            if obj["kind"] == "Pod":
                names.add(obj["metadata"]["name"])
    return names


def _restart_under_load(
    ref: ControlPlane, runners: list[Runner], component: str, sig: signal.Signals
) -> None:
    placements = Placements(ref)
    _runner(runners, ref.kubeconfig)
    gangs = _create_gangs(ref)
    for name in HUGE:
        _create(ref, pod(name, cpu="64"))
    burst = Burst(ref, "burst", 40)
    _until(lambda: _bound(ref, set(burst.names)) >= 5, 60, "the burst under way")
    ref.restart(component, sig)
    names = burst.finish()
    fits, too_big = _gang_sets()
    everything = {*names, *gangs, *HUGE}
    _until(
        lambda: (
            not _unsettled(ref, everything)
            and _bound(ref, names | fits) == len(names | fits)
            and _refused(ref, {*HUGE, *too_big})
        ),
        90,
        lambda: (_unsettled(ref, everything), _bound(ref, names | fits)),
    )
    _check(ref, placements, bound=names | fits, pending={*HUGE, *too_big})
    _still_schedules(ref)


# -- the faults -------------------------------------------------------------------------------------
def test_etcd_restarted_under_load(ref: ControlPlane, runners: list[Runner]) -> None:
    _restart_under_load(ref, runners, "etcd", signal.SIGKILL)
    assert ref.etcd_healthy()


def test_kube_apiserver_killed_mid_burst(ref: ControlPlane, runners: list[Runner]) -> None:
    _restart_under_load(ref, runners, "kube-apiserver", signal.SIGKILL)
    assert runners[0].reflectors is not None
    assert runners[0].reflectors.reflectors["Pod"].stats.backoffs > 0


def test_the_leader_cut_from_the_api_while_a_bind_is_in_flight(
    ref: ControlPlane, runners: list[Runner], tmp_path: Path
) -> None:
    """The leader holds a bind (as a slow request would) when it is cut from the API; its Lease
    expires and the standby takes over and schedules everything. When the old leader's held bind
    is let go after the API is back, it must not land: the standby has placed that pod and used
    the capacity as it saw it. Three workers of 4 cpu and twelve pods of 1 cpu: exactly full."""
    # Every node exactly as big as the pods that go there, so a stale bind over-commits.
    for name in WORKERS:
        _, node = ref.call("GET", f"{NODES}/{name}")
        node["status"]["allocatable"]["cpu"] = node["status"]["capacity"]["cpu"] = "4"
        assert ref.call("PUT", f"{NODES}/{name}/status", node)[0] == 200
    placements = Placements(ref)
    proxies = [Proxy(_api_port(ref)), Proxy(_api_port(ref))]
    try:
        election = {
            "leader_elect": True,
            "lease_duration": 2.0,
            "renew_deadline": 1.5,
            "retry_period": 0.25,
        }
        first = _runner(runners, _via(ref, proxies[0], tmp_path), identity="first", **election)
        _until(lambda: first.leading, 30, "the first replica to lead")
        second = _runner(runners, _via(ref, proxies[1], tmp_path), identity="second", **election)
        held = "cut-05"
        old = HeldBinds(first, {held})
        new = HeldBinds(second, {held})
        gangs = _create_gangs(ref)
        burst = Burst(ref, "cut", 12, cpu="1")
        _until(lambda: held in old.entered, 30, "the leader to start binding the held pod")
        proxies[0].cut()  # the leader cannot reach the API: no renewal, no bind
        _until(lambda: second.leading, 30, "the standby to take over")
        _until(lambda: not first.leading, 30, "the old leader to stop")
        names = burst.finish()
        _until(lambda: held in new.entered, 30, "the new leader to bind the held pod")
        _until(lambda: _bound(ref, names) == len(names) - 1, 60, lambda: _unsettled(ref, names))
        # The API is back for the old leader, and its held bind goes on.
        proxies[0].resume()
        old.release.set()
        time.sleep(1.0)
        new.release.set()
        fits, too_big = _gang_sets()
        _until(
            lambda: (
                _bound(ref, names | fits) == len(names | fits)
                and not _unsettled(ref, gangs)
                and _refused(ref, too_big)
            ),
            60,
            lambda: _unsettled(ref, names | gangs),
        )
        _check(ref, placements, bound=names | fits, pending=too_big)
        # The old leader's bind was not sent: it had lost the Lease.
        assert "no longer holds the leader's Lease" in str(old.errors[held])
        # The workers are full; the new leader places a pod on the gang node.
        _still_schedules(
            ref, "afterwards", nodeSelector={"pool": "gangs"}, tolerations=[{"operator": "Exists"}]
        )
    finally:
        for proxy in proxies:
            proxy.stop()


def _api_port(ref: ControlPlane) -> int:
    port = int(ref.url.rsplit(":", 1)[1])
    return port


def _via(ref: ControlPlane, proxy: Proxy, tmp_path: Path) -> Path:
    config = yaml.safe_load(ref.kubeconfig.read_text())
    for cluster in config["clusters"]:
        cluster["cluster"]["server"] = f"https://127.0.0.1:{proxy.port}"
    path = tmp_path / f"kubeconfig-{proxy.port}"
    path.write_text(yaml.safe_dump(config))
    return path


__all__ = ["GANG_NODE"]
