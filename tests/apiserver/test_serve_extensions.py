"""Out-of-tree plugins and HTTP extenders in ``kubesched serve``: pods created over the API land
where the plugin or the extender says, an extender binds through the served API, and a failing
extender leaves its pod Pending with the reason while the schedulers keep going."""

from __future__ import annotations

import http.client
import json
import os
import re
import ssl
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from tests.apiserver.conftest import Cluster
from tests.extenders.plugin_flag_files import write_plugin_flag_files
from tests.extenders.serve_run_verbs import (
    AvoidSlow,
    binding_of,
    failing_filter,
    node_names,
    outside_zones_filter,
    prefer_n2,
)
from tests.extenders.test_http_extenders import ExtenderServer

from kubesched.framework.config import config_from_dict
from kubesched.runtime.plugin_loading import plugin_registry, register
from kubesched.store.sqlite import SqliteStore

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "plugins"
KSC = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration"}
PODS = "/api/v1/namespaces/default/pods"
#: How long a pod may take to be decided (generous: the machine is shared).
WAIT = 30.0


def node(name: str, **labels: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **labels}},
        "status": {"allocatable": {"cpu": "8", "memory": "16Gi", "pods": "110"}},
    }


def pod(name: str, cpu: str = "100m") -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"containers": [{"name": "c", "image": "nginx", "resources": {"requests": {"cpu": cpu}}}]},
    }


class Client:
    """The few API calls these tests make, against an in-process or a subprocess server."""

    def __init__(self, port: int, token: str, ca: Path) -> None:
        self.port = port
        self.token = token
        self.ctx = ssl.create_default_context(cafile=str(ca))

    def request(self, method: str, path: str, body: Any = None) -> tuple[int, Any]:
        conn = http.client.HTTPSConnection("127.0.0.1", self.port, context=self.ctx, timeout=30)
        headers = {"Authorization": f"Bearer {self.token}", "Content-Type": "application/json"}
        conn.request(method, path, body=None if body is None else json.dumps(body), headers=headers)
        resp = conn.getresponse()
        raw = resp.read()
        conn.close()
        return resp.status, json.loads(raw) if raw else None

    def create(self, obj: dict[str, Any]) -> None:
        code, body = self.request("POST", PODS, obj)
        assert code == 201, body

    def get(self, name: str) -> dict[str, Any]:
        code, body = self.request("GET", f"{PODS}/{name}")
        assert code == 200, body
        return dict(body)

    def decided(self, name: str) -> dict[str, Any]:
        """The pod once it is bound or has a PodScheduled=False condition."""
        deadline = time.monotonic() + WAIT
        while True:
            obj = self.get(name)
            if obj["spec"].get("nodeName") or scheduled_condition(obj) is not None:
                return obj
            assert time.monotonic() < deadline, f"pod {name} was not decided: {obj.get('status')}"
            time.sleep(0.02)

    def place(self, *names: str) -> dict[str, str | None]:
        """Create the pods one after another, each once the previous one is decided; where each went."""
        placed: dict[str, str | None] = {}
        for name in names:
            self.create(pod(name))
            placed[name] = self.decided(name)["spec"].get("nodeName")
        return placed


def scheduled_condition(obj: dict[str, Any]) -> dict[str, Any] | None:
    for cond in (obj.get("status") or {}).get("conditions") or []:
        if cond.get("type") == "PodScheduled" and cond.get("status") == "False":
            return dict(cond)
    return None


def client_of(cluster: Cluster) -> Client:
    assert cluster.served is not None
    return Client(cluster.port, cluster.token, cluster.served.identity.ca_cert)


# --------------------------------------------------------------------------------------------------
# Out-of-tree plugins


def test_registry_plugin_decides_placement_in_serve(make_cluster: Any) -> None:
    registry = plugin_registry(use_entry_points=False)
    register(registry, AvoidSlow)
    config = config_from_dict(
        {**KSC, "profiles": [{"plugins": {"filter": {"enabled": [{"name": "AvoidSlow"}]}}}]}, registry
    )
    nodes = [node("a", tier="slow"), node("b", tier="fast"), node("c", tier="slow")]
    client = client_of(make_cluster(objects=nodes, config=config, registry=registry))
    assert set(client.place("p1", "p2", "p3").values()) == {"b"}
    # The plugin's reason reaches the pod when no node is left.
    code, _ = client.request("DELETE", "/api/v1/nodes/b")
    assert code == 200
    client.create(pod("p4"))
    cond = scheduled_condition(client.decided("p4"))
    assert cond is not None and "2 node(s) are slow" in cond["message"]


def _pip_install_example(target: Path) -> None:
    """Install examples/plugins into ``target``; skip when pip or its build backend is unavailable."""
    have_pip = subprocess.run([sys.executable, "-m", "pip", "--version"], capture_output=True, timeout=60)
    if have_pip.returncode != 0:
        pytest.skip("pip is not available")
    pip = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--quiet",
            "--no-deps",
            "--target",
            str(target),
            str(EXAMPLE),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    offline = ("No matching distribution", "Could not find a version", "NewConnectionError", "Network")
    if pip.returncode != 0 and any(s in pip.stderr for s in offline):
        pytest.skip(f"pip could not fetch the build backend: {pip.stderr.strip().splitlines()[-1]}")
    assert pip.returncode == 0, pip.stderr
    assert (target / "kubesched_example_plugins").is_dir()


class ServeProcess:
    """``kubesched serve`` as a subprocess on a free port; the client reads its data dir."""

    def __init__(self, data_dir: Path, env: dict[str, str], *args: str) -> None:
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "kubesched.cli",
                "serve",
                "--port",
                "0",
                "--data-dir",
                str(data_dir),
                *args,
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        match = re.search(r"https://127\.0\.0\.1:(\d+)", line)
        if match is None:
            self.proc.kill()
            _, err = self.proc.communicate(timeout=30)
            raise AssertionError(f"serve did not start: {line!r} {err}")
        token = (data_dir / "token").read_text().strip()
        self.client = Client(int(match.group(1)), token, data_dir / "ca.crt")

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.communicate()


def test_pip_installed_example_package_changes_placements_in_serve(tmp_path: Path) -> None:
    target = tmp_path / "site"
    _pip_install_example(target)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(target), str(ROOT / "src")])}
    demo = EXAMPLE / "demo"
    nodes = [d for d in yaml.safe_load_all((demo / "cluster.yaml").read_text()) if d["kind"] == "Node"]
    (tmp_path / "nodes.yaml").write_text(yaml.safe_dump_all(nodes))
    pods = ("web-1", "web-2", "web-3", "web-4")

    def served(name: str, *args: str) -> dict[str, str | None]:
        server = ServeProcess(tmp_path / name, env, str(tmp_path / "nodes.yaml"), *args)
        try:
            return server.client.place(*pods)
        finally:
            server.stop()

    # Found through the package's entry point: enabled by name in the config, no --plugin needed.
    placed = served("with", "--config", str(demo / "scheduler-config.yaml"))
    assert [placed["web-1"], placed["web-2"]] == ["fast-1", "fast-1"]
    assert sorted([placed["web-3"], placed["web-4"]]) == ["slow-1", "slow-2"]  # type: ignore[type-var]
    default = served("without")  # the default profile spreads them over the three nodes
    assert len(set(default.values())) == 3


def test_plugin_flag_registers_framework_and_batch_plugins_in_serve(tmp_path: Path) -> None:
    env, flags, plugins = write_plugin_flag_files(tmp_path, "servedplugins")
    (tmp_path / "nodes.yaml").write_text(yaml.safe_dump_all([node(f"n{i}") for i in range(3)]))
    server = ServeProcess(tmp_path / "data", env, str(tmp_path / "nodes.yaml"), *flags, *plugins)
    try:
        client = server.client
        placed = client.place("web-1", "web-2", "web-3")
        assert set(placed.values()) <= {"n1", "n2"}
        batch = pod("train")
        batch["spec"]["schedulerName"] = "volcano"
        client.create(batch)
        assert client.decided("train")["spec"].get("nodeName") == "n0"
    finally:
        server.stop()
    # Without the flags the names are unknown: serve refuses the configuration before starting.
    proc = subprocess.run(
        [sys.executable, "-m", "kubesched.cli", "serve", "--data-dir", str(tmp_path / "d2"), *flags],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert proc.returncode == 2 and 'unknown plugin "AvoidN0"' in proc.stderr


# --------------------------------------------------------------------------------------------------
# HTTP extenders configured in serve's KubeSchedulerConfiguration


@pytest.fixture
def extender() -> Iterator[ExtenderServer]:
    srv = ExtenderServer()
    yield srv
    srv.close()


def extender_cluster(make_cluster: Any, extenders: list[dict[str, Any]], nodes: int = 3) -> Client:
    registry = plugin_registry(use_entry_points=False)
    config = config_from_dict({**KSC, "extenders": extenders}, registry)
    objects = [node(f"n{i}") for i in range(nodes)]
    return client_of(make_cluster(objects=objects, config=config, registry=registry))


def test_extender_filter_and_prioritize_decide_placement_in_serve(
    make_cluster: Any, extender: ExtenderServer
) -> None:
    extender.verbs["filter"] = outside_zones_filter
    extender.verbs["prioritize"] = prefer_n2
    client = extender_cluster(
        make_cluster,
        [
            {
                "urlPrefix": extender.url,
                "filterVerb": "filter",
                "prioritizeVerb": "prioritize",
                "weight": 5,
                "nodeCacheCapable": True,
            }
        ],
    )
    # Without the extender three pods spread over three equal nodes; its score stacks them on n2.
    assert client.place("web-1", "web-2", "web-3") == {"web-1": "n2", "web-2": "n2", "web-3": "n2"}
    assert {"filter", "prioritize"} <= set(extender.verbs_called())
    client.create(pod("blocked"))
    cond = scheduled_condition(client.decided("blocked"))
    assert cond is not None and cond["reason"] == "Unschedulable"
    assert cond["message"].startswith("0/3 nodes are available: 3 node(s) are outside the allowed zones.")


def test_binding_extender_binds_through_the_served_api(make_cluster: Any, extender: ExtenderServer) -> None:
    clients: list[Client] = []
    answers: list[int] = []

    def bind(args: dict[str, Any]) -> dict[str, Any]:
        binding = binding_of(args)
        code, body = clients[0].request("POST", f"{PODS}/{args['PodName']}/binding", binding)
        answers.append(code)
        return {"Error": "" if code == 201 else f"binding failed: {body}"}

    extender.verbs["bind"] = bind
    client = extender_cluster(make_cluster, [{"urlPrefix": extender.url, "bindVerb": "bind"}])
    clients.append(client)
    placed = client.place("web-1", "web-2")
    assert all(placed.values())
    # The pod shows bound before the extender's thread has recorded the answer to its request.
    deadline = time.monotonic() + WAIT
    while answers != [201, 201] and time.monotonic() < deadline:
        time.sleep(0.02)
    assert answers == [201, 201]
    for name, node_name in placed.items():
        (call,) = [a for v, a in extender.calls if v == "bind" and a["PodName"] == name]
        obj = client.get(name)
        assert call == {
            "PodName": name,
            "PodNamespace": "default",
            "PodUID": obj["metadata"]["uid"],
            "Node": node_name,
        }
        assert scheduled_condition(obj) is None
        # The schedulers write their events off the scheduling path, soon after the bind.
        reasons: list[str] = []
        while "Scheduled" not in reasons and time.monotonic() < deadline + WAIT:
            code, events = client.request(
                "GET", f"/api/v1/namespaces/default/events?fieldSelector=involvedObject.name%3D{name}"
            )
            assert code == 200
            reasons = [e["reason"] for e in events["items"]]
            time.sleep(0.02)
        assert "Scheduled" in reasons and "FailedScheduling" not in reasons


def test_failing_extender_leaves_the_pod_pending_and_the_scheduler_going(
    make_cluster: Any, extender: ExtenderServer
) -> None:
    broken = {"on": True}
    extender.verbs["filter"] = failing_filter(broken)
    client = extender_cluster(
        make_cluster,
        [
            {"urlPrefix": extender.url, "filterVerb": "filter", "nodeCacheCapable": True},
            # An ignorable extender that cannot be reached is skipped.
            {"urlPrefix": "http://127.0.0.1:1/none", "filterVerb": "filter", "ignorable": True},
        ],
    )
    client.create(pod("bad-1"))
    cond = scheduled_condition(client.decided("bad-1"))
    assert cond is not None and cond["reason"] == "SchedulerError"
    assert f"extender '{extender.url}' filter" in cond["message"]
    assert "500" in cond["message"]
    assert not client.get("bad-1")["spec"].get("nodeName")
    # The scheduler keeps going: later pods schedule, and the failed one once the extender recovers.
    assert all(client.place("good-1", "good-2").values())
    broken["on"] = False
    deadline = time.monotonic() + WAIT
    while not client.get("bad-1")["spec"].get("nodeName"):
        assert time.monotonic() < deadline, "bad-1 was not retried after the extender recovered"
        time.sleep(0.05)


def test_slow_extender_times_out_without_stopping_the_scheduler(
    make_cluster: Any, extender: ExtenderServer
) -> None:
    extender.verbs["filter"] = lambda args: {"NodeNames": node_names(args), "FailedNodes": {}, "Error": ""}
    extender.delay = 2.0
    # The late reply finds the connection closed: expected here, not worth a traceback on stderr.
    extender.httpd.handle_error = lambda request, address: None  # type: ignore[method-assign]
    client = extender_cluster(
        make_cluster,
        [
            {
                "urlPrefix": extender.url,
                "filterVerb": "filter",
                "nodeCacheCapable": True,
                "httpTimeout": "200ms",
            }
        ],
    )
    client.create(pod("slow"))
    cond = scheduled_condition(client.decided("slow"))
    assert cond is not None and cond["reason"] == "SchedulerError"
    assert f"extender '{extender.url}' filter" in cond["message"] and "within" in cond["message"]
    extender.delay = 0.0
    assert all(client.place("after").values())


def test_stopping_serve_while_an_extender_binds_through_it(
    make_cluster: Any, extender: ExtenderServer
) -> None:
    """Stopping the server waits for the scheduler's step, and that step waits for an extender that
    is itself waiting for the served API: the API keeps answering until the schedulers have stopped."""
    clients: list[Client] = []
    binding = threading.Event()
    stopping = threading.Event()
    answers: list[int] = []

    def bind(args: dict[str, Any]) -> dict[str, Any]:
        binding.set()
        stopping.wait(30)
        body = {
            "apiVersion": "v1",
            "kind": "Binding",
            "metadata": {"name": args["PodName"], "namespace": args["PodNamespace"]},
            "target": {"apiVersion": "v1", "kind": "Node", "name": args["Node"]},
        }
        code, _ = clients[0].request("POST", f"{PODS}/{args['PodName']}/binding", body)
        answers.append(code)
        return {"Error": ""}

    extender.verbs["bind"] = bind
    registry = plugin_registry(use_entry_points=False)
    config = config_from_dict(
        {**KSC, "extenders": [{"urlPrefix": extender.url, "bindVerb": "bind", "httpTimeout": "60s"}]},
        registry,
    )
    cluster: Cluster = make_cluster(objects=[node("n0")], config=config, registry=registry)
    clients.append(client_of(cluster))
    clients[0].create(pod("web"))
    assert binding.wait(WAIT)
    assert cluster.served is not None
    data_dir = cluster.served.options.data_dir
    stopper = threading.Thread(target=cluster.stop)
    stopper.start()
    stopping.set()
    stopper.join(WAIT)
    assert not stopper.is_alive()
    assert answers == [201]
    store = SqliteStore(data_dir / "cluster.db")
    try:
        assert store.get("Pod", "default", "web")["spec"]["nodeName"] == "n0"
    finally:
        store.close()
