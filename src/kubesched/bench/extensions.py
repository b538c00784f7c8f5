"""What customising the scheduler costs (``kubesched bench per-node-plugin`` / ``extender``).

- ``per-node-plugin``: the same Filter + Score written one node at a time (adapted by kubesched) and
  vectorized over the NodeTable; the difference is the per-node adapter's overhead.
- ``extender``: the default profile with and without an HTTP extender on 127.0.0.1 that filters and
  prioritizes (nodeCacheCapable); the difference is one filter and one prioritize round trip per pod.
"""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, ClassVar

import numpy as np

from kubesched.bench.base import BenchResult, node_default, pod_default
from kubesched.cache.node_table import PODS_COL
from kubesched.framework.config import config_from_dict
from kubesched.framework.registry import Registry
from kubesched.framework.status import Status
from kubesched.registry.admission import admitted
from kubesched.runtime.plugin_loading import plugin_registry, register
from kubesched.sim.simulation import Simulation

API = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration"}
LABEL = "bench.kubesched.io/blocked"


class PerNodeBench:
    """Rejects nodes labelled blocked; scores nodes by how few pods they run."""

    name: ClassVar[str] = "PerNodeBench"

    def filter(self, state: Any, pod: Any, info: Any) -> Status | None:
        if LABEL in info.node.labels:
            return Status.unschedulable("node(s) are blocked")
        return None

    def score(self, state: Any, pod: Any, info: Any) -> int:
        return max(0, 100 - len(info.pods))


class VectorizedBench:
    """The same verdicts and scores as :class:`PerNodeBench`, over the NodeTable."""

    name: ClassVar[str] = "VectorizedBench"

    def filter_nodes(self, state: Any, pod: Any, table: Any) -> Any:
        from kubesched.framework.types import FilterResult

        col = table.labels.get(LABEL)
        if col is None:
            return FilterResult.all_pass(table.capacity)
        return FilterResult.reject(col.codes >= 0, "node(s) are blocked")

    def score_nodes(self, state: Any, pod: Any, table: Any, slots: Any) -> Any:
        # The table's pods column is the number of pods on the node, as len(node_info.pods).
        return np.maximum(0, 100 - table.requested[slots, PODS_COL])


def _registry() -> Registry:
    registry = plugin_registry(use_entry_points=False)
    register(registry, PerNodeBench)
    register(registry, VectorizedBench)
    return registry


def _timed(sim: Simulation, nodes: int, existing: int, pods: int) -> tuple[int, float]:

    for i in range(nodes):
        sim.store.create(node_default(i))
    for i in range(existing):
        sim.store.create(admitted(sim.store, pod_default(f"init-{i}")))
    sim.run()
    before = set(sim.scheduler.outcomes)
    for i in range(pods):
        sim.store.create(admitted(sim.store, pod_default(f"pod-{i}")))
    start = time.perf_counter()
    sim.run()
    elapsed = time.perf_counter() - start
    done = sum(
        1 for uid, o in sim.scheduler.outcomes.items() if uid not in before and o.status == "Scheduled"
    )
    return done, elapsed


def run_per_node_plugin(
    nodes: int = 1000,
    existing_pods: int = 0,
    pods: int = 2000,
    seed: int = 0,
    feature_gates: dict[str, bool] | None = None,
) -> Any:

    registry = _registry()
    times: dict[str, tuple[int, float]] = {}
    # Interleaved, best of two each: the first run of a process also pays for warming caches up.
    for _ in range(2):
        for name in ("VectorizedBench", "PerNodeBench"):
            enabled = {"multiPoint": {"enabled": [{"name": name}]}}
            doc = {**API, "profiles": [{"plugins": enabled}], "featureGates": dict(feature_gates or {})}
            config = config_from_dict(doc, registry)
            run = _timed(Simulation(config, registry, seed=seed), nodes, existing_pods, pods)
            times[name] = min(times.get(name, run), run, key=lambda r: r[1])
    done, per_node = times["PerNodeBench"]
    _, vectorized = times["VectorizedBench"]
    extra_us = (per_node - vectorized) / max(pods, 1) * 1e6
    details = (
        f"vectorized twin: {pods / vectorized:.0f} pods/s; per-node adapter: +{extra_us:.0f} us per pod "
        f"(+{extra_us / max(nodes, 1):.2f} us per node, filter and score together)"
    )
    return BenchResult("per-node-plugin", nodes, existing_pods, pods, done, per_node, details=details)


class _Extender(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # Headers and body go out in two writes: without this, Nagle's algorithm holds the body back
    # until the client's delayed ACK (~40 ms), which would be measured instead of the extender.
    disable_nagle_algorithm = True

    def do_POST(self) -> None:
        args = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
        names = args.get("NodeNames") or []
        if self.path.endswith("/filter"):
            reply: Any = {"NodeNames": names, "FailedNodes": {}}
        else:
            reply = [{"Host": n, "Score": len(n) % 11} for n in names]
        body = json.dumps(reply).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


def run_extender(
    nodes: int = 100,
    existing_pods: int = 0,
    pods: int = 1000,
    seed: int = 0,
    feature_gates: dict[str, bool] | None = None,
) -> Any:

    server = ThreadingHTTPServer(("127.0.0.1", 0), _Extender)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        registry = plugin_registry(use_entry_points=False)
        extender = {
            "urlPrefix": f"http://127.0.0.1:{server.server_address[1]}/ext",
            "filterVerb": "filter",
            "prioritizeVerb": "prioritize",
            "weight": 1,
            "nodeCacheCapable": True,
        }
        gates = {"featureGates": dict(feature_gates or {})}
        _, plain = _timed(
            Simulation(config_from_dict({**API, **gates}, registry), registry, seed=seed),
            nodes,
            existing_pods,
            pods,
        )
        config = config_from_dict({**API, **gates, "extenders": [extender]}, registry)
        done, with_ext = _timed(Simulation(config, registry, seed=seed), nodes, existing_pods, pods)
    finally:
        server.shutdown()
        server.server_close()
    extra_ms = (with_ext - plain) / max(pods, 1) * 1e3
    details = (
        f"without the extender: {pods / plain:.0f} pods/s; extender: +{extra_ms:.2f} ms per pod "
        f"(one filter and one prioritize call, {nodes} node names each)"
    )
    return BenchResult("extender", nodes, existing_pods, pods, done, with_ext, details=details)
