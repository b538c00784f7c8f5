"""Out-of-tree plugins and HTTP extenders in ``kubesched run`` against a served cluster (its own
schedulers off): placements follow the plugin and the extender, a binding extender binds through the
API (once), and a failing extender leaves its pod Pending with the reason while others schedule."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
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
from tests.remote.conftest import Cluster, started_runners

from kubesched.cli import EXIT_OK
from kubesched.framework.config import config_from_dict
from kubesched.remote.run import Runner
from kubesched.runtime.plugin_loading import plugin_registry, register

ROOT = Path(__file__).resolve().parents[2]
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


def pod(name: str, scheduler: str | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "containers": [{"name": "c", "image": "nginx", "resources": {"requests": {"cpu": "100m"}}}]
    }
    if scheduler:
        spec["schedulerName"] = scheduler
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default"},
        "spec": spec,
    }


def unscheduled(obj: dict[str, Any]) -> dict[str, Any] | None:
    """The pod's PodScheduled=False condition, if it has one."""
    for cond in (obj.get("status") or {}).get("conditions") or []:
        if cond.get("type") == "PodScheduled" and cond.get("status") == "False":
            return dict(cond)
    return None


def get(cluster: Cluster, name: str) -> dict[str, Any]:
    code, body, _ = cluster.request("GET", f"{PODS}/{name}")
    assert code == 200, body
    return dict(body)


def create(cluster: Cluster, obj: dict[str, Any]) -> None:
    code, body, _ = cluster.request("POST", PODS, obj)
    assert code == 201, body


def decided(cluster: Cluster, name: str) -> dict[str, Any]:
    """The pod once it is bound or has a PodScheduled=False condition."""
    deadline = time.monotonic() + WAIT
    while True:
        obj = get(cluster, name)
        if obj["spec"].get("nodeName") or unscheduled(obj) is not None:
            return obj
        assert time.monotonic() < deadline, f"pod {name} was not decided: {obj.get('status')}"
        time.sleep(0.02)


def place(cluster: Cluster, *names: str) -> dict[str, str | None]:
    """Create the pods one after another, each once the previous one is decided; where each went."""
    placed: dict[str, str | None] = {}
    for name in names:
        create(cluster, pod(name))
        placed[name] = decided(cluster, name)["spec"].get("nodeName")
    return placed


def pod_events(cluster: Cluster, name: str) -> Counter[str]:
    """The reasons of the events about pod ``name``, counted."""
    return Counter(
        e.get("reason")
        for e in cluster.store.list("Event")
        if ((e.get("regarding") or e.get("involvedObject") or {}).get("name")) == name
    )


def eventually(check: Callable[[], bool]) -> bool:
    """Whether ``check`` holds within WAIT (events are sent in the background)."""
    deadline = time.monotonic() + WAIT
    while not check():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


@pytest.fixture
def start_runner() -> Iterator[Callable[..., Runner]]:
    """``start_runner(cluster, **RunOptions)``: a started, leading Runner (no leader election)."""
    yield from started_runners(port=0)


@pytest.fixture
def extender() -> Iterator[ExtenderServer]:
    srv = ExtenderServer()
    yield srv
    srv.close()


def run_with_extenders(
    make_cluster: Any, start_runner: Callable[..., Runner], extenders: list[dict[str, Any]], nodes: int = 3
) -> Cluster:
    registry = plugin_registry(use_entry_points=False)
    config = config_from_dict({**KSC, "extenders": extenders}, registry)
    cluster: Cluster = make_cluster(objects=[node(f"n{i}") for i in range(nodes)])
    start_runner(cluster, config=config, registry=registry)
    return cluster


# --------------------------------------------------------------------------------------------------
# An out-of-tree framework plugin, registered in-process


def test_registry_plugin_decides_placement_in_run(
    make_cluster: Any, start_runner: Callable[..., Runner]
) -> None:
    registry = plugin_registry(use_entry_points=False)
    register(registry, AvoidSlow)
    config = config_from_dict(
        {**KSC, "profiles": [{"plugins": {"filter": {"enabled": [{"name": "AvoidSlow"}]}}}]}, registry
    )
    cluster: Cluster = make_cluster(
        objects=[node("a", tier="slow"), node("b", tier="fast"), node("c", tier="slow")]
    )
    start_runner(cluster, config=config, registry=registry)
    assert set(place(cluster, "p1", "p2", "p3").values()) == {"b"}
    # The plugin's reason reaches the pod when no node is left.
    code, _, _ = cluster.request("DELETE", "/api/v1/nodes/b")
    assert code == 200
    create(cluster, pod("p4"))
    cond = unscheduled(decided(cluster, "p4"))
    assert cond is not None and cond["reason"] == "Unschedulable"
    assert "2 node(s) are slow" in cond["message"]


# --------------------------------------------------------------------------------------------------
# HTTP extenders


def test_extender_filter_and_prioritize_decide_placement_in_run(
    make_cluster: Any, start_runner: Callable[..., Runner], extender: ExtenderServer
) -> None:
    extender.verbs["filter"] = outside_zones_filter
    extender.verbs["prioritize"] = prefer_n2
    cluster = run_with_extenders(
        make_cluster,
        start_runner,
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
    assert place(cluster, "web-1", "web-2", "web-3") == {"web-1": "n2", "web-2": "n2", "web-3": "n2"}
    assert {"filter", "prioritize"} <= set(extender.verbs_called())
    filtered = [a for v, a in extender.calls if v == "filter" and a["Pod"]["metadata"]["name"] == "web-1"]
    assert filtered and sorted(node_names(filtered[0])) == ["n0", "n1", "n2"]
    create(cluster, pod("blocked"))
    cond = unscheduled(decided(cluster, "blocked"))
    assert cond is not None and cond["reason"] == "Unschedulable"
    assert cond["message"].startswith("0/3 nodes are available: 3 node(s) are outside the allowed zones.")
    assert eventually(lambda: pod_events(cluster, "blocked")["FailedScheduling"] >= 1)


def test_binding_extender_binds_through_the_api_once(
    make_cluster: Any, start_runner: Callable[..., Runner], extender: ExtenderServer
) -> None:
    clusters: list[Cluster] = []
    answers: list[int] = []

    def bind(args: dict[str, Any]) -> dict[str, Any]:
        binding = binding_of(args)
        code, body, _ = clusters[0].request("POST", f"{PODS}/{args['PodName']}/binding", binding)
        answers.append(code)
        return {"Error": "" if code == 201 else f"binding failed: {body}"}

    extender.verbs["bind"] = bind
    clusters.append(
        run_with_extenders(make_cluster, start_runner, [{"urlPrefix": extender.url, "bindVerb": "bind"}])
    )
    cluster = clusters[0]
    placed = place(cluster, "web-1", "web-2")
    # The pod shows bound before the extender's thread has recorded the answer to its request.
    assert all(placed.values()) and eventually(lambda: answers == [201, 201])
    for name, node_name in placed.items():
        (call,) = [a for v, a in extender.calls if v == "bind" and a["PodName"] == name]
        obj = get(cluster, name)
        assert call == {
            "PodName": name,
            "PodNamespace": "default",
            "PodUID": obj["metadata"]["uid"],
            "Node": node_name,
        }
        assert unscheduled(obj) is None
        # The scheduler saw the pod bound by the extender: one Scheduled event, nothing failed.
        assert eventually(lambda: all(pod_events(cluster, n)["Scheduled"] for n in placed))
        events = pod_events(cluster, name)
        assert events["Scheduled"] == 1 and events["FailedScheduling"] == 0, events
    # Later pods keep going through the extender (the scheduler did not bind them itself).
    assert all(place(cluster, "web-3").values())
    assert eventually(lambda: answers == [201, 201, 201])


def test_failing_extender_leaves_the_pod_pending_and_run_going(
    make_cluster: Any, start_runner: Callable[..., Runner], extender: ExtenderServer
) -> None:
    broken = {"on": True}
    extender.verbs["filter"] = failing_filter(broken)
    cluster = run_with_extenders(
        make_cluster,
        start_runner,
        [
            {"urlPrefix": extender.url, "filterVerb": "filter", "nodeCacheCapable": True},
            # An ignorable extender that cannot be reached is skipped.
            {"urlPrefix": "http://127.0.0.1:1/none", "filterVerb": "filter", "ignorable": True},
        ],
    )
    create(cluster, pod("bad-1"))
    cond = unscheduled(decided(cluster, "bad-1"))
    assert cond is not None and cond["reason"] == "SchedulerError"
    assert f"extender '{extender.url}' filter" in cond["message"] and "500" in cond["message"]
    assert not get(cluster, "bad-1")["spec"].get("nodeName")
    assert eventually(lambda: pod_events(cluster, "bad-1")["FailedScheduling"] >= 1)
    # The scheduler keeps going: later pods schedule, and the failed one once the extender recovers.
    assert all(place(cluster, "good-1", "good-2").values())
    assert not get(cluster, "bad-1")["spec"].get("nodeName")
    broken["on"] = False
    deadline = time.monotonic() + WAIT
    while not get(cluster, "bad-1")["spec"].get("nodeName"):
        assert time.monotonic() < deadline, "bad-1 was not retried after the extender recovered"
        time.sleep(0.05)


# --------------------------------------------------------------------------------------------------
# kubesched run --plugin MODULE:CLASS, as a process


def test_plugin_flag_registers_framework_and_batch_plugins_in_run(make_cluster: Any, tmp_path: Path) -> None:
    env, flags, plugins = write_plugin_flag_files(tmp_path, "runplugins")
    cluster: Cluster = make_cluster(objects=[node(f"n{i}") for i in range(3)])
    common = ["--kubeconfig", str(cluster.kubeconfig), "--leader-elect=false", "--secure-port", "0"]
    cmd = [sys.executable, "-m", "kubesched.cli", "run", *common, *flags, *plugins]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        placed = place(cluster, "web-1", "web-2", "web-3")
        assert set(placed.values()) <= {"n1", "n2"}, placed
        create(cluster, pod("train", scheduler="volcano"))
        assert decided(cluster, "train")["spec"].get("nodeName") == "n0"
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == EXIT_OK, err
    assert "Traceback" not in err
    # Without the flags the names are unknown: run refuses the configuration before connecting.
    refused = subprocess.run(
        [sys.executable, "-m", "kubesched.cli", "run", *common, *flags],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert refused.returncode == 2 and 'unknown plugin "AvoidN0"' in refused.stderr
