"""Extender failures side by side with a real kube-scheduler (v1.20.2, from ../shared/refcp): the
same scripted HTTP extender serves both. A prioritize that fails is ignored for scoring even when the
extender is not ignorable, so the pod is bound; a filter that fails keeps the pod pending. Skips when
refcp is not built."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from tests.extenders.test_http_extenders import ExtenderServer, names_of
from tests.remote.refcp import RefCluster, needs_refcp

from kubesched.framework.config import config_from_dict
from kubesched.plugins import default_registry
from kubesched.sim.simulation import Simulation

pytestmark = needs_refcp

NODES = ("node-a", "node-b")


def node(name: str) -> dict[str, Any]:
    cap = {"cpu": "4", "memory": "16Gi", "pods": "110"}
    ready = [{"type": "Ready", "status": "True", "reason": "KubeletReady", "message": "ready"}]
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
        "status": {"capacity": cap, "allocatable": cap, "conditions": ready},
    }


def pod(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"containers": [{"name": "c", "image": "x", "resources": {"requests": {"cpu": "100m"}}}]},
    }


def extender_server() -> ExtenderServer:
    """Filter keeps every node but fails for the pod named ``filter-fails``; prioritize always fails
    (HTTP 500)."""
    server = ExtenderServer()

    def filt(args: dict[str, Any]) -> Any:
        if args["Pod"]["metadata"]["name"] == "filter-fails":
            return 500, {"Error": "filter backend down"}
        return {"NodeNames": names_of(args)}

    server.verbs["filter"] = filt
    server.verbs["prioritize"] = lambda args: (500, {"Error": "prioritize backend down"})
    return server


def extender_config(server: ExtenderServer) -> dict[str, Any]:
    return {
        "urlPrefix": server.url,
        "filterVerb": "filter",
        "prioritizeVerb": "prioritize",
        "weight": 1,
        "nodeCacheCapable": True,
        "ignorable": False,
    }


def upstream_outcomes(tmp_path: Path, server: ExtenderServer) -> dict[str, bool]:
    config = {
        "apiVersion": "kubescheduler.config.k8s.io/v1beta1",
        "kind": "KubeSchedulerConfiguration",
        "extenders": [extender_config(server)],
    }
    path = tmp_path / "scheduler-config.json"
    path.write_text(json.dumps(config))
    ref = RefCluster(tmp_path / "refcp", ("--scheduler-config", str(path)))
    try:
        for name in NODES:
            assert ref.request("POST", "/api/v1/nodes", node(name))[0] == 201
        for name in ("prioritize-fails", "filter-fails"):
            assert ref.request("POST", "/api/v1/namespaces/default/pods", pod(name))[0] == 201
        deadline = time.monotonic() + 60
        bound: dict[str, bool] = {}
        while time.monotonic() < deadline:
            for name in ("prioritize-fails", "filter-fails"):
                _, obj = ref.request("GET", f"/api/v1/namespaces/default/pods/{name}")
                bound[name] = bool(obj["spec"].get("nodeName"))
            calls = server.verbs_called()
            if bound["prioritize-fails"] and calls.count("filter") >= 2:
                break
            time.sleep(0.5)
        return bound
    finally:
        ref.stop()


def kubesched_outcomes(server: ExtenderServer) -> dict[str, bool]:
    registry = default_registry()
    api = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration"}
    config = config_from_dict({**api, "extenders": [extender_config(server)]}, registry)
    sim = Simulation(config, registry, seed=1)
    for name in NODES:
        sim.store.create(node(name))
    for name in ("prioritize-fails", "filter-fails"):
        sim.store.create(pod(name))
    sched = sim.scheduler
    for _ in range(2):  # one cycle each: a failing extender would be retried for a long while
        sched.informers.pump()
        sched.schedule_one()
    sched.informers.pump()
    return {o.name: o.node is not None for o in sched.outcomes.values()}


def test_failing_prioritize_is_ignored_and_failing_filter_is_not_as_kube_scheduler(tmp_path: Path) -> None:
    server = extender_server()
    try:
        upstream = upstream_outcomes(tmp_path, server)
        assert "prioritize" in server.verbs_called()
        ours = kubesched_outcomes(server)
    finally:
        server.close()
    assert upstream == {"prioritize-fails": True, "filter-fails": False}
    assert ours == upstream
